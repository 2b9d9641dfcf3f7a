"""``quantile(by=...)``: the quantiles of every group of a column in one scan, each group's
release a :func:`~dpselect.recipes.quantile_release.quantile_release` on its kept rows at the
group's share of epsilon (:func:`grouped_quantile`; accounting in
:mod:`dpselect.recipes.grouping`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from ..core.errors import ParameterError
from ..data.column_roles import recorded_step
from ..data.engine import Engine
from ..data.query import PrivateGroups, PublicGroups, Query, UnitRule
from ..mechanisms.validate import check_delta
from ..planning.epsilon_range import stages_of_a_release
from ..planning.group_plan import Grouping, check_groups
from ..planning.grouped_quantile_plan import GroupedQuantileBudget, grouped_quantile_budget
from ..planning.quantile_checks import check_grouped_arguments
from ..planning.quantile_count_rule import count_rule_statements
from ..planning.quantile_plan import group_options
from ..planning.quantile_request import QuantileRequest
from ..sampling.source import RandomSource
from ._common import CONFIDENCE, numeric_column, open_ledger
from .grouping import (
    GroupedResult,
    charge_grouped,
    chosen_by_text,
    composition_text,
    draw_salts,
    selected_groups,
)
from .quantile_release import quantile_release
from .quantile_result import QuantileResult
from .release import open_checked

__all__ = ["grouped_quantile"]


def grouped_quantile(
    data: Any,
    request: QuantileRequest,
    *,
    ledger: Any = None,
    source: RandomSource | None = None,
    progress: Callable[[float], None] | None = None,
    schema: Any = None,
) -> GroupedResult:
    """The quantiles of a request with ``by``: every group of ``request.by``, in one scan.

    Each group runs :func:`dpselect.quantile` on its kept rows at ``epsilon_g / max_rows``:
    a person keeps at most ``max_groups`` groups and ``max_rows`` rows in each
    (:func:`dpselect.data.rules.kept_rows`), so the row-level mechanism at that epsilon is
    ``epsilon_g``-DP per person (group privacy, Dwork and Roth 2014, Theorem 2.2); its
    accuracy lines are the row-level theorems, in rows. Private groups (``groups=None``) need
    ``delta > 0`` for their selection (pure ``epsilon`` with public groups).

    Parameters
    ----------
    data : object
        The private rows, as for :func:`dpselect.recipes.quantiles.quantile`.
    request : QuantileRequest
        The query: ``by``, ``groups``, ``delta`` (private groups only), ``max_groups``,
        ``group_fraction`` and ``rows`` (a number: the rows each person keeps in each of their
        groups); ``bounds``, ``candidates``, ``mechanism``, ``resolution`` and ``confidence``
        the same in every group.
    ledger, source, schema
        As for :func:`dpselect.recipes.quantiles.quantile`.
    progress : callable, optional
        ``progress(percent)`` while the one scan of every group's rows runs (over a second).

    Returns
    -------
    GroupedResult
        One :class:`~dpselect.recipes.quantile_result.QuantileResult` per group.
    """
    column, q, by, privacy_unit = request.column, request.q, request.by, request.privacy_unit
    assert column is not None and by is not None and request.rows != "auto"
    options: dict[str, Any] = {"mechanism": request.mechanism, "confidence": request.confidence}
    for key, value in (("bounds", request.bounds), ("candidates", request.candidates),
                       ("resolution", request.resolution)):  # fmt: skip
        if value is not None:
            options[key] = value
    checked = _check_grouped(data, column, q, request.epsilon, by, request.groups,
                             request.delta, privacy_unit, request.max_groups, request.rows,
                             request.group_fraction, schema, options)  # fmt: skip
    grouping, r, table = checked.grouping, checked.rows, checked.table
    plan = grouped_quantile_budget(checked.eps, checked.delta, grouping, r,
                                   privacy_unit=privacy_unit, source=source)  # fmt: skip
    inner = plan.row_epsilon
    run = _group_release(q, inner, checked.options, source)
    with stages_of_a_release():  # a stage's plan, on a share of a total checked above
        probe = run(np.zeros(0), None)
    texts = _group_statements(probe, inner, q, checked.options)
    book = open_ledger(ledger)
    accounting = _accounting_text(grouping, privacy_unit, plan)
    parameters = {
        "column": column, "q": probe.parameters["q"], "epsilon": checked.eps,
        "delta": checked.delta, "by": by,
        "groups": "private" if grouping.listed is None else len(grouping.listed),
        "max_groups": grouping.max_groups, "privacy_unit": privacy_unit, "max_rows": r,
        "group_epsilon": plan.each[0], "row_epsilon": inner, "method": texts.method,
        "bounds": probe.parameters.get("bounds"),
    }  # fmt: skip

    def release() -> GroupedResult:
        names, found = _group_rows(table, Query(column, UnitRule(privacy_unit, rows_per_unit=r),
                                                progress=progress),
                                   by, grouping, plan.selection, source)  # fmt: skip
        return GroupedResult(
            "quantile", by, column, names, [run(v) for v in found], plan.total[0],
            plan.total[1], None, plan.each[0], 0.0, grouping.max_groups,
            chosen_by_text(grouping, plan.selection, *plan.select), texts.mechanism,
            accounting, texts.accuracy, None if book is None else book.path, parameters,
        )  # fmt: skip

    kind: Literal["pure", "approx"] = "approx" if grouping.listed is None else "pure"
    return charge_grouped(book, release, (plan.total[0], plan.total[1], None), kind,
                          "quantile/by", parameters, privacy_unit, table,
                          stages=plan.stages(grouping, texts.method))  # fmt: skip


@dataclass(frozen=True)
class _GroupedQuery:
    """A grouped quantile query checked from public facts (the schema, the groups' rules)."""

    eps: float
    delta: float
    rows: int
    table: Engine
    options: dict[str, Any]
    grouping: Grouping


def _check_grouped(
    data: Any,
    column: str,
    q: Any,
    epsilon: float,
    by: str,
    groups: Any,
    delta: float | None,
    privacy_unit: str | None,
    max_groups: int,
    max_rows: int,
    group_fraction: float | None,
    schema: Any,
    options: dict[str, Any],
) -> _GroupedQuery:
    """Every refusal of ``quantile(by=...)`` from public facts, in the order they are made."""
    eps, r = check_grouped_arguments(epsilon, options.get("bounds"), privacy_unit, max_rows)
    table = open_checked(data, column, privacy_unit, schema)
    numeric_column(table, column)
    step = recorded_step(table.require_column(column, "column"))
    options = group_options(options, q, step)
    grouping = check_groups(table, column, by, groups, privacy_unit, max_groups, group_fraction)
    dlt = _checked_delta(delta, grouping.listed is None)
    return _GroupedQuery(eps, dlt, r, table, options, grouping)


def _accounting_text(grouping: Grouping, privacy_unit: str | None,
                     plan: GroupedQuantileBudget) -> str:  # fmt: skip
    """The accounting sentence of a grouped quantile: ``G`` groups, each ``r`` rows per
    person at the row-level epsilon (group privacy)."""
    selection = plan.selection
    text = composition_text(grouping, privacy_unit, None if selection is None else selection.name)
    if plan.rows > 1:
        text += (
            f"; in a group a person keeps at most {plan.rows} rows, so the row-level mechanism "
            f"runs at epsilon_g / {plan.rows} = {plan.row_epsilon:.6g} (group privacy)"
        )
    return text


def _checked_delta(delta: float | None, private: bool) -> float:
    """The selection's delta: needed (> 0) for private groups, refused for public ones."""
    dlt = 0.0 if delta is None else float(check_delta(delta, allow_zero=not private))
    if private and dlt == 0:
        raise ParameterError(
            "private groups (groups=None) are selected from the data: give delta > 0, or a "
            "public groups list"
        )
    if not private and dlt != 0:
        raise ParameterError("delta applies to quantile with by only for private groups")
    return dlt


def _group_release(
    q: Any, inner: float, options: dict[str, Any], source: RandomSource | None
) -> Callable[..., QuantileResult]:
    """One group's release on its kept rows at ``inner`` (every public parameter is checked by
    it on the public empty data set before the charge: nothing read, nothing charged)."""

    def run(values: Any, src: RandomSource | None = source) -> QuantileResult:
        array = np.asarray(values, dtype=np.float64)
        request = QuantileRequest(
            None, q, inner, bounds=options.get("bounds"), candidates=options.get("candidates"),
            confidence=options.get("confidence", CONFIDENCE),
            resolution=options.get("resolution"), mechanism=options.get("mechanism", "auto"),
        )  # fmt: skip
        return quantile_release(array, request, ledger=None, source=src, progress=None,
                                work_progress=None, schema=None)  # fmt: skip

    return run


@dataclass(frozen=True)
class _GroupTexts:
    """What a grouped release says of its groups' mechanism and accuracy, and its method."""

    mechanism: str
    accuracy: str
    method: str


def _group_statements(
    probe: QuantileResult, inner: float, q: Any, options: dict[str, Any]
) -> _GroupTexts:
    """The groups' mechanism and accuracy lines, from the probe on the empty data set (or
    both plans of the auto rule, when each group's noisy row count picks its mechanism)."""
    if "noisy_rows" in probe.parameters:  # each group's noisy row count picks its mechanism
        mechanism_text, accuracy_text = count_rule_statements(inner, q, options)
        method = "auto: tree or joint by a noisy row count"
        return _GroupTexts(mechanism_text, accuracy_text, method)
    return _GroupTexts(probe.method, "; ".join(probe.accuracy), probe.parameters["method"])


def _group_rows(
    table: Engine,
    scan: Query[None],
    by: str,
    grouping: Grouping,
    selection: Any,
    source: RandomSource | None,
) -> tuple[list[Any], list[Any]]:
    """After the charge: the groups released and each one's kept rows, from one scan
    (``scan``: the column, the unit and its rows per group, the progress hook)."""
    salt, group_salt = draw_salts(source)
    rule = replace(scan.rule, groups_per_unit=grouping.max_groups, salt=salt,
                   group_salt=group_salt)  # fmt: skip
    if selection is None:
        names = list(grouping.listed or [])
        found = table.numbers(Query(scan.column, rule, PublicGroups(by, names), scan.progress))
    else:  # private groups: the persons and the numbers from one scan
        discovered = table.numbers(Query(scan.column, rule, PrivateGroups(by), scan.progress))
        assert discovered.numbers is not None
        names, where = selected_groups(discovered, selection)
        found = [discovered.numbers[j] for j in where]
    return names, found
