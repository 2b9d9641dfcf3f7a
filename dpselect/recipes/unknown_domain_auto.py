"""``top_k(..., max_contributions="auto")`` without a candidate list.

The bound ``m`` (values per person) is chosen privately by the generalized exponential
mechanism, then the unknown-domain top-k (:mod:`dpselect.recipes.unknown_domain`) runs at that
``m``. Planned as a whole before anything is charged:

- **Budget** (a public rule): ``auto_fraction * epsilon`` to the choice (GEM's map at distance
  1, ``eps_c``: :func:`~dpselect.planning.contribution_choice.contribution_choice_cost`), the top-k
  ``eps_q = epsilon - eps_c`` (rounded down) and the whole ``delta``.
- **Plans**: the top-k is planned at every candidate bound ``m`` in
  :data:`~dpselect.planning.contribution_choice.DEFAULT_CONTRIBUTIONS` (its mechanism,
  thresholds and cost
  depend on ``m``; ``"auto"`` picks the mechanism per ``m`` by the same public rule as a given
  ``m``), each checked before the charge; the charge is ``eps_c + max_m eps(m)`` and ``max_m
  delta(m)`` (each at most ``eps_q`` and ``delta``: at most what was asked).
- **Score** of ``m`` (the choice's utility): ``h_(k)(m) - margin(m)``, ``h_(k)(m)`` the
  ``k``-th largest count of the histogram the top-k would read at bound ``m`` (each person's
  distinct values, at most ``m`` of them by the bounding rule for one salt drawn after the
  charge, at most ``r`` rows per value; 0 when fewer than ``k`` values exist) and
  ``margin(m)`` the count the ``k``-th value needs for the plan at ``m`` to find it (public:
  :attr:`~dpselect.recipes.unknown_domain_top_k.UnknownDomainPlan.margin`): how far the ``k``-th
  value clears what the plan needs. With a threshold that grows with ``m``, a larger ``m``
  pays for itself only when the values it adds lift the ``k``-th count more than the
  threshold rises. (The score with candidates, the kept contributions ``sum_u min(c_u, m)``
  minus the margin, rewards contributions to values that never reach the top ``k`` and, with
  the unknown domain's thresholds, chose bounds that released nothing: on NYC flights'
  destinations per plane, ``m = 64`` and no value over the Laplace threshold.)

**Privacy.** For a fixed salt, one person added or removed changes every count of the
histogram at ``m`` by at most ``r`` (they add at most ``r`` rows to each of at most ``m``
values), so the ``k``-th largest count, an order statistic, moves by at most ``r``: every
score has sensitivity ``r``, the margins are public. GEM (seed 002, the exponential
mechanism's proof; docs/private_selection.md, "Generalized exponential mechanism") is then
``eps_c``-DP, and a mixture over a data-independent salt of ``eps_c``-DP mechanisms is
``eps_c``-DP. The top-k at the chosen ``m`` (its own salt) is ``(eps(m), delta(m))``-DP; the
pair is their adaptive composition (seed 002, composition: the second mechanism may depend on
the first's output), at most ``(eps_c + max_m eps(m), max_m delta(m))``, charged once before
either runs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any, cast

from ..core.arithmetic import float_up
from ..data.engine import Engine
from ..data.query import Query, UnitRule
from ..mechanisms.generalized_exponential import make_generalized_exponential_mechanism
from ..planning.budget import first_share, remainder
from ..planning.top_k_mechanisms import Mechanism
from ..sampling.source import RandomSource, resolve_source
from ._common import open_ledger
from .release import charge_then, open_checked
from .top_k_result import TopKResult
from .unknown_domain_plans import Progress, choose_unknown_domain
from .unknown_domain_top_k import UnknownDomainPlan, unknown_domain_plan

if TYPE_CHECKING:
    from ..accounting.ledger import Ledger
    from ..planning.top_k_request import TopKRequest

__all__ = ["kth_count", "mechanism_at", "top_k_unknown_domain_auto_contributions"]


def kth_count(hist: dict[Any, int], k: int) -> int:
    """The ``k``-th largest count of ``hist`` (0 when it holds fewer than ``k`` values).

    Parameters
    ----------
    hist : dict
        Each value's (bounded, exact) count.
    k : int
        The rank, at least 1.

    Returns
    -------
    int
        The ``k``-th largest count, or 0.
    """
    top = sorted(hist.values(), reverse=True)
    return int(top[k - 1]) if len(top) >= k else 0


def top_k_unknown_domain_auto_contributions(
    data: Any,
    request: TopKRequest,
    *,
    ledger: Ledger | str | None = None,
    source: RandomSource | None = None,
    progress: Progress = None,
    schema: Any = None,
) -> TopKResult:
    """The unknown-domain top-k of ``request`` with ``m`` chosen privately (module docstring).

    Parameters
    ----------
    data : str, path, DataFrame, relation or Engine
        The private rows, as for :func:`dpselect.recipes.top_k.top_k`.
    request : TopKRequest
        The top-k's checked arguments, without candidates, with ``values_per_unit="auto"``
        (``max_contributions`` ``None``) and a privacy unit: its ``epsilon`` and ``delta`` are
        the whole release's (the choice and the top-k), its ``auto_fraction`` the choice's
        share, its ``mechanism`` ``"auto"`` or one of :func:`unknown_domain_plan`'s (per
        bound: :func:`mechanism_at`).
    ledger : Ledger, str, path or None
        The budget ledger charged before the data are read.
    source : RandomSource or None
        The randomness (tests only).
    progress : callable or None
        ``progress(percent)`` while the data are scanned.
    schema : dict, optional
        Declared column types.

    Returns
    -------
    TopKResult
        The released values (and noisy counts if asked) at the chosen ``m``, with the total cost
        and the choice in ``parameters["max_contributions_choice"]``.
    """
    column, k, eps, delta = request.column, request.k, request.epsilon, request.delta
    privacy_unit, fraction = request.privacy_unit, request.auto_fraction
    assert privacy_unit is not None  # values_per_unit="auto" needs a unit (top_k_request)
    r = int(request.rows_per_value)
    table = open_checked(data, column, privacy_unit, schema)
    query = _AutoQuery(table, column, k, privacy_unit, r, source, progress)
    auto = _auto_plan(query, request)
    book = open_ledger(ledger)
    parameters: dict[str, Any] = {
        "column": column,
        "k": k,
        "epsilon": eps,
        "delta": delta,
        "privacy_unit": privacy_unit,
        "max_contributions": "auto",
        "max_contributions_candidates": auto.bounds,
        "max_rows_per_value": r,
        "auto_fraction": fraction,
        "choice_epsilon": auto.spent_c,
        "query_epsilon": auto.eps_q,
        "margins": {m: p.margin for m, p in auto.plans.items()},
    }

    def release() -> TopKResult:
        return _release(query, auto, book, parameters)

    return charge_then(
        book, release, auto.spent_eps, auto.spent_delta, None, "approx",
        "top_k/max_contributions=auto", parameters, privacy_unit=privacy_unit,
        source=table.description,
    )  # fmt: skip


@dataclass(frozen=True)
class _AutoQuery:
    """The public parts of the query the choice and the top-k read (the table opened)."""

    table: Engine
    column: str
    k: int
    privacy_unit: str
    r: int
    source: RandomSource | None
    progress: Progress


@dataclass(frozen=True)
class _AutoPlan:
    """The choice and the top-k, planned before the charge: the candidate bounds, GEM over
    them (its cost ``spent_c``), the top-k's budget ``eps_q``, its plan at every bound, and
    the charge (the choice plus the worst plan)."""

    bounds: list[int]
    gem: Any
    spent_c: float
    eps_q: float
    plans: dict[int, UnknownDomainPlan]
    spent_eps: float
    spent_delta: float


def _auto_plan(query: _AutoQuery, request: TopKRequest) -> _AutoPlan:
    """The budget split (the request's ``auto_fraction`` of its ``epsilon`` to the choice, the
    rest to the top-k), GEM over
    :data:`~dpselect.planning.contribution_choice.DEFAULT_CONTRIBUTIONS` at
    sensitivity ``r``, and the top-k planned at every bound (each checked before the charge)."""
    from ..planning.contribution_choice import DEFAULT_CONTRIBUTIONS

    q, r = query, query.r
    eps, delta, fraction = request.epsilon, request.delta, request.auto_fraction
    mech, k_bar = request.mechanism, request.k_bar
    bounds = list(DEFAULT_CONTRIBUTIONS)
    eps_choice = first_share(eps, fraction).first_epsilon
    gem = make_generalized_exponential_mechanism(
        bounds, lambda scores, m: scores[m], [Fraction(r)] * len(bounds), epsilon=eps_choice,
        beta=0.05, source=q.source,
    )  # fmt: skip
    spent_c = float(gem.map(1))
    eps_q = remainder(eps, spent_c)
    plans: dict[int, UnknownDomainPlan] = {}
    for m in bounds:
        mech_m = cast(Mechanism, mechanism_at(mech, q.k, eps_q, delta, m, r, k_bar))
        at_m = replace(request, epsilon=eps_q, max_contributions=m, mechanism=mech_m)
        plans[m] = unknown_domain_plan(q.table, at_m, source=q.source, progress=q.progress)
    spent_eps = float_up(Fraction(spent_c) + max(Fraction(p.spent[0]) for p in plans.values()))
    spent_delta = max(p.spent[1] for p in plans.values())
    return _AutoPlan(bounds, gem, spent_c, eps_q, plans, spent_eps, spent_delta)


def _chosen_bound(query: _AutoQuery, auto: _AutoPlan) -> int:
    """GEM's choice of ``m`` (after the charge): each bound scored by the ``k``-th count of
    the histogram at that bound (one salt) minus the plan's margin (module docstring)."""
    q, bounds = query, auto.bounds
    salt = resolve_source(q.source).bits(63)
    family: dict[int, Fraction] = {}
    for i, m in enumerate(bounds):
        step = None if q.progress is None else _part(q.progress, i, len(bounds))
        rule = UnitRule(q.privacy_unit, m, q.r, salt=salt)
        hist = dict(q.table.counts(Query(q.column, rule, progress=step)))
        family[m] = Fraction(kth_count(hist, q.k)) - Fraction(auto.plans[m].margin)
    return int(auto.gem(family))


def _release(query: _AutoQuery, auto: _AutoPlan, book: Any,
             parameters: dict[str, Any]) -> TopKResult:  # fmt: skip
    """After the charge: choose ``m``, run the plan at ``m``, report the whole cost and the
    choice."""
    bounds = auto.bounds
    m = _chosen_bound(query, auto)
    plan = auto.plans[m]
    values, noisy = plan.pick()
    chosen = dict(plan.parameters)
    chosen.update(
        {key: v for key, v in parameters.items() if key not in ("max_contributions",)},
        max_contributions=m,
        max_contributions_choice=(
            f"max_contributions = {m}, chosen privately among {len(bounds)} bounds "
            f"(1..{bounds[-1]}) by the generalized exponential mechanism at epsilon = "
            f"{auto.spent_c:.6g}; the top-k then ran at epsilon = {plan.spent[0]:.6g}, delta = "
            f"{plan.spent[1]:.3g}"
        ),
    )
    return TopKResult(
        candidates=values,
        indices=None,
        mechanism=plan.mechanism,
        epsilon=auto.spent_eps,
        delta=auto.spent_delta,
        rho=None,
        accuracy=plan.accuracy,
        counts=noisy,
        ledger=None if book is None else book.path,
        parameters=chosen,
    )


def _part(progress: Any, i: int, parts: int) -> Any:
    """The progress callback (percent) of the ``i``-th of ``parts`` histogram passes."""
    return lambda p: progress((100.0 * i + min(max(p, 0.0), 100.0)) / (parts + 1))


def mechanism_at(mech: str, k: int, eps: float, delta: float, m: int, r: int,
                  k_bar: int | None) -> str:  # fmt: skip
    """The mechanism of the plan at bound ``m``: the one asked for, or for ``"auto"`` the
    thresholding (Laplace or Gaussian) with the least criterion of
    :func:`~dpselect.recipes.unknown_domain_plans.choose_unknown_domain` at ``m`` (public).

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
