"""Argument checks shared by the mechanism constructors.

Each check looks only at public parameters and raises :class:`ParameterError` naming the
argument and the rule, at construction, before anything is sampled or charged.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Literal

from ..core.arithmetic import decimal_target, plain_number
from ..core.domains import AtomDomain, NaNFloatDomain, VectorDomain
from ..core.errors import DomainError, ParameterError

__all__ = [
    "check_confidence",
    "check_delta",
    "check_epsilon",
    "check_int",
    "check_max_rows",
    "check_non_nan_vector_domain",
    "check_optimize",
    "check_scale",
    "check_user_epsilon",
    "optimize_sign",
]

Real = float | int | Fraction


def _number(value: Any, name: str) -> Real:
    value = plain_number(value)  # NumPy scalars as the Python numbers they equal
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)):
        raise ParameterError(f"{name} must be a number, got {type(value).__name__}")
    if isinstance(value, float) and math.isnan(value):
        raise ParameterError(f"{name} must not be NaN")
    return value


def check_scale(scale: Any, name: str = "scale", allow_zero: bool = True) -> Real:
    """A finite scale, ``>= 0`` (``> 0`` unless ``allow_zero``).

    Parameters
    ----------
    scale : int, float, Fraction or NumPy scalar
        The value to check (not a ``bool``, NaN or infinity).
    name : str, default "scale"
        The argument's name, quoted in the :class:`ParameterError`.
    allow_zero : bool, default True
        Whether 0 is accepted.

    Returns
    -------
    int, float or Fraction
        ``scale`` as a Python number.
    """
    value = _number(scale, name)
    if isinstance(value, float) and math.isinf(value):
        raise ParameterError(f"{name} must be finite, got {value}")
    if value < 0 or (value == 0 and not allow_zero):
        rule = "non-negative" if allow_zero else "positive"
        raise ParameterError(f"{name} must be {rule}, got {value}")
    return value


def check_epsilon(epsilon: Any, name: str = "epsilon") -> Real:
    """A finite ``epsilon > 0``.

    Parameters
    ----------
    epsilon : int, float, Fraction or NumPy scalar
        The value to check.
    name : str, default "epsilon"
        The argument's name, quoted in the :class:`ParameterError`.

    Returns
    -------
    int, float or Fraction
        ``epsilon`` as a Python number.
    """
    return check_scale(epsilon, name, allow_zero=False)


def check_user_epsilon(epsilon: Any, name: str = "epsilon") -> Real:
    """A user's ``epsilon > 0`` target, read as the decimal it was typed as.

    For the recipes (what people call with numbers they type). A float is replaced by the
    largest float at or below its decimal value
    (:func:`~dpselect.core.arithmetic.decimal_target`: ``0.1`` becomes the float just below
    1/10), so that everything calibrated to it costs at most that decimal, and ten charges of
    ``0.1`` fit a ledger budget of ``1``. Ints and Fractions are unchanged. Mechanism
    constructors keep :func:`check_epsilon` (the exact value passed).

    Parameters
    ----------
    epsilon : int, float, Fraction or NumPy scalar
        The user's target, finite and ``> 0``.
    name : str, default "epsilon"
        The argument's name, quoted in the :class:`ParameterError`.

    Returns
    -------
    int, float or Fraction
        The target to calibrate to.
    """
    return decimal_target(check_epsilon(epsilon, name))


def check_delta(delta: Any, name: str = "delta", allow_zero: bool = True) -> Real:
    """A ``delta`` in ``[0, 1)`` (``(0, 1)`` unless ``allow_zero``).

    Parameters
    ----------
    delta : int, float, Fraction or NumPy scalar
        The value to check.
    name : str, default "delta"
        The argument's name, quoted in the :class:`ParameterError`.
    allow_zero : bool, default True
        Whether 0 is accepted.

    Returns
    -------
    int, float or Fraction
        ``delta`` as a Python number.
    """
    value = _number(delta, name)
    if value < 0 or value >= 1 or (value == 0 and not allow_zero):
        interval = "[0, 1)" if allow_zero else "(0, 1)"
        raise ParameterError(f"{name} must be in {interval}, got {value}")
    return value


def check_confidence(confidence: Any) -> float:
    """A confidence level in ``(0, 1)`` (of an accuracy statement or a guarantee).

    Parameters
    ----------
    confidence : float
        The value to check (a number, not a ``bool``).

    Returns
    -------
    float
        ``confidence`` as a float.
    """
    confidence = plain_number(confidence)
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float, Fraction)):
        raise ParameterError(f"confidence must be a number, got {type(confidence).__name__}")
    value = float(confidence)
    if not 0 < value < 1:
        raise ParameterError(f"confidence must be in (0, 1), got {confidence!r}")
    return value


def check_max_rows(max_rows: Any) -> int:
    """``max_rows``: an int at least 1, the rows (or bids) one privacy unit keeps
    (docs/contribution_bounding.md, "Rows per unit").

    Parameters
    ----------
    max_rows : int or NumPy integer
        The value to check (not a ``bool``).

    Returns
    -------
    int
        ``max_rows`` as a Python ``int``.
    """
    max_rows = plain_number(max_rows)
    if isinstance(max_rows, bool) or not isinstance(max_rows, int):
        raise ParameterError(f"max_rows must be an int >= 1, got {max_rows!r}")
    if max_rows < 1:
        raise ParameterError(f"max_rows must be at least 1, got {max_rows}")
    return max_rows


def check_int(value: Any, name: str, minimum: int = 0) -> int:
    """An ``int`` (not a bool; a NumPy integer as its ``int``) that is at least ``minimum``.

    Parameters
    ----------
    value : int or NumPy integer
        The value to check.
    name : str
        The argument's name, quoted in the :class:`ParameterError`.
    minimum : int, default 0
        The least value accepted.

    Returns
    -------
    int
        ``value`` as a Python ``int``.
    """
    value = plain_number(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParameterError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ParameterError(f"{name} must be at least {minimum}, got {value}")
    return value


def check_optimize(optimize: Any) -> Literal["max", "min"]:
    """``"max"`` or ``"min"`` (seed 001: "must specify optimization").

    Parameters
    ----------
    optimize : object
        The value to check.

    Returns
    -------
    {"max", "min"}
        ``optimize``.
    """
    if optimize not in ("max", "min"):
        raise ParameterError(f'optimize must be "max" or "min", got {optimize!r}')
    return "max" if optimize == "max" else "min"


def optimize_sign(optimize: Literal["max", "min"]) -> int:
    """+1 for "max", -1 for "min": shifts are ``sign * scores``.

    Parameters
    ----------
    optimize : {"max", "min"}
        The direction of the selection.

    Returns
    -------
    int
        ``1`` or ``-1``.
    """
    return 1 if optimize == "max" else -1


def check_non_nan_vector_domain(domain: Any, name: str = "input_domain") -> VectorDomain:
    """A vector domain of int or non-NaN float atoms (seed 001, Function, line 7).

    Parameters
    ----------
    domain : Domain
        The domain to check.
    name : str, default "input_domain"
        The argument's name, quoted in the :class:`DomainError`.

    Returns
    -------
    VectorDomain
        ``domain``, unchanged.
    """
    if not isinstance(domain, VectorDomain) or not isinstance(domain.element_domain, AtomDomain):
        raise DomainError(f"{name} must be a vector_domain of atoms, got {domain!r}")
    if isinstance(domain.element_domain, NaNFloatDomain):
        raise DomainError(f"{name} must be non-nan: use atom_domain(float, nan=False)")
    return domain
