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
from ..core.domains import atom_domain, vector_domain
from ..core.errors import ParameterError
from ..core.metrics import L1Distance
from ..data.column_roles import check_column_role
from ..data.engine import Engine, is_opened_table
from ..data.query import Query, UnitRule
from ..data.tables import open_table
from ..data.values import kept_numbers
from ..mechanisms.exponential import make_exponential_mechanism
from ..mechanisms.generalized_exponential import make_generalized_exponential_mechanism
from ..mechanisms.laplace import make_laplace
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
    "BOUNDS_METHODS",
    "DEFAULT_CONTRIBUTIONS",
    "EMPTY_BIN_RATE",
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

#: The methods of :func:`choose_bounds`.
BOUNDS_METHODS = ("histogram", "levels")

#: The histogram method's threshold: with probability at least ``1 - EMPTY_BIN_RATE`` no bin
#: without rows reaches it (a union bound over the bins).
EMPTY_BIN_RATE = 1e-3

#: Default candidates for the contribution bound: 1, 2, 4, ..., 256.
DEFAULT_CONTRIBUTIONS = tuple(1 << j for j in range(9))


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
    at most ``epsilon``): public, computed without data.

    Parameters
    ----------
    epsilon : float or Fraction
        The epsilon given to the choice.
    candidates : list of int, optional
        The candidate bounds (default :data:`DEFAULT_CONTRIBUTIONS`).
    beta : float, default 0.05
        GEM's ``beta`` in ``(0, 1)`` (it sets the threshold, not the cost bound).

    Returns
    -------
    float
        The choice's pure-DP cost for one person added or removed (at most ``epsilon``).
    """
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

    ``epsilon``: the choice's pure-DP cost (one person added or removed). ``release_epsilon``
    (default ``epsilon``): the epsilon of the later release whose noise the default penalty
    ``L / release_epsilon`` models. ``penalty``: a public rule ``L -> number`` replacing it
    (evaluated before the charge, never on data; a public term leaves every sensitivity
    ``Delta_L = L`` unchanged). ``data`` may be an opened table
    (:class:`~dpselect.data.engine.Engine`).

    ``unit_counts="rows"`` counts each person's *rows* with a number in ``column``
    (:meth:`~dpselect.data.engine.Engine.unit_sizes`) instead of their distinct values: the
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
        The confidence of the generalized exponential mechanism's guarantee (its ``beta`` is
        ``1 - confidence``).
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
    >>> dp.choose_max_contributions(visits, "site", "user", epsilon=1.0, candidates=[1, 2, 4],
    ...                             source=InsecureSeededSource(1)).max_contributions
    2
    """
    eps = Fraction(check_epsilon(epsilon))
    check_epsilon_range(eps)
    rel = eps if release_epsilon is None else Fraction(check_epsilon(release_epsilon))
    # 1 - confidence in decimal, exactly: confidence 0.95 is beta 0.05
    beta = float(1 - Fraction(str(check_confidence(confidence))))
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
            counts = table.unit_sizes(Query(column, UnitRule(privacy_unit)), "rows")
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


def bound_bins(low_exp: int = -8, high_exp: int = 40) -> list[tuple[float, float]]:
    """The public bins ``[-2^(j+1), -2^j)``, ``[-2^low, 2^low)``, ``[2^j, 2^(j+1))``.

    Parameters
    ----------
    low_exp, high_exp : int, default -8 and 40
        The least and largest exponent ``j`` of the bins ``[2^j, 2^(j+1))``.

    Returns
    -------
    list of (float, float)
        The ``2 (high_exp - low_exp + 1) + 1`` bins ``(l, h)``, increasing (99 by default).
    """
    neg = [(-(2.0 ** (j + 1)), -(2.0**j)) for j in range(high_exp, low_exp - 1, -1)]
    pos = [(2.0**j, 2.0 ** (j + 1)) for j in range(low_exp, high_exp + 1)]
    return [*neg, (-(2.0**low_exp), 2.0**low_exp), *pos]


def bin_score(level: Fraction, n: int, below: int, at_least_high: int) -> int:
    """The score of bin ``[l, h)`` for the level ``A / B``: ``-max(0, B #{x < l} - A n,
    A n - B #{x < h})``, minus ``B`` times the distance from the target rank ``A n / B`` to the
    bin's ranks ``[#{x < l}, #{x < h}]`` (0 for a bin that holds the level's quantile).

    ``below = #{x < l}``, ``at_least_high = #{x >= h}``. A row added or removed moves each of
    the two terms by at most ``max(A, B - A)`` (by ``B - A`` or ``-A`` as it lies below ``l``,
    between the edges or above ``h``), so the score, their maximum with 0, moves by at most
    ``max(A, B - A)``: the exponential mechanism's sensitivity (module docstring). Empty bins
    below all the data score ``-A n``, above it ``-(B - A) n``."""
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
        The bins ``[l, h)`` (:func:`bound_bins`).
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
    (:meth:`~dpselect.data.engine.Engine.buyers_at`, so Spark never collects the column).
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


def _noisy_bins(n_bins: int, eps: Fraction, source: RandomSource | None, max_rows: int) -> Any:
    """The Laplace mechanism on the bins' row counts: one unit adds or removes at most
    ``max_rows`` rows, each in one bin, so the counts move by at most ``max_rows`` in L1 and
    the discrete Laplace scale ``max_rows / eps`` makes the map ``eps`` at that distance
    (:func:`~dpselect.mechanisms.laplace.make_laplace`; exact integer noise)."""
    domain = vector_domain(atom_domain(int), size=n_bins)
    return make_laplace(domain, L1Distance(), Fraction(max_rows) / eps, source=source)


def empty_bin_threshold(scale: Fraction, n_bins: int, rate: float = EMPTY_BIN_RATE) -> int:
    """The least integer ``t >= 1`` with ``n_bins P(Z >= t) <= rate`` for discrete Laplace
    noise ``Z`` of ``scale``: ``P(Z >= t) = q^t / (1 + q)``, ``q = exp(-1 / scale)`` (from the
    closed form, then corrected step by step; rounded toward a larger ``t``)."""
    q = math.exp(-1 / float(scale))

    def tail(t: int) -> float:
        return n_bins * math.exp(-t / float(scale)) / (1 + q) * (1 + 1e-9)

    t = max(1, math.floor(float(scale) * math.log(n_bins / (rate * (1 + q)))) - 2)
    while t > 1 and tail(t - 1) <= rate:
        t -= 1
    while tail(t) > rate:
        t += 1
    return t


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
    magnitude."""
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

    ``epsilon``: the total pure-DP cost (one row, or one unit, added or removed). ``method``:
    ``"histogram"`` (a thresholded noisy histogram of the bins, the default) or ``"levels"``
    (one exponential mechanism per level at ``epsilon / 2``); the module docstring gives both
    laws, their sensitivities and proofs. The bounds are the
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
    method : {"histogram", "levels"}, default "histogram"
        How the bins are chosen (module docstring).

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
    if max_rows is not None and privacy_unit is None:
        raise ParameterError("max_rows applies only with a privacy_unit column")
    rows = 1 if max_rows is None else check_max_rows(max_rows)
    table = _table(data, schema)
    numeric_column(table, column)
    if privacy_unit is not None:
        check_column_role(table, privacy_unit, "unit", "privacy_unit")
        table.unit_column(privacy_unit)
    bins = bound_bins()
    noisy_bins = _noisy_bins(len(bins), eps, source, rows)
    mechanisms = [] if how == "histogram" else _bin_mechanisms(levels, len(bins), eps, source, rows)
    if how == "histogram":
        spent = float(noisy_bins.map(rows))
        threshold = empty_bin_threshold(Fraction(rows) / eps, len(bins))
    else:
        spent = float_up(sum((Fraction(m.map(1)) for m in mechanisms), Fraction(0)))
    book = open_ledger(ledger)
    parameters: dict[str, Any] = {
        "column": column,
        "epsilon": float(eps),
        "quantiles": [float(q) for q in levels],
        "n_bins": len(bins),
        "method": how,
    }
    if how == "histogram":
        parameters["threshold"] = threshold
    if privacy_unit is not None:
        parameters.update(privacy_unit=privacy_unit, max_rows=rows)

    def release() -> BoundsChoice:
        unit: dict[str, Any] = {}
        if privacy_unit is not None:  # the rows each unit keeps (the salt drawn after the charge)
            salt = resolve_source(source).bits(63)
            unit = {"privacy_unit": privacy_unit, "max_rows": rows, "salt": salt}
        note = ""
        if how == "histogram":
            counts = _engine_bin_counts(table, column, bins, unit)
            lower, upper, note = histogram_bounds(noisy_bins(counts), bins, levels, threshold)
        else:
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
            parameters={**parameters, "note": note} if note else parameters,
        )

    # the histogram adds Laplace noise: pure epsilon-DP; the picks are exponential mechanisms
    kind: Literal["pure", "bounded_range"] = "pure" if how == "histogram" else "bounded_range"
    return charge_then_release(
        book, release, spent, "choose_bounds", parameters, kind, privacy_unit=privacy_unit,
        source=table.description,
    )  # fmt: skip
