"""The public power-of-two bins of automatic clamping bounds (:func:`bound_bins`) and the
threshold a bin's noisy count must reach to be kept (:func:`empty_bin_threshold`): public
facts only, planned before the charge. :mod:`dpselect.recipes.value_bins` reads the bins'
counts and scores; docs/private_selection.md has the maps and proofs.
"""

from __future__ import annotations

import math
from fractions import Fraction

__all__ = ["EMPTY_BIN_RATE", "bound_bins", "empty_bin_threshold"]

#: The histogram method's threshold: with probability at least ``1 - EMPTY_BIN_RATE`` no bin
#: without rows reaches it (a union bound over the bins).
EMPTY_BIN_RATE = 1e-3


def bound_bins(low_exp: int = -8, high_exp: int = 40) -> list[tuple[float, float]]:
    """The public bins ``[-2^(j+1), -2^j)``, ``[-2^low, 2^low)``, ``[2^j, 2^(j+1))``.

    Parameters
    ----------
    low_exp, high_exp : int, default -8 and 40
        The least and largest exponent ``j`` of the bins ``[2^j, 2^(j+1))``.

    Returns
    -------
    list of (float, float)
        The ``2 (high_exp - low_exp + 1) + 1`` bins ``(l, h)``, increasing (99 by default).
    """
    neg = [(-(2.0 ** (j + 1)), -(2.0**j)) for j in range(high_exp, low_exp - 1, -1)]
    pos = [(2.0**j, 2.0 ** (j + 1)) for j in range(low_exp, high_exp + 1)]
    return [*neg, (-(2.0**low_exp), 2.0**low_exp), *pos]


def empty_bin_threshold(scale: Fraction, n_bins: int, rate: float = EMPTY_BIN_RATE) -> int:
    """The least integer ``t >= 1`` with ``n_bins P(Z >= t) <= rate`` for discrete Laplace
    noise ``Z`` of ``scale``: ``P(Z >= t) = q^t / (1 + q)``, ``q = exp(-1 / scale)`` (from the
    closed form, then corrected step by step; rounded toward a larger ``t``).

    Parameters
    ----------
    scale : Fraction
        The discrete Laplace noise's scale (``max_rows / epsilon``).
    n_bins : int
        The number of bins.
    rate : float, default EMPTY_BIN_RATE
        The largest probability that some bin without rows reaches the threshold.

    Returns
    -------
    int
        The threshold ``t``.
    """
    q = math.exp(-1 / float(scale))

    def tail(t: int) -> float:
        return n_bins * math.exp(-t / float(scale)) / (1 + q) * (1 + 1e-9)

    t = max(1, math.floor(float(scale) * math.log(n_bins / (rate * (1 + q)))) - 2)
    while t > 1 and tail(t - 1) <= rate:
        t -= 1
    while tail(t) > rate:
        t += 1
    return t
