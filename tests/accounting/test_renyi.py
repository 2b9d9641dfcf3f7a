"""Renyi-DP curves against independent high-precision computations."""

import mpmath
import pytest

from dpselect.accounting import (
    bounded_range_rdp,
    compose_rdp,
    gaussian_rdp,
    pure_dp_rdp,
    rdp_to_approx_dp,
    zcdp_rdp,
    zcdp_to_approx_dp,
)
from dpselect.core import ParameterError

mpmath.mp.dps = 40

ORDERS = [1.01, 1.5, 2.0, 5.0, 32.0, 300.0]
EPSILONS = [0.001, 0.1, 1.0, 3.0, 10.0]


def sinh_form(alpha, eps):
    """Bun and Steinke's form of the eps-DP Renyi curve."""
    a, e = mpmath.mpf(alpha), mpmath.mpf(eps)
    return mpmath.log((mpmath.sinh(a * e) - mpmath.sinh((a - 1) * e)) / mpmath.sinh(e)) / (a - 1)


def bounded_range_brute(alpha, eps):
    """max over the two-point laws on [t - eps, t] by golden-section search in mpmath."""
    a, e = mpmath.mpf(alpha), mpmath.mpf(eps)

    def value(q):
        return (mpmath.exp(-a * e) + q * -mpmath.expm1(-a * e)) / (
            mpmath.exp(-e) + q * -mpmath.expm1(-e)
        ) ** a

    lo, hi = mpmath.mpf(0), mpmath.mpf(1)
    r = (mpmath.sqrt(5) - 1) / 2
    for _ in range(200):
        x1, x2 = hi - r * (hi - lo), lo + r * (hi - lo)
        if value(x1) < value(x2):
            lo = x1
        else:
            hi = x2
    return mpmath.log(value((lo + hi) / 2)) / (a - 1)


@pytest.mark.parametrize("alpha", ORDERS)
@pytest.mark.parametrize("eps", EPSILONS)
def test_pure_dp_curve_matches_sinh_form(alpha, eps):
    got = mpmath.mpf(pure_dp_rdp(eps)(alpha))
    exact = sinh_form(alpha, eps)
    assert got >= exact
    assert got - exact <= abs(exact) * 1e-14 + 1e-300


@pytest.mark.parametrize("alpha", ORDERS)
@pytest.mark.parametrize("eps", EPSILONS)
def test_bounded_range_curve_is_the_worst_two_point_law(alpha, eps):
    got = bounded_range_rdp(eps)(alpha)
    brute = bounded_range_brute(alpha, eps)
    assert mpmath.mpf(got) >= brute
    assert mpmath.mpf(got) - brute <= abs(brute) * 1e-12
    # below the zCDP bound and the eps-DP curve (seed 004: bounded range is eps^2/8-zCDP)
    assert got <= alpha * eps * eps / 8 * (1 + 1e-15)
    assert got <= pure_dp_rdp(eps)(alpha)
    # 2 eps bounded range contains eps-DP, so its curve is above
    assert bounded_range_rdp(2 * eps)(alpha) >= pure_dp_rdp(eps)(alpha)


def test_gaussian_and_zcdp_curves():
    assert gaussian_rdp(1.0, 2.0)(4.0) == 0.5  # 4 * 1 / (2 * 4)
    assert zcdp_rdp(0.125)(2.0) == 0.25
    with pytest.raises(ParameterError):
        zcdp_rdp(0.1)(1.0)
    with pytest.raises(ParameterError):
        gaussian_rdp(1.0, 0.0)


def test_composition_adds_curves():
    c = compose_rdp([zcdp_rdp(0.1), zcdp_rdp(0.2), pure_dp_rdp(1.0)])
    assert c(3.0) >= 0.3 + 0.6 + pure_dp_rdp(1.0)(3.0) - 1e-15


def test_conversion_of_a_zcdp_curve_matches_cks():
    eps, alpha = rdp_to_approx_dp(zcdp_rdp(0.125), 1e-6)
    cks = zcdp_to_approx_dp(0.125, 1e-6)
    assert cks <= eps <= cks + 1e-9
    assert alpha > 1


def test_renyi_route_beats_zcdp_for_bounded_range():
    # 100 exponential mechanisms at eps = 0.1: the exact bounded-range curve converts to less
    # than the eps^2/8-zCDP route.
    curve = compose_rdp([bounded_range_rdp(0.1)] * 100)
    eps, _ = rdp_to_approx_dp(curve, 1e-6)
    assert eps < zcdp_to_approx_dp(100 * 0.01 / 8, 1e-6)
    assert eps == pytest.approx(2.4002, abs=1e-3)
