"""The accuracy lines a quantile release prints for the per-level mechanisms (the continuous
mechanism, candidates) and an engine's grid of cells: each the conclusion of a theorem in
docs/quantiles.md, in words and numbers."""

from __future__ import annotations

from fractions import Fraction

from ..core.arithmetic import printed_up
from ..mechanisms.quantile_candidates import candidate_accuracy
from ..mechanisms.quantile_continuous import continuous_accuracy

__all__ = ["candidate_line", "continuous_line", "grid_line"]


def continuous_line(
    level: Fraction,
    eps: Fraction,
    lo_hi: tuple[float, float],
    conf: float,
    w: float,
    grid: float | None = None,
) -> str:
    """The continuous mechanism's accuracy line at one level (Smith 2011; docs/quantiles.md).

    Parameters
    ----------
    level : Fraction
        The level.
    eps : Fraction
        The row-level epsilon the mechanism runs at.
    lo_hi : (float, float)
        The bounds.
    conf : float
        The confidence.
    w : float
        The resolution.
    grid : float, optional
        The engine's cell width ``d`` (:meth:`dpselect.data.engine.Engine.grid_width`): rows
        rounded down to a public grid first, each moving down by less than ``d``, so the upper
        side widens by ``d``.

    Returns
    -------
    str
        The line.
    """
    acc = continuous_accuracy(lo_hi, level, eps, conf, w)
    q = float(level)
    above, where = "2w", ""
    if grid is not None:
        above = "2w + d"
        where = (
            f"; the engine rounds each row down to a grid of cells at most d = "
            f"{grid:.3g} wide, docs/spark.md"
        )
    return (
        f"accuracy (q = {q:g}): with probability at least {conf:.0%}, at most {q:g} n + "
        f"{printed_up(acc.margin)} rows lie below the value - 2w and at most {1 - q:g} n + "
        f"{printed_up(acc.margin)} above the value + {above} (n rows after clamping to the bounds, "
        f"resolution w = {printed_up(w, 3)}; ties included; continuous exponential mechanism, "
        f"Smith 2011, docs/quantiles.md{where})"
    )


def grid_line(grid: float, method: str) -> str:
    """What an engine's grid changes in the statement of the recursive or joint method
    (the statement holds for the rows rounded down to the grid; each real row lies less than
    ``d`` above its rounded value).

    Parameters
    ----------
    grid : float
        The engine's cell width ``d``.
    method : str
        The method whose statement it amends.

    Returns
    -------
    str
        The line.
    """
    if method == "recursive":
        return (
            f"  (engine grid: rows are rounded down to a grid of cells at most d = {grid:.3g} "
            "wide first, each moving down by less than d: read 'above it + 2w + d', and B "
            "counts the rows within 2w below and 2w + d above the other values; docs/spark.md)"
        )
    return (
        f"  (engine grid: the statement is about the rows rounded down to a grid of cells at "
        f"most d = {grid:.3g} wide; a real row lies less than d above its rounded value, so it "
        "is counted in another gap than its rounded value only when it lies within d above a "
        "released value; docs/spark.md)"
    )


def candidate_line(level: Fraction, eps: Fraction, m: int, conf: float) -> str:
    """The accuracy line of the exponential mechanism over ``m`` public candidates at one
    level (its utility theorem).

    Parameters
    ----------
    level : Fraction
        The level.
    eps : Fraction
        The row-level epsilon the mechanism runs at.
    m : int
        The number of candidates.
    conf : float
        The confidence.

    Returns
    -------
    str
        The line.
    """
    margin = candidate_accuracy(level, eps, m, conf)
    q = float(level)
    return (
        f"accuracy (q = {q:g}): with probability at least {conf:.0%}, the chosen candidate's "
        f"rank excess max(0, #below - {q:g} n, #above - {1 - q:g} n) is within "
        f"{printed_up(margin)} "
        f"rows of the best candidate's (exponential mechanism utility theorem, {m} "
        "candidates)"
    )
