"""Property tests: maps never negative, monotone in d_in, and rounding outward."""

import math
from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

import dpselect.core as dc

finite_pos = st.floats(min_value=0.0, max_value=1e300, allow_nan=False, allow_infinity=False)
positive = st.floats(min_value=1e-300, max_value=1e300, allow_nan=False, allow_infinity=False)
fractions = st.fractions(min_value=-(10**30), max_value=10**30, max_denominator=10**12)


@given(fractions)
def test_float_up_down_bracket(q):
    assert Fraction(dc.float_up(q)) >= q
    assert Fraction(dc.float_down(q)) <= q
    up = dc.float_up(q)
    # tight: one step down is below q
    assert Fraction(math.nextafter(up, -math.inf)) < q


@given(finite_pos, positive)
def test_div_up_is_upper_bound(a, b):
    r = dc.div_up(a, b)
    assert r >= 0
    if math.isfinite(r):
        assert Fraction(r) >= Fraction(a) / Fraction(b)


@given(finite_pos, finite_pos)
def test_mul_add_up_are_upper_bounds(a, b):
    m = dc.mul_up(a, b)
    if math.isfinite(m):
        assert Fraction(m) >= Fraction(a) * Fraction(b)
    s = dc.add_up(a, b)
    if math.isfinite(s):
        assert Fraction(s) >= Fraction(a) + Fraction(b)


@given(st.fractions(min_value=0, max_value=10**20, max_denominator=10**9))
def test_sqrt_up(q):
    r = dc.sqrt_up(q)
    assert Fraction(r) ** 2 >= q


@given(st.fractions(min_value=0, max_value=10**20, max_denominator=10**300))
def test_sqrt_down_and_up_bracket_tiny_and_large(q):
    from dpselect.core.arithmetic import sqrt_down, sqrt_up

    lo, hi = Fraction(sqrt_down(q)), Fraction(sqrt_up(q))
    assert lo**2 <= q <= hi**2
    if q > Fraction(1, 10**300):  # 64 exact bits: within 2 ulps of the float root
        assert hi - lo <= 4 * (hi - Fraction(math.nextafter(float(hi), 0)))


@given(finite_pos, finite_pos, positive, st.booleans())
def test_toy_map_monotone_and_non_negative(d1, d2, scale, monotonic):
    metric = dc.LInfDistance(monotonic=monotonic)

    def privacy_map(d):
        return dc.div_up(metric.range_distance(d), scale)

    lo, hi = sorted((d1, d2))
    assert 0 <= privacy_map(lo) <= privacy_map(hi)
    assert privacy_map(0.0) == 0.0


def test_float_down_of_zero_is_positive_zero():
    assert math.copysign(1.0, dc.float_down(0)) == 1.0
