"""An exact draw from ``exp(weights)`` in two stages: a few heavy states, then the rest only
when an exact Bernoulli trial says so.

Used where nearly all the mass sits in a small part of many states (the joint quantile
mechanism's backward pass, :mod:`dpselect.mechanisms.quantile_joint`; the continuous
mechanism's far intervals, :mod:`dpselect.mechanisms.quantile_continuous`): the part is drawn
with probability ``Z_part / Z`` by :func:`~dpselect.sampling.uniform.bernoulli_from_balls`
(balls from a cheap bound, then from float sums with a rigorous radius, then arb at growing
precision), the state within it by :func:`~dpselect.sampling.noisy_max.noisy_argmax`
(``P ∝ exp(weight)``, exact): the product is the law ``exp(w_i) / sum_j exp(w_j)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from .noisy_max import noisy_argmax
from .source import RandomSource, resolve_source
from .uniform import bernoulli_from_balls

__all__ = ["HEAVY_GAP", "draw_state", "exp_sum_ball", "share_bound"]

F64 = npt.NDArray[np.float64]


def exp_sum_ball(v: F64, exact: bool) -> Any:
    """An arb ball holding ``sum exp(v)`` (``-inf``: a term 0), at the context's precision.

    ``exact``: every term in arb. Else from floats: ``M = max v``, ``S`` = NumPy's sum of
    ``exp(v - M)``; each term is within a relative ``2^-42`` (the rounding of ``v - M``, ``|v -
    M| <= 745`` where the term is not below the smallest normal, and ``exp`` to a few ulps) or
    an absolute ``2^-1072`` (underflow), and the sum of ``N`` positive terms within a relative
    ``N 2^-53``: the radius ``S (2^-40 + N 2^-52) + N 2^-1000`` covers both, generously.

    Parameters
    ----------
    v : numpy.ndarray of float64
        Log-weights (1-d); ``-inf`` entries are terms 0, NaN and ``+inf`` are not allowed.
    exact : bool
        ``True``: every term in arb (slow, tight); ``False``: the float sum with its radius.

    Returns
    -------
    flint.arb
        A ball containing ``sum exp(v)``; exactly 0 when no entry is finite.
    """
    from flint import arb

    finite = v[np.isfinite(v)]
    if finite.shape[0] == 0:
        return arb(0)
    if exact:
        total = arb(0)
        for x in finite.tolist():
            total += arb(x).exp()
        return total
    top = float(finite.max())
    s = float(np.exp(finite - top).sum())
    n = finite.shape[0]
    return arb(top).exp() * arb(s, s * (2.0**-40 + n * 2.0**-52) + n * 2.0**-1000)


def share_bound(near: F64, far: F64) -> float:
    """``p_ub >= Z_far / (Z_near + Z_far)``: ``Z_far <= N exp(M_far)`` (``N`` terms) and
    ``Z_near >= exp(M_near)`` (one of its terms), so ``p <= N exp(M_far - M_near)``; the float
    difference and ``log``/``exp`` are covered by a slack of ``2^-30 (1 + |M_far - M_near|)``
    in the exponent and a factor ``1 + 2^-40``. Both maxima finite (``draw_state`` checks).

    Parameters
    ----------
    near, far : numpy.ndarray of float64
        The log-weights of the two parts (1-d, non-empty, each with a finite maximum).

    Returns
    -------
    float
        ``p_ub`` in ``[5e-324, 1]``: ``1.0`` when the bound gives nothing.
    """
    gap = float(far.max()) - float(near.max())
    log_p = math.log(far.shape[0]) + gap + 2.0**-30 * (1.0 + abs(gap))
    if log_p >= 0:
        return 1.0
    return max(math.exp(log_p) * (1 + 2.0**-40), 5e-324)


#: States of row 0 lighter than its heaviest by more than this many nats are drawn apart, by a
#: second trial (:func:`draw_state`): their share is at most ``N e^-40`` for ``N`` states.
HEAVY_GAP = 40.0


def draw_state(weights: F64, source: RandomSource | None, heavy_gap: float = HEAVY_GAP) -> int:
    """The flat index of ``weights`` (``(R, k)``, log-weights, ``-inf`` for none) drawn with
    probability ``exp(weights) / sum exp(weights)``, exactly, in stages.

    Row 0 (the states with ``r = 1``: a new interval) holds nearly all the mass once ``n`` is
    large, since every repeat pays the self cost ``min(T, c g n)`` (``T`` for ``c g n >= T``).
    So the draw is in rows ``1..R-1`` with probability ``p = Z_far / (Z_near + Z_far)`` (sums
    of ``exp`` of each part), an exact Bernoulli trial (:func:`_far_trial`), then the index within
    the part. Within row 0 the same again: the states lighter than its heaviest by more than
    ``heavy_gap`` nats (``HEAVY_GAP``) against the others, by a second trial, then
    :func:`noisy_argmax` (``P ∝ exp(weight)``) within the part chosen. Each stage draws a part
    with its exact share of the mass and then a state with its exact share of the part: the
    product is the law asked for, whatever the split (the split, read from the weights, only
    decides how much work the draw takes), with random words for the few heavy states of row 0
    instead of all ``R k`` states when both trials say near.

    Parameters
    ----------
    weights : numpy.ndarray of float64
        Log-weights of shape ``(R, k)``, ``R >= 1``: ``-inf`` for a state that cannot be
        drawn; at least one finite entry, no NaN or ``+inf``.
    source : RandomSource or None
        Where the random bits come from; ``None`` means the default private source.
    heavy_gap : float, default HEAVY_GAP
        The gap, in nats (40), below row 0's maximum beyond which a state of row 0 is drawn
        by the second trial; it changes the work done, never the law.

    Returns
    -------
    int
        The drawn state's flat (row-major) index ``r k + i``.
    """
    src = resolve_source(source)
    near = weights[0]
    if weights.shape[0] > 1:
        far = weights[1:].ravel()
        if _far_trial(near, far, src):
            return int(near.shape[0]) + int(noisy_argmax(far, 1.0, "gumbel", source=src))
    return _draw_row(near, src, heavy_gap)


def _draw_row(row: F64, src: RandomSource, heavy_gap: float) -> int:
    """An index of ``row`` drawn with probability ``exp(row) / sum exp(row)``: its heavy states
    (within ``heavy_gap`` of its maximum) against the others by :func:`_far_trial`, then
    :func:`noisy_argmax` within the part chosen."""
    top = float(row.max()) if row.shape[0] else -math.inf
    if not math.isfinite(top):
        return int(noisy_argmax(row, 1.0, "gumbel", source=src))
    is_heavy = row >= top - heavy_gap
    heavy = np.flatnonzero(is_heavy)
    if heavy.shape[0] == row.shape[0]:
        return int(noisy_argmax(row, 1.0, "gumbel", source=src))
    light = np.flatnonzero(~is_heavy)
    if _far_trial(row[heavy], row[light], src):
        return int(light[int(noisy_argmax(row[light], 1.0, "gumbel", source=src))])
    return int(heavy[int(noisy_argmax(row[heavy], 1.0, "gumbel", source=src))])


def _far_trial(near: F64, far: F64, src: RandomSource) -> bool:
    """An exact Bernoulli trial with ``p = Z_far / (Z_near + Z_far)`` (sums of ``exp``;
    ``-inf`` terms are 0; both empty of mass: never reached by the callers' laws):
    :func:`bernoulli_from_balls`, first with the ball ``[0, p_ub]`` of :func:`share_bound`,
    then balls from float sums with a rigorous radius (:func:`exp_sum_ball`), then arb at
    growing precision, each only when the uniform falls in the previous ball."""
    if not bool(np.isfinite(near).any()):
        return True
    if not bool(np.isfinite(far).any()):
        return False
    calls = [0]

    def probability(prec: int) -> Any:
        from flint import arb, ctx

        calls[0] += 1
        if calls[0] == 1:  # [0, p_ub] from the two maxima: two passes, no exp
            return arb(share_bound(near, far) / 2) * arb(1, 1)
        old = ctx.prec
        ctx.prec = max(prec, 64)
        try:
            z_far = exp_sum_ball(far, calls[0] > 2)
            return z_far / (exp_sum_ball(near, calls[0] > 2) + z_far)
        finally:
            ctx.prec = old

    return bool(bernoulli_from_balls(probability, src))
