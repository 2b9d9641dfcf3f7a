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
sparse table built by doubling inside blocks of at most :data:`SUM_BLOCK` intervals and over the
blocks (:class:`_BlockedSums`, at most four parts a range, ``O(m n + m^2 n)`` time in all). A
backward pass
samples each level's state with :func:`draw_state` (two stages, then :func:`noisy_argmax`:
Gumbel, scale 1, exactly ``P ∝ exp(float log-weight)``) and the points with
:func:`uniform_float` (exact uniform reals rounded down to floats).

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
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from decimal import Decimal
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
from ..sampling.source import RandomSource, resolve_source
from ..sampling.two_stage import draw_state
from .quantile_continuous import (
    check_bounds,
    check_resolution,
    log_lengths,
    uniform_float,
)
from .quantile_recursive import sorted_levels
from .quantile_score import MAX_DENOMINATOR, pure_dp_on_rows, unit_epsilon
from .validate import check_epsilon

__all__ = [
    "JOINT_CAP",
    "JOINT_FINE_EPSILON",
    "JOINT_FINE_SUBPOINTS",
    "JOINT_LOG_ERROR",
    "JOINT_SUBPOINTS",
    "MAX_JOINT_LEVELS",
    "draw_state",
    "joint_accuracy",
    "joint_accuracy_derivation",
    "joint_accuracy_terms",
    "joint_gaps",
    "joint_intervals",
    "joint_move_words",
    "joint_moved_intervals",
    "joint_rounding_loss",
    "joint_sensitivity",
    "joint_subpoints",
    "make_joint_quantiles",
    "recorded_resolution",
]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
_log_lengths = log_lengths  # the name tests/recipes/test_quantiles_joint.py reads here

#: The cap T on each gap's term c |...|.
JOINT_CAP = 4096
#: Bound on each float log-weight's error against the exact expression (docs/quantiles.md).
JOINT_LOG_ERROR = Fraction(1, 2**22)
#: The most levels the joint mechanism takes (the error bound above assumes it).
MAX_JOINT_LEVELS = 64
#: The default resolution is half the power of ten at most ``(hi - lo) / JOINT_STEP_DIVISOR``.
JOINT_STEP_DIVISOR = 600


# ----------------------------------------------------------------------------- parameters
def joint_gaps(levels: Sequence[Fraction]) -> tuple[int, list[int]]:
    """``(B, [g_1, ..., g_{m+1}])``: the common denominator and the target gaps times ``B``.

    Parameters
    ----------
    levels : sequence of Fraction
        The levels ``q_1 < ... < q_m`` as exact fractions
        (:func:`~.quantile_recursive.sorted_levels`).

    Returns
    -------
    B : int
        The least common denominator of the levels (at most ``10^6``, else refused).
    gaps : list of int
        The ``m + 1`` target gaps ``g_j = B (q_j - q_{j-1})`` (``q_0 = 0``, ``q_{m+1} = 1``),
        summing to ``B``.
    """
    denom = 1
    for lv in levels:
        denom = denom * lv.denominator // math.gcd(denom, lv.denominator)
        if denom > MAX_DENOMINATOR:
            raise ParameterError(
                f"the levels' common denominator exceeds {MAX_DENOMINATOR}: round the levels "
                "(e.g. to 1/1000) for the joint method"
            )
    cuts = [Fraction(0), *levels, Fraction(1)]
    gaps = [int((b - a) * denom) for a, b in itertools.pairwise(cuts)]
    return denom, gaps


def joint_sensitivity(levels: Sequence[Fraction]) -> int:
    """``Delta = 2 (B - min_j g_j)``: the score's sensitivity under adding or removing a row.

    Parameters
    ----------
    levels : sequence of Fraction
        The levels ``q_1 < ... < q_m`` as exact fractions.

    Returns
    -------
    int
        ``Delta``, in units of the integer score (``B`` times rows).
    """
    denom, gaps = joint_gaps(levels)
    return 2 * (denom - min(gaps))


def joint_rounding_loss(m: int) -> Fraction:
    """``4 rho = 12 (m + 1) JOINT_LOG_ERROR``: what the float log-weights add to the loss.

    Parameters
    ----------
    m : int
        The number of levels.

    Returns
    -------
    Fraction
        The share of epsilon that pays for the float log-weights, exactly.
    """
    return 12 * (m + 1) * JOINT_LOG_ERROR


def joint_resolution(
    resolution: Any, lo: float, hi: float, epsilon: Any = None, step: Fraction | None = None
) -> float:
    """The resolution ``w`` of the joint mechanism: ``0`` (none), the one given (checked as
    for the continuous mechanism), or by default:

    - with ``step``, the public spacing of the grid the column's type puts every value on
      (:func:`dpselect.data.column_roles.recorded_step`: 1 for integer columns, ``10^-s`` for
      ``DECIMAL(p, s)``): ``w = step / 2`` (rounded up; raised to ``(hi - lo) / 10^6`` as
      every default resolution), when ``step <= (hi - lo) / 2``;
    - else half the power of ten at most ``(hi - lo) / (JOINT_STEP_DIVISOR * max(1,
      epsilon))`` (rounded up; raised to the least allowed).

    Public parameters and the schema only (``epsilon=None``: the divisor
    ``JOINT_STEP_DIVISOR`` alone).

    Why the type's step: the rows of such a column lie on the grid ``lo + k step`` only up to
    an offset, and tie wherever a grid point holds several. Moved by up to ``w = step / 2``
    (module docstring), the rows of one grid point fill the cell around it, next to the cells
    of its neighbours, so the moved rows have no empty gaps between occupied points and no
    ties, and the released values are rounded back to the grid (the decimal step of ``w`` is
    ``step`` itself): the tie handling neither spreads rows across several grid points (a
    coarser ``w``) nor leaves ties packed into slivers (a finer one). Measured
    (``bench/bench_quantiles.py --diamonds``; docs/performance.md): diamond prices (whole
    dollars, bounds [0, 20000]) at epsilon 1 went from a step of 10 to 1, the mean decile
    error from 2.88 to 2.30 (40 runs each); no integer column of the benchmark lost.

    Why epsilon: the released values are rounded to the step ``s = 2 w``, an error of up to
    ``s / 2`` that does not shrink with epsilon, while the mechanism's own error does: its
    rows per unit of score ``A = 1 / (c B) = 2 Delta / (epsilon' B)``
    (:func:`joint_accuracy_terms`) fall like ``1 / epsilon``. The constant was fitted at
    epsilon 1 (docs/quantiles.md, "The joint mechanism's default resolution"); above it the
    step shrinks with ``A`` so that the rounding stays the same fraction of the mechanism's
    error as at the fitted point, and below it the step is kept (a coarser one would lose
    more than ties gain). The levels enter ``A`` only through ``Delta / B``, within 0.74 and
    1.06 times the deciles' for 2 to 20 evenly spaced levels, less than the factor 10 between
    two steps: left out. Diamond prices (53,940 rows, bounds [0, 20000], deciles, epsilon 4):
    step 10 gave a mean error of 2.53, step 1 (this rule) 0.39 (``bench/bench_quantiles.py
    --diamonds``).
    """
    by_step = None if resolution is not None else recorded_resolution(step, lo, hi)
    if by_step is not None:
        return by_step
    if resolution is None:
        divisor = Fraction(JOINT_STEP_DIVISOR)
        if epsilon is not None:
            divisor *= max(Fraction(1), Fraction(epsilon))
        step = decimal_step(float((Fraction(hi) - Fraction(lo)) / (2 * divisor)))
        return max(float_up(step / 2), check_resolution(None, lo, hi))
    if resolution == 0 and not isinstance(resolution, bool):
        return 0.0
    return check_resolution(resolution, lo, hi)


def recorded_resolution(step: Fraction | None, lo: float, hi: float) -> float | None:
    """The joint mechanism's default resolution for values on a public grid of spacing
    ``step`` (:func:`joint_resolution`): ``step / 2`` rounded up, raised to ``(hi - lo) /
    10^6``; ``None`` without a step or when ``step > (hi - lo) / 2``.

    Parameters
    ----------
    step : Fraction or None
        The public spacing of the column's values (1 for integers, ``10^-s`` for ``DECIMAL(p,
        s)``), or ``None`` when the column has none.
    lo, hi : float
        The public bounds, ``lo < hi``.

    Returns
    -------
    float or None
        The resolution ``w``, in the data's units, or ``None`` (then the epsilon-based default
        applies).
    """
    if step is None:
        return None
    half = float_up(Fraction(step) / 2)
    if Fraction(half) * 4 > Fraction(hi) - Fraction(lo):
        return None
    return max(half, check_resolution(None, lo, hi))


def decimal_step(w: float) -> Fraction:
    """``10^floor(log10(2 w))``: the coarsest power of ten at most ``2 w`` (exact)."""
    exponent = Decimal(2 * w).adjusted()  # 2 w is exact; adjusted() = floor(log10) exactly
    return Fraction(10) ** exponent


def round_to_step(value: float, step: Fraction, lo: float, hi: float) -> float:
    """The multiple of ``step`` nearest ``value`` (ties to even), as the nearest float, kept
    in ``[lo, hi]``: a fixed function of its arguments (post-processing). It moves ``value``
    by at most ``step / 2 <= w`` (plus half a float spacing, and never past the bounds)."""
    k = round(Fraction(value) / step)  # Python's round: ties to even, exact on Fractions
    out = float(k * step)
    return min(hi, max(lo, out))


# ----------------------------------------------------------------------------- intervals
def joint_intervals(values: Any, lo: float, hi: float) -> tuple[F64, I64, int]:
    """``(edges, C, n)``: interval ends ``lo = e_0 < ... < e_{K+1} = hi`` between the distinct
    clamped values, ``C_i = #{x <= e_i}`` on ``I_i = [e_i, e_{i+1})``, and the row count.

    Parameters
    ----------
    values : array_like of float
        The rows (private; NaN dropped, the rest clamped to ``[lo, hi]``).
    lo, hi : float
        The public bounds.

    Returns
    -------
    edges : numpy.ndarray of float64
        The ``K + 2`` interval ends, ``lo`` first and ``hi`` last.
    C : numpy.ndarray of int64
        ``C_i``, the rows at or below ``e_i``, for each of the ``K + 1`` intervals.
    n : int
        The number of rows kept.
    """
    x = np.array(values, dtype=np.float64).ravel()
    x = kept_numbers(x)
    np.clip(x, lo, hi, out=x)
    x.sort()
    inner = np.unique(x[(x > lo) & (x < hi)])
    edges = np.concatenate(([lo], inner, [hi]))
    counts = np.searchsorted(x, edges[:-1], side="right").astype(np.int64)
    return edges, counts, int(x.shape[0])


#: The moves of a row: ``JOINT_SUBPOINTS`` equally likely points in ``(-w, w)`` (a power of 2,
#: at least 2) at a per-row epsilon up to ``JOINT_FINE_EPSILON``; ``JOINT_FINE_SUBPOINTS`` above
#: (:func:`joint_subpoints`). A public constant of the tie handling: the privacy proof holds for
#: any ``G`` (a random map of each row on its own), the law and the time depend on it
#: (docs/quantiles.md, "Ties"). The dynamic program runs over the occupied lattice points, up to
#: ``G (hi - lo) / w``, so its time is about linear in ``G``; a tied block of ``k`` rows is
#: spread over ``G`` points (``G / 2`` on a bound), ``k / G`` rows each, the steps of rank the
#: quantiles inside it can take, which cost ``epsilon`` times more score the larger epsilon.
#: Measured (``bench/bench_joint_subpoints.py``, docs/performance.md): 16 is the smallest ``G``
#: with no loss beyond the runs' 95% intervals on 17 columns at epsilon 0.1, 1, 2 and 4 and on the
#: tie test at epsilon 2; 8 loses on Seattle precipitation (57% of the rows on the bound 0:
#: 5.5 against 0.10 at epsilon 1), 4 also on flight distances; at epsilon 5 the tie test's
#: median (43 of 99 rows at 12.5) comes back exact in 94% of 1000 runs with 16 and 99% with 32.
JOINT_SUBPOINTS = 16
#: ``G`` above ``JOINT_FINE_EPSILON``.
JOINT_FINE_SUBPOINTS = 32
#: The per-row epsilon above which the moves take ``JOINT_FINE_SUBPOINTS`` points (measured:
#: no loss with 16 at 2, a loss at 5 on the tie test; a threshold fitted between them).
JOINT_FINE_EPSILON = 2


def joint_subpoints(epsilon: Any = None) -> int:
    """``G`` for a per-row ``epsilon`` (public): ``JOINT_SUBPOINTS``, or
    ``JOINT_FINE_SUBPOINTS`` above ``JOINT_FINE_EPSILON`` (``None``: ``JOINT_SUBPOINTS``).

    Parameters
    ----------
    epsilon : float or Fraction, optional
        The per-row epsilon the mechanism runs at (public).

    Returns
    -------
    int
        ``G``, the number of points a row may move to.
    """
    if epsilon is not None and Fraction(epsilon) > JOINT_FINE_EPSILON:
        return JOINT_FINE_SUBPOINTS
    return JOINT_SUBPOINTS


#: Moves read from one 64-bit word of the source: ``64 // log2(JOINT_SUBPOINTS)`` fields.
MOVES_PER_WORD = 64 // (JOINT_SUBPOINTS.bit_length() - 1)


def joint_move_words(
    source: RandomSource | None, n: int, subpoints: int | None = None
) -> npt.NDArray[np.uint64]:
    """``n`` words for :func:`joint_moved_intervals`, whose top ``log2(G)`` bits are the rows'
    moves ``t`` (the other bits 0), read ``64 // log2(G)`` to a word of the source
    (``MOVES_PER_WORD`` for the default ``G``; ``subpoints``: ``G``, default
    ``JOINT_SUBPOINTS``).

    Word ``k`` of the source gives rows ``(64 // b) k + j``, ``j = 0, 1, ...``, its bits ``64 -
    b (j + 1)`` to ``63 - b j`` (``b = log2(G)``; ``G = 16``: 4 bits, 16 rows a word, no bit
    unused; ``G = 32``: 5 bits, 12 rows, 4 bits unused): disjoint bits of independent uniform
    words, so the moves are independent and uniform on ``0..G-1``, the same law as one word a
    row (``tests/mechanisms/test_quantile_joint_moves.py`` fits it), from ``1 / (64 // b)`` of
    the random bytes.

    Parameters
    ----------
    source : RandomSource or None
        The randomness (``None``: the private default; a seeded source for tests only).
    n : int
        The number of rows (words returned).
    subpoints : int, optional
        ``G``, a power of two at least 2 (default ``JOINT_SUBPOINTS``).

    Returns
    -------
    numpy.ndarray of uint64
        ``n`` words, each holding one row's move in its top ``log2(G)`` bits.
    """
    g = JOINT_SUBPOINTS if subpoints is None else subpoints
    bits = g.bit_length() - 1
    per = 64 // bits
    raw = resolve_source(source).words(-(-n // per))
    fields = np.arange(per, dtype=np.uint64) * np.uint64(bits)
    top = np.uint64(((1 << bits) - 1) << (64 - bits))
    out = np.left_shift(raw[:, None], fields[None, :])  # field j to the top bits
    out &= top
    moved: npt.NDArray[np.uint64] = out.reshape(-1)[:n]
    return moved


#: Rows per chunk of :func:`joint_moved_intervals`.
_MOVE_CHUNK = 1 << 16


def _nearest_points(values: F64, lo: float, hi: float, d: float, out: I64) -> I64:
    """The nearest lattice point ``i`` of each row, clamped to the bounds, written into
    ``out`` (of the rows' length): ``rint((clip(x, lo, hi) - lo) / d)``, whole numbers."""
    buf = np.clip(values, lo, hi)
    buf -= lo
    buf /= d
    np.rint(buf, out=buf)
    np.copyto(out, buf, casting="unsafe")  # as astype: whole numbers, exact
    return out


def _moved_points(nearest: I64, moves: npt.NDArray[np.uint64], g: int) -> I64:
    """The lattice point of each row moved by ``(2 t + 1 - G)``, ``t`` the top ``log2(G)``
    bits of its word, and reflected at ``lo`` (the point ``-i`` is ``i``), in place."""
    shift = 64 - (g.bit_length() - 1)
    t = np.right_shift(moves, np.uint64(shift))
    t <<= np.uint64(1)
    nearest += t.view(np.int64)  # + 2 t
    nearest += 1 - g  # in [-(g - 1), top + 1 + g - 1]
    np.abs(nearest, out=nearest)
    return nearest


def _canonical_run(cumulative: I64, first: int, stop: int) -> I64:
    """Rows ``first .. stop - 1`` of the rows in the order of their nearest lattice points
    (``cumulative[c]``: how many rows have a nearest point at most ``c``): their points."""
    a = int(np.searchsorted(cumulative, first, side="right"))  # the cell of row `first`
    b = int(np.searchsorted(cumulative, stop - 1, side="right"))
    ends = np.minimum(cumulative[a : b + 1], stop)
    before = cumulative[a - 1 : b] if a > 0 else np.concatenate(([0], cumulative[:b]))
    begins = np.maximum(before, first)
    return np.repeat(np.arange(a, b + 1, dtype=np.int64), ends - begins)


def joint_moved_intervals(
    values: F64,
    lo: float,
    hi: float,
    w: float,
    words: npt.NDArray[np.uint64],
    subpoints: int | None = None,
) -> tuple[F64, I64, int]:
    """:func:`joint_intervals` of the rows, each moved by its own random amount in ``(-w, w)``.

    With ``G = subpoints`` (default ``JOINT_SUBPOINTS``; the words from
    :func:`joint_move_words` with the same ``G``) and the lattice ``lo + i d``, ``d = w / G``: a
    row, clamped
    to the bounds, is rounded to the nearest lattice point (it moves by at most ``d / 2``),
    then moved by ``(2 t + 1 - G) d``, ``t`` the top bits of its own word from the source
    (uniform on ``0..G-1``: ``G`` points symmetric about the row, within ``(1 - 1/G) w``), and
    reflected at the bounds: a random map of each row on its own, so datasets that differ by
    one row still differ by one row (couple the common rows' words) and the privacy proof is
    unchanged (module docstring). Each row moves by less than ``w``, a block of tied rows is
    spread over ``G`` points on both sides of its value, so a quantile can fall inside it.

    The words go to the rows in the order of their nearest lattice points, not in the order
    the rows are read: the ``j``-th word moves the row of the ``j``-th smallest point. Each
    row still gets its own uniform ``t``, independent of the others (the law is unchanged),
    and with a seeded source the result no longer depends on the rows' order (issue 41: the
    same table in another row order or file layout gives the same release).

    The rows land on at most ``G (hi - lo) / w + 2 G`` points, whatever their number: the
    intervals come from counting rows per point, in two passes without a sort of the rows
    (the rows per nearest point, then the moved points of the rows in that order; each pass
    in two halves of the rows on two threads from four chunks on, their counts added,
    :func:`dpselect.core.halves.in_halves`).

    Parameters
    ----------
    values : numpy.ndarray of float64
        The rows, NaN already dropped (clamped here).
    lo, hi : float
        The public bounds.
    w : float
        The resolution, ``> 0``, in the data's units.
    words : numpy.ndarray of uint64
        One word per row (:func:`joint_move_words`, the same ``G``).
    subpoints : int, optional
        ``G`` (default ``JOINT_SUBPOINTS``).

    Returns
    -------
    edges : numpy.ndarray of float64
        The interval ends between the distinct moved points, ``lo`` first and ``hi`` last.
    C : numpy.ndarray of int64
        The moved rows at or below each interval's left end.
    n : int
        The number of rows.
    """
    g = JOINT_SUBPOINTS if subpoints is None else subpoints
    d = w / g
    top = math.floor((hi - lo) / d)  # lattice points lo + i d <= hi (up to float rounding)
    values = np.asarray(values, dtype=np.float64).ravel()
    moves = np.asarray(words, dtype=np.uint64).ravel()
    rows = int(values.shape[0])
    if top + 2 * g <= max(1 << 22, 4 * rows):
        # lattice points chunk by chunk (the temporaries of a chunk stay in the cache), counted
        # a batch of chunks at a time: at least as many rows as points, so that adding a
        # batch's counts costs no more than finding them (the same counts)
        size = top + 2 * g + 1  # i <= top + g (module text)
        batch_rows = -(-max(size, _MOVE_CHUNK) // _MOVE_CHUNK) * _MOVE_CHUNK

        def counted(part: slice, fill: Callable[[int, int, I64], I64]) -> I64:
            per_point = np.zeros(size, dtype=np.int64)
            first_row, count = part.start, part.stop - part.start
            batch = max(1, min(count, batch_rows))
            points_of = np.empty(batch, dtype=np.int64)
            for b0 in range(0, count, batch):
                b1 = min(count, b0 + batch)
                for start in range(b0, b1, _MOVE_CHUNK):
                    stop = min(b1, start + _MOVE_CHUNK)
                    fill(first_row + start, first_row + stop,
                         points_of[start - b0 : stop - b0])  # fmt: skip
                counted_ = np.bincount(points_of[: b1 - b0])
                per_point[: counted_.shape[0]] += counted_
            return per_point

        def nearest_of(start: int, stop: int, out: I64) -> I64:
            return _nearest_points(values[start:stop], lo, hi, d, out)

        nearest = np.sum(
            in_halves(lambda part: counted(part, nearest_of), rows, 4 * _MOVE_CHUNK), axis=0
        )
        at_most = np.cumsum(nearest)  # rows whose nearest point is at most c

        def moved_of(start: int, stop: int, out: I64) -> I64:
            out[:] = _canonical_run(at_most, start, stop)
            return _moved_points(out, moves[start:stop], g)

        per_point = np.sum(
            in_halves(lambda part: counted(part, moved_of), rows, 4 * _MOVE_CHUNK), axis=0
        )
        used = np.flatnonzero(per_point)
        weights = per_point[used]
    else:
        nearest_rows = np.sort(_nearest_points(values, lo, hi, d, np.empty(rows, np.int64)))
        used, weights = np.unique(_moved_points(nearest_rows, moves, g), return_counts=True)
    points = lo + used * d
    points = np.where(points > hi, 2.0 * hi - points, points)  # reflected at hi
    points = np.clip(points, lo, hi)
    order = np.argsort(points, kind="stable")  # the points only (few), not the rows
    points, weights = points[order], weights[order]
    # the first of each run of equal points (sorted): np.unique's return_index, without its
    # second sort
    first = np.flatnonzero(np.concatenate(([points.shape[0] > 0], points[1:] != points[:-1])))
    distinct = points[first]
    merged = np.add.reduceat(weights, first) if weights.shape[0] else weights
    inside = (distinct > lo) & (distinct < hi)
    edges = np.concatenate(([lo], distinct[inside], [hi]))
    cumulative = np.cumsum(merged)
    below = np.searchsorted(distinct, edges[:-1], side="right")
    counts = np.where(below > 0, cumulative[np.maximum(below - 1, 0)], 0).astype(np.int64)
    return edges, counts, rows


# ----------------------------------------------------------------------------- log-sum
#: :func:`logaddexp` raises ``-|a - b|`` to this: ``exp`` of it is below ``2^-54``, so ``1 +
#: exp`` is exactly 1 either way (no result changes), and NumPy's ``exp`` stays off its slow
#: path for underflows.
_LAE_FLOOR = -40.0
#: :func:`_log_sum_rows` raises each ``x - M`` to this: a term of ``e^-700`` instead of a
#: smaller one (or 0), in a sum of at most ``64`` terms that is at least 1: the sum moves by at
#: most ``64 e^-700 < 2^-1000``, inside the rounding docs/quantiles.md counts; ``exp`` and the
#: sum stay off NumPy's slow paths for subnormal numbers.
_LSE_FLOOR = -700.0


def logaddexp(a: F64, b: F64, out: F64 | None = None) -> F64:
    """``log(exp(a) + exp(b))`` elementwise as ``max(a, b) + log(1 + exp(-|a - b|))``, the
    formula whose float error docs/quantiles.md bounds ("Exactness"), in nine NumPy calls
    (faster than ``np.logaddexp`` here, the dynamic program's inner operation). ``-inf``
    stands for an empty sum: ``logaddexp(-inf, x) = x``, exactly, for every ``x``.

    ``-|a - b|`` is computed as ``min(a, b) - max(a, b)`` (the same float: rounding to nearest
    is symmetric) and raised to ``-40`` (:data:`_LAE_FLOOR`: ``1 + exp`` is then exactly 1
    either way, so no result changes, and ``exp`` stays off its slow path for underflows;
    ``log(1 + e)`` rather than ``log1p(e)``, which is slow on tiny ``e``: the rounding of ``1 +
    e`` is inside the bound). The empty sums (``max = -inf``, where the formula gives NaN) are
    repaired by ``fmax(result, max)``, which leaves every other value as it is (the result is
    at least the max). ``out``: where to write the result (it may be ``a`` or ``b``: both are
    read before it is written)."""
    with np.errstate(invalid="ignore"):  # -inf - -inf: both sums empty, fixed by fmax
        return _lae(a, b, out)


def _lae(a: F64, b: F64, out: F64 | None = None) -> F64:
    """:func:`logaddexp` without its ``np.errstate`` (a few microseconds a call): for loops
    that hold ``np.errstate(invalid="ignore")`` once around many calls."""
    top = np.maximum(a, b)
    d = np.minimum(a, b)
    d -= top
    np.maximum(d, _LAE_FLOOR, out=d)  # the same result, off exp's slow underflow path
    np.exp(d, out=d)
    d += 1.0  # log(1 + e) (log1p is slow on tiny e; the rounding of 1 + e is in the bound)
    np.log(d, out=d)
    d += top
    if out is None:
        np.fmax(d, top, out=d)
        return d
    np.fmax(d, top, out=out)
    return out


# ----------------------------------------------------------------------------- blocked sums
#: From this many intervals on, the dynamic program's passes run in two halves on two threads
#: (:func:`dpselect.core.halves.in_halves`: the same floats; below, a thread costs more than
#: it saves).
HALVES_INTERVALS = 8192


def _rows_of(shifts: list[tuple[F64, F64]], rows: slice) -> list[tuple[F64, F64]]:
    """The shifts of :meth:`_BlockedSums._level_shifts` for the rows ``rows`` only."""
    return [(own[rows], other[rows]) for own, other in shifts]


#: The largest block of :class:`_BlockedSums` (a power of two; :func:`_leaf_levels` picks the
#: block of each input, at most this).
SUM_BLOCK = 64
#: The kinds of range sums, by their index in :meth:`_BlockedSums.query_many`.
_KINDS = ("plain", "left", "right")
#: The six rows of :class:`_BlockedSums`' arrays: the three kinds on the leaves in order, then
#: on the leaves reversed (whose suffixes are the prefixes in order).
_ROW_KIND = np.array([0, 1, 2, 0, 1, 2], dtype=np.int64)
#: The reversed row holding the prefixes of each kind in order: prefixes "left" (reference at
#: the last leaf) are the reversed suffixes "right" (reference at their first leaf), and back.
_PREFIX_ROW = np.array([3, 5, 4], dtype=np.int64)


def _bit_length(x: I64) -> I64:
    """``int.bit_length`` of each ``0 <= x < 2^53``: the exponent field of the float ``x``
    (exact there) less its bias, and 0 for 0."""
    out: I64 = (x.astype(np.float64).view(np.int64) >> 52) - 1022
    np.maximum(out, 0, out=out)
    return out


def _leaf_levels(n: int) -> int:
    """``log2`` of the block size for ``n`` leaves (the number of intervals): the doubling
    inside blocks costs about ``3 n`` log-sums a level, the sparse table over blocks about ``3
    n / b`` a level for ``log2(n / b)`` levels, and each level a fixed number of NumPy calls;
    blocks of 16 leaves up to 8,192 leaves (the calls weigh most) and 8 above (measured,
    docs/performance.md), at most :data:`SUM_BLOCK`. A speed choice: every block size gives
    the same sums up to the rounding the error bound counts."""
    levels = 4 if n <= 8192 else 3
    return min(levels, SUM_BLOCK.bit_length() - 1)


def _log_sum_rows(x: F64) -> F64:
    """``log sum_k exp(x[k])`` over the first axis (``-inf`` terms are 0; all ``-inf``: ``-inf``),
    as ``M + log(sum_k exp(x[k] - M))``, ``M`` the largest term: every term of the sum is in
    ``[0, 1]`` and one is 1, a sum of positive terms (docs/quantiles.md bounds its error).
    ``x`` is overwritten."""
    top = x.max(axis=0)
    empty = top == -np.inf
    x -= np.where(empty, 0.0, top)
    np.maximum(x, _LSE_FLOOR, out=x)  # below: e^-700 for a smaller term (docstring)
    np.exp(x, out=x)
    total: F64 = x.sum(axis=0)
    np.log(total, out=total)
    total += top
    total[empty] = -np.inf  # every term -inf: an empty sum
    return total


class _BlockedSums:
    """Range sums of ``exp(A[i'])`` (log space, no subtraction), at most four parts a query.

    Three kinds of sums (the segment trees of tests/mechanisms/joint_reference.py,
    ``SegmentTrees``, are the oracle of its tests): "plain"; "left", each term times ``exp(-c (ref -
    BC[i']))`` with the reference at the range's last leaf; "right", times ``exp(-c (BC[i'] -
    ref))`` with the reference at its first leaf. The leaves are cut in blocks of ``b = 2^H``
    (:func:`_leaf_levels`), and a disjoint sparse table is built by doubling: at level ``h``
    every leaf holds the sum from it to the end of its aligned segment of ``2^h`` leaves (the
    suffix), from the sum of level ``h - 1`` and the sum of the segment's right half (one
    :func:`logaddexp` a leaf of a left half, with the shift that moves a reference; levels
    ``1..H`` over the leaves, then the same over the blocks' sums). The prefixes are the
    suffixes of the leaves in reverse order (``BC`` negated and reversed), so the six sums
    (three kinds, suffixes and prefixes) take the same NumPy calls: ``H`` plus ``log2`` of the
    number of blocks steps in all.

    A range ``[s, e]`` inside one block is the suffix of ``s`` and the prefix of ``e`` at the
    level where they part (``bit_length(s ^ e) - 1``); a range across blocks is the suffix of
    ``s`` in its block, one or two table entries for the blocks between, and the prefix of
    ``e`` in its block: at most four parts, each moved to the query's reference by a float
    shift, summed by :func:`_log_sum_rows`. Every value passes at most ``H + log2(blocks) <=
    64`` chained :func:`logaddexp` (each a sum of positive terms), one shift and one sum of the
    parts: inside the count of docs/quantiles.md's error bound.

    What depends on ``BC`` alone (the shifts of every level, the layout) is built once
    (``bc``, ``factor``), and :meth:`fill` is called with each level's ``A``; the parts of a
    set of queries (:meth:`parts`: flat indices into the filled array and the shift of each,
    ``+inf`` for a missing part) depend on ``BC`` and the pivots only.
    """

    def __init__(self, a: F64 | None, bc: I64, factor: float) -> None:
        n = bc.shape[0]
        self.n, self.factor = n, factor
        h = _leaf_levels(n)
        b = 1 << h
        nb = max(1, -(-n // b))
        size = 1 << (nb - 1).bit_length()  # a power of two >= nb
        big = nb * b
        self.h, self.b, self.nb, self.size, self.big = h, b, nb, size, big
        self.table_levels = size.bit_length() - 1
        bcp = np.full(big, bc[-1] if n else 0, dtype=np.int64)
        bcp[:n] = bc
        self.bc = bcp
        lo = np.full(size, bcp[-1], dtype=np.int64)
        hi = lo.copy()
        lo[:nb], hi[:nb] = bcp[::b], bcp[b - 1 :: b]
        self.block_lo, self.block_hi = lo, hi
        self.table_base = (h + 1) * 6 * big
        self.empty = self.table_base + (self.table_levels + 1) * 6 * size  # one -inf cell
        self.values = np.full(self.empty + 1, -np.inf)
        # leaf j of every block side by side (position j nb + q): the doubling's NumPy calls
        # then run over rows of nb values, not over runs of one to 2^(H-1)
        rows = np.concatenate((np.tile(bcp, (3, 1)), np.tile(-bcp[::-1], (3, 1))))
        rows = rows.reshape(6, nb, b).transpose(0, 2, 1)
        self._leaf_shifts = self._level_shifts(rows, rows, h)
        t_lo = np.concatenate((np.tile(lo, (3, 1)), np.tile(-hi[::-1], (3, 1))))[:, :, None]
        t_hi = np.concatenate((np.tile(hi, (3, 1)), np.tile(-lo[::-1], (3, 1))))[:, :, None]
        self._table_shifts = self._level_shifts(t_lo, t_hi, self.table_levels)
        if a is not None:
            self.fill(a)

    def _shift(self, d: I64) -> F64:
        out: F64 = d.astype(np.float64) * self.factor
        return out

    def _at(self, p: I64) -> I64:
        """Where leaf ``p`` sits in a row of a level (leaf ``j`` of block ``q`` at ``j nb + q``)."""
        out: I64 = (p & (self.b - 1)) * self.nb + (p >> self.h)
        return out

    def _level_shifts(self, lo: I64, hi: I64, levels: int) -> list[tuple[F64, F64]]:
        """For each doubling level ``1..levels`` over items (axis 1 of ``lo`` and ``hi``, the
        first and last ``BC`` of each, ``(6, items, inner)``: rows of :data:`_ROW_KIND`, and
        ``inner`` independent sequences side by side): the shift of a left half's own sum
        ("left": its reference moves from the half's last item to the segment's) and of the
        right half's sum ("right": from the right half's first item to the left half's item),
        ``0`` for the kinds without one."""
        out = []
        _, count, inner = lo.shape
        left, right = _ROW_KIND == 1, _ROW_KIND == 2
        for level in range(1, levels + 1):
            half = 1 << (level - 1)
            seg = count >> level
            lo3 = lo.reshape(6, seg, 2, half, inner)
            hi3 = hi.reshape(6, seg, 2, half, inner)
            own = np.zeros((6, seg, 1, inner))
            own[left] = self._shift(hi3[left, :, 1, -1:] - hi3[left, :, 0, -1:])
            other = np.zeros((6, seg, half, inner))
            other[right] = self._shift(lo3[right, :, 1, :1] - lo3[right, :, 0])
            out.append((own, other))
        return out

    def fill(self, a: F64) -> None:
        """The suffixes of every level for the leaves ``a`` (length ``n``), in place."""
        big, size, h, nb, b = self.big, self.size, self.h, self.nb, self.b
        v = self.values
        leaf = v[: (h + 1) * 6 * big].reshape(h + 1, 6, b, nb)
        padded = np.full(big, -np.inf)
        padded[: self.n] = a
        leaf[0, :3] = padded.reshape(nb, b).T
        leaf[0, 3:] = padded[::-1].reshape(nb, b).T
        table = v[self.table_base : self.empty].reshape(self.table_levels + 1, 6, size, 1)

        def kinds(rows: slice) -> None:
            """The doubling of the rows ``rows`` (independent of the other rows)."""
            forward = slice(rows.start, min(rows.stop, 3))  # the leaves in order
            backward = slice(max(rows.start, 3), rows.stop)  # the leaves reversed
            with np.errstate(invalid="ignore"):  # -inf - -inf in _lae: both sums empty
                self._double(leaf[:, rows], _rows_of(self._leaf_shifts, rows))
                if forward.start < forward.stop:
                    table[0, forward, :nb, 0] = leaf[h, forward, 0]
                    table[0, forward, nb:] = -np.inf
                if backward.start < backward.stop:
                    table[0, backward, size - nb :, 0] = leaf[h, backward, 0]
                    table[0, backward, : size - nb] = -np.inf
                self._double(table[:, rows], _rows_of(self._table_shifts, rows))

        if self.n >= HALVES_INTERVALS:  # the three kinds in order, the three reversed
            in_halves(kinds, 6, 2)
        else:
            kinds(slice(0, 6))

    @staticmethod
    def _double(x: F64, shifts: list[tuple[F64, F64]]) -> None:
        """Level ``h`` of ``x`` (``(levels + 1, 6, items, inner)``) from level ``h - 1``: the
        left half of each segment of items adds the right half's sum."""
        _, kinds, count, inner = x.shape
        for level, (own_shift, other_shift) in enumerate(shifts, start=1):
            half = 1 << (level - 1)
            prev = x[level - 1].reshape(kinds, count >> level, 2, half, inner)
            seg = x[level].reshape(kinds, count >> level, 2, half, inner)
            seg[:, :, 1] = prev[:, :, 1]  # the right halves as they are
            other = prev[:, :, 1, :1] - other_shift
            _lae(prev[:, :, 0] - own_shift, other, out=seg[:, :, 0])

    def parts(self, kind: int, start: I64, stop: I64, pivot: I64, extra: float = 0.0,
              out: tuple[I64, F64] | None = None) -> tuple[I64, F64]:  # fmt: skip
        """``(index, shift)``, each ``(4, queries)``: the parts of the ranges ``[start, stop)``
        of kind ``kind`` (an index into ``_KINDS``) and their shifts to the pivots, plus
        ``extra`` (a constant subtracted from every term: the cap); a missing part reads the
        ``-inf`` cell, with shift ``+inf``. Integers of ``BC`` and the pivots only. ``out``:
        arrays of that shape to fill (else new ones).

        Row 0: the suffix of ``s = start`` (in its block, or up to where ``s`` and ``e = stop -
        1`` part when both are in one block); row 3: the prefix of ``e`` (in its block, or from
        where they part); rows 1 and 2: the table entries of the whole blocks between. Every
        row is computed for every query at once (each entry the same integer or float
        expression whichever case it falls in), and the rows a query lacks are set to the
        missing part."""
        h, b, big, size = self.h, self.b, self.big, self.size
        bc, lo, hi = self.bc, self.block_lo, self.block_hi
        q = start.shape[0]
        if out is None:
            out = (np.empty((4, q), dtype=np.int64), np.empty((4, q)))
        index, shift = out
        sign = (kind == 1) - (kind == 2)
        prow = int(_PREFIX_ROW[kind])
        last_leaf = big - 1
        e = stop - 1
        bl, br = start >> h, e >> h
        nonempty = start < stop
        inside = nonempty & (bl == br)
        across = nonempty & (bl < br)
        # inside one block: the level where s and e part, and the first leaf of e's half
        part = _bit_length(start ^ e)
        lev = np.maximum(part - 1, 0)
        mid = (e >> lev) << lev
        s_at = np.minimum(start, last_leaf)
        e_at = np.clip(e, 0, last_leaf)
        # row 0: the suffix of s at level lev (inside) or h (across)
        level0 = np.where(inside, lev, h)
        index[0] = level0 * (6 * big) + kind * big + self._at(s_at)
        if sign > 0:
            ref0 = np.where(inside, np.where(part == 0, s_at, np.maximum(mid - 1, 0)),
                            np.minimum(bl * b + b - 1, last_leaf))  # fmt: skip
        else:
            ref0 = s_at
        # row 3: the prefix of e from where it parts from s (inside, part > 0) or in its block
        level3 = np.where(inside, lev, h)
        index[3] = level3 * (6 * big) + prow * big + self._at(last_leaf - e_at)
        if sign > 0:
            ref3 = e_at
        else:
            ref3 = np.where(inside, np.minimum(mid, last_leaf), np.clip(br * b, 0, last_leaf))
        # rows 1 and 2: the whole blocks between, one table entry or a suffix and a prefix
        first, last = bl + 1, br - 1
        between = across & (first <= last)
        tpart = _bit_length(first ^ last)
        tlev = np.maximum(tpart - 1, 0)
        tmid = (last >> tlev) << tlev
        one = tpart == 0
        first_at = np.clip(first, 0, size - 1)
        last_at = np.clip(last, 0, size - 1)
        tbase = self.table_base + tlev * (6 * size)
        index[1] = tbase + kind * size + first_at
        index[2] = tbase + prow * size + (size - 1 - last_at)
        if sign > 0:
            ref1 = np.where(one, first_at, np.clip(tmid - 1, 0, size - 1))
            ref2 = last_at
        else:
            ref1 = first_at
            ref2 = np.clip(tmid, 0, size - 1)
        present = (nonempty, between, between & ~one, across | (inside & (part > 0)))
        for row, ref in enumerate((ref0, ref1, ref2, ref3)):
            if sign:
                refs = (bc if row in (0, 3) else (hi if sign > 0 else lo))[ref]
                d = self._shift(sign * (pivot - refs))
                if extra:
                    d += extra
                shift[row] = d
            else:
                shift[row] = extra
            missing = ~present[row]
            index[row][missing] = self.empty
            shift[row][missing] = np.inf
        return index, shift

    def sums(self, index: I64, shift: F64) -> F64:
        """The sums of the parts ``(index, shift)`` of :meth:`parts` (stacked in any number of
        rows: all the parts of one result in one column), from the filled array."""
        terms = self.values.take(index)
        terms -= shift
        return _log_sum_rows(terms)

    def query(self, kind: str, start: I64, stop: I64, pivot: I64 | None = None) -> F64:
        """Log range sums over ``[start, stop)`` per query (``-inf`` when empty); "left"
        multiplies each term by ``exp(-c (pivot - BC[i']))`` (all ``BC[i'] <= pivot``),
        "right" by ``exp(-c (BC[i'] - pivot))`` (all ``BC[i'] > pivot``)."""
        kinds = np.full(start.shape[0], _KINDS.index(kind), dtype=np.int64)
        if pivot is None:
            pivot = np.zeros(start.shape[0], dtype=np.int64)
        return self.query_many(kinds, start, stop, pivot)

    def query_many(self, kinds: I64, start: I64, stop: I64, pivot: I64) -> F64:
        """:meth:`query` for queries of several kinds at once (``kinds``: indices into
        ``("plain", "left", "right")``; ``pivot`` is not read for "plain")."""
        res = np.full(start.shape[0], -np.inf)
        for k in range(len(_KINDS)):
            q = np.flatnonzero(kinds == k)
            if q.shape[0]:
                index, shift = self.parts(k, start[q], stop[q], pivot[q])
                res[q] = self.sums(index, shift)
        return res


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


def _transition_parts(sums: _BlockedSums, bc: I64, target: int, x_cap: int) -> _Parts:
    """The parts (:meth:`_BlockedSums.parts`, ``(16, n)``) of ``log sum_{i' < i} exp(beta[i'] -
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
    sums: _BlockedSums | None = None,
    parts: _Parts | None = None,
) -> F64:
    """``log sum_{i' < i} exp(beta[i'] - min(T, c |bc[i] - bc[i'] - target|))`` for every i:
    the sixteen parts of :func:`_transition_parts` summed by one :func:`_log_sum_rows` (``sums``
    and ``parts``: built for the same ``bc``, ``factor`` and target, if already known), a
    block of intervals a thread."""
    if sums is None:
        sums = _BlockedSums(None, bc, factor)
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
    sums = _BlockedSums(None, bc, plan.factor) if m > 1 else None
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
    floats the backward pass reads), summed by one :func:`_log_sum_rows`."""
    if j == 0:
        first: F64 = alpha1[0].copy()
        return first
    out: F64 = np.empty(loglen.shape[0])

    def columns(at: slice) -> None:  # each column's sum alone: the same floats in halves
        out[at] = _log_sum_rows(_repeats(plan, alpha1, self_cost, loglen, j, at.stop, consts,
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
    row_eps = unit_epsilon(eps, max_rows)
    if row_eps <= 2 * joint_rounding_loss(len(levels)):
        least = float(2 * joint_rounding_loss(len(levels)) * (eps / row_eps))
        raise ParameterError(f"epsilon must exceed {least:.3g}, got {epsilon}")
    plan, w, step, g = _constants(tuple(levels), row_eps, resolution, lo, hi)

    def function(values: Any) -> list[float]:
        x = np.asarray(values, dtype=np.float64).ravel()  # read, never changed
        if bool(np.isnan(x).any()):
            x = kept_numbers(x)
        if w > 0 and x.shape[0] > 0:
            words = joint_move_words(source, x.shape[0], g)
            edges, counts, n = joint_moved_intervals(x, lo, hi, w, words, g)
        else:
            edges, counts, n = joint_intervals(x, lo, hi)
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
