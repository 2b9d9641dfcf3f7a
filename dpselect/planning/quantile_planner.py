"""The planner of a quantile release with public bounds or candidates and a fixed
``max_rows``: from the checked query (public facts only), the method's budget and stages
(:func:`~dpselect.planning.quantile_plan.plan_quantile_method`) and its mechanisms built at
those shares, ready to run on the rows (:func:`plan_quantile`). The recipe
(:func:`dpselect.recipes.quantile_release.quantile_release`) charges the plan and runs it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..sampling.source import RandomSource
from .quantile_count_rule import count_plan, grain_bins
from .quantile_methods import MethodPlan, recursive_plan, single_plan, split_plan
from .quantile_plan import QuantileMethodPlan, plan_quantile_method
from .quantile_query import QuantileQuery

__all__ = ["plan_quantile"]

#: The plan of each method (:func:`~dpselect.planning.quantile_checks.choose_quantile_method`).
_PLANS: dict[str, Callable[..., MethodPlan]] = {
    "count": count_plan,
    "joint": single_plan,
    "tree": single_plan,
    "recursive": recursive_plan,
    "split": split_plan,
}


def _budget(query: QuantileQuery) -> QuantileMethodPlan:
    """The budget and stages of the query's method, from its public facts (the engine's
    declared grid, the grain histogram's bins)."""
    return plan_quantile_method(
        query.chosen, query.eps, len(query.levels), rows=query.rows, lo_hi=query.lo_hi,
        resolution=query.resolution, step=query.step,
        n_candidates=None if query.cands is None else len(query.cands),
        grid_width=query.table.grid_width,
        grain_bins=grain_bins(query) if query.chosen == "count" else None,
    )  # fmt: skip


def plan_quantile(
    query: QuantileQuery,
    source: RandomSource | None,
    work_progress: Callable[[float], None] | None,
) -> MethodPlan:
    """The plan of a checked quantile query: its method's mechanisms at their shares, what
    its result states, and its stages; nothing read, nothing charged.

    Parameters
    ----------
    query : QuantileQuery
        The checked query (public facts: the parameters, the table's schema and declared
        grid).
    source : RandomSource or None
        The randomness the mechanisms will draw from (tests only).
    work_progress : callable or None
        ``work_progress(fraction)`` while a mechanism works.

    Returns
    -------
    MethodPlan
        The plan, with its ``stages`` (their costs add up to at most ``query.eps``).
    """
    budget = _budget(query)
    plan = _PLANS[query.chosen](query, budget, source, work_progress)
    return replace(plan, stages=budget.stages)
