"""One quantile release with public bounds or candidates and a fixed ``max_rows``: the query
checked from public facts, the method planned, the ledger charged, then the rows read and the
values released (:func:`quantile_release`). :func:`dpselect.recipes.quantiles.quantile` is the
public entry; the private choices of the bounds and of ``max_rows`` end here too."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ..core.errors import ParameterError
from ..data.query import Query, UnitRule
from ..data.tables import one_column
from ..planning.quantile_methods import (
    F64,
    MethodPlan,
    Picked,
    charge_kind,
    on_grid,
)
from ..planning.quantile_planner import plan_quantile
from ..planning.quantile_query import QuantileQuery
from ..planning.quantile_request import QuantileRequest
from ..planning.quantile_statements import continuous_line, grid_line
from ..sampling.source import RandomSource, resolve_source
from ._common import open_ledger
from .quantile_query import check_query
from .quantile_result import QuantileResult
from .release import charge_then

__all__ = ["quantile_release"]


def quantile_release(
    data: Any,
    request: QuantileRequest,
    *,
    ledger: Any,
    source: RandomSource | None,
    progress: Callable[[float], None] | None,
    work_progress: Callable[[float], None] | None,
    schema: Any,
) -> QuantileResult:
    """The quantiles of a request with public bounds or candidates and a fixed ``rows`` per unit.

    Check the query (public facts), plan the method, charge the ledger, then read the rows and
    release: every refusal comes before the charge.

    Parameters
    ----------
    data : object
        The private rows, as for :func:`dpselect.recipes.quantiles.quantile`.
    request : QuantileRequest
        The query (``bounds`` a pair or ``None``; ``rows`` a number, 1 without a unit).
    ledger, source, progress, work_progress, schema
        As for :func:`dpselect.recipes.quantiles.quantile`.

    Returns
    -------
    QuantileResult
        The released values, the method, the cost and the accuracy lines.
    """
    data, column = one_column(data, request.column)
    bounds, privacy_unit, rows = request.bounds, request.privacy_unit, request.rows
    if isinstance(bounds, str):
        raise ParameterError(f"bounds must be a pair (lo, hi) or 'auto', got {bounds!r}")
    assert rows != "auto"  # chosen first (quantile_auto_rows)
    query = check_query(
        data, column, request.q, request.epsilon, bounds, request.candidates,
        confidence=request.confidence, resolution=request.resolution,
        mechanism=request.mechanism, schema=schema, privacy_unit=privacy_unit, rows=rows,
    )  # fmt: skip
    plan = plan_quantile(query, source, work_progress)
    plan, grid_note = _on_engine_grid(query, plan)
    book = open_ledger(ledger)
    parameters = _parameters(query, plan)

    def release() -> QuantileResult:
        values = _kept_rows(query, plan.grid_w, source, progress)
        released, picked = plan.run(values)
        return _result(query, plan, _Ran(released, picked, grid_note), parameters, book)

    return charge_then(
        book, release, float(query.eps), 0.0, None, charge_kind(query.chosen), "quantile",
        parameters, privacy_unit=privacy_unit, source=query.table.description,
        stages=plan.stages,
    )  # fmt: skip


def _on_engine_grid(query: QuantileQuery, plan: MethodPlan) -> tuple[MethodPlan, float | None]:
    """The plan's accuracy lines when the engine rounds rows to a public grid
    (:meth:`dpselect.data.engine.Engine.grid_width`: an extra accuracy error), and that grid's
    width (``None``: no grid)."""
    table, lo_hi, grid_w = query.table, query.lo_hi, plan.grid_w
    # rows rounded to a public grid by the engine: an extra accuracy error
    width = None if lo_hi is None or grid_w is None else table.grid_width(lo_hi, grid_w)
    if width is None or lo_hi is None:
        return plan, None
    d = float(width)
    if query.chosen in ("recursive", "joint", "tree", "count"):
        return replace(plan, accuracy=[*plan.accuracy, grid_line(d, query.chosen)]), d
    w, r = query.w, query.rows
    assert w is not None
    lines = [continuous_line(lv, plan.each / r, lo_hi, query.conf, w, grid=d)
             for lv in query.levels]  # fmt: skip
    return replace(plan, accuracy=lines), None


def _parameters(query: QuantileQuery, plan: MethodPlan) -> dict[str, Any]:
    """The release's public parameters, as the ledger records them."""
    parameters = {
        "column": query.column,
        "q": [float(lv) for lv in query.levels],
        "epsilon": float(query.eps),
        "bounds": list(query.lo_hi) if query.lo_hi is not None else None,
        "resolution": plan.w,
        "method": "auto: tree or joint by a noisy row count" if query.chosen == "count"
        else query.chosen,
        "n_candidates": None if query.cands is None else len(query.cands),
    }  # fmt: skip
    if query.privacy_unit is not None:
        parameters.update(privacy_unit=query.privacy_unit, max_rows=query.rows)
    return parameters


def _kept_rows(
    query: QuantileQuery,
    grid_w: float | None,
    source: RandomSource | None,
    progress: Callable[[float], None] | None,
) -> F64:
    """The rows as the mechanism needs them (stand-ins from a histogram on an engine with a
    grid); with a unit, only the rows each unit keeps (the salt drawn after the charge,
    data-free)."""
    table, column, cands, lo_hi = query.table, query.column, query.cands, query.lo_hi
    privacy_unit, r = query.privacy_unit, query.rows
    if privacy_unit is None:
        values = table.quantile_values(Query(column, progress=progress), cands, lo_hi, grid_w)
    else:
        salt = resolve_source(source).bits(63)
        rule = UnitRule(privacy_unit, rows_per_unit=r, salt=salt)
        values = table.quantile_values(Query(column, rule, progress=progress), cands, lo_hi,
                                       grid_w)  # fmt: skip
    return values


@dataclass(frozen=True)
class _Ran:
    """What the mechanism released, what the noisy count picked, and the engine grid's width."""

    values: list[float]
    picked: Picked | None
    grid_note: float | None


def _result(
    query: QuantileQuery,
    plan: MethodPlan,
    ran: _Ran,
    parameters: dict[str, Any],
    book: Any,
) -> QuantileResult:
    """The result of a release: stated as the plan that ran (the one the noisy count picked),
    its values on the column type's grid."""
    text, acc, loss, res = plan.text, plan.accuracy, plan.rounding, plan.w
    params = dict(parameters)
    used, derivation, notes = query.chosen, plan.derivation, list(query.notes)
    picked = ran.picked
    if picked is not None:  # the plan the noisy count picked
        late = picked.plan
        text, acc, loss, res = late.text, late.accuracy, late.rounding, late.w
        if ran.grid_note is not None:
            acc = [*acc, grid_line(ran.grid_note, late.name)]
        params.update(method=late.name, resolution=res, noisy_rows=picked.noisy_rows)
        if picked.grains is not None:
            params.update(grain_histogram=picked.grains)
        used, derivation, notes = late.name, late.derivation, [*notes, picked.note]
    released, acc = _typed_grid(query, plan, ran, used, res, acc, params)
    return QuantileResult(
        q=query.given,
        values=released,
        method=text,
        epsilon=float(query.eps),
        epsilon_each=float(plan.each),
        budget_split=plan.split,
        accuracy=acc,
        levels=[f"{lv.numerator}/{lv.denominator}" for lv in query.levels],
        rounding_loss=loss,
        resolution=res,
        notes=notes,
        ledger=None if book is None else book.path,
        parameters=params,
        derivation=list(derivation),
    )


def _typed_grid(
    query: QuantileQuery,
    plan: MethodPlan,
    ran: _Ran,
    used: str,
    res: float | None,
    acc: list[str],
    params: dict[str, Any],
) -> tuple[list[float], list[str]]:
    """The values on an integer or decimal column's grid, and the accuracy lines (widened when
    rounding moves a value further than the statement's slack); records the grid in
    ``params``."""
    # On an integer or decimal column every method's values lie on the type's grid (the
    # joint mechanism rounds its own; candidates are public values; an engine's grid of
    # cells has its own statement). Public facts only: the type, the method, the bounds.
    released, step, lo_hi = ran.values, query.step, query.lo_hi
    if step is not None and lo_hi is not None and query.cands is None and ran.grid_note is None:
        tree_slack = plan.tree_slack if ran.picked is None else ran.picked.plan.slack
        slack = tree_slack if used == "tree" else None if used == "joint" else 2 * (res or 0)
        if slack is not None:
            released, widened = on_grid(released, step, lo_hi, slack)
            if widened is not None:
                acc = [*acc, widened]
            params["on_grid"] = float(step)
    return released, acc
