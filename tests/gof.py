"""Goodness-of-fit helpers shared by the statistical tests.

Every test built on these has a false-failure rate of ``ALPHA = 1e-6``: the chi-square
threshold is the (1 - ALPHA) quantile of the statistic's law under the null hypothesis.
Sample sizes are chosen so the same test fails on a variant with the scale off by a factor 2;
``tests/sampling/test_noisy_max.py`` shows it once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats

ALPHA = 1e-6


def chi2_statistic(counts: Sequence[int], probs: Sequence[float], min_expected: float = 5.0):
    """Pearson's statistic and its degrees of freedom, pooling bins expected below 5."""
    counts = np.asarray(counts, dtype=float)
    probs = np.asarray(probs, dtype=float)
    n = counts.sum()
    expected = probs * n
    order = np.argsort(expected)
    pooled_obs, pooled_exp = [], []
    acc_o = acc_e = 0.0
    for i in order:
        acc_o += counts[i]
        acc_e += expected[i]
        if acc_e >= min_expected:
            pooled_obs.append(acc_o)
            pooled_exp.append(acc_e)
            acc_o = acc_e = 0.0
    if acc_e > 0 or acc_o > 0:
        if pooled_exp:
            pooled_obs[-1] += acc_o
            pooled_exp[-1] += acc_e
        else:
            pooled_obs.append(acc_o)
            pooled_exp.append(acc_e)
    o, e = np.asarray(pooled_obs), np.asarray(pooled_exp)
    return float(((o - e) ** 2 / e).sum()), max(1, len(o) - 1)


def chi2_threshold(df: int, alpha: float = ALPHA) -> float:
    return float(stats.chi2.isf(alpha, df))


def fits(counts: Sequence[int], probs: Sequence[float], alpha: float = ALPHA) -> bool:
    """Whether the counts pass the chi-square test against ``probs`` at level ``alpha``."""
    stat, df = chi2_statistic(counts, probs)
    return stat <= chi2_threshold(df, alpha)


def assert_fits(counts: Sequence[int], probs: Sequence[float], alpha: float = ALPHA) -> None:
    stat, df = chi2_statistic(counts, probs)
    threshold = chi2_threshold(df, alpha)
    assert stat <= threshold, f"chi2 = {stat:.1f} > {threshold:.1f} (df {df}, alpha {alpha})"
