"""Private quantiles and medians with the exponential mechanism (seeds 002, 003; Smith 2011).

**Score.** A quantile level ``q`` is read as the fraction ``a / b`` nearest to it with
``b <= 10^6`` (0.5 is 1/2, 0.9 is 9/10, 0.999 is 999/1000; the fraction used is reported).
The score of a point ``c`` on data ``x`` is the integer

    S(x, c) = -| (b - a) #{i : x_i < c} - a #{i : x_i > c} |,

``b`` times ``-|(1 - q) #below - q #above|`` (OpenDP's quantile score): 0 at an exact
``q``-quantile, more negative the further ``c``'s rank is from ``q n``. Adding or removing
one row moves ``#below`` or ``#above`` (never both) by one, so every score moves by ``b - a``
or ``a``: the sensitivity is ``Delta = max(a, b - a)``. The score is **not monotonic**: a row
added below ``c`` raises ``S`` for the ``c`` just above a too-low rank and lowers it for ``c``
far above the data (the tests find such pairs by brute force), so the mechanism uses
``exp(eps S / (2 Delta))``, the seed's general form.

**With candidates** (``quantile(..., candidates=[...])``): the exponential mechanism over the
public candidate list with this score (:func:`make_exponential_mechanism`, exact Gumbel
engine). ``eps``-DP under adding or removing a row.

**With bounds** ``(lo, hi)`` and no candidates: the continuous exponential mechanism (Smith
2011) with the same score over every real ``c`` in ``[lo, hi]``: the density is proportional
to ``exp(eps S(x, c) / (2 Delta))``. The data are clamped to ``[lo, hi]`` (a row-by-row map,
so neighbours stay neighbours) and sorted, ``z_0 = lo <= z_1 <= ... <= z_n <= z_{n+1} = hi``.
On the open interval ``(z_i, z_{i+1})`` exactly ``i`` points lie below and ``n - i`` above,
so the density is constant there. Sampling is therefore: pick interval ``i`` with probability
proportional to ``len_i exp(eps S_i / (2 Delta))``, then a uniform point in it.

- *The interval* is picked by the exact Gumbel engine (:func:`noisy_argmax`) on integer shifts
  ``m_i ~ 2^40 (max(eps' S_i / (2 Delta), -2^22) + ln len_i)`` with scale ``2^40``:
  ``P[i] ∝ exp(m_i / 2^40)``. ``ln len_i`` is irrational: it is computed as an arb ball and
  rounded to the nearest multiple of ``2^-40``, as is the rational score term, so
  ``|m_i / 2^40 - (ideal)| <= ROUNDING_ERROR = 2^-39`` for every interval of every dataset (a
  data-independent bound; zero-length intervals have probability 0 and are left out). The
  floor ``-2^22`` on the score term is a 1-Lipschitz map of the score (sensitivity unchanged)
  that keeps ``|m_i| < 2^63``; it only touches intervals weighing less than ``e^-4000000``
  relative to the best.
- *Privacy loss with rounding.* Write the sampled density as ``exp(eps' S(x, c) / (2 Delta) +
  r_x(c)) / Z(x)`` with ``|r_x(c)| <= eta = 2^-39``. For neighbours ``x, x'`` the numerator
  ratio is at most ``exp(eps' / 2 + 2 eta)`` and so is ``Z(x') / Z(x)``: the loss is ``eps' +
  4 eta``. The mechanism runs at ``eps' = eps - ROUNDING_LOSS`` with ``ROUNDING_LOSS = 4 eta =
  2^-37`` (about ``7.3e-12``), so the total loss is exactly the ``eps`` asked for.
- *The point* is an exact uniform real ``X = z_i + U (z_{i+1} - z_i)``, ``U`` a lazily sampled
  uniform (:class:`LazyUniform`, bits from the source), released as the largest float ``<=
  X``: digits of ``U`` are read until the dyadic interval holding ``U`` maps into one float
  cell. Rounding down is post-processing, so the float released is exactly as private as
  ``X``.

**Several quantiles** are released by basic composition (seed 002): each of the ``m`` levels
gets ``eps / m``, stated in the result.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any

import flint
import numpy as np
import numpy.typing as npt

from ..core.arithmetic import float_down, float_up
from ..core.domains import AnyDomain
from ..core.errors import ParameterError
from ..core.measurement import Measurement
from ..core.measures import MaxDivergence
from ..core.metrics import SymmetricDistance
from ..data.candidates import load_candidates
from ..data.tables import open_table
from ..mechanisms.exponential import make_exponential_mechanism
from ..mechanisms.utility import utility_bound
from ..mechanisms.validate import check_epsilon
from ..sampling.noisy_max import noisy_argmax
from ..sampling.source import RandomSource, resolve_source
from ..sampling.uniform import LazyUniform
from ._common import (
    CONFIDENCE,
    charge_then_release,
    check_confidence,
    column_values,
    jsonable,
    numeric_column,
    open_ledger,
)

__all__ = [
    "MAX_DENOMINATOR",
    "ROUNDING_BITS",
    "ROUNDING_ERROR",
    "ROUNDING_LOSS",
    "QuantileResult",
    "make_candidate_quantile",
    "make_continuous_quantile",
    "quantile",
    "quantile_fraction",
    "quantile_scores",
    "uniform_float",
]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

#: The largest denominator of the fraction a / b standing for a quantile level q.
MAX_DENOMINATOR = 10**6
#: Shifts are integers in units of 2^-ROUNDING_BITS.
ROUNDING_BITS = 40
#: Bound on |shift / 2^40 - (score term + ln length)| for every interval: two roundings to
#: the nearest multiple of 2^-40 (at most 2^-41 each) plus the arb radius (below 2^-60),
#: generously rounded up to 2^-39.
ROUNDING_ERROR = Fraction(1, 2 ** (ROUNDING_BITS - 1))
#: What the rounding adds to the privacy loss: 4 eta (module docstring).
ROUNDING_LOSS = 4 * ROUNDING_ERROR
#: Floor of the score term eps' S / (2 Delta): keeps |shift| < 2^63.
SCORE_FLOOR = 2**22
_SCALE = Fraction(2**ROUNDING_BITS)
_PREC = 128
_TWO_40 = flint.arb(2**ROUNDING_BITS)
_HALF = flint.arb(0.5)
_TINY = flint.arb(2.0**-60)


# ----------------------------------------------------------------------------- the score
def quantile_fraction(q: Any) -> Fraction:
    """The fraction ``a / b`` standing for the level ``q`` (nearest with ``b <= 10^6``)."""
    if isinstance(q, bool) or not isinstance(q, (int, float, Fraction, np.floating)):
        raise ParameterError(f"q must be a number in [0, 1], got {type(q).__name__}")
    if isinstance(q, (float, np.floating)) and not math.isfinite(float(q)):
        raise ParameterError(f"q must be a number in [0, 1], got {q!r}")
    value = Fraction(q) if isinstance(q, (int, Fraction)) else Fraction(float(q))
    if not 0 <= value <= 1:
        raise ParameterError(f"q must be in [0, 1], got {q!r}")
    return value.limit_denominator(MAX_DENOMINATOR)


def score_sensitivity(level: Fraction) -> int:
    """``Delta = max(a, b - a)`` for ``q = a / b``: the integer score's sensitivity."""
    a, b = level.numerator, level.denominator
    return max(a, b - a)


def quantile_scores(values: Any, candidates: Any, q: Any) -> list[int]:
    """The integer scores ``-|(b - a) #{x < c} - a #{x > c}|`` of each candidate ``c``.

    ``values`` are the data (NaN rows dropped), ``candidates`` numbers. Sensitivity
    ``max(a, b - a)`` under adding or removing one value (module docstring).
    """
    level = quantile_fraction(q)
    a, b = level.numerator, level.denominator
    data = np.sort(np.asarray(values, dtype=np.float64))
    data = data[~np.isnan(data)]
    cands = np.asarray([float(c) for c in candidates], dtype=np.float64)
    n = data.shape[0]
    below = np.searchsorted(data, cands, side="left")
    above = n - np.searchsorted(data, cands, side="right")
    return [-abs((b - a) * int(lt) - a * int(gt)) for lt, gt in zip(below, above, strict=True)]


def _numeric_candidates(candidates: Any) -> list[float]:
    values = load_candidates(candidates)
    out: list[float] = []
    for v in values:
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise ParameterError(f"candidates must be numbers, got {v!r}") from None
        if not math.isfinite(f):
            raise ParameterError(f"candidates must be finite numbers, got {v!r}")
        out.append(f)
    if len(set(out)) != len(out):
        raise ParameterError("candidates must be distinct numbers")
    return out


# ----------------------------------------------------------------------------- mechanisms
def make_candidate_quantile(
    candidates: Sequence[float],
    q: Any,
    epsilon: Any,
    *,
    source: RandomSource | None = None,
) -> Measurement:
    """The exponential mechanism over public ``candidates`` with the quantile score.

    Input: a 1-D array of values (NaN dropped); output: one of the candidates. Privacy map
    (``SymmetricDistance`` to ``MaxDivergence``): ``d_in * 2 Delta / scale <= d_in * eps``
    (:func:`make_exponential_mechanism`, not monotonic).
    """
    level = quantile_fraction(q)
    cands = [float(c) for c in candidates]
    exp_mech = make_exponential_mechanism(
        list(range(len(cands))),
        lambda scores, i: scores[i],
        score_sensitivity(level),
        epsilon=epsilon,
        monotonic=False,
        source=source,
    )

    def function(values: Any) -> float:
        return cands[int(exp_mech(quantile_scores(values, cands, level)))]

    return Measurement(
        input_domain=AnyDomain("1-D arrays of numbers"),
        input_metric=exp_mech.input_metric,
        output_measure=exp_mech.output_measure,
        function=function,
        privacy_map=exp_mech.map,
    )


def _exact_differences(left: F64, right: F64) -> tuple[F64, npt.NDArray[np.bool_]]:
    """``right - left`` in float64 and whether each difference is exact (Knuth's TwoSum)."""
    with np.errstate(over="ignore", invalid="ignore"):
        s = right - left
        a_back = s + left
        b_back = s - a_back
        err = (right - a_back) + (-left - b_back)
    exact = np.isfinite(s) & (err == 0)
    return s, exact


def _log_units(length: Any, cache: dict[Any, int]) -> int:
    """``ln(length) * 2^40`` rounded to the nearest integer, from an arb ball.

    ``length`` is an exact float, or a pair of floats ``(left, right)`` subtracted in arb.
    Call inside ``flint.ctx.workprec(128)``: the ball's radius is then below ``2^-60``
    (checked), so the integer is within ``1/2 + 2^-60`` of the ideal value.
    """
    units = cache.get(length)
    if units is not None:
        return units
    if isinstance(length, tuple):
        arg = flint.arb(length[1]) - flint.arb(length[0])
    else:
        arg = flint.arb(length)
    ball = arg.log() * _TWO_40
    nearest = (ball.mid() + _HALF).floor().unique_fmpz()
    assert nearest is not None  # the floor of an exact ball is an exact integer
    units = int(nearest)
    if not ball.rad() < _TINY:  # pragma: no cover - 128 bits suffice for |ln| < 745
        raise ArithmeticError(f"the log-length ball {ball} is too wide")
    cache[length] = units
    return units


def interval_shifts(
    z: F64, lo: float, hi: float, level: Fraction, eps_mech: Fraction
) -> tuple[I64, I64]:
    """Positive-length intervals of ``[lo, z_1, ..., z_n, hi]`` and their integer shifts.

    ``z`` is the sorted clamped data. Returns ``(index, shifts)``: interval ``index[j]`` (the
    number of data points below it) has shift ``m_j`` with ``|m_j / 2^40 - (max(eps' S /
    (2 Delta), -2^22) + ln len)| <= 2^-40 + 2^-60 < ROUNDING_ERROR``: the score term is
    rounded exactly to the nearest multiple of ``2^-40`` (error ``<= 2^-41``), the log-length
    from an arb ball (error ``<= 2^-41 + 2^-60``).
    """
    a, b = level.numerator, level.denominator
    n = z.shape[0]
    edges = np.concatenate(([lo], z, [hi]))
    positive = np.flatnonzero(edges[1:] > edges[:-1])
    left, right = edges[positive], edges[positive + 1]
    lengths, exact = _exact_differences(left, right)
    unit = eps_mech / (2 * score_sensitivity(level))  # eps' / (2 Delta) = p / r
    p, r = unit.numerator, unit.denominator
    floor_units = SCORE_FLOOR << ROUNDING_BITS
    cache: dict[Any, int] = {}
    out: list[int] = []
    floor_num = SCORE_FLOOR * r
    with flint.ctx.workprec(_PREC):
        for i, length, ok, x0, x1 in zip(
            positive.tolist(),
            lengths.tolist(),
            exact.tolist(),
            left.tolist(),
            right.tolist(),
            strict=True,
        ):
            pg = p * abs(b * i - a * n)  # eps' (-S_i) / (2 Delta) = pg / r
            if pg >= floor_num:
                score_units = floor_units
            else:
                score_units = ((pg << (ROUNDING_BITS + 1)) + r) // (2 * r)
            out.append(_log_units(length if ok else (x0, x1), cache) - score_units)
    shifts = np.asarray(out, dtype=np.int64)
    return positive.astype(np.int64), shifts


def uniform_float(left: float, right: float, source: RandomSource | None = None) -> float:
    """The largest float ``<= X`` for ``X`` an exact uniform real on ``[left, right]``.

    ``X = left + U (right - left)`` with ``U`` a :class:`LazyUniform`: 64 binary digits first,
    64 more whenever the dyadic interval holding ``U`` maps across a float boundary.
    """
    src = resolve_source(source)
    lo_q, width = Fraction(left), Fraction(right) - Fraction(left)
    if width <= 0:
        return float(left)
    u = LazyUniform.sample(src)
    while True:
        denom = 1 << u.nbits
        x_lo = lo_q + width * Fraction(u.prefix, denom)
        x_hi = lo_q + width * Fraction(u.prefix + 1, denom)
        f = float_down(x_lo)
        if Fraction(math.nextafter(f, math.inf)) >= x_hi:
            return f
        u.refine(src)


def make_continuous_quantile(
    bounds: tuple[float, float],
    q: Any,
    epsilon: Any,
    *,
    source: RandomSource | None = None,
) -> Measurement:
    """The continuous exponential mechanism for the ``q``-quantile on ``[lo, hi]`` (Smith 2011).

    Input: a 1-D array of values (NaN dropped, the rest clamped to the bounds); output: a
    float in ``[lo, hi)``. Privacy map (``SymmetricDistance`` to ``MaxDivergence``): ``d_in *
    eps``, where ``eps = eps' + ROUNDING_LOSS`` includes the rounding of the log-lengths
    (module docstring). ``epsilon`` must exceed ``2 * ROUNDING_LOSS``.
    """
    lo, hi = check_bounds(bounds)
    level = quantile_fraction(q)
    eps = Fraction(check_epsilon(epsilon))
    if eps <= 2 * ROUNDING_LOSS:
        raise ParameterError(f"epsilon must exceed {float(2 * ROUNDING_LOSS):.3g}, got {epsilon}")
    eps_mech = eps - ROUNDING_LOSS

    def function(values: Any) -> float:
        data = np.asarray(values, dtype=np.float64).ravel()
        z = np.sort(np.clip(data[~np.isnan(data)], lo, hi))
        index, shifts = interval_shifts(z, lo, hi, level, eps_mech)
        pick = int(index[noisy_argmax(shifts, _SCALE, "gumbel", source)])
        edges = (lo if pick == 0 else float(z[pick - 1]), hi if pick == z.shape[0] else z[pick])
        return uniform_float(float(edges[0]), float(edges[1]), source)

    def privacy_map(d_in: Any) -> float:
        SymmetricDistance().validate(d_in)
        return float_up(d_in * eps)

    return Measurement(
        input_domain=AnyDomain("1-D arrays of numbers"),
        input_metric=SymmetricDistance(),
        output_measure=MaxDivergence(),
        function=function,
        privacy_map=privacy_map,
    )


def check_bounds(bounds: Any) -> tuple[float, float]:
    """``(lo, hi)``: two finite numbers with ``lo < hi``."""
    if isinstance(bounds, (str, bytes)) or not isinstance(bounds, Sequence) or len(bounds) != 2:
        raise ParameterError(f"bounds must be a pair (lo, hi), got {bounds!r}")
    out = []
    for v in bounds:
        if isinstance(v, bool) or not isinstance(v, (int, float, Fraction, np.number)):
            raise ParameterError(f"bounds must be numbers, got {v!r}")
        f = float(v)
        if not math.isfinite(f):
            raise ParameterError(f"bounds must be finite, got {v!r}")
        out.append(f)
    if not out[0] < out[1]:
        raise ParameterError(f"bounds must satisfy lo < hi, got {bounds!r}")
    return out[0], out[1]


# ----------------------------------------------------------------------------- the recipe
@dataclass(frozen=True)
class QuantileResult:
    """Private quantiles: the values released, what they cost, how accurate they are."""

    q: list[float]
    values: list[float]
    method: str
    epsilon: float
    epsilon_each: float
    budget_split: str
    accuracy: list[str]
    levels: list[str]
    rounding_loss: float | None = None
    ledger: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        out = asdict(self)
        out["values"] = [jsonable(v) for v in self.values]
        return out

    def __str__(self) -> str:
        lines = [f"q = {q:g}: {v:.6g}" for q, v in zip(self.q, self.values, strict=True)]
        lines.append(f"mechanism: {self.method}")
        lines.append(f"privacy cost: epsilon = {self.epsilon:.6g} ({self.budget_split})")
        if self.rounding_loss is not None:
            lines.append(
                f"  of which {self.rounding_loss:.3g} per quantile pays for rounding the "
                "log-lengths"
            )
        lines.extend(self.accuracy)
        return "\n".join(lines)


def _levels(q: Any) -> tuple[list[float], list[Fraction]]:
    qs: list[Any] = list(q) if isinstance(q, (list, tuple)) else [q]
    if not qs:
        raise ParameterError("q must be a number in [0, 1] or a non-empty list of them")
    levels = [quantile_fraction(v) for v in qs]
    return [float(v) for v in qs], levels


def _candidate_accuracy(level: Fraction, eps: Fraction, m: int, confidence: float) -> str:
    delta = score_sensitivity(level)
    bound = utility_bound(eps, delta, m, confidence=confidence)
    rank = bound.loss / level.denominator
    return (
        f"accuracy (q = {float(level):g}): with probability at least {confidence:.0%}, the "
        f"chosen candidate's rank error |(1-q)#below - q#above| is within {rank:.4g} of the "
        f"best candidate's (utility theorem, seed 002, {m} candidates)"
    )


def _continuous_accuracy(
    level: Fraction, eps: Fraction, lo: float, hi: float, confidence: float
) -> str:
    delta = Fraction(score_sensitivity(level), level.denominator)
    t = -math.log(1 - confidence)
    unit = float_up(2 * delta / (eps - ROUNDING_LOSS))  # the mechanism runs at eps - 2^-37
    example = unit * (math.log(1000) + t)
    return (
        f"accuracy (q = {float(level):g}): with probability at least {confidence:.0%}, the "
        f"released value's rank error |(1-q)#below - q#above| is at most {unit:.4g} * "
        f"(ln((hi - lo) / w) + {t:.3g}), w the width of the data gap holding the exact "
        f"quantile (not released); e.g. {example:.4g} when w >= (hi - lo) / 1000 "
        "(utility theorem over [lo, hi], Smith 2011)"
    )


def quantile(
    data: Any,
    column: str,
    q: float | Sequence[float],
    epsilon: float,
    bounds: tuple[float, float] | None = None,
    candidates: Any = None,
    confidence: float = CONFIDENCE,
    ledger: Any = None,
    source: RandomSource | None = None,
) -> QuantileResult:
    """The ``q``-quantile(s) of a numeric ``column``, privately (``q = 0.5``: the median).

    Give ``candidates`` (a public list or a text file of numbers: the exponential mechanism
    over them) or ``bounds=(lo, hi)`` (the continuous exponential mechanism, Smith 2011; data
    clamped to the bounds). ``q`` may be a list: each level gets ``epsilon / len(q)`` (basic
    composition). ``epsilon`` is the total pure-DP cost under adding or removing one row; the
    ledger is charged durably before the data are read. Rows with NULL or NaN are dropped.
    ``source`` is for tests and demos only. See the module docstring for the score, its
    sensitivity and the proofs.
    """
    eps = Fraction(check_epsilon(epsilon))
    given, levels = _levels(q)
    conf = check_confidence(confidence)
    if (bounds is None) == (candidates is None):
        raise ParameterError(
            "give exactly one of bounds=(lo, hi) (continuous mechanism) and candidates "
            "(a public list of numbers)"
        )
    each = eps / len(levels)
    cands = _numeric_candidates(candidates) if candidates is not None else None
    lo_hi = check_bounds(bounds) if bounds is not None else None
    if cands is not None:
        measurements = [make_candidate_quantile(cands, lv, each, source=source) for lv in levels]
        method = f"exponential mechanism over {len(cands)} public candidates"
        accuracy = [_candidate_accuracy(lv, each, len(cands), conf) for lv in levels]
        rounding: float | None = None
    else:
        assert lo_hi is not None
        measurements = [make_continuous_quantile(lo_hi, lv, each, source=source) for lv in levels]
        method = f"continuous exponential mechanism on [{lo_hi[0]:g}, {lo_hi[1]:g}] (Smith 2011)"
        accuracy = [_continuous_accuracy(lv, each, lo_hi[0], lo_hi[1], conf) for lv in levels]
        rounding = float_up(ROUNDING_LOSS)
    table = open_table(data)
    numeric_column(table, column)
    book = open_ledger(ledger)
    split = (
        "one quantile"
        if len(levels) == 1
        else f"basic composition: epsilon / {len(levels)} = {float(each):.6g} per quantile"
    )
    parameters = {
        "column": column,
        "q": [float(lv) for lv in levels],
        "epsilon": float(eps),
        "bounds": list(lo_hi) if lo_hi is not None else None,
        "n_candidates": None if cands is None else len(cands),
    }

    def release() -> QuantileResult:
        values = column_values(table, column)
        return QuantileResult(
            q=given,
            values=[float(m(values)) for m in measurements],
            method=method,
            epsilon=float(eps),
            epsilon_each=float(each),
            budget_split=split,
            accuracy=accuracy,
            levels=[f"{lv.numerator}/{lv.denominator}" for lv in levels],
            rounding_loss=rounding,
            ledger=None if book is None else book.path,
            parameters=parameters,
        )

    return charge_then_release(book, release, float(eps), "quantile", parameters)
