"""Private quantiles and medians: the recipe (docs/quantiles.md has every proof).

- **With bounds** ``(lo, hi)``: the continuous exponential mechanism with the tie-aware rank
  excess and a public resolution ``w`` (:mod:`dpselect.mechanisms.quantile_continuous`): a
  value many rows hold is a likely output, linear time (``np.partition``), float log-weights
  with a bound charged in epsilon.
- **With candidates**: the exponential mechanism over the public list with the same score
  (:mod:`dpselect.mechanisms.quantile_candidates`), scores from one sort.
- **Several levels**: with bounds and ``2 <= m <= JOINT_AUTO_MAX_LEVELS`` levels,
  ``TREE_COUNT_FRACTION`` (1/20) of epsilon goes to a noisy row count ``N`` and the rest
  ``eps'`` to the quantile tree (:mod:`dpselect.mechanisms.quantile_tree`: a hierarchical
  histogram with exact discrete Laplace noise) if ``eps' N < TREE_AUTO_LIMIT`` (700), else to
  the joint exponential mechanism of Gillenwater, Joseph and Kulesza (2021)
  (:mod:`dpselect.mechanisms.quantile_joint`: all levels in one draw); one charge for both
  parts, made before any row is read. Above 20 levels the recursive algorithm of Kaplan,
  Schnapp and Stemmer (2022) (:mod:`dpselect.mechanisms.quantile_recursive`); basic
  composition (``epsilon / m`` each) on request (``mechanism="split"``) and with candidates. The
  rule reads ``m``, epsilon and the paid count ``N`` only; docs/quantiles.md has the
  evidence.

Every accuracy line printed is the conclusion of a theorem in docs/quantiles.md, checked by
simulation on adversarial data in tests/recipes/test_quantiles_accuracy.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ..core.arithmetic import float_down, float_up, printed_up
from ..core.domains import atom_domain
from ..core.errors import DataError, ParameterError
from ..core.metrics import L1Distance
from ..core.public_memo import kept
from ..data.candidates import load_candidates
from ..data.column_roles import check_column_role, recorded_step
from ..data.engine import Engine
from ..data.query import PrivateGroups, PublicGroups, Query, UnitRule
from ..data.tables import one_column, open_table
from ..mechanisms.decimal_grain import grain_exponents, make_grain_histogram, recorded_exponent
from ..mechanisms.laplace import make_laplace
from ..mechanisms.quantile_candidates import (
    candidate_accuracy,
    make_candidate_quantile,
    make_candidate_quantiles,
)
from ..mechanisms.quantile_continuous import (
    ROUNDING_LOSS,
    check_bounds,
    check_resolution,
    continuous_accuracy,
    make_continuous_quantile,
)
from ..mechanisms.quantile_joint import (
    joint_accuracy,
    joint_accuracy_derivation,
    joint_rows_bound,
    make_joint_quantiles,
)
from ..mechanisms.quantile_joint_parameters import (
    MAX_JOINT_LEVELS,
    decimal_step,
    joint_gaps,
    joint_resolution,
    joint_rounding_loss,
    recorded_resolution,
    round_to_step,
)
from ..mechanisms.quantile_recursive import (
    make_recursive_quantiles,
    recursive_accuracy,
    recursive_alphas,
    recursive_depth,
)
from ..mechanisms.quantile_score import (
    check_max_rows,
    quantile_fraction,
    rank_excess_of_candidates,
    score_sensitivity,
)
from ..mechanisms.quantile_tree import make_tree_quantiles, tree_accuracy
from ..mechanisms.validate import check_delta, check_int, check_user_epsilon
from ..planning.contributions import Contributions, merged
from ..sampling.source import RandomSource, resolve_source
from ._common import (
    CONFIDENCE,
    NUMERIC_TYPES,
    check_confidence,
    jsonable,
    numeric_column,
    open_ledger,
)
from .bounds import bound_bins, bounds_choice_cost, choose_bounds
from .epsilon_range import check_epsilon_range, stages_of_a_release
from .grouping import (
    GroupedResult,
    charge_grouped,
    check_groups,
    chosen_by_text,
    composition_text,
    draw_salts,
    group_selection,
    selected_groups,
    split_budget,
    total_cost,
)
from .release import charge_then_release, open_checked
from .result import Result

__all__ = [
    "QuantileResult",
    "auto_bound_levels",
    "make_candidate_quantile",
    "make_continuous_quantile",
    "quantile",
    "quantile_fraction",
    "quantile_scores",
    "quantile_values",
    "quantile_with_auto_bounds",
    "quantile_with_auto_rows",
    "score_sensitivity",
]

F64 = npt.NDArray[np.float64]
#: ``mechanism="auto"`` uses the joint mechanism for 2 to this many levels (docs/quantiles.md).
JOINT_AUTO_MAX_LEVELS = 20
_METHODS = ("auto", "split", "recursive", "joint", "tree")
#: The tree's shape (public): branching ``b`` and height ``h`` (``b^h`` leaves), and the
#: descent's threshold in standard deviations (docs/quantiles.md, "the tree").
TREE_BRANCHING, TREE_HEIGHT, TREE_THRESHOLD = 8, 2, 1.0
#: ``mechanism="auto"`` (2 to 20 levels with bounds) spends this share of epsilon on a noisy
#: row count ``N``, then runs the tree if ``eps' N < TREE_AUTO_LIMIT`` (``eps'`` the rest of
#: epsilon), else the joint mechanism (docs/quantiles.md, "Choosing the method").
TREE_COUNT_FRACTION = Fraction(1, 20)
TREE_AUTO_LIMIT = 700
_TEXT_SUFFIXES = (".csv", ".tsv", ".json", ".jsonl", ".ndjson", ".csv.gz", ".tsv.gz")


def quantile_scores(values: Any, candidates: Any, q: Any) -> list[int]:
    """The score ``-s(x, c)`` (minus the rank excess) of each candidate, from one sort.

    Parameters
    ----------
    values : array_like of float
        The data (the private rows; NaN dropped).
    candidates : array_like of float
        The candidate values.
    q : float or Fraction
        The quantile level in ``[0, 1]``, read as ``a / b``
        (:func:`~dpselect.mechanisms.quantile_score.quantile_fraction`).

    Returns
    -------
    list of int
        ``-s(x, c)`` for each candidate in the order given: 0 at a ``q``-quantile, else minus
        ``b`` times the rows too many on one side.
    """
    level = quantile_fraction(q)
    return [-int(s) for s in rank_excess_of_candidates(values, candidates, level)]


def _numeric_candidates(candidates: Any) -> list[float]:
    values = load_candidates(candidates)
    out: list[float] = []
    for v in values:
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise ParameterError(f"candidates must be numbers, got {v!r}") from None
        if not math.isfinite(f):
            raise ParameterError(f"candidates must be finite numbers, got {v!r}")
        out.append(f)
    if len(set(out)) != len(out):
        raise ParameterError("candidates must be distinct numbers")
    return out


# ----------------------------------------------------------------------------- the column
def check_numeric_column(table: Engine, data: Any, column: str) -> str | None:
    """Refuse a column whose known type is not numeric; a note for untyped text columns.

    Decided from the public schema only, before anything is charged.
    """
    kind = check_column_role(table, column, "numeric").upper()
    if kind.startswith(NUMERIC_TYPES):
        return None
    if table.column_type_known(column) or not kind.startswith("VARCHAR"):
        raise DataError(f"column {column!r} has type {kind}: a quantile needs a numeric column")
    return (
        f"note: column {column!r} is text (CSV/JSON columns have no type): values that do not "
        f"parse as numbers were counted as missing; declare the type with --schema "
        f"{column}:DOUBLE (Python: schema={{{column!r}: 'DOUBLE'}})"
    )


def check_rows_per_unit(privacy_unit: Any, max_rows: Any) -> int | Literal["auto"]:
    """``max_rows`` checked from public facts: ``"auto"`` or an int at least 1, given only with a
    ``privacy_unit`` (default 1 with one; without one each row is its own unit: 1)."""
    if max_rows is None:
        return 1
    if privacy_unit is None:
        raise ParameterError(
            "max_rows applies only with a privacy_unit column (without one each row is its own "
            "unit and counts once)"
        )
    if isinstance(max_rows, str):
        if max_rows != "auto":
            raise ParameterError(f"max_rows must be an int >= 1 or 'auto', got {max_rows!r}")
        return "auto"
    return check_max_rows(max_rows)


def check_unit_column(table: Engine, privacy_unit: str | None, max_rows: int) -> list[str]:
    """The privacy unit's column through the column gate and its injective key (public facts,
    before any charge); the note the result shows about it (none without a unit)."""
    if privacy_unit is None:
        return []
    check_column_role(table, privacy_unit, "unit", "privacy_unit")
    table.unit_column(privacy_unit)
    return [
        f"privacy unit: {privacy_unit!r} (epsilon protects all the rows of one unit); each unit "
        f"keeps at most max_rows = {max_rows} rows, chosen by the salted keyed rule "
        "(docs/contribution_bounding.md, 'Rows per unit'); n in the accuracy lines counts the "
        "kept rows"
    ]


def _per_row(epsilon: Fraction, max_rows: int) -> str:
    """The row-level epsilon of the auto rule as printed: ``eps`` or ``(eps / r)``."""
    if max_rows == 1:
        return f"{float(epsilon):.6g}"
    return f"({float(epsilon):.6g} / {max_rows})"


def quantile_values(
    table: Engine, column: str, progress: Callable[[float], None] | None = None
) -> F64:
    """The column as float64; NULL, NaN and text that does not parse are dropped row by row
    (:meth:`dpselect.data.engine.Engine.quantile_values` without candidates or bounds: every
    row's value; ``TRY_CAST`` maps each row on its own, a 1-stable map). ``progress(percent)``
    is polled while the scan runs.

    Parameters
    ----------
    table : Engine
        The opened table (:func:`dpselect.data.tables.open_table`).
    column : str
        The numeric column.
    progress : callable, optional
        ``progress(percent)``, polled during the scan.

    Returns
    -------
    numpy.ndarray of float64
        Every row's value that holds a number, in no particular order (private data).
    """
    return table.quantile_values(Query(column, progress=progress))


# ----------------------------------------------------------------------------- the result
@dataclass(frozen=True)
class QuantileResult(Result):
    """Private quantiles: the values released, what they cost, how accurate they are.

    Attributes
    ----------
    q : list of float
        The levels asked for, in the order given.
    values : list of float
        The released value of each level, in the order of ``q`` (on the column type's grid
        for an integer or decimal column).
    method : str
        The mechanism that ran, in words (with its bounds or candidates).
    epsilon : float
        The total privacy cost charged (at distance 1: one unit added or removed).
    epsilon_each : float
        The epsilon of one mechanism run (the whole epsilon, less the share of a noisy row
        count, for the one-draw methods; ``epsilon / m`` for a split).
    budget_split : str
        How epsilon was shared between the stages, in words.
    accuracy : list of str
        The accuracy statements (one per level, or one for all levels), each the conclusion
        of a theorem in docs/quantiles.md at the stated confidence.
    levels : list of str
        The levels as exact fractions (``"1/2"``), as the mechanisms used them.
    rounding_loss : float or None
        The part of epsilon that pays for float log-weights (``None``: none, for the tree and
        the exact candidate mechanism).
    resolution : float or None
        The public resolution ``w`` of the continuous mechanisms (``None`` for candidates
        and the tree).
    notes : list of str
        Notes on the input and the rules that applied (the privacy unit's row bound, the
        noisy row count and the method it picked).
    ledger : str or None
        The path of the ledger charged (``None``: no ledger).
    parameters : dict
        The public parameters of the release as recorded in the ledger, and what a stage
        released (the noisy row count, the grain histogram).
    derivation : list of str
        The accuracy theorem evaluated in numbers, with its constants (in ``to_dict`` and
        ``--json``, not in ``str``).
    """

    q: list[float]
    values: list[float]
    method: str
    epsilon: float
    epsilon_each: float
    budget_split: str
    accuracy: list[str]
    levels: list[str]
    rounding_loss: float | None = None
    resolution: float | None = None
    notes: list[str] = field(default_factory=list)
    ledger: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    #: the theorem behind an accuracy line evaluated in numbers, with its constants (shown by
    #: ``to_dict`` and ``--json``, not by ``str``)
    derivation: list[str] = field(default_factory=list)

    def _dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (with ``rounding_loss``, the part of epsilon that pays for
        float log-weights, and ``derivation``)."""
        out = asdict(self)
        out["values"] = [jsonable(v) for v in self.values]
        return out

    def _rows(self) -> list[dict[str, Any]]:
        values = self.to_dict()["values"]
        return [{"q": q, "value": v} for q, v in zip(self.q, values, strict=True)]

    def _text(self) -> str:
        lines = [f"q = {q:g}: {v:.10g}" for q, v in zip(self.q, self.values, strict=True)]
        lines.append(f"mechanism: {self.method}")
        # rounding_loss (the share of epsilon that pays for float log-weights) is left to
        # to_dict: it is inside epsilon and changes nothing a reader can use (issue 27)
        lines.append(f"privacy cost: epsilon = {self.epsilon:.6g} ({self.budget_split})")
        lines.extend(self.accuracy)
        lines.extend(self.notes)
        return "\n".join(lines)


def _levels(q: Any) -> tuple[list[float], list[Fraction]]:
    qs: list[Any] = list(q) if isinstance(q, (list, tuple)) else [q]
    if not qs:
        raise ParameterError("q must be a number in [0, 1] or a non-empty list of them")
    levels = [quantile_fraction(v) for v in qs]
    return [float(v) for v in qs], levels


def _continuous_line(
    level: Fraction,
    eps: Fraction,
    lo_hi: tuple[float, float],
    conf: float,
    w: float,
    grid: float | None = None,
) -> str:
    """The accuracy line; ``grid``: the Spark engine's cell width ``d`` (rows rounded down to
    a public grid first: each moves down by less than ``d``, so the upper side widens by d)."""
    acc = continuous_accuracy(lo_hi, level, eps, conf, w)
    q = float(level)
    above, where = "2w", ""
    if grid is not None:
        above = "2w + d"
        where = (
            f"; the Spark engine rounds each row down to a grid of cells at most d = "
            f"{grid:.3g} wide, docs/spark.md"
        )
    return (
        f"accuracy (q = {q:g}): with probability at least {conf:.0%}, at most {q:g} n + "
        f"{printed_up(acc.alpha)} rows lie below the value - 2w and at most {1 - q:g} n + "
        f"{printed_up(acc.alpha)} above the value + {above} (n rows after clamping to the bounds, "
        f"resolution w = {printed_up(w, 3)}; ties included; continuous exponential mechanism, "
        f"Smith 2011, docs/quantiles.md{where})"
    )


def _grid_line(grid: float, method: str) -> str:
    """What the Spark engine's grid changes in the statement of the recursive or joint method
    (the statement holds for the rows rounded down to the grid; each real row lies less than
    ``d`` above its rounded value)."""
    if method == "recursive":
        return (
            f"  (Spark engine: rows are rounded down to a grid of cells at most d = {grid:.3g} "
            "wide first, each moving down by less than d: read 'above it + 2w + d', and B "
            "counts the rows within 2w below and 2w + d above the other values; docs/spark.md)"
        )
    return (
        f"  (Spark engine: the statement is about the rows rounded down to a grid of cells at "
        f"most d = {grid:.3g} wide; a real row lies less than d above its rounded value, so it "
        "is counted in another gap than its rounded value only when it lies within d above a "
        "released value; docs/spark.md)"
    )


def _candidate_line(level: Fraction, eps: Fraction, m: int, conf: float) -> str:
    alpha = candidate_accuracy(level, eps, m, conf)
    q = float(level)
    return (
        f"accuracy (q = {q:g}): with probability at least {conf:.0%}, the chosen candidate's "
        f"rank excess max(0, #below - {q:g} n, #above - {1 - q:g} n) is within {printed_up(alpha)} "
        f"rows of the best candidate's (exponential mechanism utility theorem, {m} "
        "candidates)"
    )


#: Until the tree: ``mechanism="auto"`` added two anchor levels to the joint mechanism below this
#: epsilon (docs/quantiles.md, "Anchor levels"; no longer used by the recipe).
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
) -> _Plan:
    b, h, k = TREE_BRANCHING, TREE_HEIGHT, TREE_THRESHOLD
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

    Every row lies on the grid. A statement "at most ``q n + alpha`` rows lie below ``v - a``
    and at most ``(1 - q) n + alpha`` above ``v + a``" still holds for the rounded ``k`` when
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


def _choose_method(method: str, m: int, bounds: bool) -> str:
    if method not in _METHODS:
        raise ParameterError(
            f"mechanism must be one of {', '.join(repr(x) for x in _METHODS)}, got {method!r}"
        )
    if method in ("recursive", "joint", "tree") and not bounds:
        raise ParameterError(f"mechanism={method!r} needs bounds (not candidates)")
    if method == "joint" and m > MAX_JOINT_LEVELS:
        raise ParameterError(f"mechanism='joint' takes at most {MAX_JOINT_LEVELS} levels, got {m}")
    if method != "auto":
        return method
    # Public parameters only (m): docs/quantiles.md, "Choosing the method", has the evidence.
    if not bounds or m == 1:
        return "split"
    if m <= JOINT_AUTO_MAX_LEVELS:
        return "count"  # a paid noisy row count picks the tree or the joint mechanism
    return "recursive" if recursive_depth(m) < m else "split"


def quantile(
    data: Any,
    column: str | None,
    q: float | Sequence[float],
    epsilon: float,
    bounds: tuple[float, float] | str | None = None,
    candidates: Any = None,
    confidence: float = CONFIDENCE,
    ledger: Any = None,
    source: RandomSource | None = None,
    resolution: float | None = None,
    mechanism: str = "auto",
    progress: Callable[[float], None] | None = None,
    schema: Any = None,
    auto_fraction: float | None = None,
    work_progress: Callable[[float], None] | None = None,
    privacy_unit: str | None = None,
    max_rows: int | str | None = None,
    by: str | None = None,
    groups: Any = None,
    max_groups: int = 1,
    group_fraction: float | None = None,
    delta: float | None = None,
    contributions: Contributions | None = None,
) -> Any:
    """The ``q``-quantile(s) of a numeric ``column``, privately (``q = 0.5``: the median).

    Give ``candidates`` (a public list or a text file of numbers) or ``bounds=(lo, hi)`` (the
    continuous mechanism; rows clamped; ``resolution`` the public ``w``, default ``(hi - lo) /
    10^6``; for the joint method half the power of ten at most ``(hi - lo) / 600 / max(1,
    eps')``, values rounded to it). ``q`` may be a list: ``mechanism`` "auto" picks, with bounds,
    for 2 to 20 levels the quantile tree or the joint exponential mechanism (Gillenwater,
    Joseph, Kulesza 2021) by a noisy row count paid with 1/20 of epsilon (module docstring),
    and the recursive algorithm (Kaplan, Schnapp, Stemmer 2022) for more; "tree", "joint",
    "recursive" and "split" (basic composition, ``epsilon / m`` each) choose one. ``epsilon``
    is the total pure-DP cost under adding or removing one row; the ledger is charged durably
    before the data are read (as pure DP for the tree and the auto rule's count, else as
    bounded range). Rows with NULL, NaN or (text columns of CSV/JSON) text that is not a number are
    dropped. ``progress(percent)`` is called while the column is scanned,
    ``work_progress(fraction)`` while the mechanism works (not for candidates: one sort).
    ``source`` is for tests and demos only. ``schema``: declared column types (see
    :func:`dpselect.data.tables.open_table`).

    ``bounds="auto"``: the bounds are chosen privately first with ``auto_fraction`` (default
    0.25) of ``epsilon`` (:func:`quantile_with_auto_bounds`), one composed charge.

    ``privacy_unit``: a column identifying people; ``epsilon`` then protects one person (all
    their rows added or removed), not one row. Each person keeps at most ``max_rows`` rows
    (default 1), chosen by the salted keyed rule of docs/contribution_bounding.md ("Rows per
    unit"), which reads only that person's rows; the rank scores then move by at most
    ``max_rows``, and every method is calibrated for it (it runs at ``epsilon / max_rows`` per
    row: group privacy; docs/quantiles.md, "Privacy units"). The accuracy lines count the kept
    rows. ``max_rows="auto"`` chooses the bound privately first with ``auto_fraction`` of
    ``epsilon`` (:func:`quantile_with_auto_rows`), one composed charge. ``max_rows`` without a
    ``privacy_unit`` is refused (each row is then its own unit).

    ``data`` may also be a DuckDB relation, or one column of values: a pandas (or polars)
    Series or a 1-D NumPy array, with ``column=None`` (or the Series' name).

    Parameters
    ----------
    data : str, path, DataFrame, relation, Series or array
        The private rows, as for :func:`dpselect.top_k`.
    column : str or None
        A numeric column.
    q : float or list of float
        The quantile level(s) in [0, 1] (0.5: the median).
    epsilon : float
        The total privacy cost at distance 1.
    bounds : (float, float) or "auto", optional
        Public clamping bounds (``"auto"``: chosen privately); or give ``candidates``.
    candidates : list, optional
        Public candidate values (instead of ``bounds``).
    confidence : float, default 0.95
        The confidence of the accuracy statements.
    mechanism : str, default "auto"
        ``"auto"``, ``"tree"``, ``"joint"``, ``"recursive"`` or ``"split"``.
    ledger, source, resolution, progress, schema, auto_fraction, work_progress
        The budget ledger, the randomness (tests only), the output grid, progress callbacks,
        declared column types and the share of ``epsilon`` for ``bounds="auto"``.
    privacy_unit : str, optional
        The column identifying people (each row is a person without it).
    max_rows : int or "auto", optional
        The most rows one person keeps (default 1 with a ``privacy_unit``; ``"auto"``: chosen
        privately).
    by, groups, max_groups, group_fraction
        A column of groups: the quantiles of every group in one scan
        (:func:`dpselect.recipes.grouped.grouped_quantile`), as for :func:`dpselect.top_k`.
    delta : float, optional
        With ``by`` and private groups only: the delta of their selection.
    contributions : Contributions, optional
        Every contribution bound as one value (:class:`~dpselect.Contributions`; each row is
        one value, so ``values_per_unit`` is the most rows a unit keeps), in place of
        ``max_rows``, ``max_groups``, ``auto_fraction`` and ``group_fraction`` (giving both
        is refused).

    Returns
    -------
    QuantileResult or GroupedResult
        The released values, the method, the cost and one accuracy line per level (with
        ``by``: one per group).

    Raises
    ------
    ParameterError, DataError, BudgetExceeded
        Invalid parameters, unusable data or budget left, before any budget is spent.

    Examples
    --------
    >>> import pandas as pd
    >>> import dpselect as dp
    >>> from dpselect.sampling import InsecureSeededSource  # reproducible, not private
    >>> values = pd.Series([float(i) for i in range(1, 1001)])
    >>> result = dp.quantile(values, None, q=0.5, epsilon=1.0, bounds=(0, 1000),
    ...                      source=InsecureSeededSource(1))
    >>> result.values
    [501.463]
    """
    method = mechanism
    data, column = one_column(data, column)
    bound_args = merged(
        contributions, "quantile", privacy_unit,
        {"max_rows": max_rows, "max_groups": max_groups, "auto_fraction": auto_fraction,
         "group_fraction": group_fraction},
        {"max_rows": None, "max_groups": 1, "auto_fraction": None, "group_fraction": None},
        by=by, groups=groups, auto_bounds=isinstance(bounds, str) and bounds == "auto",
    )  # fmt: skip
    max_rows, max_groups = bound_args["max_rows"], bound_args["max_groups"]
    auto_fraction, group_fraction = bound_args["auto_fraction"], bound_args["group_fraction"]
    if by is not None:
        if auto_fraction is not None or work_progress is not None or progress is not None:
            raise ParameterError("auto_fraction and progress callbacks do not apply with by")
        if max_rows == "auto":
            raise ParameterError("max_rows='auto' is not available with by: give a number")
        options: dict[str, Any] = {"mechanism": method, "confidence": confidence}
        for key, value in (("bounds", bounds), ("candidates", candidates),
                           ("resolution", resolution)):  # fmt: skip
            if value is not None:
                options[key] = value
        return grouped_quantile(
            data, column, q, epsilon, by=by, groups=groups, delta=delta,
            privacy_unit=privacy_unit, max_groups=max_groups,
            max_rows=1 if max_rows is None else int(max_rows), group_fraction=group_fraction,
            ledger=ledger, source=source, schema=schema, **options,
        )  # fmt: skip
    from .grouping import check_no_grouping

    check_no_grouping(groups, max_groups, group_fraction)
    if delta is not None:
        raise ParameterError("delta applies to quantile only with by and private groups")
    rows = check_rows_per_unit(privacy_unit, max_rows)
    if rows == "auto":
        assert privacy_unit is not None
        return quantile_with_auto_rows(
            data, column, q, epsilon, privacy_unit, bounds=bounds, candidates=candidates,
            confidence=confidence, ledger=ledger, source=source, resolution=resolution,
            mechanism=method, progress=progress, schema=schema, auto_fraction=auto_fraction,
        )  # fmt: skip
    r = int(rows)
    if isinstance(bounds, str):
        if bounds != "auto":
            raise ParameterError(f"bounds must be a pair (lo, hi) or 'auto', got {bounds!r}")
        return quantile_with_auto_bounds(
            data, column, q, epsilon, candidates=candidates, confidence=confidence,
            ledger=ledger, source=source, resolution=resolution, mechanism=method,
            progress=progress, schema=schema, auto_fraction=auto_fraction,
            privacy_unit=privacy_unit, max_rows=None if privacy_unit is None else r,
        )  # fmt: skip
    if auto_fraction is not None:
        raise ParameterError("auto_fraction applies only with bounds='auto'")
    eps = Fraction(check_user_epsilon(epsilon))
    check_epsilon_range(eps)
    given, levels = _levels(q)
    conf = check_confidence(confidence)
    if (bounds is None) == (candidates is None):
        raise ParameterError(
            "give exactly one of bounds=(lo, hi) (continuous mechanism) and candidates "
            "(a public list of numbers)"
        )
    cands = _numeric_candidates(candidates) if candidates is not None else None
    lo_hi = check_bounds(bounds) if bounds is not None else None
    if resolution is not None and lo_hi is None:
        raise ParameterError("resolution applies to bounds (the continuous mechanism) only")
    w = check_resolution(resolution, *lo_hi) if lo_hi is not None else None
    chosen = _choose_method(method, len(levels), lo_hi is not None)
    if chosen == "tree" and resolution is not None:
        raise ParameterError("resolution does not apply to mechanism='tree' (its leaves are fixed)")
    grid_w = w  # the Spark engine's grid (docs/spark.md)
    rounding: float | None = None
    # the schema only, before anything is charged (the joint mechanism's default resolution
    # reads the grid the column's type puts values on)
    table = open_table(data, schema=schema)
    note = check_numeric_column(table, data, column)
    unit_note = check_unit_column(table, privacy_unit, r)
    step = recorded_step(table.require_column(column, "column"))
    derivation: tuple[str, ...] = ()  # the theorem behind an evaluated line (to_dict only)
    late: list[_Plan] = []  # "count": the plan picked after the noisy count (in release)
    late_notes: list[str] = []
    late_count: list[int] = []
    late_grains: list[dict[str, Any]] = []  # the released grain histogram, if one was drawn
    tree_slack: float | None = None  # the tree's leaf width, when the tree may run
    if chosen in ("joint", "tree", "count"):
        assert lo_hi is not None
        each = eps
        if chosen == "count":
            eps_count = eps * TREE_COUNT_FRACTION
            each = eps - eps_count
        tree_plan = joint_plan = None
        if chosen in ("tree", "count"):
            tree_plan = _tree_plan(lo_hi, levels, each, conf, source, r)
        if chosen in ("joint", "count"):
            # No anchors any more: they served small eps n, which the tree now takes
            # (docs/quantiles.md, "Anchor levels"); _joint_plan(anchor=True) is kept for tests.
            joint_plan = _joint_plan(lo_hi, levels, each, conf, resolution, False, source,
                                     work_progress, r, step)  # fmt: skip
        first = tree_plan if chosen == "tree" else joint_plan
        assert first is not None
        tree_slack = None if tree_plan is None else tree_plan.slack
        method_text, accuracy, rounding, w = first.text, first.accuracy, first.rounding, first.w
        derivation = first.derivation
        grid_w = first.w if first.w is not None else grid_w
        split = "one mechanism for all levels: the whole epsilon, no split"
        if chosen == "count":
            assert tree_plan is not None and joint_plan is not None
            count_scale = r / eps_count
            # The row count has sensitivity r (one unit keeps at most r rows; without a unit
            # r = 1): the Laplace mechanism of scale r / eps_count is eps_count-DP (its map at
            # d_in = r; seed 002), exact on the integers.
            noisy_count = make_laplace(atom_domain(int), L1Distance(), count_scale, source=source)
            # A float or text column on an engine that hands over the rows themselves: the
            # same share buys a noisy grain histogram instead, whose sum is the row count and
            # whose bins tell the grid the values were recorded on (decimal_grain).
            grains = None
            if step is None and resolution is None and table.grid_width(lo_hi, None) is None:
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
                f"{_per_row(each, r)} N < {TREE_AUTO_LIMIT}, else the joint mechanism"
            )

            def run(values: F64) -> list[float]:
                if grains is None:
                    noisy_n = int(noisy_count(int(values.shape[0])))
                    counted_line = (
                        f"noisy row count N = {noisy_n} (discrete Laplace of scale "
                        f"{float(count_scale):.6g}, released)"
                    )
                    picked_joint = joint_plan
                else:
                    noisy_n, picked_joint, counted_line, released = grains.run(values)
                    late_grains.append(released)
                # the rule reads the row-level epsilon of the mechanism that runs (eps / r)
                plan = tree_plan if (each / r) * noisy_n < TREE_AUTO_LIMIT else picked_joint
                assert plan is not None
                late.append(plan)
                late_count.append(noisy_n)
                late_notes.append(
                    f"{counted_line}, {_per_row(each, r)} N "
                    f"{'<' if plan is tree_plan else '>='} {TREE_AUTO_LIMIT}: "
                    f"{'the tree' if plan is tree_plan else 'the joint mechanism'} "
                    "(docs/quantiles.md, 'Choosing the method')"
                )
                return plan.run(values)
        else:
            single = first

            def run(values: F64) -> list[float]:
                return single.run(values)
    elif chosen == "recursive":
        assert lo_hi is not None and w is not None
        depth = recursive_depth(len(levels))
        each = eps / depth
        joint = make_recursive_quantiles(
            lo_hi, levels, eps, resolution=w, source=source, progress=work_progress, max_rows=r
        )
        method_text = (
            f"recursive quantiles (Kaplan, Schnapp, Stemmer 2022) on [{lo_hi[0]:g}, "
            f"{lo_hi[1]:g}]: {depth} rounds of the continuous exponential mechanism"
        )
        split = (
            f"{depth} rounds of epsilon / {depth} = {float(each):.6g}, each round on disjoint "
            "parts of the rows (parallel composition)"
        )
        accuracy = recursive_accuracy(lo_hi, levels, eps / r, conf, w)
        rounding = float_up(ROUNDING_LOSS)

        def run(values: F64) -> list[float]:
            return list(joint(values))
    else:
        each = eps / len(levels)
        split = (
            "one quantile"
            if len(levels) == 1
            else f"basic composition: epsilon / {len(levels)} = {float(each):.6g} per quantile"
        )
        presort = False
        if cands is not None:
            # every level from one sort of the rows (the same draws as one mechanism a level)
            ms = [make_candidate_quantiles(cands, levels, each, source=source, max_rows=r)]
            method_text = f"exponential mechanism over {len(cands)} public candidates"
            accuracy = [_candidate_line(lv, each / r, len(cands), conf) for lv in levels]
        else:
            assert lo_hi is not None and w is not None
            # The recipe owns the fetched array: sorted once, then clamped in place (same bounds
            # for every level, so each sees the same multiset of values, in order).
            presort = True
            ms = [
                make_continuous_quantile(
                    lo_hi,
                    lv,
                    each,
                    resolution=w,
                    source=source,
                    overwrite_input=True,
                    progress=_share(work_progress, k, len(levels)),
                    max_rows=r,
                    presorted=True,
                )
                for k, lv in enumerate(levels)
            ]
            method_text = (
                f"continuous exponential mechanism on [{lo_hi[0]:g}, {lo_hi[1]:g}] "
                "(Smith 2011), ties included"
            )
            accuracy = [_continuous_line(lv, each / r, lo_hi, conf, w) for lv in levels]
            rounding = float_up(ROUNDING_LOSS)

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

    grid_note: float | None = None
    # rows rounded to a public grid by the engine (Spark): an extra accuracy error
    width = None if lo_hi is None or grid_w is None else table.grid_width(lo_hi, grid_w)
    if width is not None and lo_hi is not None:
        d = float(width)
        if chosen in ("recursive", "joint", "tree", "count"):
            grid_note = d
            accuracy = [*accuracy, _grid_line(d, chosen)]
        else:
            assert w is not None
            accuracy = [_continuous_line(lv, each / r, lo_hi, conf, w, grid=d) for lv in levels]
    book = open_ledger(ledger)
    parameters = {
        "column": column,
        "q": [float(lv) for lv in levels],
        "epsilon": float(eps),
        "bounds": list(lo_hi) if lo_hi is not None else None,
        "resolution": w,
        "method": "auto: tree or joint by a noisy row count" if chosen == "count" else chosen,
        "n_candidates": None if cands is None else len(cands),
    }
    if privacy_unit is not None:
        parameters.update(privacy_unit=privacy_unit, max_rows=r)

    def release() -> QuantileResult:
        # the rows as the mechanism needs them (Spark: stand-ins from a histogram); with a
        # unit, only the rows each unit keeps (the salt drawn after the charge, data-free)
        if privacy_unit is None:
            values = table.quantile_values(Query(column, progress=progress), cands, lo_hi, grid_w)
        else:
            salt = resolve_source(source).bits(63)
            rule = UnitRule(privacy_unit, rows_per_unit=r, salt=salt)
            values = table.quantile_values(Query(column, rule, progress=progress), cands, lo_hi,
                                           grid_w)  # fmt: skip
        released = run(values)
        text, acc, loss, res = method_text, accuracy, rounding, w
        params = dict(parameters)
        used = chosen
        if late:  # the plan the noisy count picked
            text, acc, loss, res = late[0].text, late[0].accuracy, late[0].rounding, late[0].w
            if grid_note is not None:
                acc = [*acc, _grid_line(grid_note, late[0].name)]
            params.update(method=late[0].name, resolution=res, noisy_rows=late_count[0])
            if late_grains:
                params.update(grain_histogram=late_grains[0])
            used = late[0].name
        # On an integer or decimal column every method's values lie on the type's grid (the
        # joint mechanism rounds its own; candidates are public values; Spark's grid of cells
        # has its own statement). Public facts only: the type, the method, the bounds.
        if step is not None and lo_hi is not None and cands is None and grid_note is None:
            slack = tree_slack if used == "tree" else None if used == "joint" else 2 * (res or 0)
            if slack is not None:
                released, widened = on_grid(released, step, lo_hi, slack)
                if widened is not None:
                    acc = [*acc, widened]
                params["on_grid"] = float(step)
        return QuantileResult(
            q=given,
            values=released,
            method=text,
            epsilon=float(eps),
            epsilon_each=float(each),
            budget_split=split,
            accuracy=acc,
            levels=[f"{lv.numerator}/{lv.denominator}" for lv in levels],
            rounding_loss=loss,
            resolution=res,
            notes=([] if note is None else [note]) + unit_note + late_notes,
            ledger=None if book is None else book.path,
            parameters=params,
            derivation=list(late[0].derivation if late else derivation),
        )

    return charge_then_release(
        book, release, float(eps), "quantile", parameters, kind=charge_kind(chosen),
        privacy_unit=privacy_unit, source=table.description,
    )  # fmt: skip


# ``bounds="auto"``: the bounds chosen privately, then the quantiles


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
    column: str,
    q: float | Sequence[float],
    epsilon: float,
    *,
    candidates: Any = None,
    confidence: float = CONFIDENCE,
    ledger: Any = None,
    source: RandomSource | None = None,
    resolution: float | None = None,
    mechanism: str = "auto",
    progress: Callable[[float], None] | None = None,
    schema: Any = None,
    auto_fraction: float | None = None,
    privacy_unit: str | None = None,
    max_rows: int | None = None,
) -> QuantileResult:
    """:func:`quantile` with ``bounds="auto"``: clamping bounds chosen privately, then the
    quantiles.

    The continuous quantile mechanism needs public bounds ``(lo, hi)``; the rows are clamped to
    them. With ``bounds="auto"`` the bounds come from :func:`~dpselect.recipes.bounds.
    choose_bounds` (two private bin quantiles over power-of-two bins) and the quantiles run on
    them:

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

    Parameters
    ----------
    data : str, path, DataFrame, relation or Table
        The private rows, as for :func:`quantile`.
    column : str
        A numeric column.
    q : float or list of float
        The quantile level(s) in ``[0, 1]``.
    epsilon : float
        The total privacy cost (the choice and the quantiles), for one row (or one unit)
        added or removed, in ``[2^-20, 2^20]``.
    candidates : None
        Refused: the bounds are for the continuous mechanism.
    confidence : float, default 0.95
        The confidence of the accuracy statements.
    ledger, source, progress, schema
        The budget ledger, the randomness (tests only), a scan progress callback
        ``progress(percent)`` and declared column types, as for :func:`quantile`.
    resolution : None
        Refused: the default ``(hi - lo) / 10^6`` of the chosen bounds is used.
    mechanism : str, default "auto"
        The quantile method, as for :func:`quantile`.
    auto_fraction : float, optional
        The share of ``epsilon`` in ``(0, 1)`` for the bounds' choice (default 0.25).
    privacy_unit : str, optional
        The column identifying people (each row is a person without it).
    max_rows : int, optional
        The most rows one unit keeps (default 1; only with ``privacy_unit``; ``"auto"`` is
        refused here: :func:`quantile` chooses it first).

    Returns
    -------
    QuantileResult
        The quantiles, the total cost, the budget split and the chosen bounds (in ``notes``
        and ``parameters["bounds"]``).
    """
    from ._common import check_auto_fraction

    method = mechanism
    eps = Fraction(check_user_epsilon(epsilon))
    check_epsilon_range(eps)
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
    rows = check_rows_per_unit(privacy_unit, max_rows)
    if rows == "auto":
        raise ParameterError("max_rows='auto' is chosen by quantile(); give an int here")
    chosen = _choose_method(method, len(levels), True)
    table = open_table(data, schema=schema)
    check_numeric_column(table, data, column)
    check_unit_column(table, privacy_unit, rows)
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
    unit: dict[str, Any] = {}
    if privacy_unit is not None:
        unit = {"privacy_unit": privacy_unit, "max_rows": rows}
        parameters.update(unit)

    def release() -> QuantileResult:
        picked = choose_bounds(
            data, column, eps_choice, quantiles=choice_levels, source=source, schema=schema,
            **unit,
        )  # fmt: skip
        result = quantile(
            data,
            column,
            given,
            eps_q,
            bounds=(picked.lower, picked.upper),
            confidence=confidence,
            source=source,
            mechanism=method,
            progress=progress,
            schema=schema,
            **unit,
        )
        line = (
            f"bounds: [{picked.lower:g}, {picked.upper:g}], chosen privately (the bins of the "
            f"{choice_levels[0]:g} and {choice_levels[1]:g} quantiles in a noisy histogram of "
            f"power-of-two bins, the bins below its threshold dropped) at epsilon = "
            f"{spent_c:.6g}; the quantiles then ran at epsilon = {eps_q:.6g}"
        )
        if picked.parameters.get("note"):
            line += f"; {picked.parameters['note']}"
        return _with_private_choice(
            result, "the bounds", line, spent_c, eps_q, total, book,
            {**parameters, "bounds": [picked.lower, picked.upper], "bounds_choice": line},
        )  # fmt: skip

    # The bounds' noisy histogram adds Laplace noise: the entry is pure epsilon-DP (never
    # bounded range, whose zCDP conversion eps^2 / 8 holds for exponential mechanisms only).
    return charge_then_release(
        book, release, total, "quantile/bounds=auto", parameters, "pure",
        privacy_unit=privacy_unit, source=table.description,
    )  # fmt: skip


def _with_private_choice(
    result: QuantileResult,
    chosen: str,
    line: str,
    spent_c: float,
    eps_q: float,
    total: Any,
    book: Any,
    parameters: dict[str, Any],
) -> QuantileResult:
    """``result`` of the quantiles run after a private choice (of ``chosen``: the bounds,
    max_rows) paid from the same budget: the total cost, the split, the choice's line first."""
    return replace(
        result,
        epsilon=total,
        budget_split=(
            f"{spent_c:.6g} to choose {chosen} + {eps_q:.6g} to the quantiles "
            f"({result.budget_split})"
        ),
        notes=[line, *result.notes],
        ledger=None if book is None else book.path,
        parameters={**result.parameters, **parameters},
    )


def _rank_margin(
    chosen: str,
    levels: list[Fraction],
    row_epsilon: Fraction,
    confidence: float,
    bounds: tuple[float, float] | None,
    resolution: float | None,
    candidates: list[float] | None,
    step: Fraction | None = None,
) -> Fraction:
    """The public penalty of ``max_rows="auto"`` at one bound ``r``: the rank margin (rows) of
    the accuracy statement of the method ``chosen`` (:func:`_choose_method`) run at the
    row-level epsilon ``row_epsilon = eps_q / r``, its largest over the levels. For the auto
    rule's tree-or-joint choice, the smaller of the two (the rule picks by a noisy count that
    is not known yet). Public parameters only; ``bounds=None`` (chosen later) reads ``(0,
    1)``: the statements depend on the bounds only through ``(hi - lo) / w``."""
    lo_hi = bounds if bounds is not None else (0.0, 1.0)
    m = len(levels)
    if candidates is not None:
        each = row_epsilon / m
        return Fraction(max(candidate_accuracy(lv, each, len(candidates), confidence)
                            for lv in levels))  # fmt: skip
    if chosen == "split":
        w = check_resolution(resolution, *lo_hi)
        return Fraction(max(continuous_accuracy(lo_hi, lv, row_epsilon / m, confidence, w).alpha
                            for lv in levels))  # fmt: skip
    if chosen == "recursive":
        w = check_resolution(resolution, *lo_hi)
        return Fraction(max(recursive_alphas(lo_hi, levels, row_epsilon, confidence, w)))
    each = row_epsilon * (1 - TREE_COUNT_FRACTION) if chosen == "count" else row_epsilon
    tree = tree_accuracy(lo_hi, each, confidence, TREE_BRANCHING, TREE_HEIGHT, TREE_THRESHOLD)
    w = joint_resolution(resolution, *lo_hi, each, step)
    length = w if w > 0 else check_resolution(None, *lo_hi)
    joint = joint_rows_bound(levels, each, confidence, lo_hi, length)
    margins = {"tree": tree.rank_error, "joint": joint, "count": min(tree.rank_error, joint)}
    return Fraction(margins[chosen])


def _bounds_rows_needed(levels: list[Fraction], epsilon: Fraction, confidence: float) -> Fraction:
    """The rows a bin needs at ``max_rows = 1`` for ``bounds="auto"`` to keep it: the noisy
    histogram's threshold (:func:`~dpselect.recipes.bounds.empty_bin_threshold`) at the
    default share ``eps_c`` of ``epsilon``, plus the noise's ``confidence`` quantile (a bin
    holding that many rows is kept with probability ``confidence``). With ``max_rows = r``
    the noise scale is ``r`` times larger, and so is this number. Public; ``levels`` do not
    enter (the histogram serves every level)."""
    from ._common import AUTO_FRACTION
    from .bounds import empty_bin_threshold

    eps_c = epsilon * Fraction(AUTO_FRACTION)
    n_bins = len(bound_bins())
    beta = 1.0 - float(confidence)
    margin = math.log(1 / (2 * beta)) / float(eps_c)  # P(Z < -margin) <= beta
    return Fraction(empty_bin_threshold(1 / eps_c, n_bins)) + Fraction(math.ceil(margin))


def quantile_with_auto_rows(
    data: Any,
    column: str,
    q: float | Sequence[float],
    epsilon: float,
    privacy_unit: str,
    *,
    bounds: tuple[float, float] | str | None = None,
    candidates: Any = None,
    confidence: float = CONFIDENCE,
    ledger: Any = None,
    source: RandomSource | None = None,
    resolution: float | None = None,
    mechanism: str = "auto",
    progress: Callable[[float], None] | None = None,
    schema: Any = None,
    auto_fraction: float | None = None,
) -> QuantileResult:
    """:func:`quantile` with ``max_rows="auto"``: the rows per unit chosen privately, then the
    quantiles with that bound.

    - **The choice** is :func:`~dpselect.recipes.bounds.choose_max_contributions` with
      ``unit_counts="rows"`` (the generalized exponential mechanism over ``r`` in ``1, 2, 4,
      ..., 256``, as ``max_contributions="auto"`` of :func:`dpselect.top_k`): the score of
      ``r`` is ``sum_u min(c_u, r) - margin(r)``, ``c_u`` unit ``u``'s rows with a number and
      ``margin(r)`` the public rank margin of the method's accuracy statement at the
      row-level epsilon ``eps_q / r`` (:func:`_rank_margin`); with ``bounds="auto"`` also
      the rows the bounds choice needs to land next to the data, ``r`` times the row-level
      threshold of :func:`quantile_with_auto_bounds` (:func:`_bounds_rows_needed`). Up to
      the constant ``sum_u c_u`` this is minus the rows dropped by the bound and the rank
      error its noise may add. Sensitivity ``Delta_r = r`` (one unit adds at most
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

    Parameters
    ----------
    data : str, path, DataFrame, relation or Table
        The private rows, as for :func:`quantile`.
    column : str
        A numeric column.
    q : float or list of float
        The quantile level(s) in ``[0, 1]``.
    epsilon : float
        The total privacy cost (the choice and the quantiles), for one unit (all its rows)
        added or removed, in ``[2^-20, 2^20]``.
    privacy_unit : str
        The column identifying the units.
    bounds : (float, float) or "auto", optional
        Public clamping bounds (``"auto"``: chosen privately as well); give exactly one of
        ``bounds`` and ``candidates``.
    candidates : list, optional
        Public candidate values (instead of ``bounds``).
    confidence : float, default 0.95
        The confidence of the accuracy statements (and of the margins the choice weighs).
    ledger, source, resolution, progress, schema
        The budget ledger, the randomness (tests only), the resolution ``w`` for fixed bounds,
        a scan progress callback and declared column types, as for :func:`quantile`.
    mechanism : str, default "auto"
        The quantile method, as for :func:`quantile`.
    auto_fraction : float, optional
        The share of ``epsilon`` in ``(0, 1)`` for the choice of ``max_rows`` (default 0.25);
        with ``bounds="auto"`` also the bounds' share of the rest.

    Returns
    -------
    QuantileResult
        The quantiles, the total cost, the budget split and the chosen ``max_rows`` (in
        ``notes`` and ``parameters["max_rows"]``).
    """
    from ._common import check_auto_fraction
    from .bounds import DEFAULT_CONTRIBUTIONS, choose_max_contributions, contribution_choice_cost

    eps = Fraction(check_user_epsilon(epsilon))
    check_epsilon_range(eps)
    fraction = check_auto_fraction(auto_fraction)
    given, levels = _levels(q)
    conf = check_confidence(confidence)
    if (bounds is None) == (candidates is None):
        raise ParameterError(
            "give exactly one of bounds=(lo, hi) or 'auto' (continuous mechanism) and "
            "candidates (a public list of numbers)"
        )
    cands = _numeric_candidates(candidates) if candidates is not None else None
    lo_hi = None
    if isinstance(bounds, str):
        if bounds != "auto":
            raise ParameterError(f"bounds must be a pair (lo, hi) or 'auto', got {bounds!r}")
        if resolution is not None:
            raise ParameterError(
                "resolution applies to fixed bounds; with bounds='auto' the default "
                "(hi - lo) / 10^6 of the chosen bounds is used"
            )
    elif bounds is not None:
        lo_hi = check_bounds(bounds)
        check_resolution(resolution, *lo_hi)
    _choose_method(mechanism, len(levels), bounds is not None)
    table = open_table(data, schema=schema)
    check_numeric_column(table, data, column)
    check_unit_column(table, privacy_unit, 1)
    step = recorded_step(table.require_column(column, "column"))
    candidates_r = list(DEFAULT_CONTRIBUTIONS)
    eps_choice = eps * Fraction(fraction)
    spent_c = contribution_choice_cost(eps_choice, candidates_r)
    eps_q = float_down(eps - Fraction(spent_c))
    total = float_up(Fraction(spent_c) + Fraction(eps_q))
    chosen = _choose_method(mechanism, len(levels), bounds is not None)
    margins = {
        r: _rank_margin(chosen, levels, Fraction(eps_q) / r, conf, lo_hi, resolution, cands, step)
        for r in candidates_r
    }
    if bounds == "auto":  # the bounds choice runs at eps_q too, with r rows per unit
        need = _bounds_rows_needed(levels, Fraction(eps_q), conf)
        margins = {r: margin + r * need for r, margin in margins.items()}
    book = open_ledger(ledger)
    parameters = {
        "column": column,
        "q": [float(lv) for lv in levels],
        "epsilon": float(eps),
        "privacy_unit": privacy_unit,
        "max_rows": "auto",
        "max_rows_candidates": candidates_r,
        "auto_fraction": fraction,
        "choice_epsilon": spent_c,
        "query_epsilon": eps_q,
        "method": chosen,
    }

    def release() -> QuantileResult:
        choice = choose_max_contributions(
            table, column, privacy_unit, epsilon=eps_choice, candidates=candidates_r,
            penalty=lambda r: margins[r], source=source, unit_counts="rows",
        )  # fmt: skip
        r = choice.max_contributions
        result = quantile(
            data, column, given, eps_q, bounds=bounds, candidates=candidates,
            confidence=confidence, source=source, resolution=resolution, mechanism=mechanism,
            progress=progress, schema=schema,
            # the bounds' share only where the bounds are chosen (fixed bounds or
            # candidates refuse an auto_fraction, and the choice above is charged by now)
            auto_fraction=auto_fraction if bounds == "auto" else None,
            privacy_unit=privacy_unit, max_rows=r,
        )  # fmt: skip
        line = (
            f"max_rows = {r}, chosen privately among {len(candidates_r)} bounds "
            f"(1..{candidates_r[-1]}) by the generalized exponential mechanism at epsilon = "
            f"{spent_c:.6g}; the quantiles then ran at epsilon = {eps_q:.6g}"
        )
        return _with_private_choice(
            result, "max_rows", line, spent_c, eps_q, total, book,
            {**parameters, "max_rows": r, "max_rows_choice": line},
        )  # fmt: skip

    # the tree, the auto rule's noisy count and the auto bounds' histogram add Laplace noise:
    # pure; else bounded range
    kind = "pure" if bounds == "auto" else charge_kind(chosen)
    return charge_then_release(
        book, release, total, "quantile/max_rows=auto", parameters, kind,
        privacy_unit=privacy_unit, source=table.description,
    )  # fmt: skip


# ------------------------------------------------------------------------------------------
# quantile(by=...)


def grouped_quantile(
    data: Any,
    column: str,
    q: Any,
    epsilon: float,
    *,
    by: str,
    groups: Any = None,
    delta: float | None = None,
    privacy_unit: str | None = None,
    max_groups: int = 1,
    max_rows: int = 1,
    group_fraction: float | None = None,
    ledger: Any = None,
    source: RandomSource | None = None,
    schema: Any = None,
    **options: Any,
) -> GroupedResult:
    """The quantiles ``q`` of ``column`` in every group of ``by``, in one scan.

    Each group runs :func:`dpselect.quantile` (``options``: ``bounds``, ``candidates``,
    ``mechanism``, ``resolution``, ``confidence``) on its kept rows at ``epsilon_g /
    max_rows``: with a privacy unit each person keeps at most ``max_groups`` groups and at
    most ``max_rows`` rows in each (:func:`dpselect.data.rules.kept_rows` within the group),
    so a group's rank scores move by at most ``max_rows`` and the row-level mechanism at
    ``epsilon_g / max_rows`` is ``epsilon_g``-DP per person (group privacy, Dwork and Roth
    2014, Theorem 2.2). Its accuracy lines are the row-level theorems at that epsilon, in
    rows. Private groups (``groups=None``) need ``delta > 0`` for their selection.
    Accounting: module docstring (pure ``epsilon`` with public groups).

    Parameters
    ----------
    data, column, q, epsilon, privacy_unit, ledger, source, schema
        As for :func:`dpselect.quantile`.
    by, groups, max_groups, group_fraction
        As for :func:`grouped_top_k`.
    delta : float, optional
        Only for private groups: the selection's delta.
    max_rows : int, default 1
        With a privacy unit: the rows each person keeps in each of their groups (a number;
        ``"auto"`` is not available per group).
    **options
        ``bounds``, ``candidates``, ``mechanism``, ``resolution``, ``confidence``: as for
        :func:`dpselect.quantile`, the same in every group.

    Returns
    -------
    GroupedResult
        One :class:`~dpselect.recipes.quantiles.QuantileResult` per group.
    """
    from .quantiles import quantile

    allowed = {"bounds", "candidates", "mechanism", "resolution", "confidence"}
    extra = sorted(set(options) - allowed)
    if extra:
        raise ParameterError(f"quantile with by does not take {', '.join(extra)}")
    if options.get("bounds") == "auto":
        raise ParameterError(
            "bounds='auto' is not available with by: give bounds=(lo, hi) or candidates"
        )
    eps = float(check_user_epsilon(epsilon))
    check_epsilon_range(eps)
    if privacy_unit is None and max_rows != 1:
        raise ParameterError("max_rows applies only with a privacy_unit column")
    r = check_int(max_rows, "max_rows", minimum=1)
    table = open_checked(data, column, privacy_unit, schema)
    numeric_column(table, column)
    if "resolution" not in options and "bounds" in options:
        # each group runs on float rows: the joint mechanism's default from the column's type
        # is passed on as its resolution (under "auto" only the joint plan reads it, the tree
        # does not; schema only)
        chosen = _choose_method(str(options.get("mechanism", "auto")), len(_levels(q)[1]), True)
        by_step = recorded_resolution(
            recorded_step(table.require_column(column, "column")), *check_bounds(options["bounds"])
        )
        if chosen in ("joint", "count") and by_step is not None:
            options = {**options, "resolution": by_step}
    grouping = check_groups(table, column, by, groups, privacy_unit, max_groups, group_fraction)
    private = grouping.listed is None
    dlt = 0.0 if delta is None else float(check_delta(delta, allow_zero=not private))
    if private and dlt == 0:
        raise ParameterError(
            "private groups (groups=None) are selected from the data: give delta > 0, or a "
            "public groups list"
        )
    if not private and dlt != 0:
        raise ParameterError("delta applies to quantile with by only for private groups")
    budget = split_budget(eps, dlt, grouping, 1.0)
    inner = float_down(Fraction(budget.group_epsilon) / r)

    # every public parameter checked by the mechanism itself, on the public empty data set,
    # before the charge (nothing read, nothing charged)
    def run(values: Any, src: RandomSource | None = source) -> Any:
        array = np.asarray(values, dtype=np.float64)
        return quantile(array, None, q, inner, source=src, **options)

    with stages_of_a_release():  # a stage's plan, on a share of a total checked above
        probe = run(np.zeros(0), None)
    mechanism_text, accuracy_text = probe.method, "; ".join(probe.accuracy)
    method = probe.parameters["method"]
    if "noisy_rows" in probe.parameters:  # each group's noisy row count picks its mechanism
        mechanism_text, accuracy_text = _count_rule_statements(inner, q, options)
        method = "auto: tree or joint by a noisy row count"
    book = open_ledger(ledger)
    selection = group_selection(grouping, budget, privacy_unit, source) if private else None
    select_cost = (0.0, 0.0) if selection is None else (selection[1], selection[2])
    each = (float_up(Fraction(inner) * r), 0.0)
    total = total_cost(budget, grouping, each, select_cost)
    accounting = composition_text(
        grouping, privacy_unit, None if selection is None else selection[4]
    )
    if r > 1:
        accounting += (
            f"; in a group a person keeps at most {r} rows, so the row-level mechanism runs at "
            f"epsilon_g / {r} = {inner:.6g} (group privacy)"
        )
    parameters = {
        "column": column, "q": probe.parameters["q"], "epsilon": eps, "delta": dlt, "by": by,
        "groups": "private" if private else len(grouping.listed or []),
        "max_groups": grouping.max_groups, "privacy_unit": privacy_unit, "max_rows": r,
        "group_epsilon": each[0], "row_epsilon": inner, "method": method,
        "bounds": probe.parameters.get("bounds"),
    }  # fmt: skip

    def release() -> GroupedResult:
        salt, group_salt = draw_salts(source)
        g = grouping.max_groups
        rule = UnitRule(privacy_unit, rows_per_unit=r, groups_per_unit=g, salt=salt,
                        group_salt=group_salt)  # fmt: skip
        if selection is None:
            names = list(grouping.listed or [])
            found = table.numbers(Query(column, rule, PublicGroups(by, names)))
        else:  # private groups: the persons and the numbers from one scan
            discovered = table.numbers(Query(column, rule, PrivateGroups(by)))
            assert discovered.numbers is not None
            names, where = selected_groups(discovered, selection)
            found = [discovered.numbers[j] for j in where]
        releases = [run(v) for v in found]
        return GroupedResult(
            "quantile", by, column, names, releases, total[0], total[1], None, each[0], 0.0,
            grouping.max_groups, chosen_by_text(grouping, selection, *select_cost),
            mechanism_text, accounting, accuracy_text, None if book is None else book.path,
            parameters,
        )  # fmt: skip

    kind: Literal["pure", "approx"] = "approx" if private else "pure"
    return charge_grouped(book, release, (total[0], total[1], None), kind, "quantile/by",
                   parameters, privacy_unit, table)  # fmt: skip


def _count_rule_statements(inner: float, q: Any, options: dict[str, Any]) -> tuple[str, str]:
    """The mechanism and accuracy lines of a grouped release whose groups each run the
    ``"auto"`` rule of 2 to 20 levels (a noisy row count picks the tree or the joint
    mechanism, :func:`quantile`): both plans, as the rule builds them in every group at
    ``inner`` (public parameters only; each group's own result names the one it ran)."""
    eps = Fraction(check_user_epsilon(inner))
    each = eps - eps * TREE_COUNT_FRACTION
    lo_hi = check_bounds(options["bounds"])
    levels = _levels(q)[1]
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
        grains = _GrainPlan(lo_hi, levels, each, conf, None, None, 1, eps - each, joint)
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
