"""The joint mechanism as it was before its speed-up (frozen copy, a reference for tests).

tests/mechanisms/test_quantile_joint_identical.py checks that :mod:`dpselect.mechanisms.
quantile_joint` gives bit-identical outputs to this module for the same seeded source: the
batched range sums, the side-by-side chains and the in-place moves change how NumPy is called,
never the sequence of float operations behind a value. Not to be edited.

The original module docstring follows.

Many quantiles at once: the joint exponential mechanism of Gillenwater, Joseph, Kulesza (2021).

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
relative to a reference at the range's edge (no subtraction: relative accuracy): suffixes and
prefixes inside blocks of :data:`SUM_BLOCK` intervals and a sparse table over the blocks
(:class:`_BlockedSums`, ``O(1)`` a query, ``O(m n + m^2 n)`` time in all). A backward pass
samples each level's state with :func:`noisy_argmax` (Gumbel, scale 1: exactly ``P ∝
exp(float log-weight)``) and the points with :func:`uniform_float` (exact uniform reals rounded
down to floats).

**Ties: a public resolution** ``w`` (default: half the power of ten at most ``(hi - lo) / (600
max(1, epsilon))``, from the bounds and epsilon only; :func:`joint_resolution`). Before the
intervals are formed, each row is clamped, rounded to the lattice ``lo + i w / G`` and moved by its
own random amount, one of ``G = JOINT_SUBPOINTS`` points symmetric in ``(-w, w)`` chosen by the top
bits of a fresh word of the source, and is reflected at the bounds (then clamped against float
rounding; :func:`joint_moved_intervals`): a block of rows on a bound stays within ``w`` of it, and
the rows land on at most ``G (hi - lo) / w + 2 G`` points, counted in one pass. This is a
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

import itertools
import math
from collections.abc import Callable, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpselect.core.arithmetic import float_down, float_up
from dpselect.core.errors import ParameterError
from dpselect.core.measurement import Measurement
from dpselect.mechanisms import quantile_joint as qj
from dpselect.mechanisms import quantile_joint_sums as qjs
from dpselect.mechanisms.quantile_continuous import (
    check_bounds,
    check_resolution,
    log_lengths,
    uniform_float,
)

# the moves and the states drawn as the module draws them (5 bits a move; the states in two
# stages): the same laws as this reference's one word a row and one noisy_argmax, so that the
# releases stay comparable bit for bit
from dpselect.mechanisms.quantile_joint_moves import JOINT_SUBPOINTS as _module_subpoints
from dpselect.mechanisms.quantile_joint_moves import joint_move_words, joint_subpoints
from dpselect.mechanisms.quantile_recursive import sorted_levels
from dpselect.mechanisms.quantile_score import MAX_DENOMINATOR, pure_dp_on_rows, unit_epsilon
from dpselect.mechanisms.validate import check_epsilon
from dpselect.sampling.source import RandomSource
from dpselect.sampling.two_stage import draw_state

__all__ = [
    "JOINT_CAP",
    "JOINT_LOG_ERROR",
    "JOINT_SUBPOINTS",
    "MAX_JOINT_LEVELS",
    "joint_accuracy",
    "joint_accuracy_derivation",
    "joint_accuracy_terms",
    "joint_gaps",
    "joint_intervals",
    "joint_moved_intervals",
    "joint_rounding_loss",
    "joint_sensitivity",
    "make_joint_quantiles",
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
    """``(B, [g_1, ..., g_{m+1}])``: the common denominator and the target gaps times ``B``."""
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
    """``Delta = 2 (B - min_j g_j)``: the score's sensitivity under adding or removing a row."""
    denom, gaps = joint_gaps(levels)
    return 2 * (denom - min(gaps))


def joint_rounding_loss(m: int) -> Fraction:
    """``4 rho = 12 (m + 1) JOINT_LOG_ERROR``: what the float log-weights add to the loss."""
    return 12 * (m + 1) * JOINT_LOG_ERROR


def joint_resolution(resolution: Any, lo: float, hi: float, epsilon: Any = None) -> float:
    """The resolution ``w`` of the joint mechanism: ``0`` (none), the one given (checked as
    for the continuous mechanism), or by default half the power of ten at most ``(hi - lo) /
    (JOINT_STEP_DIVISOR * max(1, epsilon))`` (rounded up; raised to the least allowed):
    public parameters only (``epsilon=None``: the divisor ``JOINT_STEP_DIVISOR`` alone).

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
    if resolution is None:
        divisor = Fraction(JOINT_STEP_DIVISOR)
        if epsilon is not None:
            divisor *= max(Fraction(1), Fraction(epsilon))
        step = decimal_step(float((Fraction(hi) - Fraction(lo)) / (2 * divisor)))
        return max(float_up(step / 2), check_resolution(None, lo, hi))
    if resolution == 0 and not isinstance(resolution, bool):
        return 0.0
    return check_resolution(resolution, lo, hi)


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
    clamped values, ``C_i = #{x <= e_i}`` on ``I_i = [e_i, e_{i+1})``, and the row count."""
    x = np.array(values, dtype=np.float64).ravel()
    x = x[~np.isnan(x)]
    np.clip(x, lo, hi, out=x)
    x.sort()
    inner = np.unique(x[(x > lo) & (x < hi)])
    edges = np.concatenate(([lo], inner, [hi]))
    counts = np.searchsorted(x, edges[:-1], side="right").astype(np.int64)
    return edges, counts, int(x.shape[0])


#: The moves of a row: ``JOINT_SUBPOINTS`` equally likely points in ``(-w, w)`` by default: the
#: module's constants and :func:`joint_subpoints` (parameters of the law, not of the speed-up
#: this reference checks).
JOINT_SUBPOINTS = _module_subpoints


def joint_moved_intervals(
    values: F64,
    lo: float,
    hi: float,
    w: float,
    words: npt.NDArray[np.uint64],
    subpoints: int | None = None,
) -> tuple[F64, I64, int]:
    """:func:`joint_intervals` of the rows, each moved by its own random amount in ``(-w, w)``.

    With ``G = JOINT_SUBPOINTS`` and the lattice ``lo + i d``, ``d = w / G``: a row, clamped
    to the bounds, is rounded to the nearest lattice point (it moves by at most ``d / 2``),
    then moved by ``(2 t + 1 - G) d``, ``t`` the top bits of its own word from the source
    (uniform on ``0..G-1``: ``G`` points symmetric about the row, within ``(1 - 1/G) w``), and
    reflected at the bounds: a random map of each row on its own, so datasets that differ by
    one row still differ by one row (couple the common rows' words) and the privacy proof is
    unchanged (module docstring). Each row moves by less than ``w``, a block of tied rows is
    spread over ``G`` points on both sides of its value, so a quantile can fall inside it.
    The words go to the rows in the order of their nearest lattice points (here: sorted).
    """
    x = np.clip(values, lo, hi)
    g = JOINT_SUBPOINTS if subpoints is None else subpoints
    d = w / g
    top = math.floor((hi - lo) / d)  # lattice points lo + i d <= hi (up to float rounding)
    # the words go to the rows in the order of their nearest lattice points (row-order free)
    lattice = np.sort(np.rint((x - lo) / d).astype(np.int64))
    shift = 64 - (g.bit_length() - 1)
    t = (np.asarray(words, dtype=np.uint64) >> np.uint64(shift)).astype(np.int64)
    i = lattice + 2 * t + (1 - g)  # in [-(g - 1), top + 1 + g - 1]
    i = np.abs(i)  # reflected at lo: lo - i d is the lattice point -i
    if top + 2 * g <= max(1 << 22, 4 * i.shape[0]):
        per_point = np.bincount(i)
        used = np.flatnonzero(per_point)
        weights = per_point[used]
    else:
        used, weights = np.unique(i, return_counts=True)
    points = lo + used * d
    points = np.where(points > hi, 2.0 * hi - points, points)  # reflected at hi
    points = np.clip(points, lo, hi)
    order = np.argsort(points, kind="stable")  # the points only (few), not the rows
    points, weights = points[order], weights[order]
    distinct, first = np.unique(points, return_index=True)
    merged = np.add.reduceat(weights, first) if weights.shape[0] else weights
    inside = (distinct > lo) & (distinct < hi)
    edges = np.concatenate(([lo], distinct[inside], [hi]))
    cumulative = np.cumsum(merged)
    below = np.searchsorted(distinct, edges[:-1], side="right")
    counts = np.where(below > 0, cumulative[np.maximum(below - 1, 0)], 0).astype(np.int64)
    return edges, counts, int(x.shape[0])


# ----------------------------------------------------------------------------- log-sum
def logaddexp(a: F64, b: F64) -> F64:
    """``log(exp(a) + exp(b))`` elementwise as ``max(a, b) + log1p(exp(-|a - b|))``, the
    formula whose float error docs/quantiles.md bounds ("Exactness"), in five NumPy passes
    (2-3 times faster than ``np.logaddexp`` here, the dynamic program's inner operation).
    ``-inf`` stands for an empty sum: ``logaddexp(-inf, x) = x``, exactly, for every ``x``."""
    top = np.maximum(a, b)
    with np.errstate(invalid="ignore"):  # -inf - -inf: both sums empty, fixed below
        d = a - b
    np.abs(d, out=d)
    np.negative(d, out=d)
    np.exp(d, out=d)
    np.log1p(d, out=d)
    d += top
    np.copyto(d, top, where=np.isinf(top))
    return d


# ----------------------------------------------------------------------------- blocked sums
#: Leaves per block of :class:`_BlockedSums` (a power of two): the longest chain of
#: ``logaddexp`` inside a block.
SUM_BLOCK = 64


def _bit_length(x: I64) -> I64:
    """``int.bit_length`` of each positive ``x < 2^53`` (``frexp`` is exact there)."""
    out: I64 = np.frexp(x.astype(np.float64))[1].astype(np.int64)
    return out


class _BlockedSums:
    """Range sums of ``exp(A[i'])`` (log space, no subtraction) in ``O(1)`` per query.

    Same three kinds and the same references as :class:`SegmentTrees` ("plain"; "left": each term
    times ``exp(-c (ref - BC[i']))`` with the reference at the range's last leaf; "right":
    ``exp(-c (BC[i'] - ref))`` with the reference at its first leaf). Leaves are cut in blocks
    of :data:`SUM_BLOCK`; inside a block every suffix (to the block's end) and prefix (from
    its start) is built by a chain of at most ``SUM_BLOCK`` ``logaddexp``; over whole blocks a
    disjoint sparse table (each level merges two halves: chains of ``log2`` of the number of
    blocks). A range across blocks is then one suffix, one or two table entries and one
    prefix; a range inside one block is summed leaf by leaf (at most ``SUM_BLOCK`` steps). Every
    value passes at most ``SUM_BLOCK + 64 + 4`` chained operations, inside the ``3 * 64`` of
    docs/quantiles.md's error bound, and every operation is a sum of positive terms.
    """

    def __init__(self, a: F64, bc: I64, factor: float) -> None:
        n = a.shape[0]
        b = SUM_BLOCK
        nb = max(1, -(-n // b))
        self.n, self.factor = n, factor
        vals = np.full(nb * b, -np.inf)
        vals[:n] = a
        bcs = np.full(nb * b, bc[-1], dtype=np.int64)
        bcs[:n] = bc
        self.a, self.bc = vals, bcs
        v, c2 = vals.reshape(nb, b), bcs.reshape(nb, b)
        with np.errstate(invalid="ignore"):
            self.suffix = {k: self._suffix(k, v, c2).ravel() for k in ("plain", "left", "right")}
            self.prefix = {k: self._prefix(k, v, c2).ravel() for k in ("plain", "left", "right")}
        starts = np.arange(nb, dtype=np.int64) * b
        size = 1
        while size < nb:
            size *= 2
        lo = np.full(size, bc[-1], dtype=np.int64)
        hi = lo.copy()
        lo[:nb], hi[:nb] = bcs[starts], bcs[starts + b - 1]
        self.block_lo, self.block_hi = lo, hi
        self.tables = {}
        for kind in ("plain", "left", "right"):
            item = np.full(size, -np.inf)
            item[:nb] = self.suffix[kind][starts]
            with np.errstate(invalid="ignore"):
                self.tables[kind] = self._table(kind, item, lo, hi, size)

    def _shift(self, d: I64) -> F64:
        out: F64 = d.astype(np.float64) * self.factor
        return out

    def _suffix(self, kind: str, v: F64, c2: I64) -> F64:
        out = np.empty_like(v)
        out[:, -1] = v[:, -1]
        for j in range(v.shape[1] - 2, -1, -1):
            if kind == "plain":
                out[:, j] = logaddexp(v[:, j], out[:, j + 1])
            elif kind == "left":  # reference: the block's last leaf
                out[:, j] = logaddexp(v[:, j] - self._shift(c2[:, -1] - c2[:, j]), out[:, j + 1])
            else:  # reference: leaf j itself
                out[:, j] = logaddexp(v[:, j], out[:, j + 1] - self._shift(c2[:, j + 1] - c2[:, j]))
        return out

    def _prefix(self, kind: str, v: F64, c2: I64) -> F64:
        out = np.empty_like(v)
        out[:, 0] = v[:, 0]
        for j in range(1, v.shape[1]):
            if kind == "plain":
                out[:, j] = logaddexp(out[:, j - 1], v[:, j])
            elif kind == "left":  # reference: leaf j itself
                out[:, j] = logaddexp(out[:, j - 1] - self._shift(c2[:, j] - c2[:, j - 1]), v[:, j])
            else:  # reference: the block's first leaf
                out[:, j] = logaddexp(out[:, j - 1], v[:, j] - self._shift(c2[:, j] - c2[:, 0]))
        return out

    def _merge(self, kind: str, x1: F64, x2: F64, d: I64) -> F64:
        """Two adjacent ranges, ``x1`` before ``x2``; ``d >= 0`` the distance between their
        references (left: the last leaves; right: the first leaves)."""
        if kind == "plain":
            return logaddexp(x1, x2)
        if kind == "left":
            return logaddexp(x1 - self._shift(d), x2)
        return logaddexp(x1, x2 - self._shift(d))

    def _table(self, kind: str, item: F64, lo: I64, hi: I64, size: int) -> tuple[F64, F64]:
        """``(suf, pre)``, shape ``(levels + 1, size)``: ``suf[h, p]`` sums ``p`` to the end of
        its block of ``2^h`` items, ``pre[h, p]`` from that block's start to ``p``."""
        levels = size.bit_length() - 1
        suf = np.empty((levels + 1, size))
        pre = np.empty((levels + 1, size))
        suf[0], pre[0] = item, item
        pos = np.arange(size, dtype=np.int64)
        for h in range(1, levels + 1):
            half = 1 << (h - 1)
            left_half = (pos & half) == 0
            mid = (pos | (half - 1)) + 1  # left half: the right half's first item
            mid_l = pos & ~(half - 1)  # right half: its own first item
            lp, rp = np.flatnonzero(left_half), np.flatnonzero(~left_half)
            suf[h] = suf[h - 1]
            pre[h] = pre[h - 1]
            m = mid[lp]
            end = m + half - 1
            d = hi[end] - hi[m - 1] if kind == "left" else lo[m] - lo[lp]
            suf[h, lp] = self._merge(kind, suf[h - 1, lp], suf[h - 1, m], d)
            m = mid_l[rp]
            start = m - half
            d = hi[rp] - hi[m - 1] if kind == "left" else lo[m] - lo[start]
            pre[h, rp] = self._merge(kind, pre[h - 1, m - 1], pre[h - 1, rp], d)
        return suf, pre

    def query(self, kind: str, start: I64, stop: I64, pivot: I64 | None = None) -> F64:
        """Log range sums over ``[start, stop)`` per query (``-inf`` when empty); "left"
        multiplies each term by ``exp(-c (pivot - BC[i']))`` (all ``BC[i'] <= pivot``),
        "right" by ``exp(-c (BC[i'] - pivot))`` (all ``BC[i'] > pivot``)."""
        res = np.full(start.shape[0], -np.inf)
        b = SUM_BLOCK
        nonempty = start < stop
        same = nonempty & (start // b == (stop - 1) // b)
        self._inside(kind, res, np.flatnonzero(same), start, stop, pivot)
        q = np.flatnonzero(nonempty & ~same)
        if q.shape[0] == 0:
            return res
        s, e = start[q], stop[q] - 1
        bl, br = s // b, e // b
        bcs = self.bc
        piece1 = self._to_pivot(kind, self.suffix[kind][s], bcs, s, bl * b + b - 1, pivot, q)
        piece3 = self._to_pivot(kind, self.prefix[kind][e], bcs, br * b, e, pivot, q)
        total = logaddexp(piece1, piece3)
        # whole blocks bl + 1 .. br - 1, from the sparse table
        mq = np.flatnonzero(bl + 1 < br)
        if mq.shape[0]:
            first, last = bl[mq] + 1, br[mq] - 1
            suf, pre = self.tables[kind]
            lo, hi = self.block_lo, self.block_hi
            one = first == last
            h = np.where(one, 0, _bit_length(first ^ last))
            mid = np.where(one, first, (last >> np.maximum(h - 1, 0)) << np.maximum(h - 1, 0))
            level = np.maximum(h - 1, 0)
            sub = q[mq]
            part_e = self._to_pivot(kind, suf[level, first], (lo, hi), first,
                                    np.maximum(mid - 1, first), pivot, sub)  # fmt: skip
            part_p = self._to_pivot(kind, pre[level, last], (lo, hi), mid, last, pivot, sub)
            middle = np.where(one, part_e, logaddexp(part_e, part_p))
            # one block: suf[0, first] is the block itself (mid = first: part_p repeats it)
            total[mq] = logaddexp(total[mq], middle)
        res[q] = total
        return res

    def _to_pivot(self, kind: str, x: F64, refs: I64 | tuple[I64, I64], first: I64,
                  last: I64, pivot: I64 | None, q: I64) -> F64:  # fmt: skip
        """A range's value with its reference moved to the pivot (left: from its last leaf,
        ``pivot >= last``; right: from its first leaf, ``first > pivot``). ``refs``: the
        leaves' ``BC``, or the blocks' ``(first BC, last BC)``; ``first`` and ``last`` index
        them (gathered only for the kind that needs one)."""
        if kind == "plain":
            return x
        assert pivot is not None
        lo, hi = refs if isinstance(refs, tuple) else (refs, refs)
        if kind == "left":
            return x - self._shift(pivot[q] - hi[last])
        return x - self._shift(lo[first] - pivot[q])

    def _inside(self, kind: str, res: F64, q: I64, start: I64, stop: I64,
                pivot: I64 | None) -> None:  # fmt: skip
        """Ranges inside one block: summed leaf by leaf (at most ``SUM_BLOCK`` steps)."""
        if q.shape[0] == 0:
            return
        s, e = start[q], stop[q]
        acc = np.full(q.shape[0], -np.inf)
        for d in range(SUM_BLOCK):
            t = s + d
            live = np.flatnonzero(t < e)
            if live.shape[0] == 0:
                break
            leaf = t[live]
            term = self._to_pivot(kind, self.a[leaf], self.bc, leaf, leaf, pivot, q[live])
            acc[live] = logaddexp(acc[live], term)
        res[q] = acc


# ----------------------------------------------------------------------------- the kernel
def _kernel(x: I64, factor: float, x_cap: int) -> F64:
    """``min(T, c |x|)`` in float64: exactly ``T`` when ``|x| >= x_cap = ceil(T / c)``."""
    ax = np.abs(x)
    out: F64 = np.where(ax >= x_cap, float(JOINT_CAP), ax.astype(np.float64) * factor)
    return out


def _transition(beta: F64, bc: I64, target: int, factor: float, x_cap: int) -> F64:
    """``log sum_{i' < i} exp(beta[i'] - min(T, c |bc[i] - bc[i'] - target|))`` for every i."""
    n = bc.shape[0]
    idx = np.arange(n, dtype=np.int64)
    pivot = bc - target  # terms with bc[i'] <= pivot: x = pivot - bc[i'] >= 0
    big = np.iinfo(np.int64).max // 4
    low_cut = np.maximum(pivot - x_cap, -big)
    high_cut = np.minimum(pivot + x_cap, big)
    k1 = np.minimum(np.searchsorted(bc, low_cut, side="right"), idx)  # capped, left
    k2 = np.minimum(np.searchsorted(bc, pivot, side="right"), idx)  # uncapped, left
    k3 = np.minimum(np.searchsorted(bc, high_cut, side="left"), idx)  # uncapped, right
    trees = _BlockedSums(beta, bc, factor)
    zero = np.zeros(n, dtype=np.int64)
    parts = (
        trees.query("plain", zero, k1) - float(JOINT_CAP),
        trees.query("left", k1, k2, pivot),
        trees.query("right", k2, k3, pivot),
        trees.query("plain", k3, idx) - float(JOINT_CAP),
    )
    out: F64 = logaddexp(logaddexp(parts[0], parts[1]), logaddexp(parts[2], parts[3]))
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
    for j in range(1, m):
        beta = _beta(plan, alpha1, self_cost, loglen, j - 1)
        alpha1[j] = loglen + _transition(beta, bc, plan.gaps[j] * n, plan.factor, plan.x_cap)
        if progress is not None:
            progress(j / m)
    return alpha1, self_cost


def _repeat(plan: _Plan, alpha1: F64, self_cost: F64, loglen: F64, j: int, r: int) -> F64:
    """Float ``alpha_{j+1}(., r)`` (0-based level ``j``, ``r`` outputs in the same interval):
    ``alpha_{j-r+2}(., 1) + (r - 1) ln|I| - ln r! - sum of the r - 1 self costs``, one formula."""
    if r == 1:
        out: F64 = alpha1[j]
        return out
    const = plan.log_fact[r] + float(self_cost[j - r + 2 : j + 1].sum())
    out = alpha1[j - r + 1] + ((r - 1) * loglen - const)
    return out


def _beta(plan: _Plan, alpha1: F64, self_cost: F64, loglen: F64, j: int) -> F64:
    """``log sum_r exp(alpha_{j+1}(., r))`` in float64."""
    acc: F64 = alpha1[j].copy()
    for r in range(2, j + 2):
        acc = logaddexp(acc, _repeat(plan, alpha1, self_cost, loglen, j, r))
    return acc


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
    rows = [_repeat(plan, alpha1, self_cost, loglen, m - 1, r) - end_cost for r in range(1, m + 1)]
    pick = draw_state(np.stack(rows), source)
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
        rows = [
            _repeat(plan, alpha1, self_cost, loglen, j, rr)[:i] - cost for rr in range(1, j + 2)
        ]
        pick = draw_state(np.stack(rows), source)
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
    """
    lo, hi = check_bounds(bounds)
    levels = sorted_levels(qs)
    if len(levels) > MAX_JOINT_LEVELS:
        raise ParameterError(
            f"the joint method takes at most {MAX_JOINT_LEVELS} levels, got {len(levels)}"
        )
    eps = Fraction(check_epsilon(epsilon))
    row_eps = unit_epsilon(eps, max_rows)
    if row_eps <= 2 * joint_rounding_loss(len(levels)):
        least = float(2 * joint_rounding_loss(len(levels)) * (eps / row_eps))
        raise ParameterError(f"epsilon must exceed {least:.3g}, got {epsilon}")
    plan = _Plan(levels, row_eps)
    w = joint_resolution(resolution, lo, hi, row_eps)
    step = decimal_step(w) if w > 0 else None

    def function(values: Any) -> list[float]:
        x = np.array(values, dtype=np.float64).ravel()
        x = x[~np.isnan(x)]
        if w > 0 and x.shape[0] > 0:
            # the moves as the module reads them (log2(G) bits a row, several rows a word; the
            # same law as the word a row this reference read before): the releases stay
            # comparable
            g = joint_subpoints(row_eps)
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


def joint_accuracy_terms(qs: Sequence[Any], epsilon: Any, confidence: float) -> tuple[float, float]:
    """``(A, t)`` of the accuracy theorem, rounded up: with probability at least
    ``confidence``, the total gap error is at most ``E + A (m ln((hi - lo) / l) + t)`` rows.

    ``A = 1 / (c B)`` (rows per unit of score), ``t = ln(1 / (1 - confidence)) + 2 rho``.
    """
    levels = sorted_levels(qs)
    plan = _Plan(levels, Fraction(check_epsilon(epsilon)))
    per_nat = float_up(1 / (Fraction(plan.factor) * plan.denom))
    rho = 3 * (plan.m + 1) * JOINT_LOG_ERROR
    tail = float_up(Fraction(-math.log1p(-confidence) * (1 + 2**-40)) + 2 * rho)
    return per_nat, tail


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
    """
    lo, hi = check_bounds(bounds)
    m = len(sorted_levels(qs))
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
        f"values cut in [{lo:g}, {hi:g}] hold row counts within {rows:.4g} rows in total of "
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
    m = len(sorted_levels(qs))
    per_nat, tail = joint_accuracy_terms(qs, epsilon, confidence)
    log_ratio = math.log((hi - lo) / length) * (1 + 2**-40)
    return float(np.nextafter(per_nat * (m * log_ratio + tail) * (1 + 2**-40), np.inf))


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
    """
    lo, hi = check_bounds(bounds)
    m = len(sorted_levels(qs))
    per_nat, tail = joint_accuracy_terms(qs, epsilon, confidence)
    w = joint_resolution(resolution, lo, hi, epsilon)
    ref = _reference_length(w, lo, hi)
    rows = joint_rows_bound(qs, epsilon, confidence, (lo, hi), ref)
    halving = float(np.nextafter(per_nat * m * math.log(2) * (1 + 2**-40), np.inf))
    return [
        f"with probability at least {confidence:.0%}, the {m + 1} gaps that the values cut "
        f"(bounds included) hold row counts within E + {per_nat:.4g} * ({m} ln((hi - lo) / l) "
        f"+ {tail:.4g}) rows of their targets (q_j - q_(j-1)) n in total (n rows after "
        "clamping, each moved by less than the resolution w, values before their rounding to "
        "a multiple of 10^floor(log10(2w)), which moves each by at most half of it and a "
        "float rounding; l any length, E = the least total attained by values lying in "
        "intervals at least l long between consecutive distinct rows or bounds; joint "
        "exponential mechanism, Gillenwater, Joseph, Kulesza 2021, docs/quantiles.md)",
        f"A = {per_nat:.6g} rows per unit of score, t = ln(1 / (1 - confidence)) + 2 rho = "
        f"{tail:.6g}, hi - lo = {hi - lo:g}, m = {m}",
        f"printed at l = {ref:.6g} (the resolution w, or (hi - lo) / 10^6 without one): "
        f"{rows:.6g} rows beyond E; each halving of l adds {halving:.4g} rows",
    ]


# ----------------------------------------------------------------------------- oracles
# Oracles of the current module (dpselect.mechanisms.quantile_joint), kept here since only
# tests read them: the segment trees its blocked range sums are compared with, and one repeat
# row computed alone (its `_repeats` computes all of them in one broadcast operation: the
# same floats). Unlike the frozen copy above, these follow the module's current formulas.


class SegmentTrees:
    """Three segment trees over ``A[i']`` (log space) for range sums without subtraction.

    The reference for :class:`dpselect.mechanisms.quantile_joint_sums.BlockedSums`, which the
    dynamic program uses (its tests compare the two): ``O(log n)`` NumPy steps a query where the
    blocks take ``O(1)``.

    ``plain[k]``: log of the sum of ``exp(A)`` over node ``k``'s leaves. ``left[k]``: the same
    with each term times ``exp(-c (BC[hi_k] - BC[i']))`` (reference: the node's last leaf);
    ``right[k]``: times ``exp(-c (BC[i'] - BC[lo_k]))`` (reference: its first leaf).
    """

    def __init__(self, a: F64, bc: I64, factor: float) -> None:
        n = a.shape[0]
        size = 1
        while size < n:
            size *= 2
        self.size, self.factor = size, factor
        bc_ext = np.concatenate((bc, np.full(size - n, bc[-1], dtype=np.int64)))
        plain = np.full(2 * size, -np.inf)
        plain[size : size + n] = a
        left, right = plain.copy(), plain.copy()
        node_lo = np.zeros(2 * size, dtype=np.int64)
        node_hi = np.zeros(2 * size, dtype=np.int64)
        node_lo[size:] = bc_ext
        node_hi[size:] = bc_ext
        width = size
        start = size
        while start > 1:
            start //= 2
            width //= 2
            k = np.arange(start, 2 * start)
            lc, rc = 2 * k, 2 * k + 1
            node_lo[k] = node_lo[lc]
            node_hi[k] = node_hi[rc]
            plain[k] = qjs.logaddexp(plain[lc], plain[rc])
            with np.errstate(invalid="ignore"):
                d_left = (node_hi[rc] - node_hi[lc]).astype(np.float64) * factor
                d_right = (node_lo[rc] - node_lo[lc]).astype(np.float64) * factor
                left[k] = qjs.logaddexp(left[lc] - d_left, left[rc])
                right[k] = qjs.logaddexp(right[lc], right[rc] - d_right)
        self.plain, self.left, self.right = plain, left, right
        self.node_lo, self.node_hi = node_lo, node_hi

    def query(self, kind: str, start: I64, stop: I64, pivot: I64 | None = None) -> F64:
        """Log range sums over ``[start, stop)`` per query (``-inf`` when empty).

        ``kind`` "plain"; "left": terms times ``exp(-c (pivot - BC[i']))`` (all ``BC[i'] <=
        pivot``); "right": times ``exp(-c (BC[i'] - pivot))`` (all ``BC[i'] > pivot``).
        """
        tree = {"plain": self.plain, "left": self.left, "right": self.right}[kind]
        res = np.full(start.shape[0], -np.inf)
        lo = start + self.size
        hi = stop + self.size
        while True:
            active = lo < hi
            if not bool(active.any()):
                return res
            for side in (0, 1):
                if side == 0:
                    pick = np.flatnonzero(active & ((lo & 1) == 1))
                    idx = lo[pick]
                    lo[pick] += 1
                else:
                    pick = np.flatnonzero(active & ((hi & 1) == 1))
                    hi[pick] -= 1
                    idx = hi[pick]
                if pick.shape[0] == 0:
                    continue
                term = tree[idx]
                if kind == "left":
                    assert pivot is not None
                    term = term - (pivot[pick] - self.node_hi[idx]).astype(np.float64) * self.factor
                elif kind == "right":
                    assert pivot is not None
                    term = term - (self.node_lo[idx] - pivot[pick]).astype(np.float64) * self.factor
                res[pick] = qjs.logaddexp(res[pick], term)
            lo >>= 1
            hi >>= 1

    def query_many(self, kinds: I64, start: I64, stop: I64, pivot: I64) -> F64:
        """:meth:`query` for queries of several kinds (indices into ``qjs._KINDS``), by kind."""
        res = np.full(start.shape[0], -np.inf)
        for k, kind in enumerate(qjs._KINDS):
            q = np.flatnonzero(kinds == k)
            res[q] = self.query(kind, start[q], stop[q], None if k == 0 else pivot[q])
        return res


def repeat_row(
    plan: qj._Plan,
    alpha1: F64,
    self_cost: F64,
    loglen: F64,
    j: int,
    r: int,
    stop: int | None = None,
) -> F64:
    """Float ``alpha_{j+1}(., r)`` (0-based level ``j``, ``r`` outputs in the same interval):
    ``alpha_{j-r+2}(., 1) + (r - 1) ln|I| - ln r! - sum of the r - 1 self costs``, one formula
    (``stop``: the intervals before it only, each value the same float)."""
    if r == 1:
        out: F64 = alpha1[j, :stop]
        return out
    const = qj._repeat_const(plan, self_cost, j, r)
    out = alpha1[j - r + 1, :stop] + ((r - 1) * loglen[:stop] - const)
    return out
