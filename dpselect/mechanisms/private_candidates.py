"""Private selection from private candidates: the best of a random number of private runs.

A *run* is a :class:`~dpselect.core.measurement.Measurement` releasing ``(score, candidate)``
(for example a model trained privately and its private validation score). Running it ``T``
times and releasing the best costs ``T`` times one run by composition; drawing the number of
runs at random from a suitable law costs a small constant factor instead.

Two combinators (``docs/private_selection.md`` gives each law, map and proof):

- :func:`make_select_private_candidate` (Liu and Talwar 2019, "Private selection from private
  candidates", STOC, arXiv:1811.07971; LT19). The run must be ``eps``-DP (``MaxDivergence``).
  Theorem numbers as in the arXiv version: docs/private_selection.md says how each was checked.

  * With a ``threshold`` (LT19, Algorithm 1, Theorem 3.1; Theorem 1.2 in the introduction):
    run, release the first ``(score, candidate)`` with ``score >= threshold``; after each run
    below it, stop and release ``None`` with probability ``stop_probability``. ``2 eps``-DP.
    Same argument names, comparison (``>=``) and map as OpenDP 0.16's
    ``make_select_private_candidate``.
  * Without a threshold (LT19, the random-stopping Algorithm 2, Theorem 3.2; Theorem 1.3 in
    the introduction): run at least once, after each run stop with probability
    ``stop_probability`` (a geometric number of runs, mean ``1 / stop_probability``), release
    the best. ``3 eps``-DP.

- :func:`make_repeat_and_select` (Papernot and Steinke 2022, "Hyperparameter tuning with Renyi
  differential privacy", ICLR, arXiv:2110.03620v2; PS22): ``K`` runs with ``K`` from a
  truncated negative binomial law ``D_{eta, gamma}`` (Definition 1; privacy: Theorem 2, its
  pure-DP form ``(2 + eta) eps`` Corollary 3; ``eta = 0`` logarithmic, ``eta = 1`` geometric)
  or a Poisson law (Theorem 6), release the best (``None`` if ``K = 0``). A zCDP or Renyi run
  in, a Renyi-DP curve out; :func:`dpselect.accounting.rdp_to_approx_dp` turns it into the
  tightest ``(eps, delta)`` over the orders.

Numbers of runs and stops are drawn exactly from the project's randomness source
(:mod:`dpselect.sampling.run_counts`: Bernoulli coins by digit comparison, Poisson and
negative binomial by certified inversion). A score that is NaN or not a number, or an output
that is not a ``(score, candidate)`` pair, counts as the worst score: it never raises.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, Literal

from flint import arb

from ..accounting.params import check_loss
from ..accounting.renyi import DEFAULT_ORDERS, RenyiCurve, zcdp_rdp
from ..core.arithmetic import float_up
from ..core.errors import MeasureError, ParameterError
from ..core.intervals import arb_of, evaluate, lower_fraction, upper_fraction
from ..core.measurement import Measurement
from ..core.measures import MaxDivergence, RenyiDivergence, ZeroConcentratedDivergence
from ..sampling.run_counts import (
    MAX_MEAN,
    sample_bernoulli,
    sample_poisson,
    sample_truncated_negative_binomial,
    truncated_negative_binomial_mean,
)
from ..sampling.source import RandomSource, resolve_source

__all__ = [
    "make_repeat_and_select",
    "make_select_private_candidate",
    "renyi_delta",
    "repeat_and_select_rdp",
]

Distribution = Literal["poisson", "truncated_negative_binomial"]


# ----------------------------------------------------------------------------- helpers
def _score(release: Any) -> float:
    """The score of a ``(score, candidate)`` release; ``-inf`` when it is not a number."""
    try:
        score, _ = release
        value = float(score)
    except Exception:  # not a pair, or a score that does not convert: the worst score
        return -math.inf
    return -math.inf if math.isnan(value) else value


def _check_run(measurement: Any, name: str = "measurement") -> Measurement:
    if not isinstance(measurement, Measurement):
        raise ParameterError(
            f"{name} must be a dpselect Measurement releasing (score, candidate), "
            f"got {type(measurement).__name__}"
        )
    return measurement


def _check_stop(stop_probability: Any, *, allow_zero: bool) -> Fraction:
    p = stop_probability
    if isinstance(p, bool) or not isinstance(p, (int, float, Fraction)):
        raise ParameterError(f"stop_probability must be a number, got {type(p).__name__}")
    if isinstance(p, float) and math.isnan(p):
        raise ParameterError("stop_probability must not be NaN")
    q = Fraction(p)
    if allow_zero and not 0 <= q < 1:
        raise ParameterError(f"stop_probability must be in [0, 1), got {p!r}")
    if not allow_zero and not 0 < q < 1:
        raise ParameterError(
            "stop_probability must be in (0, 1) without a threshold (the number of runs is "
            f"geometric with mean 1 / stop_probability), got {p!r}"
        )
    return q


def _pure_loss(measurement: Measurement, d_in: Any) -> Fraction | float:
    value = measurement.map(d_in)
    if isinstance(value, float) and math.isinf(value):
        return math.inf
    return Fraction(value)


# ----------------------------------------------------------------------------- LT19
def _check_threshold(threshold: Any) -> float | None:
    """The threshold as a float (``None``: none), refused unless a finite number."""
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float, Fraction)):
            raise ParameterError(f"threshold must be a number, got {type(threshold).__name__}")
        if not math.isfinite(float(threshold)):
            raise ParameterError(f"threshold must be finite, got {threshold!r}")
    return None if threshold is None else float(threshold)


def _first_above(run: Measurement, x: Any, bar: float, stop: Fraction, src: RandomSource) -> Any:
    """LT19, Algorithm 1: the first run with ``score >= bar``, or ``None`` at a stop."""
    while True:
        release = run(x)
        if _score(release) >= bar:
            return release
        if sample_bernoulli(stop, src):
            return None


def _best_until_stop(run: Measurement, x: Any, stop: Fraction, src: RandomSource) -> Any:
    """LT19, Algorithm 2: runs until a stop (at least one), the best (the first on ties)."""
    best = run(x)
    best_score = _score(best)
    while not sample_bernoulli(stop, src):
        release = run(x)
        score = _score(release)
        if score > best_score:
            best, best_score = release, score
    return best


def make_select_private_candidate(
    measurement: Measurement,
    stop_probability: float | Fraction,
    threshold: float | None = None,
    *,
    source: RandomSource | None = None,
) -> Measurement:
    """Liu and Talwar's (2019) private selection from an ``eps``-DP run.

    Parameters
    ----------
    measurement:
        A run with ``output_measure=MaxDivergence()`` releasing ``(score, candidate)``.
    stop_probability:
        With a threshold: in ``[0, 1)`` (as OpenDP), except that ``0`` is refused here: the
        loop would never end when no score clears the threshold, and the running time would
        depend on the data. Without a threshold: in ``(0, 1)``.
    threshold:
        A finite number: release the first run with ``score >= threshold``, or ``None`` when
        a stop comes first (LT19, Algorithm 1, Theorem 3.1: ``2 eps``-DP). ``None``: run a
        geometric number of times (at least once, mean ``1 / stop_probability``) and release
        the best run (LT19, Algorithm 2, Theorem 3.2: ``3 eps``-DP).
    source:
        Randomness for the stops; ``None`` is the CSPRNG. The runs use their own sources.

    Map (``MaxDivergence``): ``d_in -> 2 eps(d_in)`` with a threshold, ``3 eps(d_in)``
    without, ``eps(d_in)`` the run's map, computed exactly and rounded up.

    Returns
    -------
    Measurement
        From the run's input to one ``(score, candidate)`` release of the run, or ``None``,
        with output measure ``MaxDivergence()``.
    """
    run = _check_run(measurement)
    if not isinstance(run.output_measure, MaxDivergence):
        raise MeasureError(
            "measurement must be pure DP (output_measure=MaxDivergence()): Liu and Talwar's "
            "2 eps / 3 eps bounds are for eps-DP runs; for zCDP or Renyi runs use "
            f"make_repeat_and_select, got {run.output_measure!r}"
        )
    stop = _check_stop(stop_probability, allow_zero=False)
    bar = _check_threshold(threshold)
    factor = 3 if bar is None else 2

    def function(x: Any) -> Any:
        src = resolve_source(source)
        if bar is not None:
            return _first_above(run, x, bar, stop, src)
        return _best_until_stop(run, x, stop, src)

    def privacy_map(d_in: Any) -> float:
        loss = _pure_loss(run, d_in)
        if isinstance(loss, float):
            return loss
        return float_up(factor * loss)

    return Measurement(
        input_domain=run.input_domain,
        input_metric=run.input_metric,
        output_measure=MaxDivergence(),
        function=function,
        privacy_map=privacy_map,
    )


# ----------------------------------------------------------------------------- PS22 bounds
def _orders(orders: Sequence[float]) -> tuple[float, ...]:
    out = tuple(sorted(float(a) for a in orders))
    if not out or not all(math.isfinite(a) and a > 1 for a in out):
        raise ParameterError("orders must be a non-empty list of finite Renyi orders > 1")
    return out


def renyi_delta(
    curve: RenyiCurve, epsilon: Any, orders: Sequence[float] = DEFAULT_ORDERS
) -> Fraction:
    """An upper bound on ``delta`` at ``epsilon`` for a mechanism with Renyi ``curve``.

    ``min(1, min_alpha exp((alpha - 1)(D_alpha - eps)) (1 - 1/alpha)^alpha / (alpha - 1))``
    (Canonne, Kamath and Steinke 2020, Proposition 12; the inverse of
    :func:`~dpselect.accounting.rdp_to_approx_dp`'s conversion), each term rounded up.

    Parameters
    ----------
    curve : RenyiCurve
        The mechanism's Renyi curve.
    epsilon : float
        The epsilon at which delta is wanted.
    orders : sequence of float, default DEFAULT_ORDERS
        The orders tried (finite, ``> 1``, not empty).

    Returns
    -------
    Fraction
        ``delta``, in ``[0, 1]`` (1 when no order gives a bound below 1).
    """
    eps_q = Fraction(epsilon)
    # choose the order by a float estimate, then bound that order's term rigorously (any order
    # gives a valid bound, so the choice needs no certification)
    best_alpha, best_log = None, math.inf
    for alpha in _orders(orders):
        d = curve(alpha)
        if not math.isfinite(d):
            continue
        log_term = (
            (alpha - 1) * (d - float(eps_q)) + alpha * math.log1p(-1 / alpha) - math.log(alpha - 1)
        )
        if log_term < best_log:
            best_alpha, best_log = alpha, log_term
    if best_alpha is None or best_log > 1:
        return Fraction(1)
    a, dq = Fraction(best_alpha), Fraction(curve(best_alpha))

    def formula() -> arb:
        aa = arb_of(a)
        return (
            (aa - 1) * (arb_of(dq) - arb_of(eps_q)) + aa * (1 - 1 / aa).log() - (aa - 1).log()
        ).exp()

    return min(Fraction(1), upper_fraction(evaluate(formula)))


def repeat_and_select_rdp(
    curve: RenyiCurve,
    distribution: Distribution,
    *,
    mean: Any = None,
    eta: Any = None,
    gamma: Any = None,
    orders: Sequence[float] = DEFAULT_ORDERS,
) -> RenyiCurve:
    """The Renyi curve of the best of ``K`` runs whose Renyi curve is ``curve`` (PS22).

    - ``"truncated_negative_binomial"`` (``eta >= 0``, ``gamma`` in ``(0, 1)``; PS22 Theorem
      2): ``D'(lam) = D(lam) + (1 + eta) min_{lam^ in {1} + orders} [(1 - 1/lam^) D(lam^) +
      ln(1/gamma) / lam^] + ln(E[K]) / (lam - 1)``.
    - ``"poisson"`` (``mean = mu > 0``; PS22 Theorem 6): ``D'(lam) = D(lam) + mu delta^(lam)
      + ln(mu) / (lam - 1)``, ``delta^(lam)`` the run's ``delta`` at ``eps^ = ln(lam / (lam -
      1))`` (:func:`renyi_delta`).

    Each term is computed in ``arb`` and rounded up (``eps^`` rounded down, which only raises
    ``delta^``), then the sum is rounded up to a float.

    Parameters
    ----------
    curve : RenyiCurve
        The Renyi curve of one run (at the input distance considered).
    distribution : {"truncated_negative_binomial", "poisson"}
        The law of the number of runs ``K``.
    mean : float or None, default None
        The Poisson mean ``mu``, in ``(0, MAX_MEAN]``; only with ``"poisson"``.
    eta, gamma : float or None, default None
        The truncated negative binomial's ``eta >= 0`` and ``gamma`` in ``(0, 1)``; only with
        ``"truncated_negative_binomial"``.
    orders : sequence of float, default DEFAULT_ORDERS
        The orders of the inner minimisations (finite, ``> 1``, not empty).

    Returns
    -------
    RenyiCurve
        The curve of the best of ``K`` runs (each order rounded up, at least 0).
    """
    grid = _orders(orders)
    curve = _cached(curve)
    if distribution == "truncated_negative_binomial":
        return _tnb_curve(curve, mean, eta, gamma, grid)
    if distribution == "poisson":
        return _poisson_curve(curve, mean, eta, gamma, grid)
    raise ParameterError(
        f'distribution must be "poisson" or "truncated_negative_binomial", got {distribution!r}'
    )


def _cached(base: RenyiCurve) -> RenyiCurve:
    """The run's curve, each order evaluated once."""
    cache: dict[float, float] = {}

    def cached(alpha: float) -> float:
        value = cache.get(alpha)
        if value is None:
            value = cache[alpha] = base(alpha)
        return value

    return cached


def _tnb_curve(
    curve: RenyiCurve, mean: Any, eta: Any, gamma: Any, grid: tuple[float, ...]
) -> RenyiCurve:
    """PS22 Theorem 2 (truncated negative binomial), the parameters checked first."""
    if mean is not None:
        raise ParameterError("give eta and gamma for the truncated negative binomial, not mean")
    if eta is None or gamma is None:
        raise ParameterError("the truncated negative binomial needs eta (>= 0) and gamma")
    truncated_negative_binomial_mean(eta, gamma)  # validates eta and gamma (public)
    e, g = Fraction(eta), Fraction(gamma)
    log_mean = upper_fraction(evaluate(lambda: truncated_negative_binomial_mean(e, g).log()))
    log_inv_gamma = upper_fraction(evaluate(lambda: (1 / arb_of(g)).log()))
    constant: Fraction | None = None

    def shared() -> Fraction:
        nonlocal constant
        if constant is None:
            best = log_inv_gamma  # lam^ = 1: (1 - 1) D + ln(1/gamma)
            for lam_hat in grid:
                d_hat = curve(lam_hat)
                if not math.isfinite(d_hat):
                    continue
                lh = Fraction(lam_hat)
                best = min(best, (1 - 1 / lh) * Fraction(d_hat) + log_inv_gamma / lh)
            constant = (1 + e) * best
        return constant

    def tnb_curve(lam: float) -> float:
        d = curve(lam)
        if not math.isfinite(d):
            return math.inf
        total = Fraction(d) + shared() + log_mean / (Fraction(lam) - 1)
        return float_up(max(total, Fraction(0)))

    return tnb_curve


def _poisson_curve(
    curve: RenyiCurve, mean: Any, eta: Any, gamma: Any, grid: tuple[float, ...]
) -> RenyiCurve:
    """PS22 Theorem 6 (Poisson), the parameters checked first."""
    if eta is not None or gamma is not None:
        raise ParameterError("give mean for the Poisson law, not eta or gamma")
    if mean is None:
        raise ParameterError("the Poisson law needs mean (> 0)")
    mu = check_loss(mean, "mean")
    if not 0 < mu <= MAX_MEAN:
        raise ParameterError(f"mean must lie in (0, {MAX_MEAN}], got {mean!r}")
    log_mu = upper_fraction(evaluate(lambda: arb_of(mu).log()))

    def poisson_curve(lam: float) -> float:
        d = curve(lam)
        if not math.isfinite(d):
            return math.inf
        lq = Fraction(lam)
        # (eps', delta')-DP with eps' <= eps^ implies (eps^, delta')-DP: round eps^ down
        eps_low = lower_fraction(evaluate(lambda: (arb_of(lq) / arb_of(lq - 1)).log()))
        delta_hat = renyi_delta(curve, eps_low, grid)
        total = Fraction(d) + mu * delta_hat + log_mu / (lq - 1)
        return float_up(max(total, Fraction(0)))

    return poisson_curve


def _run_curve(run: Measurement, d_in: Any) -> RenyiCurve:
    loss = run.map(d_in)
    if isinstance(run.output_measure, ZeroConcentratedDivergence):
        if isinstance(loss, float) and math.isinf(loss):
            return lambda alpha: math.inf
        return zcdp_rdp(loss)
    curve: RenyiCurve = loss
    return curve


def _run_count_sampler(
    distribution: Distribution, mean: Any, eta: Any, gamma: Any
) -> Callable[[RandomSource], int]:
    """The exact sampler of the number of runs ``K`` (parameters already checked; the
    truncated negative binomial's mean refused above ``MAX_MEAN``)."""
    if distribution == "poisson":
        mu = Fraction(mean)

        def draw(src: RandomSource) -> int:
            return sample_poisson(mu, src)
    else:
        e, g = Fraction(eta), Fraction(gamma)
        sample_check = truncated_negative_binomial_mean(e, g)
        if not sample_check < arb_of(MAX_MEAN):
            raise ParameterError(f"the mean number of runs must be at most {MAX_MEAN}")

        def draw(src: RandomSource) -> int:
            return sample_truncated_negative_binomial(e, g, src)

    return draw


def make_repeat_and_select(
    measurement: Measurement,
    distribution: Distribution,
    *,
    mean: Any = None,
    eta: Any = None,
    gamma: Any = None,
    orders: Sequence[float] = DEFAULT_ORDERS,
    source: RandomSource | None = None,
) -> Measurement:
    """Papernot and Steinke's (2022) repeat-and-select with a random number of runs.

    Parameters
    ----------
    measurement:
        A run releasing ``(score, candidate)`` with ``output_measure`` zCDP
        (``ZeroConcentratedDivergence()``, read as the curve ``alpha -> alpha rho``) or
        ``RenyiDivergence()`` (its map returns a curve).
    distribution:
        ``"truncated_negative_binomial"`` with ``eta >= 0`` and ``gamma`` in ``(0, 1)``
        (``eta = 1``: geometric, mean ``1/gamma``; ``eta = 0``: logarithmic), or
        ``"poisson"`` with ``mean``. The mean number of runs is at most ``10^5``.
    mean, eta, gamma:
        The law's parameters (:func:`repeat_and_select_rdp`): ``mean > 0`` for
        ``"poisson"``; ``eta >= 0`` and ``gamma`` in ``(0, 1)`` for the truncated negative
        binomial. Give only those of the chosen law.
    orders:
        The Renyi orders used for the inner minimisations (any set gives a valid bound).
    source:
        Randomness for the number of runs; ``None`` is the CSPRNG.

    The function draws ``K`` exactly and releases the run with the highest score among ``K``
    runs (the first on ties), or ``None`` when ``K = 0`` (Poisson only). ``K`` is not
    released. Map: ``d_in -> curve`` (``RenyiDivergence``), :func:`repeat_and_select_rdp` of
    the run's curve at ``d_in``.

    Returns
    -------
    Measurement
        From the run's input to the best ``(score, candidate)`` release, or ``None``, with
        output measure ``RenyiDivergence()`` (its map returns a Renyi curve).
    """
    run = _check_run(measurement)
    if not isinstance(run.output_measure, (ZeroConcentratedDivergence, RenyiDivergence)):
        raise MeasureError(
            "measurement must be zCDP or Renyi DP (PS22's bounds are Renyi bounds); for pure "
            f"DP runs use make_select_private_candidate, got {run.output_measure!r}"
        )
    grid = _orders(orders)
    # validate the parameters now (public), with a zero curve
    repeat_and_select_rdp(lambda a: 0.0, distribution, mean=mean, eta=eta, gamma=gamma, orders=grid)
    draw = _run_count_sampler(distribution, mean, eta, gamma)

    def function(x: Any) -> Any:
        k = draw(resolve_source(source))
        best, best_score = None, -math.inf
        for i in range(k):
            release = run(x)
            score = _score(release)
            if i == 0 or score > best_score:
                best, best_score = release, score
        return best

    def privacy_map(d_in: Any) -> RenyiCurve:
        if d_in == 0:  # the same dataset: the same output law
            run.map(d_in)  # validates d_in
            return lambda alpha: 0.0
        return repeat_and_select_rdp(
            _run_curve(run, d_in), distribution, mean=mean, eta=eta, gamma=gamma, orders=grid
        )

    return Measurement(
        input_domain=run.input_domain,
        input_metric=run.input_metric,
        output_measure=RenyiDivergence(),
        function=function,
        privacy_map=privacy_map,
    )
