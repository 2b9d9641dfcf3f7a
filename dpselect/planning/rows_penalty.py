"""The public penalty of a private choice of the rows per unit of a quantile
(``max_rows="auto"``): for each candidate bound ``r``, the rank margin of the method's
accuracy statement at the row-level epsilon ``eps_q / r`` (:func:`rank_margin`), plus, with
``bounds="auto"``, the rows the bounds' choice needs at ``r`` rows per unit
(:func:`bounds_rows_needed`); :func:`rows_margins` gives every candidate's. Public
parameters only, computed before the charge (docs/quantiles.md, "Privacy units").
"""

from __future__ import annotations

import math
from fractions import Fraction

from ..mechanisms.quantile_candidates import candidate_accuracy
from ..mechanisms.quantile_continuous import check_resolution, continuous_accuracy
from ..mechanisms.quantile_joint import joint_rows_bound
from ..mechanisms.quantile_joint_parameters import joint_resolution
from ..mechanisms.quantile_recursive import recursive_alphas
from ..mechanisms.quantile_tree import tree_accuracy
from .contributions import AUTO_FRACTION
from .private_choice import choice_share
from .quantile_plan import TREE_BRANCHING, TREE_HEIGHT, TREE_THRESHOLD, count_shares
from .value_bounds import bound_bins, empty_bin_threshold

__all__ = ["bounds_rows_needed", "rank_margin", "rows_margins"]


def rows_margins(
    chosen: str,
    levels: list[Fraction],
    eps_q: Fraction,
    confidence: float,
    candidates_r: list[int],
    *,
    bounds: tuple[float, float] | None,
    resolution: float | None,
    candidates: list[float] | None,
    step: Fraction | None,
    auto_bounds: bool,
) -> dict[int, Fraction]:
    """The public penalty of each candidate bound ``r``: the method's rank margin at
    ``eps_q / r`` per row, plus (``auto_bounds``) ``r`` times the rows the bounds' choice needs.

    Parameters
    ----------
    chosen : str
        The quantile method (:func:`~dpselect.planning.quantile_checks.choose_quantile_method`).
    levels : list of Fraction
        The levels.
    eps_q : Fraction
        The quantiles' epsilon (what remains after the choice).
    confidence : float
        The confidence of the accuracy statements.
    candidates_r : list of int
        The candidate bounds.
    bounds : (float, float) or None
        The public bounds (``None``: candidates, or chosen later).
    resolution : float or None
        The resolution as given.
    candidates : list of float or None
        The public candidates.
    step : Fraction or None
        The grid the column's type puts values on.
    auto_bounds : bool
        Whether the bounds are chosen privately too (at ``eps_q``, with ``r`` rows per unit).

    Returns
    -------
    dict
        ``r -> penalty``, in rows.
    """
    margins = {
        r: rank_margin(chosen, levels, eps_q / r, confidence, bounds, resolution, candidates,
                       step)
        for r in candidates_r
    }  # fmt: skip
    if auto_bounds:
        need = bounds_rows_needed(levels, eps_q, confidence)
        margins = {r: margin + r * need for r, margin in margins.items()}
    return margins


def rank_margin(
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
    the accuracy statement of the method ``chosen``
    (:func:`~dpselect.planning.quantile_checks.choose_quantile_method`) run at the
    row-level epsilon ``row_epsilon = eps_q / r``, its largest over the levels. For the auto
    rule's tree-or-joint choice, the smaller of the two (the rule picks by a noisy count that
    is not known yet). Public parameters only; ``bounds=None`` (chosen later) reads ``(0,
    1)``: the statements depend on the bounds only through ``(hi - lo) / w``.

    Parameters
    ----------
    chosen : str
        The method.
    levels : list of Fraction
        The levels.
    row_epsilon : Fraction
        The row-level epsilon ``eps_q / r``.
    confidence : float
        The confidence of the accuracy statements.
    bounds : (float, float) or None
        The public bounds (``None``: candidates, or chosen later).
    resolution : float or None
        The resolution as given.
    candidates : list of float or None
        The public candidates.
    step : Fraction, optional
        The grid the column's type puts values on.

    Returns
    -------
    Fraction
        The margin, in rows.
    """
    lo_hi = bounds if bounds is not None else (0.0, 1.0)
    m = len(levels)
    if candidates is not None:
        each = row_epsilon / m
        return Fraction(max(candidate_accuracy(lv, each, len(candidates), confidence)
                            for lv in levels))  # fmt: skip
    if chosen == "split":
        w = check_resolution(resolution, *lo_hi)
        return Fraction(max(continuous_accuracy(lo_hi, lv, row_epsilon / m, confidence, w).margin
                            for lv in levels))  # fmt: skip
    if chosen == "recursive":
        w = check_resolution(resolution, *lo_hi)
        return Fraction(max(recursive_alphas(lo_hi, levels, row_epsilon, confidence, w)))
    each = count_shares(row_epsilon)[1] if chosen == "count" else row_epsilon
    tree = tree_accuracy(lo_hi, each, confidence, TREE_BRANCHING, TREE_HEIGHT, TREE_THRESHOLD)
    w = joint_resolution(resolution, *lo_hi, each, step)
    length = w if w > 0 else check_resolution(None, *lo_hi)
    joint = joint_rows_bound(levels, each, confidence, lo_hi, length)
    margins = {"tree": tree.rank_error, "joint": joint, "count": min(tree.rank_error, joint)}
    return Fraction(margins[chosen])


def bounds_rows_needed(levels: list[Fraction], epsilon: Fraction, confidence: float) -> Fraction:
    """The rows a bin needs at ``max_rows = 1`` for ``bounds="auto"`` to keep it: the noisy
    histogram's threshold (:func:`~dpselect.planning.value_bounds.empty_bin_threshold`) at the
    default share ``eps_c`` of ``epsilon``, plus the noise's ``confidence`` quantile (a bin
    holding that many rows is kept with probability ``confidence``). With ``max_rows = r``
    the noise scale is ``r`` times larger, and so is this number. Public; ``levels`` do not
    enter (the histogram serves every level).

    Parameters
    ----------
    levels : list of Fraction
        The levels (not read).
    epsilon : Fraction
        The epsilon the bounds' choice shares (``auto_fraction`` of it: the default share).
    confidence : float
        The probability a bin holding that many rows is kept.

    Returns
    -------
    Fraction
        The rows, at ``max_rows = 1``.
    """
    eps_c = choice_share(epsilon, AUTO_FRACTION)
    n_bins = len(bound_bins())
    beta = 1.0 - float(confidence)
    margin = math.log(1 / (2 * beta)) / float(eps_c)  # P(Z < -margin) <= beta
    return Fraction(empty_bin_threshold(1 / eps_c, n_bins)) + Fraction(math.ceil(margin))
