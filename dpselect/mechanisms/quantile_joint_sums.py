"""Log-space range sums for the joint quantile mechanism's dynamic program
(:mod:`.quantile_joint`).

:func:`logaddexp` and :func:`log_sum_rows` (sums of positive terms in log space, whose float
error docs/quantiles.md bounds) and :class:`BlockedSums`: range sums of ``exp(A[i'])``, plain
or times the kernel's exponential factor, from a disjoint sparse table built by doubling inside
blocks of at most :data:`SUM_BLOCK` intervals and over the blocks, at most four parts a range
and no subtraction (relative accuracy).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..core.halves import in_halves

__all__ = ["HALVES_INTERVALS", "SUM_BLOCK", "BlockedSums", "log_sum_rows", "logaddexp"]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
B8 = npt.NDArray[np.bool_]


#: :func:`logaddexp` raises ``-|a - b|`` to this: ``exp`` of it is below ``2^-54``, so ``1 +
#: exp`` is exactly 1 either way (no result changes), and NumPy's ``exp`` stays off its slow
#: path for underflows.
_LAE_FLOOR = -40.0
#: :func:`log_sum_rows` raises each ``x - M`` to this: a term of ``e^-700`` instead of a
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
    """The shifts of :meth:`BlockedSums._level_shifts` for the rows ``rows`` only."""
    return [(own[rows], other[rows]) for own, other in shifts]


#: The largest block of :class:`BlockedSums` (a power of two; :func:`_leaf_levels` picks the
#: block of each input, at most this).
SUM_BLOCK = 64
#: The kinds of range sums, by their index in :meth:`BlockedSums.query_many`.
_KINDS = ("plain", "left", "right")
#: The six rows of :class:`BlockedSums`' arrays: the three kinds on the leaves in order, then
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


def log_sum_rows(x: F64) -> F64:
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


class BlockedSums:
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
    shift, summed by :func:`log_sum_rows`. Every value passes at most ``H + log2(blocks) <=
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
        self._part_shifts(sign, (ref0, ref1, ref2, ref3), present, pivot, extra, out)
        return index, shift

    def _part_shifts(
        self,
        sign: int,
        refs: tuple[I64, I64, I64, I64],
        present: tuple[B8, B8, B8, B8],
        pivot: I64,
        extra: float,
        out: tuple[I64, F64],
    ) -> None:
        """Each part's shift to the pivots, from its reference leaf (rows 0 and 3) or block
        (rows 1 and 2), plus ``extra``; the parts not ``present`` set to the ``-inf`` cell,
        shift ``+inf`` (:meth:`parts`)."""
        index, shift = out
        for row, ref in enumerate(refs):
            if sign:
                blocks = self.block_hi if sign > 0 else self.block_lo
                at = (self.bc if row in (0, 3) else blocks)[ref]
                d = self._shift(sign * (pivot - at))
                if extra:
                    d += extra
                shift[row] = d
            else:
                shift[row] = extra
            missing = ~present[row]
            index[row][missing] = self.empty
            shift[row][missing] = np.inf

    def sums(self, index: I64, shift: F64) -> F64:
        """The sums of the parts ``(index, shift)`` of :meth:`parts` (stacked in any number of
        rows: all the parts of one result in one column), from the filled array."""
        terms = self.values.take(index)
        terms -= shift
        return log_sum_rows(terms)

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
