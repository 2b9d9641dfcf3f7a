"""The Gaussian mechanism, released exactly on a power-of-two lattice, and its calibrations.

Seed 002's Gaussian mechanism outputs ``f(D) + Y`` with ``Y_k ~ N(0, sigma^2)``. As for the
Laplace mechanism, the value is moved to the lattice ``2^k Z`` and *discrete* Gaussian noise
is added there, exactly (CKS 2020, Algorithm 3, in ``dpselect.sampling.discrete``); the lattice
rule and its accounting are in :mod:`dpselect.mechanisms.lattice`.

Calibration helpers for the *continuous* Gaussian (planning and comparison; every bound is
evaluated in ``arb`` interval arithmetic and rounded toward the safe side):

- :func:`gaussian_sigma_classic`: seed 002's ``sigma = Delta sqrt(2 ln(1.25 / delta)) / eps``
  (Dwork and Roth 2014, Theorem A.1), proven for ``eps < 1`` only.
- :func:`gaussian_delta_analytic` and :func:`gaussian_sigma_analytic`: the exact condition of
  Balle and Wang 2018, Theorem 8, and its calibration (their Algorithm 1, here a bisection over
  floats whose every step is a certified comparison).

The measurement itself releases *discrete* Gaussian noise, which is ``Delta^2 / (2 sigma^2)``-
zCDP like the continuous one (CKS 2020, Theorem 4 and its multivariate form, Theorem 14 of
arXiv:2004.00010v5). Its ``(eps, delta)`` map converts that zCDP bound (CKS 2020, Corollary
13, via :func:`dpselect.accounting.zcdp_to_approx_dp`); the analytic formula is proven for
the continuous law only and is not used in the map.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from flint import arb

from ..accounting.zcdp import zcdp_to_approx_dp
from ..core.arithmetic import float_up
from ..core.calibration import binary_search
from ..core.errors import CalibrationError, MeasureError, ParameterError
from ..core.intervals import (
    arb_of,
    certainly_at_most,
    evaluate,
    upper_float,
)
from ..core.measurement import Measurement
from ..core.measures import Approximate, Measure, ZeroConcentratedDivergence
from ..core.metrics import L2Distance
from ..sampling.discrete import sample_discrete_gaussian
from ..sampling.source import RandomSource, resolve_source
from .lattice import NoisePlan, check_noise_metric, plan_noise
from .validate import check_delta, check_epsilon, check_scale

__all__ = [
    "gaussian_delta_analytic",
    "gaussian_sigma_analytic",
    "gaussian_sigma_classic",
    "make_gaussian",
]

_SIGMA2_MIN = Fraction(1, 1 << 64)  # the exact sampler's range of sigma^2
_SIGMA2_MAX = Fraction(1 << 100)

Real = float | int | Fraction


def make_gaussian(
    input_domain: Any,
    input_metric: Any,
    scale: Real,
    *,
    output_measure: Measure | None = None,
    delta: Real | None = None,
    source: RandomSource | None = None,
) -> Measurement:
    """The Gaussian mechanism: ``x + 2^k Z`` with ``Z`` discrete Gaussian, ``sigma = scale``.

    Parameters
    ----------
    input_domain:
        ``atom_domain(int)``, ``atom_domain(float, nan=False)`` (optionally bounded), or a
        ``vector_domain`` of them. Float vectors need a ``size``.
    input_metric:
        ``L2Distance()`` (vectors or scalars) or ``L1Distance()`` (scalars only: for a single
        number both are ``|x - x'|``).
    scale:
        The noise parameter ``sigma > 0`` (the standard deviation of the continuous
        analogue). For ints ``sigma^2`` must lie in ``[2^-64, 2^100]``; for floats
        ``sigma >= 2^-1044``.
    output_measure:
        ``ZeroConcentratedDivergence()`` (default): the map returns ``rho``.
        ``Approximate(MaxDivergence())``: the map returns ``(eps, delta)`` for the ``delta``
        given here, with ``eps`` from the zCDP bound by CKS 2020, Corollary 13.
    delta:
        Required with (and only with) ``Approximate``: a number in ``(0, 1)``.
    source:
        Where the random bits come from; ``None`` means the default CSPRNG.

    Law. Int data: ``x + Z``, ``P(Z = z) ∝ exp(-z^2 / (2 sigma^2))`` on the integers. Float
    data: ``2^k (r(x) + Z)`` with ``k = floor(log2 sigma) - 30``, ``r(x)`` the nearest integer
    to ``x / 2^k`` (ties to even, after clamping to the domain's bounds and the finite floats)
    and ``Z`` discrete Gaussian of parameter ``(sigma / 2^k)^2``. Coordinates get independent
    noise.

    Privacy map. ``d_in = 0 -> 0``; otherwise ``rho = Delta'^2 / (2 sigma^2)`` rounded up, with
    ``Delta' = d_in`` for int data and ``Delta' = d_in + sqrt(d) 2^k`` for float data of
    dimension ``d`` (the rounding slack, with ``sqrt(d)`` rounded up).

    Proof. The discrete Gaussian ``N_Z(0, s^2)`` added to an integer vector query of L2
    sensitivity ``D`` is ``D^2 / (2 s^2)``-zCDP (CKS 2020, Theorem 4 for one coordinate and
    Theorem 14 for independent coordinates). On the lattice ``s = sigma / 2^k`` and
    ``D <= Delta' / 2^k`` (triangle inequality through the rounding), so
    ``rho = Delta'^2 / (2 sigma^2)``. Floats are post-processing of the exact lattice point.

    Returns
    -------
    Measurement
        From ``input_domain`` (``input_metric``) to the noisy value, of the data's type (int or
        float; a NumPy array for vectors), with output measure ``ZeroConcentratedDivergence()``
        or the ``Approximate`` measure given.
    """
    metric = check_noise_metric(input_domain, input_metric, vector_metric=L2Distance)
    sigma = Fraction(check_scale(scale, allow_zero=False))
    measure, fixed_delta = _check_measure(output_measure, delta)
    plan = plan_noise(input_domain, sigma)
    lattice_sigma = sigma if plan.k is None else sigma / Fraction(2) ** plan.k
    sigma2 = lattice_sigma * lattice_sigma
    if plan.k is None and not _SIGMA2_MIN <= sigma2 <= _SIGMA2_MAX:
        raise ParameterError(
            f"scale must lie in [2^-32, 2^50] for int data (the exact sampler's range of "
            f"sigma^2 is [2^-64, 2^100]), got {scale!r}"
        )
    src = resolve_source(source)

    def sample(n: int) -> Any:
        return sample_discrete_gaussian(sigma2, n, src)

    zcdp_map = _gaussian_zcdp_map(plan, sigma)
    privacy_map = zcdp_map if fixed_delta is None else _approximate_map(zcdp_map, fixed_delta)
    return Measurement(
        input_domain=input_domain,
        input_metric=metric,
        output_measure=measure,
        function=plan.release(sample),
        privacy_map=privacy_map,
    )


def _check_measure(output_measure: Any, delta: Any) -> tuple[Measure, Fraction | None]:
    if output_measure is None or isinstance(output_measure, ZeroConcentratedDivergence):
        if delta is not None:
            raise ParameterError(
                "delta applies only with output_measure=Approximate(MaxDivergence())"
            )
        return ZeroConcentratedDivergence(), None
    if isinstance(output_measure, Approximate):
        if delta is None:
            raise ParameterError("delta is required with output_measure=Approximate(...)")
        return output_measure, Fraction(check_delta(delta, allow_zero=False))
    raise MeasureError(
        "output_measure must be ZeroConcentratedDivergence() or Approximate(MaxDivergence()), "
        f"got {output_measure!r}"
    )


def _gaussian_zcdp_map(plan: NoisePlan, sigma: Fraction) -> Any:
    def privacy_map(d_in: Real) -> float:
        if d_in == 0:
            return 0.0
        if isinstance(d_in, float) and math.isinf(d_in):
            return math.inf
        sens = plan.sensitivity(Fraction(d_in), norm=2)
        return float_up(sens * sens / (2 * sigma * sigma))

    return privacy_map


def _approximate_map(zcdp_map: Any, delta: Fraction) -> Any:
    def privacy_map(d_in: Real) -> tuple[float, float]:
        rho = zcdp_map(d_in)
        eps = math.inf if math.isinf(rho) else zcdp_to_approx_dp(rho, delta)
        return eps, float_up(delta)

    return privacy_map


# --------------------------------------------------------------------------------------------
# calibration of the continuous Gaussian


def _positive(value: Any, name: str) -> Fraction:
    return Fraction(check_scale(value, name, allow_zero=False))


def gaussian_sigma_classic(sensitivity: Real, epsilon: Real, delta: Real) -> float:
    """Seed 002's ``sigma = Delta sqrt(2 ln(1.25 / delta)) / eps``, rounded up.

    The Gaussian mechanism with this ``sigma`` is ``(eps, delta)``-DP for ``0 < eps < 1``
    (Dwork and Roth 2014, Theorem A.1; seed 002, Gaussian mechanism). Outside that range the
    formula is not proven and is refused (:class:`ParameterError`): use
    :func:`gaussian_sigma_analytic`, valid for every ``eps > 0``.

    Parameters
    ----------
    sensitivity : float
        The query's L2 sensitivity ``Delta > 0``.
    epsilon : float
        The target epsilon, in ``(0, 1)``.
    delta : float
        The target delta, in ``(0, 1)``.

    Returns
    -------
    float
        ``sigma``, rounded up.
    """
    d = _positive(sensitivity, "sensitivity")
    eps = Fraction(check_epsilon(epsilon))
    if eps >= 1:
        raise ParameterError(
            f"epsilon must be below 1 for the classic calibration (Dwork and Roth 2014, "
            f"Theorem A.1), got {epsilon!r}: use gaussian_sigma_analytic"
        )
    dl = Fraction(check_delta(delta, allow_zero=False))

    def formula() -> arb:
        log_term = (arb_of(Fraction(5, 4)) / arb_of(dl)).log()
        return arb_of(d) * (2 * log_term).sqrt() / arb_of(eps)

    return upper_float(evaluate(formula))


def _phi(x: arb) -> arb:
    """The standard normal CDF, ``erfc(-x / sqrt 2) / 2``."""
    return (-x / arb(2).sqrt()).erfc() / 2


def _analytic_delta(d: Fraction, sigma: Fraction, eps: Fraction) -> arb:
    """Balle and Wang 2018, Theorem 8: ``Phi(D/(2s) - e s/D) - e^e Phi(-D/(2s) - e s/D)``."""
    dd, s, e = arb_of(d), arb_of(sigma), arb_of(eps)
    a = dd / (2 * s)
    b = e * s / dd
    return _phi(a - b) - e.exp() * _phi(-a - b)


def gaussian_delta_analytic(sensitivity: Real, sigma: Real, epsilon: Real) -> float:
    """The smallest ``delta`` for which the Gaussian mechanism is ``(eps, delta)``-DP, rounded up.

    ``delta = Phi(Delta/(2 sigma) - eps sigma/Delta) - e^eps Phi(-Delta/(2 sigma) -
    eps sigma/Delta)`` (Balle and Wang 2018, Theorem 8: the condition is necessary and
    sufficient for the continuous Gaussian mechanism). ``epsilon >= 0``; a sensitivity of 0
    gives 0. Evaluated in ``arb`` and rounded up.

    Parameters
    ----------
    sensitivity : float
        The query's L2 sensitivity ``Delta >= 0``.
    sigma : float
        The noise's standard deviation, ``> 0``.
    epsilon : float
        The epsilon at which delta is wanted, ``>= 0``.

    Returns
    -------
    float
        ``delta`` in ``[0, 1]``.
    """
    d = Fraction(check_scale(sensitivity, "sensitivity"))
    s = _positive(sigma, "sigma")
    eps = Fraction(check_scale(epsilon, "epsilon"))
    if d == 0:
        return 0.0
    return min(1.0, max(0.0, upper_float(evaluate(lambda: _analytic_delta(d, s, eps)))))


def gaussian_sigma_analytic(sensitivity: Real, epsilon: Real, delta: Real) -> float:
    """The smallest float ``sigma`` whose Gaussian mechanism is certainly ``(eps, delta)``-DP.

    Balle and Wang 2018, Algorithm 1, with the exact condition of their Theorem 8. The
    condition is decreasing in ``sigma``; a bisection over the ordered floats keeps a value
    whose condition was *certified* in ``arb`` (undecided counts as failing), so the result
    never under-states ``sigma``: its own ``delta`` is ``<= delta`` and the next float down
    fails (or could not be certified). Valid for every ``eps > 0``.

    Parameters
    ----------
    sensitivity : float
        The query's L2 sensitivity ``Delta > 0``.
    epsilon : float
        The target epsilon, ``> 0``.
    delta : float
        The target delta, in ``(0, 1)``.

    Returns
    -------
    float
        ``sigma``, the noise's standard deviation.
    """
    d = _positive(sensitivity, "sensitivity")
    eps = Fraction(check_epsilon(epsilon))
    target = Fraction(check_delta(delta, allow_zero=False))

    def passes(sigma: float) -> bool:
        if not sigma > 0 or math.isinf(sigma):
            return False
        return certainly_at_most(lambda: _analytic_delta(d, Fraction(sigma), eps), target)

    # Start from the classic formula's sigma (a good guess even where it is not proven).
    guess = float(d) * math.sqrt(2 * math.log(1.25 / float(target))) / float(eps)
    hi = max(guess, 5e-324)
    while not passes(hi):
        hi *= 2.0
        if math.isinf(hi):
            raise CalibrationError("no finite sigma meets (epsilon, delta)")
    lo = hi / 2.0
    while passes(lo):
        lo /= 2.0
        if lo == 0.0:
            raise CalibrationError("every sigma down to 0 passes: delta is too large")
    sigma: float = binary_search(passes, bounds=(lo, hi), T=float)
    return sigma
