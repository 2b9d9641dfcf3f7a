"""The public power-of-two bins of automatic clamping bounds, and what is read from them.

:func:`~dpselect.recipes.bounds.choose_bounds` chooses bounds among the edges of the bins
``[2^j, 2^(j+1))``, their mirror images ``[-2^(j+1), -2^j)`` (``j = -8..40``) and
``[-2^-8, 2^-8)`` (:func:`~dpselect.planning.value_bounds.bound_bins`, 99 bins, public and
planned with the histogram's threshold in :mod:`dpselect.planning.value_bounds`). This
module holds the bins' scores for a level (the ``"levels"`` method: :func:`bin_score`,
:func:`bin_scores`, and the same integers from an engine's edge counts), the noisy histogram
of the bins (the ``"histogram"`` method: the Laplace mechanism, Dwork, McSherry, Nissim and
Smith 2006, made exact by :func:`~dpselect.mechanisms.laplace.make_laplace`), and the bounds
read from the noisy counts (post-processing). ``docs/private_selection.md`` has the maps and proofs.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from ..core.domains import atom_domain, vector_domain
from ..core.metrics import L1Distance
from ..data.engine import Engine
from ..data.query import Query, UnitRule
from ..data.values import kept_numbers
from ..mechanisms.laplace import make_laplace
from ..sampling.source import RandomSource

__all__ = [
    "bin_score",
    "bin_scores",
    "histogram_bounds",
]


def bin_score(level: Fraction, n: int, below: int, at_least_high: int) -> int:
    """The score of bin ``[l, h)`` for the level ``A / B``: ``-max(0, B #{x < l} - A n,
    A n - B #{x < h})``, minus ``B`` times the distance from the target rank ``A n / B`` to the
    bin's ranks ``[#{x < l}, #{x < h}]`` (0 for a bin that holds the level's quantile).

    ``below = #{x < l}``, ``at_least_high = #{x >= h}``. A row added or removed moves each of
    the two terms by at most ``max(A, B - A)`` (by ``B - A`` or ``-A`` as it lies below ``l``,
    between the edges or above ``h``), so the score, their maximum with 0, moves by at most
    ``max(A, B - A)``: the exponential mechanism's sensitivity (:mod:`dpselect.recipes.bounds`).
    Empty bins below all the data score ``-A n``, above it ``-(B - A) n``.

    Parameters
    ----------
    level : Fraction
        The level ``A / B``.
    n : int
        The number of rows.
    below, at_least_high : int
        ``#{x < l}`` and ``#{x >= h}``.

    Returns
    -------
    int
        The bin's score, at most 0.
    """
    a, b = level.numerator, level.denominator
    below_high = n - at_least_high
    return -max(0, b * below - a * n, a * n - b * below_high)


def bin_scores(values: Any, bins: list[tuple[float, float]], level: Fraction) -> list[int]:
    """:func:`bin_score` of each bin ``[l, h)`` on the numbers in ``values`` (exact integers).

    Parameters
    ----------
    values : array_like of float
        The data (the private rows; NaN dropped).
    bins : list of (float, float)
        The bins ``[l, h)`` (:func:`~dpselect.planning.value_bounds.bound_bins`).
    level : Fraction
        The level ``A / B``.

    Returns
    -------
    list of int
        The score (``<= 0``) of each bin, in the order of ``bins``.
    """
    data = np.sort(np.asarray(values, dtype=np.float64))
    data = kept_numbers(data)
    n = data.shape[0]
    lows = np.searchsorted(data, [lo for lo, _ in bins], side="left")
    highs = n - np.searchsorted(data, [hi for _, hi in bins], side="left")
    return [bin_score(level, n, int(lt), int(ge)) for lt, ge in zip(lows, highs, strict=True)]


def _edge_counts(
    table: Engine, column: str, bins: list[tuple[float, float]], unit: dict[str, Any]
) -> tuple[int, list[int], list[int]]:
    """``n`` and the counts ``#{x >= e}`` at the bins' lower and upper edges, from the engine
    (:meth:`~dpselect.data.engine.Engine.buyers_at`, so no engine collects the column).
    ``unit``: ``privacy_unit``, ``max_rows`` and ``salt`` (the kept rows), or empty."""
    edges = [-math.inf, *(lo for lo, _ in bins), *(hi for _, hi in bins)]
    rule = UnitRule(unit.get("privacy_unit"), rows_per_unit=unit.get("max_rows", 1),
                    salt=unit.get("salt", 0))  # fmt: skip
    counts = [int(c) for c in table.buyers_at(Query(column, rule), edges)]
    k = len(bins)
    return counts[0], counts[1 : 1 + k], counts[1 + k :]


def _engine_bin_scores(
    table: Engine,
    column: str,
    bins: list[tuple[float, float]],
    levels: list[Fraction],
    unit: dict[str, Any],
) -> list[list[int]]:
    """:func:`bin_scores` of each level from the engine's edge counts (:func:`_edge_counts`):
    the same integers as :func:`bin_scores` on the values (``#{x < l} = n - #{x >= l}``)."""
    n, at_least_low, at_least_high = _edge_counts(table, column, bins, unit)
    return [
        [bin_score(level, n, n - ge_l, ge_h)
         for ge_l, ge_h in zip(at_least_low, at_least_high, strict=True)]
        for level in levels
    ]  # fmt: skip


def _engine_bin_counts(
    table: Engine, column: str, bins: list[tuple[float, float]], unit: dict[str, Any]
) -> list[int]:
    """Each bin's row count ``#{x >= l} - #{x >= h}`` (:func:`_edge_counts`)."""
    _, at_least_low, at_least_high = _edge_counts(table, column, bins, unit)
    return [lo - hi for lo, hi in zip(at_least_low, at_least_high, strict=True)]


def _noisy_bins(n_bins: int, eps: Fraction, source: RandomSource | None, max_rows: int) -> Any:
    """The Laplace mechanism on the bins' row counts: one unit adds or removes at most
    ``max_rows`` rows, each in one bin, so the counts move by at most ``max_rows`` in L1 and
    the discrete Laplace scale ``max_rows / eps`` makes the map ``eps`` at that distance
    (:func:`~dpselect.mechanisms.laplace.make_laplace`; exact integer noise)."""
    domain = vector_domain(atom_domain(int), size=n_bins)
    return make_laplace(domain, L1Distance(), Fraction(max_rows) / eps, source=source)


def histogram_bounds(
    noisy: Any, bins: list[tuple[float, float]], levels: list[Fraction], threshold: int
) -> tuple[float, float, str]:
    """The bounds from the bins' noisy counts (post-processing): the bins whose noisy count
    reaches ``threshold`` are kept, the others count 0; the low (high) bound is the lower
    (upper) edge of the kept bin where their cumulative count first reaches the low (high)
    level of their total. Both are kept bins. When no bin reaches the threshold, the fullest
    noisy bin gives both bounds, with a note saying so (a function of the noisy counts).

    The bounds then always contain 0 (a public rule). Near 0 the bins are narrow (``[1, 2)``,
    ``[1/2, 1)``, ...), so rows spread over them may leave every one below the threshold
    while their total is large (arrival delays: the median's bin ``[-8, -4)`` was not kept on
    2,500 rows); with 0 inside, those rows are inside the bounds. It widens the bounds by at
    most a factor 2 (``[2^j, 2^(j+1))`` becomes ``[0, 2^(j+1))``), never by orders of
    magnitude.

    Parameters
    ----------
    noisy : sequence of int
        The bins' noisy row counts.
    bins : list of (float, float)
        The bins (:func:`~dpselect.planning.value_bounds.bound_bins`).
    levels : list of Fraction
        The low and high levels.
    threshold : int
        The least noisy count a bin is kept with
        (:func:`~dpselect.planning.value_bounds.empty_bin_threshold`).

    Returns
    -------
    (float, float, str)
        The lower and upper bounds and a note (empty unless no bin reached the threshold).
    """
    counts = [int(c) for c in noisy]
    kept = [c if c >= threshold else 0 for c in counts]
    total = sum(kept)
    if total == 0:
        j = max(range(len(counts)), key=lambda i: (counts[i], -i))
        note = (
            f"no bin's noisy row count reached the threshold {threshold}: the bounds are the "
            "fullest noisy bin and may be far from the data (too few rows for automatic "
            "bounds at this epsilon; give bounds)"
        )
        return min(bins[j][0], 0.0), max(bins[j][1], 0.0), note
    low = high = None
    cum = 0
    for j, c in enumerate(kept):
        cum += c
        if low is None and cum >= levels[0] * total:
            low = j
        if high is None and cum >= levels[1] * total:
            high = j
    assert low is not None and high is not None
    return min(bins[low][0], 0.0), max(bins[high][1], 0.0), ""
