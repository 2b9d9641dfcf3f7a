"""The generalized exponential mechanism (Raskhodnikova and Smith 2016), issue 16: its map
against brute force on tiny score families (every corner neighbour), with a broken
normalisation failing; its law at a false-failure rate of 1e-6 with a factor-2 scale failing;
its utility statement by simulation; maps and refusals."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

import dpselect.core as dc
from dpselect.mechanisms.generalized_exponential import (
    GRID_BITS,
    gem_shifts,
    gem_threshold,
    make_generalized_exponential_mechanism,
)
from dpselect.sampling.source import InsecureSeededSource
from tests.gof import assert_fits, chi2_statistic, chi2_threshold

GRID = 1 << GRID_BITS


def law(shifts, scale):
    """Exact-enough output probabilities: softmax of shift / (scale 2^40) (log-sum-exp)."""
    z = np.asarray([int(s) for s in shifts], dtype=float) / (float(scale) * GRID)
    z -= z.max()
    w = np.exp(z)
    return w / w.sum()


def worst_log_ratio(q, deltas, t, scale, normaliser=None):
    """max over the 3^k corner neighbours q + e Delta of max_i |log P_i / P'_i|."""
    shift = gem_shifts if normaliser is None else normaliser
    p = law(shift(q, deltas, t), scale)
    worst = 0.0
    for e in itertools.product((-1, 0, 1), repeat=len(q)):
        q2 = [qi + ei * di for qi, ei, di in zip(q, e, deltas, strict=True)]
        p2 = law(shift(q2, deltas, t), scale)
        worst = max(worst, float(np.max(np.abs(np.log(p) - np.log(p2)))))
    return worst


def broken_shifts(scores, deltas, t, sign=1):
    """A broken normalisation: (Delta_i + Delta_j) / 2, i.e. sensitivity 2."""
    a = [sign * Fraction(q) - t * d for q, d in zip(scores, deltas, strict=True)]
    return np.asarray(
        [
            math.floor(
                min((ai - aj) / ((di + dj) / 2) for aj, dj in zip(a, deltas, strict=True)) * GRID
            )
            for ai, di in zip(a, deltas, strict=True)
        ],
        dtype=np.int64,
    )


FAMILIES = [
    [Fraction(1), Fraction(2), Fraction(5)],
    [Fraction(1), Fraction(1), Fraction(1)],
    [Fraction(1, 2), Fraction(3), Fraction(3), Fraction(20)],
]


@pytest.mark.parametrize("deltas", FAMILIES, ids=["1-2-5", "1-1-1", "half-3-3-20"])
def test_gem_map_against_brute_force(deltas):
    eps = Fraction(1)
    m = make_generalized_exponential_mechanism(
        list(range(len(deltas))), lambda x, c: x[c], deltas, epsilon=eps, beta=0.1
    )
    bound = m.map(1)
    assert bound <= 1.0 and bound > 1 - 1e-9
    t = gem_threshold(len(deltas), 0.1, eps)
    scale = Fraction(dc.float_up(2 * (1 + Fraction(1, GRID)) / eps))
    rng = np.random.default_rng(0)  # test inputs only
    seen = 0.0
    for _ in range(12):
        q = [Fraction(int(v)) for v in rng.integers(-30, 30, size=len(deltas))]
        worst = worst_log_ratio(q, deltas, t, scale)
        assert worst <= bound + 1e-9, (q, worst)
        seen = max(seen, worst)
    assert seen > 0.3 * bound  # the families do exercise the bound
    # the normalised scores move by at most 1 (in grid units 2^40 + 1)
    q = [Fraction(3), Fraction(-4), Fraction(10), Fraction(0)][: len(deltas)]
    base = gem_shifts(q, deltas, t)
    for e in itertools.product((-1, 0, 1), repeat=len(q)):
        moved = gem_shifts([a + b * d for a, b, d in zip(q, e, deltas, strict=True)], deltas, t)
        assert int(np.max(np.abs(moved - base))) <= GRID + 1


def test_gem_broken_normalisation_fails_brute_force():
    deltas, eps = FAMILIES[0], Fraction(1)
    t = gem_threshold(3, 0.1, eps)
    scale = Fraction(dc.float_up(2 * (1 + Fraction(1, GRID)) / eps))
    rng = np.random.default_rng(0)
    worst = max(
        worst_log_ratio(
            [Fraction(int(v)) for v in rng.integers(-30, 30, size=3)],
            deltas,
            t,
            scale,
            broken_shifts,
        )
        for _ in range(12)
    )
    assert worst > 1.05  # above eps = 1: the brute force catches a factor-2 normaliser


def test_gem_law_and_factor_two_scale():
    deltas = [Fraction(1), Fraction(2), Fraction(5)]
    data = [10, 12, 20]
    eps = Fraction(1, 2)
    m = make_generalized_exponential_mechanism(
        [0, 1, 2], lambda x, c: x[c], deltas, epsilon=eps, source=InsecureSeededSource(3)
    )
    t = gem_threshold(3, 0.05, eps)
    scale = Fraction(dc.float_up(2 * (1 + Fraction(1, GRID)) / eps))
    probs = law(gem_shifts(data, deltas, t), scale)
    counts = Counter(m(data) for _ in range(4000))
    assert_fits([counts[i] for i in range(3)], probs)
    wrong = law(gem_shifts(data, deltas, t), 2 * scale)
    stat, df = chi2_statistic([counts[i] for i in range(3)], wrong)
    assert stat > chi2_threshold(df), stat


def test_gem_utility_statement():
    """W.p. >= 1 - beta: q_out >= max_j (q_j - 2 t Delta_j). A candidate with a huge
    sensitivity (100) and the top raw score must not crowd out a precise runner-up."""
    deltas = [Fraction(100), Fraction(1), Fraction(1)]
    data = [60, 50, 0]
    eps, beta = Fraction(1), 0.1
    m = make_generalized_exponential_mechanism(
        [0, 1, 2], lambda x, c: x[c], deltas, epsilon=eps, beta=beta, source=InsecureSeededSource(5)
    )
    t = float(gem_threshold(3, beta, eps))
    target = max(q - 2 * t * float(d) for q, d in zip(data, deltas, strict=True))
    good = sum(data[m(data)] >= target for _ in range(500))
    assert good >= 500 * (1 - beta) - 4 * math.sqrt(500 * beta)
    # minimising flips the roles
    m_min = make_generalized_exponential_mechanism(
        [0, 1, 2],
        lambda x, c: -x[c],
        deltas,
        epsilon=eps,
        beta=beta,
        optimize="min",
        source=InsecureSeededSource(6),
    )
    assert Counter(m_min(data) for _ in range(200)).most_common(1)[0][0] == 1


def test_gem_maps_and_refusals():
    m = make_generalized_exponential_mechanism(["a", "b"], lambda x, c: 0, [1, 2], epsilon=0.5)
    assert m.map(0) == 0.0 and m.map(1) <= 0.5 and m.map(2) <= 1.0 + 1e-9
    z = make_generalized_exponential_mechanism(
        ["a", "b"],
        lambda x, c: 0,
        [1, 2],
        epsilon=0.5,
        output_measure=dc.ZeroConcentratedDivergence(),
    )
    assert z.map(1) <= 0.5**2 / 8 * (1 + 1e-9)
    for kwargs, match in [
        (dict(sensitivities=[1]), "one entry per candidate"),
        (dict(sensitivities=[1, 0]), "sensitivities"),
        (dict(sensitivities=[1, math.inf]), "sensitivities"),
        (dict(epsilon=0), "epsilon"),
        (dict(beta=1.0), "beta"),
        (dict(candidates=[]), "empty"),
        (dict(score=3), "callable"),
        (dict(optimize="best"), "optimize"),
    ]:
        args = dict(candidates=["a", "b"], score=lambda x, c: 0, sensitivities=[1, 2], epsilon=1)
        args.update(kwargs)
        with pytest.raises(dc.ParameterError, match=match):
            make_generalized_exponential_mechanism(**args)


def test_gem_odd_scores_never_raise():
    def score(x, c):
        if c == "raise":
            raise RuntimeError("data-dependent failure")
        return {"nan": math.nan, "text": "abc", "ok": 1.0}[c]

    m = make_generalized_exponential_mechanism(
        ["raise", "nan", "text", "ok"],
        score,
        [1, 1, 1, 1],
        epsilon=1.0,
        source=InsecureSeededSource(1),
    )
    assert {m(None) for _ in range(20)} == {"ok"}
