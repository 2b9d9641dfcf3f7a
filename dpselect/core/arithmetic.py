"""Outward-rounded arithmetic for privacy and stability maps.

Every map computes a bound on a privacy loss. Rounding must never make that bound smaller than
the true real value, so maps compute exactly with :class:`fractions.Fraction` and convert to
``float`` rounding *up* (toward a larger loss) only at the end, or combine floats with the
``*_up`` helpers here, which round every step toward +infinity.
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from fractions import Fraction
from numbers import Integral, Real
from typing import Any

__all__ = [
    "Number",
    "add_up",
    "as_decimal",
    "decimal_target",
    "div_up",
    "exact",
    "float_down",
    "float_up",
    "mul_up",
    "plain_number",
    "printed_down",
    "printed_up",
    "sqrt_down",
    "sqrt_up",
]

Number = int | float | Fraction


def plain_number(value: Any) -> Any:
    """A NumPy (or other :mod:`numbers`) scalar as the Python ``int`` or ``float`` it equals.

    ``np.int64(10)`` becomes ``10`` and ``np.float32(0.1)`` becomes ``float(np.float32(0.1))
    = 0.10000000149011612``: the value exactly, never the decimal it was typed as (a float32
    cannot hold 0.1); ``np.float64`` (a ``float`` subclass) becomes a plain ``float``.
    Booleans (``bool``, ``numpy.bool_``), Python numbers, Fractions and anything else are
    returned unchanged, for the caller's own check to accept or refuse.

    Parameters
    ----------
    value : object
        Any value, typically a number a caller passed (a NumPy scalar or a Python number).

    Returns
    -------
    object
        An ``int`` for a non-bool :class:`numbers.Integral`, a ``float`` for any other
        :class:`numbers.Real` that is not a Fraction, else ``value`` itself.
    """
    if type(value) in (int, float) or isinstance(value, (bool, Fraction)):
        return value
    if type(value).__name__ == "bool_":  # numpy.bool_: not a number here
        return value
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, Real):
        return float(value)
    return value


def exact(x: Real | Number, name: str = "value") -> Fraction:
    """Return ``x`` as an exact :class:`Fraction`; infinities and NaN are refused.

    Parameters
    ----------
    x : int, float or Fraction
        The number. Anything else that ``float()`` accepts goes through ``float`` first (a
        NumPy integer beyond 2^53 is then rounded: pass it through :func:`plain_number`).
    name : str, default "value"
        The argument's name, quoted in error messages.

    Returns
    -------
    Fraction
        The exact value of ``x`` (for a float, its binary value, not the decimal it prints
        as: see :func:`as_decimal`).

    Raises
    ------
    TypeError
        ``x`` is a bool.
    ValueError
        ``x`` is infinite or NaN.
    """
    if isinstance(x, Fraction):
        return x
    if isinstance(x, bool):
        raise TypeError(f"{name} must be a number, not a bool")
    if isinstance(x, int):
        return Fraction(x)
    xf = float(x)
    if not math.isfinite(xf):
        raise ValueError(f"{name} must be finite, got {xf!r}")
    return Fraction(xf)


def float_up(q: Fraction | int) -> float:
    """The smallest float that is >= ``q`` (``inf`` when ``q`` is beyond the float range).

    Parameters
    ----------
    q : Fraction or int
        The exact value to round (anything :class:`Fraction` accepts, floats exactly).

    Returns
    -------
    float
        ``q`` rounded toward +infinity: ``inf`` above the largest float, the most negative
        finite float below it (never ``-inf``).
    """
    q = Fraction(q)
    try:
        f = float(q)
    except OverflowError:
        return math.inf if q > 0 else -math.nextafter(math.inf, 0.0)
    if math.isinf(f):
        return f if f > 0 else -math.nextafter(math.inf, 0.0)
    if Fraction(f) < q:
        f = math.nextafter(f, math.inf)
    return f


def float_down(q: Fraction | int) -> float:
    """The largest float that is <= ``q`` (``-inf`` when below the float range; 0 is +0.0).

    Parameters
    ----------
    q : Fraction or int
        The exact value to round (anything :class:`Fraction` accepts, floats exactly).

    Returns
    -------
    float
        ``q`` rounded toward -infinity: the largest finite float above the float range
        (never ``inf``).
    """
    return -float_up(-Fraction(q)) + 0.0  # + 0.0 turns -0.0 into 0.0


def as_decimal(x: Number) -> Fraction:
    """The exact value a user meant by ``x``: a float is read as the decimal it prints as.

    ``0.1`` typed by a user is the decimal 1/10, while the float ``0.1`` is
    ``0.1000000000000000055...``: ten charges of that float exceed a budget of 1. ``repr`` of a
    float is the shortest decimal that rounds back to it, i.e. what was typed.

    Parameters
    ----------
    x : int, float or Fraction
        A finite number. A float must be a Python ``float`` whose ``repr`` is a decimal
        (convert NumPy scalars with :func:`plain_number` first).

    Returns
    -------
    Fraction
        For a float, the decimal ``repr(x)`` prints; otherwise ``Fraction(x)``.

    Raises
    ------
    ValueError
        ``x`` is an infinite or NaN float.
    """
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ValueError(f"value must be finite, got {x!r}")
        return Fraction(repr(x))
    return Fraction(x)


def decimal_target(x: Number) -> Number:
    """The largest float at or below the decimal ``x`` stands for (:func:`as_decimal`).

    A mechanism calibrated to this target has a loss (its map value) at most the decimal the
    user typed, so ten releases at ``epsilon=0.1`` fit a budget of ``1`` exactly. Ints and
    Fractions are exact already and come back unchanged; floats move by at most one ulp.

    Parameters
    ----------
    x : int, float or Fraction
        A target as the user typed it (``epsilon``, a budget); a float as for
        :func:`as_decimal` (finite, a Python ``float``).

    Returns
    -------
    int, float or Fraction
        ``x`` itself unless it is a float; for a float, ``x`` or the float just below it,
        whichever is the largest float ``<=`` the decimal.
    """
    if not isinstance(x, float):
        return x
    return float_down(as_decimal(x))


def _as_fraction_or_inf(x: Number) -> Fraction | float:
    if isinstance(x, float) and math.isinf(x):
        return x
    return exact(x)


def add_up(a: Number, b: Number) -> float:
    """``a + b`` rounded up to a float.

    Parameters
    ----------
    a, b : int, float or Fraction
        The operands, of either sign. Infinite floats are added as floats (``inf + -inf``
        gives ``nan``); NaN is refused with ``ValueError``.

    Returns
    -------
    float
        The smallest float ``>=`` the exact sum.
    """
    fa, fb = _as_fraction_or_inf(a), _as_fraction_or_inf(b)
    if isinstance(fa, float) or isinstance(fb, float):
        return float(fa) + float(fb)
    return float_up(fa + fb)


def mul_up(a: Number, b: Number) -> float:
    """``a * b`` rounded up to a float, for non-negative operands (``0 * inf`` is 0).

    Parameters
    ----------
    a, b : int, float or Fraction
        Non-negative operands; ``inf`` is allowed. Negative operands and NaN raise
        ``ValueError``.

    Returns
    -------
    float
        The smallest float ``>=`` the exact product; ``inf`` when one operand is ``inf`` and
        the other positive.
    """
    fa, fb = _as_fraction_or_inf(a), _as_fraction_or_inf(b)
    if fa < 0 or fb < 0:
        raise ValueError("mul_up expects non-negative operands")
    if fa == 0 or fb == 0:
        return 0.0
    if isinstance(fa, float) or isinstance(fb, float):
        return math.inf
    return float_up(fa * fb)


def div_up(a: Number, b: Number) -> float:
    """``a / b`` rounded up to a float, for ``a >= 0`` and ``b >= 0``.

    ``0 / b`` is 0 for any ``b``; ``a / 0`` is ``inf`` for ``a > 0``; ``a / inf`` is 0.

    Parameters
    ----------
    a : int, float or Fraction
        The dividend, ``>= 0`` (``inf`` allowed: ``inf / b`` is ``inf`` for ``b > 0``, also
        for ``b = inf``).
    b : int, float or Fraction
        The divisor, ``>= 0`` (``0`` and ``inf`` allowed). Negative values and NaN raise
        ``ValueError``.

    Returns
    -------
    float
        The smallest float ``>=`` the exact quotient, with the conventions above.
    """
    fa, fb = _as_fraction_or_inf(a), _as_fraction_or_inf(b)
    if fa < 0 or fb < 0:
        raise ValueError("div_up expects non-negative operands")
    if fa == 0:
        return 0.0
    if fb == 0 or isinstance(fa, float):
        return math.inf
    if isinstance(fb, float):
        return 0.0
    return float_up(fa / fb)


def _root_bits(q: Fraction) -> int:
    """Fraction bits for an integer square root of ``q > 0`` with at least 64 exact bits."""
    log2 = q.numerator.bit_length() - q.denominator.bit_length()
    return max(128, (130 - log2) // 2)


def sqrt_down(a: Number) -> float:
    """The square root of ``a`` rounded down to a float; ``0.0`` for ``a <= 0``.

    For displays of what still fits in a budget, which must never over-state it (exact
    integer square roots, as :func:`sqrt_up`).

    Parameters
    ----------
    a : int, float or Fraction
        Any number but NaN (``ValueError``); ``inf`` gives ``inf``, ``-inf`` gives ``0.0``.

    Returns
    -------
    float
        A float never above the real square root of ``a`` (and at most two ulps below).
    """
    fa = _as_fraction_or_inf(a)
    if isinstance(fa, float):
        return math.inf if fa > 0 else 0.0
    if fa <= 0:
        return 0.0
    s = _root_bits(fa)
    root = math.isqrt((fa.numerator << (2 * s)) // fa.denominator)
    return float_down(Fraction(root, 1 << s))


def sqrt_up(a: Number) -> float:
    """The square root of ``a >= 0`` rounded up to a float (exact integer square roots).

    Parameters
    ----------
    a : int, float or Fraction
        A non-negative number (``inf`` allowed); negative values and NaN raise ``ValueError``.

    Returns
    -------
    float
        A float never below the real square root of ``a`` (and at most two ulps above).
    """
    fa = _as_fraction_or_inf(a)
    if fa < 0:
        raise ValueError("sqrt_up expects a non-negative operand")
    if isinstance(fa, float):
        return math.inf
    if fa == 0:
        return 0.0
    # floor(sqrt(p/q) * 2^s) computed with integers, then one ulp up unless the root is
    # exact: always an upper bound.
    s = _root_bits(fa)
    num = fa.numerator << (2 * s)
    root = math.isqrt(num // fa.denominator)
    exact_root = root * root * fa.denominator == num
    upper = Fraction(root if exact_root else root + 1, 1 << s)
    return float_up(upper)


def printed_down(x: float, digits: int = 4) -> str:
    """``x`` printed with ``digits`` significant digits, rounded *down*: the text of a printed
    lower bound (what remains of a budget) is never above it, so the printed amount can be
    asked for and fits.

    Parameters
    ----------
    x : float
        The value to print, a lower bound; a negative value prints with its sign (and its
        magnitude rounded up). Infinities and NaN print as ``format`` writes them.
    digits : int, default 4
        Significant digits kept.

    Returns
    -------
    str
        ``x`` in ``f"{value:.{digits}g}"`` form, for a value at most ``x``.

    Examples
    --------
    >>> printed_down(9.999999999999997e-07, 6), printed_down(0.40000000000064184, 6)
    ('9.99999e-07', '0.4')
    """
    return "-" + printed_up(-x, digits) if x < 0 else _printed(x, digits, ROUND_FLOOR)


def printed_up(x: float, digits: int = 4) -> str:
    """``x`` printed with ``digits`` significant digits, rounded *up* (toward +infinity): the
    text of a printed upper bound (an accuracy statement's error, a margin, a cost) is never
    below the bound it prints, which rounding to nearest (``f"{x:.4g}"``) does not ensure.

    Parameters
    ----------
    x : float
        The value to print, an upper bound; a negative value prints with its sign (and its
        magnitude rounded down). Infinities and NaN print as ``format`` writes them.
    digits : int, default 4
        Significant digits kept.

    Returns
    -------
    str
        ``x`` in ``f"{value:.{digits}g}"`` form, for a value at least ``x``.

    Examples
    --------
    >>> printed_up(23.454), f"{23.454:.4g}"
    ('23.46', '23.45')
    >>> printed_up(2.0), printed_up(123456.0), printed_up(-1.23456)
    ('2', '1.235e+05', '-1.234')
    """
    return _printed(x, digits, ROUND_CEILING)


def _printed(x: float, digits: int, mode: str) -> str:
    """``x`` rounded to ``digits`` significant digits in the decimal rounding ``mode``."""
    if not math.isfinite(x) or x == 0:
        return f"{x:.{digits}g}"
    exact_x = Decimal(x)  # the float's exact value
    shift = exact_x.adjusted() - digits + 1
    rounded = exact_x.scaleb(-shift).to_integral_value(rounding=mode).scaleb(shift)
    # ``rounded`` has at most ``digits`` significant digits (``10^digits`` has one), so the
    # nearest float prints back as it
    return f"{float(rounded):.{digits}g}"
