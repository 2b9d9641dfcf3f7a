"""The Laplace mechanism, released exactly on a power-of-two lattice (seed 002).

Seed 002's Laplace mechanism outputs ``f(D) + Y`` with ``Y_k ~ Lap(Delta_1 / eps)``. Real-valued
Laplace noise cannot be sampled on a computer, and float samplers are porous (Mironov 2012),
so here the value is moved to the lattice ``2^k Z`` and *discrete* Laplace noise is added
there, exactly (``dpselect.sampling.discrete``; Canonne, Kamath and Steinke 2020). The
lattice rule and its accounting are in :mod:`dpselect.mechanisms.lattice`.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from ..core.arithmetic import float_up
from ..core.errors import ParameterError
from ..core.measurement import Measurement
from ..core.measures import MaxDivergence
from ..core.metrics import L1Distance
from ..sampling.discrete import sample_discrete_laplace
from ..sampling.source import RandomSource, resolve_source
from .lattice import NoisePlan, check_noise_metric, plan_noise
from .validate import check_scale

__all__ = ["make_laplace"]

_LAPLACE_MIN = Fraction(1, 1 << 64)  # the exact sampler's range of scales
_LAPLACE_MAX = Fraction(1 << 52)


def make_laplace(
    input_domain: Any,
    input_metric: Any,
    scale: float | int | Fraction,
    *,
    source: RandomSource | None = None,
) -> Measurement:
    """The Laplace mechanism: ``x + 2^k Z`` with ``Z`` discrete Laplace of scale ``scale/2^k``.

    Parameters
    ----------
    input_domain:
        ``atom_domain(int)``, ``atom_domain(float, nan=False)`` (optionally bounded), or a
        ``vector_domain`` of them. Float vectors need a ``size``.
    input_metric:
        ``L1Distance()`` (vectors or scalars) or ``L2Distance()`` (scalars only: for a single
        number both are ``|x - x'|``).
    scale:
        The noise scale ``b > 0`` (``Lap(b)`` has density ``exp(-|y| / b) / (2b)``); for ints
        ``b`` must lie in ``[2^-64, 2^52]``, for floats ``b >= 2^-1044``.
    source:
        Where the random bits come from; ``None`` means the default CSPRNG.

    Law. Int data: ``x + Z``, ``P(Z = z) ∝ exp(-|z| / b)`` on the integers. Float data:
    ``2^k (r(x) + Z)`` with ``k = floor(log2 b) - 30``, ``r(x)`` the nearest integer to
    ``x / 2^k`` (ties to even, after clamping to the domain's bounds and to the finite
    floats) and ``P(Z = z) ∝ exp(-|z| 2^k / b)``. Coordinates get independent noise.

    Privacy map (``MaxDivergence``). ``d_in = 0 -> 0``; otherwise
    ``eps = Delta' / b`` rounded up, with ``Delta' = d_in`` for int data and
    ``Delta' = d_in + d 2^k`` for float data of dimension ``d`` (the rounding slack).

    Proof. On the lattice, the discrete Laplace mechanism with integer-vector sensitivity
    ``D`` (in lattice units) is ``D / t``-DP for scale ``t`` (the ratio of the two probability
    masses is ``exp((|z - a'| - |z - a|) / t) <= exp(|a - a'| / t)`` coordinate-wise: the
    geometric mechanism of Ghosh, Roughgarden and Sundararajan 2009; CKS 2020, Section 2 and
    Proposition on the discrete Laplace). Here ``t = b / 2^k`` and ``D <= Delta' / 2^k``
    (triangle inequality through the rounding: ``lattice`` module), so ``eps = Delta' / b``.
    The float output is post-processing of the exactly sampled lattice point. This is seed
    002's Laplace theorem, made exact.

    Returns
    -------
    Measurement
        From ``input_domain`` (``input_metric``) to the noisy value, of the data's type (int or
        float; a NumPy array for vectors), with output measure ``MaxDivergence()``.
    """
    metric = check_noise_metric(input_domain, input_metric, vector_metric=L1Distance)
    b = Fraction(check_scale(scale, allow_zero=False))
    plan = plan_noise(input_domain, b)
    noise_scale = b if plan.k is None else b / Fraction(2) ** plan.k
    if plan.k is None and not _LAPLACE_MIN <= noise_scale <= _LAPLACE_MAX:
        raise ParameterError(
            f"scale must lie in [2^-64, 2^52] for int data (the exact sampler's range), "
            f"got {scale!r}"
        )
    src = resolve_source(source)

    def sample(n: int) -> Any:
        return sample_discrete_laplace(noise_scale, n, src)

    return Measurement(
        input_domain=input_domain,
        input_metric=metric,
        output_measure=MaxDivergence(),
        function=plan.release(sample),
        privacy_map=_laplace_map(plan, b),
    )


def _laplace_map(plan: NoisePlan, b: Fraction) -> Any:
    def privacy_map(d_in: float | int | Fraction) -> float:
        if d_in == 0:
            return 0.0
        if isinstance(d_in, float) and math.isinf(d_in):
            return math.inf
        return float_up(plan.sensitivity(Fraction(d_in), norm=1) / b)

    return privacy_map
