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
    """Return ``x`` as an exact :class:`Fraction`; infinities and NaN are refused."""
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
    """The smallest float that is >= ``q`` (``inf`` when ``q`` is beyond the float range)."""
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
    """The largest float that is <= ``q`` (``-inf`` when below the float range; 0 is +0.0)."""
    return -float_up(-Fraction(q)) + 0.0  # + 0.0 turns -0.0 into 0.0


def as_decimal(x: Number) -> Fraction:
    """The exact value a user meant by ``x``: a float is read as the decimal it prints as.

    ``0.1`` typed by a user is the decimal 1/10, while the float ``0.1`` is
    ``0.1000000000000000055...``: ten charges of that float exceed a budget of 1. ``repr`` of a
    float is the shortest decimal that rounds back to it, i.e. what was typed.
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
    """
    if not isinstance(x, float):
        return x
    return float_down(as_decimal(x))


def _as_fraction_or_inf(x: Number) -> Fraction | float:
    if isinstance(x, float) and math.isinf(x):
        return x
    return exact(x)


def add_up(a: Number, b: Number) -> float:
    """``a + b`` rounded up to a float."""
    fa, fb = _as_fraction_or_inf(a), _as_fraction_or_inf(b)
    if isinstance(fa, float) or isinstance(fb, float):
        return float(fa) + float(fb)
    return float_up(fa + fb)


def mul_up(a: Number, b: Number) -> float:
    """``a * b`` rounded up to a float, for non-negative operands (``0 * inf`` is 0)."""
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
    """The square root of ``a >= 0`` rounded up to a float (exact integer square roots)."""
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
