"""A private choice (of value bounds, of the rows per unit) paid from a release's budget: how
the budget divides between the choice and the release run with what it chose
(:func:`choice_budget`), and how the bounds' choice divides its own share between its two
levels (:func:`bound_level_shares`).

By adaptive composition (Dwork and Roth 2014, Theorem 3.16; seed 002, "Theorem (Simple
adaptive composition)") an ``eps_c``-DP choice followed by an ``eps_q``-DP release whose
parameters are the choice's output costs ``eps_c + eps_q``: the shares here never add up to
more than the total.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from ..core.arithmetic import float_up
from .budget import first_share, remainder
from .stage import Stage

__all__ = [
    "ChoiceBudget",
    "bound_level_shares",
    "bounds_choice_stages",
    "choice_budget",
    "choice_share",
    "contributions_choice_stage",
]


@dataclass(frozen=True)
class ChoiceBudget:
    """A release's epsilon divided between a private choice and the release run with it.

    Attributes
    ----------
    choice : Fraction
        The choice's share, ``auto_fraction`` of epsilon (its mechanism is calibrated to it).
    spent : float
        What the choice costs (its privacy map at distance 1, ``eps_c``).
    query : float
        What remains for the release, ``epsilon - eps_c`` rounded down (``eps_q``).
    total : float
        The charge: ``eps_c + eps_q`` rounded up (adaptive composition).
    """

    choice: Fraction
    spent: float
    query: float
    total: float


def choice_budget(
    epsilon: Fraction, fraction: float, cost: Callable[[Fraction], float]
) -> ChoiceBudget:
    """Give ``fraction`` of ``epsilon`` to a private choice costing ``cost(share)``, the rest to
    the release (:func:`~dpselect.planning.budget.first_share`,
    :func:`~dpselect.planning.budget.remainder`).

    Parameters
    ----------
    epsilon : Fraction
        The release's total epsilon.
    fraction : float
        The choice's share (``auto_fraction``, checked in ``(0, 1)``).
    cost : callable
        The choice's privacy cost at its share of epsilon (its privacy map at distance 1).

    Returns
    -------
    ChoiceBudget
        The share, its cost, the rest and the total charged.
    """
    eps_choice = choice_share(epsilon, fraction)
    spent_c = cost(eps_choice)
    eps_q = remainder(epsilon, spent_c)
    return ChoiceBudget(eps_choice, spent_c, eps_q, float_up(Fraction(spent_c) + Fraction(eps_q)))


def choice_share(epsilon: Fraction, fraction: float) -> Fraction:
    """The choice's share ``fraction`` of ``epsilon``, exactly.

    Parameters
    ----------
    epsilon : Fraction
        The release's total epsilon.
    fraction : float
        The choice's share, in ``[0, 1]``.

    Returns
    -------
    Fraction
        ``fraction * epsilon``.
    """
    return first_share(epsilon, fraction).first_epsilon


def bound_level_shares(epsilon: Fraction) -> tuple[Fraction, Fraction]:
    """The two levels' shares of a bounds choice by two exponential mechanisms (the low level
    the first half, the high level the rest: ``epsilon / 2`` each, basic composition).

    Parameters
    ----------
    epsilon : Fraction
        The choice's epsilon.

    Returns
    -------
    low, high : Fraction
        The shares, exactly; ``low + high == epsilon``.
    """
    split = first_share(epsilon, Fraction(1, 2))
    return split.first_epsilon, split.rest_epsilon


def bounds_choice_stages(
    method: str,
    epsilon: Fraction,
    costs: Sequence[float],
    *,
    rows: int,
    n_bins: int,
    threshold: int | None,
) -> tuple[Stage, ...]:
    """The stages of a choice of value bounds over ``n_bins`` power-of-two bins.

    ``method="histogram"``: one thresholded noisy histogram (discrete Laplace of scale
    ``rows / epsilon``, L1 sensitivity ``rows``), one count per bin (``8 n_bins`` bytes);
    ``"levels"``: one exponential mechanism per level at its half of ``epsilon``
    (:func:`bound_level_shares`), one score per bin each.

    Parameters
    ----------
    method : {"histogram", "levels"}
        How the bounds are chosen.
    epsilon : Fraction
        The choice's epsilon.
    costs : sequence of float
        Each mechanism's privacy map at distance 1 (one for the histogram, one per level).
    rows : int
        The most rows one unit keeps.
    n_bins : int
        The bins.
    threshold : int or None
        The histogram's threshold (``None`` for the levels).

    Returns
    -------
    tuple of Stage
        One stage per mechanism.
    """
    memory = 8 * n_bins
    if method == "histogram":
        return (Stage("choose the bounds", "noisy histogram of power-of-two bins (discrete "
                      "Laplace)", costs[0], scale=float(Fraction(rows) / epsilon),
                      threshold=None if threshold is None else float(threshold),
                      memory=memory),)  # fmt: skip
    names = ("choose the lower bound", "choose the upper bound")
    return tuple(Stage(name, "exponential mechanism over the bins", cost, memory=memory)
                 for name, cost in zip(names, costs, strict=True))  # fmt: skip


def contributions_choice_stage(cost: float, n_candidates: int) -> Stage:
    """The stage of a private choice of a contribution bound among ``n_candidates``: the
    generalized exponential mechanism (Raskhodnikova and Smith 2016), one score per
    candidate (``8 n_candidates`` bytes).

    Parameters
    ----------
    cost : float
        Its privacy map at distance 1.
    n_candidates : int
        The candidate bounds.

    Returns
    -------
    Stage
        The choice.
    """
    return Stage("choose the contribution bound", "generalized exponential mechanism", cost,
                 memory=8 * n_candidates)  # fmt: skip
