"""Answers of public parameters kept between calls (``dpselect.core.public_memo``: ``kept``,
``public_key``): the same answer only for the same public parameters, and no kept answer a
caller can change."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dpselect.core.errors import ParameterError
from dpselect.core.public_memo import kept, public_key
from dpselect.mechanisms.quantile_joint import joint_accuracy


def test_public_keys_tell_types_signs_and_values_apart():
    same = [((0.0, 1.0), (0.0, 1.0)), ([Fraction(1, 10)], [Fraction(2, 20)])]
    for a, b in same:
        assert public_key(a) == public_key(b)
    apart = [(1, 1.0), (1, True), (0.0, -0.0), (Fraction(1, 2), 0.5), ((1, 2), [1, 2]),
             (np.float64(0.5), 0.5), (None, 0)]  # fmt: skip
    for a, b in apart:
        assert public_key(a) != public_key(b), (a, b)
    assert public_key(object()) is None
    assert public_key([0.5, {1: 2}]) is None


def test_kept_answers_are_the_function_s_and_cannot_be_changed_by_a_caller():
    calls = []

    @kept
    def f(x, y):
        calls.append((x, y))
        if x < 0:
            raise ParameterError("x must be non-negative")
        return [x, y]

    first = f(1, 2.0)
    first.append("changed")
    assert f(1, 2.0) == [1, 2.0] and len(calls) == 1
    assert f(1.0, 2.0) == [1.0, 2.0] and len(calls) == 2  # 1.0 is not 1
    assert f(1, y=2.0) == [1, 2.0] and len(calls) == 3  # keywords: not kept
    for _ in range(2):
        with pytest.raises(ParameterError):
            f(-1, 0)
    assert len(calls) == 5  # errors are never kept
    unhashable = {"a": 1}
    assert f(1, unhashable) == [1, unhashable] and len(calls) == 6


def test_kept_joint_accuracy_tells_negative_zero_bounds_apart():
    plus = joint_accuracy((0.0, 1.0), [0.5], 1.0, 0.95)
    minus = joint_accuracy((-0.0, 1.0), [0.5], 1.0, 0.95)
    assert "[0, 1]" in plus[0] and "[-0, 1]" in minus[0]
