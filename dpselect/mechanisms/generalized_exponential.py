"""The generalized exponential mechanism (Raskhodnikova and Smith 2016): candidates whose scores
have *different* sensitivities, exactly through the sampling engine.

Candidate ``i`` has a score ``q_i(x)`` that moves by at most ``Delta_i`` between neighbouring
datasets (``Delta_i`` public, one per candidate). The plain exponential mechanism must use
``max_i Delta_i`` for every candidate; GEM (Raskhodnikova and Smith 2016, "Lipschitz
extensions for node-private graph statistics and the generalized exponential mechanism",
FOCS 2016, full version arXiv:1504.07912; RS16) normalises the scores instead (its section
on the generalized exponential mechanism; the theorem number of RS16's privacy and utility
statement was not checked against the paper, so none is cited here: the two proofs below are
self-contained):

    t = 2 ln(k / beta) / epsilon,   a_i = q_i - t Delta_i,
    s_i = min_j (a_i - a_j) / (Delta_i + Delta_j)     (<= 0, the j = i term is 0)

and runs the exponential mechanism on ``s`` with sensitivity 1: ``P[i] ~ exp(eps s_i / 2)``.

**Privacy.** Each term ``(a_i - a_j) / (Delta_i + Delta_j)`` moves by at most ``(Delta_i +
Delta_j) / (Delta_i + Delta_j) = 1``, and a minimum of functions that move by at most 1 moves
by at most 1: ``s`` has sensitivity 1 whatever the data (RS16's privacy argument for GEM). The
exponential mechanism on a sensitivity-1 score with ``exp(eps s / 2)`` is ``eps``-DP and
``eps``-bounded range (McSherry and Talwar 2007; seed 002). ``t`` and ``beta`` only affect
utility.

**Exactness.** ``s_i`` is computed in exact rationals and rounded down to the grid
``2^-40 Z`` (``floor(2^40 s_i)``, clamped to ``[-2^62, 0]``: monotone, so the integer shifts
move by at most ``2^40 d_in + 1``); the selection is :func:`~dpselect.sampling.noisy_argmax`
with Gumbel noise on these integer shifts (exact, docs/exactness.md). The map accounts for the
rounding: range distance ``2 (d_in + 2^-40)`` (not monotone), loss ``2 (d_in + 2^-40) /
scale``, and the default ``scale = 2 (1 + 2^-40) / eps`` gives exactly ``eps`` at
``d_in = 1``.

**Utility** (RS16's utility theorem for GEM, with the constants of this normalisation): with
probability at least ``1 - beta`` the output ``i`` satisfies ``q_i >= max_j (q_j - 2 t Delta_j)``
when maximising (up to the ``2^-40`` grid). Proof: the candidate maximising ``a`` has ``s = 0``;
the exponential mechanism at scale ``2 / eps`` loses at most ``(2 / eps) ln(k / beta) = t``
of ``s`` with probability ``1 - beta`` (seed 002's utility theorem), and ``s_i >= -t`` means
``a_i - a_j >= -t (Delta_i + Delta_j)`` for every ``j``, i.e. ``q_i >= q_j - 2 t Delta_j``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from ..core.arithmetic import float_up
from ..core.domains import Domain
from ..core.errors import ParameterError
from ..core.intervals import arb_of, evaluate, upper_fraction
from ..core.measurement import Measurement
from ..core.measures import MaxDivergence, Measure
from ..core.metrics import Metric, SymmetricDistance
from ..sampling.noisy_max import noisy_argmax
from ..sampling.source import RandomSource
from .exponential import check_candidates, scored_measurement, user_scores
from .report_noisy_max import check_selection_measure, selection_loss
from .validate import check_epsilon, check_optimize, check_scale, optimize_sign

__all__ = [
    "GRID_BITS",
    "gem_shifts",
    "gem_threshold",
    "make_generalized_exponential_mechanism",
]

#: Normalised scores are rounded down to multiples of 2^-GRID_BITS.
GRID_BITS = 40
_FLOOR = -(1 << 62)


def gem_threshold(k: int, beta: Any, epsilon: Any) -> Fraction:
    """RS16's ``t = 2 ln(k / beta) / epsilon``, rounded up to a rational (public).

    Parameters
    ----------
    k : int
        The number of candidates.
    beta : float
        The utility statement's failure probability, in ``(0, 1)``.
    epsilon : float
        The mechanism's ``epsilon > 0``.

    Returns
    -------
    Fraction
        ``t``, in score units per unit of sensitivity.
    """
    b, e = Fraction(beta), Fraction(epsilon)
    return upper_fraction(evaluate(lambda: 2 * (arb_of(Fraction(k)) / arb_of(b)).log() / arb_of(e)))


def _exact(value: Any) -> Fraction | None:
    """A finite score as an exact rational; ``None`` for NaN, infinities and non-numbers."""
    try:
        f = Fraction(value) if isinstance(value, (int, Fraction)) else Fraction(float(value))
    except Exception:
        return None
    return f


def gem_shifts(
    scores: Sequence[Any], sensitivities: Sequence[Fraction], t: Fraction, sign: int = 1
) -> np.ndarray[Any, np.dtype[np.int64]]:
    """``floor(2^40 s_i)`` clamped to ``[-2^62, 0]`` for the normalised scores ``s`` (module doc).

    A score that is NaN, infinite or not a number is the worst: its shift is ``-2^62`` and it
    takes no part in the others' minima (so it never raises). ``sign = -1`` minimises.

    Parameters
    ----------
    scores : sequence
        One score per candidate (any value; see above).
    sensitivities : sequence of Fraction
        ``Delta_i > 0``, one per candidate (the same length as ``scores``).
    t : Fraction
        RS16's ``t`` (:func:`gem_threshold`).
    sign : int, default 1
        ``1`` maximises the scores, ``-1`` minimises them.

    Returns
    -------
    ndarray of int64
        One integer shift per candidate, in ``[-2^62, 0]`` (0 for the candidate of largest
        ``a``).
    """
    a: list[Fraction | None] = []
    for q, d in zip(scores, sensitivities, strict=True):
        v = _exact(q)
        a.append(None if v is None else sign * v - t * d)
    finite = [(x, d) for x, d in zip(a, sensitivities, strict=True) if x is not None]
    out = np.full(len(a), _FLOOR, dtype=np.int64)
    for i, (ai, di) in enumerate(zip(a, sensitivities, strict=True)):
        if ai is None:
            continue
        s = min((ai - aj) / (di + dj) for aj, dj in finite)
        grid = math.floor(s * (1 << GRID_BITS))
        out[i] = max(min(grid, 0), _FLOOR)
    return out


def make_generalized_exponential_mechanism(
    candidates: Sequence[Any],
    score: Callable[[Any, Any], float],
    sensitivities: Sequence[float | int | Fraction],
    *,
    epsilon: float | int | Fraction,
    beta: float = 0.05,
    optimize: Literal["max", "min"] = "max",
    input_domain: Domain | None = None,
    input_metric: Metric | None = None,
    output_measure: Measure | None = None,
    source: RandomSource | None = None,
) -> Measurement:
    """GEM over a public candidate list whose scores have per-candidate sensitivities.

    ``score(data, candidate)`` must move by at most ``sensitivities[i]`` (``> 0``) for
    candidate ``i`` between neighbouring datasets (``input_metric``, default
    :class:`SymmetricDistance` at distance 1). ``beta`` in ``(0, 1)`` sets RS16's ``t`` (utility
    only). Returns the chosen candidate.

    Map (``MaxDivergence``, or ``ZeroConcentratedDivergence`` via bounded range):
    ``d_in -> 2 (d_in + 2^-40) / scale`` with ``scale = 2 (1 + 2^-40) / epsilon`` rounded up,
    so ``map(1) <= epsilon``; zCDP ``(2 (d_in + 2^-40) / scale)^2 / 8``.

    Parameters
    ----------
    candidates : sequence
        The public candidates (a list or tuple, not empty).
    score : callable (data, candidate) -> number
        The score; a NaN, a non-number or an exception counts as the worst score.
    sensitivities : sequence of float
        ``Delta_i > 0``, one per candidate, public.
    epsilon : float
        The loss at ``d_in = 1``, ``> 0``.
    beta : float, default 0.05
        The utility statement's failure probability, in ``(0, 1)``; sets ``t``, not the
        privacy loss.
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
    deltas = _check_sensitivities(sensitivities, len(candidates))
    eps = Fraction(check_epsilon(epsilon))
    if isinstance(beta, bool) or not isinstance(beta, (int, float, Fraction)) or not 0 < beta < 1:
        raise ParameterError(f"beta must be a number in (0, 1), got {beta!r}")
    sign = optimize_sign(check_optimize(optimize))
    measure = check_selection_measure(output_measure or MaxDivergence())
    metric = input_metric or SymmetricDistance()
    t = gem_threshold(len(candidates), beta, eps)
    slack = Fraction(1, 1 << GRID_BITS)
    scale = Fraction(float_up(2 * (1 + slack) / eps))
    cands = list(candidates)

    def function(data: Any) -> Any:
        shifts = gem_shifts(user_scores(score, data, cands), deltas, t, sign)
        return cands[noisy_argmax(shifts, scale * (1 << GRID_BITS), "gumbel", source=source)]

    def privacy_map(d_in: Any) -> float:
        metric.validate(d_in)
        if d_in == 0:
            return 0.0
        if math.isinf(d_in):
            return math.inf
        return selection_loss(2 * (Fraction(d_in) + slack), scale, 1, "gumbel", measure)

    return scored_measurement(input_domain, metric, measure, function, privacy_map)


def _check_sensitivities(sensitivities: Any, count: int) -> list[Fraction]:
    """The per-candidate sensitivities, checked (a sequence of ``count`` numbers ``> 0``), as
    fractions."""
    if isinstance(sensitivities, (str, bytes)) or not isinstance(sensitivities, Sequence):
        raise ParameterError("sensitivities must be a sequence of numbers, one per candidate")
    if len(sensitivities) != count:
        raise ParameterError(
            f"sensitivities must have one entry per candidate ({count}), got {len(sensitivities)}"
        )
    return [Fraction(check_scale(d, "sensitivities", allow_zero=False)) for d in sensitivities]
