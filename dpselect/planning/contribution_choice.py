"""The private choice of a contribution bound, as a planner sees it: its candidates and its cost.

A release with ``values_per_unit="auto"`` first chooses the bound ``m`` privately with the
generalized exponential mechanism (Raskhodnikova and Smith 2016; seed 002, the exponential
mechanism's proof; docs/private_selection.md, "Generalized exponential mechanism") among
:data:`DEFAULT_CONTRIBUTIONS`. What that choice costs is public (GEM's map at distance 1), so
it is planned here before anything is charged; the choice itself runs in the recipes, after
the charge.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any

from ..core.errors import ParameterError
from ..mechanisms.generalized_exponential import make_generalized_exponential_mechanism
from ..mechanisms.validate import check_epsilon
from ..sampling.source import RandomSource

__all__ = ["DEFAULT_CONTRIBUTIONS", "bound_choice", "contribution_choice_cost"]

#: Default candidates for the contribution bound: 1, 2, 4, ..., 256.
DEFAULT_CONTRIBUTIONS = tuple(1 << j for j in range(9))


def contribution_choice_cost(
    epsilon: float | Fraction, candidates: Iterable[int] | None = None, beta: float = 0.05
) -> float:
    """What the private choice of a contribution bound costs at ``epsilon`` (GEM's map at
    distance 1, at most ``epsilon``): public, computed without data.

    Each candidate bound ``L`` has sensitivity ``L`` (one person adds at most ``L`` kept
    contributions), as in :func:`dpselect.recipes.bounds.choose_max_contributions`.

    Parameters
    ----------
    epsilon : float or Fraction
        The epsilon given to the choice.
    candidates : iterable of int, optional
        The candidate bounds, distinct positive integers (default
        :data:`DEFAULT_CONTRIBUTIONS`).
    beta : float, default 0.05
        GEM's ``beta`` in ``(0, 1)`` (it sets the threshold, not the cost bound).

    Returns
    -------
    float
        The choice's pure-DP cost for one person added or removed (at most ``epsilon``).

    Raises
    ------
    ParameterError
        When ``epsilon`` or a candidate is not usable (public arguments).
    """
    eps = Fraction(check_epsilon(epsilon))
    bounds = _bounds(candidates)
    return float(bound_choice(bounds, [Fraction(L) for L in bounds], eps, None, beta).map(1))


def bound_choice(
    bounds: Sequence[int],
    sensitivities: Sequence[Fraction],
    epsilon: Fraction,
    source: RandomSource | None,
    beta: float = 0.05,
) -> Any:
    """The generalized exponential mechanism that picks one of ``bounds`` from a score per
    bound (Raskhodnikova and Smith 2016; seed 002, the exponential mechanism's proof;
    docs/private_selection.md, "Generalized exponential mechanism"): every private choice of
    a bound (contributions per unit, rows per unit) builds it here.

    Parameters
    ----------
    bounds : sequence of int
        The candidate bounds, distinct.
    sensitivities : sequence of Fraction
        Each bound's score sensitivity, in the order of ``bounds``.
    epsilon : Fraction
        The choice's share; GEM is ``epsilon``-DP (its map at distance 1 is at most it).
    source : RandomSource or None
        The randomness (tests only).
    beta : float, default 0.05
        GEM's ``beta`` in ``(0, 1)`` (it sets the threshold, not the cost bound).

    Returns
    -------
    Measurement
        ``mechanism(scores)`` with ``scores`` a mapping from each bound to its score; its
        output is the chosen bound.
    """
    return make_generalized_exponential_mechanism(
        list(bounds), lambda scores, b: scores[b], list(sensitivities), epsilon=epsilon,
        beta=beta, source=source,
    )  # fmt: skip


def _bounds(candidates: Iterable[int] | None) -> list[int]:
    """The candidate bounds, sorted; refused unless distinct positive integers."""
    if candidates is None:
        return list(DEFAULT_CONTRIBUTIONS)
    if isinstance(candidates, (str, bytes)) or not hasattr(candidates, "__iter__"):
        raise ParameterError("candidates must be a list of positive integers")
    out = list(candidates)
    for v in out:
        if isinstance(v, bool) or not hasattr(v, "__index__") or v < 1:
            raise ParameterError(f"candidates must be positive integers, got {v!r}")
    if not out or len(set(out)) != len(out):
        raise ParameterError("candidates must be a non-empty list of distinct integers")
    return sorted(int(v) for v in out)
