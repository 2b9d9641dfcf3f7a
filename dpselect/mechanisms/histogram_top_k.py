"""Noisy-histogram top-k: exact integer noise on every count, the ``k`` largest noisy counts.

The input is a vector of counts in which one person changes at most ``c`` entries
(``max_contributions``), each by at most ``r`` (``max_rows_per_value``, 1 unless a person's
rows are counted: :mod:`dpselect.data.scores`): the L1 distance between neighbours is at most
``c r`` and the L2 distance at most ``r sqrt(c)``. Every count gets independent exact noise, and the
``k`` largest noisy counts (ties in uniformly random order) are released with their noisy values.
Ranking and cutting are post-processing of the noisy histogram, so the whole release costs
what the histogram costs:

- discrete Laplace of scale ``b`` (``P(z) ∝ exp(-|z| / b)``): ``d c r / b``-DP at ``d`` persons
  (the geometric mechanism: Ghosh, Roughgarden and Sundararajan 2009; Canonne, Kamath and
  Steinke 2020, Section 2: the mass ratio is ``exp((|z - a'| - |z - a|) / b) <= exp(|a - a'|
  / b)`` per coordinate, and ``sum |a - a'| <= d c r``: the counts are integers, so the
  integer noise's ratio bound holds for any integer shift);
- discrete Gaussian of variance parameter ``sigma^2``: ``d^2 c r^2 / (2 sigma^2)``-zCDP (CKS
  2020, Theorem 14 for independent coordinates with L2 sensitivity ``d r sqrt(c)``).

Against ``k`` rounds of a selection mechanism, whose every round pays for a person that moves
all scores, the histogram pays for ``c`` counts once: it wins when ``c`` is small against ``k``
(:mod:`dpselect.mechanisms.choice` decides by a public criterion).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from ..core.arithmetic import float_up
from ..core.domains import atom_domain, vector_domain
from ..core.errors import MetricError, ParameterError
from ..core.measurement import Measurement
from ..core.measures import MaxDivergence, ZeroConcentratedDivergence
from ..core.metrics import SymmetricDistance
from ..sampling.discrete import (
    GAUSSIAN_SIGMA2_RANGE,
    LAPLACE_SCALE_RANGE,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)
from ..sampling.source import RandomSource, resolve_source
from ..sampling.uniform import uniform_index
from .noisy_counts import NoisyTopK, count_vector, noisy_values
from .validate import check_int, check_scale

__all__ = ["histogram_noise_tail", "make_noisy_histogram_top_k", "rank_noisy_counts"]

HistogramNoise = Literal["laplace", "gaussian"]


def rank_noisy_counts(
    noisy: Any, k: int, source: RandomSource | None = None
) -> np.ndarray[Any, np.dtype[np.int64]]:
    """The indices of the ``k`` largest values of ``noisy``, best first.

    Equal noisy values are ordered uniformly at random with fresh bits of ``source`` (every
    order of a tied group equally likely, so which of them enter at the ``k``-th place is a
    uniform subset); with ``source=None``, ties go to the lower index. Either rule is
    post-processing of the noisy histogram, so the privacy map is unchanged. The random rule
    is the default of the mechanism: with exact integer noise, ties are frequent (discrete
    Laplace of scale 0.5 is 0 with probability 0.76), and a fixed index rule favours low
    indices at every tie, which loses p@5 against continuous-noise peers.

    Parameters
    ----------
    noisy : array-like of int
        The noisy counts, 1-D (int64, or object for Python ints beyond int64).
    k : int
        How many indices to return, ``0 <= k <= len(noisy)``.
    source : RandomSource or None, default None
        The bits that order ties; ``None``: ties go to the lower index (no randomness).

    Returns
    -------
    ndarray of int64
        The ``k`` indices, best first.
    """
    arr = np.asarray(noisy)
    n = arr.shape[0]
    if arr.dtype.kind == "O":  # beyond int64: exact Python ints
        keys = [-int(arr[i]) for i in range(n)]
        order = np.array(sorted(range(n), key=lambda i: (keys[i], i)), dtype=np.int64)
        values = np.array([keys[i] for i in order], dtype=object)
    else:  # stable sort of the negated values: ties keep the lower index first
        neg = -arr.astype(np.int64)
        order = np.argsort(neg, kind="stable").astype(np.int64)
        values = neg[order]
    if source is None or k == 0:
        return order[:k]
    # Shuffle each tied run that reaches into the first k places (partial Fisher-Yates: only
    # the places before k are drawn, each exactly uniform).
    out = order.copy()
    start = 0
    while start < k:
        stop = start + 1
        while stop < n and values[stop] == values[start]:
            stop += 1
        for place in range(start, min(stop, k)):
            j = place + uniform_index(stop - place, source)
            out[place], out[j] = out[j], out[place]
        start = stop
    return np.asarray(out[:k], dtype=np.int64)


def histogram_noise_tail(noise: HistogramNoise, scale: Fraction | float, t: int) -> float:
    """An upper bound, rounded up, on ``P(|Z| > t)`` for one noise draw ``Z``.

    Discrete Laplace of scale ``b``: exactly ``2 q^(t+1) / (1 + q)`` with ``q = e^(-1/b)``.
    Discrete Gaussian of parameter ``sigma^2``: at most ``2 exp(-(t+1)^2 / (2 sigma^2))`` (it
    is ``sigma^2``-sub-Gaussian: CKS 2020, Corollary 9).

    Parameters
    ----------
    noise : {"laplace", "gaussian"}
        The noise's law (anything but ``"laplace"`` is read as ``"gaussian"``).
    scale : Fraction or float
        The Laplace scale ``b`` or the Gaussian ``sigma``, ``> 0``.
    t : int
        The half-width, in counts (``t < 0`` gives 1).

    Returns
    -------
    float
        A bound on ``P(|Z| > t)``, in ``[0, 1]``.
    """
    if t < 0:
        return 1.0
    s = float(scale)
    if noise == "laplace":
        q = math.exp(-1 / s)
        bound = 2 * math.exp(-(t + 1) / s) / (1 + q)
    else:
        bound = 2 * math.exp(-((t + 1) ** 2) / (2 * s * s))
    return min(1.0, bound * (1 + 1e-12))


def _check_sampler_range(noise: HistogramNoise, s: Fraction) -> None:
    """Refuses a scale outside the exact sampler's range (Laplace ``b``, Gaussian ``sigma^2``)."""
    # The exact samplers' ranges, checked here and not when sampling: a recipe charges the
    # ledger between the construction and the call, so a scale out of range must fail
    # before that charge (epsilon 1e-20 would be charged, then fail).
    if noise == "laplace" and not LAPLACE_SCALE_RANGE[0] <= s <= LAPLACE_SCALE_RANGE[1]:
        raise ParameterError(
            f"scale must lie in [2^-64, 2^52] (the exact discrete Laplace sampler's range), "
            f"got {float(s):.6g}: epsilon is too small or too large for Laplace counts"
        )
    if noise == "gaussian" and not GAUSSIAN_SIGMA2_RANGE[0] <= s * s <= GAUSSIAN_SIGMA2_RANGE[1]:
        raise ParameterError(
            f"scale must lie in [2^-32, 2^50] (the exact discrete Gaussian sampler's range of "
            f"sigma^2 is [2^-64, 2^100]), got {float(s):.6g}: epsilon or delta is too small "
            "or too large for Gaussian counts"
        )


@dataclass(frozen=True)
class _HistogramLoss:
    """The map of :func:`make_noisy_histogram_top_k`: Laplace ``d_in c r / b``, Gaussian
    ``d_in^2 c r^2 / (2 sigma^2)``, rounded up."""

    noise: HistogramNoise
    c: int
    r: int
    s: Fraction

    def __call__(self, d_in: Any) -> float:
        """The loss at ``d_in`` (``>= 0``)."""
        if d_in < 0:
            raise MetricError(f"d_in must be non-negative, got {d_in!r}")
        if d_in == 0:
            return 0.0
        if isinstance(d_in, float) and math.isinf(d_in):
            return math.inf
        d = Fraction(d_in)
        c, r, s = self.c, self.r, self.s
        if self.noise == "laplace":
            return float_up(d * c * r / s)
        return float_up(d * d * c * r * r / (2 * s * s))


def make_noisy_histogram_top_k(
    n: int,
    k: int,
    noise: HistogramNoise,
    *,
    scale: float | Fraction,
    max_contributions: int = 1,
    source: RandomSource | None = None,
    max_rows_per_value: int = 1,
) -> Measurement:
    """Top-``k`` of ``n`` counts by a noisy histogram (module docstring).

    Input: an integer vector of length ``n``; ``d_in`` counts persons added or removed
    (:class:`SymmetricDistance`), each changing at most ``max_contributions`` counts by 1
    (the data layer's contribution bounding guarantees it), each by at most
    ``max_rows_per_value = r`` (default 1). ``scale``: the Laplace ``b`` or the Gaussian
    ``sigma``. Output: :class:`NoisyTopK` ``(indices, noisy counts)``.

    Privacy map: Laplace, ``MaxDivergence``: ``d_in c r / b``; Gaussian,
    ``ZeroConcentratedDivergence``: ``d_in^2 c r^2 / (2 sigma^2)``; both rounded up (L1
    sensitivity ``c r``, L2 ``r sqrt(c)``: module docstring).

    Parameters
    ----------
    n : int
        The number of counts (public candidates), at least 1.
    k : int
        How many indices are released, ``1 <= k <= n``.
    noise : {"laplace", "gaussian"}
        Discrete Laplace (pure DP) or discrete Gaussian (zCDP) noise.
    scale : float or Fraction
        The Laplace ``b`` in ``[2^-64, 2^52]``, or the Gaussian ``sigma`` with ``sigma^2`` in
        ``[2^-64, 2^100]``.
    max_contributions : int, default 1
        ``c``: how many counts one person changes, at least 1.
    source : RandomSource or None, default None
        Where the noise's random bits come from; ``None`` is the CSPRNG.
    max_rows_per_value : int, default 1
        ``r``: how much one person moves each of their counts, at least 1.

    Returns
    -------
    Measurement
        From integer vectors of length ``n`` to :class:`NoisyTopK`; output measure
        ``MaxDivergence()`` (Laplace) or ``ZeroConcentratedDivergence()`` (Gaussian).
    """
    n = check_int(n, "n", minimum=1)
    k = check_int(k, "k", minimum=1)
    if k > n:
        raise ParameterError(f"k must be at most the number of counts ({n}), got {k}")
    c = check_int(max_contributions, "max_contributions", minimum=1)
    r = check_int(max_rows_per_value, "max_rows_per_value", minimum=1)
    if noise not in ("laplace", "gaussian"):
        raise ParameterError(f"noise must be 'laplace' or 'gaussian', got {noise!r}")
    s = Fraction(check_scale(scale, allow_zero=False))
    _check_sampler_range(noise, s)

    def function(x: Any) -> NoisyTopK:
        counts = count_vector(x)
        if noise == "laplace":
            z = sample_discrete_laplace(s, n, source)
        else:
            z = sample_discrete_gaussian(s * s, n, source)
        noisy = noisy_values(counts, z)
        idx = rank_noisy_counts(noisy, k, resolve_source(source))
        return NoisyTopK(idx, noisy[idx])

    return Measurement(
        input_domain=vector_domain(atom_domain(int), size=n),
        input_metric=SymmetricDistance(),
        output_measure=MaxDivergence() if noise == "laplace" else ZeroConcentratedDivergence(),
        function=function,
        privacy_map=_HistogramLoss(noise, c, r, s),
    )
