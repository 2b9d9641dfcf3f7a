"""Policy Laplace set union, then a known-domain top-k on the values it released.

The mechanism behind ``top_k(candidates=None)``'s policy path (values from the data): stage 1
is the policy set union (:mod:`dpselect.mechanisms.set_union`, GGKSSY20), stage 2 the top-k
that a planner the caller passes (:func:`dpselect.planning.top_k_plan.plan_top_k`) calibrates
over the released values, composed adaptively; :func:`policy_top_k_plan` splits the budget,
:func:`make_policy_top_k` builds the
:class:`~dpselect.core.measurement.Measurement` and its map (docs/partition_selection.md,
section 3). :mod:`dpselect.recipes.unknown_domain` decides when to run it, opens the data and
charges the ledger. With ``max_rows_per_value = r > 1`` both stages count rows: the set
union's Policy Laplace at ``r`` (budget and per-value caps ``r``), the top-k on each released
value's kept rows (at most ``r`` per person, L-infinity ``r``, L1 ``c r``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from ..core.arithmetic import float_down, float_up
from ..core.errors import ParameterError, PrivacyMapError
from ..core.measurement import Measurement
from ..core.measures import Approximate, MaxDivergence
from ..core.metrics import SymmetricDistance
from ..sampling.source import RandomSource
from .set_union import SetUnionPlan, make_policy_set_union, set_union_plan
from .validate import check_delta, check_int, check_user_epsilon

__all__ = [
    "POLICY_TOP_K_CUTOFF_SCALES",
    "POLICY_TOP_K_FRACTION",
    "CalibratedTopK",
    "PolicyTopKPlan",
    "make_policy_top_k",
    "policy_top_k_plan",
]


#: Policy set union's share of epsilon (and of delta: one half) in the policy-then-top-k path.
POLICY_TOP_K_FRACTION = Fraction(1, 2)
#: The policy's cutoff ``Gamma = rho + cutoff_scales * b`` in this path: a value filled to
#: ``Gamma`` is dropped with probability ``e^-cutoff_scales / 2`` (1.7e-4), not the 2.5% of the
#: keys' ``cutoff_scales = 3`` (every one of the top k must come through; values just above
#: ``rho`` matter less here).
POLICY_TOP_K_CUTOFF_SCALES = 8.0


class CalibratedTopK(Protocol):
    """What stage 2 needs of a calibrated top-k: its measurement (map at one person), its cost
    and whether it releases noisy counts beside the indices."""

    @property
    def measurement(self) -> Measurement:
        """The calibrated top-k."""

    @property
    def epsilon(self) -> float:
        """Its epsilon at one person."""

    @property
    def delta(self) -> float:
        """Its delta at one person."""

    @property
    def returns_counts(self) -> bool:
        """Whether its output is ``(indices, noisy counts)``."""


#: The planner of stage 2, called as ``top_k(n, k, epsilon, delta, "auto", counts, c, source,
#: max_rows_per_value=r)`` once ``n = |S|`` is known.
TopKPlanner = Callable[..., CalibratedTopK]


@dataclass(frozen=True)
class PolicyTopKPlan:
    """Policy Laplace set union, then a known-domain top-k on the released values.

    ``set_union`` is calibrated to ``(fraction * epsilon, delta / 2)``; the top-k gets what the
    set union's map leaves, ``(epsilon_top_k, delta_top_k)``, rounded down.
    """

    k: int
    max_contributions: int
    set_union: SetUnionPlan
    epsilon_top_k: float
    delta_top_k: float
    #: ``r``: both stages count a person's rows of a value, at most ``r``
    max_rows_per_value: int = 1


def policy_top_k_plan(
    k: int,
    epsilon: float,
    delta: float,
    max_contributions: int,
    fraction: Fraction = POLICY_TOP_K_FRACTION,
    cutoff_scales: float = POLICY_TOP_K_CUTOFF_SCALES,
    *,
    max_rows_per_value: int = 1,
) -> PolicyTopKPlan:
    """Calibrate :func:`make_policy_top_k` to ``(epsilon, delta)`` at one person
    (``max_rows_per_value = r``: both stages at ``r``).

    Parameters
    ----------
    k : int
        How many values are released at most, at least 1.
    epsilon : float
        The total epsilon at one person, ``> 0``, read as the decimal it was typed as.
    delta : float
        The total delta at one person, in ``(0, 1)``; half goes to the set union.
    max_contributions : int
        ``c``: how many values one person holds, at least 1.
    fraction : Fraction, default POLICY_TOP_K_FRACTION
        The set union's share of ``epsilon``, in ``(0, 1)``.
    cutoff_scales : float, default POLICY_TOP_K_CUTOFF_SCALES
        The policy's cutoff ``Gamma = rho + cutoff_scales * b``, ``cutoff_scales >= 0``
        (utility only).
    max_rows_per_value : int, default 1
        ``r``: how many of a person's rows of one value count, at least 1.

    Returns
    -------
    PolicyTopKPlan
        The set union's plan and the top-k stage's ``(epsilon_top_k, delta_top_k)``.
    """
    k = check_int(k, "k", minimum=1)
    c = check_int(max_contributions, "max_contributions", minimum=1)
    r = check_int(max_rows_per_value, "max_rows_per_value", minimum=1)
    eps = Fraction(check_user_epsilon(epsilon))
    dlt = Fraction(check_delta(delta, allow_zero=False))
    if not 0 < fraction < 1:
        raise ParameterError(f"fraction must be in (0, 1), got {fraction!r}")
    su = set_union_plan("laplace", float_down(eps * fraction), float_down(dlt / 2), c,
                        cutoff_scales, max_rows_per_value=r)  # fmt: skip
    eps2 = float_down(eps - Fraction(su.epsilon))
    dlt2 = float_down(dlt - Fraction(su.delta))
    if eps2 <= 0 or dlt2 <= 0:  # pragma: no cover - the set union fits within its share
        raise ParameterError("the set union left no budget for the top k")
    return PolicyTopKPlan(k, c, su, eps2, dlt2, r)


def _held_counts(
    persons: Sequence[Sequence[Hashable]], released: list[Any], r: int
) -> npt.NDArray[np.int64]:
    """For each released value, its rows summed over the persons, each person's at most ``r``
    (``r = 1``: the persons holding it)."""
    held: Counter[Any] = Counter()
    for values in persons:  # each person's rows of a value, at most r (r = 1: persons)
        held.update({v: min(n, r) for v, n in Counter(values).items()})
    return np.array([held[v] for v in released], dtype=np.int64)


def _top_k_stage(
    plan: PolicyTopKPlan,
    released: list[Any],
    scores: npt.NDArray[np.int64],
    counts: bool,
    source: RandomSource | None,
    top_k: TopKPlanner,
) -> tuple[list[Any], list[int] | None]:
    """Stage 2: the known-domain top-k on the released values' counts, planned by ``top_k``
    for ``|S|`` candidates within ``(epsilon_top_k, delta_top_k)``."""
    top = top_k(
        len(released),
        min(plan.k, len(released)),
        plan.epsilon_top_k,
        plan.delta_top_k,
        "auto",
        counts,
        plan.max_contributions,
        source,
        max_rows_per_value=plan.max_rows_per_value,
    )
    if top.epsilon > plan.epsilon_top_k or top.delta > plan.delta_top_k:
        raise PrivacyMapError("the top-k stage exceeds its share")  # pragma: no cover
    out = top.measurement(scores)
    if top.returns_counts:
        indices, noisy = out
    else:
        indices, noisy = out, None
    idx = [int(i) for i in np.asarray(indices)]
    values = [released[i] for i in idx]
    return values, ([int(x) for x in noisy] if counts and noisy is not None else None)


def make_policy_top_k(
    plan: PolicyTopKPlan,
    *,
    top_k: TopKPlanner,
    counts: bool = False,
    source: RandomSource | None = None,
) -> Measurement:
    """Policy Laplace set union, then ``top_k`` (``mechanism="auto"``) on the released values.

    Input: each person's values (at most ``c``, :meth:`dpselect.data.engine.Engine.person_values`:
    persons in an order fixed per person). Output: ``(values, noisy counts or None)``, at most
    ``k`` values best first. Stage 1 releases a set ``S`` (GGKSSY20; ``(eps_1, delta_1)`` =
    ``plan.set_union``'s map); stage 2 counts, for each value of ``S``, the persons holding it
    (a monotone vector: one person moves at most ``c`` counts by 1) and runs the known-domain
    top-k ``top_k`` calibrates to ``(epsilon_top_k, delta_top_k)`` for ``|S|`` candidates,
    chosen by public facts and ``|S|`` (an output of stage 1); a stage exceeding its share
    raises before it runs. With ``r = plan.max_rows_per_value > 1``
    a value repeated in a person's list is one row per repeat: stage 1 runs Policy Laplace at
    ``r`` and stage 2 counts each person's rows of the value, at most ``r`` (L-infinity ``r``,
    L1 ``c r``: the top-k is planned at ``max_rows_per_value = r``). For every ``S`` stage 2 is
    ``(epsilon_top_k, delta_top_k)``-DP, so by adaptive composition (Dwork, Rothblum and
    Vadhan 2010; Dwork and Roth 2014, Theorem 3.16) the pipeline is ``(eps_1 + epsilon_top_k,
    delta_1 + delta_top_k)``-DP at one person: the map, rounded up; ``d_in > 1`` raises
    (``docs/partition_selection.md``, section 3).

    Parameters
    ----------
    plan : PolicyTopKPlan
        The calibration (:func:`policy_top_k_plan`).
    top_k : callable
        Stage 2's planner (:data:`TopKPlanner`: the top-k over public candidates,
        :func:`dpselect.planning.top_k_plan.plan_top_k`, with ``mechanism="auto"``).
    counts : bool, default False
        Also release the top-k stage's noisy counts.
    source : RandomSource or None, default None
        Where the random bits of both stages come from; ``None`` is the CSPRNG.

    Returns
    -------
    Measurement
        From the persons' value lists (``SymmetricDistance``) to ``(values, counts)``, with
        ``counts`` a list of ints or ``None`` (``Approximate(MaxDivergence())``).
    """
    set_union = make_policy_set_union(plan.set_union, source=source)
    e1, d1 = set_union.map(1)
    spent = (
        float_up(Fraction(e1) + Fraction(plan.epsilon_top_k)),
        float_up(Fraction(d1) + Fraction(plan.delta_top_k)),
    )

    def function(persons: Sequence[Sequence[Hashable]]) -> tuple[list[Any], list[int] | None]:
        released = set_union(persons)
        if not released:
            return [], ([] if counts else None)
        scores = _held_counts(persons, released, plan.max_rows_per_value)
        return _top_k_stage(plan, released, scores, counts, source, top_k)

    def privacy_map(d_in: Any) -> tuple[float, float]:
        if d_in == 0:
            return (0.0, 0.0)
        if d_in > 1:
            raise PrivacyMapError(f"policy set union is proven for one person, got d_in = {d_in}")
        return spent

    return Measurement(
        input_domain=set_union.input_domain,
        input_metric=SymmetricDistance(),
        output_measure=Approximate(MaxDivergence()),
        function=function,
        privacy_map=privacy_map,
    )
