"""The plan of a partition selection: its mechanism, calibrated, its charge and its stages.

``partition_selection`` answers "which values can I publish at all". Its planner reads public
facts only (the checked
:class:`~dpselect.planning.partition_selection_request.PartitionSelectionRequest` and the
engine's declared capability ``persons_in_driver``): ``mechanism="auto"`` picks by
:func:`~dpselect.planning.unknown_domain_choice.choose_keys_method`, the mechanism is
calibrated (DVGM22's optimal rule, policy set union, or thresholding of exact counts), and the
plan states its charge (the measurement's own map at one person), the ledger entry's
parameters and its one stage. A grouped selection's per-group mechanism is planned here too
(:func:`group_keys_plan`). Nothing is opened, read or charged.

Memory (a stage's ``memory``): optimal partition selection holds its table of release
probabilities, about ``ln(1/delta) / epsilon`` balls (:func:`optimal_memory`); thresholding
holds one count per distinct value and policy set union each person's values, both sized
by the data (private), so ``None``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Literal

from ..core.errors import ParameterError
from ..mechanisms.partition_selection import (
    make_optimal_partition_selection,
    make_threshold_partition_selection,
    pi_steps_at_least,
    threshold_plan,
)
from ..mechanisms.set_union import (
    SetUnionPlan,
    make_policy_set_union,
    policy_sure_count,
    set_union_plan,
)
from ..sampling.source import RandomSource
from .partition_selection_request import PartitionSelectionRequest
from .stage import Stage
from .unknown_domain_choice import (
    OPTIMAL_NAME,
    POLICY_NAMES,
    choose_keys_method,
    optimal_sure_count,
    sure_release_count,
)

__all__ = [
    "BALL_BYTES",
    "GroupKeys",
    "KeysPlan",
    "check_keys_engine",
    "group_keys_plan",
    "keys_plan",
    "optimal_memory",
]

#: The bytes of one ball of optimal partition selection's table of release probabilities (a
#: ``flint.arb`` object at 128 bits: ``sys.getsizeof`` gives 72).
BALL_BYTES = 72


def optimal_memory(epsilon: float, delta: float) -> int:
    """The bytes optimal partition selection's table holds: about ``N + 1`` balls.

    ``N``, the table's length, is about ``ln(1/delta) / epsilon``
    (:func:`~dpselect.mechanisms.partition_selection.pi_steps_at_least`, a public bound), each
    entry a ball of :data:`BALL_BYTES`; the table is computed once, before the charge, and
    held while the selection runs.

    Parameters
    ----------
    epsilon, delta : float
        The selection's ``(epsilon, delta)``.

    Returns
    -------
    int
        ``(ceil(N) + 1) * BALL_BYTES``.
    """
    steps = pi_steps_at_least(Fraction(epsilon), Fraction(delta))
    return (math.ceil(steps) + 1) * BALL_BYTES


@dataclass(frozen=True)
class KeysPlan:
    """A partition selection calibrated, not yet charged.

    Attributes
    ----------
    method : str
        The mechanism run (``"optimal"``, ``"laplace"``, ``"gaussian"``, ``"policy_laplace"``,
        ``"policy_gaussian"``).
    measurement : Measurement
        The selection: from each value's count (or each person's values, policy set union) to
        the released values.
    name : str
        The mechanism's name, as results cite it.
    sure : int
        The count a value needs to be released with probability at least 95%.
    described : dict
        What the result records of the mechanism (its threshold, scale, ...).
    policy : SetUnionPlan or None
        The policy set union's plan (``None`` for the other mechanisms).
    bound : int
        The values kept per person.
    r_sel : int
        The rows counted per value (1: the selection counts persons).
    spent : (float, float)
        The charge: the measurement's map at one person.
    parameters : dict
        The ledger entry's and the result's public parameters.
    stages : tuple of Stage
        The release's one stage.
    """

    method: str
    measurement: Any
    name: str
    sure: Any
    described: dict[str, Any]
    policy: SetUnionPlan | None
    bound: int
    r_sel: int
    spent: tuple[float, float] = (0.0, 0.0)
    parameters: dict[str, Any] | None = None
    stages: tuple[Stage, ...] = ()

    @property
    def entry(self) -> str:
        """The ledger entry's mechanism name."""
        return f"keys/{self.method}"


def check_keys_engine(method: str, persons_in_driver: bool) -> None:
    """Refuse policy set union on an engine that does not hold persons in the driver.

    Parameters
    ----------
    method : str
        The mechanism asked for.
    persons_in_driver : bool
        The engine's declared capability
        (:attr:`dpselect.data.engine.Capabilities.persons_in_driver`).

    Raises
    ------
    ParameterError
        A policy mechanism on an engine without persons in the driver (a public fact).
    """
    if method.startswith("policy") and not persons_in_driver:
        raise ParameterError(
            f"mechanism {method!r} reads each person's values into the driver, which this "
            "engine does not: use the default engine, or mechanism='laplace' / 'gaussian'"
        )


def keys_plan(
    request: PartitionSelectionRequest,
    persons_in_driver: bool,
    source: RandomSource | None = None,
) -> KeysPlan:
    """The mechanism of an ungrouped partition selection (``"auto"``:
    :func:`~dpselect.planning.unknown_domain_choice.choose_keys_method`, public facts),
    calibrated, with its charge, parameters and stage.

    A released set is valid whatever it was selected by: "auto" and the optimal rule select
    by persons (measured: more values released, recall as high; docs/partition_selection.md,
    section 6), the other mechanisms named by the user count rows at ``r``.

    Parameters
    ----------
    request : PartitionSelectionRequest
        The checked request (without ``by``).
    persons_in_driver : bool
        The engine's declared capability
        (:attr:`dpselect.data.engine.Capabilities.persons_in_driver`).
    source : RandomSource or None
        The randomness the measurement draws from (``None``: the private default).

    Returns
    -------
    KeysPlan
        The calibrated selection. Its charge is its measurement's map at one person (DVGM22,
        Theorem 1; GGKSSY20, Theorem 5.3; thresholding: docs/partition_selection.md).
    """
    q = request
    by_persons = q.rows_per_value > 1 and q.mechanism in ("auto", "optimal")
    method = q.mechanism
    if method == "auto":
        method = choose_keys_method(q.epsilon, q.delta, q.max_contributions, persons_in_driver)
    r_sel = 1 if by_persons else q.rows_per_value  # what the selection counts: rows per value
    if method == "optimal":
        plan = _optimal_keys(q, r_sel, source)
    elif method.startswith("policy"):
        plan = _policy_keys(q, method, r_sel, source)
    else:
        plan = _threshold_keys(q, method, r_sel, source)
    if by_persons:  # a set release: selecting by persons is valid whatever r
        plan = replace(
            plan,
            name=plan.name + "; values selected by persons (a released set needs no row counts)",
            described={**plan.described, "selected_by": "persons"},
        )
    spent_eps, spent_delta = (float(x) for x in plan.measurement.map(1))
    parameters = {
        "column": q.column,
        "epsilon": q.epsilon,
        "delta": q.delta,
        "privacy_unit": q.privacy_unit,
        "max_contributions": q.max_contributions,
        "max_rows_per_value": q.rows_per_value,
        "mechanism": plan.method,
        **plan.described,
    }
    stage = _keys_stage("select values", plan, spent_eps, spent_delta)
    return replace(plan, spent=(spent_eps, spent_delta), parameters=parameters, stages=(stage,))


def _keys_stage(name: str, plan: KeysPlan | GroupKeys, eps: float, delta: float) -> Stage:
    """The stage of a selection: its scale and threshold where it has them, the optimal
    rule's table as its memory (module docstring)."""
    described = plan.described
    memory = optimal_memory(eps, delta) if plan.method == "optimal" else None
    threshold = described.get("threshold")
    return Stage(name, plan.name, eps, delta, scale=described.get("scale"),
                 threshold=None if threshold is None else float(threshold),
                 memory=memory)  # fmt: skip


def _optimal_keys(
    q: PartitionSelectionRequest, r_sel: int, source: RandomSource | None
) -> KeysPlan:
    """DVGM22's optimal partition selection (one value per person: a stricter bound when
    ``c > 1``)."""
    measurement = make_optimal_partition_selection(q.epsilon, q.delta, source=source)
    name = OPTIMAL_NAME
    sure = optimal_sure_count(q.epsilon, q.delta)
    described: dict[str, Any] = {}
    bound = q.max_contributions  # the contributions kept per person
    if bound > 1:  # DVGM22 is proven for one value per person: keep one (a stricter bound)
        bound = 1
        name += ", each person bounded to one value"
        described = {"values_kept_per_person": 1}
    return KeysPlan("optimal", measurement, name, sure, described, None, bound, r_sel)


def _policy_keys(
    q: PartitionSelectionRequest, method: str, r_sel: int, source: RandomSource | None
) -> KeysPlan:
    """Policy set union (Laplace or Gaussian) on each person's values."""
    noise: Literal["laplace", "gaussian"] = "laplace" if method == "policy_laplace" else "gaussian"
    policy = set_union_plan(noise, q.epsilon, q.delta, q.max_contributions,
                            max_rows_per_value=r_sel)  # fmt: skip
    measurement = make_policy_set_union(policy, source=source)
    described = {"rho": policy.rho, "gamma": policy.gamma, "scale": policy.scale}
    return KeysPlan(method, measurement, POLICY_NAMES[noise], policy_sure_count(policy),
                    described, policy, q.max_contributions, r_sel)  # fmt: skip


def _threshold_keys(
    q: PartitionSelectionRequest, method: str, r_sel: int, source: RandomSource | None
) -> KeysPlan:
    """Thresholding of exact Laplace or Gaussian counts."""
    plan = threshold_plan("laplace" if method == "laplace" else "gaussian", q.epsilon, q.delta,
                          q.max_contributions, max_rows_per_value=r_sel)  # fmt: skip
    measurement = make_threshold_partition_selection(plan, counts=False, source=source)
    name = (
        "partition selection by thresholding exact discrete "
        f"{'Laplace' if method == 'laplace' else 'Gaussian'} counts (Korolova et al. 2009; "
        "Wilson et al. 2020)"
    )
    described = {"threshold": plan.threshold, "scale": plan.scale}
    return KeysPlan(method, measurement, name, sure_release_count(plan), described, None,
                    q.max_contributions, r_sel)  # fmt: skip


@dataclass(frozen=True)
class GroupKeys:
    """One group's partition selection, calibrated (:func:`group_keys_plan`).

    Attributes
    ----------
    method : str
        The mechanism run (``"optimal"``, ``"laplace"`` or ``"gaussian"``).
    measurement : Measurement
        One group's selection.
    name : str
        Its name, as results cite it.
    sure : int
        The count a value needs to be released with probability at least 95%.
    bound : int
        The values kept per person and group.
    r_sel : int
        The rows counted per value (1: by persons).
    described : dict
        Its threshold and scale (thresholding; empty for the optimal rule).
    """

    method: str
    measurement: Any
    name: str
    sure: Any
    bound: int
    r_sel: int
    described: dict[str, Any]

    def stage(self) -> Stage:
        """The per-group stage, as run once (the group plan counts it ``G`` times:
        :func:`~dpselect.planning.group_plan.group_stages`).

        Returns
        -------
        Stage
            The selection in one group at its map at one person.
        """
        eps, delta = (float(x) for x in self.measurement.map(1))
        return _keys_stage("partition selection in each group", self, eps, delta)


def group_keys_plan(mechanism: str, eg: float, dg: float, m: int, r: int,
                    source: RandomSource | None) -> GroupKeys:  # fmt: skip
    """The per-group partition selection at ``(eg, dg)``: DVGM22's optimal rule for
    ``"auto"`` and ``"optimal"`` (by persons, one value each), else thresholding.

    Parameters
    ----------
    mechanism : str
        ``"auto"``, ``"optimal"``, ``"laplace"`` or ``"gaussian"``.
    eg, dg : float
        One group's ``(epsilon_g, delta_g)`` (:func:`~dpselect.planning.group_plan.split_budget`).
    m : int
        The values kept per person and group.
    r : int
        The rows counted per value.
    source : RandomSource or None
        The randomness.

    Returns
    -------
    GroupKeys
        The calibrated per-group selection.
    """
    method = "optimal" if mechanism == "auto" else mechanism
    bound, r_sel = m, r  # the values kept per person and group, the rows counted per value
    described: dict[str, Any] = {}
    if method == "optimal":
        measurement = make_optimal_partition_selection(eg, dg, source=source)
        name, sure = OPTIMAL_NAME, optimal_sure_count(eg, dg)
        r_sel = 1  # DVGM22 counts persons: the set it releases needs no row counts
        if m > 1:  # DVGM22 is proven for one value per person: keep one (a stricter bound)
            bound, name = 1, name + ", each person bounded to one value per group"
    else:
        plan = threshold_plan(method, eg, dg, m, max_rows_per_value=r)  # type: ignore[arg-type]
        measurement = make_threshold_partition_selection(plan, counts=False, source=source)
        name = (
            "partition selection by thresholding exact discrete "
            f"{method.title()} counts (Korolova et al. 2009; Wilson et al. 2020)"
        )
        sure = sure_release_count(plan)
        described = {"threshold": plan.threshold, "scale": plan.scale}
    return GroupKeys(method, measurement, name, sure, bound, r_sel, described)
