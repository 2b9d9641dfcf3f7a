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
group runs thresholding or the limited-domain mechanism on its own values (policy set union,
which holds persons in the driver, is not run per group). The grouping, the budget split, the
private choices (of the groups, of ``values_per_unit="auto"``), every group's mechanism and
the charge are planned by :func:`dpselect.planning.grouped_top_k_plan.grouped_top_k_plan`;
this module charges the plan once, with its stages, then reads the data and runs it.

Privacy: each person touches at most ``G`` groups (``max_groups`` with a privacy unit); each
group costs ``(epsilon_g, delta_g)`` with ``epsilon_g = (epsilon - selection) / G``; the total
charged is the selection plus ``G`` groups, rounded up, at most ``(epsilon, delta)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..core.arithmetic import float_up, printed_up
from ..data.query import PrivateGroups, PublicGroups, Query, UnitRule
from ..planning.grouped_top_k_plan import GroupedTopKPlan, GroupTopK, grouped_top_k_plan
from ..planning.top_k_plan import CONFIDENCE
from ..planning.top_k_request import TopKRequest
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
from .top_k_result import TopKResult
from .unknown_domain_result import Progress, counted_in_words, ordinal, rank_released

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
    known (:func:`~dpselect.planning.group_plan.check_groups`); every other argument is checked
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
    book = open_ledger(ledger)
    plan = grouped_top_k_plan(table, a, accounting=None if book is None else book.accounting,
                              source=source)  # fmt: skip
    query = GroupedQuery(table, a.column, a.by, a.privacy_unit, plan.grouping, source, progress)

    def release() -> GroupedResult:
        return _grouped_top_k_release(query, a, plan, book)

    return charge_grouped(book, release, plan.cost, plan.kind, plan.entry, plan.parameters,
                          a.privacy_unit, table, plan.stages)  # fmt: skip


def _grouped_top_k_release(query: GroupedQuery, a: TopKRequest, plan: GroupedTopKPlan,
                           book: Any) -> GroupedResult:  # fmt: skip
    """After the charge: draw the salts, read every group's input, choose the bound (with
    ``max_contributions="auto"``), run every group's top-k."""
    q, grouping, selection = query, query.grouping, plan.selection
    salt, group_salt = draw_salts(q.source)
    scan = _Scan(q.table, q.column, q.by, a.candidates, grouping, selection, q.privacy_unit,
                 (salt, group_salt, q.progress, a.rows_per_value))  # fmt: skip
    bounds = plan.bounds
    chosen = bounds[0]
    names, inputs = scan.inputs(chosen, plan.plans[chosen].limit)
    params = plan.parameters
    if plan.gem is not None:  # one bound for all groups (_auto_contributions)
        chosen, inputs = _auto_contributions(scan, names, plan.plans, inputs, plan.gem, a.k)
        params = dict(params, max_contributions=chosen, mechanism=plan.plans[chosen].method,
                      max_contributions_choice=(
            f"max_contributions = {chosen}, chosen privately among {len(bounds)} bounds "
            f"(1..{bounds[-1]}) for every group by the generalized exponential mechanism "
            f"at epsilon = {float_up(plan.spent_c):.6g}; the groups then ran at epsilon = "
            f"{float(plan.eps_groups):.6g}"
        ))  # fmt: skip
    group = plan.plans[chosen]
    run, accuracy = _runner(group, a, q.source, book)
    releases = [run(inputs[j]) for j in range(len(names))]
    accounting = composition_text(grouping, q.privacy_unit,
                                  None if selection is None else selection.name)  # fmt: skip
    return GroupedResult(
        "top_k", q.by, q.column, names, releases, plan.cost[0], plan.cost[1],
        plan.cost[2], plan.each[0], plan.each[1], grouping.max_groups,
        chosen_by_text(grouping, selection, *plan.select_cost), group.name, accounting,
        accuracy, None if book is None else book.path, params,
    )  # fmt: skip


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
    plans: dict[int, GroupTopK],
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


def _runner(group: GroupTopK, a: TopKRequest, source: RandomSource | None,
            book: Any) -> tuple[Callable[[Any], TopKResult], str]:  # fmt: skip
    """One group's top-k as planned (``group``), run on a group's input, and its accuracy
    statement."""
    if group.top_k is not None:
        return _candidate_runner(a.candidates or [], group, a.counts, book)
    if group.sure is None:
        return _limited_domain_runner(group, a.k, book)
    return _threshold_runner(group, a.k, a.counts, source, book)


def _candidate_runner(cand_list: list[Any], group: GroupTopK, counts: bool,
                      book: Any) -> tuple[Callable[[Any], TopKResult], str]:  # fmt: skip
    """One group's top-k over the public candidates: the plan's top-k on its score vector."""
    plan = group.top_k
    assert plan is not None

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

    return run, plan.accuracy


def _limited_domain_runner(group: GroupTopK, k: int,
                           book: Any) -> tuple[Callable[[Any], TopKResult], str]:  # fmt: skip
    """The limited-domain top-k of one group (Durfee and Rogers 2019), as planned."""
    plan = group.values
    assert plan is not None and plan.k_bar is not None
    measurement, spent = plan.measurement, plan.spent
    accuracy = (
        f"a value whose score exceeds the {ordinal(plan.k_bar + 1)} largest score of its group "
        f"by at least {printed_up(plan.margin)} is ranked above the stopping threshold "
        "with probability at "
        f"least {CONFIDENCE:.0%} (Gumbel noise, Durfee and Rogers 2019)"
    )

    def run_ld(found: Sequence[tuple[Any, int]]) -> TopKResult:
        values = list(measurement(dict(found)))
        return _values_result(values, None, group.name, spent, accuracy, k, book)

    return run_ld, accuracy


def _threshold_runner(group: GroupTopK, k: int, counts: bool, source: RandomSource | None,
                      book: Any) -> tuple[Callable[[Any], TopKResult], str]:  # fmt: skip
    """Thresholding of one group's exact Laplace or Gaussian counts, then its ``k`` largest
    noisy counts, as planned."""
    plan = group.values
    assert plan is not None and plan.threshold is not None and group.sure is not None
    measurement, spent, half = plan.measurement, plan.spent, group.halfwidth
    # the count statement is about any one value, released or not: conditioned on being
    # released, a count just above the threshold was kept because its noise was high
    accuracy = (
        f"a value {counted_in_words(group.sure, plan.r)} in its group is released with "
        f"probability at least {CONFIDENCE:.0%}; released values are ranked by noisy count; "
        f"for any one value, its noisy count is within +-{half} of its true count with "
        f"probability at least {CONFIDENCE:.0%} (counts just above the threshold "
        f"{plan.threshold.threshold} lean high: they were kept because their noise was)"
    )

    def run_threshold(found: Sequence[tuple[Any, int]]) -> TopKResult:
        kept: dict[Any, int] = measurement(dict(found))
        ranked = rank_released(kept, k, source)
        noisy = [kept[v] for v in ranked] if counts else None
        return _values_result(ranked, noisy, group.name, spent, accuracy, k, book, half)

    return run_threshold, accuracy


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
