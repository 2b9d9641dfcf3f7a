"""Optimal composition theorems: Kairouz-Oh-Viswanath (2015) and Dong-Durfee-Rogers (2020).

- :func:`optimal_homogeneous_composition` (KOV 2015, Theorem 3.3): the exact privacy region of
  ``k`` adaptively composed ``(eps, delta)``-DP mechanisms. For a total ``eps_g`` the smallest
  valid total delta is (the region's boundary, written for every ``eps_g`` as in Murtagh and
  Vadhan 2016, Theorem 1.5)::

      delta_g(eps_g) = 1 - (1 - delta)^k (1 - S),
      S = (1 + e^eps)^-k sum_{l=0}^{k} C(k, l) max(0, e^{(k-l) eps} - e^{eps_g} e^{l eps}),

  which at ``eps_g = (k - 2i) eps`` is KOV's ``delta_i``. We return the smallest ``eps_g``
  with ``delta_g(eps_g) <= delta_target``, each check certified in interval arithmetic.
- :func:`kov_heterogeneous_composition` (KOV 2015, Theorem 3.5): for ``(eps_l, delta_l)`` and a
  slack ``delta~``, ``(eps~, 1 - (1 - delta~) prod(1 - delta_l))`` with ``eps~ = min{sum eps_l,
  A + sqrt(2 sum eps_l^2 ln(e + sqrt(sum eps_l^2) / delta~)), A + sqrt(2 sum eps_l^2
  ln(1 / delta~))}``, ``A = sum eps_l (e^{eps_l} - 1) / (e^{eps_l} + 1)``.
- :func:`bounded_range_composition` (Dong, Durfee, Rogers 2020, Theorem 3): the optimal
  ``(eps_g, delta)`` for ``k`` *non-adaptively* chosen ``eps``-bounded-range mechanisms (the
  exponential mechanism). The worst case is ``k`` copies of generalised randomized response
  with a parameter ``t`` in ``[0, eps]``: under ``Q`` outcome A has probability
  ``p_t = (e^{-t} - e^{-eps}) / (1 - e^{-eps})`` (privacy loss ``t``), under ``P`` it has
  ``e^t p_t``; the other outcome has loss ``t - eps``. Then ``delta(eps_g) = max_t sum_j
  C(k, j) [P(j) - e^{eps_g} Q(j)]_+``. On each range of ``t`` where the set of positive terms
  is fixed, the derivative in ``t`` has the sign of ``eps_g + l eps - (k + 1) t`` (with ``l = k
  - j0 + 1``, ``j0`` the first positive term), so the maximum sits at one of the points
  ``t_l = (eps_g + l eps) / (k + 1)``; evaluating every ``t_l`` in ``[0, eps]`` is exact.
  For adaptively chosen exponential mechanisms use the zCDP or Renyi route instead.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction

import numpy as np
from flint import arb

from dpselect.core.arithmetic import Number, float_up
from dpselect.core.errors import ParameterError

from ..core.intervals import arb_of, certainly_at_most, evaluate, upper_float
from ._search import smallest_passing
from .params import check_count, check_delta, check_loss

__all__ = [
    "bounded_range_composition",
    "bounded_range_composition_delta",
    "kov_heterogeneous_composition",
    "optimal_homogeneous_composition",
    "optimal_homogeneous_delta",
]


# ---------------------------------------------------------------------------------------------
# Kairouz, Oh, Viswanath 2015, Theorem 3.3 (homogeneous, exact)


def _kov_delta(eps: Fraction, k: int, eps_g: Fraction, delta: Fraction) -> arb:
    """The smallest delta for total ``eps_g`` (see the module docstring), as a ball."""
    base = -(arb(k) * (-arb_of(delta)).log1p()).expm1()  # 1 - (1 - delta)^k
    if eps == 0:
        return base
    # Terms l with (k - 2l) eps > eps_g are positive; exact comparison with Fractions.
    positive = [i for i in range(k + 1) if (k - 2 * i) * eps > eps_g]
    e = arb_of(eps)
    total = arb(0)
    if positive:
        shift = arb_of(eps_g) - arb(k) * e  # each term scaled by e^{-k eps}
        binom = 1
        for i in range(positive[-1] + 1):
            if i > 0:
                binom = binom * (k - i + 1) // i
            le = arb(i) * e
            total += arb_of(binom) * ((-le).exp() - (shift + le).exp())
    s = total / (arb(1) + (-e).exp()) ** k
    # 1 - (1-delta)^k (1 - S) = base + (1 - base) S
    return base + (arb(1) - base) * s


def optimal_homogeneous_delta(
    epsilon: Number, k: int, epsilon_total: Number, *, delta: Number = 0.0
) -> float:
    """The smallest delta such that ``k`` adaptively composed ``(epsilon, delta)``-DP
    mechanisms are ``(epsilon_total, delta_g)``-DP (KOV 2015, Theorem 3.3); rounded up.

    Parameters
    ----------
    epsilon : float
        Every mechanism's ``epsilon >= 0``.
    k : int
        The number of mechanisms, at least 1.
    epsilon_total : float
        The total ``epsilon_g >= 0`` at which the total delta is wanted.
    delta : float, default 0.0
        Every mechanism's ``delta``, in ``[0, 1]``.

    Returns
    -------
    float
        The smallest total delta ``delta_g``, rounded up, at most 1.
    """
    eps = check_loss(epsilon, "epsilon")
    k = check_count(k)
    eps_g = check_loss(epsilon_total, "epsilon_total")
    d = check_delta(delta)
    return min(upper_float(evaluate(lambda: _kov_delta(eps, k, eps_g, d))), 1.0)


def optimal_homogeneous_composition(
    epsilon: Number, k: int, delta_target: Number, *, delta: Number = 0.0
) -> float:
    """The optimal total epsilon of ``k`` adaptively composed ``(epsilon, delta)``-DP mechanisms
    at total delta ``delta_target`` (Kairouz, Oh, Viswanath 2015, Theorem 3.3).

    The result is the smallest float whose total delta is certified ``<= delta_target``, so it
    is never below the exact optimum. Raises :class:`ParameterError` when ``delta_target`` is
    below ``1 - (1 - delta)^k``, which no total epsilon reaches.

    Parameters
    ----------
    epsilon : float
        Every mechanism's ``epsilon >= 0``.
    k : int
        The number of mechanisms, at least 1.
    delta_target : float
        The total delta allowed, in ``[0, 1]``.
    delta : float, default 0.0
        Every mechanism's ``delta``, in ``[0, 1]``.

    Returns
    -------
    float
        The total epsilon, in ``[0, k epsilon]`` (rounded up).
    """
    eps = check_loss(epsilon, "epsilon")
    k = check_count(k)
    target = check_delta(delta_target, "delta_target")
    d = check_delta(delta)

    def passes(eps_g: float) -> bool:
        g = Fraction(eps_g)
        return certainly_at_most(lambda: _kov_delta(eps, k, g, d), target)

    hi = float_up(k * eps)
    if not passes(hi):
        raise ParameterError(
            f"delta_target={delta_target!r} is below 1 - (1 - delta)^k, the smallest total "
            f"delta of {k} mechanisms with delta={delta!r}"
        )
    if passes(0.0):
        return 0.0
    return smallest_passing(passes, 0.0, hi)


# ---------------------------------------------------------------------------------------------
# Kairouz, Oh, Viswanath 2015, Theorem 3.5 (heterogeneous bound)


def kov_heterogeneous_composition(
    losses: Iterable[tuple[Number, Number]], delta_slack: Number
) -> tuple[float, float]:
    """KOV 2015, Theorem 3.5: ``(eps~, 1 - (1 - delta_slack) prod(1 - delta_l))``, rounded up.

    ``losses`` are ``(eps_l, delta_l)`` pairs of adaptively composed mechanisms; ``eps~`` is the
    minimum of the three bounds in the module docstring.

    Parameters
    ----------
    losses : iterable of (epsilon, delta) tuples
        Each mechanism's loss: ``epsilon_l >= 0`` and ``delta_l`` in ``[0, 1]``.
    delta_slack : float
        The slack ``delta~``, in ``(0, 1]``: smaller gives a larger total epsilon.

    Returns
    -------
    tuple of (float, float)
        The total ``(epsilon, delta)``: ``eps~`` (0 when every epsilon is 0) and
        ``1 - (1 - delta_slack) prod(1 - delta_l)``, each rounded up.
    """
    pairs = []
    for i, loss in enumerate(losses):
        if not (isinstance(loss, tuple) and len(loss) == 2):
            raise ParameterError(f"losses[{i}] must be an (epsilon, delta) tuple, got {loss!r}")
        pairs.append((check_loss(loss[0], f"losses[{i}] epsilon"), check_delta(loss[1])))
    slack = check_delta(delta_slack, "delta_slack", allow_zero=False)
    survive = 1 - slack
    for _, d in pairs:
        survive *= 1 - d
    delta_out = float_up(1 - survive)
    eps_sum = sum((e for e, _ in pairs), Fraction(0))
    if eps_sum == 0:
        return 0.0, delta_out
    sq_sum = sum((e * e for e, _ in pairs), Fraction(0))

    def first_order() -> arb:
        # sum eps_l (e^{eps_l} - 1) / (e^{eps_l} + 1) = sum eps_l tanh(eps_l / 2)
        total = arb(0)
        for e, _ in pairs:
            a = arb_of(e)
            total += a * (a / arb(2)).tanh()
        return total

    def bound_e() -> arb:
        s2 = arb_of(sq_sum)
        log_term = (arb.const_e() + s2.sqrt() / arb_of(slack)).log()
        return first_order() + (arb(2) * s2 * log_term).sqrt()

    def bound_inv() -> arb:
        log_term = (arb(1) / arb_of(slack)).log()
        return first_order() + (arb(2) * arb_of(sq_sum) * log_term).sqrt()

    eps_out = min(
        float_up(eps_sum), upper_float(evaluate(bound_e)), upper_float(evaluate(bound_inv))
    )
    return eps_out, delta_out


# ---------------------------------------------------------------------------------------------
# Dong, Durfee, Rogers 2020, Theorem 3 (non-adaptive bounded range, exact)


def _br_candidates(eps: Fraction, k: int, eps_g: Fraction) -> list[Fraction]:
    ts = ((eps_g + m * eps) / (k + 1) for m in range(k + 2))
    return [t for t in ts if 0 < t < eps]


def _br_positive_from(eps: Fraction, k: int, eps_g: Fraction, t: Fraction) -> int:
    """The first ``j`` whose privacy loss ``k t - (k - j) eps`` exceeds ``eps_g``."""
    # k t - (k - j) eps > eps_g  <=>  j > k - (k t - eps_g) / eps
    bound = k - (k * t - eps_g) / eps
    return max(0, math.floor(bound) + 1)


def _br_delta_at(eps: Fraction, k: int, eps_g: Fraction, t: Fraction, log_binom: list[arb]) -> arb:
    j0 = _br_positive_from(eps, k, eps_g, t)
    if j0 > k:
        return arb(0)
    e, tt = arb_of(eps), arb_of(t)
    log_norm = (-(-e).expm1()).log()  # log(1 - e^{-eps})
    log_p = -tt + (-(tt - e).expm1()).log() - log_norm
    log_1p = (-(-tt).expm1()).log() - log_norm
    log_a = log_p + tt
    log_1a = log_1p + tt - e
    g = arb_of(eps_g)
    total = arb(0)
    for j in range(j0, k + 1):
        rest = k - j
        p_term = (log_binom[j] + arb(j) * log_a + arb(rest) * log_1a).exp()
        q_term = (g + log_binom[j] + arb(j) * log_p + arb(rest) * log_1p).exp()
        total += p_term - q_term
    return total


def _log_binomials(k: int) -> list[arb]:
    out, c = [], 1
    for j in range(k + 1):
        if j > 0:
            c = c * (k - j + 1) // j
        out.append(arb_of(c).log())
    return out


def _br_delta(eps: Fraction, k: int, eps_g: Fraction) -> arb:
    if eps == 0:
        return arb(0)
    log_binom = _log_binomials(k)
    best = arb(0)
    for t in _br_candidates(eps, k, eps_g):
        best = best.max(_br_delta_at(eps, k, eps_g, t, log_binom))
    return best


def bounded_range_composition_delta(epsilon: Number, k: int, epsilon_total: Number) -> float:
    """The optimal delta of ``k`` non-adaptively composed ``epsilon``-bounded-range mechanisms
    at total ``epsilon_total`` (Dong, Durfee, Rogers 2020, Theorem 3); rounded up.

    Parameters
    ----------
    epsilon : float
        Every mechanism's bounded-range ``epsilon >= 0``.
    k : int
        The number of mechanisms, at least 1.
    epsilon_total : float
        The total ``epsilon_g >= 0`` at which the total delta is wanted.

    Returns
    -------
    float
        The optimal total delta, rounded up, at most 1.
    """
    eps = check_loss(epsilon, "epsilon")
    k = check_count(k)
    eps_g = check_loss(epsilon_total, "epsilon_total")
    return min(upper_float(evaluate(lambda: _br_delta(eps, k, eps_g))), 1.0)


def _br_delta_float(eps: float, k: int, eps_g: float) -> float:
    """A float evaluation of the same maximum, vectorised, used only to aim the search."""
    ls = np.arange(k + 2, dtype=float)
    ts = (eps_g + ls * eps) / (k + 1)
    ts = ts[(ts > 0) & (ts < eps)]
    if ts.size == 0:
        return 0.0
    j = np.arange(k + 1, dtype=float)
    log_binom = np.array(
        [math.lgamma(k + 1) - math.lgamma(x + 1) - math.lgamma(k - x + 1) for x in j]
    )
    log_norm = math.log(-math.expm1(-eps))
    t = ts[:, None]
    log_p = -t + np.log(-np.expm1(t - eps)) - log_norm
    log_1p = np.log(-np.expm1(-t)) - log_norm
    log_a, log_1a = log_p + t, log_1p + t - eps
    p_terms = np.exp(log_binom + j * log_a + (k - j) * log_1a)
    q_terms = np.exp(eps_g + log_binom + j * log_p + (k - j) * log_1p)
    positive = k * t - (k - j) * eps > eps_g
    return float(np.max(np.sum(np.where(positive, p_terms - q_terms, 0.0), axis=1)))


def bounded_range_composition(epsilon: Number, k: int, delta: Number) -> float:
    """The optimal total epsilon of ``k`` *non-adaptively* composed ``epsilon``-bounded-range
    mechanisms at total ``delta`` (Dong, Durfee, Rogers 2020, Theorem 3).

    Aims with a float solution, then certifies: the returned value's delta is checked in
    interval arithmetic to be ``<= delta`` (it is within about ``2^-30`` relative of the exact
    optimum, never below it). The cost grows as ``k^2``. Not valid for adaptively chosen
    mechanisms: use :func:`~dpselect.accounting.zcdp_to_approx_dp` of ``k eps^2 / 8``, or the
    Renyi route, there.

    Parameters
    ----------
    epsilon : float
        Every mechanism's bounded-range ``epsilon >= 0``.
    k : int
        The number of mechanisms, at least 1.
    delta : float
        The total delta allowed, in ``(0, 1]``.

    Returns
    -------
    float
        The total epsilon, in ``[0, k epsilon]`` (0 when ``epsilon`` is 0).
    """
    eps = check_loss(epsilon, "epsilon")
    k = check_count(k)
    target = check_delta(delta, allow_zero=False)
    if eps == 0:
        return 0.0

    def certified(eps_g: float) -> bool:
        g = Fraction(eps_g)
        return certainly_at_most(lambda: _br_delta(eps, k, g), target)

    if certified(0.0):
        return 0.0
    top = float_up(k * eps)
    t_float = float(target)
    lo, hi = 0.0, float(top)
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if _br_delta_float(float(eps), k, mid) <= t_float:
            hi = mid
        else:
            lo = mid
    for rel in (2.0**-30, 2.0**-20, 2.0**-10, 2.0**-4):
        guess = hi * (1 + rel)
        if guess < top and certified(guess):
            return guess
    return top
