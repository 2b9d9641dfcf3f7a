"""The joint exponential mechanism for top-k (Gillenwater et al. 2022): counting, law, map.

- the level counts ``m(E)`` and the first-position weights against brute-force enumeration of
  every ordered sequence, on many small vectors with ties and gaps;
- the law: draws from a seeded source against the enumerated probabilities by a chi-square
  test at ``ALPHA = 1e-6`` (tests/gof.py), for the paths with and without the window and with
  a window so narrow that the fallback to every level runs often; and the same test rejecting
  two broken variants (the scale halved; the first position drawn uniformly);
- the fast law (Wu and Zhang's pruning, the pruned mass as an interval): its bounds hold the
  exact cumulative weights and decide all but a few draws; its draws fit the enumerated law
  when it decides, when every draw is sent to the exact path, and on instances where pruning
  triggers; a fast law that drops the pruned mass is rejected;
- the privacy map (rounded up) and, on small instances, that every sequence's exact
  probability moves by at most ``exp(epsilon)`` between neighbouring count vectors;
- the parameter errors and the edge cases (``k = d``, ``d = 1``, all counts equal).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from flint import arb, ctx, fmpq

from dpselect.core import (
    LInfDistance,
    MaxDivergence,
    RangeDistance,
    ZeroConcentratedDivergence,
    atom_domain,
    vector_domain,
)
from dpselect.core.arithmetic import float_up
from dpselect.core.errors import DomainError, MeasureError, MetricError, ParameterError
from dpselect.mechanisms import joint_top_k as jt
from dpselect.mechanisms import joint_top_k_fast as jt_fast
from dpselect.mechanisms import joint_top_k_levels as jt_levels
from dpselect.mechanisms import joint_top_k_profile as jt_profile
from dpselect.mechanisms import joint_top_k_sequence as jt_sequence
from dpselect.mechanisms import make_joint_top_k
from dpselect.sampling import InsecureSeededSource
from dpselect.sampling.uniform import LazyUniform
from tests.gof import assert_fits, chi2_statistic, chi2_threshold

INTS = vector_domain(atom_domain(int))
MONO = LInfDistance(monotonic=True)


def errors_of(counts, k):
    """Every ordered sequence of ``k`` distinct indices with its error ``E(s)``."""
    top = sorted(counts, reverse=True)
    return {
        s: max(top[i] - counts[j] for i, j in enumerate(s))
        for s in itertools.permutations(range(len(counts)), k)
    }


def law(counts, k, scale):
    """The exact probabilities (floats) of every sequence, from enumeration."""
    errors = errors_of(counts, k)
    weights = {s: math.exp(-float(Fraction(e) / Fraction(scale))) for s, e in errors.items()}
    z = sum(weights.values())
    return {s: w / z for s, w in weights.items()}


def level_histogram(counts, k):
    out: dict[int, int] = {}
    for e in errors_of(counts, k).values():
        out[e] = out.get(e, 0) + 1
    return out


# ------------------------------------------------------------------------------ counting
def _random_vectors(n, seed=0):
    rng = np.random.default_rng(seed)
    cases = [([3, 3, 3, 3], 2), ([7, 7, 7], 3), ([5], 1), ([4, 1, 4, 0, 9, 2], 6)]
    for _ in range(n):
        d = int(rng.integers(1, 7))
        k = int(rng.integers(1, min(d, 4) + 1))
        step = int(rng.integers(1, 4))
        counts = (rng.integers(0, 5, size=d) * step + int(rng.integers(-3, 4))).tolist()
        cases.append((counts, k))
    return cases


@pytest.mark.parametrize(("counts", "k"), _random_vectors(150))
def test_level_counts_match_enumeration(counts, k):
    values = jt_profile._normalised(np.asarray(counts, dtype=np.int64))
    profile = jt_profile._profile(values, k, None)
    levels = dict(profile.level_counts(0, profile.max_level))
    assert levels == level_histogram(counts, k)
    assert profile.count(profile.max_level) == math.perm(len(counts), k)
    for level, m in levels.items():
        n_lt, n_le = jt_sequence._position_sets(profile, level)
        weights = jt._first_position_weights(n_lt, n_le)
        assert sum(weights) == m
        assert all(w >= 0 for w in weights)


@pytest.mark.parametrize(("k", "scale"), [(4, Fraction(3, 2)), (10, Fraction(20)), (3, 0.25)])
def test_window_levels_are_the_exact_ones_and_the_tails_bound_the_rest(k, scale):
    rng = np.random.default_rng(5)
    counts = (rng.zipf(1.6, size=2000) * 3).astype(np.int64)
    scale = Fraction(scale)
    values = jt_profile._normalised(counts)
    window = jt._Prepared(values, k, scale, small=0, fast=False).window
    full = jt_profile._profile(values, k, None)
    every = dict(full.level_counts(0, full.max_level))
    for level, m in window.levels:
        assert every[level] == m
    inside = {level for level, _ in window.levels}
    lo, hi = min(inside), max(inside)
    below = sum(m for level, m in every.items() if level < lo)
    assert below <= window.lower_tail
    # every sequence above the window is counted in a chunk whose level is at most its own
    for count_level in window.upper:
        assert count_level[1] > hi
    above = sorted((level, m) for level, m in every.items() if level > hi)
    chunks = sorted(window.upper, key=lambda cl: cl[1])
    assert sum(m for _, m in above) == sum(c for c, _ in chunks)
    with ctx.workprec(128):
        exact_above = sum((jt_levels._exp_ball(e, scale) * m for e, m in above), arb(0))
        bound = sum((jt_levels._exp_ball(level, scale) * c for c, level in chunks), arb(0))
        assert exact_above <= bound
        _, z = window.weights(scale)
        tails = arb(window.lower_tail) + bound
        assert tails < z * arb(2) ** -70  # the left-out mass is negligible


# ------------------------------------------------------------------------------ the law
LAW_CASES = [
    # (counts, k, scale): a tie and a gap in each
    ([5, 3, 3, 0], 2, Fraction(1)),
    ([4, 2, 2, 7, 0], 3, Fraction(3, 2)),
]


def _draw_counts(prepared, n, seed):
    source = InsecureSeededSource(seed)
    tally: dict[tuple[int, ...], int] = {}
    for _ in range(n):
        s = tuple(int(i) for i in prepared.draw(source))
        tally[s] = tally.get(s, 0) + 1
    return tally


def _chi2(counts, k, scale, tally):
    probs = law(counts, k, scale)
    assert set(tally) <= set(probs)
    keys = sorted(probs)
    return chi2_statistic([tally.get(s, 0) for s in keys], [probs[s] for s in keys])


@pytest.mark.parametrize(("counts", "k", "scale"), LAW_CASES)
def test_the_law_is_the_papers(counts, k, scale):
    prepared = jt._Prepared(jt_profile._normalised(np.asarray(counts)), k, scale)
    tally = _draw_counts(prepared, 20_000, seed=11)
    probs = law(counts, k, scale)
    keys = sorted(probs)
    assert_fits([tally.get(s, 0) for s in keys], [probs[s] for s in keys])


@pytest.mark.parametrize("bits", [80, 1])
def test_the_law_with_a_window_and_its_fallback(bits):
    """``small=0`` forces the window on a small input; 1 bit leaves levels out below and
    above it, so the fallback to every level (same U, same order) runs on many draws."""
    counts, k, scale = [6, 3, 3, 1, 0], 3, Fraction(2)
    prepared = jt._Prepared(
        jt_profile._normalised(np.asarray(counts)), k, scale, bits=bits, small=0, fast=False
    )
    if bits == 1:
        assert prepared.window.lower_tail > 0 and prepared.window.upper
    tally = _draw_counts(prepared, 20_000, seed=12 + bits)
    if bits == 1:
        assert prepared.full is not None  # the fallback ran
    stat, df = _chi2(counts, k, scale, tally)
    assert stat <= chi2_threshold(df), (stat, df)


@pytest.mark.parametrize(("k", "scale"), [(4, Fraction(3, 2)), (10, Fraction(20)), (3, 0.25)])
def test_the_fast_bounds_hold_the_exact_cumulative_weights(k, scale):
    """The float law's bounds (Wu and Zhang's pruning, kept as intervals) contain the exact
    ``C(b_j)`` and ``Z`` computed from the integer level counts with ``arb`` balls."""
    rng = np.random.default_rng(5)
    counts = (rng.zipf(1.6, size=2000) * 3).astype(np.int64)
    scale = Fraction(scale)
    values = jt_profile._normalised(counts)
    law = jt._Prepared(values, k, scale, small=0).law
    assert law is not None
    full = jt_profile._profile(values, k, None)
    every = sorted(full.level_counts(0, full.max_level))
    with ctx.workprec(256):
        shift = arb(law.log_scale).exp()
        weights = [(e, jt_levels._exp_ball(e, scale) * m) for e, m in every]
        z = sum((w for _, w in weights), arb(0)) / shift
        assert law.z_low <= z.lower() and z.upper() <= law.z_high
        for level, low, high in zip(law.levels.tolist(), law.low, law.high, strict=True):
            c = sum((w for e, w in weights if e <= level), arb(0)) / shift
            assert low <= c.lower() and c.upper() <= high, level
        assert (law.high - law.low <= 1e-6 * law.z_high).all()  # narrow enough to decide
    source = InsecureSeededSource(7)
    undecided = sum(law.level(LazyUniform.sample(source)) is None for _ in range(2_000))
    assert undecided <= 20  # the exact path is the exception (expected well below 1%)


#: Pruning triggers (``bits=0``): the candidates at 2 (or 1) are below the floor, outside the
#: profile and the window, a few percent of the mass; the draws landing there go to the exact
#: path (every level, same ``U``, same order).
PRUNED_CASES = [
    ([10, 9, 9, 9] + [2] * 200, 1, Fraction(1)),
    ([11, 11, 9] + [1] * 30, 2, Fraction(1)),
]


def _pruned(counts, k, scale, **kwargs):
    prepared = jt._Prepared(
        jt_profile._normalised(np.asarray(counts)), k, scale, bits=0, small=0, **kwargs
    )
    assert not prepared.profile.complete  # the low candidates were pruned
    assert prepared.law is not None and prepared.law.z_high > prepared.law.z_low
    return prepared


@pytest.mark.parametrize(("counts", "k", "scale"), PRUNED_CASES)
def test_the_law_through_the_fast_path_with_pruning(counts, k, scale):
    prepared = _pruned(counts, k, scale)
    tally = _draw_counts(prepared, 20_000, seed=31 + k)
    assert prepared.ascending is not None  # some draws fell where the pruned mass matters
    assert any(counts[i] <= 2 for s in tally for i in s)  # and released pruned candidates
    stat, df = _chi2(counts, k, scale, tally)
    assert stat <= chi2_threshold(df), (stat, df)


@pytest.mark.parametrize(("counts", "k", "scale"), LAW_CASES)
def test_the_law_through_the_fast_path_and_through_its_exact_fallback(counts, k, scale):
    """``small=0``: the float law decides (almost) every draw; ``slack=1e300``: it never
    decides and every draw takes the exact path."""
    for slack in (1.0, 1e300):
        prepared = jt._Prepared(
            jt_profile._normalised(np.asarray(counts)), k, scale, small=0, slack=slack
        )
        tally = _draw_counts(prepared, 20_000, seed=41)
        assert (prepared.ascending is not None) == (slack > 1)
        stat, df = _chi2(counts, k, scale, tally)
        assert stat <= chi2_threshold(df), (stat, df)


def test_dropping_the_pruned_mass_is_rejected(monkeypatch):
    """Power: a fast law that forgets the pruned mass (no interval for it, so it never goes to
    the exact path) fails the test on the first pruned case."""

    def dropped(*args, **kwargs):
        law = original(*args, **kwargs)
        return jt_fast._FastLaw(
            law.levels, law.low, law.high, 0.0, law.z_low, float(law.high[-1]), law.log_scale
        )

    original = jt._fast_law
    monkeypatch.setattr(jt, "_fast_law", dropped)
    counts, k, scale = PRUNED_CASES[0]
    prepared = jt._Prepared(jt_profile._normalised(np.asarray(counts)), k, scale, bits=0, small=0)
    stat, df = _chi2(counts, k, scale, _draw_counts(prepared, 20_000, seed=32))
    assert stat > chi2_threshold(df), (stat, df)


def test_the_law_through_the_measurement():
    counts, k, scale = [5, 3, 3, 0], 2, Fraction(1)
    m = make_joint_top_k(
        INTS, MONO, MaxDivergence(), k=k, scale=scale, source=InsecureSeededSource(3)
    )
    tally: dict[tuple[int, ...], int] = {}
    for _ in range(4_000):
        s = tuple(int(i) for i in m(counts))
        tally[s] = tally.get(s, 0) + 1
    stat, df = _chi2(counts, k, scale, tally)
    assert stat <= chi2_threshold(df), (stat, df)


def test_a_broken_scale_is_rejected():
    """Power: draws at half the scale fail the test against the stated law."""
    counts, k, scale = [4, 2, 2, 7, 0], 3, Fraction(3, 2)
    prepared = jt._Prepared(jt_profile._normalised(np.asarray(counts)), k, scale / 2)
    stat, df = _chi2(counts, k, scale, _draw_counts(prepared, 20_000, seed=21))
    assert stat > chi2_threshold(df), (stat, df)


def test_uniform_first_position_weights_are_rejected(monkeypatch):
    """Power: the first position of error ``E`` drawn uniformly (among the possible ones)
    instead of by its count of sequences fails the test."""

    def uniform(n_lt, n_le):
        return [1 if w > 0 else 0 for w in original(n_lt, n_le)]

    original = jt._first_position_weights
    monkeypatch.setattr(jt, "_first_position_weights", uniform)
    counts, k, scale = [4, 2, 2, 7, 0], 3, Fraction(3, 2)
    prepared = jt._Prepared(jt_profile._normalised(np.asarray(counts)), k, scale)
    stat, df = _chi2(counts, k, scale, _draw_counts(prepared, 20_000, seed=22))
    assert stat > chi2_threshold(df), (stat, df)


# ------------------------------------------------------------------------------ the map
@pytest.mark.parametrize(
    ("metric", "measure", "d_in", "scale", "expected"),
    [
        (MONO, MaxDivergence(), 1, 2, Fraction(1)),
        (LInfDistance(monotonic=False), MaxDivergence(), 1, 2, Fraction(2)),
        (RangeDistance(), MaxDivergence(), 3, 2, Fraction(3)),
        (MONO, ZeroConcentratedDivergence(), 1, 2, Fraction(1, 8)),
        (LInfDistance(), ZeroConcentratedDivergence(), 1, 4, Fraction(1, 8)),
        (MONO, MaxDivergence(), 0, 2, Fraction(0)),
        (MONO, MaxDivergence(), 1, 3, Fraction(2, 3)),
        (LInfDistance(), ZeroConcentratedDivergence(), 1, 0.3, (4 / Fraction(0.3)) ** 2 / 8),
    ],
)
def test_the_privacy_map(metric, measure, d_in, scale, expected):
    loss = make_joint_top_k(INTS, metric, measure, k=2, scale=scale).map(d_in)
    assert loss == float_up(expected)  # the smallest float at or above the exact value
    assert Fraction(loss) >= expected


def _exact_probabilities(counts, k, scale):
    errors = errors_of(counts, k)
    s = Fraction(scale)
    weights = {q: (-arb(fmpq(e * s.denominator, s.numerator))).exp() for q, e in errors.items()}
    z = sum(weights.values(), arb(0))
    return {q: w / z for q, w in weights.items()}


@pytest.mark.parametrize("monotonic", [True, False])
def test_the_map_bounds_every_neighbours_ratio(monotonic):
    """Every neighbour (each count +0/+1, or +-1/0 when not monotonic) of two small vectors:
    every sequence's probability ratio is at most ``exp(epsilon)``, exactly (arb balls)."""
    scale = Fraction(3, 2)
    metric = LInfDistance(monotonic=monotonic)
    eps = make_joint_top_k(INTS, metric, MaxDivergence(), k=2, scale=scale).map(1)
    moves = (0, 1) if monotonic else (-1, 0, 1)
    worst = 0.0
    with ctx.workprec(128):
        bound = arb(fmpq(*Fraction(eps).as_integer_ratio()))
        for counts in ([3, 1, 1, 0], [2, 2, 0, 5]):
            base = _exact_probabilities(counts, 2, scale)
            for delta in itertools.product(moves, repeat=len(counts)):
                if monotonic is False and not any(delta):
                    continue
                moved = [c + m for c, m in zip(counts, delta, strict=True)]
                other = _exact_probabilities(moved, 2, scale)
                for q, p in base.items():
                    ratio = abs((p / other[q]).log())
                    assert ratio < bound, (counts, delta, q)
                    worst = max(worst, float(ratio.mid()))
    assert worst > 0.5 * eps  # the bound is not vacuous on these instances


# ------------------------------------------------------------------------------ edges
def test_parameter_errors():
    with pytest.raises(ParameterError, match="k"):
        make_joint_top_k(INTS, MONO, MaxDivergence(), k=0, scale=1)
    with pytest.raises(ParameterError, match="k"):
        make_joint_top_k(INTS, MONO, MaxDivergence(), k=2.0, scale=1)
    with pytest.raises(ParameterError, match="k"):
        make_joint_top_k(
            vector_domain(atom_domain(int), size=3), MONO, MaxDivergence(), k=4, scale=1
        )
    for bad in (0, -1, float("inf"), float("nan"), "1", True):
        with pytest.raises(ParameterError, match="scale"):
            make_joint_top_k(INTS, MONO, MaxDivergence(), k=2, scale=bad)
    with pytest.raises(DomainError):
        make_joint_top_k(vector_domain(atom_domain(float)), MONO, MaxDivergence(), k=2, scale=1)
    with pytest.raises(MetricError):
        make_joint_top_k(INTS, "linf", MaxDivergence(), k=2, scale=1)
    with pytest.raises(MeasureError):
        make_joint_top_k(INTS, MONO, "pure", k=2, scale=1)
    m = make_joint_top_k(INTS, MONO, MaxDivergence(), k=3, scale=1)
    with pytest.raises(ParameterError, match="k"):
        m([1, 2])  # the length is public


@pytest.mark.parametrize(
    "counts",
    [[5], [4, 4, 4, 4], [2**40, 0, 3], [-5, 10, 10], [2**70, -(2**70), 5, 5]],
)
def test_edges_release_distinct_indices(counts):
    source = InsecureSeededSource(4)
    d = len(counts)
    for k in {1, d}:
        m = make_joint_top_k(INTS, MONO, ZeroConcentratedDivergence(), k=k, scale=1, source=source)
        for x in (counts, np.asarray(counts, dtype=object)):
            out = m(x)
            assert out.dtype == np.int64 and len(out) == k and len(set(out.tolist())) == k


def test_scale_types_and_numpy_input():
    source = InsecureSeededSource(6)
    for scale in (1, 0.5, Fraction(1, 3), np.float64(2.0)):
        m = make_joint_top_k(INTS, MONO, MaxDivergence(), k=2, scale=scale, source=source)
        assert len(m(np.array([9, 1, 5], dtype=np.uint8))) == 2
    m = make_joint_top_k(INTS, MONO, MaxDivergence(), k=2, scale=1, source=source)
    with pytest.raises(DomainError):
        m(np.array([1.0, 2.0]))


def test_a_large_input_with_each_epsilon():
    rng = np.random.default_rng(7)
    counts = (100_000 // np.arange(1, 20_001)).astype(np.int64)
    rng.shuffle(counts)
    source = InsecureSeededSource(8)
    top = np.argsort(-counts, kind="stable")[:10]
    for eps in (0.1, 1, 10):
        m = make_joint_top_k(INTS, MONO, MaxDivergence(), k=10, scale=Fraction(2) / Fraction(eps),
                             source=source)  # fmt: skip
        out = m(counts)
        assert len(set(out.tolist())) == 10
        if eps == 10:
            assert set(out.tolist()) == set(top.tolist())
