"""The plan of a top-k without a candidate list: which path, its calibration, charge and stages.

``top_k`` without ``candidates`` runs one of (chosen by public facts, never the data):

- **thresholding then the top k** (``laplace_histogram`` / ``gaussian_histogram``): every
  value's count gets exact noise, values below the threshold are dropped, the ``k`` largest
  noisy counts are released (with the counts when asked). Ranking is post-processing of the
  thresholded noisy histogram, so the whole pipeline costs the thresholding's ``(epsilon,
  delta)``, charged once (proof: ``docs/partition_selection.md``);
- **limited-domain top-k** (``gumbel``; Durfee and Rogers 2019) with its ``k`` peeling rounds
  composed by the tightest valid theorem (Renyi composition of bounded-range curves, not
  ``epsilon / k`` per round), half of ``delta`` to its threshold and half to the composition;
- **policy set union, then the top k**
  (:func:`~dpselect.mechanisms.policy_top_k.make_policy_top_k`): Policy Laplace (Gopi et al.
  2020) on half the budget, the known-domain ``top_k`` among the released values on the rest
  (adaptive composition, seed 002, charged once), when :func:`use_policy_top_k` says so (many
  values per person: a measured rule).

Between the first three,
:func:`~dpselect.planning.unknown_domain_choice.choose_unknown_domain` picks by the count the
``k``-th value needs for each option to find it (``--plan`` shows the table).
:func:`unknown_domain_plan` reads the checked request and the engine's declared capability
``persons_in_driver`` only and returns an :class:`UnknownDomainPlan`: its measurement, its
charge, its ledger parameters and its stages; :func:`auto_contributions_plan` plans the
private choice of ``values_per_unit`` and the top-k at every candidate bound. The recipes
(:mod:`dpselect.recipes.unknown_domain_top_k`) read the data and run the plan after the
charge.

Memory (a stage's ``memory``): the limited domain holds the ``k_bar + 1`` largest counts,
``(k_bar + 1) * PAIR_BYTES`` (the values' own sizes not counted: they are the data's);
thresholding holds one noisy count per distinct value and policy set union each person's
values, both sized by the data (private), so ``None``; the choice of a bound holds one score
per candidate bound (a few numbers: ``None``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Literal, cast

from ..core.arithmetic import float_up
from ..core.errors import ParameterError
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
from ..mechanisms.policy_top_k import PolicyTopKPlan, make_policy_top_k, policy_top_k_plan
from ..mechanisms.set_union import policy_sure_count
from ..mechanisms.validate import check_int
from ..sampling.source import RandomSource
from .budget import first_share, remainder
from .contribution_choice import bound_choice
from .stage import Stage
from .top_k_mechanisms import Mechanism
from .top_k_plan import CONFIDENCE, plan_top_k
from .top_k_request import TopKRequest
from .unknown_domain_choice import (
    K_BAR_EXTRA,
    LIMITED_DOMAIN_NAME,
    POLICY_TOP_K_NAME,
    THRESHOLD_NAMES,
    choose_unknown_domain,
    limited_domain_per_round,
)

__all__ = [
    "PAIR_BYTES",
    "POLICY_TOP_K_MIN_CONTRIBUTIONS",
    "POLICY_TOP_K_MIN_EPSILON",
    "AutoContributionsPlan",
    "UnknownDomainPlan",
    "auto_contributions_plan",
    "mechanism_at",
    "unknown_domain_plan",
    "use_policy_top_k",
]

#: ``top_k(candidates=None, mechanism="auto")`` runs policy set union then the top k from this
#: many values per person on (with ``epsilon >= POLICY_TOP_K_MIN_EPSILON``, a privacy unit,
#: persons held in the driver).
POLICY_TOP_K_MIN_CONTRIBUTIONS = 10
#: ... and from this epsilon on.
POLICY_TOP_K_MIN_EPSILON = 1.0
#: The bytes of one (value, count) pair the limited domain holds, the value's own size not
#: counted: a dict entry (hash, key and value pointers, 24 bytes) and an int (28 bytes), rounded
#: up to 56.
PAIR_BYTES = 56
#: The mechanisms a top-k without candidates accepts once ``"auto"`` is resolved.
_VALUE_MECHANISMS = ("gumbel", "laplace_histogram", "gaussian_histogram")


@dataclass(frozen=True)
class UnknownDomainPlan:
    """One unknown-domain top-k, calibrated and checked, not yet charged.

    Attributes
    ----------
    path : {"threshold", "limited_domain", "policy_top_k"}
        Which path runs.
    measurement : Measurement
        What runs after the charge: from the bounded histogram (the ``k_bar + 1`` largest
        counts for the limited domain; each person's values for policy set union) to the
        released values.
    spent : (float, float)
        The charge: the measurement's map (at one person; the limited domain at ``r``).
    mechanism : str
        The name results cite.
    entry : str
        The ledger entry's mechanism name.
    parameters : dict
        The ledger entry's and the result's public parameters.
    margin : float
        The count the ``k``-th value needs for the path to find it (public:
        :class:`~dpselect.planning.unknown_domain_choice.UnknownDomainOption`'s criterion, the
        limited domain's threshold plus its margin, the policy set union's sure count), which
        ``values_per_unit="auto"`` weighs against the contributions a bound keeps.
    stages : tuple of Stage
        The release's stages.
    c, r : int
        The values kept per person and the rows counted per value.
    k_bar : int or None
        The limited domain's ``k_bar`` (it reads the ``k_bar + 1`` largest counts).
    threshold : ThresholdPlan or None
        The thresholding's calibration (thresholding path).
    policy : PolicyTopKPlan or None
        The policy path's calibration.
    """

    path: Literal["threshold", "limited_domain", "policy_top_k"]
    measurement: Any
    spent: tuple[float, float]
    mechanism: str
    entry: str
    parameters: dict[str, Any]
    margin: float
    stages: tuple[Stage, ...]
    c: int
    r: int
    k_bar: int | None = None
    threshold: ThresholdPlan | None = None
    policy: PolicyTopKPlan | None = None


def unknown_domain_plan(
    request: TopKRequest,
    persons_in_driver: bool,
    source: RandomSource | None = None,
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
    request : TopKRequest
        The top-k's checked arguments, without candidates and with a numeric
        ``max_contributions``: its ``mechanism`` (``"auto"``, ``"laplace_histogram"``,
        ``"gaussian_histogram"`` or ``"gumbel"``, the limited domain), ``counts`` (histogram
        mechanisms only) and ``k_bar`` (the limited domain's ``k_bar >= k``, default ``k +
        10``; implies ``"gumbel"`` under ``"auto"`` and is refused by the other mechanisms).
    persons_in_driver : bool
        The engine's declared capability
        (:attr:`dpselect.data.engine.Capabilities.persons_in_driver`): whether it can hold each
        person's values in the driver, as policy set union needs.
    source : RandomSource or None
        The randomness the measurement draws from (``None``: the private default).

    Returns
    -------
    UnknownDomainPlan
        The calibrated plan: its measurement, charge, parameters and stages.
    """
    a = request
    assert a.max_contributions is not None  # "auto" is planned by auto_contributions_plan
    r = check_rows_per_value(a.rows_per_value, a.privacy_unit)
    if (
        a.mechanism == "auto"
        and a.k_bar is None
        and a.privacy_unit is not None
        and use_policy_top_k(a.k, a.epsilon, a.delta, a.max_contributions, persons_in_driver)
    ):
        return _policy_top_k(a, r, source)
    mech = _checked_mechanism(a, r)
    if mech == "gumbel":
        return _limited_domain(a, r, source)
    return _threshold_top_k(a, r, mech, source)


def _checked_mechanism(request: TopKRequest, r: int) -> str:
    """The request's mechanism with ``"auto"`` resolved by public facts (``k_bar`` given: the
    limited domain; else :func:`choose_unknown_domain`), refused when it cannot run without
    candidates."""
    a, mech, k_bar = request, str(request.mechanism), request.k_bar
    assert a.max_contributions is not None
    if mech == "auto":
        mech = ("gumbel" if k_bar is not None
                else choose_unknown_domain(a.k, a.epsilon, a.delta, a.max_contributions,
                                           r)[0].mechanism)  # fmt: skip
    if mech not in _VALUE_MECHANISMS:
        raise ParameterError(
            "without a candidates list the mechanism is 'auto', 'laplace_histogram', "
            f"'gaussian_histogram' or 'gumbel' (limited domain), got {mech!r}"
        )
    if mech == "gumbel" and a.counts:
        raise ParameterError(
            "counts=True without candidates needs a histogram mechanism (the limited-domain "
            "top-k releases no counts)"
        )
    if mech != "gumbel" and k_bar is not None:
        raise ParameterError("k_bar applies only to the limited-domain mechanism")
    return mech


def _parameters(request: TopKRequest, mechanism: str) -> dict[str, Any]:
    """The parameters every unknown-domain top-k records (each path adds its own)."""
    return {
        "column": request.column,
        "k": request.k,
        "epsilon": request.epsilon,
        "delta": request.delta,
        "privacy_unit": request.privacy_unit,
        "max_contributions": request.max_contributions,
        "max_rows_per_value": 1,  # the paths that count rows replace it
        "mechanism": mechanism,
    }


def _threshold_top_k(
    request: TopKRequest, r: int, mech: str, source: RandomSource | None
) -> UnknownDomainPlan:
    """Thresholding of exact Laplace or Gaussian counts, then the ``k`` largest noisy counts
    (post-processing: the thresholding's cost, charged once)."""
    a, c = request, int(request.max_contributions or 1)
    noise: Literal["laplace", "gaussian"] = "laplace" if mech == "laplace_histogram" else "gaussian"
    plan = threshold_plan(noise, a.epsilon, a.delta, c, max_rows_per_value=r)
    measurement = make_threshold_partition_selection(plan, counts=True, source=source)
    spent_eps, spent_delta = (float(x) for x in measurement.map(1))
    options = choose_unknown_domain(a.k, a.epsilon, a.delta, c, r)[1]
    option = next(o for o in options if o.mechanism == mech)
    parameters = _parameters(a, f"{noise}_threshold") | {
        "scale": plan.scale,
        "threshold": plan.threshold,
        "max_rows_per_value": r,
    }
    stage = Stage("thresholding, then the k largest noisy counts",
                  f"exact discrete {noise.title()} counts over a threshold", spent_eps,
                  spent_delta, scale=plan.scale, threshold=float(plan.threshold))  # fmt: skip
    return UnknownDomainPlan("threshold", measurement, (spent_eps, spent_delta),
                             THRESHOLD_NAMES[noise], f"top_k/{noise}_threshold", parameters,
                             float(option.criterion), (stage,), c, r,
                             threshold=plan)  # fmt: skip


def _limited_domain(request: TopKRequest, r: int, source: RandomSource | None) -> UnknownDomainPlan:
    """DR19's limited-domain top-k, the rounds composed by the tightest adaptive theorem
    (``r``: ``max_rows_per_value``, its scale and threshold ``r`` times larger)."""
    a, c, k = request, int(request.max_contributions or 1), request.k
    k_bar = k + K_BAR_EXTRA if a.k_bar is None else check_int(a.k_bar, "k_bar", minimum=k)
    per_round = limited_domain_per_round(k, a.epsilon, a.delta)
    d_thr = a.delta / 2
    # The measurement's own map composes the k rounds by the tightest valid theorem (DR19,
    # Theorem 1 admits any valid bound for k adaptive eps-bounded-range rounds): the ledger is
    # charged exactly what the map states.
    measurement = make_limited_domain_top_k(
        k, k_bar, per_round, delta=d_thr, max_contributions=c, delta_prime=a.delta / 2,
        source=source, max_rows_per_value=r,
    )  # fmt: skip
    spent_eps, spent_delta = (float(x) for x in measurement.map(r))
    theorem = limited_domain_accounting(per_round, k, a.delta / 2)[1]
    threshold = r * limited_domain_threshold(per_round, d_thr, k_bar, c)
    scale = r / per_round
    margin = threshold + scale * math.log(CONFIDENCE / (1 - CONFIDENCE))
    parameters = _parameters(a, "limited_domain") | {
        "k_bar": k_bar,
        "max_rows_per_value": r,
        "accounting": theorem,
        "scale": scale,
        "threshold": threshold,
    }
    stage = Stage(f"limited-domain top-k: {k} peeling rounds at epsilon {per_round:.6g} each "
                  f"over the {k_bar + 1} largest counts", "Gumbel noise, rounds composed by "
                  f"{theorem}", spent_eps, spent_delta, scale=scale, threshold=threshold,
                  memory=(k_bar + 1) * PAIR_BYTES)  # fmt: skip
    return UnknownDomainPlan("limited_domain", measurement, (spent_eps, spent_delta),
                             LIMITED_DOMAIN_NAME, "top_k/limited_domain", parameters,
                             float(margin), (stage,), c, r, k_bar=k_bar)  # fmt: skip


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


def _policy_top_k(request: TopKRequest, r: int, source: RandomSource | None) -> UnknownDomainPlan:
    """Policy Laplace set union, then the top ``k`` of the released values (charged once;
    ``r``: ``max_rows_per_value``, both stages counting rows)."""
    a, c = request, int(request.max_contributions or 1)
    plan = policy_top_k_plan(a.k, a.epsilon, a.delta, c, max_rows_per_value=r)
    measurement = make_policy_top_k(plan, top_k=plan_top_k, counts=a.counts, source=source)
    spent_eps, spent_delta = (float(x) for x in measurement.map(1))
    sure = policy_sure_count(plan.set_union)
    parameters = _parameters(a, "policy_top_k") | {
        "max_rows_per_value": r,
        "set_union_epsilon": plan.set_union.epsilon,
        "set_union_delta": plan.set_union.delta,
        "rho": plan.set_union.rho,
        "scale": plan.set_union.scale,
    }
    su = plan.set_union
    stages = (
        Stage("select values", "policy set union, Policy Laplace", su.epsilon, su.delta,
              scale=su.scale, threshold=su.rho),
        Stage("top-k among the released values", "the known-domain top-k chosen for their "
              "number", plan.epsilon_top_k, plan.delta_top_k),
    )  # fmt: skip
    return UnknownDomainPlan("policy_top_k", measurement, (spent_eps, spent_delta),
                             POLICY_TOP_K_NAME, "top_k/policy_top_k", parameters, float(sure),
                             stages, c, r, policy=plan)  # fmt: skip


# ------------------------------------------------------------------------------------------
# values_per_unit="auto": the private choice of the bound, then the top-k at that bound


@dataclass(frozen=True)
class AutoContributionsPlan:
    """The choice of a bound and the top-k, planned before the charge.

    Attributes
    ----------
    bounds : list of int
        The candidate bounds.
    gem : Measurement
        The generalized exponential mechanism over them (from each bound's score to a bound).
    spent_c : float
        The choice's cost (its map at one person).
    eps_q : float
        The top-k's epsilon: what the choice leaves, rounded down.
    plans : dict
        The top-k's plan at every bound.
    spent_eps, spent_delta : float
        The charge: the choice plus the worst plan (adaptive composition).
    stages : tuple of Stage
        The choice, then the stages of the plan at the bound that costs most (the worst case
        the charge covers).
    """

    bounds: list[int]
    gem: Any
    spent_c: float
    eps_q: float
    plans: dict[int, UnknownDomainPlan]
    spent_eps: float
    spent_delta: float
    stages: tuple[Stage, ...]


def auto_contributions_plan(
    request: TopKRequest,
    bounds: Sequence[int],
    persons_in_driver: bool,
    source: RandomSource | None = None,
) -> AutoContributionsPlan:
    """The budget split (the request's ``auto_fraction`` of its ``epsilon`` to the choice, the
    rest to the top-k), GEM over ``bounds`` at sensitivity ``r``, and the top-k planned at every
    bound (each checked before the charge).

    Privacy: GEM is ``eps_c``-DP (seed 002, the exponential mechanism's proof;
    docs/private_selection.md, "Generalized exponential mechanism": every score moves by at
    most ``r``), the top-k at the chosen bound ``(eps(m), delta(m))``-DP; by adaptive
    composition (seed 002) the pair is ``(eps_c + max_m eps(m), max_m delta(m))``-DP.

    Parameters
    ----------
    request : TopKRequest
        The top-k's checked arguments, without candidates, with ``values_per_unit="auto"``
        (``max_contributions`` ``None``) and a privacy unit.
    bounds : sequence of int
        The candidate bounds (``DEFAULT_CONTRIBUTIONS``).
    persons_in_driver : bool
        The engine's declared capability (:func:`unknown_domain_plan`).
    source : RandomSource or None
        The randomness.

    Returns
    -------
    AutoContributionsPlan
        The choice, every bound's plan, the charge and the stages.
    """
    r = int(request.rows_per_value)
    eps, delta, k = request.epsilon, request.delta, request.k
    candidates = list(bounds)
    eps_choice = first_share(eps, request.auto_fraction).first_epsilon
    gem = bound_choice(candidates, [Fraction(r)] * len(candidates), eps_choice, source)
    spent_c = float(gem.map(1))
    eps_q = remainder(eps, spent_c)
    plans: dict[int, UnknownDomainPlan] = {}
    for m in candidates:
        mech_m = cast(Mechanism, mechanism_at(request.mechanism, k, eps_q, delta, m, r,
                                              request.k_bar))  # fmt: skip
        at_m = replace(request, epsilon=eps_q, max_contributions=m, mechanism=mech_m)
        plans[m] = unknown_domain_plan(at_m, persons_in_driver, source)
    spent_eps = float_up(Fraction(spent_c) + max(Fraction(p.spent[0]) for p in plans.values()))
    spent_delta = max(p.spent[1] for p in plans.values())
    worst_m = max(plans, key=lambda m: (plans[m].spent[0], plans[m].spent[1]))
    choice = Stage("choose values_per_unit", f"generalized exponential mechanism over "
                   f"{len(candidates)} bounds", spent_c)  # fmt: skip
    worst = tuple(replace(s, name=f"{s.name} (at values_per_unit = {worst_m}, the costliest)")
                  for s in plans[worst_m].stages)  # fmt: skip
    return AutoContributionsPlan(candidates, gem, spent_c, eps_q, plans, spent_eps, spent_delta,
                                 (choice, *worst))  # fmt: skip


def mechanism_at(mech: str, k: int, eps: float, delta: float, m: int, r: int,
                 k_bar: int | None) -> str:  # fmt: skip
    """The mechanism of the plan at bound ``m``: the one asked for, or for ``"auto"`` the
    thresholding (Laplace or Gaussian) with the least criterion of
    :func:`~dpselect.planning.unknown_domain_choice.choose_unknown_domain` at ``m`` (public).

    Why thresholding only: the score weighs the ``k``-th count against the count a plan needs,
    which for thresholding is an absolute count (its threshold and ranking noise). The limited
    domain's criterion is a gap above the ``(k_bar + 1)``-th count and policy set union's sure
    count a worst case for one value, neither comparable with it: on NYC flights'
    destinations per plane (top 10, ``bench/bench_auto_contributions_unknown.py``) the
    mixed family chose the limited domain at ``m = 128`` or 256 (recall 0.62 at epsilon 0.5,
    where Laplace thresholding at ``m = 16`` finds 0.89) and thresholding at ``m = 8`` over
    policy set union at epsilon 2 (0.71 against 0.94). With thresholding only, 0.84, 0.89 and
    0.96 at epsilon 0.5, 1 and 2 (the best fixed bound: 0.93, 0.92, 0.93; ``m = 1``: 0.44,
    0.43, 0.41; 10 runs each). Grouped releases keep the whole family
    (:func:`dpselect.recipes.grouped.grouped_top_k`): the top 3 per origin had 0.39, 0.69 and
    0.72 with it against 0.49, 0.59 and 0.60 with thresholding only (best fixed bound 0.56,
    0.70, 0.73), better in two cells of three.

    Parameters
    ----------
    mech : str
        The mechanism asked for (``"auto"`` or a name).
    k : int
        How many values to release.
    eps, delta : float
        The top-k's ``(epsilon, delta)``.
    m : int
        The bound on distinct values per person.
    r : int
        ``max_rows_per_value``.
    k_bar : int or None
        The limited domain's ``k_bar``: given, ``"auto"`` means ``"gumbel"``.

    Returns
    -------
    str
        ``"laplace_histogram"``, ``"gaussian_histogram"``, ``"gumbel"``, or ``mech`` as given.
    """
    if mech != "auto" or k_bar is not None:
        return "gumbel" if mech == "auto" else mech
    options = choose_unknown_domain(k, eps, delta, m, r)[1]
    histograms = [o for o in options if o.mechanism != "gumbel"]
    return min(histograms, key=lambda o: (o.criterion, o.threshold)).mechanism
