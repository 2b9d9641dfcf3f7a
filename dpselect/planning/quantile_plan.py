"""The plan of a quantile release, from public facts only: how its epsilon divides among its
stages (the auto rule's noisy row count, the mechanism's runs), and every stage with its
mechanism, share, noise scale or resolution and memory (:func:`plan_quantile_method`).

The method itself is chosen by
:func:`~dpselect.planning.quantile_checks.choose_quantile_method`; the recipes of
:mod:`dpselect.recipes` build the mechanisms at the shares planned here, charge the plan's
total and run them. Every share is an exact :class:`~fractions.Fraction` of the total and
the shares add up to at most the total, so by simple adaptive composition (seed 002,
"Theorem (Simple adaptive composition)") the release costs at most its epsilon.
docs/quantiles.md has every rule ("Choosing the method", "Privacy units").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from ..core.arithmetic import float_down
from ..mechanisms.quantile_continuous import check_bounds, check_resolution
from ..mechanisms.quantile_joint_parameters import joint_resolution, recorded_resolution
from ..mechanisms.quantile_recursive import recursive_depth
from ..mechanisms.quantile_score import unit_epsilon
from ..mechanisms.quantile_tree import tree_scale
from .budget import first_share
from .private_choice import ChoiceBudget
from .quantile_checks import choose_quantile_method, quantile_levels
from .stage import Stage

__all__ = [
    "BYTES_PER_NUMBER",
    "GRID_TREE_HEIGHT",
    "GRID_TREE_POINTS",
    "TREE_AUTO_LIMIT",
    "TREE_BRANCHING",
    "TREE_COUNT_FRACTION",
    "TREE_HEIGHT",
    "TREE_THRESHOLD",
    "QuantileMethodPlan",
    "count_shares",
    "grid_tree_fits",
    "group_options",
    "plan_auto_bounds",
    "plan_auto_rows",
    "plan_quantile_method",
]

#: The tree's shape (public): branching ``b`` and height ``h`` (``b^h`` leaves), and the
#: descent's threshold in standard deviations (docs/quantiles.md, "the tree").
TREE_BRANCHING, TREE_HEIGHT, TREE_THRESHOLD = 8, 2, 1.0

#: ``mechanism="auto"`` (2 to 20 levels with bounds) spends this share of epsilon on a noisy
#: row count ``N``, then runs the tree if ``eps' N < TREE_AUTO_LIMIT`` (``eps'`` the rest of
#: epsilon), else the joint mechanism (docs/quantiles.md, "Choosing the method").
TREE_COUNT_FRACTION = Fraction(1, 20)
TREE_AUTO_LIMIT = 700

#: On a column whose type puts its values on a grid of at most ``GRID_TREE_POINTS`` points of
#: the bounds (an integer or decimal type: public, the schema), the auto rule runs the tree of
#: height ``GRID_TREE_HEIGHT`` (``8^3 = 512`` leaves, each holding at most two grid points)
#: where the count would hand the release to the joint mechanism (docs/quantiles.md, "Choosing
#: the method": on such a grid ties and gaps are the rule, and the joint mechanism's density
#: over a gap grows with the gap's length).
GRID_TREE_HEIGHT, GRID_TREE_POINTS = 3, 1024

#: The bytes one number (a count, a score, a float64 value) takes in a stage's memory.
BYTES_PER_NUMBER = 8

#: The engine's declared grid, as :meth:`dpselect.data.engine.Engine.grid_width` answers it.
GridWidth = Callable[[tuple[float, float], float | None], float | None]


def grid_tree_fits(lo_hi: tuple[float, float] | None, step: Fraction | None) -> bool:
    """Whether the auto rule's larger tree serves this column: a type grid (``step``, from the
    schema) with at most :data:`GRID_TREE_POINTS` points in the bounds ``lo_hi``. Public facts
    only.

    Parameters
    ----------
    lo_hi : (float, float) or None
        The public bounds (``None``: not known yet).
    step : Fraction or None
        The grid the column's type puts values on (``None``: a float or text column).

    Returns
    -------
    bool
        ``True`` when the grid has at most ``GRID_TREE_POINTS`` points in the bounds.
    """
    if lo_hi is None or step is None or step <= 0:
        return False
    span = Fraction(lo_hi[1]) - Fraction(lo_hi[0])
    return span / step + 1 <= GRID_TREE_POINTS


def count_shares(epsilon: Fraction) -> tuple[Fraction, Fraction]:
    """The auto rule's split of ``epsilon``: ``TREE_COUNT_FRACTION`` to the noisy row count,
    the rest to the one mechanism for all levels
    (:func:`~dpselect.planning.budget.first_share`).

    Parameters
    ----------
    epsilon : Fraction
        The release's epsilon (or the row-level epsilon, for a margin).

    Returns
    -------
    count, each : Fraction
        The count's share and the mechanism's, exactly; ``count + each == epsilon``.
    """
    shares = first_share(epsilon, TREE_COUNT_FRACTION)
    return shares.first_epsilon, shares.rest_epsilon


@dataclass(frozen=True)
class QuantileMethodPlan:
    """A quantile method's budget and stages, decided before the charge.

    Attributes
    ----------
    chosen : str
        The method (``"count"``: the auto rule's noisy count picks the tree or the joint
        mechanism).
    epsilon : Fraction
        What the method costs in all, for one unit added or removed.
    count : Fraction
        The noisy row count's share (0 unless ``chosen == "count"``).
    each : Fraction
        The share one mechanism run is calibrated to (``epsilon / m`` for a split, ``epsilon
        / depth`` per round of the recursive algorithm, else the whole rest).
    stages : tuple of Stage
        The stages, in the order they run; their costs add up to at most ``epsilon``.
    """

    chosen: str
    epsilon: Fraction
    count: Fraction
    each: Fraction
    stages: tuple[Stage, ...]


def plan_quantile_method(
    chosen: str,
    epsilon: Fraction,
    n_levels: int,
    *,
    rows: int = 1,
    lo_hi: tuple[float, float] | None = None,
    resolution: float | None = None,
    step: Fraction | None = None,
    n_candidates: int | None = None,
    grid_width: GridWidth | None = None,
    grain_bins: int | None = None,
) -> QuantileMethodPlan:
    """The budget and stages of one quantile method at ``epsilon``, from public facts.

    Shares (exact): the auto rule (``"count"``) gives ``TREE_COUNT_FRACTION`` to a noisy row
    count and the rest to the tree or the joint mechanism; ``"split"`` runs one mechanism per
    level at ``epsilon / m`` (basic composition); ``"recursive"`` runs ``depth`` rounds at
    ``epsilon / depth`` (each row in one part per round: Kaplan, Schnapp, Stemmer 2022); the
    tree and the joint mechanism take the whole epsilon. Each stage's epsilon is its exact
    share rounded down, so the stages never print more than the charge.

    Memory (bytes held at once, ``BYTES_PER_NUMBER = 8`` per number): the tree's noisy counts,
    ``8 (b + b^2 + ... + b^h)``; the candidates' scores, ``8 c m`` (``c`` candidates, ``m``
    levels); on an engine that rounds rows to a grid (its declared
    :meth:`~dpselect.data.engine.Engine.grid_width`), the mechanisms on rows hold one number
    per grid cell and level, ``8 m ceil((hi - lo) / width)``; the grain histogram, ``8``
    per bin; else ``None``: the rows the engine hands over (their number is private).

    Parameters
    ----------
    chosen : str
        The method (:func:`~dpselect.planning.quantile_checks.choose_quantile_method`).
    epsilon : Fraction
        The method's total epsilon, for one unit added or removed.
    n_levels : int
        The number of levels ``m``.
    rows : int, default 1
        The most rows one unit keeps (each mechanism runs at ``epsilon / rows`` per row).
    lo_hi : (float, float), optional
        The public bounds (``None``: candidates, or bounds chosen later).
    resolution : float, optional
        The resolution as given (``None``: each mechanism's default).
    step : Fraction, optional
        The grid the column's type puts values on (the joint mechanism's default resolution).
    n_candidates : int, optional
        The number of public candidates (with candidates).
    grid_width : callable, optional
        The engine's declared grid (``None``: not known yet, or no engine).
    grain_bins : int, optional
        The bins of the auto rule's noisy grain histogram, when it replaces the row count.

    Returns
    -------
    QuantileMethodPlan
        The shares and the stages.
    """
    m, r = n_levels, rows
    count, each, runs = Fraction(0), epsilon, 1
    if chosen == "count":
        count, each = count_shares(epsilon)
    elif chosen == "split":
        each, runs = epsilon / m, m
    elif chosen == "recursive":
        runs = recursive_depth(m)
        each = epsilon / runs
    stages: list[Stage] = []
    if chosen == "count":
        stages.append(_count_stage(count, r, grain_bins))
    stages.append(_mechanism_stage(chosen, each, runs, m, r, lo_hi, resolution, step,
                                   n_candidates, grid_width))  # fmt: skip
    return QuantileMethodPlan(chosen, epsilon, count, each, tuple(stages))


def _count_stage(count: Fraction, r: int, grain_bins: int | None) -> Stage:
    """The auto rule's noisy row count (or grain histogram): discrete Laplace of scale
    ``r / count`` (sensitivity ``r``; seed 002)."""
    scale = float(Fraction(r) / count)
    if grain_bins is None:
        return Stage("count the rows", "discrete Laplace", float_down(count), scale=scale)
    return Stage("histogram of the rows' decimal grain", "discrete Laplace", float_down(count),
                 scale=scale, memory=BYTES_PER_NUMBER * grain_bins)  # fmt: skip


def _grid_memory(
    m: int, lo_hi: tuple[float, float] | None, w: float | None, grid_width: GridWidth | None
) -> int | None:
    """``8 m`` numbers per cell of the engine's grid, or ``None`` (rows, or no grid)."""
    if lo_hi is None or grid_width is None:
        return None
    width = grid_width(lo_hi, w)
    if width is None or width <= 0:
        return None
    return BYTES_PER_NUMBER * m * math.ceil((lo_hi[1] - lo_hi[0]) / width)


def _mechanism_stage(
    chosen: str,
    each: Fraction,
    runs: int,
    m: int,
    r: int,
    lo_hi: tuple[float, float] | None,
    resolution: float | None,
    step: Fraction | None,
    n_candidates: int | None,
    grid_width: GridWidth | None,
) -> Stage:
    """The stage of the quantile mechanism itself (``runs`` runs reach each unit)."""
    e = float_down(each)
    if n_candidates is not None:
        return Stage("quantiles", "exponential mechanism over the candidates", e, times=runs,
                     memory=BYTES_PER_NUMBER * n_candidates * m)  # fmt: skip
    tree = _tree_stage(e, each, r, TREE_HEIGHT)
    if chosen == "tree":
        return tree
    bounds = lo_hi if lo_hi is not None else (0.0, 1.0)
    if chosen == "count" and grid_tree_fits(lo_hi, step):
        grid = _tree_stage(e, each, r, GRID_TREE_HEIGHT)
        return Stage("quantiles", f"the {tree.mechanism} or the {grid.mechanism} on the type's "
                     "grid, by the noisy count", e, scale=grid.scale,
                     memory=grid.memory)  # fmt: skip
    if chosen in ("joint", "count"):
        w = joint_resolution(resolution, *bounds, unit_epsilon(each, r), step)
        memory = _grid_memory(m, lo_hi, w if w > 0 else None, grid_width)
        joint = "joint exponential mechanism" + (f" (resolution {w:.6g})" if lo_hi else "")
        if chosen == "count" and lo_hi is None:  # bounds chosen later: any tree may run
            grid = _tree_stage(e, each, r, GRID_TREE_HEIGHT)
            return Stage("quantiles", f"the tree or the {joint}, by the noisy count (on a small "
                         "type grid, the larger tree)", e,
                         memory=max(memory or 0, grid.memory or 0))  # fmt: skip
        if chosen == "count":
            return Stage("quantiles", f"the tree or the {joint}, by the noisy count", e,
                         memory=max(memory or 0, tree.memory or 0))  # fmt: skip
        return Stage("quantiles", joint, e, memory=memory)
    w = check_resolution(resolution, *bounds)
    name = "recursive quantiles" if chosen == "recursive" else "continuous exponential mechanism"
    if lo_hi is not None:
        name += f" (resolution {w:.6g})"
    stage = "quantiles" if runs == 1 else "each quantile" if chosen == "split" else "each round"
    return Stage(stage, name, e, times=runs, memory=_grid_memory(m, lo_hi, w, grid_width))


def _tree_stage(e: float, each: Fraction, r: int, h: int) -> Stage:
    """The stage of the tree of height ``h``: its noise scale ``h r / each`` and its counts."""
    b = TREE_BRANCHING
    return Stage("quantiles", f"tree ({b}-ary, {h} levels, discrete Laplace)", e,
                 scale=float(tree_scale(h, unit_epsilon(each, r))),
                 memory=BYTES_PER_NUMBER * sum(b**i for i in range(1, h + 1)))  # fmt: skip


def _without_scales(stages: tuple[Stage, ...]) -> tuple[Stage, ...]:
    """``stages`` with no noise scale: a bound chosen privately first sets them (the scales
    grow with the rows per unit), so the plan cannot state them."""
    return tuple(replace(s, scale=None) for s in stages)


def plan_auto_bounds(
    budget: ChoiceBudget,
    chosen: str,
    n_levels: int,
    *,
    rows: int,
    n_bins: int,
    threshold: int,
) -> tuple[Stage, ...]:
    """The stages of a quantile whose bounds are chosen privately first (``bounds="auto"``):
    the thresholded noisy histogram of ``n_bins`` power-of-two bins at ``budget.choice``
    (discrete Laplace of scale ``rows / budget.choice``, L1 sensitivity ``rows``; one count
    per bin, ``8 n_bins`` bytes), then the method at ``budget.query``.

    Parameters
    ----------
    budget : ChoiceBudget
        The release's epsilon divided between the choice and the quantiles
        (:func:`~dpselect.planning.private_choice.choice_budget`).
    chosen : str
        The quantile method (:func:`~dpselect.planning.quantile_checks.choose_quantile_method`).
    n_levels : int
        The number of levels.
    rows : int
        The most rows one unit keeps.
    n_bins : int
        The histogram's bins.
    threshold : int
        The count a bin's noisy count must reach to be kept.

    Returns
    -------
    tuple of Stage
        The choice, then the quantiles' stages (the bounds are not known yet: no resolution,
        no engine grid).
    """
    choice = Stage("choose the bounds", "noisy histogram of power-of-two bins (discrete Laplace)",
                   budget.spent, scale=float(Fraction(rows) / budget.choice),
                   threshold=float(threshold), memory=BYTES_PER_NUMBER * n_bins)  # fmt: skip
    then = plan_quantile_method(chosen, Fraction(budget.query), n_levels, rows=rows)
    return (choice, *then.stages)


def plan_auto_rows(
    budget: ChoiceBudget,
    chosen: str,
    n_levels: int,
    n_candidates_r: int,
    *,
    bounds_budget: ChoiceBudget | None = None,
    lo_hi: tuple[float, float] | None = None,
    resolution: float | None = None,
    step: Fraction | None = None,
    n_candidates: int | None = None,
) -> tuple[Stage, ...]:
    """The stages of a quantile whose rows per unit are chosen privately first
    (``max_rows="auto"``): the generalized exponential mechanism over ``n_candidates_r``
    bounds at ``budget.choice`` (its cost ``budget.spent``), then, with ``bounds="auto"``,
    the bounds' choice from ``bounds_budget`` (the rest divided again), then the method.

    Parameters
    ----------
    budget : ChoiceBudget
        The release's epsilon divided between the choice of ``max_rows`` and the rest.
    chosen : str
        The quantile method.
    n_levels : int
        The number of levels.
    n_candidates_r : int
        The candidate bounds of the choice.
    bounds_budget : ChoiceBudget, optional
        With ``bounds="auto"``: the rest divided between the bounds' choice and the quantiles.
    lo_hi, resolution, step, n_candidates
        The public bounds, the resolution as given, the column type's grid and the number
        of candidates, as for :func:`plan_quantile_method`.

    Returns
    -------
    tuple of Stage
        The stages; the noise scales, which grow with the bound chosen, are left unstated.
    """
    first = Stage("choose max_rows", "generalized exponential mechanism", budget.spent,
                  memory=BYTES_PER_NUMBER * n_candidates_r)  # fmt: skip
    if bounds_budget is not None:
        bounds = Stage("choose the bounds",
                       "noisy histogram of power-of-two bins (discrete Laplace)",
                       bounds_budget.spent)  # fmt: skip
        then = plan_quantile_method(chosen, Fraction(bounds_budget.query), n_levels)
        return (first, bounds, *_without_scales(then.stages))
    then = plan_quantile_method(chosen, Fraction(budget.query), n_levels, lo_hi=lo_hi,
                                resolution=resolution, step=step,
                                n_candidates=n_candidates)  # fmt: skip
    return (first, *_without_scales(then.stages))


def group_options(options: dict[str, Any], q: Any, step: Fraction | None) -> dict[str, Any]:
    """The options every group of a grouped quantile runs with: when the joint mechanism may
    run (``"joint"``, or the auto rule's ``"count"``:
    :func:`~dpselect.planning.quantile_checks.choose_quantile_method`) with bounds and no
    resolution given, the joint mechanism's default from the column type's grid ``step``
    (:func:`~dpselect.mechanisms.quantile_joint_parameters.recorded_resolution`), passed on
    as its resolution (each group runs on float rows; the tree does not read it). Schema
    only.

    Parameters
    ----------
    options : dict
        The groups' options (``bounds``, ``mechanism``, ``resolution``, ...).
    q : float or list of float
        The levels.
    step : Fraction or None
        The grid the column's type puts values on.

    Returns
    -------
    dict
        ``options``, with the resolution where it applies.
    """
    if "resolution" in options or "bounds" not in options:
        return options
    n_levels = len(quantile_levels(q)[1])
    chosen = choose_quantile_method(str(options.get("mechanism", "auto")), n_levels, True)
    by_step = recorded_resolution(step, *check_bounds(options["bounds"]))
    if chosen in ("joint", "count") and by_step is not None:
        return {**options, "resolution": by_step}
    return options
