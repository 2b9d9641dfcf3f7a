"""The top-k without a candidate list, planned: which mechanism, its calibration and statements.

``top_k`` without ``candidates`` runs one of (chosen by public facts, never the data):

- **thresholding then the top k** (``laplace_histogram`` / ``gaussian_histogram``): every
  value's count gets exact noise, values below the threshold are dropped, the ``k`` largest
  noisy counts are released (with the counts when asked). Ranking is post-processing of the
  thresholded noisy histogram, so the whole pipeline costs the thresholding's ``(epsilon,
  delta)``, charged once (proof: ``docs/partition_selection.md``);
- **limited-domain top-k** (``gumbel``; Durfee and Rogers 2019) with its ``k`` peeling rounds
  composed by the tightest valid theorem (Renyi composition of bounded-range curves, not
  ``epsilon / k`` per round), half of ``delta`` to its threshold and half to the composition;
- **policy set union, then the top k** (:func:`make_policy_top_k`): Policy Laplace (Gopi et
  al. 2020) on half the budget, the known-domain ``top_k`` among the released values on the
  rest (adaptive composition, charged once), when :func:`use_policy_top_k` says so (many
  values per person: a measured rule).

Between the first three, :func:`~dpselect.recipes.unknown_domain_plans.choose_unknown_domain`
picks by the count the ``k``-th value needs for each option to find it (``--plan`` shows the
table). Everything here is planned from public facts and charges nothing: the release (the
charge, then :attr:`UnknownDomainPlan.pick`) is
:func:`dpselect.recipes.unknown_domain.run_unknown_domain_plan`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..core.arithmetic import printed_up
from ..core.errors import ParameterError
from ..data.query import Query, UnitRule
from ..data.rules import check_rows_per_value
from ..mechanisms.limited_domain import (
    limited_domain_accounting,
    limited_domain_threshold,
    make_limited_domain_top_k,
)
from ..mechanisms.partition_selection import (
    ThresholdPlan,
    make_threshold_partition_selection,
    threshold_plan,
)
from ..mechanisms.policy_top_k import (
    POLICY_TOP_K_ALPHA,
    POLICY_TOP_K_FRACTION,
    PolicyTopKPlan,
    make_policy_top_k,
    policy_top_k_plan,
)
from ..mechanisms.set_union import policy_sure_count
from ..mechanisms.validate import check_int
from ..planning.top_k_plan import CONFIDENCE, plan_top_k
from ..sampling.source import RandomSource, resolve_source
from .release import open_checked
from .unknown_domain_plans import (
    K_BAR_EXTRA,
    LIMITED_DOMAIN_NAME,
    POLICY_TOP_K_NAME,
    THRESHOLD_NAMES,
    Progress,
    choose_unknown_domain,
    counted_in_words,
    limited_domain_per_round,
    noise_halfwidth,
    ordinal,
    rank_released,
    sure_release_count,
)

if TYPE_CHECKING:
    from ..planning.top_k_request import TopKRequest

__all__ = [
    "POLICY_TOP_K_ALPHA",
    "POLICY_TOP_K_FRACTION",
    "POLICY_TOP_K_MIN_CONTRIBUTIONS",
    "POLICY_TOP_K_MIN_EPSILON",
    "PolicyTopKPlan",
    "UnknownDomainPlan",
    "make_policy_top_k",
    "policy_top_k_plan",
    "unknown_domain_plan",
    "use_policy_top_k",
]

#: ``top_k(candidates=None, mechanism="auto")`` runs :func:`make_policy_top_k` from this many
#: values per person on (with ``epsilon >= POLICY_TOP_K_MIN_EPSILON``, a privacy unit, persons
#: held in the driver).
POLICY_TOP_K_MIN_CONTRIBUTIONS = 10
#: ... and from this epsilon on.
POLICY_TOP_K_MIN_EPSILON = 1.0
#: The mechanisms a top-k without candidates accepts once ``"auto"`` is resolved.
_VALUE_MECHANISMS = ("gumbel", "laplace_histogram", "gaussian_histogram")


@dataclass(frozen=True)
class UnknownDomainPlan:
    """One unknown-domain top-k, calibrated and checked, not yet charged: what it costs
    (``spent``: epsilon, delta), how the result describes it, ``pick`` (after the charge:
    the released values and, if asked, their noisy counts) and ``margin``, the count the
    ``k``-th value needs for the path to find it (public: :class:`UnknownDomainOption`'s
    criterion, the policy set union's sure count), which ``max_contributions="auto"`` weighs
    against the contributions a bound keeps."""

    pick: Callable[[], tuple[list[Any], list[Any] | None]]
    spent: tuple[float, float]
    mechanism: str
    entry: str
    accuracy: str
    parameters: dict[str, Any]
    described: str
    margin: float


@dataclass(frozen=True)
class _ValueQuery:
    """A top-k without candidates: its public parts, the data not yet read (``c``: the
    distinct values kept per person, ``r``: the rows counted per value)."""

    data: Any
    column: str
    k: int
    eps: float
    delta: float
    privacy_unit: str | None
    c: int
    r: int
    counts: bool
    source: RandomSource | None
    progress: Progress
    schema: Any = None


def unknown_domain_plan(
    data: Any,
    request: TopKRequest,
    *,
    source: RandomSource | None = None,
    progress: Progress = None,
    schema: Any = None,
) -> UnknownDomainPlan:
    """The ``candidates=None`` top-k of ``request`` at its ``max_contributions``, planned and
    checked from public facts, not charged (module docstring).

    ``rows_per_value = r > 1``: every path calibrated to counts that move by ``r``
    (thresholding, the limited domain, and policy set union then the top-k, both stages
    counting rows: :func:`dpselect.mechanisms.policy_top_k.make_policy_top_k`); ``"auto"``
    applies the rule of ``r = 1`` (:func:`use_policy_top_k`; ``bench/bench_rows_set_union.py``
    on NYC flights at ``r`` = 10 and 50: precision 0.730 and 0.865 against 0.755 and 0.850
    for the thresholding ``"auto"`` picks, equal within the 95% intervals).

    Parameters
    ----------
    data : str, path, DataFrame, relation or Engine
        The private rows, as for :func:`dpselect.recipes.top_k.top_k`.
    request : TopKRequest
        The top-k's checked arguments, without candidates and with a numeric
        ``max_contributions``: its ``mechanism`` (``"auto"``, ``"laplace_histogram"``,
        ``"gaussian_histogram"`` or ``"gumbel"``, the limited domain), ``counts`` (histogram
        mechanisms only) and ``k_bar`` (the limited domain's ``k_bar >= k``, default ``k +
        10``; implies ``"gumbel"`` under ``"auto"`` and is refused by the other mechanisms).
    source : RandomSource or None
        The randomness (``None``: the private default; a seeded source for tests only).
    progress : callable or None
        ``progress(percent)`` while the data are scanned.
    schema : dict, optional
        Declared column types.

    Returns
    -------
    UnknownDomainPlan
        The calibrated plan: its cost, its statements and ``pick`` (run only after a charge).
    """
    a = request
    assert a.max_contributions is not None  # "auto" is chosen first (unknown_domain_auto)
    column, k, eps, delta, privacy_unit = a.column, a.k, a.epsilon, a.delta, a.privacy_unit
    mech: str = a.mechanism
    k_bar, c = a.k_bar, a.max_contributions
    r = check_rows_per_value(a.rows_per_value, privacy_unit)
    query = _ValueQuery(data, column, k, eps, delta, privacy_unit, c, r, a.counts, source,
                        progress, schema)  # fmt: skip
    if (
        mech == "auto"
        and k_bar is None
        and privacy_unit is not None
        and use_policy_top_k(k, eps, delta, c, _holds_persons(data, column, privacy_unit, schema))
    ):
        return _policy_top_k(query)
    mech = _checked_mechanism(query, mech, k_bar)
    if mech == "gumbel":
        return _limited_domain(query, k_bar)
    return _threshold_top_k(query, mech)


def _checked_mechanism(query: _ValueQuery, mech: str, k_bar: int | None) -> str:
    """``mech`` with ``"auto"`` resolved by public facts (``k_bar`` given: the limited domain;
    else :func:`choose_unknown_domain`), refused when it cannot run without candidates."""
    q = query
    if mech == "auto":
        mech = ("gumbel" if k_bar is not None
                else choose_unknown_domain(q.k, q.eps, q.delta, q.c, q.r)[0].mechanism)  # fmt: skip
    if mech not in _VALUE_MECHANISMS:
        raise ParameterError(
            "without a candidates list the mechanism is 'auto', 'laplace_histogram', "
            f"'gaussian_histogram' or 'gumbel' (limited domain), got {mech!r}"
        )
    if mech == "gumbel" and q.counts:
        raise ParameterError(
            "counts=True without candidates needs a histogram mechanism (the limited-domain "
            "top-k releases no counts)"
        )
    if mech != "gumbel" and k_bar is not None:
        raise ParameterError("k_bar applies only to the limited-domain mechanism")
    return mech


def _threshold_top_k(query: _ValueQuery, mech: str) -> UnknownDomainPlan:
    """Thresholding of exact Laplace or Gaussian counts, then the ``k`` largest noisy counts
    (post-processing: the thresholding's cost, charged once)."""
    q = query
    noise: Literal["laplace", "gaussian"] = "laplace" if mech == "laplace_histogram" else "gaussian"
    plan = threshold_plan(noise, q.eps, q.delta, q.c, max_rows_per_value=q.r)
    measurement = make_threshold_partition_selection(plan, counts=True, source=q.source)
    spent_eps, spent_delta = (float(x) for x in measurement.map(1))
    table = open_checked(q.data, q.column, q.privacy_unit, q.schema)
    options = choose_unknown_domain(q.k, q.eps, q.delta, q.c, q.r)[1]
    option = next(o for o in options if o.mechanism == mech)
    parameters = _parameters(q, f"{noise}_threshold") | {
        "scale": plan.scale,
        "threshold": plan.threshold,
        "max_rows_per_value": q.r,
    }

    def pick() -> tuple[list[Any], list[Any] | None]:
        salt = resolve_source(q.source).bits(63)
        rule = UnitRule(q.privacy_unit, q.c, q.r, salt=salt)
        hist = dict(table.counts(Query(q.column, rule, progress=q.progress)))
        kept: dict[Any, int] = measurement(hist)
        ranked = rank_released(kept, q.k, q.source)
        return ranked, [kept[v] for v in ranked] if q.counts else None

    return UnknownDomainPlan(pick, (spent_eps, spent_delta), THRESHOLD_NAMES[noise],
                             f"top_k/{noise}_threshold", _threshold_accuracy(plan, q.r),
                             parameters, table.description, float(option.criterion))  # fmt: skip


def _threshold_accuracy(plan: ThresholdPlan, r: int) -> str:
    """The accuracy statement of thresholding then the top ``k`` (``r``: rows per value)."""
    half = noise_halfwidth(plan)
    return (
        f"accuracy: a value {counted_in_words(sure_release_count(plan), r)} is "
        f"released with probability at least {CONFIDENCE:.0%}; released values are ranked by "
        f"noisy count; for any one value, its noisy count is within +-{half} of its true "
        f"count with probability at least {CONFIDENCE:.0%} (counts just above the threshold "
        f"{plan.threshold} lean high: they were kept because their noise was)"
    )


def _limited_domain(query: _ValueQuery, k_bar: int | None) -> UnknownDomainPlan:
    """DR19's limited-domain top-k, the rounds composed by the tightest adaptive theorem
    (``r``: ``max_rows_per_value``, its scale and threshold ``r`` times larger)."""
    q, r = query, query.r
    k_bar = q.k + K_BAR_EXTRA if k_bar is None else check_int(k_bar, "k_bar", minimum=q.k)
    per_round = limited_domain_per_round(q.k, q.eps, q.delta)
    d_thr = q.delta / 2
    # The measurement's own map composes the k rounds by the tightest valid theorem (DR19,
    # Theorem 1 admits any valid bound for k adaptive eps-bounded-range rounds): the ledger is
    # charged exactly what the map states.
    measurement = make_limited_domain_top_k(
        q.k, k_bar, per_round, delta=d_thr, max_contributions=q.c, delta_prime=q.delta / 2,
        source=q.source, max_rows_per_value=r,
    )  # fmt: skip
    spent_eps, spent_delta = (float(x) for x in measurement.map(r))
    theorem = limited_domain_accounting(per_round, q.k, q.delta / 2)[1]
    table = open_checked(q.data, q.column, q.privacy_unit, q.schema)
    threshold = r * limited_domain_threshold(per_round, d_thr, k_bar, q.c)
    scale = r / per_round
    margin = threshold + scale * math.log(CONFIDENCE / (1 - CONFIDENCE))
    parameters = _parameters(q, "limited_domain") | {
        "k_bar": k_bar,
        "max_rows_per_value": r,
        "accounting": theorem,
        "scale": scale,
        "threshold": threshold,
    }
    accuracy = (
        f"accuracy: a value whose score exceeds the {ordinal(k_bar + 1)} largest score by "
        f"at least {printed_up(margin)} is ranked above the stopping threshold with probability at "
        f"least {CONFIDENCE:.0%} (Gumbel noise, Durfee and Rogers 2019)"
    )

    def pick() -> tuple[list[Any], list[Any] | None]:
        salt = resolve_source(q.source).bits(63)
        rule = UnitRule(q.privacy_unit, q.c, r, salt=salt)
        top = table.counts(Query(q.column, rule, progress=q.progress), k_bar + 1)
        return list(measurement(dict(top))), None

    return UnknownDomainPlan(pick, (spent_eps, spent_delta), LIMITED_DOMAIN_NAME,
                             "top_k/limited_domain", accuracy, parameters, table.description,
                             float(margin))  # fmt: skip


def _parameters(query: _ValueQuery, mechanism: str) -> dict[str, Any]:
    """The parameters every unknown-domain top-k records (each path adds its own)."""
    return {
        "column": query.column,
        "k": query.k,
        "epsilon": query.eps,
        "delta": query.delta,
        "privacy_unit": query.privacy_unit,
        "max_contributions": query.c,
        "max_rows_per_value": 1,  # the paths that count rows replace it
        "mechanism": mechanism,
    }


# ------------------------------------------------------------------------------------------
# Policy set union, then the top k among the released values


def use_policy_top_k(k: int, epsilon: float, delta: float, max_contributions: int,
                     persons_in_driver: bool = True) -> bool:  # fmt: skip
    """Whether the unknown-domain ``auto`` path runs policy set union then the top ``k``: a
    pure function of public facts. Measured (``bench/bench_utility.py --unknown-c``, 30-40
    trials a cell, docs/performance.md): with 10 values per person and epsilon 1 / 2 it found
    as many of the top 10 as Gaussian thresholding or more (airport name words: 0.557 / 0.830
    against 0.533 / 0.797; Zipf persons: 1.000 both); at epsilon 0.5 slightly fewer (0.293
    against 0.307), and with 2 or 5 values or at epsilon 0.1 clearly fewer (the set union's
    half of the budget costs the ranking more than its lower threshold gains).

    Parameters
    ----------
    k : int
        How many values to release (not used by the rule).
    epsilon : float
        The release's epsilon.
    delta : float
        The release's delta (not used by the rule).
    max_contributions : int
        The most distinct values one person keeps.
    persons_in_driver : bool, default True
        The engine's declared capability
        (:attr:`dpselect.data.engine.Capabilities.persons_in_driver`): whether it can hold
        each person's values in the driver, as the policy needs.

    Returns
    -------
    bool
        True for the policy path: persons in the driver, ``max_contributions >=
        POLICY_TOP_K_MIN_CONTRIBUTIONS`` (10) and ``epsilon >= POLICY_TOP_K_MIN_EPSILON`` (1).
    """
    del k, delta  # the measured rule did not depend on them; kept for a stable signature
    return (
        persons_in_driver
        and max_contributions >= POLICY_TOP_K_MIN_CONTRIBUTIONS
        and epsilon >= POLICY_TOP_K_MIN_EPSILON
    )


def _holds_persons(data: Any, column: str, privacy_unit: str | None, schema: Any) -> bool:
    """Whether the engine that holds ``data`` can hold each person's values in the driver
    (:attr:`dpselect.data.engine.Capabilities.persons_in_driver`; a public fact: the type
    of the input)."""
    return bool(open_checked(data, column, privacy_unit, schema).capabilities.persons_in_driver)


def _policy_top_k(query: _ValueQuery) -> UnknownDomainPlan:
    """Policy Laplace set union, then the top ``k`` of the released values (charged once;
    ``r``: ``max_rows_per_value``, both stages counting rows)."""
    q, r = query, query.r
    assert q.privacy_unit is not None  # the policy path needs a unit (unknown_domain_plan)
    privacy_unit = q.privacy_unit
    plan = policy_top_k_plan(q.k, q.eps, q.delta, q.c, max_rows_per_value=r)
    measurement = make_policy_top_k(plan, top_k=plan_top_k, counts=q.counts, source=q.source)
    spent_eps, spent_delta = (float(x) for x in measurement.map(1))
    table = open_checked(q.data, q.column, privacy_unit, q.schema)
    sure = policy_sure_count(plan.set_union)
    accuracy = (
        f"accuracy: a value {counted_in_words(sure, r)} is "
        f"released by the set union with probability at least {CONFIDENCE:.0%}, whatever the "
        "other values; the released values are then ranked by the top-k mechanism chosen for "
        f"their number at epsilon = {printed_up(plan.epsilon_top_k)}, delta = "
        f"{plan.delta_top_k:.3g}"
    )
    parameters = _parameters(q, "policy_top_k") | {
        "max_rows_per_value": r,
        "set_union_epsilon": plan.set_union.epsilon,
        "set_union_delta": plan.set_union.delta,
        "rho": plan.set_union.rho,
        "scale": plan.set_union.scale,
    }

    def pick() -> tuple[list[Any], list[Any] | None]:
        salt = resolve_source(q.source).bits(63)
        rule = UnitRule(privacy_unit, q.c, r, salt=salt)
        persons = table.person_values(Query(q.column, rule, progress=q.progress))
        values, noisy = measurement(persons)
        return values, noisy if q.counts else None

    return UnknownDomainPlan(pick, (spent_eps, spent_delta), POLICY_TOP_K_NAME,
                             "top_k/policy_top_k", accuracy, parameters, table.description,
                             float(sure))  # fmt: skip
