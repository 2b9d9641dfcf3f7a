"""The joint exponential mechanism for top-k (Gillenwater et al. 2022), sampled exactly.

Gillenwater, Joseph, Munoz Medina and Ribero Diaz, "A Joint Exponential Mechanism for
Differentially Private Top-k", ICML 2022 (PMLR 162:7570-7582). Input: integer counts ``c``,
one per public candidate (length ``d``), and ``k <= d``. With ``c_(1) >= c_(2) >= ...`` the
counts in decreasing order, an ordered sequence ``s = (s_1, ..., s_k)`` of distinct indices has
the error ``E(s) = max_i (c_(i) - c_{s_i})``, an integer ``>= 0``. The mechanism releases ``s``
with probability proportional to ``exp(-E(s) / scale)``, in one draw over all ``d!/(d-k)!``
sequences (the paper samples with ``scale = 2 Delta / epsilon``).

Exact sampling, in three steps (docs/mechanisms.md, "Joint exponential top-k"):

1. **Counting.** ``n_i(E) = #{j : c_j >= c_(i) - E}``; the sets are nested in ``i``, so the
   number of sequences with error ``<= E`` is ``N(E) = prod_i (n_i(E) - (i - 1))`` and
   ``m(E) = N(E) - N(E - 1)`` sequences have error exactly ``E`` (Python ints). Positions
   with equal counts form blocks sharing one ``n``; ``N`` changes only at the levels
   ``E = c_(i) - v`` (``v`` a distinct count), visited in increasing order: a level's
   changes of factors as two small products, then one exact multiplication and division of
   ``N`` (``O(k D)`` steps for ``D`` distinct counts).
2. **The level.** ``E`` is drawn with probability ``m(E) exp(-E / scale) / Z`` by inversion
   with a lazily read uniform ``U`` and python-flint ``arb`` balls at increasing precision. The
   levels are visited in decreasing weight (a float estimate: the order does not change the
   law). ``Z`` is one polynomial with the integer coefficients ``m(E)`` evaluated at
   ``exp(-1 / scale)``; the weights of the levels the walk visits are computed as it goes.
   For speed, only a window ``[E_lo, E_hi]`` of levels is computed at first: the levels
   outside it weigh about ``2^-80`` of ``Z`` at most, by exact bounds (``N(E_lo - 1)`` below;
   above, chunks ``(g, g']`` of ``N(g') - N(g)`` sequences of weight at most
   ``exp(-(g + 1) / scale)``, and ``N_total - N(g)`` beyond the last), carried as an interval
   in ``Z``; should ``U`` fall where that interval matters, every level is computed and the
   walk resumes with the same ``U`` and the same order, so the released level is the ideal
   one.
   **The fast law** (int64 counts, ``k d`` above :data:`_SMALL`), after the pruning of Wu
   and Zhang ("Faster Differentially Private Top-k Selection: A Joint Exponential Mechanism
   with Pruning", NeurIPS 2024): the candidates whose count is below ``c_(k)`` minus the
   reach (where every sequence using one weighs about ``2^-80`` of ``Z`` at most) are not in
   the profile, the counts below ``c_(k)`` share one table slot per distinct value, and the
   levels outside a window ``[lo, hi]`` around the mode are one group. Inside the window the
   cumulative weights ``C(E)`` at the levels where ``N`` changes are computed in float64 from
   ``log N`` (summation by parts: positive terms only) with a rigorous error bound, and the
   group's mass enters as an interval (``N(lo - 1)`` below, ``d!/(d-k)! exp(-(hi+1)/scale)``
   above). The level is the one inversion with ``U`` picks, in increasing ``E``, when the
   bounds decide; otherwise (about once in 10^4 draws, or whenever ``U`` lands where the
   pruned mass matters) every level is counted exactly and the ``arb`` walk above runs with
   the same ``U`` in the same order, so the released level is the ideal one.
3. **The sequence.** Given ``E``, the first position ``i*`` whose error equals ``E`` is drawn
   with probability proportional to ``prod_{i<i*}(|S_i(<E)| - (i-1)) |T_{i*}(E)|
   prod_{i>i*}(|S_i(<=E)| - (i-1))`` (``S_i(<=E) = {j : c_(i) - c_j <= E}``, ``S_i(<E)``
   strict, ``T_i(E) = {j : c_(i) - c_j = E}``), then each position uniformly among its set
   minus the earlier picks, every draw by :func:`~dpselect.sampling.uniform.uniform_index`.

Privacy (the paper's argument): under ``LInfDistance(monotonic=True)`` every count moves by at
most ``d_in`` in one direction, so ``c_(i)`` and ``c_{s_i}`` both move within ``[0, d_in]``
(or ``[-d_in, 0]``) and ``E(s)`` moves by at most ``Delta_u = d_in``; otherwise by ``Delta_u =
2 d_in``. The mechanism is the exponential mechanism on the utility ``-E``: pure
``epsilon = 2 Delta_u / scale``, and ``epsilon``-bounded range, hence ``epsilon^2 / 8``-zCDP
(Durfee and Rogers 2019; Cesar and Rogers 2021; seed 004). Both are rounded up.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
from flint import arb, ctx, fmpq, fmpz_poly

from ..core.arithmetic import float_up
from ..core.domains import IntDomain, VectorDomain
from ..core.errors import DomainError, MeasureError, MetricError, ParameterError
from ..core.measurement import Measurement
from ..core.measures import MaxDivergence, Measure, ZeroConcentratedDivergence
from ..core.metrics import LInfDistance
from ..sampling.source import RandomSource, resolve_source
from ..sampling.uniform import LazyUniform, uniform_index
from .report_noisy_max import check_selection_measure
from .validate import check_int, check_scale

__all__ = ["joint_top_k_loss", "make_joint_top_k"]

#: Bits by which the levels left out of the first window are bounded below ``Z``.
WINDOW_BITS = 80
#: Grid points for the float search of the heaviest level.
_GRID = 1024
#: Grid points for the fast law's search of the mode (only the window's width depends on it).
_FAST_GRID = 256
#: Chunks bounding the mass above the window.
_CHUNKS = 128
#: Counts whose range is below this are handled as int64 (else as Python ints).
_INT64_RANGE = 1 << 62
_LN2 = math.log(2.0)


def joint_top_k_loss(d_range: Any, scale: Any, measure: Measure) -> float:
    """The privacy loss of the joint exponential mechanism at range distance ``d_range``.

    ``Delta_u = d_range`` (``d_in`` when monotonic, else ``2 d_in``), ``epsilon = 2 Delta_u /
    scale``; ``rho = epsilon^2 / 8`` (bounded range). Exact rationals, rounded up once.

    Parameters
    ----------
    d_range : int, float or Fraction
        The sensitivity of the utility ``-E(s)``, ``>= 0`` (``inf`` allowed).
    scale : int, float or Fraction
        The sampling scale, ``> 0``.
    measure : Measure
        ``MaxDivergence()`` or ``ZeroConcentratedDivergence()``.

    Returns
    -------
    float
        ``epsilon`` or ``rho``, rounded up (0 at ``d_range = 0``).

    Raises
    ------
    MeasureError
        Any other measure.
    """
    if d_range == 0:
        return 0.0
    if isinstance(d_range, float) and math.isinf(d_range):
        return math.inf
    epsilon = 2 * Fraction(d_range) / Fraction(scale)
    if isinstance(measure, MaxDivergence):
        return float_up(epsilon)
    if isinstance(measure, ZeroConcentratedDivergence):
        return float_up(epsilon * epsilon / 8)
    raise MeasureError(
        f"output_measure must be MaxDivergence() or ZeroConcentratedDivergence(), got {measure!r}"
    )


# --------------------------------------------------------------------------- the profile
@dataclass
class _Profile:
    """The distinct counts of the candidates (all, or those above a floor), for ``k``.

    ``asc``: distinct values ascending; ``cum[t]``: the number of candidates whose count is
    at least ``desc[t]`` (``desc = asc[::-1]``); blocks ``b < q``: the top-``k`` positions
    ``first[b] .. last[b]`` (1-based) share the count ``desc[b]``.
    """

    asc: npt.NDArray[Any]
    cum: npt.NDArray[np.int64]
    top: list[int]  # desc[b], b < q, as Python ints
    first: list[int]
    length: list[int]
    k: int
    d: int
    complete: bool  # every candidate is in the profile
    floor: int | None = None  # the candidates below it are not (levels up to top[-1] - floor)

    @property
    def n_distinct(self) -> int:
        return int(self.asc.shape[0])

    def at_least(self, thresholds: Any) -> npt.NDArray[np.int64]:
        """``#{j : c_j >= v}`` for each threshold ``v`` (each at or above the floor)."""
        above = self.n_distinct - np.searchsorted(self.asc, thresholds, side="left")
        out = np.zeros(np.shape(above), dtype=np.int64)
        ok = above > 0
        out[ok] = self.cum[above[ok] - 1]
        return out

    def sizes(self, level: int) -> list[int]:
        """``n_b(level) = #{j : c_j >= top[b] - level}`` for each block."""
        thresholds = _values([t - level for t in self.top], self.asc.dtype)
        return [int(n) for n in self.at_least(thresholds)]

    def factor(self, b: int, n: int) -> int:
        return math.perm(n - self.first[b] + 1, self.length[b])

    def count(self, level: int) -> int:
        """``N(level)``: sequences with error ``<= level`` (0 below level 0)."""
        if level < 0:
            return 0
        total = 1
        for b, n in enumerate(self.sizes(level)):
            total *= self.factor(b, n)
        return total

    def log_counts(self, levels: Any) -> npt.NDArray[np.float64]:
        """Float estimates of ``log N(E)`` on an array of levels ``E >= 0``."""
        thresholds = np.subtract.outer(_values(self.top, self.asc.dtype), levels)
        n = self.at_least(thresholds).astype(np.float64)  # (q, len(levels))
        block = np.repeat(np.arange(len(self.top)), self.length)
        offsets = np.arange(self.k, dtype=np.float64)  # position i (0-based) takes i away
        out: npt.NDArray[np.float64] = np.log(n[block] - offsets[:, None]).sum(axis=0)
        return out

    def events(self, lo: int, hi: int) -> tuple[list[int], list[int], list[int], list[bool]]:
        """The level changes ``E = top[b] - v`` in ``[lo, hi]`` (``lo >= 1``), by increasing
        ``E``: the levels, the blocks, each block's new factor, and whether the event is the
        last of its level."""
        levels, blocks, sizes = [], [], []
        for b, top in enumerate(self.top):
            j0 = int(np.searchsorted(self.asc, _scalar(top - hi, self.asc.dtype), "left"))
            j1 = int(np.searchsorted(self.asc, _scalar(top - lo, self.asc.dtype), "right"))
            if j1 <= j0:
                continue
            values = self.asc[j0:j1]
            levels.append(_scalar(top, self.asc.dtype) - values)
            blocks.append(np.full(j1 - j0, b, dtype=np.int64))
            sizes.append(self.cum[self.n_distinct - 1 - np.arange(j0, j1)])
        if not levels:
            return [], [], [], []
        all_levels = np.concatenate(levels)
        order = np.argsort(all_levels, kind="stable")
        all_levels = all_levels[order]
        block_of = np.concatenate(blocks)[order]
        n = np.concatenate(sizes)[order]
        first = np.asarray(self.first, dtype=np.int64)[block_of]
        single = np.asarray(self.length, dtype=np.int64)[block_of] == 1
        factors: list[int] = (n - first + 1).tolist()  # blocks of one position
        for idx in np.flatnonzero(~single).tolist():
            factors[idx] = self.factor(int(block_of[idx]), int(n[idx]))
        last = np.ones(all_levels.shape[0], dtype=bool)
        last[:-1] = all_levels[1:] != all_levels[:-1]
        return [int(v) for v in all_levels.tolist()], block_of.tolist(), factors, last.tolist()

    def level_counts(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """``(E, m(E))`` for every level ``E`` in ``[lo, hi]`` with ``m(E) > 0``, exactly."""
        out: list[tuple[int, int]] = []
        start = max(lo, 0)
        sizes = self.sizes(start - 1 if start > 0 else 0)
        factors = [self.factor(b, n) for b, n in enumerate(sizes)]
        total = math.prod(factors)
        if start == 0:
            if hi >= 0:
                out.append((0, total))
            start = 1
        if hi < start:
            return out
        levels, blocks, news, lasts = self.events(start, hi)
        num = den = 1  # the changes of one level, as small products
        for level, b, new, last in zip(levels, blocks, news, lasts, strict=True):
            num *= new
            den *= factors[b]
            factors[b] = new
            if last:
                grown = total * num // den
                out.append((level, grown - total))
                total, num, den = grown, 1, 1
        return out

    @property
    def max_level(self) -> int:
        return int(self.top[0] - _int(self.asc[0]))


def _int(v: Any) -> int:
    return int(v)


def _values(values: list[int], dtype: Any) -> npt.NDArray[Any]:
    if np.dtype(dtype).kind == "O":
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out
    return np.asarray(values, dtype=np.int64)


def _scalar(v: int, dtype: Any) -> Any:
    if np.dtype(dtype).kind == "O":
        return v
    return np.int64(min(max(v, -(1 << 63)), (1 << 63) - 1))


def _normalised(x: Any) -> npt.NDArray[Any]:
    """The counts minus their minimum (``E`` is unchanged): int64, or Python ints when the
    range is at least ``2^62``."""
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise DomainError(f"the counts must be a 1-d vector, got {arr.ndim} dimensions")
    if arr.dtype.kind == "O":
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in arr):
            raise DomainError("the counts must be integers")
        ints = [int(v) for v in arr]
        lo, hi = min(ints), max(ints)
        if hi - lo < _INT64_RANGE:
            return np.asarray([v - lo for v in ints], dtype=np.int64)
        out = np.empty(len(ints), dtype=object)
        out[:] = [v - lo for v in ints]
        return out
    if arr.dtype.kind not in "iu":
        raise DomainError(f"the counts must be integers, got dtype {arr.dtype}")
    lo, hi = int(arr.min()), int(arr.max())
    if hi - lo < _INT64_RANGE:
        if arr.dtype.kind == "u":
            shifted: npt.NDArray[Any] = (arr - arr.dtype.type(lo)).astype(np.int64)
        else:
            shifted = arr.astype(np.int64) - np.int64(lo)  # exact: the result fits
        return shifted
    out = np.empty(arr.shape[0], dtype=object)
    out[:] = [int(v) - lo for v in arr.tolist()]
    return out


def _distinct(
    values: npt.NDArray[Any], pivot: int | None = None
) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64]]:
    """Distinct values ascending and their multiplicities. ``pivot``: a value with few values
    above it (the ``k``-th largest), counted apart so that one long gap at the top does not
    make the counting table as long as the range."""
    if values.dtype.kind != "O" and values.shape[0] > 0 and pivot is not None:
        lo = int(values.min())
        if lo <= pivot and pivot - lo <= 4 * values.shape[0] + (1 << 16):
            above = values[values > pivot]
            clipped = np.bincount(np.minimum(values, pivot) - lo)
            clipped[-1] -= above.shape[0]
            present = np.flatnonzero(clipped)
            high, high_mult = np.unique(above, return_counts=True)
            return (
                np.concatenate(((present + lo).astype(np.int64), high.astype(np.int64))),
                np.concatenate((clipped[present], high_mult)).astype(np.int64),
            )
    if values.dtype.kind != "O" and values.shape[0] > 0:
        lo, hi = int(values.min()), int(values.max())
        if hi - lo <= 4 * values.shape[0] + (1 << 16):
            counts = np.bincount(values - lo)
            present = np.flatnonzero(counts)
            return (present + lo).astype(np.int64), counts[present].astype(np.int64)
    uniq, counts = np.unique(values, return_counts=True)
    return uniq, counts.astype(np.int64)


def _profile(
    values: npt.NDArray[Any], k: int, floor: int | None, pivot: int | None = None
) -> _Profile:
    d = int(values.shape[0])
    kept = values if floor is None else values[values >= _scalar(floor, values.dtype)]
    complete = kept.shape[0] == d
    asc, mult = _distinct(kept, pivot)
    cum = np.cumsum(mult[::-1]).astype(np.int64)
    q = int(np.searchsorted(cum, k, side="left")) + 1
    top = [int(v) for v in asc[::-1][:q].tolist()]
    first, length = [], []
    for b in range(q):
        start = int(cum[b - 1]) + 1 if b > 0 else 1
        first.append(start)
        length.append(min(int(cum[b]), k) - start + 1)
    return _Profile(asc, cum, top, first, length, k, d, complete, None if complete else floor)


# --------------------------------------------------------------------------- the level
def _exp_ball(level: int, scale: Fraction) -> arb:
    """``exp(-level / scale)`` as a ball at the current precision."""
    return (-arb(fmpq(level * scale.denominator, scale.numerator))).exp()


def _total(levels: list[tuple[int, int]], scale: Fraction) -> arb:
    """``sum m(E) exp(-E / scale)`` over ``(E, m)`` as a ball at the current precision: one
    polynomial with the integer coefficients ``m`` evaluated at ``exp(-1 / scale)`` (in C)
    when the levels are dense, else term by term."""
    if not levels:
        return arb(0)
    low = min(level for level, _ in levels)
    high = max(level for level, _ in levels)
    if high - low > 8 * len(levels) + 64:
        return sum((_exp_ball(level, scale) * m for level, m in levels), arb(0))
    coefficients = [0] * (high - low + 1)
    for level, m in levels:
        coefficients[level - low] = m
    value: arb = fmpz_poly(coefficients)(_exp_ball(1, scale))
    return _exp_ball(low, scale) * value


def _reach(d: int, k: int, scale: Fraction, bits: int) -> float:
    """A level beyond which the levels weigh at most about ``2^-bits`` of ``Z`` in all:
    ``scale (log N_total + bits ln 2 + 2)`` (``Z >= N(0) >= 1``)."""
    log_total = math.lgamma(d + 1) - math.lgamma(d - k + 1)
    return float(scale) * (log_total + bits * _LN2 + 2.0)


@dataclass
class _Window:
    levels: list[tuple[int, int]]  # (E, m(E)), in walk order
    lower_tail: int  # bound on the mass below the window (weights <= 1)
    upper: list[tuple[int, int]]  # (count, level): sequences above it, of weight <= e^(-l/s)
    balls: dict[int, tuple[list[arb], arb]] = field(default_factory=dict)  # by precision

    def weights(self, scale: Fraction) -> tuple[list[arb], arb]:
        """``Z`` (with the left-out mass as an interval) and the weights of the levels
        computed so far, as balls at the current precision (cached; :meth:`weight` adds)."""
        prec = ctx.prec
        if prec not in self.balls:
            z = _total(self.levels, scale)
            if self.has_tail:
                tail = arb(self.lower_tail) + sum(
                    (_exp_ball(level, scale) * count for count, level in self.upper), arb(0)
                )
                top = tail.upper()
                z = z + arb(top / 2, top / 2)  # [0, top], widened
            self.balls[prec] = ([], z)
        return self.balls[prec]

    @property
    def has_tail(self) -> bool:
        """Whether levels were left out."""
        return self.lower_tail > 0 or bool(self.upper)

    def weight(self, idx: int, scale: Fraction) -> arb:
        """The weight of level ``idx`` of the walk, at the current precision (cached)."""
        done, _ = self.weights(scale)
        while len(done) <= idx:
            level, m = self.levels[len(done)]
            done.append(_exp_ball(level, scale) * m)
        return done[idx]


def _window(profile: _Profile, scale: Fraction, bits: int | None) -> _Window:
    """The levels to compute first, with exact bounds on the rest (module docstring)."""
    total = math.perm(profile.d, profile.k)
    top_level = profile.max_level
    if bits is None:
        levels = profile.level_counts(0, top_level)
        return _Window(_heaviest_first(levels, scale), 0, [])
    s = float(scale)
    reach = _reach(profile.d, profile.k, scale, bits)
    search = top_level if not reach < top_level else math.floor(reach)
    if search + 1 <= _GRID:
        grid = list(range(search + 1))
    else:
        grid = sorted({search * g // (_GRID - 1) for g in range(_GRID)})
    scores = profile.log_counts(_values(grid, profile.asc.dtype)) - np.asarray(
        [g / s for g in grid]
    )
    best = int(np.argmax(scores))
    mode, log_z = grid[best], float(scores[best])  # Z >= N(mode) exp(-mode / scale)
    cut = log_z - bits * _LN2
    # lo: the largest level <= mode with log N(lo - 1) <= cut.
    a, b = 0, mode  # invariant: a satisfies, levels above b do not
    while a < b:
        mid = (a + b + 1) // 2
        if profile.log_counts(_values([mid - 1], profile.asc.dtype))[0] <= cut:
            a = mid
        else:
            b = mid - 1
    lo = a
    # hi: chunks (g_j, g_j+1] above the mode weigh at most (N(g_j+1) - N(g_j))
    # exp(-(g_j + 1) / scale); hi is the first boundary whose chunks above sum below the cut.
    bounds = sorted({mode + (search - mode) * j // _CHUNKS for j in range(_CHUNKS + 1)})
    logs = profile.log_counts(_values(bounds, profile.asc.dtype))
    terms = [logs[j + 1] - (bounds[j] + 1) / s for j in range(len(bounds) - 1)]
    beyond = search < top_level or not profile.complete
    if beyond:  # everything above the search range, each of weight <= exp(-(search+1)/scale)
        log_total = math.lgamma(profile.d + 1) - math.lgamma(profile.d - profile.k + 1)
        terms.append(log_total - (search + 1) / s)
    else:
        terms.append(-math.inf)
    start, acc = len(bounds) - 1, terms[-1]
    while start > 0:
        grown = float(np.logaddexp(acc, terms[start - 1]))
        if grown > cut:
            break
        start, acc = start - 1, grown
    hi = bounds[start]
    exact = [profile.count(g) for g in bounds[start:]]
    upper = [(exact[j + 1] - exact[j], bounds[start + j] + 1) for j in range(len(exact) - 1)]
    if beyond:
        upper.append((total - exact[-1], search + 1))
    levels = profile.level_counts(lo, hi)
    lower = profile.count(lo - 1) if lo > 0 else 0
    return _Window(_heaviest_first(levels, scale), lower, [cu for cu in upper if cu[0] > 0])


def _heaviest_first(levels: list[tuple[int, int]], scale: Fraction) -> list[tuple[int, int]]:
    """The levels in decreasing weight, roughly (``log2 m - E / (scale ln 2)``): the order of
    the walk, which does not change the law."""
    per_bit = float(scale) * _LN2
    return sorted(levels, key=lambda em: em[0] / per_bit - em[1].bit_length())


def _walk(window: _Window, scale: Fraction, u: LazyUniform, source: RandomSource) -> int | None:
    """The index in ``window.levels`` that inversion with ``U`` picks, or ``None`` when the
    mass left out of the window could change it."""
    has_tail = window.has_tail
    prec = 128
    while True:
        with ctx.workprec(max(prec, u.nbits + 32)):
            _, z = window.weights(scale)
            lo = arb(fmpq(u.prefix, 1 << u.nbits)) * z
            hi = arb(fmpq(u.prefix + 1, 1 << u.nbits)) * z
            cumulative = arb(0)
            undecided = False
            for idx in range(len(window.levels)):
                cumulative += window.weight(idx, scale)
                if hi.upper() < cumulative.lower():  # U Z < C_idx
                    return idx
                if lo.lower() >= cumulative.upper():  # U Z >= C_idx
                    continue
                undecided = True
                break
            if not undecided:
                if has_tail:
                    return None  # U Z beyond every level of the window
                undecided = True  # only rounding: refine
        if has_tail:
            return None
        u.refine(source)
        if u.nbits > prec // 2:
            prec *= 2


def _merge(first: _Window, full: _Window) -> _Window:
    """Every level: the window's in their order, then the others (by estimate)."""
    seen = {level for level, _ in first.levels}
    rest = [em for em in full.levels if em[0] not in seen]
    return _Window(first.levels + rest, 0, [])


# --------------------------------------------------------------------------- the sequence
def _position_sets(profile: _Profile, level: int) -> tuple[list[int], list[int]]:
    """Per position ``i = 1..k``: ``|S_i(<E)|`` and ``|S_i(<=E)|``."""
    dtype = profile.asc.dtype
    le = profile.at_least(_values([t - level for t in profile.top], dtype))
    lt = profile.at_least(_values([t - level + 1 for t in profile.top], dtype))
    n_lt, n_le = [], []
    for b in range(len(profile.top)):
        n_lt += [int(lt[b])] * profile.length[b]
        n_le += [int(le[b])] * profile.length[b]
    return n_lt, n_le


def _first_position_weights(n_lt: list[int], n_le: list[int]) -> list[int]:
    """Sequences of error exactly ``E`` whose first position of error ``E`` is ``i*``."""
    k = len(n_lt)
    suffix = [1] * (k + 1)
    for i in range(k - 1, -1, -1):
        suffix[i] = suffix[i + 1] * (n_le[i] - i)
    weights, prefix = [], 1
    for i in range(k):
        weights.append(prefix * (n_le[i] - n_lt[i]) * suffix[i + 1])
        prefix *= max(0, n_lt[i] - i)
    return weights


def _pick(bound: int, picked: list[int], source: RandomSource) -> int:
    """A uniform rank in ``[0, bound)`` outside ``picked`` (sorted; all below ``bound``)."""
    x = uniform_index(bound - len(picked), source)
    for p in picked:
        if p <= x:
            x += 1
        else:
            break
    return x


def _sample_ranks(sets: tuple[list[int], list[int], list[int]], source: RandomSource) -> list[int]:
    """Ranks (in the order count descending) of a uniform sequence of error exactly ``E``,
    from ``|S_i(<E)|``, ``|S_i(<=E)|`` and the first-position weights at ``E``."""
    n_lt, n_le, weights = sets
    r = uniform_index(sum(weights), source)
    star = 0
    while r >= weights[star]:
        r -= weights[star]
        star += 1
    ranks: list[int] = []
    picked: list[int] = []
    for i in range(len(n_lt)):
        if i < star:
            rank = _pick(n_lt[i], picked, source)
        elif i == star:
            rank = n_lt[i] + uniform_index(n_le[i] - n_lt[i], source)
        else:
            rank = _pick(n_le[i], picked, source)
        ranks.append(rank)
        bisect.insort(picked, rank)
    return ranks


def _descending(values: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """Every index, by count descending then index ascending."""
    d = values.shape[0]
    keys = sorted(range(d), key=lambda j: (-values[j], j))
    return np.asarray(keys, dtype=np.int64)


def _items(values: npt.NDArray[Any], ranks: list[int]) -> npt.NDArray[np.int64]:
    """The candidates at the given ranks of the order (count descending, index ascending)."""
    k = len(ranks)
    top_rank = max(ranks)
    # The count at rank top_rank: the (d - top_rank)-th smallest.
    d = values.shape[0]
    if values.dtype.kind == "O":
        return _descending(values)[ranks]
    floor = np.partition(values, d - 1 - top_rank)[d - 1 - top_rank]
    above = np.flatnonzero(values > floor)
    above = above[np.argsort(-values[above], kind="stable")]
    at = np.flatnonzero(values == floor)
    out = np.empty(k, dtype=np.int64)
    for i, r in enumerate(ranks):
        out[i] = above[r] if r < above.shape[0] else at[r - above.shape[0]]
    return out


# --------------------------------------------------------------------------- the fast level
#: The unit roundoff of float64.
_U = 2.0**-53
#: Bound on the error of one float64 ``log``, ``exp`` or ``expm1``, in units of ``_U`` times the
#: result (libm and NumPy's SIMD loops are within 4 ulp; docs/mechanisms.md takes 16).
_ULPS = 16.0


def _block_logs(profile: _Profile, blocks: npt.NDArray[np.int64], n: npt.NDArray[np.int64]) -> Any:
    """``log`` of each block's factor ``perm(n - first + 1, length)``, in float64, and a bound
    on the absolute error of each (arrays)."""
    first = np.asarray(profile.first, dtype=np.int64)[blocks]
    length = np.asarray(profile.length, dtype=np.int64)[blocks]
    base = (n - first + 1).astype(np.float64)  # exact: below 2^53 (n <= d)
    out = np.log(base)
    for b in np.unique(blocks[length > 1]).tolist():
        rows = blocks == b
        acc = out[rows].copy()
        for t in range(1, profile.length[b]):
            acc += np.log(base[rows] - t)
        out[rows] = acc
    # each log within _ULPS ulp (2 _ULPS _U relative) of a value in [0, log d], the sum of
    # `length` terms
    log_d = math.log(max(profile.d, 2)) * (1 + 1e-12)
    err = (length * (2 * _ULPS + 2 * length) * log_d) * _U
    return out, err


@dataclass
class _FastLaw:
    """The level's law in float64 with certified bounds (see :func:`_fast_law`)."""

    levels: npt.NDArray[np.int64]  # breakpoints b_0 < b_1 < ..., where N changes
    low: npt.NDArray[np.float64]  # lower bounds of C(b_j) (scaled)
    high: npt.NDArray[np.float64]  # upper bounds of C(b_j) (scaled)
    below: float  # upper bound of C(b_0 - 1) (scaled)
    z_low: float
    z_high: float
    log_scale: float  # every bound above is a multiple of exp(-log_scale)

    def level(self, u: LazyUniform) -> int | None:
        """The level inversion with ``U`` picks, or ``None`` when the bounds do not decide."""
        scale = 2.0**-u.nbits
        ulo = u.prefix * scale * (1 - 4 * _U)  # exact products up to rounding, widened
        uhi = (u.prefix + 1) * scale * (1 + 4 * _U)
        tlo, thi = ulo * self.z_low * (1 - 4 * _U), uhi * self.z_high * (1 + 4 * _U)
        j = int(np.searchsorted(self.low, thi, side="right"))  # first j with low[j] > thi
        if j >= self.levels.shape[0]:
            return None  # U Z may be in the mass above the levels computed
        previous = self.below if j == 0 else float(self.high[j - 1])
        if previous > tlo:
            return None  # not separated: the exact path decides
        return int(self.levels[j])


def _fast_law(profile: _Profile, scale: Fraction, bits: int, slack: float = 1.0) -> _FastLaw | None:
    """The cumulative weights ``C(E) = sum_{E' <= E} m(E') exp(-E' / scale)`` at the levels
    where ``N`` changes, in float64 with rigorous error bounds, over a window ``[lo, hi]`` of
    levels outside which the mass is at most about ``2^-bits`` of ``Z`` (counted in the bounds).

    Summation by parts makes every term positive (no cancellation of ``N(E) - N(E - 1)``):
    with ``w(E) = exp(-E / scale)`` and ``N_i`` the value of ``N`` on ``[b_i, b_{i+1})``,
    ``C(b_j) = delta + N_j w(b_j) + sum_{i<j} N_i (w(b_i) - w(b_{i+1}))`` where ``|delta| <=
    N(lo - 1)``. ``log N`` is a cumulative sum of the changes of ``log`` of one factor per
    event (all ``>= 0``), so its error is at most ``gamma_n (|log N(lo)| + sum of changes)``
    plus the errors of the logs. This is the pruning of Wu and Zhang ("Faster Differentially
    Private Top-k Selection: A Joint Exponential Mechanism with Pruning", NeurIPS 2024): the
    candidates far below share one count per distinct value and the levels far from the mode
    are one bounded group, never enumerated; here the group's mass is kept as an interval, and
    a draw that falls where it matters goes to the exact path. ``None`` when the window is empty.
    """
    s = float(scale)
    top_level = profile.max_level
    # levels up to cap are counted right: every threshold top[b] - E is at or above the floor
    cap = top_level if profile.floor is None else profile.top[-1] - profile.floor
    if cap < 0:
        return None
    reach = _reach(profile.d, profile.k, scale, bits)
    search = min(cap, math.floor(reach))
    if search + 1 <= _FAST_GRID:
        grid = np.arange(search + 1, dtype=np.int64)
    else:  # Python ints: search * g may not fit in int64
        points = {search * g // (_FAST_GRID - 1) for g in range(_FAST_GRID)}
        grid = np.asarray(sorted(points), np.int64)
    scores = profile.log_counts(grid) - grid / s
    best = int(np.argmax(scores))
    mode, log_z = int(grid[best]), float(scores[best]) - 1e-6  # Z >= N(mode) w(mode)
    cut = log_z - bits * _LN2
    a, b = 0, mode  # lo: the largest level <= mode with log N(lo - 1) <= cut
    while a < b:
        mid = (a + b + 1) // 2
        if profile.log_counts(np.asarray([mid - 1], dtype=np.int64))[0] <= cut:
            a = mid
        else:
            b = mid - 1
    lo = a
    log_total = float(
        np.log(np.arange(profile.d - profile.k + 1, profile.d + 1, dtype=np.float64)).sum()
    )
    log_total += 1e-9 * profile.k  # >= log(d! / (d - k)!)
    hi = math.ceil(s * (log_total - log_z + bits * _LN2))
    hi = max(mode, min(hi, cap))
    upper = not (profile.complete and hi >= top_level)
    # the events (b, v) with level top[b] - v in (lo, hi], per block by increasing level
    top = np.asarray(profile.top, dtype=np.int64)
    nd = profile.n_distinct
    j0 = np.searchsorted(profile.asc, top - hi, side="left")
    j1 = np.searchsorted(profile.asc, top - lo, side="left")
    cnt = (j1 - j0).astype(np.int64)
    q = top.shape[0]
    blocks = np.repeat(np.arange(q, dtype=np.int64), cnt)
    starts = np.concatenate(([0], np.cumsum(cnt)[:-1]))
    within = np.arange(blocks.shape[0], dtype=np.int64) - np.repeat(starts, cnt)
    j = np.repeat(j1 - 1, cnt) - within
    ev_levels = top[blocks] - profile.asc[j]
    ev_n = profile.cum[nd - 1 - j]
    at_lo = profile.at_least(top - lo)
    base_logs, base_err = _block_logs(profile, np.arange(q, dtype=np.int64), at_lo)
    ev_logs, ev_err = _block_logs(profile, blocks, ev_n)
    previous = np.empty_like(ev_logs)
    if ev_logs.shape[0]:
        previous[1:] = ev_logs[:-1]
        first_of_block = starts[cnt > 0]
        previous[first_of_block] = base_logs[cnt > 0]
    changes = ev_logs - previous
    order = np.argsort(ev_levels, kind="stable")
    ev_levels, changes = ev_levels[order], changes[order]
    log_n_lo = float(base_logs.sum())
    log_n = log_n_lo + np.cumsum(changes)
    last = np.ones(ev_levels.shape[0], dtype=bool)
    last[:-1] = ev_levels[1:] != ev_levels[:-1]
    levels = np.concatenate(([lo], ev_levels[last]))
    log_n = np.concatenate(([log_n_lo], log_n[last]))
    n_terms = ev_levels.shape[0] + q + 2
    err_log = (
        (n_terms + 2) * _U * (abs(log_n_lo) + float(np.abs(changes).sum()))
        + float(base_err.sum())
        + 2 * float(ev_err.sum())
    )
    # scaled weights: exp(log N_j - b_j / s - M)
    exponent = log_n - levels / s
    m = float(exponent.max())
    heads = np.exp(exponent - m)
    gaps = -np.expm1(-np.diff(levels) / s)
    steps = heads[:-1] * gaps
    c = heads.copy()
    c[1:] += np.cumsum(steps)
    magnitude = float(np.abs(levels).max()) / s + float(np.abs(log_n).max()) + abs(m)
    tau = (
        slack
        * 2
        * (math.expm1(err_log) + 2 * _ULPS * _U * (magnitude + levels.shape[0] + 8) + 1e-15)
    )
    if lo > 0:
        log_below = float(profile.log_counts(np.asarray([lo - 1], dtype=np.int64))[0])
        below = math.exp(log_below + err_log + 1e-9 - m)  # N(lo - 1), scaled
    else:
        below = 0.0
    above = math.exp(log_total - (hi + 1) / s - m) * (1 + tau + 1e-9) if upper else 0.0
    # exp may underflow (to 0 or a subnormal): at most 2^-1022 per term, Z >= 1 here
    floor_error = (levels.shape[0] + 2) * 2.0**-1000
    low = c * (1 - tau) - below - floor_error
    high = c * (1 + tau) + below + floor_error
    return _FastLaw(levels, low, high, below, float(low[-1]), float(high[-1]) + above, m)


def _items_by_profile(
    values: npt.NDArray[Any], ranks: list[int], profile: _Profile
) -> npt.NDArray[np.int64]:
    """The candidates at the given ranks of the order (count descending, index ascending),
    from the profile's distinct counts (the ranks are below the candidates it holds): one
    pass to find the candidates holding the counts needed, one stable radix sort of those."""
    if values.dtype.kind == "O":
        return _items(values, ranks)
    desc = profile.asc[::-1]
    r = np.asarray(ranks, dtype=np.int64)
    t = np.searchsorted(profile.cum, r, side="right")
    offset = r - np.where(t > 0, profile.cum[np.maximum(t - 1, 0)], 0)
    needed = np.unique(desc[t])  # ascending, at most k values
    span = int(needed[-1] - needed[0])
    if span <= 4 * values.shape[0] + (1 << 16):  # a lookup table over the needed range
        table = np.full(span + 2, -1, dtype=np.int16)
        table[needed - needed[0]] = np.arange(needed.shape[0], dtype=np.int16)
        shifted = values - needed[0]
        np.clip(shifted, -1, span + 1, out=shifted)
        found = table[shifted]  # -1 (the last slot) for values outside the range
        idx = np.flatnonzero(found >= 0)
        group = found[idx].astype(np.uint16)
    else:
        idx = np.flatnonzero(np.isin(values, needed))
        group = np.searchsorted(needed, values[idx]).astype(np.uint16)  # <= k groups
    order = idx[np.argsort(group, kind="stable")]  # by group, then index (a radix sort)
    starts = np.concatenate(([0], np.cumsum(np.bincount(group, minlength=needed.shape[0]))))
    g = np.searchsorted(needed, desc[t])
    return order[starts[g] + offset].astype(np.int64)


#: Inputs with ``k d`` at most this are handled without a window (few levels in all).
_SMALL = 64


class _Prepared:
    """The exact law on one count vector: prepared once, then any number of draws.

    ``bits=None`` computes every level at once; otherwise a window of levels first
    (module docstring), every level only when a draw needs it (then cached). ``fast``: the
    float64 law with certified bounds (int64 counts; :func:`_fast_law`) decides the level,
    the exact ``arb`` walk over every level (increasing ``E``, the same ``U``) when it does
    not; ``fast=False`` runs the exact window walk. ``slack`` widens the fast law's bounds
    (tests: ``1e300`` sends every draw to the exact path).
    """

    def __init__(
        self,
        values: npt.NDArray[Any],
        k: int,
        scale: Fraction,
        bits: int | None = WINDOW_BITS,
        small: int = _SMALL,
        fast: bool = True,
        slack: float = 1.0,
    ) -> None:
        self.values, self.k, self.scale, self.bits = values, k, scale, bits
        d = int(values.shape[0])
        self.order: npt.NDArray[np.int64] | None = None
        if k * d <= small:
            bits = None
        floor = kth = None
        if bits is not None and values.dtype.kind != "O":
            reach = _reach(d, k, scale, bits)
            kth = int(np.partition(values, d - k)[d - k])
            if reach < kth:
                floor = kth - math.floor(reach)
        self.profile = _profile(values, k, floor, kth)
        self.law: _FastLaw | None = None
        if fast and bits is not None and values.dtype.kind != "O":
            self.law = _fast_law(self.profile, scale, bits, slack)
        self._window = None if self.law is not None else _window(self.profile, scale, bits)
        self.full: tuple[_Profile, _Window] | None = None
        self.ascending: tuple[_Profile, _Window] | None = None
        self.sets: dict[int, tuple[list[int], list[int], list[int]]] = {}

    @property
    def window(self) -> _Window:
        """The exact window of levels (computed on first use when the fast law is used)."""
        if self._window is None:
            self._window = _window(self.profile, self.scale, self.bits)
        return self._window

    def _every_level_ascending(self) -> tuple[_Profile, _Window]:
        """Every level exactly, by increasing ``E``: the order of the fast law's inversion."""
        if self.ascending is None:
            profile = self.profile
            if not profile.complete:
                profile = _profile(self.values, self.k, None)
            levels = profile.level_counts(0, profile.max_level)
            self.ascending = (profile, _Window(levels, 0, []))
        return self.ascending

    def _everything(self) -> tuple[_Profile, _Window]:
        if self.full is None:
            profile = self.profile
            if not profile.complete:
                profile = _profile(self.values, self.k, None)
            self.full = (profile, _merge(self.window, _window(profile, self.scale, None)))
        return self.full

    def draw(self, source: RandomSource) -> npt.NDArray[np.int64]:
        """One release: the level by inversion, then the sequence."""
        u = LazyUniform.sample(source)
        profile = self.profile
        found = None if self.law is None else self.law.level(u)
        if found is not None:
            level = found
        elif self.law is not None:  # the float bounds did not decide: exactly, same U and order
            profile, window = self._every_level_ascending()
            idx = _walk(window, self.scale, u, source)
            if idx is None:  # pragma: no cover - a window with no tail always decides
                raise AssertionError("the inversion over every level did not decide")
            level = window.levels[idx][0]
        else:
            window = self.window
            idx = _walk(window, self.scale, u, source)
            if idx is None:  # the levels outside the window matter: all of them, same U
                profile, window = self._everything()
                idx = _walk(window, self.scale, u, source)
                if idx is None:  # pragma: no cover - a window with no tail always decides
                    raise AssertionError("the inversion over every level did not decide")
            level = window.levels[idx][0]
        if level not in self.sets:
            n_lt, n_le = _position_sets(profile, level)
            self.sets[level] = (n_lt, n_le, _first_position_weights(n_lt, n_le))
        ranks = _sample_ranks(self.sets[level], source)
        if self.values.shape[0] <= _SMALL:  # small: one sort, kept for later draws
            if self.order is None:
                self.order = _descending(self.values)
            return self.order[ranks]
        return _items_by_profile(self.values, ranks, profile)


# --------------------------------------------------------------------------- constructor
def _check_domain(domain: Any) -> VectorDomain:
    if not isinstance(domain, VectorDomain) or not isinstance(domain.element_domain, IntDomain):
        raise DomainError(
            "input_domain must be vector_domain(atom_domain(int)): the counts must be "
            f"integers for the exact law, got {domain!r}"
        )
    return domain


def make_joint_top_k(
    input_domain: VectorDomain,
    input_metric: LInfDistance,
    output_measure: Measure,
    k: int,
    scale: float | int | Fraction,
    *,
    source: RandomSource | None = None,
) -> Measurement:
    """The joint exponential mechanism for top-k (Gillenwater et al. 2022), exactly.

    Releases an ordered sequence ``s`` of ``k`` distinct indices with probability
    proportional to ``exp(-E(s) / scale)``, where ``E(s) = max_i (c_(i) - c_{s_i})`` and
    ``c_(1) >= c_(2) >= ...`` are the counts in decreasing order (Gillenwater, Joseph, Munoz
    Medina and Ribero Diaz, ICML 2022). The paper's calibration is ``scale = 2 Delta /
    epsilon``. Sampling is exact (module docstring): integer level counts, the level by
    inversion with ``arb`` balls, the sequence by exact uniform choices.

    Privacy: ``E(s)`` has sensitivity ``Delta_u = d_in`` under a monotonic metric (``c_(i)``
    and ``c_{s_i}`` move in the same direction by at most ``d_in``, so their difference by at
    most ``d_in``) and ``2 d_in`` otherwise; as an exponential mechanism the release is
    ``epsilon = 2 Delta_u / scale``-DP and ``epsilon``-bounded range, so ``epsilon^2 / 8``-zCDP
    (Durfee and Rogers 2019; Cesar and Rogers 2021). Both rounded up.

    Parameters
    ----------
    input_domain : VectorDomain
        ``vector_domain(atom_domain(int))``: one integer count per public candidate (floats
        are refused: the levels must be integers for the exact law).
    input_metric : LInfDistance
        ``LInfDistance(monotonic=...)``: each count moves by at most ``d_in`` (monotonic: all
        in the same direction). ``RangeDistance()`` is read as monotonic (``E`` does not
        change when every count moves by the same amount).
    output_measure : Measure
        ``MaxDivergence()`` or ``ZeroConcentratedDivergence()``.
    k : int
        The length of the released sequence, ``>= 1`` and at most the number of candidates
        (checked against each input's length, a public fact, when the domain has no size).
    scale : int, float or Fraction
        The sampling scale, ``> 0`` and finite (a float is taken exactly).
    source : RandomSource or None, default None
        Where the random bits come from; ``None`` is the CSPRNG.

    Returns
    -------
    Measurement
        From integer count vectors to an int64 array of ``k`` distinct indices (position
        ``i`` estimates the ``i``-th largest count).

    Raises
    ------
    ParameterError
        ``k`` not an int in ``[1, size]``, or ``scale`` not a finite positive number; at call
        time, an input shorter than ``k``.
    DomainError
        ``input_domain`` is not a vector domain of int atoms.
    MetricError
        ``input_metric`` is not an ``LInfDistance``.
    MeasureError
        ``output_measure`` is neither ``MaxDivergence()`` nor ``ZeroConcentratedDivergence()``.

    Examples
    --------
    >>> from dpselect.core import LInfDistance, MaxDivergence, atom_domain, vector_domain
    >>> from dpselect.mechanisms import make_joint_top_k
    >>> from dpselect.sampling import InsecureSeededSource
    >>> m = make_joint_top_k(
    ...     vector_domain(atom_domain(int)), LInfDistance(monotonic=True), MaxDivergence(),
    ...     k=2, scale=2.0, source=InsecureSeededSource(0),  # seeded: not private
    ... )
    >>> m.map(1)  # 2 * 1 / 2
    1.0
    >>> sorted(m([50, 3, 40, 1]).tolist())  # the two large counts, but for odds of ~1e-7
    [0, 2]
    """
    domain = _check_domain(input_domain)
    if not isinstance(input_metric, LInfDistance):
        raise MetricError(f"input_metric must be LInfDistance(monotonic=...), got {input_metric!r}")
    metric = input_metric
    measure = check_selection_measure(output_measure)
    k = check_int(k, "k", minimum=1)
    if domain.size is not None and k > domain.size:
        raise ParameterError(f"k must be at most the number of candidates ({domain.size}), got {k}")
    exact_scale = Fraction(check_scale(scale, "scale", allow_zero=False))

    def function(x: Any) -> npt.NDArray[np.int64]:
        size = len(x)
        if size < k:
            raise ParameterError(f"k must be at most the number of candidates ({size}), got {k}")
        values = _normalised(x)
        return _Prepared(values, k, exact_scale).draw(resolve_source(source))

    def privacy_map(d_in: Any) -> float:
        return joint_top_k_loss(metric.range_distance(d_in), exact_scale, measure)

    return Measurement(
        input_domain=domain,
        input_metric=metric,
        output_measure=measure,
        function=function,
        privacy_map=privacy_map,
    )
