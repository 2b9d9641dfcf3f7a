"""The screen of the float pass: candidates dropped by a per-block word threshold.

The screen must never drop a candidate that could be in the top k: the ranking through the
screened pass equals the float reference of the same words on large vectors, the law of the
output is unchanged on small vectors screened block by block (chi-square at 1e-6), and a
screen that drops too much (threshold off by one scale) is caught by the same test.
"""

from __future__ import annotations

import flint
import numpy as np
import pytest

from dpselect.sampling import noisy_max as nm
from dpselect.sampling.noise import FAMILIES, GRID_BITS, NOISE_ABS_ERROR
from dpselect.sampling.noisy_max import noisy_argmax, noisy_top_k
from dpselect.sampling.source import InsecureSeededSource
from tests.gof import assert_fits, fits
from tests.sampling.laws import exponential_law, laplace_law, softmax


def _float_reference(shifts, scale, words, family):
    u = (words.astype(np.float64) + 0.5) * 2.0**-64
    q = shifts.astype(np.float64) / scale
    if family == "gumbel":
        return q - np.log(-np.log(u))
    if family == "exponential":
        return q - np.log1p(-u)
    return q + np.where(u < 0.5, np.log(2 * u), -np.log(2 * (1 - u)))


@pytest.fixture
def screened_sizes(monkeypatch):
    """Records how many candidates reach the full float computation."""
    sizes: list[int] = []
    inner = nm._float_chunk

    def spy(values, idx, words, *args, **kwargs):
        sizes.append(int(words.shape[0]))
        return inner(values, idx, words, *args, **kwargs)

    monkeypatch.setattr(nm, "_float_chunk", spy)
    return sizes


@pytest.mark.parametrize(
    "family, k, dtype",
    [("gumbel", 1, "f8"), ("gumbel", 40, "i8"), ("exponential", 5, "f8"), ("laplace", 5, "f4")],
)
def test_screened_ranking_equals_float_reference(screened_sizes, family, k, dtype):
    n = nm._SCREEN_MIN_N + 1000  # a partial last block too
    rng = np.random.default_rng(7)
    shifts = (rng.normal(size=n) * 6).astype(dtype)
    if dtype == "i8":
        shifts += np.int64(1) << 60  # large: the reference shift is used
    got = noisy_top_k(shifts, 0.5, k, noise=family, source=InsecureSeededSource(11))
    words = InsecureSeededSource(11).words(n)
    ref = shifts - shifts.max() if dtype == "i8" else shifts
    want = np.argsort(-_float_reference(ref, 0.5, words, family))[:k]
    assert got.tolist() == want.tolist()
    assert sum(screened_sizes) < n // 2, "the screen dropped too little: it was not exercised"


def test_thresholds_keep_their_promise():
    """Every word below W leaves the key below t, checked in arb at 300 bits."""
    rng = np.random.default_rng(3)
    for name, fam in FAMILIES.items():
        q = rng.normal(size=400) * 20
        t = 25.0
        err = 1e-9 + NOISE_ABS_ERROR
        w = nm._word_thresholds(q, t, err, fam)
        assert (w > 0).sum() > 100, name  # the screen is effective
        for qi, wi in zip(q.tolist(), w.tolist(), strict=True):
            j = wi >> (64 - GRID_BITS)
            if j == 0:
                continue
            # largest U below W: at most J 2^-52; the key bound at that U
            g = fam.exact_g(j, GRID_BITS, 300)
            with flint.ctx.workprec(300):
                assert flint.arb(qi) + g + (err - NOISE_ABS_ERROR) < t, (name, qi, j)


@pytest.fixture
def tiny_groups(monkeypatch):
    """Screen vectors of a few blocks, one block per group."""
    monkeypatch.setattr(nm, "_SCREEN_MIN_N", 0)
    monkeypatch.setattr(nm, "_GROUP_BLOCKS", 1)
    monkeypatch.setattr(nm, "_WORKERS", 1)  # no thread pool for a few blocks


def _law_case():
    """5 live candidates in different blocks, the rest far behind (never win)."""
    b = nm.SCREEN_BLOCK
    shifts = np.full(6 * b + 7, -60.0)
    live = [3 * b + 1, 1 * b + 5, 5 * b + 9, 2 * b, 6 * b + 3]  # the last in the partial block
    shifts[live] = [1.5, 1.0, 0.6, 0.0, 0.8]
    return shifts, live


def _counts(shifts, live, noise, n_samples, seed):
    src = InsecureSeededSource(seed)
    pos = {c: i for i, c in enumerate(live)}
    counts = np.zeros(len(live), dtype=int)
    for _ in range(n_samples):
        counts[pos[noisy_argmax(shifts, 1.0, noise=noise, source=src)]] += 1
    return counts


LAWS = {
    "gumbel": lambda s: softmax(s, 1.0),
    "exponential": lambda s: exponential_law(s, 1.0),
    "laplace": lambda s: laplace_law(s, 1.0),
}


@pytest.mark.slow  # 3000 calls each; the default run checks the float reference above
@pytest.mark.parametrize("noise", ["gumbel", "exponential", "laplace"])
def test_screened_law_is_unchanged(tiny_groups, screened_sizes, noise):
    shifts, live = _law_case()
    counts = _counts(shifts, live, noise, 3000, seed=20)
    assert_fits(counts, LAWS[noise](shifts[live]))
    # one block per group: later groups were screened down to (almost) nothing
    assert np.median(screened_sizes) < nm.SCREEN_BLOCK / 4


@pytest.mark.slow
def test_law_test_catches_a_screen_that_drops_too_much(tiny_groups, monkeypatch):
    shifts, live = _law_case()
    inner = nm._word_thresholds
    monkeypatch.setattr(nm, "_word_thresholds", lambda q, t, e, f: inner(q, t + 1.0, e, f))
    counts = _counts(shifts, live, "gumbel", 3000, seed=21)
    assert not fits(counts, softmax(shifts[live], 1.0))


def test_reference_shift_is_subtracted_in_a_wide_type():
    """float32 and int32 scores minus the reference shift: exact in float64 / int64 (float32
    arithmetic would round by 2^-24 and break the error bound; int32 would wrap)."""
    small = np.float32(1e-3)
    q = nm._q_values(np.array([small], dtype=np.float32), 1.0, 1000.0)
    assert q[0] == float(small) - 1000.0
    ints = np.array([-(2**31), 2**31 - 1], dtype=np.int32)
    assert nm._q_values(ints, 1.0, 2**31 - 1).tolist() == [-(2.0**32) + 1, 0.0]
