"""Cross-checks against Google's dp-accounting (PLD and RDP accountants) and OpenDP 0.16.

Tolerances and findings:

- zCDP -> (eps, delta): OpenDP's ``make_zCDP_to_approxDP`` uses the same Canonne-Kamath-Steinke
  bound; we agree to 1e-9. dp-accounting's RDP accountant evaluates it on a grid of 156 orders,
  so it is looser by up to ~1e-5 here; we are never above it.
- Optimal composition of eps-DP: the k-fold binary randomized response is the worst case
  (KOV 2015), so dp-accounting's PLD accountant (pessimistic discretisation, interval 1e-4) of
  ``k`` composed RR events must be at least our exact KOV value and close to it (1e-2).
- **dp-accounting 0.6.0 bug**: ``PLDAccountant`` ignores ``count`` for
  ``RandomizedResponseDpEvent`` (``compose(event, count=k)`` and ``SelfComposedDpEvent(event,
  k)`` both account for a single response), under-stating epsilon by a factor of about k. We
  compose ``ComposedDpEvent([rr] * k)`` instead and assert the bug so that a fix is noticed.
- dp-accounting 0.6.0 has no exponential-mechanism event, so the claim that its RDP accountant
  ignores ``count`` for one cannot be checked on this version; we model the exponential
  mechanism as ``ZCDpEvent(eps^2/8)``, for which ``count`` *is* honoured (asserted below).
- Laplace and Gaussian: dp-accounting's PLD is tighter than any generic eps-DP or zCDP bound
  (it uses the mechanisms' exact privacy loss distributions); our generic bounds must be above.
"""

import math
import warnings

import pytest

from dpselect.accounting import (
    MechanismLoss,
    best_epsilon,
    compose_rdp,
    optimal_homogeneous_composition,
    pure_dp_rdp,
    rdp_to_approx_dp,
    zcdp_to_approx_dp,
)

dp_accounting = pytest.importorskip("dp_accounting")
from dp_accounting import dp_event  # noqa: E402
from dp_accounting.pld import pld_privacy_accountant as pld  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant as rdp  # noqa: E402

warnings.filterwarnings("ignore", category=DeprecationWarning)


def rr_event(eps):
    # noise_parameter p: with probability p answer uniformly at random (2 buckets),
    # so the likelihood ratio is (1 - p/2) / (p/2) = e^eps.
    return dp_event.RandomizedResponseDpEvent(
        noise_parameter=2 / (1 + math.exp(eps)), num_buckets=2
    )


def pld_rr(eps, k, delta, composed=True):
    acc = pld.PLDAccountant(neighboring_relation=pld.NeighborRel.REPLACE_ONE)
    event = dp_event.ComposedDpEvent([rr_event(eps)] * k) if composed else rr_event(eps)
    acc.compose(event, count=1 if composed else k)
    return acc.get_epsilon(delta)


@pytest.mark.parametrize("rho,delta", [(0.125, 1e-6), (0.01, 1e-9), (2.0, 1e-5)])
def test_cks_against_dp_accounting_rdp(rho, delta):
    acc = rdp.RdpAccountant()
    acc.compose(dp_event.ZCDpEvent(rho=rho))
    theirs = acc.get_epsilon(delta)
    ours = zcdp_to_approx_dp(rho, delta)
    assert ours <= theirs + 1e-12  # they optimise over a grid of orders
    assert theirs - ours < 1e-3


def test_dp_accounting_rdp_honours_count_for_zcdp_events():
    assert not any("xponential" in name for name in dir(dp_event))  # no such event in 0.6.0
    once = rdp.RdpAccountant()
    once.compose(dp_event.ZCDpEvent(rho=100 * 0.01 / 8))
    counted = rdp.RdpAccountant()
    counted.compose(dp_event.ZCDpEvent(rho=0.01 / 8), count=100)
    assert counted.get_epsilon(1e-6) == pytest.approx(once.get_epsilon(1e-6), rel=1e-12)
    ours = best_epsilon([MechanismLoss.bounded_range(0.1)] * 100, 1e-6)
    assert ours.epsilon < counted.get_epsilon(1e-6)  # the exact bounded-range curve is tighter


@pytest.mark.parametrize("eps,k,delta", [(0.1, 100, 1e-6), (0.5, 20, 1e-5), (1.0, 10, 1e-3)])
def test_kov_against_dp_accounting_pld_of_randomized_response(eps, k, delta):
    theirs = pld_rr(eps, k, delta)
    ours = optimal_homogeneous_composition(eps, k, delta)
    assert ours <= theirs + 1e-9  # their discretisation is pessimistic
    assert theirs - ours < 1e-2


def test_dp_accounting_pld_ignores_count_for_randomized_response():
    # Known peer bug (dp-accounting 0.6.0): count is dropped for RandomizedResponseDpEvent.
    dropped = pld_rr(0.1, 100, 1e-6, composed=False)
    assert dropped < 0.11  # one response's epsilon, not 100 responses'
    assert pld_rr(0.1, 100, 1e-6) > 4.7


def test_generic_bounds_are_above_mechanism_specific_pld():
    eps, k, delta = 0.1, 100, 1e-6
    lap = pld.PLDAccountant()
    lap.compose(dp_event.LaplaceDpEvent(noise_multiplier=1 / eps), count=k)
    ours_pure = best_epsilon([MechanismLoss.pure(eps)] * k, delta).epsilon
    assert ours_pure >= lap.get_epsilon(delta)
    gauss = pld.PLDAccountant()
    gauss.compose(dp_event.GaussianDpEvent(noise_multiplier=5.0), count=10)
    ours_gauss = zcdp_to_approx_dp(10 / (2 * 25), delta)
    assert ours_gauss >= gauss.get_epsilon(delta)
    assert ours_gauss - gauss.get_epsilon(delta) < 0.3  # zCDP is ~7% looser for Gaussians


def test_pure_dp_renyi_curve_is_above_laplace_rdp():
    acc = rdp.RdpAccountant()
    acc.compose(dp_event.LaplaceDpEvent(noise_multiplier=10.0), count=100)
    ours, _ = rdp_to_approx_dp(compose_rdp([pure_dp_rdp(0.1)] * 100), 1e-6)
    assert ours >= acc.get_epsilon(1e-6)  # RR is the worst eps-DP mechanism, Laplace is not


# --- OpenDP -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dp():
    opendp = pytest.importorskip("opendp.prelude")
    opendp.enable_features("contrib")
    return opendp


@pytest.mark.parametrize("scale", [2.0, 0.5, 10.0])
@pytest.mark.parametrize("delta", [1e-6, 1e-9])
def test_cks_against_opendp(dp, scale, delta):
    gauss = dp.m.make_gaussian(
        dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale=scale
    )
    rho = gauss.map(1.0)
    assert rho == pytest.approx(1 / (2 * scale**2), rel=1e-12)
    theirs = dp.c.make_zCDP_to_approxDP(gauss).map(1.0).epsilon(delta)
    ours = zcdp_to_approx_dp(rho, delta)
    assert ours == pytest.approx(theirs, rel=1e-9)


def test_seed_value_against_opendp(dp):
    gauss = dp.m.make_gaussian(
        dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale=2.0
    )
    eps, fixed_delta = dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(gauss), 1e-6).map(1.0)
    assert eps == pytest.approx(2.419, abs=5e-4) and fixed_delta == 1e-6
    assert zcdp_to_approx_dp(0.125, 1e-6) == pytest.approx(eps, rel=1e-12)


def test_pure_to_zcdp_and_composition_against_opendp(dp):
    space = dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)
    lap = dp.m.make_laplace(*space, scale=2.0)
    zc = dp.c.make_pureDP_to_zCDP(lap)
    assert zc.map(1.0) == pytest.approx(0.5**2 / 2, rel=1e-12)
    comp = dp.c.make_composition([lap, lap, lap])
    assert comp.map(1.0) == pytest.approx(1.5, rel=1e-12)
    from dpselect.accounting import basic_composition, pure_dp_to_zcdp

    assert pure_dp_to_zcdp(0.5) == pytest.approx(zc.map(1.0), rel=1e-12)
    assert basic_composition([(0.5, 0.0)] * 3)[0] == pytest.approx(comp.map(1.0), rel=1e-12)
