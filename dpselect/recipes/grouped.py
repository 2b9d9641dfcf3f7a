"""Grouped releases of ``top_k``/``most_common`` and ``partition_selection`` (``by=``).

``top_k(data, "dest", k=5, epsilon=1, by="carrier", groups=[...])`` releases the top five
destinations of every listed carrier in one scan and one charge; the accounting, the groups
(public or private) and the result are :mod:`dpselect.recipes.grouping`'s
(docs/grouped_releases.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from ..core.arithmetic import float_down, float_up, printed_up
from ..core.errors import ParameterError
from ..data.candidates import load_candidates
from ..data.query import PrivateGroups, PublicGroups, Query, UnitRule
from ..data.rules import check_bounded_candidates, check_rows_per_value
from ..mechanisms.generalized_exponential import make_generalized_exponential_mechanism
from ..mechanisms.limited_domain import limited_domain_threshold, make_limited_domain_top_k
from ..mechanisms.partition_selection import (
    make_optimal_partition_selection,
    make_threshold_partition_selection,
    ordered_values,
    threshold_plan,
)
from ..mechanisms.top_k_plan import CONFIDENCE, TopKPlan, plan_top_k
from ..mechanisms.validate import check_delta, check_int, check_user_epsilon
from ..sampling.source import RandomSource
from ._common import check_contributions, open_ledger
from .bounds import DEFAULT_CONTRIBUTIONS
from .epsilon_range import check_epsilon_range
from .grouping import (
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

__all__ = ["grouped_partition_selection", "grouped_top_k"]


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

    :func:`dpselect.top_k` with ``by``: its parameters mean what they mean there, within each
    group. With ``candidates`` every group ranks the public list with the mechanism
    ``top_k`` would run at ``(epsilon_g, delta_g)``; without them (``delta > 0``) every group
    runs thresholding or the limited-domain mechanism on its own values (the choice of
    :func:`~dpselect.recipes.unknown_domain.choose_unknown_domain` at the per-group budget;
    policy set union, which holds persons in the driver, is not run per group).

    Privacy (module docstring): each person touches at most ``G`` groups (``max_groups``
    with a privacy unit); each group costs ``(epsilon_g, delta_g)`` with ``epsilon_g =
    (epsilon - selection) / G``; the total charged is the selection plus ``G`` groups,
    rounded up, at most ``(epsilon, delta)``.

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
        ``"auto"`` (with a privacy unit): one bound for every group, chosen privately with
        ``auto_fraction`` (default 0.25) of epsilon before the groups' share is split
        (:func:`_auto_contributions`).

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
    from .top_k_mechanisms import check_mechanism as _check_mechanism

    k = check_int(k, "k", minimum=1)
    eps = float(check_user_epsilon(epsilon))
    check_epsilon_range(eps)
    mech = _check_mechanism(mechanism)
    r = check_rows_per_value(max_rows_per_value, privacy_unit)
    given_m, fraction = check_contributions(max_contributions, auto_fraction, privacy_unit)
    auto_m = given_m is None
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
    cand_list = None if value_mode else load_candidates(candidates)
    if cand_list is not None:
        if privacy_unit is not None:
            check_bounded_candidates(len(cand_list))
        if k > len(cand_list):
            raise ParameterError(
                f"k must be at most the number of candidates ({len(cand_list)}), got {k}"
            )
        if k_bar is not None:
            raise ParameterError("k_bar applies only without a candidates list (limited domain)")
    table = open_checked(data, column, privacy_unit, schema)
    grouping = check_groups(table, column, by, groups, privacy_unit, max_groups, group_fraction)
    private = grouping.listed is None
    if private and dlt == 0:
        raise ParameterError(
            "private groups (groups=None) are selected from the data: give delta > 0, or a "
            "public groups list"
        )
    # the groups' mechanisms need delta with values from the data or Gaussian noise: the
    # selection of private groups then takes half of delta, else all of it
    groups_use_delta = value_mode or mech == "gaussian_histogram"
    gem = None
    spent_c = Fraction(0)
    eps_groups = eps
    if auto_m:  # the choice first (sensitivity G r: _auto_contributions), the rest split
        gem = make_generalized_exponential_mechanism(
            bounds_m, lambda scores, b: scores[b], [Fraction(grouping.max_groups * r)] *
            len(bounds_m), Fraction(eps) * Fraction(fraction), beta=0.05, source=source,
        )  # fmt: skip
        spent_c = Fraction(gem.map(1))
        eps_groups = float_down(Fraction(eps) - spent_c)
    budget = split_budget(eps_groups, dlt, grouping, 0.5 if groups_use_delta else 1.0)
    book = open_ledger(ledger)
    zcdp = book is not None and book.accounting == "zcdp"
    selection = group_selection(grouping, budget, privacy_unit, source) if private else None
    select_cost = (0.0, 0.0) if selection is None else (selection[1], selection[2])
    eg, dg = budget.group_epsilon, budget.group_delta
    plans: dict[int, _GroupPlan] = {}
    for m in bounds_m:  # every bound planned before the charge
        # the per-group mechanism as for a given m (the limited domain included: measured in
        # bench/bench_auto_contributions_unknown.py, top 3 by origin, it chose better bounds
        # than thresholding alone, unlike the ungrouped top 10: mechanism_at)
        plans[m] = _group_plan(table, column, cand_list, privacy_unit, k, eg, dg, mech,
                               counts, (m, r, k_bar), source, book,
                               zcdp and not private)  # fmt: skip
    each = (max(p.each[0] for p in plans.values()), max(p.each[1] for p in plans.values()))
    total = total_cost(budget, grouping, each, select_cost)
    if auto_m:
        total = (float_up(Fraction(total[0]) + spent_c), total[1])
    first = plans[bounds_m[0]]
    kinds = {p.kind for p in plans.values()}
    kind: Literal["pure", "bounded_range", "approx"] = (
        "approx" if "approx" in kinds else "pure" if "pure" in kinds else "bounded_range"
    )  # the choice (an exponential mechanism) is bounded range: composing keeps the kind
    rho: float | None = None
    if zcdp and not private and first.rho is not None:
        worst = max(Fraction(p.rho or 0) for p in plans.values())
        rho = float_up(spent_c**2 / 8 + grouping.max_groups * worst)
    if private:
        kind = "approx"
    m = bounds_m[0]
    method = first.method
    parameters = {
        "column": column, "k": k, "epsilon": eps, "delta": dlt, "by": by,
        "groups": "private" if private else len(grouping.listed or []),
        "max_groups": grouping.max_groups, "privacy_unit": privacy_unit,
        "max_contributions": "auto" if auto_m else m, "max_rows_per_value": r,
        "mechanism": method, "group_epsilon": each[0], "group_delta": each[1],
        "n_candidates": None if cand_list is None else len(cand_list),
    }  # fmt: skip
    if auto_m:
        parameters.update(max_contributions_candidates=bounds_m, auto_fraction=fraction,
                          choice_epsilon=float_up(spent_c))  # fmt: skip
    accounting = composition_text(
        grouping, privacy_unit, None if selection is None else selection[4]
    )

    def release() -> GroupedResult:
        salt, group_salt = draw_salts(source)
        scan = _Scan(table, column, by, cand_list, grouping, selection, privacy_unit,
                     (salt, group_salt, progress, r))  # fmt: skip
        chosen = bounds_m[0]
        names, inputs = scan.inputs(chosen, plans[chosen].limit)
        params = parameters
        if gem is not None:  # one bound for all groups (_auto_contributions)
            chosen, inputs = _auto_contributions(scan, names, plans, inputs, gem, k)
            params = dict(parameters, max_contributions=chosen, mechanism=plans[chosen].method,
                          max_contributions_choice=(
                f"max_contributions = {chosen}, chosen privately among {len(bounds_m)} bounds "
                f"(1..{bounds_m[-1]}) for every group by the generalized exponential mechanism "
                f"at epsilon = {float_up(spent_c):.6g}; the groups then ran at epsilon = "
                f"{float(eps_groups):.6g}"
            ))  # fmt: skip
        plan = plans[chosen]
        releases = [plan.run(inputs[j]) for j in range(len(names))]
        name, accuracy = plan.name, plan.accuracy
        return GroupedResult(
            "top_k", by, column, names, releases, total[0], total[1], rho, each[0], each[1],
            grouping.max_groups, chosen_by_text(grouping, selection, *select_cost), name,
            accounting, accuracy, None if book is None else book.path, params,
        )  # fmt: skip

    entry = "top_k/by/max_contributions=auto" if auto_m else f"top_k/by/{method}"
    return charge_grouped(book, release, (total[0], total[1], rho), kind, entry,
                   parameters, privacy_unit, table)  # fmt: skip


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

    each, name, accuracy, method, run, limit = _value_runner(k, eg, dg, m, r, mech, counts,
                                                             k_bar, source, book)  # fmt: skip
    option = {"limited_domain": "gumbel", "laplace_threshold": "laplace_histogram",
              "gaussian_threshold": "gaussian_histogram"}[method]  # fmt: skip
    margin = next(o.criterion for o in choose_unknown_domain(k, eg, dg, m, r)[1]
                  if o.mechanism == option)  # fmt: skip
    return _GroupPlan(each, "approx", None, name, accuracy, method, run, limit, float(margin))


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
) -> tuple[tuple[float, float], str, str, str, Callable[[Any], TopKResult], int | None]:
    """One group's top-k over its own values at ``(eps, delta)``: thresholding or the limited
    domain, chosen by :func:`choose_unknown_domain` at the per-group budget (public facts).
    Returns the per-group cost, the mechanism's name, its accuracy line, its short name, the
    runner on the group's ``[(value, count)]`` and how many values per group it reads."""
    from .unknown_domain_plans import (
        K_BAR_EXTRA,
        LIMITED_DOMAIN_NAME,
        THRESHOLD_NAMES,
        choose_unknown_domain,
        counted_in_words,
        limited_domain_per_round,
        noise_halfwidth,
        ordinal,
        rank_released,
        sure_release_count,
    )

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
        kb = k + K_BAR_EXTRA if k_bar is None else check_int(k_bar, "k_bar", minimum=k)
        per_round = limited_domain_per_round(k, eps, delta)
        measurement = make_limited_domain_top_k(
            k, kb, per_round, delta / 2, max_contributions=m, delta_prime=delta / 2,
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

        return (spent[0], spent[1]), LIMITED_DOMAIN_NAME, accuracy, "limited_domain", run_ld, kb + 1
    if k_bar is not None:
        raise ParameterError("k_bar applies only to the limited-domain mechanism")
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

    return (
        (spent[0], spent[1]),
        THRESHOLD_NAMES[noise],
        accuracy,
        f"{noise}_threshold",
        run_threshold,
        None,
    )


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


# ------------------------------------------------------------------------------------------
# partition_selection(by=...)


def grouped_partition_selection(
    data: Any,
    column: str,
    epsilon: float,
    delta: float,
    *,
    by: str,
    groups: Any = None,
    privacy_unit: str | None = None,
    max_groups: int = 1,
    max_contributions: int = 1,
    max_rows_per_value: int = 1,
    mechanism: str = "auto",
    ledger: Any = None,
    source: RandomSource | None = None,
    progress: Progress = None,
    schema: Any = None,
    group_fraction: float | None = None,
) -> GroupedResult:
    """The values of ``column`` that can be published in every group of ``by``.

    Each group runs partition selection at ``(epsilon_g, delta_g)``. ``"auto"`` and
    ``"optimal"``: DVGM22's optimal rule, each person counting once toward one value of the
    group (a released set is valid whatever selected it: with ``max_rows_per_value > 1`` it
    selects by persons, which released the most values in every measured cell,
    docs/partition_selection.md, section 6; ungrouped ``"auto"`` on a Spark-like engine
    chooses the same). ``"laplace"`` / ``"gaussian"``: thresholding of exact counts
    calibrated to L0 ``m`` and L-infinity ``r``. Policy set union is not run per group.
    Accounting: :mod:`dpselect.recipes.grouping`.

    Parameters
    ----------
    data, column, epsilon, delta, privacy_unit, max_contributions, max_rows_per_value,
    mechanism, ledger, source, progress, schema
        As for :func:`dpselect.partition_selection`, per group.
    by, groups, max_groups, group_fraction
        As for :func:`grouped_top_k`.

    Returns
    -------
    GroupedResult
        One :class:`~dpselect.recipes.unknown_domain.KeysResult` per group.
    """
    from .unknown_domain_plans import (
        OPTIMAL_NAME,
        KeysResult,
        counted_in_words,
        optimal_sure_count,
        sure_release_count,
    )

    eps = float(check_user_epsilon(epsilon))
    check_epsilon_range(eps)
    dlt = float(check_delta(delta, allow_zero=False))
    m = check_int(max_contributions, "max_contributions", minimum=1)
    if privacy_unit is None and m != 1:
        raise ParameterError("max_contributions applies only with a privacy_unit column")
    r = check_rows_per_value(max_rows_per_value, privacy_unit)
    if mechanism not in ("auto", "optimal", "laplace", "gaussian"):
        raise ParameterError(
            "with by, mechanism must be 'auto', 'optimal', 'laplace' or 'gaussian' (policy set "
            f"union holds persons in the driver and is not run per group), got {mechanism!r}"
        )
    table = open_checked(data, column, privacy_unit, schema)
    grouping = check_groups(table, column, by, groups, privacy_unit, max_groups, group_fraction)
    private = grouping.listed is None
    budget = split_budget(eps, dlt, grouping, 0.5)
    book = open_ledger(ledger)
    selection = group_selection(grouping, budget, privacy_unit, source) if private else None
    select_cost = (0.0, 0.0) if selection is None else (selection[1], selection[2])
    eg, dg = budget.group_epsilon, budget.group_delta
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
    each = tuple(float(x) for x in measurement.map(1))
    total = total_cost(budget, grouping, (each[0], each[1]), select_cost)
    accuracy = (
        f"a value {counted_in_words(sure, r_sel)} in its group is released with probability "
        f"at least {CONFIDENCE:.0%}; a value held by one person only, with probability at most "
        f"{each[1]:.3g}"
    )
    parameters = {
        "column": column, "epsilon": eps, "delta": dlt, "by": by,
        "groups": "private" if private else len(grouping.listed or []),
        "max_groups": grouping.max_groups, "privacy_unit": privacy_unit,
        "max_contributions": m, "max_rows_per_value": r, "mechanism": method,
        "group_epsilon": each[0], "group_delta": each[1],
        "selected_by": "persons" if r_sel == 1 else "rows",
    }  # fmt: skip
    accounting = composition_text(
        grouping, privacy_unit, None if selection is None else selection[4]
    )

    def release() -> GroupedResult:
        salt, group_salt = draw_salts(source)
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
                name,
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
            chosen_by_text(grouping, selection, *select_cost), name, accounting, accuracy,
            None if book is None else book.path, parameters,
        )  # fmt: skip

    return charge_grouped(book, release, (total[0], total[1], None), "approx",
                   f"keys/by/{method}", parameters, privacy_unit, table)  # fmt: skip
