"""Partition selection: DVGM22's release law by simulation against its formula (a broken
variant fails), the DP constraints, neighbouring datasets by exact enumeration (a person added
with rows in new values), thresholding's calibration and its printed statements."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpselect
import dpselect as dp
from dpselect.core.errors import ParameterError, PrivacyMapError
from dpselect.mechanisms.partition_selection import (
    make_optimal_partition_selection,
    make_threshold_partition_selection,
    optimal_release_probability,
    threshold_plan,
)
from dpselect.planning.unknown_domain_choice import noise_halfwidth, sure_release_count
from dpselect.sampling.source import InsecureSeededSource
from tests.release_laws import delta_needed, independent_release_law

Z = 4.9  # two-sided normal quantile of 1e-6


def _pi_reference(n, eps, delta):
    """An independent float evaluation of DVGM22's recursion."""
    p = 0.0
    for _ in range(n):
        p = min(math.exp(eps) * p + delta, 1 - math.exp(-eps) * (1 - p - delta), 1.0)
    return p


@pytest.mark.parametrize(("eps", "delta"), [(1.0, 1e-6), (0.1, 1e-3), (2.0, 1e-10), (0.5, 0.05)])
def test_optimal_probability_matches_recursion_and_constraints(eps, delta):
    prev = 0.0
    for n in range(1, 400):
        p = optimal_release_probability(n, eps, delta)
        assert p == pytest.approx(_pi_reference(n, eps, delta), rel=1e-9, abs=1e-15)
        # the two DP constraints between n - 1 and n
        assert p <= math.exp(eps) * prev + delta + 1e-12
        assert 1 - prev <= math.exp(eps) * (1 - p) + delta + 1e-12
        assert p >= prev
        prev = p
    assert prev == 1.0


def _release_rates(mechanism, counts, copies, seed):
    hist = {(c, j): c for c in counts for j in range(copies)}
    out = set(mechanism(hist))
    return {c: sum((c, j) in out for j in range(copies)) for c in counts}


@pytest.mark.parametrize("broken", [False, True])
def test_optimal_release_law_by_simulation(broken):
    eps, delta = 1.0, 0.01
    mech_eps = 2 * eps if broken else eps  # the broken variant: epsilon doubled
    m = make_optimal_partition_selection(mech_eps, delta, source=InsecureSeededSource(11))
    counts = [1, 2, 3, 4, 5]
    copies = 4000
    rates = _release_rates(m, counts, copies, 0)
    bad = []
    for c in counts:
        p = optimal_release_probability(c, eps, delta)
        sd = math.sqrt(max(p * (1 - p), 1e-12) / copies)
        if abs(rates[c] / copies - p) > Z * sd + 1e-9:
            bad.append((c, rates[c] / copies, p))
    assert bool(bad) == broken, bad


def _law_optimal(hist, eps, delta):
    """Exact law of the released set: independent Bernoulli(pi(n_v))."""
    return independent_release_law(
        {v: optimal_release_probability(n, eps, delta) if n > 0 else 0.0 for v, n in hist.items()}
    )


def test_optimal_neighbours_by_exact_enumeration():
    eps, delta = 1.0, 1e-3
    d = {"a": 3, "b": 1, "c": 0}
    d_plus = {"a": 3, "b": 1, "c": 1}  # a person added with a row in a new value
    d_plus2 = {"a": 4, "b": 1, "c": 0}  # or in an existing one
    m = make_optimal_partition_selection(eps, delta)
    e_map, d_map = m.map(1)
    for other in (d_plus, d_plus2):
        need = delta_needed(_law_optimal(d, eps, delta), _law_optimal(other, eps, delta), e_map)
        assert need <= d_map * (1 + 1e-9)
    # the check can fail: the new value needs all of delta, the grown one needs epsilon
    law = _law_optimal(d, eps, delta)
    assert delta_needed(law, _law_optimal(d_plus, eps, delta), e_map) > d_map / 2
    assert delta_needed(law, _law_optimal(d_plus2, eps, delta), e_map / 2) > d_map
    with pytest.raises(PrivacyMapError):
        m.map(2)


def _law_threshold(hist, plan, span=60):
    """Exact law of {value: noisy count} for discrete Laplace or Gaussian noise (truncated far
    tails, the Gaussian normalised over the span)."""
    z = np.arange(-span, span + 1)
    if plan.noise == "laplace":
        q = math.exp(-1 / plan.scale)
        pz = (1 - q) / (1 + q) * q ** np.abs(z)
    else:
        w = np.exp(-(z.astype(float) ** 2) / (2 * plan.scale**2))
        pz = w / w.sum()
    per_value = []
    for v in sorted(hist):
        n = hist[v]
        outs = {None: 0.0}
        for zi, pi in zip(z, pz, strict=True):
            noisy = n + zi
            key = noisy if (n > 0 and noisy >= plan.threshold) else None
            outs[key] = outs.get(key, 0.0) + pi
        per_value.append([(v, k, p) for k, p in outs.items()])
    law = {}
    for combo in itertools.product(*per_value):
        key = tuple((v, k) for v, k, _ in combo if k is not None)
        law[key] = law.get(key, 0.0) + math.prod(p for _, _, p in combo)
    return law


def test_threshold_neighbours_by_exact_enumeration():
    # max_contributions = 2: a person adds 1 to an existing value and 1 to a new one
    plan = threshold_plan("laplace", 1.0, 1e-2, 2)
    assert plan.scale == 2.0 and plan.epsilon == 1.0
    d = {"a": plan.threshold, "b": 0}
    d_plus = {"a": plan.threshold + 1, "b": 1}
    need = delta_needed(_law_threshold(d, plan), _law_threshold(d_plus, plan), plan.epsilon)
    assert need <= plan.delta * (1 + 1e-6)
    # a threshold one lower breaks the stated delta
    lower = type(plan)(**{**plan.__dict__, "threshold": plan.threshold - 3})
    need_low = delta_needed(_law_threshold(d, lower), _law_threshold(d_plus, lower), plan.epsilon)
    assert need_low > plan.delta


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize(("eps", "delta", "c"), [(1.0, 1e-6, 1), (0.5, 1e-8, 4)])
def test_threshold_plan_within_target(noise, eps, delta, c):
    plan = threshold_plan(noise, eps, delta, c)
    assert plan.epsilon <= eps and plan.delta <= delta
    # p bounds P(1 + Z >= threshold): check the Laplace one exactly
    if noise == "laplace":
        b = Fraction(plan.scale)
        q = math.exp(-1 / float(b))
        assert c * q ** (plan.threshold - 1) / (1 + q) <= delta * (1 + 1e-12)
        assert c * q ** (plan.threshold - 2) / (1 + q) > delta  # the least such threshold


def test_threshold_release_and_noise_statements_hold():
    """'A value held by at least N persons is released w.p. >= 95%' and 'its noisy count is
    within +-t w.p. >= 95%', by simulation; the broken N - 3 / t // 3 fail."""
    for noise in ("laplace", "gaussian"):
        plan = threshold_plan(noise, 1.0, 1e-6, 1)
        sure, half = sure_release_count(plan), noise_halfwidth(plan)
        m = make_threshold_partition_selection(plan, counts=True, source=InsecureSeededSource(5))
        copies = 4000
        limit = copies * 0.05 + Z * math.sqrt(copies * 0.05 * 0.95)
        out = m({j: sure for j in range(copies)})
        assert copies - len(out) <= limit
        # noise statement: on values far above the threshold (all released)
        far = m({j: 10**6 for j in range(copies)})
        assert sum(abs(v - 10**6) > half for v in far.values()) <= limit
        assert sum(abs(v - 10**6) > half // 3 for v in far.values()) > limit
        broken = m({j: sure - 3 * max(1, half // 2) for j in range(copies)})
        assert copies - len(broken) > limit


def test_optimal_release_statement_holds():
    res_eps, res_delta = 1.0, 1e-6
    n = 1
    while optimal_release_probability(n, res_eps, res_delta) < 0.95:
        n += 1
    m = make_optimal_partition_selection(res_eps, res_delta, source=InsecureSeededSource(2))
    copies = 4000
    limit = copies * 0.05 + Z * math.sqrt(copies * 0.05 * 0.95)
    assert copies - len(m({j: n for j in range(copies)})) <= limit
    assert copies - len(m({j: n - 2 for j in range(copies)})) > limit  # broken N - 2


def test_partition_selection_api_and_errors(tmp_path):
    df = pd.DataFrame(
        {"u": range(300), "v": ["big"] * 200 + ["mid"] * 90 + [f"r{i}" for i in range(10)]}
    )
    r = dp.Session(df, source=InsecureSeededSource(0)).partition_selection(
        "v", epsilon=1.0, delta=1e-6
    )
    assert r.values == ["big", "mid"] and "Desfontaines" in r.mechanism
    assert (r.epsilon, r.delta) == (1.0, 1e-6)
    r2 = dp.Session(
        df,
        privacy_unit="u",
        contributions=dp.Contributions(values_per_unit=3),
        source=InsecureSeededSource(0),
    ).partition_selection("v", epsilon=1.0, delta=1e-6)
    assert r2.values == ["big", "mid"] and "Policy Laplace" in r2.mechanism  # c > 1: GGKSSY20
    r3 = dp.Session(
        df,
        privacy_unit="u",
        contributions=dp.Contributions(values_per_unit=3),
        source=InsecureSeededSource(0),
    ).partition_selection("v", epsilon=1.0, delta=1e-6, mechanism="laplace")
    assert r3.values == ["big", "mid"] and "threshold" in r3.mechanism
    with pytest.raises(ParameterError, match=r"values_per_unit=...\) other than 1 needs"):
        dp.Session(df, contributions=dp.Contributions(values_per_unit=2)).partition_selection(
            "v", epsilon=1.0, delta=1e-6
        )
    with pytest.raises(ParameterError, match="delta"):
        dpselect.partition_selection(df, "v", epsilon=1.0, delta=0.0)
    from dpselect.accounting.ledger import Ledger

    path = str(tmp_path / "b.ledger")
    Ledger.create(path, 2.0, 1e-5)
    dpselect.partition_selection(df, "v", epsilon=1.0, delta=1e-6, ledger=path)
    assert Ledger.open(path).spent() == (1.0, 1e-6)


def _gaussian_tail_float(sigma: float, m: int) -> float:
    """An independent float evaluation of P(Z >= m) for the discrete Gaussian (plain sums)."""
    span = int(40 * sigma) + 50
    w = [math.exp(-(z * z) / (2 * sigma * sigma)) for z in range(-span, span + 1)]
    return math.fsum(w[span + m :]) / math.fsum(w)


@pytest.mark.parametrize(
    ("sigma", "m"), [(0.7, 1), (2.5, 3), (4.669, 24), (14.76, 80), (130.0, 690)]
)
def test_discrete_gaussian_tail_against_plain_sums(sigma, m):
    from dpselect.mechanisms.partition_selection import discrete_gaussian_tail

    got = discrete_gaussian_tail(Fraction(sigma) ** 2, m)
    true = _gaussian_tail_float(sigma, m)
    assert true * (1 - 1e-12) <= got <= true * (1 + 1e-9)
    assert got <= math.exp(-(m * m) / (2 * sigma * sigma))  # never above the sub-Gaussian bound


@pytest.mark.parametrize(
    ("sigma", "m"), [(200.5, 900), (250.0, 1300), (900.0, 5200), (3000.0, 3001)]
)
def test_discrete_gaussian_tail_closed_form_for_large_sigma(sigma, m):
    """Above sigma 200 the tail is the normal tail from m - 1/2 (no sums): an upper bound on
    the exact tail, within 10^-3 of it at threshold-like m."""
    from dpselect.mechanisms.partition_selection import discrete_gaussian_tail

    got = discrete_gaussian_tail(Fraction(sigma) ** 2, m)
    true = _gaussian_tail_float(sigma, m)
    assert true <= got <= true * (1 + 1e-3)
    # below m - 1/2 < sigma: the trivial bound 1/2
    assert discrete_gaussian_tail(Fraction(sigma) ** 2, int(sigma / 2)) == 0.5


@pytest.mark.slow  # long: run by .ci/run's `pytest -m slow`
def test_gaussian_threshold_plan_is_fast_for_tiny_epsilon():
    """sigma near 10^5 (epsilon 0.001, c = 256): the threshold search was 110 s with sums."""
    import time

    start = time.process_time()
    plan = threshold_plan("gaussian", 0.001, 1e-12, 256)
    assert time.process_time() - start < 20  # a hang guard, not a speed claim (bench/)
    assert plan.epsilon <= 0.001 and plan.delta <= 1e-12
    m = plan.threshold - 1
    assert 256 * _gaussian_tail_float(plan.scale, m) <= 5e-13


@pytest.mark.parametrize(("eps", "delta", "c"), [(1.0, 1e-6, 1), (1.0, 1e-6, 10), (0.1, 1e-6, 5)])
def test_gaussian_threshold_is_the_least_by_the_exact_tail(eps, delta, c):
    plan = threshold_plan("gaussian", eps, delta, c)
    m = plan.threshold - 1  # a new value (count 1) passes when Z >= m
    d_thr = delta / 2
    assert c * _gaussian_tail_float(plan.scale, m) <= d_thr
    assert c * _gaussian_tail_float(plan.scale, m - 1) > d_thr  # the least such threshold
    # lower than the sub-Gaussian threshold it replaced
    assert m < math.ceil(plan.scale * math.sqrt(2 * math.log(c / d_thr)))


def test_gaussian_threshold_neighbours_by_exact_enumeration():
    """c = 2, delta = 1e-2 (visible mass): a person adding 1 to a value at the threshold and
    creating a new value needs at most the map's delta at its epsilon; a threshold 3 lower
    needs more."""
    plan = threshold_plan("gaussian", 1.0, 1e-2, 2)
    d = {"a": plan.threshold, "b": 0}
    d_plus = {"a": plan.threshold + 1, "b": 1}
    law, law_plus = _law_threshold(d, plan), _law_threshold(d_plus, plan)
    need = max(delta_needed(law, law_plus, plan.epsilon), delta_needed(law_plus, law, plan.epsilon))
    assert need <= plan.delta * (1 + 1e-6)
    lower = type(plan)(**{**plan.__dict__, "threshold": plan.threshold - 3})
    low, low_plus = _law_threshold(d, lower), _law_threshold(d_plus, lower)
    assert delta_needed(low, low_plus, plan.epsilon) > plan.delta


@pytest.mark.parametrize(
    ("eps", "delta"), [(1.0, 1e-300), (100.0, 1e-6), (1e6, 1e-300), (1e300, 1e-6), (40.0, 0.3)]
)
def test_optimal_table_ends_at_any_large_epsilon_and_tiny_delta(eps, delta):
    # A ball of pi near 1 could not certify pi = 1 at a large epsilon (the table ran to its
    # length limit, a minute, then said "epsilon is too small"). Each entry's ball holds the
    # recursion's exact value (mpmath at 4000 bits, from the capped epsilon: min(eps, 1024)),
    # and the table ends where the exact recursion reaches 1.
    import mpmath

    from dpselect.mechanisms import partition_selection as ps

    mpmath.mp.prec = 4000
    e = mpmath.mpf(min(Fraction(eps), ps.PI_EPSILON_CAP))
    d = mpmath.mpf(Fraction(delta).numerator) / Fraction(delta).denominator
    table, last = ps._pi_table(Fraction(eps), Fraction(delta), 128)
    p = mpmath.mpf(0)
    for n in range(1, last + 1):
        p = min(mpmath.exp(e) * p + d, 1 - mpmath.exp(-e) * (1 - p - d), mpmath.mpf(1))
        exact = ps.arb(mpmath.nstr(p, 1200, strip_zeros=False))  # within 1e-1199 of p
        off = table[n] - exact
        assert off.lower() <= 1e-1100 and off.upper() >= -1e-1100, (n, p, table[n])
        if n < last:
            assert p < 1
    assert p == 1
    assert last <= 1400


def test_optimal_table_too_long_is_refused_from_the_parameters():
    # about ln(1/delta) / epsilon probabilities: refused at construction (before any charge)
    import time

    start = time.perf_counter()
    with pytest.raises(ParameterError, match="raise delta or epsilon"):
        make_optimal_partition_selection(1e-4, 1e-300)
    assert time.perf_counter() - start < 1.0
    make_optimal_partition_selection(1e-2, 1e-300)  # about 140,000 steps: computed, accepted
