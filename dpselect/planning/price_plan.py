"""The plan of a best price, from public facts only (:func:`plan_price`): the candidate
prices, the exponential mechanism's calibration (``epsilon`` and the sensitivity ``Delta = r
max(prices)``), the seed's revenue guarantee and the release's one stage.

The mechanism's law and the guarantee's proof are in :mod:`dpselect.recipes.pricing` (seed
003, "Selling one digital good"); the recipe builds the mechanism at this plan's calibration,
charges its epsilon and runs it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..mechanisms.utility import utility_bound
from .price_grid import PriceGrid
from .price_request import check_price_arguments
from .stage import Stage

__all__ = ["PricePlan", "plan_price", "price_guarantee"]


@dataclass(frozen=True)
class PricePlan:
    """A price choice planned from public facts: the grid, the calibration, the guarantee.

    Attributes
    ----------
    epsilon : Fraction
        The mechanism's epsilon (what the release is charged), for one buyer added or removed.
    confidence : float
        The guarantee's confidence.
    n : int or None
        The public number of buyers, if given.
    max_rows : int
        The bids each buyer keeps.
    grid : PriceGrid
        The candidate prices.
    selection : float
        The guarantee's selection loss.
    discretization : float or None
        Its discretization loss (a grid with a public ``n``).
    accuracy : str
        The guarantee, as a sentence.
    stages : tuple of Stage
        The release's one stage: the exponential mechanism over the prices.
    """

    epsilon: Fraction
    confidence: float
    n: int | None
    max_rows: int
    grid: PriceGrid
    selection: float
    discretization: float | None
    accuracy: str
    stages: tuple[Stage, ...]

    @property
    def sensitivity(self) -> Fraction:
        """``Delta = max_rows max(prices)``: the most one buyer moves a revenue."""
        return self.grid.sensitivity * self.max_rows

    def parameters(
        self, max_price: float, column: str | None, privacy_unit: str | None
    ) -> dict[str, Any]:
        """The public parameters the ledger and the result record.

        Parameters
        ----------
        max_price : float
            The largest price considered.
        column : str or None
            The valuations' column (``None``: an array).
        privacy_unit : str or None
            The buyer column.

        Returns
        -------
        dict
            The parameters, as JSON values.
        """
        grid, r = self.grid, self.max_rows
        return {
            "epsilon": float(self.epsilon), "n_prices": len(grid.prices),
            "price_step": grid.price_step, "max_price": float(max_price), "n": self.n,
            "column": column,
            **({} if privacy_unit is None else {"privacy_unit": privacy_unit, "max_rows": r}),
        }  # fmt: skip


def price_guarantee(
    grid: PriceGrid,
    eps: Fraction,
    n: int | None,
    max_price: float,
    confidence: float,
    max_rows: int = 1,
) -> tuple[float, float | None, str]:
    """The seed's revenue guarantee of the price mechanism (seed 003, Theorem 3, monotonic
    form: ``revenue >= OPT - (Delta / eps)(ln |H| + t)`` with probability ``1 - e^-t``; and
    ``OPT >= gamma - price_step r n`` on a grid with a public ``n``).

    Parameters
    ----------
    grid : PriceGrid
        The candidate prices.
    eps : Fraction
        The mechanism's epsilon.
    n : int or None
        The public number of buyers.
    max_price : float
        The largest price considered.
    confidence : float
        The probability the guarantee holds with.
    max_rows : int, default 1
        The bids each buyer keeps.

    Returns
    -------
    selection, discretization, text
        The selection loss, the discretization loss (``None`` without a grid and ``n``) and
        the guarantee as a sentence.
    """
    r = max_rows
    bound = utility_bound(
        eps, grid.sensitivity * r, len(grid.prices), confidence=confidence, monotonic=True
    )
    selection = bound.loss
    t = -math.log(1 - confidence)
    delta = f"Delta = {float(grid.sensitivity):g}"
    if r > 1:
        delta = f"Delta = max_rows max(prices) = {float(grid.sensitivity * r):g}"
    if grid.price_step is None or n is None:
        text = (
            f"guarantee: with probability at least {confidence:.0%}, the revenue at this price "
            f"is at least the best listed price's revenue minus {selection:.6g} "
            f"(= (Delta/eps)(ln |H| + t), {delta}, |H| = "
            f"{len(grid.prices)}, t = {t:.3g}; utility theorem, seed 003)"
        )
        return selection, None, text
    discretization = grid.price_step * n * r
    an = "price_step n" if r == 1 else "price_step max_rows n"
    text = (
        f"guarantee: with probability at least {confidence:.0%}, revenue >= gamma - {an} - "
        f"(Delta/eps)(ln |H| + t) = gamma - {discretization:.6g} - {selection:.6g}, gamma the "
        f"best revenue at any price in [0, {max_price:g}] (price_step = "
        f"{grid.price_step:.6g}, n = {n} public, |H| = {len(grid.prices)}, t = {t:.3g}; seed 003)"
    )
    if r > 1:
        text += f" ({delta})"
    return selection, discretization, text


def plan_price(
    epsilon: float,
    confidence: float,
    n: int | None,
    prices: Any,
    price_step: float | None,
    max_price: float,
    max_rows: int | None,
    privacy_unit: str | None,
) -> PricePlan:
    """Check the public parameters in order, then plan the grid, the calibration, the
    guarantee and the stage (nothing read, nothing charged).

    The stage: the monotonic exponential mechanism over the ``|H|`` prices at ``epsilon``
    with weights ``exp(eps s / Delta)`` (its scale ``Delta / eps``, in price units), one
    revenue per price held at once (``8 |H|`` bytes; the engine streams the bids).

    Parameters
    ----------
    epsilon, confidence, n, prices, price_step, max_price, max_rows, privacy_unit
        As :func:`~dpselect.planning.price_request.price_request` takes them.

    Returns
    -------
    PricePlan
        The plan.
    """
    eps, conf, n, r, grid = check_price_arguments(
        epsilon, confidence, n, prices, price_step, max_price, max_rows, privacy_unit
    )
    selection, discretization, text = price_guarantee(grid, eps, n, float(max_price), conf, r)
    stage = Stage(f"choose the price among {len(grid.prices)}",
                  "exponential mechanism (monotonic score: the revenue)", float(eps),
                  scale=float(grid.sensitivity * r / eps),
                  memory=8 * len(grid.prices))  # fmt: skip
    return PricePlan(eps, conf, n, r, grid, selection, discretization, text, (stage,))
