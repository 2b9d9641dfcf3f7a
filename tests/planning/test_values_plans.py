"""The planners of values from the data and of groups: their stages, checked against their
charge, and printed by ``dp.explain``."""

from __future__ import annotations

import pandas as pd
import pytest

import dpselect as dp
from dpselect.planning.group_plan import (
    Grouping,
    group_selection,
    group_stages,
    split_budget,
    total_cost,
)
from dpselect.planning.partition_selection_plan import (
    group_keys_plan,
    keys_plan,
    optimal_memory,
)
from dpselect.planning.partition_selection_request import partition_selection_request
from dpselect.planning.stage import Stage, check_stages
from dpselect.planning.top_k_request import top_k_request
from dpselect.planning.unknown_domain_choice import (
    LIMITED_DOMAIN_NAME,
    OPTIMAL_NAME,
    POLICY_TOP_K_NAME,
)
from dpselect.planning.unknown_domain_plan import (
    PAIR_BYTES,
    auto_contributions_plan,
    unknown_domain_plan,
)
from dpselect.sampling import InsecureSeededSource

ROWS = pd.DataFrame(
    {
        "user": [f"u{i % 300}" for i in range(900)],
        "item": [f"v{i % 7}" for i in range(900)],
        "group": [f"g{i % 3}" for i in range(900)],
    }
)


def _within_charge(stages: tuple[Stage, ...], spent: tuple[float, float]) -> None:
    check_stages(stages, spent[0], spent[1])  # raises when the stages cost more


# ------------------------------------------------------------------------------------------
# Partition selection


def test_auto_with_one_value_per_unit_plans_the_optimal_rule_with_its_table() -> None:
    request = partition_selection_request("item", 1.0, 1e-6)
    plan = keys_plan(request, persons_in_driver=True)
    (stage,) = plan.stages
    assert plan.method == "optimal" and stage.mechanism == OPTIMAL_NAME
    assert (stage.epsilon, stage.delta, stage.times) == (*plan.spent, 1)
    assert stage.memory == optimal_memory(stage.epsilon, stage.delta) > 0
    assert plan.parameters is not None and plan.parameters["mechanism"] == "optimal"
    _within_charge(plan.stages, plan.spent)


@pytest.mark.parametrize("method", ["laplace", "gaussian"])
def test_thresholding_states_its_threshold_and_scale(method: str) -> None:
    contributions = dp.Contributions(values_per_unit=3)
    request = partition_selection_request(
        "item", 1.0, 1e-6, privacy_unit="user", contributions=contributions, mechanism=method
    )
    plan = keys_plan(request, persons_in_driver=True)
    (stage,) = plan.stages
    assert stage.threshold == plan.described["threshold"] and stage.scale == plan.described["scale"]
    assert stage.memory is None  # one count per distinct value: a private size
    assert stage.epsilon <= 1.0 and stage.delta <= 1e-6
    _within_charge(plan.stages, plan.spent)


def test_auto_picks_the_policy_only_where_the_engine_holds_persons() -> None:
    contributions = dp.Contributions(values_per_unit=5)
    request = partition_selection_request("item", 2.0, 1e-6, privacy_unit="user",
                                          contributions=contributions)  # fmt: skip
    assert keys_plan(request, persons_in_driver=True).method == "policy_laplace"
    assert keys_plan(request, persons_in_driver=False).method == "optimal"


# ------------------------------------------------------------------------------------------
# Top-k without candidates


def _top_k(mechanism: str = "auto", values: int = 1, epsilon: float = 1.0, **kw: object):
    contributions = dp.Contributions(values_per_unit=values)
    return top_k_request("item", 3, epsilon, privacy_unit="user", contributions=contributions,
                         delta=1e-6, mechanism=mechanism, **kw)  # fmt: skip


@pytest.mark.parametrize("mechanism", ["laplace_histogram", "gaussian_histogram"])
def test_thresholding_then_the_top_k_is_one_stage_at_the_charge(mechanism: str) -> None:
    plan = unknown_domain_plan(_top_k(mechanism), persons_in_driver=True)
    (stage,) = plan.stages
    assert plan.path == "threshold" and stage.threshold == plan.parameters["threshold"]
    assert (stage.epsilon, stage.delta) == plan.spent and stage.memory is None
    _within_charge(plan.stages, plan.spent)


def test_the_limited_domain_holds_k_bar_plus_one_counts() -> None:
    plan = unknown_domain_plan(_top_k("gumbel", k_bar=7), persons_in_driver=True)
    (stage,) = plan.stages
    assert plan.mechanism == LIMITED_DOMAIN_NAME and plan.k_bar == 7
    assert stage.memory == 8 * PAIR_BYTES and "3 peeling rounds" in stage.name
    assert stage.scale == plan.parameters["scale"]
    _within_charge(plan.stages, plan.spent)


def test_policy_then_top_k_has_two_stages_within_the_charge() -> None:
    plan = unknown_domain_plan(_top_k(values=10, epsilon=2.0), persons_in_driver=True)
    assert plan.path == "policy_top_k" and plan.mechanism == POLICY_TOP_K_NAME
    select, rank = plan.stages
    assert select.name == "select values" and rank.name.startswith("top-k")
    assert select.epsilon + rank.epsilon <= plan.spent[0]
    _within_charge(plan.stages, plan.spent)
    # without persons in the driver, the same request runs another path
    assert unknown_domain_plan(_top_k(values=10, epsilon=2.0), False).path != "policy_top_k"


def test_the_auto_bound_lists_the_choice_and_the_costliest_plan() -> None:
    request = _top_k(values="auto")
    auto = auto_contributions_plan(request, (1, 2, 4), persons_in_driver=True)
    choice, *rest = auto.stages
    assert choice.name == "choose values_per_unit" and choice.epsilon == auto.spent_c
    assert rest and all("the costliest" in s.name for s in rest)
    assert sorted(auto.plans) == [1, 2, 4]
    _within_charge(auto.stages, (auto.spent_eps, auto.spent_delta))


# ------------------------------------------------------------------------------------------
# Groups


@pytest.mark.parametrize("g", [1, 3])
def test_private_groups_select_first_then_run_g_times(g: int) -> None:
    grouping = Grouping("group", None, g, 0.25)
    budget = split_budget(1.0, 1e-6, grouping, 0.5)
    selection = group_selection(grouping, budget, "user", InsecureSeededSource(1))
    keys = group_keys_plan("auto", budget.group_epsilon, budget.group_delta, 1, 1, None)
    each = keys.stage()
    total = total_cost(budget, grouping, (each.epsilon, each.delta),
                       (selection.epsilon, selection.delta))  # fmt: skip
    select, per_group = group_stages(grouping, selection, each)
    assert select.name == "select groups" and per_group.times == g
    assert (select.threshold is None) == (g == 1)  # the optimal rule for one group per person
    assert (select.memory is None) == (g > 1)
    check_stages((select, per_group), *total)


def test_public_groups_have_no_selection_stage() -> None:
    grouping = Grouping("group", ["g0", "g1"], 2, 0.0)
    budget = split_budget(1.0, 1e-6, grouping, 0.5)
    keys = group_keys_plan("laplace", budget.group_epsilon, budget.group_delta, 2, 1, None)
    (per_group,) = group_stages(grouping, None, keys.stage())
    assert per_group.times == 2 and per_group.threshold == keys.described["threshold"]


# ------------------------------------------------------------------------------------------
# explain() prints the stages


def test_explain_lists_a_partition_selections_stage() -> None:
    plan = dp.explain(dp.partition_selection, ROWS, "item", epsilon=1.0, delta=1e-6)
    text = str(plan)
    assert "stages:" in text and f"1. select values: {OPTIMAL_NAME}" in text


def test_explain_lists_a_top_k_without_candidates_stages() -> None:
    contributions = dp.Contributions(values_per_unit=2)
    plan = dp.explain(dp.top_k, ROWS, "item", 3, epsilon=1.0, delta=1e-6, privacy_unit="user",
                      contributions=contributions, mechanism="gumbel")  # fmt: skip
    assert "1. limited-domain top-k: 3 peeling rounds" in str(plan)


def test_explain_lists_a_grouped_selections_stages() -> None:
    contributions = dp.Contributions(groups_per_unit=2)
    plan = dp.explain(dp.partition_selection, ROWS, "item", epsilon=1.0, delta=1e-6,
                      privacy_unit="user", contributions=contributions, by="group")  # fmt: skip
    text = str(plan)
    assert "1. select groups: partition selection by thresholding" in text
    assert "2. partition selection in each group" in text and "up to 2 runs per unit" in text


def test_the_grouped_selection_planner_returns_its_charge_and_stages() -> None:
    from dpselect.data.tables import open_table
    from dpselect.planning.grouped_keys_plan import grouped_keys_plan

    contributions = dp.Contributions(groups_per_unit=2)
    request = partition_selection_request("item", 1.0, 1e-6, privacy_unit="user",
                                          contributions=contributions, by="group")  # fmt: skip
    plan = grouped_keys_plan(open_table(ROWS), request)
    select, per_group = plan.stages
    assert plan.entry == "keys/by/optimal" and per_group.times == 2
    assert (select.epsilon, select.delta) == plan.select_cost
    assert (per_group.epsilon, per_group.delta) == plan.each
    check_stages(plan.stages, *plan.total)
