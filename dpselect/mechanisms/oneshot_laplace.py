"""One-shot Laplace top-k (Qiao, Su and Zhang 2021), sampled exactly; counts from fresh noise.

The mechanism (QSZ21, Algorithm 1, the "oneshot Laplace mechanism"). On counts ``x`` in Z^d,
draw ``y_i = x_i + L_i`` with ``L_i`` i.i.d. Laplace of scale ``b`` (density
``exp(-|t| / b) / (2b)``, standard deviation ``sqrt(2) b``) *once*, and release the *set* of
indices of the ``k`` largest ``y_i``, without their order.

The guarantee (QSZ21, Theorem 2.2, the statement seed 004 quotes): when every count has
sensitivity 1 (``|x_i - x'_i| <= 1`` for all ``i``; no monotonicity needed), the mechanism with
``b = 8 sqrt(k ln(d / delta)) / epsilon`` is ``(epsilon, delta)``-DP for ``epsilon < 0.2`` and
``delta < 0.05``. Seed 004's ``sigma_Lap = 8 sqrt(2k ln(d/delta)) / epsilon`` is the standard
deviation ``sqrt(2) b`` of that noise. Outside that range the theorem says nothing and the
constructor refuses the parameters. QSZ21, section 4: "only a subset of k elements, but not
their ordering, is returned. The privacy proof crucially depends on this fact." The theorem
covers neither the ranking nor the noisy values ``y_i``, so neither is released:

- the set is released as its ``k`` indices **sorted by candidate index** (increasing), a
  function of the set alone;
- if counts are asked for (``count_scale``), they are ``x_i + Z_i`` for the selected ``i``
  with ``Z_i`` *fresh* exact discrete Laplace noise (Canonne, Kamath and Steinke 2020),
  independent of the selection's draws, and accounted by basic composition (Dwork and Roth
  2014, Theorem 3.16): the ``k`` counts have L1 sensitivity ``k d_in``, hence are
  ``k d_in / count_scale``-DP (Ghosh, Roughgarden and Sundararajan 2009).

Counts of rows per person (``max_rows_per_value = r``, :mod:`dpselect.data.scores`) move by at
most ``r``: the map is taken at ``d_in = r`` (the L-infinity distance), which is the theorem on
``x / r`` at scale ``b / r``: ``(r epsilon, delta)`` while ``r epsilon`` stays in the theorem's
range, else the pure bound ``d r / b``.

The selection is sampled *exactly* without ever holding a real ``y_i``:

- ``N_i = floor(L_i)`` has ``P(N = n) = (1 - q) q^n / 2`` for ``n >= 0`` and
  ``(1 - q) q^(-n-1) / 2`` for ``n <= -1``, ``q = exp(-1/b)``. That is a discrete Laplace ``Z``
  of scale ``b`` conditioned on ``Z != 0``, shifted: ``N = Z - 1`` if ``Z > 0`` else ``Z``. The
  discrete Laplace is sampled exactly (:func:`~dpselect.sampling.sample_discrete_laplace`,
  Canonne, Kamath and Steinke 2020) and zeros are redrawn (a number of draws that does not
  depend on the data).
- Given ``N_i = n``, ``F_i = L_i - n`` in ``[0, 1)`` is independent of everything else, with
  density proportional to ``exp(-f / b)`` if ``n >= 0`` and to ``exp(f / b)`` if ``n < 0``. As
  ``floor(y_i) = x_i + N_i``, the ranking of the ``y_i`` is by ``x_i + N_i``, then, inside a
  group of equal ``x_i + N_i``, by ``F_i``. Only the groups that reach the top ``k`` need their
  ``F_i``: each is ``G(V_i)`` for a lazily sampled uniform ``V_i`` and an increasing ``G``,
  compared in python-flint ``arb`` interval arithmetic, reading more digits of ``V_i`` until the
  comparison is decided (the approach of ``docs/exactness.md``).

The internal :func:`_oneshot_laplace_ranking` computes the ranking and ``floor(y)`` of the top
``k`` (tests check its law); it is never released. :func:`oneshot_laplace_top_k` keeps only the
set.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
from flint import arb, ctx, fmpq

from ..core.arithmetic import float_up
from ..core.domains import VectorDomain, atom_domain, vector_domain
from ..core.errors import ParameterError
from ..core.intervals import arb_of, evaluate, upper_float
from ..core.measurement import Measurement
from ..core.measures import Approximate, MaxDivergence
from ..core.metrics import LInfDistance
from ..sampling.discrete import sample_discrete_laplace
from ..sampling.source import RandomSource, resolve_source
from ..sampling.uniform import LazyUniform
from .noisy_counts import (
    NoisyTopK,
    check_count_metric,
    check_count_vector_domain,
    check_k,
    count_vector,
    noisy_values,
)
from .validate import check_delta, check_epsilon, check_int, check_scale

__all__ = [
    "QSZ_DELTA_BOUND",
    "QSZ_EPSILON_BOUND",
    "make_oneshot_laplace_top_k",
    "oneshot_laplace_scale",
    "oneshot_laplace_top_k",
    "sample_floor_laplace",
]

#: QSZ21 Theorem 2.2 holds for epsilon < 0.2 and delta < 0.05 (strict, as seed 004 states).
QSZ_EPSILON_BOUND = Fraction(1, 5)
QSZ_DELTA_BOUND = Fraction(1, 20)

_MAX_SCALE = Fraction(1 << 52)  # the discrete Laplace sampler's range
_MIN_SCALE = Fraction(1, 1 << 64)
_SAFE = 1 << 61  # |x| and |N| below this: x + N fits in int64


# --------------------------------------------------------------------------------- the scale
def oneshot_laplace_scale(k: int, d: int, epsilon: Any, delta: Any) -> Fraction:
    """QSZ21's Laplace scale ``b = 8 sqrt(k ln(d / delta)) / epsilon``, rounded up.

    Returned as the exact rational value of the smallest float above the real ``b`` (more
    noise than the theorem asks for is always allowed: ``b' >= b`` is the theorem's scale for
    an ``epsilon' <= epsilon``).

    Parameters
    ----------
    k : int
        The size of the released set.
    d : int
        The number of candidates.
    epsilon, delta : float
        The selection's target (the constructor checks the theorem's range).

    Returns
    -------
    Fraction
        ``b``, the Laplace scale.
    """
    eps, dlt = Fraction(epsilon), Fraction(delta)

    def formula() -> arb:
        return arb(8) * (arb(k) * (arb(d) / arb_of(dlt)).log()).sqrt() / arb_of(eps)

    return Fraction(upper_float(evaluate(formula)))


# --------------------------------------------------------------------------------- sampling
def sample_floor_laplace(
    scale: Fraction, size: int, source: RandomSource | None = None
) -> npt.NDArray[np.int64]:
    """``floor(L)`` for ``size`` i.i.d. Laplace(``scale``) variables, exactly (module doc).

    Parameters
    ----------
    scale : Fraction
        The Laplace scale ``b``, in ``[2^-64, 2^52]`` (the exact sampler's range).
    size : int
        How many variables, ``>= 0``.
    source : RandomSource or None, default None
        Where the random bits come from; ``None`` is the CSPRNG.

    Returns
    -------
    ndarray of int64
        ``size`` values of ``floor(L)``.
    """
    src = resolve_source(source)
    # P(Z != 0) = 2q / (1 + q); draw in batches sized from it (only the speed depends on it).
    q = math.exp(-1.0 / float(scale))
    accept = max(2.0 * q / (1.0 + q), 1e-3)
    pieces: list[npt.NDArray[np.int64]] = []
    need = size
    while need > 0:
        batch = np.asarray(
            sample_discrete_laplace(scale, int(need / accept * 1.1) + 8, src), dtype=np.int64
        )
        kept = batch[batch != 0][:need]
        pieces.append(kept)
        need -= kept.size
    z = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
    out: npt.NDArray[np.int64] = np.where(z > 0, z - 1, z)
    return out


class _FractionalPart:
    """``F = L - floor(L)`` given ``floor(L) = n``: ``G(V)`` for a lazy uniform ``V``.

    ``n >= 0``: density ~ ``exp(-f/b)`` on [0, 1), ``G(v) = -b log1p(-v (1 - e^{-1/b}))``.
    ``n < 0``: density ~ ``exp(f/b)`` on [0, 1), ``G(v) = b log1p(v (e^{1/b} - 1))``.
    Both are increasing with ``G(0) = 0`` and ``G(1) = 1``, so ``G`` over ``V``'s dyadic
    interval is the ball joining ``G`` at its two ends.
    """

    __slots__ = ("_ball", "scale", "u", "upper")

    def __init__(self, upper: bool, scale: Fraction, source: RandomSource) -> None:
        self.upper = upper
        self.scale = scale
        self.u = LazyUniform.sample(source)
        self._ball: arb | None = None

    def _g(self, v: arb, b: arb) -> arb:
        if self.upper:
            return -b * (-v * (-(-1 / b).expm1())).log1p()
        return b * (v * (1 / b).expm1()).log1p()

    def ball(self) -> arb:
        if self._ball is None:
            prec = self.u.nbits + 64 + self.scale.numerator.bit_length()
            prec += self.scale.denominator.bit_length()
            with ctx.workprec(prec):
                b = arb(fmpq(self.scale.numerator, self.scale.denominator))
                den = 1 << self.u.nbits
                lo = self._g(arb(fmpq(self.u.prefix, den)), b)
                hi = self._g(arb(fmpq(self.u.prefix + 1, den)), b)
                self._ball = lo.union(hi)
        return self._ball

    def refine(self, source: RandomSource) -> None:
        self.u.refine(source)
        self._ball = None


def _compare(a: _FractionalPart, b: _FractionalPart, source: RandomSource) -> int:
    """-1 if ``a``'s fractional part is the larger, 1 if ``b``'s, reading digits as needed.

    The key known to fewer digits is refined first (``a`` on a tie). Equal real values have
    probability 0, so the loop ends almost surely.
    """
    while True:
        ball_a, ball_b = a.ball(), b.ball()
        if ball_a > ball_b:
            return -1
        if ball_a < ball_b:
            return 1
        (a if a.u.nbits <= b.u.nbits else b).refine(source)


def _rank_group(
    members: list[int], upper: list[bool], scale: Fraction, source: RandomSource
) -> list[int]:
    """``members`` ordered by their fractional parts, largest first, exactly."""
    keys = {i: _FractionalPart(up, scale, source) for i, up in zip(members, upper, strict=True)}

    def compare(i: int, j: int) -> int:
        return _compare(keys[i], keys[j], source)

    return sorted(members, key=functools.cmp_to_key(compare))


def _oneshot_laplace_ranking(
    counts: npt.NDArray[np.int64], scale: Fraction, k: int, source: RandomSource | None = None
) -> NoisyTopK:
    """Top ``k`` of ``y = counts + Laplace(scale)``, ranked, and ``floor(y)`` there, exactly.

    Internal: QSZ21's theorem does not cover this output (the ranking and the noisy values);
    the mechanism releases only the set (:func:`oneshot_laplace_top_k`).
    """
    src = resolve_source(source)
    d = counts.shape[0]
    n = sample_floor_laplace(scale, d, src)
    if d and int(np.abs(counts).max()) < _SAFE and int(np.abs(n).max()) < _SAFE:
        floors: npt.NDArray[Any] = counts + n
        kth = np.partition(floors, d - k)[d - k]
    else:  # huge counts: exact Python integers
        floors = np.array([int(c) + int(z) for c, z in zip(counts, n, strict=True)], dtype=object)
        kth = sorted(floors.tolist(), reverse=True)[k - 1]
    candidates = np.flatnonzero(floors >= kth).tolist()
    candidates.sort(key=lambda i: floors[i], reverse=True)
    chosen: list[int] = []
    start = 0
    while len(chosen) < k:
        end = start + 1
        while end < len(candidates) and floors[candidates[end]] == floors[candidates[start]]:
            end += 1
        group = candidates[start:end]
        if len(group) > 1:
            group = _rank_group(group, [bool(n[i] >= 0) for i in group], scale, src)
        chosen.extend(group[: k - len(chosen)])
        start = end
    indices = np.asarray(chosen, dtype=np.int64)
    values = floors[indices]
    if values.dtype == object and all(abs(int(v)) < (1 << 63) for v in values):
        values = values.astype(np.int64)
    return NoisyTopK(indices, values)


def oneshot_laplace_top_k(
    counts: npt.NDArray[np.int64],
    scale: Fraction,
    k: int,
    source: RandomSource | None = None,
    *,
    count_scale: Fraction | None = None,
) -> npt.NDArray[np.int64] | NoisyTopK:
    """QSZ21's release: the set of the top ``k`` of ``counts + Laplace(scale)``, exactly.

    Returns the ``k`` indices sorted by candidate index (no order information) or, with
    ``count_scale``, :class:`NoisyTopK` of those indices and ``counts[i] + Z_i`` with fresh
    exact discrete Laplace ``Z_i`` of scale ``count_scale`` (independent of the selection).

    Parameters
    ----------
    counts : ndarray of int64
        The true counts, one per candidate.
    scale : Fraction
        The selection's Laplace scale ``b``.
    k : int
        The size of the released set, ``1 <= k <= len(counts)``.
    source : RandomSource or None, default None
        Where the random bits come from; ``None`` is the CSPRNG.
    count_scale : Fraction or None, default None
        The scale of the released counts' fresh discrete Laplace noise; ``None``: release the
        indices only.

    Returns
    -------
    ndarray of int64 or NoisyTopK
        The ``k`` indices, sorted by index; with ``count_scale``, with their noisy counts.
    """
    src = resolve_source(source)
    ranked = _oneshot_laplace_ranking(counts, scale, k, src)
    indices = np.sort(ranked.indices)
    if count_scale is None:
        return indices
    z = sample_discrete_laplace(count_scale, k, src)
    return NoisyTopK(indices, noisy_values(counts[indices], z))


# --------------------------------------------------------------------------------- constructor
def _oneshot_domain(input_domain: Any, d: Any) -> VectorDomain:
    """The input domain: ``input_domain``, or ``vector_domain(atom_domain(int), size=d)``."""
    if input_domain is None:
        if d is None:
            raise ParameterError("give input_domain (with a size) or d, the number of candidates")
        input_domain = vector_domain(atom_domain(int), size=check_int(d, "d", minimum=1))
    elif d is not None:
        raise ParameterError("give input_domain or d, not both")
    return check_count_vector_domain(input_domain)


def _qsz_target(epsilon: Any, delta: Any) -> tuple[Fraction, Fraction]:
    """``(epsilon, delta)`` as exact rationals, checked inside QSZ21 Theorem 2.2's range."""
    eps = Fraction(check_epsilon(epsilon))
    if not eps < QSZ_EPSILON_BOUND:
        raise ParameterError(
            f"epsilon must be below 0.2, the range where Qiao, Su and Zhang (2021), Theorem 2.2, "
            f"proves the one-shot Laplace mechanism private; got {epsilon}"
        )
    dlt = Fraction(check_delta(delta, allow_zero=False))
    if not dlt < QSZ_DELTA_BOUND:
        raise ParameterError(
            f"delta must be below 0.05, the range where Qiao, Su and Zhang (2021), Theorem 2.2, "
            f"proves the one-shot Laplace mechanism private; got {delta}"
        )
    return eps, dlt


def _selection_scale(k: int, d: int, eps: Fraction, dlt: Fraction) -> Fraction:
    """The selection's Laplace scale, refused beyond the exact sampler's range."""
    scale = oneshot_laplace_scale(k, d, eps, dlt)
    if scale > _MAX_SCALE:
        raise ParameterError(
            f"the Laplace scale 8 sqrt(k ln(d/delta))/epsilon = {float(scale):.3g} exceeds 2^52, "
            "the exact sampler's range: epsilon is too small"
        )
    return scale


def _checked_count_scale(count_scale: Any) -> Fraction | None:
    """The scale of the fresh counts' noise as an exact rational (``None``: no counts)."""
    if count_scale is None:
        return None
    t = Fraction(check_scale(count_scale, "count_scale", allow_zero=False))
    if not _MIN_SCALE <= t <= _MAX_SCALE:
        raise ParameterError(
            f"count_scale must lie in [2^-64, 2^52], the exact discrete Laplace sampler's "
            f"range; got {count_scale}"
        )
    return t


@dataclass(frozen=True)
class _OneshotLoss:
    """The map to ``Approximate(MaxDivergence())``, ``d_in -> (eps, delta)``, selection first.

    - ``d_in = 0``: ``(0, 0)``.
    - ``epsilon * d_in < 0.2``: ``(epsilon * d_in, delta)`` (QSZ21, Theorem 2.2, applied to the
      counts divided by ``d_in``, whose noise is Laplace(``b / d_in``));
    - otherwise, or when smaller: ``(d d_in / b, 0)``: the whole noisy vector ``y`` is the
      Laplace mechanism on a query of L1 sensitivity ``d d_in`` (Dwork and Roth 2014,
      Theorem 3.6) and the output is a post-processing of ``y``.

    With ``count_scale = t``, ``k d_in / t`` is added to ``eps`` (the counts' Laplace mechanism,
    L1 sensitivity ``k d_in``; basic composition, Dwork and Roth 2014, Theorem 3.16). The sum
    is exact in rationals, then rounded up to a float.
    """

    metric: LInfDistance
    k: int
    d: int
    epsilon: Fraction
    delta_out: float
    scale: Fraction
    count_scale: Fraction | None

    def __call__(self, d_in: Any) -> tuple[float, float]:
        """``(eps, delta)`` at ``d_in``, checked by the metric first."""
        self.metric.validate(d_in)
        if d_in == 0:
            return (0.0, 0.0)
        if math.isinf(d_in):
            return (math.inf, 0.0)
        dq = Fraction(d_in)
        t = self.count_scale
        counts_loss = Fraction(0) if t is None else self.k * dq / t
        pure = self.d * dq / self.scale
        scaled = self.epsilon * dq
        if scaled < QSZ_EPSILON_BOUND and scaled < pure:
            return (float_up(scaled + counts_loss), self.delta_out)
        return (float_up(pure + counts_loss), 0.0)


def make_oneshot_laplace_top_k(
    k: int,
    epsilon: float | Fraction,
    delta: float | Fraction,
    *,
    input_domain: Any = None,
    input_metric: Any = None,
    d: int | None = None,
    count_scale: float | Fraction | None = None,
    source: RandomSource | None = None,
) -> Measurement:
    """QSZ21's one-shot Laplace top-``k``: the unordered set, ``(epsilon, delta)``-DP.

    Parameters
    ----------
    k:
        Number of indices released, ``1 <= k <= d``.
    epsilon, delta:
        The selection's target, inside the theorem's range ``0 < epsilon < 0.2``,
        ``0 < delta < 0.05``; anything else raises :class:`ParameterError`.
    input_domain:
        ``vector_domain(atom_domain(int), size=d)``: ``d`` public candidates, integer counts.
        May be omitted when ``d`` is given.
    input_metric:
        ``LInfDistance(monotonic=...)``: each count moves by at most ``d_in`` (QSZ21 needs
        sensitivity 1 per count, not monotonicity). Default ``LInfDistance()``.
    d:
        The number of candidates, instead of ``input_domain`` (public).
    count_scale:
        ``None`` (default): release the set only. A scale ``t`` in ``[2^-64, 2^52]``: also
        release the selected counts with *fresh* exact discrete Laplace noise
        ``P(z) ~ exp(-|z| / t)``, which costs ``k d_in / t`` more epsilon.
    source:
        Randomness source; ``None`` is the CSPRNG.

    The law: ``y = x + Laplace(b)^d`` once, ``b = 8 sqrt(k ln(d / delta)) / epsilon`` (rounded
    up); release the indices of the ``k`` largest ``y_i`` as an int64 array **sorted by
    candidate index** (the set, QSZ21 Algorithm 1; the ranking is not released), or with
    ``count_scale`` a :class:`~dpselect.mechanisms.topk_counts.NoisyTopK` of those sorted
    indices and ``x_i + Z_i``, ``Z_i`` fresh discrete Laplace (the module docstring gives the
    exact sampling).

    The map to ``Approximate(MaxDivergence())``: ``(epsilon d_in, delta)`` while ``epsilon
    d_in < 0.2`` (QSZ21, Theorem 2.2), else (or when smaller) the pure ``(d d_in / b, 0)`` of
    the whole noisy vector (Dwork and Roth 2014, Theorem 3.6); with ``count_scale = t``, plus
    ``k d_in / t`` (basic composition, Dwork and Roth 2014, Theorem 3.16). Exact in rationals,
    then rounded up.

    Returns
    -------
    Measurement
        From count vectors to the ``k`` indices sorted by index (or, with ``count_scale``, a
        :class:`NoisyTopK`), with output measure ``Approximate(MaxDivergence())``.
    """
    domain = _oneshot_domain(input_domain, d)
    metric = check_count_metric(LInfDistance() if input_metric is None else input_metric)
    d = domain.size
    assert d is not None  # checked above
    k = check_k(k, d)
    eps, dlt = _qsz_target(epsilon, delta)
    scale = _selection_scale(k, d, eps, dlt)
    t = _checked_count_scale(count_scale)
    delta_out = float_up(dlt)

    def function(x: Any) -> npt.NDArray[np.int64] | NoisyTopK:
        return oneshot_laplace_top_k(count_vector(x), scale, k, source, count_scale=t)

    return Measurement(
        input_domain=domain,
        input_metric=metric,
        output_measure=Approximate(MaxDivergence()),
        function=function,
        privacy_map=_OneshotLoss(metric, k, d, eps, delta_out, scale, t),
    )
