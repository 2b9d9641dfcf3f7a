"""Policy Laplace counting rows (``max_rows_per_value = r``): the capped update is monotone
and l1-contractive (a broken cap that is not a room fails), neighbours' final weights move by
at most ``r`` in l1 with new values at most ``r``, the map at ``r`` against an independent
formula, exact enumeration of neighbours within the map (the plan of ``r = 1`` run on rows
fails), the release law and the statement by simulation, the data layer and the recipes
(docs/partition_selection.md, section 6; Policy Gaussian at ``r``:
tests/mechanisms/test_set_union_gaussian_rows.py)."""

from __future__ import annotations

import collections
import math

import numpy as np
import pandas as pd
import pytest

import dpselect as dp
from dpselect.accounting import Ledger
from dpselect.data.query import Query, UnitRule
from dpselect.mechanisms.policy_top_k import make_policy_top_k, policy_top_k_plan
from dpselect.mechanisms.set_union import (
    L1_UNITS,
    SetUnionPlan,
    held_weight_lower_bound,
    l1_update,
    make_policy_set_union,
    policy_sure_count,
    policy_weights,
    set_union_plan,
)
from dpselect.planning.top_k_plan import plan_top_k
from dpselect.sampling.source import InsecureSeededSource
from tests.mechanisms.set_union_cases import (
    EXTRAS,
    SMALL,
    random_case,
    random_persons,
    tail,
    worst_delta,
)

Z = 4.9  # two-sided normal quantile of 1e-6


def _norm1(a, b):
    return sum(abs(a.get(k, 0) - b.get(k, 0)) for k in set(a) | set(b))


def _capped_by_clipping(weights, values, cutoff, budget, caps):
    """A broken capped update: water-fill the gaps uncapped, then clip each value to its cap
    (the budget a cap frees is lost, and the room is not what the level sees)."""
    trial = dict(weights)
    l1_update(trial, values, cutoff, budget)
    for v in values:
        weights[v] = min(trial.get(v, 0), weights.get(v, 0) + caps[v])


def test_capped_update_is_monotone_and_contractive():
    rng = np.random.default_rng(5)
    units = 1000
    for _ in range(3000):
        h, h2, values, caps, cutoff, budget = random_case(rng, units)
        before = _norm1(h, h2)
        own = dict(h)
        l1_update(own, values, cutoff, budget, caps)
        assert _norm1(own, h) <= budget  # one person: l1 at most r
        assert all(own.get(v, 0) - h.get(v, 0) <= caps[v] for v in values)  # at most w_v
        a, b = dict(h), dict(h2)
        l1_update(a, values, cutoff, budget, caps)
        l1_update(b, values, cutoff, budget, caps)
        assert all(a.get(v, 0) <= b.get(v, 0) for v in h)  # monotone
        assert _norm1(a, b) <= before  # contractive


def test_clipping_instead_of_rooms_is_not_contractive():
    """The check above fails on a capped update that is not water-filling over rooms."""
    rng = np.random.default_rng(6)
    bad = 0
    for _ in range(3000):
        h, h2, values, caps, cutoff, budget = random_case(rng, 1000)
        a, b = dict(h), dict(h2)
        _capped_by_clipping(a, values, cutoff, budget, caps)
        _capped_by_clipping(b, values, cutoff, budget, caps)
        bad += any(a.get(v, 0) > b.get(v, 0) for v in h) or _norm1(a, b) > _norm1(h, h2)
    assert bad > 10


def test_neighbours_final_weights_differ_by_at_most_r():
    rng = np.random.default_rng(3)
    worst = 0.0
    for _ in range(60):
        c, r = int(rng.integers(1, 5)), int(rng.integers(2, 6))
        persons = random_persons(rng, int(rng.integers(1, 25)), 12, c, r)
        cutoff = int(rng.integers(1, 4 * r)) * L1_UNITS + int(rng.integers(0, 1 << 30)) * 4
        extra = random_persons(rng, 1, 12, c, r)[0]
        h = policy_weights(persons, "laplace", cutoff, r)
        for pos in range(len(persons) + 1):
            h2 = policy_weights([*persons[:pos], extra, *persons[pos:]], "laplace", cutoff, r)
            assert all(h[v] <= h2[v] for v in h)
            new = set(h2) - set(h)
            assert new <= set(extra)
            assert all(h2[v] <= r * L1_UNITS for v in new)  # a new value: at most r
            dist = _norm1(h, h2)
            assert dist <= r * L1_UNITS
            worst = max(worst, dist / (r * L1_UNITS))
    assert worst > 0.99  # the bound is reached


def test_r_one_is_the_person_policy():
    rng = np.random.default_rng(9)
    persons = random_persons(rng, 40, 10, 3, 3)  # repeats: ignored at r = 1
    cutoff = 3 * L1_UNITS
    assert policy_weights(persons, "laplace", cutoff, 1) == policy_weights(
        [sorted(set(p)) for p in persons], "laplace", cutoff
    )


@pytest.mark.parametrize(("eps", "delta", "c", "r"), [(1.0, 1e-6, 3, 10), (0.5, 1e-9, 2, 50)])
def test_plan_at_r_within_target_and_by_an_independent_formula(eps, delta, c, r):
    plan = set_union_plan("laplace", eps, delta, c, max_rows_per_value=r)
    assert plan.max_rows_per_value == r
    assert plan.epsilon <= eps and plan.delta <= delta and plan.epsilon > eps * 0.999
    b, rho = plan.scale, plan.rho
    assert rho >= r

    def p(w):
        return 0.5 * math.exp(-(rho - w) / b)

    e = r / b - c * math.log1p(-p(0))
    d = p(r) + (c - 1) * p(0)
    assert math.isclose(plan.epsilon, e, rel_tol=1e-6) and math.isclose(plan.delta, d, rel_tol=1e-6)
    assert -math.log1p(-p(r)) + math.log1p(-p(0)) <= r / b  # the map's condition
    one = set_union_plan("laplace", eps, delta, c)
    assert math.isclose(plan.scale, r * one.scale, rel_tol=1e-5)  # r times the person plan
    assert math.isclose(plan.rho, r * one.rho, rel_tol=1e-5)


def test_exact_enumeration_of_neighbours_at_r_within_the_map():
    """``r = 3``, ``c = 2``, delta 0.05 (visible mass). The plan of ``r = 1`` run on the same
    rows (budget and caps 3, noise and rho for 1) needs far more than its delta: the check
    can fail."""
    r = 3
    plan = set_union_plan("laplace", 1.0, 0.05, 2, cutoff_scales=0.5, max_rows_per_value=r)
    assert worst_delta(plan, SMALL, EXTRAS, r) <= plan.delta
    one = set_union_plan("laplace", 1.0, 0.05, 2, cutoff_scales=0.5)
    broken = SetUnionPlan("laplace", one.scale, one.rho, one.gamma, 2, one.epsilon, one.delta, r)
    assert worst_delta(broken, SMALL, EXTRAS, r) > 2 * one.delta


@pytest.mark.slow
@pytest.mark.parametrize("broken", [False, True])
def test_release_law_at_r_by_simulation(broken):
    """Persons holding one value with ``r`` rows each: the weight of a value held by ``n``
    persons is ``n r`` (below Gamma); release rates against ``P(n r + Z >= rho)``; the broken
    variant samples at the scale of ``r = 1`` and fails."""
    r = 4
    plan = set_union_plan("laplace", 1.0, 1e-3, 1, cutoff_scales=3, max_rows_per_value=r)
    run = plan
    if broken:
        run = SetUnionPlan("laplace", plan.scale / r, plan.rho, plan.gamma, 1, plan.epsilon,
                           plan.delta, r)  # fmt: skip
    m = make_policy_set_union(run, source=InsecureSeededSource(8))
    holders = [4, 6, 7, 8, 9, 12]
    copies = 1500
    persons = [[(n, j)] * (r + 2) for n in holders for j in range(copies) for _ in range(n)]
    released = collections.Counter(n for n, _ in m(persons))
    bad = []
    for n in holders:
        weight = min(n * r * plan.units, plan.cutoff_units) / plan.units
        p = tail("laplace", plan.scale, plan.rho - weight)
        sd = math.sqrt(max(p * (1 - p), 1e-12) / copies)
        if abs(released[n] / copies - p) > Z * sd + 1e-9:
            bad.append((n, released[n] / copies, p))
    assert bool(bad) == broken, bad


@pytest.mark.slow
def test_sure_count_statement_in_rows_holds():
    """'A value with at least N rows (at most r per person) is released w.p. >= 95%': holders
    with r rows of it and c - 1 values of their own (the least each gives it)."""
    c, r = 3, 5
    plan = set_union_plan("laplace", 1.0, 1e-6, c, max_rows_per_value=r)
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
    kept = sum(1 for v in m(persons_for(holders)) if v[0] == "v")
    assert copies - kept <= limit
    kept = sum(1 for v in m(persons_for(holders - c)) if v[0] == "v")  # tight: fewer fail
    assert copies - kept > limit
    assert held_weight_lower_bound(plan, n_rows) > 0


def test_policy_top_k_counts_capped_rows():
    plan = policy_top_k_plan(1, 4.0, 1e-3, 2, max_rows_per_value=5)
    assert plan.max_rows_per_value == 5 and plan.set_union.max_rows_per_value == 5
    planned = []

    def spy(*args, **kwargs):
        planned.append(kwargs.get("max_rows_per_value", 1))
        return plan_top_k(*args, **kwargs)

    m = make_policy_top_k(plan, top_k=spy, counts=True, source=InsecureSeededSource(1))
    # "a": 300 persons with 1 row each; "b": 100 persons with 9 rows each (5 counted)
    persons = [["a"]] * 300 + [["b"] * 9] * 100
    values, noisy = m(persons)
    assert values == ["b"]  # 500 capped rows against 300
    assert abs(noisy[0] - 500) < 60
    assert planned == [5]  # stage 2 calibrated to counts that move by r


# ------------------------------------------------------------------------------------------
# Data layer and recipes


def _frame(seed=0, persons=300):
    rng = np.random.default_rng(seed)  # test data only
    rows = [(u, f"v{int(v)}") for u in range(persons) for v in rng.zipf(1.3, 12) if v < 40]
    return pd.DataFrame(rows, columns=["u", "v"])


def test_person_values_with_rows_match_value_counts():
    from dpselect.recipes.release import open_checked

    table = open_checked(_frame(), "v", "u", None)
    for c in (1, 3):
        for r in (2, 5):
            persons = table.person_values(
                Query("v", UnitRule(privacy_unit="u", values_per_unit=c, rows_per_value=r, salt=11))
            )
            assert all(len(set(p)) <= c for p in persons)
            assert all(n <= r for p in persons for n in collections.Counter(p).values())
            total = collections.Counter(v for p in persons for v in p)
            assert total == collections.Counter(
                dict(
                    table.counts(
                        Query(
                            "v",
                            UnitRule(
                                privacy_unit="u", values_per_unit=c, rows_per_value=r, salt=11
                            ),
                        )
                    )
                )
            )
            # the same kept values and person order as r = 1
            plain = table.person_values(
                Query("v", UnitRule(privacy_unit="u", values_per_unit=c, salt=11))
            )
            assert [sorted(set(p)) for p in persons] == [sorted(p) for p in plain]


def test_partition_selection_at_r(tmp_path):
    df = _frame(1, 600)
    book = Ledger.create(tmp_path / "l.db", 10.0, 1e-3)
    res = dp.Session(
        df,
        privacy_unit="u",
        contributions=dp.Contributions(values_per_unit=3, rows_per_value=4),
        ledger=book,
        source=InsecureSeededSource(2),
    ).partition_selection("v", epsilon=1.0, delta=1e-6, mechanism="policy_laplace")
    assert res.parameters["max_rows_per_value"] == 4 and "rows" in res.accuracy
    assert res.values and res.epsilon <= 1.0
    opt = dp.Session(
        df,
        privacy_unit="u",
        contributions=dp.Contributions(values_per_unit=3, rows_per_value=4),
        ledger=book,
        source=InsecureSeededSource(2),
    ).partition_selection("v", epsilon=1.0, delta=1e-6, mechanism="optimal")
    assert opt.parameters["selected_by"] == "persons" and "persons" in opt.accuracy
    # by persons: the same set as r = 1 for the same seed
    same = dp.Session(
        df,
        privacy_unit="u",
        contributions=dp.Contributions(values_per_unit=3),
        source=InsecureSeededSource(2),
    ).partition_selection("v", epsilon=1.0, delta=1e-6, mechanism="optimal")
    assert opt.values == same.values
    assert len(book.entries()) == 2
    gauss = dp.Session(
        df,
        privacy_unit="u",
        contributions=dp.Contributions(values_per_unit=3, rows_per_value=4),
        ledger=book,
        source=InsecureSeededSource(2),
    ).partition_selection("v", epsilon=1.0, delta=1e-6, mechanism="policy_gaussian")
    assert gauss.values and "rows" in gauss.accuracy
    assert len(book.entries()) == 3


@pytest.mark.parametrize(("eps", "c"), [(1.0, 3), (0.2, 3), (1.0, 1)])
def test_auto_at_r_selects_byrandom_persons(eps, c):
    """A released set is valid whatever selected it: ``"auto"`` at ``r > 1`` runs the choice
    of ``r = 1`` (the optimal rule or Policy Laplace, by persons) and releases the same set
    for the same seed; never Policy Gaussian or thresholding at ``r``."""
    df = _frame(3, 500)
    at_r = dp.Session(
        df,
        privacy_unit="u",
        contributions=dp.Contributions(values_per_unit=c, rows_per_value=7),
        source=InsecureSeededSource(5),
    ).partition_selection("v", epsilon=eps, delta=1e-6)
    at_1 = dp.Session(
        df,
        privacy_unit="u",
        contributions=dp.Contributions(values_per_unit=c),
        source=InsecureSeededSource(5),
    ).partition_selection("v", epsilon=eps, delta=1e-6)
    assert at_r.values == at_1.values and at_r.parameters["selected_by"] == "persons"
    assert at_r.parameters["mechanism"] == at_1.parameters["mechanism"]
    assert at_r.parameters["mechanism"] in ("optimal", "policy_laplace")
    assert "persons" in at_r.accuracy


def test_top_k_policy_path_at_r(tmp_path):
    df = _frame(2, 600)
    book = Ledger.create(tmp_path / "l.db", 10.0, 1e-3)
    res = dp.Session(
        df,
        privacy_unit="u",
        contributions=dp.Contributions(values_per_unit=10, rows_per_value=4),
        ledger=book,
        source=InsecureSeededSource(3),
    ).top_k("v", 3, epsilon=2.0, delta=1e-6)
    assert res.parameters["mechanism"] == "policy_top_k"
    assert res.parameters["max_rows_per_value"] == 4 and "rows" in res.accuracy
    assert len(book.entries()) == 1 and book.entries()[0].epsilon <= 2.0
