"""best_epsilon picks the smallest valid bound and names its theorem."""

import pytest

from dpselect.accounting import THEOREMS, MechanismLoss, best_epsilon
from dpselect.accounting.best import (
    BASIC,
    BOUNDED_RANGE,
    KOV_HOMOGENEOUS,
    RENYI,
)
from dpselect.core import ParameterError

M = MechanismLoss


def test_many_exponential_mechanisms():
    adaptive = best_epsilon([M.bounded_range(0.1)] * 100, 1e-6)
    assert adaptive.theorem == RENYI
    assert adaptive.epsilon == pytest.approx(2.4002, abs=1e-3)
    batch = best_epsilon([M.bounded_range(0.1)] * 100, 1e-6, adaptive=False)
    assert batch.theorem == BOUNDED_RANGE  # Dong-Durfee-Rogers, valid only non-adaptively
    assert batch.epsilon == pytest.approx(2.2460, abs=1e-3)
    assert BOUNDED_RANGE not in adaptive.candidates


def test_pure_mechanisms_use_kov():
    r = best_epsilon([M.pure(0.1)] * 100, 1e-6)
    assert r.theorem == KOV_HOMOGENEOUS
    assert r.epsilon == pytest.approx(4.7746, abs=1e-3)
    assert r.candidates[BASIC] >= 10.0


def test_delta_zero_is_basic_composition():
    r = best_epsilon([M.pure(1.0)] * 3, 0.0)
    assert (r.epsilon, r.delta, r.theorem) == (3.0, 0.0, BASIC)


def test_few_large_epsilons_basic_or_kov():
    r = best_epsilon([M.pure(1.0)] * 3, 1e-6)
    assert r.epsilon <= 3.0


def test_mixed_gaussian_and_pure():
    r = best_epsilon([M.gaussian(1.0, 5.0)] * 10 + [M.pure(0.1)], 1e-6)
    assert r.theorem == RENYI
    assert set(r.candidates) <= set(THEOREMS)
    assert r.epsilon <= min(r.candidates.values())


def test_approx_deltas_must_fit():
    r = best_epsilon([M.approx(0.1, 1e-8)] * 10, 1e-6)
    assert r.epsilon <= 1.0 + 1e-12 and r.delta <= 1e-6
    with pytest.raises(ParameterError):
        best_epsilon([M.approx(0.1, 1e-6)] * 10, 1e-6)  # deltas alone exceed the target
    with pytest.raises(ParameterError):
        best_epsilon([M.approx(0.1, 1e-8), M.zcdp(0.1)], 1e-6)  # no theorem mixes these


def test_mechanism_loss_validation():
    with pytest.raises(ParameterError):
        M("laplace", epsilon=1.0)  # type: ignore[arg-type]
    with pytest.raises(ParameterError):
        M("pure", epsilon=1.0, delta=1e-6)
    with pytest.raises(ParameterError):
        M("zcdp", epsilon=1.0)
    with pytest.raises(ParameterError):
        M.pure(-1.0)
    assert M.gaussian(1.0, 2.0).rho == 0.125
    assert best_epsilon([], 1e-6).epsilon == 0.0
