"""The rows of the joint quantile mechanism (:mod:`.quantile_joint`) as intervals: the
lattice and the random moves of the tie handling.

:func:`joint_intervals` cuts ``[lo, hi]`` between the distinct clamped rows;
:func:`joint_moved_intervals` does so after moving each row by its own random amount in
``(-w, w)`` on the lattice ``lo + i w / G`` (``G``: :func:`joint_subpoints`), the moves read
from the source by :func:`joint_move_words`. A random map of each row on its own: datasets
that differ by one row still differ by one row (the module docstring of
:mod:`.quantile_joint`, "Ties").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from ..core.domains import kept_numbers
from ..core.halves import in_halves
from ..sampling.source import RandomSource, resolve_source

__all__ = [
    "JOINT_FINE_EPSILON",
    "JOINT_FINE_SUBPOINTS",
    "JOINT_SUBPOINTS",
    "MOVES_PER_WORD",
    "joint_intervals",
    "joint_move_words",
    "joint_moved_intervals",
    "joint_subpoints",
]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


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
    unchanged (:mod:`.quantile_joint`). Each row moves by less than ``w``, a block of tied rows is
    spread over ``G`` points on both sides of its value, so a quantile can fall inside it.

    The words go to the rows in the order of their nearest lattice points, not in the order
    the rows are read: the ``j``-th word moves the row of the ``j``-th smallest point. Each
    row still gets its own uniform ``t``, independent of the others (the law is unchanged),
    and with a seeded source the result does not depend on the rows' order (the same table in
    another row order or file layout gives the same release).

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
    lattice = _Lattice(lo, hi, d, g, top)
    if top + 2 * g <= max(1 << 22, 4 * rows):
        used, weights = _counted_points(values, moves, lattice)
    else:
        nearest_rows = np.sort(_nearest_points(values, lo, hi, d, np.empty(rows, np.int64)))
        used, weights = np.unique(_moved_points(nearest_rows, moves, g), return_counts=True)
    edges, counts = _point_intervals(used, weights, lattice)
    return edges, counts, rows


@dataclass(frozen=True)
class _Lattice:
    """The lattice ``lo + i d`` of the moves (public): the bounds, the step ``d = w / G``, ``G``
    and ``top``, the last point at most ``hi``."""

    lo: float
    hi: float
    d: float
    g: int
    top: int


def _counted_points(
    values: F64, moves: npt.NDArray[np.uint64], lattice: _Lattice
) -> tuple[I64, I64]:
    """``(used, weights)``: the occupied moved lattice points, increasing, and the rows on each,
    counted per point in two passes (nearest points, then the moved points of the rows in
    that order) without a sort of the rows."""
    lo, hi, d, g = lattice.lo, lattice.hi, lattice.d, lattice.g
    rows = int(values.shape[0])
    # lattice points chunk by chunk (the temporaries of a chunk stay in the cache), counted
    # a batch of chunks at a time: at least as many rows as points, so that adding a
    # batch's counts costs no more than finding them (the same counts)
    size = lattice.top + 2 * g + 1  # i <= top + g (:mod:`.quantile_joint`)
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
    return used, per_point[used]


def _point_intervals(used: I64, weights: I64, lattice: _Lattice) -> tuple[F64, I64]:
    """``(edges, C)`` of :func:`joint_moved_intervals` from the moved lattice points ``used``
    (``i`` of ``lo + i d``) and the rows on each: reflected at ``hi``, clamped, equal points
    merged."""
    lo, hi = lattice.lo, lattice.hi
    points = lo + used * lattice.d
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
    return edges, counts
