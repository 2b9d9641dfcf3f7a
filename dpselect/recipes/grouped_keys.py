"""Grouped partition selection: a partition selection with ``by``.

``dp.partition_selection(data, "dest", epsilon=..., delta=..., by="carrier")`` releases the values
publishable in every group of ``by`` in one scan and one charge; the accounting, the groups
(public or private) and the result are :mod:`dpselect.recipes.grouping`'s
(docs/grouped_releases.md). The groups, the budget split, the private choice of groups and each
group's selection are planned by :func:`dpselect.planning.grouped_keys_plan.grouped_keys_plan`;
this module charges the plan once, with its stages, then reads the data and runs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..data.query import PrivateGroups, PublicGroups, Query, UnitRule
from ..mechanisms.partition_selection import ordered_values
from ..planning.grouped_keys_plan import GroupedKeysPlan, grouped_keys_plan
from ..planning.top_k_plan import CONFIDENCE
from ..sampling.source import RandomSource
from ._common import open_ledger
from .grouping import (
    GroupedQuery,
    GroupedResult,
    charge_grouped,
    chosen_by_text,
    composition_text,
    draw_salts,
    selected_groups,
)
from .release import open_checked
from .unknown_domain_result import KeysResult, Progress, counted_in_words

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
        One :class:`~dpselect.recipes.unknown_domain_result.KeysResult` per group.
    """
    a = request
    assert a.by is not None
    table = open_checked(data, a.column, a.privacy_unit, schema)
    plan = grouped_keys_plan(table, request, source)
    book = open_ledger(ledger)
    query = GroupedQuery(table, a.column, a.by, a.privacy_unit, plan.grouping, source, progress)

    def release() -> GroupedResult:
        return _grouped_keys_release(query, plan, book)

    return charge_grouped(book, release, (plan.total[0], plan.total[1], None), "approx",
                          plan.entry, plan.parameters, a.privacy_unit, table,
                          plan.stages)  # fmt: skip


def _grouped_keys_release(query: GroupedQuery, plan: GroupedKeysPlan, book: Any) -> GroupedResult:
    """After the charge: read every group's counts (the salts drawn) and run each group's
    selection."""
    keys, selection, grouping = plan.keys, plan.selection, plan.grouping
    each, total, select_cost = plan.each, plan.total, plan.select_cost
    table, column, by, privacy_unit = query.table, query.column, query.by, query.privacy_unit
    bound, r_sel, progress, measurement = keys.bound, keys.r_sel, query.progress, keys.measurement
    accuracy = (
        f"a value {counted_in_words(keys.sure, r_sel)} in its group is released with probability "
        f"at least {CONFIDENCE:.0%}; a value held by one person only, with probability at most "
        f"{each[1]:.3g}"
    )
    accounting = composition_text(
        grouping, privacy_unit, None if selection is None else selection.name
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
        None if book is None else book.path, plan.parameters,
    )  # fmt: skip
