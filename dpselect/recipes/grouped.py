"""Grouped releases: one private answer per group of a column ``by``, in one query.

``top_k(data, "dest", k=5, epsilon=1, by="carrier", groups=[...])`` releases the top five
destinations of every listed carrier; ``most_common``, ``partition_selection`` and
``quantile`` take ``by`` the same way. The groups are either a **public list** (every
listed group gets an answer, empty or not) or **private** (``groups=None``: the groups
themselves are selected first by partition selection, paid from the same budget).

**The accounting** (docs/grouped_releases.md). With a privacy unit each person keeps at most
``G = max_groups`` of their groups (the keyed rule :func:`dpselect.data.rules.kept_groups`,
which reads that person's rows only); without one a row falls in the groups its ``by``
value matches, at most ``G = group_multiplicity`` (1 unless two listed groups convert to one
value). Every group runs the ungrouped mechanism at ``(epsilon_g, delta_g)`` on its own kept
rows, with fresh randomness. Adding or removing one person changes the input of at most
``G`` groups; the other groups' outputs keep their law. The release of the touched groups is
the composition of at most ``G`` mechanisms, each ``(epsilon_g, delta_g)``-DP in that
person, so the whole release is ``(G epsilon_g, G delta_g)``-DP (parallel composition over
disjoint parts, McSherry 2009, Theorem 4; basic composition across a person's ``G`` groups,
Dwork and Roth 2014, Theorem 3.16). In a zCDP ledger the ``rho`` of the ``G`` groups adds
(Bun and Steinke 2016, Lemma 2.3). Private groups add the selection's cost by adaptive
composition (the list it releases is then public). One charge covers everything, before any
row is read; the result shows the per-group epsilon.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from ..core.arithmetic import float_down, float_up
from ..core.errors import ParameterError
from ..data.candidates import load_candidates
from ..data.engine import Engine
from ..data.partitions import value_counts
from ..data.rules import check_bounded_candidates, check_rows_per_value
from ..data.scores import candidate_multiplicity
from ..mechanisms.limited_domain import limited_domain_threshold, make_limited_domain_top_k
from ..mechanisms.partition_selection import (
    make_optimal_partition_selection,
    make_threshold_partition_selection,
    ordered_values,
    threshold_plan,
)
from ..mechanisms.top_k_plan import CONFIDENCE, TopKPlan, plan_top_k
from ..mechanisms.validate import check_delta, check_int, check_user_epsilon
from ..sampling.source import RandomSource, resolve_source
from ._common import jsonable, open_ledger
from .release import charge_then, open_checked
from .result import Result
from .top_k_result import TopKResult

__all__ = [
    "GROUP_FRACTION",
    "GroupedResult",
    "group_budget",
    "grouped_partition_selection",
    "grouped_quantile",
    "grouped_top_k",
]

Progress = Callable[[float], None] | None

#: The default share of epsilon spent on selecting the groups when they are private
#: (``groups=None``); with values from the data the selection also takes half of delta.
GROUP_FRACTION = 0.25

_COMPOSITION = (
    "each person is in at most {G} group{s} ({why}); each group's release is "
    "(epsilon_g, delta_g)-DP in that person and the groups draw independent noise, so the "
    "whole is ({G} epsilon_g, {G} delta_g)-DP (parallel composition, McSherry 2009, Theorem 4; "
    "basic composition across a person's groups, Dwork and Roth 2014, Theorem 3.16)"
)


@dataclass(frozen=True)
class GroupedResult(Result):
    """A grouped release: one answer per group, the total cost, the per-group cost.

    ``releases[j]`` is the answer of ``groups[j]`` (a :class:`TopKResult`, a
    :class:`~dpselect.recipes.unknown_domain.KeysResult` or a
    :class:`~dpselect.recipes.quantiles.QuantileResult`), each with its own per-group cost
    and accuracy statement; ``epsilon``/``delta``/``rho`` are what the whole release cost
    (what the ledger was charged).
    """

    kind: str  # "top_k", "partition_selection" or "quantile"
    by: str
    column: str
    groups: list[Any]
    releases: list[Any]
    epsilon: float
    delta: float
    rho: float | None
    group_epsilon: float
    group_delta: float
    max_groups: int
    groups_chosen_by: str
    mechanism: str
    accounting: str
    accuracy: str
    ledger: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)

    def _dict(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k != "releases"}
        out["groups"] = [jsonable(g) for g in self.groups]
        out["releases"] = [
            {"group": jsonable(g), **r.to_dict()}
            for g, r in zip(self.groups, self.releases, strict=True)
        ]
        out["rows"] = self._rows()
        return out

    def _rows(self) -> list[dict[str, Any]]:
        """One row per released item: ``(group, rank, value[, noisy_count])`` for top-k,
        ``(group, value)`` for partition selection, ``(group, q, value)`` for quantiles."""
        rows: list[dict[str, Any]] = []
        for group, release in zip(self.groups, self.releases, strict=True):
            g = jsonable(group)
            if self.kind == "top_k":
                values = [jsonable(v) for v in release.candidates]
                counts = release.counts
                for rank, value in enumerate(values, start=1):
                    row = {"group": g, "rank": rank, "value": value}
                    if counts is not None:
                        row["noisy_count"] = counts[rank - 1]
                    rows.append(row)
            elif self.kind == "partition_selection":
                rows.extend({"group": g, "value": jsonable(v)} for v in release.values)
            else:
                rows.extend(
                    {"group": g, "q": float(q), "value": v}
                    for q, v in zip(release.parameters["q"], release.values, strict=True)
                )
        return rows

    def lines(self) -> list[list[str]]:
        """The table as printed: a header and one row of text per released item."""
        rows = self._rows()
        if self.kind == "top_k":
            header = ["group", "rank", "value"]
            with_counts = any("noisy_count" in r for r in rows)
            if with_counts:
                header.append("noisy count")
            body = []
            for group, release in zip(self.groups, self.releases, strict=True):
                counts = release.shown_counts()
                for rank, value in enumerate(release.candidates, start=1):
                    line = [str(group), str(rank), str(value)]
                    if with_counts:
                        line.append("" if counts is None else counts[rank - 1])
                    body.append(line)
            return [header, *body]
        if self.kind == "partition_selection":
            return [["group", "value"], *[[str(r["group"]), str(r["value"])] for r in rows]]
        return [["group", "q", "value"], *[[str(r["group"]), f"{r['q']:g}", f"{r['value']:.6g}"]
                                           for r in rows]]  # fmt: skip

    def empty_groups(self) -> list[Any]:
        """The groups whose answer is empty (nothing passed the threshold)."""
        if self.kind == "quantile":
            return []
        attr = "candidates" if self.kind == "top_k" else "values"
        return [g for g, r in zip(self.groups, self.releases, strict=True) if not getattr(r, attr)]

    def summary(self) -> list[str]:
        """The lines printed under the table: groups, mechanism, cost, accounting, accuracy."""
        cost = f"privacy cost: epsilon = {self.epsilon:.6g}, delta = {self.delta:.3g}"
        if self.rho is not None:
            cost += f", zCDP rho = {self.rho:.6g}"
        lines = [
            f"{len(self.groups)} groups of {self.by!r} ({self.groups_chosen_by})",
            f"per group: epsilon_g = {self.group_epsilon:.6g}, delta_g = {self.group_delta:.3g}",
            f"mechanism in each group: {self.mechanism}",
            cost,
            f"accounting: {self.accounting}",
            f"accuracy, in each group: {self.accuracy.removeprefix('accuracy: ')}",
        ]
        empty = self.empty_groups()
        if empty:
            lines.insert(1, f"{len(empty)} groups released nothing (too rare to show privately)")
        return lines

    def _text(self) -> str:
        table = self.lines()
        widths = [max(len(row[j]) for row in table) for j in range(len(table[0]))]
        text = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
                for row in table]  # fmt: skip
        return "\n".join([*text, *self.summary()])


# ------------------------------------------------------------------------------------------
# Public checks and the budget


@dataclass(frozen=True)
class _Groups:
    """The public facts of the grouping, checked before anything is charged."""

    by: str
    listed: list[Any] | None  # the public list, or None: private groups
    max_groups: int  # G: the groups one person may touch
    fraction: float  # the share of epsilon that selects private groups (0 when public)


def _check_groups(
    table: Engine,
    column: str,
    by: Any,
    groups: Any,
    privacy_unit: str | None,
    max_groups: Any,
    group_fraction: Any,
) -> _Groups:
    """``by``, ``groups``, ``max_groups`` and ``group_fraction`` checked from public facts:
    the schema, the parameters and the group list (never a row)."""
    if not isinstance(by, str):
        raise ParameterError(f"by must be a column name, got {by!r}")
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
            g = table.group_multiplicity(by, listed)
        g = min(g, len(listed))  # nobody is in more groups than there are
        return _Groups(by, listed, g, 0.0)
    from .top_k import check_auto_fraction

    return _Groups(by, None, g, check_auto_fraction(group_fraction))


@dataclass(frozen=True)
class _Budget:
    """How the total ``(epsilon, delta)`` splits: the group selection, then every group."""

    epsilon: Fraction
    delta: Fraction
    select_epsilon: Fraction  # 0 with public groups
    select_delta: Fraction
    group_epsilon: float  # what each group's mechanism is calibrated to (rounded down)
    group_delta: float


def _budget(eps: float, delta: float, grouping: _Groups, delta_to_select: float) -> _Budget:
    """The split: private groups take ``fraction`` of epsilon and ``delta_to_select`` of delta
    for the selection; the rest is divided by ``G`` (each person is in at most ``G`` groups),
    rounded down so that ``G`` times a group's cost stays within the rest."""
    e, d = Fraction(eps), Fraction(delta)
    se = e * Fraction(grouping.fraction) if grouping.listed is None else Fraction(0)
    sd = d * Fraction(delta_to_select) if grouping.listed is None else Fraction(0)
    g = grouping.max_groups
    return _Budget(e, d, se, sd, float_down((e - se) / g), float_down((d - sd) / g))


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
    from .top_k import check_auto_fraction

    fraction = check_auto_fraction(group_fraction) if private else 0.0
    grouping = _Groups("", None if private else [], max_groups, fraction)
    b = _budget(epsilon, delta, grouping, 0.5 if values_from_data else 1.0)
    return b.group_epsilon, b.group_delta, float_down(b.select_epsilon), float_down(b.select_delta)


def _selection(
    grouping: _Groups, budget: _Budget, privacy_unit: str | None, source: RandomSource | None
) -> tuple[Any, float, float, int, str]:
    """The private choice of the groups (``groups=None``): partition selection over ``by``.

    DVGM22's optimal rule when a person is in one group (``G = 1``); else thresholding of
    exact Laplace or Gaussian counts with each person counting toward at most ``G`` groups
    (L0 ``G``, the one with the lower count released at 95%). Returns the measurement, its
    ``(epsilon, delta)``, the contributions it bounds persons to, and its name."""
    from .unknown_domain import OPTIMAL_NAME, _rows_threshold_method

    eps, dlt = float_down(budget.select_epsilon), float_down(budget.select_delta)
    if dlt <= 0:
        raise ParameterError(
            "private groups (groups=None) are selected from the data: give delta > 0, or a "
            "public groups list"
        )
    g = grouping.max_groups if privacy_unit is not None else 1
    if g == 1:
        m = make_optimal_partition_selection(eps, dlt, source=source)
        name = OPTIMAL_NAME
    else:
        noise = _rows_threshold_method(eps, dlt, g, 1)
        m = make_threshold_partition_selection(
            threshold_plan(noise, eps, dlt, g), counts=False, source=source
        )
        name = f"partition selection by thresholding exact discrete {noise.title()} counts"
    spent_eps, spent_delta = (float(x) for x in m.map(1))
    return m, spent_eps, spent_delta, g, name


def _total(
    budget: _Budget, grouping: _Groups, each: tuple[float, float], select: tuple[float, float]
) -> tuple[float, float]:
    """The charge: the selection plus ``G`` times one group's cost, rounded up."""
    g = grouping.max_groups
    eps = float_up(Fraction(select[0]) + g * Fraction(each[0]))
    dlt = float_up(Fraction(select[1]) + g * Fraction(each[1]))
    return eps, dlt


def _accounting(grouping: _Groups, privacy_unit: str | None, select_name: str | None) -> str:
    g = grouping.max_groups
    if privacy_unit is not None:
        why = f"max_groups = {g}, the keyed rule of docs/contribution_bounding.md"
    elif g > 1:
        why = f"a value of {grouping.by!r} matches at most {g} listed groups"
    else:
        why = "a row is in the group of its value"
    text = _COMPOSITION.format(G=g, s="" if g == 1 else "s", why=why)
    if g == 1:
        text = text.replace("(1 epsilon_g, 1 delta_g)", "(epsilon_g, delta_g)")
    if select_name is not None:
        text += f"; the groups were selected first by {select_name} (adaptive composition)"
    return text


def _group_list(
    table: Engine,
    grouping: _Groups,
    selection: tuple[Any, float, float, int, str] | None,
    privacy_unit: str | None,
    source: RandomSource | None,
    progress: Progress,
) -> list[Any]:
    """The groups answered: the public list, or (after the charge) the selected ones."""
    if grouping.listed is not None:
        return list(grouping.listed)
    assert selection is not None
    measurement, _, _, bound, _ = selection
    salt = resolve_source(source).bits(63)
    counts = value_counts(table, grouping.by, privacy_unit, bound, salt, progress)
    return ordered_values(measurement(counts))


def _salts(source: RandomSource | None) -> tuple[int, int]:
    """The value rule's salt and the group rule's salt: drawn apart, after the charge."""
    src = resolve_source(source)
    return src.bits(63), src.bits(63)


def _chosen_by(grouping: _Groups, selection: Any, eps: float, delta: float) -> str:
    if grouping.listed is not None:
        return "public list"
    return f"chosen privately by {selection[4]} at epsilon = {eps:.4g}, delta = {delta:.3g}"


def _charge(
    book: Any,
    release: Callable[[], GroupedResult],
    cost: tuple[float, float, float | None],
    kind: Literal["pure", "bounded_range", "approx"],
    name: str,
    parameters: dict[str, Any],
    privacy_unit: str | None,
    table: Engine,
) -> GroupedResult:
    refusal = (
        "this grouped release costs (epsilon, delta) with delta > 0, which the zCDP ledger "
        f"{getattr(book, 'path', None)} cannot take: use a basic ledger"
    )
    return charge_then(
        book, release, cost[0], cost[1], cost[2], kind, name, parameters,
        privacy_unit=privacy_unit, source=table.description, refusal=refusal,
    )  # fmt: skip


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
    max_contributions: int = 1,
    max_rows_per_value: int = 1,
    mechanism: str = "auto",
    counts: bool = False,
    ledger: Any = None,
    source: RandomSource | None = None,
    progress: Progress = None,
    schema: Any = None,
    k_bar: int | None = None,
    group_fraction: float | None = None,
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
    from .top_k import _check_mechanism

    k = check_int(k, "k", minimum=1)
    eps = float(check_user_epsilon(epsilon))
    mech = _check_mechanism(mechanism)
    r = check_rows_per_value(max_rows_per_value, privacy_unit)
    m = check_int(max_contributions, "max_contributions", minimum=1)
    if privacy_unit is None and m != 1:
        raise ParameterError("max_contributions applies only with a privacy_unit column")
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
    grouping = _check_groups(table, column, by, groups, privacy_unit, max_groups, group_fraction)
    private = grouping.listed is None
    if private and dlt == 0:
        raise ParameterError(
            "private groups (groups=None) are selected from the data: give delta > 0, or a "
            "public groups list"
        )
    budget = _budget(eps, dlt, grouping, 0.5 if value_mode else 1.0)
    book = open_ledger(ledger)
    zcdp = book is not None and book.accounting == "zcdp"
    selection = _selection(grouping, budget, privacy_unit, source) if private else None
    select_cost = (0.0, 0.0) if selection is None else (selection[1], selection[2])
    eg, dg = budget.group_epsilon, budget.group_delta
    rho: float | None = None
    if cand_list is not None:
        c = m if privacy_unit is not None else candidate_multiplicity(table, column, cand_list)
        plan = plan_top_k(len(cand_list), k, eg, dg, mech, counts, c, source, zcdp and not private,
                          max_rows_per_value=r)  # fmt: skip
        each = (plan.epsilon, plan.delta)
        kind: Literal["pure", "bounded_range", "approx"] = plan.kind
        if zcdp and not private:
            rho = float_up(grouping.max_groups * Fraction(plan.rho))
        name, accuracy, method = plan.name, plan.accuracy, plan.method
        run_group = _candidate_runner(cand_list, plan, counts, book)
    else:
        runner = _value_runner(k, eg, dg, m, r, mech, counts, k_bar, source, book)
        each, name, accuracy, method, run_group, limit = runner
        kind = "approx"
    total = _total(budget, grouping, each, select_cost)
    if private:
        kind = "approx"
    parameters = {
        "column": column, "k": k, "epsilon": eps, "delta": dlt, "by": by,
        "groups": "private" if private else len(grouping.listed or []),
        "max_groups": grouping.max_groups, "privacy_unit": privacy_unit,
        "max_contributions": m, "max_rows_per_value": r, "mechanism": method,
        "group_epsilon": each[0], "group_delta": each[1],
        "n_candidates": None if cand_list is None else len(cand_list),
    }  # fmt: skip
    accounting = _accounting(grouping, privacy_unit, None if selection is None else selection[4])

    def release() -> GroupedResult:
        names = _group_list(table, grouping, selection, privacy_unit, source, progress)
        salt, group_salt = _salts(source)
        if cand_list is not None:
            g_idx, c_idx, n = table.grouped_candidate_scores(
                column, cand_list, by, names, privacy_unit, grouping.max_groups, m, salt,
                group_salt, progress, r,
            )  # fmt: skip
            dense = np.zeros((len(names), len(cand_list)), dtype=np.int64)
            dense[g_idx, c_idx] = n
            releases = [run_group(dense[j]) for j in range(len(names))]
        else:
            found = table.grouped_value_counts(
                column, by, names, limit, privacy_unit, grouping.max_groups, m, salt,
                group_salt, progress, r,
            )  # fmt: skip
            releases = [run_group(found[j]) for j in range(len(names))]
        return GroupedResult(
            "top_k", by, column, names, releases, total[0], total[1], rho, each[0], each[1],
            grouping.max_groups, _chosen_by(grouping, selection, *select_cost), name,
            accounting, accuracy, None if book is None else book.path, parameters,
        )  # fmt: skip

    return _charge(book, release, (total[0], total[1], rho), kind, f"top_k/by/{method}",
                   parameters, privacy_unit, table)  # fmt: skip


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
    from .unknown_domain import (
        K_BAR_EXTRA,
        LIMITED_DOMAIN_NAME,
        THRESHOLD_NAMES,
        _counted,
        _ld_per_round,
        _noise_halfwidth,
        _ordinal,
        _sure_release_count,
        choose_unknown_domain,
        rank_released,
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
        per_round = _ld_per_round(k, eps, delta)
        measurement = make_limited_domain_top_k(
            k, kb, per_round, delta / 2, max_contributions=m, delta_prime=delta / 2,
            source=source, max_rows_per_value=r,
        )  # fmt: skip
        spent = tuple(float(x) for x in measurement.map(r))
        threshold = r * limited_domain_threshold(per_round, delta / 2, kb, m)
        margin = threshold + (r / per_round) * math.log(CONFIDENCE / (1 - CONFIDENCE))
        accuracy = (
            f"a value whose score exceeds the {_ordinal(kb + 1)} largest score of its group by "
            f"at least {margin:.4g} is ranked above the stopping threshold with probability at "
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
    sure, half = _sure_release_count(plan), _noise_halfwidth(plan)
    accuracy = (
        f"a value {_counted(sure, r)} in its group is released with probability at least "
        f"{CONFIDENCE:.0%}; released values are ranked by noisy count, each within +-{half} "
        f"of its true count with probability at least {CONFIDENCE:.0%}"
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

    Each group runs partition selection at ``(epsilon_g, delta_g)``: DVGM22's optimal rule
    when a person keeps one value per group (``max_contributions = 1``, ``max_rows_per_value
    = 1``), else thresholding of exact Laplace or Gaussian counts calibrated to L0 ``m``,
    L-infinity ``r`` (the one with the lower count released at 95%; ``mechanism`` fixes
    ``"optimal"``, ``"laplace"`` or ``"gaussian"``). Accounting: module docstring.

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
    from .unknown_domain import (
        OPTIMAL_NAME,
        KeysResult,
        _counted,
        _optimal_sure_count,
        _rows_threshold_method,
        _sure_release_count,
    )

    eps = float(check_user_epsilon(epsilon))
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
    if mechanism == "optimal" and r > 1:
        raise ParameterError(
            "mechanism 'optimal' counts persons, not rows: max_rows_per_value > 1 needs "
            "mechanism 'laplace', 'gaussian' or 'auto'"
        )
    table = open_checked(data, column, privacy_unit, schema)
    grouping = _check_groups(table, column, by, groups, privacy_unit, max_groups, group_fraction)
    private = grouping.listed is None
    budget = _budget(eps, dlt, grouping, 0.5)
    book = open_ledger(ledger)
    selection = _selection(grouping, budget, privacy_unit, source) if private else None
    select_cost = (0.0, 0.0) if selection is None else (selection[1], selection[2])
    eg, dg = budget.group_epsilon, budget.group_delta
    method = mechanism
    if method == "auto":
        method = "optimal" if m == 1 and r == 1 else _rows_threshold_method(eg, dg, m, r)
    bound = m
    if method == "optimal":
        measurement = make_optimal_partition_selection(eg, dg, source=source)
        name, sure = OPTIMAL_NAME, _optimal_sure_count(eg, dg)
        if m > 1:  # DVGM22 is proven for one value per person: keep one (a stricter bound)
            bound, name = 1, name + ", each person bounded to one value per group"
    else:
        plan = threshold_plan(method, eg, dg, m, max_rows_per_value=r)  # type: ignore[arg-type]
        measurement = make_threshold_partition_selection(plan, counts=False, source=source)
        name = (
            "partition selection by thresholding exact discrete "
            f"{method.title()} counts (Korolova et al. 2009; Wilson et al. 2020)"
        )
        sure = _sure_release_count(plan)
    each = tuple(float(x) for x in measurement.map(1))
    total = _total(budget, grouping, (each[0], each[1]), select_cost)
    accuracy = (
        f"a value {_counted(sure, r)} in its group is released with probability at least "
        f"{CONFIDENCE:.0%}; a value held by one person only, with probability at most "
        f"{each[1]:.3g}"
    )
    parameters = {
        "column": column, "epsilon": eps, "delta": dlt, "by": by,
        "groups": "private" if private else len(grouping.listed or []),
        "max_groups": grouping.max_groups, "privacy_unit": privacy_unit,
        "max_contributions": m, "max_rows_per_value": r, "mechanism": method,
        "group_epsilon": each[0], "group_delta": each[1],
    }  # fmt: skip
    accounting = _accounting(grouping, privacy_unit, None if selection is None else selection[4])

    def release() -> GroupedResult:
        names = _group_list(table, grouping, selection, privacy_unit, source, progress)
        salt, group_salt = _salts(source)
        found = table.grouped_value_counts(
            column, by, names, None, privacy_unit, grouping.max_groups, bound, salt,
            group_salt, progress, r,
        )  # fmt: skip
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
            each[0], each[1], grouping.max_groups, _chosen_by(grouping, selection, *select_cost),
            name, accounting, accuracy, None if book is None else book.path, parameters,
        )  # fmt: skip

    return _charge(book, release, (total[0], total[1], None), "approx",
                   f"keys/by/{method}", parameters, privacy_unit, table)  # fmt: skip


# ------------------------------------------------------------------------------------------
# quantile(by=...)


def grouped_quantile(
    data: Any,
    column: str,
    q: Any,
    epsilon: float,
    *,
    by: str,
    groups: Any = None,
    delta: float | None = None,
    privacy_unit: str | None = None,
    max_groups: int = 1,
    max_rows: int = 1,
    group_fraction: float | None = None,
    ledger: Any = None,
    source: RandomSource | None = None,
    schema: Any = None,
    **options: Any,
) -> GroupedResult:
    """The quantiles ``q`` of ``column`` in every group of ``by``, in one scan.

    Each group runs :func:`dpselect.quantile` (``options``: ``bounds``, ``candidates``,
    ``mechanism``, ``resolution``, ``confidence``) on its kept rows at ``epsilon_g /
    max_rows``: with a privacy unit each person keeps at most ``max_groups`` groups and at
    most ``max_rows`` rows in each (:func:`dpselect.data.rules.kept_rows` within the group),
    so a group's rank scores move by at most ``max_rows`` and the row-level mechanism at
    ``epsilon_g / max_rows`` is ``epsilon_g``-DP per person (group privacy, Dwork and Roth
    2014, Theorem 2.2). Its accuracy lines are the row-level theorems at that epsilon, in
    rows. Private groups (``groups=None``) need ``delta > 0`` for their selection.
    Accounting: module docstring (pure ``epsilon`` with public groups).

    Parameters
    ----------
    data, column, q, epsilon, privacy_unit, ledger, source, schema
        As for :func:`dpselect.quantile`.
    by, groups, max_groups, group_fraction
        As for :func:`grouped_top_k`.
    delta : float, optional
        Only for private groups: the selection's delta.
    max_rows : int, default 1
        With a privacy unit: the rows each person keeps in each of their groups (a number;
        ``"auto"`` is not available per group).
    **options
        ``bounds``, ``candidates``, ``mechanism``, ``resolution``, ``confidence``: as for
        :func:`dpselect.quantile`, the same in every group.

    Returns
    -------
    GroupedResult
        One :class:`~dpselect.recipes.quantiles.QuantileResult` per group.
    """
    from .quantiles import quantile

    allowed = {"bounds", "candidates", "mechanism", "resolution", "confidence"}
    extra = sorted(set(options) - allowed)
    if extra:
        raise ParameterError(f"quantile with by does not take {', '.join(extra)}")
    if options.get("bounds") == "auto":
        raise ParameterError(
            "bounds='auto' is not available with by: give bounds=(lo, hi) or candidates"
        )
    eps = float(check_user_epsilon(epsilon))
    if privacy_unit is None and max_rows != 1:
        raise ParameterError("max_rows applies only with a privacy_unit column")
    r = check_int(max_rows, "max_rows", minimum=1)
    table = open_checked(data, column, privacy_unit, schema)
    from ._common import numeric_column

    numeric_column(table, column)
    grouping = _check_groups(table, column, by, groups, privacy_unit, max_groups, group_fraction)
    private = grouping.listed is None
    dlt = 0.0 if delta is None else float(check_delta(delta, allow_zero=not private))
    if private and dlt == 0:
        raise ParameterError(
            "private groups (groups=None) are selected from the data: give delta > 0, or a "
            "public groups list"
        )
    if not private and dlt != 0:
        raise ParameterError("delta applies to quantile with by only for private groups")
    budget = _budget(eps, dlt, grouping, 1.0)
    inner = float_down(Fraction(budget.group_epsilon) / r)

    # every public parameter checked by the mechanism itself, on the public empty data set,
    # before the charge (nothing read, nothing charged)
    def run(values: Any, src: RandomSource | None = source) -> Any:
        array = np.asarray(values, dtype=np.float64)
        return quantile(array, None, q, inner, source=src, **options)  # type: ignore[arg-type]

    probe = run(np.zeros(0), None)
    book = open_ledger(ledger)
    selection = _selection(grouping, budget, privacy_unit, source) if private else None
    select_cost = (0.0, 0.0) if selection is None else (selection[1], selection[2])
    each = (float_up(Fraction(inner) * r), 0.0)
    total = _total(budget, grouping, each, select_cost)
    accounting = _accounting(grouping, privacy_unit, None if selection is None else selection[4])
    if r > 1:
        accounting += (
            f"; in a group a person keeps at most {r} rows, so the row-level mechanism runs at "
            f"epsilon_g / {r} = {inner:.6g} (group privacy)"
        )
    parameters = {
        "column": column, "q": probe.parameters["q"], "epsilon": eps, "delta": dlt, "by": by,
        "groups": "private" if private else len(grouping.listed or []),
        "max_groups": grouping.max_groups, "privacy_unit": privacy_unit, "max_rows": r,
        "group_epsilon": each[0], "row_epsilon": inner, "method": probe.parameters["method"],
        "bounds": probe.parameters.get("bounds"),
    }  # fmt: skip

    def release() -> GroupedResult:
        names = _group_list(table, grouping, selection, privacy_unit, source, progress=None)
        salt, group_salt = _salts(source)
        found = table.grouped_values(
            column, by, names, privacy_unit=privacy_unit, max_groups=grouping.max_groups,
            max_rows=r, salt=salt, group_salt=group_salt,
        )  # fmt: skip
        releases = [run(v) for v in found]
        return GroupedResult(
            "quantile", by, column, names, releases, total[0], total[1], None, each[0], 0.0,
            grouping.max_groups, _chosen_by(grouping, selection, *select_cost), probe.method,
            accounting, "; ".join(probe.accuracy), None if book is None else book.path,
            parameters,
        )  # fmt: skip

    kind: Literal["pure", "approx"] = "approx" if private else "pure"
    return _charge(book, release, (total[0], total[1], None), kind, "quantile/by",
                   parameters, privacy_unit, table)  # fmt: skip
