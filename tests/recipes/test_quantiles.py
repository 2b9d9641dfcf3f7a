"""The quantile mechanisms: laws, privacy by brute force, the float bound against arb, ties.

Statistical tests run at a false-failure rate of 1e-6 (tests/gof.py) and each is shown to
fail on a broken variant. The accuracy statements are checked in test_quantiles_accuracy.py.
"""

from __future__ import annotations

import bisect
import itertools
import math
from fractions import Fraction

import flint
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpselect.accounting.ledger import Ledger
from dpselect.core.arithmetic import float_down, float_up
from dpselect.core.errors import BudgetExceeded, DataError, ParameterError
from dpselect.mechanisms.quantile_continuous import (
    LOG_WEIGHT_ERROR,
    ROUNDING_LOSS,
    SCORE_CAP,
    continuous_shifts,
    make_continuous_quantile,
    shortest_decimal,
    uniform_float,
)
from dpselect.mechanisms.quantile_score import quantile_fraction, score_sensitivity
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes import quantile
from dpselect.recipes.quantiles import make_candidate_quantile, quantile_scores
from dpselect.sampling import InsecureSeededSource, ScriptedSource
from tests.gof import ALPHA, assert_fits, chi2_statistic, chi2_threshold


# ----------------------------------------------------------------------------- the exact law
def factor_of(eps, q):
    return float_down(
        (Fraction(eps) - ROUNDING_LOSS) / (2 * score_sensitivity(quantile_fraction(q)))
    )


def exact_law(data, bounds, q, eps, w):
    """Intervals and probabilities of the continuous mechanism, from its definition.

    Breakpoints ``x + w`` rounded up and ``x - w`` rounded down (exact Fractions); the score
    at each interval's midpoint counted row by row.
    """
    lo, hi = bounds
    level = quantile_fraction(q)
    a, b = level.numerator, level.denominator
    f = Fraction(factor_of(eps, q))
    x = [min(max(float(v), lo), hi) for v in data]
    ups = sorted(float_up(Fraction(v) + Fraction(w)) for v in x)
    downs = sorted(float_down(Fraction(v) - Fraction(w)) for v in x)
    edges = sorted({lo, hi, *[e for e in ups + downs if lo < e < hi]})
    n = len(x)
    logs, pieces = [], []
    for left, right in itertools.pairwise(edges):
        mid = (Fraction(left) + Fraction(right)) / 2
        below = bisect.bisect_left(ups, mid)  # ups < mid
        above = n - bisect.bisect_right(downs, mid)  # downs > mid
        s = max(0, b * below - a * n, b * above - (b - a) * n)
        logs.append(math.log(right - left) - float(min(SCORE_CAP, f * s)))
        pieces.append((left, right, s))
    logs = np.array(logs)
    probs = np.exp(logs - logs.max())
    return np.array(edges), probs / probs.sum(), pieces


def log_density(data, bounds, q, eps, w, points):
    edges, probs, _pieces = exact_law(data, bounds, q, eps, w)
    lengths = np.diff(edges)
    dens = probs / lengths
    return np.log(dens[np.searchsorted(edges, points, side="right") - 1])


def _draws(data, bounds, q, eps, w, runs, seed):
    m = make_continuous_quantile(
        bounds, q, eps, resolution=w, source=InsecureSeededSource(seed), round_to_resolution=False
    )
    return np.array([m(data) for _ in range(runs)])


def _counts(draws, edges):
    idx = np.searchsorted(edges, draws, side="right") - 1
    return np.bincount(np.clip(idx, 0, len(edges) - 2), minlength=len(edges) - 1)


DATA = [1.0, 2.0, 2.0, 2.0, 3.5, 7.0, 7.0, 9.0]  # ties, gaps of several widths
BOUNDS = (0.0, 10.0)


@pytest.mark.slow
def test_continuous_sampler_fits_the_exact_law_and_catches_a_factor_two():
    w, eps, runs = 0.25, 2.0, 6000
    edges, probs, _ = exact_law(DATA, BOUNDS, 0.5, eps, w)
    assert_fits(_counts(_draws(DATA, BOUNDS, 0.5, eps, w, runs, 1), edges), probs)
    broken = _counts(_draws(DATA, BOUNDS, 0.5, 2 * eps, w, runs, 2), edges)
    stat, df = chi2_statistic(broken, probs)
    assert stat > chi2_threshold(df)


@pytest.mark.slow
def test_continuous_sampler_other_level_clamping_and_uniform_within_intervals():
    data = [-5.0, 0.5, 0.5, 4.0, 4.0, 4.0, 12.0]  # two rows clamped
    w, eps, runs = 0.5, 1.0, 4000
    edges, probs, _ = exact_law(data, BOUNDS, 0.8, eps, w)
    draws = _draws(data, BOUNDS, 0.8, eps, w, runs, 3)
    # Halve every interval: a uniform point inside each is part of the law.
    fine = np.unique(np.concatenate((edges, (edges[:-1] + edges[1:]) / 2)))
    fine_probs = np.repeat(probs / 2, 2)
    assert_fits(_counts(draws, fine), fine_probs)


def test_continuous_privacy_loss_by_brute_force_over_neighbours():
    """max |ln p_x(c) - ln p_x'(c)| <= eps over add/remove-one pairs on a small domain."""
    eps, w = 1.0, 0.25
    points = np.linspace(0.01, 9.99, 997)
    domain = [1.0, 2.0, 2.1, 5.0]
    worst = 0.0
    for size in range(0, 4):
        for x in itertools.combinations_with_replacement(domain, size):
            base = log_density(list(x), BOUNDS, 0.3, eps, w, points)
            for extra in domain:
                other = log_density([*x, extra], BOUNDS, 0.3, eps, w, points)
                worst = max(worst, float(np.abs(base - other).max()))
    assert worst <= eps - float(ROUNDING_LOSS) + 1e-9
    assert worst > 0.5 * eps  # the bound is nearly attained: the test can fail


def test_privacy_map():
    m = make_continuous_quantile(BOUNDS, 0.5, 0.7)
    assert m.map(0) == 0 and m.map(1) == 0.7 and m.map(3) == float_up(Fraction(0.7) * 3)
    assert ROUNDING_LOSS == Fraction(1, 2**32) == 4 * LOG_WEIGHT_ERROR
    with pytest.raises(ParameterError, match="epsilon must exceed"):
        make_continuous_quantile(BOUNDS, 0.5, 1e-12)
    with pytest.raises(ParameterError, match="resolution"):
        make_continuous_quantile(BOUNDS, 0.5, 1.0, resolution=5.0)


# ----------------------------------------------------------------------------- float bound
def _arb_check(values, bounds, q, eps, w):
    lo, hi = bounds
    level = quantile_fraction(q)
    f = factor_of(eps, q)
    left, right, shifts = continuous_shifts(np.array(values, dtype=float), lo, hi, w, level, f)
    _, _, pieces = exact_law(values, bounds, q, eps, w)
    exact = {(pl, pr): s for pl, pr, s in pieces}
    assert len(shifts) >= 1
    eta = flint.arb(float(LOG_WEIGHT_ERROR))
    covered = Fraction(0)
    with flint.ctx.workprec(200):
        for l_, r_, sh in zip(left.tolist(), right.tolist(), shifts.tolist(), strict=True):
            inside = [s for (pl, pr), s in exact.items() if l_ <= pl and pr <= r_]
            s = inside[0]
            # merged capped intervals: every piece inside is capped
            assert len(inside) == 1 or all(Fraction(f) * t >= SCORE_CAP for t in inside)
            term = min(Fraction(SCORE_CAP), Fraction(f) * s)
            ideal = (flint.arb(r_) - flint.arb(l_)).log() - flint.arb(
                flint.fmpq(term.numerator, term.denominator)
            )
            diff = abs(ideal - flint.arb(sh))
            assert diff < eta, (l_, r_, sh, ideal)
            covered += Fraction(r_) - Fraction(l_)
    assert covered == Fraction(hi) - Fraction(lo)


@pytest.mark.parametrize(
    "values, bounds, w",
    [
        ([1e300, -1e300, 3e299, 3e299, 5e-324], (-1.7e308, 1.7e308), 1e303),
        ([5e-324, 1e-323, 2.5e-322, 2.5e-322, 0.0], (-1e-310, 1e-310), 1e-318),
        ([1.0, 1.0 + 2**-40, 1.0 + 2**-39, 2.0, 1e6], (0.0, 1e6 + 1), 2**-20),
        ([0.1, 0.2, 0.30000000000000004, 0.3] * 3, (0.0, 1.0), 1e-6),
    ],
)
@pytest.mark.parametrize("eps, q", [(1.0, 0.5), (1e-3, 0.9), (50.0, 0.25)])
def test_float_log_weights_within_the_bound_against_arb(values, bounds, w, eps, q):
    _arb_check(values, bounds, q, eps, w)


def test_float_log_weights_large_data_with_capped_outer_parts():
    rng = np.random.default_rng(4)
    values = np.round(rng.lognormal(3, 1, 3000), 1)  # many ties
    _arb_check(values.tolist(), (0.0, 1000.0), 0.5, 20.0, 0.01)


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


# ----------------------------------------------------------------------------- ties
def test_a_value_many_rows_hold_is_the_likely_output():
    """43 rows equal to the median: 12.5 itself comes back (it never did before)."""
    rng = np.random.default_rng(8)
    data = np.concatenate(
        (rng.uniform(0, 12.4, 500), np.full(43, 12.5), rng.uniform(12.6, 25, 500))
    )
    m = make_continuous_quantile((-20.0, 50.0), 0.5, 1.0, source=InsecureSeededSource(9))
    runs = 300
    hits = sum(m(data) == 12.5 for _ in range(runs))
    # P[12.5] >= 0.99 by the law (the window of width 2w holds all but e^-21 of the mass).
    assert hits >= stats.binom.ppf(ALPHA, runs, 0.99)
    # Broken variant: the output without rounding to the resolution never equals 12.5.
    raw = make_continuous_quantile(
        (-20.0, 50.0), 0.5, 1.0, source=InsecureSeededSource(9), round_to_resolution=False
    )
    assert sum(raw(data) == 12.5 for _ in range(50)) <= 1


def test_shortest_decimal():
    assert shortest_decimal(12.50003, 12.4999, 12.5001) == 12.5
    assert shortest_decimal(0.30000000000000004, 0.29, 0.31) == 0.3
    assert shortest_decimal(1.234, 1.234, 1.234) == 1.234
    assert shortest_decimal(-7.0001, -7.01, -6.99) == -7.0


def test_empty_and_one_row_answer_inside_the_bounds():
    m = make_continuous_quantile((2.0, 3.0), 0.5, 1.0, source=InsecureSeededSource(5))
    for data in ([], [2.5], [np.nan], [100.0]):
        v = m(data)
        assert isinstance(v, float) and 2.0 <= v <= 3.0


# ----------------------------------------------------------------------------- candidates
@pytest.mark.slow
def test_candidate_sampler_fits_the_exact_law_with_ties():
    data = [1.0, 2.0, 2.0, 2.0, 2.0, 3.0, 9.0]
    cands = [1.0, 2.0, 2.5, 3.0, 8.0]
    eps, runs = 1.0, 5000
    scores = np.array(quantile_scores(data, cands, 0.5), dtype=float)
    assert scores[1] == 0  # the tied value is a classical median: excess 0
    probs = np.exp(eps * scores / 2)
    probs /= probs.sum()
    m = make_candidate_quantile(cands, 0.5, eps, source=InsecureSeededSource(11))
    counts = np.bincount([cands.index(m(data)) for _ in range(runs)], minlength=len(cands))
    assert_fits(counts, probs)
    broken_probs = np.exp(eps * scores)
    broken_probs /= broken_probs.sum()
    stat, df = chi2_statistic(counts, broken_probs)
    assert stat > chi2_threshold(df)


def test_candidate_scores_from_one_sort_match_the_definition():
    rng = np.random.default_rng(3)
    data = np.round(rng.normal(0, 1, 200), 1)
    cands = np.round(np.linspace(-3, 3, 61), 2)
    got = quantile_scores(data, cands, 0.3)
    for c, s in zip(cands, got, strict=True):
        below, above = int((data < c).sum()), int((data > c).sum())
        assert -s == max(0, 10 * below - 3 * 200, 10 * above - 7 * 200)


# ----------------------------------------------------------------------------- the recipe
def frame(values):
    return pd.DataFrame({"income": values})


def test_quantile_recipe_list_of_levels_splits_the_budget(tmp_path):
    data = frame(np.arange(1, 101, dtype=float))
    book = Ledger.create(tmp_path / "l.db", 2.0)
    r = quantile(
        data,
        quantile_request("income", [0.25, 0.5, 0.9], 1.5, bounds=(0, 200), mechanism="split"),
        ledger=book,
        source=InsecureSeededSource(1),
    )
    assert r.epsilon == 1.5 and r.epsilon_each == 0.5
    assert "epsilon / 3" in r.budget_split and r.levels == ["1/4", "1/2", "9/10"]
    assert all(0 <= v <= 200 for v in r.values) and len(r.values) == 3
    assert r.rounding_loss == pytest.approx(2.0**-32)
    assert book.spent()[0] == 1.5 and book.entries()[-1].mechanism == "quantile"
    assert "q = 0.5" in str(r) and r.to_dict()["values"] == r.values
    with pytest.raises(BudgetExceeded):
        quantile(data, quantile_request("income", 0.5, 1.0, bounds=(0, 200)), ledger=book)


def test_quantile_recipe_candidates_and_text_columns(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("income\n10\n20\nnot a number\n\n30\n40\n")
    r = quantile(
        path,
        quantile_request("income", 0.5, 50.0, candidates=[10, 25, 40]),
        source=InsecureSeededSource(2),
    )
    assert r.values == [25.0]  # eps = 50: the best candidate, exactly as the law says
    assert "3 public candidates" in r.method
    assert "do not parse" in str(r) and "--schema income:DOUBLE" in str(r)


def test_quantile_recipe_refuses_typed_text_columns_before_charging(tmp_path):
    book = Ledger.create(tmp_path / "l.db", 2.0)
    with pytest.raises(DataError, match="'x' has type VARCHAR"):
        quantile(
            pd.DataFrame({"x": ["a", "b"]}),
            quantile_request("x", 0.5, 1.0, bounds=(0, 1)),
            ledger=book,
        )
    path = tmp_path / "t.parquet"
    pd.DataFrame({"w": ["sun", "rain"], "d": pd.to_datetime(["2020-01-01"] * 2)}).to_parquet(path)
    with pytest.raises(DataError, match="'w' has type VARCHAR"):
        quantile(path, quantile_request("w", 0.5, 1.0, bounds=(0, 1)), ledger=book)
    with pytest.raises(DataError, match="'d' has type TIMESTAMP"):
        quantile(path, quantile_request("d", 0.5, 1.0, bounds=(0, 1)), ledger=book)
    assert book.spent()[0] == 0


def test_quantile_recipe_recursive_for_many_levels():
    data = frame(np.arange(1, 1001, dtype=float))
    deciles = [i / 10 for i in range(1, 10)]
    r = quantile(
        data,
        quantile_request("income", deciles, 1.0, bounds=(0, 2000), mechanism="recursive"),
        source=InsecureSeededSource(4),
    )
    assert "Kaplan" in r.method and r.epsilon_each == 0.25 and len(r.values) == 9
    assert r.values == sorted(r.values)
    assert all(abs(v - 1000 * q) < 100 for v, q in zip(r.values, deciles, strict=True))
    assert r.to_dict()["parameters"]["method"] == "recursive"
    split = quantile(
        data, quantile_request("income", deciles, 1.0, bounds=(0, 2000), mechanism="split")
    )
    assert split.epsilon_each == pytest.approx(1 / 9)
    with pytest.raises(ParameterError, match="needs bounds"):
        quantile(
            data, quantile_request("income", deciles, 1.0, candidates=[1, 2], mechanism="recursive")
        )


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
        data, column, q, epsilon = (args.pop(key) for key in ("data", "column", "q", "epsilon"))
        quantile(data, quantile_request(column, q, epsilon, **args))


def test_quantile_recipe_empty_and_one_value_same_form():
    for values in ([], [3.0]):
        r = quantile(
            frame(values).astype(float), quantile_request("income", 0.5, 1.0, bounds=(0, 10))
        )
        assert 0 <= r.values[0] <= 10 and len(r.accuracy) == 1


# ----------------------------------------------------------------------------- recursive
def _recursive_log_density(data, bounds, levels, eps, w, point):
    """Joint log-density of the recursive mechanism (three levels, before decimal rounding)."""
    lo, hi = bounds
    v1, v2, v3 = point
    q1, q2, q3 = levels
    each = eps / 2  # depth 2 for three levels
    x = np.clip(np.asarray(data, dtype=float), lo, hi)
    root = log_density(x, bounds, q2, each, w, [v2])[0]
    left = x[x <= v2]
    right = x[x > v2]
    out = root
    out += log_density(left, (lo, v2), q1 / q2, each, w, [v1])[0]
    out += log_density(right, (v2, hi), (q3 - q2) / (1 - q2), each, w, [v3])[0]
    return out


@pytest.mark.slow
def test_recursive_privacy_loss_by_brute_force_over_neighbours():
    """Three levels (two rounds): the joint density ratio stays within e^eps."""
    eps, w, bounds = 1.0, 0.25, (0.0, 10.0)
    levels = (Fraction(1, 4), Fraction(1, 2), Fraction(3, 4))
    rng = np.random.default_rng(6)
    points = [tuple(sorted(rng.uniform(0.01, 9.99, 3))) for _ in range(20)]
    points += [(1.05, 2.05, 2.95), (1.9, 2.05, 7.1)]
    domain = [1.0, 2.0, 3.0, 7.0]
    worst = 0.0
    for size in range(0, 4):
        for x in itertools.combinations_with_replacement(domain, size):
            for extra in domain:
                for p in points:
                    a = _recursive_log_density(list(x), bounds, levels, eps, w, p)
                    b = _recursive_log_density([*x, extra], bounds, levels, eps, w, p)
                    worst = max(worst, abs(a - b))
    assert worst <= eps + 1e-9
    assert worst > eps / 2  # more than one round's share: the composition is exercised


def test_declared_schema_decides_the_column_type(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("t,w\n12.5\n12.5,sun\n13,rain\n")
    typed = quantile(path, quantile_request("t", 0.5, 5.0, bounds=(0, 50)), schema={"t": "DOUBLE"})
    assert typed.notes == []  # declared numeric: nothing to say about parsing
    with pytest.raises(DataError, match="'w' has type VARCHAR"):
        quantile(path, quantile_request("w", 0.5, 5.0, bounds=(0, 50)), schema={"w": "VARCHAR"})
    untyped = quantile(path, quantile_request("t", 0.5, 5.0, bounds=(0, 50)))
    assert "do not parse" in untyped.notes[0]
