"""Grouped releases, the common part: the groups, their budget, its composition, the result.

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

Each recipe's grouped form (:mod:`dpselect.recipes.grouped` for ``top_k``,
:mod:`dpselect.recipes.grouped_keys` for ``partition_selection``,
:func:`dpselect.recipes.quantiles.grouped_quantile`) plans the grouping, its budget and the
selection of private groups with :mod:`dpselect.planning.group_plan`, charges it here
(:func:`charge_grouped`, with the plan's stages) and returns a :class:`GroupedResult`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ..data.discovered_groups import DiscoveredGroups
from ..data.engine import Engine
from ..mechanisms.partition_selection import ordered_values
from ..planning.group_plan import Grouping
from ..planning.stage import Stage
from ..sampling.source import RandomSource, resolve_source
from ._common import jsonable
from .release import charge_then
from .result import Result

__all__ = [
    "GroupedQuery",
    "GroupedResult",
    "charge_grouped",
    "chosen_by_text",
    "composition_text",
    "draw_salts",
    "selected_groups",
]

Progress = Callable[[float], None] | None

_COMPOSITION = (
    "each person is in at most {G} group{s} ({why}); each group's release is "
    "(epsilon_g, delta_g)-DP in that person and the groups draw independent noise, so the "
    "whole is ({G} epsilon_g, {G} delta_g)-DP (parallel composition, McSherry 2009, Theorem 4; "
    "basic composition across a person's groups, Dwork and Roth 2014, Theorem 3.16)"
)


def _statement(accuracy: str) -> str:
    """An accuracy statement without its own ``accuracy`` labels (the summary line says it
    once): ``accuracy (q = 0.5): ...`` becomes ``q = 0.5: ...``."""
    text = re.sub(r"(^|; )accuracy \((q = [^)]*)\): ", r"\1\2: ", accuracy)
    return text.removeprefix("accuracy: ")


@dataclass(frozen=True)
class GroupedResult(Result):
    """A grouped release: one answer per group, the total cost, the per-group cost.

    ``releases[j]`` is the answer of ``groups[j]`` (a :class:`TopKResult`, a
    :class:`~dpselect.recipes.unknown_domain_result.KeysResult` or a
    :class:`~dpselect.recipes.quantiles.QuantileResult`), each with its own per-group cost
    and accuracy statement; ``epsilon``/``delta``/``rho`` are what the whole release cost
    (what the ledger was charged).

    Attributes
    ----------
    kind : str
        The recipe grouped: ``"top_k"``, ``"partition_selection"`` or ``"quantile"``.
    by : str
        The column whose values form the groups.
    column : str
        The column released in each group.
    groups : list
        The groups answered: every group of the public ``groups`` list, in its order, or the
        groups selected privately (``groups=None``), in a fixed order.
    releases : list
        ``releases[j]`` is the answer of ``groups[j]``: a :class:`TopKResult`, a
        :class:`~dpselect.recipes.unknown_domain_result.KeysResult` or a
        :class:`~dpselect.recipes.quantiles.QuantileResult`.
    epsilon : float
        The whole release's ``epsilon`` (what a basic ledger is charged): ``max_groups`` times
        ``group_epsilon``, plus the private groups' selection and, with
        ``max_contributions="auto"``, the bound's choice.
    delta : float
        The whole release's ``delta``, composed the same way.
    rho : float or None
        The zCDP cost charged to a zCDP ledger (top-k with public groups); ``None``
        otherwise (no ledger or a basic one, private groups, partition selection, quantiles).
    group_epsilon : float
        ``epsilon_g``: the ``epsilon`` of one group's release.
    group_delta : float
        ``delta_g``: the ``delta`` of one group's release (0 for quantiles).
    max_groups : int
        ``G``: the most groups one person's rows count toward (``max_groups`` with a privacy
        unit; without one, how many listed groups one value of ``by`` matches, usually 1).
    groups_chosen_by : str
        How the groups were chosen: ``"public list"``, or the private selection and its cost.
    mechanism : str
        The mechanism each group ran, cited by name (each release names its own).
    accounting : str
        Why the whole costs what it does: the composition over the groups.
    accuracy : str
        One group's accuracy statement.
    ledger : str or None
        The path of the ledger charged for this release; ``None`` without a ledger.
    parameters : dict
        The query's public parameters (``column``, ``by``, ``epsilon``, ``delta``, ``groups``,
        ``max_groups``, ``privacy_unit``, ...).
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
                counts, marks = release.counts, release.below_noise
                for rank, value in enumerate(values, start=1):
                    row = {"group": g, "rank": rank, "value": value}
                    if counts is not None:
                        row["noisy_count"] = counts[rank - 1]
                        row["below_noise"] = bool(marks[rank - 1])
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
        """The table as printed: a header and one row of text per released item; a top-k
        group whose every count is below the noise is one line that says so (its entries are
        in :meth:`to_frame` and ``to_dict``, each marked ``below_noise``)."""
        rows = self._rows()
        if self.kind == "top_k":
            header = ["group", "rank", "value"]
            with_counts = any("noisy_count" in r for r in rows)
            if with_counts:
                header.append("noisy count")
            body = []
            for group, release in zip(self.groups, self.releases, strict=True):
                counts = release.shown_counts()
                if release.all_below_noise:
                    n = len(release.candidates)
                    line = [str(group), "-", f"all {n} below the noise (as from no data)"]
                    body.append(line + ([""] if with_counts else []))
                    continue
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
            *self._choice_line(),
            cost,
            f"accounting: {self.accounting}",
            f"accuracy, in each group: {_statement(self.accuracy)}",
        ]
        empty = self.empty_groups()
        if empty:
            lines.insert(1, f"{len(empty)} groups released nothing (too rare to show privately)")
        if self.kind == "top_k":
            noise = [g for g, r in zip(self.groups, self.releases, strict=True)
                     if r.all_below_noise]  # fmt: skip
            if noise:
                lines.insert(1, f"{len(noise)} groups: every count below the noise, a list "
                             "indistinguishable from one drawn from no data")  # fmt: skip
        return lines

    def _choice_line(self) -> list[str]:
        """The line saying how ``max_contributions="auto"`` chose the bound, if it did."""
        choice = self.parameters.get("max_contributions_choice")
        return [str(choice)] if choice else []

    def _text(self) -> str:
        table = self.lines()
        widths = [max(len(row[j]) for row in table) for j in range(len(table[0]))]
        text = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
                for row in table]  # fmt: skip
        return "\n".join([*text, *self.summary()])


# ------------------------------------------------------------------------------------------
# Public checks and the budget


@dataclass(frozen=True)
class GroupedQuery:
    """A grouped release's opened table, its checked grouping and what its scan needs.

    Attributes
    ----------
    table : Engine
        The opened table (its schema checked).
    column, by : str
        The released column and the column of groups.
    privacy_unit : str or None
        The unit column.
    grouping : Grouping
        The checked grouping (:func:`~dpselect.planning.group_plan.check_groups`).
    source : RandomSource or None
        The randomness.
    progress : callable or None
        ``progress(percent)`` while the data are scanned.
    """

    table: Any
    column: str
    by: str
    privacy_unit: str | None
    grouping: Grouping
    source: RandomSource | None
    progress: Progress

    @property
    def private(self) -> bool:
        """Whether the groups are selected privately (no public list)."""
        return self.grouping.listed is None


def composition_text(grouping: Grouping, privacy_unit: str | None, select_name: str | None) -> str:
    """The accounting sentence of a grouped release: why it costs ``G`` times a group.

    Parameters
    ----------
    grouping : Grouping
        The checked grouping, giving ``G`` and ``by``.
    privacy_unit : str or None
        The column identifying people (it sets the reason each person is in at most ``G``
        groups).
    select_name : str or None
        The name of the private groups' selection, appended as a first stage (``None``: a
        public list).

    Returns
    -------
    str
        The sentence (:data:`_COMPOSITION` filled in), citing the composition theorems.
    """
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


def selected_groups(found: DiscoveredGroups, selection: Any) -> tuple[list[Any], list[int]]:
    """The private groups released: the selection
    (:func:`~dpselect.planning.group_plan.group_selection`) run on the persons of the groups
    one scan found (:mod:`dpselect.data.discovered_groups`), shown in a fixed order, with each
    group's index in ``found``.

    Parameters
    ----------
    found : DiscoveredGroups
        The groups one scan found, with how many persons (rows without a unit) keep each.
    selection : GroupSelection
        What :func:`~dpselect.planning.group_plan.group_selection` returned (its measurement
        is run here: the private step).

    Returns
    -------
    groups : list
        The released groups, in a fixed order (:func:`ordered_values`).
    indices : list of int
        Each released group's position in ``found.groups``.
    """
    measurement = selection[0]
    chosen = ordered_values(measurement(dict(found.counts())))
    where = {group: j for j, group in enumerate(found.groups)}
    return chosen, [where[group] for group in chosen]


def draw_salts(source: RandomSource | None) -> tuple[int, int]:
    """The value rule's salt and the group rule's salt: drawn apart, after the charge.

    Parameters
    ----------
    source : RandomSource or None
        The randomness (``None``: the private default; a seeded source for tests only).

    Returns
    -------
    value_salt, group_salt : int
        Two independent 63-bit salts for the keyed rules.
    """
    src = resolve_source(source)
    return src.bits(63), src.bits(63)


def chosen_by_text(grouping: Grouping, selection: Any, eps: float, delta: float) -> str:
    """How the groups were chosen, in words (``GroupedResult.groups_chosen_by``).

    Parameters
    ----------
    grouping : Grouping
        The checked grouping.
    selection : GroupSelection or None
        What :func:`~dpselect.planning.group_plan.group_selection` returned (``None`` with a
        public list).
    eps, delta : float
        The selection's cost as spent.

    Returns
    -------
    str
        ``"public list"``, or the selection's name and its ``(epsilon, delta)``.
    """
    if grouping.listed is not None:
        return "public list"
    return f"chosen privately by {selection[4]} at epsilon = {eps:.4g}, delta = {delta:.3g}"


def charge_grouped(
    book: Any,
    release: Callable[[], GroupedResult],
    cost: tuple[float, float, float | None],
    kind: Literal["pure", "bounded_range", "approx"],
    name: str,
    parameters: dict[str, Any],
    privacy_unit: str | None,
    table: Engine,
    stages: Sequence[Stage] = (),
) -> GroupedResult:
    """Charge a grouped release's whole cost to ``book`` in one entry, then run it.

    A zCDP ledger takes ``rho`` when given and refuses a cost with ``delta > 0`` otherwise
    (:func:`~dpselect.recipes.release.charge_then`).

    Parameters
    ----------
    book : Ledger or None
        The ledger (``None``: no ledger; the release just runs).
    release : callable
        The release, run once the charge is durable (the only step that reads rows).
    cost : (float, float, float or None)
        The whole release's ``(epsilon, delta, rho)``
        (:func:`~dpselect.planning.group_plan.total_cost`; ``rho`` ``None`` without a zCDP
        cost).
    kind : {"pure", "bounded_range", "approx"}
        The kind of the ``(epsilon, delta)`` charge.
    name : str
        The ledger entry's mechanism name.
    parameters : dict
        The ledger entry's public parameters.
    privacy_unit : str or None
        The unit the release protects (``None``: rows).
    table : Engine
        The opened table, whose public description the ledger records.
    stages : sequence of Stage, optional
        The release's stages (:func:`~dpselect.planning.group_plan.group_stages`), checked
        against the charge before it is made and shown by ``explain``.

    Returns
    -------
    GroupedResult
        What ``release`` returns.
    """
    refusal = (
        "this grouped release costs (epsilon, delta) with delta > 0, which the zCDP ledger "
        f"{getattr(book, 'path', None)} cannot take: use a basic ledger"
    )
    return charge_then(
        book, release, cost[0], cost[1], cost[2], kind, name, parameters,
        privacy_unit=privacy_unit, source=table.description, refusal=refusal, stages=stages,
    )  # fmt: skip
