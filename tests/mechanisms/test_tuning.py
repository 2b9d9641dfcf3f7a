"""The tuning mechanisms' helpers (dpselect/mechanisms/tuning.py)."""

from __future__ import annotations

from fractions import Fraction

from dpselect.mechanisms.tuning import tnb_gamma_for_mean
from dpselect.sampling.run_counts import truncated_negative_binomial_mean


def test_tnb_gamma_for_mean():
    for eta, mean in ((0, 10), (1, 10), (Fraction(1, 2), 30)):
        g = tnb_gamma_for_mean(eta, mean)
        assert abs(float(truncated_negative_binomial_mean(eta, g).mid()) - mean) <= 0.01 * mean
