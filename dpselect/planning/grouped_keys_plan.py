"""The plan of a grouped partition selection (``partition_selection(by=...)``).

One planner, :func:`grouped_keys_plan`, reads public facts only (the checked request, the
table's schema through the :class:`~dpselect.data.engine.Engine` interface and, with a public
list and no unit, how many listed groups one value of ``by`` matches) and returns everything
the release runs: the grouping (:func:`~dpselect.planning.group_plan.check_groups`), the
budget split (:func:`~dpselect.planning.group_plan.split_budget`: private groups take
``group_fraction`` of epsilon and half of delta), the private selection of groups
(:func:`~dpselect.planning.group_plan.group_selection`), each group's selection
(:func:`~dpselect.planning.partition_selection_plan.group_keys_plan`), the charge (the
selection plus ``G`` groups, :func:`~dpselect.planning.group_plan.total_cost`; proof in
:mod:`dpselect.planning.group_plan`), the ledger entry's parameters and the stages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..data.engine import Engine
from ..sampling.source import RandomSource
from .group_plan import (
    Grouping,
    GroupSelection,
    check_groups,
    group_selection,
    group_stages,
    split_budget,
    total_cost,
)
from .partition_selection_plan import GroupKeys, group_keys_plan
from .partition_selection_request import PartitionSelectionRequest
from .stage import Stage

__all__ = ["GroupedKeysPlan", "grouped_keys_plan"]


@dataclass(frozen=True)
class GroupedKeysPlan:
    """A grouped partition selection, planned and checked, not yet charged.

    Attributes
    ----------
    grouping : Grouping
        The checked grouping.
    selection : GroupSelection or None
        The private selection of groups (``None``: a public list).
    keys : GroupKeys
        Each group's selection.
    each : (float, float)
        One group's ``(epsilon_g, delta_g)`` as spent (its map at one person).
    select_cost : (float, float)
        The selection's ``(epsilon, delta)`` (``(0, 0)`` with a public list).
    total : (float, float)
        The charge: the selection plus ``G`` groups, rounded up.
    parameters : dict
        The ledger entry's and the result's public parameters.
    stages : tuple of Stage
        The selection of groups (if any), then the per-group selection run ``G`` times.
    """

    grouping: Grouping
    selection: GroupSelection | None
    keys: GroupKeys
    each: tuple[float, float]
    select_cost: tuple[float, float]
    total: tuple[float, float]
    parameters: dict[str, Any]
    stages: tuple[Stage, ...]

    @property
    def entry(self) -> str:
        """The ledger entry's mechanism name."""
        return f"keys/by/{self.keys.method}"


def grouped_keys_plan(
    table: Engine, request: PartitionSelectionRequest, source: RandomSource | None = None
) -> GroupedKeysPlan:
    """Plan ``request``'s grouped partition selection from public facts (module docstring).

    Parameters
    ----------
    table : Engine
        The opened table (its schema only is read, and with a public list and no unit, how many
        listed groups one value of ``by`` matches).
    request : PartitionSelectionRequest
        The checked request, with ``by``.
    source : RandomSource or None
        The randomness the measurements draw from (``None``: the private default).

    Returns
    -------
    GroupedKeysPlan
        The grouping, the selection of groups, each group's selection, the charge, the
        parameters and the stages.
    """
    a = request
    assert a.by is not None
    grouping = check_groups(table, a.column, a.by, a.groups, a.privacy_unit, a.max_groups,
                            a.group_fraction)  # fmt: skip
    private = grouping.listed is None
    budget = split_budget(a.epsilon, a.delta, grouping, 0.5)
    selection = group_selection(grouping, budget, a.privacy_unit, source) if private else None
    select_cost = (0.0, 0.0) if selection is None else (selection.epsilon, selection.delta)
    keys = group_keys_plan(a.mechanism, budget.group_epsilon, budget.group_delta,
                           a.max_contributions, a.rows_per_value, source)  # fmt: skip
    each_stage = keys.stage()
    each = (each_stage.epsilon, each_stage.delta)
    total = total_cost(budget, grouping, each, select_cost)
    parameters = {
        "column": a.column, "epsilon": a.epsilon, "delta": a.delta, "by": a.by,
        "groups": "private" if private else len(grouping.listed or []),
        "max_groups": grouping.max_groups, "privacy_unit": a.privacy_unit,
        "max_contributions": a.max_contributions, "max_rows_per_value": a.rows_per_value,
        "mechanism": keys.method, "group_epsilon": each[0], "group_delta": each[1],
        "selected_by": "persons" if keys.r_sel == 1 else "rows",
    }  # fmt: skip
    stages = group_stages(grouping, selection, each_stage)
    return GroupedKeysPlan(grouping, selection, keys, each, select_cost, total, parameters,
                           stages)  # fmt: skip
