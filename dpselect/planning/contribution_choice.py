"""The private choice of a contribution bound, as a planner sees it: its candidates and its cost.

A release with ``values_per_unit="auto"`` first chooses the bound ``m`` privately with the
generalized exponential mechanism (Raskhodnikova and Smith 2016; seed 002, the exponential
mechanism's proof; docs/private_selection.md, "Generalized exponential mechanism") among
:data:`DEFAULT_CONTRIBUTIONS`. What that choice costs is public (GEM's map at distance 1), so
it is planned here before anything is charged; the choice itself runs in the recipes, after
the charge.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction

from ..core.errors import ParameterError
from ..mechanisms.generalized_exponential import make_generalized_exponential_mechanism
from ..mechanisms.validate import check_epsilon

__all__ = ["DEFAULT_CONTRIBUTIONS", "contribution_choice_cost"]

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
    gem = make_generalized_exponential_mechanism(
        bounds,
        lambda scores, L: scores[L],
        [Fraction(L) for L in bounds],
        epsilon=eps,
        beta=beta,
        source=None,
    )
    return float(gem.map(1))


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
