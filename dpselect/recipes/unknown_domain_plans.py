"""The plans of the unknown-domain paths: which mechanism runs, what it promises, how its
output is ranked, from public facts only.

Shared by :mod:`dpselect.recipes.unknown_domain` (partition selection, top-k without a
candidate list) and :mod:`dpselect.recipes.grouped` (the same per group): the mechanisms'
names, the choices (:func:`choose_keys_method`, :func:`choose_unknown_domain`), the counts
a value needs to be released (:func:`sure_release_count`, ...), the ranking of released
values (:func:`rank_released`) and :class:`KeysResult`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

from ..core.errors import ParameterError
from ..mechanisms.choice import TARGET, gap_needed, per_round_epsilon
from ..mechanisms.histogram_top_k import rank_noisy_counts
from ..mechanisms.limited_domain import (
    limited_domain_threshold,
)
from ..mechanisms.partition_selection import (
    ThresholdPlan,
    optimal_release_probability,
    ordered_values,
    threshold_plan,
)
from ..planning.top_k_plan import CONFIDENCE
from ..sampling.source import RandomSource, resolve_source
from ._common import jsonable
from .result import Result

#: The public stand-in for the number of values behind the k leaders in the criterion.
REFERENCE_OTHERS = 1000
#: The limited-domain ``k_bar`` defaults to ``k + K_BAR_EXTRA``.
K_BAR_EXTRA = 10

Progress = Callable[[float], None] | None

THRESHOLD_NAMES = {
    "laplace": (
        "partition selection by thresholding exact discrete Laplace counts (Korolova et al. "
        "2009; Wilson et al. 2020), then the k largest noisy counts"
    ),
    "gaussian": (
        "partition selection by thresholding exact discrete Gaussian counts (Wilson et al. "
        "2020; Canonne, Kamath and Steinke 2020), then the k largest noisy counts"
    ),
}
POLICY_NAMES = {
    "laplace": (
        "policy set union, Policy Laplace: l1-descent weights, Laplace thresholding (Gopi, "
        "Gulhane, Kulkarni, Shen, Shokouhi and Yekhanin 2020)"
    ),
    "gaussian": (
        "policy set union, Policy Gaussian: l2-descent weights, Gaussian thresholding (Gopi, "
        "Gulhane, Kulkarni, Shen, Shokouhi and Yekhanin 2020)"
    ),
}
POLICY_TOP_K_NAME = (
    "policy set union, Policy Laplace (Gopi, Gulhane, Kulkarni, Shen, Shokouhi and Yekhanin "
    "2020) on half the budget, then top-k among the released values on the rest (adaptive "
    "composition)"
)
OPTIMAL_NAME = "optimal partition selection (Desfontaines, Voss, Gipson and Mandayam 2022)"
LIMITED_DOMAIN_NAME = (
    "limited-domain top-k, values from the data (Durfee and Rogers 2019), rounds composed by "
    "Renyi bounded-range accounting"
)


# ------------------------------------------------------------------------------------------
# Partition selection

#: From this epsilon on, ``mechanism="auto"`` runs Policy Laplace for ``max_contributions > 1``.
#: Measured (``bench/bench_utility.py --set-union``, docs/performance.md): at epsilon 0.1
#: DVGM22 with one value kept per person released 0-11% more values than the policy; from 0.5
#: the policy released 20-67% more on persons with many values (Zipf) and 0-16% fewer on
#: persons with about two (airport names) at 0.5-1, 4-15% more there at epsilon 2.
POLICY_MIN_EPSILON = 0.5


KeysMethod = Literal["optimal", "laplace", "gaussian", "policy_laplace", "policy_gaussian"]


def choose_keys_method(
    epsilon: float, delta: float, max_contributions: int, persons_in_driver: bool = True
) -> KeysMethod:
    """The partition selection ``mechanism="auto"`` runs: a pure function of public facts.

    ``max_contributions = 1``: DVGM22's optimal rule (the optimum for one value per person).
    More: Policy Laplace (Gopi et al. 2020) when ``epsilon >= POLICY_MIN_EPSILON`` and the
    engine holds each person's values in the driver; otherwise the optimal rule
    with each person bounded to one value, which released more values than thresholding with
    ``max_contributions`` values in every measured cell and more than the policy at smaller
    epsilon (``bench/bench_utility.py --set-union``; docs/performance.md).

    Parameters
    ----------
    epsilon : float
        The partition selection's epsilon, for one person added or removed.
    delta : float
        Its delta (not used by the rule).
    max_contributions : int
        The most distinct values one person keeps.
    persons_in_driver : bool, default True
        The engine's declared capability
        (:attr:`dpselect.data.engine.Capabilities.persons_in_driver`): whether it can hold
        each person's values in the driver, as the policy needs.

    Returns
    -------
    {"optimal", "policy_laplace"}
        The method to run.
    """
    del delta  # the measured ranking did not depend on it; kept for a stable signature
    if max_contributions == 1:
        return "optimal"
    if persons_in_driver and epsilon >= POLICY_MIN_EPSILON:
        return "policy_laplace"
    return "optimal"


@dataclass(frozen=True)
class KeysResult(Result):
    """The values that may be published, what it cost, and how likely a value is shown.

    Attributes
    ----------
    values : list
        The released values, in a fixed order that does not depend on their counts (sorted
        when comparable, else by type name and ``repr``); empty when none was released.
    mechanism : str
        The partition selection that ran, cited by name.
    epsilon : float
        The ``epsilon`` of the release's ``(epsilon, delta)`` guarantee (what the ledger was
        charged; in a :class:`~dpselect.recipes.grouping.GroupedResult`, one group's).
    delta : float
        The ``delta`` of that guarantee.
    accuracy : str
        How likely a value is released: the count (of persons or rows) above which it is
        released with probability at least 95%, and the ``delta`` bound for a value one person
        holds.
    ledger : str or None
        The path of the ledger charged for this release; ``None`` without a ledger.
    parameters : dict
        The query's public parameters (``column``, ``epsilon``, ``delta``, ``privacy_unit``,
        ``max_contributions``, ``mechanism``, the rule's threshold or scale, ...); empty for
        the groups of a grouped release.
    """

    values: list[Any]
    mechanism: str
    epsilon: float
    delta: float
    accuracy: str
    ledger: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)

    def _dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        out = asdict(self)
        out["values"] = [jsonable(v) for v in self.values]
        return out

    def _rows(self) -> list[dict[str, Any]]:
        return [{"value": v} for v in self.to_dict()["values"]]

    def _text(self) -> str:
        return "\n".join(
            [
                *(str(v) for v in self.values),
                f"{len(self.values)} values released",
                f"mechanism: {self.mechanism}",
                f"privacy cost: epsilon = {self.epsilon:.6g}, delta = {self.delta:.3g}",
                self.accuracy,
            ]
        )


def sure_release_count(plan: ThresholdPlan) -> int:
    """The least count released with probability >= CONFIDENCE: ``threshold + t`` with
    ``P(Z <= -(t + 1)) <= 1 - CONFIDENCE``.

    Parameters
    ----------
    plan : ThresholdPlan
        A calibrated thresholding (noise law, scale and threshold).

    Returns
    -------
    int
        The count (persons, or rows with ``max_rows_per_value > 1``) released with probability
        at least 95%.
    """
    return plan.threshold + _least_tail_exponent(plan, 1 - CONFIDENCE) - 1


def _lower_tail(plan: ThresholdPlan, m: int) -> float:
    """An upper bound on ``P(Z <= -m)``, ``m >= 1``: discrete Laplace ``q^m / (1 + q)``;
    discrete Gaussian ``exp(-m^2 / (2 sigma^2))`` (sub-Gaussian: CKS 2020, Corollary 9)."""
    s = plan.scale
    if plan.noise == "laplace":
        q = math.exp(-1 / s)
        return math.exp(-m / s) / (1 + q) * (1 + 1e-12)
    return math.exp(-(m * m) / (2 * s * s)) * (1 + 1e-12)


def noise_halfwidth(plan: ThresholdPlan) -> int:
    """``t`` with ``P(|Z| > t) <= 1 - CONFIDENCE`` for one value.

    Parameters
    ----------
    plan : ThresholdPlan
        A calibrated thresholding (noise law and scale).

    Returns
    -------
    int
        ``t >= 0``, in counts: one value's noisy count is within ``+-t`` of its count with
        probability at least 95%.
    """
    return _least_tail_exponent(plan, (1 - CONFIDENCE) / 2) - 1


def _least_tail_exponent(plan: ThresholdPlan, beta: float) -> int:
    """The least ``m >= 1`` with ``_lower_tail(plan, m) <= beta``: from the closed form of the
    bound (a scale of 10^9 took 10^9 steps counting up from 1), then corrected by a few steps
    for its rounding."""
    s = plan.scale
    if plan.noise == "laplace":
        q = math.exp(-1 / s)
        guess = s * math.log((1 + 1e-12) / (beta * (1 + q)))
    else:
        guess = s * math.sqrt(max(0.0, 2 * math.log((1 + 1e-12) / beta)))
    m = max(1, math.floor(guess) - 2)
    while m > 1 and _lower_tail(plan, m - 1) <= beta:
        m -= 1
    while _lower_tail(plan, m) > beta:
        m += 1
    return m


def optimal_sure_count(eps: float, delta: float) -> int:
    """The least count ``n >= 1`` that optimal partition selection releases with probability
    at least ``CONFIDENCE`` (``pi`` is non-decreasing: a binary search over its table, which
    may hold a million entries at a small epsilon).

    Parameters
    ----------
    eps, delta : float
        The optimal partition selection's ``(epsilon, delta)``, for one person.

    Returns
    -------
    int
        The least number of persons holding a value that releases it with probability at least
        95%.
    """
    lo, hi = 1, 2
    while optimal_release_probability(hi, eps, delta) < CONFIDENCE:
        lo, hi = hi + 1, 2 * hi
    while lo < hi:  # the least n in [lo, hi] with pi(n) >= CONFIDENCE
        mid = (lo + hi) // 2
        if optimal_release_probability(mid, eps, delta) < CONFIDENCE:
            lo = mid + 1
        else:
            hi = mid
    return lo


#: Ranking-noise standard deviations per rank of ``k`` that a top value needs above the
#: threshold in :attr:`UnknownDomainOption.criterion` (``0.4 k``: 4 for the top 10, 20 for
#: the top 50). Measured, ``bench/bench_utility.py --unknown-c`` and ``--units``
#: (docs/partition_selection.md): every measured cell is ranked right by any value in
#: ``(0.36, 0.45)``.
RANKING_SDS_PER_RANK = 0.4


@dataclass(frozen=True)
class UnknownDomainOption:
    """One calibrated unknown-domain top-k and its predicted figure (smaller is better).

    ``criterion`` is the count the ``k``-th value needs for the option to find it, from public
    facts only: the count released with probability at least 1/2 (the ``threshold`` itself:
    the noise is symmetric, so ``P(count + Z >= threshold) >= 1/2`` exactly when ``count >=
    threshold``) plus ``RANKING_SDS_PER_RANK * k`` standard deviations ``noise_sd`` of the
    noise on the ranking counts (discrete Laplace of scale ``b``: ``sqrt(2) b`` up to the
    lattice; discrete Gaussian: ``sigma`` or less, CKS 2020). Recall is lost in two ways: a
    top value that does not pass the threshold, and a top value that a value just behind it
    overtakes in the noisy ranking. The second grows with ``k``: where counts fall like a
    Zipf law (rank ``r`` holds about ``1 / r`` of the top count), the ``k``-th value leads the
    next by about ``1 / (k + 1)`` of its own count, so a lead of a fixed number of noise
    deviations needs a count proportional to ``k`` times the deviation. Which loss dominates
    depends on how large the top counts are, a private fact; the figure charges both, the
    ranking at the measured rate :data:`RANKING_SDS_PER_RANK`. The limited domain (``gumbel``)
    keeps its reference criterion ``gap + release`` (its threshold sits over the ``(k_bar +
    1)``-th count, on top of the ranking margin). ``gap``: the ranking margin
    :func:`gap_needed` (the ``k`` leaders above :data:`REFERENCE_OTHERS` values); ``release``:
    the count each of the ``k`` leaders needs to come through the threshold together with
    probability :data:`~dpselect.mechanisms.choice.TARGET` (shown, no longer decisive). Equal
    criteria: the lower ``threshold`` wins.
    """

    mechanism: str  # "laplace_histogram", "gaussian_histogram" or "gumbel" (limited domain)
    scale: float
    gap: float
    release: float = 0.0
    threshold: float = 0.0  # the threshold itself (limited domain: over the k_bar+1-th count)
    noise_sd: float = 0.0  # the standard deviation of the ranking noise
    k: int = 1

    @property
    def criterion(self) -> float:
        if self.mechanism == "gumbel":
            return self.gap + self.release
        return self.threshold + RANKING_SDS_PER_RANK * self.k * self.noise_sd


def limited_domain_per_round(k: int, eps: float, delta: float) -> float:
    """The limited domain's per-round epsilon: half of delta to the composition.

    Parameters
    ----------
    k : int
        The number of rounds (values released).
    eps, delta : float
        The whole release's ``(epsilon, delta)``; half of ``delta`` goes to the composition
        (the other half to the threshold).

    Returns
    -------
    float
        The largest per-round epsilon whose ``k`` bounded-range rounds compose within ``(eps,
        delta / 2)``.
    """
    return per_round_epsilon("bounded_range", k, eps, delta / 2)[0]


def _release_count(plan: ThresholdPlan, k: int) -> int:
    """The least count ``threshold + t`` at which ``k`` values all pass the threshold with
    probability at least ``TARGET`` (``P(Z <= -(t + 1)) <= 1 - TARGET^(1/k)``)."""
    miss = 1 - TARGET ** (1 / k)
    # the least t >= 0 with _lower_tail(plan, t + 1) <= miss (from the closed form: counting
    # t up from 0 took a million steps at a scale of a million)
    return plan.threshold + _least_tail_exponent(plan, miss) - 1


def choose_unknown_domain(
    k: int, epsilon: float, delta: float, max_contributions: int = 1, max_rows_per_value: int = 1
) -> tuple[UnknownDomainOption, list[UnknownDomainOption]]:
    """The chosen unknown-domain path and every option: a pure function of public facts.

    The least ``criterion`` (:class:`UnknownDomainOption`: threshold plus
    ``RANKING_SDS_PER_RANK * k`` ranking-noise standard deviations) wins; it reads ``k``, epsilon,
    delta and ``max_contributions`` only, never the data. The thresholds matter as much
    as the ranking noise once ``max_contributions > 1``: Laplace thresholding's threshold grows
    like ``c ln(c / delta) / epsilon``, Gaussian's like ``sqrt(c ln(c / delta)) / epsilon``,
    the limited domain's like ``ln(c k_bar / delta) / eps_0`` over the ``(k_bar + 1)``-th
    count (``bench/bench_utility.py --unknown-c``, docs/performance.md).
    ``max_rows_per_value = r``: every option calibrated to counts that move by ``r``
    (thresholds, scales and the limited domain's threshold, all about ``r`` times larger).

    Parameters
    ----------
    k : int
        The number of values to release.
    epsilon, delta : float
        The release's ``(epsilon, delta)``, for one person added or removed.
    max_contributions : int, default 1
        The most distinct values one person keeps.
    max_rows_per_value : int, default 1
        ``r``, the most rows one person adds to one value's count.

    Returns
    -------
    best : UnknownDomainOption
        The option with the least criterion (ties: the lower threshold).
    options : list of UnknownDomainOption
        Every option, in the order Laplace thresholding, Gaussian thresholding, limited domain.
    """
    r = int(max_rows_per_value)
    n = k + REFERENCE_OTHERS
    options = []
    noises: tuple[Literal["laplace"], Literal["gaussian"]] = ("laplace", "gaussian")
    for noise in noises:
        plan = threshold_plan(noise, epsilon, delta, max_contributions, max_rows_per_value=r)
        mech = f"{noise}_histogram"
        sd = math.sqrt(2) * plan.scale if noise == "laplace" else plan.scale
        options.append(
            UnknownDomainOption(
                mech,
                plan.scale,
                gap_needed(mech, k, n, plan.scale),
                _release_count(plan, k),
                plan.threshold,
                sd,
                k,
            )
        )
    per_round = limited_domain_per_round(k, epsilon, delta)
    scale = r / per_round
    ld_threshold = r * limited_domain_threshold(per_round, delta / 2, k + K_BAR_EXTRA,
                                                max_contributions)  # fmt: skip
    options.append(
        UnknownDomainOption(
            "gumbel", scale, gap_needed("gumbel", k, n, scale), ld_threshold, ld_threshold,
            math.pi / math.sqrt(6) * scale, k,
        )
    )  # fmt: skip
    order = ["laplace_histogram", "gaussian_histogram", "gumbel"]
    # equal criteria: the lower threshold (values near it are the ones at stake)
    best = min(options, key=lambda o: (o.criterion, o.threshold, order.index(o.mechanism)))
    return best, options


def rank_released(kept: dict[Any, int], k: int, source: RandomSource | None = None) -> list[Any]:
    """The ``k`` released values with the largest noisy counts, best first.

    Equal noisy counts are ordered uniformly at random with fresh bits of ``source`` (a fixed
    order, e.g. by value, favours the same values at every tie: on airports by state it put the
    11th state, IL with 88 airports, before the 10th, MN with 89, whenever their noisy counts
    tied). Post-processing of the thresholding's output: no privacy cost.

    Parameters
    ----------
    kept : dict
        The released values and their noisy counts (the thresholding's output).
    k : int
        How many to return.
    source : RandomSource, optional
        The randomness that breaks ties (``None``: the private default; a seeded source for
        tests only).

    Returns
    -------
    list
        At most ``k`` values, the largest noisy count first.
    """
    values = ordered_values(kept)
    noisy = np.array([kept[v] for v in values], dtype=object)
    order = rank_noisy_counts(noisy, min(k, len(values)), resolve_source(source))
    return [values[int(i)] for i in order]


def rows_threshold_method(
    epsilon: float, delta: float, max_contributions: int, max_rows_per_value: int
) -> Literal["laplace", "gaussian"]:
    """Partition selection's ``"auto"`` with ``max_rows_per_value > 1``: the thresholding
    (Laplace or Gaussian, both calibrated at ``r``) whose count released with probability
    :data:`CONFIDENCE` is lower (Laplace on a tie, or when Gaussian cannot meet the target):
    a pure function of public parameters.

    Parameters
    ----------
    epsilon, delta : float
        The thresholding's ``(epsilon, delta)``, for one person added or removed.
    max_contributions : int
        The most distinct values one person keeps.
    max_rows_per_value : int
        ``r``, the most rows one person adds to one value's count.

    Returns
    -------
    {"laplace", "gaussian"}
        The noise of the thresholding to run.
    """
    sure = {}
    for noise in ("laplace", "gaussian"):
        try:
            plan = threshold_plan(noise, epsilon, delta, max_contributions,
                                  max_rows_per_value=max_rows_per_value)  # fmt: skip
        except ParameterError:
            continue
        sure[noise] = sure_release_count(plan)
    if "gaussian" in sure and sure["gaussian"] < sure.get("laplace", sure["gaussian"] + 1):
        return "gaussian"
    return "laplace"


def counted_in_words(count: int, rows_cap: int) -> str:
    """A value's count in words: persons, or (``max_rows_per_value > 1``) rows.

    Parameters
    ----------
    count : int
        The count (persons, or rows with ``rows_cap > 1``).
    rows_cap : int
        ``max_rows_per_value``: 1 counts persons, more counts rows.

    Returns
    -------
    str
        The phrase, e.g. ``"held by at least 12 persons (after contribution bounding)"``.
    """
    if rows_cap == 1:
        return f"held by at least {count} persons (after contribution bounding)"
    return (
        f"with at least {count} rows (at most {rows_cap} per person and value, after "
        "contribution bounding)"
    )


def ordinal(n: int) -> str:
    """``n`` as an English ordinal: ``1st``, ``2nd``, ``3rd``, ``11th``, ``21st``, ...

    Parameters
    ----------
    n : int
        A non-negative integer.

    Returns
    -------
    str
        The number with its suffix.
    """
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
