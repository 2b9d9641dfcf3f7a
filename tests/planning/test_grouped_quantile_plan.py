"""A grouped quantile's stages: the selection of private groups, then each group (G runs)."""

from __future__ import annotations

from fractions import Fraction

import pandas as pd

import dpselect as dp
from dpselect.planning.group_plan import Grouping
from dpselect.planning.grouped_quantile_plan import grouped_quantile_budget

FRAME = pd.DataFrame({"user": [1, 1, 2, 3], "state": list("aabb"), "x": [1.0, 2.0, 3.0, 4.0]})


def test_public_groups_cost_g_times_a_group_of_r_rows() -> None:
    grouping = Grouping("state", ["a", "b"], 2, 0.0)
    plan = grouped_quantile_budget(1.0, 0.0, grouping, 3, privacy_unit="user", source=None)
    assert plan.selection is None and plan.select == (0.0, 0.0)
    assert Fraction(plan.row_epsilon) * 3 <= Fraction(1, 2)
    stages = plan.stages(grouping, "tree")
    assert [(s.name, s.times) for s in stages] == [("quantile in each group", 2)]
    assert Fraction(stages[0].epsilon) * 2 <= Fraction(plan.total[0]) <= 1.0


def test_private_groups_are_selected_first() -> None:
    grouping = Grouping("state", None, 1, 0.25)
    plan = grouped_quantile_budget(1.0, 1e-6, grouping, 1, privacy_unit="user", source=None)
    assert plan.selection is not None
    names = [s.name for s in plan.stages(grouping, "joint")]
    assert names == ["select groups", "quantile in each group"]
    assert plan.total[0] <= 1.0 and plan.total[1] <= 1e-6


def test_explain_lists_the_grouped_quantile_stages() -> None:
    session = dp.Session(FRAME, privacy_unit="user",
                         contributions=dp.Contributions(groups_per_unit=2))  # fmt: skip
    plan = dp.explain(session.quantile, "x", 0.5, epsilon=1.0, bounds=(0.0, 10.0), by="state",
                      groups=["a", "b"])  # fmt: skip
    text = plan.explain()
    assert "1. quantile in each group:" in text
    assert "in each of up to 2 runs per unit" in text
    assert plan.stages[0].times == 2
