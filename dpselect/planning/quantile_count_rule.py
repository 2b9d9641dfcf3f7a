"""The auto rule for 2 to 20 levels with bounds: a noisy row count ``N``, paid with
``TREE_COUNT_FRACTION`` of epsilon, picks the quantile tree if ``eps' N < TREE_AUTO_LIMIT``
(``eps'`` the rest of epsilon, per row), else the joint mechanism (docs/quantiles.md,
"Choosing the method"). On a float or text column the same share buys a noisy histogram of
the rows' decimal grain instead, whose sum is ``N`` and whose bins give the joint mechanism
the grid the values were recorded on (:mod:`dpselect.mechanisms.decimal_grain`)."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

from ..core.domains import atom_domain
from ..core.metrics import L1Distance
from ..core.public_memo import kept
from ..mechanisms.decimal_grain import grain_exponents, make_grain_histogram, recorded_exponent
from ..mechanisms.laplace import make_laplace
from ..mechanisms.quantile_continuous import check_bounds
from ..mechanisms.quantile_joint_parameters import (
    decimal_step,
    joint_resolution,
    recorded_resolution,
)
from ..mechanisms.quantile_score import unit_epsilon
from ..mechanisms.validate import check_confidence, check_user_epsilon
from ..sampling.source import RandomSource
from .quantile_checks import quantile_levels
from .quantile_methods import F64, MethodPlan, Picked, _joint_plan, _Plan, _tree_plan, one_draw_plan
from .quantile_plan import (
    GRID_TREE_HEIGHT,
    TREE_AUTO_LIMIT,
    TREE_BRANCHING,
    TREE_COUNT_FRACTION,
    QuantileMethodPlan,
    count_shares,
    grid_tree_fits,
)
from .quantile_query import QuantileQuery
from .top_k_plan import CONFIDENCE

__all__ = ["count_plan", "count_rule_statements", "grain_bins"]


def _per_row(epsilon: Fraction, max_rows: int) -> str:
    """The row-level epsilon of the auto rule as printed: ``eps`` or ``(eps / r)``."""
    if max_rows == 1:
        return f"{float(epsilon):.6g}"
    return f"({float(epsilon):.6g} / {max_rows})"


@kept
def _grain_grids(
    lo_hi: tuple[float, float], public_w: float
) -> tuple[list[int], list[tuple[Fraction, float | None]]]:
    """The candidate exponents of the grain histogram for the public resolution ``public_w``
    and, for each, its grid ``10^k`` and the joint resolution it gives
    (:func:`recorded_resolution`): public parameters only, kept."""
    exponents = grain_exponents(*lo_hi, decimal_step(public_w))
    grids = [(Fraction(10) ** k, recorded_resolution(Fraction(10) ** k, *lo_hi)) for k in exponents]
    return exponents, grids


class _GrainPlan:
    """The auto rule's noisy grain histogram (:mod:`dpselect.mechanisms.decimal_grain`) and
    the joint plans it may pick, one per candidate grid, all built before the charge (so
    nothing built after it can fail): the histogram's sum is the noisy row count ``N``, and
    the recording grid it reads gives the joint mechanism the resolution a typed column's
    grid would (:func:`recorded_resolution`); without one, the public default stays."""

    def __init__(
        self,
        lo_hi: tuple[float, float],
        levels: list[Fraction],
        each: Fraction,
        conf: float,
        source: RandomSource | None,
        work_progress: Callable[[float], None] | None,
        max_rows: int,
        eps_count: Fraction,
        public: _Plan,
    ) -> None:
        assert public.w is not None
        exponents, grids = _grain_grids(lo_hi, public.w)
        self.exponents = list(exponents)
        self.histogram = make_grain_histogram(self.exponents, eps_count, source=source,
                                              max_rows=max_rows)  # fmt: skip
        self.scale = max_rows / eps_count
        self.public = public
        self.plans: dict[int, _Plan] = {}
        for k, (grid, w) in zip(self.exponents, grids, strict=True):
            plan = public
            if w is not None and w != public.w:
                plan = _joint_plan(lo_hi, levels, each, conf, None, False, source, work_progress,
                                   max_rows, grid)  # fmt: skip
            self.plans[k] = plan

    def run(self, values: F64) -> tuple[int, _Plan, str, dict[str, Any]]:
        """``(N, the joint plan, the note, what was released)`` from one noisy grain
        histogram of ``values`` (released: the noisy bins, the grids, the grid read)."""
        noisy = [int(c) for c in self.histogram(values)]
        k = recorded_exponent(noisy, self.exponents)
        plan = self.public if k is None else self.plans[k]
        released = {
            "noisy_counts": noisy,
            "grids": [float(Fraction(10) ** e) for e in self.exponents],
            "recording_grid": None if k is None else float(Fraction(10) ** k),
        }
        grids = ", ".join(f"{float(Fraction(10) ** k):g}" for k in self.exponents)
        found = (
            "no recording grid (the default resolution from the bounds and epsilon)"
            if k is None
            else f"recording grid {float(Fraction(10) ** k):g} (resolution {plan.w:g})"
        )
        line = (
            f"noisy grain histogram {noisy} (rows on none of the grids {grids}, then on the "
            f"first 1, 2, ... of them; discrete Laplace of scale {float(self.scale):.6g}, "
            f"released), noisy row count N = {sum(noisy)} (its sum); {found} "
            "(docs/quantiles.md, 'The recording grid of a float column')"
        )
        return sum(noisy), plan, line, released


def grain_bins(query: QuantileQuery) -> int | None:
    """The bins of the auto rule's noisy grain histogram, or ``None`` when a noisy row count
    runs instead: public facts only (a float or text column, no declared resolution, an
    engine that hands over the rows themselves).

    Parameters
    ----------
    query : QuantileQuery
        The checked query (bounds).

    Returns
    -------
    int or None
        The histogram's bins (one more than its candidate grids), or ``None``.
    """
    lo_hi = query.lo_hi
    if lo_hi is None or query.step is not None or query.resolution is not None:
        return None
    if query.table.grid_width(lo_hi, None) is not None:
        return None
    public_w = joint_resolution(None, *lo_hi, unit_epsilon(count_shares(query.eps)[1],
                                                            query.rows), None)  # fmt: skip
    return len(_grain_grids(lo_hi, public_w)[0]) + 1


def count_plan(
    query: QuantileQuery,
    planned: QuantileMethodPlan,
    source: RandomSource | None,
    work_progress: Callable[[float], None] | None,
) -> MethodPlan:
    """The auto rule's plan: the noisy count (or grain histogram) at ``TREE_COUNT_FRACTION`` of
    epsilon, then the tree or the joint mechanism at the rest, both built before the charge.

    Parameters
    ----------
    query : QuantileQuery
        The checked query (bounds, 2 to 20 levels).
    planned : QuantileMethodPlan
        Its shares (:func:`~dpselect.planning.quantile_plan.plan_quantile_method`): the
        count's and the mechanism's.
    source : RandomSource or None
        The randomness (tests only).
    work_progress : callable or None
        ``work_progress(fraction)`` while the joint mechanism works.

    Returns
    -------
    MethodPlan
        The plan, stated as the joint mechanism until the noisy count picks.
    """
    lo_hi, levels, conf, r = query.lo_hi, query.levels, query.conf, query.rows
    step, resolution = query.step, query.resolution
    assert lo_hi is not None
    eps_count, each = planned.count, planned.each
    tree_plan = _tree_plan(lo_hi, levels, each, conf, source, r)
    joint_plan = _joint_plan(lo_hi, levels, each, conf, resolution, False, source,
                             work_progress, r, step)  # fmt: skip
    # On a small type grid (public: the schema, the bounds) the larger tree runs where the
    # count would hand the release to the joint mechanism (docs/quantiles.md, "Choosing the
    # method"): there ties and gaps are the rule.
    upper = joint_plan
    if resolution is None and grid_tree_fits(lo_hi, step):
        upper = _tree_plan(lo_hi, levels, each, conf, source, r, GRID_TREE_HEIGHT)
    count_scale = r / eps_count
    # The row count has sensitivity r (one unit keeps at most r rows; without a unit
    # r = 1): the Laplace mechanism of scale r / eps_count is eps_count-DP (its map at
    # d_in = r; seed 002), exact on the integers.
    noisy_count = make_laplace(atom_domain(int), L1Distance(), count_scale, source=source)
    # A float or text column on an engine that hands over the rows themselves: the
    # same share buys a noisy grain histogram instead, whose sum is the row count and
    # whose bins tell the grid the values were recorded on (decimal_grain).
    grains = None
    if grain_bins(query) is not None:
        grains = _GrainPlan(lo_hi, levels, each, conf, source, work_progress, r,
                            eps_count, joint_plan)  # fmt: skip
    counted = "a noisy row count N (discrete Laplace)"
    if grains is not None:
        counted = (
            f"a noisy histogram of the rows' decimal grain ({len(grains.exponents) + 1}"
            " bins, discrete Laplace; N its sum)"
        )
    split = (
        f"{float(eps_count):.6g} ({TREE_COUNT_FRACTION} of epsilon) to {counted}, then "
        f"{float(each):.6g} to one mechanism for all levels, the tree if "
        f"{_per_row(each, r)} N < {TREE_AUTO_LIMIT}, else {_upper_name(upper)}"
    )

    def count(values: F64) -> tuple[int, _Plan, str, dict[str, Any] | None]:
        """The noisy row count, the joint plan it would pick, its note, the grains released."""
        if grains is None:
            noisy_n = int(noisy_count(int(values.shape[0])))
            counted_line = (
                f"noisy row count N = {noisy_n} (discrete Laplace of scale "
                f"{float(count_scale):.6g}, released)"
            )
            return noisy_n, joint_plan, counted_line, None
        return grains.run(values)

    run = _pick_and_run(count, tree_plan, upper, each, r)
    return one_draw_plan(query, upper, tree_plan, run, each, split)


def _upper_name(plan: _Plan) -> str:
    """How the rule names the plan it runs above the count's limit."""
    if plan.name == "tree":
        return f"the {TREE_BRANCHING**GRID_TREE_HEIGHT}-leaf tree on the column type's grid"
    return "the joint mechanism"


def _pick_and_run(
    count: Callable[[F64], tuple[int, _Plan, str, dict[str, Any] | None]],
    tree_plan: _Plan,
    upper: _Plan,
    each: Fraction,
    r: int,
) -> Callable[[F64], tuple[list[float], Picked]]:
    """The auto rule's run: the noisy count, then the tree or the plan above the count's
    limit (``upper``: the joint plan, which the grain histogram may replace, or the larger
    tree on a small type grid)."""

    def run(values: F64) -> tuple[list[float], Picked]:
        noisy_n, picked_joint, counted_line, released = count(values)
        above = upper if upper.name == "tree" else picked_joint
        # the rule reads the row-level epsilon of the mechanism that runs (eps / r)
        plan = tree_plan if (each / r) * noisy_n < TREE_AUTO_LIMIT else above
        note = (
            f"{counted_line}, {_per_row(each, r)} N "
            f"{'<' if plan is tree_plan else '>='} {TREE_AUTO_LIMIT}: "
            f"{'the tree' if plan is tree_plan else _upper_name(plan)} "
            "(docs/quantiles.md, 'Choosing the method')"
        )
        return plan.run(values), Picked(plan, noisy_n, note, released)

    return run


def count_rule_statements(inner: float, q: Any, options: dict[str, Any]) -> tuple[str, str]:
    """The mechanism and accuracy lines of a grouped release whose groups each run the
    ``"auto"`` rule of 2 to 20 levels (a noisy row count picks the tree or the joint
    mechanism, :func:`quantile`): both plans, as the rule builds them in every group at
    ``inner`` (public parameters only; each group's own result names the one it ran)."""
    eps = Fraction(check_user_epsilon(inner))
    eps_count, each = count_shares(eps)
    lo_hi = check_bounds(options["bounds"])
    levels = quantile_levels(q)[1]
    conf = check_confidence(options.get("confidence", CONFIDENCE))
    tree = _tree_plan(lo_hi, levels, each, conf, None)
    joint = _joint_plan(lo_hi, levels, each, conf, options.get("resolution"), False, None, None)
    mechanism = (
        f"the tree or the joint mechanism, chosen in each group by a noisy row count paid with "
        f"{TREE_COUNT_FRACTION} of epsilon_g (without a declared resolution, the sum of a "
        "noisy histogram of the rows' decimal grain, which also gives the joint mechanism the "
        "rows' recording grid: docs/quantiles.md, 'The recording grid of a float column'; "
        "'Choosing the method'; each group's result names its own): "
        f"{tree.text}; or {joint.text}"
    )
    # without a declared resolution each group reads a recording grid from its noisy grain
    # histogram: the joint statement at each candidate grid's resolution is listed too
    joints = [joint]
    if options.get("resolution") is None:
        grains = _GrainPlan(lo_hi, levels, each, conf, None, None, 1, eps_count, joint)
        joints += [p for p in grains.plans.values() if p is not joint]
    statements = [" ".join(line.removeprefix("accuracy: ") for line in p.accuracy) for p in joints]
    accuracy = (
        "the statement of the mechanism the group's noisy row count chose: with the tree, "
        + " ".join(line.removeprefix("accuracy: ") for line in tree.accuracy)
        + "; with the joint mechanism, "
        + statements[0]
    )
    if len(statements) > 1:
        accuracy += (
            "; or, at the recording grid the group's noisy grain histogram read, the same "
            "statement at that grid's resolution: " + "; ".join(statements[1:])
        )
    return mechanism, accuracy
