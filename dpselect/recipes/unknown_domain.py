"""Values from the data: partition selection, and top-k without a candidate list.

``partition_selection(data, column, epsilon, delta)`` answers "which values can I publish at
all": DVGM22's optimal partition selection for one value per person; for more (with a privacy
unit, DuckDB engine) policy set union (Gopi et al. 2020, Policy Laplace: persons spend their
weight on the values that still need it, :mod:`dpselect.mechanisms.set_union`); thresholding
of exact Laplace or Gaussian counts on request or on Spark (the one with the lower threshold,
a public fact).

``top_k`` without ``candidates`` runs one of (chosen by public facts, never the data):

- **thresholding then the top k** (``laplace_histogram`` / ``gaussian_histogram``): every
  value's count gets exact noise, values below the threshold are dropped, the ``k`` largest
  noisy counts are released (with the counts when asked). Ranking is post-processing of the
  thresholded noisy histogram, so the whole pipeline costs the thresholding's ``(epsilon,
  delta)``, charged once (proof: ``docs/partition_selection.md``);
- **limited-domain top-k** (``gumbel``; Durfee and Rogers 2019) with its ``k`` peeling rounds
  composed by the tightest valid theorem (Renyi composition of bounded-range curves, not
  ``epsilon / k`` per round), half of ``delta`` to its threshold and half to the composition;
- **policy set union, then the top k** (:func:`make_policy_top_k`): Policy Laplace (Gopi et
  al. 2020) on half the budget, the known-domain ``top_k`` among the released values on the
  rest (adaptive composition, charged once), when :func:`use_policy_top_k` says so (many
  values per person: a measured rule).

Between the first three, :func:`choose_unknown_domain`: the count the ``k``-th value needs for
each option to find it, predicted from public facts (the threshold, the count released with
probability 1/2, plus ``0.4 k`` standard deviations of the ranking noise,
:data:`RANKING_SDS_PER_RANK`; the limited domain by its reference margin), the least wins
(``--plan`` shows the table).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..core.arithmetic import printed_up
from ..core.errors import ParameterError
from ..data.query import Query, UnitRule
from ..data.rules import check_rows_per_value
from ..data.tables import one_column
from ..mechanisms.limited_domain import (
    limited_domain_accounting,
    limited_domain_threshold,
    make_limited_domain_top_k,
)
from ..mechanisms.partition_selection import (
    make_optimal_partition_selection,
    make_threshold_partition_selection,
    ordered_values,
    threshold_plan,
)
from ..mechanisms.policy_top_k import (
    POLICY_TOP_K_ALPHA,
    POLICY_TOP_K_FRACTION,
    PolicyTopKPlan,
    make_policy_top_k,
    policy_top_k_plan,
)
from ..mechanisms.set_union import (
    SetUnionPlan,
    make_policy_set_union,
    policy_sure_count,
    set_union_plan,
)
from ..mechanisms.top_k_plan import CONFIDENCE
from ..mechanisms.validate import check_delta, check_int, check_user_epsilon
from ..planning.contributions import Contributions, merged
from ..sampling.source import RandomSource, resolve_source
from ._common import open_ledger
from .epsilon_range import check_epsilon_range
from .release import charge_then, open_checked
from .top_k_result import TopKResult
from .unknown_domain_plans import (
    K_BAR_EXTRA,
    LIMITED_DOMAIN_NAME,
    OPTIMAL_NAME,
    POLICY_MIN_EPSILON,
    POLICY_NAMES,
    POLICY_TOP_K_NAME,
    RANKING_SDS_PER_RANK,
    REFERENCE_OTHERS,
    THRESHOLD_NAMES,
    KeysResult,
    Progress,
    UnknownDomainOption,
    choose_keys_method,
    choose_unknown_domain,
    counted_in_words,
    limited_domain_per_round,
    noise_halfwidth,
    optimal_sure_count,
    ordinal,
    rank_released,
    sure_release_count,
)

# the names these helpers had before they moved (tests and bench/ import them from here)
_counted = counted_in_words
_ld_per_round = limited_domain_per_round
_noise_halfwidth = noise_halfwidth
_optimal_sure_count = optimal_sure_count
_ordinal = ordinal
_sure_release_count = sure_release_count

__all__ = [
    "K_BAR_EXTRA",
    "POLICY_MIN_EPSILON",
    "POLICY_TOP_K_ALPHA",
    "POLICY_TOP_K_FRACTION",
    "POLICY_TOP_K_MIN_CONTRIBUTIONS",
    "POLICY_TOP_K_MIN_EPSILON",
    "RANKING_SDS_PER_RANK",
    "REFERENCE_OTHERS",
    "KeysResult",
    "PolicyTopKPlan",
    "UnknownDomainOption",
    "UnknownDomainPlan",
    "choose_keys_method",
    "choose_unknown_domain",
    "make_policy_top_k",
    "partition_selection",
    "policy_top_k_plan",
    "rank_released",
    "run_unknown_domain_plan",
    "top_k_unknown_domain",
    "unknown_domain_plan",
    "use_policy_top_k",
]


@dataclass(frozen=True)
class UnknownDomainPlan:
    """One unknown-domain top-k, calibrated and checked, not yet charged: what it costs
    (``spent``: epsilon, delta), how the result describes it, ``pick`` (after the charge:
    the released values and, if asked, their noisy counts) and ``margin``, the count the
    ``k``-th value needs for the path to find it (public: :class:`UnknownDomainOption`'s
    criterion, the policy set union's sure count), which ``max_contributions="auto"`` weighs
    against the contributions a bound keeps."""

    pick: Callable[[], tuple[list[Any], list[Any] | None]]
    spent: tuple[float, float]
    mechanism: str
    entry: str
    accuracy: str
    parameters: dict[str, Any]
    described: str
    margin: float


def run_unknown_domain_plan(book: Any, plan: UnknownDomainPlan) -> TopKResult:
    """Charge ``plan`` to ``book`` (``None``: no ledger), then run it.

    Parameters
    ----------
    book : Ledger or None
        The opened ledger (``None``: no ledger).
    plan : UnknownDomainPlan
        The plan (:func:`unknown_domain_plan`).

    Returns
    -------
    TopKResult
        The released values (and noisy counts if asked), at the plan's ``(epsilon, delta)``.
    """
    return _charge_then_result(book, plan.pick, plan.spent, plan.mechanism, plan.entry,
                               plan.accuracy, plan.parameters, plan.described)  # fmt: skip


def partition_selection(
    data: Any,
    column: str | None,
    epsilon: float,
    delta: float,
    privacy_unit: str | None = None,
    max_contributions: int = 1,
    *,
    mechanism: Literal[
        "auto", "optimal", "laplace", "gaussian", "policy_laplace", "policy_gaussian"
    ] = "auto",
    ledger: Any = None,
    source: RandomSource | None = None,
    progress: Progress = None,
    schema: Any = None,
    max_rows_per_value: int = 1,
    by: str | None = None,
    groups: Any = None,
    max_groups: int = 1,
    group_fraction: float | None = None,
    contributions: Contributions | None = None,
) -> Any:
    """The values of ``column`` that can be published, at ``(epsilon, delta)`` (one person).

    ``mechanism="auto"``: :func:`choose_keys_method` -- DVGM22's optimal partition selection when
    each person has one value (``max_contributions = 1``, the optimum for that case); with
    ``max_contributions > 1``, policy set union with Laplace noise (Gopi et al. 2020) from
    ``epsilon >= POLICY_MIN_EPSILON`` on the DuckDB engine, else the optimal rule with each
    person bounded to one value (``bench/bench_utility.py --set-union`` measured both releasing
    more values than thresholding at the same guarantee). ``"optimal"`` with
    ``max_contributions > 1`` keeps one value per person. ``"laplace"`` / ``"gaussian"``:
    thresholding with ``max_contributions`` values. ``"policy_laplace"`` / ``"policy_gaussian"`` run
    :mod:`dpselect.mechanisms.set_union` on each person's values (held in the driver). The
    released values come in a fixed order (sorted), never by count. Charged once, durably,
    before the data is read. ``schema``: declared column types, as for :func:`dpselect.top_k`.

    Parameters
    ----------
    data : str, path, DataFrame, relation, Series or array
        The private rows, as for :func:`dpselect.top_k`.
    column : str or None
        The column whose values may be published.
    epsilon, delta : float
        The privacy cost (``delta > 0``: values that come from the data need it).
    privacy_unit : str, optional
        The column identifying people (each row is a person without it).
    max_contributions : int, default 1
        How many distinct values each person counts toward.
    mechanism : str, default "auto"
        ``"optimal"``, ``"laplace"``, ``"gaussian"``, ``"policy_laplace"``,
        ``"policy_gaussian"`` or ``"auto"`` (chosen from public parameters).
    ledger, source, progress, schema
        The budget ledger, the randomness (tests only), a progress callback and declared
        column types.
    max_rows_per_value : int, default 1
        With a ``privacy_unit``: each person adds their rows with a value, at most this many,
        to its count: thresholding calibrated to L-infinity ``r``, L1 ``c r``, L2 ``r
        sqrt(c)``, Policy Laplace and Policy Gaussian with a budget and per-value caps of
        ``r``. ``"auto"`` and ``"optimal"`` select by persons (a released set is valid
        whatever selected it, and by persons released more values,
        docs/partition_selection.md, section 6).
    by, groups, max_groups, group_fraction
        A column of groups: the values publishable in every group, in one query
        (:func:`dpselect.recipes.grouped.grouped_partition_selection`), as for
        :func:`dpselect.top_k`.
    contributions : Contributions, optional
        Every contribution bound as one value (:class:`~dpselect.Contributions`), in place
        of ``max_contributions``, ``max_rows_per_value``, ``max_groups`` and
        ``group_fraction`` (giving both is refused).

    Returns
    -------
    KeysResult or GroupedResult
        The released values, the mechanism, the cost and how likely a value is shown (with
        ``by``: one per group).

    Raises
    ------
    ParameterError, DataError, BudgetExceeded
        Invalid parameters, unusable data or budget left, before any budget is spent.

    Examples
    --------
    >>> import pandas as pd
    >>> import dpselect as dp
    >>> from dpselect.sampling import InsecureSeededSource  # reproducible, not private
    >>> rows = pd.Series(["a"] * 500 + ["b"] * 3)
    >>> dp.partition_selection(rows, None, epsilon=1.0, delta=1e-6,
    ...                        source=InsecureSeededSource(1)).values
    ['a']
    """
    data, column = one_column(data, column)  # a Series or 1-D array: column None
    method = mechanism
    bound_args = merged(
        contributions, "partition_selection", privacy_unit,
        {"max_contributions": max_contributions, "max_rows_per_value": max_rows_per_value,
         "max_groups": max_groups, "group_fraction": group_fraction},
        {"max_contributions": 1, "max_rows_per_value": 1, "max_groups": 1,
         "group_fraction": None},
        by=by, groups=groups,
    )  # fmt: skip
    max_contributions = bound_args["max_contributions"]
    max_rows_per_value, max_groups = bound_args["max_rows_per_value"], bound_args["max_groups"]
    group_fraction = bound_args["group_fraction"]
    if by is not None:
        from .grouped import grouped_partition_selection

        return grouped_partition_selection(
            data, column, epsilon, delta, by=by, groups=groups, privacy_unit=privacy_unit,
            max_groups=max_groups, max_contributions=max_contributions,
            max_rows_per_value=max_rows_per_value, mechanism=method, ledger=ledger,
            source=source, progress=progress, schema=schema, group_fraction=group_fraction,
        )  # fmt: skip
    from .grouping import check_no_grouping

    check_no_grouping(groups, max_groups, group_fraction)
    eps = float(check_user_epsilon(epsilon))
    check_epsilon_range(eps)
    dlt = float(check_delta(delta, allow_zero=False))
    c = check_int(max_contributions, "max_contributions", minimum=1)
    if privacy_unit is None and c != 1:
        raise ParameterError("max_contributions applies only with a privacy_unit column")
    rows_cap = check_rows_per_value(max_rows_per_value, privacy_unit)
    methods = ("auto", "optimal", "laplace", "gaussian", "policy_laplace", "policy_gaussian")
    if method not in methods:
        raise ParameterError(f"mechanism must be one of {', '.join(methods)}, got {method!r}")
    if method.startswith("policy") and privacy_unit is None:
        raise ParameterError(f"mechanism {method!r} needs a privacy_unit column")
    table = open_checked(data, column, privacy_unit, schema)
    in_driver = table.capabilities.persons_in_driver  # policy set union holds each person's values
    if method.startswith("policy") and not in_driver:
        raise ParameterError(
            f"mechanism {method!r} reads each person's values into the driver: use the DuckDB "
            "engine, or mechanism='laplace' / 'gaussian'"
        )
    book = open_ledger(ledger)
    # A released set is valid whatever it was selected by: "auto" and the optimal rule select
    # by persons (measured: more values released, recall as high; docs/partition_selection.md,
    # section 6), the other mechanisms named by the user count rows at r.
    by_persons = rows_cap > 1 and method in ("auto", "optimal")
    if method == "auto":
        method = choose_keys_method(eps, dlt, c, not in_driver)
    r_sel = 1 if by_persons else rows_cap  # what the selection counts: rows per value
    policy: SetUnionPlan | None = None
    bound = c  # the contributions kept per person
    if method == "optimal":
        measurement = make_optimal_partition_selection(eps, dlt, source=source)
        name = OPTIMAL_NAME
        sure = optimal_sure_count(eps, dlt)
        described: dict[str, Any] = {}
        if c > 1:  # DVGM22 is proven for one value per person: keep one (a stricter bound)
            bound = 1
            name += ", each person bounded to one value"
            described = {"values_kept_per_person": 1}
    elif method.startswith("policy"):
        noise: Literal["laplace", "gaussian"] = (
            "laplace" if method == "policy_laplace" else "gaussian"
        )
        policy = set_union_plan(noise, eps, dlt, c, max_rows_per_value=r_sel)
        measurement = make_policy_set_union(policy, source=source)
        name = POLICY_NAMES[noise]
        sure = policy_sure_count(policy)
        described = {"rho": policy.rho, "gamma": policy.gamma, "scale": policy.scale}
    else:
        plan = threshold_plan("laplace" if method == "laplace" else "gaussian", eps, dlt, c,
                              max_rows_per_value=r_sel)  # fmt: skip
        measurement = make_threshold_partition_selection(plan, counts=False, source=source)
        name = (
            "partition selection by thresholding exact discrete "
            f"{'Laplace' if method == 'laplace' else 'Gaussian'} counts (Korolova et al. 2009; "
            "Wilson et al. 2020)"
        )
        sure = sure_release_count(plan)
        described = {"threshold": plan.threshold, "scale": plan.scale}
    spent_eps, spent_delta = measurement.map(1)
    if by_persons:  # a set release: selecting by persons is valid whatever r
        name += "; values selected by persons (a released set needs no row counts)"
        described["selected_by"] = "persons"
    parameters = {
        "column": column,
        "epsilon": eps,
        "delta": dlt,
        "privacy_unit": privacy_unit,
        "max_contributions": c,
        "max_rows_per_value": rows_cap,
        "mechanism": method,
        **described,
    }
    accuracy = (
        f"accuracy: a value {counted_in_words(sure, r_sel)} is "
        f"released with probability at least {CONFIDENCE:.0%}, "
        + (
            "whatever the other values (persons spend their weight on the values that still "
            "need it); "
            if policy is not None
            else "each value independently; "
        )
        + f"a value held by one person only is released with probability at most {dlt:.3g}"
    )

    def release() -> Any:
        salt = resolve_source(source).bits(63)
        if policy is not None:
            assert privacy_unit is not None  # checked above
            rule = UnitRule(privacy_unit, c, r_sel, salt=salt)
            values = measurement(table.person_values(Query(column, rule, progress=progress)))
        else:
            rule = UnitRule(privacy_unit, bound, r_sel, salt=salt)
            values = measurement(dict(table.counts(Query(column, rule, progress=progress))))
        return KeysResult(
            ordered_values(values),
            name,
            float(spent_eps),
            float(spent_delta),
            accuracy,
            None if book is None else book.path,
            parameters,
        )

    refusal = (
        "partition selection costs (epsilon, delta) with delta > 0, which the zCDP ledger "
        f"{getattr(book, 'path', None)} cannot take: use a basic ledger"
    )
    return charge_then(
        book, release, spent_eps, spent_delta, None, "approx", f"keys/{method}", parameters,
        refusal=refusal, privacy_unit=privacy_unit, source=table.description,
    )  # fmt: skip


# ------------------------------------------------------------------------------------------
# Top-k without candidates


# ------------------------------------------------------------------------------------------
# Policy set union, then the top k among the released values


#: ``top_k(candidates=None, mechanism="auto")`` runs :func:`make_policy_top_k` from this many
#: values per person on (with ``epsilon >= POLICY_TOP_K_MIN_EPSILON``, a privacy unit, DuckDB).
POLICY_TOP_K_MIN_CONTRIBUTIONS = 10
#: ... and from this epsilon on.
POLICY_TOP_K_MIN_EPSILON = 1.0


def use_policy_top_k(k: int, epsilon: float, delta: float, max_contributions: int,
                     spark: bool = False) -> bool:  # fmt: skip
    """Whether the unknown-domain ``auto`` path runs policy set union then the top ``k``: a
    pure function of public facts. Measured (``bench/bench_utility.py --unknown-c``, 30-40
    trials a cell, docs/performance.md): with 10 values per person and epsilon 1 / 2 it found
    as many of the top 10 as Gaussian thresholding or more (airport name words: 0.557 / 0.830
    against 0.533 / 0.797; Zipf persons: 1.000 both); at epsilon 0.5 slightly fewer (0.293
    against 0.307), and with 2 or 5 values or at epsilon 0.1 clearly fewer (the set union's
    half of the budget costs the ranking more than its lower threshold gains).

    Parameters
    ----------
    k : int
        How many values to release (not used by the rule).
    epsilon : float
        The release's epsilon.
    delta : float
        The release's delta (not used by the rule).
    max_contributions : int
        The most distinct values one person keeps.
    spark : bool, default False
        Whether the data are on the Spark engine (it does not hold persons in the driver).

    Returns
    -------
    bool
        True for the policy path: not Spark, ``max_contributions >=
        POLICY_TOP_K_MIN_CONTRIBUTIONS`` (10) and ``epsilon >= POLICY_TOP_K_MIN_EPSILON`` (1).
    """
    del k, delta  # the measured rule did not depend on them; kept for a stable signature
    return (
        not spark
        and max_contributions >= POLICY_TOP_K_MIN_CONTRIBUTIONS
        and epsilon >= POLICY_TOP_K_MIN_EPSILON
    )


def _holds_persons(data: Any, column: str, privacy_unit: str | None, schema: Any) -> bool:
    """Whether the engine that holds ``data`` can hold each person's values in the driver
    (:attr:`dpselect.data.engine.Capabilities.persons_in_driver`; a public fact: the type
    of the input)."""
    return bool(open_checked(data, column, privacy_unit, schema).capabilities.persons_in_driver)


def _policy_top_k(
    data: Any,
    column: str,
    k: int,
    eps: float,
    delta: float,
    privacy_unit: str,
    c: int,
    counts: bool,
    source: RandomSource | None,
    progress: Progress,
    schema: Any = None,
    r: int = 1,
) -> UnknownDomainPlan:
    """Policy Laplace set union, then the top ``k`` of the released values (charged once;
    ``r``: ``max_rows_per_value``, both stages counting rows)."""
    plan = policy_top_k_plan(k, eps, delta, c, max_rows_per_value=r)
    measurement = make_policy_top_k(plan, counts=counts, source=source)
    spent_eps, spent_delta = (float(x) for x in measurement.map(1))
    table = open_checked(data, column, privacy_unit, schema)
    sure = policy_sure_count(plan.set_union)
    accuracy = (
        f"accuracy: a value {counted_in_words(sure, r)} is "
        f"released by the set union with probability at least {CONFIDENCE:.0%}, whatever the "
        "other values; the released values are then ranked by the top-k mechanism chosen for "
        f"their number at epsilon = {printed_up(plan.epsilon_top_k)}, delta = "
        f"{plan.delta_top_k:.3g}"
    )
    parameters = _parameters(column, k, eps, delta, privacy_unit, c, "policy_top_k") | {
        "max_rows_per_value": r,
        "set_union_epsilon": plan.set_union.epsilon,
        "set_union_delta": plan.set_union.delta,
        "rho": plan.set_union.rho,
        "scale": plan.set_union.scale,
    }

    def pick() -> tuple[list[Any], list[Any] | None]:
        salt = resolve_source(source).bits(63)
        rule = UnitRule(privacy_unit, c, r, salt=salt)
        persons = table.person_values(Query(column, rule, progress=progress))
        values, noisy = measurement(persons)
        return values, noisy if counts else None

    return UnknownDomainPlan(pick, (spent_eps, spent_delta), POLICY_TOP_K_NAME,
                             "top_k/policy_top_k", accuracy, parameters, table.description,
                             float(sure))  # fmt: skip


def top_k_unknown_domain(
    data: Any,
    column: str,
    k: int,
    eps: float,
    delta: float,
    privacy_unit: str | None,
    max_contributions: int,
    mech: str,
    counts: bool,
    ledger: Any,
    source: RandomSource | None,
    progress: Progress,
    k_bar: int | None,
    *,
    schema: Any = None,
    max_rows_per_value: int = 1,
) -> TopKResult:
    """The ``candidates=None`` path of :func:`dpselect.top_k` (module docstring): the plan of
    :func:`unknown_domain_plan`, charged, then run.

    Parameters
    ----------
    data : str, path, DataFrame, relation or Table
        The private rows, as for :func:`dpselect.top_k`.
    column : str
        The column whose values are released.
    k : int
        How many values to release.
    eps, delta : float
        The release's ``(epsilon, delta)``, for one person (or row) added or removed.
    privacy_unit : str or None
        The column identifying people (``None``: each row is a person).
    max_contributions : int
        The most distinct values one person keeps.
    mech : str
        ``"auto"``, ``"laplace_histogram"``, ``"gaussian_histogram"`` or ``"gumbel"`` (the
        limited domain).
    counts : bool
        Whether to release the noisy counts too (histogram mechanisms only).
    ledger : Ledger, str, path or None
        The budget ledger charged before the data are read (``None``: none).
    source : RandomSource or None
        The randomness (``None``: the private default; a seeded source for tests only).
    progress : callable or None
        ``progress(percent)`` while the data are scanned.
    k_bar : int or None
        The limited domain's ``k_bar >= k`` (default ``k + 10``); implies ``"gumbel"`` under
        ``"auto"`` and is refused by the other mechanisms.
    schema : dict, optional
        Declared column types.
    max_rows_per_value : int, default 1
        ``r``, the most rows one person adds to one value's count (only with a unit).

    Returns
    -------
    TopKResult
        The released values, best first (and their noisy counts with ``counts``).
    """
    plan = unknown_domain_plan(data, column, k, eps, delta, privacy_unit, max_contributions,
                               mech, counts, source, progress, k_bar, schema=schema,
                               max_rows_per_value=max_rows_per_value)  # fmt: skip
    return run_unknown_domain_plan(open_ledger(ledger), plan)


def unknown_domain_plan(
    data: Any,
    column: str,
    k: int,
    eps: float,
    delta: float,
    privacy_unit: str | None,
    max_contributions: int,
    mech: str,
    counts: bool,
    source: RandomSource | None,
    progress: Progress,
    k_bar: int | None,
    *,
    schema: Any = None,
    max_rows_per_value: int = 1,
) -> UnknownDomainPlan:
    """The ``candidates=None`` top-k at ``max_contributions``, planned and checked from
    public facts, not charged (module docstring).

    ``max_rows_per_value = r > 1``: every path calibrated to counts that move by ``r``
    (thresholding, the limited domain, and policy set union then the top-k, both stages
    counting rows: :func:`dpselect.mechanisms.policy_top_k.make_policy_top_k`); ``"auto"``
    applies the same rule as at ``r = 1`` (:func:`use_policy_top_k`; measured at ``r`` = 10
    and 50 on NYC flights, ``bench/bench_rows_set_union.py``: precision 0.730 and 0.865
    against 0.755 and 0.850 for the thresholding ``"auto"`` picks, equal within the 95%
    intervals).

    Parameters
    ----------
    data : str, path, DataFrame, relation or Table
        The private rows, as for :func:`dpselect.top_k`.
    column : str
        The column whose values are released.
    k : int
        How many values to release.
    eps, delta : float
        The release's ``(epsilon, delta)``, for one person (or row) added or removed.
    privacy_unit : str or None
        The column identifying people (``None``: each row is a person).
    max_contributions : int
        The most distinct values one person keeps.
    mech : str
        ``"auto"``, ``"laplace_histogram"``, ``"gaussian_histogram"`` or ``"gumbel"`` (the
        limited domain).
    counts : bool
        Whether to release the noisy counts too (histogram mechanisms only).
    source : RandomSource or None
        The randomness (``None``: the private default; a seeded source for tests only).
    progress : callable or None
        ``progress(percent)`` while the data are scanned.
    k_bar : int or None
        The limited domain's ``k_bar >= k`` (default ``k + 10``); implies ``"gumbel"`` under
        ``"auto"`` and is refused by the other mechanisms.
    schema : dict, optional
        Declared column types.
    max_rows_per_value : int, default 1
        ``r``, the most rows one person adds to one value's count (only with a unit).

    Returns
    -------
    UnknownDomainPlan
        The calibrated plan: its cost, its statements and ``pick`` (run only after a charge).
    """
    c = max_contributions
    r = check_rows_per_value(max_rows_per_value, privacy_unit)
    if mech == "auto":
        if k_bar is not None:
            mech = "gumbel"
        elif privacy_unit is not None and use_policy_top_k(
            k, eps, delta, c, not _holds_persons(data, column, privacy_unit, schema)
        ):
            return _policy_top_k(
                data, column, k, eps, delta, privacy_unit, c, counts, source, progress, schema,
                r,
            )  # fmt: skip
        else:
            mech = choose_unknown_domain(k, eps, delta, c, r)[0].mechanism
    if mech not in ("gumbel", "laplace_histogram", "gaussian_histogram"):
        raise ParameterError(
            "without a candidates list the mechanism is 'auto', 'laplace_histogram', "
            f"'gaussian_histogram' or 'gumbel' (limited domain), got {mech!r}"
        )
    if mech == "gumbel":
        if counts:
            raise ParameterError(
                "counts=True without candidates needs a histogram mechanism (the limited-domain "
                "top-k releases no counts)"
            )
        return _limited_domain(
            data, column, k, eps, delta, privacy_unit, c, source, progress, k_bar, schema, r,
        )  # fmt: skip
    if k_bar is not None:
        raise ParameterError("k_bar applies only to the limited-domain mechanism")
    noise: Literal["laplace", "gaussian"] = "laplace" if mech == "laplace_histogram" else "gaussian"
    plan = threshold_plan(noise, eps, delta, c, max_rows_per_value=r)
    measurement = make_threshold_partition_selection(plan, counts=True, source=source)
    spent_eps, spent_delta = (float(x) for x in measurement.map(1))
    table = open_checked(data, column, privacy_unit, schema)
    sure = sure_release_count(plan)
    option = next(o for o in choose_unknown_domain(k, eps, delta, c, r)[1] if o.mechanism == mech)
    half = noise_halfwidth(plan)
    accuracy = (
        f"accuracy: a value {counted_in_words(sure, r)} is "
        f"released with probability at least {CONFIDENCE:.0%}; released values are ranked by "
        f"noisy count; for any one value, its noisy count is within +-{half} of its true "
        f"count with probability at least {CONFIDENCE:.0%} (counts just above the threshold "
        f"{plan.threshold} lean high: they were kept because their noise was)"
    )
    parameters = _parameters(column, k, eps, delta, privacy_unit, c, f"{noise}_threshold") | {
        "scale": plan.scale,
        "threshold": plan.threshold,
        "max_rows_per_value": r,
    }

    def pick() -> tuple[list[Any], list[Any] | None]:
        salt = resolve_source(source).bits(63)
        rule = UnitRule(privacy_unit, c, r, salt=salt)
        hist = dict(table.counts(Query(column, rule, progress=progress)))
        kept: dict[Any, int] = measurement(hist)
        ranked = rank_released(kept, k, source)
        return ranked, [kept[v] for v in ranked] if counts else None

    return UnknownDomainPlan(pick, (spent_eps, spent_delta), THRESHOLD_NAMES[noise],
                             f"top_k/{noise}_threshold", accuracy, parameters,
                             table.description, float(option.criterion))  # fmt: skip


def _limited_domain(
    data: Any,
    column: str,
    k: int,
    eps: float,
    delta: float,
    privacy_unit: str | None,
    c: int,
    source: RandomSource | None,
    progress: Progress,
    k_bar: int | None,
    schema: Any = None,
    r: int = 1,
) -> UnknownDomainPlan:
    """DR19's limited-domain top-k, the rounds composed by the tightest adaptive theorem
    (``r``: ``max_rows_per_value``, its scale and threshold ``r`` times larger)."""
    k_bar = k + K_BAR_EXTRA if k_bar is None else check_int(k_bar, "k_bar", minimum=k)
    per_round = limited_domain_per_round(k, eps, delta)
    d_thr = delta / 2
    # The measurement's own map composes the k rounds by the tightest valid theorem (DR19,
    # Theorem 1 admits any valid bound for k adaptive eps-bounded-range rounds): the ledger is
    # charged exactly what the map states.
    measurement = make_limited_domain_top_k(
        k, k_bar, per_round, d_thr, max_contributions=c, delta_prime=delta / 2, source=source,
        max_rows_per_value=r,
    )  # fmt: skip
    spent_eps, spent_delta = (float(x) for x in measurement.map(r))
    theorem = limited_domain_accounting(per_round, k, delta / 2)[1]
    table = open_checked(data, column, privacy_unit, schema)
    threshold = r * limited_domain_threshold(per_round, d_thr, k_bar, c)
    scale = r / per_round
    margin = threshold + scale * math.log(CONFIDENCE / (1 - CONFIDENCE))
    parameters = _parameters(column, k, eps, delta, privacy_unit, c, "limited_domain") | {
        "k_bar": k_bar,
        "max_rows_per_value": r,
        "accounting": theorem,
        "scale": scale,
        "threshold": threshold,
    }
    accuracy = (
        f"accuracy: a value whose score exceeds the {ordinal(k_bar + 1)} largest score by "
        f"at least {printed_up(margin)} is ranked above the stopping threshold with probability at "
        f"least {CONFIDENCE:.0%} (Gumbel noise, Durfee and Rogers 2019)"
    )

    def pick() -> tuple[list[Any], list[Any] | None]:
        salt = resolve_source(source).bits(63)
        rule = UnitRule(privacy_unit, c, r, salt=salt)
        top = table.counts(Query(column, rule, progress=progress), k_bar + 1)
        return list(measurement(dict(top))), None

    return UnknownDomainPlan(pick, (spent_eps, spent_delta), LIMITED_DOMAIN_NAME,
                             "top_k/limited_domain", accuracy, parameters, table.description,
                             float(margin))  # fmt: skip


def _parameters(column: str, k: int, eps: float, delta: float, privacy_unit: str | None,
                c: int, mechanism: str) -> dict[str, Any]:  # fmt: skip
    """The parameters every unknown-domain top-k records (each path adds its own)."""
    return {
        "column": column,
        "k": k,
        "epsilon": eps,
        "delta": delta,
        "privacy_unit": privacy_unit,
        "max_contributions": c,
        "max_rows_per_value": 1,  # the paths that count rows replace it
        "mechanism": mechanism,
    }


def _charge_then_result(
    book: Any,
    pick: Callable[[], tuple[list[Any], list[Any] | None]],
    spent: tuple[float, float],
    mechanism: str,
    entry: str,
    accuracy: str,
    parameters: dict[str, Any],
    described: str,
) -> TopKResult:
    """Charge ``spent`` (approximate DP) as ``entry`` (recording the query's privacy unit and
    ``described``, the data's description), then run ``pick`` (the released values and, if
    asked, their noisy counts) and wrap them as a :class:`TopKResult`."""

    def release() -> TopKResult:
        values, noisy = pick()
        return TopKResult(
            candidates=values,
            indices=None,
            mechanism=mechanism,
            epsilon=spent[0],
            delta=spent[1],
            rho=None,
            accuracy=accuracy,
            counts=noisy,
            ledger=None if book is None else book.path,
            parameters=parameters,
        )

    return charge_then(
        book, release, spent[0], spent[1], None, "approx", entry, parameters,
        privacy_unit=parameters["privacy_unit"], source=described,
    )  # fmt: skip
