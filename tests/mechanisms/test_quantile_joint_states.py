"""The joint mechanism's backward draw in two stages (``draw_state``): the same law.

``draw_state`` draws a flat index of a ``(R, k)`` matrix of log-weights with probability
``exp(w) / sum exp(w)``: first row 0 or the other rows by an exact Bernoulli trial (float sums
with a rigorous radius, arb when needed), within row 0 its heavy or its light states by a second
trial, then the index within the part. Statistical tests at a
false-failure rate of 1e-6 (tests/gof.py), each shown to fail on a broken variant.
"""

from __future__ import annotations

import flint
import numpy as np
import pytest

from dpselect.sampling.source import InsecureSeededSource
from dpselect.sampling.two_stage import draw_state, exp_sum_ball, share_bound
from tests.gof import assert_fits, chi2_statistic, chi2_threshold

# row 0 holds about 70% of the mass, two cells are empty (-inf), one far cell is heavy
WEIGHTS = np.array(
    [
        [0.0, -1.0, 0.5, -np.inf, -2.0],
        [-0.5, -3.0, -np.inf, -1.5, 0.2],
        [-4.0, -0.7, -2.5, -1.0, -30.0],
    ]
)


def _probs(w):
    p = np.exp(w.ravel())
    return p / p.sum()


def _counts(draw, runs, seed):
    src = InsecureSeededSource(seed)
    picks = [draw(WEIGHTS, src) for _ in range(runs)]
    return np.bincount(picks, minlength=WEIGHTS.size)


@pytest.mark.slow
def test_two_stage_state_draw_fits_the_law():
    probs = _probs(WEIGHTS)
    assert 0.3 < probs[WEIGHTS.shape[1] :].sum() < 0.7  # both parts matter
    assert_fits(_counts(draw_state, 20_000, 1), probs)


@pytest.mark.slow
def test_two_stage_state_draw_without_the_far_rows_fails():
    """The same check fails when the trial never chooses the far rows."""
    from dpselect.sampling.noisy_max import noisy_argmax

    def broken(w, src):
        return int(noisy_argmax(w[0], 1.0, "gumbel", source=src))

    stat, df = chi2_statistic(_counts(broken, 20_000, 2), _probs(WEIGHTS))
    assert stat > chi2_threshold(df)


# row 0 split at a gap of 0.5 nats: heavy {0, -0.3}, light {-1, -1.5, -2, -inf} (29% of row 0)
SPLIT = np.array([[0.0, -0.3, -1.0, -1.5, -2.0, -np.inf], [-1.0, -2.5, -np.inf, -0.8, -3.0, -1.2]])


def _split_counts(draw, runs, seed):
    src = InsecureSeededSource(seed)
    picks = [draw(SPLIT, src) for _ in range(runs)]
    return np.bincount(picks, minlength=SPLIT.size)


@pytest.mark.slow
def test_row_zero_split_by_weight_fits_the_law():
    """Row 0 drawn in two parts (heavy and light states, a second trial): the same law."""
    probs = _probs(SPLIT)
    light = probs[2:5].sum() / probs[:6].sum()
    assert 0.2 < light < 0.4  # both parts of row 0 matter
    assert_fits(_split_counts(lambda w, src: draw_state(w, src, heavy_gap=0.5), 20_000, 3), probs)


@pytest.mark.slow
def test_row_zero_split_without_the_light_states_fails():
    """The same check fails when the second trial never chooses the light states."""
    from dpselect.sampling import two_stage

    def never_light(w, src):
        real = two_stage._far_trial
        two_stage._far_trial = lambda near, far, s: real(near, far, s) if far.size > 4 else False
        try:
            return draw_state(w, src, heavy_gap=0.5)
        finally:
            two_stage._far_trial = real

    stat, df = chi2_statistic(_split_counts(never_light, 20_000, 4), _probs(SPLIT))
    assert stat > chi2_threshold(df)


def test_float_ball_holds_the_exact_sum():
    """``exp_sum_ball`` from floats contains the sum in arb (300 bits) on wide ranges, ``-inf``,
    terms underflowing to subnormals or 0, huge magnitudes and many equal terms."""
    rng = np.random.default_rng(4)
    cases = [
        rng.normal(0, 1, 1000),
        rng.normal(-5e4, 300, 500),
        np.concatenate([[0.0], rng.uniform(-760, -700, 200)]),  # subnormal terms
        np.concatenate([[1e5], np.full(300, 1e5 - 800.0), [-np.inf] * 3]),  # underflow to 0
        np.full(5000, -37.25),
        np.array([-np.inf, -np.inf]),
    ]
    old = flint.ctx.prec
    try:
        for v in cases:
            flint.ctx.prec = 300
            exact = exp_sum_ball(v, True)
            flint.ctx.prec = 64
            ball = exp_sum_ball(v, False)
            flint.ctx.prec = 300
            assert ball.contains(exact) or (exact == 0 and ball == 0), v[:3]
    finally:
        flint.ctx.prec = old


def test_a_part_without_mass_is_never_drawn():
    src = InsecureSeededSource(3)
    only_far = np.array([[-np.inf, -np.inf], [0.0, -1.0]])
    only_near = np.array([[0.0, -1.0], [-np.inf, -np.inf]])
    assert {draw_state(only_far, src) for _ in range(50)} <= {2, 3}
    assert {draw_state(only_near, src) for _ in range(50)} <= {0, 1}
    assert draw_state(np.array([[-np.inf, 0.0]]), src) == 1  # one row: no trial


def test_max_bound_is_at_least_the_far_share():
    """``share_bound`` against the share in arb (300 bits), from tiny to certain."""
    rng = np.random.default_rng(6)
    old = flint.ctx.prec
    try:
        flint.ctx.prec = 300
        for gap in (-9000.0, -800.0, -40.0, -3.0, 0.0, 5.0):
            w = rng.normal(0, 2, (4, 300))
            w[1:] += gap
            w[rng.random(w.shape) < 0.05] = -np.inf
            w[0, 0] = 0.0  # a finite near term
            near, far = w[0], w[1:].ravel()
            exact = exp_sum_ball(far, True) / (exp_sum_ball(near, True) + exp_sum_ball(far, True))
            assert exact <= flint.arb(share_bound(near, far)), gap
    finally:
        flint.ctx.prec = old
