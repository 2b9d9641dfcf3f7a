"""The plan of a top-k over public candidates: its mechanism(s), its charge, its stages.

:func:`plan_top_k_candidates` is the one planner of :func:`dpselect.top_k` with candidates: from
the checked :class:`~dpselect.planning.top_k_request.TopKRequest`, the number of candidates,
the scores' multiplicity (from the engine's schema), the ledger's accounting and the source,
it returns a frozen plan, before anything is charged or read:

- a bound given (``Contributions(values_per_unit=m)``): a :class:`CandidatesTopKPlan`, the
  top-k calibrated at ``m`` (:func:`~dpselect.planning.top_k_plan.plan_top_k`), one stage;
- ``values_per_unit="auto"``: an :class:`AutoBoundTopKPlan`, the private choice of ``m`` by
  the generalized exponential mechanism over :data:`DEFAULT_CONTRIBUTIONS`, then the top-k
  planned at every bound, charged once for the composition (two stages).

The recipe (:mod:`dpselect.recipes.top_k`) then charges the plan and runs it: the scores from
the engine, the plan's measurement, and GEM's choice after the charge.

Memory (bytes held at once, from public sizes, ``n`` candidates): every
mechanism receives the ``n`` int64 scores. The selections (permute-and-flip, Laplace, Gumbel,
Gumbel with counts) hold the scores, their clamped int64 copy and the index of the candidates
still in play (``24 n``), and the exact sampler's float pass keeps five float64/int64 arrays
per candidate of a chunk of at most ``CHUNK_SIZE`` (``40 min(n, CHUNK_SIZE)``;
:mod:`dpselect.sampling.noisy_max`). The histograms hold the scores, the noisy counts and
their order (``24 n``). The joint exponential mechanism holds the scores, their sorted copy
and the profile's one slot per candidate (``24 n``); its level tables are built per visited
level, not held at once. The choice of ``m`` at ``rows_per_value = r > 1`` holds the
candidates' scores at every bound (``8 n`` per bound); at ``r = 1`` it reads each unit's
number of values from the engine, a private size: ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from ..core.arithmetic import float_up
from ..sampling.noisy_max import CHUNK_SIZE
from ..sampling.source import RandomSource
from .budget import first_share, remainder
from .contribution_choice import DEFAULT_CONTRIBUTIONS, contribution_choice_cost
from .stage import Stage
from .top_k_plan import TopKPlan, plan_top_k
from .top_k_request import TopKRequest

__all__ = [
    "AutoBoundTopKPlan",
    "CandidatesTopKPlan",
    "plan_top_k_candidates",
    "top_k_memory",
]

#: The name of the private choice of the bound, as a stage.
CHOICE_STAGE = "choose values_per_unit"
_SCORE_BYTES = 8  # one int64 score per candidate
_HISTOGRAMS = ("laplace_histogram", "gaussian_histogram")


def top_k_memory(method: str, n: int) -> int:
    """The bytes a calibrated top-k over ``n`` candidates holds at once (module docstring).

    Parameters
    ----------
    method : str
        The plan's method (:attr:`~dpselect.planning.top_k_plan.TopKPlan.method`).
    n : int
        The number of candidates.

    Returns
    -------
    int
        ``24 n`` for the histograms and the joint mechanism; ``24 n + 40 min(n, CHUNK_SIZE)`` for
        the selections.
    """
    held = 3 * _SCORE_BYTES * n
    if method in _HISTOGRAMS or method == "joint":
        return held
    return held + 5 * _SCORE_BYTES * min(n, CHUNK_SIZE)


def _top_k_stage(name: str, plan: TopKPlan, n: int) -> Stage:
    return Stage(name, plan.method, plan.epsilon, plan.delta, scale=plan.scale,
                 memory=top_k_memory(plan.method, n))  # fmt: skip


@dataclass(frozen=True)
class CandidatesTopKPlan:
    """The top-k over public candidates at a given bound: what is charged and what runs.

    Attributes
    ----------
    top_k : TopKPlan
        The calibrated mechanism (its measurement, cost and accuracy statement).
    max_contributions : int
        The bound ``m`` the scores are computed at.
    name : str
        The ledger entry's mechanism name (``"top_k/<method>"``).
    parameters : dict
        The ledger entry's public parameters.
    stages : tuple of Stage
        One stage: the top-k (its mechanism, cost, scale and memory).
    """

    top_k: TopKPlan
    max_contributions: int
    name: str
    parameters: dict[str, Any]
    stages: tuple[Stage, ...]

    @property
    def charge(self) -> tuple[float, float, float, Literal["pure", "bounded_range", "approx"]]:
        """``(epsilon, delta, rho, kind)``: what the ledger is charged."""
        p = self.top_k
        return p.epsilon, p.delta, p.rho, p.kind


@dataclass(frozen=True)
class AutoBoundTopKPlan:
    """``values_per_unit="auto"`` planned before the charge.

    Attributes
    ----------
    bounds : list of int
        The candidate bounds GEM chooses among.
    rows_cap : int
        ``rows_per_value`` (``r``).
    eps_choice : Fraction
        The epsilon given to the choice; ``spent_c`` is what it costs (GEM's map at 1).
    spent_c, eps_q : float
        The choice's cost and the epsilon each top-k is calibrated to.
    plans : dict of int to TopKPlan
        The top-k planned at every bound.
    epsilon, delta, rho : float
        The composed charge (``spent_c + max_m eps(m)``, ``max_m delta(m)``,
        ``spent_c^2 / 8 + max_m rho(m)``).
    kind : {"pure", "approx"}
        The charge's kind.
    name : str
        The ledger entry's mechanism name.
    parameters : dict
        The ledger entry's public parameters (before the choice).
    stages : tuple of Stage
        The choice, then the top-k at the costliest bound.
    """

    bounds: list[int]
    rows_cap: int
    eps_choice: Fraction
    spent_c: float
    eps_q: float
    plans: dict[int, TopKPlan]
    epsilon: float
    delta: float
    rho: float
    kind: Literal["pure", "approx"]
    name: str
    parameters: dict[str, Any]
    stages: tuple[Stage, ...]

    @property
    def charge(self) -> tuple[float, float, float, Literal["pure", "approx"]]:
        """``(epsilon, delta, rho, kind)``: what the ledger is charged."""
        return self.epsilon, self.delta, self.rho, self.kind

    @property
    def margins(self) -> dict[int, Fraction]:
        """Each bound's plan's score margin (public)."""
        return {m: Fraction(p.margin) for m, p in self.plans.items()}

    def chosen_parameters(self, parameters: dict[str, Any], m: int) -> dict[str, Any]:
        """``parameters`` with the chosen bound ``m`` and its plan's facts (after the choice).

        Parameters
        ----------
        parameters : dict
            The release's parameters (:attr:`parameters`, as the release holds them).
        m : int
            The bound GEM chose.

        Returns
        -------
        dict
            A new dict: ``parameters`` with the bound, its mechanism, scales and the choice
            in words.
        """
        plan, bounds = self.plans[m], self.bounds
        out = dict(parameters)
        out.update(
            max_contributions=m,
            mechanism=plan.method,
            accounting=plan.accounting,
            scale=plan.scale,
            count_scale=plan.count_scale,
            max_contributions_choice=(
                f"max_contributions = {m}, chosen privately among {len(bounds)} bounds "
                f"(1..{bounds[-1]}) by the generalized exponential mechanism at epsilon = "
                f"{self.spent_c:.6g}; the top-k then ran at epsilon = {plan.epsilon:.6g}"
            ),
        )
        return out


def plan_top_k_candidates(
    request: TopKRequest,
    n_candidates: int,
    multiplicity: int | None,
    *,
    accounting: str | None,
    source: RandomSource | None,
) -> CandidatesTopKPlan | AutoBoundTopKPlan:
    """The plan of a top-k over ``n_candidates`` public candidates, from public facts only.

    The histograms' L1 sensitivity ``c`` (selection needs only L-infinity ``r``): with a
    privacy unit the bound ``m``; without one, one row adds 1 to every candidate its value
    matches, and two candidates may match one value ("7" and "07" on an integer column):
    ``multiplicity``, the most that do, which the recipe reads from the engine's schema
    (:meth:`~dpselect.data.engine.Engine.multiplicity`).

    Parameters
    ----------
    request : TopKRequest
        The checked request, with ``candidates``.
    n_candidates : int
        The number of candidates.
    multiplicity : int or None
        The scores' multiplicity without a privacy unit (``None`` with one).
    accounting : str or None
        The ledger's accounting (``"zcdp"`` weighs the zCDP options only,
        :func:`~dpselect.planning.top_k_plan.resolve_top_k_method`); ``None``: no ledger.
    source : RandomSource or None
        Where the measurements' random bits come from; ``None`` is the CSPRNG.

    Returns
    -------
    CandidatesTopKPlan or AutoBoundTopKPlan
        The plan at the given bound, or with the bound chosen privately.

    Raises
    ------
    ParameterError
        A mechanism the public facts exclude (``"gaussian_histogram"`` at ``delta = 0``, ...).
    """
    zcdp = accounting == "zcdp"
    if request.max_contributions is None:
        return _auto_bound_plan(request, n_candidates, zcdp, source)
    m = request.max_contributions
    c = m if request.privacy_unit is not None else int(multiplicity or 1)
    plan = plan_top_k(n_candidates, request.k, request.epsilon, request.delta, request.mechanism,
                      request.counts, c, source, zcdp,
                      max_rows_per_value=request.rows_per_value)  # fmt: skip
    parameters = _parameters(request, n_candidates, m, plan)
    parameters["max_rows_per_value"] = request.rows_per_value
    if c != m:
        parameters["score_l1_sensitivity"] = c
    return CandidatesTopKPlan(plan, m, f"top_k/{plan.method}", parameters,
                              (_top_k_stage("top-k", plan, n_candidates),))  # fmt: skip


def _common(a: TopKRequest, n: int, m: int | str) -> dict[str, Any]:
    """The ledger parameters every top-k over candidates records first."""
    return {"column": a.column, "k": a.k, "epsilon": a.epsilon, "delta": a.delta,
            "n_candidates": n, "privacy_unit": a.privacy_unit,
            "max_contributions": m}  # fmt: skip


def _chosen_by(a: TopKRequest) -> str:
    return "auto" if a.mechanism == "auto" else "user"


def _parameters(a: TopKRequest, n: int, m: int, plan: TopKPlan) -> dict[str, Any]:
    """The ledger parameters of a top-k at the given bound ``m``."""
    parameters = _common(a, n, m)
    parameters.update(mechanism=plan.method, chosen_by=_chosen_by(a), accounting=plan.accounting,
                      scale=plan.scale, count_scale=plan.count_scale)  # fmt: skip
    return parameters


def _auto_bound_plan(
    a: TopKRequest, n: int, zcdp: bool, source: RandomSource | None
) -> AutoBoundTopKPlan:
    """``values_per_unit="auto"``: the budget split, the top-k at every bound, the charge.

    Budget (a public rule): the choice gets ``auto_fraction * epsilon``, which costs ``eps_c``
    (GEM's map at distance 1, :func:`contribution_choice_cost`); the top-k gets ``eps_q =
    epsilon - eps_c`` rounded down (:func:`~dpselect.planning.budget.remainder`). The top-k's
    calibration, mechanism (``"auto"``: by public facts, one of which is ``m``) and cost
    depend on ``m``, so a plan is made for every candidate bound, and the charge is ``eps_c +
    max_m eps_q(m)`` (each ``<= eps_q``: at most ``epsilon``), ``max_m delta(m)``, and in a
    zCDP ledger ``eps_c^2 / 8 + max_m rho(m)``: adaptive composition of an ``eps_c``-DP
    (bounded range) choice and a query whose parameters depend on it (seed 002, "Theorem
    (Simple adaptive composition)"). Its stages: the choice, and the top-k at the bound whose
    plan costs the most (the worst case of the composition).
    """
    r = int(a.rows_per_value)
    bounds = list(DEFAULT_CONTRIBUTIONS)
    eps_choice = first_share(a.epsilon, a.auto_fraction).first_epsilon
    spent_c = contribution_choice_cost(eps_choice, bounds)
    eps_q = remainder(a.epsilon, spent_c)
    plans = {}
    for m in bounds:
        plans[m] = plan_top_k(n, a.k, eps_q, a.delta, a.mechanism, a.counts, m, source, zcdp,
                              max_rows_per_value=r)  # fmt: skip
    spent_eps = float_up(Fraction(spent_c) + max(Fraction(p.epsilon) for p in plans.values()))
    spent_delta = max(p.delta for p in plans.values())
    rho = float_up(Fraction(spent_c) ** 2 / 8 + max(Fraction(p.rho) for p in plans.values()))
    kind: Literal["pure", "approx"] = "approx" if spent_delta > 0 else "pure"
    worst = max(bounds, key=lambda m: (plans[m].epsilon, plans[m].delta))
    choice = Stage(CHOICE_STAGE, "generalized exponential", spent_c,
                   memory=len(bounds) * _SCORE_BYTES * n if r > 1 else None)  # fmt: skip
    top = _top_k_stage(f"top-k at values_per_unit = {worst} (the costliest bound)",
                       plans[worst], n)  # fmt: skip
    return AutoBoundTopKPlan(bounds, r, eps_choice, spent_c, eps_q, plans, spent_eps,
                             spent_delta, rho, kind, "top_k/max_contributions=auto",
                             _auto_parameters(a, n, bounds, r, spent_c, eps_q),
                             (choice, top))  # fmt: skip


def _auto_parameters(a: TopKRequest, n: int, bounds: list[int], r: int, spent_c: float,
                     eps_q: float) -> dict[str, Any]:  # fmt: skip
    """What ``values_per_unit="auto"`` records before the choice."""
    parameters = _common(a, n, "auto")
    parameters.update(max_contributions_candidates=bounds, auto_fraction=a.auto_fraction,
                      choice_epsilon=spent_c, query_epsilon=eps_q,
                      chosen_by=_chosen_by(a))  # fmt: skip
    if r > 1:
        parameters["max_rows_per_value"] = r
    return parameters
