"""Validation of public accounting parameters (they raise :class:`ParameterError`)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from dpselect.core.arithmetic import plain_number
from dpselect.core.errors import ParameterError

__all__ = ["check_count", "check_delta", "check_loss"]


def check_loss(x: Any, name: str) -> Fraction:
    """A finite, non-negative privacy parameter as an exact :class:`Fraction` (a NumPy
    scalar by the value it holds).

    Parameters
    ----------
    x : int, float, Fraction or NumPy scalar
        The value to check: a finite number ``>= 0`` (a ``bool`` is refused).
    name : str
        The argument's name, quoted in the :class:`ParameterError`.

    Returns
    -------
    Fraction
        ``x``, exactly.
    """
    x = plain_number(x)
    if isinstance(x, bool) or not isinstance(x, (int, float, Fraction)):
        raise ParameterError(f"{name} must be a number, got {type(x).__name__}")
    if isinstance(x, float) and not math.isfinite(x):
        raise ParameterError(f"{name} must be finite, got {x!r}")
    q = Fraction(x)
    if q < 0:
        raise ParameterError(f"{name} must be non-negative, got {x!r}")
    return q


def check_delta(
    x: Any, name: str = "delta", *, allow_zero: bool = True, allow_one: bool = True
) -> Fraction:
    """A probability in ``[0, 1]`` (ends excluded on request) as an exact :class:`Fraction`.

    Parameters
    ----------
    x : int, float, Fraction or NumPy scalar
        The probability to check, in ``[0, 1]``.
    name : str, default "delta"
        The argument's name, quoted in the :class:`ParameterError`.
    allow_zero, allow_one : bool, default True
        Whether ``0`` (``1``) is accepted; ``False`` excludes that end of the interval.

    Returns
    -------
    Fraction
        ``x``, exactly.
    """
    q = check_loss(x, name)
    if q > 1:
        raise ParameterError(f"{name} must be at most 1, got {x!r}")
    if q == 0 and not allow_zero:
        raise ParameterError(f"{name} must be positive, got {x!r}")
    if q == 1 and not allow_one:
        raise ParameterError(f"{name} must be below 1, got {x!r}")
    return q


def check_count(k: Any, name: str = "k") -> int:
    """A positive integer count of mechanisms.

    Parameters
    ----------
    k : int or NumPy integer
        The count to check, at least 1 (a ``bool`` is refused).
    name : str, default "k"
        The argument's name, quoted in the :class:`ParameterError`.

    Returns
    -------
    int
        ``k`` as a Python ``int``.
    """
    k = plain_number(k)
    if isinstance(k, bool) or not isinstance(k, int):
        raise ParameterError(f"{name} must be an int, got {type(k).__name__}")
    if k < 1:
        raise ParameterError(f"{name} must be at least 1, got {k!r}")
    return k
