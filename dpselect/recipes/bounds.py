"""Contribution and clamping bounds chosen privately from the data (issue 16, part 2).

- :func:`choose_max_contributions`: the bound ``L`` on the number of distinct values a person
  contributes (``max_contributions`` of :func:`dpselect.top_k`), chosen among public
  candidates ``L_1 < ... < L_k`` by the generalized exponential mechanism (Raskhodnikova and
  Smith 2016; :func:`~dpselect.mechanisms.generalized_exponential.
  make_generalized_exponential_mechanism`). Score of ``L``: the contributions kept,
  ``sum_u min(c_u, L)`` (``c_u`` person ``u``'s number of distinct non-null values), minus the
  public noise penalty ``L / release_epsilon`` (the Laplace scale of a count or sum with
  contribution bound ``L`` at the later release's epsilon): a utility proxy that is large when
  few contributions are dropped and the bound is small. Adding or removing one person changes
  ``sum_u min(c_u, L)`` by at most ``L``: per-candidate sensitivities ``Delta_L = L``, exactly
  GEM's setting. ``epsilon``-DP (the map of GEM at distance 1).
- :func:`choose_bounds`: clamping bounds ``(lower, upper)`` for a numeric column. The public
  *bins* are ``[2^j, 2^(j+1))``, their mirror images ``[-2^(j+1), -2^j)`` (``j = -8..40``)
  and ``[-2^-8, 2^-8)``. A private quantile over bins (not points): bin ``[l, h)`` scores
  ``-|(B - A) #{x < l} - A #{x >= h}|`` for the level ``A / B``; a value added or removed
  changes at most one of the two counts by 1, so the score moves by at most ``max(A, B -
  A)``, and the exponential mechanism (:func:`~dpselect.mechanisms.exponential.
  make_exponential_mechanism`, not monotonic) at ``epsilon / 2`` picks one bin per level
  (default 5% and 95%); the bounds are the hull of the two bins (the lower edge of the first
  and the upper edge of the second when they come in order; never empty when noise swaps
  them), ``epsilon``-DP by basic composition. Unlike a quantile over grid *points*,
  every bin holding data scores above the empty bins below or above all the data (whose
  scores tie at ``-A n`` or ``-(B - A) n``), so the bounds land next to the data, with
  probability at least ``1 - beta`` once roughly ``n >= 4 max(A, B - A) ln(99 / beta) /
  (min(A, B - A) epsilon)`` (99 bins; about 580 rows at the 5% level and ``epsilon = 1``,
  ``beta = 0.05``); with fewer rows an empty bin far from the data is likely.

Both charge the ledger before reading the data and report what they chose and its cost.
``docs/private_selection.md`` has the maps and proofs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ..core.arithmetic import float_up
from ..core.deprecation import warn_renamed
from ..core.errors import ParameterError
from ..data.column_roles import check_column_role
from ..data.engine import Engine
from ..data.rules import kept_numbers
from ..data.tables import open_table
from ..mechanisms.exponential import make_exponential_mechanism
from ..mechanisms.generalized_exponential import make_generalized_exponential_mechanism
from ..mechanisms.quantile_score import check_max_rows, quantile_fraction
from ..mechanisms.validate import check_epsilon
from ..sampling.source import RandomSource, resolve_source
from ._common import (
    check_confidence,
    numeric_column,
    open_ledger,
)
from .epsilon_range import check_epsilon_range
from .release import charge_then_release
from .result import Result

__all__ = [
    "DEFAULT_CONTRIBUTIONS",
    "BoundsChoice",
    "ContributionChoice",
    "bin_scores",
    "bound_bins",
    "bounds_choice_cost",
    "choose_bounds",
    "choose_max_contributions",
    "contribution_choice_cost",
    "contribution_counts",
    "contribution_scores",
]

#: Default candidates for the contribution bound: 1, 2, 4, ..., 256.
DEFAULT_CONTRIBUTIONS = tuple(1 << j for j in range(9))


@dataclass(frozen=True)
class ContributionChoice(Result):
    """The chosen contribution bound and its cost."""

    max_contributions: int
    epsilon: float
    n_candidates: int
    ledger: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)

    def _text(self) -> str:
        return (
            f"max_contributions: {self.max_contributions} (chosen privately among "
            f"{self.n_candidates} candidates, generalized exponential mechanism; "
            f"epsilon = {self.epsilon:.6g}, delta = 0)"
        )


def contribution_counts(table: Engine, column: str, privacy_unit: str) -> np.ndarray[Any, Any]:
    """``c_u``: each person's number of distinct non-null values of ``column`` (one row per
    person with a non-null unit, in no particular order). A person's count reads only their
    rows. Computed by the engine that holds ``table``
    (:meth:`dpselect.data.engine.Engine.contribution_counts`)."""
    return table.contribution_counts(column, privacy_unit)


def contribution_scores(
    counts: Any,
    candidates: list[int],
    release_epsilon: Fraction | None = None,
    penalties: list[Fraction] | None = None,
) -> list[Fraction]:
    """``sum_u min(c_u, L) - penalty(L)`` for each candidate ``L`` (exact).

    ``penalty(L)`` is ``penalties[i]`` when given, else ``L / release_epsilon``.
    """
    c = np.asarray(counts, dtype=np.int64)
    if penalties is None:
        if release_epsilon is None:
            raise ParameterError("give release_epsilon or penalties")
        penalties = [Fraction(L) / release_epsilon for L in candidates]
    return [
        Fraction(int(np.minimum(c, L).sum())) - p
        for L, p in zip(candidates, penalties, strict=True)
    ]


def _penalties(penalty: Any, candidates: list[int]) -> list[Fraction] | None:
    """The public penalties ``penalty(L)`` as exact rationals (``None``: the default rule)."""
    if penalty is None:
        return None
    if not callable(penalty):
        raise ParameterError("penalty must be a callable penalty(L) -> number, or None")
    out = []
    for L in candidates:
        v = penalty(L)
        if isinstance(v, bool) or not isinstance(v, (int, float, Fraction, np.number)):
            raise ParameterError(f"penalty({L}) must be a number, got {v!r}")
        if not math.isfinite(float(v)):
            raise ParameterError(f"penalty({L}) must be finite, got {v!r}")
        out.append(Fraction(v) if isinstance(v, (int, Fraction)) else Fraction(float(v)))
    return out


def _table(data: Any, schema: Any) -> Engine:
    """``data`` opened (an already opened table, any :class:`~dpselect.data.engine.Engine`,
    is used as it is)."""
    if isinstance(data, Engine):
        return data
    return open_table(data, schema=schema)


def _gem(candidates: list[int], epsilon: Fraction, beta: float, source: RandomSource | None) -> Any:
    return make_generalized_exponential_mechanism(
        candidates,
        lambda scores, L: scores[L],
        [Fraction(L) for L in candidates],
        epsilon,
        beta=beta,
        source=source,
    )


def contribution_choice_cost(
    epsilon: float | Fraction, candidates: Any = None, beta: float = 0.05
) -> float:
    """What :func:`choose_max_contributions` costs at ``epsilon`` (GEM's map at distance 1,
    at most ``epsilon``): public, computed without data."""
    eps = Fraction(check_epsilon(epsilon))
    return float(_gem(_contribution_candidates(candidates), eps, beta, None).map(1))


def _contribution_candidates(candidates: Any) -> list[int]:
    if candidates is None:
        return list(DEFAULT_CONTRIBUTIONS)
    if isinstance(candidates, (str, bytes)) or not hasattr(candidates, "__iter__"):
        raise ParameterError("candidates must be a list of positive integers")
    out = []
    for v in candidates:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ParameterError(f"candidates must be positive integers, got {v!r}")
        out.append(int(v))
    if not out or len(set(out)) != len(out):
        raise ParameterError("candidates must be a non-empty list of distinct integers")
    return sorted(out)


def choose_max_contributions(
    data: Any,
    column: str,
    privacy_unit: str,
    epsilon: float | Fraction,
    *,
    candidates: Any = None,
    release_epsilon: float | None = None,
    confidence: float = 0.95,
    ledger: Any = None,
    source: RandomSource | None = None,
    penalty: Callable[[int], Any] | None = None,
    schema: Any = None,
    beta: float | None = None,
    unit_counts: str = "values",
) -> ContributionChoice:
    """A contribution bound for ``column`` per ``privacy_unit``, chosen privately (module doc).

    ``epsilon``: the choice's pure-DP cost (one person added or removed). ``release_epsilon``
    (default ``epsilon``): the epsilon of the later release whose noise the default penalty
    ``L / release_epsilon`` models. ``penalty``: a public rule ``L -> number`` replacing it
    (evaluated before the charge, never on data; a public term leaves every sensitivity
    ``Delta_L = L`` unchanged). ``data`` may be an opened table
    (:class:`~dpselect.data.engine.Engine`).

    ``unit_counts="rows"`` counts each person's *rows* with a number in ``column``
    (:meth:`~dpselect.data.engine.Engine.row_counts`) instead of their distinct values: the
    bound ``max_rows`` of a quantile or a price per person (``max_rows="auto"``). Adding or
    removing one person changes ``sum_u min(c_u, L)`` by at most ``L`` in either reading, so
    the sensitivities and the cost are the same.

    Parameters
    ----------
    data : str, path, DataFrame or Table
        The private rows.
    column : str
        The column whose values people contribute.
    privacy_unit : str
        The column identifying people.
    epsilon : float
        The choice's pure-DP cost.
    candidates : list of int, optional
        The bounds to choose among (default 1, 2, 4, ..., 256).
    release_epsilon : float, optional
        The epsilon of the later release (default ``epsilon``).
    confidence : float, default 0.95
        The confidence of the generalized exponential mechanism's guarantee (``beta``, its
        deprecated form, is ``1 - confidence``).
    ledger, source, penalty, schema
        The budget ledger, the randomness (tests only), a public penalty rule and declared
        column types.
    unit_counts : {"values", "rows"}, default "values"
        What a person's count ``c_u`` counts: distinct values, or rows with a number.

    Returns
    -------
    ContributionChoice
        The chosen bound and its cost.

    Raises
    ------
    ParameterError, DataError, BudgetExceeded
        Invalid parameters, unusable data or budget left, before any budget is spent.

    Examples
    --------
    >>> import pandas as pd
    >>> import dpselect as dp
    >>> from dpselect.sampling import InsecureSeededSource  # reproducible, not private
    >>> visits = pd.DataFrame({"user": [1, 1, 2, 2, 3, 4, 5, 5, 6, 7],
    ...                        "site": list("aabcaabaca")})
    >>> dp.choose_max_contributions(visits, "site", "user", 1.0, candidates=[1, 2, 4],
    ...                             source=InsecureSeededSource(1)).max_contributions
    2
    """
    eps = Fraction(check_epsilon(epsilon))
    check_epsilon_range(eps)
    rel = eps if release_epsilon is None else Fraction(check_epsilon(release_epsilon))
    if beta is None:  # 1 - confidence in decimal, exactly: confidence 0.95 is beta 0.05
        beta = float(1 - Fraction(str(check_confidence(confidence))))
    else:
        warn_renamed("beta=", "confidence= (1 - beta)")
        if confidence != 0.95:
            raise ParameterError("give confidence or its deprecated form beta, not both")
    if unit_counts not in ("values", "rows"):
        raise ParameterError(f"unit_counts must be 'values' or 'rows', got {unit_counts!r}")
    cands = _contribution_candidates(candidates)
    pens = _penalties(penalty, cands)
    table = _table(data, schema)
    check_column_role(table, column, "ranked" if unit_counts == "values" else "numeric")
    check_column_role(table, privacy_unit, "unit", "privacy_unit")
    mech = _gem(cands, eps, beta, source)
    spent = float(mech.map(1))
    book = open_ledger(ledger)
    parameters = {
        "column": column,
        "privacy_unit": privacy_unit,
        "epsilon": float(eps),
        "release_epsilon": float(rel),
        "candidates": cands,
        "penalty": "L / release_epsilon" if pens is None else [float(p) for p in pens],
    }
    if unit_counts == "rows":
        parameters["unit_counts"] = "rows"

    def release() -> ContributionChoice:
        if unit_counts == "rows":
            counts = table.row_counts(column, privacy_unit)
        else:
            counts = contribution_counts(table, column, privacy_unit)
        scores = dict(zip(cands, contribution_scores(counts, cands, rel, pens), strict=True))
        chosen = mech(scores)
        return ContributionChoice(
            max_contributions=int(chosen),
            epsilon=spent,
            n_candidates=len(cands),
            ledger=None if book is None else book.path,
            parameters=parameters,
        )

    return charge_then_release(
        book, release, spent, "choose_max_contributions", parameters,
        privacy_unit=privacy_unit, source=table.description,
    )  # fmt: skip


# ----------------------------------------------------------------------------- clamping bounds
@dataclass(frozen=True)
class BoundsChoice(Result):
    """The chosen clamping bounds and their cost."""

    lower: float
    upper: float
    epsilon: float
    quantiles: tuple[float, float]
    ledger: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)

    def _text(self) -> str:
        return (
            f"bounds: [{self.lower:g}, {self.upper:g}] (private {self.quantiles[0]:g} and "
            f"{self.quantiles[1]:g} quantiles over power-of-two bins; epsilon = "
            f"{self.epsilon:.6g}, delta = 0)"
        )


def bound_bins(low_exp: int = -8, high_exp: int = 40) -> list[tuple[float, float]]:
    """The public bins ``[-2^(j+1), -2^j)``, ``[-2^low, 2^low)``, ``[2^j, 2^(j+1))``."""
    neg = [(-(2.0 ** (j + 1)), -(2.0**j)) for j in range(high_exp, low_exp - 1, -1)]
    pos = [(2.0**j, 2.0 ** (j + 1)) for j in range(low_exp, high_exp + 1)]
    return [*neg, (-(2.0**low_exp), 2.0**low_exp), *pos]


def bin_scores(values: Any, bins: list[tuple[float, float]], level: Fraction) -> list[int]:
    """``-|(B - A) #{x < l} - A #{x >= h}|`` for each bin ``[l, h)`` (exact integers)."""
    a, b = level.numerator, level.denominator
    data = np.sort(np.asarray(values, dtype=np.float64))
    data = kept_numbers(data)
    n = data.shape[0]
    lows = np.searchsorted(data, [lo for lo, _ in bins], side="left")
    highs = n - np.searchsorted(data, [hi for _, hi in bins], side="left")
    return [-abs((b - a) * int(lt) - a * int(ge)) for lt, ge in zip(lows, highs, strict=True)]


def _engine_bin_scores(
    table: Engine,
    column: str,
    bins: list[tuple[float, float]],
    levels: list[Fraction],
    unit: dict[str, Any],
) -> list[list[int]]:
    """:func:`bin_scores` of each level from the engine's counts ``#{x >= e}`` at the bins'
    edges and at ``-inf`` (``n``): :meth:`~dpselect.data.engine.Engine.buyers_at`, so Spark
    never collects the column; the same integers as :func:`bin_scores` on the values (``#{x <
    l} = n - #{x >= l}``). ``unit``: ``privacy_unit``, ``max_rows`` and ``salt`` (the kept
    rows), or empty."""
    edges = [-math.inf, *(lo for lo, _ in bins), *(hi for _, hi in bins)]
    counts = [int(c) for c in table.buyers_at(column, edges, **unit)]
    n, k = counts[0], len(bins)
    at_least_low, at_least_high = counts[1 : 1 + k], counts[1 + k :]
    out = []
    for level in levels:
        a, b = level.numerator, level.denominator
        out.append(
            [-abs((b - a) * (n - ge_l) - a * ge_h)
             for ge_l, ge_h in zip(at_least_low, at_least_high, strict=True)]
        )  # fmt: skip
    return out


def _bound_levels(quantiles: Any) -> list[Fraction]:
    if not (isinstance(quantiles, tuple) and len(quantiles) == 2):
        raise ParameterError("quantiles must be a pair (low, high)")
    levels = [quantile_fraction(q) for q in quantiles]
    if not 0 < levels[0] < levels[1] < 1:
        raise ParameterError(f"quantiles must satisfy 0 < low < high < 1, got {quantiles!r}")
    return levels


def _bin_mechanisms(
    levels: list[Fraction],
    n_bins: int,
    eps: Fraction,
    source: RandomSource | None,
    max_rows: int = 1,
) -> list[Any]:
    mechanisms = []
    for level in levels:
        # one unit adds or removes at most max_rows rows, each moving one of the two counts
        # by 1: the score moves by at most max_rows max(A, B - A)
        sensitivity = max_rows * max(level.numerator, level.denominator - level.numerator)
        mechanisms.append(
            make_exponential_mechanism(
                list(range(n_bins)),
                lambda scores, i: scores[i],
                sensitivity,
                epsilon=eps / 2,
                source=source,
            )
        )
    return mechanisms


def bounds_choice_cost(
    epsilon: float | Fraction, quantiles: tuple[float, float] = (0.05, 0.95)
) -> float:
    """What :func:`choose_bounds` costs at ``epsilon`` (the two picks' maps at distance 1,
    summed and rounded up; at most ``epsilon``): public, computed without data."""
    eps = Fraction(check_epsilon(epsilon))
    mechanisms = _bin_mechanisms(_bound_levels(quantiles), len(bound_bins()), eps, None)
    return float_up(sum((Fraction(m.map(1)) for m in mechanisms), Fraction(0)))


def choose_bounds(
    data: Any,
    column: str,
    epsilon: float | Fraction,
    *,
    quantiles: tuple[float, float] = (0.05, 0.95),
    ledger: Any = None,
    source: RandomSource | None = None,
    schema: Any = None,
    privacy_unit: str | None = None,
    max_rows: int | None = None,
) -> BoundsChoice:
    """Clamping bounds for ``column``: two private quantiles over power-of-two bins.

    ``epsilon``: the total pure-DP cost (``epsilon / 2`` per level, one row added or removed).
    The module docstring gives the score, its sensitivity and the proof. The bounds are the
    hull of the two chosen bins, ``(min of their lower edges, max of their upper edges)``:
    the low level's lower edge and the high level's upper edge when the picks are in order,
    and never an empty interval when noise puts them the other way round (post-processing).
    ``data`` may be an opened table
    (:class:`~dpselect.data.engine.Engine`). With ``privacy_unit``, ``epsilon`` protects one
    unit: each unit keeps at most ``max_rows`` rows (default 1; the keyed rule of
    docs/contribution_bounding.md, "Rows per unit") and the bin scores' sensitivity is
    ``max_rows max(A, B - A)``. The bin scores come from the engine's counts of the rows at
    least each bin edge (:meth:`~dpselect.data.engine.Engine.buyers_at`), the same integers
    as :func:`bin_scores` on the values, so no engine collects the column.

    Parameters
    ----------
    data : str, path, DataFrame or Table
        The private rows.
    column : str
        A numeric column.
    epsilon : float
        The choice's pure-DP cost.
    quantiles : (float, float), default (0.05, 0.95)
        The levels whose private estimates become the bounds.
    ledger, source, schema
        The budget ledger, the randomness (tests only) and declared column types.
    privacy_unit, max_rows : str and int, optional
        The column identifying people and the most rows one person keeps (default 1).

    Returns
    -------
    BoundsChoice
        The chosen bounds and their cost.

    Raises
    ------
    ParameterError, DataError, BudgetExceeded
        Invalid parameters, unusable data or budget left, before any budget is spent.

    Examples
    --------
    >>> import pandas as pd
    >>> import dpselect as dp
    >>> from dpselect.sampling import InsecureSeededSource  # reproducible, not private
    >>> frame = pd.DataFrame({"x": [float(i) for i in range(1, 1001)]})
    >>> bounds = dp.choose_bounds(frame, "x", 1.0, source=InsecureSeededSource(1))
    >>> bounds.lower < bounds.upper
    True
    """
    eps = Fraction(check_epsilon(epsilon))
    check_epsilon_range(eps)
    levels = _bound_levels(quantiles)
    if max_rows is not None and privacy_unit is None:
        raise ParameterError("max_rows applies only with a privacy_unit column")
    rows = 1 if max_rows is None else check_max_rows(max_rows)
    table = _table(data, schema)
    numeric_column(table, column)
    if privacy_unit is not None:
        check_column_role(table, privacy_unit, "unit", "privacy_unit")
        table.unit_column(privacy_unit)
    bins = bound_bins()
    mechanisms = _bin_mechanisms(levels, len(bins), eps, source, rows)
    spent = float_up(sum((Fraction(m.map(1)) for m in mechanisms), Fraction(0)))
    book = open_ledger(ledger)
    parameters = {
        "column": column,
        "epsilon": float(eps),
        "quantiles": [float(q) for q in levels],
        "n_bins": len(bins),
    }
    if privacy_unit is not None:
        parameters.update(privacy_unit=privacy_unit, max_rows=rows)

    def release() -> BoundsChoice:
        unit: dict[str, Any] = {}
        if privacy_unit is not None:  # the rows each unit keeps (the salt drawn after the charge)
            salt = resolve_source(source).bits(63)
            unit = {"privacy_unit": privacy_unit, "max_rows": rows, "salt": salt}
        scores = _engine_bin_scores(table, column, bins, levels, unit)
        lo_bin = bins[mechanisms[0](scores[0])]
        hi_bin = bins[mechanisms[1](scores[1])]
        lower, upper = min(lo_bin[0], hi_bin[0]), max(lo_bin[1], hi_bin[1])
        return BoundsChoice(
            lower=lower,
            upper=upper,
            epsilon=spent,
            quantiles=(float(levels[0]), float(levels[1])),
            ledger=None if book is None else book.path,
            parameters=parameters,
        )

    return charge_then_release(
        book, release, spent, "choose_bounds", parameters, privacy_unit=privacy_unit,
        source=table.description,
    )  # fmt: skip
