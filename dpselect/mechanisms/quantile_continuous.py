"""The continuous exponential mechanism for one quantile, with ties (docs/quantiles.md).

**Output space** ``[lo, hi]`` with Lebesgue measure (Smith 2011; McSherry and Talwar 2007). Rows
are clamped to the bounds (a row-by-row map: neighbours stay neighbours).

**Score with a resolution** ``w > 0`` (public). Every row gives two breakpoints, ``u_i`` =
``x_i + w`` rounded up to a float and ``d_i`` = ``x_i - w`` rounded down, and

    s(x, c) = max(0, b L(c) - a n, b G(c) - (b - a) n),
    L(c) = #{i : u_i < c},  G(c) = #{i : d_i > c}

(:mod:`.quantile_score` with rows within ``w`` of ``c`` counted on neither side). ``L`` and
``G`` count rows through a fixed row-by-row map, so the sensitivity is ``Delta = max(a, b -
a)`` exactly as for the plain rank excess. The density is proportional to ``exp(-min(T, f
s(x, c)))`` with ``f = eps' / (2 Delta)`` rounded down to a float and the cap ``T = 4096`` (a
1-Lipschitz map of ``f s``: the loss is unchanged; it only touches points weighing less than
``e^-4096`` relative to a quantile).

**Why the resolution: ties.** If ``v`` is a ``q``-quantile of the data (at most ``q n`` rows
below, at most ``(1 - q) n`` above, however many rows equal ``v``), then every ``c`` in ``[v -
w, v + w]`` has ``s = 0`` (``u_i < c`` forces ``x_i < v``, ``d_i > c`` forces ``x_i > v``). So a
value that many rows hold has a window of width ``2 w`` of the best score instead of a point of
measure zero, and the released value is rounded to the shortest decimal within ``w (1 -
2^-10)`` of the sample (post-processing): a tied value such as 12.5 comes back exactly.

**Sampling, exactly up to a charged perturbation.** ``s`` is constant between consecutive
breakpoints. Only the rows whose breakpoints are within ``ceil(T / f) / b`` ranks of ``q n``
give intervals below the cap; they are found with ``np.partition`` (linear time, no full sort)
and a chunked pass. The two outer regions are one interval each at the cap. Each interval's
log-weight ``ln(length) - min(T, f s)`` is computed in float64 with the error bound ``eta =
2^-34`` (docs/quantiles.md: product ``<= 2^-41``, length ``<= 2^-52``, ``log`` relative
``2^-45`` of ``|ln| <= 745``, sum ``<= 2^-41``). The interval is the exact Gumbel argmax of
these float log-weights (:func:`noisy_argmax`: exactly ``P[j] ∝ exp(shift_j)``), the point an
exact uniform real in it rounded down to a float (:func:`uniform_float`). The draw is made in two
stages with the same law (:func:`sample_interval`): only the band where ``f s < NEAR_CAP = 64``
(``2 NEAR_CAP / (f b)`` rows instead of ``2 T / (f b)``) is weighed, and an exact Bernoulli
trial, decided by a cheap bound except with probability below ``2^-53``, says whether the draw
falls in the rest.

**Privacy.** The sampled density is ``exp(-min(T, f s(x, c)) + r_x(c)) / Z(x)`` with ``|r| <=
eta``. Between neighbours the numerator moves by at most ``f Delta + 2 eta`` and so does ``ln
Z``: the loss is ``2 f Delta + 4 eta <= eps' + 4 eta``. The mechanism runs at ``eps' = eps -
ROUNDING_LOSS`` with ``ROUNDING_LOSS = 4 eta = 2^-32``; the map is ``d_in * eps``.

**Accuracy** (proved in docs/quantiles.md): with probability at least ``1 - beta`` the released
value ``v`` has at most ``q n + margin`` rows below ``v - 2 w`` and at most ``(1 - q) n + margin``
rows above ``v + 2 w``, with ``margin = (ln((hi - lo) / w) + ln(1 / beta) + 2 eta) / (f b)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from ..core.arithmetic import float_down, float_up, plain_number
from ..core.domains import kept_numbers
from ..core.errors import ParameterError
from ..core.measurement import Measurement
from ..sampling.noisy_max import noisy_argmax
from ..sampling.source import RandomSource, resolve_source
from ..sampling.two_stage import exp_sum_ball
from ..sampling.uniform import LazyUniform, bernoulli_from_balls
from .quantile_score import (
    pure_dp_on_rows,
    quantile_fraction,
    rank_excess,
    score_sensitivity,
    unit_epsilon,
)
from .validate import check_epsilon

__all__ = [
    "LOG_WEIGHT_ERROR",
    "RESOLUTION_DIGITS",
    "ROUNDING_LOSS",
    "SCORE_CAP",
    "QuantileAccuracy",
    "check_bounds",
    "continuous_accuracy",
    "default_resolution",
    "interval_log_weights",
    "log_lengths",
    "make_continuous_quantile",
    "shortest_decimal",
    "uniform_float",
]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

#: The cap T on the score term f s: weights below e^-T relative to a quantile are merged.
SCORE_CAP = 4096
#: Bound eta on |float log-weight - ideal log-weight| for every interval (module docstring).
LOG_WEIGHT_ERROR = Fraction(1, 2**34)
#: What the float log-weights add to the privacy loss: 4 eta.
ROUNDING_LOSS = 4 * LOG_WEIGHT_ERROR
#: Default resolution: (hi - lo) * 10^-RESOLUTION_DIGITS.
RESOLUTION_DIGITS = 6
_CHUNK = 1 << 18
#: The share of a progress bar given to ``np.partition`` (about half of the work).
PARTITION_SHARE = 0.5
_LN2 = math.log(2.0)


# ----------------------------------------------------------------------------- parameters
def check_bounds(bounds: Any) -> tuple[float, float]:
    """``(lo, hi)``: two finite numbers with ``lo < hi``.

    Parameters
    ----------
    bounds : pair of numbers
        The public clamping bounds ``(lo, hi)`` (not a str; bools refused).

    Returns
    -------
    lo, hi : float
        The bounds as floats, finite, with ``lo < hi``.
    """
    if isinstance(bounds, (str, bytes)) or not hasattr(bounds, "__len__") or len(bounds) != 2:
        raise ParameterError(f"bounds must be a pair (lo, hi), got {bounds!r}")
    out = []
    for v in bounds:
        if isinstance(v, bool) or not isinstance(v, (int, float, Fraction, np.number)):
            raise ParameterError(f"bounds must be numbers, got {v!r}")
        f = float(v)
        if not math.isfinite(f):
            raise ParameterError(f"bounds must be finite, got {v!r}")
        out.append(f)
    if not out[0] < out[1]:
        raise ParameterError(f"bounds must satisfy lo < hi, got {bounds!r}")
    return out[0], out[1]


def _min_resolution(lo: float, hi: float) -> float:
    """``max(2^-38 max(|lo|, |hi|, hi - lo), 2^-1061)``: every float spacing near the data is at
    most ``2^-12 w`` (the accuracy proof in docs/quantiles.md needs ``2^-11 w``)."""
    width = Fraction(hi) - Fraction(lo)
    return max(float_up(max(Fraction(abs(lo)), Fraction(abs(hi)), width) / 2**38), 2.0**-1061)


def default_resolution(lo: float, hi: float) -> float:
    """``(hi - lo) / 10^6``, raised to the smallest resolution allowed if needed.

    Parameters
    ----------
    lo, hi : float
        The public bounds, ``lo < hi`` (:func:`check_bounds`).

    Returns
    -------
    float
        The default resolution ``w`` (rounded up), in the data's units.
    """
    width = Fraction(hi) - Fraction(lo)
    return max(float_up(width / 10**RESOLUTION_DIGITS), _min_resolution(lo, hi))


def check_resolution(resolution: Any, lo: float, hi: float) -> float:
    """A resolution ``w`` with ``2^-38 max(|lo|, |hi|, hi - lo) <= w <= (hi - lo) / 4``."""
    if resolution is None:
        return default_resolution(lo, hi)
    resolution = plain_number(resolution)
    if isinstance(resolution, bool) or not isinstance(resolution, (int, float, Fraction)):
        raise ParameterError(f"resolution must be a number, got {resolution!r}")
    w = float(resolution)
    least = _min_resolution(lo, hi)
    if not (math.isfinite(w) and least <= w and Fraction(w) * 4 <= Fraction(hi) - Fraction(lo)):
        raise ParameterError(
            f"resolution must be in [{least:.3g}, (hi - lo) / 4 = {(hi - lo) / 4:.6g}], got "
            f"{resolution!r}"
        )
    return w


# ----------------------------------------------------------------------------- float pieces
def _round_up_sum(x: F64, w: float) -> F64:
    """``x + w`` rounded up to a float, elementwise (TwoSum error sign)."""
    with np.errstate(over="ignore", invalid="ignore"):
        s = x + w
        bb = s - x
        err = (x - (s - bb)) + (w - bb)
        bump = np.isfinite(s) & (err > 0)
    out: F64 = np.where(bump, np.nextafter(s, np.inf), s)
    return out


def _round_down_diff(x: F64, w: float) -> F64:
    """``x - w`` rounded down to a float, elementwise."""
    with np.errstate(over="ignore", invalid="ignore"):
        s = x - w
        bb = s - x
        err = (x - (s - bb)) + (-w - bb)
        bump = np.isfinite(s) & (err < 0)
    out: F64 = np.where(bump, np.nextafter(s, -np.inf), s)
    return out


def log_lengths(left: F64, right: F64) -> F64:
    """``ln(right - left)`` in float64 (relative length error <= 2^-53; no overflow).

    Parameters
    ----------
    left, right : numpy.ndarray of float64
        The interval ends, elementwise ``left < right`` (a zero length gives ``-inf``).

    Returns
    -------
    numpy.ndarray of float64
        ``ln(right - left)`` of each interval, also when ``right - left`` overflows a float.
    """
    with np.errstate(over="ignore"):
        length = right - left
    out: F64 = np.log(length)
    big = np.isinf(length)
    if bool(big.any()):
        out[big] = np.log(right[big] * 0.5 - left[big] * 0.5) + _LN2
    return out


def interval_log_weights(length_logs: F64, excess: I64, factor: float) -> F64:
    """``ln(length) - min(T, factor * s)`` in float64, within ``LOG_WEIGHT_ERROR``.

    Parameters
    ----------
    length_logs : numpy.ndarray of float64
        ``ln`` of each interval's length (:func:`log_lengths`).
    excess : numpy.ndarray of int64
        The rank excess ``s`` on each interval (constant there; ``b`` times rows).
    factor : float
        ``f = eps' / (2 Delta)``, rounded down, ``eps'`` the row-level epsilon less
        ``ROUNDING_LOSS``.

    Returns
    -------
    numpy.ndarray of float64
        Each interval's unnormalised log-weight ``ln(length) - min(SCORE_CAP, f s)``.
    """
    term = np.minimum(excess.astype(np.float64) * factor, float(SCORE_CAP))
    out: F64 = length_logs - term
    return out


# ----------------------------------------------------------------------------- intervals
def _sorted_unique(a: F64) -> F64:
    """The distinct values of ``a`` in increasing order (``np.unique``), by a stable sort: the
    sorted runs that make up ``a`` (breakpoints, bounds) are merged in linear time."""
    a = np.sort(a, kind="stable")
    keep = np.empty(a.shape[0], dtype=bool)
    keep[:1] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    out: F64 = a[keep]
    return out


def _breakpoints(
    x: F64,
    lo: float,
    hi: float,
    w: float,
    level: Fraction,
    cap_excess: int,
    progress: Callable[[float], None] | None = None,
    presorted: bool = False,
) -> tuple[F64, F64, I64, list[tuple[float, float]]]:
    """The intervals of ``[lo, hi]`` below the cap, their scores, and the capped outer parts.

    ``x``: the clamped data (reordered in place by ``np.partition``). Returns ``(left, right,
    excess, capped)``: the middle intervals of positive length, their rank excess, and the
    (at most two) outer intervals whose excess is certainly ``>= cap_excess``.
    ``progress(fraction)``: after the partition (``PARTITION_SHARE``) and after each chunk of
    the counting pass (the rest of the way to 0.9, in proportion to the rows done).
    ``presorted``: ``x`` is in increasing order, so the order statistics are read in place and
    the rows between two values are a slice found by ``searchsorted`` (no partition, no pass
    over every row): the same intervals and scores.
    """
    a, b = level.numerator, level.denominator
    n = x.shape[0]
    g_star = -(-(cap_excess + (b - a) * n) // b)  # G >= g_star: capped (left region)
    l_star = -(-(cap_excess + a * n) // b)  # L >= l_star: capped (right region)
    j_left = n - g_star + 1 if g_star <= n else 0  # 1-based rank; 0: no left region
    j_right = l_star if l_star <= n else 0
    kth = sorted({j - 1 for j in (j_left, j_right) if j > 0})
    if kth and not presorted:
        x.partition(kth)
    if progress is not None:
        progress(PARTITION_SHARE)
    c_left = lo
    if j_left:  # for c < d_(j_left): G(c) >= n - j_left + 1 = g_star
        c_left = max(lo, float(_round_down_diff(x[j_left - 1 : j_left], w)[0]))
    c_right = hi
    if j_right:  # for c > u_(j_right): L(c) >= j_right = l_star
        c_right = min(hi, float(_round_up_sum(x[j_right - 1 : j_right], w)[0]))
    # Rows below ``x_low <= c_left - w`` have ``u <= c_left`` (and ``d < u``); rows above
    # ``x_high >= c_right + w`` have ``d >= c_right``: only the band between needs breakpoints.
    x_low = float_down(Fraction(c_left) - Fraction(w))
    x_high = float_up(Fraction(c_right) + Fraction(w))
    below, above, band = _band(x, x_low, x_high, progress, presorted)
    u = _round_up_sum(band, w)
    d = _round_down_diff(band, w)
    below += int(np.count_nonzero(u <= c_left))
    above += int(np.count_nonzero(d >= c_right))
    ups = [u[(u > c_left) & (u < c_right)]]
    downs = [d[(d > c_left) & (d < c_right)]]
    u_mid = np.concatenate(ups) if ups else np.empty(0)
    d_mid = np.concatenate(downs) if downs else np.empty(0)
    if not presorted:  # a sorted band gives sorted u and d (monotone maps of the rows)
        u_mid.sort()
        d_mid.sort()
    edges = _sorted_unique(np.concatenate(([c_left], u_mid, d_mid, [c_right])))
    left, right = edges[:-1], edges[1:]
    lt = below + np.searchsorted(u_mid, left, side="right")
    gt = above + (d_mid.shape[0] - np.searchsorted(d_mid, right, side="left"))
    excess = rank_excess(lt, gt, n, level)
    capped = [(lo, c_left)] if c_left > lo else []
    if hi > c_right:
        capped.append((c_right, hi))
    return left, right, excess, capped


def _band(
    x: F64, x_low: float, x_high: float, progress: Callable[[float], None] | None, presorted: bool
) -> tuple[int, int, F64]:
    """``(below, above, band)``: how many rows of ``x`` are below ``x_low`` and above ``x_high``,
    and the rows between (one slice of sorted rows, else a chunked pass; progress to 0.9)."""
    n = x.shape[0]
    below, above = 0, 0
    bands: list[F64] = []
    if presorted:  # the rows below x_low, above x_high, and the band between: one slice
        below = int(np.searchsorted(x, x_low, side="left"))
        above = n - int(np.searchsorted(x, x_high, side="right"))
        bands.append(x[below : n - above])
        if progress is not None:
            progress(0.9)
    for start in range(0, 0 if presorted else n, _CHUNK):
        chunk = x[start : start + _CHUNK]
        low = chunk < x_low
        high = chunk > x_high
        below += int(np.count_nonzero(low))
        above += int(np.count_nonzero(high))
        bands.append(chunk[~(low | high)])
        if progress is not None:
            done = min(n, start + _CHUNK) / n
            progress(PARTITION_SHARE + (0.9 - PARTITION_SHARE) * done)
    band = np.concatenate(bands) if bands else np.empty(0)
    return below, above, band


def _clamped(values: Any, lo: float, hi: float, overwrite_input: bool, presorted: bool) -> F64:
    """The rows as a float64 array, NaN dropped and clamped to ``[lo, hi]``.

    A float64 input array is changed in place only with ``overwrite_input`` (else copied).
    ``presorted`` (the rows in increasing order, NaN last): the NaN and the rows to clamp are
    the two ends, found by ``np.searchsorted``, so nothing else is read or written (several
    levels on one sorted array cost no pass over it each).
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    shared = isinstance(values, np.ndarray) and np.shares_memory(x, values)
    if shared and not (overwrite_input and x.flags.writeable):
        x = x.copy()  # changed in place below: never the caller's array unless allowed
    if presorted:
        if x.shape[0] and math.isnan(x[-1]):
            x = x[: int(np.searchsorted(x, np.nan, side="left"))]  # NaN sort last
        x[: int(np.searchsorted(x, lo, side="left"))] = lo
        x[int(np.searchsorted(x, hi, side="right")) :] = hi
        return x
    if bool(np.isnan(x).any()):
        x = kept_numbers(x)
    np.clip(x, lo, hi, out=x)
    return x


def continuous_shifts(
    values: Any,
    lo: float,
    hi: float,
    w: float,
    level: Fraction,
    factor: float,
    overwrite_input: bool = False,
    progress: Callable[[float], None] | None = None,
    presorted: bool = False,
) -> tuple[F64, F64, F64]:
    """Every positive-length interval of the mechanism and its float log-weight.

    Returns ``(left, right, shifts)``; ``|shift - (ln(right - left) - min(T, factor s))| <=
    LOG_WEIGHT_ERROR`` for each (tested against arb). ``overwrite_input``: a float64 array
    given is clamped and reordered in place instead of copied (its multiset of clamped values
    is unchanged, so other levels with the same bounds can reuse it). ``progress(fraction)``
    is called as the work advances (it reads nothing random and changes no output).
    ``presorted``: the caller promises ``values`` in increasing order (NaN last, if any):
    the intervals are found without a partition or a pass over every row (the same output).
    """
    x = _clamped(values, lo, hi, overwrite_input, presorted)
    return _intervals(x, lo, hi, w, level, factor, SCORE_CAP, progress, presorted)


def _intervals(
    x: F64,
    lo: float,
    hi: float,
    w: float,
    level: Fraction,
    factor: float,
    cap: int,
    progress: Callable[[float], None] | None,
    presorted: bool,
    far: bool = True,
) -> tuple[F64, F64, F64]:
    """``(left, right, shifts)`` of the clamped rows ``x``: the intervals whose rank excess
    may be below ``ceil(cap / factor)``, each with its float log-weight ``ln(length) - min(T,
    factor s)``, then (``far``) the at most two outer intervals where the excess is at least
    that, at weight ``ln(length) - cap`` (``cap = SCORE_CAP``: the mechanism's own outer
    intervals, ``min(T, factor s) = T`` there)."""
    cap_excess = math.ceil(Fraction(cap) / Fraction(factor))
    left, right, excess, capped = _breakpoints(x, lo, hi, w, level, cap_excess, progress, presorted)
    shifts = interval_log_weights(log_lengths(left, right), excess, factor)
    if capped and far:
        c_left = np.array([c[0] for c in capped])
        c_right = np.array([c[1] for c in capped])
        c_shifts = log_lengths(c_left, c_right) - float(cap)
        left = np.concatenate((left, c_left))
        right = np.concatenate((right, c_right))
        shifts = np.concatenate((shifts, c_shifts))
    return left, right, shifts


def _far_intervals(
    x: F64,
    lo: float,
    hi: float,
    w: float,
    level: Fraction,
    factor: float,
    c_1: float,
    c_2: float,
    presorted: bool,
) -> tuple[F64, F64, F64]:
    """``(left, right, shifts)`` of the mechanism's intervals (:func:`continuous_shifts`) on
    ``[lo, c_1)`` and ``(c_2, hi]``, an interval holding ``c_1`` or ``c_2`` cut at it (its
    parts keep its score, each weighed by its own length)."""
    cap_excess = math.ceil(Fraction(SCORE_CAP) / Fraction(factor))
    fl, fr, excess, capped = _breakpoints(x, lo, hi, w, level, cap_excess, None, presorted)
    below, above = fl < c_1, fr > c_2  # both: an interval holding the whole near band
    mid_l = np.concatenate((fl[below], np.maximum(fl[above], c_2)))
    mid_r = np.concatenate((np.minimum(fr[below], c_1), fr[above]))
    mid_s = interval_log_weights(
        log_lengths(mid_l, mid_r), np.concatenate((excess[below], excess[above])), factor
    )
    # the capped outer parts lie below c_1 and above c_2 (a larger cap: a wider band)
    out_l = np.array([c[0] for c in capped])
    out_r = np.array([c[1] for c in capped])
    out_s = log_lengths(out_l, out_r) - float(SCORE_CAP)
    return (np.concatenate((mid_l, out_l)), np.concatenate((mid_r, out_r)),
            np.concatenate((mid_s, out_s)))  # fmt: skip


def _far_probability(
    near: F64,
    lo: float,
    hi: float,
    c_1: float,
    c_2: float,
    far_intervals: Callable[[], tuple[F64, F64, F64]],
) -> Callable[[int], Any]:
    """``probability(prec)`` for :func:`bernoulli_from_balls`: a ball holding ``p = Z_far /
    (Z_near + Z_far)`` (sums of ``exp`` of the float log-weights ``near`` and of the far
    intervals). The first ball is ``[0, p_ub]`` (:func:`_far_bound`: no far interval is
    built); later ones are computed in arb at ``prec`` bits from every log-weight."""
    calls = [0]

    def probability(prec: int) -> Any:
        from flint import arb, ctx

        calls[0] += 1
        if calls[0] == 1:
            return arb(_far_bound(near, lo, hi, c_1, c_2) / 2) * arb(1, 1)  # [0, p_ub]
        old = ctx.prec
        ctx.prec = prec
        try:
            z_far = exp_sum_ball(far_intervals()[2], True)
            return z_far / (exp_sum_ball(near, True) + z_far)
        finally:
            ctx.prec = old

    return probability


def _far_bound(near: F64, lo: float, hi: float, c_1: float, c_2: float) -> float:
    """An upper bound ``p_ub`` of ``Z_far / (Z_near + Z_far)`` (``0.0`` when nothing is far).

    Every far interval has excess at least ``ceil(NEAR_CAP / f)``, so ``min(T, f s) >=
    NEAR_CAP (1 - 2^-50)`` (the excess as a float times ``f``, rounded) and
    its float log-weight is at most ``ln(length) - NEAR_CAP + eta``: ``Z_far <= e^(eta -
    NEAR_CAP) (c_1 - lo + hi - c_2)``, bounded by twice the longer part. ``Z_near`` is at least
    ``exp(M) S`` with ``M`` the largest near log-weight and ``S`` the float sum of ``exp(shift
    - M)`` (``S >= 1``; its relative error, ``< 2^-20`` for fewer than ``2^32`` terms, is taken
    off ``ln S`` together with ``2^-10`` of it). The slack ``2^-20`` covers ``eta`` and the
    float logs."""
    ends = [(lo, c_1)] if c_1 > lo else []
    if hi > c_2:
        ends.append((c_2, hi))
    if not ends:
        return 0.0
    if near.shape[0] == 0:
        return 1.0
    starts, stops = np.array([e[0] for e in ends]), np.array([e[1] for e in ends])
    log_far = float(log_lengths(starts, stops).max())
    top = float(near.max())
    log_near = top + math.log(float(np.exp(near - top).sum())) * (1 - 2**-10) - 2**-20
    log_p = log_far + _LN2 - NEAR_CAP + 2**-20 - log_near
    if log_p >= 0:
        return 1.0
    return max(math.exp(log_p) * (1 + 2**-40), 5e-324)


#: The score cap of the first stage of :func:`sample_interval`: the intervals where ``f s`` may
#: be below it are found and weighed; the rest of ``[lo, hi]`` weighs at most ``e^-NEAR_CAP``
#: per unit of length, and is looked at only when a Bernoulli trial of that small probability
#: says so.
NEAR_CAP = 64


def sample_interval(
    x: F64,
    lo: float,
    hi: float,
    w: float,
    level: Fraction,
    factor: float,
    source: RandomSource | None = None,
    progress: Callable[[float], None] | None = None,
    presorted: bool = False,
) -> tuple[float, float]:
    """The interval of the mechanism's draw on the clamped rows ``x``, exactly: interval ``j``
    of :func:`continuous_shifts` (two of them cut at the points ``c_1``, ``c_2`` below) with
    probability ``exp(shift_j) / sum_k exp(shift_k)``.

    Two stages, the same law. The *near* intervals are those of the band where ``f s`` may be
    below ``NEAR_CAP`` (:func:`_breakpoints` with that cap: about ``2 NEAR_CAP / (f b)`` rows
    around the quantile instead of ``2 T / (f b)``); the *far* ones cover the rest, ``[lo,
    c_1) + (c_2, hi]``, where every excess is at least ``ceil(NEAR_CAP / f)``: the intervals of
    the full mechanism (:func:`continuous_shifts`) there, the one holding ``c_1`` or ``c_2`` cut
    at it (both parts keep its score; the output law, a uniform point in the chosen interval,
    is unchanged). With ``Z_near``, ``Z_far`` the sums of ``exp(shift)`` of each set, the draw
    is far with probability ``p = Z_far / (Z_near + Z_far)`` (:func:`bernoulli_from_balls`, an
    exact trial), then the interval within the chosen set by :func:`noisy_argmax` (``P ∝
    exp(shift)``): the product is the law above. The trial first sees the ball ``[0, p_ub]``,
    ``p_ub = (far length) e^(2^-20 - NEAR_CAP) / Z_near`` (each far shift is at most ``ln
    length - NEAR_CAP + eta``), which decides it unless the uniform falls below ``p_ub``
    (``Z_near >= w``, ``(hi - lo) / w <= 2^38``: ``p_ub < 2^39 e^-64 < 2^-53``); only then are
    the far intervals built and ``p`` computed in arb. One uniform is read for the trial
    whatever the data.
    """
    src = resolve_source(source)
    left, right, shifts = _intervals(
        x, lo, hi, w, level, factor, NEAR_CAP, progress, presorted, far=False
    )
    c_1 = float(left[0]) if left.shape[0] else hi
    c_2 = float(right[-1]) if right.shape[0] else hi
    far: list[tuple[F64, F64, F64]] = []

    def far_intervals() -> tuple[F64, F64, F64]:
        if not far:
            far.append(_far_intervals(x, lo, hi, w, level, factor, c_1, c_2, presorted))
        return far[0]

    if bernoulli_from_balls(_far_probability(shifts, lo, hi, c_1, c_2, far_intervals), src):
        left, right, shifts = far_intervals()
    pick = noisy_argmax(shifts, 1.0, "gumbel", source=src)
    return float(left[pick]), float(right[pick])


# ----------------------------------------------------------------------------- the point
def uniform_float(left: float, right: float, source: RandomSource | None = None) -> float:
    """The largest float ``<= X`` for ``X`` an exact uniform real on ``[left, right]``.

    ``X = left + U (right - left)`` with ``U`` a :class:`LazyUniform`: 64 binary digits first,
    64 more whenever the dyadic interval holding ``U`` maps across a float boundary.

    Parameters
    ----------
    left, right : float
        The interval's ends; ``right <= left`` returns ``left`` (nothing is drawn).
    source : RandomSource, optional
        The randomness (``None``: the private default; a seeded source for tests only).

    Returns
    -------
    float
        The float at or below the exact uniform draw, in ``[left, right]``.
    """
    src = resolve_source(source)
    lo_q, width = Fraction(left), Fraction(right) - Fraction(left)
    if width <= 0:
        return float(left)
    u = LazyUniform.sample(src)
    while True:
        denom = 1 << u.nbits
        x_lo = lo_q + width * Fraction(u.prefix, denom)
        x_hi = lo_q + width * Fraction(u.prefix + 1, denom)
        f = float_down(x_lo)
        if Fraction(math.nextafter(f, math.inf)) >= x_hi:
            return f
        u.refine(src)


def shortest_decimal(value: float, low: float, high: float) -> float:
    """The decimal with the fewest significant digits in ``[low, high]`` nearest ``value``.

    A fixed function of its arguments (post-processing); ``value`` itself when no shorter
    decimal fits. ``low <= value <= high``.

    Parameters
    ----------
    value : float
        The sampled value.
    low, high : float
        The window the result must lie in (public: ``value`` plus or minus ``w (1 - 2^-10)``,
        kept in the bounds).

    Returns
    -------
    float
        ``value`` rounded to the fewest significant digits (1 to 17) that land in ``[low,
        high]``; ``value`` itself when it is 0, outside the window, or no shorter decimal fits.
    """
    if value == 0.0 or not low <= value <= high:
        return value
    for digits in range(1, 18):
        r = float(f"{value:.{digits - 1}e}")
        if low <= r <= high:
            return r
    return value


# ----------------------------------------------------------------------------- the mechanism
def make_continuous_quantile(
    bounds: tuple[float, float],
    q: Any,
    epsilon: Any,
    *,
    resolution: Any = None,
    source: RandomSource | None = None,
    round_to_resolution: bool = True,
    overwrite_input: bool = False,
    progress: Callable[[float], None] | None = None,
    max_rows: int = 1,
    presorted: bool = False,
) -> Measurement:
    """The continuous exponential mechanism for the ``q``-quantile on ``[lo, hi]``, with ties.

    Input: a 1-D array of values (NaN dropped, the rest clamped); output: a float in ``[lo,
    hi]``. Privacy map (``SymmetricDistance`` to ``MaxDivergence``): ``d_in * eps`` (module
    docstring; ``ROUNDING_LOSS`` of it pays for the float log-weights). Linear time apart from
    sorting the ``O(T / eps)`` rows nearest the quantile.

    Parameters
    ----------
    bounds : pair of float
        The public bounds ``(lo, hi)``, ``lo < hi``: the rows are clamped to them and the output
        lies in them.
    q : float or Fraction
        The quantile level in ``[0, 1]``, read as ``a / b`` (:func:`quantile_fraction`).
    epsilon : float or Fraction
        The privacy loss for one privacy unit added or removed (``d_in = 1``); the row-level
        ``epsilon / max_rows`` must exceed ``2 ROUNDING_LOSS`` (``2^-31``).
    resolution : float, optional
        The public ``w``, in the data's units, in ``[2^-38 max(|lo|, |hi|, hi - lo), (hi - lo) /
        4]`` (default :func:`default_resolution`).
    source : RandomSource, optional
        The randomness (``None``: the private default; a seeded source for tests only).
    round_to_resolution : bool, default True
        Release the shortest decimal within ``w (1 - 2^-10)`` of the sample (else the sampled
        float itself).
    overwrite_input : bool, default False
        Clamp and reorder a float64 input array in place instead of copying it.
    progress : callable, optional
        ``progress(fraction)``, the fractions of the rows processed, up to 1.0: a progress bar
        shown to the data owner only (it reads no randomness and changes no output).
    max_rows : int, default 1
        ``r``: the most input rows one privacy unit holds; the mechanism runs at ``eps / r``
        per row (rounding loss included), so ``d_in`` counts units (:mod:`.quantile_score`,
        "Rows per unit").
    presorted : bool, default False
        The caller promises every input in increasing order (NaN last; e.g. sorted once for
        several levels): the same output, faster.

    Returns
    -------
    Measurement
        From a 1-D array of numbers to one float in ``[lo, hi]``; map ``d_in * epsilon``.
    """
    lo, hi = check_bounds(bounds)
    level = quantile_fraction(q)
    eps = Fraction(check_epsilon(epsilon))
    row_eps = unit_epsilon(eps, max_rows)
    if row_eps <= 2 * ROUNDING_LOSS:
        least = float(2 * ROUNDING_LOSS * (eps / row_eps))  # 2 ROUNDING_LOSS max_rows
        raise ParameterError(f"epsilon must exceed {least:.3g}, got {epsilon}")
    w = check_resolution(resolution, lo, hi)
    factor = float_down((row_eps - ROUNDING_LOSS) / (2 * score_sensitivity(level)))
    snap = w * (1 - 2**-10)  # exact: w times a short dyadic
    if factor <= 0:
        raise ParameterError(f"epsilon is too small for the float path, got {epsilon}")

    def function(values: Any) -> float:
        rows = _clamped(values, lo, hi, overwrite_input, presorted)
        left, right = sample_interval(rows, lo, hi, w, level, factor, source, progress, presorted)
        x = uniform_float(left, right, source)
        if progress is not None:
            progress(1.0)
        if not round_to_resolution:
            return x
        return shortest_decimal(x, max(lo, x - snap), min(hi, x + snap))

    return pure_dp_on_rows(function, eps)


class QuantileAccuracy:
    """The accuracy theorem's numbers for one continuous quantile (docs/quantiles.md)."""

    def __init__(self, margin: float, resolution: float, confidence: float) -> None:
        self.margin = margin
        self.resolution = resolution
        self.confidence = confidence

    def holds(self, values: Any, released: float, level: Fraction) -> bool:
        """Whether the statement holds for ``released`` on ``values`` (clamped by the caller).

        Parameters
        ----------
        values : array_like of float
            The rows the statement is about (NaN dropped here; already clamped to the bounds).
        released : float
            The released value ``v``.
        level : Fraction
            The level ``q`` it was released for.

        Returns
        -------
        bool
            True when at most ``q n + margin`` rows lie below ``v - 2 w`` and at most ``(1 - q) n +
            margin`` above ``v + 2 w`` (``n`` the rows kept). For tests: it reads the data.
        """
        x = np.asarray(values, dtype=np.float64)
        x = kept_numbers(x)
        n = x.shape[0]
        q = float(level)
        below = int(np.count_nonzero(x < released - 2 * self.resolution))
        above = int(np.count_nonzero(x > released + 2 * self.resolution))
        return bool(below <= q * n + self.margin and above <= (1 - q) * n + self.margin)


def continuous_accuracy(
    bounds: tuple[float, float], q: Any, epsilon: Any, confidence: float, resolution: Any = None
) -> QuantileAccuracy:
    """``margin`` (rows) of the accuracy theorem at ``confidence``, rounded up.

    Parameters
    ----------
    bounds : pair of float
        The public bounds ``(lo, hi)``.
    q : float or Fraction
        The quantile level in ``[0, 1]``.
    epsilon : float or Fraction
        The row-level epsilon the mechanism ran at (``epsilon / max_rows``; with several levels,
        one level's share), rounding loss included; it must exceed ``ROUNDING_LOSS``.
    confidence : float
        The probability ``1 - beta`` in ``[0, 1)`` with which the statement holds.
    resolution : float, optional
        The resolution ``w`` (default :func:`default_resolution`).

    Returns
    -------
    QuantileAccuracy
        ``margin`` (rows, rounded up), the resolution ``w`` and the confidence.
    """
    lo, hi = check_bounds(bounds)
    level = quantile_fraction(q)
    eps = Fraction(check_epsilon(epsilon))
    w = check_resolution(resolution, lo, hi)
    factor = float_down((eps - ROUNDING_LOSS) / (2 * score_sensitivity(level)))
    log_ratio = (math.log(hi * 0.5 - lo * 0.5) + _LN2 - math.log(w)) * (1 + 2**-40) + 1e-12
    t = log_ratio - math.log1p(-confidence) * (1 + 2**-40) + 2 * float(LOG_WEIGHT_ERROR)
    if t > SCORE_CAP:
        raise ParameterError("confidence too close to 1 for the score cap")
    margin = float_up(
        Fraction(t) / (Fraction(factor) * level.denominator) * (1 + Fraction(1, 2**40))
    )
    return QuantileAccuracy(margin, w, confidence)
