"""Grouped partition selection: a partition selection with ``by``.

``dp.partition_selection(data, "dest", epsilon=..., delta=..., by="carrier")`` releases the values
publishable in every group of ``by`` in one scan and one charge; the accounting, the groups
(public or private) and the result are :mod:`dpselect.recipes.grouping`'s
(docs/grouped_releases.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..data.query import PrivateGroups, PublicGroups, Query, UnitRule
from ..mechanisms.partition_selection import (
    make_optimal_partition_selection,
    make_threshold_partition_selection,
    ordered_values,
    threshold_plan,
)
from ..planning.top_k_plan import CONFIDENCE
from ..sampling.source import RandomSource
from ._common import open_ledger
from .grouping import (
    GroupedQuery,
    GroupedResult,
    charge_grouped,
    check_groups,
    chosen_by_text,
    composition_text,
    draw_salts,
    group_selection,
    selected_groups,
    split_budget,
    total_cost,
)
from .release import open_checked
from .unknown_domain_plans import Progress

if TYPE_CHECKING:
    from ..accounting.ledger import Ledger
    from ..planning.partition_selection_request import PartitionSelectionRequest

__all__ = ["grouped_partition_selection"]


def grouped_partition_selection(
    data: Any,
    request: PartitionSelectionRequest,
    *,
    ledger: Ledger | str | None = None,
    source: RandomSource | None = None,
    progress: Progress = None,
    schema: Any = None,
) -> GroupedResult:
    """The values of the request's column that can be published in every group of its ``by``.

    Each group runs partition selection at ``(epsilon_g, delta_g)``. ``"auto"`` and
    ``"optimal"``: DVGM22's optimal rule, each person counting once toward one value of the
    group (a released set is valid whatever selected it: with ``rows_per_value > 1`` it
    selects by persons, which released the most values in every measured cell,
    docs/partition_selection.md, section 6; ungrouped ``"auto"`` on an engine without persons in
    the driver chooses the same). ``"laplace"`` / ``"gaussian"``: thresholding of exact counts
    calibrated to L0 ``m`` and L-infinity ``r``. Policy set union is not run per group.
    Accounting: :mod:`dpselect.recipes.grouping`.

    Parameters
    ----------
    data : Engine, str, path, DataFrame, relation, Series or array
        The private rows, as for :func:`dpselect.recipes.unknown_domain.partition_selection`.
    request : PartitionSelectionRequest
        The query's checked public arguments, with ``by``
        (:func:`~dpselect.planning.partition_selection_request.partition_selection_request`).
    ledger, source, progress, schema
        As for :func:`dpselect.recipes.unknown_domain.partition_selection`.

    Returns
    -------
    GroupedResult
        One :class:`~dpselect.recipes.unknown_domain.KeysResult` per group.
    """
    a = request
    assert a.by is not None
    column, by, privacy_unit, mechanism = a.column, a.by, a.privacy_unit, a.mechanism
    eps, dlt, m, r = a.epsilon, a.delta, a.max_contributions, a.rows_per_value
    table = open_checked(data, column, privacy_unit, schema)
    grouping = check_groups(table, column, by, a.groups, privacy_unit, a.max_groups,
                            a.group_fraction)  # fmt: skip
    private = grouping.listed is None
    budget = split_budget(eps, dlt, grouping, 0.5)
    book = open_ledger(ledger)
    selection = group_selection(grouping, budget, privacy_unit, source) if private else None
    select_cost = (0.0, 0.0) if selection is None else (selection[1], selection[2])
    keys = _group_keys_plan(mechanism, budget.group_epsilon, budget.group_delta, m, r, source)
    each = tuple(float(x) for x in keys.measurement.map(1))
    total = total_cost(budget, grouping, (each[0], each[1]), select_cost)
    parameters = {
        "column": column, "epsilon": eps, "delta": dlt, "by": by,
        "groups": "private" if private else len(grouping.listed or []),
        "max_groups": grouping.max_groups, "privacy_unit": privacy_unit,
        "max_contributions": m, "max_rows_per_value": r, "mechanism": keys.method,
        "group_epsilon": each[0], "group_delta": each[1],
        "selected_by": "persons" if keys.r_sel == 1 else "rows",
    }  # fmt: skip
    query = GroupedQuery(table, column, by, privacy_unit, grouping, source, progress)
    costs = ((each[0], each[1]), total, select_cost)

    def release() -> GroupedResult:
        return _grouped_keys_release(query, keys, selection, book, costs, parameters)

    return charge_grouped(book, release, (total[0], total[1], None), "approx",
                   f"keys/by/{keys.method}", parameters, privacy_unit, table)  # fmt: skip


@dataclass(frozen=True)
class _GroupKeys:
    """One group's partition selection, calibrated: the mechanism run (``method``, its
    measurement and name), the count a value needs to be released surely, the values kept
    per person and group (``bound``) and the rows counted per value (``r_sel``)."""

    method: str
    measurement: Any
    name: str
    sure: Any
    bound: int
    r_sel: int


def _group_keys_plan(mechanism: str, eg: float, dg: float, m: int, r: int,
                     source: RandomSource | None) -> _GroupKeys:  # fmt: skip
    """The per-group partition selection at ``(eg, dg)``: DVGM22's optimal rule for
    ``"auto"`` and ``"optimal"`` (by persons, one value each), else thresholding."""
    from .unknown_domain_plans import OPTIMAL_NAME, optimal_sure_count, sure_release_count

    method = "optimal" if mechanism == "auto" else mechanism
    bound, r_sel = m, r  # the values kept per person and group, the rows counted per value
    if method == "optimal":
        measurement = make_optimal_partition_selection(eg, dg, source=source)
        name, sure = OPTIMAL_NAME, optimal_sure_count(eg, dg)
        r_sel = 1  # DVGM22 counts persons: the set it releases needs no row counts
        if m > 1:  # DVGM22 is proven for one value per person: keep one (a stricter bound)
            bound, name = 1, name + ", each person bounded to one value per group"
    else:
        plan = threshold_plan(method, eg, dg, m, max_rows_per_value=r)  # type: ignore[arg-type]
        measurement = make_threshold_partition_selection(plan, counts=False, source=source)
        name = (
            "partition selection by thresholding exact discrete "
            f"{method.title()} counts (Korolova et al. 2009; Wilson et al. 2020)"
        )
        sure = sure_release_count(plan)
    return _GroupKeys(method, measurement, name, sure, bound, r_sel)


def _grouped_keys_release(
    query: GroupedQuery,
    keys: _GroupKeys,
    selection: Any,
    book: Any,
    costs: tuple[tuple[float, float], tuple[float, float], tuple[float, float]],
    parameters: dict[str, Any],
) -> GroupedResult:
    """After the charge: read every group's counts (the salts drawn) and run its selection.
    ``costs``: one group's, the whole release's and the selection's ``(epsilon, delta)``."""
    from .unknown_domain_plans import KeysResult, counted_in_words

    (each, total, select_cost), grouping = costs, query.grouping
    table, column, by, privacy_unit = query.table, query.column, query.by, query.privacy_unit
    bound, r_sel, progress, measurement = keys.bound, keys.r_sel, query.progress, keys.measurement
    accuracy = (
        f"a value {counted_in_words(keys.sure, r_sel)} in its group is released with probability "
        f"at least {CONFIDENCE:.0%}; a value held by one person only, with probability at most "
        f"{each[1]:.3g}"
    )
    accounting = composition_text(
        grouping, privacy_unit, None if selection is None else selection[4]
    )
    salt, group_salt = draw_salts(query.source)
    rule = UnitRule(privacy_unit=privacy_unit, values_per_unit=bound, rows_per_value=r_sel,
                    groups_per_unit=grouping.max_groups, salt=salt,
                    group_salt=group_salt)  # fmt: skip
    if selection is None:
        names = list(grouping.listed or [])
        found = table.counts(Query(column, rule, PublicGroups(by, names), progress))
    else:  # private groups: the persons and the counts from one scan
        discovered = table.counts(Query(column, rule, PrivateGroups(by), progress))
        assert discovered.values is not None
        names, where = selected_groups(discovered, selection)
        found = [discovered.values[j] for j in where]
    releases = [
        KeysResult(
            ordered_values(measurement(dict(f))),
            keys.name,
            each[0],
            each[1],
            accuracy,
            None if book is None else book.path,
            {},
        )
        for f in found
    ]
    return GroupedResult(
        "partition_selection", by, column, names, releases, total[0], total[1], None,
        each[0], each[1], grouping.max_groups,
        chosen_by_text(grouping, selection, *select_cost), keys.name, accounting, accuracy,
        None if book is None else book.path, parameters,
    )  # fmt: skip
