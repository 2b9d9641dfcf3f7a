"""Top-k for counts (seed 004): one-shot Laplace (QSZ21), limited domain (DR19), Gumbel with
noisy counts. Maps against hand values, validity ranges, laws at a false-failure rate of 1e-6
(tests/gof.py) with a factor-2 broken variant failing each, forced refinement paths, errors and
their independence from the data, and seed 004's noise comparison."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import flint
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate

import dpselect.core as dc
from dpselect.accounting import approx_dp_to_zcdp_budget, zcdp_to_approx_dp
from dpselect.mechanisms.gumbel_counts import make_gumbel_top_k_with_counts
from dpselect.mechanisms.limited_domain import (
    limited_domain_epsilon,
    limited_domain_threshold,
    make_limited_domain_top_k,
)
from dpselect.mechanisms.oneshot_laplace import (
    _compare,
    _FractionalPart,
    _oneshot_laplace_ranking,
    make_oneshot_laplace_top_k,
    oneshot_laplace_scale,
    oneshot_laplace_top_k,
    sample_floor_laplace,
)
from dpselect.mechanisms.topk_counts import NoisyTopK
from dpselect.sampling.source import InsecureSeededSource, ScriptedSource
from tests.gof import assert_fits, chi2_statistic, chi2_threshold, fits
from tests.sampling.laws import plackett_luce

LINF = dc.LInfDistance()
MONO = dc.LInfDistance(monotonic=True)
ZCDP = dc.ZeroConcentratedDivergence()
MAXDIV = dc.MaxDivergence()


def counts_domain(d):
    return dc.vector_domain(dc.atom_domain(int), size=d)


# --------------------------------------------------------------------------- exact laws
def lap_pdf(t, b):
    return math.exp(-abs(t) / b) / (2 * b)


def lap_cdf(t, b):
    return 0.5 * math.exp(t / b) if t < 0 else 1.0 - 0.5 * math.exp(-t / b)


def qsz_joint_law_k1(x, b, span):
    """P(I = i, floor(x_i + L_i) = m) for the noisy argmax of x + Laplace(b) (quadrature)."""
    cells, probs = [], []
    for i in range(len(x)):

        def integrand(y, i=i):
            others = (lap_cdf(y - x[j], b) for j in range(len(x)) if j != i)
            return lap_pdf(y - x[i], b) * math.prod(others)

        for m in range(min(x) - span, max(x) + span):
            cells.append((i, m))
            probs.append(integrate.quad(integrand, m, m + 1, epsabs=1e-14)[0])
    cells.append("other")
    probs.append(max(0.0, 1.0 - sum(probs)))
    return cells, np.asarray(probs)


def qsz_rank_law_k2(x, b):
    """P(first i1, second i2) for the top 2 of x + Laplace(b): integrate over the second value."""
    cells, probs = [], []
    for i1, i2 in itertools.permutations(range(len(x)), 2):

        def integrand(y, i1=i1, i2=i2):
            rest = (lap_cdf(y - x[j], b) for j in range(len(x)) if j not in (i1, i2))
            return lap_pdf(y - x[i2], b) * (1.0 - lap_cdf(y - x[i1], b)) * math.prod(rest)

        lo, hi = min(x) - 80 * b, max(x) + 80 * b
        val = integrate.quad(integrand, lo, hi, points=sorted(set(x)), limit=400, epsabs=1e-14)
        cells.append((i1, i2))
        probs.append(val[0])
    return cells, np.asarray(probs)


def discrete_laplace_pmf(values, t):
    q = math.exp(-1.0 / t)
    return np.array([(1 - q) / (1 + q) * q ** abs(v) for v in values])


def discrete_gaussian_pmf(values, sigma):
    support = np.arange(-int(40 * sigma) - 5, int(40 * sigma) + 6)
    weights = np.exp(-(support.astype(float) ** 2) / (2 * sigma**2))
    norm = weights.sum()
    return np.array([math.exp(-(v**2) / (2 * sigma**2)) / norm for v in values])


def tally(outcomes, cells):
    index = {c: i for i, c in enumerate(cells)}
    counts = np.zeros(len(cells))
    for o in outcomes:
        counts[index.get(o, index.get("other", -1))] += 1
    return counts


# =========================================================================== one-shot Laplace
def test_oneshot_laplace_scale_hand_value():
    # k = 5, d = 100, eps = 0.1, delta = 1e-6: b = 8 sqrt(5 ln 1e8) / 0.1 = 767.77...
    b = oneshot_laplace_scale(5, 100, 0.1, 1e-6)
    real = 8 * math.sqrt(5 * math.log(1e8)) / 0.1
    assert real <= float(b) <= real * (1 + 1e-12)
    with flint.ctx.workprec(200):
        exact = 8 * (5 * (flint.arb(100) / flint.arb(1e-6)).log()).sqrt() / flint.arb(0.1)
        assert flint.arb(flint.fmpq(b.numerator, b.denominator)) >= exact  # rounded up
    # seed 004's sigma_Lap = 8 sqrt(2k ln(d/delta)) / eps is the standard deviation sqrt(2) b
    sigma_lap = 8 * math.sqrt(2 * 5 * math.log(100 / 1e-6)) / 0.1
    assert math.isclose(math.sqrt(2) * float(b), sigma_lap, rel_tol=1e-12)


def test_oneshot_laplace_map_hand_values():
    m = make_oneshot_laplace_top_k(5, 0.1, 1e-6, input_domain=counts_domain(100), input_metric=LINF)
    b = oneshot_laplace_scale(5, 100, 0.1, 1e-6)
    assert m.output_measure == dc.Approximate(dc.MaxDivergence())
    assert m.map(0) == (0.0, 0.0)
    assert m.map(1) == (0.1, 1e-6)
    eps, delta = m.map(1.5)  # 0.15 < 0.2: the theorem at the counts divided by 1.5
    assert delta == 1e-6 and Fraction(eps) >= Fraction(0.1) * Fraction(1.5) and eps < 0.1500001
    # 0.1 * 2 = 0.2 is outside the theorem: the pure bound of releasing the whole noisy vector
    eps, delta = m.map(2)
    assert delta == 0.0 and Fraction(eps) >= 100 * 2 / b and math.isclose(eps, 200 / float(b))
    assert m.check(1, (0.1, 1e-6)) and not m.check(1, (0.0999, 1e-6))
    # monotone in d_in for eps, never negative
    losses = [m.map(t)[0] for t in (0, 0.5, 1, 1.9, 2, 5)]
    assert losses == sorted(losses) and min(losses) >= 0
    # a small d: the pure bound d d_in / b beats the theorem
    small = make_oneshot_laplace_top_k(
        1, 0.1, 0.01, input_domain=counts_domain(3), input_metric=LINF
    )
    b3 = oneshot_laplace_scale(1, 3, 0.1, 0.01)
    assert small.map(1) == (dc.float_up(3 / b3), 0.0)


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(epsilon=0.2), dc.ParameterError),  # the theorem needs eps < 0.2
        (dict(epsilon=0.5), dc.ParameterError),
        (dict(epsilon=0.0), dc.ParameterError),
        (dict(epsilon=math.nan), dc.ParameterError),
        (dict(delta=0.05), dc.ParameterError),  # and delta < 0.05
        (dict(delta=0.0), dc.ParameterError),
        (dict(delta=-1e-9), dc.ParameterError),
        (dict(k=0), dc.ParameterError),
        (dict(k=11), dc.ParameterError),
        (dict(k=2.0), dc.ParameterError),
        (dict(epsilon=1e-20), dc.ParameterError),  # scale beyond the exact sampler's range
        (dict(input_domain=dc.vector_domain(dc.atom_domain(int))), dc.DomainError),  # no size
        (dict(input_domain=dc.vector_domain(dc.atom_domain(float), size=10)), dc.DomainError),
        (dict(input_metric=dc.RangeDistance()), dc.MetricError),
        (dict(input_metric=dc.L1Distance()), dc.MetricError),
    ],
)
def test_oneshot_laplace_refusals(kwargs, error):
    args = dict(input_domain=counts_domain(10), input_metric=LINF, k=2, epsilon=0.1, delta=1e-6)
    args.update(kwargs)
    with pytest.raises(error):
        make_oneshot_laplace_top_k(**args)


def test_oneshot_laplace_accepts_the_edges_of_its_range():
    m = make_oneshot_laplace_top_k(
        10, 0.1999, 0.0499, input_domain=counts_domain(10), input_metric=MONO
    )
    out = m([0] * 10)
    assert out.tolist() == list(range(10))


def test_floor_laplace_law():
    for b, wrong in ((Fraction(3, 2), None), (Fraction(3, 2), Fraction(3))):
        n = sample_floor_laplace(wrong or b, 20000, InsecureSeededSource(11))
        values = list(range(-12, 12))
        bf = float(b)
        probs = [
            0.5 * (math.exp(-v / bf) - math.exp(-(v + 1) / bf))
            if v >= 0
            else 0.5 * (math.exp((v + 1) / bf) - math.exp(v / bf))
            for v in values
        ]
        observed = [int((n == v).sum()) for v in values]
        observed.append(n.size - sum(observed))
        probs.append(1 - sum(probs))
        assert fits(observed, probs) == (wrong is None)


QSZ_CASES = [("spread", [0, 1, 3], Fraction(3, 2)), ("ties", [0, 0, 1], Fraction(1, 2))]


@pytest.mark.parametrize("name, x, b", QSZ_CASES, ids=[c[0] for c in QSZ_CASES])
def test_oneshot_laplace_joint_law_of_index_and_count(name, x, b):
    """k = 1: the internal (index, floor(y)) has the law of (argmax, floor) of x + Laplace(b)."""
    cells, probs = qsz_joint_law_k1(x, float(b), 20)
    src = InsecureSeededSource(21)
    arr = np.asarray(x, dtype=np.int64)
    outcomes = []
    for _ in range(4000):
        r = _oneshot_laplace_ranking(arr, b, 1, src)
        outcomes.append((int(r.indices[0]), int(r.counts[0])))
    assert_fits(tally(outcomes, cells), probs)


def test_oneshot_laplace_ranking_law_k2():
    x, b = [0, 1, 3], Fraction(3, 2)
    cells, probs = qsz_rank_law_k2(x, float(b))
    assert math.isclose(probs.sum(), 1.0, abs_tol=1e-9)
    src = InsecureSeededSource(22)
    arr = np.asarray(x, dtype=np.int64)
    outcomes = [
        tuple(_oneshot_laplace_ranking(arr, b, 2, src).indices.tolist()) for _ in range(4000)
    ]
    assert_fits(tally(outcomes, cells), probs)


def test_oneshot_laplace_gof_catches_factor_two_scale_bug():
    x, b = [0, 1, 3], Fraction(3, 2)
    cells, probs = qsz_joint_law_k1(x, float(b), 20)
    arr = np.asarray(x, dtype=np.int64)
    for wrong in (2 * b, b / 2):
        src = InsecureSeededSource(23)
        outcomes = []
        for _ in range(4000):
            r = _oneshot_laplace_ranking(arr, wrong, 1, src)
            outcomes.append((int(r.indices[0]), int(r.counts[0])))
        stat, df = chi2_statistic(tally(outcomes, cells), probs)
        assert stat > 10 * chi2_threshold(df), (wrong, stat)


def test_oneshot_laplace_constructor_uses_the_theorem_scale():
    m = make_oneshot_laplace_top_k(
        3,
        0.15,
        1e-5,
        input_domain=counts_domain(6),
        input_metric=LINF,
        source=InsecureSeededSource(4),
    )
    b = oneshot_laplace_scale(3, 6, 0.15, 1e-5)
    x = [5, 1, 9, 9, 0, 2]
    got = m(x)
    ranked = _oneshot_laplace_ranking(np.asarray(x), b, 3, InsecureSeededSource(4))
    assert isinstance(got, np.ndarray) and got.dtype == np.int64
    assert got.tolist() == sorted(ranked.indices.tolist())  # the set of the same draw
    with_counts = make_oneshot_laplace_top_k(
        3,
        0.15,
        1e-5,
        input_domain=counts_domain(6),
        input_metric=LINF,
        count_scale=2,
        source=InsecureSeededSource(4),
    )
    out = with_counts(x)
    assert isinstance(out, NoisyTopK) and out.indices.tolist() == got.tolist()


def test_oneshot_laplace_releases_the_set_sorted_by_index():
    """Issue 15 item 4: no order information. The release is the set, always increasing by
    candidate index, and its law is the ranking law summed over the orders of each set."""
    x, b = [0, 1, 3], Fraction(3, 2)
    cells, probs = qsz_rank_law_k2(x, float(b))
    set_probs: dict[tuple[int, ...], float] = {}
    for cell, p in zip(cells, probs, strict=True):
        key = tuple(sorted(cell))
        set_probs[key] = set_probs.get(key, 0.0) + float(p)
    set_cells = list(set_probs)
    m = make_oneshot_laplace_top_k(2, 0.1, 1e-6, d=3, source=InsecureSeededSource(31))
    src = InsecureSeededSource(31)
    outcomes = []
    for _ in range(4000):
        out = oneshot_laplace_top_k(np.asarray(x, dtype=np.int64), b, 2, src)
        idx = out.tolist()
        assert idx == sorted(idx)
        outcomes.append(tuple(idx))
    assert_fits(tally(outcomes, set_cells), np.asarray([set_probs[c] for c in set_cells]))
    for _ in range(50):  # ranked (2, 1) every time (30 scales apart); released by index
        assert oneshot_laplace_top_k(np.asarray([0, 20, 50]), Fraction(1), 2, src).tolist() == [
            1,
            2,
        ]
    assert m([0, 50, 20]).tolist() in ([0, 1], [0, 2], [1, 2])
    wide = make_oneshot_laplace_top_k(3, 0.1, 1e-6, d=8, source=InsecureSeededSource(32))
    for _ in range(30):
        idx = wide([9, 0, 5, 0, 7, 3, 1, 8]).tolist()
        assert idx == sorted(idx) and len(set(idx)) == 3


def _count_noise_cells(samples, span):
    """Joint (index, z) counts, z clipped into [-span-1, span+1] (two tail cells)."""
    cells = {}
    for i, z in samples:
        z = min(max(z, -span - 1), span + 1)
        cells[(i, z)] = cells.get((i, z), 0) + 1
    return cells


def _joint_probs(t, span, d):
    pmf = discrete_laplace_pmf(range(-span, span + 1), t).tolist()
    tail = (1 - sum(pmf)) / 2
    zs = list(range(-span - 1, span + 2))
    per_z = [tail, *pmf, tail]
    return [(i, z) for i in range(d) for z in zs], [p / d for _ in range(d) for p in per_z]


def test_oneshot_laplace_counts_noise_is_fresh_and_independent_of_the_selection():
    """Issue 15 item 4: on equal counts, (selected index, count - x_index) must have the
    product law uniform x discrete Laplace(t): the count noise does not depend on the index
    nor on the selection noise. The broken variant, releasing floor(y) of the selection's own
    draw (the former behaviour), is the floor of the maximum of 3 Laplace draws and fails."""
    x = np.zeros(3, dtype=np.int64)
    t, span, runs = Fraction(3, 2), 6, 4000
    cells, probs = _joint_probs(float(t), span, 3)
    src = InsecureSeededSource(33)
    samples = []
    for _ in range(runs):
        out = oneshot_laplace_top_k(x, t, 1, src, count_scale=t)
        samples.append((int(out.indices[0]), int(out.counts[0]) - int(x[out.indices[0]])))
    observed = _count_noise_cells(samples, span)
    assert_fits([observed.get(c, 0) for c in cells], probs)
    # broken: the counts from the selection's own noise (scale t, the same law if it were fresh)
    src = InsecureSeededSource(33)
    broken = []
    for _ in range(runs):
        r = _oneshot_laplace_ranking(x, t, 1, src)
        broken.append((int(r.indices[0]), int(r.counts[0])))
    observed = _count_noise_cells(broken, span)
    stat, df = chi2_statistic([observed.get(c, 0) for c in cells], probs)
    assert stat > 10 * chi2_threshold(df), stat


def test_oneshot_laplace_count_map_adds_the_fresh_noise():
    b = oneshot_laplace_scale(5, 100, 0.1, 1e-6)
    m = make_oneshot_laplace_top_k(5, 0.1, 1e-6, d=100, count_scale=50)
    eps, delta = m.map(1)
    assert delta == 1e-6
    exact = Fraction(0.1) + Fraction(5, 50)
    assert Fraction(eps) >= exact and eps == dc.float_up(exact)
    eps, delta = m.map(2)  # outside the theorem: the pure bound plus the counts
    assert delta == 0.0 and eps == dc.float_up(100 * 2 / b + Fraction(10, 50))
    for bad in (0, -1, math.inf, math.nan, 2.0**60, 2.0**-70):
        with pytest.raises(dc.ParameterError, match="count_scale"):
            make_oneshot_laplace_top_k(5, 0.1, 1e-6, d=100, count_scale=bad)


def test_oneshot_laplace_huge_counts_stay_exact():
    x = np.array([2**62 + 5, 2**62, -(2**62), 7], dtype=np.int64)
    r = _oneshot_laplace_ranking(x, Fraction(2), 2, InsecureSeededSource(1))
    assert set(r.indices.tolist()) == {0, 1}
    assert all(abs(int(c) - int(x[i])) < 200 for i, c in zip(r.indices, r.counts, strict=True))


def _g_exact(upper, b, words, prec=600):
    """The fractional part G(V) at the scripted digits of V, in high precision."""
    with flint.ctx.workprec(prec):
        v = flint.arb(0)
        for j, w in enumerate(words):
            v += flint.arb(w) * flint.arb(2) ** (-64 * (j + 1))
        bb = flint.arb(flint.fmpq(b.numerator, b.denominator))
        if upper:
            return -bb * (-v * (-(-1 / bb).expm1())).log1p()
        return bb * (v * (1 / bb).expm1()).log1p()


def test_fractional_parts_sharing_64_digits_are_refined():
    ones = (1 << 64) - 1
    for extra_a, extra_b in ((5, 9), (ones, 0), (1 << 63, (1 << 63) + 1)):
        w = 0x9E3779B97F4A7C15
        src = ScriptedSource.from_words([w, w, extra_a, extra_b, 0, 0])
        a = _FractionalPart(True, Fraction(3, 2), src)
        b = _FractionalPart(True, Fraction(3, 2), src)
        assert _compare(a, b, src) == (-1 if extra_a > extra_b else 1)
        assert a.u.nbits > 64 and b.u.nbits > 64


def test_fractional_parts_of_both_sides_near_tie_match_high_precision():
    rng = np.random.default_rng(5)
    b = Fraction(7, 4)
    for trial in range(15):
        wb = int(rng.integers(1 << 60, 1 << 63, dtype=np.uint64))
        target = _g_exact(False, b, [wb])
        with flint.ctx.workprec(600):  # the upper-side uniform with the same fractional part
            bb = flint.arb(flint.fmpq(b.numerator, b.denominator))
            va = -((-target / bb).expm1()) / (-(-1 / bb).expm1())
            wa = int((va * flint.arb(2) ** 64).floor().unique_fmpz())
        extras = [int(e) for e in rng.integers(0, 1 << 63, size=4, dtype=np.uint64)]
        src = ScriptedSource.from_words([wa, wb, *extras, 0, 0, 0, 0])
        key_a = _FractionalPart(True, b, src)
        key_b = _FractionalPart(False, b, src)
        result = _compare(key_a, key_b, src)
        # digits were handed out alternately, a first: rebuild each key's words
        words_a, words_b, it = [wa], [wb], iter(extras)
        turn = "a"
        while len(words_a) * 64 < key_a.u.nbits or len(words_b) * 64 < key_b.u.nbits:
            if turn == "a" and len(words_a) * 64 < key_a.u.nbits:
                words_a.append(next(it))
            elif len(words_b) * 64 < key_b.u.nbits:
                words_b.append(next(it))
            turn = "b" if turn == "a" else "a"
        ga, gb = _g_exact(True, b, words_a), _g_exact(False, b, words_b)
        assert key_a.u.nbits > 64, trial  # 64 digits could not decide
        assert (ga > gb) or (gb > ga)
        assert result == (-1 if ga > gb else 1), trial


# =========================================================================== Gumbel with counts
@pytest.mark.parametrize(
    "monotonic, noise, measure, expected",
    [
        (True, "laplace", ZCDP, 0.75),  # 3 (1/1)^2 / 8 + 3 (1/2)^2 / 2
        (False, "laplace", ZCDP, 1.875),  # range 2: 3 * 4 / 8 + 0.375
        (True, "gaussian", ZCDP, 0.75),  # 3 * 1 / (2 * 2^2) for the counts
        (True, "laplace", MAXDIV, 4.5),  # 3 * 1 + 3 * 1/2
        (False, "laplace", MAXDIV, 7.5),  # 3 * 2 + 3 * 1/2
    ],
)
def test_gumbel_counts_map_hand_values(monotonic, noise, measure, expected):
    m = make_gumbel_top_k_with_counts(
        counts_domain(10),
        dc.LInfDistance(monotonic=monotonic),
        3,
        scale=1.0,
        count_scale=2.0,
        count_noise=noise,
        output_measure=measure,
    )
    assert m.output_measure == measure
    assert m.map(1) == expected
    assert m.map(0) == 0.0
    assert m.map(2) >= m.map(1)


def test_gumbel_counts_map_rounds_up():
    m = make_gumbel_top_k_with_counts(
        counts_domain(10),
        MONO,
        3,
        scale=0.1,
        count_scale=0.3,
        count_noise="laplace",
        output_measure=ZCDP,
    )
    exact = 3 * Fraction(1) / Fraction(0.1) ** 2 / 8 + 3 * (1 / Fraction(0.3)) ** 2 / 2
    assert Fraction(m.map(1)) >= exact
    assert m.map(1) <= float(exact) * (1 + 1e-14)


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(output_measure=MAXDIV, count_noise="gaussian"), dc.MeasureError),
        (dict(output_measure=dc.Approximate(dc.MaxDivergence())), dc.MeasureError),
        (dict(count_noise="uniform"), dc.ParameterError),
        (dict(scale=0.0), dc.ParameterError),
        (dict(count_scale=-1.0), dc.ParameterError),
        (dict(count_scale=math.inf), dc.ParameterError),
        (dict(count_scale=2.0**60), dc.ParameterError),  # beyond the Laplace sampler
        (dict(k=0), dc.ParameterError),
        (dict(k=6), dc.ParameterError),
        (dict(input_domain=dc.vector_domain(dc.atom_domain(int))), dc.DomainError),
        (dict(input_metric=dc.RangeDistance()), dc.MetricError),
    ],
)
def test_gumbel_counts_refusals(kwargs, error):
    args = dict(input_domain=counts_domain(5), input_metric=MONO, k=2, scale=1.0, count_scale=1.0)
    args.update(kwargs)
    with pytest.raises(error):
        make_gumbel_top_k_with_counts(**args)


def gumbel_counts_samples(x, k, scale, count_scale, noise, n, seed):
    m = make_gumbel_top_k_with_counts(
        counts_domain(len(x)),
        MONO,
        k,
        scale=scale,
        count_scale=count_scale,
        count_noise=noise,
        source=InsecureSeededSource(seed),
    )
    rankings, noise_values = [], []
    for _ in range(n):
        r = m(x)
        rankings.append(tuple(r.indices.tolist()))
        noise_values.extend((r.counts - np.asarray(x)[r.indices]).tolist())
    return rankings, noise_values


def test_gumbel_counts_indices_are_plackett_luce_and_noise_is_discrete_laplace():
    x = [0, 1, 2, 3]
    rankings, noise = gumbel_counts_samples(x, 2, 1.0, 1.5, "laplace", 3000, seed=31)
    outcomes, probs = plackett_luce(x, 1.0, 2)
    assert_fits(tally(rankings, outcomes), probs)
    values = list(range(-15, 16))
    pmf = discrete_laplace_pmf(values, 1.5)
    observed = tally(noise, [*values, "other"])
    assert_fits(observed, np.append(pmf, 1 - pmf.sum()))


def test_gumbel_counts_gaussian_noise_law():
    _, noise = gumbel_counts_samples([4, 0, 2], 2, 1.0, 2.5, "gaussian", 2000, seed=32)
    values = list(range(-15, 16))
    pmf = discrete_gaussian_pmf(values, 2.5)
    assert_fits(tally(noise, [*values, "other"]), np.append(pmf, 1 - pmf.sum()))


def test_gumbel_counts_gof_catches_factor_two_bugs():
    x = [0, 1, 2, 3]
    outcomes, probs = plackett_luce(x, 1.0, 2)
    values = list(range(-15, 16))
    pmf = discrete_laplace_pmf(values, 1.5)
    for factor in (2.0, 0.5):
        rankings, noise = gumbel_counts_samples(x, 2, factor, 1.5 * factor, "laplace", 3000, 33)
        stat, df = chi2_statistic(tally(rankings, outcomes), probs)
        assert stat > chi2_threshold(df), ("indices", factor, stat)
        stat, df = chi2_statistic(tally(noise, [*values, "other"]), np.append(pmf, 1 - pmf.sum()))
        assert stat > chi2_threshold(df), ("counts", factor, stat)


# =========================================================================== seed 004's comparison
@pytest.mark.parametrize(
    "k, d, epsilon, delta",
    [(10, 1000, 0.1, 1e-6), (1, 100, 0.1, 1e-6), (10, 10**4, 0.19, 0.01), (100, 10**5, 0.1, 1e-8)],
)
def test_seed_004_gumbel_with_counts_adds_less_noise_than_oneshot_laplace(k, d, epsilon, delta):
    """At the same (eps, delta), inside QSZ21's range: sigma_Gumb' <= sigma_Lap / 4 and
    sigma_Lap' <= sigma_Lap / 2 (seed 004), with the noise of the actual measurements."""
    qsz = make_oneshot_laplace_top_k(
        k, epsilon, delta, input_domain=counts_domain(d), input_metric=MONO
    )
    assert qsz.check(1, (epsilon, delta))
    sigma_lap = math.sqrt(2) * float(oneshot_laplace_scale(k, d, epsilon, delta))

    rho = approx_dp_to_zcdp_budget(epsilon, delta)  # spend eps'^2 / 4 = rho
    eps_prime = 2 * math.sqrt(rho)
    assert eps_prime >= epsilon / (2 * math.sqrt(math.log(1 / delta)))  # seed 004's bound
    scale = math.sqrt(k) / eps_prime * (1 + 1e-9)  # Gumbel sqrt(k)/eps' (rounded up)
    count_scale = 2 * math.sqrt(k) / eps_prime * (1 + 1e-9)  # Laplace 2 sqrt(k)/eps'
    gumbel = make_gumbel_top_k_with_counts(
        counts_domain(d), MONO, k, scale=scale, count_scale=count_scale
    )
    assert gumbel.map(1) <= rho
    assert zcdp_to_approx_dp(gumbel.map(1), delta) <= epsilon

    sigma_gumb = math.pi * scale / math.sqrt(6)  # Gumbel standard deviation
    sigma_lap_prime = math.sqrt(2) * count_scale  # Laplace standard deviation
    assert sigma_gumb <= sigma_lap / 4
    assert sigma_lap_prime <= sigma_lap / 2


# =========================================================================== limited domain
def test_limited_domain_threshold_and_epsilon_hand_values():
    assert math.isclose(limited_domain_threshold(1.0, 1e-6, 5, None), 1 + math.log(5e6))
    assert limited_domain_threshold(1.0, 1e-6, 5, None) >= 1 + math.log(5e6)
    assert math.isclose(limited_domain_threshold(0.5, 1e-3, 50, 2), 1 + math.log(2e3) / 0.5)
    eps, k, dp = 0.1, 10, 1e-6
    kov = k * eps * math.expm1(eps) / (math.exp(eps) + 1) + eps * math.sqrt(
        2 * k * math.log(1 / dp)
    )
    br = k * eps**2 / 2 + eps * math.sqrt(k * math.log(1 / dp) / 2)
    value = limited_domain_epsilon(eps, k, dp)
    assert math.isclose(value, min(k * eps, kov, br), rel_tol=1e-12)  # 0.88113 (the BR term)
    with flint.ctx.workprec(200):
        e = flint.arb(eps)
        exact_br = k * e * e / 2 + e * (k * (1 / flint.arb(dp)).log() / 2).sqrt()
        assert flint.arb(value) >= exact_br  # rounded up from the real value
    # delta' = 0: k eps, rounded up (the float 0.1 is slightly above 1/10)
    assert limited_domain_epsilon(eps, k, 0) == dc.float_up(10 * Fraction(0.1)) > 1.0
    assert limited_domain_epsilon(2.0, 3, 1e-6) == 6.0  # large eps: k eps is the least


def test_limited_domain_map():
    m = make_limited_domain_top_k(10, 20, 0.1, delta=1e-6, delta_prime=1e-6, accounting="dr19")
    assert m.output_measure == dc.Approximate(dc.MaxDivergence())
    assert m.input_metric == MONO
    eps, delta = m.map(1)
    assert math.isclose(eps, 0.8811290681345552, rel_tol=1e-12) and delta == 2e-6
    assert m.map(0) == (0.0, 0.0)
    with pytest.raises(dc.PrivacyMapError):
        m.map(2)
    assert make_limited_domain_top_k(3, 5, 0.5, delta=1e-5).map(1) == (1.5, 1e-5)


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(k=0), dc.ParameterError),
        (dict(k_bar=2), dc.ParameterError),  # k_bar < k
        (dict(epsilon=0.0), dc.ParameterError),
        (dict(delta=0.0), dc.ParameterError),
        (dict(delta=1.0), dc.ParameterError),
        (dict(delta_prime=-0.1), dc.ParameterError),
        (dict(max_contributions=0), dc.ParameterError),
        (dict(epsilon=1e-320), dc.ParameterError),  # the threshold overflows
        (dict(input_metric=LINF), dc.MetricError),  # not monotonic
        (dict(input_metric=dc.SymmetricDistance()), dc.MetricError),
    ],
)
def test_limited_domain_refusals(kwargs, error):
    args = dict(k=3, k_bar=5, epsilon=1.0, delta=1e-6)
    args.update(kwargs)
    with pytest.raises(error):
        make_limited_domain_top_k(**args)


def test_limited_domain_input_checks_and_empty_data():
    m = make_limited_domain_top_k(2, 4, 1.0, delta=1e-3, source=InsecureSeededSource(0))
    assert m({}) == []  # no items: nothing to release, no error
    assert m({"a": 0, "b": 0}) == []
    for bad in ([1, 2], {"a": 1.5}, {"a": -1}, {"a": True}, {"a": 2**54}):
        with pytest.raises(dc.DomainError):
            m(bad)


def test_limited_domain_stops_early_on_flat_counts():
    m = make_limited_domain_top_k(5, 10, 1.0, delta=1e-6, source=InsecureSeededSource(3))
    flat = {f"item{i}": 10 for i in range(100)}
    lengths = [len(m(flat)) for _ in range(200)]
    assert max(lengths) < 5 and lengths.count(0) > 190  # the threshold wins


def test_limited_domain_never_returns_an_item_outside_the_true_top_k_bar():
    m = make_limited_domain_top_k(4, 6, 0.3, delta=0.2, source=InsecureSeededSource(4))
    hist = {f"i{j}": 100 - j for j in range(40)}  # near-flat: many items close to the top
    hist.update({"tie_a": 94, "tie_b": 94})  # ties with the 6th count
    top = {item for item, _ in sorted(hist.items(), key=lambda p: (-p[1], p[0]))[:6]}
    seen = set()
    for _ in range(300):
        out = m(hist)
        assert len(out) <= 4 and len(set(out)) == len(out)
        assert set(out) <= top
        seen.update(out)
    assert len(seen) >= 4  # it does release items


def test_limited_domain_law_k2():
    """k = 2, k_bar = 2: Plackett-Luce over the top 2 and bottom, cut at bottom."""
    eps, delta = 1.0, 0.5
    hist = {"a": 10, "b": 9, "c": 8, "d": 3}
    bottom = limited_domain_threshold(eps, delta, 2, None)  # h_bot - h_(3) = 1 + ln(4)
    shifts = [2.0, 1.0, bottom]  # relative to h_(3) = 8
    outcomes, probs = plackett_luce(shifts, 1 / eps, 2)
    names = ["a", "b", None]
    law: dict[tuple[str, ...], float] = {}
    for outcome, p in zip(outcomes, probs, strict=True):
        released = []
        for i in outcome:
            if names[i] is None:
                break
            released.append(names[i])
        law[tuple(released)] = law.get(tuple(released), 0.0) + p
    cells = sorted(law)
    expected = np.array([law[c] for c in cells])

    def sample(measurement, seed):
        return [tuple(measurement(hist)) for _ in range(3000)]

    good = make_limited_domain_top_k(2, 2, eps, delta=delta, source=InsecureSeededSource(41))
    assert_fits(tally(sample(good, 41), cells), expected)
    # a factor-2 broken variant: Gumbel scale 2/eps (its threshold follows its own epsilon)
    broken = make_limited_domain_top_k(2, 2, eps / 2, delta=delta, source=InsecureSeededSource(42))
    stat, df = chi2_statistic(tally(sample(broken, 42), cells), expected)
    assert stat > chi2_threshold(df)


def test_limited_domain_phantoms_when_few_items():
    """Fewer than k_bar items: phantom zero counts fill the top k_bar; output stops at one."""
    m = make_limited_domain_top_k(3, 5, 1.0, delta=0.5, source=InsecureSeededSource(6))
    for _ in range(100):
        out = m({"only": 50})
        assert out in ([], ["only"])
    assert ["only"] in [m({"only": 50}) for _ in range(20)]


# =========================================================================== data independence
@st.composite
def neighbouring_counts(draw, d, monotonic=False):
    x = draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=d, max_size=d))
    step = st.integers(0, 1) if monotonic else st.integers(-1, 1)
    moves = draw(st.lists(step, min_size=d, max_size=d))
    y = [min(max(a + s, -(2**63)), 2**63 - 1) for a, s in zip(x, moves, strict=True)]
    return x, y


@settings(max_examples=25, deadline=None)
@given(neighbouring_counts(5))
def test_count_vector_mechanisms_never_raise_on_neighbours(pair):
    qsz = make_oneshot_laplace_top_k(2, 0.1, 1e-6, input_domain=counts_domain(5), input_metric=LINF)
    gumbel = make_gumbel_top_k_with_counts(
        counts_domain(5), LINF, 2, scale=1.0, count_scale=1.0, count_noise="gaussian"
    )
    for x in pair:
        assert len(qsz(x)) == 2
        assert len(gumbel(np.asarray(x, dtype=np.int64)).indices) == 2


@st.composite
def neighbouring_histograms(draw):
    items = st.one_of(st.text(max_size=3), st.integers(-5, 5))
    base = draw(st.dictionaries(items, st.integers(0, 2**53 - 1), max_size=8))
    user = draw(st.lists(items, max_size=3, unique=True))
    plus = dict(base)
    for item in user:
        plus[item] = min(plus.get(item, 0) + 1, 2**53)
    return base, plus


@settings(max_examples=40, deadline=None)
@given(neighbouring_histograms())
def test_limited_domain_never_raises_on_neighbours(pair):
    m = make_limited_domain_top_k(2, 3, 1.0, delta=1e-4, max_contributions=3)
    for hist in pair:
        out = m(hist)
        assert len(out) <= 2 and all(item in hist for item in out)


def test_oneshot_laplace_contract_signature():
    """Issue 4's contract: make_oneshot_laplace_top_k(k, epsilon, delta, ...)."""
    by_d = make_oneshot_laplace_top_k(2, 0.1, 1e-6, d=10)
    by_domain = make_oneshot_laplace_top_k(
        2, 0.1, 1e-6, input_domain=counts_domain(10), input_metric=LINF
    )
    assert by_d.map(1) == by_domain.map(1)
    assert by_d.input_domain == counts_domain(10)
    with pytest.raises(dc.ParameterError, match="input_domain"):
        make_oneshot_laplace_top_k(2, 0.1, 1e-6)
    with pytest.raises(dc.ParameterError, match="not both"):
        make_oneshot_laplace_top_k(2, 0.1, 1e-6, input_domain=counts_domain(10), d=10)


def _python_sums(counts, noise):
    return [int(c) + int(z) for c, z in zip(counts.tolist(), noise.tolist(), strict=True)]


@pytest.mark.parametrize(
    ("counts", "noise", "exact"),
    [
        ([0, 5, -3, 2**62], [1, -7, 3, 2**62 - 1], True),
        ([2**63 - 1, 0], [0, -(2**63 - 1)], True),
        ([2**63 - 1, 0], [1, 0], False),  # 2^63 wraps to -2^63 in int64
        ([-(2**63 - 1), 0], [-1, 0], False),  # -2^63: in int64, but outside +-(2^63 - 1)
        ([-(2**63 - 1), 0], [-2, 0], False),  # wraps to 2^63 - 1
        ([2**62, 0], [2**62, 3], False),
    ],
)
def test_noisy_values_are_the_exact_sums(counts, noise, exact):
    """int64 when every sum lies in +-(2^63 - 1), else exact Python ints: the int64 sum with
    its overflow check gives the same values and dtype as summing Python ints."""
    from dpselect.mechanisms.noisy_counts import noisy_values

    c, z = np.array(counts, dtype=np.int64), np.array(noise, dtype=np.int64)
    out = noisy_values(c, z)
    assert out.tolist() == _python_sums(c, z)
    assert out.dtype == (np.int64 if exact else object)


def test_noisy_values_take_object_noise_exactly():
    from dpselect.mechanisms.noisy_counts import noisy_values

    c = np.array([1, 2], dtype=np.int64)
    z = np.array([2**70, -1], dtype=object)
    out = noisy_values(c, z)
    assert out.dtype == object and out.tolist() == [2**70 + 1, 1]
