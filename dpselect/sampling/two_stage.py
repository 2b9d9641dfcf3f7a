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

__all__ = ["draw_state", "exp_sum_ball", "share_bound"]

F64 = npt.NDArray[np.float64]


def exp_sum_ball(v: F64, exact: bool) -> Any:
    """An arb ball holding ``sum exp(v)`` (``-inf``: a term 0), at the context's precision.

    ``exact``: every term in arb. Else from floats: ``M = max v``, ``S`` = NumPy's sum of
    ``exp(v - M)``; each term is within a relative ``2^-42`` (the rounding of ``v - M``, ``|v -
    M| <= 745`` where the term is not below the smallest normal, and ``exp`` to a few ulps) or
    an absolute ``2^-1072`` (underflow), and the sum of ``N`` positive terms within a relative
    ``N 2^-53``: the radius ``S (2^-40 + N 2^-52) + N 2^-1000`` covers both, generously."""
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
    in the exponent and a factor ``1 + 2^-40``. Both maxima finite (``draw_state`` checks)."""
    gap = float(far.max()) - float(near.max())
    log_p = math.log(far.shape[0]) + gap + 2.0**-30 * (1.0 + abs(gap))
    if log_p >= 0:
        return 1.0
    return max(math.exp(log_p) * (1 + 2.0**-40), 5e-324)


def draw_state(weights: F64, source: RandomSource | None) -> int:
    """The flat index of ``weights`` (``(R, k)``, log-weights, ``-inf`` for none) drawn with
    probability ``exp(weights) / sum exp(weights)``, exactly, in two stages.

    Row 0 (the states with ``r = 1``: a new interval) holds nearly all the mass once ``n`` is
    large, since every repeat pays the self cost ``min(T, c g n)`` (``T`` for ``c g n >= T``).
    So the draw is in rows ``1..R-1`` with probability ``p = Z_far / (Z_near + Z_far)`` (sums
    of ``exp`` of each part), an exact Bernoulli trial (:func:`bernoulli_from_balls`: first the
    ball ``[0, p_ub]`` of :func:`share_bound`, then balls from float sums with a rigorous radius,
    :func:`exp_sum_ball`, then arb at growing precision, each only when the uniform falls in the
    previous ball), then the index within the part by
    :func:`noisy_argmax` (``P ∝ exp(weight)``): the product is the law asked for, with the
    random words of ``k`` states instead of ``R k`` when the trial says near."""
    src = resolve_source(source)
    near = weights[0]
    if weights.shape[0] == 1:
        return int(noisy_argmax(near, 1.0, "gumbel", src))
    far = weights[1:].ravel()
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

    if not bool(np.isfinite(near).any()):
        go_far = True
    elif not bool(np.isfinite(far).any()):
        go_far = False
    else:
        go_far = bernoulli_from_balls(probability, src)
    if go_far:
        return int(near.shape[0]) + int(noisy_argmax(far, 1.0, "gumbel", src))
    return int(noisy_argmax(near, 1.0, "gumbel", src))
