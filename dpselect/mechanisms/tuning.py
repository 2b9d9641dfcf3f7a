"""Private tuning (Papernot and Steinke 2022, PS22): the privacy side of ``recipes.tune``.

- :func:`make_random_run`: one *run* picks a configuration uniformly at random (exactly, from
  the randomness source; independent of the data) and runs its ``rho``-zCDP measurement; a
  :class:`~dpselect.core.measurement.Measurement` whose map is the largest of the runs' maps.
  :func:`~dpselect.mechanisms.private_candidates.make_repeat_and_select` releases the best of a
  random number of such runs.
- :func:`per_run_rho`: the largest per-run ``rho`` whose whole (the Renyi curve of
  :func:`~dpselect.mechanisms.private_candidates.repeat_and_select_rdp`, converted at
  ``delta``; :func:`total_epsilon`) is at most ``epsilon``; :func:`tnb_gamma_for_mean` the
  truncated negative binomial law of a given mean; :func:`rho_per_run_if_composed` the
  comparison plan (every configuration once, by composition).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from ..accounting.renyi import rdp_to_approx_dp, zcdp_rdp
from ..accounting.zcdp import approx_dp_to_zcdp_budget
from ..core.arithmetic import float_up
from ..core.domains import AnyDomain
from ..core.errors import MeasureError, ParameterError
from ..core.measurement import Measurement
from ..core.measures import ZeroConcentratedDivergence
from ..sampling.run_counts import truncated_negative_binomial_mean
from ..sampling.source import RandomSource
from ..sampling.uniform import uniform_index
from .private_candidates import repeat_and_select_rdp

__all__ = [
    "check_run",
    "make_random_run",
    "per_run_rho",
    "rho_per_run_if_composed",
    "tnb_gamma_for_mean",
    "total_epsilon",
]


def tnb_gamma_for_mean(eta: Any, mean: Any) -> Fraction:
    """A ``gamma`` (a dyadic rational) whose ``D_{eta, gamma}`` mean is within 0.1% of ``mean``.

    The mean decreases in ``gamma``; bisection on ``arb`` evaluations. The privacy map uses
    the exact mean of the returned ``gamma``, so the approximation only affects utility.

    Parameters
    ----------
    eta : float
        The law's ``eta >= 0``.
    mean : float
        The mean number of runs wanted, finite and ``> 1``.

    Returns
    -------
    Fraction
        ``gamma``, in ``(0, 1)``.
    """
    target = float(mean)
    if not (math.isfinite(target) and target > 1):
        raise ParameterError(f"mean_runs must be a finite number > 1, got {mean!r}")
    lo, hi = Fraction(1, 1 << 40), Fraction(1) - Fraction(1, 1 << 40)
    for _ in range(80):
        mid = (lo + hi) / 2
        value = float(truncated_negative_binomial_mean(eta, mid).mid())
        if abs(value - target) <= 1e-3 * target:
            return mid
        if value > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def total_epsilon(rho: float, delta: Fraction, distribution: Any, law: dict[str, Any]) -> float:
    """The ``epsilon`` at ``delta`` of the best of the runs (law ``distribution`` with
    parameters ``law``), each ``rho``-zCDP: its Renyi curve converted (PS22).

    Parameters
    ----------
    rho : float
        Each run's zCDP ``rho``.
    delta : Fraction
        The target delta, in ``(0, 1)``.
    distribution : str
        The law of the number of runs (:func:`repeat_and_select_rdp`).
    law : dict
        The law's parameters as keywords: ``{"mean": mu}`` or ``{"eta": ..., "gamma": ...}``.

    Returns
    -------
    float
        The epsilon of the whole, rounded up.
    """
    curve = repeat_and_select_rdp(zcdp_rdp(rho), distribution, **law)
    return rdp_to_approx_dp(curve, delta)[0]


@functools.lru_cache(maxsize=64)
def per_run_rho(
    eps: Fraction, delta: Fraction, distribution: Any, law_items: tuple[tuple[str, Any], ...]
) -> float:
    """The largest per-run rho (to 0.1%) whose total is at most ``eps`` at ``delta``, or 0.

    Bisection on a log scale below the zCDP budget of ``(eps, delta)``; the total is
    increasing in rho. Cached: the answer depends on public parameters only.

    Parameters
    ----------
    eps : Fraction
        The total epsilon allowed.
    delta : Fraction
        The target delta, in ``(0, 1)``.
    distribution : str
        The law of the number of runs (:func:`repeat_and_select_rdp`).
    law_items : tuple of (str, value) pairs
        The law's parameters, as sorted ``dict`` items (hashable for the cache).

    Returns
    -------
    float
        The per-run ``rho`` (0 when none was found).
    """
    law = dict(law_items)
    lo, hi = 0.0, float(approx_dp_to_zcdp_budget(eps, delta))
    if total_epsilon(hi, delta, distribution, law) <= eps:
        return hi
    for _ in range(60):
        mid = hi / 2 if lo == 0 else math.sqrt(lo * hi)
        if mid < 1e-12:
            break
        if total_epsilon(mid, delta, distribution, law) <= eps:
            lo = mid
        else:
            hi = mid
        if lo > 0 and hi / lo < 1.001:
            break
    return lo


def check_run(m: Any, config: Any, rho: Fraction) -> Measurement:
    """``m``, built by ``train(config, rho)``, if it is a zCDP measurement costing at most
    ``rho`` at distance 1; else refused.

    Parameters
    ----------
    m : object
        What ``train(config, rho)`` returned.
    config : object
        The configuration, quoted in the errors.
    rho : Fraction
        The per-run ``rho`` it was given.

    Returns
    -------
    Measurement
        ``m``, unchanged.
    """
    if not isinstance(m, Measurement):
        raise ParameterError(
            f"train(config, rho) must return a dpselect Measurement, got {type(m).__name__} "
            f"for config {config!r}"
        )
    if not isinstance(m.output_measure, ZeroConcentratedDivergence):
        raise MeasureError(
            f"train(config, rho) must return a zCDP measurement, got {m.output_measure!r}"
        )
    loss = m.map(1)
    if not Fraction(loss) <= rho:
        raise ParameterError(
            f"train({config!r}, rho) costs rho = {float(loss):.6g} > the per-run rho = "
            f"{float(rho):.6g} it was given"
        )
    return m


def rho_per_run_if_composed(eps: Fraction, delta: Fraction, n: int) -> float:
    """The per-run ``rho`` of running each of ``n`` configurations once and paying for all of
    them by composition: the zCDP budget of ``(eps, delta)`` over ``n``.

    Parameters
    ----------
    eps : Fraction
        The total epsilon.
    delta : Fraction
        The total delta, in ``(0, 1)``.
    n : int
        The number of configurations.

    Returns
    -------
    float
        The per-run ``rho``.
    """
    return float(approx_dp_to_zcdp_budget(eps, delta)) / n


def make_random_run(runs: Sequence[Measurement], source: RandomSource) -> Measurement:
    """One run: a configuration drawn uniformly (index ``i``) and ``runs[i]`` run on the data,
    released as ``(score, (i, model))`` (``(-inf, (i, None))`` when the run's output is not a
    pair). zCDP; the map is the largest of the runs' maps, rounded up.

    Parameters
    ----------
    runs : sequence of Measurement
        One zCDP measurement per configuration (not empty), all with the same input metric,
        each releasing ``(score, model)``.
    source : RandomSource
        The randomness of the configuration draw (not ``None``).

    Returns
    -------
    Measurement
        One run, ``ZeroConcentratedDivergence()``.
    """

    def one_run(x: Any) -> Any:
        i = uniform_index(len(runs), source)
        release = runs[i](x)
        try:
            score, model = release
        except Exception:  # not a pair: the worst score (never raises on the data)
            return (-math.inf, (i, None))
        return (score, (i, model))

    metric = runs[0].input_metric
    if any(r.input_metric != metric for r in runs):
        raise ParameterError("every train(config, rho) must use the same input_metric")

    def run_map(d_in: Any) -> float:
        # the configuration is drawn independently of the data and released with the run: the
        # mixture's Renyi divergence is at most the largest one (a log-mean-exp of them)
        return float_up(max(Fraction(r.map(d_in)) for r in runs))

    run = Measurement(
        input_domain=AnyDomain("the data of train's measurements"),
        input_metric=metric,
        output_measure=ZeroConcentratedDivergence(),
        function=one_run,
        privacy_map=run_map,
    )
    return run
