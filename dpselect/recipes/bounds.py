"""Contribution and clamping bounds chosen privately from the data.

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
  and ``[-2^-8, 2^-8)`` (99 bins). Two methods:

  - ``method="histogram"`` (the default, and what ``quantile(..., bounds="auto")`` uses): the
    bins' row counts plus exact discrete Laplace noise of scale ``max_rows / epsilon`` (one
    unit adds or removes at most ``max_rows`` rows, each in one bin: L1 sensitivity
    ``max_rows``; the Laplace mechanism, Dwork, McSherry, Nissim and Smith 2006, made exact
    by :func:`~dpselect.mechanisms.laplace.make_laplace`): ``epsilon``-DP. The rest is
    post-processing: bins whose noisy count is below a threshold ``T`` (no empty bin reaches
    it with probability at least ``1 - EMPTY_BIN_RATE``, a union bound) count 0; the bounds are
    the edges of the kept bins where the kept counts' cumulative sum crosses the low and high
    levels, widened to contain 0. A bin needs about ``T + noise`` rows, ``T ~ (max_rows /
    epsilon) ln(99 / (2 10^-3))``: 44 rows at ``epsilon = 0.25`` and one row per unit, whatever
    the level; with fewer rows in every bin, the fullest noisy bin is used and the result
    says so. Bounds are never far from the data: they are edges of bins that hold rows (or 0).
  - ``method="levels"``: a private quantile over bins (not points) per level. Bin ``[l, h)``
    scores ``-max(0, B #{x < l} - A n, A n - B #{x < h})`` for the level ``A / B`` (0 for the
    bin holding the level's quantile, minus ``B`` times the distance of the target rank to the
    bin's ranks otherwise); a value added or removed moves each term by at most ``max(A, B -
    A)``, so the exponential mechanism (:func:`~dpselect.mechanisms.exponential.
    make_exponential_mechanism`, not monotonic) at ``epsilon / 2`` picks one bin per level
    (default 5% and 95%); the bounds are the hull of the two bins (never empty when noise
    swaps them), ``epsilon``-DP by basic composition. Empty bins below (above) all the data
    score ``-A n`` (``-(B - A) n``), so the data's bins win with probability at least ``1 -
    beta`` once ``n >= 4 max(A, B - A) max_rows ln(98 / beta) / (A epsilon)`` (about 580 rows
    at the 5% level, ``epsilon = 1``, ``beta = 0.05``; 19 times the histogram's need at the
    same epsilon, which is why the histogram is the default).

Both charge the ledger before reading the data and report what they chose and its cost.
``docs/private_selection.md`` has the maps and proofs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from ..core.arithmetic import float_up
from ..core.errors import ParameterError
from ..data.column_roles import check_column_role
from ..data.engine import Engine, is_opened_table
from ..data.query import Query, UnitRule
from ..data.tables import open_table
from ..mechanisms.exponential import make_exponential_mechanism
from ..mechanisms.quantile_score import check_max_rows, quantile_fraction
from ..mechanisms.validate import check_epsilon
from ..planning.contribution_choice import DEFAULT_CONTRIBUTIONS, bound_choice
from ..planning.epsilon_range import check_epsilon_range
from ..planning.private_choice import (
    bound_level_shares,
    bounds_choice_stages,
    contributions_choice_stage,
)
from ..planning.stage import Stage
from ..planning.value_bounds import bound_bins, empty_bin_threshold
from ..sampling.source import RandomSource, resolve_source
from ._common import (
    check_confidence,
    numeric_column,
    open_ledger,
)
from .release import charge_then
from .result import Result
from .value_bins import (
    _engine_bin_counts,
    _engine_bin_scores,
    _noisy_bins,
    histogram_bounds,
)

__all__ = [
    "BOUNDS_METHODS",
    "BoundsChoice",
    "ContributionChoice",
    "bounds_choice_cost",
    "choose_bounds",
    "choose_max_contributions",
    "contribution_counts",
    "contribution_scores",
]

#: The methods of :func:`choose_bounds`.
BOUNDS_METHODS = ("histogram", "levels")


@dataclass(frozen=True)
class ContributionChoice(Result):
    """The chosen contribution bound and its cost.

    Attributes
    ----------
    max_contributions : int
        The chosen bound ``L``, one of the candidate bounds: distinct values per person (rows
        with a number per person with ``unit_counts="rows"``).
    epsilon : float
        The choice's pure-DP cost (``delta = 0``, one person added or removed): the
        generalized exponential mechanism's loss, what the ledger was charged.
    n_candidates : int
        The number of candidate bounds chosen among.
    ledger : str or None
        The path of the ledger charged for this release; ``None`` without a ledger.
    parameters : dict
        The public parameters (``column``, ``privacy_unit``, ``epsilon``, ``release_epsilon``,
        ``candidates``, ``penalty``, and ``unit_counts`` when ``"rows"``).
    """

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
    (:meth:`dpselect.data.engine.Engine.unit_sizes`).

    Parameters
    ----------
    table : Engine
        The opened table.
    column : str
        The column whose distinct values are counted.
    privacy_unit : str
        The column identifying people.

    Returns
    -------
    numpy.ndarray
        One count ``c_u >= 0`` per person (0: only nulls), int64 (private data).
    """
    return table.unit_sizes(Query(column, UnitRule(privacy_unit)), "values")


def contribution_scores(
    counts: Any,
    candidates: list[int],
    release_epsilon: Fraction | None = None,
    penalties: list[Fraction] | None = None,
) -> list[Fraction]:
    """``sum_u min(c_u, L) - penalty(L)`` for each candidate ``L`` (exact).

    ``penalty(L)`` is ``penalties[i]`` when given, else ``L / release_epsilon``.

    Parameters
    ----------
    counts : array_like of int
        ``c_u`` per person (:func:`contribution_counts`).
    candidates : list of int
        The candidate bounds ``L``.
    release_epsilon : Fraction, optional
        The later release's epsilon for the default penalty ``L / release_epsilon``; needed
        without ``penalties``.
    penalties : list of Fraction, optional
        The public penalty of each candidate, in the same order (replaces the default).

    Returns
    -------
    list of Fraction
        The score of each candidate, in the order of ``candidates``.
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
    if is_opened_table(data):
        opened: Engine = data
        return opened
    return open_table(data, schema=schema)


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


@dataclass(frozen=True)
class _ContributionPlan:
    """How :func:`choose_max_contributions` will choose, from public parameters only."""

    epsilon: Fraction
    release_epsilon: Fraction
    candidates: list[int]
    penalties: list[Fraction] | None  # None: the default penalty L / release_epsilon
    unit_counts: str
    beta: float  # GEM's beta, 1 - confidence

    def parameters(self, column: str, privacy_unit: str) -> dict[str, Any]:
        """The public parameters the ledger and the result record."""
        pens = self.penalties
        parameters = {
            "column": column,
            "privacy_unit": privacy_unit,
            "epsilon": float(self.epsilon),
            "release_epsilon": float(self.release_epsilon),
            "candidates": self.candidates,
            "penalty": "L / release_epsilon" if pens is None else [float(p) for p in pens],
        }
        if self.unit_counts == "rows":
            parameters["unit_counts"] = "rows"
        return parameters

    def scores(self, table: Engine, column: str, privacy_unit: str) -> dict[int, Fraction]:
        """Each candidate's score on the rows (after the charge)."""
        if self.unit_counts == "rows":
            counts = table.unit_sizes(Query(column, UnitRule(privacy_unit)), "rows")
        else:
            counts = contribution_counts(table, column, privacy_unit)
        cands, rel, pens = self.candidates, self.release_epsilon, self.penalties
        return dict(zip(cands, contribution_scores(counts, cands, rel, pens), strict=True))


def _counted_table(
    data: Any, schema: Any, column: str, privacy_unit: str, unit_counts: str
) -> Engine:
    """``data`` opened, ``column`` fit for the counts and ``privacy_unit`` a unit column."""
    table = _table(data, schema)
    check_column_role(table, column, "ranked" if unit_counts == "values" else "numeric")
    check_column_role(table, privacy_unit, "unit", "privacy_unit")
    return table


def _plan_contributions(
    epsilon: float | Fraction,
    release_epsilon: float | None,
    confidence: float,
    unit_counts: str,
    candidates: Any,
    penalty: Callable[[int], Any] | None,
) -> _ContributionPlan:
    """The public parameters checked, in order (no data read)."""
    eps = Fraction(check_epsilon(epsilon))
    check_epsilon_range(eps)
    rel = eps if release_epsilon is None else Fraction(check_epsilon(release_epsilon))
    # 1 - confidence in decimal, exactly: confidence 0.95 is beta 0.05
    beta = float(1 - Fraction(str(check_confidence(confidence))))
    if unit_counts not in ("values", "rows"):
        raise ParameterError(f"unit_counts must be 'values' or 'rows', got {unit_counts!r}")
    cands = _contribution_candidates(candidates)
    pens = _penalties(penalty, cands)
    return _ContributionPlan(eps, rel, cands, pens, unit_counts, beta)


def choose_max_contributions(
    data: Any,
    column: str,
    privacy_unit: str,
    *,
    epsilon: float | Fraction,
    candidates: Any = None,
    release_epsilon: float | None = None,
    confidence: float = 0.95,
    ledger: Any = None,
    source: RandomSource | None = None,
    penalty: Callable[[int], Any] | None = None,
    schema: Any = None,
    unit_counts: str = "values",
) -> ContributionChoice:
    """A contribution bound for ``column`` per ``privacy_unit``, chosen privately (module doc).

    Parameters
    ----------
    data : str, path, DataFrame, Table or Engine
        The private rows (an opened table is used as it is).
    column : str
        The column whose values people contribute.
    privacy_unit : str
        The column identifying people.
    epsilon : float
        The choice's pure-DP cost (one person added or removed).
    candidates : list of int, optional
        The bounds to choose among (default 1, 2, 4, ..., 256).
    release_epsilon : float, optional
        The epsilon of the later release whose noise the default penalty
        ``L / release_epsilon`` models (default ``epsilon``).
    confidence : float, default 0.95
        The confidence of the generalized exponential mechanism's guarantee (its ``beta`` is
        ``1 - confidence``).
    ledger, source, schema
        The budget ledger, the randomness (tests only) and declared column types.
    penalty : callable, optional
        A public rule ``L -> number`` replacing the default penalty (evaluated before the
        charge, never on data; a public term leaves every sensitivity ``Delta_L = L``).
    unit_counts : {"values", "rows"}, default "values"
        What a person's count ``c_u`` counts: distinct values, or rows with a number in
        ``column`` (:meth:`~dpselect.data.engine.Engine.unit_sizes`: the bound ``max_rows`` of
        a quantile or a price per person, ``max_rows="auto"``). One person moves
        ``sum_u min(c_u, L)`` by at most ``L`` either way: the same sensitivities and cost.

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
    >>> dp.choose_max_contributions(visits, "site", "user", epsilon=1.0, candidates=[1, 2, 4],
    ...                             source=InsecureSeededSource(1)).max_contributions
    2
    """
    plan = _plan_contributions(
        epsilon, release_epsilon, confidence, unit_counts, candidates, penalty
    )
    table = _counted_table(data, schema, column, privacy_unit, unit_counts)
    mech = bound_choice(plan.candidates, [Fraction(L) for L in plan.candidates], plan.epsilon,
                        source, plan.beta)  # fmt: skip
    spent = float(mech.map(1))
    book = open_ledger(ledger)
    parameters = plan.parameters(column, privacy_unit)

    def release() -> ContributionChoice:
        chosen = mech(plan.scores(table, column, privacy_unit))
        return ContributionChoice(
            max_contributions=int(chosen), epsilon=spent, n_candidates=len(plan.candidates),
            ledger=None if book is None else book.path, parameters=parameters,
        )  # fmt: skip

    return charge_then(
        book, release, spent, 0.0, None, "bounded_range", "choose_max_contributions",
        parameters, privacy_unit=privacy_unit, source=table.description,
        stages=(contributions_choice_stage(spent, len(plan.candidates)),),
    )  # fmt: skip


# ----------------------------------------------------------------------------- clamping bounds
@dataclass(frozen=True)
class BoundsChoice(Result):
    """The chosen clamping bounds and their cost.

    Attributes
    ----------
    lower : float
        The lower clamping bound: a bin edge ``-2^j`` or ``2^j`` (``j = -8..41``), or 0 (the
        histogram method's bounds always contain 0).
    upper : float
        The upper clamping bound: a bin edge, or 0, likewise.
    epsilon : float
        The choice's pure-DP cost (``delta = 0``; one row, or one unit, added or removed):
        what the ledger was charged.
    quantiles : tuple of float
        The low and high levels whose private estimates give the bounds (default
        ``(0.05, 0.95)``).
    ledger : str or None
        The path of the ledger charged for this release; ``None`` without a ledger.
    parameters : dict
        The public parameters (``column``, ``epsilon``, ``quantiles``, ``n_bins``, ``method``,
        ``threshold`` for the histogram, ``privacy_unit`` and ``max_rows`` with a unit) and a
        ``note`` when no bin reached the threshold.
    """

    lower: float
    upper: float
    epsilon: float
    quantiles: tuple[float, float]
    ledger: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)

    def _text(self) -> str:
        how = (
            "a noisy histogram of power-of-two bins"
            if self.parameters.get("method", "histogram") == "histogram"
            else "power-of-two bins"
        )
        text = (
            f"bounds: [{self.lower:g}, {self.upper:g}] (private {self.quantiles[0]:g} and "
            f"{self.quantiles[1]:g} quantiles over {how}; epsilon = {self.epsilon:.6g}, "
            "delta = 0)"
        )
        note = self.parameters.get("note")
        return f"{text}\n{note}" if note else text


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
    """One exponential mechanism per level over the bins, each at half of ``eps`` (the low
    level the first share, the high level the rest: exactly ``eps / 2`` each)."""
    mechanisms = []
    for level, share in zip(levels, bound_level_shares(eps), strict=True):
        # one unit adds or removes at most max_rows rows, each moving one of the two counts
        # by 1: the score moves by at most max_rows max(A, B - A)
        sensitivity = max_rows * max(level.numerator, level.denominator - level.numerator)
        mechanisms.append(
            make_exponential_mechanism(
                list(range(n_bins)),
                lambda scores, i: scores[i],
                sensitivity,
                epsilon=share,
                source=source,
            )
        )
    return mechanisms


def bounds_choice_cost(
    epsilon: float | Fraction,
    quantiles: tuple[float, float] = (0.05, 0.95),
    method: str = "histogram",
) -> float:
    """What :func:`choose_bounds` costs at ``epsilon``: the noisy histogram's map at distance
    ``max_rows`` (``method="histogram"``), or the two picks' maps at distance 1 summed and
    rounded up (``"levels"``); at most ``epsilon``, public, computed without data.

    Parameters
    ----------
    epsilon : float or Fraction
        The epsilon given to the choice.
    quantiles : (float, float), default (0.05, 0.95)
        The low and high levels (used by ``"levels"``; ``0 < low < high < 1``).
    method : {"histogram", "levels"}, default "histogram"
        The method of :func:`choose_bounds`.

    Returns
    -------
    float
        The choice's pure-DP cost for one privacy unit added or removed (at most ``epsilon``).
    """
    eps = Fraction(check_epsilon(epsilon))
    if _bounds_method(method) == "histogram":
        return float(_noisy_bins(len(bound_bins()), eps, None, 1).map(1))
    mechanisms = _bin_mechanisms(_bound_levels(quantiles), len(bound_bins()), eps, None)
    return float_up(sum((Fraction(m.map(1)) for m in mechanisms), Fraction(0)))


def _bounds_method(method: Any) -> str:
    if method not in BOUNDS_METHODS:
        raise ParameterError(f"method must be one of {list(BOUNDS_METHODS)}, got {method!r}")
    return str(method)


def _unit_rows(max_rows: int | None, privacy_unit: str | None) -> int:
    """The rows each unit keeps: ``max_rows`` (default 1), given only with a unit column."""
    if max_rows is not None and privacy_unit is None:
        raise ParameterError("max_rows applies only with a privacy_unit column")
    return 1 if max_rows is None else check_max_rows(max_rows)


def _numeric_table(data: Any, schema: Any, column: str, privacy_unit: str | None) -> Engine:
    """``data`` opened, with ``column`` numeric and ``privacy_unit`` a unit column (schema only)."""
    table = _table(data, schema)
    numeric_column(table, column)
    if privacy_unit is not None:
        check_column_role(table, privacy_unit, "unit", "privacy_unit")
        table.unit_column(privacy_unit)
    return table


def _kept_rows(privacy_unit: str | None, rows: int, source: RandomSource | None) -> dict[str, Any]:
    """The engine's arguments for the rows each unit keeps (empty without a unit); the salt is
    drawn here, after the charge."""
    if privacy_unit is None:
        return {}
    salt = resolve_source(source).bits(63)
    return {"privacy_unit": privacy_unit, "max_rows": rows, "salt": salt}


@dataclass(frozen=True)
class _BoundsPlan:
    """How :func:`choose_bounds` will choose, from public facts: its mechanisms and its cost."""

    method: str
    levels: list[Fraction]
    rows: int
    bins: list[tuple[float, float]]
    noisy_bins: Any  # the histogram's Laplace mechanism
    mechanisms: list[Any]  # the levels' exponential mechanisms
    spent: float
    threshold: int | None  # the histogram's threshold

    def parameters(self, column: str, eps: Fraction, privacy_unit: str | None) -> dict[str, Any]:
        """The public parameters the ledger and the result record."""
        parameters: dict[str, Any] = {
            "column": column,
            "epsilon": float(eps),
            "quantiles": [float(q) for q in self.levels],
            "n_bins": len(self.bins),
            "method": self.method,
        }
        if self.method == "histogram":
            parameters["threshold"] = self.threshold
        if privacy_unit is not None:
            parameters.update(privacy_unit=privacy_unit, max_rows=self.rows)
        return parameters

    def stages(self, eps: Fraction) -> tuple[Stage, ...]:
        """The choice's stages (:func:`~dpselect.planning.private_choice.bounds_choice_stages`)."""
        costs = (
            [float(self.noisy_bins.map(self.rows))]
            if self.method == "histogram"
            else [float(m.map(1)) for m in self.mechanisms]
        )
        return bounds_choice_stages(self.method, eps, costs, rows=self.rows,
                                    n_bins=len(self.bins), threshold=self.threshold)  # fmt: skip

    def choose(self, table: Engine, column: str, unit: dict[str, Any]) -> tuple[float, float, str]:
        """``(lower, upper, note)`` from the rows (after the charge); ``unit``: the kept rows."""
        bins, levels = self.bins, self.levels
        if self.method == "histogram":
            counts = _engine_bin_counts(table, column, bins, unit)
            assert self.threshold is not None
            return histogram_bounds(self.noisy_bins(counts), bins, levels, self.threshold)
        scores = _engine_bin_scores(table, column, bins, levels, unit)
        lo_bin = bins[self.mechanisms[0](scores[0])]
        hi_bin = bins[self.mechanisms[1](scores[1])]
        return min(lo_bin[0], hi_bin[0]), max(lo_bin[1], hi_bin[1]), ""


def _plan_bounds(
    how: str, levels: list[Fraction], eps: Fraction, source: RandomSource | None, rows: int
) -> _BoundsPlan:
    """The mechanisms of either method and what they cost (no data read)."""
    bins = bound_bins()
    noisy_bins = _noisy_bins(len(bins), eps, source, rows)
    mechanisms = [] if how == "histogram" else _bin_mechanisms(levels, len(bins), eps, source, rows)
    threshold = None
    if how == "histogram":
        spent = float(noisy_bins.map(rows))
        threshold = empty_bin_threshold(Fraction(rows) / eps, len(bins))
    else:
        spent = float_up(sum((Fraction(m.map(1)) for m in mechanisms), Fraction(0)))
    return _BoundsPlan(how, levels, rows, bins, noisy_bins, mechanisms, spent, threshold)


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
    method: str = "histogram",
) -> BoundsChoice:
    """Clamping bounds for ``column``: private quantiles over power-of-two bins.

    The bounds are the hull of the chosen bins, never empty (even when noise puts the levels'
    bins the other way round: post-processing). The engine counts the rows at least each bin
    edge (:meth:`~dpselect.data.engine.Engine.buyers_at`, the same integers as
    :func:`~dpselect.recipes.value_bins.bin_scores` on the values), so no engine collects the
    column. The module docstring gives both methods' laws, sensitivities and proofs.

    Parameters
    ----------
    data : str, path, DataFrame, Table or Engine
        The private rows (an opened table is used as it is).
    column : str
        A numeric column.
    epsilon : float
        The choice's total pure-DP cost (one row, or one unit, added or removed).
    quantiles : (float, float), default (0.05, 0.95)
        The levels whose private estimates become the bounds.
    ledger, source, schema
        The budget ledger, the randomness (tests only) and declared column types.
    privacy_unit, max_rows : str and int, optional
        The column identifying people and the most rows one person keeps (default 1; the keyed
        rule of docs/contribution_bounding.md, "Rows per unit"); the bin scores' sensitivity
        is then ``max_rows max(A, B - A)``.
    method : {"histogram", "levels"}, default "histogram"
        A thresholded noisy histogram of the bins, or one exponential mechanism per level at
        ``epsilon / 2`` (module docstring).

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
    how = _bounds_method(method)
    rows = _unit_rows(max_rows, privacy_unit)
    table = _numeric_table(data, schema, column, privacy_unit)
    plan = _plan_bounds(how, levels, eps, source, rows)
    book = open_ledger(ledger)
    parameters = plan.parameters(column, eps, privacy_unit)

    def release() -> BoundsChoice:
        unit = _kept_rows(privacy_unit, rows, source)
        lower, upper, note = plan.choose(table, column, unit)
        return BoundsChoice(
            lower=lower, upper=upper, epsilon=plan.spent,
            quantiles=(float(levels[0]), float(levels[1])),
            ledger=None if book is None else book.path,
            parameters={**parameters, "note": note} if note else parameters,
        )  # fmt: skip

    # the histogram adds Laplace noise: pure epsilon-DP; the picks are exponential mechanisms
    kind: Literal["pure", "bounded_range"] = "pure" if how == "histogram" else "bounded_range"
    return charge_then(
        book, release, plan.spent, 0.0, None, kind, "choose_bounds", parameters,
        privacy_unit=privacy_unit, source=table.description, stages=plan.stages(eps),
    )  # fmt: skip
