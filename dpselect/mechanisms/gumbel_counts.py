"""One-shot Gumbel top-k with noisy counts (seed 004's alternative to one-shot Laplace).

The law. On counts ``x`` in Z^d:

1. ``I = (i_1, ..., i_k)``: the indices of the ``k`` largest ``x_i + scale * G_i``, best first,
   with ``G_i`` i.i.d. standard Gumbel, ranked exactly by :func:`~dpselect.sampling.noisy_top_k`.
   In law this is ``k`` rounds of the exponential mechanism without replacement,
   ``P[I] = prod_j exp(x_{i_j} / scale) / sum_{l not in i_1..i_{j-1}} exp(x_l / scale)``
   (Plackett-Luce; seed 004, Theorem 1, from Durfee and Rogers 2019).
2. ``c_j = x_{i_j} + Z_j`` with fresh, exact integer noise ``Z_j``: discrete Laplace
   ``P(z) ~ exp(-|z| / count_scale)`` or discrete Gaussian ``P(z) ~ exp(-z^2 / (2 count_scale^2))``
   (Canonne, Kamath and Steinke 2020), from :mod:`dpselect.sampling`.

The privacy map, for ``d_in`` the L-infinity distance of the counts and ``d_range`` the range
distance (``d_in`` when the metric is monotonic, ``2 d_in`` otherwise; seed 001, Sec. 1.1):

- Selection: each round is the exponential mechanism, ``d_range / scale``-DP and
  ``d_range / scale``-bounded range, hence ``(d_range / scale)^2 / 8``-zCDP (Cesar and Rogers
  2021, Lemma 3.2); ``k`` rounds compose (Bun and Steinke 2016, Lemma 2.3).
- Counts: each released count moves by at most ``d_in`` (an integer shift of an integer count).
  Discrete Laplace with scale ``t`` is then ``d_in / t``-DP (the geometric mechanism of Ghosh,
  Roughgarden and Sundararajan 2009: ``P(z) / P(z') <= exp(|z - z'| / t)``), i.e.
  ``(d_in / t)^2 / 2``-zCDP (Bun and Steinke 2016, Prop. 1.4); the discrete Gaussian with
  ``sigma = t`` is ``d_in^2 / (2 t^2)``-zCDP (CKS 2020, Theorem 4). The ``k`` counts are ``k``
  such mechanisms, chosen adaptively through ``I``; zCDP and pure DP compose adaptively.

Totals: ``rho = k d_range^2 / (8 scale^2) + k d_in^2 / (2 count_scale^2)`` (both count
noises) and, for Laplace counts only, ``epsilon = k d_range / scale + k d_in / count_scale``.

Counts of rows per person (``max_rows_per_value = r``: every count moves by at most ``r``, all
the same way) are the case ``d_in = r``; :func:`dpselect.planning.top_k_plan.plan_top_k`
calibrates both scales there.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Literal

from ..accounting.zcdp import gaussian_zcdp, pure_dp_to_zcdp
from ..core.arithmetic import float_up
from ..core.errors import MeasureError, ParameterError
from ..core.measurement import Measurement
from ..core.measures import MaxDivergence, Measure, ZeroConcentratedDivergence
from ..sampling.discrete import sample_discrete_gaussian, sample_discrete_laplace
from ..sampling.noisy_max import noisy_top_k
from ..sampling.source import RandomSource
from .noisy_counts import (
    NoisyTopK,
    check_count_metric,
    check_count_vector_domain,
    check_k,
    count_vector,
    noisy_values,
)
from .report_noisy_max import selection_loss
from .validate import check_scale

__all__ = ["make_gumbel_top_k_with_counts"]

CountNoise = Literal["laplace", "gaussian"]

# The exact samplers' parameter ranges (dpselect.sampling.discrete).
_LAPLACE_SCALE_RANGE = (Fraction(1, 1 << 64), Fraction(1 << 52))
_GAUSSIAN_SIGMA2_RANGE = (Fraction(1, 1 << 64), Fraction(1 << 100))


def _check_count_noise(count_noise: Any, count_scale: Fraction) -> CountNoise:
    if count_noise == "laplace":
        low, high = _LAPLACE_SCALE_RANGE
        if not low <= count_scale <= high:
            raise ParameterError(
                f"count_scale must lie in [2^-64, 2^52] for Laplace counts, "
                f"got {float(count_scale)}"
            )
        return "laplace"
    if count_noise == "gaussian":
        low, high = _GAUSSIAN_SIGMA2_RANGE
        if not low <= count_scale * count_scale <= high:
            raise ParameterError(
                f"count_scale^2 must lie in [2^-64, 2^100] for Gaussian counts, "
                f"got count_scale = {float(count_scale)}"
            )
        return "gaussian"
    raise ParameterError(f'count_noise must be "laplace" or "gaussian", got {count_noise!r}')


def _check_measure(measure: Any, count_noise: CountNoise) -> Measure:
    if isinstance(measure, ZeroConcentratedDivergence):
        return measure
    if isinstance(measure, MaxDivergence):
        if count_noise == "gaussian":
            raise MeasureError(
                "Gaussian counts are not pure DP: use output_measure=ZeroConcentratedDivergence()"
            )
        return measure
    raise MeasureError(
        "output_measure must be ZeroConcentratedDivergence() or (Laplace counts only) "
        f"MaxDivergence(), got {measure!r}"
    )


def _count_loss(
    d_in: Any, count_scale: Fraction, k: int, noise: CountNoise, measure: Measure
) -> Fraction:
    """The loss of the ``k`` released counts (exact, or each term already rounded up)."""
    if isinstance(measure, MaxDivergence):
        return k * Fraction(d_in) / count_scale
    if noise == "laplace":
        per_count = pure_dp_to_zcdp(Fraction(d_in) / count_scale)
    else:
        per_count = gaussian_zcdp(d_in, count_scale)
    return k * Fraction(per_count)


def _top_k_with_counts(
    x: Any,
    scale: Fraction,
    k: int,
    noise: CountNoise,
    count_scale: Fraction,
    source: RandomSource | None,
) -> NoisyTopK:
    """One release: the one-shot Gumbel top-``k`` indices, then their counts plus fresh noise
    (drawn after the selection)."""
    counts = count_vector(x)
    indices = noisy_top_k(counts, scale, k, noise="gumbel", source=source)
    if noise == "laplace":
        z = sample_discrete_laplace(count_scale, k, source)
    else:
        z = sample_discrete_gaussian(count_scale * count_scale, k, source)
    return NoisyTopK(indices, noisy_values(counts[indices], z))


def make_gumbel_top_k_with_counts(
    input_domain: Any,
    input_metric: Any,
    k: int,
    *,
    scale: float | Fraction,
    count_scale: float | Fraction,
    count_noise: CountNoise = "laplace",
    output_measure: Measure | None = None,
    source: RandomSource | None = None,
) -> Measurement:
    """One-shot Gumbel top-``k`` indices, then their counts with fresh exact integer noise.

    Parameters
    ----------
    input_domain:
        ``vector_domain(atom_domain(int), size=d)``: one count per public candidate.
    input_metric:
        ``LInfDistance(monotonic=...)``; ``monotonic=True`` (add/remove neighbours, every
        count moves the same way) halves the selection's range distance.
    k:
        The number of indices released, ``1 <= k <= d``.
    scale:
        Gumbel scale of the selection (``> 0``); each round is ``d_range / scale``-DP.
    count_scale:
        Discrete Laplace scale ``t`` (``P(z) ~ exp(-|z|/t)``) or discrete Gaussian ``sigma``
        (``P(z) ~ exp(-z^2 / (2 sigma^2))``) of the released counts (``> 0``).
    count_noise:
        ``"laplace"`` or ``"gaussian"``.
    output_measure:
        ``ZeroConcentratedDivergence()`` (default) or, with Laplace counts,
        ``MaxDivergence()``.
    source:
        Randomness source; ``None`` is the CSPRNG.

    Returns a :class:`Measurement` whose function returns :class:`NoisyTopK` ``(indices,
    counts)``. The law and the map are in the module docstring (seed 004, Theorem 1; Cesar
    and Rogers 2021, Lemma 3.2; Canonne, Kamath and Steinke 2020; Bun and Steinke 2016).

    Returns
    -------
    Measurement
        From count vectors to :class:`NoisyTopK` (``k`` indices best first, their noisy
        counts), in ``output_measure``.
    """
    domain = check_count_vector_domain(input_domain)
    metric = check_count_metric(input_metric)
    assert domain.size is not None  # checked above
    k = check_k(k, domain.size)
    exact_scale = Fraction(check_scale(scale, "scale", allow_zero=False))
    exact_count_scale = Fraction(check_scale(count_scale, "count_scale", allow_zero=False))
    noise = _check_count_noise(count_noise, exact_count_scale)
    measure = _check_measure(
        ZeroConcentratedDivergence() if output_measure is None else output_measure, noise
    )

    def function(x: Any) -> NoisyTopK:
        return _top_k_with_counts(x, exact_scale, k, noise, exact_count_scale, source)

    def privacy_map(d_in: Any) -> float:
        d_range = metric.range_distance(d_in)
        if d_in == 0:
            return 0.0
        if math.isinf(d_in):
            return math.inf
        selection = selection_loss(d_range, exact_scale, k, "gumbel", measure)
        return float_up(
            Fraction(selection) + _count_loss(d_in, exact_count_scale, k, noise, measure)
        )

    return Measurement(
        input_domain=domain,
        input_metric=metric,
        output_measure=measure,
        function=function,
        privacy_map=privacy_map,
    )
