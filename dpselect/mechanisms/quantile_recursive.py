"""Many quantiles at once: the recursive algorithm of Kaplan, Schnapp and Stemmer (2022).

For sorted levels ``q_1 < ... < q_m`` on ``[lo, hi]``: release the middle level ``q_mid`` with
the continuous mechanism (:mod:`.quantile_continuous`) at ``eps / depth``; rows ``<= v_mid``
go to the left part (bounds ``[lo, v_mid]``, levels ``q_i / q_mid`` relative to it), the others
to the right part (bounds ``[v_mid, hi]``, levels ``(q_i - q_mid) / (1 - q_mid)``), and recurse.
A part narrower than ``4 w`` releases its midpoint for all its levels (no data read).

**Privacy** (KSS 2022, Theorem 3.1's argument; docs/quantiles.md): the recursion tree has
``depth = ceil(log2(m + 1))`` rounds. Within a round the parts are disjoint sets of rows (a
partition fixed by the values released in earlier rounds), so a row added or removed changes
the input of exactly one mechanism per round; each is ``eps / depth``-DP, so a round is
``eps / depth``-DP given the earlier rounds (parallel composition), and the rounds compose
adaptively to ``eps``. Map: ``d_in * eps``.

**Accuracy** (docs/quantiles.md, proved there): with probability at least ``1 - beta`` (all
values at once), each ``v_j`` has at most ``q_j n + A_j + B_j`` rows below ``v_j - 2 w`` and at
most ``(1 - q_j) n + A_j + B_j`` above ``v_j + 2 w``; ``A_j`` sums the continuous accuracy
``margin`` (confidence ``1 - beta / m``, the full width ``hi - lo``) along ``v_j``'s path in the
tree, and ``B_j`` counts rows within ``2 w`` of the other released values (0 for data without
ties or clusters).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from ..core.arithmetic import float_up, printed_up
from ..core.domains import kept_numbers
from ..core.errors import ParameterError
from ..core.measurement import Measurement
from ..sampling.source import RandomSource
from .quantile_continuous import (
    check_bounds,
    check_resolution,
    continuous_accuracy,
    make_continuous_quantile,
)
from .quantile_score import MAX_DENOMINATOR, pure_dp_on_rows, quantile_fraction, unit_epsilon
from .validate import check_epsilon

__all__ = [
    "make_recursive_quantiles",
    "recursive_accuracy",
    "recursive_alphas",
    "recursive_depth",
    "recursive_tree",
    "sorted_levels",
]

F64 = npt.NDArray[np.float64]


def recursive_depth(m: int) -> int:
    """Rounds of the recursion for ``m`` levels: ``ceil(log2(m + 1))``.

    Parameters
    ----------
    m : int
        The number of levels (at least 1).

    Returns
    -------
    int
        The number of rounds (at least 1): each value is released at ``epsilon / depth``.
    """
    return max(1, math.ceil(math.log2(m + 1)))


def recursive_tree(
    levels: Sequence[Fraction],
) -> list[tuple[int, int | None, int | None, Fraction]]:
    """``(j, left_anc, right_anc, relative level)`` per level in the order released.

    ``left_anc``/``right_anc`` are the indices of the levels bounding ``j``'s part (``None``:
    the bound ``lo`` / ``hi``); the relative level is ``(q_j - Q_left) / (Q_right - Q_left)``.

    Parameters
    ----------
    levels : sequence of Fraction
        The levels, strictly increasing (:func:`sorted_levels`).

    Returns
    -------
    list of tuple
        One ``(j, left_anc, right_anc, relative level)`` per level, in release order (breadth
        first, each part's middle level first); ``j`` indexes ``levels``.
    """
    out: list[tuple[int, int | None, int | None, Fraction]] = []
    stack: list[tuple[int, int, int | None, int | None]] = [(0, len(levels), None, None)]
    while stack:
        start, stop, la, ra = stack.pop(0)
        if start >= stop:
            continue
        mid = (start + stop) // 2
        q_lo = Fraction(0) if la is None else levels[la]
        q_hi = Fraction(1) if ra is None else levels[ra]
        rel = (levels[mid] - q_lo) / (q_hi - q_lo)
        out.append((mid, la, ra, rel))
        stack.append((start, mid, la, mid))
        stack.append((mid + 1, stop, mid, ra))
    return out


def sorted_levels(qs: Sequence[Any]) -> list[Fraction]:
    """The levels ``qs`` as exact fractions, refused unless strictly increasing (the recursive,
    tree and joint methods split at them in order).

    Parameters
    ----------
    qs : sequence of float or Fraction
        The quantile levels in ``[0, 1]``.

    Returns
    -------
    list of Fraction
        Each level as ``a / b`` (:func:`~.quantile_score.quantile_fraction`), in the order given.
    """
    levels = [quantile_fraction(q) for q in qs]
    if any(b <= a for a, b in itertools.pairwise(levels)):
        given = [float(q) for q in levels]
        raise ParameterError(
            f"q must be strictly increasing (each level once, in order), got {given}: the "
            "methods that answer several levels together (recursive, tree, joint; 'auto' picks "
            "one of them) split at the levels in order; sort them, or choose the 'split' method, "
            "which takes them in any order"
        )
    return levels


_sorted_levels = sorted_levels  # the former name (tests/recipes/test_quantiles_joint.py)


def make_recursive_quantiles(
    bounds: tuple[float, float],
    qs: Sequence[Any],
    epsilon: Any,
    *,
    resolution: Any = None,
    source: RandomSource | None = None,
    progress: Callable[[float], None] | None = None,
    max_rows: int = 1,
) -> Measurement:
    """The recursive quantiles mechanism (module docstring). Output: the ``m`` values, in the
    order of ``qs`` (which must increase). Map ``d_in * eps``. ``progress(fraction)`` is called
    after each value is released (public: the tree's shape depends on ``m`` only).
    ``max_rows = r``: each privacy unit holds at most ``r`` input rows; every round runs at
    ``eps / (r depth)`` per row, so ``d_in`` counts units (:mod:`.quantile_score`, "Rows per
    unit": the whole mechanism is ``eps / r``-DP per row, hence ``eps``-DP per unit).

    Parameters
    ----------
    bounds : pair of float
        The public bounds ``(lo, hi)``: the rows are clamped to them.
    qs : sequence of float or Fraction
        The levels in ``[0, 1]``, strictly increasing; every relative level must keep a
        denominator of at most ``10^6``.
    epsilon : float or Fraction
        The total privacy loss for one privacy unit added or removed (``d_in = 1``).
    resolution : float, optional
        The public resolution ``w`` of every continuous draw, in the data's units (default
        ``(hi - lo) / 10^6``).
    source : RandomSource, optional
        The randomness (``None``: the private default; a seeded source for tests only).
    progress : callable, optional
        ``progress(fraction)`` after each value released.
    max_rows : int, default 1
        ``r``: the most input rows one privacy unit holds.

    Returns
    -------
    Measurement
        From a 1-D array of numbers (NaN dropped) to the ``m`` values, in the order of ``qs``;
        map ``d_in * epsilon``.
    """
    lo, hi = check_bounds(bounds)
    levels = sorted_levels(qs)
    eps = Fraction(check_epsilon(epsilon))
    w = check_resolution(resolution, lo, hi)
    each = unit_epsilon(eps, max_rows) / recursive_depth(len(levels))
    tree = _checked_tree(levels)

    def function(values: Any) -> list[float]:
        x = np.array(values, dtype=np.float64).ravel()
        x = kept_numbers(x)
        np.clip(x, lo, hi, out=x)
        x.sort()  # once: every part below is a slice of it, in order (clamping keeps order)
        out: list[float | None] = [None] * len(levels)
        parts: dict[int, F64] = {tree[0][0]: x}  # rows of the part headed by level j
        del x  # owned by the parts from here on: each is clamped in place
        for done, (j, la, ra, rel) in enumerate(tree, start=1):
            p_lo, p_hi = (lo if la is None else out[la]), (hi if ra is None else out[ra])
            assert p_lo is not None and p_hi is not None
            rows = parts.pop(j)
            v = _part_value(rows, p_lo, p_hi, rel, each, w, source)
            out[j] = v
            _hand_down(tree, out, parts, (j, la, ra), rows, v)
            if progress is not None:
                progress(done / len(tree))
        return [float(v) for v in out]  # type: ignore[arg-type]

    return pure_dp_on_rows(function, eps)


def _checked_tree(levels: list[Fraction]) -> list[tuple[int, int | None, int | None, Fraction]]:
    """:func:`recursive_tree` of the levels, refused when a relative level's denominator
    exceeds ``MAX_DENOMINATOR``."""
    tree = recursive_tree(levels)
    for _, _, _, rel in tree:
        if rel.denominator > MAX_DENOMINATOR:
            raise ParameterError(
                f"the levels give a relative level {rel} with a denominator above "
                f"{MAX_DENOMINATOR}: round the levels (e.g. to 1/1000)"
            )
    return tree


def _part_value(
    rows: F64,
    p_lo: float,
    p_hi: float,
    rel: Fraction,
    each: Fraction,
    w: float,
    source: RandomSource | None,
) -> float:
    """The value released for one part ``[p_lo, p_hi]`` (its sorted rows ``rows``): its
    midpoint when narrower than ``4 w``, else the continuous mechanism at level ``rel``."""
    if Fraction(p_hi) - Fraction(p_lo) < 4 * Fraction(w):
        return float(p_lo + (p_hi - p_lo) / 2)  # no data read: every row is within 2w
    mech = make_continuous_quantile(
        (p_lo, p_hi), rel, each, resolution=w, source=source, overwrite_input=True,
        presorted=True,
    )  # fmt: skip
    return float(mech(rows))


def _hand_down(
    tree: list[tuple[int, int | None, int | None, Fraction]],
    out: list[float | None],
    parts: dict[int, F64],
    node: tuple[int, int | None, int | None],
    rows: F64,
    v: float,
) -> None:
    """Hand the rows of level ``j``'s part (``node = (j, la, ra)``, released at ``v``) to
    its children still to release: rows ``<= v`` to the left one, the others to the right."""
    j, la, ra = node
    cut = int(np.searchsorted(rows, v, side="right"))  # rows <= v, then rows > v
    left, right = rows[:cut], rows[cut:]
    for child, c_la, c_ra, _ in tree:  # hand j's children their rows
        if out[child] is None and c_ra == j and c_la == la:
            parts[child] = left
        elif out[child] is None and c_la == j and c_ra == ra:
            parts[child] = right


def recursive_alphas(
    bounds: tuple[float, float],
    qs: Sequence[Any],
    epsilon: Any,
    confidence: float,
    resolution: Any = None,
) -> list[float]:
    """``A_j`` for every level: the sum of the node bounds on its path (module docstring).

    Parameters
    ----------
    bounds : pair of float
        The public bounds ``(lo, hi)``.
    qs : sequence of float or Fraction
        The levels, strictly increasing.
    epsilon : float or Fraction
        The row-level epsilon of the whole mechanism (``epsilon / max_rows``); each node runs at
        ``epsilon / depth``.
    confidence : float
        The probability ``1 - beta`` with which every value's statement holds at once (each node
        at ``1 - beta / m``).
    resolution : float, optional
        The resolution ``w`` (default ``(hi - lo) / 10^6``).

    Returns
    -------
    list of float
        ``A_j`` in rows (rounded up), one per level in the order of ``qs``.
    """
    lo, hi = check_bounds(bounds)
    levels = sorted_levels(qs)
    m = len(levels)
    each = Fraction(check_epsilon(epsilon)) / recursive_depth(m)
    node_conf = 1 - (1 - confidence) / m
    margin: dict[int, float] = {}
    total: dict[int, float] = {}
    for j, la, ra, rel in recursive_tree(levels):
        margin[j] = continuous_accuracy((lo, hi), rel, each, node_conf, resolution).margin
        prev = max(total[a] for a in (la, ra) if a is not None) if (la, ra) != (None, None) else 0.0
        total[j] = float_up(Fraction(prev) + Fraction(margin[j]))
    return [total[j] for j in range(m)]


def recursive_accuracy(
    bounds: tuple[float, float],
    qs: Sequence[Any],
    epsilon: Any,
    confidence: float,
    resolution: Any = None,
) -> list[str]:
    """The accuracy lines printed for the recursive method.

    Parameters
    ----------
    bounds : pair of float
        The public bounds ``(lo, hi)``.
    qs : sequence of float or Fraction
        The levels, strictly increasing.
    epsilon : float or Fraction
        The row-level epsilon of the whole mechanism (``epsilon / max_rows``).
    confidence : float
        The probability with which all the statements hold at once.
    resolution : float, optional
        The resolution ``w`` (default ``(hi - lo) / 10^6``).

    Returns
    -------
    list of str
        A heading line, then one line ``q = ...: A = ...`` per level (:func:`recursive_alphas`).
    """
    lo, hi = check_bounds(bounds)
    w = check_resolution(resolution, lo, hi)
    alphas = recursive_alphas((lo, hi), qs, epsilon, confidence, w)
    head = (
        f"accuracy: with probability at least {confidence:.0%} for all values at once, the "
        f"value for q has at most q n + A + B rows below it - 2w and at most (1 - q) n + A + B "
        f"above it + 2w (n rows after clamping, resolution w = {printed_up(w, 3)}, B = "
        "rows within 2w "
        "of the other values released; Kaplan, Schnapp, Stemmer 2022, docs/quantiles.md):"
    )
    lines = [head]
    for q, a in zip(qs, alphas, strict=True):
        lines.append(f"  q = {float(q):g}: A = {printed_up(a)}")
    return lines
