"""The planner of a grouped top-k (``by=``): its stages, checked against its charge, its memory,
and what ``dp.explain`` prints."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import dpselect as dp
from dpselect.core.errors import ParameterError
from dpselect.data.tables import open_table
from dpselect.planning.contribution_choice import DEFAULT_CONTRIBUTIONS
from dpselect.planning.grouped_top_k_plan import GroupedTopKPlan, grouped_top_k_plan
from dpselect.planning.stage import check_stages
from dpselect.planning.top_k_candidates_plan import CHOICE_STAGE, top_k_memory
from dpselect.planning.top_k_request import top_k_request
from dpselect.planning.unknown_domain_choice import LIMITED_DOMAIN_NAME, THRESHOLD_NAMES
from dpselect.planning.unknown_domain_plan import PAIR_BYTES

ROWS = pd.DataFrame(
    {
        "user": [f"u{i % 300}" for i in range(900)],
        "item": [f"v{i % 7}" for i in range(900)],
        "group": [f"g{i % 3}" for i in range(900)],
    }
)
ITEMS = [f"v{i}" for i in range(7)]
GROUPS = ["g0", "g1", "g2", "g9"]


def _plan(accounting: str | None = None, **kwargs: Any) -> GroupedTopKPlan:
    kwargs.setdefault("privacy_unit", "user")
    request = top_k_request("item", 2, 1.0, by="group", **kwargs)
    return grouped_top_k_plan(open_table(ROWS), request, accounting=accounting, source=None)


def _within_charge(plan: GroupedTopKPlan) -> None:
    check_stages(plan.stages, plan.cost[0], plan.cost[1])  # raises when the stages cost more


@pytest.mark.parametrize(
    ("mechanism", "delta"),
    [("permute_and_flip", None), ("gumbel", None), ("laplace_histogram", None),
     ("gaussian_histogram", 1e-6), ("joint", None)],
)  # fmt: skip
def test_public_groups_over_candidates_run_one_top_k_per_group(
    mechanism: str, delta: float | None
) -> None:
    contributions = dp.Contributions(values_per_unit=2, groups_per_unit=2)
    plan = _plan(candidates=ITEMS, groups=GROUPS, mechanism=mechanism, delta=delta,
                 contributions=contributions)  # fmt: skip
    (stage,) = plan.stages
    assert stage.name == "top-k in each group" and stage.mechanism == mechanism
    assert stage.times == 2 and (stage.epsilon, stage.delta) == plan.each
    assert stage.scale == plan.plans[2].top_k.scale  # type: ignore[union-attr]
    # the dense score table and the engine's cells of the 4 listed groups, and one group's run
    assert stage.memory == 32 * len(GROUPS) * len(ITEMS) + top_k_memory(mechanism, len(ITEMS))
    assert plan.entry == f"top_k/by/{mechanism}" and plan.parameters["mechanism"] == mechanism
    assert plan.parameters["groups"] == 4 and plan.parameters["group_epsilon"] == plan.each[0]
    assert plan.cost[0] <= 1.0 and plan.gem is None and plan.selection is None
    _within_charge(plan)


def test_private_groups_over_candidates_select_the_groups_first() -> None:
    contributions = dp.Contributions(values_per_unit=2, groups_per_unit=2)
    plan = _plan(candidates=ITEMS, groups=None, delta=1e-6, contributions=contributions)
    select, per_group = plan.stages
    assert plan.selection is not None and select.name == "select groups"
    assert select.mechanism == plan.selection.name and select.threshold is not None
    assert (select.epsilon, select.delta) == plan.select_cost and select.times == 1
    assert per_group.name == "top-k in each group" and per_group.times == 2
    assert per_group.memory is None  # one row per group the scan finds: a private number
    assert plan.kind == "approx" and plan.parameters["groups"] == "private"
    assert plan.cost[0] <= 1.0 and plan.cost[1] <= 1e-6
    _within_charge(plan)


def test_a_zcdp_ledger_with_public_groups_is_charged_rho() -> None:
    contributions = dp.Contributions(values_per_unit=2)
    plan = _plan("zcdp", candidates=ITEMS, groups=GROUPS, contributions=contributions)
    assert plan.cost[2] is not None and plan.cost[2] > 0
    assert plan.stages[-1].mechanism in ("gumbel", "gaussian_histogram")


@pytest.mark.parametrize(
    ("mechanism", "name", "memory"),
    [
        ("gumbel", LIMITED_DOMAIN_NAME, (len(GROUPS) + 1) * (2 + 10 + 1) * PAIR_BYTES),
        ("laplace_histogram", THRESHOLD_NAMES["laplace"], None),
        ("gaussian_histogram", THRESHOLD_NAMES["gaussian"], None),
    ],
)
def test_values_from_the_data_run_thresholding_or_the_limited_domain_per_group(
    mechanism: str, name: str, memory: int | None
) -> None:
    contributions = dp.Contributions(values_per_unit=3, groups_per_unit=2)
    plan = _plan(groups=GROUPS, delta=1e-6, mechanism=mechanism, contributions=contributions)
    (stage,) = plan.stages
    group = plan.plans[3]
    assert group.name == name and stage.name.endswith(", in each group")
    assert stage.times == 2 and (stage.epsilon, stage.delta) == plan.each
    assert stage.threshold is not None and stage.scale is not None
    assert stage.memory == memory  # thresholding holds every value of a group: private
    assert plan.kind == "approx" and plan.cost[1] <= 1e-6
    _within_charge(plan)


def test_values_from_the_data_with_private_groups() -> None:
    plan = _plan(groups=None, delta=1e-6, contributions=dp.Contributions(values_per_unit=3))
    select, per_group = plan.stages
    assert select.name == "select groups" and per_group.times == 1
    assert per_group.memory is None
    _within_charge(plan)


@pytest.mark.parametrize("candidates", [ITEMS, None])
def test_auto_values_per_unit_chooses_after_the_groups_and_lists_the_costliest_bound(
    candidates: list[str] | None,
) -> None:
    contributions = dp.Contributions(values_per_unit="auto", groups_per_unit=2)
    plan = _plan(candidates=candidates, groups=GROUPS, delta=1e-6, contributions=contributions)
    choice, per_group = plan.stages
    assert choice.name == CHOICE_STAGE and choice.mechanism.startswith("generalized exponential")
    assert choice.epsilon == float(plan.spent_c) and choice.times == 1
    assert plan.bounds == list(DEFAULT_CONTRIBUTIONS) and plan.gem is not None
    worst = max(plan.plans, key=lambda m: plan.plans[m].each)
    assert f"(at values_per_unit = {worst}, the costliest bound)" in per_group.name
    assert per_group.times == 2 and (per_group.epsilon, per_group.delta) == plan.plans[worst].each
    assert plan.entry == "top_k/by/max_contributions=auto"
    assert plan.parameters["max_contributions"] == "auto"
    assert plan.parameters["choice_epsilon"] == choice.epsilon
    if candidates is not None:  # every bound's score table held at once, and the last cells
        n = len(candidates) * len(GROUPS)
        assert choice.memory == (8 * len(DEFAULT_CONTRIBUTIONS) + 24) * n
    assert plan.cost[0] <= 1.0
    _within_charge(plan)


def test_auto_values_per_unit_with_private_groups_runs_the_selection_first() -> None:
    contributions = dp.Contributions(values_per_unit="auto")
    plan = _plan(candidates=ITEMS, groups=None, delta=1e-6, contributions=contributions)
    assert [s.name for s in plan.stages][:2] == ["select groups", CHOICE_STAGE]
    assert plan.stages[1].memory is None  # the groups found: a private number
    _within_charge(plan)


def test_refusals_come_from_public_facts() -> None:
    with pytest.raises(ParameterError, match="private groups"):
        _plan(candidates=ITEMS, groups=None)
    with pytest.raises(ParameterError, match="counts=True without candidates"):
        _plan(groups=GROUPS, delta=1e-6, mechanism="gumbel", counts=True,
              contributions=dp.Contributions(values_per_unit=2))  # fmt: skip


# ------------------------------------------------------------------------------------------
# explain() prints the stages


def test_explain_lists_a_grouped_top_ks_stages() -> None:
    contributions = dp.Contributions(values_per_unit=2, groups_per_unit=2)
    plan = dp.explain(dp.top_k, ROWS, "item", 2, epsilon=1.0, delta=1e-6, candidates=ITEMS,
                      privacy_unit="user", contributions=contributions, by="group")  # fmt: skip
    text = str(plan)
    assert "stages:" in text and "1. select groups: partition selection by thresholding" in text
    assert "2. top-k in each group: " in text and "up to 2 runs per unit" in text


def test_explain_lists_the_choice_of_a_bound_for_grouped_values() -> None:
    contributions = dp.Contributions(values_per_unit="auto")
    plan = dp.explain(dp.top_k, ROWS, "item", 2, epsilon=1.0, delta=1e-6, privacy_unit="user",
                      contributions=contributions, by="group", groups=GROUPS)  # fmt: skip
    text = str(plan)
    assert f"1. {CHOICE_STAGE}: generalized exponential mechanism over 9 bounds" in text
    assert "2. " in text and "in each group (at values_per_unit = " in text
