"""The top-k without a candidate list, made ready to release: the reads and the statements of
a plan.

:func:`~dpselect.planning.unknown_domain_plan.unknown_domain_plan` decides the path
(thresholding then the top k, the limited domain, or policy set union then the top k), its
calibration, its charge and its stages from public facts. :func:`unknown_domain_release` opens
the data (schema only), asks the planner with the engine's declared capability, and pairs the
plan with what runs after the charge (:attr:`UnknownDomainRelease.pick`: the engine's read,
then the plan's measurement) and the result's accuracy statement. The charge, then the pick,
is :func:`dpselect.recipes.unknown_domain.run_unknown_domain_plan`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.arithmetic import printed_up
from ..data.engine import Engine
from ..data.query import Query, UnitRule
from ..mechanisms.set_union import policy_sure_count
from ..planning.top_k_plan import CONFIDENCE
from ..planning.unknown_domain_choice import noise_halfwidth, sure_release_count
from ..planning.unknown_domain_plan import UnknownDomainPlan, unknown_domain_plan
from ..sampling.source import RandomSource, resolve_source
from .release import open_checked
from .unknown_domain_result import Progress, counted_in_words, ordinal, rank_released

if TYPE_CHECKING:
    from ..planning.top_k_request import TopKRequest

__all__ = ["UnknownDomainRelease", "release_of", "unknown_domain_release"]


@dataclass(frozen=True)
class UnknownDomainRelease:
    """A planned unknown-domain top-k with what runs after its charge.

    Attributes
    ----------
    plan : UnknownDomainPlan
        The plan (:func:`~dpselect.planning.unknown_domain_plan.unknown_domain_plan`).
    pick : callable
        After the charge: the released values and, if asked, their noisy counts.
    accuracy : str
        The result's accuracy statement.
    described : str
        The data's public description (recorded by the ledger).
    """

    plan: UnknownDomainPlan
    pick: Callable[[], tuple[list[Any], list[Any] | None]]
    accuracy: str
    described: str


def unknown_domain_release(
    data: Any,
    request: TopKRequest,
    *,
    source: RandomSource | None = None,
    progress: Progress = None,
    schema: Any = None,
) -> UnknownDomainRelease:
    """Open ``data`` (schema only), plan the ``candidates=None`` top-k of ``request`` with the
    engine's capability, and pair the plan with its release (nothing charged or read).

    Parameters
    ----------
    data : str, path, DataFrame, relation or Engine
        The private rows, as for :func:`dpselect.recipes.top_k.top_k`.
    request : TopKRequest
        The top-k's checked arguments, without candidates, at a numeric ``max_contributions``.
    source : RandomSource or None
        The randomness (``None``: the private default; a seeded source for tests only).
    progress : callable or None
        ``progress(percent)`` while the data are scanned.
    schema : dict, optional
        Declared column types.

    Returns
    -------
    UnknownDomainRelease
        The plan, its pick and its statements.
    """
    table = open_checked(data, request.column, request.privacy_unit, schema)
    plan = unknown_domain_plan(request, table.capabilities.persons_in_driver, source)
    return release_of(table, request, plan, source, progress)


def release_of(
    table: Engine,
    request: TopKRequest,
    plan: UnknownDomainPlan,
    source: RandomSource | None,
    progress: Progress,
) -> UnknownDomainRelease:
    """What runs after ``plan``'s charge: the engine's read (a fresh salt), then the plan's
    measurement; and the accuracy statement.

    Parameters
    ----------
    table : Engine
        The opened table.
    request : TopKRequest
        The checked request (its column, unit, ``k`` and ``counts``).
    plan : UnknownDomainPlan
        The plan.
    source : RandomSource or None
        The randomness (the salt, the ranking's ties).
    progress : callable or None
        ``progress(percent)`` while the data are scanned.

    Returns
    -------
    UnknownDomainRelease
        The plan, its pick and its statements.
    """
    column, k, counts, c, r = request.column, request.k, request.counts, plan.c, plan.r
    measurement = plan.measurement

    def rule() -> UnitRule:
        return UnitRule(request.privacy_unit, c, r, salt=resolve_source(source).bits(63))

    def pick() -> tuple[list[Any], list[Any] | None]:
        if plan.path == "policy_top_k":
            persons = table.person_values(Query(column, rule(), progress=progress))
            values, noisy = measurement(persons)
            return values, noisy if counts else None
        if plan.path == "limited_domain":
            assert plan.k_bar is not None
            top = table.counts(Query(column, rule(), progress=progress), plan.k_bar + 1)
            return list(measurement(dict(top))), None
        hist = dict(table.counts(Query(column, rule(), progress=progress)))
        kept: dict[Any, int] = measurement(hist)
        ranked = rank_released(kept, k, source)
        return ranked, [kept[v] for v in ranked] if counts else None

    return UnknownDomainRelease(plan, pick, _accuracy(plan), table.description)


def _accuracy(plan: UnknownDomainPlan) -> str:
    """The result's accuracy statement for each path."""
    r = plan.r
    if plan.threshold is not None:
        t = plan.threshold
        half = noise_halfwidth(t)
        return (
            f"accuracy: a value {counted_in_words(sure_release_count(t), r)} is "
            f"released with probability at least {CONFIDENCE:.0%}; released values are ranked by "
            f"noisy count; for any one value, its noisy count is within +-{half} of its true "
            f"count with probability at least {CONFIDENCE:.0%} (counts just above the threshold "
            f"{t.threshold} lean high: they were kept because their noise was)"
        )
    if plan.policy is not None:
        p = plan.policy
        return (
            f"accuracy: a value {counted_in_words(policy_sure_count(p.set_union), r)} is "
            f"released by the set union with probability at least {CONFIDENCE:.0%}, whatever the "
            "other values; the released values are then ranked by the top-k mechanism chosen for "
            f"their number at epsilon = {printed_up(p.epsilon_top_k)}, delta = "
            f"{p.delta_top_k:.3g}"
        )
    assert plan.k_bar is not None
    return (
        f"accuracy: a value whose score exceeds the {ordinal(plan.k_bar + 1)} largest score by "
        f"at least {printed_up(plan.margin)} is ranked above the stopping threshold with "
        f"probability at least {CONFIDENCE:.0%} (Gumbel noise, Durfee and Rogers 2019)"
    )
