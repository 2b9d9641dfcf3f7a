""":func:`~dpselect.recipes.quantiles.quantile` with ``max_rows="auto"``: the rows per unit
chosen privately, then the quantiles with that bound (:func:`quantile_with_auto_rows`).

- **The choice** is :func:`~dpselect.recipes.bounds.choose_max_contributions` with
  ``unit_counts="rows"`` (the generalized exponential mechanism over ``r`` in ``1, 2, 4,
  ..., 256``, as ``max_contributions="auto"`` of :func:`dpselect.top_k`): the score of
  ``r`` is ``sum_u min(c_u, r) - margin(r)``, ``c_u`` unit ``u``'s rows with a number and
  ``margin(r)`` the public rank margin of the method's accuracy statement at the
  row-level epsilon ``eps_q / r``
  (:func:`~dpselect.planning.rows_penalty.rank_margin`); with ``bounds="auto"`` also
  the rows the bounds choice needs to land next to the data, ``r`` times the row-level
  threshold of :func:`quantile_with_auto_bounds`
  (:func:`~dpselect.planning.rows_penalty.bounds_rows_needed`). Up to the constant
  ``sum_u c_u`` this is minus the rows dropped by the bound and the rank error its noise may
  add. Sensitivity ``Delta_r = r`` (one unit adds at most
  ``r`` kept rows; the margin is public).
- **Budget** (a public rule): ``auto_fraction`` (default 0.25) of ``epsilon`` to the choice
  (its GEM map at distance 1, ``eps_c``), the rest ``eps_q = epsilon - eps_c`` (rounded
  down) to :func:`quantile` with ``max_rows = r`` (``eps_q``-DP per unit whatever ``r``:
  its mechanisms are calibrated to ``r``). With ``bounds="auto"`` too, that call spends
  ``auto_fraction`` of ``eps_q`` on the bounds.
- **Privacy**: adaptive composition of an ``eps_c``-DP choice and an ``eps_q``-DP query whose
  parameter ``r`` is the choice's output: ``eps_c + eps_q <= epsilon`` (Dwork and Roth
  2014, Theorem 3.16). One ledger entry, charged before anything is read, recording the
  unit.

Every refusal comes from public facts before the charge. docs/quantiles.md ("Privacy
units").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from ..data.column_roles import recorded_step
from ..data.engine import Engine
from ..data.tables import one_column, open_table
from ..planning.contribution_choice import DEFAULT_CONTRIBUTIONS, contribution_choice_cost
from ..planning.contributions import check_auto_fraction
from ..planning.private_choice import ChoiceBudget, choice_budget
from ..planning.quantile_checks import check_release_arguments
from ..planning.quantile_methods import charge_kind
from ..planning.quantile_plan import (
    plan_auto_rows,
)
from ..planning.quantile_request import QuantileRequest
from ..planning.rows_penalty import rows_margins
from ..planning.stage import Stage
from ..sampling.source import RandomSource
from ._common import open_ledger
from .bounds import bounds_choice_cost, choose_max_contributions
from .quantile_auto_bounds import auto_bound_levels, quantile_with_auto_bounds
from .quantile_query import (
    check_numeric_column,
    check_unit_column,
)
from .quantile_release import quantile_release
from .quantile_result import QuantileResult, with_private_choice
from .release import charge_then

__all__ = ["quantile_with_auto_rows"]


def quantile_with_auto_rows(
    data: Any,
    request: QuantileRequest,
    *,
    ledger: Any = None,
    source: RandomSource | None = None,
    progress: Callable[[float], None] | None = None,
    schema: Any = None,
) -> QuantileResult:
    """:func:`~dpselect.recipes.quantiles.quantile` with ``max_rows="auto"``: the rows per unit
    chosen privately, then the quantiles with that bound, one ledger entry (the rules: module
    docstring).

    Parameters
    ----------
    data : object
        The private rows, as for ``quantile``.
    request : QuantileRequest
        The query, with a ``privacy_unit`` and ``rows="auto"``: its ``epsilon`` is the total
        privacy cost (the choice and the quantiles), for one unit (all its rows) added or
        removed, in ``[2^-20, 2^20]``; exactly one of ``bounds`` (``"auto"``: chosen privately
        as well) and ``candidates``; ``confidence`` also sets the margins the choice weighs;
        ``auto_fraction`` is the share of ``epsilon`` in ``(0, 1)`` for the choice of
        ``max_rows`` (default 0.25), with ``bounds="auto"`` also the bounds' share of the rest.
    ledger, source, progress, schema
        As for ``quantile``.

    Returns
    -------
    QuantileResult
        The quantiles, the cost, the budget split and ``max_rows`` (``parameters["max_rows"]``).
    """
    column, privacy_unit, bounds = request.column, request.privacy_unit, request.bounds
    assert column is not None and privacy_unit is not None
    query = _check_auto_rows(data, column, request.q, request.epsilon, privacy_unit, bounds,
                             request.candidates, request.confidence, request.resolution,
                             request.mechanism, schema, request.auto_fraction)  # fmt: skip
    candidates_r = list(DEFAULT_CONTRIBUTIONS)
    budget = choice_budget(
        query.eps, query.fraction, lambda share: contribution_choice_cost(share, candidates_r)
    )
    margins = rows_margins(
        query.chosen, query.levels, Fraction(budget.query), query.conf, candidates_r,
        bounds=query.lo_hi, resolution=request.resolution, candidates=query.cands,
        step=query.step, auto_bounds=bounds == "auto",
    )  # fmt: skip
    book = open_ledger(ledger)
    parameters = {
        "column": column, "q": [float(lv) for lv in query.levels], "epsilon": float(query.eps),
        "privacy_unit": privacy_unit, "max_rows": "auto", "max_rows_candidates": candidates_r,
        "auto_fraction": query.fraction, "choice_epsilon": budget.spent,
        "query_epsilon": budget.query, "method": query.chosen,
    }  # fmt: skip

    def release() -> QuantileResult:
        result, r, line = _rows_then_quantiles(
            data, request, query, budget, margins, candidates_r, source=source,
            progress=progress, schema=schema,
        )  # fmt: skip
        return with_private_choice(
            result, "max_rows", line, budget, book,
            {**parameters, "max_rows": r, "max_rows_choice": line},
        )  # fmt: skip

    # the tree, the auto rule's noisy count and the auto bounds' histogram add Laplace noise:
    # pure; else bounded range
    kind = "pure" if bounds == "auto" else charge_kind(query.chosen)
    return charge_then(
        book, release, budget.total, 0.0, None, kind, "quantile/max_rows=auto", parameters,
        privacy_unit=privacy_unit, source=query.table.description,
        stages=_stages(query, budget, len(candidates_r), request),
    )  # fmt: skip


def _stages(
    query: _AutoRowsQuery, budget: ChoiceBudget, n_candidates_r: int, request: QuantileRequest
) -> tuple[Stage, ...]:
    """The release's stages (:func:`~dpselect.planning.quantile_plan.plan_auto_rows`): with
    ``bounds="auto"``, the rest divided again as :func:`quantile_with_auto_bounds` will."""
    bounds_budget = None
    if request.bounds == "auto":
        levels = auto_bound_levels(query.levels)
        bounds_budget = choice_budget(Fraction(budget.query), query.fraction,
                                      lambda share: bounds_choice_cost(share, levels))  # fmt: skip
    return plan_auto_rows(
        budget, query.chosen, len(query.levels), n_candidates_r, bounds_budget=bounds_budget,
        lo_hi=query.lo_hi, resolution=request.resolution, step=query.step,
        n_candidates=None if query.cands is None else len(query.cands),
    )  # fmt: skip


@dataclass(frozen=True)
class _AutoRowsQuery:
    """A ``max_rows="auto"`` query checked from public facts."""

    given: list[float]
    levels: list[Fraction]
    eps: Fraction
    fraction: float
    conf: float
    cands: list[float] | None
    lo_hi: tuple[float, float] | None
    chosen: str
    table: Engine
    step: Fraction | None


def _check_auto_rows(
    data: Any,
    column: str,
    q: Any,
    epsilon: float,
    privacy_unit: str,
    bounds: Any,
    candidates: Any,
    confidence: float,
    resolution: float | None,
    mechanism: str,
    schema: Any,
    auto_fraction: float | None,
) -> _AutoRowsQuery:
    """Every refusal of ``max_rows="auto"``, from public facts, in the order they are made."""
    checked = check_release_arguments(
        q, epsilon, bounds, candidates, confidence=confidence, resolution=resolution,
        mechanism=mechanism, auto_fraction=auto_fraction, choose_rows=True,
    )  # fmt: skip
    fraction = check_auto_fraction(auto_fraction)
    eps, given, levels, conf = checked.eps, checked.given, checked.levels, checked.conf
    cands, lo_hi = checked.cands, checked.lo_hi
    table = open_table(data, schema=schema)
    check_numeric_column(table, data, column)
    check_unit_column(table, privacy_unit, 1)
    step = recorded_step(table.require_column(column, "column"))
    chosen = checked.chosen
    return _AutoRowsQuery(given, levels, eps, fraction, conf, cands, lo_hi, chosen, table, step)


def _rows_then_quantiles(
    data: Any,
    request: QuantileRequest,
    query: _AutoRowsQuery,
    budget: ChoiceBudget,
    margins: dict[int, Fraction],
    candidates_r: list[int],
    *,
    source: RandomSource | None,
    progress: Callable[[float], None] | None,
    schema: Any,
) -> tuple[QuantileResult, int, str]:
    """After the charge: ``max_rows`` chosen at ``budget.choice`` (penalised by ``margins``),
    then the quantiles with it; the result, the bound chosen and the note on the choice."""
    column, privacy_unit = request.column, request.privacy_unit
    assert column is not None and privacy_unit is not None
    choice = choose_max_contributions(
        query.table, column, privacy_unit, epsilon=budget.choice,
        candidates=candidates_r, penalty=lambda r: margins[r], source=source,
        unit_counts="rows",
    )  # fmt: skip
    r = choice.max_contributions
    result = _quantiles_with_rows(data, request, query, budget, r, source=source,
                                  progress=progress, schema=schema)  # fmt: skip
    line = (
        f"max_rows = {r}, chosen privately among {len(candidates_r)} bounds "
        f"(1..{candidates_r[-1]}) by the generalized exponential mechanism at epsilon = "
        f"{budget.spent:.6g}; the quantiles then ran at epsilon = {budget.query:.6g}"
    )
    return result, r, line


def _quantiles_with_rows(
    data: Any,
    request: QuantileRequest,
    query: _AutoRowsQuery,
    budget: ChoiceBudget,
    r: int,
    *,
    source: RandomSource | None,
    progress: Callable[[float], None] | None,
    schema: Any,
) -> QuantileResult:
    """After the choice: the quantiles at ``budget.query`` with ``r`` rows per unit (the
    bounds chosen first when ``bounds="auto"``, with the bounds' share ``auto_fraction``)."""
    data, column = one_column(data, request.column)
    with_rows = replace(request, column=column, q=query.given, epsilon=budget.query, rows=r)
    if request.bounds == "auto":
        return quantile_with_auto_bounds(data, with_rows, ledger=None, source=source,
                                         progress=progress, schema=schema)  # fmt: skip
    # fixed bounds or candidates refuse an auto_fraction (the choice is charged by now)
    return quantile_release(data, with_rows, ledger=None, source=source, progress=progress,
                            work_progress=None, schema=schema)  # fmt: skip
