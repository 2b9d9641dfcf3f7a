"""Basic and advanced composition against hand values (seed 002)."""

import math
from fractions import Fraction

import mpmath
import pytest

from dpselect.accounting import (
    advanced_composition,
    advanced_composition_corollary,
    advanced_composition_inverse,
    basic_composition,
)
from dpselect.core import ParameterError

mpmath.mp.dps = 50


def test_basic_composition_sums_exactly_then_rounds_up():
    eps, delta = basic_composition([(0.1, 1e-6), (0.2, 0.0), (0.3, 2e-6)])
    exact_eps = Fraction(0.1) + Fraction(0.2) + Fraction(0.3)
    assert Fraction(eps) >= exact_eps
    assert Fraction(math.nextafter(eps, 0)) < exact_eps  # tight: one float up at most
    assert Fraction(delta) >= Fraction(1e-6) + Fraction(2e-6)
    assert basic_composition([]) == (0.0, 0.0)
    assert basic_composition([(1.0, 0.7), (1.0, 0.7)]) == (2.0, 1.0)  # delta capped at 1


@pytest.mark.parametrize(
    "losses", [[(-0.1, 0.0)], [(math.nan, 0.0)], [(0.1, 1.5)], [(math.inf, 0.0)], [0.1]]
)
def test_basic_composition_refuses_bad_losses(losses):
    with pytest.raises(ParameterError):
        basic_composition(losses)


def _drv(eps, k, dp):
    e = mpmath.mpf(eps)
    return mpmath.sqrt(2 * k * mpmath.log(1 / mpmath.mpf(dp))) * e + k * e * mpmath.expm1(e)


@pytest.mark.parametrize("eps,k,dp", [(0.1, 100, 1e-6), (0.01, 1000, 1e-9), (1.0, 10, 0.5)])
def test_advanced_composition_hand_values(eps, k, dp):
    out, delta = advanced_composition(eps, k, dp, delta=1e-8)
    exact = _drv(eps, k, dp)
    assert mpmath.mpf(out) >= exact
    assert mpmath.mpf(out) <= exact * (1 + mpmath.mpf(2) ** -50)
    assert Fraction(delta) >= k * Fraction(1e-8) + Fraction(dp)


def test_advanced_composition_numbers():
    # eps=0.1, k=100, delta'=1e-6: sqrt(200 ln 1e6) * 0.1 + 10 (e^0.1 - 1) = 5.2565 + 1.0517
    out, _ = advanced_composition(0.1, 100, 1e-6)
    assert out == pytest.approx(6.308230950513409, rel=1e-12)


def test_corollary_and_inverse():
    target, k, dp = 0.5, 100, 1e-6
    cor = advanced_composition_corollary(target, k, dp)
    exact = mpmath.mpf(target) / (2 * mpmath.sqrt(2 * k * mpmath.log(1 / mpmath.mpf(dp))))
    assert mpmath.mpf(cor) <= exact and mpmath.mpf(cor) >= exact * (1 - mpmath.mpf(2) ** -50)
    assert advanced_composition(cor, k, dp)[0] <= target  # the corollary holds
    inv = advanced_composition_inverse(target, k, dp)
    assert inv > 1.9 * cor  # solving the theorem numerically is much tighter
    assert advanced_composition(inv, k, dp)[0] <= target
    assert _drv(math.nextafter(inv, math.inf), k, dp) > target  # and it is the largest float
    with pytest.raises(ParameterError):
        advanced_composition_corollary(1.5, k, dp)
    assert advanced_composition_inverse(0.0, k, dp) == 0.0


def test_advanced_composition_refuses_bad_parameters():
    with pytest.raises(ParameterError):
        advanced_composition(0.1, 0, 1e-6)
    with pytest.raises(ParameterError):
        advanced_composition(0.1, 10, 0.0)
    with pytest.raises(ParameterError):
        advanced_composition(0.1, 2.5, 1e-6)  # type: ignore[arg-type]
