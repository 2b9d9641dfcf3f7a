"""Renyi differential privacy (RDP) curves, their composition, and conversion to (eps, delta).

A curve maps a Renyi order ``alpha > 1`` to an upper bound on ``D_alpha`` (Mironov 2017). The
curves here are, for each order, the *exact* worst case of their class, evaluated in ``arb``
interval arithmetic and rounded up:

- Gaussian (L2 sensitivity ``Delta``, standard deviation ``sigma``): ``alpha Delta^2 /
  (2 sigma^2)`` (Mironov 2017, Proposition 7); any ``rho``-zCDP mechanism: ``alpha rho``.
- ``eps``-DP: the privacy loss ``L`` lies in ``[-eps, eps]`` and ``E_Q[e^L] = 1``, so
  ``E_Q[e^{alpha L}]`` (convex in ``e^L``) is largest for the two-point law of randomized
  response: ``D_alpha = ln((e^{alpha eps} + e^{(1 - alpha) eps}) / (1 + e^eps)) / (alpha - 1)``,
  equal to Bun and Steinke's (2016) ``ln((sinh(alpha eps) - sinh((alpha-1) eps)) / sinh eps)
  / (alpha - 1)``.
- ``eps``-bounded range (the exponential mechanism; Durfee and Rogers 2019): ``L`` lies in
  ``[t - eps, t]`` for some ``t``; the worst case is again a two-point law (generalised
  randomized response, Dong, Durfee, Rogers 2020, Section 4; Cesar and Rogers 2021), whose
  Q-mass ``q`` on the upper point gives ``E = (e^{-alpha eps} + q a) / (e^{-eps} + q b)^alpha``
  with ``a = 1 - e^{-alpha eps}``, ``b = 1 - e^{-eps}``. Its maximiser is ``q* = (a e^{-eps} -
  alpha b e^{-alpha eps}) / ((alpha - 1) a b)``; evaluating at a ball around ``q*`` encloses
  the maximum. This curve is below both ``alpha eps^2 / 8`` and the ``eps``-DP curve.

Curves compose by adding (Mironov 2017, Proposition 1; adaptively). Conversion to
``(eps, delta)`` uses ``eps = D_alpha + (ln(1/delta) + (alpha - 1) ln(1 - 1/alpha) - ln alpha)
/ (alpha - 1)`` (Canonne, Kamath, Steinke 2020, Proposition 12; Balle et al. 2020,
Theorem 21), minimised over orders: any order gives a valid bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction

from flint import arb

from dpselect.core.arithmetic import Number, float_up
from dpselect.core.errors import ParameterError

from ..core.intervals import arb_of, evaluate, upper_float
from .params import check_delta, check_loss

__all__ = [
    "DEFAULT_ORDERS",
    "RenyiCurve",
    "bounded_range_rdp",
    "compose_rdp",
    "gaussian_rdp",
    "pure_dp_rdp",
    "rdp_to_approx_dp",
    "zcdp_rdp",
]

#: A Renyi-DP curve: order ``alpha > 1`` to an upper bound on ``D_alpha`` (a float).
RenyiCurve = Callable[[float], float]

#: Orders ``1 + 2^(j/8)`` for ``j`` in ``[-80, 160]``: ``alpha - 1`` from about 1e-3 to 1e6.
DEFAULT_ORDERS: tuple[float, ...] = tuple(1.0 + 2.0 ** (j / 8) for j in range(-80, 161))


def _check_order(alpha: float) -> Fraction:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, Fraction)):
        raise ParameterError(f"alpha must be a number, got {type(alpha).__name__}")
    if not (math.isfinite(float(alpha)) and alpha > 1):
        raise ParameterError(f"alpha must be a finite order > 1, got {alpha!r}")
    return Fraction(alpha)


def zcdp_rdp(rho: Number) -> RenyiCurve:
    """``rho``-zCDP as a Renyi curve: ``alpha -> alpha rho`` (Bun and Steinke 2016, Def. 1.1).

    Parameters
    ----------
    rho : float
        The zCDP parameter, ``>= 0``.

    Returns
    -------
    RenyiCurve
        ``alpha -> alpha rho``, rounded up (an order that is not a finite number ``> 1`` raises
        :class:`ParameterError`).
    """
    r = check_loss(rho, "rho")

    def curve(alpha: float) -> float:
        return float_up(_check_order(alpha) * r)

    return curve


def gaussian_rdp(sensitivity: Number, sigma: Number) -> RenyiCurve:
    """Gaussian mechanism: ``alpha -> alpha Delta^2 / (2 sigma^2)`` (Mironov 2017, Prop. 7).

    Parameters
    ----------
    sensitivity : float
        The query's L2 sensitivity ``Delta >= 0``.
    sigma : float
        The noise's standard deviation, ``> 0``.

    Returns
    -------
    RenyiCurve
        ``alpha -> alpha Delta^2 / (2 sigma^2)``, rounded up.
    """
    d, s = check_loss(sensitivity, "sensitivity"), check_loss(sigma, "sigma")
    if s == 0:
        raise ParameterError("sigma must be positive")
    return zcdp_rdp(d * d / (2 * s * s))


def _pure_formula(alpha: Fraction, eps: Fraction) -> arb:
    a, e = arb_of(alpha), arb_of(eps)
    # ln((e^{a e} + e^{(1-a) e}) / (1 + e^e)) / (a - 1), with e^{a e} factored out.
    inner = (arb(1) + (e * (arb(1) - arb(2) * a)).exp()) / (arb(1) + e.exp())
    return (a * e + inner.log()) / (a - arb(1))


def pure_dp_rdp(epsilon: Number) -> RenyiCurve:
    """``eps``-DP as a Renyi curve: randomized response's divergence, the worst case.

    Parameters
    ----------
    epsilon : float
        The mechanism's ``epsilon >= 0``.

    Returns
    -------
    RenyiCurve
        ``alpha -> D_alpha`` of randomized response at ``epsilon``, rounded up and never above
        ``epsilon``.
    """
    eps = check_loss(epsilon, "epsilon")

    def curve(alpha: float) -> float:
        a = _check_order(alpha)
        if eps == 0:
            return 0.0
        return min(upper_float(evaluate(lambda: _pure_formula(a, eps))), float_up(eps))

    return curve


def _bounded_range_formula(alpha: Fraction, eps: Fraction) -> arb:
    a, e = arb_of(alpha), arb_of(eps)
    em = (-e).exp()
    eam = (-(a * e)).exp()
    big_a = -((-(a * e)).expm1())  # 1 - e^{-alpha eps}
    big_b = -((-e).expm1())  # 1 - e^{-eps}
    q = (big_a * em - a * big_b * eam) / ((a - arb(1)) * big_a * big_b)
    # q* is the maximiser of the expression below over all q (it lies in (0, 1)); the ball
    # around it encloses the maximum's value, an upper bound on the constrained maximum.
    value = (eam + q * big_a) / ((em + q * big_b) ** a)
    return value.log() / (a - arb(1))


def bounded_range_rdp(epsilon: Number) -> RenyiCurve:
    """``eps``-bounded range (exponential mechanism) as a Renyi curve, exact worst case.

    Never above ``alpha eps^2 / 8`` (the zCDP bound) nor the ``eps``-DP curve.

    Parameters
    ----------
    epsilon : float
        The bounded-range ``epsilon >= 0`` (the exponential mechanism's range distance over its
        Gumbel scale).

    Returns
    -------
    RenyiCurve
        ``alpha -> D_alpha`` of the worst ``epsilon``-bounded-range mechanism, rounded up.
    """
    eps = check_loss(epsilon, "epsilon")

    def curve(alpha: float) -> float:
        a = _check_order(alpha)
        if eps == 0:
            return 0.0
        exact = upper_float(evaluate(lambda: _bounded_range_formula(a, eps)))
        return min(exact, float_up(a * eps * eps / 8), float_up(eps))

    return curve


def compose_rdp(curves: Iterable[RenyiCurve]) -> RenyiCurve:
    """Composition: the sum of the curves, order by order, rounded up (Mironov 2017, Prop. 1).

    A curve object passed several times is evaluated once per order and multiplied.

    Parameters
    ----------
    curves : iterable of RenyiCurve
        The curves of the composed mechanisms (read once, when called).

    Returns
    -------
    RenyiCurve
        The order-wise sum, rounded up; ``inf`` at an order where any member is infinite.
    """
    counts: dict[int, tuple[RenyiCurve, int]] = {}
    for part in curves:
        previous = counts.get(id(part))
        counts[id(part)] = (part, previous[1] + 1 if previous else 1)

    def curve(alpha: float) -> float:
        _check_order(alpha)
        total = Fraction(0)
        for part, count in counts.values():
            value = part(alpha)
            if not math.isfinite(value):
                return math.inf
            total += count * Fraction(value)
        return float_up(total)

    return curve


def _conversion_term(beta: Fraction, log_inv_delta: Callable[[], arb]) -> arb:
    b = arb_of(beta)
    alpha = arb(1) + b
    return (log_inv_delta() + b * (b / alpha).log() - alpha.log()) / b


def _epsilon_at(curve: RenyiCurve, alpha: float, delta: Fraction) -> float:
    beta = Fraction(alpha) - 1
    rdp = curve(alpha)
    if not math.isfinite(rdp):
        return math.inf
    term = evaluate(lambda: _conversion_term(beta, lambda: (arb(1) / arb_of(delta)).log()))
    if not term.is_finite():
        return math.inf
    return float_up(Fraction(rdp) + Fraction(upper_float(term)))


def rdp_to_approx_dp(
    curve: RenyiCurve, delta: Number, orders: Sequence[float] = DEFAULT_ORDERS
) -> tuple[float, float]:
    """``(epsilon, alpha)``: the smallest CKS conversion of ``curve`` over ``orders``, then
    refined by a golden-section search between the best order's neighbours.

    ``epsilon`` is rounded up and valid at the returned order (and so for the mechanism).

    Parameters
    ----------
    curve : RenyiCurve
        The mechanism's Renyi curve.
    delta : float
        The target ``delta``, in ``(0, 1]`` (``delta = 1`` gives epsilon 0).
    orders : sequence of float, default DEFAULT_ORDERS
        The grid of orders searched (finite, ``> 1``, not empty).

    Returns
    -------
    tuple of (float, float)
        ``(epsilon, alpha)``: the least epsilon found (rounded up, at least 0) and the order
        that gave it.
    """
    d = check_delta(delta, allow_zero=False)
    if d == 1:
        return 0.0, float(orders[0]) if orders else 2.0
    grid = sorted(float(_check_order(a)) for a in orders)
    if not grid:
        raise ParameterError("orders must not be empty")
    values = [_epsilon_at(curve, a, d) for a in grid]
    best_i = min(range(len(grid)), key=values.__getitem__)
    best_eps, best_alpha = values[best_i], grid[best_i]
    lo = grid[best_i - 1] if best_i > 0 else 1.0 + (grid[0] - 1.0) / 2
    hi = grid[best_i + 1] if best_i + 1 < len(grid) else grid[-1] * 2
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(40):
        x1, x2 = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        if not lo < x1 < x2 < hi:
            break
        v1, v2 = _epsilon_at(curve, x1, d), _epsilon_at(curve, x2, d)
        for v, x in ((v1, x1), (v2, x2)):
            if v < best_eps:
                best_eps, best_alpha = v, x
        if v1 <= v2:
            hi = x2
        else:
            lo = x1
    return max(best_eps, 0.0), best_alpha
