"""Searches over floats for the boundary of a certified, monotone predicate.

The predicates are rigorous checks (``True`` only when a bound is certainly met), so the value
returned always passes its check: a search can lose tightness near the boundary, never safety.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from dpselect.core.calibration import binary_search
from dpselect.core.errors import CalibrationError

__all__ = ["largest_passing", "smallest_passing"]


def largest_passing(passes: Callable[[float], bool], start: float) -> float:
    """The largest float ``x >= 0`` with ``passes(x)``, for ``passes`` true at 0 and
    false from some point on (found by doubling from ``start > 0``)."""
    hi = start
    while passes(hi):
        hi *= 2.0
        if not math.isfinite(hi):
            raise CalibrationError("the check passes for every value searched")
    if not passes(0.0):
        raise CalibrationError("the check fails even at 0")
    value: float = binary_search(passes, bounds=(0.0, hi), T=float)
    return value


def smallest_passing(passes: Callable[[float], bool], lo: float, hi: float) -> float:
    """The smallest float in ``[lo, hi]`` with ``passes``, for ``passes`` false at ``lo`` and
    true at ``hi`` (the caller checks both ends)."""
    value: float = binary_search(passes, bounds=(lo, hi), T=float)
    return value
