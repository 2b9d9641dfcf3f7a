"""Accuracy bounds for every position of a top-k release, and confidence intervals of counts.

Each function returns the constant of a theorem whose statement the recipes print; every
statement is checked by simulation in ``tests/mechanisms/test_topk_accuracy.py``.

**Selection, peeled (permute-and-flip, one-shot Gumbel = peeling exponential mechanisms, Laplace
report-noisy-max).** Scores are sensitivity-1 counts; round ``i`` picks the noisy maximum of the
remaining ``n - i + 1`` candidates, with noise of scale ``sigma``. The remaining set still holds
one of the true top ``i``, so its best score is at least ``s_(i)``, the ``i``-th largest. A
candidate ``g >= margin`` below that best is picked only if its noise beats the best one's by
``g / sigma``: probability at most ``T(margin / sigma)`` with ``T(a) = 1 / (1 + e^a)`` for Gumbel
(the difference of two Gumbels is logistic), ``e^-a / 2`` for exponential noise and
``(2 + a) e^-a / 4`` for Laplace. A union bound over the ``n - i`` others and the ``k``
rounds gives: with probability at least ``1 - beta``, *for every* ``i <= k`` *the* ``i``-*th
value returned has a score at least* ``s_(i) - margin`` when ``T(margin / sigma) sum_{i=1}^k (n - i)
<= beta`` (:func:`selection_margin`).

**Noisy histogram.** Every count gets independent noise ``Z``. If every ``|Z_v| <= t``, the true
top ``i`` all have noisy counts ``>= s_(i) - t``, so the ``i``-th largest noisy count is at
least that and the ``i``-th value returned has a true count ``>= s_(i) - 2 t``; every released
noisy count is also within ``t`` of its true count. A union bound over the ``n`` counts:
``n P(|Z| > t) <= beta`` (:func:`histogram_halfwidth`, tails in
:func:`~dpselect.mechanisms.histogram_top_k.histogram_noise_tail`).

**Counts drawn afresh for the k values selected** (Gumbel top-k with counts): the noise is
independent of the selection, so ``k P(|Z| > t) <= beta`` covers all ``k`` counts at once.
"""

from __future__ import annotations

import math
from fractions import Fraction

from .histogram_top_k import HistogramNoise, histogram_noise_tail

__all__ = ["count_halfwidth", "histogram_halfwidth", "selection_margin"]


def _others(k: int, n: int) -> int:
    """``sum_{i=1}^k (n - i)``: the candidates a union bound covers over ``k`` rounds."""
    return k * n - k * (k + 1) // 2


def _tail(noise: str, a: float) -> float:
    if noise == "gumbel":
        return 1 / (1 + math.exp(a)) if a < 700 else 0.0
    if noise == "exponential":
        return math.exp(-a) / 2
    return (2 + a) * math.exp(-a) / 4


def selection_margin(noise: str, scale: float | Fraction, k: int, n: int, beta: float) -> float:
    """The ``margin`` of the peeled-selection statement (module docstring), rounded up.

    Parameters
    ----------
    noise : str
        ``"gumbel"``, ``"exponential"`` or (any other value) ``"laplace"``.
    scale : float or Fraction
        The noise scale of each round, in score units.
    k : int
        The number of rounds (values released).
    n : int
        The number of candidates.
    beta : float
        The statement's failure probability, in ``(0, 1)``.

    Returns
    -------
    float
        ``margin``, in score units (0 when no other candidate remains).
    """
    m = _others(k, n)
    if m <= 0:
        return 0.0
    s = float(scale)
    if noise == "gumbel":
        a = math.log(m / beta - 1) if m / beta > 2 else 0.0
    elif noise == "exponential":
        a = max(math.log(m / (2 * beta)), 0.0)
    else:
        lo, hi = 0.0, 1.0
        while m * _tail(noise, hi) > beta:
            lo, hi = hi, 2 * hi
        for _ in range(80):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if m * _tail(noise, mid) <= beta else (mid, hi)
        a = hi
    return a * s * (1 + 1e-9)


def _smallest_t(noise: HistogramNoise, scale: float | Fraction, copies: int, beta: float) -> int:
    """The smallest integer ``t >= 0`` with ``copies * P(|Z| > t) <= beta``."""
    lo, hi = -1, 1
    while copies * histogram_noise_tail(noise, scale, hi) > beta:
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (
            (lo, mid) if copies * histogram_noise_tail(noise, scale, mid) <= beta else (mid, hi)
        )
    return hi


def histogram_halfwidth(noise: HistogramNoise, scale: float | Fraction, n: int, beta: float) -> int:
    """``t`` with every one of ``n`` noisy counts within ``t`` of the truth w.p. ``1 - beta``;
    the ranking statement's ``margin`` is ``2 t``.

    Parameters
    ----------
    noise : {"laplace", "gaussian"}
        The noise's law.
    scale : float or Fraction
        The Laplace ``b`` or the Gaussian ``sigma``.
    n : int
        The number of noisy counts.
    beta : float
        The statement's failure probability, in ``(0, 1)``.

    Returns
    -------
    int
        The half-width ``t >= 0``, in counts.
    """
    return _smallest_t(noise, scale, n, beta)


def count_halfwidth(noise: HistogramNoise, scale: float | Fraction, k: int, beta: float) -> int:
    """``t`` with all ``k`` freshly noised counts within ``t`` of the truth w.p. ``1 - beta``.

    Parameters
    ----------
    noise : {"laplace", "gaussian"}
        The noise's law.
    scale : float or Fraction
        The Laplace ``b`` or the Gaussian ``sigma``.
    k : int
        The number of released counts.
    beta : float
        The statement's failure probability, in ``(0, 1)``.

    Returns
    -------
    int
        The half-width ``t >= 0``, in counts.
    """
    return _smallest_t(noise, scale, k, beta)
