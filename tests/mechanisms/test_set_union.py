"""Policy set union (Gopi et al. 2020): the per-person update's monotonicity and sensitivity on
random inputs (a closest-first greedy update, which is not contractive, fails), neighbouring
datasets by exact enumeration against the map (a lowered rho fails), the calibration, the
release law by simulation (a doubled scale fails), the printed statement, the data layer's
person order and the recipe."""

from __future__ import annotations

import collections
import math

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import dpselect
import dpselect as dp
from dpselect.accounting import Ledger
from dpselect.core.errors import DomainError, ParameterError, PrivacyMapError
from dpselect.data.query import Query, UnitRule
from dpselect.mechanisms.set_union import (
    L1_UNITS,
    L2_UNITS,
    SetUnionPlan,
    _map_values,
    held_weight_lower_bound,
    l1_update,
    l2_update,
    make_policy_set_union,
    policy_sure_count,
    policy_weights,
    set_union_plan,
)
from dpselect.sampling.source import InsecureSeededSource
from tests.release_laws import delta_needed, independent_release_law

Z = 4.9  # two-sided normal quantile of 1e-6


# ------------------------------------------------------------------------------------------
# The update: monotone, contractive, one person's norm at most 1


def _greedy_closest_first(weights, values, cutoff, budget):
    """A broken l1 policy: fill the value nearest the cutoff first (not monotone)."""
    gaps = sorted((cutoff - weights.get(v, 0), v) for v in values if weights.get(v, 0) < cutoff)
    for gap, v in gaps:
        add = min(gap, budget)
        weights[v] = weights.get(v, 0) + add
        budget -= add
        if budget == 0:
            return


def _random_pair(rng, items, cutoff, spread):
    h = {v: int(rng.integers(0, cutoff + 1)) if rng.random() < 0.8 else 0 for v in items}
    h2 = {v: min(cutoff, w + int(rng.integers(0, spread + 1))) for v, w in h.items()}
    return h, h2


def _norm(a, b, order):
    keys = set(a) | set(b)
    diffs = [abs(a.get(k, 0) - b.get(k, 0)) for k in keys]
    return sum(diffs) if order == 1 else math.sqrt(sum(d * d for d in diffs))


@pytest.mark.parametrize("order", [1, 2])
def test_one_step_is_monotone_and_contractive_on_random_inputs(order):
    rng = np.random.default_rng(order)
    update, units = (l1_update, 1000) if order == 1 else (l2_update, 10**6)
    items = list(range(8))
    for _ in range(3000):
        c = int(rng.integers(1, 6))
        cutoff = int(rng.integers(1, 4 * units))
        h, h2 = _random_pair(rng, items, cutoff, units)
        values = [int(v) for v in rng.choice(items, size=c, replace=False)]
        before = _norm(h, h2, order)
        own = dict(h)
        update(own, values, cutoff, units)
        assert _norm(own, h, order) <= units  # one person's update: norm at most 1
        a, b = dict(h), dict(h2)
        update(a, values, cutoff, units)
        update(b, values, cutoff, units)
        assert all(a.get(v, 0) <= b.get(v, 0) for v in items)  # monotone
        assert all(a.get(v, 0) <= cutoff for v in items)
        slack = 0 if order == 1 else math.sqrt(c)  # the floor of the l2 increment
        assert _norm(a, b, order) <= before + slack + 1e-9


def test_closest_first_greedy_is_not_contractive():
    """The check above catches a policy that is not l1-contractive (it can fail)."""
    rng = np.random.default_rng(7)
    items, units, bad = list(range(8)), 1000, 0
    for _ in range(3000):
        c = int(rng.integers(1, 6))
        cutoff = int(rng.integers(1, 4 * units))
        h, h2 = _random_pair(rng, items, cutoff, units)
        values = [int(v) for v in rng.choice(items, size=c, replace=False)]
        a, b = dict(h), dict(h2)
        _greedy_closest_first(a, values, cutoff, units)
        _greedy_closest_first(b, values, cutoff, units)
        bad += _norm(a, b, 1) > _norm(h, h2, 1)
    assert bad > 10


def _persons(rng, n, universe, c):
    return [
        [int(v) for v in rng.choice(universe, size=int(rng.integers(1, c + 1)), replace=False)]
        for _ in range(n)
    ]


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_neighbours_final_weights_differ_by_at_most_one(noise):
    """A person added at any position: h <= h', ||h' - h|| <= 1 (l2: plus n sqrt(c) units)."""
    rng = np.random.default_rng(3)
    units = L1_UNITS if noise == "laplace" else L2_UNITS
    order = 1 if noise == "laplace" else 2
    worst = 0.0
    for _ in range(60):
        c = int(rng.integers(1, 5))
        persons = _persons(rng, int(rng.integers(1, 30)), 12, c)
        cutoff = int(rng.integers(1, 6)) * units + int(rng.integers(0, 1 << 30)) * (units >> 30)
        extra = _persons(rng, 1, 12, c)[0]
        h = policy_weights(persons, noise, cutoff)
        for pos in range(len(persons) + 1):
            h2 = policy_weights([*persons[:pos], extra, *persons[pos:]], noise, cutoff)
            assert all(h[v] <= h2[v] for v in h)
            assert set(h2) - set(h) <= set(extra)  # new values are the person's own
            slack = 0 if noise == "laplace" else len(persons) * math.sqrt(c)
            dist = _norm(h, h2, order)
            assert dist <= units + slack
            worst = max(worst, dist / units)
    assert worst > 0.99  # the bound is reached: the check is not vacuous


# ------------------------------------------------------------------------------------------
# Maps: calibration, an independent float evaluation, exact enumeration of neighbours


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize(("eps", "delta", "c"), [(1.0, 1e-6, 3), (0.1, 1e-6, 10), (2.0, 1e-9, 2)])
def test_plan_within_target_and_map_by_an_independent_formula(noise, eps, delta, c):
    plan = set_union_plan(noise, eps, delta, c)
    assert plan.epsilon <= eps and plan.delta <= delta
    assert plan.epsilon > eps * 0.999  # calibrated tight, not loose
    m = make_policy_set_union(plan)
    assert m.map(1) == (plan.epsilon, plan.delta) and m.map(0) == (0.0, 0.0)
    with pytest.raises(PrivacyMapError):
        m.map(2)
    b, rho = plan.scale, plan.rho
    if noise == "laplace":

        def p(w):
            return 0.5 * math.exp(-(rho - w) / b)

        e = 1 / b - c * math.log1p(-p(0))
        d = p(1) + (c - 1) * p(0)
    else:
        from dpselect.accounting.zcdp import zcdp_to_approx_dp

        def p(w):
            return 0.5 * math.erfc((rho - w) / (b * math.sqrt(2)))

        def g(w):
            return -math.log1p(-p(w))

        e = zcdp_to_approx_dp(1 / (2 * b * b), delta / 2) + c * g(0) + math.sqrt(c) * (g(1) - g(0))
        d = delta / 2 + c * p(0) + math.sqrt(c) * (p(1) - p(0))
    assert math.isclose(plan.epsilon, e, rel_tol=1e-6) and math.isclose(plan.delta, d, rel_tol=1e-6)


def _tail(noise, scale, x):
    if noise == "laplace":
        return 0.5 * math.exp(-x / scale) if x >= 0 else 1 - 0.5 * math.exp(x / scale)
    return 0.5 * math.erfc(x / (scale * math.sqrt(2)))


def _law(weights, plan, units):
    return independent_release_law(
        {v: _tail(plan.noise, plan.scale, plan.rho - w / units) for v, w in weights.items()}
    )


def _worst_over_neighbours(plan, persons_list, extras):
    worst = 0.0
    units = plan.units
    for persons in persons_list:
        h = policy_weights(persons, plan.noise, plan.cutoff_units)
        for extra in extras:
            for pos in range(len(persons) + 1):
                h2 = policy_weights(
                    [*persons[:pos], extra, *persons[pos:]], plan.noise, plan.cutoff_units
                )
                worst = max(worst, delta_needed(_law(h, plan, units), _law(h2, plan, units),
                                                 plan.epsilon))  # fmt: skip
    return worst


SMALL = [
    [["a", "b"], ["a"], ["a", "c"], ["b", "c"], ["a", "b"], ["a"]],
    [["a"], ["a"], ["a"], ["a", "b"]],
    [],
]
EXTRAS = [["a", "b"], ["d", "e"], ["a", "d"], ["c"]]


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_exact_enumeration_of_neighbours_within_the_map(noise):
    """Small rho (delta = 0.05) so that every output has visible mass; c = 2."""
    plan = set_union_plan(noise, 1.0, 0.05, 2, cutoff_scales=0.5)
    need = _worst_over_neighbours(plan, SMALL, EXTRAS)
    assert need <= plan.delta
    # the check can fail: at half the map's epsilon, a common value whose weight moves by 1
    # needs more than the map's delta (laplace 0.209, gaussian 0.058 against 0.05)
    half = SetUnionPlan(plan.noise, plan.scale, plan.rho, plan.gamma, 2, plan.epsilon / 2,
                        plan.delta)  # fmt: skip
    same = [[["a"]] * k for k in range(5)]
    assert _worst_over_neighbours(half, same, [["a"]]) > plan.delta


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_exact_enumeration_catches_a_lowered_rho(noise):
    plan = set_union_plan(noise, 1.0, 0.05, 2, cutoff_scales=0.5)
    low = SetUnionPlan(plan.noise, plan.scale, plan.rho - 3 * plan.scale, plan.gamma, 2,
                       plan.epsilon, plan.delta)  # fmt: skip
    assert _worst_over_neighbours(low, SMALL, EXTRAS) > plan.delta


def test_map_values_refuses_rho_below_the_sensitivity():
    assert _map_values("laplace", 1.0, 0.5, 2) is None
    assert _map_values("gaussian", 1.0, 0.9, 2, 1e-6) is None


# ------------------------------------------------------------------------------------------
# Release law by simulation, the statement


@pytest.mark.slow
@pytest.mark.parametrize("broken", [False, True])
def test_release_law_by_simulation(broken):
    """Persons holding one value each: the l1 weight of a value held by n persons is n (below
    Gamma). Each value's release rate against P(n + Z >= rho); the broken variant samples
    with the scale doubled and fails."""
    plan = set_union_plan("laplace", 1.0, 1e-3, 1, cutoff_scales=3)
    run = plan
    if broken:
        run = SetUnionPlan("laplace", 2 * plan.scale, plan.rho, plan.gamma, 1, plan.epsilon,
                           plan.delta)  # fmt: skip
    m = make_policy_set_union(run, source=InsecureSeededSource(8))
    holders = [4, 6, 7, 8, 9, 12]
    copies = 1500
    persons = [[(n, j)] for n in holders for j in range(copies) for _ in range(n)]
    released = collections.Counter(n for n, _ in m(persons))
    bad = []
    for n in holders:
        weight = min(n * plan.units, plan.cutoff_units) / plan.units  # capped at Gamma
        p = _tail("laplace", plan.scale, plan.rho - weight)
        sd = math.sqrt(max(p * (1 - p), 1e-12) / copies)
        if abs(released[n] / copies - p) > Z * sd + 1e-9:
            bad.append((n, released[n] / copies, p))
    assert bool(bad) == broken, bad


@pytest.mark.slow
@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_sure_count_statement_holds(noise):
    """'A value held by at least N persons is released w.p. >= 95%': N holders, each with c
    distinct values (c - 1 of them their own), so each gives the value the least it can."""
    c = 3
    plan = set_union_plan(noise, 1.0, 1e-6, c)
    n = policy_sure_count(plan)
    copies = 800
    limit = copies * 0.05 + Z * math.sqrt(copies * 0.05 * 0.95)

    def persons_for(holders):
        return [
            [("v", j), *[("own", j, i, k) for k in range(c - 1)]]
            for j in range(copies)
            for i in range(holders)
        ]

    m = make_policy_set_union(plan, source=InsecureSeededSource(4))
    kept = sum(1 for v in m(persons_for(n)) if v[0] == "v")
    assert copies - kept <= limit
    if noise == "laplace":  # the l1 bound is tight: c fewer holders fail the statement
        kept = sum(1 for v in m(persons_for(n - c)) if v[0] == "v")
        assert copies - kept > limit
    assert held_weight_lower_bound(plan, n) > 0


def test_domain_checks():
    plan = set_union_plan("laplace", 1.0, 1e-6, 2)
    m = make_policy_set_union(plan, source=InsecureSeededSource(0))
    assert m([]) == []
    for bad in ("ab", [["a", "b", "c"]], [[["unhashable"]]], [3]):
        with pytest.raises(DomainError):
            m(bad)
    with pytest.raises(ParameterError):
        set_union_plan("uniform", 1.0, 1e-6, 2)  # type: ignore[arg-type]
    with pytest.raises(ParameterError):
        set_union_plan("laplace", 1.0, 0.0, 2)


# ------------------------------------------------------------------------------------------
# Data layer and recipe


def _frame(seed=0, persons=400):
    rng = np.random.default_rng(seed)
    rows = [(u, f"v{int(v)}") for u in range(persons) for v in rng.zipf(1.4, 5) if v < 500]
    return pd.DataFrame(rows, columns=["u", "v"])


def test_person_values_match_value_counts_and_keep_relative_order():
    from dpselect.recipes.release import open_checked as _open

    df = _frame()
    table = _open(df, "v", "u", None)
    for c in (1, 3):
        persons = table.person_values(
            Query("v", UnitRule(privacy_unit="u", values_per_unit=c, salt=11))
        )
        assert all(len(p) == len(set(p)) <= c for p in persons)
        counts = collections.Counter(v for p in persons for v in p)
        assert counts == collections.Counter(
            dict(table.counts(Query("v", UnitRule(privacy_unit="u", values_per_unit=c, salt=11))))
        )
    # one more person: the others keep their relative order (what the proof needs)
    more = pd.concat([df, pd.DataFrame({"u": [10**6] * 3, "v": ["v1", "new1", "new2"]})])
    base = [
        tuple(p)
        for p in table.person_values(
            Query("v", UnitRule(privacy_unit="u", values_per_unit=3, salt=11))
        )
    ]
    bigger = [
        tuple(p)
        for p in _open(more, "v", "u", None).person_values(
            Query("v", UnitRule(privacy_unit="u", values_per_unit=3, salt=11))
        )
    ]
    assert len(bigger) == len(base) + 1
    position = {p: i for i, p in enumerate(bigger)}
    # persons are identified by their value tuples here; keep only the unambiguous ones
    unique = [p for p in base if base.count(p) == 1 and p in position]
    assert [position[p] for p in unique] == sorted(position[p] for p in unique)
    # a different salt gives a different order
    other = [
        tuple(p)
        for p in table.person_values(
            Query("v", UnitRule(privacy_unit="u", values_per_unit=3, salt=12))
        )
    ]
    assert other != base and len(other) == len(base)


def test_partition_selection_policy_methods_and_ledger(tmp_path):
    df = _frame(1, 1500)
    path = tmp_path / "ledger.db"
    Ledger.create(path, 10.0, 1e-4)
    r = dp.Session(
        df,
        privacy_unit="u",
        contributions=dp.Contributions(values_per_unit=3),
        ledger=str(path),
        source=InsecureSeededSource(0),
    ).partition_selection("v", epsilon=1.0, delta=1e-6)
    assert "Policy Laplace" in r.mechanism and r.parameters["mechanism"] == "policy_laplace"
    plan = set_union_plan("laplace", 1.0, 1e-6, 3)
    (entry,) = Ledger.open(path).entries()
    assert (float(entry.charged_epsilon), float(entry.charged_delta)) == (
        plan.epsilon,
        plan.delta,
    )
    assert (r.epsilon, r.delta) == (plan.epsilon, plan.delta) and r.values
    g = dp.Session(
        df,
        privacy_unit="u",
        contributions=dp.Contributions(values_per_unit=3),
        source=InsecureSeededSource(0),
    ).partition_selection("v", epsilon=1.0, delta=1e-6, mechanism="policy_gaussian")
    assert "Policy Gaussian" in g.mechanism and "whatever the other values" in g.accuracy
    with pytest.raises(ParameterError, match="privacy_unit"):
        dpselect.partition_selection(df, "v", epsilon=1.0, delta=1e-6, mechanism="policy_laplace")
    # c = 1 stays with DVGM22's optimum
    one = dp.Session(df, privacy_unit="u", source=InsecureSeededSource(0)).partition_selection(
        "v", epsilon=1.0, delta=1e-6
    )
    assert "Desfontaines" in one.mechanism


def test_keys_command_policy(tmp_path):
    from dpselect.cli.main import cli

    path = tmp_path / "d.csv"
    _frame(2, 1500).to_csv(path, index=False)
    out = CliRunner().invoke(
        cli, ["keys", str(path), "--column", "v", "--epsilon", "1", "--delta", "1e-6",
              "--privacy-unit", "u", "--max-contributions", "3", "--mechanism", "policy_laplace",
              "--insecure-seed", "3"],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "Policy Laplace" in out.output and "values released" in out.output


def test_choose_keys_method_is_a_pure_function_of_public_facts():
    from dpselect.planning.unknown_domain_choice import POLICY_MIN_EPSILON, choose_keys_method

    grid = [(e, d, c, s) for e in (0.1, 0.5, 1.0, 2.0) for d in (1e-9, 1e-6)
            for c in (1, 2, 10) for s in (False, True)]  # fmt: skip
    first = [choose_keys_method(*args) for args in grid]
    assert first == [choose_keys_method(*args) for args in grid]  # deterministic
    for (e, _, c, s), m in zip(grid, first, strict=True):
        if c == 1:
            assert m == "optimal"
        elif s and e >= POLICY_MIN_EPSILON:  # s: persons in the driver
            assert m == "policy_laplace"
        else:
            assert m == "optimal"


def test_optimal_with_more_contributions_keeps_one_value_per_person():
    df = _frame(4, 800)
    r = dp.Session(
        df,
        privacy_unit="u",
        contributions=dp.Contributions(values_per_unit=4),
        source=InsecureSeededSource(1),
    ).partition_selection("v", epsilon=0.2, delta=1e-6)  # auto below POLICY_MIN_EPSILON
    assert "bounded to one value" in r.mechanism and r.parameters["values_kept_per_person"] == 1
    assert math.isclose(r.epsilon, 0.2) and r.epsilon <= 0.2 and r.delta == 1e-6
