"""Mechanisms calibrated to ``max_rows_per_value = r`` (L-inf ``r``, L1 ``c r``, L2 ``r sqrt(c)``).

Maps against hand-computed values; the selection's law and the histogram's noise law against
the theory at ``r`` (seeded, false-failure rate 1e-6, sizes that fail a factor-2 scale bug);
the accuracy statements and the thresholding's release guarantee checked by simulation.
"""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpselect.core.errors import PrivacyMapError
from dpselect.mechanisms.choice import choose_top_k
from dpselect.mechanisms.histogram_top_k import make_noisy_histogram_top_k
from dpselect.mechanisms.limited_domain import make_limited_domain_top_k
from dpselect.mechanisms.partition_selection import (
    make_threshold_partition_selection,
    threshold_plan,
)
from dpselect.planning.top_k_plan import plan_top_k
from dpselect.sampling import InsecureSeededSource

from ..gof import ALPHA, assert_fits


def test_histogram_maps_by_hand():
    lap = make_noisy_histogram_top_k(
        4, 2, "laplace", scale=15, max_contributions=3, max_rows_per_value=5
    )
    assert lap.map(1) == 1.0  # d c r / b = 15 / 15
    gauss = make_noisy_histogram_top_k(
        4, 2, "gaussian", scale=10, max_contributions=2, max_rows_per_value=3
    )
    assert gauss.map(1) == pytest.approx(0.09) and gauss.map(1) >= 0.09  # 2 * 9 / 200
    rows_one = make_noisy_histogram_top_k(4, 2, "laplace", scale=15, max_contributions=3)
    assert rows_one.map(1) == float(Fraction(3, 15))


@pytest.mark.parametrize("method", ["permute_and_flip", "gumbel", "laplace"])
@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_selection_plans_scale_with_r(method, delta):
    one = plan_top_k(30, 3, 1.0, delta, method, False, 2, None)
    four = plan_top_k(30, 3, 1.0, delta, method, False, 2, None, max_rows_per_value=4)
    assert four.scale == pytest.approx(4 * one.scale, rel=1e-12)
    assert four.epsilon <= 1.0
    assert delta > 0 or four.measurement.map(4) <= 1.0  # with delta: the composed epsilon
    assert four.measurement.map(4) == pytest.approx(one.measurement.map(1), rel=1e-9)
    assert four.margin == pytest.approx(4 * one.margin, rel=1e-9)  # the accuracy figure


@pytest.mark.parametrize("method", ["laplace_histogram", "gaussian_histogram"])
def test_histogram_plans_scale_with_r(method):
    one = plan_top_k(30, 3, 1.0, 1e-6, method, False, 3, None)
    ten = plan_top_k(30, 3, 1.0, 1e-6, method, False, 3, None, max_rows_per_value=10)
    assert ten.scale == pytest.approx(10 * one.scale, rel=1e-9)
    assert ten.epsilon <= 1.0
    assert ten.count_halfwidth >= 9 * one.count_halfwidth


def test_auto_choice_does_not_depend_on_r():
    for k, n, eps, delta, c in [(1, 10, 1.0, 0.0, 1), (10, 100, 1.0, 1e-6, 4), (3, 50, 0.5, 0, 8)]:
        best, options = choose_top_k(k, n, eps, delta, c)
        best_r, options_r = choose_top_k(k, n, eps, delta, c, 7)
        assert best_r.mechanism == best.mechanism
        for o, o_r in zip(options, options_r, strict=True):
            assert o_r.scale == pytest.approx(7 * o.scale) and o_r.gap == pytest.approx(7 * o.gap)


def _softmax(scores, scale):
    w = np.exp((np.asarray(scores, dtype=float) - max(scores)) / scale)
    return w / w.sum()


def test_selection_samples_the_law_calibrated_to_r():
    """One round of the exponential mechanism (Gumbel) at epsilon 1 with r = 4: each score
    moves by at most 4, so the law is softmax(scores * epsilon / r) (seed 001, seed 004).
    6000 draws over 3 outcomes: a scale off by a factor 2 (or r ignored) fails."""
    r, eps = 4, 1.0
    source = InsecureSeededSource(2024)
    plan = plan_top_k(3, 1, eps, 0.0, "gumbel", False, 2, source, max_rows_per_value=r)
    scores = np.array([0, 4, 2], dtype=np.int64)
    counts = np.zeros(3, dtype=np.int64)
    for _ in range(6000):
        counts[int(np.asarray(plan.measurement(scores))[0])] += 1
    assert_fits(counts, _softmax(scores, r / eps))


def test_histogram_noise_is_discrete_laplace_of_scale_c_r_over_epsilon():
    """Laplace histogram, c = 3, r = 5, epsilon 1: noise discrete Laplace of scale 15."""
    c, r, eps = 3, 5, 1.0
    source = InsecureSeededSource(77)
    plan = plan_top_k(1, 1, eps, 0.0, "laplace_histogram", True, c, source, max_rows_per_value=r)
    scores = np.array([1000], dtype=np.int64)
    noise = np.array([int(plan.measurement(scores)[1][0]) - 1000 for _ in range(6000)])
    b = c * r / eps
    q = math.exp(-1 / b)
    edges = np.arange(-60, 61, 6)  # bins [e, e + 6) plus both tails

    def cdf(z):  # P(Z <= z), discrete Laplace of scale b
        return 1 - q ** (z + 1) / (1 + q) if z >= 0 else q ** (-z) / (1 + q)

    probs = [cdf(edges[0] - 1)]
    probs += [cdf(hi - 1) - cdf(lo - 1) for lo, hi in itertools.pairwise(edges)]
    probs.append(1 - cdf(edges[-1] - 1))
    counts = [np.sum(noise < edges[0])]
    counts += [np.sum((noise >= lo) & (noise < hi)) for lo, hi in itertools.pairwise(edges)]
    counts.append(np.sum(noise >= edges[-1]))
    assert_fits(counts, probs)


def _binomial_upper_ok(failures, trials, rate):
    """Observed failures not above what ``rate`` allows at false-failure rate ALPHA."""
    return failures <= stats.binom.ppf(1 - ALPHA, trials, rate)


def test_histogram_accuracy_statement_holds_with_r():
    """'every noisy count is within +-t of its value's true count' at 95%, with r = 10:
    adversarial counts (ties, zero, huge)."""
    r, c, n, k = 10, 4, 12, 5
    source = InsecureSeededSource(5)
    plan = plan_top_k(n, k, 1.0, 0.0, "laplace_histogram", True, c, source, max_rows_per_value=r)
    t = plan.count_halfwidth
    scores = np.array([2**40, 2**40, 7, 7, 7, 0, 0, 3, 10**6, 1, 1, 2], dtype=np.int64)
    trials, failures = 2000, 0
    for _ in range(trials):
        idx, noisy = plan.measurement(scores)
        if any(abs(int(v) - int(scores[i])) > t for i, v in zip(idx, noisy, strict=True)):
            failures += 1
    assert _binomial_upper_ok(failures, trials, 1 - 0.95)
    assert failures > 0 or t > 0  # noise at scale c r / eps = 40 is there


def test_threshold_plan_with_r():
    base = threshold_plan("laplace", 1.0, 1e-6, 3)
    assert threshold_plan("laplace", 1.0, 1e-6, 3, max_rows_per_value=1) == base
    plan = threshold_plan("laplace", 1.0, 1e-6, 3, max_rows_per_value=8)
    assert plan.scale == pytest.approx(24.0) and plan.epsilon <= 1.0
    q = math.exp(-1 / plan.scale)
    m = plan.threshold - 8  # a value one neighbour has counts at most r = 8 there
    assert 3 * q**m / (1 + q) <= 1e-6  # c P(r + Z >= tau) <= delta
    assert 3 * q ** (m - 1) / (1 + q) > 1e-6  # and tau is the least such
    gauss = threshold_plan("gaussian", 1.0, 1e-6, 3, max_rows_per_value=8)
    g1 = threshold_plan("gaussian", 1.0, 1e-6, 3)
    assert gauss.scale == pytest.approx(8 * g1.scale, rel=1e-6) and gauss.epsilon <= 1.0


def test_thresholding_releases_rare_values_rarely_and_sure_values_surely():
    """Simulation: values with count r (held by one person, r rows) pass at most at rate p;
    values at the plan's 95% count pass at least at 95%."""
    from dpselect.recipes.unknown_domain import _sure_release_count

    plan = threshold_plan("laplace", 1.0, 1e-2, 2, max_rows_per_value=5)
    source = InsecureSeededSource(11)
    release = make_threshold_partition_selection(plan, counts=False, source=source)
    sure = _sure_release_count(plan)
    rare = {f"r{i}": 5 for i in range(4000)}
    common = {f"c{i}": sure for i in range(4000)}
    out = set(release({**rare, **common}))
    rare_out = sum(v.startswith("r") for v in out)
    common_missed = 4000 - sum(v.startswith("c") for v in out)
    assert _binomial_upper_ok(rare_out, 4000, plan.p)
    assert _binomial_upper_ok(common_missed, 4000, 0.05)


def test_limited_domain_map_covers_r():
    ld = make_limited_domain_top_k(2, 4, 0.5, delta=1e-6, max_contributions=3, max_rows_per_value=6)
    one = make_limited_domain_top_k(2, 4, 0.5, delta=1e-6, max_contributions=3)
    assert ld.map(6) == one.map(1)
    with pytest.raises(PrivacyMapError):
        ld.map(7)
    with pytest.raises(PrivacyMapError):
        one.map(2)


@settings(max_examples=60, deadline=None)
@given(
    d=st.integers(0, 5),
    c=st.integers(1, 50),
    r=st.integers(1, 1000),
    scale=st.floats(0.5, 1e6),
    noise=st.sampled_from(["laplace", "gaussian"]),
)
def test_histogram_map_rounds_outward_and_is_monotone(d, c, r, scale, noise):
    mech = make_noisy_histogram_top_k(
        3, 1, noise, scale=scale, max_contributions=c, max_rows_per_value=r
    )
    s = Fraction(scale)
    exact = d * c * r / s if noise == "laplace" else Fraction(d * d * c * r * r) / (2 * s * s)
    got = mech.map(d)
    assert got >= 0 and Fraction(got) >= exact
    assert mech.map(d + 1) >= got
    assert got == 0 or got <= float(exact) * (1 + 1e-15)


def test_threshold_neighbours_with_rows_by_exact_enumeration():
    """c = 2, r = 3: a person adds 3 rows to an existing value and 3 to a new one. The exact
    laws of the outputs need at most the plan's delta at its epsilon; a threshold 6 lower at the
    same noise, and the plan of r = 1 (r ignored), need more."""
    from .test_partition_selection import _law_threshold, delta_needed

    plan = threshold_plan("laplace", 1.0, 1e-2, 2, max_rows_per_value=3)
    assert plan.scale == 6.0 and plan.epsilon == 1.0
    d = {"a": plan.threshold, "b": 0}
    d_plus = {"a": plan.threshold + 3, "b": 3}
    need = delta_needed(_law_threshold(d, plan, 150), _law_threshold(d_plus, plan, 150), 1.0)
    assert need <= plan.delta * (1 + 1e-6)
    low = type(plan)(**{**plan.__dict__, "threshold": plan.threshold - 6})
    need_low = delta_needed(_law_threshold(d, low, 150), _law_threshold(d_plus, low, 150), 1.0)
    assert need_low > plan.delta  # 0.0117
    # r ignored (the plan of r = 1: scale 2, its threshold): 0.249 needed
    one = threshold_plan("laplace", 1.0, 1e-2, 2)
    d1, d1_plus = {"a": one.threshold, "b": 0}, {"a": one.threshold + 3, "b": 3}
    need_one = delta_needed(_law_threshold(d1, one, 150), _law_threshold(d1_plus, one, 150), 1.0)
    assert need_one > 10 * plan.delta
