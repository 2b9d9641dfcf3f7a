"""The budget of ``quantile(by=...)``: each group's share, per row and per person, the private
choice of groups, the charge and the stages, decided before the charge from public facts.

A grouped quantile runs the row-level quantile in every group on each person's kept rows (at
most ``r`` rows per person in a group: :func:`dpselect.data.rules.kept_rows`) at
``epsilon_g / r``, which is ``epsilon_g``-DP per person in that group (group privacy, Dwork
and Roth 2014, Theorem 2.2). Each person is in at most ``G`` groups, so the groups cost
``G epsilon_g`` (:mod:`dpselect.planning.group_plan`); private groups are selected first from
the same budget (adaptive composition, seed 002, "Theorem (Simple adaptive composition)").
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..core.arithmetic import float_up
from ..sampling.source import RandomSource
from .budget import divide
from .group_plan import (
    GroupBudget,
    Grouping,
    GroupSelection,
    group_selection,
    group_stages,
    split_budget,
    total_cost,
)
from .stage import Stage

__all__ = ["GroupedQuantileBudget", "grouped_quantile_budget"]


@dataclass(frozen=True)
class GroupedQuantileBudget:
    """A grouped quantile's budget, decided before the charge.

    Attributes
    ----------
    budget : GroupBudget
        The split between the selection of private groups and the groups.
    row_epsilon : float
        What each group's row-level quantile is calibrated to: ``epsilon_g / r``, rounded down.
    rows : int
        ``r``: the rows a person keeps in each group.
    selection : GroupSelection or None
        The calibrated selection of private groups (``None``: a public list).
    select : (float, float)
        The selection's ``(epsilon, delta)`` (``(0, 0)`` with a public list).
    each : (float, float)
        One group's cost per person: ``r * row_epsilon``, rounded up, and 0.
    total : (float, float)
        The charge: ``select + G * each``, rounded up.
    """

    budget: GroupBudget
    row_epsilon: float
    rows: int
    selection: GroupSelection | None
    select: tuple[float, float]
    each: tuple[float, float]
    total: tuple[float, float]

    def stages(self, grouping: Grouping, mechanism: str) -> tuple[Stage, ...]:
        """The release's stages: the selection of private groups (if any), then the quantile
        in each group (``G`` runs per person).

        Parameters
        ----------
        grouping : Grouping
            The checked grouping (``G``).
        mechanism : str
            The groups' quantile mechanism, as the results name it.

        Returns
        -------
        tuple of Stage
            In the order they run. A group's memory is its own quantile plan's (``explain`` of
            the quantile without ``by`` states it), so ``None`` here.
        """
        each = Stage("quantile in each group", mechanism, self.each[0])
        return group_stages(grouping, self.selection, each)


def grouped_quantile_budget(
    epsilon: float,
    delta: float,
    grouping: Grouping,
    rows: int,
    *,
    privacy_unit: str | None,
    source: RandomSource | None,
) -> GroupedQuantileBudget:
    """Plan a grouped quantile's budget (public facts only, before the charge).

    Parameters
    ----------
    epsilon, delta : float
        The release's total (``delta > 0`` only with private groups: all of it goes to their
        selection).
    grouping : Grouping
        The checked grouping (:func:`~dpselect.planning.group_plan.check_groups`).
    rows : int
        ``r >= 1``: the rows each person keeps in each group.
    privacy_unit : str or None
        The column identifying people (``None``: each row is a person, ``G = 1`` for the
        selection).
    source : RandomSource or None
        The randomness of the selection of private groups.

    Returns
    -------
    GroupedQuantileBudget
        The shares, the selection, the per-group and total costs.
    """
    budget = split_budget(epsilon, delta, grouping, 1.0)
    row_epsilon = divide(budget.group_epsilon, rows)
    selection = None
    if grouping.listed is None:
        selection = group_selection(grouping, budget, privacy_unit, source)
    select = (0.0, 0.0) if selection is None else (selection.epsilon, selection.delta)
    each = (float_up(Fraction(row_epsilon) * rows), 0.0)
    total = total_cost(budget, grouping, each, select)
    return GroupedQuantileBudget(budget, row_epsilon, rows, selection, select, each, total)
