"""Noise families for report-noisy-max: Gumbel, Exponential and Laplace (seeds 001, 004).

A family is described by its standard inverse CDF ``g`` (scale 1, location 0), which is
monotone increasing on (0, 1). The noisy key of candidate ``i`` is
``shift_i / scale + g(U_i)`` with ``U_i`` uniform. Each family gives:

- a **float fast path**: ``g`` at the ends of a 53-bit grid interval ``[j, j + 1] * 2^-53``
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
    "GUMBEL",
    "LAPLACE",
    "NOISE_ABS_ERROR",
    "NoiseFamily",
    "get_family",
]

F64 = npt.NDArray[np.float64]

#: Bound on |float g - g| for every finite float-path value: log and log1p are assumed
#: accurate to a relative 2^-45 (NumPy's are within ~1.1 ulp = 2^-52.9; the test suite checks
#: 2^-48), and |g| <= 37 on the 53-bit grid. See docs/exactness.md, "Float path error".
NOISE_ABS_ERROR = 38.0 * 2.0**-44

_TWO_M53 = 2.0**-53


@dataclass(frozen=True)
class NoiseFamily:
    """One noise family: its name, inverse CDF in float and in arb, and its values at 0 and 1."""

    name: str
    g_at_zero: float  # g(0): -inf, or a finite value
    g_at_one: float  # g(1): +inf for every family here

    def float_g(self, v: F64) -> F64:
        """``g(v)`` in float64 for exact grid points ``v`` in [0, 1] (±inf at the ends)."""
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            if self.name == "gumbel":
                out: F64 = -np.log(-np.log(v))
            elif self.name == "exponential":
                out = -np.log1p(-v)
            else:
                t = 2.0 * v - 1.0  # exact on the 2^-53 grid
                out = np.copysign(-np.log1p(-np.abs(t)), t)
        return out

    def float_upper(self, j: F64) -> F64:
        """``g((j + 1) 2^-53)``: the float key's upper end for grid index ``j``."""
        return self.float_g((j + 1.0) * _TWO_M53)

    def float_lower(self, j: F64) -> F64:
        """``g(j 2^-53)``: the float key's lower end for grid index ``j``."""
        return self.float_g(j * _TWO_M53)

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
