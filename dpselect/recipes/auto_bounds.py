"""``quantile(..., bounds="auto")``: clamping bounds chosen privately, then the quantiles.

The continuous quantile mechanism needs public bounds ``(lo, hi)``; the rows are clamped to
them. With ``bounds="auto"`` the bounds come from :func:`~dpselect.recipes.bounds.
choose_bounds` (two private bin quantiles over power-of-two bins) and the quantiles run on
them:

- **Budget** (a public rule): ``auto_fraction`` (default
  :data:`~dpselect.api.AUTO_FRACTION`, 0.25) of ``epsilon`` goes to the choice (its cost
  ``eps_c``, the two picks' maps at distance 1), the rest ``eps_q = epsilon - eps_c``
  (rounded down) to the quantiles. The quantile mechanism's loss does not depend on the
  bounds (clamping to any fixed interval is a row-by-row map, 1-stable under adding or
  removing a row; docs/quantiles.md), only its accuracy does.
- **Privacy**: adaptive composition of the ``eps_c``-DP choice and the ``eps_q``-DP quantiles
  run with the bounds it released: ``eps_c + eps_q <= epsilon`` (basic composition, valid
  when the second mechanism's parameters are chosen from the first's output; Dwork and Roth
  2014, Thm 3.16, and the table in docs/accounting.md). The one ledger entry is charged as
  bounded range when both parts are exponential mechanisms, and as pure epsilon-DP when the
  quantiles may use the tree or the auto rule's noisy row count (Laplace noise).
- **Levels of the choice** (public, from ``q``): 5% and 95%, widened to 1% (99%) when a
  requested level is below 5% (above 95%). A quantile is unchanged by clamping to bounds
  that contain it; the low level's bin starts at or below that quantile and the high
  level's bin ends above it, so levels in ``[5%, 95%]`` are kept whenever the two bins are
  the data's own. That needs roughly ``n >= 4 max(A, B - A) ln(99 / beta) / (min(A, B - A)
  eps_c / 2)`` rows (:mod:`~dpselect.recipes.bounds`): about 4600 rows at ``epsilon = 1``
  with the default fraction (``eps_c = 0.25``) at 5%/95%, about 24000 at 1%/99%; with fewer,
  an empty bin far from the data is a likely bound.
- **Resolution**: the default ``(hi - lo) / 10^6`` of the chosen bounds (post-processing);
  an explicit ``resolution`` is refused, since it would be fixed before ``hi - lo`` is known.

One ledger entry, charged durably before anything is read; the result reports the chosen
bounds and both costs. docs/private_selection.md ("bounds='auto'").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from ..core.arithmetic import float_down, float_up
from ..core.errors import ParameterError
from ..data.tables import open_table
from ..mechanisms.validate import check_user_epsilon
from ..sampling.source import RandomSource
from ._common import CONFIDENCE, charge_then_release, check_confidence, open_ledger
from .bounds import bounds_choice_cost, choose_bounds
from .quantiles import (
    QuantileResult,
    _choose_method,
    _levels,
    charge_kind,
    check_numeric_column,
    quantile,
)

__all__ = ["auto_bound_levels", "quantile_with_auto_bounds"]


def auto_bound_levels(levels: Sequence[Fraction]) -> tuple[float, float]:
    """The choice's levels for the requested ``levels`` (public rule, module docstring)."""
    low = 0.05 if min(levels) >= Fraction(1, 20) else 0.01
    high = 0.95 if max(levels) <= Fraction(19, 20) else 0.99
    return low, high


def quantile_with_auto_bounds(
    data: Any,
    column: str,
    q: float | Sequence[float],
    epsilon: float,
    *,
    candidates: Any = None,
    confidence: float = CONFIDENCE,
    ledger: Any = None,
    source: RandomSource | None = None,
    resolution: float | None = None,
    method: str = "auto",
    progress: Callable[[float], None] | None = None,
    schema: Any = None,
    auto_fraction: float | None = None,
) -> QuantileResult:
    """:func:`~dpselect.recipes.quantiles.quantile` with ``bounds="auto"`` (module docstring).

    Every refusal comes from public facts before the charge.
    """
    from ..api import check_auto_fraction

    eps = Fraction(check_user_epsilon(epsilon))
    fraction = check_auto_fraction(auto_fraction)
    if candidates is not None:
        raise ParameterError(
            "bounds='auto' chooses bounds for the continuous mechanism: do not give candidates"
        )
    if resolution is not None:
        raise ParameterError(
            "resolution applies to fixed bounds; with bounds='auto' the default "
            "(hi - lo) / 10^6 of the chosen bounds is used"
        )
    given, levels = _levels(q)
    check_confidence(confidence)
    chosen = _choose_method(method, len(levels), True)
    table = open_table(data, schema=schema)
    check_numeric_column(table, data, column)
    choice_levels = auto_bound_levels(levels)
    eps_choice = eps * Fraction(fraction)
    spent_c = bounds_choice_cost(eps_choice, choice_levels)
    eps_q = float_down(eps - Fraction(spent_c))
    total = float_up(Fraction(spent_c) + Fraction(eps_q))
    book = open_ledger(ledger)
    parameters = {
        "column": column,
        "q": [float(lv) for lv in levels],
        "epsilon": float(eps),
        "bounds": "auto",
        "bounds_levels": list(choice_levels),
        "auto_fraction": fraction,
        "choice_epsilon": spent_c,
        "query_epsilon": eps_q,
        "method": chosen,
    }

    def release() -> QuantileResult:
        picked = choose_bounds(
            data, column, eps_choice, quantiles=choice_levels, source=source, schema=schema
        )
        result = quantile(
            data,
            column,
            given,
            eps_q,
            bounds=(picked.lower, picked.upper),
            confidence=confidence,
            source=source,
            method=method,
            progress=progress,
            schema=schema,
        )
        line = (
            f"bounds: [{picked.lower:g}, {picked.upper:g}], chosen privately (bins of the "
            f"{choice_levels[0]:g} and {choice_levels[1]:g} quantiles over power-of-two bins) "
            f"at epsilon = {spent_c:.6g}; the quantiles then ran at epsilon = {eps_q:.6g}"
        )
        out = dict(result.parameters)
        out.update(parameters)
        out["bounds"] = [picked.lower, picked.upper]
        out["bounds_choice"] = line
        return dataclasses.replace(
            result,
            epsilon=total,
            budget_split=(
                f"{spent_c:.6g} to choose the bounds + {eps_q:.6g} to the quantiles ("
                f"{result.budget_split})"
            ),
            notes=[line, *result.notes],
            ledger=None if book is None else book.path,
            parameters=out,
        )

    # The tree and the auto rule's noisy count add Laplace noise: charged as pure epsilon-DP.
    kind = charge_kind(chosen)
    return charge_then_release(book, release, total, "quantile/bounds=auto", parameters, kind)
