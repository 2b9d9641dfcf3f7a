"""The profile of a count vector for the joint exponential mechanism for top-k.

The distinct counts (all, or those above a floor), how many candidates hold each, and the
blocks of top-``k`` positions sharing one count: from them the number ``N(E)`` of sequences
with error at most ``E`` and the level counts ``m(E)`` (step 1 of the module docstring of
:mod:`dpselect.mechanisms.joint_top_k`). Also the counts' normalisation (minus their minimum,
as int64 or Python ints).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..core.errors import DomainError

#: Counts whose range is below this are handled as int64 (else as Python ints).
_INT64_RANGE = 1 << 62


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
