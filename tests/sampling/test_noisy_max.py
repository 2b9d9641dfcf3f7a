"""Statistical and forced-path tests of the exact noisy argmax / top-k engine.

Goodness of fit: chi-square at a false-failure rate of 1e-6 (tests/gof.py) against laws
computed independently (tests/sampling/laws.py). Sample sizes catch a factor-2 scale bug, as
``test_gof_catches_factor_two_scale_bug`` shows on the same vectors.
"""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import flint
import numpy as np
import pytest

from dpselect.core.errors import DomainError, ParameterError
from dpselect.sampling.noise import FAMILIES, GUMBEL, LAPLACE
from dpselect.sampling.noisy_max import noisy_argmax, noisy_top_k
from dpselect.sampling.source import InsecureSeededSource, ScriptedSource
from tests.gof import assert_fits, chi2_statistic, chi2_threshold, fits
from tests.sampling.laws import exponential_law, laplace_law, plackett_luce, softmax

ONES = (1 << 64) - 1


def sample_counts(shifts, scale, n_samples, noise="gumbel", seed=0, draw_scale=None):
    src = InsecureSeededSource(seed)
    shifts = np.asarray(shifts)
    draw_scale = scale if draw_scale is None else draw_scale
    counts = np.zeros(len(shifts), dtype=int)
    for _ in range(n_samples):
        counts[noisy_argmax(shifts, draw_scale, noise=noise, source=src)] += 1
    return counts


# --------------------------------------------------------------------------- softmax (Gumbel)
GUMBEL_CASES = [
    ("small ints", np.array([0, 1, 2, 3], dtype=np.int64), 1.0, 3000),
    ("floats, scale 0.5", np.array([0.1, -0.4, 0.9, 0.3, 0.0]), 0.5, 3000),
    ("float32", np.array([1.0, 2.0, 2.5], dtype=np.float32), 1.0, 3000),
    ("spread 1e-9 x scale", np.array([0.0, 1e-9, 2e-9]) * 7.0, 7.0, 3000),
    ("spread 1e6 x scale", np.array([1e6, 1e6 - 1, 1e6 - 2.5, 0.0, -1e6]) * 3.0, 3.0, 3000),
    ("all equal", np.full(6, 12.5), 2.0, 3000),
    ("int64 near 2^62", (1 << 62) + np.array([0, 1, 2, 3], dtype=np.int64), 1.0, 2000),
    ("floats near 1e15", 1e15 + np.array([0.0, 1.0, 2.0, 3.0]), 1.0, 3000),
    ("int32", np.array([-5, -4, -3], dtype=np.int32), 1.0, 3000),
]


@pytest.mark.parametrize("name, shifts, scale, n", GUMBEL_CASES, ids=[c[0] for c in GUMBEL_CASES])
def test_gumbel_argmax_is_softmax(name, shifts, scale, n):
    counts = sample_counts(shifts, scale, n, seed=hash(name) % 1000)
    exact = shifts.astype(object) - shifts.min().item()
    assert_fits(counts, softmax(np.asarray(exact, dtype=float), scale))


def test_gof_catches_factor_two_scale_bug():
    """The same tests, run on a sampler whose scale is off by 2, fail."""
    for name, shifts, scale, n in GUMBEL_CASES:
        if name in ("spread 1e-9 x scale", "all equal"):
            continue  # near-uniform laws do not depend on the scale
        exact = shifts.astype(object) - shifts.min().item()
        probs = softmax(np.asarray(exact, dtype=float), scale)
        for wrong in (2 * scale, scale / 2):
            counts = sample_counts(shifts, scale, n, seed=1, draw_scale=wrong)
            stat, df = chi2_statistic(counts, probs)
            assert stat > chi2_threshold(df), (name, wrong, stat)
    # and the exponential / top-k tests below:
    shifts = np.array([0.0, 1.0, 2.0, 3.0])
    counts = sample_counts(shifts, 1.0, 3000, noise="exponential", seed=2, draw_scale=2.0)
    assert not fits(counts, exponential_law(shifts, 1.0))
    outcomes, probs = plackett_luce(shifts, 1.0, 2)
    assert not fits(top_k_counts(shifts, 2.0, 2, outcomes, 3000, seed=3), probs)


# --------------------------------------------------------------------------- other families
@pytest.mark.parametrize("shifts", [[0.0, 1.0, 2.0, 3.0], [5.0, 5.0, 4.0], [0.0, 0.3, -2.0, 0.1]])
def test_exponential_noise_is_permute_and_flip(shifts):
    shifts = np.asarray(shifts)
    counts = sample_counts(shifts, 1.0, 3000, noise="exponential", seed=5)
    assert_fits(counts, exponential_law(shifts, 1.0))


@pytest.mark.parametrize("shifts", [[0.0, 1.0, 2.0, 3.0], [1.0, 1.0, -1.0]])
def test_laplace_noisy_max_law(shifts):
    shifts = np.asarray(shifts)
    counts = sample_counts(shifts, 0.8, 3000, noise="laplace", seed=6)
    assert_fits(counts, laplace_law(shifts, 0.8))


# --------------------------------------------------------------------------- top-k
def top_k_counts(shifts, scale, k, outcomes, n_samples, seed):
    src = InsecureSeededSource(seed)
    tally = Counter(
        tuple(noisy_top_k(shifts, scale, k, source=src).tolist()) for _ in range(n_samples)
    )
    return [tally.get(o, 0) for o in outcomes]


@pytest.mark.parametrize("k", [1, 2, 3])
def test_gumbel_top_k_is_plackett_luce(k):
    """One-shot Gumbel top-k = k rounds of the exponential mechanism (seed 004, Theorem 1)."""
    shifts = np.array([0.0, 1.0, 2.0, 3.0, 1.5])
    outcomes, probs = plackett_luce(shifts, 1.0, k)
    assert_fits(top_k_counts(shifts, 1.0, k, outcomes, 6000, seed=10 + k), probs)


def test_top_k_across_chunks_matches_float_reference():
    """Across many chunks the certified ranking equals the float ranking of the same words."""
    n = 200_000
    shifts = np.random.default_rng(0).normal(size=n) * 3
    got = noisy_top_k(shifts, 0.5, 50, source=InsecureSeededSource(4))
    words = InsecureSeededSource(4).words(n)
    u = (words.astype(np.float64) + 0.5) * 2.0**-64
    keys = shifts / 0.5 - np.log(-np.log(u))
    want = np.argsort(-keys)[:50]
    assert got.tolist() == want.tolist()
    assert len(set(got.tolist())) == 50


# --------------------------------------------------------------------------- forced rare paths
def key_at(shift, scale, words, family=GUMBEL, prec=2000):
    """An independent high-precision key at the midpoint of the scripted digits."""
    b = 64 * len(words)
    m = 0
    for w in words:
        m = (m << 64) | w
    with flint.ctx.workprec(prec):
        u = flint.arb((2 * m + 1, -(b + 1)))
        if family is GUMBEL:
            g = -(-u.log()).log()
        else:
            g = (2 * u).log() if 2 * m < (1 << b) else -(2 * (1 - u)).log()
        return flint.arb(shift) / flint.arb(scale) + g


def test_shared_first_64_bits_equal_shifts():
    # Both uniforms start with the same 64 digits; the next digits decide.
    w = 0x9E3779B97F4A7C15
    for extra_a, extra_b in [(5, 9), (9, 5), (ONES, 0)]:
        src = ScriptedSource.from_words([w, w, extra_a, extra_b, 0, 0])
        winner = noisy_argmax(np.array([2.0, 2.0]), 1.0, source=src)
        assert winner == (0 if extra_a > extra_b else 1)


def test_near_tie_with_different_shifts_matches_high_precision():
    rng = np.random.default_rng(7)
    for trial in range(20):
        delta = float(rng.uniform(0.1, 3.0))
        wb = int(rng.integers(1 << 62, 1 << 63, dtype=np.uint64)) << 1
        # choose a's first 64 digits so that a's key nearly ties b's: g(u_a) = g(u_b) - delta
        with flint.ctx.workprec(300):
            ub = flint.arb((wb, -64))
            ga = -(-ub.log()).log() - delta
            ua = (-(-ga).exp()).exp()
            wa = int((ua * (1 << 64)).floor().unique_fmpz())
        extras = [int(x) for x in rng.integers(0, 1 << 63, size=8, dtype=np.uint64)]
        script = [wa, wb, *extras]
        src = ScriptedSource.from_words(script)
        winner = noisy_argmax(np.array([delta, 0.0]), 1.0, source=src)
        assert src.consumed > 16  # the float pass could not decide: digits were refined
        # the engine read at most these words; decide with the full scripted digits
        ka = key_at(delta, 1.0, [wa, *extras[0::2]])
        kb = key_at(0.0, 1.0, [wb, *extras[1::2]])
        assert (ka > kb) or (kb > ka)
        assert winner == (0 if ka > kb else 1), trial


def test_candidate_100_scales_behind_wins_with_uniform_near_one():
    """U within 2^-192 of 1: Gumbel noise ~133 > 100 (no outcome has probability 0)."""
    script = [1 << 63, ONES, ONES, ONES, ONES, ONES, 0, 0]
    winner = noisy_argmax(np.array([100.0, 0.0]), 1.0, source=ScriptedSource.from_words(script))
    assert winner == 1
    assert float(key_at(0.0, 1.0, [ONES, ONES, ONES, 0]).mid()) > 133


def test_uniform_near_zero_loses_under_laplace():
    """Laplace noise with U within 2^-200 of 0 is below -138: a lead of 100 is not enough."""
    script = [1 << 63, 0, 0, 0, 0, 0, 0, 0]
    src = ScriptedSource.from_words(script)
    assert noisy_argmax(np.array([0.0, 100.0]), 1.0, noise="laplace", source=src) == 0
    assert float(key_at(100.0, 1.0, [0, 0, 0, 0], family=LAPLACE).mid()) < -30


def test_uniform_all_ones_float_path_defers_to_exact():
    # 52 leading ones make the float key infinite; the exact path still decides correctly
    src = ScriptedSource.from_words([(1 << 63) + 12345, ONES - 1])
    assert noisy_argmax(np.array([50.0, 0.0]), 1.0, source=src) == 0


# --------------------------------------------------------------------------- edges and errors
def test_scale_zero_is_exact_argmax_ties_to_lowest_index():
    s = np.array([3, 7, 7, 1, 7])
    assert noisy_argmax(s, 0.0) == 1
    assert noisy_top_k(s, 0, 4).tolist() == [1, 2, 4, 0]


def test_infinite_shifts():
    src = InsecureSeededSource(3)
    s = np.array([-np.inf, 0.0, np.inf, 5.0, np.inf])
    for _ in range(50):
        top = noisy_top_k(s, 1.0, 5, source=src).tolist()
        assert set(top[:2]) == {2, 4} and top[-1] == 0 and set(top[2:4]) == {1, 3}
    assert noisy_argmax(np.array([-np.inf, -np.inf]), 1.0, source=src) in (0, 1)
    # infinite candidates are ranked among themselves by the noise alone: uniform law
    counts = np.bincount(
        [noisy_argmax(np.array([np.inf, np.inf, 1.0]), 1.0, source=src) for _ in range(2000)],
        minlength=3,
    )
    assert_fits(counts[:2], [0.5, 0.5])
    assert counts[2] == 0


def test_overflowing_keys_are_decided_exactly():
    """Shifts one ulp apart near 1e308 with scale = that ulp: q overflows in float, so every
    candidate goes to the exact path; the law is softmax([0, 1])."""
    a = 1e308
    b = float(np.nextafter(a, 0))
    src = InsecureSeededSource(21)
    counts = np.bincount([noisy_argmax(np.array([b, a]), a - b, source=src) for _ in range(2000)])
    assert_fits(counts, softmax(np.array([0.0, 1.0]), 1.0))
    assert noisy_top_k(np.array([b, a, -a]), 1e-300, 3, source=src).tolist() == [1, 0, 2]


def test_reference_shift_is_used_only_when_safe():
    from dpselect.sampling.noisy_max import _reference

    assert _reference(np.array([1.0, 2.0]), 1.0)[0] is None  # small scores: not needed
    ref, q_max = _reference((1 << 62) + np.array([0, 5], dtype=np.int64), 1.0)
    assert ref == (1 << 62) + 5 and q_max == 5.0
    extreme = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max])
    assert _reference(extreme, 1.0)[0] is None  # the range does not fit in int64
    assert _reference(np.array([-1.7e308, 1.7e308]), 1.0)[0] is None  # nor in a float
    ref, q_max = _reference(1e15 + np.array([0.0, 0.5]), 0.25)
    assert ref == 1e15 + 0.5 and q_max == 2.0


def test_k_zero_and_k_equals_n():
    assert noisy_top_k(np.array([1.0, 2.0]), 1.0, 0).size == 0
    assert sorted(noisy_top_k(np.array([1.0, 2.0, 3.0]), 1.0, 3).tolist()) == [0, 1, 2]


@pytest.mark.parametrize(
    "shifts, scale, k, error, match",
    [
        (np.array([]), 1.0, 1, ParameterError, "empty"),
        (np.array([1.0, np.nan]), 1.0, 1, DomainError, "NaN"),
        (np.array([1.0, 2.0]), 1.0, -1, ParameterError, "non-negative"),
        (np.array([1.0, 2.0]), 1.0, 3, ParameterError, "at most"),
        (np.array([1.0, 2.0]), -1.0, 1, ParameterError, "non-negative"),
        (np.array([1.0, 2.0]), math.nan, 1, ParameterError, "finite"),
        (np.array([1.0, 2.0]), math.inf, 1, ParameterError, "finite"),
        (np.array([1.0, 2.0]), "1", 1, ParameterError, "number"),
        (np.array([1.0, 2.0]), 1.0, 1.5, ParameterError, "int"),
        (np.array([1, 2], dtype=np.uint8), 1.0, 1, ParameterError, "dtype"),
        (np.array([True, False]), 1.0, 1, ParameterError, "dtype"),
        (np.array([[1.0, 2.0]]), 1.0, 1, ParameterError, "1-d"),
    ],
)
def test_bad_input(shifts, scale, k, error, match):
    with pytest.raises(error, match=match):
        noisy_top_k(shifts, scale, k, source=InsecureSeededSource(0))


def test_unknown_noise_and_source():
    with pytest.raises(ParameterError, match="noise"):
        noisy_argmax(np.array([1.0]), 1.0, noise="cauchy")
    with pytest.raises(ParameterError, match="source"):
        noisy_argmax(np.array([1.0]), 1.0, source=42)  # type: ignore[arg-type]


def test_seeded_runs_are_reproducible_and_default_is_csprng():
    s = np.random.default_rng(1).normal(size=150_000)
    a = noisy_top_k(s, 1.0, 5, source=InsecureSeededSource(9))
    b = noisy_top_k(s, 1.0, 5, source=InsecureSeededSource(9))
    assert a.tolist() == b.tolist()
    assert 0 <= noisy_argmax(s, 1.0) < s.size


# --------------------------------------------------------------------------- the error model
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_float_noise_error_model(name):
    """NumPy's log/log1p meet the 2^-48 relative accuracy the error bound assumes (2^-45)."""
    fam = FAMILIES[name]
    rng = np.random.default_rng(11)
    top = (1 << 52) - 1
    j = np.concatenate(
        [
            rng.integers(0, 1 << 52, size=300),
            top - rng.integers(0, 1 << 20, size=150),
            rng.integers(0, 1 << 12, size=150),
            [0, 1, top - 1, top],
        ]
    ).astype(np.uint64)
    words = j << np.uint64(12) | rng.integers(0, 1 << 12, size=j.size).astype(np.uint64)
    for lower, got in ((False, fam.float_upper(words)), (True, fam.float_lower(words))):
        for jj, g in zip(j.tolist(), got, strict=True):
            end = jj if lower else jj + 1
            exact = fam.exact_g(end, 52, 200)
            if not math.isfinite(g):
                assert end in (0, 1 << 52), (name, end, g)
                assert g == (fam.g_at_zero if end == 0 else fam.g_at_one)
                continue
            err = abs(flint.arb(float(g)) - exact)
            bound = (abs(exact) + 1) * 2.0**-48
            assert float(err.upper()) <= float(bound.lower()), (name, jj, g)


def test_grid_ends_are_exact():
    from dpselect.sampling.noise import grid_lower, grid_upper

    words = np.array([0, (1 << 64) - 1, 12345 << 12, (12345 << 12) + 4095], dtype=np.uint64)
    lo, hi = grid_lower(words.copy()), grid_upper(words.copy())
    for w, a, b in zip(words.tolist(), lo, hi, strict=True):
        j = w >> 12
        assert Fraction(float(a)) == Fraction(j, 1 << 52)
        assert Fraction(float(b)) == Fraction(j + 1, 1 << 52)
        assert Fraction(float(a)) <= Fraction(w, 1 << 64) < Fraction(w + 1, 1 << 64) <= b


@pytest.mark.parametrize("scale", [Fraction(1, 10**400), Fraction(10**400)])
def test_a_fraction_scale_outside_the_float_range_is_refused(scale: Fraction) -> None:
    from dpselect.core.errors import ParameterError

    with pytest.raises(ParameterError, match="normal float range"):
        noisy_argmax(np.array([1.0, 2.0]), scale)
