""":func:`~dpselect.recipes.quantiles.quantile` with ``bounds="auto"``: clamping bounds
chosen privately, then the quantiles (:func:`quantile_with_auto_bounds`).

The continuous quantile mechanism needs public bounds ``(lo, hi)``; the rows are clamped to
them. With ``bounds="auto"`` the bounds come from
:func:`~dpselect.recipes.bounds.choose_bounds` (two private bin quantiles over power-of-two
bins) and the quantiles run on them:

- **Budget** (a public rule): ``auto_fraction`` (default
  :data:`~.top_k.AUTO_FRACTION`, 0.25) of ``epsilon`` goes to the choice (its cost
  ``eps_c``, the two picks' maps at distance 1), the rest ``eps_q = epsilon - eps_c``
  (rounded down) to the quantiles. The quantile mechanism's loss does not depend on the
  bounds (clamping to any fixed interval is a row-by-row map, 1-stable under adding or
  removing a row; docs/quantiles.md), only its accuracy does.
- **Privacy**: adaptive composition of the ``eps_c``-DP choice and the ``eps_q``-DP quantiles
  run with the bounds it released: ``eps_c + eps_q <= epsilon`` (basic composition, valid
  when the second mechanism's parameters are chosen from the first's output; Dwork and Roth
  2014, Thm 3.16, and the table in docs/accounting.md). The one ledger entry is charged as
  pure epsilon-DP: the bounds' histogram adds Laplace noise (never bounded range, whose
  zCDP conversion holds for exponential mechanisms only).
- **Levels of the choice** (public, from ``q``): 5% and 95%, widened to 1% (99%) when a
  requested level is below 5% (above 95%). The bounds come from a noisy histogram of the
  bins (:func:`~dpselect.recipes.bounds.choose_bounds`, ``method="histogram"``): only
  bins whose noisy count passes a threshold count, so the bounds are edges of bins that
  hold rows (or 0, always inside), never an empty bin far from the data; the kept bins'
  cumulative counts pick the levels' bins. A bin is kept with probability 95% once it
  holds about 54 rows at ``eps_c = 0.25`` (the threshold 44 plus the noise's 5% tail;
  ``max_rows`` times that with a unit). With fewer rows in every bin,
  the fullest noisy bin is used and the result's note says so.
- **Resolution**: the default ``(hi - lo) / 10^6`` of the chosen bounds (post-processing);
  an explicit ``resolution`` is refused, since it would be fixed before ``hi - lo`` is known.

- **Privacy unit** (``privacy_unit``, ``max_rows = r``): both parts read only the rows
  each unit keeps (at most ``r``, the keyed rule) and are calibrated for ``r`` rows per
  unit (the histogram's L1 sensitivity ``r``; the quantiles at ``eps_q / r`` per row), so
  both costs hold per unit.

One ledger entry, charged durably before anything is read; the result reports the chosen
bounds and both costs. docs/private_selection.md ("bounds='auto'").

Every refusal comes from public facts before the charge.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from ..core.errors import ParameterError
from ..data.engine import Engine
from ..data.tables import open_table
from ..planning.private_choice import ChoiceBudget, choice_budget
from ..planning.quantile_checks import check_auto_bounds_arguments
from ..planning.quantile_plan import plan_auto_bounds
from ..planning.quantile_request import QuantileRequest
from ..planning.value_bounds import bound_bins, empty_bin_threshold
from ..sampling.source import RandomSource
from ._common import open_ledger
from .bounds import bounds_choice_cost, choose_bounds
from .quantile_query import (
    check_numeric_column,
    check_rows_per_unit,
    check_unit_column,
)
from .quantile_release import quantile_release
from .quantile_result import QuantileResult, with_private_choice
from .release import charge_then

__all__ = ["auto_bound_levels", "quantile_with_auto_bounds"]


def auto_bound_levels(levels: Sequence[Fraction]) -> tuple[float, float]:
    """The choice's levels for the requested ``levels`` (the public rule: "Levels of the
    choice" in :func:`quantile_with_auto_bounds`).

    Parameters
    ----------
    levels : sequence of Fraction
        The requested quantile levels (at least one).

    Returns
    -------
    low, high : float
        The levels of the bounds' choice: 0.05 (0.01 when a level is below 1/20) and 0.95 (0.99
        when a level is above 19/20).
    """
    low = 0.05 if min(levels) >= Fraction(1, 20) else 0.01
    high = 0.95 if max(levels) <= Fraction(19, 20) else 0.99
    return low, high


def quantile_with_auto_bounds(
    data: Any,
    request: QuantileRequest,
    *,
    ledger: Any = None,
    source: RandomSource | None = None,
    progress: Callable[[float], None] | None = None,
    schema: Any = None,
) -> QuantileResult:
    """:func:`~dpselect.recipes.quantiles.quantile` with ``bounds="auto"``: clamping bounds
    chosen privately, then the quantiles, one ledger entry (the rules: module docstring).

    Parameters
    ----------
    data : object
        The private rows, as for ``quantile``.
    request : QuantileRequest
        The query: its ``epsilon`` is the total privacy cost (the choice and the quantiles),
        for one row (or one unit) added or removed, in ``[2^-20, 2^20]``; ``candidates`` and
        ``resolution`` are refused (the continuous mechanism runs at ``(hi - lo) / 10^6`` of
        the chosen bounds); ``auto_fraction`` is the share of ``epsilon`` in ``(0, 1)`` for the
        bounds' choice (default 0.25); ``rows`` the most rows one unit keeps (a number:
        ``"auto"`` is chosen first, by :mod:`~dpselect.recipes.quantile_auto_rows`).
    ledger, source, progress, schema
        As for ``quantile``.

    Returns
    -------
    QuantileResult
        The quantiles, the cost, the budget split and the bounds (``parameters["bounds"]``).
    """
    column, privacy_unit, rows = request.column, request.privacy_unit, request.rows
    assert column is not None and rows != "auto"  # chosen first (quantile_auto_rows)
    max_rows = None if privacy_unit is None else rows
    query = _check_auto_bounds(
        data, column, request.q, request.epsilon, request.candidates, request.confidence,
        request.resolution, request.mechanism, schema, request.auto_fraction, privacy_unit,
        max_rows,
    )  # fmt: skip
    choice_levels = auto_bound_levels(query.levels)
    budget = choice_budget(
        query.eps, query.fraction, lambda share: bounds_choice_cost(share, choice_levels)
    )
    book = open_ledger(ledger)
    parameters = {
        "column": column, "q": [float(lv) for lv in query.levels], "epsilon": float(query.eps),
        "bounds": "auto", "bounds_levels": list(choice_levels), "auto_fraction": query.fraction,
        "choice_epsilon": budget.spent, "query_epsilon": budget.query, "method": query.chosen,
    }  # fmt: skip
    unit: dict[str, Any] = {}
    if privacy_unit is not None:
        unit = {"privacy_unit": privacy_unit, "max_rows": query.rows}
        parameters.update(unit)

    def release() -> QuantileResult:
        result, line, picked = _bounds_then_quantiles(
            data, request, query, choice_levels, budget, unit, source=source, schema=schema,
            progress=progress,
        )  # fmt: skip
        return with_private_choice(
            result, "the bounds", line, budget, book,
            {**parameters, "bounds": picked, "bounds_choice": line},
        )  # fmt: skip

    # The bounds' noisy histogram adds Laplace noise: the entry is pure epsilon-DP (never
    # bounded range, whose zCDP conversion eps^2 / 8 holds for exponential mechanisms only).
    n_bins = len(bound_bins())
    stages = plan_auto_bounds(
        budget, query.chosen, len(query.levels), rows=query.rows, n_bins=n_bins,
        threshold=empty_bin_threshold(Fraction(query.rows) / budget.choice, n_bins),
    )  # fmt: skip
    return charge_then(
        book, release, budget.total, 0.0, None, "pure", "quantile/bounds=auto", parameters,
        privacy_unit=privacy_unit, source=query.table.description, stages=stages,
    )  # fmt: skip


@dataclass(frozen=True)
class _AutoBoundsQuery:
    """A ``bounds="auto"`` query checked from public facts."""

    given: list[float]
    levels: list[Fraction]
    eps: Fraction
    fraction: float
    rows: int
    chosen: str
    table: Engine


def _check_auto_bounds(
    data: Any,
    column: str,
    q: Any,
    epsilon: float,
    candidates: Any,
    confidence: float,
    resolution: float | None,
    mechanism: str,
    schema: Any,
    auto_fraction: float | None,
    privacy_unit: str | None,
    max_rows: int | None,
) -> _AutoBoundsQuery:
    """Every refusal of ``bounds="auto"``, from public facts, in the order they are made."""
    eps, fraction, given, levels, chosen = check_auto_bounds_arguments(
        q, epsilon, candidates, confidence=confidence, resolution=resolution,
        mechanism=mechanism, auto_fraction=auto_fraction,
    )  # fmt: skip
    rows = check_rows_per_unit(privacy_unit, max_rows)
    if rows == "auto":
        raise ParameterError("max_rows='auto' is chosen by quantile(); give an int here")
    table = open_table(data, schema=schema)
    check_numeric_column(table, data, column)
    check_unit_column(table, privacy_unit, rows)
    return _AutoBoundsQuery(given, levels, eps, fraction, rows, chosen, table)


def _bounds_then_quantiles(
    data: Any,
    request: QuantileRequest,
    query: _AutoBoundsQuery,
    choice_levels: tuple[float, float],
    budget: ChoiceBudget,
    unit: dict[str, Any],
    *,
    source: RandomSource | None,
    schema: Any,
    progress: Callable[[float], None] | None,
) -> tuple[QuantileResult, str, list[float]]:
    """After the charge: the bounds chosen at ``budget.choice``, then the quantiles on them at
    ``budget.query``; the quantiles' result, the note on the choice and the bounds."""
    assert request.column is not None
    picked = choose_bounds(
        data, request.column, budget.choice, quantiles=choice_levels, source=source,
        schema=schema, **unit,
    )  # fmt: skip
    on_bounds = replace(
        request, q=query.given, epsilon=budget.query, bounds=(picked.lower, picked.upper),
        candidates=None, resolution=None, privacy_unit=unit.get("privacy_unit"),
        rows=query.rows,
    )  # fmt: skip
    result = quantile_release(data, on_bounds, ledger=None, source=source, progress=progress,
                              work_progress=None, schema=schema)  # fmt: skip
    line = (
        f"bounds: [{picked.lower:g}, {picked.upper:g}], chosen privately (the bins of the "
        f"{choice_levels[0]:g} and {choice_levels[1]:g} quantiles in a noisy histogram of "
        f"power-of-two bins, the bins below its threshold dropped) at epsilon = "
        f"{budget.spent:.6g}; the quantiles then ran at epsilon = {budget.query:.6g}"
    )
    if picked.parameters.get("note"):
        line += f"; {picked.parameters['note']}"
    return result, line, [picked.lower, picked.upper]
