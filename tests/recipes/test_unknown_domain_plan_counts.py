"""The unknown-domain planner's counts from closed forms and a binary search, equal to the
plain count-up loops they replace (which took a million steps at epsilon 2^-20, before any
charge but past every time limit: issue 41)."""

from __future__ import annotations

import pytest

from dpselect.mechanisms.choice import TARGET
from dpselect.mechanisms.partition_selection import optimal_release_probability, threshold_plan
from dpselect.planning import unknown_domain_choice as plans


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_release_count_equals_the_count_up(noise):
    for eps in (0.01, 0.1, 1.0, 3.0):
        for delta in (1e-9, 1e-6, 1e-3):
            for c in (1, 3):
                plan = threshold_plan(noise, eps, delta, c)
                for k in (1, 5, 50):
                    miss, t = 1 - TARGET ** (1 / k), 0
                    while plans._lower_tail(plan, t + 1) > miss:
                        t += 1
                    assert plans._release_count(plan, k) == plan.threshold + t


def test_optimal_sure_count_equals_the_count_up():
    for eps in (0.001, 0.01, 0.1, 1.0, 5.0, 50.0):
        for delta in (1e-12, 1e-6, 1e-3):
            n = 1
            while optimal_release_probability(n, eps, delta) < plans.CONFIDENCE:
                n += 1
            assert plans.optimal_sure_count(eps, delta) == n


def test_the_planner_answers_at_the_least_epsilon():
    # the count-up loops took minutes here (a hang, in the matrix of tests/test_plan_before_charge)
    best, options = plans.choose_unknown_domain(3, 2.0**-20, 1e-300)
    assert best in options and len(options) == 3
