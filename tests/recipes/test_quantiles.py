"""Private quantiles: laws, rounding bound, exact uniform point, recipe, utility (issue 7)."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction

import flint
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpselect.accounting.ledger import Ledger
from dpselect.core.errors import BudgetExceeded, DataError, ParameterError
from dpselect.recipes import quantile
from dpselect.recipes.quantiles import (
    ROUNDING_BITS,
    ROUNDING_ERROR,
    ROUNDING_LOSS,
    SCORE_FLOOR,
    interval_shifts,
    make_candidate_quantile,
    make_continuous_quantile,
    quantile_fraction,
    quantile_scores,
    uniform_float,
)
from dpselect.sampling import InsecureSeededSource, ScriptedSource
from tests.gof import ALPHA, assert_fits, chi2_statistic, chi2_threshold

DATA = [1.0, 2.0, 2.0, 5.0, 7.0]
BOUNDS = (0.0, 10.0)


def softmax(logits):
    w = np.exp(np.asarray(logits, dtype=float) - np.max(logits))
    return w / w.sum()


def continuous_law(data, bounds, q, eps):
    """Exact interval probabilities of the continuous mechanism (float64)."""
    level = quantile_fraction(q)
    a, b = level.numerator, level.denominator
    delta = max(a, b - a)
    z = np.sort(np.asarray(data, dtype=float))
    edges = np.concatenate(([bounds[0]], z, [bounds[1]]))
    lengths = np.diff(edges)
    n = len(z)
    logits = np.array(
        [
            (eps * -abs(b * i - a * n) / (2 * delta) + math.log(L)) if L > 0 else -np.inf
            for i, L in enumerate(lengths)
        ]
    )
    return edges, softmax(logits)


def continuous_bins(edges, probs, halves=2):
    """Each positive interval split into ``halves`` equal bins: (bin edges, probabilities)."""
    cuts, p = [], []
    for i, pi in enumerate(probs):
        if edges[i + 1] > edges[i]:
            sub = np.linspace(edges[i], edges[i + 1], halves + 1)
            cuts.append(sub[:-1])
            p.extend([pi / halves] * halves)
    return np.append(np.concatenate(cuts), edges[-1]), np.array(p)


# ----------------------------------------------------------------------------- laws
def test_continuous_sampler_fits_the_exact_law_and_catches_a_factor_two():
    m = make_continuous_quantile(BOUNDS, 0.5, 1.0, source=InsecureSeededSource(11))
    draws = np.array([m(DATA) for _ in range(3000)])
    assert ((draws >= 0) & (draws < 10)).all()
    edges, probs = continuous_law(DATA, BOUNDS, 0.5, 1.0)
    cuts, p = continuous_bins(edges, probs)
    counts = np.histogram(draws, bins=cuts)[0]
    assert_fits(counts, p)  # interval law and uniformity inside each interval
    # The same test rejects the law of a mechanism run at twice the epsilon.
    _, wrong = continuous_bins(*continuous_law(DATA, BOUNDS, 0.5, 2.0))
    stat, df = chi2_statistic(counts, wrong)
    assert stat > chi2_threshold(df)


def test_continuous_sampler_other_level_and_clamping():
    data = [-5.0, 1.0, 3.0, 3.5, 12.0, 40.0]  # three values outside [0, 10]: clamped
    m = make_continuous_quantile(BOUNDS, 0.25, 2.0, source=InsecureSeededSource(12))
    draws = np.array([m(data) for _ in range(2000)])
    clamped = np.clip(data, *BOUNDS)
    cuts, p = continuous_bins(*continuous_law(clamped, BOUNDS, 0.25, 2.0), halves=1)
    assert_fits(np.histogram(draws, bins=cuts)[0], p)


def test_candidate_sampler_fits_the_exact_law():
    candidates = [0, 1.5, 2, 3, 6, 9]
    m = make_candidate_quantile(candidates, 0.5, 1.0, source=InsecureSeededSource(13))
    scores = np.array(quantile_scores(DATA, candidates, 0.5), dtype=float)
    probs = softmax(scores * 1.0 / 2)  # Delta = 1, eps = 1, not monotonic
    tally = Counter(m(DATA) for _ in range(3000))
    assert_fits([tally[c] for c in candidates], probs)
    assert m.map(1) <= 1.0


def test_continuous_privacy_loss_by_brute_force_over_neighbours():
    """sup_x log(p_x(c) / p_x'(c)) over every neighbour pair stays below eps."""
    eps = 1.0
    worst = 0.0
    for size in range(4):
        for x in itertools.combinations_with_replacement([1.0, 2.0, 3.0], size):
            for extra in (1.0, 2.0, 3.0):
                y = sorted([*x, extra])
                grid = np.linspace(0.05, 3.95, 40)  # never a data point
                px, py = _density(x, grid, eps), _density(y, grid, eps)
                worst = max(worst, np.abs(np.log(px / py)).max())
    assert worst <= eps + 1e-12
    assert worst > 0.75 * eps  # and is not far from attained on these small datasets


def _density(data, points, eps, bounds=(0.0, 4.0)):
    edges, probs = continuous_law(data, bounds, 0.5, eps)
    lengths = np.diff(edges)
    idx = np.searchsorted(edges, points, side="right") - 1
    return probs[idx] / lengths[idx]


# ----------------------------------------------------------------------------- rounding
def _ideal(z, lo, hi, level, eps_mech, i):
    """max(eps' S_i / (2 Delta), -2^22) + ln(len_i) at 400 bits (exact lengths)."""
    a, b = level.numerator, level.denominator
    delta = max(a, b - a)
    edges = [Fraction(lo), *map(Fraction, z), Fraction(hi)]
    term = max(-eps_mech * abs(b * i - a * len(z)) / (2 * delta), Fraction(-SCORE_FLOOR))
    length = edges[i + 1] - edges[i]
    with flint.ctx.workprec(400):
        value = (
            flint.arb(flint.fmpq(term.numerator, term.denominator))
            + flint.arb(flint.fmpq(length.numerator, length.denominator)).log()
        )
    return value


@pytest.mark.parametrize(
    "z, lo, hi, eps_mech",
    [
        ([1.0, 2.0, 2.0, 5.0, 7.0], 0.0, 10.0, Fraction(1)),
        ([-1e-300, 1e300], -1e308, 1.7e308, Fraction(3, 7)),  # inexact float differences
        ([0.0, 5e-324, 1e-310], -1.0, 1.0, Fraction(1, 3)),  # subnormal gaps: ln near -744
        (list(np.linspace(0, 1, 50)), 0.0, 1.0, Fraction(10**7)),  # the -2^22 floor
        ([0.1, 0.2, 0.30000000000000004, 0.7], 0.0, 1.0, Fraction(0.3)),
    ],
)
def test_shift_rounding_is_within_the_stated_bound(z, lo, hi, eps_mech):
    level = quantile_fraction(0.3)
    z = np.sort(np.asarray(z, dtype=float))
    index, shifts = interval_shifts(z, lo, hi, level, eps_mech)
    for i, m in zip(index.tolist(), shifts.tolist(), strict=True):
        ideal = _ideal(z, lo, hi, level, eps_mech, i)
        with flint.ctx.workprec(400):
            err = abs(flint.arb(flint.fmpq(m, 2**ROUNDING_BITS)) - ideal)
            assert err.upper() <= flint.arb(flint.fmpq(1, 2**40)) + flint.arb(2) ** -59
            assert err.upper() < flint.arb(flint.fmpq(ROUNDING_ERROR.numerator, 2**39))
    assert np.abs(shifts).max() < 2**63


def test_rounding_enters_the_privacy_map():
    m = make_continuous_quantile(BOUNDS, 0.5, 0.5)
    assert m.map(1) == 0.5 and m.map(3) == 1.5 and m.map(0) == 0
    assert ROUNDING_LOSS == Fraction(1, 2**37) == 4 * ROUNDING_ERROR
    with pytest.raises(ParameterError, match="epsilon must exceed"):
        make_continuous_quantile(BOUNDS, 0.5, 1e-12)


# ----------------------------------------------------------------------------- the point
def test_uniform_float_is_an_exact_uniform_rounded_down():
    src = InsecureSeededSource(21)
    draws = np.array([uniform_float(-3.0, 7.0, src) for _ in range(4000)])
    assert ((draws >= -3) & (draws < 7)).all()
    assert stats.kstest(draws, stats.uniform(-3, 10).cdf).pvalue > ALPHA
    assert uniform_float(2.0, 2.0) == 2.0


def test_uniform_float_forced_refinement_near_zero():
    # First word 0: U < 2^-64, where floats are far denser than 64 digits resolve; the
    # sampler reads more digits until one float cell holds the whole dyadic interval.
    tail = bytes(range(1, 65))
    src = ScriptedSource(b"\x00" * 8 + tail, then=InsecureSeededSource(3))
    x = uniform_float(0.0, 1.0, src)
    assert src.consumed > 8 and not src.exhausted and 0 <= x < 2.0**-64
    # Independent check: the bits read define U to within 2^-(8 * bytes); rounding down the
    # interval's two ends gives the same float.
    # (Each 64-digit block of U is one little-endian word of the stream.)
    script = b"\x00" * 8 + tail
    assert src.consumed % 8 == 0
    digits = 0
    for k in range(0, src.consumed, 8):
        digits = (digits << 64) | int.from_bytes(script[k : k + 8], "little")
    lo = Fraction(digits, 2 ** (8 * src.consumed))
    hi = lo + Fraction(1, 2 ** (8 * src.consumed))
    assert Fraction(x) <= lo and hi <= Fraction(np.nextafter(x, 1))


# ----------------------------------------------------------------------------- the recipe
def frame(values):
    return pd.DataFrame({"income": values})


def test_quantile_recipe_list_of_levels_splits_the_budget(tmp_path):
    data = frame(np.arange(1, 101, dtype=float))
    book = Ledger.create(tmp_path / "l.db", 2.0)
    r = quantile(
        data,
        "income",
        [0.25, 0.5, 0.9],
        1.5,
        bounds=(0, 200),
        ledger=book,
        source=InsecureSeededSource(1),
    )
    assert r.epsilon == 1.5 and r.epsilon_each == 0.5
    assert "epsilon / 3" in r.budget_split and r.levels == ["1/4", "1/2", "9/10"]
    assert all(0 <= v < 200 for v in r.values) and len(r.values) == 3
    assert r.rounding_loss == pytest.approx(2.0**-37)
    assert book.spent()[0] == 1.5 and book.entries()[-1].mechanism == "quantile"
    assert "q = 0.5" in str(r) and r.to_dict()["values"] == r.values
    with pytest.raises(BudgetExceeded):
        quantile(data, "income", 0.5, 1.0, bounds=(0, 200), ledger=book)


def test_quantile_recipe_candidates_and_text_columns(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("income\n10\n20\nnot a number\n\n30\n40\n")
    r = quantile(path, "income", 0.5, 50.0, candidates=[10, 25, 40], source=InsecureSeededSource(2))
    assert r.values == [25.0]  # eps = 50: the best candidate, exactly as the law says
    assert "3 public candidates" in r.method


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"q": 1.5, "bounds": (0, 1)}, ParameterError, "q must be in"),
        ({"q": [], "bounds": (0, 1)}, ParameterError, "non-empty"),
        ({"q": 0.5}, ParameterError, "exactly one of bounds"),
        ({"q": 0.5, "bounds": (0, 1), "candidates": [1]}, ParameterError, "exactly one"),
        ({"q": 0.5, "bounds": (1, 1)}, ParameterError, "lo < hi"),
        ({"q": 0.5, "bounds": (0, math.inf)}, ParameterError, "finite"),
        ({"q": 0.5, "candidates": ["a"]}, ParameterError, "numbers"),
        ({"q": 0.5, "candidates": [1, 1]}, ParameterError, "distinct"),
        ({"q": 0.5, "bounds": (0, 1), "epsilon": 0}, ParameterError, "epsilon"),
        ({"q": 0.5, "bounds": (0, 1), "column": "nope"}, DataError, "not a column"),
    ],
)
def test_quantile_recipe_errors(kwargs, error, match):
    args = {"data": frame([1.0, 2.0]), "column": "income", "epsilon": 1.0, **kwargs}
    with pytest.raises(error, match=match):
        quantile(**args)


def test_quantile_recipe_empty_data_does_not_raise():
    r = quantile(frame([]).astype(float), "income", 0.5, 1.0, bounds=(0, 10))
    assert 0 <= r.values[0] < 10


# ----------------------------------------------------------------------------- utility
def test_candidate_utility_claim_holds_statistically():
    rng = np.random.default_rng(5)
    data = np.round(rng.lognormal(3, 1, 400), 1)
    candidates = list(np.linspace(0, 100, 201))
    eps, conf = 0.5, 0.95
    m = make_candidate_quantile(candidates, 0.5, eps, source=InsecureSeededSource(6))
    scores = dict(zip(candidates, quantile_scores(data, candidates, 0.5), strict=True))
    best = max(scores.values())
    r = quantile(frame(data), "income", 0.5, eps, candidates=candidates, confidence=conf)
    loss = float(r.accuracy[0].split("within ")[1].split(" ")[0]) * 2  # back to integer units
    runs = 1000
    misses = sum(scores[m(data)] < best - loss for _ in range(runs))
    assert misses <= stats.binom.isf(ALPHA, runs, 1 - conf)


def test_continuous_utility_claim_holds_statistically():
    data = np.arange(1.0, 100.0)  # 99 points; the two best gaps have total width w = 2
    eps, t = 0.5, 3.0
    m = make_continuous_quantile((0.0, 100.0), 0.5, eps, source=InsecureSeededSource(7))
    draws = np.array([m(data) for _ in range(1000)])
    below = np.searchsorted(data, draws)
    rank_error = np.abs(below - 0.5 * len(data))  # |(1-q)#below - q#above| off data points
    loss = (2 * 0.5 / eps) * (math.log(100 / 2) + t)
    misses = int((rank_error > 0.5 + loss).sum())  # OPT = -1/2 (n odd)
    assert misses <= stats.binom.isf(ALPHA, len(draws), math.exp(-t))
