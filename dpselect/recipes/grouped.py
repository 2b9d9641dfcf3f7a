"""Grouped releases of ``top_k``/``most_common`` (``by=``).

``top_k(data, "dest", k=5, epsilon=1, by="carrier", groups=[...])`` releases the top five
destinations of every listed carrier in one scan and one charge; the accounting, the groups
(public or private) and the result are :mod:`dpselect.recipes.grouping`'s
(docs/grouped_releases.md); ``partition_selection(by=...)`` is
:mod:`dpselect.recipes.grouped_keys`'s.

:func:`grouped_top_k` is :func:`dpselect.top_k` with ``by``: its parameters mean what they
mean there, within each group. With ``candidates`` every group ranks the public list with the
mechanism ``top_k`` would run at ``(epsilon_g, delta_g)``; without them (``delta > 0``) every
group runs thresholding or the limited-domain mechanism on its own values (the choice of
:func:`~dpselect.recipes.unknown_domain.choose_unknown_domain` at the per-group budget;
policy set union, which holds persons in the driver, is not run per group).

Privacy: each person touches at most ``G`` groups (``max_groups`` with a privacy unit); each
group costs ``(epsilon_g, delta_g)`` with ``epsilon_g = (epsilon - selection) / G``; the total
charged is the selection plus ``G`` groups, rounded up, at most ``(epsilon, delta)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from ..core.arithmetic import float_up, printed_up
from ..core.errors import ParameterError
from ..data.candidates import load_candidates
from ..data.query import PrivateGroups, PublicGroups, Query, UnitRule
from ..data.rules import check_bounded_candidates, check_rows_per_value
from ..mechanisms.generalized_exponential import make_generalized_exponential_mechanism
from ..mechanisms.limited_domain import limited_domain_threshold, make_limited_domain_top_k
from ..mechanisms.partition_selection import (
    make_threshold_partition_selection,
    threshold_plan,
)
from ..mechanisms.top_k_plan import CONFIDENCE, TopKPlan, plan_top_k
from ..mechanisms.validate import check_delta, check_int, check_user_epsilon
from ..planning.budget import first_share, remainder
from ..sampling.source import RandomSource
from ._common import check_contributions, open_ledger
from .bounds import DEFAULT_CONTRIBUTIONS
from .epsilon_range import check_epsilon_range
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
from .top_k_result import TopKResult
from .unknown_domain_plans import Progress

__all__ = ["grouped_top_k"]


# ------------------------------------------------------------------------------------------
# top_k(by=...)


def grouped_top_k(
    data: Any,
    column: str,
    k: int,
    epsilon: float,
    *,
    by: str,
    groups: Any = None,
    candidates: Any = None,
    delta: float | None = None,
    privacy_unit: str | None = None,
    max_groups: int = 1,
    max_contributions: int | Literal["auto"] = 1,
    max_rows_per_value: int = 1,
    mechanism: str = "auto",
    counts: bool = False,
    ledger: Any = None,
    source: RandomSource | None = None,
    progress: Progress = None,
    schema: Any = None,
    k_bar: int | None = None,
    group_fraction: float | None = None,
    auto_fraction: float | None = None,
) -> GroupedResult:
    """The ``k`` most common values of ``column`` in every group of ``by``, in one query.

    :func:`dpselect.top_k` with ``by``; which mechanism each group runs and what the whole
    release costs: the module docstring.

    Parameters
    ----------
    data, column, k, epsilon, candidates, delta, privacy_unit, max_contributions,
    max_rows_per_value, mechanism, counts, ledger, source, progress, schema, k_bar
        As for :func:`dpselect.top_k`, per group.
    by : str
        The column whose values are the groups.
    groups : list or str, optional
        The public groups (a list or a text file, one per line): each gets an answer, empty
        or not. ``None``: the groups are selected from the data by partition selection
        (needs ``delta > 0``), with ``group_fraction`` of epsilon.
    max_groups : int, default 1
        With a privacy unit: how many groups each person counts in (the keyed rule).
    group_fraction : float, optional
        The share of epsilon spent on selecting private groups (default
        :data:`GROUP_FRACTION`); with values from the data half of delta goes there too.
    max_contributions : int or "auto", default 1
        ``"auto"`` (with a privacy unit): one bound for all groups, chosen privately with
        ``auto_fraction`` (default 0.25) of epsilon first (:func:`_auto_contributions`).

    Returns
    -------
    GroupedResult
        One :class:`TopKResult` per group, the table ``(group, rank, value[, noisy count])``
        (``to_frame()``), the total and the per-group cost.

    Raises
    ------
    ParameterError, DataError, BudgetExceeded
        Before any budget is spent.
    """
    args = _checked_top_k_args(k, epsilon, mechanism, privacy_unit, max_rows_per_value,
                               (max_contributions, auto_fraction), counts,
                               (candidates, delta, k_bar))  # fmt: skip
    table = open_checked(data, column, privacy_unit, schema)
    grouping = check_groups(table, column, by, groups, privacy_unit, max_groups, group_fraction)
    if grouping.listed is None and args.dlt == 0:
        raise ParameterError(
            "private groups (groups=None) are selected from the data: give delta > 0, or a "
            "public groups list"
        )
    query = GroupedQuery(table, column, by, privacy_unit, grouping, source, progress)
    plan = _grouped_top_k_plan(query, args, ledger)
    parameters = _grouped_top_k_parameters(query, args, plan)

    def release() -> GroupedResult:
        return _grouped_top_k_release(query, args, plan, parameters)

    entry = "top_k/by/max_contributions=auto" if args.auto_m else f"top_k/by/{plan.method}"
    return charge_grouped(plan.book, release, plan.cost, plan.kind, entry, parameters,
                          privacy_unit, table)  # fmt: skip


@dataclass(frozen=True)
class _TopKArgs:
    """A grouped top-k's public parameters, checked before the data are opened
    (``bounds_m``: the bound given, or every candidate bound with ``auto_m``)."""

    k: int
    eps: float
    mech: str
    r: int
    bounds_m: list[int]
    auto_m: bool
    fraction: float
    counts: bool
    dlt: float
    cand_list: list[Any] | None
    k_bar: int | None

    @property
    def value_mode(self) -> bool:
        """Whether the values come from the data (no candidates)."""
        return self.cand_list is None


def _checked_top_k_args(
    k: int,
    epsilon: float,
    mechanism: str,
    privacy_unit: str | None,
    max_rows_per_value: int,
    contributions: tuple[Any, float | None],
    counts: Any,
    values: tuple[Any, float | None, int | None],
) -> _TopKArgs:
    """The parameters of :func:`grouped_top_k` checked in order, from public facts.
    ``contributions``: ``(max_contributions, auto_fraction)``; ``values``: ``(candidates,
    delta, k_bar)``."""
    from .top_k_mechanisms import check_mechanism as _check_mechanism

    candidates, delta, k_bar = values
    k = check_int(k, "k", minimum=1)
    eps = float(check_user_epsilon(epsilon))
    check_epsilon_range(eps)
    mech = _check_mechanism(mechanism)
    r = check_rows_per_value(max_rows_per_value, privacy_unit)
    given_m, fraction = check_contributions(*contributions, privacy_unit)
    bounds_m = list(DEFAULT_CONTRIBUTIONS) if given_m is None else [given_m]
    if not isinstance(counts, bool):
        raise ParameterError(f"counts must be a bool, got {counts!r}")
    value_mode = candidates is None
    if value_mode and (delta is None or delta == 0):
        raise ParameterError(
            "without a public candidates list, give delta > 0: values that come from the "
            "data can only be shown with a small chance of failure delta"
        )
    dlt = 0.0 if delta is None else float(check_delta(delta, allow_zero=not value_mode))
    cand_list = None if value_mode else _checked_candidates(candidates, k, privacy_unit, k_bar)
    return _TopKArgs(k, eps, mech, r, bounds_m, given_m is None, fraction, counts, dlt,
                     cand_list, k_bar)  # fmt: skip


def _checked_candidates(candidates: Any, k: int, privacy_unit: str | None,
                        k_bar: int | None) -> list[Any]:  # fmt: skip
    """The public candidates loaded and checked against ``k``, the bounding rule and
    ``k_bar`` (which needs values from the data)."""
    cand_list = load_candidates(candidates)
    if privacy_unit is not None:
        check_bounded_candidates(len(cand_list))
    if k > len(cand_list):
        raise ParameterError(
            f"k must be at most the number of candidates ({len(cand_list)}), got {k}"
        )
    if k_bar is not None:
        raise ParameterError("k_bar applies only without a candidates list (limited domain)")
    return cand_list


@dataclass(frozen=True)
class _GroupedTopKPlan:
    """A grouped top-k planned before the charge: the choice of a bound (``gem``, its cost
    ``spent_c``, the groups' ``eps_groups``), the ledger, the private groups' selection, the
    per-group plan at every bound, one group's worst cost (``each``), and the charge."""

    gem: Any
    spent_c: Fraction
    eps_groups: float
    book: Any
    selection: Any
    select_cost: tuple[float, float]
    plans: dict[int, _GroupPlan]
    each: tuple[float, float]
    cost: tuple[float, float, float | None]
    kind: Literal["pure", "bounded_range", "approx"]

    @property
    def method(self) -> str:
        """The short name of the first bound's per-group mechanism."""
        return next(iter(self.plans.values())).method


def _bound_choice(query: GroupedQuery, a: _TopKArgs) -> tuple[Any, Fraction, float]:
    """``max_contributions="auto"``: GEM over the bounds (sensitivity ``G r``:
    :func:`_auto_contributions`) on its share of epsilon, its cost, and what remains for the
    groups (the whole epsilon with a given bound)."""
    if not a.auto_m:
        return None, Fraction(0), a.eps
    gem = make_generalized_exponential_mechanism(
        a.bounds_m, lambda scores, b: scores[b], [Fraction(query.grouping.max_groups * a.r)] *
        len(a.bounds_m), epsilon=first_share(a.eps, a.fraction).first_epsilon, beta=0.05,
        source=query.source,
    )  # fmt: skip
    spent_c = Fraction(gem.map(1))
    return gem, spent_c, remainder(a.eps, spent_c)


def _grouped_top_k_plan(query: GroupedQuery, a: _TopKArgs, ledger: Any) -> _GroupedTopKPlan:
    """The choice of a bound, the budget split, the selection of private groups and every
    bound's per-group plan, all before the charge (public facts only)."""
    q, grouping = query, query.grouping
    # the groups' mechanisms need delta with values from the data or Gaussian noise: the
    # selection of private groups then takes half of delta, else all of it
    groups_use_delta = a.value_mode or a.mech == "gaussian_histogram"
    gem, spent_c, eps_groups = _bound_choice(q, a)
    budget = split_budget(eps_groups, a.dlt, grouping, 0.5 if groups_use_delta else 1.0)
    book = open_ledger(ledger)
    zcdp = book is not None and book.accounting == "zcdp"
    selection = group_selection(grouping, budget, q.privacy_unit, q.source) if q.private else None
    select_cost = (0.0, 0.0) if selection is None else (selection[1], selection[2])
    eg, dg = budget.group_epsilon, budget.group_delta
    plans: dict[int, _GroupPlan] = {}
    for m in a.bounds_m:  # every bound planned before the charge
        # the per-group mechanism as for a given m (the limited domain included: measured in
        # bench/bench_auto_contributions_unknown.py, top 3 by origin, it chose better bounds
        # than thresholding alone, unlike the ungrouped top 10: mechanism_at)
        plans[m] = _group_plan(q.table, q.column, a.cand_list, q.privacy_unit, a.k, eg, dg,
                               a.mech, a.counts, (m, a.r, a.k_bar), q.source, book,
                               zcdp and not q.private)  # fmt: skip
    each = (max(p.each[0] for p in plans.values()), max(p.each[1] for p in plans.values()))
    total = total_cost(budget, grouping, each, select_cost)
    if a.auto_m:
        total = (float_up(Fraction(total[0]) + spent_c), total[1])
    kind, rho = _charge_kind(plans, spent_c, grouping.max_groups, zcdp, q.private)
    return _GroupedTopKPlan(gem, spent_c, eps_groups, book, selection, select_cost, plans,
                            each, (total[0], total[1], rho), kind)  # fmt: skip


def _charge_kind(
    plans: dict[int, _GroupPlan], spent_c: Fraction, max_groups: int, zcdp: bool, private: bool
) -> tuple[Literal["pure", "bounded_range", "approx"], float | None]:
    """The ledger kind of the whole charge and, in a zCDP ledger with public groups, its
    ``rho`` (the choice's ``eps_c^2 / 8`` plus ``G`` times the worst group)."""
    first = next(iter(plans.values()))
    kinds = {p.kind for p in plans.values()}
    kind: Literal["pure", "bounded_range", "approx"] = (
        "approx" if "approx" in kinds else "pure" if "pure" in kinds else "bounded_range"
    )  # the choice (an exponential mechanism) is bounded range: composing keeps the kind
    rho: float | None = None
    if zcdp and not private and first.rho is not None:
        worst = max(Fraction(p.rho or 0) for p in plans.values())
        rho = float_up(spent_c**2 / 8 + max_groups * worst)
    if private:
        kind = "approx"
    return kind, rho


def _grouped_top_k_parameters(query: GroupedQuery, a: _TopKArgs,
                              plan: _GroupedTopKPlan) -> dict[str, Any]:  # fmt: skip
    """What a grouped top-k records before the choice of a bound."""
    q, grouping, each = query, query.grouping, plan.each
    parameters = {
        "column": q.column, "k": a.k, "epsilon": a.eps, "delta": a.dlt, "by": q.by,
        "groups": "private" if q.private else len(grouping.listed or []),
        "max_groups": grouping.max_groups, "privacy_unit": q.privacy_unit,
        "max_contributions": "auto" if a.auto_m else a.bounds_m[0], "max_rows_per_value": a.r,
        "mechanism": plan.method, "group_epsilon": each[0], "group_delta": each[1],
        "n_candidates": None if a.cand_list is None else len(a.cand_list),
    }  # fmt: skip
    if a.auto_m:
        parameters.update(max_contributions_candidates=a.bounds_m, auto_fraction=a.fraction,
                          choice_epsilon=float_up(plan.spent_c))  # fmt: skip
    return parameters


def _grouped_top_k_release(query: GroupedQuery, a: _TopKArgs, plan: _GroupedTopKPlan,
                           parameters: dict[str, Any]) -> GroupedResult:  # fmt: skip
    """After the charge: draw the salts, read every group's input, choose the bound (with
    ``max_contributions="auto"``), run every group's top-k."""
    q, grouping, selection = query, query.grouping, plan.selection
    salt, group_salt = draw_salts(q.source)
    scan = _Scan(q.table, q.column, q.by, a.cand_list, grouping, selection, q.privacy_unit,
                 (salt, group_salt, q.progress, a.r))  # fmt: skip
    chosen = a.bounds_m[0]
    names, inputs = scan.inputs(chosen, plan.plans[chosen].limit)
    params = parameters
    if plan.gem is not None:  # one bound for all groups (_auto_contributions)
        chosen, inputs = _auto_contributions(scan, names, plan.plans, inputs, plan.gem, a.k)
        params = dict(parameters, max_contributions=chosen, mechanism=plan.plans[chosen].method,
                      max_contributions_choice=(
            f"max_contributions = {chosen}, chosen privately among {len(a.bounds_m)} bounds "
            f"(1..{a.bounds_m[-1]}) for every group by the generalized exponential mechanism "
            f"at epsilon = {float_up(plan.spent_c):.6g}; the groups then ran at epsilon = "
            f"{float(plan.eps_groups):.6g}"
        ))  # fmt: skip
    group_plan = plan.plans[chosen]
    releases = [group_plan.run(inputs[j]) for j in range(len(names))]
    accounting = composition_text(grouping, q.privacy_unit,
                                  None if selection is None else selection[4])  # fmt: skip
    book = plan.book
    return GroupedResult(
        "top_k", q.by, q.column, names, releases, plan.cost[0], plan.cost[1],
        plan.cost[2], plan.each[0], plan.each[1], grouping.max_groups,
        chosen_by_text(grouping, selection, *plan.select_cost), group_plan.name, accounting,
        group_plan.accuracy, None if book is None else book.path, params,
    )  # fmt: skip


@dataclass(frozen=True)
class _GroupPlan:
    """One group's top-k at one bound ``m``, planned before the charge: its cost, the ledger
    kind and zCDP ``rho`` of one group, its names, the runner on a group's input, how many
    values per group it reads, and the count the ``k``-th value needs for it to be found
    (public: :attr:`TopKPlan.margin`, or the unknown domain's criterion)."""

    each: tuple[float, float]
    kind: Literal["pure", "bounded_range", "approx"]
    rho: float | None
    name: str
    accuracy: str
    method: str
    run: Callable[[Any], TopKResult]
    limit: int | None
    margin: float


def _group_plan(
    table: Any,
    column: str,
    cand_list: list[Any] | None,
    privacy_unit: str | None,
    k: int,
    eg: float,
    dg: float,
    mech: str,
    counts: bool,
    bound: tuple[int, int, int | None],
    source: RandomSource | None,
    book: Any,
    zcdp: bool,
) -> _GroupPlan:
    """The per-group plan at ``bound = (m, r, k_bar)`` (public facts only)."""
    m, r, k_bar = bound
    if cand_list is not None:
        c = m if privacy_unit is not None else table.multiplicity(column, cand_list)
        plan = plan_top_k(len(cand_list), k, eg, dg, mech, counts, c, source, zcdp,
                          max_rows_per_value=r)  # fmt: skip
        return _GroupPlan((plan.epsilon, plan.delta), plan.kind, plan.rho if zcdp else None,
                          plan.name, plan.accuracy, plan.method,
                          _candidate_runner(cand_list, plan, counts, book), None,
                          float(plan.margin))  # fmt: skip
    from .unknown_domain_plans import choose_unknown_domain

    runner = _value_runner(k, eg, dg, m, r, mech, counts, k_bar, source, book)
    option = {"limited_domain": "gumbel", "laplace_threshold": "laplace_histogram",
              "gaussian_threshold": "gaussian_histogram"}[runner.method]  # fmt: skip
    margin = next(o.criterion for o in choose_unknown_domain(k, eg, dg, m, r)[1]
                  if o.mechanism == option)  # fmt: skip
    return _GroupPlan(runner.each, "approx", None, runner.name, runner.accuracy, runner.method,
                      runner.run, runner.limit, float(margin))  # fmt: skip


@dataclass(frozen=True)
class _Scan:
    """How a grouped top-k reads its groups' inputs after the charge (the salts drawn)."""

    table: Any
    column: str
    by: str
    cand_list: list[Any] | None
    grouping: Any
    selection: Any
    privacy_unit: str | None
    drawn: tuple[int, int, Progress, int]

    def inputs(self, m: int, limit: int | None, names: list[Any] | None = None
               ) -> tuple[list[Any], list[Any]]:  # fmt: skip
        """The groups and each group's input at bound ``m``: its candidates' scores, or its
        ``[(value, count)]``. Private groups: selected on the first call (``names=None``),
        then the same groups read again (the selection runs once)."""
        salt, group_salt, progress, r = self.drawn
        rule = UnitRule(privacy_unit=self.privacy_unit, values_per_unit=m, rows_per_value=r,
                        groups_per_unit=self.grouping.max_groups, salt=salt,
                        group_salt=group_salt)  # fmt: skip
        table, column, by, cands = self.table, self.column, self.by, self.cand_list
        if cands is not None:
            if self.selection is None:
                names = list(self.grouping.listed or [])
                cells = table.scores(Query(column, rule, PublicGroups(by, names), progress), cands)
                rows = np.arange(len(names))
            else:  # private groups: the persons and the scores from one scan
                found = table.scores(Query(column, rule, PrivateGroups(by), progress), cands)
                assert found.cells is not None
                if names is None:
                    names = selected_groups(found, self.selection)[0]
                rows = _rows_of(found.groups, names)
                cells = found.cells
            g_idx, c_idx, n = cells
            here = rows[g_idx] >= 0
            dense = np.zeros((len(names), len(cands)), dtype=np.int64)
            dense[rows[g_idx[here]], c_idx[here]] = n[here]
            return names, [dense[j] for j in range(len(names))]
        if self.selection is None:
            names = list(self.grouping.listed or [])
            return names, list(
                table.counts(Query(column, rule, PublicGroups(by, names), progress), limit)
            )
        found = table.counts(Query(column, rule, PrivateGroups(by), progress), limit)
        assert found.values is not None
        if names is None:
            names = selected_groups(found, self.selection)[0]
        where = {group: j for j, group in enumerate(found.groups)}
        return names, [found.values[where[g]] if g in where else [] for g in names]


def _rows_of(found_groups: Sequence[Any], names: list[Any]) -> Any:
    """For each group ``found`` holds, its row among ``names`` (``-1``: not released)."""
    rows = np.full(len(found_groups), -1, dtype=np.int64)
    at = {group: i for i, group in enumerate(names)}
    for j, group in enumerate(found_groups):
        rows[j] = at.get(group, -1)
    return rows


def _auto_contributions(
    scan: _Scan,
    names: list[Any],
    plans: dict[int, _GroupPlan],
    first: list[Any],
    gem: Any,
    k: int,
) -> tuple[int, list[Any]]:
    """``max_contributions="auto"`` with ``by``: one bound ``m`` for every group, chosen by
    the generalized exponential mechanism ``gem`` (after the charge), and the groups' inputs
    at that ``m``.

    Score of ``m``: ``sum_g h_(k),g(m) - |groups| margin(m)``, ``h_(k),g(m)`` the ``k``-th
    largest count in group ``g`` at bound ``m`` (its candidates' scores, or its values'
    counts; 0 with fewer than ``k``) for the salts drawn after the charge, over the released
    groups (public ones, or the private ones selected before, whose selection is the first
    stage of the adaptive composition), and ``margin(m)`` the count the ``k``-th value needs
    for the plan at ``m`` (public). Sensitivity ``G r``: one person is in at most ``G =
    max_groups`` groups (the keyed group rule) and moves every count of a group by at most
    ``r``, so each ``k``-th largest count (an order statistic) by at most ``r``. GEM at these
    sensitivities is ``eps_c``-DP (seed 002, the exponential mechanism's proof;
    docs/private_selection.md, "Generalized exponential mechanism"); the groups' release at
    the chosen ``m`` (at most the largest cost over ``m``, charged) composes adaptively after
    it (docs/grouped_releases.md, "max_contributions='auto'")."""
    inputs = {}
    family: dict[int, Fraction] = {}
    for i, m in enumerate(plans):
        got = first if i == 0 else scan.inputs(m, plans[m].limit, names)[1]
        inputs[m] = got
        kth = sum(_kth(x, k) for x in got)
        family[m] = Fraction(kth) - len(names) * Fraction(plans[m].margin)
    chosen = int(gem(family))
    return chosen, inputs[chosen]


def _kth(group_input: Any, k: int) -> int:
    """The ``k``-th largest count of one group's input (scores, or ``[(value, count)]``)."""
    if isinstance(group_input, np.ndarray):
        counts = sorted((int(c) for c in group_input), reverse=True)
    else:
        counts = sorted((int(c) for _, c in group_input), reverse=True)
    return counts[k - 1] if len(counts) >= k else 0


def _candidate_runner(
    cand_list: list[Any], plan: TopKPlan, counts: bool, book: Any
) -> Callable[[Any], TopKResult]:
    """One group's top-k over the public candidates: ``plan`` on its score vector."""

    def run(scores: Any) -> TopKResult:
        out = plan.measurement(scores)
        if plan.returns_counts:
            indices, noisy = out
            released = [int(c) for c in noisy] if counts else None
        else:
            indices, released = out, None
        idx = [int(i) for i in np.asarray(indices)]
        params: dict[str, Any] = {"k": len(idx)}
        if released is not None and plan.count_halfwidth is not None:
            params["count_halfwidth"] = plan.count_halfwidth
        return TopKResult(
            candidates=[cand_list[i] for i in idx], indices=idx, mechanism=plan.name,
            epsilon=plan.epsilon, delta=plan.delta, rho=None, accuracy=plan.accuracy,
            counts=released, ledger=None if book is None else book.path, parameters=params,
        )  # fmt: skip

    return run


@dataclass(frozen=True)
class _Runner:
    """One group's top-k over its own values, calibrated: its cost, the mechanism's name, its
    accuracy line, its short name, the runner on a group's ``[(value, count)]`` and how many
    values per group it reads (``None``: all)."""

    each: tuple[float, float]
    name: str
    accuracy: str
    method: str
    run: Callable[[Any], TopKResult]
    limit: int | None


def _value_runner(
    k: int,
    eps: float,
    delta: float,
    m: int,
    r: int,
    mech: str,
    counts: bool,
    k_bar: int | None,
    source: RandomSource | None,
    book: Any,
) -> _Runner:
    """One group's top-k over its own values at ``(eps, delta)``: thresholding or the limited
    domain, chosen by :func:`choose_unknown_domain` at the per-group budget (public facts)."""
    from .unknown_domain_plans import choose_unknown_domain

    if mech == "auto":
        mech = (
            "gumbel"
            if k_bar is not None
            else choose_unknown_domain(k, eps, delta, m, r)[0].mechanism
        )
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
        return _limited_domain_runner(k, eps, delta, (m, r, k_bar), source, book)
    if k_bar is not None:
        raise ParameterError("k_bar applies only to the limited-domain mechanism")
    return _threshold_runner(k, eps, delta, (m, r), mech, counts, source, book)


def _limited_domain_runner(k: int, eps: float, delta: float, bound: tuple[int, int, int | None],
                           source: RandomSource | None, book: Any) -> _Runner:  # fmt: skip
    """The limited-domain top-k of one group (Durfee and Rogers 2019) at ``bound = (m, r,
    k_bar)``."""
    from .unknown_domain_plans import (
        K_BAR_EXTRA,
        LIMITED_DOMAIN_NAME,
        limited_domain_per_round,
        ordinal,
    )

    m, r, k_bar = bound
    kb = k + K_BAR_EXTRA if k_bar is None else check_int(k_bar, "k_bar", minimum=k)
    per_round = limited_domain_per_round(k, eps, delta)
    measurement = make_limited_domain_top_k(
        k, kb, per_round, delta=delta / 2, max_contributions=m, delta_prime=delta / 2,
        source=source, max_rows_per_value=r,
    )  # fmt: skip
    spent = tuple(float(x) for x in measurement.map(r))
    threshold = r * limited_domain_threshold(per_round, delta / 2, kb, m)
    margin = threshold + (r / per_round) * math.log(CONFIDENCE / (1 - CONFIDENCE))
    accuracy = (
        f"a value whose score exceeds the {ordinal(kb + 1)} largest score of its group by "
        f"at least {printed_up(margin)} is ranked above the stopping threshold "
        "with probability at "
        f"least {CONFIDENCE:.0%} (Gumbel noise, Durfee and Rogers 2019)"
    )

    def run_ld(found: Sequence[tuple[Any, int]]) -> TopKResult:
        values = list(measurement(dict(found)))
        return _values_result(values, None, LIMITED_DOMAIN_NAME, spent, accuracy, k, book)

    return _Runner((spent[0], spent[1]), LIMITED_DOMAIN_NAME, accuracy, "limited_domain", run_ld,
                   kb + 1)  # fmt: skip


def _threshold_runner(k: int, eps: float, delta: float, bound: tuple[int, int], mech: str,
                      counts: bool, source: RandomSource | None, book: Any) -> _Runner:  # fmt: skip
    """Thresholding of one group's exact Laplace or Gaussian counts, then its ``k`` largest
    noisy counts, at ``bound = (m, r)``."""
    from .unknown_domain_plans import (
        THRESHOLD_NAMES,
        counted_in_words,
        noise_halfwidth,
        rank_released,
        sure_release_count,
    )

    m, r = bound
    noise: Literal["laplace", "gaussian"] = "laplace" if mech == "laplace_histogram" else "gaussian"
    plan = threshold_plan(noise, eps, delta, m, max_rows_per_value=r)
    measurement = make_threshold_partition_selection(plan, counts=True, source=source)
    spent = tuple(float(x) for x in measurement.map(1))
    sure, half = sure_release_count(plan), noise_halfwidth(plan)
    # the count statement is about any one value, released or not: conditioned on being
    # released, a count just above the threshold was kept because its noise was high
    accuracy = (
        f"a value {counted_in_words(sure, r)} in its group is released with probability at least "
        f"{CONFIDENCE:.0%}; released values are ranked by noisy count; for any one value, its "
        f"noisy count is within +-{half} of its true count with probability at least "
        f"{CONFIDENCE:.0%} (counts just above the threshold {plan.threshold} lean high: they "
        "were kept because their noise was)"
    )

    def run_threshold(found: Sequence[tuple[Any, int]]) -> TopKResult:
        kept: dict[Any, int] = measurement(dict(found))
        ranked = rank_released(kept, k, source)
        noisy = [kept[v] for v in ranked] if counts else None
        return _values_result(ranked, noisy, THRESHOLD_NAMES[noise], spent, accuracy, k, book,
                              half)  # fmt: skip

    return _Runner((spent[0], spent[1]), THRESHOLD_NAMES[noise], accuracy, f"{noise}_threshold",
                   run_threshold, None)  # fmt: skip


def _values_result(
    values: list[Any],
    noisy: list[Any] | None,
    name: str,
    spent: tuple[float, ...],
    accuracy: str,
    k: int,
    book: Any,
    halfwidth: int | None = None,
) -> TopKResult:
    params: dict[str, Any] = {"k": k}
    if halfwidth is not None and noisy is not None:
        params["count_halfwidth"] = halfwidth
    return TopKResult(
        candidates=values, indices=None, mechanism=name, epsilon=spent[0], delta=spent[1],
        rho=None, accuracy=accuracy, counts=noisy, ledger=None if book is None else book.path,
        parameters=params,
    )  # fmt: skip
