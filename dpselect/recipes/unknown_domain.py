"""Values from the data: partition selection, and the release of a top-k without candidates.

``partition_selection(data, request)`` answers "which values can I publish at
all": DVGM22's optimal partition selection for one value per person; for more (with a privacy
unit, on an engine that holds persons in the driver) policy set union (Gopi et al. 2020,
Policy Laplace: persons spend their weight on the values that still need it,
:mod:`dpselect.mechanisms.set_union`); thresholding of exact Laplace or Gaussian counts on
request or on an engine that does not (the one with the lower threshold, a public fact).

``top_k`` without ``candidates`` is planned by :mod:`dpselect.recipes.unknown_domain_top_k`
(thresholding then the top k, the limited domain, or policy set union then the top k, chosen
by public facts) and released here: :func:`top_k_unknown_domain` charges the plan once, then
runs it (:func:`run_unknown_domain_plan`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from ..core.errors import ParameterError
from ..data.engine import Engine
from ..data.query import Query, UnitRule
from ..mechanisms.partition_selection import (
    make_optimal_partition_selection,
    make_threshold_partition_selection,
    ordered_values,
    threshold_plan,
)
from ..mechanisms.set_union import (
    SetUnionPlan,
    make_policy_set_union,
    policy_sure_count,
    set_union_plan,
)
from ..planning.partition_selection_request import PartitionSelectionRequest
from ..planning.top_k_plan import CONFIDENCE
from ..sampling.source import RandomSource, resolve_source
from ._common import open_ledger
from .release import charge_then, open_checked
from .top_k_result import TopKResult
from .unknown_domain_plans import (
    K_BAR_EXTRA,
    OPTIMAL_NAME,
    POLICY_MIN_EPSILON,
    POLICY_NAMES,
    RANKING_SDS_PER_RANK,
    REFERENCE_OTHERS,
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
from .unknown_domain_top_k import UnknownDomainPlan, unknown_domain_plan

if TYPE_CHECKING:
    from ..accounting.ledger import Ledger
    from ..planning.top_k_request import TopKRequest
    from .grouping import GroupedResult

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
    "RANKING_SDS_PER_RANK",
    "REFERENCE_OTHERS",
    "KeysResult",
    "UnknownDomainOption",
    "choose_keys_method",
    "choose_unknown_domain",
    "partition_selection",
    "rank_released",
    "run_unknown_domain_plan",
    "top_k_unknown_domain",
]


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
    request: PartitionSelectionRequest,
    *,
    ledger: Ledger | str | None = None,
    source: RandomSource | None = None,
    progress: Progress = None,
    schema: Any = None,
) -> KeysResult | GroupedResult:
    """The values a checked :class:`PartitionSelectionRequest` may publish, from ``data``.

    :meth:`dpselect.Session.partition_selection`, :func:`dpselect.partition_selection` and the
    command line build the request
    (:func:`~dpselect.planning.partition_selection_request.partition_selection_request`: every
    public argument checked before anything is opened) and run it here.

    ``mechanism="auto"``: :func:`choose_keys_method` -- DVGM22's optimal partition selection when
    each unit has one value (``values_per_unit = 1``, the optimum for that case); with more,
    policy set union with Laplace noise (Gopi et al. 2020) from ``epsilon >=
    POLICY_MIN_EPSILON`` on an engine that holds persons in the driver, else the optimal rule
    with each unit bounded to one value (``bench/bench_utility.py --set-union`` measured both
    releasing more values than thresholding at the same guarantee). ``"optimal"`` with more
    values per unit keeps one value per unit. ``"laplace"`` / ``"gaussian"``: thresholding
    with ``values_per_unit`` values. ``"policy_laplace"`` / ``"policy_gaussian"`` run
    :mod:`dpselect.mechanisms.set_union` on each unit's values (held in the driver). With
    ``rows_per_value = r > 1`` each unit adds its rows with a value, at most ``r``, to its
    count: thresholding calibrated to L-infinity ``r``, L1 ``c r``, L2 ``r sqrt(c)``, Policy
    Laplace and Policy Gaussian with a budget and per-value caps of ``r``; ``"auto"`` and
    ``"optimal"`` select by units (docs/partition_selection.md, section 6). With ``by``: the
    values publishable in every group, in one query
    (:func:`dpselect.recipes.grouped_keys.grouped_partition_selection`). The released values
    come in a fixed order (sorted), never by count. Charged once, durably, before the data is
    read.

    Parameters
    ----------
    data : Engine, str, path, DataFrame, relation, Series or array
        The private rows: a table already opened (:class:`~dpselect.data.engine.Engine`) or
        anything :func:`~dpselect.data.tables.open_table` takes.
    request : PartitionSelectionRequest
        The query's checked public arguments.
    ledger : Ledger or str, optional
        The budget ledger (or its path) charged before any row is read.
    source : RandomSource, optional
        The randomness (a seeded source is for tests and demos only, not private).
    progress : callable, optional
        Called with the percentage done while the query runs.
    schema : dict, optional
        Declared column types (``{column: type}``) for text files.

    Returns
    -------
    KeysResult or GroupedResult
        The released values, the mechanism, the cost and how likely a value is shown (with
        ``by``: one per group).

    Raises
    ------
    ParameterError, DataError, BudgetExceeded
        Unusable data or too little budget left, before any budget is spent.

    Examples
    --------
    >>> import pandas as pd
    >>> from dpselect.planning.partition_selection_request import partition_selection_request
    >>> from dpselect.sampling import InsecureSeededSource  # reproducible, not private
    >>> rows = pd.DataFrame({"value": ["a"] * 500 + ["b"] * 3})
    >>> request = partition_selection_request("value", 1.0, 1e-6)
    >>> partition_selection(rows, request, source=InsecureSeededSource(1)).values
    ['a']
    """
    if request.by is None:
        query = _KeysQuery(request.column, request.epsilon, request.delta, request.privacy_unit,
                           request.max_contributions, request.rows_per_value, request.mechanism,
                           source, progress)  # fmt: skip
        return _select_keys(data, query, ledger, schema)
    from .grouped_keys import grouped_partition_selection

    return grouped_partition_selection(data, request, ledger=ledger, source=source,
                                       progress=progress, schema=schema)  # fmt: skip


@dataclass(frozen=True)
class _KeysQuery:
    """A partition selection's public parameters, checked (``c``: the values kept per person,
    ``rows_cap``: the rows counted per value)."""

    column: str
    eps: float
    dlt: float
    privacy_unit: str | None
    c: int
    rows_cap: int
    method: str
    source: RandomSource | None
    progress: Progress


def _select_keys(data: Any, query: _KeysQuery, ledger: Any, schema: Any) -> KeysResult:
    """Open the data (schema only), plan the selection, charge it once, then release the
    values (:func:`partition_selection`'s body after its checks)."""
    q = query
    column, privacy_unit, method = q.column, q.privacy_unit, q.method
    table = open_checked(data, column, privacy_unit, schema)
    in_driver = table.capabilities.persons_in_driver  # policy set union holds each person's values
    if method.startswith("policy") and not in_driver:
        raise ParameterError(
            f"mechanism {method!r} reads each person's values into the driver, which this "
            "engine does not: use the default engine, or mechanism='laplace' / 'gaussian'"
        )
    book = open_ledger(ledger)
    plan = _keys_plan(q, in_driver)
    spent_eps, spent_delta = plan.measurement.map(1)
    parameters = {
        "column": column,
        "epsilon": q.eps,
        "delta": q.dlt,
        "privacy_unit": privacy_unit,
        "max_contributions": q.c,
        "max_rows_per_value": q.rows_cap,
        "mechanism": plan.method,
        **plan.described,
    }
    accuracy = _keys_accuracy(plan, q.dlt)

    def release() -> KeysResult:
        values = _selected_values(table, q, plan)
        return KeysResult(
            ordered_values(values),
            plan.name,
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
        book, release, spent_eps, spent_delta, None, "approx", f"keys/{plan.method}",
        parameters, refusal=refusal, privacy_unit=privacy_unit, source=table.description,
    )  # fmt: skip


@dataclass(frozen=True)
class _KeysPlan:
    """A partition selection calibrated, not yet charged: the mechanism run (``method``, its
    measurement and name), the count a value needs to be released surely (``sure``), what the
    result records of it (``described``), the policy set union's plan (or ``None``), the
    values kept per person (``bound``) and the rows counted per value (``r_sel``)."""

    method: str
    measurement: Any
    name: str
    sure: Any
    described: dict[str, Any]
    policy: SetUnionPlan | None
    bound: int
    r_sel: int


def _keys_plan(query: _KeysQuery, in_driver: bool) -> _KeysPlan:
    """The mechanism of a partition selection (``"auto"``: :func:`choose_keys_method`, public
    facts), calibrated.

    A released set is valid whatever it was selected by: "auto" and the optimal rule select
    by persons (measured: more values released, recall as high; docs/partition_selection.md,
    section 6), the other mechanisms named by the user count rows at r."""
    q = query
    by_persons = q.rows_cap > 1 and q.method in ("auto", "optimal")
    method = q.method
    if method == "auto":
        method = choose_keys_method(q.eps, q.dlt, q.c, in_driver)
    r_sel = 1 if by_persons else q.rows_cap  # what the selection counts: rows per value
    if method == "optimal":
        plan = _optimal_keys(q, r_sel)
    elif method.startswith("policy"):
        plan = _policy_keys(q, method, r_sel)
    else:
        plan = _threshold_keys(q, method, r_sel)
    if by_persons:  # a set release: selecting by persons is valid whatever r
        plan = replace(
            plan,
            name=plan.name + "; values selected by persons (a released set needs no row counts)",
            described={**plan.described, "selected_by": "persons"},
        )
    return plan


def _optimal_keys(q: _KeysQuery, r_sel: int) -> _KeysPlan:
    """DVGM22's optimal partition selection (one value per person: a stricter bound when
    ``c > 1``)."""
    measurement = make_optimal_partition_selection(q.eps, q.dlt, source=q.source)
    name = OPTIMAL_NAME
    sure = optimal_sure_count(q.eps, q.dlt)
    described: dict[str, Any] = {}
    bound = q.c  # the contributions kept per person
    if q.c > 1:  # DVGM22 is proven for one value per person: keep one (a stricter bound)
        bound = 1
        name += ", each person bounded to one value"
        described = {"values_kept_per_person": 1}
    return _KeysPlan("optimal", measurement, name, sure, described, None, bound, r_sel)


def _policy_keys(q: _KeysQuery, method: str, r_sel: int) -> _KeysPlan:
    """Policy set union (Laplace or Gaussian) on each person's values."""
    noise: Literal["laplace", "gaussian"] = "laplace" if method == "policy_laplace" else "gaussian"
    policy = set_union_plan(noise, q.eps, q.dlt, q.c, max_rows_per_value=r_sel)
    measurement = make_policy_set_union(policy, source=q.source)
    described = {"rho": policy.rho, "gamma": policy.gamma, "scale": policy.scale}
    return _KeysPlan(method, measurement, POLICY_NAMES[noise], policy_sure_count(policy),
                     described, policy, q.c, r_sel)  # fmt: skip


def _threshold_keys(q: _KeysQuery, method: str, r_sel: int) -> _KeysPlan:
    """Thresholding of exact Laplace or Gaussian counts."""
    plan = threshold_plan("laplace" if method == "laplace" else "gaussian", q.eps, q.dlt, q.c,
                          max_rows_per_value=r_sel)  # fmt: skip
    measurement = make_threshold_partition_selection(plan, counts=False, source=q.source)
    name = (
        "partition selection by thresholding exact discrete "
        f"{'Laplace' if method == 'laplace' else 'Gaussian'} counts (Korolova et al. 2009; "
        "Wilson et al. 2020)"
    )
    described = {"threshold": plan.threshold, "scale": plan.scale}
    return _KeysPlan(method, measurement, name, sure_release_count(plan), described, None,
                     q.c, r_sel)  # fmt: skip


def _keys_accuracy(plan: _KeysPlan, dlt: float) -> str:
    """The accuracy statement of a partition selection."""
    return (
        f"accuracy: a value {counted_in_words(plan.sure, plan.r_sel)} is "
        f"released with probability at least {CONFIDENCE:.0%}, "
        + (
            "whatever the other values (persons spend their weight on the values that still "
            "need it); "
            if plan.policy is not None
            else "each value independently; "
        )
        + f"a value held by one person only is released with probability at most {dlt:.3g}"
    )


def _selected_values(table: Engine, q: _KeysQuery, plan: _KeysPlan) -> Any:
    """After the charge: read the data (a fresh salt) and run the selection."""
    column, privacy_unit, progress, r_sel = q.column, q.privacy_unit, q.progress, plan.r_sel
    measurement, c, bound = plan.measurement, q.c, plan.bound
    salt = resolve_source(q.source).bits(63)
    if plan.policy is not None:
        assert privacy_unit is not None  # checked above
        rule = UnitRule(privacy_unit, c, r_sel, salt=salt)
        return measurement(table.person_values(Query(column, rule, progress=progress)))
    rule = UnitRule(privacy_unit, bound, r_sel, salt=salt)
    return measurement(dict(table.counts(Query(column, rule, progress=progress))))


# ------------------------------------------------------------------------------------------
# Top-k without candidates: the release of a plan (unknown_domain_top_k)


def top_k_unknown_domain(
    data: Any,
    request: TopKRequest,
    *,
    ledger: Ledger | str | None = None,
    source: RandomSource | None = None,
    progress: Progress = None,
    schema: Any = None,
) -> TopKResult:
    """The ``candidates=None`` path of :func:`dpselect.recipes.top_k.top_k` (module docstring):
    the plan of :func:`unknown_domain_plan`, charged, then run.

    Parameters
    ----------
    data : str, path, DataFrame, relation or Engine
        The private rows, as for :func:`dpselect.recipes.top_k.top_k`.
    request : TopKRequest
        The top-k's checked arguments, without candidates, at a numeric ``max_contributions``
        (:func:`unknown_domain_plan`).
    ledger : Ledger, str, path or None
        The budget ledger charged before the data are read (``None``: none).
    source : RandomSource or None
        The randomness (``None``: the private default; a seeded source for tests only).
    progress : callable or None
        ``progress(percent)`` while the data are scanned.
    schema : dict, optional
        Declared column types.

    Returns
    -------
    TopKResult
        The released values, best first (and their noisy counts with ``counts``).
    """
    plan = unknown_domain_plan(data, request, source=source, progress=progress, schema=schema)
    return run_unknown_domain_plan(open_ledger(ledger), plan)


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
