"""Private partition selection: which values of a column may be shown at all.

The input is a histogram ``{value: n_value}`` where ``n_value`` counts the persons having the
value after contribution bounding: one person adds 1 to at most ``c`` (``max_contributions``)
values. Neighbours differ by one person; values present in one dataset only have count 1
there. Two mechanisms, both ``(epsilon, delta)``-DP at one person (``docs/partition_selection.md``
has the proofs):

**Optimal partition selection** (``c = 1``; Desfontaines, Voss, Gipson and Mandayam 2022,
"Differentially private partition selection", PoPETs, Theorem 1). Each value is released
independently with probability ``pi(n_value)``, where ``pi(0) = 0`` and

    pi(n) = min( e^eps pi(n-1) + delta,  1 - e^-eps (1 - pi(n-1) - delta),  1 ).

These are the two DP constraints between counts ``n - 1`` and ``n`` taken with equality, so
``pi`` is the largest release probability any ``(eps, delta)``-DP mechanism of this form can
have at every ``n`` (DVGM22, Theorem 1). The Bernoulli trials are exact: ``pi(n)`` is evaluated
in ``arb`` interval arithmetic and compared with a lazily read uniform until the comparison is
decided (``docs/exactness.md``).

**Thresholding** (any ``c``; Korolova et al. 2009, Wilson et al. 2020). Each value's count gets
exact discrete Laplace (scale ``b``) or discrete Gaussian (``sigma``) noise; a value is released
when its noisy count reaches the integer threshold ``tau``, optionally with the noisy count.
With ``p = P(1 + Z >= tau)`` (a value that only one neighbour has), the map at one person is

- Laplace: ``(c / b, c p)`` provided ``-ln(1 - p) <= 1 / b`` (checked);
- Gaussian: ``(eps_1 + c (-ln(1 - p)), delta_1 + c p)`` with ``eps_1`` the CKS conversion of
  ``rho = c / (2 sigma^2)`` at ``delta_1``.

**Rows per value** (``max_rows_per_value = r``): a person adds at most ``r`` to each of at most
``c`` counts (L-infinity ``r``, L1 ``c r``, L2 ``r sqrt(c)``), so a value only one neighbour has
counts at most ``r`` there. The proof of docs/partition_selection.md, section 2, goes through
with ``p = P(r + Z >= tau)`` (the count ``r`` passes most often) and the common part's L1
distance ``(c - j) r`` (Laplace) or L2 ``r sqrt(c)`` (Gaussian): Laplace ``b = c r / epsilon``,
``(c r / b, c p)`` provided ``-ln(1 - p) <= r / b``; Gaussian ``rho = c r^2 / (2 sigma^2)``.
The threshold is ``r - 1`` above the one of ``r = 1`` at the same noise.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from flint import arb, ctx

from ..accounting.zcdp import zcdp_to_approx_dp
from ..core.arithmetic import float_up
from ..core.errors import DomainError, ParameterError, PrivacyMapError
from ..core.intervals import arb_of, evaluate, upper_float
from ..core.measurement import Measurement
from ..core.measures import Approximate, MaxDivergence
from ..core.metrics import SymmetricDistance
from ..sampling.discrete import (
    GAUSSIAN_SIGMA2_RANGE,
    LAPLACE_SCALE_RANGE,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)
from ..sampling.source import RandomSource, resolve_source
from ..sampling.uniform import bernoulli_from_balls
from .limited_domain import HistogramDomain
from .validate import check_delta, check_epsilon, check_int, check_scale

__all__ = [
    "ThresholdPlan",
    "discrete_gaussian_tail",
    "make_optimal_partition_selection",
    "make_threshold_partition_selection",
    "optimal_release_probability",
    "ordered_values",
    "threshold_plan",
]

ThresholdNoise = Literal["laplace", "gaussian"]


def ordered_values(values: Any) -> list[Any]:
    """Values in a fixed order that does not depend on their counts (sorted when they are
    mutually comparable, else by type name and ``repr``): released sets are shown this way.

    Parameters
    ----------
    values : iterable
        Hashable values (a mapping gives its keys).

    Returns
    -------
    list
        The values in that fixed order.
    """
    vals = list(values)
    try:
        return sorted(vals)
    except TypeError:
        return sorted(vals, key=lambda v: (type(v).__qualname__, repr(v)))


# ------------------------------------------------------------------------------------------
# Optimal partition selection (DVGM22)


#: The epsilon the table of :func:`_pi_table` is computed at, at most: DVGM22's ``pi`` for a
#: smaller epsilon satisfies the DP constraints of every larger one (they only loosen), so a
#: larger epsilon runs this one's table (its ``1 - pi`` differs by less than ``e^-1024``).
PI_EPSILON_CAP = Fraction(1024)
#: A table longer than this is refused before anything runs (:func:`pi_steps_at_least`).
MAX_PI_STEPS = 10**6


def pi_steps_at_least(eps: Fraction, delta: Fraction) -> float:
    """A lower bound on the table's length ``N`` (``pi(N) = 1``), from public parameters.

    The first constraint alone gives ``pi(n) <= delta (e^(n eps) - 1) / (e^eps - 1)``
    (induction), and the table ends only after ``pi(n - 1) >= 1 - delta``, at least
    ``min(1/2, 1 - delta)``: ``N - 1 >= ln(1 + (e^eps - 1) h / delta) / eps`` with ``h`` that
    bound. Computed in logarithms (no overflow at any epsilon or delta); a float estimate,
    used only to refuse a table too long to compute before anything is charged."""
    e = float(min(eps, PI_EPSILON_CAP))
    h = min(0.5, float(1 - delta))
    log_expm1 = e + math.log1p(-math.exp(-e)) if e > 1 else math.log(math.expm1(e))
    log_x = log_expm1 + math.log(h) - math.log(float(delta))
    log1p_x = log_x + math.log1p(math.exp(-log_x)) if log_x > 0 else math.log1p(math.exp(log_x))
    return log1p_x / e + 1


@functools.lru_cache(maxsize=32)
def _pi_table(eps: Fraction, delta: Fraction, prec: int) -> tuple[tuple[arb, ...], int]:
    """``pi(0..N)`` as balls at ``prec`` bits, and ``N``, the first ``n`` with ``pi(n) = 1``.

    Computed as two balls, ``pi(n)`` and ``q(n) = 1 - pi(n)``, each kept with its own
    relative precision however small it gets (module docstring's recurrence, rewritten):
    ``pi(n) = min(e^eps pi(n-1) + delta, 1 - e^-eps (q(n-1) - delta), 1)`` and ``q(n) =
    max(1 - e^eps pi(n-1) - delta, e^-eps (q(n-1) - delta), 0)``; ``pi(n) = 1`` exactly when
    ``q(n-1) <= delta`` (both constraints then reach 1). A ball of ``pi`` alone near 1 at
    ``prec`` bits cannot tell ``1 - e^-100`` from 1, so at a large epsilon the end was never
    certified and the table ran to its length limit (about a minute, then a wrong message);
    with ``q`` it ends within a few steps at any epsilon. The number of steps is about
    ``ln(1/delta) / eps`` for small epsilon."""
    old = ctx.prec
    ctx.prec = prec
    try:
        e, d = arb_of(min(eps, PI_EPSILON_CAP)), arb_of(delta)
        grow, shrink = e.exp(), (-e).exp()
        table = [arb(0)]
        p, q = arb(0), arb(1)
        while True:
            if (q - d).upper() <= 0:  # q(n-1) <= delta: pi(n) = 1
                table.append(arb(1))
                return tuple(table), len(table) - 1
            first = grow * p + d  # the first constraint
            second = shrink * (q - d)  # 1 - the second constraint
            p = arb.union(
                min(first.lower(), 1 - second.upper(), arb(1)),
                min(first.upper(), 1 - second.lower(), arb(1)),
            )
            q = arb.union(
                max(1 - first.upper(), second.lower(), arb(0)),
                max(1 - first.lower(), second.upper(), arb(0)),
            )
            table.append(p)
            if len(table) > 4 * MAX_PI_STEPS:  # pragma: no cover - refused before (steps)
                raise ParameterError(
                    "epsilon and delta are too small for optimal partition selection"
                )
    finally:
        ctx.prec = old


def optimal_release_probability(n: int, epsilon: Any, delta: Any) -> float:
    """``pi(n)`` of DVGM22 (module docstring), to float precision (for docs and tests).

    Parameters
    ----------
    n : int
        The value's count (persons); ``n <= 0`` gives 0.
    epsilon, delta : float
        The mechanism's parameters, ``epsilon > 0`` and ``delta`` in ``(0, 1)`` (not checked
        here).

    Returns
    -------
    float
        ``pi(n)``, in ``[0, 1]``.
    """
    table, last = _pi_table(Fraction(epsilon), Fraction(delta), 128)
    return 1.0 if n >= last else float(table[max(n, 0)].mid())


def _bernoulli(n: int, eps: Fraction, delta: Fraction, source: RandomSource) -> bool:
    """An exact Bernoulli(``pi(n)``) trial: a lazy uniform against the ball of ``pi(n)``."""
    if n <= 0:
        return False
    _, last = _pi_table(eps, delta, 128)
    if n >= last:
        return True
    return bernoulli_from_balls(lambda prec: _pi_table(eps, delta, prec)[0][n], source)


def make_optimal_partition_selection(
    epsilon: float | Fraction,
    delta: float | Fraction,
    *,
    source: RandomSource | None = None,
) -> Measurement:
    """DVGM22's optimal partition selection for one value per person (module docstring).

    Input: a mapping ``{value: persons}`` with each person in at most one value. Output: the
    released values in :func:`ordered_values` order. Map to ``Approximate(MaxDivergence())``:
    ``d_in = 0 -> (0, 0)``, ``1 -> (epsilon, delta)`` (DVGM22, Theorem 1: the constraints
    hold between every ``n - 1`` and ``n``, values are independent, and a person changes one
    value's count); ``d_in > 1`` raises :class:`PrivacyMapError`.

    Parameters
    ----------
    epsilon : float
        The guarantee's epsilon at one person, at least ``2^-20``.
    delta : float
        The guarantee's delta at one person, in ``(0, 1)``. The table of ``pi`` (about
        ``ln(1/delta) / epsilon`` steps) must stay within :data:`MAX_PI_STEPS`.
    source : RandomSource or None, default None
        Where the trials' random bits come from; ``None`` is the CSPRNG.

    Returns
    -------
    Measurement
        From a :class:`~dpselect.mechanisms.limited_domain.HistogramDomain` mapping
        (``SymmetricDistance``) to the list of released values
        (``Approximate(MaxDivergence())``).
    """
    eps = Fraction(check_epsilon(epsilon))
    dlt = Fraction(check_delta(delta, allow_zero=False))
    if eps < Fraction(1, 1 << 20):
        raise ParameterError(f"epsilon must be at least 2^-20 here, got {epsilon!r}")
    if pi_steps_at_least(eps, dlt) > MAX_PI_STEPS:
        raise ParameterError(
            f"optimal partition selection at epsilon = {float(epsilon):g}, delta = "
            f"{float(delta):g} needs a table of more than {MAX_PI_STEPS:,} release "
            "probabilities (about ln(1/delta) / epsilon); raise delta or epsilon"
        )
    _pi_table(eps, dlt, 128)  # computed (and cached) now: before any charge
    domain = HistogramDomain()

    def function(histogram: Mapping[Hashable, int]) -> list[Any]:
        if not domain.member(histogram):
            raise DomainError("the input must be a mapping {value: count} of integer counts")
        src = resolve_source(source)
        kept = [
            v for v in ordered_values(histogram) if _bernoulli(int(histogram[v]), eps, dlt, src)
        ]
        return kept

    def privacy_map(d_in: Any) -> tuple[float, float]:
        if d_in == 0:
            return (0.0, 0.0)
        if d_in > 1:
            raise PrivacyMapError(
                f"optimal partition selection is proven for one person (d_in = 1), got {d_in}"
            )
        return (float_up(eps), float_up(dlt))

    return Measurement(
        input_domain=domain,
        input_metric=SymmetricDistance(),
        output_measure=Approximate(MaxDivergence()),
        function=function,
        privacy_map=privacy_map,
    )


# ------------------------------------------------------------------------------------------
# Thresholding


@dataclass(frozen=True)
class ThresholdPlan:
    """A calibrated thresholding: noise, threshold, and the guarantee at one person.

    ``p`` bounds ``P(1 + Z >= threshold)`` from above; ``epsilon, delta`` is the map at one
    person; ``delta_noise`` is the Gaussian conversion's share (0 for Laplace).
    """

    noise: ThresholdNoise
    scale: float
    threshold: int
    max_contributions: int
    p: float
    epsilon: float
    delta: float
    delta_noise: float
    #: ``r``: each count moves by at most this much per person (``p`` is ``P(r + Z >= tau)``)
    max_rows_per_value: int = 1


def _check_range(value: Fraction, bounds: tuple[Fraction, Fraction], law: str, name: str) -> None:
    """The threshold noise's parameter within its exact sampler's range (public parameters
    only; checked when the plan is made, before a recipe charges: an epsilon of 1e-20 made
    the threshold search loop without end at arb's precision)."""
    if not bounds[0] <= value <= bounds[1]:
        raise ParameterError(
            f"epsilon is too small or too large for {law} thresholding: the noise {name} "
            f"{float(value):.6g} is outside the exact sampler's range "
            f"[{float(bounds[0]):.3g}, {float(bounds[1]):.3g}]"
        )


def _laplace_tail_exponent(b: Fraction, c: int, delta: Fraction) -> int:
    """The least ``m >= 0`` with ``c q^m / (1 + q) <= delta``, ``q = e^(-1/b)``."""

    def ok(m: int) -> bool:
        q = (-1 / arb_of(b)).exp()
        return bool(c * q**m / (1 + q) <= arb_of(delta))

    hi = 1
    while not ok(hi):
        hi *= 2
    lo = -1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def discrete_gaussian_tail(sigma2: Fraction, m: int) -> float:
    """An upper bound (rounded up) on ``P(Z >= m)``, ``Z`` discrete Gaussian with ``P(z)``
    proportional to ``exp(-z^2 / (2 sigma2))`` on the integers (the law
    :func:`~dpselect.sampling.discrete.sample_discrete_gaussian` samples), ``m >= 1``.

    Exact sums in ``arb``: the numerator ``sum_{z >= m}`` up to ``M = m + ceil(12 sigma)`` plus
    ``e^(-M^2/(2 sigma2)) / (1 - e^(-M/sigma2))`` for the rest (for ``z >= M``, ``z^2 >= M^2 +
    2 M (z - M)``); the normaliser from below by its terms with ``|z| <= ceil(12 sigma)``. Tighter
    than the sub-Gaussian ``exp(-m^2 / (2 sigma2))`` (CKS 2020, Corollary 9) by about
    ``sigma / (m sqrt(2 pi))``.

    For ``sigma > 200`` the sums would take ``24 sigma`` terms (110 s for a threshold search at
    ``sigma`` near 10^5), so a closed form is used instead: ``P(Z >= m) <= (1/2) erfc((m - 1/2)
    / (sigma sqrt 2))``, the normal tail from ``m - 1/2``, valid when ``m - 1/2 >= sigma``.
    Proof: ``f(x) = exp(-x^2 / (2 sigma2))`` is convex for ``|x| >= sigma`` (``f'' = (x^2 /
    sigma2 - 1) f / sigma2``), so by the Hermite-Hadamard inequality ``f(z) <= int_{z-1/2}^{z+1/2}
    f`` for every ``z >= m``, and the numerator is at most ``int_{m-1/2}^inf f = sigma sqrt(pi/2)
    erfc((m - 1/2) / (sigma sqrt 2))``; by Poisson summation ``sum_z f(z) = sigma sqrt(2 pi)
    sum_k exp(-2 pi^2 sigma2 k^2) >= sigma sqrt(2 pi)`` (every term of the dual sum is positive).
    Below ``m - 1/2 < sigma`` the bound ``1/2`` is used (``P(Z >= 1) < 1/2`` by symmetry);
    such an ``m`` is far from any threshold for ``delta < 0.1``. Its excess over the exact
    tail is below 10^-3 relative at the thresholds used (tested).

    Parameters
    ----------
    sigma2 : Fraction
        The law's parameter ``sigma^2 > 0``.
    m : int
        The threshold, at least 1.

    Returns
    -------
    float
        A bound on ``P(Z >= m)``.
    """
    if m < 1:
        raise ParameterError(f"m must be at least 1, got {m}")
    sigma = math.sqrt(float(sigma2))
    if sigma > _GAUSSIAN_SUM_SIGMA:
        return _normal_tail_bound(sigma2, m)
    width = math.ceil(12 * sigma) + 1

    def formula() -> arb:
        s2 = arb_of(sigma2)

        def term(z: int) -> arb:
            return (-arb(z) * arb(z) / (2 * s2)).exp()

        top = m + width
        num = sum((term(z) for z in range(m, top)), arb(0))
        num += term(top) / (1 - (-arb(top) / s2).exp())
        norm = 1 + 2 * sum((term(z) for z in range(1, width + 1)), arb(0))
        return num / norm

    return upper_float(evaluate(formula))


#: Above this ``sigma`` the discrete Gaussian tail is bounded in closed form (no sums).
_GAUSSIAN_SUM_SIGMA = 200.0


def _normal_tail_bound(sigma2: Fraction, m: int) -> float:
    """``(1/2) erfc((m - 1/2) / sqrt(2 sigma2))`` rounded up when ``(m - 1/2)^2 >= sigma2``,
    else ``1/2`` (:func:`discrete_gaussian_tail`, the proof)."""
    half = Fraction(2 * m - 1, 2)
    if half * half < sigma2:
        return 0.5

    def formula() -> arb:
        return (arb_of(half) / (2 * arb_of(sigma2)).sqrt()).erfc() / 2

    return upper_float(evaluate(formula))


def _least_gaussian_tail_exponent(sigma2: Fraction, c: int, delta: Fraction, start: int) -> int:
    """The least ``m >= 1`` with ``c * discrete_gaussian_tail(sigma2, m) <= delta``, searched
    below ``start`` (which satisfies it)."""

    def ok(m: int) -> bool:
        return c * Fraction(discrete_gaussian_tail(sigma2, m)) <= delta

    lo, hi = 0, start  # ok(hi); lo not ok or 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def threshold_plan(
    noise: ThresholdNoise,
    epsilon: float,
    delta: float,
    max_contributions: int = 1,
    *,
    max_rows_per_value: int = 1,
) -> ThresholdPlan:
    """Calibrate thresholding to ``(epsilon, delta)`` at one person (module docstring).

    Laplace: ``b = c r / epsilon`` (rounded up), all of ``delta`` to the threshold. Gaussian:
    half of ``delta`` to the threshold, half to the zCDP conversion, ``sigma`` the smallest
    whose CKS conversion of ``rho = c r^2 / (2 sigma^2)`` (plus the threshold's ``epsilon``
    share) is within ``epsilon``. ``r = max_rows_per_value`` (default 1): each person moves
    each of their ``c`` counts by at most ``r``; the threshold is then ``r + m`` with ``m``
    the least with ``c P(Z >= m)`` within the threshold's delta (module docstring, "Rows per
    value").

    Parameters
    ----------
    noise : {"laplace", "gaussian"}
        The noise added to each count.
    epsilon : float
        The target epsilon at one person, ``> 0``.
    delta : float
        The target delta at one person, in ``(0, 1)``.
    max_contributions : int, default 1
        ``c``: how many values one person adds to, at least 1.
    max_rows_per_value : int, default 1
        ``r``: how much one person adds to each of their values' counts, at least 1.

    Returns
    -------
    ThresholdPlan
        The noise scale (``b`` or ``sigma``), the integer threshold and the guarantee at one
        person.
    """
    c = check_int(max_contributions, "max_contributions", minimum=1)
    r = check_int(max_rows_per_value, "max_rows_per_value", minimum=1)
    eps = Fraction(check_epsilon(epsilon))
    dlt = Fraction(check_delta(delta, allow_zero=False))
    if noise == "laplace":
        return _laplace_threshold_plan(eps, dlt, c, r)
    if noise != "gaussian":
        raise ParameterError(f"noise must be 'laplace' or 'gaussian', got {noise!r}")
    return _gaussian_threshold_plan(eps, dlt, c, r)


def _laplace_threshold_plan(eps: Fraction, dlt: Fraction, c: int, r: int) -> ThresholdPlan:
    """Laplace thresholding: ``b = c r / epsilon`` (rounded up), all of ``delta`` to the
    threshold."""
    b = Fraction(float_up(Fraction(c * r) / eps))
    _check_range(b, LAPLACE_SCALE_RANGE, "Laplace", "scale")
    m = _laplace_tail_exponent(b, c, dlt)
    p = upper_float(evaluate(lambda: (-arb(m) / arb_of(b)).exp() / (1 + (-1 / arb_of(b)).exp())))
    if not -math.log1p(-p) * (1 + 1e-9) <= float(r / b) * (1 - 1e-12):
        raise ParameterError("delta is too large for Laplace thresholding at this epsilon")
    spent = float_up(Fraction(c * r) / b)
    # c p <= delta is certified in arb (_laplace_tail_exponent): delta itself is the bound
    return ThresholdPlan("laplace", float(b), m + r, c, p, spent, float(dlt), 0.0, r)


def _gaussian_threshold_plan(eps: Fraction, dlt: Fraction, c: int, r: int) -> ThresholdPlan:
    """Gaussian thresholding: half of ``delta`` to the threshold, half to the conversion."""
    d_thr, d_noise = dlt / 2, dlt / 2
    # c * P(Z >= m) <= d_thr is required below, so c (-ln(1 - p)) <= c (-ln(1 - d_thr / c)):
    # the sigma search uses that bound (the threshold does not move epsilon otherwise).
    p_cap = -math.log1p(-float(d_thr / c)) * (1 + 1e-9)
    sigma = _least_sigma(eps, dlt, c, r, d_noise, p_cap)
    sigma2 = Fraction(sigma) ** 2
    _check_range(sigma2, GAUSSIAN_SIGMA2_RANGE, "Gaussian", "sigma^2")
    # the threshold: the least m with c P(Z >= m) <= d_thr, P by the exact tail (arb); the
    # sub-Gaussian m (CKS 2020, Corollary 9) satisfies it and starts the search
    start = math.ceil(sigma * math.sqrt(2 * math.log(float(c / d_thr))) * (1 + 1e-9)) + 1
    m = _least_gaussian_tail_exponent(sigma2, c, d_thr, start)
    p = discrete_gaussian_tail(sigma2, m)
    rho = Fraction(c * r * r) / (2 * sigma2)
    eps1 = zcdp_to_approx_dp(rho, d_noise)
    spent = float_up(Fraction(eps1) + c * Fraction(-math.log1p(-p) * (1 + 1e-9)))
    return ThresholdPlan(
        "gaussian", sigma, m + r, c, p, spent, float_up(d_noise + c * Fraction(p)),
        float(d_noise), r,
    )  # fmt: skip


def _least_sigma(
    eps: Fraction, dlt: Fraction, c: int, r: int, d_noise: Fraction, p_cap: float
) -> float:
    """The least ``sigma`` (geometric bisection over ``[1e-3, 1e9]``) whose CKS conversion of
    ``rho = c r^2 / (2 sigma^2)`` plus the threshold's ``c p_cap`` is within ``epsilon``."""
    lo_s, hi_s = 1e-3, 1e9

    def eps_for(sigma: float) -> Fraction:
        rho = Fraction(c * r * r) / (2 * Fraction(sigma) ** 2)
        return Fraction(zcdp_to_approx_dp(rho, d_noise)) + c * Fraction(p_cap)

    for _ in range(200):
        mid = math.sqrt(lo_s * hi_s)
        if eps_for(mid) <= eps:
            hi_s = mid
        else:
            lo_s = mid
        if hi_s / lo_s < 1 + 1e-9:
            break
    sigma = hi_s
    if eps_for(sigma) > eps:  # no sigma of the search range: epsilon too small for delta
        raise ParameterError(
            f"epsilon {float(eps):.6g} is too small for Gaussian thresholding at delta "
            f"{float(dlt):.6g} (the threshold alone costs {c * p_cap:.3g}, and the noise "
            "more): give a larger epsilon or use Laplace noise"
        )
    return sigma


def make_threshold_partition_selection(
    plan: ThresholdPlan,
    *,
    counts: bool = True,
    source: RandomSource | None = None,
) -> Measurement:
    """Thresholding by ``plan`` (:func:`threshold_plan`): ``{value: noisy count}`` of the values
    whose noisy count reaches the threshold (``counts=False``: the values only, in
    :func:`ordered_values` order). Map at one person: ``(plan.epsilon, plan.delta)``.

    Parameters
    ----------
    plan : ThresholdPlan
        The calibration (:func:`threshold_plan`).
    counts : bool, default True
        Release each released value's noisy count too.
    source : RandomSource or None, default None
        Where the noise's random bits come from; ``None`` is the CSPRNG.

    Returns
    -------
    Measurement
        From a :class:`~dpselect.mechanisms.limited_domain.HistogramDomain` mapping
        (``SymmetricDistance``) to ``{value: noisy count}`` (or the list of values) over values
        with a positive true count (``Approximate(MaxDivergence())``); ``d_in > 1`` raises
        :class:`PrivacyMapError`.
    """
    scale = Fraction(check_scale(plan.scale, allow_zero=False))
    domain = HistogramDomain()

    def function(histogram: Mapping[Hashable, int]) -> Any:
        if not domain.member(histogram):
            raise DomainError("the input must be a mapping {value: count} of integer counts")
        values = ordered_values(histogram)
        if plan.noise == "laplace":
            z = sample_discrete_laplace(scale, len(values), source)
        else:
            z = sample_discrete_gaussian(scale * scale, len(values), source)
        out = {}
        for v, noise in zip(values, z.tolist(), strict=True):
            noisy = int(histogram[v]) + int(noise)
            if int(histogram[v]) > 0 and noisy >= plan.threshold:
                out[v] = noisy
        return out if counts else list(out)

    def privacy_map(d_in: Any) -> tuple[float, float]:
        if d_in == 0:
            return (0.0, 0.0)
        if d_in > 1:
            raise PrivacyMapError(f"thresholding is calibrated for one person, got d_in = {d_in}")
        return (plan.epsilon, plan.delta)

    return Measurement(
        input_domain=domain,
        input_metric=SymmetricDistance(),
        output_measure=Approximate(MaxDivergence()),
        function=function,
        privacy_map=privacy_map,
    )
