"""Kairouz-Oh-Viswanath and Dong-Durfee-Rogers optimal composition, against hand values and
independent computations."""

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from dpselect.accounting import (
    bounded_range_composition,
    bounded_range_composition_delta,
    kov_heterogeneous_composition,
    optimal_homogeneous_composition,
    optimal_homogeneous_delta,
    zcdp_to_approx_dp,
)
from dpselect.core import ParameterError

mpmath.mp.dps = 50


def kov_delta_i(eps, k, i):
    """KOV 2015 Theorem 3.3's delta_i at eps_g = (k - 2i) eps, for delta = 0."""
    e = mpmath.mpf(eps)
    total = sum(
        mpmath.binomial(k, j) * (mpmath.exp((k - j) * e) - mpmath.exp((k - 2 * i + j) * e))
        for j in range(i)
    )
    return total / (1 + mpmath.exp(e)) ** k


@pytest.mark.parametrize("eps,k", [(0.1, 10), (0.5, 7), (1.0, 4)])
def test_kov_delta_at_the_theorem_grid(eps, k):
    for i in range(k // 2 + 1):
        got = optimal_homogeneous_delta(eps, k, (k - 2 * i) * Fraction(eps))  # exact grid point
        exact = kov_delta_i(eps, k, i)
        assert mpmath.mpf(got) >= exact
        assert mpmath.mpf(got) - exact <= exact * 1e-15


def test_kov_one_and_two_mechanisms_by_hand():
    eps, target = 1.0, 0.01
    # k = 1: delta(eps_g) = (e^eps - e^eps_g) / (1 + e^eps)
    e1 = optimal_homogeneous_composition(eps, 1, target)
    exact1 = mpmath.log(mpmath.e - target * (1 + mpmath.e))
    assert mpmath.mpf(e1) >= exact1 and mpmath.mpf(e1) - exact1 < 1e-15
    # k = 2, eps_g in (0, 2 eps): delta = (e^{2eps} - e^eps_g) / (1 + e^eps)^2
    e2 = optimal_homogeneous_composition(eps, 2, target)
    exact2 = mpmath.log(mpmath.e**2 - target * (1 + mpmath.e) ** 2)
    assert mpmath.mpf(e2) >= exact2 and mpmath.mpf(e2) - exact2 < 1e-14


def test_kov_with_per_mechanism_delta():
    # delta_g = 1 - (1 - delta)^k (1 - S): a target below 1 - (1 - delta)^k is unreachable
    with pytest.raises(ParameterError):
        optimal_homogeneous_composition(0.1, 10, 1e-6, delta=1e-6)
    loose = optimal_homogeneous_composition(0.1, 10, 2e-5)
    tight = optimal_homogeneous_composition(0.1, 10, 2e-5, delta=1e-6)
    assert tight > loose
    assert optimal_homogeneous_composition(0.1, 10, 1.0) == 0.0
    # k = 1 by hand: delta_g = delta + (1 - delta) S, S = (e^eps - e^eps_g) / (1 + e^eps)
    d, target = mpmath.mpf(0.001), mpmath.mpf(0.01)
    s = (target - d) / (1 - d)
    exact = mpmath.log(mpmath.e - s * (1 + mpmath.e))
    got = optimal_homogeneous_composition(1.0, 1, 0.01, delta=0.001)
    assert mpmath.mpf(got) >= exact and mpmath.mpf(got) - exact < 1e-15


@pytest.mark.parametrize("eps,k,delta", [(0.1, 100, 1e-6), (0.5, 30, 1e-5), (1.0, 10, 1e-3)])
def test_kov_heterogeneous_bound_is_valid_and_matches_its_formula(eps, k, delta):
    het, d_out = kov_heterogeneous_composition([(eps, 0.0)] * k, delta)
    assert d_out >= delta
    # never below the exact optimum (a sanity check of the formula)
    assert het >= optimal_homogeneous_composition(eps, k, delta)
    e, d = mpmath.mpf(eps), mpmath.mpf(delta)
    first = k * e * mpmath.tanh(e / 2)
    s2 = k * e * e
    exact = min(
        k * e,
        first + mpmath.sqrt(2 * s2 * mpmath.log(mpmath.e + mpmath.sqrt(s2) / d)),
        first + mpmath.sqrt(2 * s2 * mpmath.log(1 / d)),
    )
    assert mpmath.mpf(het) >= exact and mpmath.mpf(het) - exact < 1e-12


def test_kov_heterogeneous_delta_accounting():
    _, d_out = kov_heterogeneous_composition([(0.1, 1e-7), (0.2, 2e-7)], 1e-6)
    exact = 1 - (1 - mpmath.mpf(1e-6)) * (1 - mpmath.mpf(1e-7)) * (1 - mpmath.mpf(2e-7))
    assert mpmath.mpf(d_out) >= exact and mpmath.mpf(d_out) - exact < 1e-20


def ddr_delta_grid(eps, k, eps_g, n=4001):
    """max over a fine grid of t of the generalised-randomized-response delta, in floats."""
    best = 0.0
    j = np.arange(k + 1)
    logc = np.array([math.lgamma(k + 1) - math.lgamma(x + 1) - math.lgamma(k - x + 1) for x in j])
    for t in np.linspace(0, eps, n)[1:-1]:
        p = (math.exp(-t) - math.exp(-eps)) / (1 - math.exp(-eps))
        a = math.exp(t) * p
        P = np.exp(logc + j * math.log(a) + (k - j) * math.log1p(-a))
        Q = np.exp(logc + j * math.log(p) + (k - j) * math.log1p(-p))
        best = max(best, float(np.sum(np.maximum(P - math.exp(eps_g) * Q, 0.0))))
    return best


@pytest.mark.parametrize(
    "eps,k,eps_g", [(0.5, 1, 0.1), (0.5, 5, 0.8), (0.2, 12, 0.6), (1.0, 6, 2.5)]
)
def test_ddr_delta_is_the_maximum_over_t(eps, k, eps_g):
    got = bounded_range_composition_delta(eps, k, eps_g)
    grid = ddr_delta_grid(eps, k, eps_g)
    assert got >= grid * (1 - 1e-12)
    assert got <= grid * (1 + 1e-4) + 1e-15  # the grid misses the exact t_l by a little


def test_ddr_single_mechanism_by_hand():
    # k = 1: delta(eps_g) = max_t p_t (e^t - e^eps_g), p_t = (e^-t - e^-eps) / (1 - e^-eps)
    eps, eps_g = mpmath.mpf(1), mpmath.mpf("0.3")

    def f(t):
        p = (mpmath.exp(-t) - mpmath.exp(-eps)) / (1 - mpmath.exp(-eps))
        return p * (mpmath.exp(t) - mpmath.exp(eps_g))

    t_star = (eps_g + eps) / 2  # t_l with l = 1
    exact = f(t_star)
    assert f(t_star - mpmath.mpf("1e-6")) < exact and f(t_star + mpmath.mpf("1e-6")) < exact
    got = bounded_range_composition_delta(1.0, 1, 0.3)
    assert mpmath.mpf(got) >= exact and mpmath.mpf(got) - exact < 1e-15


@pytest.mark.parametrize("eps,k,delta", [(0.1, 100, 1e-6), (0.5, 20, 1e-5), (1.0, 10, 1e-3)])
def test_ddr_is_optimal_and_certified(eps, k, delta):
    eps_g = bounded_range_composition(eps, k, delta)
    assert bounded_range_composition_delta(eps, k, eps_g) <= delta
    assert bounded_range_composition_delta(eps, k, eps_g * (1 - 1e-6)) > delta
    # tighter than treating the mechanisms as eps-DP (KOV) or as eps^2/8-zCDP
    assert eps_g < optimal_homogeneous_composition(eps, k, delta)
    assert eps_g < zcdp_to_approx_dp(k * eps * eps / 8, delta)


def test_ddr_number():
    assert bounded_range_composition(0.1, 100, 1e-6) == pytest.approx(2.24603, abs=1e-4)
