"""Selection mechanisms: privacy maps, laws, direction, errors, data independence."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import dpselect.core as dc
from dpselect.mechanisms.exponential import make_exponential_mechanism
from dpselect.mechanisms.report_noisy_max import (
    make_base_exponential_candidates_gumbel,
    make_noisy_max,
    make_noisy_top_k,
    make_report_noisy_max_gumbel,
)
from dpselect.sampling.source import InsecureSeededSource
from tests.gof import ALPHA, assert_fits, chi2_statistic, chi2_threshold
from tests.sampling.laws import exponential_law, laplace_law, plackett_luce, softmax

FLOATS = dc.vector_domain(dc.atom_domain(float))
INTS = dc.vector_domain(dc.atom_domain(int))
MAXDIV = dc.MaxDivergence()
ZCDP = dc.ZeroConcentratedDivergence()


# --------------------------------------------------------------------------- privacy maps
@pytest.mark.parametrize(
    "monotonic, measure, k, expected",
    [
        (False, MAXDIV, 1, 2.0),
        (False, MAXDIV, 2, 4.0),
        (False, ZCDP, 1, 0.5),
        (False, ZCDP, 2, 1.0),
        (True, ZCDP, 1, 0.125),
        (True, MAXDIV, 1, 1.0),
        (True, ZCDP, 2, 0.25),
    ],
)
def test_gumbel_maps_hand_values(monotonic, measure, k, expected):
    metric = dc.LInfDistance(monotonic=monotonic)
    m = make_noisy_top_k(FLOATS, metric, measure, k=k, scale=1.0)
    assert m.map(1) == expected
    if k == 1:
        assert make_noisy_max(FLOATS, metric, measure, scale=1.0).map(1) == expected


def test_maps_match_opendp():
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    for monotonic in (False, True):
        theirs_metric = dp.linf_distance(T=float, monotonic=monotonic)
        ours_metric = dc.LInfDistance(monotonic=monotonic)
        for theirs_measure, ours_measure in (
            (dp.max_divergence(), MAXDIV),
            (dp.zero_concentrated_divergence(), ZCDP),
        ):
            for scale in (0.5, 1.0, 3.0):
                for d_in in (1.0, 2.5):
                    theirs = dp.m.make_noisy_top_k(
                        domain, theirs_metric, theirs_measure, k=2, scale=scale
                    ).map(d_in)
                    ours = make_noisy_top_k(
                        FLOATS, ours_metric, ours_measure, k=2, scale=scale
                    ).map(d_in)
                    assert ours == pytest.approx(theirs, rel=1e-12)
                    assert ours >= theirs or ours == pytest.approx(theirs, rel=1e-15)


def test_exponential_and_laplace_have_no_bounded_range_discount():
    metric = dc.LInfDistance()
    for noise in ("exponential", "laplace"):
        assert make_noisy_max(FLOATS, metric, ZCDP, scale=1.0, noise=noise).map(1) == 2.0  # 2^2/2
        assert make_noisy_top_k(FLOATS, metric, ZCDP, k=3, scale=1.0, noise=noise).map(1) == 6.0
        assert make_noisy_max(FLOATS, metric, MAXDIV, scale=1.0, noise=noise).map(1) == 2.0


def test_maps_round_up_and_edges():
    m = make_report_noisy_max_gumbel(FLOATS, dc.LInfDistance(), 3.0)
    assert Fraction(m.map(1)) >= Fraction(2, 3)
    assert m.map(0) == 0.0
    assert make_report_noisy_max_gumbel(FLOATS, dc.LInfDistance(), 0.0).map(1) == math.inf
    assert make_report_noisy_max_gumbel(FLOATS, dc.LInfDistance(), 0.0).map(0) == 0.0
    with pytest.raises(dc.MetricError, match="non-negative"):
        m.map(-1)
    assert m.check(1, 0.6667) and not m.check(1, 0.6666)
    base = make_base_exponential_candidates_gumbel(2.0)
    assert base.input_metric == dc.InfDifferenceDistance()
    assert base.map(1) == 0.5  # d_out * temperature >= d_in (seed 000)


@settings(max_examples=200, deadline=None)
@given(
    d1=st.floats(0, 1e6),
    d2=st.floats(0, 1e6),
    scale=st.floats(1e-6, 1e6),
    k=st.integers(1, 5),
    monotonic=st.booleans(),
    zcdp=st.booleans(),
    noise=st.sampled_from(["gumbel", "exponential", "laplace"]),
)
def test_map_properties(d1, d2, scale, k, monotonic, zcdp, noise):
    measure = ZCDP if zcdp else MAXDIV
    m = make_noisy_top_k(
        FLOATS, dc.LInfDistance(monotonic=monotonic), measure, k=k, scale=scale, noise=noise
    )
    lo, hi = sorted((d1, d2))
    assert 0 <= m.map(lo) <= m.map(hi)
    exact = k * (Fraction(lo) * (1 if monotonic else 2) / Fraction(scale))
    if zcdp:
        exact = exact * exact / k / (8 if noise == "gumbel" else 2)
    assert Fraction(m.map(lo)) >= exact


def test_calibrate_scale_with_binary_search():
    def chain(scale):
        return make_report_noisy_max_gumbel(FLOATS, dc.LInfDistance(), scale)

    scale = dc.binary_search_param(chain, d_in=1, d_out=0.7)
    assert chain(scale).check(1, 0.7)
    assert not chain(math.nextafter(scale, 0)).check(1, 0.7)


# --------------------------------------------------------------------------- laws
def draws(m, x, n):
    return [m(x) for _ in range(n)]


def test_report_noisy_max_samples_softmax_and_direction():
    x = [0.0, 1.0, 2.0, 3.0]
    for optimize, sign in (("max", 1), ("min", -1)):
        m = make_report_noisy_max_gumbel(
            FLOATS, dc.LInfDistance(), 1.0, optimize=optimize, source=InsecureSeededSource(1)
        )
        counts = np.bincount(draws(m, x, 3000), minlength=4)
        assert_fits(counts, softmax(sign * np.array(x), 1.0))
        # optimize="max" favours the largest score
        assert (counts.argmax() == 3) == (optimize == "max")


@pytest.mark.parametrize("noise, law", [("exponential", exponential_law), ("laplace", laplace_law)])
def test_noisy_max_other_families(noise, law):
    x = np.array([0.0, 1.0, 2.0, 3.0])
    m = make_noisy_max(
        FLOATS, dc.LInfDistance(), MAXDIV, scale=1.0, noise=noise, source=InsecureSeededSource(2)
    )
    assert_fits(np.bincount(draws(m, x, 3000), minlength=4), law(x, 1.0))


def test_int_scores_and_min_with_extreme_values():
    m = make_noisy_max(INTS, dc.LInfDistance(), MAXDIV, scale=0.0, optimize="min")
    assert m([5, -(2**63), 2**70, 3]) == 1  # clamped to int64, no error
    assert make_noisy_max(INTS, dc.LInfDistance(), MAXDIV, scale=0.0)([5, 2**70, 3]) == 1


def test_gumbel_top_k_is_k_rounds_and_peeling_is_exact():
    x = np.array([0.0, 1.0, 2.0, 3.0, 1.5])
    outcomes, probs = plackett_luce(x, 1.0, 2)
    for noise in ("gumbel",):
        m = make_noisy_top_k(
            FLOATS,
            dc.LInfDistance(),
            MAXDIV,
            k=2,
            scale=1.0,
            noise=noise,
            source=InsecureSeededSource(3),
        )
        tally = Counter(tuple(m(x).tolist()) for _ in range(6000))
        assert_fits([tally.get(o, 0) for o in outcomes], probs)


def test_exponential_top_k_is_peeled_permute_and_flip():
    x = np.array([0.0, 1.0, 2.0])
    m = make_noisy_top_k(
        FLOATS,
        dc.LInfDistance(),
        MAXDIV,
        k=2,
        scale=1.0,
        noise="exponential",
        source=InsecureSeededSource(4),
    )
    first = exponential_law(x, 1.0)
    outcomes, probs = [], []
    for i in range(3):
        rest = [j for j in range(3) if j != i]
        second = exponential_law(x[rest], 1.0)
        for pos, j in enumerate(rest):
            outcomes.append((i, j))
            probs.append(first[i] * second[pos])
    tally = Counter(tuple(m(x).tolist()) for _ in range(4000))
    assert_fits([tally.get(o, 0) for o in outcomes], probs)


def test_factor_two_scale_bug_is_caught():
    x = [0.0, 1.0, 2.0, 3.0]
    probs = softmax(np.array(x), 1.0)
    wrong = make_report_noisy_max_gumbel(
        FLOATS, dc.LInfDistance(), 2.0, source=InsecureSeededSource(5)
    )
    stat, df = chi2_statistic(np.bincount(draws(wrong, x, 3000), minlength=4), probs)
    assert stat > chi2_threshold(df)


def _two_sample_fits(a, b):
    table = np.array([a, b])
    table = table[:, table.sum(axis=0) > 0]
    return stats.chi2_contingency(table).pvalue > ALPHA


def test_samples_agree_with_opendp():
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    metric = dp.linf_distance(T=float)
    x = [0.0, 1.0, 2.0, 2.5]
    cases = [
        (dp.max_divergence(), MAXDIV, "exponential"),  # OpenDP: permute-and-flip for pure DP
        (dp.zero_concentrated_divergence(), ZCDP, "gumbel"),
    ]
    for theirs_measure, ours_measure, noise in cases:
        theirs = dp.m.make_noisy_max(domain, metric, theirs_measure, scale=1.0)
        ours = make_noisy_max(
            FLOATS,
            dc.LInfDistance(),
            ours_measure,
            scale=1.0,
            noise=noise,
            source=InsecureSeededSource(6),
        )
        a = np.bincount([theirs(x) for _ in range(3000)], minlength=4)
        b = np.bincount(draws(ours, x, 3000), minlength=4)
        assert _two_sample_fits(a, b), (noise, a, b)


# --------------------------------------------------------------------------- the general mechanism
def test_exponential_mechanism_hair_colour_law():
    # Seed 002: counts of hair colours; score = count, sensitivity 1, eps = 0.1.
    data = ["dark"] * 50 + ["brown"] * 40 + ["red"] * 5 + ["blond"] * 5
    colours = ["dark", "brown", "red", "blond"]

    def score(rows, c):
        return sum(1 for r in rows if r == c)

    m = make_exponential_mechanism(colours, score, 1, epsilon=0.1, source=InsecureSeededSource(7))
    assert m.map(1) == pytest.approx(0.1) and m.map(1) <= 0.1
    counts = Counter(draws(m, data, 3000))
    expected = softmax(np.array([50, 40, 5, 5]) * 0.1 / 2, 1.0)
    assert_fits([counts[c] for c in colours], expected)
    mono = make_exponential_mechanism(colours, score, 1, epsilon=0.1, monotonic=True)
    assert mono.map(1) <= 0.1
    assert make_exponential_mechanism(colours, score, 1, scale=20.0).map(1) == 0.1
    assert make_exponential_mechanism(colours, score, 1, scale=20.0, output_measure=ZCDP).map(
        1
    ) == pytest.approx(0.01 / 8)


def test_exponential_mechanism_bad_scores_never_raise():
    m = make_exponential_mechanism(["a", "b"], lambda x, c: x[c], 1, epsilon=1.0)
    assert m({"a": float("nan"), "b": 0.0}) == "b"
    assert m({"a": "oops", "b": 0.0}) == "b"
    # A score function that raises on the data (here: a missing key) is the worst score,
    # for max and min, and never an exception after the charge.
    assert m({"b": 0.0}) == "b"
    low = make_exponential_mechanism(["a", "b"], lambda x, c: x[c], 1, epsilon=1.0, optimize="min")
    assert low({"b": 5.0}) == "b"
    assert make_exponential_mechanism(["a"], lambda x, c: 1 / 0, 1, epsilon=1.0)(None) == "a"


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(candidates=[], score=len, sensitivity=1, epsilon=1.0), "empty"),
        (dict(candidates="ab", score=len, sensitivity=1, epsilon=1.0), "sequence"),
        (dict(candidates=[1], score=3, sensitivity=1, epsilon=1.0), "callable"),
        (dict(candidates=[1], score=len, sensitivity=0, epsilon=1.0), "sensitivity"),
        (dict(candidates=[1], score=len, sensitivity=1), "exactly one"),
        (dict(candidates=[1], score=len, sensitivity=1, epsilon=1.0, scale=1.0), "exactly one"),
        (dict(candidates=[1], score=len, sensitivity=1, epsilon=-1.0), "epsilon"),
        (dict(candidates=[1], score=len, sensitivity=1, epsilon=1.0, optimize="x"), "optimize"),
        (dict(candidates=[1], score=len, sensitivity=1, epsilon=1.0, monotonic=1), "monotonic"),
    ],
)
def test_exponential_mechanism_errors(kwargs, match):
    with pytest.raises(dc.DPSelectError, match=match):
        make_exponential_mechanism(**kwargs)


# --------------------------------------------------------------------------- seed 001 errors
@pytest.mark.parametrize(
    "args, error, match",
    [
        (
            (dc.vector_domain(dc.atom_domain(float, nan=True)), dc.LInfDistance(), 1.0),
            dc.DomainError,
            "non-nan",
        ),
        ((FLOATS, dc.LInfDistance(), -1.0), dc.ParameterError, "non-negative"),
        ((FLOATS, dc.LInfDistance(), math.inf), dc.ParameterError, "finite"),
        ((FLOATS, dc.LInfDistance(), math.nan), dc.ParameterError, "NaN"),
        ((FLOATS, dc.LInfDistance(), True), dc.ParameterError, "number"),
        ((FLOATS, dc.L1Distance(), 1.0), dc.MetricError, "LInfDistance"),
        ((dc.atom_domain(float), dc.LInfDistance(), 1.0), dc.DomainError, "vector_domain"),
    ],
)
def test_seed_001_errors(args, error, match):
    with pytest.raises(error, match=match):
        make_report_noisy_max_gumbel(*args)


def test_optimize_k_and_measure_errors():
    with pytest.raises(dc.ParameterError, match="optimize"):
        make_report_noisy_max_gumbel(FLOATS, dc.LInfDistance(), 1.0, optimize="maximum")
    with pytest.raises(dc.ParameterError, match="noise"):
        make_noisy_max(FLOATS, dc.LInfDistance(), MAXDIV, scale=1.0, noise="cauchy")
    with pytest.raises(dc.MeasureError, match="output_measure"):
        make_noisy_max(FLOATS, dc.LInfDistance(), dc.Approximate(), scale=1.0)
    with pytest.raises(dc.ParameterError, match="k must be an int"):
        make_noisy_top_k(FLOATS, dc.LInfDistance(), MAXDIV, k=1.5, scale=1.0)
    with pytest.raises(dc.ParameterError, match="at least 0"):
        make_noisy_top_k(FLOATS, dc.LInfDistance(), MAXDIV, k=-1, scale=1.0)
    sized = dc.vector_domain(dc.atom_domain(float), size=3)
    with pytest.raises(dc.ParameterError, match="at most the number of candidates"):
        make_noisy_top_k(sized, dc.LInfDistance(), MAXDIV, k=4, scale=1.0)


# --------------------------------------------------------------------------- data independence
@settings(max_examples=100, deadline=None)
@given(
    x=st.lists(
        st.floats(allow_nan=False, width=64, min_value=-1e300, max_value=1e300),
        min_size=3,
        max_size=3,
    ),
    bump=st.lists(st.floats(-1, 1), min_size=3, max_size=3),
    noise=st.sampled_from(["gumbel", "exponential", "laplace"]),
    k=st.integers(0, 3),
)
def test_neighbouring_inputs_both_succeed(x, bump, noise, k):
    m = make_noisy_top_k(
        FLOATS,
        dc.LInfDistance(),
        MAXDIV,
        k=k,
        scale=1.0,
        noise=noise,
        source=InsecureSeededSource(8),
    )
    neighbour = [a + b for a, b in zip(x, bump, strict=True)]
    out1, out2 = m(x), m(neighbour)
    assert len(out1) == len(out2) == k


# ----------------------------------------------------------- vs selection_probabilities
@pytest.mark.parametrize("noise", ["gumbel", "exponential", "laplace"])
def test_function_samples_the_law_of_selection_probabilities(noise):
    """The map's proof is about the law that selection_probabilities computes (issue 4)."""
    from dpselect.mechanisms.utility import selection_probabilities

    x = np.array([0.0, 0.5, 2.0, 3.0, 1.0])
    m = make_noisy_max(
        FLOATS, dc.LInfDistance(), MAXDIV, scale=0.9, noise=noise, source=InsecureSeededSource(12)
    )
    counts = np.bincount(draws(m, x, 3000), minlength=5)
    assert_fits(counts, selection_probabilities(x, 0.9, noise))


class _Unfloatable:
    def __float__(self):
        raise RuntimeError("not a number")

    def __repr__(self) -> str:  # the test's id: the same in every process (pytest -n)
        return "_Unfloatable()"


@pytest.mark.parametrize("bad", [math.nan, "abc", None, _Unfloatable()], ids=repr)
@pytest.mark.parametrize("optimize", ["max", "min"])
def test_nan_or_non_number_score_is_the_worst_in_both_directions(bad, optimize):
    """Issue 15, item 5: NaN was mapped to -inf before the sign flip, so optimize="min" chose
    it every time. Now it is never chosen against finite scores, in either direction (its
    weight is exactly 0)."""
    scores = {"bad": bad, "b": 0.0, "c": 1.0}
    m = make_exponential_mechanism(
        ["bad", "b", "c"],
        lambda x, c: scores[c],
        1.0,
        scale=1000.0,  # nearly uniform over the finite candidates
        optimize=optimize,
        source=InsecureSeededSource(5),
    )
    picks = Counter(m(None) for _ in range(300))
    assert picks["bad"] == 0 and picks["b"] > 100 and picks["c"] > 100


def test_nan_score_broken_variant_is_caught():
    """The former mapping (NaN -> -inf, then the sign) picks NaN every time under "min"."""
    from dpselect.mechanisms import exponential as ex

    old = ex._score_vector

    def broken(scores, sign=1):
        return sign * old(scores, 1)

    ex._score_vector = broken
    try:
        m = make_exponential_mechanism(
            ["bad", "b"],
            lambda x, c: {"bad": math.nan, "b": 0.0}[c],
            1.0,
            scale=1000.0,
            optimize="min",
            source=InsecureSeededSource(5),
        )
        assert Counter(m(None) for _ in range(50))["bad"] == 50
    finally:
        ex._score_vector = old
