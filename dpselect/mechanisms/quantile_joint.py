"""Many quantiles at once: the joint exponential mechanism of Gillenwater, Joseph, Kulesza (2021).

"Differentially private quantiles" (ICML 2021, "JointExp"); docs/quantiles.md has the proofs.

**Output space**: increasing vectors ``o_1 <= ... <= o_m`` in ``[lo, hi]^m`` with Lebesgue
measure. Rows are clamped to the bounds (row by row: neighbours stay neighbours) and sorted.

**Score** (GJK21, Section 3, the gap utility, in integer form). The levels ``q_1 < ... < q_m``
are fractions with a common denominator ``B <= 10^6``; the target gaps are the integers ``g_1
= B q_1``, ``g_j = B (q_j - q_{j-1})``, ``g_{m+1} = B (1 - q_m)`` (sum ``B``). With ``C(o) =
#{x_i <= o}``, ``C(o_0) = 0`` and ``C(o_{m+1}) = n``,

    s(x, o) = sum_{j=1}^{m+1} min(T, c |B (C(o_j) - C(o_{j-1})) - g_j n|)    (T = 4096),

``B`` times the distance of each gap's row count from its target. The density is ``exp(-s)``
with ``c = eps' / (2 Delta)`` rounded down to a float.

**Sensitivity** ``Delta = 2 (B - min_j g_j)`` under adding or removing one row (the
project's ``SymmetricDistance``). GJK21 state sensitivity 2 (in rows) for neighbours that swap a
row (``n`` fixed). Adding a row ``x``: ``n`` grows by one and exactly one gap count ``k`` (the
gap holding ``x``) grows by one, so term ``j``'s argument moves by ``B [j = k] - g_j``; the
terms move by at most ``(B - g_k) + sum_{j != k} g_j = 2 (B - g_k)`` in all. Each cap
``min(T, .)`` is 1-Lipschitz, so capping a term never makes it move more. The score is not
monotonic, so the exponential mechanism's factor 2 is kept (McSherry and Talwar 2007, Theorem
6; GJK21 Section 3 use the same ``eps / (2 Delta)``).

**Sampling (GJK21 Section 3.2's dynamic program, with repeats).** Clamped values cut ``[lo,
hi]`` into intervals ``I_0, ..., I_K`` between consecutive *distinct* values (ties are merged:
no interval has length 0); ``C`` is constant on each. The probability that ``o`` falls in the
intervals ``i_1 <= ... <= i_m`` is proportional to ``exp(-score) prod_I |I|^{r_I} / r_I!``
(``r_I`` outputs in ``I``: the volume of the ordered region), and given the intervals the points
are uniform, sorted. A forward pass over levels computes, in float64 log space, ``alpha_j(i,
r)`` = log total weight of the first ``j`` levels with ``o_j`` in ``I_i`` and the last ``r`` of
them there; the sums over earlier intervals ``i' < i`` are split where the kernel ``exp(-min(T,
c |B (C_i - C_i') - g_j n|))`` changes form, and every piece is a range sum from sums
relative to a reference at the range's edge (no subtraction: relative accuracy): a disjoint
sparse table built by doubling inside blocks of at most
:data:`~.quantile_joint_sums.SUM_BLOCK` intervals and over the blocks
(:class:`~.quantile_joint_sums.BlockedSums`, at most four parts a range, ``O(m n + m^2 n)``
time in all). A backward pass samples each level's state with :func:`draw_state` (two
stages, then :func:`noisy_argmax`: Gumbel, scale 1, exactly ``P ∝ exp(float log-weight)``) and
the points with :func:`uniform_float` (exact uniform reals rounded down to floats).

**Ties: a public resolution** ``w`` (default: half the power of ten at most ``(hi - lo) / (600
max(1, epsilon))``, from the bounds and epsilon only; :func:`joint_resolution`). Before the
intervals are formed, each row is clamped, rounded to the lattice ``lo + i w / G`` and moved by its
own random amount, one of ``G`` points symmetric in ``(-w, w)`` (``G = 16``, ``32`` above a per-row
epsilon of 2: :func:`joint_subpoints`) chosen by ``log2(G)`` fresh bits of the source (16 or 12
rows to a word, :func:`joint_move_words`), and is reflected at the
bounds (then clamped against float rounding; :func:`joint_moved_intervals`): a block of rows on a
bound stays within ``w`` of it, and the rows land on at most ``G (hi - lo) / w + 2 G`` points,
counted in two passes (the words go to the rows in the order of their nearest lattice points,
so a seeded release does not depend on the row order). This is a
randomised map applied row by row, independently of the other rows, so datasets that differ by one
row stay datasets that differ by one row (couple the common rows' moves): the privacy proof is
unchanged. A value held by ``k`` rows becomes ``k`` values spread within ``w`` of it, so the
quantile can fall *inside* the tied block with a small gap error, where before it could only fall
in the intervals beside it (off by up to ``k`` rows in two gaps). The released values are then
rounded to the nearest multiple of the decimal step ``s = 10^floor(log10(2 w))`` (``s <= 2 w``, so
each moves by at most ``s / 2 <= w``; a fixed function of the output: post-processing), kept in the
bounds: a tied value such as 12.5 comes back exactly when ``s`` divides it. ``resolution=0`` turns
both off (the plain GJK21 mechanism).

**Exactness and privacy.** Every float log-weight is within ``JOINT_LOG_ERROR = 2^-22`` of the
exact expression in the previous level's floats (docs/quantiles.md bounds the rounding: at most
``2^-26`` for ``m <= 64`` levels). The backward pass telescopes, so the sampled density is
``exp(-s(x, o) + r_x(o)) / Z`` with ``|r_x(o)| <= rho = 3 (m + 1) JOINT_LOG_ERROR``; between
neighbours the loss is at most ``2 c Delta + 4 rho <= eps' + 4 rho``. The mechanism runs at
``eps' = eps - joint_rounding_loss(m)`` with ``joint_rounding_loss(m) = 4 rho``: the map is
``d_in * eps``, the epsilon asked for.

**Where the parts live.** This module holds the dynamic program (the kernel, the forward and
backward passes), the constructor :func:`make_joint_quantiles` and the accuracy statement
(:func:`joint_accuracy`, :func:`joint_accuracy_derivation`);
:mod:`.quantile_joint_parameters` the public parameters (gaps, sensitivity, rounding loss,
resolution, decimal step); :mod:`.quantile_joint_moves` the intervals and the moves of the tie
handling; :mod:`.quantile_joint_sums` the log-space range sums.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from ..core.arithmetic import float_down, float_up, printed_up
from ..core.domains import kept_numbers
from ..core.errors import ParameterError
from ..core.halves import in_halves
from ..core.measurement import Measurement
from ..core.public_memo import kept
from ..sampling.source import RandomSource
from ..sampling.two_stage import draw_state
from .quantile_continuous import (
    check_bounds,
    check_resolution,
    log_lengths,
    uniform_float,
)
from .quantile_joint_moves import (
    joint_intervals,
    joint_move_words,
    joint_moved_intervals,
    joint_subpoints,
)
from .quantile_joint_parameters import (
    JOINT_CAP,
    JOINT_LOG_ERROR,
    MAX_JOINT_LEVELS,
    decimal_step,
    joint_gaps,
    joint_resolution,
    joint_rounding_loss,
    round_to_step,
)
from .quantile_joint_sums import HALVES_INTERVALS, BlockedSums, log_sum_rows
from .quantile_recursive import sorted_levels
from .quantile_score import pure_dp_on_rows, unit_epsilon
from .validate import check_epsilon

__all__ = [
    "draw_state",
    "joint_accuracy",
    "joint_accuracy_derivation",
    "joint_accuracy_terms",
    "joint_rows_bound",
    "make_joint_quantiles",
]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
_log_lengths = log_lengths  # the name tests/recipes/test_quantiles_joint.py reads here


# ----------------------------------------------------------------------------- the kernel
def _kernel(x: I64, factor: float, x_cap: int) -> F64:
    """``min(T, c |x|)`` in float64: exactly ``T`` when ``|x| >= x_cap = ceil(T / c)``."""
    ax = np.abs(x)
    out: F64 = np.where(ax >= x_cap, float(JOINT_CAP), ax.astype(np.float64) * factor)
    return out


def _range_cuts(bc: I64, target: int, x_cap: int) -> tuple[I64, ...]:
    """``(pivot, k1, k2, k3, idx)`` of :func:`_transition`: where the kernel changes form in
    the sums over ``i' < i`` (public once ``bc`` is known; the same for every level with the
    same target gap, so :func:`_forward` computes them once per distinct target)."""
    n = bc.shape[0]
    idx = np.arange(n, dtype=np.int64)
    pivot = bc - target  # terms with bc[i'] <= pivot: x = pivot - bc[i'] >= 0
    big = np.iinfo(np.int64).max // 4
    low_cut = np.maximum(pivot - x_cap, -big)
    high_cut = np.minimum(pivot + x_cap, big)
    k1 = np.minimum(np.searchsorted(bc, low_cut, side="right"), idx)  # capped, left
    k2 = np.minimum(np.searchsorted(bc, pivot, side="right"), idx)  # uncapped, left
    k3 = np.minimum(np.searchsorted(bc, high_cut, side="left"), idx)  # uncapped, right
    return pivot, k1, k2, k3, idx


#: One column block of :func:`_transition_parts`: its intervals and their parts.
_Parts = list[tuple[slice, I64, F64]]


def _transition_parts(sums: BlockedSums, bc: I64, target: int, x_cap: int) -> _Parts:
    """The parts (:meth:`BlockedSums.parts`, ``(16, n)``) of ``log sum_{i' < i} exp(beta[i'] -
    min(T, c |bc[i] - bc[i'] - target|))`` for every ``i``: the four ranges where the kernel
    changes form (capped left, uncapped left, uncapped right, capped right; the capped ones
    with ``T`` subtracted from each term), four parts each. Integers of ``bc`` and the target
    only: the same for every level with the same target gap (:func:`_forward` keeps them).
    As ``(intervals, index, shift)`` blocks: two halves of the intervals, each computed on its
    own thread from :data:`HALVES_INTERVALS` intervals on, else one."""
    n = bc.shape[0]
    pivot, k1, k2, k3, idx = _range_cuts(bc, target, x_cap)
    zero = np.zeros(n, dtype=np.int64)
    cap = float(JOINT_CAP)
    pieces = ((0, zero, k1, cap), (1, k1, k2, 0.0), (2, k2, k3, 0.0), (0, k3, idx, cap))

    def block(at: slice) -> tuple[slice, I64, F64]:
        count = at.stop - at.start
        index, shift = np.empty((16, count), dtype=np.int64), np.empty((16, count))
        for p, (k, start, stop, extra) in enumerate(pieces):
            rows = slice(4 * p, 4 * p + 4)
            sums.parts(k, start[at], stop[at], pivot[at], extra, (index[rows], shift[rows]))
        return at, index, shift

    return in_halves(block, n, HALVES_INTERVALS)


def _transition(
    beta: F64,
    bc: I64,
    target: int,
    factor: float,
    x_cap: int,
    sums: BlockedSums | None = None,
    parts: _Parts | None = None,
) -> F64:
    """``log sum_{i' < i} exp(beta[i'] - min(T, c |bc[i] - bc[i'] - target|))`` for every i:
    the sixteen parts of :func:`_transition_parts` summed by one :func:`log_sum_rows` (``sums``
    and ``parts``: built for the same ``bc``, ``factor`` and target, if already known), a
    block of intervals a thread."""
    if sums is None:
        sums = BlockedSums(None, bc, factor)
    if parts is None:
        parts = _transition_parts(sums, bc, target, x_cap)
    sums.fill(beta)
    out: F64 = np.empty(bc.shape[0])

    def blocks(which: slice) -> None:
        for at, index, shift in parts[which]:
            with np.errstate(invalid="ignore"):  # -inf - +inf: a missing part stays -inf
                out[at] = sums.sums(index, shift)

    in_halves(blocks, len(parts), 2)
    return out


# ----------------------------------------------------------------------------- the mechanism
class _Plan:
    """The public constants of one joint mechanism."""

    def __init__(self, levels: list[Fraction], eps: Fraction) -> None:
        self.m = len(levels)
        self.denom, self.gaps = joint_gaps(levels)
        self.sensitivity = 2 * (self.denom - min(self.gaps))
        self.rounding = joint_rounding_loss(self.m)
        self.factor = float_down((eps - self.rounding) / (2 * self.sensitivity))
        if self.factor <= 0:
            raise ParameterError(f"epsilon is too small for the joint mechanism, got {eps}")
        # |x| <= B n < 2^61 for any data that fits in memory: a larger cap is never reached
        self.x_cap = min(math.ceil(Fraction(JOINT_CAP) / Fraction(self.factor)), 2**61)
        # log r! for r = 1..m
        self.log_fact = [0.0] + [math.log(math.factorial(r)) for r in range(1, self.m + 1)]


def _forward(
    plan: _Plan, loglen: F64, bc: I64, n: int, progress: Callable[[float], None] | None
) -> tuple[F64, F64]:
    """``alpha1[j, i]`` = float ``alpha_{j+1}(i, 1)`` and ``self_cost[j]`` = ``min(T, c g_j n)``."""
    m, nint = plan.m, bc.shape[0]
    alpha1 = np.full((m, nint), -np.inf)
    self_cost = _kernel(
        np.array([g * n for g in plan.gaps], dtype=np.int64), plan.factor, plan.x_cap
    )
    alpha1[0] = loglen - _kernel(bc - plan.gaps[0] * n, plan.factor, plan.x_cap)
    sums = BlockedSums(None, bc, plan.factor) if m > 1 else None
    consts = _repeat_consts(plan, self_cost)
    # by target gap (deciles have one): the parts of every range sum, read by every level
    parts: dict[int, _Parts] = {}
    for j in range(1, m):
        assert sums is not None
        beta = _beta(plan, alpha1, self_cost, loglen, j - 1, consts)
        target = plan.gaps[j] * n
        if target not in parts:
            parts[target] = _transition_parts(sums, bc, target, plan.x_cap)
        step = _transition(beta, bc, target, plan.factor, plan.x_cap, sums, parts[target])
        np.add(loglen, step, out=alpha1[j])
        if progress is not None:
            progress(j / m)
    return alpha1, self_cost


def _repeat_const(plan: _Plan, self_cost: F64, j: int, r: int) -> float:
    """``ln r! + sum of the r - 1 self costs`` of the repeat row ``r`` of :func:`_repeats`
    (one float expression)."""
    return plan.log_fact[r] + float(self_cost[j - r + 2 : j + 1].sum())


def _repeat_consts(plan: _Plan, self_cost: F64) -> list[F64]:
    """Entry ``j``: :func:`_repeat_const` of ``r = 2..j+1`` (for :func:`_repeats`, once a
    draw)."""
    return [
        np.array([_repeat_const(plan, self_cost, j, r) for r in range(2, j + 2)])
        for j in range(plan.m)
    ]


def _repeats(
    plan: _Plan,
    alpha1: F64,
    self_cost: F64,
    loglen: F64,
    j: int,
    stop: int | None = None,
    consts: list[F64] | None = None,
    start: int = 0,
) -> F64:
    """``(j + 1, intervals)``: row ``r - 1`` is float ``alpha_{j+1}(., r)`` (0-based level
    ``j``, ``r`` outputs in the same interval), ``alpha_{j-r+2}(., 1) + ((r - 1) ln|I| - (ln r!
    + sum of the r - 1 self costs))``, one formula for every ``r`` (tests/mechanisms/
    joint_reference.py's ``repeat_row`` computes one row alone: the same floats), in one
    broadcast operation; ``start``, ``stop``: the intervals from ``start`` and before
    ``stop`` only; ``consts``: :func:`_repeat_consts`, if already known."""
    cols = slice(start, stop)
    count = loglen[cols].shape[0]
    out: F64 = np.empty((j + 1, count))
    out[0] = alpha1[j, cols]
    if j:
        const = (_repeat_consts(plan, self_cost) if consts is None else consts)[j]
        r = np.arange(1, j + 1)[:, None]  # r - 1
        # row r - 1: alpha1[j - r + 1] + ((r - 1) ln|I| - const_r)
        np.add(alpha1[j - 1 :: -1, cols], r * loglen[None, cols] - const[:, None],
               out=out[1:])  # fmt: skip
    return out


def _beta(
    plan: _Plan,
    alpha1: F64,
    self_cost: F64,
    loglen: F64,
    j: int,
    consts: list[F64] | None = None,
) -> F64:
    """``log sum_r exp(alpha_{j+1}(., r))`` in float64: the terms of :func:`_repeats` (the same
    floats the backward pass reads), summed by one :func:`log_sum_rows`."""
    if j == 0:
        first: F64 = alpha1[0].copy()
        return first
    out: F64 = np.empty(loglen.shape[0])

    def columns(at: slice) -> None:  # each column's sum alone: the same floats in halves
        out[at] = log_sum_rows(_repeats(plan, alpha1, self_cost, loglen, j, at.stop, consts,
                                         at.start))  # fmt: skip

    in_halves(columns, loglen.shape[0], HALVES_INTERVALS)
    return out


def _backward(
    plan: _Plan,
    alpha1: F64,
    self_cost: F64,
    loglen: F64,
    bc: I64,
    n: int,
    source: RandomSource | None,
) -> list[int]:
    """The interval of each level, sampled level by level from the last (exact Gumbel argmax)."""
    m = plan.m
    nint = bc.shape[0]
    out = [0] * m
    # the last level: states (i, r), weight alpha_m(i, r) - min(T, c |B (n - C_i) - g n|)
    end_cost = _kernel(plan.denom * n - bc - plan.gaps[m] * n, plan.factor, plan.x_cap)
    consts = _repeat_consts(plan, self_cost)
    rows = _repeats(plan, alpha1, self_cost, loglen, m - 1, None, consts)
    rows -= end_cost
    pick = draw_state(rows, source)
    r, i = divmod(pick, nint)
    r += 1
    j = m - 1
    while True:
        for t in range(r):
            out[j - t] = i
        j -= r
        if j < 0:
            return out
        # a new interval at level j + 1: states (i', r') with i' < i at level j
        cost = _kernel(bc[i] - bc[:i] - plan.gaps[j + 1] * n, plan.factor, plan.x_cap)
        weights = _repeats(plan, alpha1, self_cost, loglen, j, i, consts)
        weights -= cost
        pick = draw_state(weights, source)
        r, i = divmod(pick, i)
        r += 1


def make_joint_quantiles(
    bounds: tuple[float, float],
    qs: Sequence[Any],
    epsilon: Any,
    *,
    resolution: Any = None,
    source: RandomSource | None = None,
    progress: Callable[[float], None] | None = None,
    max_rows: int = 1,
) -> Measurement:
    """The joint exponential mechanism (GJK21) for increasing levels ``qs`` on ``[lo, hi]``.

    Input: a 1-D array of values (NaN dropped, the rest clamped); output: the ``m`` values,
    increasing, in the order of ``qs``. Privacy map (``SymmetricDistance`` to
    ``MaxDivergence``): ``d_in * eps`` (module docstring; ``joint_rounding_loss(m)`` of it pays
    for the float log-weights). ``progress(fraction)`` is called after each level of the
    forward pass. At most ``MAX_JOINT_LEVELS`` levels, common denominator at most ``10^6``.
    ``resolution``: the public ``w`` of the tie handling (module docstring; default
    :func:`joint_resolution` of the bounds and the per-row epsilon; ``0``: none). ``max_rows =
    r``: each privacy unit holds at most ``r`` input rows; the mechanism runs at ``eps / r``
    per row (the utility's sensitivity times ``r``), so ``d_in`` counts units
    (:mod:`.quantile_score`, "Rows per unit").

    Parameters
    ----------
    bounds : pair of float
        The public bounds ``(lo, hi)``: the rows are clamped to them.
    qs : sequence of float or Fraction
        The levels in ``[0, 1]``, strictly increasing (at most ``MAX_JOINT_LEVELS``).
    epsilon : float or Fraction
        The privacy loss for one privacy unit added or removed (``d_in = 1``); the row-level
        ``epsilon / max_rows`` must exceed ``2 joint_rounding_loss(m)``.
    resolution : float, optional
        The public ``w`` of the tie handling, in the data's units (``None``: the default; ``0``:
        none, the plain GJK21 mechanism).
    source : RandomSource, optional
        The randomness (``None``: the private default; a seeded source for tests only).
    progress : callable, optional
        ``progress(fraction)`` after each level of the forward pass, then 1.0.
    max_rows : int, default 1
        ``r``: the most input rows one privacy unit holds.

    Returns
    -------
    Measurement
        From a 1-D array of numbers to the ``m`` values, increasing (rounded to the decimal step
        of ``w`` when ``w > 0``); map ``d_in * epsilon``.
    """
    lo, hi = check_bounds(bounds)
    levels = list(_levels(qs))
    if len(levels) > MAX_JOINT_LEVELS:
        raise ParameterError(
            f"the joint method takes at most {MAX_JOINT_LEVELS} levels, got {len(levels)}"
        )
    eps = Fraction(check_epsilon(epsilon))
    row_eps = _row_epsilon(eps, max_rows, len(levels), epsilon)
    plan, w, step, g = _constants(tuple(levels), row_eps, resolution, lo, hi)

    def function(values: Any) -> list[float]:
        x = np.asarray(values, dtype=np.float64).ravel()  # read, never changed
        if bool(np.isnan(x).any()):
            x = kept_numbers(x)
        edges, counts, n = _row_intervals(x, lo, hi, w, g, source)
        bc = counts * plan.denom
        loglen = log_lengths(edges[:-1], edges[1:])
        alpha1, self_cost = _forward(plan, loglen, bc, n, progress)
        chosen = _backward(plan, alpha1, self_cost, loglen, bc, n, source)
        points = [uniform_float(float(edges[i]), float(edges[i + 1]), source) for i in chosen]
        if progress is not None:
            progress(1.0)
        if step is not None:
            points = [round_to_step(p, step, lo, hi) for p in points]
        return sorted(points)

    return pure_dp_on_rows(function, eps)


def _row_epsilon(eps: Fraction, max_rows: int, m: int, epsilon: Any) -> Fraction:
    """The per-row epsilon ``eps / max_rows``, refused unless above ``2
    joint_rounding_loss(m)`` (``epsilon``: as given, for the message)."""
    row_eps = unit_epsilon(eps, max_rows)
    if row_eps <= 2 * joint_rounding_loss(m):
        least = float(2 * joint_rounding_loss(m) * (eps / row_eps))
        raise ParameterError(f"epsilon must exceed {least:.3g}, got {epsilon}")
    return row_eps


def _row_intervals(
    x: F64, lo: float, hi: float, w: float, g: int, source: RandomSource | None
) -> tuple[F64, I64, int]:
    """``(edges, C, n)`` of the rows ``x`` (NaN dropped): each row moved by the tie handling
    (:func:`joint_moved_intervals`, ``G = g``) when ``w > 0``, else as they are."""
    if w > 0 and x.shape[0] > 0:
        words = joint_move_words(source, x.shape[0], g)
        return joint_moved_intervals(x, lo, hi, w, words, g)
    return joint_intervals(x, lo, hi)


@kept
def _constants(
    levels: tuple[Fraction, ...], row_eps: Fraction, resolution: Any, lo: float, hi: float
) -> tuple[_Plan, float, Fraction | None, int]:
    """``(plan, w, step, G)`` of :func:`make_joint_quantiles`: the mechanism's constants, the
    resolution, its decimal step (``None`` without one) and the moves' subpoints. Public
    parameters only, kept (:func:`~dpselect.core.public_memo.kept`): every plan of a release
    that shares them shares one ``_Plan`` (read only)."""
    w = joint_resolution(resolution, lo, hi, row_eps)
    step = decimal_step(w) if w > 0 else None
    return _Plan(list(levels), row_eps), w, step, joint_subpoints(row_eps)


def joint_accuracy_terms(qs: Sequence[Any], epsilon: Any, confidence: float) -> tuple[float, float]:
    """``(A, t)`` of the accuracy theorem, rounded up: with probability at least
    ``confidence``, the total gap error is at most ``E + A (m ln((hi - lo) / l) + t)`` rows.

    ``A = 1 / (c B)`` (rows per unit of score), ``t = ln(1 / (1 - confidence)) + 2 rho``.

    Parameters
    ----------
    qs : sequence of float or Fraction
        The levels in ``[0, 1]``, strictly increasing.
    epsilon : float or Fraction
        The row-level epsilon the mechanism ran at (``epsilon / max_rows``), rounding loss
        included.
    confidence : float
        The probability ``1 - beta`` in ``[0, 1)`` with which the statement holds.

    Returns
    -------
    A : float
        Rows per unit of score, ``1 / (c B)``, rounded up.
    t : float
        ``ln(1 / (1 - confidence)) + 2 rho``, rounded up.
    """
    return _accuracy_terms(_levels(qs), Fraction(check_epsilon(epsilon)), confidence)


@functools.lru_cache(maxsize=256)
def _accuracy_terms(
    levels: tuple[Fraction, ...], eps: Fraction, confidence: float
) -> tuple[float, float]:
    """:func:`joint_accuracy_terms` of checked levels and epsilon (public parameters: kept,
    since each release evaluates its statements several times)."""
    plan = _Plan(list(levels), eps)
    per_nat = float_up(1 / (Fraction(plan.factor) * plan.denom))
    rho = 3 * (plan.m + 1) * JOINT_LOG_ERROR
    tail = float_up(Fraction(-math.log1p(-confidence) * (1 + 2**-40)) + 2 * rho)
    return per_nat, tail


@kept
def _levels(qs: Sequence[Any]) -> tuple[Fraction, ...]:
    """``sorted_levels(qs)`` as a tuple, kept for levels seen before (public parameters; each
    level keyed with its type, so that a kept answer is one for the same input)."""
    return tuple(sorted_levels(qs))


@kept
def joint_accuracy(
    bounds: tuple[float, float],
    qs: Sequence[Any],
    epsilon: Any,
    confidence: float,
    resolution: Any = None,
) -> list[str]:
    """The accuracy line printed for the joint method, evaluated (docs/quantiles.md).

    The theorem (:func:`joint_accuracy_derivation`) holds for any reference length ``l``: a
    vector of values lying in intervals at least ``l`` long between consecutive distinct
    (moved) rows, of total gap error ``E_l``, is beaten by at most ``A (m ln((hi - lo) / l) +
    t)`` rows with probability ``confidence`` (the proof uses nothing else of the optimum).
    The line fixes the public ``l = w`` (the resolution; ``(hi - lo) / 10^6`` without one)
    and prints that number of rows, in the data's units; ``E_l`` depends on the rows and is
    named, with when it is 0.

    Parameters
    ----------
    bounds : pair of float
        The public bounds ``(lo, hi)``.
    qs : sequence of float or Fraction
        The levels in ``[0, 1]``, strictly increasing.
    epsilon : float or Fraction
        The row-level epsilon the mechanism ran at (``epsilon / max_rows``), rounding loss
        included; it also sets the default resolution.
    confidence : float
        The probability ``1 - beta`` in ``[0, 1)`` with which the statement holds.
    resolution : float, optional
        The resolution ``w`` the mechanism used (``None``: :func:`joint_resolution`'s default
        from the bounds and ``epsilon``, without a column step; ``0``: none).

    Returns
    -------
    list of str
        One line: the rows beyond ``E`` at the reference length ``l = w``, in words.
    """
    lo, hi = check_bounds(bounds)
    m = len(_levels(qs))
    w = joint_resolution(resolution, lo, hi, epsilon)
    ref = _reference_length(w, lo, hi)
    rows = joint_rows_bound(qs, epsilon, confidence, (lo, hi), ref)
    moved = (
        f"each row moved by less than w = {w:.3g} and each value then rounded to a multiple "
        f"of {float(decimal_step(w)):g}"
        if w > 0
        else "no resolution: rows as they are"
    )
    return [
        f"accuracy: with probability at least {confidence:.0%}, the {m + 1} gaps that the "
        f"values cut in [{lo:g}, {hi:g}] hold row counts within {printed_up(rows)} "
        "rows in total of "
        "their targets (q_j - q_(j-1)) n, beyond the least total E that values lying in gaps "
        f"at least {ref:.3g} wide between the rows could attain (E = 0 when every target rank "
        f"falls in such a gap; n rows after clamping, {moved}; joint exponential mechanism, "
        "Gillenwater, Joseph, Kulesza 2021; the derivation: --json, docs/quantiles.md)"
    ]


def _reference_length(w: float, lo: float, hi: float) -> float:
    """The public reference length ``l`` of the printed statement: ``w``, or ``(hi - lo) /
    10^6`` without a resolution."""
    return w if w > 0 else check_resolution(None, lo, hi)


def joint_rows_bound(
    qs: Sequence[Any],
    epsilon: Any,
    confidence: float,
    bounds: tuple[float, float],
    length: float,
) -> float:
    """``A (m ln((hi - lo) / l) + t)`` at ``l = length``, rounded up: the rows of the joint
    statement beyond ``E_l``."""
    lo, hi = check_bounds(bounds)
    m = len(_levels(qs))
    per_nat, tail = joint_accuracy_terms(qs, epsilon, confidence)
    log_ratio = math.log((hi - lo) / length) * (1 + 2**-40)
    return float(np.nextafter(per_nat * (m * log_ratio + tail) * (1 + 2**-40), np.inf))


@kept
def joint_accuracy_derivation(
    bounds: tuple[float, float],
    qs: Sequence[Any],
    epsilon: Any,
    confidence: float,
    resolution: Any = None,
) -> list[str]:
    """The joint statement as the theorem gives it, with its constants (``--json``).

    With probability at least ``confidence``, the ``m + 1`` gaps cut by the values (before
    their rounding to the decimal step) hold row counts ``c_j`` (rows as moved by the
    resolution) with ``sum_j |c_j - (q_j - q_{j-1}) n| <= E + A (m ln((hi - lo) / l) + t)``,
    where ``E`` is the least total attainable by values in intervals at least ``l`` long
    between consecutive distinct values (or a bound): both depend on the rows.

    Parameters
    ----------
    bounds : pair of float
        The public bounds ``(lo, hi)``.
    qs : sequence of float or Fraction
        The levels in ``[0, 1]``, strictly increasing.
    epsilon : float or Fraction
        The row-level epsilon the mechanism ran at (``epsilon / max_rows``), rounding loss
        included; it also sets the default resolution.
    confidence : float
        The probability ``1 - beta`` in ``[0, 1)`` with which the statement holds.
    resolution : float, optional
        The resolution ``w`` the mechanism used (``None``: :func:`joint_resolution`'s default
        from the bounds and ``epsilon``, without a column step; ``0``: none).

    Returns
    -------
    list of str
        Three lines: the theorem with its constants, the values of ``A``, ``t``, ``hi - lo``
        and ``m``, and the bound at the printed ``l``.
    """
    lo, hi = check_bounds(bounds)
    m = len(_levels(qs))
    per_nat, tail = joint_accuracy_terms(qs, epsilon, confidence)
    w = joint_resolution(resolution, lo, hi, epsilon)
    ref = _reference_length(w, lo, hi)
    rows = joint_rows_bound(qs, epsilon, confidence, (lo, hi), ref)
    halving = float(np.nextafter(per_nat * m * math.log(2) * (1 + 2**-40), np.inf))
    return [
        f"with probability at least {confidence:.0%}, the {m + 1} gaps that the values cut "
        f"(bounds included) hold row counts within E + {printed_up(per_nat)} * ({m} "
        "ln((hi - lo) / l) "
        f"+ {printed_up(tail)}) rows of their targets (q_j - q_(j-1)) n in total (n rows after "
        "clamping, each moved by less than the resolution w, values before their rounding to "
        "a multiple of 10^floor(log10(2w)), which moves each by at most half of it and a "
        "float rounding; l any length, E = the least total attained by values lying in "
        "intervals at least l long between consecutive distinct rows or bounds; joint "
        "exponential mechanism, Gillenwater, Joseph, Kulesza 2021, docs/quantiles.md)",
        f"A = {per_nat:.6g} rows per unit of score, t = ln(1 / (1 - confidence)) + 2 rho = "
        f"{tail:.6g}, hi - lo = {hi - lo:g}, m = {m}",
        f"printed at l = {ref:.6g} (the resolution w, or (hi - lo) / 10^6 without one): "
        f"{printed_up(rows, 6)} rows beyond E; each halving of l adds {printed_up(halving)} rows",
    ]
