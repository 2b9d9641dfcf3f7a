"""Private selection from private candidates (issue 16): Liu and Talwar 2019, Papernot and
Steinke 2022. Exact coins and run counts against their laws; the combinators' number of runs
and release laws against closed forms, each with a broken variant that fails; the maps against
hand values, OpenDP 0.16 and dp-accounting; neighbouring datasets on exact small laws."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

import dpselect.core as dc
from dpselect.accounting import rdp_to_approx_dp
from dpselect.accounting.renyi import zcdp_rdp
from dpselect.mechanisms.private_candidates import (
    make_repeat_and_select,
    make_select_private_candidate,
    renyi_delta,
    repeat_and_select_rdp,
)
from dpselect.sampling.run_counts import (
    sample_bernoulli,
    sample_geometric,
    sample_poisson,
    sample_truncated_negative_binomial,
    truncated_negative_binomial_mean,
)
from dpselect.sampling.source import InsecureSeededSource, ScriptedSource
from tests.gof import assert_fits, chi2_statistic, chi2_threshold, fits

N = 4000  # samples per law: a factor-2 error in a parameter fails by a wide margin


def cells_with_tail(values, top):
    """Counts of 0..top-1 (or first..) and one tail cell."""
    c = Counter(min(v, top) for v in values)
    return [c.get(k, 0) for k in range(top + 1)]


# =========================================================================== exact coins
@pytest.mark.parametrize("p", [0.3, Fraction(1, 3), Fraction(1, 2**70)])
def test_bernoulli_is_exact(p):
    src = InsecureSeededSource(1)
    hits = sum(sample_bernoulli(p, src) for _ in range(N))
    q = float(p)
    assert fits([hits, N - hits], [q, 1 - q]) if q > 1e-6 else hits == 0


def test_bernoulli_decides_on_later_digits():
    """U's first 64 digits equal p's: the next block decides, exactly as a real U would."""
    p = Fraction(1, 3)
    block = (1 << 64) // 3  # 0x5555...
    below = ScriptedSource.from_words([block, 0])  # U = p's digits then 0...: U < p
    above = ScriptedSource.from_words([block, (1 << 64) - 1])
    assert sample_bernoulli(p, below) is True
    assert sample_bernoulli(p, above) is False
    # a dyadic p: U equal to p's finite expansion is >= p
    assert sample_bernoulli(0.5, ScriptedSource.from_words([1 << 63])) is False
    assert sample_bernoulli(0.5, ScriptedSource.from_words([(1 << 63) - 1])) is True


def test_geometric_poisson_tnb_laws_and_broken_variants():
    src = InsecureSeededSource(2)
    # geometric, p = 1/4: P(T = t) = p (1 - p)^(t - 1)
    top = 20
    probs = [0.0] + [0.25 * 0.75 ** (t - 1) for t in range(1, top)]
    probs.append(1 - sum(probs))
    for p, ok in ((0.25, True), (0.5, False)):
        draws = [sample_geometric(p, src) for _ in range(N)]
        assert fits(cells_with_tail(draws, top), probs) == ok
    # Poisson(3.5)
    top = 14
    probs = [math.exp(-3.5) * 3.5**k / math.factorial(k) for k in range(top)]
    probs.append(1 - sum(probs))
    for mu, ok in ((3.5, True), (7.0, False), (1.75, False)):
        draws = [sample_poisson(mu, src) for _ in range(N)]
        assert fits(cells_with_tail(draws, top), probs) == ok
    # truncated negative binomial eta = 1/2, gamma = 0.2 (PS22, Definition 1), and eta = 0
    for eta, gamma in ((Fraction(1, 2), Fraction(1, 5)), (0, Fraction(1, 5))):
        top = 25
        if eta == 0:
            pmf = [0.0] + [0.8**k / (k * math.log(5)) for k in range(1, top)]
        else:
            norm = 0.2 ** (-0.5) - 1
            pmf, prod = [0.0], 1.0
            for k in range(1, top):
                prod *= (k - 1 + 0.5) / k
                pmf.append(0.8**k * prod / norm)
        pmf.append(1 - sum(pmf))
        draws = [sample_truncated_negative_binomial(eta, gamma, src) for _ in range(N)]
        assert_fits(cells_with_tail(draws, top), pmf)
        mean = float(truncated_negative_binomial_mean(eta, gamma).mid())
        assert abs(np.mean(draws) - mean) < 6 * math.sqrt(np.var(draws) / N)
        wrong = [sample_truncated_negative_binomial(eta, gamma / 2, src) for _ in range(N)]
        stat, df = chi2_statistic(cells_with_tail(wrong, top), pmf)
        assert stat > 10 * chi2_threshold(df)


# =========================================================================== runs
class CountingRun:
    """An eps-DP run on one bit x: randomized response, released as (score, candidate).

    Releases ``(s, tag)`` with ``s = x`` with probability ``e^eps / (1 + e^eps)``; the tag
    numbers the runs so that tests can count them.
    """

    def __init__(self, epsilon, seed, measure=None):
        self.epsilon = Fraction(epsilon)
        self.src = InsecureSeededSource(seed)
        self.calls = 0
        keep = math.exp(float(self.epsilon)) / (1 + math.exp(float(self.epsilon)))
        self.keep = Fraction(keep)

        def function(x):
            self.calls += 1
            s = x if sample_bernoulli(self.keep, self.src) else 1 - x
            return (s, self.calls)

        measure = measure or dc.MaxDivergence()
        if isinstance(measure, dc.MaxDivergence):
            privacy_map = lambda d_in: float(d_in * self.epsilon)  # noqa: E731
        else:
            privacy_map = lambda d_in: float(d_in * self.epsilon) ** 2 / 2  # noqa: E731
        self.measurement = dc.Measurement(
            input_domain=dc.AnyDomain("one bit"),
            input_metric=dc.SymmetricDistance(),
            output_measure=measure,
            function=function,
            privacy_map=privacy_map,
        )


class UniformScoreRun:
    """Scores uniform on {0, ..., m-1} (data-free), to test the release law of 'the best'."""

    def __init__(self, m, seed, measure=None):
        self.m, self.src, self.calls = m, InsecureSeededSource(seed), 0

        def function(x):
            self.calls += 1
            return (int(self.src.bits(16)) % m, self.calls)  # m divides 2^16 in the tests

        self.measurement = dc.Measurement(
            input_domain=dc.AnyDomain(),
            input_metric=dc.SymmetricDistance(),
            output_measure=measure or dc.MaxDivergence(),
            function=function,
            privacy_map=lambda d_in: float(d_in),
        )


def threshold_law(p_above, gamma):
    """LT19 Algorithm 1 on a run that clears the threshold w.p. p_above: P(release), and the
    law of the number of runs P(N = n) = (B (1 - gamma))^(n-1) (p + B gamma), B = 1 - p."""
    b = 1 - p_above
    release = p_above / (1 - b * (1 - gamma))
    return release, lambda n: (b * (1 - gamma)) ** (n - 1) * (p_above + b * gamma)


def test_threshold_version_runs_and_release_law():
    eps, gamma = 0.5, 0.25
    run = CountingRun(eps, 3)
    m = make_select_private_candidate(
        run.measurement, stop_probability=gamma, threshold=1, source=InsecureSeededSource(4)
    )
    p_above = float(run.keep)  # x = 1: the score is 1 w.p. keep
    release, n_law = threshold_law(p_above, gamma)
    runs, released = [], 0
    for _ in range(N):
        before = run.calls
        out = m(1)
        runs.append(run.calls - before)
        if out is not None:
            assert out[0] >= 1
            released += 1
    assert_fits([released, N - released], [release, 1 - release])
    top = 8
    probs = [0.0] + [n_law(n) for n in range(1, top)]
    probs.append(1 - sum(probs))
    assert_fits(cells_with_tail(runs, top), probs)


def test_threshold_version_broken_variant_fails():
    """Never stopping (the threshold version with stop probability 0) releases far more."""
    eps, gamma = 0.5, 0.25
    run = CountingRun(eps, 3)
    release, _ = threshold_law(float(1 - run.keep), gamma)  # x = 0: the score is 1 w.p. 1-keep
    broken = make_select_private_candidate(
        run.measurement, stop_probability=2**-60, threshold=1, source=InsecureSeededSource(4)
    )
    released = sum(broken(0) is not None for _ in range(2000))
    stat, df = chi2_statistic([released, 2000 - released], [release, 1 - release])
    assert stat > 10 * chi2_threshold(df)


def test_geometric_version_runs_and_release_law():
    """No threshold: N ~ Geometric(gamma) runs and P(best <= v) = gamma F / (1 - (1-gamma) F)."""
    m_scores, gamma = 4, 0.3
    run = UniformScoreRun(m_scores, 5)
    m = make_select_private_candidate(run.measurement, 0.3, source=InsecureSeededSource(6))
    best, runs = [], []
    for _ in range(N):
        before = run.calls
        out = m(None)
        runs.append(run.calls - before)
        best.append(out[0])
    top = 12
    probs = [0.0] + [gamma * (1 - gamma) ** (n - 1) for n in range(1, top)]
    probs.append(1 - sum(probs))
    assert_fits(cells_with_tail(runs, top), probs)

    def cdf(v):
        f = (v + 1) / m_scores
        return gamma * f / (1 - (1 - gamma) * f)

    law = [cdf(v) - (cdf(v - 1) if v else 0.0) for v in range(m_scores)]
    assert_fits(cells_with_tail(best, m_scores - 1), law)
    # broken variant: releasing the last run instead of the best is uniform, and fails
    last = []
    for _ in range(N):
        n = sample_geometric(gamma, run.src)
        last.append([run.measurement(None) for _ in range(n)][-1][0])
    stat, df = chi2_statistic(cells_with_tail(last, m_scores - 1), law)
    assert stat > 10 * chi2_threshold(df)


def test_lt19_maps_refusals_and_opendp_agreement():
    run = CountingRun(0.5, 1)
    with_t = make_select_private_candidate(run.measurement, 0.1, threshold=0.5)
    without = make_select_private_candidate(run.measurement, 0.1)
    assert with_t.map(1) == 1.0 and without.map(1) == 1.5 and with_t.map(0) == 0.0
    assert with_t.output_measure == dc.MaxDivergence()
    odd = dc.Measurement(
        dc.AnyDomain(), dc.SymmetricDistance(), dc.MaxDivergence(), lambda x: x, lambda d: 0.1
    )
    assert make_select_private_candidate(odd, 0.5, threshold=0).map(1) == dc.float_up(
        2 * Fraction(0.1)
    )
    for bad in (0, 1, -0.1, 1.5, math.nan, "0.5"):
        with pytest.raises(dc.ParameterError, match="stop_probability"):
            make_select_private_candidate(run.measurement, bad, threshold=0.5)
    with pytest.raises(dc.ParameterError, match="stop_probability"):
        make_select_private_candidate(run.measurement, 0)
    for bad in (math.inf, math.nan, "1"):
        with pytest.raises(dc.ParameterError, match="threshold"):
            make_select_private_candidate(run.measurement, 0.5, threshold=bad)
    zcdp = CountingRun(0.5, 1, dc.ZeroConcentratedDivergence()).measurement
    with pytest.raises(dc.MeasureError):
        make_select_private_candidate(zcdp, 0.5, threshold=0.5)
    with pytest.raises(dc.ParameterError):
        make_select_private_candidate(lambda x: x, 0.5)

    opendp = pytest.importorskip("opendp.prelude")
    opendp.enable_features("contrib", "honest-but-curious")
    space = opendp.atom_domain(T=float, nan=False), opendp.absolute_distance(T=float)
    theirs = space >> opendp.m.then_user_measurement(
        opendp.max_divergence(), lambda x: (x, "c"), lambda d: 0.5 * d, TO="(f64, ExtrinsicObject)"
    )
    ours = dc.Measurement(
        dc.AnyDomain(), dc.SymmetricDistance(), dc.MaxDivergence(), lambda x: x, lambda d: 0.5 * d
    )
    for d_in in (1, 2, 3):
        o = opendp.c.make_select_private_candidate(theirs, stop_probability=0.1, threshold=1.0)
        m = make_select_private_candidate(ours, 0.1, threshold=1.0)
        assert m.map(d_in) == o.map(float(d_in))
    # same comparison: a score equal to the threshold is released
    m = make_select_private_candidate(
        dc.Measurement(
            dc.AnyDomain(),
            dc.SymmetricDistance(),
            dc.MaxDivergence(),
            lambda x: (1.0, "c"),
            lambda d: d,
        ),
        0.5,
        threshold=1.0,
    )
    assert m(None) == (1.0, "c")


def test_non_number_scores_are_the_worst_and_never_raise():
    outputs = iter([("abc", 1), (math.nan, 2), None, (0.0, 3)] * 100)
    run = dc.Measurement(
        dc.AnyDomain(),
        dc.SymmetricDistance(),
        dc.MaxDivergence(),
        lambda x: next(outputs),
        lambda d: d,
    )
    m = make_select_private_candidate(run, 0.5, threshold=0.0, source=InsecureSeededSource(1))
    for _ in range(30):
        assert m(None) in (None, (0.0, 3))


# =========================================================================== neighbours (exact)
def _rr(eps, x):
    keep = math.exp(eps) / (1 + math.exp(eps))
    return {1: keep if x == 1 else 1 - keep, 0: 1 - keep if x == 1 else keep}


@pytest.mark.parametrize("gamma", [0.01, 0.2, 0.9])
def test_lt19_exact_laws_on_neighbours_stay_within_the_map(gamma):
    """Randomized response runs on x = 0 and x' = 1 (neighbours): the exact release laws of
    both combinators, in closed form, have log-ratios within the maps (2 eps and 3 eps), and
    the threshold version comes close to its bound at small gamma (the bound is not loose)."""
    eps = 0.5
    worst_t, worst_g = 0.0, 0.0
    for x, y in ((0, 1), (1, 0)):
        laws = []
        for data in (x, y):
            p = _rr(eps, data)
            release, _ = threshold_law(p[1], gamma)
            t_law = {"score 1": release, None: 1 - release}
            f0 = p[0]  # P(best <= 0) = gamma f / (1 - (1-gamma) f)
            g0 = gamma * f0 / (1 - (1 - gamma) * f0)
            laws.append((t_law, {0: g0, 1: 1 - g0}))
        for k, v in laws[0][0].items():
            worst_t = max(worst_t, abs(math.log(v / laws[1][0][k])))
        for k, v in laws[0][1].items():
            worst_g = max(worst_g, abs(math.log(v / laws[1][1][k])))
    assert worst_t <= 2 * eps and worst_g <= 3 * eps
    if gamma == 0.01:
        assert worst_t > 1.5 * eps  # beyond one run's eps: composition is really needed


# =========================================================================== PS22
def poisson_pgf(mu, f):
    return math.exp(mu * (f - 1))


def test_repeat_and_select_number_of_runs_and_release_law():
    """Poisson(mu) runs: P(None) = e^-mu, P(best <= v) = exp(mu (F(v) - 1)); TNB: the number
    of runs against its pmf. Broken variant (one extra run) fails."""
    m_scores, mu = 4, 2.5
    run = UniformScoreRun(m_scores, 7, dc.ZeroConcentratedDivergence())
    m = make_repeat_and_select(run.measurement, "poisson", mean=mu, source=InsecureSeededSource(8))
    outs, runs = [], []
    for _ in range(N):
        before = run.calls
        out = m(None)
        runs.append(run.calls - before)
        outs.append(-1 if out is None else out[0])
    law = [poisson_pgf(mu, 0)] + [
        poisson_pgf(mu, (v + 1) / m_scores) - poisson_pgf(mu, v / m_scores) for v in range(m_scores)
    ]
    counts = Counter(outs)
    assert_fits([counts.get(v, 0) for v in range(-1, m_scores)], law)
    top = 10
    probs = [math.exp(-mu) * mu**k / math.factorial(k) for k in range(top)]
    probs.append(1 - sum(probs))
    assert_fits(cells_with_tail(runs, top), probs)
    stat, df = chi2_statistic(cells_with_tail([r + 1 for r in runs], top), probs)
    assert stat > 10 * chi2_threshold(df)
    # truncated negative binomial, eta = 1 (geometric, gamma = 0.3)
    m = make_repeat_and_select(
        run.measurement,
        "truncated_negative_binomial",
        eta=1,
        gamma=0.3,
        source=InsecureSeededSource(9),
    )
    runs = []
    for _ in range(N):
        before = run.calls
        assert m(None) is not None
        runs.append(run.calls - before)
    top = 12
    probs = [0.0] + [0.3 * 0.7 ** (k - 1) for k in range(1, top)]
    probs.append(1 - sum(probs))
    assert_fits(cells_with_tail(runs, top), probs)


ACCOUNTING_CASES = [
    pytest.param("poisson", dict(mean=10), math.inf, marks=pytest.mark.slow),
    ("truncated_negative_binomial", dict(eta=1, gamma=0.1), 1),
    ("truncated_negative_binomial", dict(eta=0, gamma=0.02691825958900153), 0),
    ("truncated_negative_binomial", dict(eta=0.5, gamma=0.06249999997671692), 0.5),
]


@pytest.mark.parametrize("distribution, kwargs, shape", ACCOUNTING_CASES)
def test_repeat_and_select_epsilon_agrees_with_dp_accounting(distribution, kwargs, shape):
    """rho = 0.05 per run, mean 10 runs, delta = 1e-6: our (eps, delta) against dp-accounting's
    RdpAccountant with RepeatAndSelectDpEvent (same theorems, other order grid): within 0.1%."""
    dpa = pytest.importorskip("dp_accounting")
    rho = 0.05
    curve = repeat_and_select_rdp(zcdp_rdp(rho), distribution, **kwargs)
    ours = rdp_to_approx_dp(curve, 1e-6)[0]
    acc = dpa.rdp.RdpAccountant()
    gaussian = dpa.dp_event.GaussianDpEvent(1 / math.sqrt(2 * rho))
    acc.compose(dpa.dp_event.RepeatAndSelectDpEvent(gaussian, 10, shape))
    theirs = acc.get_epsilon(1e-6)
    assert abs(ours - theirs) < 1e-3 * theirs, (ours, theirs)
    # and far below paying for 10 runs... at least below 2x one run's 10-fold composition
    composed = rdp_to_approx_dp(zcdp_rdp(10 * rho), 1e-6)[0]
    assert ours < 1.5 * composed


def test_repeat_and_select_maps():
    run = UniformScoreRun(4, 1, dc.ZeroConcentratedDivergence()).measurement
    m = make_repeat_and_select(run, "truncated_negative_binomial", eta=1, gamma=0.1)
    assert m.output_measure == dc.RenyiDivergence()
    assert m.map(0)(2.0) == 0.0
    c1, c2 = m.map(1), m.map(2)
    # monotone in d_in and in the order; the hand formula at lambda = 2, eta = 1, gamma = 0.1:
    # the run is 1-zCDP at d_in = 1 (its map returns d_in): D(lam) = lam, E[K] = 10, and the
    # constant is (1 + eta) min(ln 10, min_l (1 - 1/l) l + ln(10)/l) over the default orders
    assert c1(2.0) <= c2(2.0) and c1(2.0) <= c1(4.0)
    lam_hat = [1.0 + 2.0 ** (j / 8) for j in range(-80, 161)]
    inner = min([math.log(10)] + [(1 - 1 / h) * h + math.log(10) / h for h in lam_hat])
    hand = 2 + 2 * inner + math.log(10) / 1  # = 8.3727
    assert hand <= c1(2.0) <= hand * (1 + 1e-9)
    assert m.check(1, (2.0, c1(2.0))) and not m.check(1, (2.0, c1(2.0) * 0.99))
    # Renyi in: the curve itself
    renyi_run = dc.Measurement(
        dc.AnyDomain(),
        dc.SymmetricDistance(),
        dc.RenyiDivergence(),
        lambda x: (0, 0),
        lambda d: zcdp_rdp(d * d),
    )
    m2 = make_repeat_and_select(renyi_run, "truncated_negative_binomial", eta=1, gamma=0.1)
    assert m2.map(1)(2.0) == c1(2.0)
    # refusals (public parameters, before any run)
    for kwargs in (
        dict(distribution="poisson"),
        dict(distribution="poisson", mean=0),
        dict(distribution="poisson", mean=10**6),
        dict(distribution="poisson", mean=1, eta=1),
        dict(distribution="truncated_negative_binomial", eta=1),
        dict(distribution="truncated_negative_binomial", eta=-1, gamma=0.5),
        dict(distribution="truncated_negative_binomial", eta=1, gamma=1),
        dict(distribution="truncated_negative_binomial", eta=1, gamma=1e-9),  # mean 1e9
        dict(distribution="binomial", mean=3),
    ):
        with pytest.raises(dc.ParameterError):
            make_repeat_and_select(run, **kwargs)
    pure = UniformScoreRun(4, 1).measurement
    with pytest.raises(dc.MeasureError):
        make_repeat_and_select(pure, "poisson", mean=3)


def test_renyi_delta_inverts_the_conversion():
    curve = zcdp_rdp(0.1)
    eps, _ = rdp_to_approx_dp(curve, 1e-6)
    d = renyi_delta(curve, eps)
    assert 0.5e-6 < float(d) <= 1.05e-6
    # at eps = 0, delta bounds the total variation 2 Phi(sqrt(2 rho) / 2) - 1 = 0.177
    assert 0.177 <= float(renyi_delta(curve, 0)) <= 1
