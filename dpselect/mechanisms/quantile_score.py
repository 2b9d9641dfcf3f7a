"""The tie-aware quantile score and its sensitivity (docs/quantiles.md, "The score").

A quantile level ``q`` is read as the fraction ``a / b`` nearest to it with ``b <= 10^6``
(0.5 is 1/2, 0.9 is 9/10; the fraction used is reported). For a point ``c`` and data ``x``
(``n`` rows) write ``L(c) = #{i : x_i < c}`` and ``G(c) = #{i : x_i > c}``. The **rank
excess** of ``c`` is the integer

    s(x, c) = max(0, b L(c) - a n, b G(c) - (b - a) n),

``b`` times ``max(0, L - q n, G - (1 - q) n)``: 0 exactly when ``c`` is a ``q``-quantile in
the classical sense (at most ``q n`` rows below it and at most ``(1 - q) n`` above, however
many rows equal ``c``), and otherwise how many rows too many lie on one side. The mechanisms
maximise ``-s``.

**Rows per unit** (``max_rows = r``, docs/contribution_bounding.md "Rows per unit"): when
each privacy unit keeps at most ``r`` rows, adding or removing one unit adds or removes at
most ``r`` rows and moves every rank count ``L``, ``G``, ``n`` by at most ``r``, so the rank
excess moves by at most ``r Delta``. Every quantile mechanism takes ``max_rows``: it runs
its row-level construction at ``eps / r`` (:func:`unit_epsilon`), which is ``(eps / r)``-DP
under one row added or removed, hence ``eps``-DP under ``r`` rows added or removed (group
privacy of pure DP: Dwork and Roth 2014, Theorem 2.2; for the exponential mechanisms this is
exactly the calibration to the sensitivity ``r Delta``, seed 002). The map stays ``d_in *
eps`` with ``d_in`` counting units (at ``r = 1``: rows).

**Sensitivity** ``Delta = max(a, b - a)`` under adding or removing one row: adding a row moves
``n`` by one and at most one of ``L``, ``G`` by one, so ``b L - a n`` moves by ``b - a`` or
``-a`` and ``b G - (b - a) n`` by ``a`` or ``-(b - a)``; the maximum with 0 is 1-Lipschitz in
the largest of its arguments' moves. The score is not monotonic (``n`` enters with both
signs), so the exponential mechanism uses ``exp(eps (-s) / (2 Delta))`` (seed 002,
Theorem 3.10's general form; McSherry and Talwar 2007).

The previous score ``-|(b - a) L - a G|`` (OpenDP's) gives a value held by many rows a score
near ``-(#ties) / 2`` when the tied block straddles ``q n`` asymmetrically; the rank excess
gives it 0.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from ..core.arithmetic import float_up, plain_number
from ..core.domains import AnyDomain, kept_numbers
from ..core.errors import ParameterError
from ..core.measurement import Measurement
from ..core.measures import MaxDivergence
from ..core.metrics import SymmetricDistance
from .validate import check_max_rows

__all__ = [
    "MAX_DENOMINATOR",
    "candidate_rank_counts",
    "check_max_rows",
    "pure_dp_on_rows",
    "quantile_fraction",
    "rank_excess",
    "rank_excess_of_candidates",
    "score_sensitivity",
    "unit_epsilon",
]

I64 = npt.NDArray[np.int64]

#: The largest denominator of the fraction a / b standing for a quantile level q.
MAX_DENOMINATOR = 10**6


def quantile_fraction(q: Any) -> Fraction:
    """The fraction ``a / b`` standing for the level ``q`` (nearest with ``b <= 10^6``).

    Parameters
    ----------
    q : int, float or Fraction
        The quantile level, in ``[0, 1]`` (0.5: the median); NumPy scalars are read as numbers.

    Returns
    -------
    Fraction
        ``a / b``, the fraction nearest ``q`` with ``b <= MAX_DENOMINATOR`` (``10^6``).
    """
    q = plain_number(q)
    if isinstance(q, bool) or not isinstance(q, (int, float, Fraction, np.floating)):
        raise ParameterError(f"q must be a number in [0, 1], got {type(q).__name__}")
    if isinstance(q, (float, np.floating)) and not math.isfinite(float(q)):
        raise ParameterError(f"q must be a number in [0, 1], got {q!r}")
    value = Fraction(q) if isinstance(q, (int, Fraction)) else Fraction(float(q))
    if not 0 <= value <= 1:
        raise ParameterError(f"q must be in [0, 1], got {q!r}")
    return value.limit_denominator(MAX_DENOMINATOR)


def score_sensitivity(level: Fraction) -> int:
    """``Delta = max(a, b - a)`` for ``q = a / b``: the rank excess's sensitivity.

    Parameters
    ----------
    level : Fraction
        The level ``q = a / b`` (:func:`quantile_fraction`).

    Returns
    -------
    int
        ``Delta = max(a, b - a)``: how much the integer rank excess moves when one row is added
        or removed.
    """
    a, b = level.numerator, level.denominator
    return max(a, b - a)


def rank_excess(below: Any, above: Any, n: int, level: Fraction) -> I64:
    """``max(0, b below - a n, b above - (b - a) n)`` elementwise, as int64.

    ``below``/``above`` are counts of rows strictly below/above each point. Exact in int64
    while ``b n < 2^62`` (``b <= 10^6``: up to ``4 * 10^12`` rows).

    Parameters
    ----------
    below, above : array_like of int
        For each point, the number of rows strictly below it and strictly above it.
    n : int
        The number of rows.
    level : Fraction
        The level ``q = a / b`` (:func:`quantile_fraction`).

    Returns
    -------
    numpy.ndarray of int64
        The rank excess ``s`` of each point: ``b`` times the excess in rows (0 at a
        ``q``-quantile).
    """
    a, b = level.numerator, level.denominator
    lo = np.asarray(below, dtype=np.int64) * b - a * n
    hi = np.asarray(above, dtype=np.int64) * b - (b - a) * n
    out: I64 = np.maximum(np.maximum(lo, hi), 0)
    return out


def candidate_rank_counts(values: Any, candidates: Any) -> tuple[I64, I64, int]:
    """``(below, above, n)``: the rows strictly below and strictly above each candidate, and
    the row count, from one sort of the data (NaN rows dropped) and two ``searchsorted``.
    The same for every level: several levels share one call.

    Parameters
    ----------
    values : array_like of float
        The data (the private rows); NaN rows are dropped.
    candidates : array_like of float
        The points whose ranks are counted.

    Returns
    -------
    below, above : numpy.ndarray of int64
        For each candidate, in the order given, the rows strictly below it and strictly above it.
    n : int
        The number of rows kept (NaN dropped).
    """
    data = np.asarray(values, dtype=np.float64).ravel()
    data = np.sort(kept_numbers(data))
    cands = np.asarray(candidates, dtype=np.float64).ravel()
    n = data.shape[0]
    below = np.searchsorted(data, cands, side="left").astype(np.int64)
    above = (n - np.searchsorted(data, cands, side="right")).astype(np.int64)
    return below, above, n


def rank_excess_of_candidates(values: Any, candidates: Any, level: Fraction) -> I64:
    """The rank excess of every candidate, from one sort of the data and two searchsorted.

    ``values``: the data (NaN rows dropped here); ``candidates``: numbers.

    Parameters
    ----------
    values : array_like of float
        The data (the private rows).
    candidates : array_like of float
        The candidate points.
    level : Fraction
        The level ``q = a / b`` (:func:`quantile_fraction`).

    Returns
    -------
    numpy.ndarray of int64
        The rank excess of each candidate, in the order given (:func:`rank_excess`).
    """
    below, above, n = candidate_rank_counts(values, candidates)
    return rank_excess(below, above, n, level)


def unit_epsilon(epsilon: Fraction, max_rows: Any) -> Fraction:
    """The row-level epsilon ``eps / r`` at which a mechanism runs so that it is ``eps``-DP
    for one unit of at most ``r = max_rows`` rows (module docstring: group privacy). Exact.

    Parameters
    ----------
    epsilon : Fraction
        The epsilon for one privacy unit (distance 1).
    max_rows : int
        ``r >= 1``, the most rows one privacy unit holds.

    Returns
    -------
    Fraction
        ``epsilon / r``, exactly: the epsilon for one row added or removed.
    """
    return Fraction(epsilon) / check_max_rows(max_rows)


def pure_dp_on_rows(function: Any, epsilon: Fraction) -> Measurement:
    """A measurement on 1-D arrays of numbers (rows added or removed) with map ``d_in * eps``.

    The common shape of the quantile mechanisms: each proves its own ``epsilon``-DP under
    ``SymmetricDistance`` (docs/quantiles.md), and group privacy gives ``d_in * epsilon``
    (rounded up; ``inf`` at ``d_in = inf``). A mechanism built with ``max_rows = r`` runs at
    ``epsilon / r`` per row, and ``d_in`` then counts units of at most ``r`` rows (module
    docstring); read as rows, the map only over-states the loss.

    Parameters
    ----------
    function : callable
        The mechanism's function from a 1-D array of numbers to its output; it must be
        ``epsilon``-DP for one row (or, with ``max_rows = r``, one unit of ``r`` rows) added or
        removed.
    epsilon : Fraction
        That epsilon, at distance 1.

    Returns
    -------
    Measurement
        ``function`` with ``SymmetricDistance`` input and the ``MaxDivergence`` map ``d_in *
        epsilon`` (rounded up).
    """

    def privacy_map(d_in: Any) -> float:
        SymmetricDistance().validate(d_in)
        return float_up(d_in * epsilon) if d_in != math.inf else math.inf

    return Measurement(
        input_domain=AnyDomain("1-D arrays of numbers"),
        input_metric=SymmetricDistance(),
        output_measure=MaxDivergence(),
        function=function,
        privacy_map=privacy_map,
    )
