"""Rigorous real arithmetic for privacy bounds: python-flint ``arb`` balls, rounded outward.

A privacy bound is only as good as the direction of its rounding. Functions here evaluate a
formula as an ``arb`` ball (an interval certainly containing the real value), raise the working
precision until the ball is narrow, and convert its *upper* end to the smallest float above it.
A comparison ``certainly_at_most`` is ``True`` only when the whole ball lies below the target.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

from flint import arb, ctx, fmpq

from .arithmetic import Number, float_down, float_up

__all__ = [
    "PRECISIONS",
    "NotCertified",
    "arb_of",
    "certainly_at_most",
    "evaluate",
    "lower_float",
    "upper_float",
    "upper_fraction",
]

#: Working precisions tried in turn (bits).
PRECISIONS = (128, 256, 768, 2048)


class NotCertified(ArithmeticError):
    """The ball is infinite or NaN: no finite bound could be certified."""


def arb_of(x: Number) -> arb:
    """A ball holding ``x`` exactly when it is a float or a small int (else a tight ball).

    Parameters
    ----------
    x : int, float or Fraction
        The value. Other ints and Fractions are rounded to the current ``ctx`` precision
        (a ball that still contains ``x``).

    Returns
    -------
    flint.arb
        A ball containing ``x``: exact for a float (infinities included; NaN gives a NaN
        ball) or for an int below 2^53 in magnitude.
    """
    if isinstance(x, float):
        return arb(x)
    q = Fraction(x)
    if q.denominator == 1 and abs(q.numerator) < (1 << 53):
        return arb(q.numerator)
    return arb(fmpq(q.numerator, q.denominator))


def _fraction_of_exact(x: arb) -> Fraction:
    man, exp = x.man_exp()
    m, e = int(man), int(exp)
    return Fraction(m) * (Fraction(2) ** e)


def upper_fraction(x: arb) -> Fraction:
    """An exact rational ``>=`` every point of the ball ``x``.

    Parameters
    ----------
    x : flint.arb
        A finite ball.

    Returns
    -------
    Fraction
        The ball's upper end, exactly.

    Raises
    ------
    NotCertified
        ``x`` is infinite or NaN.
    """
    if not x.is_finite():
        raise NotCertified(f"no finite upper bound: {x}")
    return _fraction_of_exact(x.upper())


def lower_fraction(x: arb) -> Fraction:
    """An exact rational ``<=`` every point of the ball ``x``.

    Parameters
    ----------
    x : flint.arb
        A finite ball.

    Returns
    -------
    Fraction
        The ball's lower end, exactly.

    Raises
    ------
    NotCertified
        ``x`` is infinite or NaN.
    """
    if not x.is_finite():
        raise NotCertified(f"no finite lower bound: {x}")
    return _fraction_of_exact(x.lower())


def upper_float(x: arb) -> float:
    """The smallest float ``>=`` the upper end of ``x`` (``inf`` for an unbounded ball).

    Parameters
    ----------
    x : flint.arb
        A ball; an infinite or NaN ball gives ``inf``.

    Returns
    -------
    float
        An upper bound of every point of ``x``.
    """
    if not x.is_finite():
        return math.inf
    return float_up(upper_fraction(x))


def lower_float(x: arb) -> float:
    """The largest float ``<=`` the lower end of ``x``.

    Parameters
    ----------
    x : flint.arb
        A finite ball (unlike :func:`upper_float`, an infinite or NaN ball raises).

    Returns
    -------
    float
        A lower bound of every point of ``x``.

    Raises
    ------
    NotCertified
        ``x`` is infinite or NaN.
    """
    return float_down(lower_fraction(x))


def _accurate(x: arb, bits: int) -> bool:
    if not x.is_finite():
        return False
    if x.is_exact():
        return True
    if x.rel_accuracy_bits() >= bits:
        return True
    # A ball around 0 (for example a sum that cancels to 0) is accurate when it is tiny.
    return bool(x.rad() < arb(2) ** -bits)


def evaluate(formula: Callable[[], arb], accuracy_bits: int = 60) -> arb:
    """Evaluate ``formula`` at increasing precision until its ball is ``accuracy_bits`` narrow.

    The last ball computed is returned even when it is wider: it still holds the true value.

    Parameters
    ----------
    formula : callable
        ``formula() -> arb``, called once per precision in :data:`PRECISIONS` (bits) with
        ``ctx.prec`` set to it, until the result is accurate.
    accuracy_bits : int, default 60
        The relative accuracy wanted, in bits (a ball around 0 is accurate when its radius
        is below ``2^-accuracy_bits``; an exact ball always is).

    Returns
    -------
    flint.arb
        The first accurate ball, else the one computed at the highest precision (possibly
        infinite or NaN).
    """
    result = arb("nan")
    for prec in PRECISIONS:
        with ctx.workprec(prec):
            result = formula()
        if _accurate(result, accuracy_bits):
            return result
    return result


def certainly_at_most(formula: Callable[[], arb], target: Fraction) -> bool:
    """``True`` only when the real value of ``formula`` is certainly ``<= target``.

    Precision is raised while the answer is undecided; undecided at the end counts as ``False``
    (the conservative answer for a privacy check).

    Parameters
    ----------
    formula : callable
        ``formula() -> arb``, evaluated at each precision in :data:`PRECISIONS` (bits) in
        turn; an infinite or NaN ball counts as undecided.
    target : Fraction
        The bound to compare with, exactly.

    Returns
    -------
    bool
        ``True`` when a ball's upper end is ``<= target``; ``False`` when a ball lies above
        ``target`` or no precision decides.
    """
    for prec in PRECISIONS:
        with ctx.workprec(prec):
            value = formula()
        if not value.is_finite():
            continue
        if upper_fraction(value) <= target:
            return True
        if lower_fraction(value) > target:
            return False
    return False
