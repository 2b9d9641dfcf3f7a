"""The joint exponential mechanism (GJK21): law, privacy by brute force, float bound, ties.

The law is checked by simulation (chi-square at a false-failure rate of 1e-6, tests/gof.py)
against the brute-force law that enumerates every vector of intervals, and the same test is
shown to fail on two broken variants (the ``r!`` volume factor dropped; epsilon doubled).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import flint
import numpy as np
import pandas as pd
import pytest

from dpselect.core.arithmetic import float_up
from dpselect.core.errors import ParameterError
from dpselect.core.public_memo import forget_kept
from dpselect.mechanisms import quantile_joint as qj
from dpselect.mechanisms import quantile_joint_moves as qjm
from dpselect.mechanisms import quantile_joint_parameters as qjp
from dpselect.mechanisms import quantile_joint_sums as qjs
from dpselect.mechanisms.quantile_joint import make_joint_quantiles
from dpselect.mechanisms.quantile_joint_moves import joint_intervals
from dpselect.mechanisms.quantile_joint_parameters import (
    JOINT_CAP,
    JOINT_LOG_ERROR,
    joint_rounding_loss,
    joint_sensitivity,
)
from dpselect.mechanisms.quantile_recursive import _sorted_levels
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes import quantile
from dpselect.sampling import InsecureSeededSource
from tests.gof import chi2_statistic, chi2_threshold
from tests.mechanisms.joint_reference import SegmentTrees, repeat_row


# ----------------------------------------------------------------------------- brute force
def brute_law(data, bounds, qs, eps, drop_factorial=False):
    """Every non-decreasing vector of intervals and its probability, from the definition."""
    levels = _sorted_levels(qs)
    plan = qj._Plan(levels, Fraction(eps))
    edges, counts, n = joint_intervals(data, *bounds)
    c = Fraction(plan.factor)
    cells, logs = [], []
    for seq in itertools.combinations_with_replacement(range(len(counts)), len(levels)):
        cs = [0] + [int(counts[i]) for i in seq] + [n]
        s = sum(
            min(Fraction(JOINT_CAP), c * abs(plan.denom * (cs[j + 1] - cs[j]) - g * n))
            for j, g in enumerate(plan.gaps)
        )
        logw = -float(s)
        for i in set(seq):
            r = seq.count(i)
            logw += r * math.log(edges[i + 1] - edges[i])
            if not drop_factorial:
                logw -= math.log(math.factorial(r))
        cells.append(seq)
        logs.append(logw)
    logs_a = np.array(logs)
    p = np.exp(logs_a - logs_a.max())
    return edges, cells, p / p.sum()


def log_density(data, bounds, qs, eps, point, factor):
    """ln p_x(point) of the ideal mechanism with factor c (points strictly increasing)."""
    levels = _sorted_levels(qs)
    denom, gaps = qjp.joint_gaps(levels)
    edges, counts, n = joint_intervals(data, *bounds)

    def score(seq):
        cs = [0] + [int(counts[i]) for i in seq] + [n]
        return sum(
            min(JOINT_CAP, factor * abs(denom * (cs[j + 1] - cs[j]) - g * n))
            for j, g in enumerate(gaps)
        )

    z = 0.0
    for seq in itertools.combinations_with_replacement(range(len(counts)), len(levels)):
        vol = 1.0
        for i in set(seq):
            r = seq.count(i)
            vol *= (edges[i + 1] - edges[i]) ** r / math.factorial(r)
        z += vol * math.exp(-score(seq))
    seq = tuple(int(np.searchsorted(edges, v, side="right") - 1) for v in point)
    return -score(seq) - math.log(z)


def _cell_counts(mech, data, edges, cells, runs):
    index = {c: k for k, c in enumerate(cells)}
    counts = np.zeros(len(cells), dtype=np.int64)
    for _ in range(runs):
        out = mech(data)
        assert out == sorted(out)
        seq = tuple(int(np.searchsorted(edges, v, side="right") - 1) for v in out)
        counts[index[seq]] += 1
    return counts


DATA = [1.0, 2.0, 2.0, 3.0, 6.5]  # a tie; intervals of several lengths
BOUNDS = (0.0, 10.0)


def _fits(counts, probs):
    stat, df = chi2_statistic(counts, probs)
    return stat <= chi2_threshold(df), stat, chi2_threshold(df)


@pytest.mark.parametrize(
    "qs, eps, runs",
    [
        ([0.5], 2.0, 1000),
        pytest.param([0.3, 0.7], 1.0, 3000, marks=pytest.mark.slow),
        pytest.param([0.2, 0.5, 0.8], 0.5, 4000, marks=pytest.mark.slow),
    ],
)
def test_joint_law_matches_brute_force(qs, eps, runs):
    edges, cells, probs = brute_law(DATA, BOUNDS, qs, eps)
    mech = make_joint_quantiles(BOUNDS, qs, eps, resolution=0, source=InsecureSeededSource(11))
    counts = _cell_counts(mech, DATA, edges, cells, runs)
    ok, stat, thr = _fits(counts, probs)
    assert ok, (stat, thr)


@pytest.mark.slow
@pytest.mark.parametrize("block", [1, 2])
def test_joint_law_matches_brute_force_through_every_range_sum_path(monkeypatch, block):
    """The exact law on a tiny input with blocks of 1 or 2 intervals, so that the dynamic
    program's left and right range sums go through every path of BlockedSums (inside one
    block, suffix and prefix across blocks, one and two sparse-table entries; the capped
    "plain" sums need epsilon in the hundreds: test_joint_blocked_sums_agree_with_the_segment
    _tree covers them); chi-square at 1e-6, 12000 runs: enough to fail the same sums with
    the kernel rate doubled (block 2: statistic 217 against the threshold 147)."""
    monkeypatch.setattr(qjs, "SUM_BLOCK", block)
    data = [0.5, 1.0, 1.5, 2.0, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]  # 12 intervals
    qs, eps = [0.3, 0.7], 1.0
    edges, cells, probs = brute_law(data, BOUNDS, qs, eps)
    mech = make_joint_quantiles(BOUNDS, qs, eps, resolution=0, source=InsecureSeededSource(13))
    counts = _cell_counts(mech, data, edges, cells, 12000)
    ok, stat, thr = _fits(counts, probs)
    assert ok, (stat, thr)


@pytest.mark.slow
def test_joint_law_test_fails_on_broken_variants(monkeypatch):
    """The same chi-square test rejects a sampler without the r! factor and one at 2 eps."""
    qs, eps, runs = [0.3, 0.7], 1.0, 6000
    edges, cells, probs = brute_law(DATA, BOUNDS, qs, eps)
    _, _, broken = brute_law(DATA, BOUNDS, qs, eps, drop_factorial=True)
    assert np.abs(broken - probs).max() > 0.05  # the factor matters on these data
    # the sampler passes at this sample size...
    good = make_joint_quantiles(BOUNDS, qs, eps, resolution=0, source=InsecureSeededSource(12))
    assert _fits(_cell_counts(good, DATA, edges, cells, runs), probs)[0]
    # ...and fails without the r! (the volume of r sorted points in one interval)
    orig = qj._Plan.__init__

    def no_factorial(self, levels, e):
        orig(self, levels, e)
        self.log_fact = [0.0] * len(self.log_fact)

    monkeypatch.setattr(qj._Plan, "__init__", no_factorial)
    forget_kept()  # the good sampler's constants are kept: build the broken ones
    try:
        bad = make_joint_quantiles(BOUNDS, qs, eps, resolution=0, source=InsecureSeededSource(13))
        assert not _fits(_cell_counts(bad, DATA, edges, cells, runs), probs)[0]
    finally:
        monkeypatch.undo()
        forget_kept()  # and never keep the broken ones for later tests
    # ...and at twice the epsilon
    double = make_joint_quantiles(
        BOUNDS, qs, 2 * eps, resolution=0, source=InsecureSeededSource(14)
    )
    assert not _fits(_cell_counts(double, DATA, edges, cells, runs), probs)[0]


def test_joint_privacy_map_and_parameters():
    m = make_joint_quantiles(BOUNDS, [0.25, 0.5, 0.75], 0.7)
    assert m.map(0) == 0 and m.map(1) == 0.7 and m.map(3) == float_up(Fraction(0.7) * 3)
    levels = _sorted_levels([0.1 * k for k in range(1, 10)])
    assert joint_sensitivity(levels) == 18  # B = 10, gaps of 1: 2 (10 - 1)
    assert joint_sensitivity(_sorted_levels([0.5])) == 2  # B = 2, gaps 1, 1
    assert joint_rounding_loss(9) == 120 * JOINT_LOG_ERROR
    with pytest.raises(ParameterError, match="epsilon must exceed"):
        make_joint_quantiles(BOUNDS, [0.5], 1e-9)
    with pytest.raises(ParameterError, match="strictly increasing"):
        make_joint_quantiles(BOUNDS, [0.5, 0.2], 1.0)
    with pytest.raises(ParameterError, match="common denominator"):
        make_joint_quantiles(BOUNDS, [1 / 999983, 2 / 999979], 1.0)
    with pytest.raises(ParameterError, match="at most 64"):
        make_joint_quantiles(BOUNDS, [k / 100 for k in range(1, 70)], 1.0)


@pytest.mark.slow
def test_joint_privacy_loss_by_brute_force_over_neighbours():
    """max |ln p_x(o) - ln p_x'(o)| <= eps' over add/remove-one pairs, and nearly attained."""
    eps = 1.0
    for qs in ([0.5], [0.25, 0.75]):
        plan = qj._Plan(_sorted_levels(qs), Fraction(eps))
        rng = np.random.default_rng(3)
        points = [tuple(sorted(rng.uniform(0.05, 9.95, len(qs)))) for _ in range(60)]
        domain = [1.0, 2.0, 3.0, 7.0]
        worst = 0.0
        for size in range(0, 4):
            for x in itertools.combinations_with_replacement(domain, size):
                for extra in domain:
                    for p in points:
                        a = log_density(list(x), BOUNDS, qs, eps, p, plan.factor)
                        b = log_density([*x, extra], BOUNDS, qs, eps, p, plan.factor)
                        worst = max(worst, abs(a - b))
        assert worst <= eps - float(plan.rounding) + 1e-9, (qs, worst)
        assert worst > 0.6 * eps, (qs, worst)  # the sensitivity is nearly attained


# ----------------------------------------------------------------------------- float bound
def _arb(x):
    return flint.arb(float(x)) if math.isfinite(x) else None


def _check_float_bound(values, bounds, qs, eps):
    """Each float log-weight within JOINT_LOG_ERROR of the exact expression in the previous
    level's floats (forward sums, the repeat formula, the backward weights), by arb."""
    levels = _sorted_levels(qs)
    plan = qj._Plan(levels, Fraction(eps))
    lo, hi = bounds
    edges, counts, n = joint_intervals(values, lo, hi)
    bc = counts * plan.denom
    loglen = qj._log_lengths(edges[:-1], edges[1:])
    alpha1, self_cost = qj._forward(plan, loglen, bc, n, None)
    eta = flint.arb(float(JOINT_LOG_ERROR))
    c = flint.arb(plan.factor)
    nint = bc.shape[0]

    def kappa(x):
        x = abs(int(x))
        return flint.arb(JOINT_CAP) if x >= plan.x_cap else c * x

    checked = 0
    with flint.ctx.workprec(300):
        lens = [flint.arb(edges[i + 1]) - flint.arb(edges[i]) for i in range(nint)]
        for i in range(nint):  # the first level
            exact = lens[i].log() - kappa(bc[i] - plan.gaps[0] * n)
            assert abs(exact - flint.arb(alpha1[0][i])) < eta
            checked += 1
        for j in range(plan.m):
            reps = [repeat_row(plan, alpha1, self_cost, loglen, j, r) for r in range(1, j + 2)]
            for r in range(2, j + 2):  # the repeat formula
                for i in range(nint):
                    base = alpha1[j - r + 1][i]
                    if not math.isfinite(base):
                        assert reps[r - 1][i] == -math.inf
                        continue
                    exact = (
                        flint.arb(base)
                        + (r - 1) * lens[i].log()
                        - flint.arb(math.factorial(r)).log()
                        - sum(
                            (kappa(plan.gaps[t] * n) for t in range(j - r + 2, j + 1)),
                            flint.arb(0),
                        )
                    )
                    assert abs(exact - flint.arb(reps[r - 1][i])) < eta
                    checked += 1
            if j + 1 >= plan.m:
                break
            for i in range(nint):  # the forward sum into level j + 1
                total = flint.arb(0)
                for ip in range(i):
                    k = kappa(bc[i] - bc[ip] - plan.gaps[j + 1] * n)
                    for rep in reps:
                        if math.isfinite(rep[ip]):
                            total += (flint.arb(rep[ip]) - k).exp()
                got = alpha1[j + 1][i]
                if total == 0:
                    assert got == -math.inf
                    continue
                exact = lens[i].log() + total.log()
                assert abs(exact - flint.arb(got)) < eta, (j, i, got, exact)
                checked += 1
    assert checked > 0


@pytest.mark.parametrize(
    "values, bounds",
    [
        ([1e300, -1e300, 3e299, 3e299, 5e-324, 7.0], (-1.7e308, 1.7e308)),
        ([5e-324, 1e-323, 2.5e-322, 2.5e-322, 0.0, -5e-324], (-1e-310, 1e-310)),
        ([1.0, 1.0 + 2**-40, 1.0 + 2**-39, 2.0, 1e6, 3.0, 4.0], (0.0, 1e6 + 1)),
        ([0.1, 0.2, 0.30000000000000004, 0.3] * 3, (0.0, 1.0)),
    ],
)
@pytest.mark.parametrize("eps, qs", [(1.0, [0.25, 0.5, 0.75]), (1e-3, [0.1, 0.9]), (50.0, [0.5])])
def test_joint_float_log_weights_within_the_bound_against_arb(values, bounds, eps, qs):
    _check_float_bound(values, bounds, qs, eps)


@pytest.mark.parametrize("levels", [None, 0, 1])
def test_joint_float_bound_on_larger_data_with_capped_terms(monkeypatch, levels):
    """``levels``: blocks of ``2^levels`` intervals forced, so that the range sums go through
    the sparse table over blocks too (default: the block _leaf_levels picks)."""
    if levels is not None:
        monkeypatch.setattr(qjs, "_leaf_levels", lambda n: levels)
    rng = np.random.default_rng(5)
    values = np.round(rng.lognormal(3, 1, 60), 1).tolist()  # ties; capped terms at eps 200
    _check_float_bound(values, (0.0, 1000.0), [0.2, 0.4, 0.6, 0.8], 200.0)


# ----------------------------------------------------------------------------- edges, recipe
def test_joint_empty_one_value_and_ties_answer_inside_the_bounds_same_form():
    qs = [0.1, 0.5, 0.9]
    for values in ([], [3.0], [2.5] * 50, [0.0] * 10 + [10.0] * 10, [-5.0, 50.0]):
        mech = make_joint_quantiles(BOUNDS, qs, 1.0, source=InsecureSeededSource(2))
        out = mech(np.array(values, dtype=float))
        assert len(out) == 3 and out == sorted(out)
        assert all(isinstance(v, float) and 0.0 <= v <= 10.0 for v in out)
    edges, counts, n = joint_intervals([2.0, 2.0, 2.0, 5.0], 0.0, 10.0)
    assert edges.tolist() == [0.0, 2.0, 5.0, 10.0] and counts.tolist() == [0, 3, 4] and n == 4


def test_a_value_many_rows_hold_is_the_likely_output():
    """43 rows hold the median: with the default resolution (w = 0.05 on [0, 100], values
    rounded to 0.1) it comes back exactly, without it (plain GJK21: the tied block is a point
    of measure zero) it never does. At epsilon 1 the tied block's small volume still loses to
    the intervals beside it (docs/quantiles.md)."""
    values = np.array([1.0 * k for k in range(1, 29)] + [12.5] * 43 + [30.0 + k for k in range(28)])
    qs = [0.25, 0.5, 0.75]
    mech = make_joint_quantiles((0.0, 100.0), qs, 5.0, source=InsecureSeededSource(8))
    meds = [mech(values)[1] for _ in range(100)]
    assert np.mean([v == 12.5 for v in meds]) > 0.8
    plain = make_joint_quantiles(
        (0.0, 100.0), qs, 5.0, resolution=0, source=InsecureSeededSource(8)
    )
    assert not any(plain(values)[1] == 12.5 for _ in range(100))


def test_quantile_recipe_auto_is_joint_and_methods_by_name():
    data = pd.DataFrame({"v": np.arange(1, 1001, dtype=float)})
    deciles = [i / 10 for i in range(1, 10)]
    # auto, 2 to 20 levels: 1/20 of epsilon to a noisy row count N, then the joint mechanism
    # when 1.9 N >= 700 (docs/quantiles.md, "Choosing the method")
    r = quantile(
        data, quantile_request("v", deciles, 2.0, bounds=(0, 2000)), source=InsecureSeededSource(4)
    )
    assert "Gillenwater" in r.method and r.epsilon_each == 1.9 and len(r.values) == 9
    assert r.to_dict()["parameters"]["method"] == "joint" and r.values == sorted(r.values)
    assert all(abs(v - 1000 * q) < 50 for v, q in zip(r.values, deciles, strict=True))
    assert "Gillenwater" in "\n".join(r.accuracy)
    seen: list[float] = []
    quantile(data, quantile_request("v", deciles, 2.0, bounds=(0, 2000)), work_progress=seen.append)
    assert seen and seen[-1] == 1.0 and seen == sorted(seen)
    rec: list[float] = []
    quantile(
        data,
        quantile_request("v", deciles, 1.0, bounds=(0, 2000), mechanism="recursive"),
        work_progress=rec.append,
    )
    assert len(rec) == 9 and rec[-1] == 1.0 and rec == sorted(rec)
    many = quantile(
        data, quantile_request("v", [k / 100 for k in range(1, 30)], 1.0, bounds=(0, 2000))
    )
    assert "Kaplan" in many.method  # more than 20 levels: recursive
    for name in ("joint", "recursive", "split"):
        out = quantile(
            data, quantile_request("v", [0.25, 0.75], 1.0, bounds=(0, 2000), mechanism=name)
        )
        assert out.to_dict()["parameters"]["method"] == name
    with pytest.raises(ParameterError, match="needs bounds"):
        quantile(data, quantile_request("v", deciles, 1.0, candidates=[1, 2], mechanism="joint"))
    one = quantile(data, quantile_request("v", 0.5, 1.0, bounds=(0, 2000)))
    assert one.to_dict()["parameters"]["method"] == "split"  # one level: continuous


def test_cli_progress_bars_for_the_column_and_the_work():
    from dpselect.cli.applications import _scan_progress

    with _scan_progress(False) as (scan, work):
        assert scan is None and work is None
    with _scan_progress(True) as (scan, work):
        assert scan is not None and work is not None
        scan(50.0)
        work(0.5)
        work(1.0)


def test_continuous_progress_bar_and_same_output():
    """The continuous (split) path reports increasing fractions ending at 1.0, and the bar
    reads no randomness: the same seed gives the same values with and without it."""
    data = pd.DataFrame({"v": np.arange(1, 1001, dtype=float)})
    seen: list[float] = []
    with_bar = quantile(
        data,
        quantile_request("v", [0.25, 0.75], 1.0, bounds=(0, 2000), mechanism="split"),
        source=InsecureSeededSource(8),
        work_progress=seen.append,
    )
    plain = quantile(
        data,
        quantile_request("v", [0.25, 0.75], 1.0, bounds=(0, 2000), mechanism="split"),
        source=InsecureSeededSource(8),
    )
    assert with_bar.values == plain.values
    assert seen and seen[-1] == 1.0 and seen == sorted(seen) and seen[0] > 0.0
    assert 0.5 in seen  # the first level's end: its share of the bar
    one: list[float] = []
    quantile(data, quantile_request("v", 0.5, 1.0, bounds=(0, 2000)), work_progress=one.append)
    assert one[-1] == 1.0 and one == sorted(one) and len(one) >= 3


def test_serial_fetch_restores_duckdb_threads():
    from dpselect.data.tables import _database

    before = _database().execute("SELECT current_setting('threads')").fetchall()
    data = pd.DataFrame({"v": np.arange(1, 101, dtype=float)})
    quantile(data, quantile_request("v", 0.5, 1.0, bounds=(0, 200)))
    assert _database().execute("SELECT current_setting('threads')").fetchall() == before


def test_joint_default_resolution_shrinks_with_epsilon_above_one():
    """Above epsilon 1 the default step shrinks like the mechanism's rows per unit of score
    (1 / epsilon); at or below 1 it is the bounds' rule; the recipe reports the w it used."""
    assert qjp.joint_resolution(None, 0.0, 20000.0) == 5.0  # step 10
    assert qjp.joint_resolution(None, 0.0, 20000.0, 1) == 5.0
    assert qjp.joint_resolution(None, 0.0, 20000.0, 0.1) == 5.0  # never coarser below 1
    assert qjp.joint_resolution(None, 0.0, 20000.0, 4) == 0.5  # step 1: 20000 / 2400 = 8.3
    assert qjp.joint_resolution(None, -20.0, 50.0, Fraction(19, 20)) == 0.05
    assert qjp.joint_resolution(None, -20.0, 50.0, 2) == 0.005
    assert qjp.joint_resolution(0.25, 0.0, 1.0, 100) == 0.25  # a given w is kept
    data = pd.DataFrame({"v": np.arange(1, 101, dtype=float)})
    res = quantile(
        data, quantile_request("v", [0.25, 0.75], 4.0, bounds=(0, 20000), mechanism="joint")
    )
    assert res.resolution == 0.5 and "multiple of 1" in " ".join(res.accuracy)


def test_joint_default_resolution_and_decimal_rounding():
    """The default w is half the power of ten at most (hi - lo) / 600 (public: the bounds),
    the values are rounded to that power of ten, never past the bounds, by at most w."""
    assert qjp.joint_resolution(None, -20.0, 50.0) == 0.05
    assert qjp.joint_resolution(None, 0.0, 500.0) == 0.05
    assert qjp.joint_resolution(None, 2000.0, 7000.0) == 0.5
    assert qjp.joint_resolution(None, 0.0, 600.0) == 0.5
    assert qjp.joint_resolution(0, 0.0, 1.0) == 0.0 and qjp.joint_resolution(0.25, 0.0, 1.0) == 0.25
    for w, step in ((0.05, Fraction(1, 10)), (0.5, Fraction(1)), (0.25, Fraction(1, 10))):
        assert qjp.decimal_step(w) == step and step <= 2 * w < 10 * step
    step = Fraction(1, 10)
    assert qjp.round_to_step(12.34, step, 0.0, 100.0) == 12.3
    assert qjp.round_to_step(12.25, step, 0.0, 100.0) == 12.2  # a tie: to the even multiple
    assert qjp.round_to_step(99.99, step, 0.0, 99.97) == 99.97  # never past the bounds
    assert qjp.round_to_step(-0.04, step, -1.0, 1.0) == 0.0
    rng = np.random.default_rng(5)
    for v in rng.uniform(-20, 50, 200):
        r = qjp.round_to_step(float(v), step, -20.0, 50.0)
        assert abs(r - v) <= 0.05 + 1e-12 and abs(round(r * 10) - r * 10) < 1e-9
    data = pd.DataFrame({"v": rng.normal(10.0, 5.0, 300)})
    r = quantile(
        data,
        quantile_request("v", [0.1, 0.5, 0.9], 1.0, bounds=(-20, 50), mechanism="joint"),
        source=InsecureSeededSource(3),
    )
    assert r.resolution == 0.05 and r.parameters["resolution"] == 0.05
    assert all(abs(round(v * 10) - v * 10) < 1e-9 for v in r.values)
    split = quantile(
        data, quantile_request("v", [0.1, 0.9], 1.0, bounds=(-20, 50), mechanism="split")
    )
    assert split.resolution == float_up(Fraction(70, 10**6))  # the continuous default stays


def test_anchor_levels_unreleased_and_no_longer_used_by_auto(monkeypatch):
    """The joint mechanism with two anchors (q_1 / 20, 1 - (1 - q_m) / 20) releases the m
    others at the epsilon asked for (the anchors' values are dropped: post-processing); since
    the tree takes small eps n, mechanism="auto" no longer adds them (docs/quantiles.md)."""
    from dpselect.planning import quantile_count_rule as recipe
    from dpselect.planning.quantile_methods import JOINT_ANCHOR_EPSILON, anchored_levels

    data = pd.DataFrame({"v": np.arange(1, 1001, dtype=float)})
    deciles = [i / 10 for i in range(1, 10)]
    levels = [Fraction(i, 10) for i in range(1, 10)]
    plan = recipe._joint_plan((0, 2000), levels, Fraction(1, 10), 0.95, None, True,
                              InsecureSeededSource(2), None)  # fmt: skip
    low = plan.run(np.arange(1, 1001, dtype=float))
    assert len(low) == 9 and low == sorted(low) and "anchor" in plan.text
    assert JOINT_ANCHOR_EPSILON > 0.1
    assert "m + 3 gaps" in "\n".join(plan.accuracy)
    assert plan.rounding == float_up(qjp.joint_rounding_loss(11))
    monkeypatch.setattr(recipe, "TREE_AUTO_LIMIT", 0)  # the noisy count always picks joint
    for r in (
        quantile(data, quantile_request("v", deciles, 0.1, bounds=(0, 2000), mechanism="joint")),
        quantile(data, quantile_request("v", deciles, 0.1, bounds=(0, 2000))),
        quantile(data, quantile_request("v", deciles, 1.0, bounds=(0, 2000))),
    ):
        assert "anchor" not in r.method and "m + 3" not in "\n".join(r.accuracy)
    levels = anchored_levels([Fraction(1, 10), Fraction(9, 10)])
    assert levels == [Fraction(1, 200), Fraction(1, 10), Fraction(9, 10), Fraction(199, 200)]
    odd = [Fraction(1, 999983), Fraction(1, 2)]
    assert anchored_levels(odd) == odd  # common denominator over 10^6: no anchors
    ends = [Fraction(0), Fraction(1, 2), Fraction(1)]
    assert anchored_levels(ends) == ends  # no room for an anchor below 0 or above 1
    zero = quantile(
        data, quantile_request("v", [0, 0.5], 0.1, bounds=(0, 2000)), source=InsecureSeededSource(1)
    )
    assert len(zero.values) == 2 and "anchor" not in zero.method


def test_a_tied_block_on_a_bound_is_the_likely_output():
    """Rows moved by the resolution are reflected at the bounds: a block of rows equal to the
    lower bound (zero-inflated data, bounds from 0) keeps all of them within w of it. With
    clamping instead, half of the block piled onto the bound as one point of zero volume and
    the levels inside the block were pushed above it (Seattle precipitation, docs/quantiles.md)."""
    rng = np.random.default_rng(5)
    x = np.concatenate([np.zeros(600), np.round(rng.exponential(5.0, 400), 1) + 0.1])
    m = qj.make_joint_quantiles((0.0, 100.0), [0.1, 0.3, 0.5, 0.7], 1.0,
                                source=InsecureSeededSource(6))  # fmt: skip
    zero = sum(all(v == 0.0 for v in m(x)[:3]) for _ in range(20))
    assert zero >= 16  # 20 of 20 seen; 0 of 20 before the reflection


def test_joint_logaddexp_is_the_bounded_formula_and_exact_on_empty_sums():
    """The dynamic program's log-sum: max + log1p(exp(-|a - b|)), within the per-operation
    error docs/quantiles.md assumes (2^-53 |result| + 2^-49) of np.logaddexp, and -inf (an
    empty sum) is neutral exactly."""
    rng = np.random.default_rng(9)
    a = np.concatenate((rng.normal(0, 1e5, 5000), [-np.inf, -np.inf, 3.0, -1e300, 7.5]))
    b = np.concatenate((rng.normal(0, 1e5, 5000), [-np.inf, 2.0, -np.inf, -1e300, 7.5]))
    got, ref = qjs.logaddexp(a, b), np.logaddexp(a, b)
    finite = np.isfinite(ref)
    assert np.all(np.abs(got - ref)[finite] <= 2.0**-52 * np.abs(ref[finite]) + 2.0**-48)
    assert got[-5] == -np.inf and got[-4] == 2.0 and got[-3] == 3.0


def test_joint_blocked_sums_agree_with_the_segment_tree():
    """The dynamic program's range sums (blocks of SUM_BLOCK leaves and a sparse table over
    blocks) against the segment tree that queries level by level: same sums, to float
    rounding, on ranges inside one block, across blocks, empty, and with -inf terms."""
    rng = np.random.default_rng(12)
    for n in (1, 63, 64, 65, 200, 1000):
        a = rng.normal(0, 300, n)
        a[rng.random(n) < 0.1] = -np.inf
        bc = np.sort(rng.integers(0, 10**6, n)) * 3
        start = rng.integers(0, n + 1, 300)
        stop = rng.integers(0, n + 1, 300)
        start, stop = np.minimum(start, stop), np.maximum(start, stop)
        tree, blocked = SegmentTrees(a, bc, 0.01), qjs.BlockedSums(a, bc, 0.01)
        last = bc[np.maximum(stop - 1, 0)] + rng.integers(0, 9, 300)
        first = bc[np.minimum(start, n - 1)] - 1 - rng.integers(0, 9, 300)
        for kind, pivot in (("plain", None), ("left", last), ("right", first)):
            want = tree.query(kind, start.copy(), stop.copy(), pivot)
            got = blocked.query(kind, start.copy(), stop.copy(), pivot)
            assert np.array_equal(np.isfinite(want), np.isfinite(got))
            ok = np.isfinite(want)
            assert np.all(np.abs(got[ok] - want[ok]) <= 1e-12 * np.maximum(1, np.abs(want[ok])))


# ----------------------------------------------------------------------------- moved rows
def _moved_rows_reference(values, lo, hi, w, words):
    """The rows moved one by one, in Fractions (the docstring of joint_moved_intervals): the
    j-th word to the row of the j-th smallest value (the order of the lattice points)."""
    g = qjm.JOINT_SUBPOINTS
    d = Fraction(w) / g
    out = []
    for v, word in zip(np.sort(values), words, strict=True):
        x = min(max(Fraction(float(v)), Fraction(lo)), Fraction(hi))
        i = round((x - Fraction(lo)) / d)  # nearest lattice point (ties: either is in law)
        t = int(word) >> (64 - (g.bit_length() - 1))
        p = Fraction(lo) + (i + 2 * t + 1 - g) * d
        if p < lo:
            p = 2 * Fraction(lo) - p
        if p > hi:
            p = 2 * Fraction(hi) - p
        out.append(float(p))
    return out


@pytest.mark.parametrize(
    ("lo", "hi", "w"), [(0.0, 10.0, 0.05), (-3.0, 7.5, 0.25), (0.0, 1.0, 1 / 64), (2.0, 9.0, 1.5)]
)
def test_moved_intervals_equal_the_rows_moved_one_by_one(lo, hi, w):
    """joint_moved_intervals (counts per lattice point, no sort of the rows) gives the
    intervals of the rows moved one by one: every row within w of its clamped value, spread
    over G points on both sides, reflected into the bounds."""
    rng = np.random.default_rng(7)
    values = np.concatenate(
        [rng.uniform(lo - 1, hi + 1, 3000), np.full(500, lo), np.full(500, hi),
         np.full(700, (lo + hi) / 2), np.round(rng.uniform(lo, hi, 1000), 1)]
    )  # fmt: skip
    words = rng.integers(0, 2**64, values.shape[0], dtype=np.uint64)
    edges, counts, n = qjm.joint_moved_intervals(values, lo, hi, w, words)
    moved = _moved_rows_reference(values, lo, hi, w, words)
    ref_edges, ref_counts, ref_n = joint_intervals(moved, lo, hi)
    assert n == ref_n == values.shape[0]
    np.testing.assert_allclose(edges, ref_edges, rtol=0, atol=1e-9 * (hi - lo))
    assert np.array_equal(counts, ref_counts)
    ordered = np.sort(values)  # the rows in the order the words went to them
    clamped = np.clip(ordered, lo, hi)
    assert np.max(np.abs(np.asarray(moved) - clamped)) < w
    block = np.asarray(moved)[ordered == (lo + hi) / 2]  # a tied block: G points both sides
    assert len(np.unique(block)) == qjm.JOINT_SUBPOINTS
    assert abs(float(np.mean(block)) - (lo + hi) / 2) < w / 4
