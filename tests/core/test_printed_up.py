"""Printed upper bounds round up (:func:`dpselect.core.arithmetic.printed_up`): the number an
accuracy statement prints is never below the bound it proves; rounding to nearest is not
(the check fails on it)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from dpselect.core.arithmetic import printed_up


def _digits(text: str) -> int:
    mantissa = text.lstrip("-").split("e")[0].replace(".", "").lstrip("0")
    return len(mantissa)


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300))
def test_printed_up_is_an_upper_bound_with_four_digits(x):
    text = printed_up(x)
    assert float(text) >= x
    assert _digits(text) <= 4
    if x != 0:  # and the least such: one step down in the last digit is below x
        assert float(text) - x <= 10 ** (math.floor(math.log10(abs(x))) - 3) * 1.000001


def test_rounding_to_nearest_would_understate():
    assert float(f"{23.454:.4g}") < 23.454 <= float(printed_up(23.454))
