"""Every accuracy sentence top_k prints is true: the mechanism is run many times on
adversarial scores (ties, counts near 2^62, a cliff just beyond alpha) and the stated
probability is checked at a false-failure rate of 1e-6; a deliberately broken statement (alpha
or the half-width divided by 3) fails on the same data."""

import math
import re

import numpy as np
import pytest

from dpselect.planning.top_k_plan import plan_top_k as _plan

CONF_FAIL = 0.05


def _max_failures(trials: int, p: float = CONF_FAIL) -> float:
    """The largest failure count compatible with P(failure) <= p at false-failure 1e-6
    (normal approximation with the one-sided z of 1e-6, 4.75, plus continuity)."""
    return trials * p + 4.75 * math.sqrt(trials * p * (1 - p)) + 1


def _claims(plan):
    text = plan.accuracy
    alpha = float(re.search(r"minus ([0-9.e+]+)", text).group(1))
    half = re.search(r"\+-([0-9]+)", text)
    return alpha, (int(half.group(1)) if half else None)


def _sorted_desc(scores):
    return sorted((int(s) for s in scores), reverse=True)


def _violations(scores, indices, noisy, alpha, half):
    top = _sorted_desc(scores)
    ranks_ok = all(top[r] - int(scores[i]) <= alpha for r, i in enumerate(indices))  # exact ints
    counts_ok = True
    if half is not None and noisy is not None:
        counts_ok = all(
            abs(int(c) - int(scores[i])) <= half for i, c in zip(indices, noisy, strict=True)
        )
    return not ranks_ok, not counts_ok


def _instances(alpha, k, n, base):
    """Adversarial score vectors: a cliff where the others sit just beyond alpha / 3 (the
    broken claim's alpha) below k leaders; all tied; a huge common offset."""
    cliff = np.r_[np.full(k, base), np.full(n - k, base - math.floor(alpha / 3) - 1)]
    ties = np.full(n, base)
    return {"cliff": cliff.astype(object), "ties": ties.astype(object)}


CASES = [
    # (mechanism, k, n, epsilon, delta, counts)
    ("permute_and_flip", 1, 40, 1.0, 0.0, False),
    ("gumbel", 3, 40, 1.0, 0.0, False),
    ("gumbel", 3, 40, 2.0, 1e-6, False),
    ("laplace", 2, 30, 1.0, 0.0, False),
    ("laplace_histogram", 3, 40, 1.0, 0.0, True),
    ("gaussian_histogram", 3, 40, 1.0, 1e-6, True),
    ("gumbel", 2, 30, 1.0, 0.0, True),  # one-shot Gumbel with fresh counts
]


def _run(case, scores, trials, seed):
    from dpselect.sampling.source import InsecureSeededSource

    mech, k, n, eps, delta, counts = case
    plan = _plan(n, k, eps, delta, mech, counts, 1, InsecureSeededSource(seed))
    alpha, half = _claims(plan)
    fails = np.zeros(2, dtype=int)
    broken = np.zeros(2, dtype=int)
    for _ in range(trials):
        out = plan.measurement(np.asarray(scores, dtype=object))
        if plan.returns_counts:
            idx, noisy = out
        else:
            idx, noisy = out, None
        idx = [int(i) for i in np.asarray(idx)]
        fails += _violations(scores, idx, noisy, alpha, half)
        broken += _violations(scores, idx, noisy, alpha / 3, None if half is None else half // 3)
    return plan, alpha, half, fails, broken


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-k{c[1]}-d{c[4]}" for c in CASES])
@pytest.mark.parametrize(
    "base",
    [1000, pytest.param(2**62 - 10**6, marks=pytest.mark.slow)],
    ids=["moderate", "huge"],
)
def test_accuracy_statements_hold(case, base):
    trials = 600
    _, k, n, *_ = case
    plan = _plan(n, k, case[3], case[4], case[0], case[5], 1, None)
    alpha, _ = _claims(plan)
    for name, scores in _instances(alpha, k, n, base).items():
        _, alpha, _, fails, broken = _run(case, scores, trials, seed=hash((name, base)) % 997)
        limit = _max_failures(trials)
        assert fails[0] <= limit, (name, fails)
        assert fails[1] <= limit, (name, fails)
        if name == "cliff" and base == 1000:
            # the broken claims (alpha / 3, half-width / 3) fail often on the cliff
            assert broken.max() > limit, (name, broken, limit)


def test_statements_name_every_position():
    plan = _plan(40, 3, 1.0, 0.0, "gumbel", False, 1, None)
    assert "for every i = 1..3, the i-th value returned" in plan.accuracy
    assert "i-th largest score" in plan.accuracy
    plan1 = _plan(40, 1, 1.0, 0.0, "auto", False, 1, None)
    assert "the value returned has a score at least the largest score minus" in plan1.accuracy
    counted = _plan(40, 3, 1.0, 0.0, "gumbel", True, 1, None)
    assert "every noisy count is within +-" in counted.accuracy
