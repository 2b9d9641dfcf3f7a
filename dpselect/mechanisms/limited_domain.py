"""The limited-domain top-k mechanism of Durfee and Rogers (2019), for items that are not public.

Durfee and Rogers, "Practical differentially private top-k selection with pay-what-you-get
composition", NeurIPS 2019 (DR19), Algorithm 1. The input is a histogram ``{item: count}``
built from the data: the items themselves are private, so no public candidate list exists. The
mechanism only looks at the true top ``k_bar`` counts ``h_(1) >= ... >= h_(k_bar)`` and at the
next count ``h_(k_bar + 1)``:

1. ``h_bot = h_(k_bar+1) + 1 + ln(min(Delta, k_bar) / delta) / epsilon`` (a constant above the
   ``(k_bar+1)``-th count; ``Delta`` is the number of counts one user can change, the l0
   sensitivity, unrestricted by default).
2. ``v_i = h_(i) + Gumbel(1/epsilon)`` for ``i <= k_bar`` and ``v_bot = h_bot + Gumbel(1/epsilon)``.
3. Release the items in decreasing order of ``v_i`` until ``k`` items are out or ``v_bot``
   comes first (the mechanism outputs "bottom" and stops early).

The guarantee (DR19, Theorem 1): for neighbours whose counts each move by at most 1, all in the
same direction (add/remove one user), at most ``Delta`` of them, and for any ``delta' >= 0``,
the mechanism is ``(epsilon*, delta + delta')``-DP with

    epsilon* = min{ k epsilon,
                    k epsilon (e^epsilon - 1) / (e^epsilon + 1) + epsilon sqrt(2 k ln(1/delta')),
                    k epsilon^2 / 2 + epsilon sqrt(k ln(1/delta') / 2) }

(the last two only for ``delta' > 0``). The proof composes the ``k`` peeling rounds as ``k``
adaptive ``epsilon``-bounded-range mechanisms (outside the threshold's bad event), so any valid
bound for that composition may replace ``epsilon*``: by default the map takes the least of the
three terms above and :func:`~dpselect.accounting.best_epsilon` on ``k`` bounded-range losses
(Renyi composition of the exact bounded-range curves, Cesar and Rogers 2021, with the CKS
conversion; zCDP ``epsilon^2 / 8`` per round; KOV), every candidate rounded up
(:func:`limited_domain_accounting`). ``accounting="dr19"`` keeps the three closed forms only.
Why the threshold: an item in the top ``k_bar`` of one
neighbour but not of the other has a count at most ``h_(k_bar+1) + 1``, so it beats ``v_bot``
with probability at most ``delta / min(Delta, k_bar)``; at most ``min(Delta, k_bar)`` such
items exist. The ranking of the top ``k_bar`` and bottom is one-shot Gumbel, i.e. peeling
exponential mechanisms (seed 004, Theorem 1), which the three composition bounds cover.

**Rows per value** (``max_rows_per_value = r``): when one user moves each count by at most
``r`` (L-infinity ``r``), the mechanism runs with Gumbel scale ``r / epsilon`` and the
threshold ``r (1 + ln(min(Delta, k_bar) / delta) / epsilon)`` (rounded up). Its ranking is
then exactly the one of the mechanism above on the counts divided by ``r`` (every key and the
threshold scaled by ``r``), counts that move by at most 1 per user: the same theorem, the same
``(epsilon*, delta + delta')`` at ``d_in <= r``.

Implementation notes:

- The ranking is exact (:func:`~dpselect.sampling.noisy_top_k` with Gumbel noise on the
  ``k_bar + 1`` shifted values ``h_(i) - h_(k_bar+1)`` and ``h_bot - h_(k_bar+1)``; subtracting
  a common value leaves the ranking unchanged). ``ln(min(Delta, k_bar)/delta) / epsilon`` is
  rounded *up* to a float: a higher threshold only lowers the probability of the bad event.
- Ties in counts are broken by a fixed order of the items (the items themselves when they are
  mutually comparable, else their type name and ``repr``); the proof only uses counts.
- Items with count 0 are dropped (they are the same as absent items). When fewer than
  ``k_bar`` items remain, the top ``k_bar`` is completed with phantom items of count 0 that no
  dataset can contain (and ``h_(k_bar+1) = 0``); an output that reaches a phantom stops there,
  like bottom. Both are post-processing of DR19's output on the universe extended with
  phantoms ordered before every real zero-count item.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np
from flint import arb

from ..accounting.best import MechanismLoss, best_epsilon
from ..core.arithmetic import float_down, float_up
from ..core.domains import Domain
from ..core.errors import DomainError, MetricError, ParameterError, PrivacyMapError
from ..core.intervals import arb_of, evaluate, upper_float
from ..core.measurement import Measurement
from ..core.measures import Approximate, MaxDivergence
from ..core.metrics import LInfDistance
from ..sampling.noisy_max import noisy_top_k
from ..sampling.source import RandomSource
from .validate import check_delta, check_epsilon, check_int

__all__ = [
    "HistogramDomain",
    "limited_domain_accounting",
    "limited_domain_epsilon",
    "limited_domain_threshold",
    "make_limited_domain_top_k",
]

#: Counts above 2^53 are not float64-exact; the domain stops there.
MAX_COUNT = 1 << 53


@dataclass(frozen=True)
class HistogramDomain(Domain):
    """Mappings ``{item: count}``: hashable items, integer counts in ``[0, 2^53]``."""

    def member(self, x: Any) -> bool:
        """Whether ``x`` is a histogram of this domain.

        Parameters
        ----------
        x : object
            The candidate input.

        Returns
        -------
        bool
            ``True`` when ``x`` is a mapping with hashable items and integer counts (not
            ``bool``) in ``[0, 2^53]``.
        """
        if not isinstance(x, Mapping):
            return False
        for item, count in x.items():
            if not isinstance(item, Hashable):
                return False
            if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, np.integer)):
                return False
            if not 0 <= count <= MAX_COUNT:
                return False
        return True

    def __repr__(self) -> str:
        return "HistogramDomain()"


def limited_domain_threshold(epsilon: Any, delta: Any, k_bar: int, l0: int | None) -> float:
    """``1 + ln(min(Delta, k_bar) / delta) / epsilon``, rounded up: ``h_bot - h_(k_bar+1)``.

    Parameters
    ----------
    epsilon : float
        The per-round ``epsilon > 0``.
    delta : float
        The threshold's ``delta``, in ``(0, 1)``.
    k_bar : int
        How many of the true top counts the mechanism looks at.
    l0 : int or None
        ``Delta``, the most counts one user changes (``max_contributions``); ``None``:
        unrestricted (``k_bar`` is used).

    Returns
    -------
    float
        ``h_bot - h_(k_bar+1)``, in counts.
    """
    m = k_bar if l0 is None else min(l0, k_bar)
    eps, dlt = Fraction(epsilon), Fraction(delta)
    return upper_float(evaluate(lambda: 1 + (arb(m) / arb_of(dlt)).log() / arb_of(eps)))


def _kov_term(eps: Fraction, k: int, delta_prime: Fraction) -> arb:
    """``k eps (e^eps - 1) / (e^eps + 1) + eps sqrt(2 k ln(1/delta'))`` (KOV 2015, Thm 3.5)."""
    e = arb_of(eps)
    return k * e * e.expm1() / (e.exp() + 1) + e * (2 * k * (1 / arb_of(delta_prime)).log()).sqrt()


def _bounded_range_term(eps: Fraction, k: int, delta_prime: Fraction) -> arb:
    """``k eps^2 / 2 + eps sqrt(k ln(1/delta') / 2)`` (DR19's bounded-range composition)."""
    e = arb_of(eps)
    return k * e * e / 2 + e * (arb(k) * (1 / arb_of(delta_prime)).log() / 2).sqrt()


def limited_domain_epsilon(epsilon: Any, k: int, delta_prime: Any) -> float:
    """DR19 Theorem 1's ``epsilon*`` (module docstring), each term rounded up, the least kept.

    Parameters
    ----------
    epsilon : float
        The per-round ``epsilon > 0``.
    k : int
        The number of rounds (items released at most).
    delta_prime : float
        The composition slack ``delta'``, in ``[0, 1)`` (0: ``k epsilon``).

    Returns
    -------
    float
        ``epsilon*``.
    """
    eps, dp = Fraction(epsilon), Fraction(delta_prime)
    best = float_up(k * eps)
    if dp > 0:
        for term in (_kov_term, _bounded_range_term):
            best = min(best, upper_float(evaluate(functools.partial(term, eps, k, dp))))
    return best


#: The theorem name reported when DR19's closed forms are the least bound.
DR19_THEOREM = "Durfee and Rogers 2019, Theorem 1 (closed forms)"

LimitedDomainAccounting = Literal["tightest", "dr19"]


def limited_domain_accounting(
    epsilon: Any, k: int, delta_prime: Any, accounting: LimitedDomainAccounting = "tightest"
) -> tuple[float, str]:
    """``epsilon*`` of DR19 Theorem 1 for ``k`` rounds at per-round ``epsilon`` and slack
    ``delta'``, and the theorem that gave it.

    ``"dr19"``: :func:`limited_domain_epsilon` (the paper's three closed forms). ``"tightest"``
    (default): the least of those and :func:`~dpselect.accounting.best_epsilon` on ``k``
    bounded-range losses at ``delta'`` (adaptive theorems for ``k > 1``; for ``k = 1`` also
    the optimal bounded-range profile of Dong, Durfee and Rogers 2020, Theorem 3). Valid
    because DR19's proof of Theorem 1 uses only that the ranking is ``k`` adaptive
    ``epsilon``-bounded-range rounds, for which each of these theorems is a valid bound.
    Every candidate is rounded up, so the least is an upper bound (never under-states).

    Parameters
    ----------
    epsilon : float
        The per-round ``epsilon > 0``.
    k : int
        The number of rounds (items released at most).
    delta_prime : float
        The composition slack ``delta'``, in ``[0, 1)`` (0: the closed forms, ``k epsilon``).
    accounting : {"tightest", "dr19"}, default "tightest"
        Which bounds are tried.

    Returns
    -------
    tuple of (float, str)
        ``epsilon*`` and the name of the theorem that gave it.
    """
    if accounting not in ("tightest", "dr19"):
        raise ParameterError(f"accounting must be 'tightest' or 'dr19', got {accounting!r}")
    closed = limited_domain_epsilon(epsilon, k, delta_prime)
    if accounting == "dr19" or Fraction(delta_prime) == 0:
        return closed, DR19_THEOREM
    # per-round epsilon rounded up, slack rounded down: both make the bound larger
    per_round = float_up(Fraction(epsilon))
    slack = float_down(Fraction(delta_prime))
    if slack <= 0:
        return closed, DR19_THEOREM
    composed = best_epsilon([MechanismLoss.bounded_range(per_round)] * k, slack, adaptive=k > 1)
    if composed.epsilon < closed:
        return float(composed.epsilon), composed.theorem
    return closed, DR19_THEOREM


def _order_key(item: Any) -> tuple[str, str]:
    return (type(item).__qualname__, repr(item))


def _ranked(histogram: Mapping[Any, Any]) -> list[tuple[Any, int]]:
    """Items with a positive count, by count descending, ties in a fixed item order."""
    pairs = [(item, int(count)) for item, count in histogram.items() if count > 0]
    try:
        pairs.sort(key=lambda p: p[0])
    except TypeError:  # items of mixed types: a fixed order that needs no comparison of items
        pairs.sort(key=lambda p: _order_key(p[0]))
    pairs.sort(key=lambda p: p[1], reverse=True)  # stable: ties keep the item order
    return pairs


def _limited_metric(input_metric: Any) -> LInfDistance:
    """``LInfDistance(monotonic=True)`` (the default), the only metric DR19's theorem covers."""
    metric = LInfDistance(monotonic=True) if input_metric is None else input_metric
    if type(metric) is not LInfDistance or not metric.monotonic:
        raise MetricError(
            "input_metric must be LInfDistance(monotonic=True): DR19's threshold and per-round "
            f"epsilon are proven for add/remove neighbours; got {metric!r}"
        )
    return metric


def _scaled_threshold(
    eps: Fraction, dlt: Fraction, k_bar: int, max_contributions: int | None, r: int
) -> float:
    """The threshold ``h_bot`` for ``r = 1`` times ``r`` (rounded up), refused if infinite."""
    bottom = limited_domain_threshold(eps, dlt, k_bar, max_contributions)
    if r > 1:  # rounded up: a higher threshold only lowers the bad event's probability
        bottom = float_up(r * Fraction(bottom))
    if not math.isfinite(bottom):
        raise ParameterError("ln(min(Delta, k_bar) / delta) / epsilon overflows a float")
    return bottom


@dataclass(frozen=True)
class _LimitedDomainRelease:
    """The function of :func:`make_limited_domain_top_k`: the top ``k_bar`` counts shifted by
    the ``(k_bar + 1)``-th, the threshold ``bottom`` last, Gumbel noise, stop at the first
    position that is not a true item."""

    domain: HistogramDomain
    k: int
    k_bar: int
    bottom: float
    gumbel_scale: Fraction
    source: RandomSource | None

    def __call__(self, histogram: Any) -> list[Any]:
        """At most ``k`` items of ``histogram``, best first."""
        if not self.domain.member(histogram):
            raise DomainError(
                "the input must be a mapping {item: count} with hashable items and integer "
                "counts in [0, 2^53]"
            )
        k_bar = self.k_bar
        ranked = _ranked(histogram)
        top = ranked[:k_bar]
        base = ranked[k_bar][1] if len(ranked) > k_bar else 0
        shifts = np.empty(k_bar + 1, dtype=np.float64)
        shifts[: len(top)] = [count - base for _, count in top]  # exact: |count| <= 2^53
        shifts[len(top) : k_bar] = -base  # phantoms (only when base == 0)
        shifts[k_bar] = self.bottom
        out: list[Any] = []
        for position in noisy_top_k(
            shifts, self.gumbel_scale, self.k, noise="gumbel", source=self.source
        ):
            if position >= len(top):  # bottom, or a phantom: stop
                break
            out.append(top[position][0])
        return out


@dataclass(frozen=True)
class _LimitedDomainLoss:
    """The map of :func:`make_limited_domain_top_k` (DR19, Theorem 1), up to ``d_in = r``."""

    r: int
    epsilon_star: float
    delta_star: float

    def __call__(self, d_in: Any) -> tuple[float, float]:
        """``(epsilon*, delta + delta')`` for ``0 < d_in <= r``; ``(0, 0)`` at 0."""
        if d_in == 0:
            return (0.0, 0.0)
        if d_in > self.r:
            raise PrivacyMapError(
                f"the limited-domain threshold covers counts that move by at most {self.r}; "
                f"d_in = {d_in} (build the mechanism for a group with a larger threshold instead)"
            )
        return (self.epsilon_star, self.delta_star)


def make_limited_domain_top_k(
    k: int,
    k_bar: int,
    epsilon: float | Fraction,
    *,
    delta: float | Fraction,
    max_contributions: int | None = None,
    delta_prime: float | Fraction = 0.0,
    input_metric: Any = None,
    source: RandomSource | None = None,
    accounting: LimitedDomainAccounting = "tightest",
    max_rows_per_value: int = 1,
) -> Measurement:
    """DR19's limited-domain top-``k``: up to ``k`` items, ranked, from a private item set.

    Parameters
    ----------
    k:
        The most items released (``>= 1``).
    k_bar:
        How many of the true top counts the mechanism looks at (``>= k``).
    epsilon:
        The per-round epsilon: every value gets Gumbel noise of scale ``1 / epsilon``.
    delta:
        The threshold's delta, in ``(0, 1)``: ``h_bot = h_(k_bar+1) + 1 + ln(min(Delta,
        k_bar) / delta) / epsilon``.
    max_contributions:
        ``Delta``, the most counts one user can change (``None``: unrestricted).
    delta_prime:
        The composition slack ``delta' in [0, 1)`` of Theorem 1 (0: ``epsilon* = k epsilon``).
    input_metric:
        ``LInfDistance(monotonic=True)`` (the default): neighbours move each count by at most
        ``d_in`` in the same direction. Non-monotone metrics are refused (the theorem's
        threshold and per-round epsilon are for add/remove neighbours).
    source:
        Randomness source; ``None`` is the CSPRNG.
    accounting:
        How the map bounds ``epsilon*`` (:func:`limited_domain_accounting`): ``"tightest"``
        (default; the least valid bound the library has) or ``"dr19"`` (the closed forms).
    max_rows_per_value:
        ``r``: how much one user moves one count (default 1). The noise scale and the
        threshold are ``r`` times those of ``r = 1`` (module docstring) and the map covers
        ``d_in <= r``.

    The function takes a mapping ``{item: count}`` (:class:`HistogramDomain`; an empty mapping
    is valid) and returns a list of at most ``k`` items, best first; fewer than ``k`` means the
    noisy threshold came first. The map to ``Approximate(MaxDivergence())`` is DR19, Theorem 1:
    ``d_in = 0 -> (0, 0)``; ``0 < d_in <= 1 -> (epsilon*, delta + delta')`` with ``epsilon*``
    from :func:`limited_domain_accounting` (module docstring); ``d_in > r`` raises
    :class:`PrivacyMapError` (the threshold covers counts that move by ``r``).

    Returns
    -------
    Measurement
        From :class:`HistogramDomain` mappings to a list of at most ``k`` items, best first,
        with output measure ``Approximate(MaxDivergence())``.
    """
    k = check_int(k, "k", minimum=1)
    k_bar = check_int(k_bar, "k_bar", minimum=1)
    if k_bar < k:
        raise ParameterError(f"k_bar must be at least k = {k}, got {k_bar}")
    eps = Fraction(check_epsilon(epsilon))
    dlt = Fraction(check_delta(delta, allow_zero=False))
    dp = Fraction(check_delta(delta_prime, "delta_prime"))
    if max_contributions is not None:
        max_contributions = check_int(max_contributions, "max_contributions", minimum=1)
    r = check_int(max_rows_per_value, "max_rows_per_value", minimum=1)
    metric = _limited_metric(input_metric)
    domain = HistogramDomain()
    gumbel_scale = r / eps  # exact (a Fraction): the threshold below is r times its own
    bottom = _scaled_threshold(eps, dlt, k_bar, max_contributions, r)
    epsilon_star, _ = limited_domain_accounting(eps, k, dp, accounting)
    delta_star = float_up(min(dlt + dp, Fraction(1)))
    return Measurement(
        input_domain=domain,
        input_metric=metric,
        output_measure=Approximate(MaxDivergence()),
        function=_LimitedDomainRelease(domain, k, k_bar, bottom, gumbel_scale, source),
        privacy_map=_LimitedDomainLoss(r, epsilon_star, delta_star),
    )
