"""zCDP losses and conversions against hand values and the seeds' numbers (seed 004)."""

from fractions import Fraction

import mpmath
import pytest

from dpselect.accounting import (
    approx_dp_to_zcdp_budget,
    bounded_range_to_zcdp,
    cks_epsilon_at_order,
    gaussian_zcdp,
    pure_dp_to_zcdp,
    zcdp_composition,
    zcdp_to_approx_dp,
)
from dpselect.core import ParameterError

mpmath.mp.dps = 50


def cks_exact(rho, delta):
    """inf over alpha of the CKS bound, at 50 digits (the minimiser solves
    ln(1/delta) - ln(alpha) = rho (alpha - 1)^2)."""
    rho, delta = mpmath.mpf(rho), mpmath.mpf(delta)
    L = -mpmath.log(delta)
    lo, hi = mpmath.mpf(0), mpmath.sqrt(L / rho)
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if L - mpmath.log1p(mid) > rho * mid * mid else (lo, mid)
    a = 1 + hi
    return a * rho + (L + (a - 1) * mpmath.log(1 - 1 / a) - mpmath.log(a)) / (a - 1)


def bun_steinke_exact(rho, delta):
    rho = mpmath.mpf(rho)
    return rho + 2 * mpmath.sqrt(rho * mpmath.log(1 / mpmath.mpf(delta)))


def test_losses_hand_values():
    assert pure_dp_to_zcdp(1.0) == 0.5
    assert bounded_range_to_zcdp(1.0) == 0.125  # seed 004: eps^2 / 8
    assert gaussian_zcdp(1.0, 2.0) == 0.125
    assert Fraction(pure_dp_to_zcdp(0.1)) >= Fraction(0.1) ** 2 / 2
    assert Fraction(bounded_range_to_zcdp(0.1)) >= Fraction(0.1) ** 2 / 8
    assert zcdp_composition([0.1, 0.2, 0.3]) >= 0.6
    assert Fraction(zcdp_composition([0.1, 0.2, 0.3])) >= Fraction(0.1) + Fraction(0.2) + Fraction(
        0.3
    )
    with pytest.raises(ParameterError):
        gaussian_zcdp(1.0, 0.0)


def test_cks_seed_value():
    # The number: rho = 0.125, delta = 1e-6 gives eps about 2.419.
    eps = zcdp_to_approx_dp(0.125, 1e-6)
    assert eps == pytest.approx(2.419, abs=5e-4)
    exact = cks_exact(0.125, 1e-6)
    assert mpmath.mpf(eps) >= exact
    assert mpmath.mpf(eps) - exact < 1e-12


def test_bun_steinke_hand_value():
    eps = zcdp_to_approx_dp(0.125, 1e-6, method="bun_steinke")
    exact = bun_steinke_exact(0.125, 1e-6)  # 0.125 + 2 sqrt(0.125 ln 1e6) = 2.75326...
    assert mpmath.mpf(eps) >= exact and mpmath.mpf(eps) - exact < 1e-14
    assert eps == pytest.approx(2.753260884878466, rel=1e-14)
    assert zcdp_to_approx_dp(0.125, 1e-6) < eps


def test_conversion_edge_cases():
    assert zcdp_to_approx_dp(0.0, 1e-6) == 0.0
    assert zcdp_to_approx_dp(0.5, 1.0) == 0.0
    assert zcdp_to_approx_dp(1e-14, 1e-6) == 0.0  # TV distance below delta: (0, delta)-DP
    with pytest.raises(ParameterError):
        zcdp_to_approx_dp(0.1, 0.0)
    with pytest.raises(ParameterError):
        zcdp_to_approx_dp(0.1, 1e-6, method="mironov")  # type: ignore[arg-type]
    # Any order gives a valid (never smaller) bound.
    assert cks_epsilon_at_order(0.125, 1e-6, 3.0) >= zcdp_to_approx_dp(0.125, 1e-6)


def test_zcdp_budget_inverts_the_conversion():
    rho = approx_dp_to_zcdp_budget(1.0, 1e-6)
    assert zcdp_to_approx_dp(rho, 1e-6) <= 1.0
    assert zcdp_to_approx_dp(rho * (1 + 1e-12), 1e-6) > 1.0 - 1e-9
    assert rho == pytest.approx(0.02435597, rel=1e-6)
    assert approx_dp_to_zcdp_budget(0.0, 1e-6) == 0.0


@pytest.mark.parametrize(("rho", "delta"), [(0.5, 0.0), (0.5, 1.0), (0.0, 1e-6), (-1.0, 1e-6),
                                            (float("inf"), 1e-6), (0.5, float("nan"))])  # fmt: skip
def test_cks_optimal_order_refuses_what_it_cannot_convert(rho: float, delta: float) -> None:
    from dpselect.accounting.zcdp import cks_optimal_order
    from dpselect.core.errors import ParameterError

    with pytest.raises(ParameterError, match="cks_optimal_order needs"):
        cks_optimal_order(rho, delta)
