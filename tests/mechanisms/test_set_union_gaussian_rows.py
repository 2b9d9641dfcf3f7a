"""Policy Gaussian counting rows (``max_rows_per_value = r``): the update adds the floor of
the Euclidean projection of the gaps on ``K = {0 <= d <= caps, ||d||_2 <= r}``
(docs/partition_selection.md, section 6). Checked: it is that projection (the variational
inequality of a projection on a convex set); it is monotone and l2-contractive on random
pairs (projecting the *rooms* on the ball instead, the rule with no proof, is not, and the
check shows it); neighbours' final weights move by at most ``r`` in l2 with new values only
the added person's; the plan at ``r``; exact enumeration of neighbours within the map (the
plan of ``r = 1`` run on rows fails); the statement by simulation (slow)."""

from __future__ import annotations

import collections
import math
from fractions import Fraction

import numpy as np
import pytest

from dpselect.mechanisms.set_union import (
    L2_UNITS,
    SetUnionPlan,
    held_weight_lower_bound,
    l2_update,
    make_policy_set_union,
    policy_sure_count,
    policy_weights,
    set_union_plan,
)
from dpselect.sampling.source import InsecureSeededSource
from tests.mechanisms.set_union_cases import (
    EXTRAS,
    SMALL,
    random_case,
    random_persons,
    worst_delta,
)

Z = 4.9  # two-sided normal quantile of 1e-6


def _dist2(a, b):
    return math.sqrt(sum((a.get(k, 0) - b.get(k, 0)) ** 2 for k in set(a) | set(b)))


def _rooms_then_ball(weights, values, cutoff, budget, caps):
    """The rule with no proof: the rooms ``min(gap, cap)`` projected on the ball."""
    gaps = {v: min(cutoff - weights.get(v, 0), caps[v]) for v in values}
    open_ = [v for v in values if gaps[v] > 0]
    s = sum(gaps[v] ** 2 for v in open_)
    for v in open_:
        add = gaps[v] if s <= budget**2 else math.isqrt(budget**2 * gaps[v] ** 2 // s)
        weights[v] = weights.get(v, 0) + add


def test_the_update_is_the_projection_on_the_capped_ball():
    """``P`` is the projection of ``y`` on a closed convex ``K`` iff ``P`` is in ``K`` and
    ``<y - P, z - P> <= 0`` for every ``z`` in ``K``: checked (exactly, with the floor's
    slack of one unit per value) against the corners and random points of ``K``."""
    rng = np.random.default_rng(1)
    units = 10**6
    for _ in range(400):
        h, _, values, caps, cutoff, budget = random_case(rng, units)
        after = dict(h)
        l2_update(after, values, cutoff, budget, caps)
        y = {v: max(0, cutoff - h.get(v, 0)) for v in values}
        p = {v: after.get(v, 0) - h.get(v, 0) for v in values}
        assert all(0 <= p[v] <= min(caps[v], y[v]) for v in values)
        assert sum(x * x for x in p.values()) <= budget**2
        for _ in range(30):
            z = {v: Fraction(int(rng.integers(0, caps[v] + 1))) for v in values}
            norm = math.sqrt(sum(float(x) ** 2 for x in z.values()))
            if norm > budget:  # scale into the ball
                z = {v: x * Fraction(budget) / Fraction(math.ceil(norm)) for v, x in z.items()}
            inner = sum((y[v] - p[v]) * (z[v] - p[v]) for v in values)
            slack = sum(abs(z[v] - p[v]) + abs(y[v] - p[v]) for v in values)  # floors
            assert inner <= slack


def test_capped_update_is_monotone_and_l2_contractive():
    rng = np.random.default_rng(5)
    units = 1000
    for _ in range(3000):
        h, h2, values, caps, cutoff, budget = random_case(rng, units)
        before = _dist2(h, h2)
        own = dict(h)
        l2_update(own, values, cutoff, budget, caps)
        assert _dist2(own, h) <= budget  # one person: l2 at most r
        assert all(own.get(v, 0) - h.get(v, 0) <= caps[v] for v in values)
        a, b = dict(h), dict(h2)
        l2_update(a, values, cutoff, budget, caps)
        l2_update(b, values, cutoff, budget, caps)
        assert all(a.get(v, 0) <= b.get(v, 0) for v in h)  # monotone
        assert _dist2(a, b) <= before + math.sqrt(len(values))  # contractive (+ floors)


def test_rooms_projected_on_the_ball_are_not_contractive():
    """The check above fails on the rule that projects the capped rooms on the ball."""
    rng = np.random.default_rng(6)
    bad = 0
    for _ in range(3000):
        h, h2, values, caps, cutoff, budget = random_case(rng, 1000)
        a, b = dict(h), dict(h2)
        _rooms_then_ball(a, values, cutoff, budget, caps)
        _rooms_then_ball(b, values, cutoff, budget, caps)
        worse = _dist2(a, b) > _dist2(h, h2) + math.sqrt(len(values))
        bad += any(a.get(v, 0) > b.get(v, 0) for v in h) or worse
    assert bad > 10


def test_without_binding_caps_it_is_the_person_update():
    rng = np.random.default_rng(2)
    for _ in range(300):
        h, _, values, _, cutoff, _ = random_case(rng, 1000)
        a, b = dict(h), dict(h)
        l2_update(a, values, cutoff, 1000)
        l2_update(b, values, cutoff, 1000, {v: 1000 for v in values})  # caps = the budget
        assert a == b


def test_neighbours_final_weights_differ_by_at_most_r():
    rng = np.random.default_rng(3)
    worst = 0.0
    for _ in range(60):
        c, r = int(rng.integers(1, 5)), int(rng.integers(2, 6))
        persons = random_persons(rng, int(rng.integers(1, 25)), 12, c, r)
        cutoff = int(rng.integers(1, 4 * r)) * L2_UNITS + int(rng.integers(0, 1 << 60))
        extra = random_persons(rng, 1, 12, c, r)[0]
        h = policy_weights(persons, "gaussian", cutoff, r)
        for pos in range(len(persons) + 1):
            h2 = policy_weights([*persons[:pos], extra, *persons[pos:]], "gaussian", cutoff, r)
            assert all(h[v] <= h2[v] for v in h)
            assert set(h2) - set(h) <= set(extra)
            dist = _dist2(h, h2)
            assert dist <= r * L2_UNITS + (len(persons) + 1) * math.sqrt(c)
            worst = max(worst, dist / (r * L2_UNITS))
    assert worst > 0.99  # the bound is reached


@pytest.mark.parametrize(("eps", "delta", "c", "r"), [(1.0, 1e-6, 3, 10), (0.5, 1e-9, 2, 50)])
def test_plan_at_r_is_the_person_plan_scaled(eps, delta, c, r):
    plan = set_union_plan("gaussian", eps, delta, c, max_rows_per_value=r)
    assert plan.max_rows_per_value == r
    assert plan.epsilon <= eps and plan.delta <= delta and plan.epsilon > eps * 0.999
    assert plan.rho >= r
    one = set_union_plan("gaussian", eps, delta, c)
    assert math.isclose(plan.scale, r * one.scale, rel_tol=1e-5)
    assert math.isclose(plan.rho, r * one.rho, rel_tol=1e-5)


def test_exact_enumeration_of_neighbours_at_r_within_the_map():
    """``r = 3``, ``c = 2``, delta 0.05 (visible mass): the delta every neighbour needs at
    the map's epsilon is within the map's delta. The plan of ``r = 1`` run on the same rows
    (budget and caps 3, noise and rho for 1) needs more than twice its delta."""
    r = 3
    plan = set_union_plan("gaussian", 1.0, 0.05, 2, cutoff_scales=0.5, max_rows_per_value=r)
    assert worst_delta(plan, SMALL, EXTRAS, r) <= plan.delta
    one = set_union_plan("gaussian", 1.0, 0.05, 2, cutoff_scales=0.5)
    broken = SetUnionPlan("gaussian", one.scale, one.rho, one.gamma, 2, one.epsilon, one.delta, r)
    assert worst_delta(broken, SMALL, EXTRAS, r) > 2 * one.delta


@pytest.mark.slow
def test_sure_count_statement_in_rows_holds():
    """'A value with at least N rows (at most r per person) is released w.p. >= 95%': holders
    with r rows of it and c - 1 values of their own with r rows each."""
    c, r = 3, 5
    plan = set_union_plan("gaussian", 1.0, 1e-6, c, max_rows_per_value=r)
    n_rows = policy_sure_count(plan)
    holders = math.ceil(n_rows / r)
    copies = 800
    limit = copies * 0.05 + Z * math.sqrt(copies * 0.05 * 0.95)

    def persons_for(h):
        return [
            [("v", j)] * r + [("own", j, i, k) for k in range(c - 1) for _ in range(r)]
            for j in range(copies)
            for i in range(h)
        ]

    m = make_policy_set_union(plan, source=InsecureSeededSource(4))
    kept = collections.Counter(v[0] for v in m(persons_for(holders)))["v"]
    assert copies - kept <= limit
    assert held_weight_lower_bound(plan, n_rows) > 0
