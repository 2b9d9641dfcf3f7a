"""Hypothesis properties: compositions are monotone and never below the largest single loss;
every conversion is never below its exact value computed at high precision."""

import math
from fractions import Fraction

import mpmath
from hypothesis import given, settings
from hypothesis import strategies as st

from dpselect.accounting import (
    MechanismLoss,
    advanced_composition,
    basic_composition,
    best_epsilon,
    bounded_range_rdp,
    kov_heterogeneous_composition,
    optimal_homogeneous_composition,
    pure_dp_rdp,
    zcdp_to_approx_dp,
)

mpmath.mp.dps = 60

eps_st = st.floats(min_value=1e-4, max_value=5.0, allow_nan=False)
small_eps = st.floats(min_value=1e-3, max_value=1.0, allow_nan=False)
delta_st = st.floats(min_value=1e-12, max_value=0.1, allow_nan=False)
rho_st = st.floats(min_value=1e-8, max_value=50.0, allow_nan=False)
losses_st = st.lists(
    st.tuples(eps_st, st.floats(min_value=0.0, max_value=1e-3)), min_size=1, max_size=20
)


@given(losses_st, st.tuples(eps_st, st.floats(min_value=0.0, max_value=1e-3)))
def test_basic_composition_monotone_and_above_each_loss(losses, extra):
    eps, delta = basic_composition(losses)
    assert eps >= max(e for e, _ in losses) and delta >= max(d for _, d in losses)
    eps2, delta2 = basic_composition([*losses, extra])
    assert eps2 >= eps and delta2 >= delta
    assert Fraction(eps) >= sum(Fraction(e) for e, _ in losses)


@given(small_eps, st.integers(1, 40), delta_st)
@settings(max_examples=40, deadline=None)
def test_optimal_homogeneous_monotone_and_above_single_loss(eps, k, delta):
    total = optimal_homogeneous_composition(eps, k, delta)
    assert total <= float(Fraction(eps) * k) * (1 + 1e-15)  # never above basic
    # a single mechanism with delta_target > 0 can be below eps; k copies are never below
    # the optimum of one copy, and adding a copy never helps
    assert total >= optimal_homogeneous_composition(eps, 1, delta)
    assert optimal_homogeneous_composition(eps, k + 1, delta) >= total
    assert optimal_homogeneous_composition(eps * 1.5, k, delta) >= total


@given(st.lists(st.tuples(small_eps, st.just(0.0)), min_size=1, max_size=15), delta_st)
@settings(max_examples=40, deadline=None)
def test_kov_heterogeneous_monotone_and_above_largest(losses, delta):
    eps, _ = kov_heterogeneous_composition(losses, delta)
    more, _ = kov_heterogeneous_composition([*losses, (0.5, 0.0)], delta)
    assert more >= eps
    # at least the largest loss, minus what the slack buys for a single mechanism
    largest = max(e for e, _ in losses)
    assert eps >= optimal_homogeneous_composition(largest, 1, delta)


@given(
    st.lists(st.sampled_from(["pure", "bounded_range", "zcdp"]), min_size=1, max_size=8),
    small_eps,
    delta_st,
)
@settings(max_examples=25, deadline=None)
def test_best_epsilon_monotone(kinds, eps, delta):
    def loss(kind):
        return (
            MechanismLoss.zcdp(eps * eps / 4)
            if kind == "zcdp"
            else MechanismLoss(kind, epsilon=eps)
        )

    mechs = [loss(k) for k in kinds]
    r = best_epsilon(mechs, delta)
    assert r.epsilon == min(r.candidates.values())
    assert best_epsilon([*mechs, MechanismLoss.pure(eps)], delta).epsilon >= r.epsilon
    single = best_epsilon(mechs[:1], delta).epsilon
    assert r.epsilon >= single


def bun_steinke_exact(rho, delta):
    rho = mpmath.mpf(rho)
    return rho + 2 * mpmath.sqrt(rho * mpmath.log(1 / mpmath.mpf(delta)))


def cks_at_order_exact(rho, delta, alpha):
    a, rho = mpmath.mpf(alpha), mpmath.mpf(rho)
    L = -mpmath.log(mpmath.mpf(delta))
    return a * rho + (L + (a - 1) * mpmath.log(1 - 1 / a) - mpmath.log(a)) / (a - 1)


def cks_inf_exact(rho, delta):
    L = -mpmath.log(mpmath.mpf(delta))
    rho_m = mpmath.mpf(rho)
    lo, hi = mpmath.mpf(0), mpmath.sqrt(L / rho_m)  # the minimiser's bracket
    for _ in range(220):
        mid = (lo + hi) / 2
        if L - mpmath.log1p(mid) > rho_m * mid * mid:
            lo = mid
        else:
            hi = mid
    return cks_at_order_exact(rho, delta, 1 + hi)


@given(rho_st, delta_st)
@settings(max_examples=60, deadline=None)
def test_zcdp_conversions_never_below_exact(rho, delta):
    bs = zcdp_to_approx_dp(rho, delta, method="bun_steinke")
    assert mpmath.mpf(bs) >= bun_steinke_exact(rho, delta)
    cks = zcdp_to_approx_dp(rho, delta)
    exact = cks_inf_exact(rho, delta)
    assert mpmath.mpf(cks) >= max(exact, 0)
    assert mpmath.mpf(cks) - max(exact, 0) <= 1e-12 * (1 + abs(exact))  # and near-optimal
    assert cks <= bs


@given(eps_st, st.floats(min_value=1.001, max_value=1000.0))
@settings(max_examples=60, deadline=None)
def test_renyi_curves_never_below_exact(eps, alpha):
    a, e = mpmath.mpf(alpha), mpmath.mpf(eps)
    pure_exact = mpmath.log((mpmath.exp(a * e) + mpmath.exp((1 - a) * e)) / (1 + mpmath.exp(e))) / (
        a - 1
    )
    assert mpmath.mpf(pure_dp_rdp(eps)(alpha)) >= pure_exact
    big_a, big_b = -mpmath.expm1(-a * e), -mpmath.expm1(-e)
    q = (big_a * mpmath.exp(-e) - a * big_b * mpmath.exp(-a * e)) / ((a - 1) * big_a * big_b)
    br_exact = mpmath.log((mpmath.exp(-a * e) + q * big_a) / (mpmath.exp(-e) + q * big_b) ** a) / (
        a - 1
    )
    assert 0 <= q <= 1
    assert mpmath.mpf(bounded_range_rdp(eps)(alpha)) >= br_exact


@given(small_eps, st.integers(1, 200), delta_st, delta_st)
@settings(max_examples=40, deadline=None)
def test_advanced_composition_never_below_exact(eps, k, dp, d):
    out, total_delta = advanced_composition(eps, k, dp, delta=d)
    e = mpmath.mpf(eps)
    exact = mpmath.sqrt(2 * k * mpmath.log(1 / mpmath.mpf(dp))) * e + k * e * mpmath.expm1(e)
    assert mpmath.mpf(out) >= exact
    assert Fraction(total_delta) >= min(k * Fraction(d) + Fraction(dp), Fraction(1))
    assert out >= eps or math.isclose(out, eps)
