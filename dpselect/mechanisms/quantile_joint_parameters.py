"""The public parameters of the joint quantile mechanism (:mod:`.quantile_joint`).

The integer form of the gap score (the common denominator ``B`` and the target gaps), its
sensitivity, the share of epsilon that pays for the float log-weights, and the tie handling's
resolution ``w`` with the decimal step the released values are rounded to. Public parameters
only: nothing here reads the rows.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any

from ..core.arithmetic import float_up
from ..core.errors import ParameterError
from .quantile_continuous import check_resolution
from .quantile_score import MAX_DENOMINATOR

__all__ = [
    "JOINT_CAP",
    "JOINT_LOG_ERROR",
    "JOINT_STEP_DIVISOR",
    "MAX_JOINT_LEVELS",
    "decimal_step",
    "joint_gaps",
    "joint_resolution",
    "joint_rounding_loss",
    "joint_sensitivity",
    "recorded_resolution",
    "round_to_step",
]

#: The cap T on each gap's term c |...|.
JOINT_CAP = 4096
#: Bound on each float log-weight's error against the exact expression (docs/quantiles.md).
JOINT_LOG_ERROR = Fraction(1, 2**22)
#: The most levels the joint mechanism takes (the error bound above assumes it).
MAX_JOINT_LEVELS = 64
#: The default resolution is half the power of ten at most ``(hi - lo) / JOINT_STEP_DIVISOR``.
JOINT_STEP_DIVISOR = 600


# ----------------------------------------------------------------------------- parameters
def joint_gaps(levels: Sequence[Fraction]) -> tuple[int, list[int]]:
    """``(B, [g_1, ..., g_{m+1}])``: the common denominator and the target gaps times ``B``.

    Parameters
    ----------
    levels : sequence of Fraction
        The levels ``q_1 < ... < q_m`` as exact fractions
        (:func:`~.quantile_recursive.sorted_levels`).

    Returns
    -------
    B : int
        The least common denominator of the levels (at most ``10^6``, else refused).
    gaps : list of int
        The ``m + 1`` target gaps ``g_j = B (q_j - q_{j-1})`` (``q_0 = 0``, ``q_{m+1} = 1``),
        summing to ``B``.
    """
    denom = 1
    for lv in levels:
        denom = denom * lv.denominator // math.gcd(denom, lv.denominator)
        if denom > MAX_DENOMINATOR:
            raise ParameterError(
                f"the levels' common denominator exceeds {MAX_DENOMINATOR}: round the levels "
                "(e.g. to 1/1000) for the joint method"
            )
    cuts = [Fraction(0), *levels, Fraction(1)]
    gaps = [int((b - a) * denom) for a, b in itertools.pairwise(cuts)]
    return denom, gaps


def joint_sensitivity(levels: Sequence[Fraction]) -> int:
    """``Delta = 2 (B - min_j g_j)``: the score's sensitivity under adding or removing a row.

    Parameters
    ----------
    levels : sequence of Fraction
        The levels ``q_1 < ... < q_m`` as exact fractions.

    Returns
    -------
    int
        ``Delta``, in units of the integer score (``B`` times rows).
    """
    denom, gaps = joint_gaps(levels)
    return 2 * (denom - min(gaps))


def joint_rounding_loss(m: int) -> Fraction:
    """``4 rho = 12 (m + 1) JOINT_LOG_ERROR``: what the float log-weights add to the loss.

    Parameters
    ----------
    m : int
        The number of levels.

    Returns
    -------
    Fraction
        The share of epsilon that pays for the float log-weights, exactly.
    """
    return 12 * (m + 1) * JOINT_LOG_ERROR


def joint_resolution(
    resolution: Any, lo: float, hi: float, epsilon: Any = None, step: Fraction | None = None
) -> float:
    """The resolution ``w`` of the joint mechanism: ``0`` (none), the one given (checked as
    for the continuous mechanism), or by default:

    - with ``step``, the public spacing of the grid the column's type puts every value on
      (:func:`dpselect.data.column_roles.recorded_step`: 1 for integer columns, ``10^-s`` for
      ``DECIMAL(p, s)``): ``w = step / 2`` (rounded up; raised to ``(hi - lo) / 10^6`` as
      every default resolution), when ``step <= (hi - lo) / 2``;
    - else half the power of ten at most ``(hi - lo) / (JOINT_STEP_DIVISOR * max(1,
      epsilon))`` (rounded up; raised to the least allowed).

    Public parameters and the schema only (``epsilon=None``: the divisor
    ``JOINT_STEP_DIVISOR`` alone).

    Why the type's step: the rows of such a column lie on the grid ``lo + k step`` only up to
    an offset, and tie wherever a grid point holds several. Moved by up to ``w = step / 2``
    (:mod:`.quantile_joint`), the rows of one grid point fill the cell around it, next to the cells
    of its neighbours, so the moved rows have no empty gaps between occupied points and no
    ties, and the released values are rounded back to the grid (the decimal step of ``w`` is
    ``step`` itself): the tie handling neither spreads rows across several grid points (a
    coarser ``w``) nor leaves ties packed into slivers (a finer one). Measured
    (``bench/bench_quantiles.py --diamonds``; docs/performance.md): diamond prices (whole
    dollars, bounds [0, 20000]) at epsilon 1 went from a step of 10 to 1, the mean decile
    error from 2.88 to 2.30 (40 runs each); no integer column of the benchmark lost.

    Why epsilon: the released values are rounded to the step ``s = 2 w``, an error of up to
    ``s / 2`` that does not shrink with epsilon, while the mechanism's own error does: its
    rows per unit of score ``A = 1 / (c B) = 2 Delta / (epsilon' B)``
    (:func:`.quantile_joint.joint_accuracy_terms`) fall like ``1 / epsilon``. The constant was
    fitted at epsilon 1 (docs/quantiles.md, "The joint mechanism's default resolution"); above it
    the step shrinks with ``A`` so that the rounding stays the same fraction of the mechanism's
    error as at the fitted point, and below it the step is kept (a coarser one would lose
    more than ties gain). The levels enter ``A`` only through ``Delta / B``, within 0.74 and
    1.06 times the deciles' for 2 to 20 evenly spaced levels, less than the factor 10 between
    two steps: left out. Diamond prices (53,940 rows, bounds [0, 20000], deciles, epsilon 4):
    step 10 gave a mean error of 2.53, step 1 (this rule) 0.39 (``bench/bench_quantiles.py
    --diamonds``).
    """
    by_step = None if resolution is not None else recorded_resolution(step, lo, hi)
    if by_step is not None:
        return by_step
    if resolution is None:
        divisor = Fraction(JOINT_STEP_DIVISOR)
        if epsilon is not None:
            divisor *= max(Fraction(1), Fraction(epsilon))
        step = decimal_step(float((Fraction(hi) - Fraction(lo)) / (2 * divisor)))
        return max(float_up(step / 2), check_resolution(None, lo, hi))
    if resolution == 0 and not isinstance(resolution, bool):
        return 0.0
    return check_resolution(resolution, lo, hi)


def recorded_resolution(step: Fraction | None, lo: float, hi: float) -> float | None:
    """The joint mechanism's default resolution for values on a public grid of spacing
    ``step`` (:func:`joint_resolution`): ``step / 2`` rounded up, raised to ``(hi - lo) /
    10^6``; ``None`` without a step or when ``step > (hi - lo) / 2``.

    Parameters
    ----------
    step : Fraction or None
        The public spacing of the column's values (1 for integers, ``10^-s`` for ``DECIMAL(p,
        s)``), or ``None`` when the column has none.
    lo, hi : float
        The public bounds, ``lo < hi``.

    Returns
    -------
    float or None
        The resolution ``w``, in the data's units, or ``None`` (then the epsilon-based default
        applies).
    """
    if step is None:
        return None
    half = float_up(Fraction(step) / 2)
    if Fraction(half) * 4 > Fraction(hi) - Fraction(lo):
        return None
    return max(half, check_resolution(None, lo, hi))


def decimal_step(w: float) -> Fraction:
    """``10^floor(log10(2 w))``: the coarsest power of ten at most ``2 w`` (exact)."""
    exponent = Decimal(2 * w).adjusted()  # 2 w is exact; adjusted() = floor(log10) exactly
    return Fraction(10) ** exponent


def round_to_step(value: float, step: Fraction, lo: float, hi: float) -> float:
    """The multiple of ``step`` nearest ``value`` (ties to even), as the nearest float, kept
    in ``[lo, hi]``: a fixed function of its arguments (post-processing). It moves ``value``
    by at most ``step / 2 <= w`` (plus half a float spacing, and never past the bounds)."""
    k = round(Fraction(value) / step)  # Python's round: ties to even, exact on Fractions
    out = float(k * step)
    return min(hi, max(lo, out))
