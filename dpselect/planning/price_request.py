"""A price request: the arguments of a best price as one value, before anything is opened.

:func:`price_request` takes the arguments of :func:`dpselect.best_price` as the caller typed
them, maps the contribution bounds (a :class:`~.contributions.Contributions`: each row is one
bid, so ``values_per_unit`` is the most bids one unit keeps; nothing else applies) and returns
a frozen :class:`PriceRequest`; the recipe :func:`dpselect.recipes.pricing.best_price` takes
only the request. Nothing is opened, read or charged here: the bounds are refused first, from
public facts only, then ``epsilon``, ``confidence``, ``n``, the default step, the bids per
buyer and the grid, in that order (:func:`check_price_arguments`, which the recipe runs again
on the request it is given, before the charge).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..core.errors import ParameterError
from ..mechanisms.validate import check_confidence, check_int, check_max_rows, check_user_epsilon
from .contributions import Contributions, as_contributions
from .epsilon_range import check_epsilon_range
from .price_grid import PriceGrid, default_price_step, price_grid
from .top_k_plan import CONFIDENCE

__all__ = ["PriceRequest", "check_price_arguments", "price_request"]


@dataclass(frozen=True)
class PriceRequest:
    """A best price's public arguments (:func:`price_request`).

    Attributes
    ----------
    epsilon : float
        The privacy cost, as given.
    prices : list or path or None
        The public candidate prices (``None``: the grid of ``price_step``).
    price_step : float or None
        The grid's step.
    max_price : float
        The largest price considered.
    n : int or None
        The public number of buyers.
    column : str or None
        The column of bids (``None``: an array of valuations).
    confidence : float
        The revenue guarantee's confidence.
    privacy_unit : str or None
        The column identifying buyers (``None``: each bid is a buyer).
    max_rows : int or None
        The most bids one buyer keeps (``None``: 1; only with a unit).
    """

    epsilon: float
    prices: Sequence[float] | str | None = None
    price_step: float | None = None
    max_price: float = 1.0
    n: int | None = None
    column: str | None = None
    confidence: float = CONFIDENCE
    privacy_unit: str | None = None
    max_rows: int | None = None


def price_request(
    epsilon: float,
    *,
    prices: Sequence[float] | str | None = None,
    price_step: float | None = None,
    max_price: float = 1.0,
    n: int | None = None,
    column: str | None = None,
    confidence: float = CONFIDENCE,
    privacy_unit: str | None = None,
    contributions: Contributions | None = None,
) -> PriceRequest:
    """The arguments of a best price, its contribution bound mapped (refused first).

    Parameters
    ----------
    epsilon : float
        The privacy cost: pure DP for one buyer added or removed.
    prices : list of float or path, optional
        The public candidate prices, a list or a text file (default: a grid from
        ``price_step`` and ``max_price``).
    price_step : float, optional
        The grid ``{price_step, 2 price_step, ..., <= max_price}``'s step
        (:func:`dpselect.recipes.price_grid`); without ``prices`` or ``price_step``,
        ``max_price ln(n) / (n eps)``, which needs ``n``.
    max_price : float, default 1.0
        The public upper bound on a valuation (the revenue score's sensitivity).
    n : int, optional
        The **public** number of buyers (the true count is private), for the default step
        and the revenue guarantee.
    column : str, optional
        The column of bids in a table or a data file.
    confidence : float, default 0.95
        The revenue guarantee's confidence.
    privacy_unit : str, optional
        Table input only: the column identifying buyers who may place several bids;
        ``epsilon`` then protects one buyer.
    contributions : Contributions, optional
        ``values_per_unit``: the most bids one buyer keeps (a number, default 1; with
        ``privacy_unit``); the other fields are refused.

    Returns
    -------
    PriceRequest
        The arguments, the bound mapped to ``max_rows``.

    Raises
    ------
    ParameterError
        A bound that does not apply, before anything is opened or charged.
    """
    bounds = Contributions() if contributions is None else as_contributions(contributions)
    max_rows = bounds.arguments("best_price", privacy_unit)["max_rows"]
    check_price_arguments(epsilon, confidence, n, prices, price_step, max_price, max_rows,
                          privacy_unit)  # fmt: skip
    return PriceRequest(epsilon, prices, price_step, max_price, n, column, confidence,
                        privacy_unit, max_rows)  # fmt: skip


def check_price_arguments(
    epsilon: Any,
    confidence: Any,
    n: Any,
    prices: Any,
    price_step: Any,
    max_price: Any,
    max_rows: Any,
    privacy_unit: str | None,
) -> tuple[Fraction, float, int | None, int, PriceGrid]:
    """A best price's public arguments checked in order: ``epsilon``, ``confidence``, ``n``,
    the default step (which needs ``n`` without prices), the bids per buyer, the grid.

    Parameters
    ----------
    epsilon, confidence, n, prices, price_step, max_price, privacy_unit
        As :func:`price_request` takes them.
    max_rows : int or None
        The bids one buyer keeps (``None``: 1; only with a unit).

    Returns
    -------
    tuple
        ``(eps, confidence, n, bids per buyer, grid)``.
    """
    eps = Fraction(check_user_epsilon(epsilon))
    check_epsilon_range(eps)
    conf = check_confidence(confidence)
    n = None if n is None else check_int(n, "n", minimum=2)
    if prices is None and price_step is None:
        if n is None:
            raise ParameterError(
                "give prices, price_step, or n: the default price_step = ln(n) / (n eps) needs "
                "a public number of buyers n (the true count is private)"
            )
        price_step = default_price_step(n, eps, max_price)
    if max_rows is not None and privacy_unit is None:
        raise ParameterError(
            "max_rows applies only with a privacy_unit column (without one each bid is a buyer)"
        )
    r = 1 if max_rows is None else check_max_rows(max_rows)
    return eps, conf, n, r, price_grid(prices, price_step, max_price)
