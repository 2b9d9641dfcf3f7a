"""The quantile and price planners: every stage from public facts, within the charge, and
printed by explain."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpselect
from dpselect.planning.price_plan import plan_price
from dpselect.planning.private_choice import (
    bound_level_shares,
    bounds_choice_stages,
    choice_budget,
)
from dpselect.planning.quantile_plan import (
    TREE_COUNT_FRACTION,
    count_shares,
    plan_auto_bounds,
    plan_auto_rows,
    plan_quantile_method,
)
from dpselect.planning.stage import check_stages


def _total(stages) -> Fraction:
    return sum((Fraction(s.epsilon) * s.times for s in stages), Fraction(0))


def test_the_auto_rule_counts_then_runs_one_mechanism() -> None:
    eps = Fraction(1)
    plan = plan_quantile_method("count", eps, 3, lo_hi=(0.0, 1000.0))
    count, each = count_shares(eps)
    assert (plan.count, plan.each) == (count, each) == (eps * TREE_COUNT_FRACTION, eps * 19 / 20)
    first, second = plan.stages
    assert first.name == "count the rows" and first.mechanism == "discrete Laplace"
    assert first.scale == pytest.approx(20.0)
    assert "tree or the joint" in second.mechanism and second.memory == 8 * (8 + 64)
    assert _total(plan.stages) <= eps
    check_stages(plan.stages, 1.0, 0.0)


def test_a_grain_histogram_replaces_the_count_and_holds_its_bins() -> None:
    plan = plan_quantile_method("count", Fraction(1, 2), 2, lo_hi=(0.0, 10.0), grain_bins=6)
    assert plan.stages[0].memory == 48 and "decimal grain" in plan.stages[0].name


@pytest.mark.parametrize("m", [2, 5, 9])
def test_a_split_runs_once_per_level(m: int) -> None:
    plan = plan_quantile_method("split", Fraction(1), m, lo_hi=(0.0, 1.0))
    (stage,) = plan.stages
    assert stage.times == m and plan.each == Fraction(1, m)
    assert _total(plan.stages) <= 1
    assert "continuous exponential mechanism" in stage.mechanism and stage.memory is None


def test_candidates_hold_one_score_per_candidate_and_level() -> None:
    plan = plan_quantile_method("split", Fraction(1), 2, n_candidates=100)
    assert plan.stages[0].memory == 8 * 100 * 2 and plan.stages[0].times == 2


def test_the_recursive_algorithm_runs_depth_rounds() -> None:
    plan = plan_quantile_method("recursive", Fraction(1), 29, lo_hi=(0.0, 1.0))
    (stage,) = plan.stages
    assert stage.times == 5 and plan.each == Fraction(1, 5)


def test_the_tree_states_its_scale_for_the_rows_per_unit() -> None:
    one = plan_quantile_method("tree", Fraction(1), 2, lo_hi=(0.0, 1.0)).stages[0]
    three = plan_quantile_method("tree", Fraction(1), 2, lo_hi=(0.0, 1.0), rows=3).stages[0]
    assert one.scale == 2.0 and three.scale == 6.0


def test_an_engine_grid_sets_the_memory() -> None:
    plan = plan_quantile_method("joint", Fraction(1), 3, lo_hi=(0.0, 100.0),
                                grid_width=lambda lo_hi, w: 0.5)  # fmt: skip
    assert plan.stages[0].memory == 8 * 3 * 200


def test_private_choices_list_their_stage_first_within_the_charge() -> None:
    budget = choice_budget(Fraction(1), 0.25, lambda share: float(share))
    stages = plan_auto_bounds(budget, "count", 3, rows=2, n_bins=99, threshold=44)
    assert stages[0].name == "choose the bounds" and stages[0].scale == 8.0
    assert stages[0].threshold == 44 and stages[0].memory == 8 * 99
    assert [s.name for s in stages[1:]] == ["count the rows", "quantiles"]
    check_stages(stages, budget.total, 0.0)
    inner = choice_budget(Fraction(budget.query), 0.25, lambda share: float(share))
    rows = plan_auto_rows(budget, "split", 1, 9, bounds_budget=inner)
    assert [s.name for s in rows] == ["choose max_rows", "choose the bounds", "quantiles"]
    assert all(s.scale is None for s in rows)
    check_stages(rows, budget.total, 0.0)


def test_the_bounds_levels_share_the_choice_in_halves() -> None:
    assert bound_level_shares(Fraction(1)) == (Fraction(1, 2), Fraction(1, 2))
    stages = bounds_choice_stages("levels", Fraction(1), [0.5, 0.5], rows=1, n_bins=99,
                                  threshold=None)  # fmt: skip
    assert [s.name for s in stages] == ["choose the lower bound", "choose the upper bound"]


def test_the_price_plan_is_calibrated_to_the_largest_price() -> None:
    plan = plan_price(1.0, 0.95, None, [5, 8, 10], None, 10, 2, "buyer")
    (stage,) = plan.stages
    assert plan.sensitivity == 20 and stage.scale == 20.0 and stage.memory == 24
    assert stage.epsilon == 1.0 and "exponential mechanism" in stage.mechanism


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame({"v": np.arange(1000.0), "u": np.arange(1000) % 300})


@pytest.mark.parametrize(
    ("options", "lines"),
    [
        ({"q": [0.1, 0.9], "bounds": (0, 1000)}, ["1. histogram of the rows' decimal grain",
                                                  "2. quantiles: the tree or the joint"]),
        ({"q": [0.5, 0.9], "candidates": [1, 10, 100]},
         ["1. quantiles: exponential mechanism over the candidates"]),
        ({"q": 0.5, "bounds": "auto"}, ["1. choose the bounds", "2. quantiles"]),
        ({"q": 0.5, "bounds": (0, 1000), "privacy_unit": "u",
          "contributions": dpselect.Contributions(values_per_unit="auto")},
         ["1. choose max_rows", "2. quantiles"]),
    ],
)  # fmt: skip
def test_explain_lists_the_quantile_stages(frame, options, lines) -> None:
    text = dpselect.explain(dpselect.quantile, frame, "v", epsilon=1.0, **options).explain()
    assert "stages:" in text
    for line in lines:
        assert line in text


def test_explain_lists_the_price_and_bounds_stages(frame) -> None:
    text = dpselect.explain(dpselect.best_price, frame, column="v", epsilon=1.0,
                            prices=[100, 500, 900], max_price=1000).explain()  # fmt: skip
    assert "1. choose the price among 3: exponential mechanism" in text
    text = dpselect.explain(dpselect.choose_bounds, frame, "v", 1.0).explain()
    assert "1. choose the bounds: noisy histogram" in text


def test_the_planner_builds_the_method_with_its_stages(frame) -> None:
    from dpselect.planning.quantile_planner import plan_quantile
    from dpselect.recipes.quantile_query import check_query

    query = check_query(frame, "v", [0.25, 0.75], 1.0, (0, 1000), None, confidence=0.95,
                        resolution=None, mechanism="auto", schema=None, privacy_unit=None,
                        rows=1)  # fmt: skip
    plan = plan_quantile(query, None, None)
    assert [s.name for s in plan.stages][-1] == "quantiles"
    assert plan.each == Fraction(19, 20) and "tree" in plan.split
    check_stages(plan.stages, 1.0, 0.0)


def test_groups_run_the_joint_mechanism_at_the_column_types_resolution() -> None:
    from dpselect.planning.quantile_plan import group_options

    options = {"bounds": (0, 100), "mechanism": "auto"}
    assert group_options(options, [0.2, 0.8], Fraction(1))["resolution"] > 0
    assert group_options(options, [0.2, 0.8], None) == options
    assert group_options({**options, "mechanism": "tree"}, [0.2, 0.8], Fraction(1)) == {
        **options, "mechanism": "tree"}  # fmt: skip
