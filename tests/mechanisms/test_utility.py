"""The utility theorem (seeds 002, 003), exact selection laws and seed 002's hair-colour example.

Statistical checks have a false-failure rate of 1e-6: chi-square goodness of fit via
``tests/gof.py``, and for the utility theorem a one-sided binomial test of the observed failure
frequency against the bound ``e^-t`` (rejecting only when ``P[Binom(N, e^-t) >= observed]`` is
below 1e-6), plus a two-sided binomial test against the exact probability.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from flint import arb, ctx
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpselect.core import ParameterError
from dpselect.mechanisms.utility import (
    hair_colour_example,
    selection_probabilities,
    utility_bound,
)
from dpselect.sampling import InsecureSeededSource, noisy_argmax
from tests.gof import ALPHA, assert_fits
from tests.sampling.laws import laplace_law, permute_and_flip_law, softmax


def certainly_at_least(value: float, formula) -> bool:
    """``value >= formula()`` for the exact real value (an arb ball at 256 bits)."""
    with ctx.workprec(256):
        return bool(arb(value) >= formula())


# ------------------------------------------------------------------------ utility theorem
def test_bound_given_t_confidence_and_loss() -> None:
    b = utility_bound(0.1, 1, 4, t=5 - math.log(4))
    assert b.loss == pytest.approx(100, rel=1e-15) and b.loss >= 100 - 1e-12
    assert b.probability == pytest.approx(4 * math.exp(-5), rel=1e-15)
    # confidence = 1 - e^-t gives the same loss
    c = utility_bound(0.1, 1, 4, confidence=1 - 4 * math.exp(-5))
    assert c.loss == pytest.approx(100, rel=1e-12)
    assert c.confidence == pytest.approx(1 - 4 * math.exp(-5), rel=1e-15)
    # loss -> probability: (|O|/|O*|) e^(-eps loss / (2 Delta))
    d = utility_bound(0.1, 1, 4, loss=100)
    assert d.probability == pytest.approx(4 * math.exp(-5), rel=1e-15)
    assert d.t == pytest.approx(5 - math.log(4), rel=1e-15)
    # monotonic: Delta instead of 2 Delta
    m = utility_bound(0.1, 1, 4, t=2, monotonic=True)
    assert m.loss == pytest.approx(10 * (math.log(4) + 2), rel=1e-15)
    # several optimal candidates: ln(|O| / |O*|)
    o = utility_bound(2, 3, 100, n_optimal=10, t=1)
    assert o.loss == pytest.approx(3 * (math.log(10) + 1), rel=1e-15)
    # a loss too small for the theorem gives the trivial bound 1
    assert utility_bound(1, 1, 10, loss=0).probability == 1.0
    assert "P[score <= OPT - 100] <= 0.0269518" in str(d)


def test_bound_rounds_outward() -> None:
    b = utility_bound(0.3, 1.7, 13, n_optimal=2, t=2.5)
    assert certainly_at_least(
        b.loss,
        lambda: 2 * arb(1.7) / arb(0.3) * ((arb(13) / 2).log() + arb(2.5)),
    )
    assert certainly_at_least(b.probability, lambda: (-arb(2.5)).exp())
    d = utility_bound(0.3, 1.7, 13, n_optimal=2, loss=40)
    assert certainly_at_least(
        d.probability, lambda: arb(13) / 2 * (-arb(0.3) * 40 / (2 * arb(1.7))).exp()
    )


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        (dict(epsilon=0.1, sensitivity=1, n_candidates=4), "t, confidence or loss"),
        (dict(epsilon=0.1, sensitivity=1, n_candidates=4, t=1, loss=3), "t, confidence or loss"),
        (dict(epsilon=0, sensitivity=1, n_candidates=4, t=1), "epsilon"),
        (dict(epsilon=math.inf, sensitivity=1, n_candidates=4, t=1), "epsilon"),
        (dict(epsilon=0.1, sensitivity=0, n_candidates=4, t=1), "sensitivity"),
        (dict(epsilon=0.1, sensitivity=1, n_candidates=0, t=1), "n_candidates"),
        (dict(epsilon=0.1, sensitivity=1, n_candidates=4.0, t=1), "n_candidates"),
        (dict(epsilon=0.1, sensitivity=1, n_candidates=4, n_optimal=5, t=1), "n_optimal"),
        (dict(epsilon=0.1, sensitivity=1, n_candidates=4, n_optimal=0, t=1), "n_optimal"),
        (dict(epsilon=0.1, sensitivity=1, n_candidates=4, t=-1), "t"),
        (dict(epsilon=0.1, sensitivity=1, n_candidates=4, confidence=1), "confidence"),
        (dict(epsilon=0.1, sensitivity=1, n_candidates=4, confidence=0), "confidence"),
        (dict(epsilon=0.1, sensitivity=1, n_candidates=4, loss=-1), "loss"),
        (dict(epsilon=0.1, sensitivity=1, n_candidates=4, t=1, monotonic=1), "monotonic"),
    ],
)
def test_bound_errors_name_the_argument(kwargs, argument) -> None:
    with pytest.raises(ParameterError, match=argument):
        utility_bound(**kwargs)


@settings(max_examples=200, deadline=None)
@given(
    scores=st.lists(st.integers(-50, 50), min_size=1, max_size=12),
    eps=st.floats(0.05, 5),
    t=st.floats(0, 10),
    monotonic=st.booleans(),
)
def test_theorem_holds_exactly(scores, eps, t, monotonic) -> None:
    """The exact law (softmax at scale c Delta / eps) never exceeds the bound."""
    c = 1 if monotonic else 2
    bound = utility_bound(
        eps, 1, len(scores), n_optimal=scores.count(max(scores)), t=t, monotonic=monotonic
    )
    probs = selection_probabilities(scores, c / eps)
    bad = sum(p for s, p in zip(scores, probs, strict=True) if s <= max(scores) - bound.loss)
    assert bad <= bound.probability * (1 + 1e-12)


@pytest.mark.parametrize("t, monotonic", [(0.5, False), (1.0, False), (2.0, True)])
def test_theorem_holds_statistically(t, monotonic) -> None:
    """Sample the exponential mechanism (exact Gumbel noisy max): the frequency of an output
    at least ``loss`` below OPT is not significantly above ``e^-t``, and fits the exact law."""
    eps, n_cand, draws = 1.0, 8, 3000
    c = 1 if monotonic else 2
    bound = utility_bound(eps, 1, n_cand, t=t, monotonic=monotonic)
    # the worst case for the bound: every other candidate exactly ``loss`` below OPT
    scores = np.array([10.0] + [10.0 - bound.loss] * (n_cand - 1))
    src = InsecureSeededSource(int(10 * t))
    picks = [noisy_argmax(scores, c / eps, source=src) for _ in range(draws)]
    failures = sum(1 for i in picks if i != 0)
    assert stats.binom.sf(failures - 1, draws, bound.probability) > ALPHA  # not above e^-t
    exact = 1 - selection_probabilities(scores, c / eps)[0]
    assert exact <= bound.probability
    assert stats.binomtest(failures, draws, exact).pvalue > ALPHA


# ------------------------------------------------------------------------ exact laws
SMALL = [
    [0.1, -0.4, 0.9, 0.3, 0.0],
    [1, 1, 1],
    [5, 5, 4.5, -2, 3],
    [0, -3, -6, -9, -12, -15, -18],
    [0.0],
    [2, 0],
]


@pytest.mark.parametrize("scores", SMALL)
@pytest.mark.parametrize("scale", [0.3, 1.0, 4.0])
def test_gumbel_is_softmax(scores, scale) -> None:
    got = selection_probabilities(scores, scale)
    assert np.allclose(got, softmax(scores, scale), rtol=1e-14, atol=0)


@pytest.mark.parametrize("scores", SMALL)
@pytest.mark.parametrize("scale", [0.3, 1.0, 4.0])
def test_exponential_matches_permute_and_flip_enumeration(scores, scale) -> None:
    got = selection_probabilities(scores, scale, noise="exponential")
    assert np.allclose(got, permute_and_flip_law(scores, scale), rtol=1e-12, atol=1e-16)
    assert got.sum() == pytest.approx(1, abs=1e-14)


def test_exponential_hand_values() -> None:
    # two candidates: the runner-up is proposed first half of the time, accepted w.p. p
    p = math.exp(-2 / 0.7)
    got = selection_probabilities([2, 0], 0.7, noise="exponential")
    assert got == pytest.approx([1 - p / 2, p / 2], rel=1e-15)
    # brute force over all 8! orders for 8 candidates (an independent, exact enumeration)
    scores = np.array([3, 2.5, 2.5, 1, 0, -1, 4, 3.9])
    accept = np.exp(scores - scores.max())
    probs = np.zeros(8)
    for perm in itertools.permutations(range(8)):
        reach = 1.0
        for i in perm:
            probs[i] += reach * accept[i]
            reach *= 1 - accept[i]
            if reach == 0:
                break
    probs /= math.factorial(8)
    assert np.allclose(selection_probabilities(scores, 1, "exponential"), probs, rtol=1e-12)


@pytest.mark.parametrize("scores", SMALL[:4])
@pytest.mark.parametrize("scale", [0.3, 1.0, 4.0])
def test_laplace_matches_adaptive_quadrature(scores, scale) -> None:
    got = selection_probabilities(scores, scale, noise="laplace")
    assert np.allclose(got, laplace_law(scores, scale), rtol=0, atol=1e-13)
    assert got.sum() == pytest.approx(1, abs=1e-13)


@pytest.mark.parametrize("noise", ["exponential", "laplace"])
def test_laws_fit_the_sampler(noise) -> None:
    """The exact sampling engine's noisy argmax follows these laws (chi-square, 1e-6)."""
    scores, scale, draws = np.array([3.0, 2.5, 2.0, 0.0, -1.0]), 1.0, 3000
    src = InsecureSeededSource(3)
    counts = np.bincount(
        [noisy_argmax(scores, scale, noise=noise, source=src) for _ in range(draws)],
        minlength=scores.size,
    )
    assert_fits(counts, selection_probabilities(scores, scale, noise=noise))


def test_exactness_edges() -> None:
    big = [10**30, 10**30 - 1, 10**30 - 5]  # integer differences taken exactly
    for noise in ("gumbel", "exponential", "laplace"):
        assert np.allclose(
            selection_probabilities(big, 1, noise), selection_probabilities([5, 4, 0], 1, noise)
        )
        # shifting scores, or scaling scores and scale together, changes nothing
        base = selection_probabilities([1.5, 0.2, -3], 2.0, noise)
        assert np.allclose(selection_probabilities([101.5, 100.2, 97], 2.0, noise), base)
        assert np.allclose(selection_probabilities([3.0, 0.4, -6], 4.0, noise), base)
    # tiny probabilities keep their relative accuracy in the Gumbel and exponential laws
    assert selection_probabilities([0, -700], 1)[1] == pytest.approx(math.exp(-700), rel=1e-12)
    pf = selection_probabilities([0, -700], 1, "exponential")[1]
    assert pf == pytest.approx(math.exp(-700) / 2, rel=1e-12)
    for noise in ("gumbel", "exponential", "laplace"):  # gaps beyond the float range
        for scores in ([1, 0], [1.0, 0.0]):
            got = selection_probabilities(scores, 1e-320, noise)
            assert got[1] == 0.0 and got[0] == pytest.approx(1.0, abs=1e-14)
    many = selection_probabilities(np.linspace(0, 30, 1500), 1.0, "exponential")
    assert many.sum() == pytest.approx(1, abs=1e-12) and np.all(many > 0)


@pytest.mark.parametrize(
    "scores, scale, noise",
    [
        ([], 1.0, "gumbel"),
        ([[1, 2]], 1.0, "gumbel"),
        ([1, math.nan], 1.0, "gumbel"),
        ([1, math.inf], 1.0, "exponential"),
        (["a", "b"], 1.0, "gumbel"),
        ("ab", 1.0, "gumbel"),
        ([1, 2], 0, "gumbel"),
        ([1, 2], -1.0, "laplace"),
        ([1, 2], 1.0, "cauchy"),
    ],
)
def test_selection_probabilities_errors(scores, scale, noise) -> None:
    with pytest.raises(ParameterError):
        selection_probabilities(scores, scale, noise=noise)


# ------------------------------------------------------------------------ seed 002 example
def test_hair_colour_numbers() -> None:
    ex = hair_colour_example()
    # the theorem: 400 = 500 - 20 (ln 4 + t), t = 5 - ln 4, so P <= 4 e^-5 <= 0.027
    assert ex.bound.loss == 100
    assert ex.bound.t == pytest.approx(5 - math.log(4), rel=1e-15)
    assert ex.bound.probability == pytest.approx(4 * math.exp(-5), rel=1e-15)
    assert 4 * math.exp(-5) <= ex.bound.probability <= 0.027
    # exact, with blond and red at their largest possible count (400)
    exact = 3 * math.exp(-5) / (1 + 3 * math.exp(-5))
    assert ex.p_not_dark == pytest.approx(exact, rel=1e-14)
    assert round(ex.p_not_dark, 6) == 0.019813
    assert "<= 0.026952" in str(ex) and "= 0.019813" in str(ex)
    # fewer blond and red: less likely still
    smaller = hair_colour_example({"dark": 500, "blond": 150, "brown": 400, "red": 20})
    others = math.exp(-5) + math.exp(-17.5) + math.exp(-24)  # weights exp(0.05 (s - 500))
    assert smaller.p_not_dark == pytest.approx(others / (1 + others), rel=1e-14)
    assert smaller.bound.probability == ex.bound.probability
    with pytest.raises(ParameterError, match="dark"):
        hair_colour_example({"dark": 1, "red": 2})


def test_hair_colour_sampled() -> None:
    """The exponential mechanism itself (exact Gumbel noisy max, scale 2 Delta / eps = 20)
    answers something other than 'dark' at the exact rate."""
    ex = hair_colour_example()
    scores = np.array(list(ex.counts.values()), dtype=float)
    src, draws = InsecureSeededSource(2002), 4000
    misses = sum(noisy_argmax(scores, 20.0, source=src) != 0 for _ in range(draws))
    assert stats.binomtest(misses, draws, ex.p_not_dark).pvalue > ALPHA
    assert stats.binom.sf(misses - 1, draws, ex.bound.probability) > ALPHA


def test_fraction_inputs() -> None:
    b = utility_bound(Fraction(1, 10), Fraction(1), 4, loss=Fraction(100))
    assert b.probability == pytest.approx(4 * math.exp(-5), rel=1e-15)
