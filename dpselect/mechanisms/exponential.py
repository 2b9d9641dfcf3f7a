"""The exponential mechanism over a public candidate list (seeds 002, 003).

``make_exponential_mechanism(candidates, score, sensitivity, epsilon=...)`` selects one of
``candidates`` with probability proportional to ``exp(eps * s(x, c) / (2 Delta))``, or
``exp(eps * s(x, c) / Delta)`` when the score is monotonic in the data (every score moves in
the same direction between neighbours), by report-noisy-max with Gumbel noise on the exact
engine. The candidate list must be public: a candidate set derived from the private data is
not covered by this guarantee (seed 003's warning).

**Law and privacy map.** ``P[c] ∝ exp(sign * score(x, c) / scale)`` (seed 001, Theorem 1.1).
Map: ``d_in * range / scale`` with ``range = Delta`` if monotonic else ``2 Delta`` (seed 002,
exponential mechanism theorem; seed 001, Section 3.1), rounded up; to zCDP with
``output_measure=ZeroConcentratedDivergence()``: ``(d_in range / scale)^2 / 8`` (bounded
range, seed 004).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from ..core.arithmetic import float_up
from ..core.domains import AnyDomain, Domain
from ..core.errors import ParameterError
from ..core.measurement import Measurement
from ..core.measures import MaxDivergence, Measure
from ..core.metrics import Metric, SymmetricDistance
from ..sampling.noisy_max import noisy_argmax
from ..sampling.source import RandomSource
from .report_noisy_max import check_selection_measure, selection_loss
from .validate import check_epsilon, check_optimize, check_scale, optimize_sign

__all__ = ["make_exponential_mechanism"]


def _score_vector(scores: list[Any], sign: int = 1) -> np.ndarray[Any, np.dtype[np.float64]]:
    """``sign * score`` as float64; a score that is NaN or not a number becomes ``-inf``.

    The sign is applied *before* the mapping, so a NaN or a non-number from the user's score
    function is the worst score whether the mechanism maximises (``sign = 1``) or minimises
    (``sign = -1``), and it never raises, so that no error depends on the
    data (seed 001, postcondition 1).
    """
    out = np.empty(len(scores), dtype=np.float64)
    for i, s in enumerate(scores):
        try:
            value = float(s)
        except Exception:  # TypeError, ValueError, OverflowError, or a user __float__
            value = math.nan
        out[i] = -math.inf if math.isnan(value) else sign * value
    return out


def user_scores(score: Callable[[Any, Any], Any], data: Any, candidates: list[Any]) -> list[Any]:
    """``score(data, c)`` for every candidate; a call that raises gives NaN (the worst score).

    Whether the user's function raises may depend on one row, and the ledger is already
    charged, so it must never surface as an exception (seed 001, postcondition 1).
    """
    out: list[Any] = []
    for c in candidates:
        try:
            out.append(score(data, c))
        except Exception:
            out.append(math.nan)
    return out


def make_exponential_mechanism(
    candidates: Sequence[Any],
    score: Callable[[Any, Any], float],
    sensitivity: float | int | Fraction,
    *,
    epsilon: float | int | Fraction | None = None,
    scale: float | int | Fraction | None = None,
    monotonic: bool = False,
    optimize: Literal["max", "min"] = "max",
    input_domain: Domain | None = None,
    input_metric: Metric | None = None,
    output_measure: Measure | None = None,
    source: RandomSource | None = None,
) -> Measurement:
    """The exponential mechanism over a finite public candidate list (seed 002, Sec. 4).

    ``score(data, candidate)`` must change by at most ``sensitivity`` for every candidate
    between neighbouring datasets (``input_metric``, default :class:`SymmetricDistance` at
    distance 1). Give exactly one of ``epsilon`` (then ``scale = 2 Delta / eps``, or
    ``Delta / eps`` when ``monotonic``, rounded up so the loss never exceeds ``epsilon``) or
    ``scale`` (the Gumbel scale). The measurement returns the chosen candidate itself.

    Law and privacy map (``d_in * range / scale``, ``range = Delta`` if monotonic else ``2
    Delta``, rounded up): the module docstring (seeds 001, 002, 004).

    Parameters
    ----------
    candidates : sequence
        The public candidates (a list or tuple, not empty).
    score : callable (data, candidate) -> number
        The score; a NaN, a non-number or an exception counts as the worst score.
    sensitivity : float
        ``Delta > 0``: how much any candidate's score moves between neighbours at distance 1.
    epsilon : float or None, default None
        The loss at ``d_in = 1``, ``> 0``. Give exactly one of ``epsilon`` and ``scale``.
    scale : float or None, default None
        The Gumbel scale, ``>= 0`` (0 is the exact argmax, with an infinite loss).
    monotonic : bool, default False
        Whether every score moves in the same direction between neighbours (range distance
        ``Delta`` instead of ``2 Delta``).
    optimize : {"max", "min"}, default "max"
        Select the highest or the lowest score.
    input_domain : Domain or None, default None
        The data's domain, recorded on the measurement; ``None``: any dataset the score reads.
    input_metric : Metric or None, default None
        The dataset metric, ``SymmetricDistance()`` by default; ``d_in`` is in its units.
    output_measure : Measure or None, default None
        ``MaxDivergence()`` (default) or ``ZeroConcentratedDivergence()``.
    source : RandomSource or None, default None
        Where the noise's random bits come from; ``None`` is the CSPRNG.

    Returns
    -------
    Measurement
        From the data to one of ``candidates``.
    """
    check_candidates(candidates, score)
    delta = check_scale(sensitivity, "sensitivity", allow_zero=False)
    if (epsilon is None) == (scale is None):
        raise ParameterError("give exactly one of epsilon and scale")
    if not isinstance(monotonic, bool):
        raise ParameterError(f"monotonic must be a bool, got {monotonic!r}")
    sign = optimize_sign(check_optimize(optimize))
    measure = check_selection_measure(output_measure or MaxDivergence())
    metric = input_metric or SymmetricDistance()
    range_sensitivity = Fraction(delta) * (1 if monotonic else 2)
    gumbel_scale = _gumbel_scale(range_sensitivity, epsilon, scale)
    cands = list(candidates)

    def function(data: Any) -> Any:
        shifts = _score_vector(user_scores(score, data, cands), sign)
        return cands[noisy_argmax(shifts, gumbel_scale, "gumbel", source=source)]

    def privacy_map(d_in: Any) -> float:
        metric.validate(d_in)
        d_range = Fraction(d_in) * range_sensitivity if d_in != math.inf else math.inf
        return selection_loss(d_range, gumbel_scale, 1, "gumbel", measure)

    return scored_measurement(input_domain, metric, measure, function, privacy_map)


def _gumbel_scale(
    range_sensitivity: Fraction,
    epsilon: float | int | Fraction | None,
    scale: float | int | Fraction | None,
) -> Fraction | float:
    """The Gumbel scale: ``range / epsilon`` rounded up when ``epsilon`` is given, else the
    ``scale`` given (checked)."""
    if epsilon is not None:
        eps = Fraction(check_epsilon(epsilon))
        return float_up(range_sensitivity / eps)
    return check_scale(scale)


def check_candidates(candidates: Any, score: Any) -> None:
    """Refuse a candidate list that is not a non-empty sequence, or a score not callable.

    Parameters
    ----------
    candidates : Any
        The public candidates (a list or tuple, not empty).
    score : Any
        The score function ``score(data, candidate)``.
    """
    if isinstance(candidates, (str, bytes)) or not isinstance(candidates, Sequence):
        raise ParameterError("candidates must be a sequence (list or tuple) of public values")
    if len(candidates) == 0:
        raise ParameterError("candidates must not be empty")
    if not callable(score):
        raise ParameterError("score must be a callable score(data, candidate) -> number")


def scored_measurement(
    input_domain: Domain | None,
    metric: Metric,
    measure: Measure,
    function: Callable[[Any], Any],
    privacy_map: Callable[[Any], float],
) -> Measurement:
    """The measurement of a selection over datasets read by the user's score function.

    Parameters
    ----------
    input_domain : Domain or None
        The data's domain; ``None``: any dataset the score reads.
    metric : Metric
        The dataset metric.
    measure : Measure
        The output measure.
    function : callable
        From the data to the chosen candidate.
    privacy_map : callable
        From ``d_in`` to the loss.

    Returns
    -------
    Measurement
        The measurement.
    """
    return Measurement(
        input_domain=input_domain or AnyDomain("datasets scored by the user's score function"),
        input_metric=metric,
        output_measure=measure,
        function=function,
        privacy_map=privacy_map,
    )
