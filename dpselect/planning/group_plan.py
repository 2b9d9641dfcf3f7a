"""The plan of a grouped release: its groups, its budget split, the private choice of groups.

A grouped release (``by=``; docs/grouped_releases.md) runs the ungrouped mechanism in every
group at ``(epsilon_g, delta_g)``; each person is in at most ``G`` groups, so the groups cost
``(G epsilon_g, G delta_g)`` (parallel composition over disjoint parts, McSherry 2009, Theorem
4; basic composition across a person's ``G`` groups, Dwork and Roth 2014, Theorem 3.16).
Private groups (``groups=None``) are first selected by partition selection, paid from the same
budget (adaptive composition, seed 002, "Theorem (Simple adaptive composition)").

Everything here reads public facts only (the schema, the parameters, a public list of
groups): :func:`check_groups` checks the grouping, :func:`split_budget` divides the budget,
:func:`group_selection` picks and calibrates the selection of private groups,
:func:`total_cost` states the charge and :func:`group_stages` the stages
:func:`~dpselect.planning.explaining.explain` prints. The recipes
(:mod:`dpselect.recipes.grouping` and the grouped forms of each query) run what is planned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, NamedTuple

from ..core.arithmetic import float_down, float_up
from ..core.errors import ParameterError, given
from ..data.candidates import load_candidates
from ..data.engine import Engine
from ..data.query import PublicGroups
from ..data.rules import check_bounded_candidates
from ..mechanisms.partition_selection import (
    make_optimal_partition_selection,
    make_threshold_partition_selection,
    threshold_plan,
)
from ..mechanisms.validate import check_int
from ..sampling.source import RandomSource
from .budget import divide, first_share
from .contributions import check_auto_fraction
from .partition_selection_plan import optimal_memory
from .stage import Stage
from .unknown_domain_choice import OPTIMAL_NAME, rows_threshold_method

__all__ = [
    "GROUP_FRACTION",
    "GroupBudget",
    "GroupSelection",
    "Grouping",
    "check_groups",
    "group_budget",
    "group_selection",
    "group_stages",
    "split_budget",
    "total_cost",
]

#: The default share of epsilon spent on selecting the groups when they are private
#: (``groups=None``); with values from the data the selection also takes half of delta.
GROUP_FRACTION = 0.25


@dataclass(frozen=True)
class Grouping:
    """The public facts of the grouping, checked before anything is charged."""

    by: str
    listed: list[Any] | None  # the public list, or None: private groups
    max_groups: int  # G: the groups one person may touch
    fraction: float  # the share of epsilon that selects private groups (0 when public)


def check_groups(
    table: Engine,
    column: str,
    by: Any,
    groups: Any,
    privacy_unit: str | None,
    max_groups: Any,
    group_fraction: Any,
) -> Grouping:
    """``by``, ``groups``, ``max_groups`` and ``group_fraction`` checked from public facts:
    the schema, the parameters and the group list (never a row).

    Parameters
    ----------
    table : Engine
        The opened table (its schema only is read, and with a public list and no unit, how
        many listed groups one value of ``by`` matches).
    column : str
        The column released in each group (``by`` must be another).
    by : str
        The column whose values form the groups.
    groups : sequence, str, path or None
        The public list of groups (or a text file of them, one a line); ``None``: private
        groups, selected from the data.
    privacy_unit : str or None
        The column identifying people (``None``: each row is a person).
    max_groups : int
        ``G >= 1``, the most groups a person's rows count toward (only with a unit; 1 without).
    group_fraction : float or None
        The share of epsilon in ``(0, 1)`` for selecting private groups (``None``:
        :data:`GROUP_FRACTION`); refused with a public list.

    Returns
    -------
    Grouping
        ``by``, the public list (or ``None``), ``G`` (at most the list's length) and the
        selection's share of epsilon (0 with a public list).
    """
    if not isinstance(by, str):
        raise ParameterError(f"by must be a column name, got {given(by)}")
    table.require_column(by, "by")
    if by == column:
        raise ParameterError("by must be another column than the one released (column)")
    g = check_int(max_groups, "max_groups", minimum=1)
    if privacy_unit is None and g != 1:
        raise ParameterError(
            "max_groups applies only with a privacy_unit column (without one each row is a "
            "person, in the groups its value of by falls in)"
        )
    listed = None if groups is None else load_candidates(groups, "groups")
    if listed is not None:
        check_bounded_candidates(len(listed))
        if group_fraction is not None:
            raise ParameterError(
                "group_fraction applies only to private groups (groups=None): a public list "
                "costs nothing"
            )
        if privacy_unit is None:
            # a row touches every listed group its value of by matches (schema and list only)
            g = table.multiplicity(PublicGroups(by, listed))
        g = min(g, len(listed))  # nobody is in more groups than there are
        return Grouping(by, listed, g, 0.0)
    return Grouping(by, None, g, check_auto_fraction(group_fraction, "group_fraction"))


@dataclass(frozen=True)
class GroupBudget:
    """How the total ``(epsilon, delta)`` splits: the group selection, then every group."""

    epsilon: Fraction
    delta: Fraction
    select_epsilon: Fraction  # 0 with public groups
    select_delta: Fraction
    group_epsilon: float  # what each group's mechanism is calibrated to (rounded down)
    group_delta: float


def split_budget(
    eps: float, delta: float, grouping: Grouping, delta_to_select: float
) -> GroupBudget:
    """The split: private groups take ``fraction`` of epsilon and ``delta_to_select`` of delta
    for the selection; the rest is divided by ``G`` (each person is in at most ``G`` groups),
    rounded down so that ``G`` times a group's cost stays within the rest.

    Parameters
    ----------
    eps, delta : float
        The budget to split (after any private choice of a contribution bound).
    grouping : Grouping
        The checked grouping (:func:`check_groups`).
    delta_to_select : float
        The share of ``delta`` in ``[0, 1]`` for the selection of private groups.

    Returns
    -------
    GroupBudget
        The totals, the selection's ``(epsilon, delta)`` (0 with a public list) and each group's
        ``(epsilon_g, delta_g)``.
    """
    private = grouping.listed is None
    s = first_share(eps, grouping.fraction if private else 0, delta=delta,
                    delta_fraction=delta_to_select if private else 0)  # fmt: skip
    g = grouping.max_groups
    return GroupBudget(s.epsilon, s.delta, s.first_epsilon, s.first_delta,
                       divide(s.rest_epsilon, g), divide(s.rest_delta, g))  # fmt: skip


def group_budget(
    epsilon: float,
    delta: float,
    max_groups: int,
    private: bool,
    group_fraction: float | None = None,
    values_from_data: bool = True,
) -> tuple[float, float, float, float]:
    """The split of a grouped release's budget, from public facts only (``--plan --by``).

    Parameters
    ----------
    epsilon, delta : float
        The total budget.
    max_groups : int
        ``G``: the most groups one person is in.
    private : bool
        Whether the groups are selected privately (``groups=None``).
    group_fraction : float, optional
        The selection's share of epsilon (default :data:`GROUP_FRACTION`).
    values_from_data : bool, default True
        Whether the values come from the data (the selection then takes half of delta, else
        all of it).

    Returns
    -------
    tuple of float
        ``(epsilon_g, delta_g, epsilon_select, delta_select)``: each group's budget and the
        selection's (0 for public groups).
    """
    fraction = check_auto_fraction(group_fraction, "group_fraction") if private else 0.0
    grouping = Grouping("", None if private else [], max_groups, fraction)
    b = split_budget(epsilon, delta, grouping, 0.5 if values_from_data else 1.0)
    return b.group_epsilon, b.group_delta, float_down(b.select_epsilon), float_down(b.select_delta)


class GroupSelection(NamedTuple):
    """The private choice of the groups, calibrated (:func:`group_selection`).

    Attributes
    ----------
    measurement : Measurement
        The selection, from a mapping of each group to the number of persons holding it (rows
        without a unit) to the released groups.
    epsilon, delta : float
        Its privacy map at distance 1 (one person).
    max_contributions : int
        The groups each person counts toward in the selection (``G``, 1 without a unit).
    name : str
        The mechanism's name, as results cite it.
    threshold : float or None
        The count a group's noisy count must pass (thresholding); ``None`` for the optimal rule.
    """

    measurement: Any
    epsilon: float
    delta: float
    max_contributions: int
    name: str
    threshold: float | None = None


def group_selection(
    grouping: Grouping, budget: GroupBudget, privacy_unit: str | None, source: RandomSource | None
) -> GroupSelection:
    """The private choice of the groups (``groups=None``): partition selection over ``by``.

    DVGM22's optimal rule when a person is in one group (``G = 1``); else thresholding of
    exact Laplace or Gaussian counts with each person counting toward at most ``G`` groups
    (L0 ``G``, the one with the lower count released at 95%). Returns the measurement, its
    ``(epsilon, delta)``, the contributions it bounds persons to, and its name.

    Parameters
    ----------
    grouping : Grouping
        The checked grouping, with private groups (``listed`` is ``None``).
    budget : GroupBudget
        The split (:func:`split_budget`): the selection runs at its ``select_epsilon`` and
        ``select_delta`` (``delta > 0`` and ``epsilon >= 2^-20`` needed).
    privacy_unit : str or None
        The column identifying people (``None``: rows, ``G = 1``).
    source : RandomSource or None
        The randomness (``None``: the private default; a seeded source for tests only).

    Returns
    -------
    GroupSelection
        The measurement, its ``(epsilon, delta)`` at one person, the groups each person counts
        toward in it, its name and (thresholding) its threshold.
    """
    eps, dlt = float_down(budget.select_epsilon), float_down(budget.select_delta)
    if dlt <= 0:
        raise ParameterError(
            "private groups (groups=None) are selected from the data: give delta > 0, or a "
            "public groups list"
        )
    if eps < 2.0**-20:  # the least epsilon partition selection takes (module docstring)
        raise ParameterError(
            f"the private choice of the groups gets epsilon's share group_fraction, here "
            f"{eps:.3g}, below 2^-20 (about 9.5e-07), the least partition selection takes: "
            "raise epsilon or group_fraction, or give the groups"
        )
    g = grouping.max_groups if privacy_unit is not None else 1
    threshold = None
    if g == 1:
        m = make_optimal_partition_selection(eps, dlt, source=source)
        name = OPTIMAL_NAME
    else:
        noise = rows_threshold_method(eps, dlt, g, 1)
        plan = threshold_plan(noise, eps, dlt, g)
        m = make_threshold_partition_selection(plan, counts=False, source=source)
        name = f"partition selection by thresholding exact discrete {noise.title()} counts"
        threshold = float(plan.threshold)
    spent_eps, spent_delta = (float(x) for x in m.map(1))
    return GroupSelection(m, spent_eps, spent_delta, g, name, threshold)


def total_cost(
    budget: GroupBudget, grouping: Grouping, each: tuple[float, float], select: tuple[float, float]
) -> tuple[float, float]:
    """The charge: the selection plus ``G`` times one group's cost, rounded up.

    Parameters
    ----------
    budget : GroupBudget
        The split (:func:`split_budget`); not read.
    grouping : Grouping
        The checked grouping, giving ``G``.
    each : (float, float)
        One group's ``(epsilon, delta)`` as spent.
    select : (float, float)
        The private groups' selection's ``(epsilon, delta)`` (``(0, 0)`` with a public list).

    Returns
    -------
    epsilon, delta : float
        The whole release's cost, ``select + G each``, rounded up.
    """
    g = grouping.max_groups
    eps = float_up(Fraction(select[0]) + g * Fraction(each[0]))
    dlt = float_up(Fraction(select[1]) + g * Fraction(each[1]))
    return eps, dlt


def group_stages(
    grouping: Grouping,
    selection: GroupSelection | None,
    each: Stage,
    before: Sequence[Stage] = (),
) -> tuple[Stage, ...]:
    """A grouped release's stages: any stage before the groups (a private choice of a bound),
    the private selection of groups (if any) and the per-group stage run ``G`` times.

    Parameters
    ----------
    grouping : Grouping
        The checked grouping, giving ``G`` (each person's groups: the per-group stage counts
        ``G`` times).
    selection : GroupSelection or None
        The selection of private groups (:func:`group_selection`; ``None``: a public list).
        Its memory: optimal partition selection's table (:func:`optimal_memory`); thresholding
        holds one count per group found, a private number, so ``None``.
    each : Stage
        One group's stage, as run once (its ``times`` is set to ``G`` here).
    before : sequence of Stage, optional
        The stages that run before the groups are selected.

    Returns
    -------
    tuple of Stage
        In the order they run.
    """
    out = list(before)
    if selection is not None:
        memory = None
        if selection.threshold is None:
            memory = optimal_memory(selection.epsilon, selection.delta)
        out.append(Stage("select groups", selection.name, selection.epsilon, selection.delta,
                         threshold=selection.threshold, memory=memory))  # fmt: skip
    out.append(replace(each, times=grouping.max_groups))
    return tuple(out)
