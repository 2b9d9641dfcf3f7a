"""The one stage of select, select_hypothesis and tune, as explain prints it."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

import dpselect as dp
from dpselect.core import (
    AnyDomain,
    L1Distance,
    Measurement,
    SymmetricDistance,
    ZeroConcentratedDivergence,
    atom_domain,
)
from dpselect.mechanisms import make_gaussian
from dpselect.planning.selection_stage import EXPONENTIAL, exponential_stage
from dpselect.recipes.hypothesis import threshold_hypotheses
from dpselect.sampling.noisy_max import CHUNK_SIZE


def test_the_exponential_stage_has_the_mechanisms_scale_and_memory() -> None:
    stage = exponential_stage("select", Fraction(1, 2), 1, monotonic=False, n_candidates=10)
    assert stage.mechanism == EXPONENTIAL and stage.epsilon == 0.5 and stage.times == 1
    assert stage.scale == 4.0 and stage.memory == 8 * 10 + 40 * 10
    monotonic = exponential_stage("select", 0.5, 3, monotonic=True, n_candidates=10**6)
    assert monotonic.scale == 6.0 and monotonic.memory == 8 * 10**6 + 40 * CHUNK_SIZE


def test_explain_lists_the_stage_of_select() -> None:
    plan = dp.explain(dp.select, ["a", "b", "c"], lambda data, c: data.count(c), list("aab"),
                      epsilon=1.0, sensitivity=1, monotonic=True)  # fmt: skip
    assert [s.name for s in plan.stages] == ["select"]
    assert "1. select: exponential mechanism, epsilon = 1, scale = 1" in plan.explain()


def test_explain_lists_the_stage_of_select_hypothesis() -> None:
    X, y = np.arange(40) % 20, (np.arange(40) % 20 >= 10).astype(int)
    rules = threshold_hypotheses([5, 10, 15])
    plan = dp.explain(dp.select_hypothesis, X, y, rules, epsilon=2.0)
    (stage,) = plan.stages
    assert stage.name == "select hypothesis" and stage.epsilon == 2.0 and stage.scale == 0.5


def test_explain_lists_the_stage_of_tune() -> None:
    def train(config: int, rho: float) -> Measurement:
        noisy = make_gaussian(atom_domain(int), L1Distance(), 1.01 / math.sqrt(2 * rho))
        return Measurement(AnyDomain(), SymmetricDistance(), ZeroConcentratedDivergence(),
                           lambda data: (noisy(data) - abs(config - 2), f"model-{config}"),
                           noisy.map)  # fmt: skip

    plan = dp.explain(dp.tune, train, [1, 2, 3], epsilon=1.0, data=10, delta=1e-6)
    (stage,) = plan.stages
    assert stage.name == "tune" and stage.epsilon == 1.0 and stage.delta == 1e-6
    assert "1. tune: repeat and select" in plan.explain()
