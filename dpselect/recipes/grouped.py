"""Grouped releases of ``top_k``/``most_common`` (``by=``).

``top_k(data, "dest", k=5, epsilon=1, by="carrier", groups=[...])`` releases the top five
destinations of every listed carrier in one scan and one charge; the accounting, the groups
(public or private) and the result are :mod:`dpselect.recipes.grouping`'s
(docs/grouped_releases.md); ``partition_selection(by=...)`` is
:mod:`dpselect.recipes.grouped_keys`'s.

:func:`grouped_top_k` is :func:`dpselect.top_k` with ``by``, on the request ``top_k`` checked
(:class:`~dpselect.planning.top_k_request.TopKRequest`): its parameters mean what they mean
there, within each group. With ``candidates`` every group ranks the public list with the
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
from ..data.query import PrivateGroups, PublicGroups, Query, UnitRule
from ..mechanisms.generalized_exponential import make_generalized_exponential_mechanism
from ..mechanisms.limited_domain import limited_domain_threshold, make_limited_domain_top_k
from ..mechanisms.partition_selection import (
    make_threshold_partition_selection,
    threshold_plan,
)
from ..mechanisms.validate import check_int
from ..planning.budget import first_share, remainder
from ..planning.contribution_choice import DEFAULT_CONTRIBUTIONS
from ..planning.top_k_plan import CONFIDENCE, TopKPlan, plan_top_k
from ..planning.top_k_request import TopKRequest
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
from .top_k_result import TopKResult
from .unknown_domain_plans import Progress

__all__ = ["grouped_top_k"]


# ------------------------------------------------------------------------------------------
# top_k(by=...)


def grouped_top_k(
    data: Any,
    request: TopKRequest,
    *,
    ledger: Any = None,
    source: RandomSource | None = None,
    progress: Progress = None,
    schema: Any = None,
) -> GroupedResult:
    """The ``k`` most common values of ``column`` in every group of ``by``, in one query.

    :func:`dpselect.top_k` with ``by``; which mechanism each group runs and what the whole
    release costs: the module docstring. The groups are checked once the data's schema is
    known (:func:`~dpselect.recipes.grouping.check_groups`); every other argument is checked
    in ``request``. With ``max_contributions="auto"`` one bound for all groups is chosen
    privately with ``auto_fraction`` of epsilon first (:func:`_auto_contributions`).

    Parameters
    ----------
    data : str, path, DataFrame, relation, Series or array
        The private rows, as for :func:`dpselect.top_k`.
    request : TopKRequest
        The checked arguments (:func:`~dpselect.planning.top_k_request.top_k_request`), with
        ``by`` given: ``groups`` a public list (or a text file, one per line; each group gets an
        answer, empty or not) or ``None`` (the groups are selected from the data by partition
        selection, which needs ``delta > 0``, with ``group_fraction`` of epsilon);
        ``max_groups``: with a privacy unit, how many groups each person counts in.
    ledger, source, progress, schema
        As for :func:`dpselect.top_k`.

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
    a = request
    assert a.by is not None
    table = open_checked(data, a.column, a.privacy_unit, schema)
    grouping = check_groups(table, a.column, a.by, a.groups, a.privacy_unit, a.max_groups,
                            a.group_fraction)  # fmt: skip
    if grouping.listed is None and a.delta == 0:
        raise ParameterError(
            "private groups (groups=None) are selected from the data: give delta > 0, or a "
            "public groups list"
        )
    query = GroupedQuery(table, a.column, a.by, a.privacy_unit, grouping, source, progress)
    plan = _grouped_top_k_plan(query, a, ledger)
    parameters = _grouped_top_k_parameters(query, a, plan)

    def release() -> GroupedResult:
        return _grouped_top_k_release(query, a, plan, parameters)

    auto_m = a.max_contributions is None
    entry = "top_k/by/max_contributions=auto" if auto_m else f"top_k/by/{plan.method}"
    return charge_grouped(plan.book, release, plan.cost, plan.kind, entry, parameters,
                          a.privacy_unit, table)  # fmt: skip


def _bounds_m(a: TopKRequest) -> list[int]:
    """The bound given, or every candidate bound with ``max_contributions="auto"``."""
    return list(DEFAULT_CONTRIBUTIONS) if a.max_contributions is None else [a.max_contributions]


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


def _bound_choice(query: GroupedQuery, a: TopKRequest) -> tuple[Any, Fraction, float]:
    """``max_contributions="auto"``: GEM over the bounds (sensitivity ``G r``:
    :func:`_auto_contributions`) on its share of epsilon, its cost, and what remains for the
    groups (the whole epsilon with a given bound)."""
    if a.max_contributions is not None:
        return None, Fraction(0), a.epsilon
    bounds = _bounds_m(a)
    gem = make_generalized_exponential_mechanism(
        bounds, lambda scores, b: scores[b],
        [Fraction(query.grouping.max_groups * a.rows_per_value)] * len(bounds),
        epsilon=first_share(a.epsilon, a.auto_fraction).first_epsilon, beta=0.05,
        source=query.source,
    )  # fmt: skip
    spent_c = Fraction(gem.map(1))
    return gem, spent_c, remainder(a.epsilon, spent_c)


def _grouped_top_k_plan(query: GroupedQuery, a: TopKRequest, ledger: Any) -> _GroupedTopKPlan:
    """The choice of a bound, the budget split, the selection of private groups and every
    bound's per-group plan, all before the charge (public facts only)."""
    q, grouping = query, query.grouping
    # the groups' mechanisms need delta with values from the data or Gaussian noise: the
    # selection of private groups then takes half of delta, else all of it
    groups_use_delta = a.candidates is None or a.mechanism == "gaussian_histogram"
    gem, spent_c, eps_groups = _bound_choice(q, a)
    budget = split_budget(eps_groups, a.delta, grouping, 0.5 if groups_use_delta else 1.0)
    book = open_ledger(ledger)
    zcdp = book is not None and book.accounting == "zcdp"
    selection = group_selection(grouping, budget, q.privacy_unit, q.source) if q.private else None
    select_cost = (0.0, 0.0) if selection is None else (selection[1], selection[2])
    eg, dg = budget.group_epsilon, budget.group_delta
    plans: dict[int, _GroupPlan] = {}
    for m in _bounds_m(a):  # every bound planned before the charge
        # the per-group mechanism as for a given m (the limited domain included: measured in
        # bench/bench_auto_contributions_unknown.py, top 3 by origin, it chose better bounds
        # than thresholding alone, unlike the ungrouped top 10: mechanism_at)
        plans[m] = _group_plan(q.table, q.column, a.candidates, q.privacy_unit, a.k, eg, dg,
                               a.mechanism, a.counts, (m, a.rows_per_value, a.k_bar), q.source,
                               book, zcdp and not q.private)  # fmt: skip
    each = (max(p.each[0] for p in plans.values()), max(p.each[1] for p in plans.values()))
    total = total_cost(budget, grouping, each, select_cost)
    if a.max_contributions is None:
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


def _grouped_top_k_parameters(query: GroupedQuery, a: TopKRequest,
                              plan: _GroupedTopKPlan) -> dict[str, Any]:  # fmt: skip
    """What a grouped top-k records before the choice of a bound."""
    q, grouping, each, bounds = query, query.grouping, plan.each, _bounds_m(a)
    parameters = {
        "column": q.column, "k": a.k, "epsilon": a.epsilon, "delta": a.delta, "by": q.by,
        "groups": "private" if q.private else len(grouping.listed or []),
        "max_groups": grouping.max_groups, "privacy_unit": q.privacy_unit,
        "max_contributions": "auto" if a.max_contributions is None else bounds[0],
        "max_rows_per_value": a.rows_per_value,
        "mechanism": plan.method, "group_epsilon": each[0], "group_delta": each[1],
        "n_candidates": None if a.candidates is None else len(a.candidates),
    }  # fmt: skip
    if a.max_contributions is None:
        parameters.update(max_contributions_candidates=bounds, auto_fraction=a.auto_fraction,
                          choice_epsilon=float_up(plan.spent_c))  # fmt: skip
    return parameters


def _grouped_top_k_release(query: GroupedQuery, a: TopKRequest, plan: _GroupedTopKPlan,
                           parameters: dict[str, Any]) -> GroupedResult:  # fmt: skip
    """After the charge: draw the salts, read every group's input, choose the bound (with
    ``max_contributions="auto"``), run every group's top-k."""
    q, grouping, selection = query, query.grouping, plan.selection
    salt, group_salt = draw_salts(q.source)
    scan = _Scan(q.table, q.column, q.by, a.candidates, grouping, selection, q.privacy_unit,
                 (salt, group_salt, q.progress, a.rows_per_value))  # fmt: skip
    bounds = _bounds_m(a)
    chosen = bounds[0]
    names, inputs = scan.inputs(chosen, plan.plans[chosen].limit)
    params = parameters
    if plan.gem is not None:  # one bound for all groups (_auto_contributions)
        chosen, inputs = _auto_contributions(scan, names, plan.plans, inputs, plan.gem, a.k)
        params = dict(parameters, max_contributions=chosen, mechanism=plan.plans[chosen].method,
                      max_contributions_choice=(
            f"max_contributions = {chosen}, chosen privately among {len(bounds)} bounds "
            f"(1..{bounds[-1]}) for every group by the generalized exponential mechanism "
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
    it (docs/grouped_releases.md, "values_per_unit='auto'")."""
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
