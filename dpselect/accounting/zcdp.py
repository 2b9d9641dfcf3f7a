"""Zero-concentrated differential privacy (zCDP): losses, composition and conversion.

- ``eps``-DP implies ``eps^2/2``-zCDP (Bun and Steinke 2016, Proposition 1.4).
- An ``eps``-bounded-range mechanism (the exponential mechanism, Gumbel noisy max) is
  ``eps^2/8``-zCDP (Cesar and Rogers 2021, Lemma 3.2; Durfee and Rogers 2019; seed 004).
  Permute-and-flip and Laplace noisy max are *not* bounded range: use ``eps^2/2``.
- The Gaussian mechanism with L2 sensitivity ``Delta`` and standard deviation ``sigma`` is
  ``Delta^2 / (2 sigma^2)``-zCDP (Bun and Steinke 2016, Proposition 1.6).
- zCDP composes by adding the ``rho``s, also for adaptively chosen mechanisms (Bun and Steinke
  2016, Lemma 2.3) and, as a filter, for adaptively chosen ``rho``s (Whitehouse, Ramdas, Rogers,
  Wu 2023; Feldman and Zrnic 2021 for each Renyi order).
- Conversion to ``(eps, delta)``: Bun and Steinke 2016, Proposition 1.3,
  ``eps = rho + 2 sqrt(rho ln(1/delta))``; and the tighter Canonne, Kamath, Steinke 2020,
  Proposition 12 / Corollary 13 (also Asoodeh et al. 2020 and Balle et al. 2020):
  ``eps = inf_{alpha > 1} alpha rho + (ln(1/delta) + (alpha - 1) ln(1 - 1/alpha) - ln alpha)
  / (alpha - 1)``.

Every loss is rounded up; the conversions evaluate their formula in ``arb`` interval arithmetic
at a fixed order ``alpha`` (any order gives a valid bound), so the returned float is never below
the real value of the bound.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction
from typing import Literal

from flint import arb

from dpselect.core.arithmetic import Number, float_up
from dpselect.core.errors import ParameterError

from ..core.intervals import arb_of, evaluate, upper_float
from ._search import largest_passing
from .params import check_delta, check_loss

__all__ = [
    "approx_dp_to_zcdp_budget",
    "bounded_range_to_zcdp",
    "cks_epsilon_at_order",
    "cks_optimal_order",
    "gaussian_zcdp",
    "pure_dp_to_zcdp",
    "zcdp_composition",
    "zcdp_to_approx_dp",
]


def pure_dp_to_zcdp(epsilon: Number) -> float:
    """``eps``-DP is ``eps^2 / 2``-zCDP (Bun and Steinke 2016, Proposition 1.4); rounded up.

    Parameters
    ----------
    epsilon : float
        The mechanism's ``epsilon >= 0``.

    Returns
    -------
    float
        ``rho = epsilon^2 / 2``, rounded up.
    """
    eps = check_loss(epsilon, "epsilon")
    return float_up(eps * eps / 2)


def bounded_range_to_zcdp(epsilon: Number) -> float:
    """``eps``-bounded range is ``eps^2 / 8``-zCDP (Cesar and Rogers 2021, Lemma 3.2).

    Applies to the exponential mechanism and Gumbel noisy max / top-k (seed 004), not to
    permute-and-flip or Laplace noisy max. Rounded up.

    Parameters
    ----------
    epsilon : float
        The bounded-range ``epsilon >= 0``.

    Returns
    -------
    float
        ``rho = epsilon^2 / 8``, rounded up.
    """
    eps = check_loss(epsilon, "epsilon")
    return float_up(eps * eps / 8)


def gaussian_zcdp(sensitivity: Number, sigma: Number) -> float:
    """Gaussian noise of standard deviation ``sigma`` on an L2-sensitivity-``Delta`` query is
    ``Delta^2 / (2 sigma^2)``-zCDP (Bun and Steinke 2016, Proposition 1.6); rounded up.

    Parameters
    ----------
    sensitivity : float
        The query's L2 sensitivity ``Delta >= 0``.
    sigma : float
        The noise's standard deviation, ``> 0``.

    Returns
    -------
    float
        ``rho = Delta^2 / (2 sigma^2)``, rounded up.
    """
    d = check_loss(sensitivity, "sensitivity")
    s = check_loss(sigma, "sigma")
    if s == 0:
        raise ParameterError("sigma must be positive")
    return float_up(d * d / (2 * s * s))


def zcdp_composition(rhos: Iterable[Number]) -> float:
    """zCDP composition: the sum of the ``rho``s, exact then rounded up (Bun and Steinke
    2016, Lemma 2.3; valid adaptively).

    Parameters
    ----------
    rhos : iterable of float
        Each mechanism's ``rho >= 0``.

    Returns
    -------
    float
        The total ``rho``, rounded up.
    """
    total = Fraction(0)
    for i, rho in enumerate(rhos):
        total += check_loss(rho, f"rhos[{i}]")
    return float_up(total)


def _cks_formula(rho: Fraction, log_inv_delta: arb, beta: float) -> arb:
    """``alpha rho + (ln(1/delta) + (alpha-1) ln(1-1/alpha) - ln alpha) / (alpha-1)`` with
    ``alpha = 1 + beta``, written with ``beta`` so that orders close to 1 stay exact."""
    b = arb(beta)
    alpha = arb(1) + b
    return (
        alpha * arb_of(rho)
        + (log_inv_delta + b * (b / alpha).log() - alpha.log()) / b  # ln(1-1/a) = ln(b/a)
    )


def cks_optimal_order(rho: Number, delta: Number) -> float:
    """``alpha - 1`` (a float ``beta > 0``) minimising the CKS conversion for ``rho``, ``delta``.

    The derivative of the CKS bound in ``alpha`` is ``rho + (ln alpha - ln(1/delta)) /
    (alpha - 1)^2``, so the minimiser solves ``ln(1/delta) - log1p(beta) = rho beta^2``, a
    single root in ``(0, sqrt(ln(1/delta) / rho)]``, found by bisection in floats. Only the
    *evaluation* at the chosen order needs to be rigorous: any order gives a valid bound.

    Parameters
    ----------
    rho : float
        The zCDP parameter, ``> 0``.
    delta : float
        The target ``delta``, in ``(0, 1)``.

    Returns
    -------
    float
        ``beta = alpha - 1 > 0``, the order at which to evaluate
        :func:`cks_epsilon_at_order` (a float estimate, not a certified minimiser).
    """
    r, d = float(rho), float(delta)
    if not (r > 0 and math.isfinite(r) and 0 < d < 1):
        raise ParameterError(
            f"cks_optimal_order needs a finite rho > 0 and delta in (0, 1), got rho = {rho!r}, "
            f"delta = {delta!r}"
        )
    log_inv = -math.log(d)
    lo, hi = 0.0, math.sqrt(log_inv / r)
    while True:
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if log_inv - math.log1p(mid) > r * mid * mid:
            lo = mid
        else:
            hi = mid
    return hi if hi > 0 else 5e-324


def cks_epsilon_at_order(rho: Number, delta: Number, beta: float) -> float:
    """The CKS bound at order ``alpha = 1 + beta``, rounded up (valid for any ``beta > 0``).

    Parameters
    ----------
    rho : float
        The zCDP parameter, ``>= 0``.
    delta : float
        The target ``delta``, in ``(0, 1]``.
    beta : float
        The order minus one, ``alpha - 1 > 0``.

    Returns
    -------
    float
        The epsilon of ``(epsilon, delta)``-DP, rounded up.
    """
    r = check_loss(rho, "rho")
    d = check_delta(delta, allow_zero=False)
    if not beta > 0:
        raise ParameterError(f"beta = alpha - 1 must be positive, got {beta!r}")
    return upper_float(evaluate(lambda: _cks_formula(r, (arb(1) / arb_of(d)).log(), beta)))


def _bun_steinke(rho: Fraction, delta: Fraction) -> arb:
    log_inv = (arb(1) / arb_of(delta)).log()
    r = arb_of(rho)
    return r + arb(2) * (r * log_inv).sqrt()


def zcdp_to_approx_dp(
    rho: Number, delta: Number, method: Literal["cks", "bun_steinke"] = "cks"
) -> float:
    """The ``epsilon`` of ``(epsilon, delta)``-DP implied by ``rho``-zCDP, rounded up.

    ``method="bun_steinke"``: ``rho + 2 sqrt(rho ln(1/delta))`` (Bun and Steinke 2016,
    Proposition 1.3). ``method="cks"`` (default): Canonne, Kamath, Steinke 2020, Corollary 13,
    minimised over the Renyi order; never larger than Bun-Steinke. For ``rho = 0.125`` and
    ``delta = 1e-6`` it gives about 2.4191 (Bun-Steinke: about 2.4536).

    Parameters
    ----------
    rho : float
        The zCDP parameter, ``>= 0``.
    delta : float
        The target ``delta``, in ``(0, 1]``.
    method : {"cks", "bun_steinke"}, default "cks"
        The conversion theorem.

    Returns
    -------
    float
        The epsilon, rounded up; 0 when ``rho = 0`` or ``delta = 1``.
    """
    r = check_loss(rho, "rho")
    d = check_delta(delta, allow_zero=False)
    if method not in ("cks", "bun_steinke"):
        raise ParameterError(f"method must be 'cks' or 'bun_steinke', got {method!r}")
    if r == 0 or d == 1:
        return 0.0
    if method == "bun_steinke":
        return upper_float(evaluate(lambda: _bun_steinke(r, d)))
    if float(r) > 0:
        beta_bs = math.sqrt(-math.log(float(d)) / float(r))  # Bun-Steinke's optimal order
        candidates = [cks_optimal_order(r, d), beta_bs]
    else:  # rho below the smallest float: no order to evaluate
        candidates = []
    orders = [b for b in candidates if 0 < b < math.inf]
    if not orders:  # the orders overflow (rho of about 1e-300): Bun-Steinke, also an upper bound
        return upper_float(evaluate(lambda: _bun_steinke(r, d)))
    best = min(cks_epsilon_at_order(r, d, b) for b in orders)
    return max(best, 0.0)


def approx_dp_to_zcdp_budget(epsilon: Number, delta: Number) -> float:
    """The largest ``rho`` whose CKS conversion at ``delta`` is at most ``epsilon``.

    Used to turn an ``(epsilon, delta)`` budget into a zCDP budget: spending at most this
    ``rho`` in total (even with adaptively chosen ``rho``s) guarantees ``(epsilon, delta)``-DP.
    The conversion of the returned value is certified to be ``<= epsilon``.

    Parameters
    ----------
    epsilon : float
        The budget's ``epsilon >= 0`` (0 gives ``rho = 0``).
    delta : float
        The budget's ``delta``, in ``(0, 1)``.

    Returns
    -------
    float
        The largest ``rho`` found whose CKS conversion at ``delta`` is ``<= epsilon``.
    """
    eps = check_loss(epsilon, "epsilon")
    d = check_delta(delta, allow_zero=False)
    if eps == 0:
        return 0.0

    def passes(rho: float) -> bool:
        return rho == 0.0 or Fraction(zcdp_to_approx_dp(rho, d)) <= eps

    start = float(eps) ** 2 / (8 * max(1.0, -math.log(float(d))))
    return largest_passing(passes, max(start, 5e-324))
