"""The quantile methods, each built before the charge as a plan ready to run on the rows: the
tree, the joint mechanism, the recursive algorithm and the per-level split (continuous
mechanism or candidates), with the text and accuracy statements the result shows
(docs/quantiles.md has every proof)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ..core.arithmetic import float_up, printed_up
from ..core.errors import ParameterError
from ..core.public_memo import kept
from ..mechanisms.quantile_candidates import make_candidate_quantiles
from ..mechanisms.quantile_continuous import ROUNDING_LOSS, make_continuous_quantile
from ..mechanisms.quantile_joint import (
    joint_accuracy,
    joint_accuracy_derivation,
    make_joint_quantiles,
)
from ..mechanisms.quantile_joint_parameters import (
    MAX_JOINT_LEVELS,
    joint_gaps,
    joint_resolution,
    joint_rounding_loss,
    round_to_step,
)
from ..mechanisms.quantile_recursive import (
    make_recursive_quantiles,
    recursive_accuracy,
    recursive_depth,
)
from ..mechanisms.quantile_tree import make_tree_quantiles, tree_accuracy
from ..sampling.source import RandomSource
from .quantile_plan import (
    TREE_BRANCHING,
    TREE_HEIGHT,
    TREE_THRESHOLD,
    QuantileMethodPlan,
)
from .quantile_query import QuantileQuery
from .quantile_statements import candidate_line, continuous_line
from .stage import Stage

__all__ = [
    "JOINT_ANCHOR_EPSILON",
    "MethodPlan",
    "Picked",
    "anchored_levels",
    "charge_kind",
    "on_grid",
]

F64 = npt.NDArray[np.float64]

#: The epsilon below which two anchor levels help the joint mechanism (docs/quantiles.md,
#: "Anchor levels"); ``mechanism="auto"`` runs the tree there instead, so no plan adds them.
JOINT_ANCHOR_EPSILON = 0.2
_ANCHOR_NOTE = (
    "  (the statement above is for the levels with the two unreleased anchors, so it counts "
    "m + 3 gaps and E is for those levels; merging each anchor's two gaps into one only lowers "
    "the total, by the triangle inequality, so the same bound holds for the m + 1 gaps that the "
    "released values cut)"
)


def anchored_levels(levels: list[Fraction]) -> list[Fraction]:
    """``[q_1 / 20, q_1, ..., q_m, 1 - (1 - q_m) / 20]``: two anchor levels near 0 and 1 that
    take up the empty stretches between the bounds and the data (docs/quantiles.md), or the
    levels unchanged when a level is 0 or 1 (no room for an anchor) or when the common
    denominator would exceed 10^6 (public facts)."""
    if levels[0] == 0 or levels[-1] == 1:
        return levels
    lows, highs = levels[0] / 20, 1 - (1 - levels[-1]) / 20
    out = [lows, *levels, highs]
    try:
        joint_gaps(out)
    except ParameterError:
        return levels
    if len(out) > MAX_JOINT_LEVELS:
        return levels
    return out


def _share(
    progress: Callable[[float], None] | None, k: int, m: int
) -> Callable[[float], None] | None:
    """Level ``k`` of ``m``'s part of one bar: its fraction ``f`` shown as ``(k + f) / m``."""
    if progress is None:
        return None

    def report(fraction: float) -> None:
        progress((k + fraction) / m)

    return report


def charge_kind(chosen: str) -> Literal["pure", "bounded_range"]:
    """The ledger kind of a method: the tree and the noisy count add discrete Laplace noise
    (pure epsilon-DP, ``eps^2 / 2``-zCDP); the others are exponential mechanisms (bounded
    range, ``eps^2 / 8``-zCDP, seed 004)."""
    return "pure" if chosen in ("tree", "count") else "bounded_range"


@dataclass(frozen=True)
class _Plan:
    """One multi-quantile mechanism ready to run, with what the result says about it."""

    run: Callable[[F64], list[float]]
    name: str
    text: str
    accuracy: list[str]
    rounding: float | None
    w: float | None
    #: the theorem behind ``accuracy``, with its constants (``to_dict`` only)
    derivation: tuple[str, ...] = ()
    #: how far the accuracy statement lets a value sit from its rank (the tree's leaf width)
    slack: float | None = None


def _tree_plan(
    lo_hi: tuple[float, float],
    levels: list[Fraction],
    eps: Fraction,
    conf: float,
    source: RandomSource | None,
    max_rows: int = 1,
    height: int | None = None,
) -> _Plan:
    b, k = TREE_BRANCHING, TREE_THRESHOLD
    h = TREE_HEIGHT if height is None else height
    mech = make_tree_quantiles(lo_hi, levels, eps, branching=b, height=h, threshold=k,
                               source=source, max_rows=max_rows)  # fmt: skip
    # the mechanism is the row-level tree at eps / r: its accuracy theorem at eps / r
    shape = tree_accuracy(lo_hi, eps / max_rows, conf, b, h, k)
    noise = f"{h} / epsilon" if max_rows == 1 else f"{h} max_rows / epsilon"
    text = (
        f"quantile tree (hierarchical histogram, {b}-ary, {h} levels, {b**h} leaves, exact "
        f"discrete Laplace noise of scale {noise}, consistent counts: Hay et al. 2010) on "
        f"[{lo_hi[0]:g}, {lo_hi[1]:g}]: all {len(levels)} values from one noisy tree"
    )
    line = (
        f"accuracy: with probability at least {conf:.0%} for all values at once, the value for "
        f"q has at most q n + {printed_up(shape.rank_error)} rows below it - "
        f"{printed_up(shape.leaf_width)} and "
        f"at most (1 - q) n + {printed_up(shape.rank_error)} above it + "
        f"{printed_up(shape.leaf_width)} (the leaf "
        f"width; n rows after clamping; every noisy count within {shape.noise_bound} of its "
        "value; docs/quantiles.md, 'the tree'; a loose bound)"
    )
    return _Plan(lambda values: list(mech(values)), "tree", text, [line], None, None,
                 slack=float(shape.leaf_width))  # fmt: skip


def on_grid(
    values: list[float], step: Fraction, lo_hi: tuple[float, float], slack: float
) -> tuple[list[float], str | None]:
    """The released values rounded to the column type's grid (multiples of ``step``: 1 for an
    integer column, ``10^-s`` for ``DECIMAL(p, s)``; public, the schema), kept in the bounds:
    post-processing (:func:`~dpselect.mechanisms.quantile_joint_parameters.round_to_step`, ties
    to even; a monotone map, so the values stay in order).

    Every row lies on the grid. A statement "at most ``q n + margin`` rows lie below ``v - a``
    and at most ``(1 - q) n + margin`` above ``v + a``" still holds for the rounded ``k`` when
    ``a < step / 2``: rounding down (``k <= v``) only shrinks the rows below ``k - a``, and the
    rows above ``k + a`` are those above ``v + a`` (no grid point lies in ``(k + a, v + a]``,
    an interval inside ``(k, k + step)``); symmetrically when rounding up. With ``a >=
    step / 2`` it holds with ``a + step / 2``, and the returned line says so."""
    lo, hi = lo_hi
    rounded = [round_to_step(v, step, lo, hi) for v in values]
    if slack < step / 2:
        return rounded, None
    return rounded, (
        f"values rounded to the column type's grid (multiples of {float(step):g}, "
        f"post-processing): each value's slack above widens by {float(step) / 2:g}"
    )


def _joint_plan(
    lo_hi: tuple[float, float],
    levels: list[Fraction],
    eps: Fraction,
    conf: float,
    resolution: float | None,
    anchor: bool,
    source: RandomSource | None,
    work_progress: Callable[[float], None] | None,
    max_rows: int = 1,
    step: Fraction | None = None,
) -> _Plan:
    # its own default (docs/quantiles.md), from the column type's step (public, the schema) or
    # the per-row epsilon the mechanism runs at
    w = _joint_resolution(resolution, *lo_hi, eps / max_rows, step)
    run_levels = anchored_levels(levels) if anchor else levels  # public: levels, epsilon
    anchors = len(run_levels) - len(levels)
    joint_mech = make_joint_quantiles(
        lo_hi, run_levels, eps, resolution=w, source=source, progress=work_progress,
        max_rows=max_rows,
    )  # fmt: skip
    eps_row = eps / max_rows  # the accuracy theorem of the row-level mechanism it runs
    text = (
        f"joint exponential mechanism (Gillenwater, Joseph, Kulesza 2021) on [{lo_hi[0]:g}, "
        f"{lo_hi[1]:g}]: all {len(levels)} values in one draw"
    )
    accuracy = joint_accuracy(lo_hi, run_levels, eps_row, conf, w)
    derivation = tuple(joint_accuracy_derivation(lo_hi, run_levels, eps_row, conf, w))
    if anchors:
        text += (
            f", with two anchor levels {float(run_levels[0]):g} and {float(run_levels[-1]):g}"
            f" drawn too and not released (epsilon below {JOINT_ANCHOR_EPSILON:g}: "
            "docs/quantiles.md)"
        )
        accuracy = [*accuracy, _ANCHOR_NOTE]

    def run(values: F64) -> list[float]:
        out = list(joint_mech(values))
        return out[1:-1] if anchors else out

    loss = float_up(joint_rounding_loss(len(run_levels)))
    return _Plan(run, "joint", text, accuracy, loss, w, derivation)


#: :func:`joint_resolution`, kept for the public parameters seen last (each release builds
#: several plans from them).
_joint_resolution = kept(joint_resolution)


@dataclass(frozen=True)
class Picked:
    """What the auto rule's noisy count picked, after the charge: the plan that ran, the noisy
    row count, the note on it and the released grain histogram (if one was drawn)."""

    plan: _Plan
    noisy_rows: int
    note: str
    grains: dict[str, Any] | None = None


@dataclass(frozen=True)
class MethodPlan:
    """The method of one release, built before the charge, with what its result says.

    ``run(values)`` returns the released values and, for the auto rule's noisy count, what
    it picked (``None`` otherwise); ``w`` is the resolution the result reports and
    ``grid_w`` the one the engine's grid is asked for
    (:meth:`dpselect.data.engine.Engine.grid_width`).
    """

    run: Callable[[F64], tuple[list[float], Picked | None]]
    text: str
    split: str
    each: Fraction
    accuracy: list[str]
    rounding: float | None
    w: float | None
    grid_w: float | None
    derivation: tuple[str, ...] = ()
    #: the tree's leaf width, when the tree may run
    tree_slack: float | None = None
    #: the release's stages (:func:`~dpselect.planning.quantile_plan.plan_quantile_method`)
    stages: tuple[Stage, ...] = ()


def _unpicked(run: Callable[[F64], list[float]]) -> Callable[[F64], tuple[list[float], None]]:
    """``run`` as a plan's run: the values, and no pick (no noisy count)."""

    def ran(values: F64) -> tuple[list[float], None]:
        return run(values), None

    return ran


def one_draw_plan(
    query: QuantileQuery,
    first: _Plan,
    tree_plan: _Plan | None,
    run: Callable[[F64], tuple[list[float], Picked | None]],
    each: Fraction,
    split: str,
) -> MethodPlan:
    """The plan of a one-draw method (the tree, the joint mechanism, or the auto rule's choice
    between them), stated as ``first`` states it until the noisy count picks."""
    return MethodPlan(
        run, first.text, split, each, first.accuracy, first.rounding, first.w,
        first.w if first.w is not None else query.w, first.derivation,
        None if tree_plan is None else tree_plan.slack,
    )  # fmt: skip


def single_plan(
    query: QuantileQuery,
    planned: QuantileMethodPlan,
    source: RandomSource | None,
    work_progress: Callable[[float], None] | None,
) -> MethodPlan:
    """``mechanism="tree"`` or ``"joint"``: one mechanism for all levels at the whole epsilon
    (``planned.each``)."""
    assert query.lo_hi is not None
    eps, r = planned.each, query.rows
    if query.chosen == "tree":
        first = _tree_plan(query.lo_hi, query.levels, eps, query.conf, source, r)
    else:
        # No anchors: they serve small eps n, where the auto rule runs the tree
        # (docs/quantiles.md, "Anchor levels"); _joint_plan(anchor=True) serves the tests.
        first = _joint_plan(query.lo_hi, query.levels, eps, query.conf, query.resolution, False,
                            source, work_progress, r, query.step)  # fmt: skip
    split = "one mechanism for all levels: the whole epsilon, no split"
    tree = first if query.chosen == "tree" else None
    return one_draw_plan(query, first, tree, _unpicked(first.run), eps, split)


def recursive_plan(
    query: QuantileQuery,
    planned: QuantileMethodPlan,
    source: RandomSource | None,
    work_progress: Callable[[float], None] | None,
) -> MethodPlan:
    """The recursive algorithm (Kaplan, Schnapp, Stemmer 2022): rounds of the continuous
    mechanism on disjoint parts of the rows, ``planned.each`` a round."""
    lo_hi, levels, w, r = query.lo_hi, query.levels, query.w, query.rows
    assert lo_hi is not None and w is not None
    depth = recursive_depth(len(levels))
    each = planned.each
    joint = make_recursive_quantiles(
        lo_hi, levels, planned.epsilon, resolution=w, source=source, progress=work_progress,
        max_rows=r,
    )  # fmt: skip
    text = (
        f"recursive quantiles (Kaplan, Schnapp, Stemmer 2022) on [{lo_hi[0]:g}, "
        f"{lo_hi[1]:g}]: {depth} rounds of the continuous exponential mechanism"
    )
    split = (
        f"{depth} rounds of epsilon / {depth} = {float(each):.6g}, each round on disjoint "
        "parts of the rows (parallel composition)"
    )
    accuracy = recursive_accuracy(lo_hi, levels, planned.epsilon / r, query.conf, w)
    return MethodPlan(_unpicked(lambda values: list(joint(values))), text, split, each,
                      accuracy, float_up(ROUNDING_LOSS), w, w)  # fmt: skip


def split_plan(
    query: QuantileQuery,
    planned: QuantileMethodPlan,
    source: RandomSource | None,
    work_progress: Callable[[float], None] | None,
) -> MethodPlan:
    """Basic composition: one mechanism per level at ``planned.each``, ``epsilon / m``
    (candidates, or the continuous mechanism on rows sorted once)."""
    levels, cands, lo_hi, w, r = query.levels, query.cands, query.lo_hi, query.w, query.rows
    each = planned.each
    split = (
        "one quantile"
        if len(levels) == 1
        else f"basic composition: epsilon / {len(levels)} = {float(each):.6g} per quantile"
    )
    rounding: float | None = None
    if cands is not None:
        # every level from one sort of the rows (the same draws as one mechanism a level)
        ms = [make_candidate_quantiles(cands, levels, each, source=source, max_rows=r)]
        text = f"exponential mechanism over {len(cands)} public candidates"
        accuracy = [candidate_line(lv, each / r, len(cands), query.conf) for lv in levels]
    else:
        assert lo_hi is not None and w is not None
        # The recipe owns the fetched array: sorted once, then clamped in place (same bounds
        # for every level, so each sees the same multiset of values, in order).
        ms = [
            make_continuous_quantile(
                lo_hi, lv, each, resolution=w, source=source, overwrite_input=True,
                progress=_share(work_progress, k, len(levels)), max_rows=r, presorted=True,
            )
            for k, lv in enumerate(levels)
        ]  # fmt: skip
        text = (
            f"continuous exponential mechanism on [{lo_hi[0]:g}, {lo_hi[1]:g}] "
            "(Smith 2011), ties included"
        )
        accuracy = [continuous_line(lv, each / r, lo_hi, query.conf, w) for lv in levels]
        rounding = float_up(ROUNDING_LOSS)
    run = _per_level_run(ms, presort=cands is None)
    return MethodPlan(_unpicked(run), text, split, each, accuracy, rounding, w, w)


def _per_level_run(ms: Sequence[Callable[..., Any]], presort: bool) -> Callable[[F64], list[float]]:
    """Run each level's mechanism on the rows (sorted once first for the continuous one)."""

    def run(values: F64) -> list[float]:
        if presort:  # the fetched array is the recipe's own: sorted in place if it can be
            if values.flags.writeable:
                values.sort()
            else:
                values = np.sort(values)
        out: list[float] = []
        for m in ms:
            got = m(values)
            out.extend(float(v) for v in (got if isinstance(got, list) else [got]))
        return out

    return run
