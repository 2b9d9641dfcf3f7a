"""The public candidate prices of a best price: a given list or the grid ``{price_step, 2
price_step, ..., J price_step}`` (:func:`price_grid`), every price a multiple of one public unit,
and the default step from a public number of buyers (:func:`default_price_step`). Public facts
only: :mod:`dpselect.recipes.pricing` has the score, the mechanism and the guarantee.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..core.errors import ParameterError
from ..data.candidates import load_candidates
from ..mechanisms.validate import check_epsilon, check_int

__all__ = ["MAX_GRID", "MAX_MULTIPLE", "PriceGrid", "default_price_step", "price_grid"]

#: The most candidate prices a grid may have.
MAX_GRID = 1_000_000
#: The largest multiple ``J`` of the unit (scores ``j * count`` stay exact in float64).
MAX_MULTIPLE = 2**40


@dataclass(frozen=True)
class PriceGrid:
    """Candidate prices ``multiples[i] * unit`` (as floats in ``prices``)."""

    prices: list[float]
    multiples: list[int]
    unit: Fraction
    price_step: float | None

    @property
    def sensitivity(self) -> Fraction:
        """``Delta = max(prices)``: the largest change of a revenue when a buyer comes or goes."""
        return max(self.multiples) * self.unit


def _positive(value: Any, name: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction, np.number)):
        raise ParameterError(f"{name} must be a number, got {type(value).__name__}")
    f = float(value)
    if not math.isfinite(f) or f <= 0:
        raise ParameterError(f"{name} must be a positive finite number, got {value!r}")
    return Fraction(value) if isinstance(value, (int, Fraction)) else Fraction(f)


def _decimal(value: Any) -> Fraction:
    """A price as the decimal it is written as (0.1 is 1/10, not the float's binary value)."""
    if isinstance(value, (int, Fraction)) and not isinstance(value, bool):
        return Fraction(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"prices must be numbers, got {value!r}") from None
    if not math.isfinite(number):
        raise ParameterError(f"prices must be finite, got {value!r}")
    return Fraction(repr(number))


def default_price_step(n: int, epsilon: Any, max_price: Any = 1.0) -> float:
    """The seed's grid step ``max_price * ln(n) / (n eps)`` for a public ``n >= 2``.

    Parameters
    ----------
    n : int
        A public number of buyers (a published count or an estimate), at least 2.
    epsilon : float
        The price's epsilon.
    max_price : float, default 1.0
        The largest price considered, ``> 0``.

    Returns
    -------
    float
        The grid step ``price_step``, in price units.
    """
    n = check_int(n, "n", minimum=2)
    eps = float(check_epsilon(epsilon))
    return float(_positive(max_price, "max_price")) * math.log(n) / (n * eps)


def price_grid(prices: Any = None, price_step: Any = None, max_price: Any = 1.0) -> PriceGrid:
    """The public candidate prices: a given list, or the grid ``{price_step, ..., J price_step}``.

    Parameters
    ----------
    prices : sequence or str or path, optional
        A public list of prices in ``(0, max_price]`` (or a text file of them, one a line); not
        with ``price_step``.
    price_step : float, optional
        The grid step, ``0 < price_step <= max_price``, at most ``MAX_GRID`` prices (needed without
        ``prices``; see :func:`default_price_step`).
    max_price : float, default 1.0
        The largest price considered, ``> 0``.

    Returns
    -------
    PriceGrid
        The prices, their multiples of the common unit, the unit and ``price_step`` (``None`` for a
        list).
    """
    top = _positive(max_price, "max_price")
    if prices is not None:
        if price_step is not None:
            raise ParameterError("give prices or price_step, not both")
        values = load_candidates(prices, "prices")
        exact = [_decimal(p) for p in values]
        for p in exact:
            _positive(p, "prices")
        if any(p > top for p in exact):
            raise ParameterError(f"prices must be at most max_price = {float(top):g}")
        unit = Fraction(
            math.gcd(*(p.numerator for p in exact)),
            math.lcm(*(p.denominator for p in exact)),
        )
        multiples = [int(p / unit) for p in exact]
        if max(multiples) > MAX_MULTIPLE:
            raise ParameterError(
                f"prices must be multiples of a common unit at least max(prices) / 2^40 "
                f"(for example cents); the unit of these prices is {float(unit):.3g}"
            )
        return PriceGrid([float(p) for p in exact], multiples, unit, None)
    if price_step is None:
        raise ParameterError("give prices, price_step, or a public n for the default price_step")
    step = _positive(price_step, "price_step")
    if step > top:
        raise ParameterError(
            f"price_step must be at most max_price = {float(top):g}, got {price_step}"
        )
    count = math.floor(top / step)
    if count > MAX_GRID:
        raise ParameterError(
            f"price_step = {float(step):.3g} makes {count} grid prices (at most {MAX_GRID}); "
            "choose a larger price_step"
        )
    multiples = list(range(1, count + 1))
    return PriceGrid([float(j * step) for j in multiples], multiples, step, float(step))
