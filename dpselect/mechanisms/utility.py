"""Utility of private selection: the exponential mechanism's theorem, exact laws (seeds 002, 003).

- :func:`utility_bound`: seed 003, Theorem 3 (seed 002, "Utility guarantees for exponential
  mechanism"): ``P[s(M(X)) <= OPT - (2 Delta / eps)(ln(|O| / |O*|) + t)] <= e^-t``, with
  ``Delta`` in place of ``2 Delta`` for a monotonic score (the mechanism then uses weights
  ``exp(eps s / Delta)``). Both directions: the loss at a confidence, the probability at a
  loss.
- :func:`selection_probabilities`: the exact law of report-noisy-max, ``argmax_i s_i / scale +
  X_i``, for Gumbel (the exponential mechanism), Exponential (permute-and-flip) and Laplace
  noise, in float64.
- :func:`hair_colour_example`: seed 002's worked example.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
from flint import arb

from ..core.arithmetic import float_up
from ..core.errors import ParameterError
from ..core.intervals import arb_of, evaluate, lower_float, upper_float
from ..sampling.noise import NoiseFamily, get_family
from .validate import check_epsilon, check_int, check_scale

__all__ = [
    "HairColourExample",
    "UtilityBound",
    "hair_colour_example",
    "selection_probabilities",
    "utility_bound",
]

F64 = npt.NDArray[np.float64]
Real = float | int | Fraction


# ============================================================================ utility theorem
@dataclass(frozen=True)
class UtilityBound:
    """``P[score of the output <= OPT - loss] <= probability``, with ``probability = e^-t``.

    ``loss`` is rounded up and ``probability`` rounded up, so the statement stays true as
    printed. ``probability`` is capped at 1 (the bound is then trivial; ``t`` is negative).
    """

    loss: float
    probability: float
    t: float
    epsilon: float
    sensitivity: float
    n_candidates: int
    n_optimal: int
    monotonic: bool

    @property
    def confidence(self) -> float:
        """``1 - probability``: the output's score exceeds ``OPT - loss`` at least this often."""
        return max(0.0, 1.0 - self.probability)

    def __str__(self) -> str:
        factor = "" if self.monotonic else "2 "
        return (
            f"P[score <= OPT - {self.loss:.6g}] <= {self.probability:.6g} "
            f"(t = {self.t:.6g}; {factor}Delta/eps = {self.loss_unit:.6g}, "
            f"|O| = {self.n_candidates}, |O*| = {self.n_optimal})"
        )

    @property
    def loss_unit(self) -> float:
        """``2 Delta / eps`` (``Delta / eps`` when monotonic), as a float."""
        return (1.0 if self.monotonic else 2.0) * self.sensitivity / self.epsilon


def utility_bound(
    epsilon: Real,
    sensitivity: Real,
    n_candidates: int,
    *,
    n_optimal: int = 1,
    t: Real | None = None,
    confidence: Real | None = None,
    monotonic: bool = False,
    loss: Real | None = None,
) -> UtilityBound:
    """The exponential mechanism's utility theorem, in either direction.

    Give exactly one of ``t``, ``confidence`` (``= 1 - e^-t``, in ``(0, 1)``) or ``loss``:

    - with ``t`` or ``confidence``: ``loss = (c Delta / eps)(ln(|O| / |O*|) + t)``, rounded
      up, where ``c = 2`` (``c = 1`` when ``monotonic``); ``probability = e^-t``;
    - with ``loss >= 0``: ``t = eps loss / (c Delta) - ln(|O| / |O*|)`` and
      ``probability = min(1, (|O| / |O*|) e^(-eps loss / (c Delta)))``, rounded up.

    The mechanism is the exponential mechanism with weights ``exp(eps s / (c Delta))``
    (Gumbel report-noisy-max with ``scale = c Delta / eps``), ``Delta`` the score's
    sensitivity, ``|O|`` the number of candidates, ``|O*| >= 1`` the number of them attaining
    ``OPT``. Proof: seed 003, Theorem 3 (the numerator holds at most ``|O|`` terms ``<=
    exp(eps c' / (c Delta))``, the denominator at least ``|O*|`` terms equal to
    ``exp(eps OPT / (c Delta))``); seed 002, same theorem. Evaluated in ``arb``.

    Parameters
    ----------
    epsilon : float
        The mechanism's ``epsilon > 0``.
    sensitivity : float
        The score's sensitivity ``Delta > 0``.
    n_candidates : int
        ``|O|``, the number of candidates, at least 1.
    n_optimal : int, default 1
        ``|O*|``, the number of candidates scoring ``OPT``, in ``[1, n_candidates]``.
    t : float or None, default None
        The exponent ``t >= 0`` of the probability ``e^-t``.
    confidence : float or None, default None
        ``1 - e^-t``, in ``(0, 1)``.
    monotonic : bool, default False
        Whether the score is monotonic (``c = 1`` instead of 2).
    loss : float or None, default None
        The shortfall from ``OPT``, ``>= 0``, in score units.

    Returns
    -------
    UtilityBound
        The loss, the probability, ``t`` and the parameters.
    """
    eps = Fraction(check_epsilon(epsilon))
    delta = Fraction(check_scale(sensitivity, "sensitivity", allow_zero=False))
    n, n_opt = _check_counts(n_candidates, n_optimal)
    if not isinstance(monotonic, bool):
        raise ParameterError(f"monotonic must be a bool, got {type(monotonic).__name__}")
    _check_one_given(t, confidence, loss)
    unit = (1 if monotonic else 2) * delta / eps  # the loss per unit of log-probability

    def log_ratio() -> arb:
        return (arb_of(n) / arb_of(n_opt)).log()

    if loss is not None:
        terms = _terms_at_loss(loss, unit, log_ratio)
    else:
        terms = _terms_at_exponent(t, confidence, unit, log_ratio)
    return UtilityBound(
        loss=terms.loss,
        probability=min(1.0, upper_float(evaluate(terms.probability))),
        t=lower_float(evaluate(terms.t)),
        epsilon=float(eps),
        sensitivity=float(delta),
        n_candidates=n,
        n_optimal=n_opt,
        monotonic=monotonic,
    )


def _check_counts(n_candidates: Any, n_optimal: Any) -> tuple[int, int]:
    """``(|O|, |O*|)`` checked: whole numbers, ``1 <= |O*| <= |O|``."""
    n = check_int(n_candidates, "n_candidates", minimum=1)
    n_opt = check_int(n_optimal, "n_optimal", minimum=1)
    if n_opt > n:
        raise ParameterError(f"n_optimal must be at most n_candidates ({n}), got {n_opt}")
    return n, n_opt


def _check_one_given(t: Any, confidence: Any, loss: Any) -> None:
    """Refuse unless exactly one of ``t``, ``confidence`` and ``loss`` is given."""
    given = [
        name for name, v in (("t", t), ("confidence", confidence), ("loss", loss)) if v is not None
    ]
    if len(given) != 1:
        raise ParameterError(f"give exactly one of t, confidence or loss (got {given or 'none'})")


@dataclass(frozen=True)
class _Terms:
    """The theorem's terms in one direction: ``t`` and ``e^-t`` as ``arb`` expressions (for
    :func:`~dpselect.core.intervals.evaluate`) and the loss, rounded up."""

    t: Callable[[], arb]
    probability: Callable[[], arb]
    loss: float


def _terms_at_loss(loss: Any, unit: Fraction, log_ratio: Callable[[], arb]) -> _Terms:
    """The terms given the loss: ``t = loss / unit - ln(|O| / |O*|)``, the loss as given."""
    lq = Fraction(check_scale(loss, "loss"))

    def t_of() -> arb:
        return arb_of(lq / unit) - log_ratio()

    def prob_of() -> arb:
        return (-t_of()).exp()

    return _Terms(t=t_of, probability=prob_of, loss=float_up(lq))


def _terms_at_exponent(
    t: Any, confidence: Any, unit: Fraction, log_ratio: Callable[[], arb]
) -> _Terms:
    """The terms given ``t`` or the confidence ``1 - e^-t``: ``loss = unit (ln(|O| / |O*|) +
    t)``, rounded up."""
    if t is not None:
        tq = Fraction(check_scale(t, "t"))

        def t_of() -> arb:
            return arb_of(tq)

        def prob_of() -> arb:
            return (-arb_of(tq)).exp()

    else:
        c = _number(confidence, "confidence")
        if not 0 < c < 1:
            raise ParameterError(f"confidence must be in (0, 1), got {confidence!r}")

        def t_of() -> arb:
            return -(1 - arb_of(c)).log()

        def prob_of() -> arb:
            return 1 - arb_of(c)

    def loss_of() -> arb:
        return arb_of(unit) * (log_ratio() + t_of())

    return _Terms(t=t_of, probability=prob_of, loss=upper_float(evaluate(loss_of)))


def _number(value: Any, name: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)):
        raise ParameterError(f"{name} must be a number, got {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ParameterError(f"{name} must be finite, got {value!r}")
    return Fraction(value)


# ============================================================================ exact laws
def selection_probabilities(scores: Any, scale: Real, noise: str | NoiseFamily = "gumbel") -> F64:
    """``P[argmax_i (s_i / scale + X_i) = i]`` for i.i.d. standard noise ``X_i``, in float64.

    ``noise``:

    - ``"gumbel"``: the exponential mechanism, ``P[i] ∝ exp(s_i / scale)`` (seed 001,
      Theorem 1.1), by a log-sum-exp softmax. Relative error a few ulp.
    - ``"exponential"``: permute-and-flip (McKenna and Sheldon 2020; Ding et al. 2021 show
      report-noisy-max with exponential noise has the same law). With ``p_j = exp((s_j -
      s_max) / scale)``, substituting ``v = exp(-(key - a_max))`` in the integral over the
      winning key gives the exact formula ``P[i] = p_i int_0^1 prod_{j != i} (1 - p_j v) dv``:
      a polynomial integrand of degree ``< n``, integrated *exactly* (up to float rounding)
      by Gauss-Legendre quadrature with ``ceil(n / 2)`` nodes (factors with ``p_j < 2^-60``
      are within ``2^-60`` of 1 and not counted in the degree). Every term is positive, so the
      float error stays relative: about ``n`` ulp. ``O(n^2)`` time.
    - ``"laplace"``: numerical integration of ``P[i] = int H(x) r(x - a_i) dx``, where
      ``a_i = s_i / scale``, ``H = prod_j F(x - a_j)`` is the CDF of the largest key and
      ``r = f / F`` (``f``, ``F``: the standard Laplace density and CDF), over a window
      holding all but ``2 e^-44 ~ 1.6e-19`` of the largest key's mass, split at every
      ``a_j`` (where the integrand has a kink) and into pieces of length ``1/4``, with
      16-point Gauss-Legendre on each smooth piece. Absolute error about ``1e-14`` (checked
      in the tests against adaptive quadrature). ``O(n (n + 400))`` time: about a second
      for a thousand candidates.

    ``scores`` is a non-empty 1-D sequence of finite numbers and ``scale > 0``. Probabilities
    below the float range (about ``1e-308``) underflow to 0.

    Parameters
    ----------
    scores : sequence of float
        One finite score per candidate.
    scale : float
        The noise scale, ``> 0``.
    noise : {"gumbel", "exponential", "laplace"} or NoiseFamily, default "gumbel"
        The noise law.

    Returns
    -------
    ndarray of float64
        ``P[i]`` for every candidate ``i``.
    """
    family = get_family(noise).name
    a = _scaled_gaps(scores, Fraction(check_scale(scale, allow_zero=False)))
    if family == "gumbel":
        return _softmax(a)
    if family == "exponential":
        return _permute_and_flip(a)
    return _laplace_noisy_max(a)


def _scaled_gaps(scores: Any, scale: Fraction) -> F64:
    """``(s_i - max s) / scale`` in float64, the differences taken exactly for integers."""
    if isinstance(scores, (str, bytes)):
        raise ParameterError("scores must be a 1-D sequence of numbers")
    try:
        arr = np.asarray(scores)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"scores cannot be read as a vector: {exc}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ParameterError(f"scores must be a non-empty 1-D sequence, got shape {arr.shape}")
    if arr.dtype.kind in "iuO":
        if arr.dtype.kind == "O" and not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in arr
        ):
            raise ParameterError("scores must be numbers (ints or floats)")
        top = max(int(v) for v in arr)
        return np.array([_float_or_minus_inf(Fraction(int(v) - top) / scale) for v in arr])
    if arr.dtype.kind != "f":
        raise ParameterError(f"scores must be numbers, got dtype {arr.dtype}")
    x = arr.astype(np.float64)
    if not np.isfinite(x).all():
        raise ParameterError("scores must be finite (no NaN or infinity)")
    with np.errstate(over="ignore"):
        gaps: F64 = (x - x.max()) / float(scale)
    return gaps


def _float_or_minus_inf(q: Fraction) -> float:
    """``q <= 0`` as a float; below the float range it is ``-inf`` (its weight is 0 anyway)."""
    try:
        return float(q)
    except OverflowError:
        return -math.inf


def _softmax(a: F64) -> F64:
    w = np.exp(a - a.max())
    out: F64 = w / w.sum()
    return out


@functools.lru_cache(maxsize=16)
def _gauss_legendre(m: int) -> tuple[F64, F64]:
    """Nodes and weights of ``m``-point Gauss-Legendre quadrature on [0, 1].

    Newton's method on the Legendre recurrence from Tricomi's initial guesses (Numerical
    Recipes, ``gauleg``); exact for polynomials of degree ``<= 2m - 1``.
    """
    i = np.arange(1, m + 1, dtype=np.float64)
    x = np.cos(np.pi * (i - 0.25) / (m + 0.5))
    dp = np.ones_like(x)
    for _ in range(100):
        p0, p1 = np.ones_like(x), x.copy()
        for j in range(2, m + 1):
            p0, p1 = p1, ((2 * j - 1) * x * p1 - (j - 1) * p0) / j
        dp = m * (x * p1 - p0) / (x * x - 1) if m > 1 else np.ones_like(x)
        step = p1 / dp
        x = x - step
        if float(np.abs(step).max()) < 1e-15:
            break
    # Weights from the derivative at the converged nodes (one more evaluation).
    p0, p1 = np.ones_like(x), x.copy()
    for j in range(2, m + 1):
        p0, p1 = p1, ((2 * j - 1) * x * p1 - (j - 1) * p0) / j
    dp = m * (x * p1 - p0) / (x * x - 1) if m > 1 else np.ones_like(x)
    w = 2.0 / ((1.0 - x * x) * dp * dp)
    return (1.0 - x) / 2.0, w / 2.0  # map [-1, 1] to [0, 1]; nodes ascending


def _permute_and_flip(a: F64) -> F64:
    p = np.exp(a)  # a <= 0, max 0: p in [0, 1], the top candidate(s) at 1
    n_big = int(np.count_nonzero(p >= 2.0**-60))
    nodes, weights = _gauss_legendre(max(1, (n_big + 2) // 2))
    out = np.zeros_like(p)
    chunk = max(1, (1 << 22) // p.size)
    for start in range(0, nodes.size, chunk):
        v = nodes[start : start + chunk, None]
        log_factors = np.log1p(-p[None, :] * v)  # log(1 - p_j v), finite since v < 1
        total = log_factors.sum(axis=1, keepdims=True)
        others = np.exp(total - log_factors)  # prod over j != i
        out += weights[start : start + chunk] @ others
    result: F64 = p * out
    return result


_LAPLACE_TAIL = 44.0  # mass of the largest key outside the window: below 2 e^-44 ~ 1.6e-19
_PIECE = 0.25
_PIECE_NODES = 16


def _laplace_log_cdf_ratio(y: F64) -> tuple[F64, F64]:
    """``log F(y)`` and ``log(f(y) / F(y))`` for the standard Laplace law."""
    e = np.exp(-np.abs(y))
    neg = y < 0
    log_cdf = np.where(neg, y - math.log(2.0), np.log1p(-0.5 * e))
    log_ratio = np.where(neg, 0.0, -np.abs(y) - np.log(2.0 - e))
    return log_cdf, log_ratio


def _laplace_window(a: F64) -> tuple[float, float]:
    """``[lo, hi]`` with ``P[max key < lo] <= e^-44`` and ``P[max key > hi] <= e^-44``.

    ``P[max < x] = H(x) = prod_j F(x - a_j)``, increasing: ``lo`` is found by bisection on
    ``log H(lo) <= -44`` (it lies within 44 of ``a_max = 0``). ``P[max > x] <= sum_j
    e^-(x - a_j) / 2``, which is ``e^-44`` at ``hi = logsumexp(a) - ln 2 + 44``.
    """

    def log_h(x: float) -> float:
        return float(_laplace_log_cdf_ratio(x - a)[0].sum())

    lo, top = -_LAPLACE_TAIL, 0.0  # log H(-44) <= log F(-44) < -44
    for _ in range(60):
        mid = 0.5 * (lo + top)
        if log_h(mid) <= -_LAPLACE_TAIL:
            lo = mid
        else:
            top = mid
    hi = float(np.log(np.exp(a).sum())) - math.log(2.0) + _LAPLACE_TAIL
    return lo, max(hi, 0.0)


def _laplace_noisy_max(a: F64) -> F64:
    n = a.size
    lo, hi = _laplace_window(a)
    grid = np.arange(lo, hi, _PIECE)
    kinks = a[(a > lo) & (a < hi)]
    edges = np.unique(np.concatenate([grid, kinks, [hi]]))
    nodes, weights = _gauss_legendre(_PIECE_NODES)
    widths = np.diff(edges)
    xs = (edges[:-1, None] + widths[:, None] * nodes[None, :]).ravel()
    ws = (widths[:, None] * weights[None, :]).ravel()
    out = np.zeros(n)
    chunk = max(1, (1 << 21) // n)
    for start in range(0, xs.size, chunk):
        log_cdf, log_ratio = _laplace_log_cdf_ratio(xs[start : start + chunk, None] - a[None, :])
        log_h = log_cdf.sum(axis=1, keepdims=True)
        out += ws[start : start + chunk] @ np.exp(log_h + log_ratio)
    return out


# ============================================================================ seed 002 example
@dataclass(frozen=True)
class HairColourExample:
    """Seed 002's question: with eps = 0.1, how likely is the mechanism not to say 'dark'?"""

    counts: dict[str, int]
    epsilon: float
    bound: UtilityBound
    probabilities: dict[str, float]

    @property
    def p_not_dark(self) -> float:
        """The exact probability of an answer other than 'dark'."""
        return sum(p for colour, p in self.probabilities.items() if colour != "dark")

    def __str__(self) -> str:
        threshold = self.counts["dark"] - self.bound.loss
        return (
            f"counts {self.counts}, eps = {self.epsilon:g}, Delta = 1\n"
            f"  utility theorem: P[score <= {threshold:g}] <= {self.bound.probability:.6f}"
            f" (loss {self.bound.loss:g}; seed 002: 4 e^-5 <= 0.027)\n"
            f"  exact:           P[not 'dark'] = {self.p_not_dark:.6f}"
        )


def hair_colour_example(
    counts: dict[str, int] | None = None, epsilon: Real = Fraction(1, 10)
) -> HairColourExample:
    """Seed 002's hair-colour example, bound and exact probability.

    Four colours, counts as scores (``Delta = 1``), 'dark' first with 500, the runner-up
    'brown' with 400, ``eps = 0.1``. The theorem bounds the probability of a score
    ``<= 400 = 500 - 20 (ln 4 + t)`` by ``e^-t`` with ``t = 5 - ln 4``: ``4 e^-5 <= 0.027``.
    The seed leaves 'blond' and 'red' open (at most 400); the default puts them at 400, the
    worst case, where the exact probability of not answering 'dark' is
    ``3 e^-5 / (1 + 3 e^-5) ~ 0.0198`` (exponential mechanism, weights ``exp(eps s / 2)``).
    ``epsilon`` defaults to exactly 1/10 (the float 0.1 is slightly larger).

    Parameters
    ----------
    counts : dict of str to int or None, default None
        The colour counts, ``'dark'`` among the largest; ``None``: the worst case above.
    epsilon : float, default Fraction(1, 10)
        The mechanism's epsilon.

    Returns
    -------
    HairColourExample
        The counts, epsilon, the theorem's bound and the exact probabilities.
    """
    if counts is None:
        counts = {"dark": 500, "blond": 400, "brown": 400, "red": 400}
    if "dark" not in counts or max(counts.values()) != counts["dark"]:
        raise ParameterError("counts must include 'dark' with the largest count")
    colours = list(counts)
    scores = [counts[c] for c in colours]
    opt = counts["dark"]
    runner_up = max((s for c, s in counts.items() if c != "dark"), default=opt)
    n_opt = sum(1 for s in scores if s == opt)
    bound = utility_bound(epsilon, 1, len(colours), n_optimal=n_opt, loss=Fraction(opt - runner_up))
    probs = selection_probabilities(scores, Fraction(2) / Fraction(epsilon), noise="gumbel")
    return HairColourExample(
        counts=dict(counts),
        epsilon=float(epsilon),
        bound=bound,
        probabilities={c: float(p) for c, p in zip(colours, probs, strict=True)},
    )
