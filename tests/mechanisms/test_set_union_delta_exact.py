"""Policy Gaussian's delta against an independent mpmath computation (issue 41 audit)."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import pytest

from dpselect.mechanisms.set_union import _delta2, set_union_plan


def _exact_delta(sigma: float, rho: float, c: int, delta_1: float, rows: int) -> mpmath.mpf:
    """``delta_1 + c p(0) + sqrt(c) (p(D) - p(0))``, ``p(w) = P(N(0, sigma^2) >= rho - w)``,
    at 80 digits from the floats the plan holds (the module docstring's map)."""
    with mpmath.workdps(80):
        s, r = mpmath.mpf(sigma), mpmath.mpf(rho)
        d = mpmath.mpf(_delta2(c, rows).numerator) / _delta2(c, rows).denominator

        def p(w: mpmath.mpf) -> mpmath.mpf:
            return mpmath.erfc((r - w) / (s * mpmath.sqrt(2))) / 2

        return mpmath.mpf(delta_1) + c * p(0) + mpmath.sqrt(c) * (p(d) - p(0))


@pytest.mark.parametrize(
    ("epsilon", "delta", "c"),
    [(1.0, 1e-5, 1), (1.0, 1e-5, 10), (0.5, 1e-8, 4), (3.0, 1e-6, 100), (0.1, 1e-3, 2)],
)
def test_gaussian_map_never_understates_delta(epsilon: float, delta: float, c: int) -> None:
    plan = set_union_plan("gaussian", epsilon, delta, c)
    assert plan.delta <= delta
    exact = _exact_delta(plan.scale, plan.rho, c, delta / 2, 1)
    assert mpmath.mpf(plan.delta) >= exact  # the map may over-state, never under-state
    # and it is tight: within a relative 1e-9 of the exact value
    assert float((mpmath.mpf(plan.delta) - exact) / exact) < 1e-9
    assert math.isfinite(float(Fraction(plan.delta)))
