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
    """``1 + j 2^-52`` with ``j = w >> 12``: exact floats in [1, 2), built from the bits."""
    x = np.right_shift(words, np.uint64(64 - GRID_BITS))
    np.bitwise_or(x, _EXPONENT_OF_ONE, out=x)
    points: F64 = x.view(np.float64)
    return points


def grid_upper(words: U64) -> F64:
    """``(j + 1) 2^-52``, exactly (Sterbenz: the subtraction of floats in [1/2, 2] is exact)."""
    v = grid_points(words)
    return np.subtract(v, _ONE_MINUS_ULP, out=v)


def grid_lower(words: U64) -> F64:
    """``j 2^-52``, exactly."""
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
        """``g(v)`` in float64 for exact grid points ``v`` in [0, 1] (±inf at the ends)."""
        return self.add_noise_inplace(0.0, np.array(v, dtype=np.float64))

    def float_g_inverse(self, x: F64) -> F64:
        """An approximation of ``g^-1(x)`` in [0, 1], elementwise (not certified: callers that
        rely on it check the result with :meth:`float_g` and the error bound)."""
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
        """``g`` at the upper end ``(j + 1) 2^-52`` of each word's grid interval."""
        return self.float_g(grid_upper(words))

    def float_lower(self, words: U64) -> F64:
        """``g`` at the lower end ``j 2^-52`` of each word's grid interval."""
        return self.float_g(grid_lower(words))

    def arb_at(self, m: int, b: int) -> Any:
        """An arb ball holding ``g(m / 2^b)`` for ``0 < m < 2^b`` at the current precision."""
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
        """
        m, b = u.prefix, u.nbits
        lo = flint.arb(self.g_at_zero) if m == 0 else self.arb_at(m, b)
        hi = flint.arb(self.g_at_one) if m + 1 == (1 << b) else self.arb_at(m + 1, b)
        return lo, hi

    def exact_g(self, m: int, b: int, prec: int) -> Any:
        """``g(m / 2^b)`` as an arb ball at ``prec`` bits (test and reference helper)."""
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
    """The family named ``noise`` ("gumbel", "exponential" or "laplace")."""
    if isinstance(noise, NoiseFamily):
        return noise
    if isinstance(noise, str) and noise in FAMILIES:
        return FAMILIES[noise]
    raise ParameterError(f"noise must be one of {sorted(FAMILIES)}, got {noise!r}")
