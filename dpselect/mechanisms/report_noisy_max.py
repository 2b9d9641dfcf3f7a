"""Report-noisy-max and the exponential mechanism on score vectors (seeds 000, 001, 004).

Every constructor returns a :class:`Measurement` from score vectors (one score per public
candidate) to an index (or a ranked list of ``k`` indices). Noise is added by the exact engine
of :mod:`dpselect.sampling` (``docs/exactness.md``); nothing is sampled at construction.

Privacy maps (``d_range = input_metric.range_distance(d_in)``: ``d_in`` when monotonic, else
``2 d_in``; seed 001, Section 1.1), all rounded up from exact rationals:

============  ======================  ==========================  ====================
noise         MaxDivergence           ZeroConcentratedDivergence  proof
============  ======================  ==========================  ====================
gumbel        ``k d_range / scale``   ``k (d_range/scale)^2 / 8`` seed 001 Sec. 3.1;
                                                                  seed 004 Thm 1 and
                                                                  bounded range (Cesar
                                                                  and Rogers 2021)
exponential   ``k d_range / scale``   ``k (d_range/scale)^2 / 2`` permute-and-flip (McKenna
                                                                  and Sheldon 2020; Ding
                                                                  et al. 2021); eps-DP
                                                                  -> eps^2/2 (Bun and
                                                                  Steinke 2016, Prop 1.4)
laplace       ``k d_range / scale``   ``k (d_range/scale)^2 / 2`` report noisy max (Dwork
                                                                  and Roth 2014, Claim
                                                                  3.9); idem
============  ======================  ==========================  ====================

Gumbel top-k is one shot (noise once, the ``k`` best, ranked), equal in law to ``k`` rounds of
the exponential mechanism (seed 004, Theorem 1), hence ``k`` times the one-round loss by
composition. Exponential and Laplace top-k run ``k`` rounds of noisy max without replacement,
each with fresh noise (basic composition, seed 002); no one-shot form is claimed for them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ..core.arithmetic import float_up
from ..core.domains import IntDomain, VectorDomain, atom_domain, vector_domain
from ..core.errors import MeasureError, MetricError, ParameterError
from ..core.measurement import Measurement
from ..core.measures import MaxDivergence, Measure, ZeroConcentratedDivergence
from ..core.metrics import LInfDistance, RangeDistance
from ..sampling.noise import get_family
from ..sampling.noisy_max import noisy_argmax, noisy_top_k
from ..sampling.source import RandomSource
from .validate import (
    check_int,
    check_non_nan_vector_domain,
    check_optimize,
    check_scale,
    optimize_sign,
)

__all__ = [
    "check_selection_measure",
    "make_base_exponential_candidates_gumbel",
    "make_noisy_max",
    "make_noisy_top_k",
    "make_report_noisy_max_gumbel",
    "selection_loss",
]

Noise = Literal["gumbel", "exponential", "laplace"]
_INT64_MAX = np.iinfo(np.int64).max


def selection_loss(d_range: Any, scale: Any, k: int, noise: str, measure: Measure) -> float:
    """The privacy loss of ``k`` selections at range distance ``d_range`` (table above).

    Exact rational arithmetic, one rounding up at the end; 0 when ``d_range`` is 0,
    ``inf`` when ``scale`` is 0 and ``d_range`` is positive.

    Parameters
    ----------
    d_range : number
        The range distance of the score vectors, ``>= 0`` (``inf`` allowed).
    scale : number
        The noise scale, ``>= 0``.
    k : int
        The number of selections (rounds).
    noise : str
        ``"gumbel"``, ``"exponential"`` or ``"laplace"``; only ``"gumbel"`` has the
        bounded-range zCDP divisor 8, the others 2.
    measure : Measure
        ``MaxDivergence()`` or ``ZeroConcentratedDivergence()``.

    Returns
    -------
    float
        ``epsilon`` or ``rho``, rounded up.
    """
    if d_range < 0:
        raise MetricError(f"the range distance must be non-negative, got {d_range!r}")
    if d_range == 0 or k == 0:
        return 0.0
    if scale == 0 or (isinstance(d_range, float) and math.isinf(d_range)):
        return math.inf
    per_round = Fraction(d_range) / Fraction(scale)
    if isinstance(measure, MaxDivergence):
        return float_up(k * per_round)
    if isinstance(measure, ZeroConcentratedDivergence):
        divisor = 8 if noise == "gumbel" else 2
        return float_up(k * per_round * per_round / divisor)
    raise MeasureError(
        f"output_measure must be MaxDivergence() or ZeroConcentratedDivergence(), got {measure!r}"
    )


def _check_metric(metric: Any) -> LInfDistance:
    if not isinstance(metric, LInfDistance):
        raise MetricError(
            f"input_metric must be LInfDistance(monotonic=...) or RangeDistance(), got {metric!r}"
        )
    return metric


def check_selection_measure(measure: Any) -> Measure:
    """``measure`` if it is one a selection's map answers in (:func:`selection_loss`):
    ``MaxDivergence()`` or ``ZeroConcentratedDivergence()``; anything else is refused.

    Parameters
    ----------
    measure : Measure
        The output measure to check.

    Returns
    -------
    Measure
        ``measure``, unchanged.
    """
    if not isinstance(measure, (MaxDivergence, ZeroConcentratedDivergence)):
        raise MeasureError(
            "output_measure must be MaxDivergence() or ZeroConcentratedDivergence(), "
            f"got {measure!r}"
        )
    return measure


def _shifts(x: Any, sign: int, integer: bool) -> npt.NDArray[Any]:
    """Scores as a vector the engine accepts, multiplied by ``sign``.

    Integer scores are clamped to +-(2^63 - 1) (a monotone 1-Lipschitz map, so the score's
    sensitivity and monotonicity carry over) instead of raising on large values, which would
    make an error depend on the data (seed 001, postcondition 1).
    """
    arr = np.asarray(x)
    if integer or arr.dtype.kind in "iuO":
        if arr.dtype.kind == "O" or arr.dtype == np.uint64:
            arr = np.array(
                [min(max(int(v), -_INT64_MAX), _INT64_MAX) for v in arr.ravel()], dtype=np.int64
            )
        else:
            arr = np.clip(arr.astype(np.int64), -_INT64_MAX, _INT64_MAX)
    elif arr.dtype not in (np.float64, np.float32):
        arr = arr.astype(np.float64)
    return -arr if sign < 0 else arr


def _selector(
    k: int | None,
    scale: Any,
    noise: str,
    sign: int,
    integer: bool,
    source: RandomSource | None,
) -> Callable[[Any], Any]:
    """The function of a selection measurement (argmax when ``k`` is None)."""
    family = get_family(noise)
    exact_scale = Fraction(scale)

    def argmax(x: Any) -> int:
        return noisy_argmax(_shifts(x, sign, integer), exact_scale, family, source=source)

    def top_k(x: Any) -> npt.NDArray[np.int64]:
        shifts = _shifts(x, sign, integer)
        if noise == "gumbel" or exact_scale == 0:
            return noisy_top_k(shifts, exact_scale, k or 0, noise=family, source=source)
        # k rounds of noisy max without replacement, fresh noise each round.
        remaining = np.arange(shifts.shape[0])
        chosen: list[int] = []
        for _ in range(k or 0):
            pos = noisy_argmax(shifts[remaining], exact_scale, family, source=source)
            chosen.append(int(remaining[pos]))
            remaining = np.delete(remaining, pos)
        return np.asarray(chosen, dtype=np.int64)

    return argmax if k is None else top_k


def _make_selection(
    input_domain: Any,
    input_metric: Any,
    output_measure: Any,
    scale: Any,
    k: int | None,
    noise: Any,
    optimize: Any,
    source: RandomSource | None,
) -> Measurement:
    domain = check_non_nan_vector_domain(input_domain)
    metric = _check_metric(input_metric)
    measure = check_selection_measure(output_measure)
    scale = check_scale(scale)
    family = get_family(noise)
    sign = optimize_sign(check_optimize(optimize))
    if k is not None:
        check_int(k, "k", minimum=0)
        if domain.size is not None and k > domain.size:
            raise ParameterError(
                f"k must be at most the number of candidates ({domain.size}), got {k}"
            )
    rounds = 1 if k is None else k
    integer = isinstance(domain.element_domain, IntDomain)

    def privacy_map(d_in: Any) -> float:
        return selection_loss(metric.range_distance(d_in), scale, rounds, family.name, measure)

    return Measurement(
        input_domain=domain,
        input_metric=metric,
        output_measure=measure,
        function=_selector(k, scale, family.name, sign, integer, source),
        privacy_map=privacy_map,
    )


def make_report_noisy_max_gumbel(
    input_domain: VectorDomain,
    input_metric: LInfDistance,
    scale: float | int | Fraction,
    *,
    optimize: Literal["max", "min"] = "max",
    source: RandomSource | None = None,
) -> Measurement:
    """The exponential mechanism as report-noisy-max with Gumbel noise, exactly seed 001.

    Returns the index of the largest (``optimize="max"``) or smallest score after adding
    Gumbel(``scale``) noise: ``P[i] ∝ exp(sign * x_i / scale)`` (seed 001, Theorem 1.1).
    Refuses a NaN-admitting domain, a negative or non-finite scale, and any ``optimize`` but
    "max"/"min" (seed 001, Function, lines 7-18). Privacy map to ``MaxDivergence``: the range
    distance (x2 unless monotonic) divided by ``scale``, rounded up; 0 at ``d_in = 0``,
    infinite when ``scale`` is 0 (seed 001, Section 3.1). ``source`` is for tests only.

    Parameters
    ----------
    input_domain : VectorDomain
        ``vector_domain`` of int or non-NaN float atoms: one score per public candidate.
    input_metric : LInfDistance
        ``LInfDistance(monotonic=...)`` (each score moves by at most ``d_in``) or
        ``RangeDistance()`` (``d_in`` bounds the range distance itself).
    scale : float
        The Gumbel scale, ``>= 0`` (0: the exact argmax, with an infinite loss).
    optimize : {"max", "min"}, default "max"
        Select the highest or the lowest score.
    source : RandomSource or None, default None
        Where the noise's random bits come from; ``None`` is the CSPRNG.

    Returns
    -------
    Measurement
        From score vectors to the chosen index (an ``int``), ``MaxDivergence()``.
    """
    return _make_selection(
        input_domain, input_metric, MaxDivergence(), scale, None, "gumbel", optimize, source
    )


def make_base_exponential_candidates_gumbel(
    temperature: float | int | Fraction,
    *,
    source: RandomSource | None = None,
) -> Measurement:
    """Seed 000's form of the exponential mechanism, on the same code as seed 001's.

    Input: float score vectors under ``InfDifferenceDistance`` (= :class:`RangeDistance`);
    output: the index of ``argmax_i x_i / temperature + Gumbel``, ``P[i] ∝ exp(x_i / tau)``
    (seed 000, Theorem 2.1). Privacy relation ``d_out * temperature >= d_in`` (seed 000,
    Section 3, line 8), i.e. the map ``d_in / temperature`` rounded up. (Seed 000's listing
    writes ``scores[i] * temperature``; its text and proof use ``s_i / tau``, as here.)

    Parameters
    ----------
    temperature : float
        ``tau``, the Gumbel scale, ``>= 0``.
    source : RandomSource or None, default None
        Where the noise's random bits come from; ``None`` is the CSPRNG.

    Returns
    -------
    Measurement
        From float score vectors to the chosen index (an ``int``), ``MaxDivergence()``.
    """
    return make_report_noisy_max_gumbel(
        vector_domain(atom_domain(float)),
        RangeDistance(),
        temperature,
        optimize="max",
        source=source,
    )


def make_noisy_max(
    input_domain: VectorDomain,
    input_metric: LInfDistance,
    output_measure: Measure,
    *,
    scale: float | int | Fraction,
    noise: Noise = "gumbel",
    optimize: Literal["max", "min"] = "max",
    source: RandomSource | None = None,
) -> Measurement:
    """Report-noisy-max with Gumbel, Exponential or Laplace noise (seeds 001, 004).

    ``noise="gumbel"`` is the exponential mechanism; "exponential" is permute-and-flip in law;
    "laplace" is classic report-noisy-max. Privacy maps: the module table (bounded range
    ``eps^2/8`` only for Gumbel).

    Parameters
    ----------
    input_domain : VectorDomain
        ``vector_domain`` of int or non-NaN float atoms: one score per public candidate.
    input_metric : LInfDistance
        ``LInfDistance(monotonic=...)`` (each score moves by at most ``d_in``) or
        ``RangeDistance()`` (``d_in`` bounds the range distance itself).
    output_measure : Measure
        ``MaxDivergence()`` or ``ZeroConcentratedDivergence()``.
    scale : float
        The noise scale, ``>= 0`` (0: the exact argmax, with an infinite loss).
    noise : {"gumbel", "exponential", "laplace"}, default "gumbel"
        The noise law.
    optimize : {"max", "min"}, default "max"
        Select the highest or the lowest score.
    source : RandomSource or None, default None
        Where the noise's random bits come from; ``None`` is the CSPRNG.

    Returns
    -------
    Measurement
        From score vectors to the chosen index (an ``int``).
    """
    return _make_selection(
        input_domain, input_metric, output_measure, scale, None, noise, optimize, source
    )


def make_noisy_top_k(
    input_domain: VectorDomain,
    input_metric: LInfDistance,
    output_measure: Measure,
    *,
    k: int,
    scale: float | int | Fraction,
    noise: Noise = "gumbel",
    optimize: Literal["max", "min"] = "max",
    source: RandomSource | None = None,
) -> Measurement:
    """The ``k`` best indices, ranked best first (seed 004).

    Gumbel: one shot, equal in law to ``k`` rounds of the exponential mechanism (seed 004,
    Theorem 1). Exponential, Laplace: ``k`` rounds without replacement. Privacy maps: ``k``
    times the one-round loss (module table). ``k`` must be at most the vector size when the
    domain fixes it; otherwise the engine checks it against each input's length (a public
    fact: the number of candidates).

    Parameters
    ----------
    input_domain : VectorDomain
        ``vector_domain`` of int or non-NaN float atoms: one score per public candidate.
    input_metric : LInfDistance
        ``LInfDistance(monotonic=...)`` (each score moves by at most ``d_in``) or
        ``RangeDistance()`` (``d_in`` bounds the range distance itself).
    output_measure : Measure
        ``MaxDivergence()`` or ``ZeroConcentratedDivergence()``.
    k : int
        How many indices are released, ``>= 0``.
    scale : float
        The noise scale, ``>= 0`` (0: the exact top ``k``, with an infinite loss).
    noise : {"gumbel", "exponential", "laplace"}, default "gumbel"
        The noise law.
    optimize : {"max", "min"}, default "max"
        Select the highest or the lowest scores.
    source : RandomSource or None, default None
        Where the noise's random bits come from; ``None`` is the CSPRNG.

    Returns
    -------
    Measurement
        From score vectors to an int64 array of ``k`` indices, best first.
    """
    return _make_selection(
        input_domain, input_metric, output_measure, scale, k, noise, optimize, source
    )
