"""The plan of a grouped top-k (``top_k(..., by=...)``): every stage, decided before the charge.

One planner, :func:`grouped_top_k_plan`, reads public facts only (the checked
:class:`~dpselect.planning.top_k_request.TopKRequest`, the table's schema through the
:class:`~dpselect.data.engine.Engine` interface and, without a unit, how many candidates or
listed groups one value matches; the ledger's accounting) and returns a frozen
:class:`GroupedTopKPlan`, everything the release runs:

- ``values_per_unit="auto"``: the private choice of one bound ``m`` for every group, the
  generalized exponential mechanism over
  :data:`~dpselect.planning.contribution_choice.DEFAULT_CONTRIBUTIONS` at sensitivity ``G r``
  on ``auto_fraction`` of epsilon (:func:`~dpselect.planning.budget.first_share`); the groups
  get what it leaves (:func:`~dpselect.planning.budget.remainder`);
- the grouping and its budget split (:func:`~dpselect.planning.group_plan.check_groups`,
  :func:`~dpselect.planning.group_plan.split_budget`: private groups take ``group_fraction``
  of epsilon, and half of delta when the groups' mechanism spends delta, else all of it) and
  the private selection of groups (:func:`~dpselect.planning.group_plan.group_selection`);
- each group's top-k at ``(epsilon_g, delta_g)``, at every candidate bound: over public
  candidates the mechanism ``top_k`` would run (:func:`~dpselect.planning.top_k_plan.plan_top_k`),
  over values from the data thresholding or the limited domain
  (:func:`~dpselect.planning.unknown_domain_plan.unknown_domain_plan` with no persons held in
  the driver, so policy set union is not run per group);
- the charge: the selection, plus ``G`` groups at the costliest bound, plus the choice
  (:func:`~dpselect.planning.group_plan.total_cost`; proof in
  :mod:`dpselect.planning.group_plan` and, for the choice, adaptive composition, seed 002,
  "Theorem (Simple adaptive composition)"); the ledger entry's name and parameters; the stages.

The recipe (:mod:`dpselect.recipes.grouped`) charges the plan, then reads every group's input,
runs GEM's choice on it (after the charge) and each group's measurement.

Memory (a stage's ``memory``, bytes held at once from public sizes, ``L`` listed groups and
``n`` candidates). Over candidates the engine returns the nonzero cells of the groups' scores
(group, candidate and count, three int64: at most ``24 L n``) and the release fills a dense
table of int64 scores (``8 L n``) that it holds while every group runs one top-k
(:func:`~dpselect.planning.top_k_candidates_plan.top_k_memory`): at most ``32 L n +
top_k_memory(n)``. The limited domain reads each group's ``k_bar + 1`` largest counts and runs
on one group's at a time: ``(L + 1) (k_bar + 1) PAIR_BYTES``
(:data:`~dpselect.planning.unknown_domain_plan.PAIR_BYTES`). Thresholding holds every value of
every group, and private groups one row per group the scan finds: sizes of the data, so
``None``. The choice of ``m`` holds every bound's table of inputs at once (``8 L n`` each over
candidates, ``L (k_bar + 1) PAIR_BYTES`` each for the limited domain) and the last scan's cells;
``None`` where any bound's inputs are sized by the data.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Literal

from ..core.arithmetic import float_up
from ..core.errors import ParameterError
from ..core.measurement import Measurement
from ..data.engine import Engine
from ..sampling.source import RandomSource
from .budget import first_share, remainder
from .contribution_choice import DEFAULT_CONTRIBUTIONS, bound_choice
from .group_plan import (
    Grouping,
    GroupSelection,
    check_groups,
    group_selection,
    group_stages,
    split_budget,
    total_cost,
)
from .stage import Stage
from .top_k_candidates_plan import CHOICE_STAGE, top_k_memory
from .top_k_plan import TopKPlan, plan_top_k
from .top_k_request import TopKRequest
from .unknown_domain_choice import choose_unknown_domain, noise_halfwidth, sure_release_count
from .unknown_domain_plan import PAIR_BYTES, UnknownDomainPlan, unknown_domain_plan

__all__ = ["GroupTopK", "GroupedTopKPlan", "group_top_k", "grouped_top_k_plan"]

_SCORE_BYTES = 8  # one int64 score per group and candidate
_CELL_BYTES = 24  # one nonzero cell from the engine: group, candidate and count, int64 each
#: The choice's options by the short name of the mechanism each group runs.
_OPTION = {"limited_domain": "gumbel", "laplace_threshold": "laplace_histogram",
           "gaussian_threshold": "gaussian_histogram"}  # fmt: skip

Kind = Literal["pure", "bounded_range", "approx"]


@dataclass(frozen=True)
class GroupTopK:
    """One group's top-k at one bound ``m``, calibrated before the charge.

    Attributes
    ----------
    each : (float, float)
        One group's ``(epsilon_g, delta_g)`` as spent (its map at one person).
    kind : {"pure", "bounded_range", "approx"}
        The ledger kind of one group's cost.
    rho : float or None
        One group's zCDP cost (over candidates, in a zCDP ledger with public groups).
    name : str
        The mechanism cited by name.
    method : str
        Its short name (``"permute_and_flip"``, ..., ``"laplace_threshold"``,
        ``"limited_domain"``).
    limit : int or None
        How many values per group the release reads (``k_bar + 1`` for the limited domain;
        ``None``: all).
    margin : float
        The count the ``k``-th value needs to be found (public: the candidates' plan's
        :attr:`~dpselect.planning.top_k_plan.TopKPlan.margin`, or the unknown domain's
        criterion), which GEM's score weighs against the counts a bound keeps.
    stage : Stage
        One group's run (``times`` 1), with its scale, threshold and memory.
    top_k : TopKPlan or None
        Over candidates: the calibrated top-k.
    values : UnknownDomainPlan or None
        Over values from the data: thresholding or the limited domain, calibrated.
    sure, halfwidth : int or None
        Thresholding: the count released with probability at least 95%, and the noisy counts'
        half-width at 95%.
    """

    each: tuple[float, float]
    kind: Kind
    rho: float | None
    name: str
    method: str
    limit: int | None
    margin: float
    stage: Stage
    top_k: TopKPlan | None = None
    values: UnknownDomainPlan | None = None
    sure: int | None = None
    halfwidth: int | None = None


@dataclass(frozen=True)
class GroupedTopKPlan:
    """A grouped top-k, planned and checked, not yet charged.

    Attributes
    ----------
    grouping : Grouping
        The checked grouping.
    selection : GroupSelection or None
        The private selection of groups (``None``: a public list).
    select_cost : (float, float)
        The selection's ``(epsilon, delta)`` (``(0, 0)`` with a public list).
    gem : Measurement or None
        ``values_per_unit="auto"``: the choice of the bound, from each bound's score to a
        bound (run after the charge); ``None`` with a bound given.
    spent_c : Fraction
        The choice's cost (0 with a bound given).
    eps_groups : float
        The epsilon left for the groups (the whole epsilon with a bound given).
    plans : dict of int to GroupTopK
        Each group's top-k at every bound (one bound when given).
    each : (float, float)
        One group's worst ``(epsilon_g, delta_g)`` over the bounds.
    cost : (float, float, float or None)
        The charge ``(epsilon, delta, rho)``.
    kind : {"pure", "bounded_range", "approx"}
        The charge's kind.
    entry : str
        The ledger entry's mechanism name.
    parameters : dict
        The ledger entry's and the result's public parameters (before the choice).
    stages : tuple of Stage
        The selection of groups (if any), the choice of the bound (if ``"auto"``), then the
        per-group top-k run ``G`` times (at the costliest bound).
    """

    grouping: Grouping
    selection: GroupSelection | None
    select_cost: tuple[float, float]
    gem: Measurement | None
    spent_c: Fraction
    eps_groups: float
    plans: dict[int, GroupTopK]
    each: tuple[float, float]
    cost: tuple[float, float, float | None]
    kind: Kind
    entry: str
    parameters: dict[str, Any]
    stages: tuple[Stage, ...]

    @property
    def method(self) -> str:
        """The short name of the first bound's per-group mechanism."""
        return next(iter(self.plans.values())).method

    @property
    def bounds(self) -> list[int]:
        """The bounds planned: the one given, or every candidate bound."""
        return list(self.plans)


def grouped_top_k_plan(
    table: Engine,
    request: TopKRequest,
    *,
    accounting: str | None,
    source: RandomSource | None,
) -> GroupedTopKPlan:
    """Plan ``request``'s grouped top-k from public facts (module docstring).

    Parameters
    ----------
    table : Engine
        The opened table (its schema only is read, and without a unit how many listed groups
        or candidates one value matches).
    request : TopKRequest
        The checked request, with ``by``.
    accounting : str or None
        The ledger's accounting (``"zcdp"``: the candidates' mechanisms weigh the zCDP options
        only with public groups, and the charge carries ``rho``); ``None``: no ledger.
    source : RandomSource or None
        The randomness the measurements draw from (``None``: the private default).

    Returns
    -------
    GroupedTopKPlan
        The choice of a bound, the grouping, the selection of groups, each group's top-k at
        every bound, the charge, the parameters and the stages.

    Raises
    ------
    ParameterError
        A grouping, budget or mechanism the public facts refuse (private groups with
        ``delta = 0``, ...).
    """
    a = request
    assert a.by is not None
    grouping = check_groups(table, a.column, a.by, a.groups, a.privacy_unit, a.max_groups,
                            a.group_fraction)  # fmt: skip
    private = grouping.listed is None
    if private and a.delta == 0:
        raise ParameterError(
            "private groups (groups=None) are selected from the data: give delta > 0, or a "
            "public groups list"
        )
    # the groups' mechanisms need delta with values from the data or Gaussian noise: the
    # selection of private groups then takes half of delta, else all of it
    groups_use_delta = a.candidates is None or a.mechanism == "gaussian_histogram"
    gem, spent_c, eps_groups = _bound_choice(a, grouping, source)
    budget = split_budget(eps_groups, a.delta, grouping, 0.5 if groups_use_delta else 1.0)
    zcdp = accounting == "zcdp"
    selection = group_selection(grouping, budget, a.privacy_unit, source) if private else None
    select_cost = (0.0, 0.0) if selection is None else (selection.epsilon, selection.delta)
    multiplicity = None
    if a.candidates is not None and a.privacy_unit is None:
        multiplicity = table.multiplicity(a.column, a.candidates)
    plans: dict[int, GroupTopK] = {}
    for m in _bounds(a):  # every bound planned before the charge
        # the per-group mechanism as for a given m (the limited domain included: measured in
        # bench/bench_auto_contributions_unknown.py, top 3 by origin, it chose better bounds
        # than thresholding alone, unlike the ungrouped top 10: mechanism_at)
        at_m = replace(a, epsilon=budget.group_epsilon, delta=budget.group_delta,
                       max_contributions=m)  # fmt: skip
        plans[m] = group_top_k(at_m, multiplicity, source, zcdp and not private)
    each = (max(p.each[0] for p in plans.values()), max(p.each[1] for p in plans.values()))
    total = total_cost(budget, grouping, each, select_cost)
    if gem is not None:
        total = (float_up(Fraction(total[0]) + spent_c), total[1])
    kind, rho = _charge_kind(plans, spent_c, grouping.max_groups, zcdp, private)
    first = next(iter(plans.values()))
    entry = "top_k/by/max_contributions=auto" if gem is not None else f"top_k/by/{first.method}"
    parameters = _parameters(a, grouping, plans, each, spent_c)
    stages = _stages(grouping, selection, plans, spent_c if gem is not None else None, a)
    return GroupedTopKPlan(grouping, selection, select_cost, gem, spent_c, eps_groups, plans,
                           each, (total[0], total[1], rho), kind, entry, parameters,
                           stages)  # fmt: skip


def _bounds(a: TopKRequest) -> list[int]:
    """The bound given, or every candidate bound with ``values_per_unit="auto"``."""
    return list(DEFAULT_CONTRIBUTIONS) if a.max_contributions is None else [a.max_contributions]


def _bound_choice(
    a: TopKRequest, grouping: Grouping, source: RandomSource | None
) -> tuple[Measurement | None, Fraction, float]:
    """``values_per_unit="auto"``: GEM over the bounds on its share of epsilon, its cost, and
    what remains for the groups (the whole epsilon with a given bound).

    Sensitivity ``G r`` (the score of ``m`` sums the ``k``-th largest count of every released
    group; one person is in at most ``G`` groups and moves each count by at most ``r``:
    :func:`dpselect.recipes.grouped.grouped_top_k`); GEM is then ``eps_c``-DP (seed 002, the
    exponential mechanism's proof; docs/private_selection.md, "Generalized exponential
    mechanism")."""
    if a.max_contributions is not None:
        return None, Fraction(0), a.epsilon
    bounds = _bounds(a)
    gem = bound_choice(bounds, [Fraction(grouping.max_groups * a.rows_per_value)] * len(bounds),
                       first_share(a.epsilon, a.auto_fraction).first_epsilon, source)  # fmt: skip
    spent_c = Fraction(gem.map(1))
    return gem, spent_c, remainder(a.epsilon, spent_c)


def group_top_k(
    request: TopKRequest,
    multiplicity: int | None,
    source: RandomSource | None,
    zcdp: bool,
) -> GroupTopK:
    """One group's top-k at the request's budget and bound (public facts only).

    Parameters
    ----------
    request : TopKRequest
        The request with one group's ``(epsilon_g, delta_g)`` and a numeric
        ``max_contributions``.
    multiplicity : int or None
        Without a unit, over candidates: the most candidates one value matches (the
        histograms' L1 sensitivity); ``None`` otherwise.
    source : RandomSource or None
        The randomness the measurement draws from.
    zcdp : bool
        Whether a zCDP ledger is charged with public groups (the candidates' ``"auto"`` then
        weighs the zCDP options, and the group's ``rho`` is kept).

    Returns
    -------
    GroupTopK
        The calibrated group's top-k, its cost, margin and stage.
    """
    a = request
    assert a.max_contributions is not None
    if a.candidates is None:
        return _values_group(a, source)
    n = len(a.candidates)
    c = a.max_contributions if a.privacy_unit is not None else int(multiplicity or 1)
    plan = plan_top_k(n, a.k, a.epsilon, a.delta, a.mechanism, a.counts, c, source, zcdp,
                      max_rows_per_value=a.rows_per_value)  # fmt: skip
    stage = Stage("top-k in each group", plan.method, plan.epsilon, plan.delta,
                  scale=plan.scale, memory=top_k_memory(plan.method, n))  # fmt: skip
    return GroupTopK((plan.epsilon, plan.delta), plan.kind, plan.rho if zcdp else None,
                     plan.name, plan.method, None, float(plan.margin), stage,
                     top_k=plan)  # fmt: skip


def _values_group(a: TopKRequest, source: RandomSource | None) -> GroupTopK:
    """One group's top-k over its own values: thresholding or the limited domain, the
    ungrouped planner's choice at the group's budget without policy set union (it holds
    persons in the driver, which a scan of every group does not)."""
    assert a.max_contributions is not None
    plan = unknown_domain_plan(a, persons_in_driver=False, source=source)
    method = str(plan.parameters["mechanism"])
    margin = next(o.criterion for o in choose_unknown_domain(a.k, a.epsilon, a.delta,
                                                             a.max_contributions, plan.r)[1]
                  if o.mechanism == _OPTION[method])  # fmt: skip
    (stage,) = plan.stages
    stage = replace(stage, name=f"{stage.name}, in each group", memory=_run_bytes_of(plan))
    if plan.threshold is None:
        return GroupTopK(plan.spent, "approx", None, plan.mechanism, method,
                         (plan.k_bar or 0) + 1, float(margin), stage, values=plan)  # fmt: skip
    return GroupTopK(plan.spent, "approx", None, plan.mechanism, method, None, float(margin),
                     stage, values=plan, sure=sure_release_count(plan.threshold),
                     halfwidth=noise_halfwidth(plan.threshold))  # fmt: skip


def _run_bytes_of(plan: UnknownDomainPlan) -> int | None:
    """What one group's run over its own values holds: the limited domain's ``k_bar + 1``
    counts; thresholding's every value of the group (a size of the data: ``None``)."""
    return None if plan.k_bar is None else (plan.k_bar + 1) * PAIR_BYTES


def _charge_kind(
    plans: dict[int, GroupTopK], spent_c: Fraction, max_groups: int, zcdp: bool, private: bool
) -> tuple[Kind, float | None]:
    """The ledger kind of the whole charge and, in a zCDP ledger with public groups, its
    ``rho`` (the choice's ``eps_c^2 / 8`` plus ``G`` times the worst group: Bun and Steinke
    2016, Lemma 2.3)."""
    first = next(iter(plans.values()))
    kinds = {p.kind for p in plans.values()}
    kind: Kind = (
        "approx" if "approx" in kinds else "pure" if "pure" in kinds else "bounded_range"
    )  # the choice (an exponential mechanism) is bounded range: composing keeps the kind
    rho: float | None = None
    if zcdp and not private and first.rho is not None:
        worst = max(Fraction(p.rho or 0) for p in plans.values())
        rho = float_up(spent_c**2 / 8 + max_groups * worst)
    if private:
        kind = "approx"
    return kind, rho


def _parameters(a: TopKRequest, grouping: Grouping, plans: dict[int, GroupTopK],
                each: tuple[float, float], spent_c: Fraction) -> dict[str, Any]:  # fmt: skip
    """What a grouped top-k records before the choice of a bound."""
    bounds = list(plans)
    parameters = {
        "column": a.column, "k": a.k, "epsilon": a.epsilon, "delta": a.delta, "by": a.by,
        "groups": "private" if grouping.listed is None else len(grouping.listed),
        "max_groups": grouping.max_groups, "privacy_unit": a.privacy_unit,
        "max_contributions": "auto" if a.max_contributions is None else bounds[0],
        "max_rows_per_value": a.rows_per_value,
        "mechanism": plans[bounds[0]].method, "group_epsilon": each[0], "group_delta": each[1],
        "n_candidates": None if a.candidates is None else len(a.candidates),
    }  # fmt: skip
    if a.max_contributions is None:
        parameters.update(max_contributions_candidates=bounds, auto_fraction=a.auto_fraction,
                          choice_epsilon=float_up(spent_c))  # fmt: skip
    return parameters


def _stages(
    grouping: Grouping,
    selection: GroupSelection | None,
    plans: dict[int, GroupTopK],
    spent_c: Fraction | None,
    a: TopKRequest,
) -> tuple[Stage, ...]:
    """The stages in the order they run: the selection of private groups, the choice of the
    bound (``spent_c`` given: its inputs are the selected groups'), then each group's top-k
    ``G`` times, at the costliest bound when there are several (the worst case the charge
    covers). Memory: the module docstring."""
    n_groups = None if grouping.listed is None else len(grouping.listed)
    n = 0 if a.candidates is None else len(a.candidates)
    worst = max(plans, key=lambda m: plans[m].each)
    group = plans[worst]
    each = replace(group.stage, memory=_sum(_table_bytes(group, n_groups, n),
                                            _cells_bytes(group, n_groups, n),
                                            group.stage.memory))  # fmt: skip
    if spent_c is None:
        return group_stages(grouping, selection, each)
    each = replace(each, name=f"{each.name} (at values_per_unit = {worst}, the costliest bound)")
    held = _sum(*(_table_bytes(p, n_groups, n) for p in plans.values()),
                _cells_bytes(group, n_groups, n))  # fmt: skip
    choice = Stage(CHOICE_STAGE, f"generalized exponential mechanism over {len(plans)} bounds",
                   float_up(spent_c), memory=held)  # fmt: skip
    *first, last = group_stages(grouping, selection, each)
    return (*first, choice, last)


def _table_bytes(group: GroupTopK, n_groups: int | None, n: int) -> int | None:
    """The inputs of every group at one bound, as the release holds them (module docstring):
    ``None`` with private groups or thresholding (sizes of the data)."""
    if n_groups is None:
        return None
    if group.top_k is not None:
        return _SCORE_BYTES * n_groups * n
    assert group.values is not None
    run = _run_bytes_of(group.values)
    return None if run is None else n_groups * run


def _cells_bytes(group: GroupTopK, n_groups: int | None, n: int) -> int | None:
    """The engine's nonzero cells of one scan over candidates (at most one per group and
    candidate); nothing beside the values' lists otherwise."""
    if group.top_k is None:
        return 0
    return None if n_groups is None else _CELL_BYTES * n_groups * n


def _sum(*parts: int | None) -> int | None:
    """The total, or ``None`` when any part is unknown (a size of the data)."""
    if any(p is None for p in parts):
        return None
    return sum(p for p in parts if p is not None)
