"""The continuous mechanism's two-stage draw (near band, then far parts): the same law.

``sample_interval`` weighs only the intervals where ``f s`` may be below ``NEAR_CAP`` and decides
by an exact Bernoulli trial whether the draw falls in the rest. The law of the released point
must be the mechanism's (``tests/recipes/test_quantiles.py::exact_law``), the cheap bound of the
trial must hold, and the exact path (far intervals, arb) must run when the uniform falls below
it. Statistical tests at a false-failure rate of 1e-6 (tests/gof.py).
"""

from __future__ import annotations

from fractions import Fraction

import flint
import numpy as np
import pytest

import dpselect.mechanisms.quantile_continuous as qc
from dpselect.mechanisms.quantile_continuous import make_continuous_quantile
from dpselect.mechanisms.quantile_score import quantile_fraction
from dpselect.sampling import InsecureSeededSource, ScriptedSource
from tests.gof import assert_fits, chi2_statistic, chi2_threshold
from tests.recipes.test_quantiles import _counts, exact_law, factor_of

DATA = [1.0, 2.0, 2.0, 2.0, 3.5, 7.0, 7.0, 9.0, 9.5, 0.5, 4.0, 4.0]
BOUNDS = (0.0, 10.0)


def _draws(q, eps, w, runs, seed):
    m = make_continuous_quantile(
        BOUNDS, q, eps, resolution=w, source=InsecureSeededSource(seed), round_to_resolution=False
    )
    return np.array([m(DATA) for _ in range(runs)])


def _far_mass(q, eps, w):
    """The exact law's probability outside the near band (the far parts' share)."""
    x = np.clip(np.array(DATA), *BOUNDS)
    left, _right, _ = qc._intervals(x, *BOUNDS, w, quantile_fraction(q), factor_of(eps, q),
                                    qc.NEAR_CAP, None, False, far=False)  # fmt: skip
    edges, probs, _ = exact_law(DATA, BOUNDS, q, eps, w)
    mids = (edges[:-1] + edges[1:]) / 2
    return float(probs[(mids < left[0]) | (mids > _right[-1])].sum())


@pytest.mark.slow
def test_two_stage_draw_fits_the_exact_law_with_a_large_far_part(monkeypatch):
    """With ``NEAR_CAP = 1`` the far parts hold a large share of the mass, so the exact trial
    (arb) decides often and both sets are sampled: the draws must fit the mechanism's law."""
    monkeypatch.setattr(qc, "NEAR_CAP", 1)
    q, eps, w, runs = 0.3, 1.0, 0.25, 6000
    far = _far_mass(q, eps, w)
    assert 0.2 < far < 0.8  # both stages matter
    edges, probs, _ = exact_law(DATA, BOUNDS, q, eps, w)
    assert_fits(_counts(_draws(q, eps, w, runs, 11), edges), probs)


@pytest.mark.slow
def test_two_stage_draw_with_the_far_part_dropped_fails(monkeypatch):
    """The same check catches a trial that never goes far (the far share lost)."""
    monkeypatch.setattr(qc, "NEAR_CAP", 1)
    monkeypatch.setattr(qc, "_far_probability", lambda *a: lambda prec: flint.arb(0))
    q, eps, w, runs = 0.3, 1.0, 0.25, 6000
    edges, probs, _ = exact_law(DATA, BOUNDS, q, eps, w)
    stat, df = chi2_statistic(_counts(_draws(q, eps, w, runs, 12), edges), probs)
    assert stat > chi2_threshold(df)


def _exact_far_share(near, far):
    flint.ctx.prec = 200
    z_near = sum((flint.arb(v).exp() for v in near.tolist()), flint.arb(0))
    z_far = sum((flint.arb(v).exp() for v in far.tolist()), flint.arb(0))
    return z_far / (z_near + z_far)


@pytest.mark.parametrize("seed", range(12))
def test_cheap_bound_holds_against_arb(seed, monkeypatch):
    """``_far_bound`` is at least the exact share of the far parts (arb, 200 bits), on data
    with ties, clamped rows and small or large epsilon (``NEAR_CAP`` lowered so that the far
    share is not vanishingly small)."""
    rng = np.random.default_rng(seed)
    monkeypatch.setattr(qc, "NEAR_CAP", int(rng.choice([1, 3, 8, 64])))
    n = int(rng.integers(1, 400))
    x = np.round(rng.normal(5, 3, n), int(rng.integers(0, 3)))
    x = np.clip(x, *BOUNDS)
    q = int(rng.integers(1, 100)) / 100
    eps = float(rng.choice([0.05, 0.5, 2.0, 20.0]))
    w = float(rng.choice([1e-5, 0.01, 0.3]))
    f = factor_of(eps, q)
    level = quantile_fraction(q)
    left, right, near = qc._intervals(x, *BOUNDS, w, level, f, qc.NEAR_CAP, None, False,
                                      far=False)  # fmt: skip
    c_1, c_2 = float(left[0]), float(right[-1])
    far = qc._far_intervals(x.copy(), *BOUNDS, w, level, f, c_1, c_2, False)
    bound = qc._far_bound(near, *BOUNDS, c_1, c_2)
    first = qc._far_probability(near, *BOUNDS, c_1, c_2, lambda: far)(128)
    assert float(first.lower()) <= 0.0 and float(first.upper()) >= bound * (1 - 2**-40)
    exact = _exact_far_share(near, far[2])
    assert exact <= flint.arb(bound), (exact, bound)
    later = qc._far_probability(near, *BOUNDS, c_1, c_2, lambda: far)
    later(128)
    assert later(256).overlaps(exact)  # the exact ball, from the second call on
    # the far intervals tile [lo, c_1) and (c_2, hi]: their lengths add up
    fl, fr, _ = far
    total = sum(
        Fraction(r) - Fraction(lft) for lft, r in zip(fl.tolist(), fr.tolist(), strict=True)
    )
    assert total == (Fraction(c_1) - Fraction(BOUNDS[0])) + (Fraction(BOUNDS[1]) - Fraction(c_2))


def test_the_exact_path_runs_when_the_uniform_is_below_the_bound(monkeypatch):
    """A trial uniform whose first 64 bits are 0 is below any positive bound: the far
    intervals are built and ``p`` computed in arb (default ``NEAR_CAP``: ``p`` is tiny, the
    next bits decide near); the point is in the bounds and the run is reproducible."""
    x = np.random.default_rng(5).normal(5, 2, 5000)
    calls = []
    real = qc._far_probability

    def spy(*args):
        inner = real(*args)

        def probability(prec):
            calls.append(prec)
            return inner(prec)

        return probability

    monkeypatch.setattr(qc, "_far_probability", spy)
    outs = []
    for _ in range(2):
        src = ScriptedSource(b"\x00" * 8, then=InsecureSeededSource(3))
        outs.append(make_continuous_quantile(BOUNDS, 0.5, 1.0, source=src)(x))
    assert len(calls) >= 4  # the cheap ball, then arb, in both runs
    assert outs[0] == outs[1] and BOUNDS[0] <= outs[0] <= BOUNDS[1]


def test_near_band_is_narrow_and_one_uniform_is_read_without_far_parts():
    """The near band holds about ``2 NEAR_CAP / (f b)`` rows, not ``2 T / (f b)``; when it
    covers ``[lo, hi]`` (no far part) the trial reads one uniform and decides at once."""
    x = np.sort(np.random.default_rng(1).normal(50, 10, 200_000))
    q, eps = Fraction(1, 2), 0.01
    f = factor_of(eps, 0.5)
    left, _r, _s = qc._intervals(x, 0.0, 100.0, 1e-4, q, f, qc.NEAR_CAP, None, True, far=False)
    full, _r2, _s2 = qc._intervals(x, 0.0, 100.0, 1e-4, q, f, qc.SCORE_CAP, None, True)
    assert left.shape[0] < full.shape[0] / 15  # every row is in the full band here
    rows = 2 * qc.NEAR_CAP / (f * q.denominator)
    assert left.shape[0] <= 2 * rows + 100  # two breakpoints a row, and the rows within w
    # near covering [lo, hi]: nothing is far, p_ub = 0 (an exact ball: decided at once)
    assert qc._far_bound(np.array([0.0]), 0.0, 1.0, 0.0, 1.0) == 0.0
