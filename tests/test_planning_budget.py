"""The one place a budget is split: shares are exact and never exceed the total."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpselect.core.errors import ParameterError
from dpselect.planning.budget import Split, divide, first_share, remainder

positive = st.floats(min_value=1e-9, max_value=1e3, allow_nan=False)
share = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@given(positive, share, st.floats(min_value=0.0, max_value=0.5), share)
def test_a_first_share_and_the_rest_add_up_to_the_total(eps, f, delta, fd) -> None:
    s = first_share(eps, f, delta=delta, delta_fraction=fd)
    assert s.first_epsilon + s.rest_epsilon == Fraction(eps)
    assert s.first_delta + s.rest_delta == Fraction(delta)
    assert s.first_epsilon == Fraction(eps) * Fraction(f)


@given(positive, st.integers(min_value=1, max_value=10_000))
def test_divided_shares_never_exceed_what_they_divide(eps, g) -> None:
    each = divide(eps, g)
    assert 0 <= Fraction(each) * g <= Fraction(eps)


@given(positive, positive)
def test_the_remainder_rounds_down_and_is_never_negative(total, spent) -> None:
    rest = remainder(total, spent)
    assert rest >= 0
    assert Fraction(rest) + Fraction(spent) <= max(Fraction(total), Fraction(spent))


def test_shares_outside_the_unit_interval_are_refused() -> None:
    with pytest.raises(ParameterError, match="share"):
        first_share(1.0, 1.5)
    with pytest.raises(ParameterError, match="epsilon"):
        first_share(-1.0, 0.5)
    with pytest.raises(ParameterError, match="times"):
        divide(1.0, 0)


def test_a_split_that_overspends_cannot_be_built() -> None:
    one = Fraction(1)
    with pytest.raises(ValueError, match="within the total"):
        Split(one, Fraction(0), one, Fraction(0), Fraction(1, 10), Fraction(0))
