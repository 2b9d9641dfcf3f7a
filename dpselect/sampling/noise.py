"""Noise families for report-noisy-max: Gumbel, Exponential and Laplace (seeds 001, 004).

A family is described by its standard inverse CDF ``g`` (scale 1, location 0), which is
monotone increasing on (0, 1). The noisy key of candidate ``i`` is
``shift_i / scale + g(U_i)`` with ``U_i`` uniform. Each family gives:

- a **float fast path**: ``g`` at the ends of a 52-bit grid interval ``[j, j + 1] * 2^-52``
  containing ``U``. The ends are exact floats, so only the rounding of ``log``/``log1p``
  enters the error, bounded by :data:`NOISE_ABS_ERROR` (see ``docs/exactness.md``);
- an **exact refinement**: ``g`` at the ends of the dyadic interval of a :class:`LazyUniform`,
  as python-flint ``arb`` balls (rigorous enclosures), with the values at 0 and 1 (where ``g``
  may be infinite) handled explicitly.

Families:

- :data:`GUMBEL`: ``g(u) = -log(-log u)``. Report-noisy-max with Gumbel noise is the
  exponential mechanism (seed 001, Theorem 1.1; seed 000, Theorem 2.1).
- :data:`EXPONENTIAL`: ``g(u) = -log(1 - u)``. Report-noisy-max with exponential noise is
  permute-and-flip in law (seed 004; McKenna and Sheldon 2020, Ding et al. 2021).
- :data:`LAPLACE`: ``g(u) = log(2u)`` for ``u < 1/2``, ``-log(2(1 - u))`` otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import flint
import numpy as np
import numpy.typing as npt

from ..core.errors import ParameterError
from .uniform import LazyUniform

__all__ = [
    "EXPONENTIAL",
    "FAMILIES",
    "GRID_BITS",
    "GUMBEL",
    "LAPLACE",
    "NOISE_ABS_ERROR",
    "NoiseFamily",
    "get_family",
    "grid_lower",
    "grid_points",
    "grid_upper",
]

F64 = npt.NDArray[np.float64]
U64 = npt.NDArray[np.uint64]

#: Bits of a word that the float path uses: ``j = w >> 12`` locates ``U`` in
#: ``[j, j + 1] * 2^-52``, and both ends are exact floats.
GRID_BITS = 52
_EXPONENT_OF_ONE = np.uint64(0x3FF0000000000000)
_ONE_MINUS_ULP = 1.0 - 2.0**-GRID_BITS


def grid_points(words: U64) -> F64:
    """``1 + j 2^-52`` with ``j = w >> 12``: exact floats in [1, 2), built from the bits.

    Parameters
    ----------
    words : numpy.ndarray of uint64
        Random words (the first 64 binary digits of uniforms); not modified.

    Returns
    -------
    numpy.ndarray of float64
        A new array of the shape of ``words``.
    """
    x = np.right_shift(words, np.uint64(64 - GRID_BITS))
    np.bitwise_or(x, _EXPONENT_OF_ONE, out=x)
    points: F64 = x.view(np.float64)
    return points


def grid_upper(words: U64) -> F64:
    """``(j + 1) 2^-52``, exactly (Sterbenz: the subtraction of floats in [1/2, 2] is exact).

    Parameters
    ----------
    words : numpy.ndarray of uint64
        Random words; ``j = w >> 12`` for each word ``w`` (not modified).

    Returns
    -------
    numpy.ndarray of float64
        A new array of the upper ends of the words' grid intervals, in ``[2^-52, 1]``.
    """
    v = grid_points(words)
    return np.subtract(v, _ONE_MINUS_ULP, out=v)


def grid_lower(words: U64) -> F64:
    """``j 2^-52``, exactly.

    Parameters
    ----------
    words : numpy.ndarray of uint64
        Random words; ``j = w >> 12`` for each word ``w`` (not modified).

    Returns
    -------
    numpy.ndarray of float64
        A new array of the lower ends of the words' grid intervals, in ``[0, 1 - 2^-52]``.
    """
    v = grid_points(words)
    return np.subtract(v, 1.0, out=v)


#: Bound on |float g - g| for every finite float-path value: log and log1p are assumed
#: accurate to a relative 2^-45 (NumPy's are within ~1.1 ulp = 2^-52.9; the test suite checks
#: 2^-48), and |g| <= 37 on the 52-bit grid. See docs/exactness.md, "Float path error".
NOISE_ABS_ERROR = 38.0 * 2.0**-44


@dataclass(frozen=True)
class NoiseFamily:
    """One noise family: its name, inverse CDF in float and in arb, and its values at 0 and 1."""

    name: str
    g_at_zero: float  # g(0): -inf, or a finite value
    g_at_one: float  # g(1): +inf for every family here

    def add_noise_inplace(self, q: F64 | float, v: F64) -> F64:
        """``q + g(v)`` in float64, overwriting ``v``; use the returned array.

        ``v`` holds exact grid points in [0, 1]; the ends give ±inf where ``g`` does.

        Parameters
        ----------
        q : numpy.ndarray of float64 or float
            The scaled shifts ``shift / scale``: an array of the shape of ``v``, or a scalar.
        v : numpy.ndarray of float64
            Grid points (:func:`grid_lower`, :func:`grid_upper`); overwritten.

        Returns
        -------
        numpy.ndarray of float64
            ``q + g(v)``: ``v`` itself, or a new array for the Laplace family.
        """
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            if self.name == "gumbel":  # q - log(-log v)
                np.log(v, out=v)
                np.negative(v, out=v)
                np.log(v, out=v)
                return np.subtract(q, v, out=v)
            if self.name == "exponential":  # q - log1p(-v)
                np.negative(v, out=v)
                np.log1p(v, out=v)
                return np.subtract(q, v, out=v)
            # Laplace: t = 2v - 1 is exact on the grid; g = sign(t) * -log1p(-|t|)
            np.multiply(v, 2.0, out=v)
            np.subtract(v, 1.0, out=v)
            a = np.abs(v)
            np.negative(a, out=a)
            np.log1p(a, out=a)
            np.negative(a, out=a)
            np.copysign(a, v, out=a)
            return np.add(q, a, out=a)

    def float_g(self, v: F64) -> F64:
        """``g(v)`` in float64 for exact grid points ``v`` in [0, 1] (±inf at the ends).

        Parameters
        ----------
        v : numpy.ndarray of float64
            Grid points in [0, 1] (array-like; copied, not modified).

        Returns
        -------
        numpy.ndarray of float64
            ``g`` at each point; at points of the 52-bit grid, within
            :data:`NOISE_ABS_ERROR` of the real value where finite.
        """
        return self.add_noise_inplace(0.0, np.array(v, dtype=np.float64))

    def float_g_inverse(self, x: F64) -> F64:
        """An approximation of ``g^-1(x)`` in [0, 1], elementwise (not certified: callers that
        rely on it check the result with :meth:`float_g` and the error bound).

        Parameters
        ----------
        x : numpy.ndarray of float64
            Noise values (array-like; ``-inf`` and ``inf`` allowed).

        Returns
        -------
        numpy.ndarray of float64
            Approximations of the ``u`` with ``g(u) = x``, in [0, 1].
        """
        with np.errstate(divide="ignore", over="ignore", invalid="ignore", under="ignore"):
            x = np.asarray(x, dtype=np.float64)
            if self.name == "gumbel":  # exp(-exp(-x))
                out: F64 = np.exp(-np.exp(-x))
            elif self.name == "exponential":  # 1 - exp(-x) for x > 0, else 0
                out = np.where(x > 0, -np.expm1(-np.maximum(x, 0.0)), 0.0)
            else:  # Laplace: exp(x) / 2 below 0, 1 - exp(-x) / 2 above
                out = np.where(x < 0, 0.5 * np.exp(np.minimum(x, 0.0)), 1 - 0.5 * np.exp(-x))
            return out

    def float_upper(self, words: U64) -> F64:
        """``g`` at the upper end ``(j + 1) 2^-52`` of each word's grid interval.

        Parameters
        ----------
        words : numpy.ndarray of uint64
            Random words (not modified).

        Returns
        -------
        numpy.ndarray of float64
            ``g((j + 1) 2^-52)`` per word, ``inf`` where ``j + 1 = 2^52``.
        """
        return self.float_g(grid_upper(words))

    def float_lower(self, words: U64) -> F64:
        """``g`` at the lower end ``j 2^-52`` of each word's grid interval.

        Parameters
        ----------
        words : numpy.ndarray of uint64
            Random words (not modified).

        Returns
        -------
        numpy.ndarray of float64
            ``g(j 2^-52)`` per word, ``g(0)`` (:attr:`g_at_zero`) where ``j = 0``.
        """
        return self.float_g(grid_lower(words))

    def arb_at(self, m: int, b: int) -> Any:
        """An arb ball holding ``g(m / 2^b)`` for ``0 < m < 2^b`` at the current precision.

        Parameters
        ----------
        m : int
            The numerator, ``0 < m < 2^b`` (the ends 0 and ``2^b`` are not handled here).
        b : int
            The number of binary digits: the point is ``m / 2^b``.

        Returns
        -------
        flint.arb
            A ball containing ``g(m / 2^b)``, computed at ``flint.ctx.prec``.
        """
        x = flint.arb((m, -b))
        r = flint.arb(((1 << b) - m, -b))  # 1 - x, exact
        half = 2 * m <= (1 << b)
        if self.name == "gumbel":
            neg_log_x = -x.log() if half else -(-r).log1p()
            return -neg_log_x.log()
        if self.name == "exponential":
            return -(-x).log1p() if half else -r.log()
        return (2 * x).log() if half else -(2 * r).log()

    def arb_interval(self, u: LazyUniform) -> tuple[Any, Any]:
        """Arb balls ``(lo, hi)`` with ``lo <= g(U) <= hi`` for every ``U`` in ``u``'s interval.

        An end at 0 or 1 gives ``g(0)`` or ``g(1)`` (possibly infinite) as an exact ball.

        Parameters
        ----------
        u : LazyUniform
            The lazy uniform: ``U`` lies in ``[prefix / 2^nbits, (prefix + 1) / 2^nbits]``.

        Returns
        -------
        tuple of flint.arb
            ``(lo, hi)``: balls holding ``g`` at the two ends of ``u``'s interval, at
            ``flint.ctx.prec``.
        """
        m, b = u.prefix, u.nbits
        lo = flint.arb(self.g_at_zero) if m == 0 else self.arb_at(m, b)
        hi = flint.arb(self.g_at_one) if m + 1 == (1 << b) else self.arb_at(m + 1, b)
        return lo, hi

    def exact_g(self, m: int, b: int, prec: int) -> Any:
        """``g(m / 2^b)`` as an arb ball at ``prec`` bits (test and reference helper).

        Parameters
        ----------
        m : int
            The numerator, ``0 <= m <= 2^b`` (the ends give ``g(0)`` and ``g(1)``).
        b : int
            The number of binary digits: the point is ``m / 2^b``.
        prec : int
            The working precision, in bits.

        Returns
        -------
        flint.arb
            A ball containing ``g(m / 2^b)`` (exact, possibly infinite, at the ends).
        """
        with flint.ctx.workprec(prec):
            if m == 0:
                return flint.arb(self.g_at_zero)
            if m == 1 << b:
                return flint.arb(self.g_at_one)
            return self.arb_at(m, b)


GUMBEL = NoiseFamily("gumbel", g_at_zero=-math.inf, g_at_one=math.inf)
EXPONENTIAL = NoiseFamily("exponential", g_at_zero=0.0, g_at_one=math.inf)
LAPLACE = NoiseFamily("laplace", g_at_zero=-math.inf, g_at_one=math.inf)

FAMILIES: dict[str, NoiseFamily] = {f.name: f for f in (GUMBEL, EXPONENTIAL, LAPLACE)}


def get_family(noise: str | NoiseFamily) -> NoiseFamily:
    """The family named ``noise`` ("gumbel", "exponential" or "laplace").

    Parameters
    ----------
    noise : str or NoiseFamily
        A family's name, or a family (returned as it is).

    Returns
    -------
    NoiseFamily
        :data:`GUMBEL`, :data:`EXPONENTIAL`, :data:`LAPLACE` or ``noise`` itself.

    Raises
    ------
    ParameterError
        ``noise`` is neither a family nor one of the three names.
    """
    if isinstance(noise, NoiseFamily):
        return noise
    if isinstance(noise, str) and noise in FAMILIES:
        return FAMILIES[noise]
    raise ParameterError(f"noise must be one of {sorted(FAMILIES)}, got {noise!r}")
