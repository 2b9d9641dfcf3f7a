"""Stages of a plan: checked against the charge before it is made, printed by explain."""

from __future__ import annotations

import pytest

from dpselect.planning.plan import Plan
from dpselect.planning.stage import Stage, check_stages, memory_text, stages_lines


def test_stages_within_the_charge_pass() -> None:
    stages = [Stage("choose values_per_unit", "generalized exponential", 0.25),
              Stage("top-k", "gumbel", 0.75, scale=2.0)]  # fmt: skip
    check_stages(stages, 1.0, 0.0)


def test_stages_over_the_charge_are_refused() -> None:
    with pytest.raises(ValueError, match="more than its charge"):
        check_stages([Stage("a", "gumbel", 0.6), Stage("b", "gumbel", 0.5)], 1.0, 0.0)


def test_a_stage_run_per_group_counts_times_over() -> None:
    check_stages([Stage("each group", "gumbel", 0.25, times=4)], 1.0, 0.0)
    with pytest.raises(ValueError):
        check_stages([Stage("each group", "gumbel", 0.25, times=5)], 1.0, 0.0)
    with pytest.raises(ValueError):
        check_stages([Stage("each group", "laplace", 0.1, 1e-6, times=2)], 1.0, 1e-6)


def test_a_stage_refuses_a_negative_cost() -> None:
    with pytest.raises(ValueError):
        Stage("a", "gumbel", -0.1)
    with pytest.raises(ValueError):
        Stage("a", "gumbel", 0.1, times=0)


def test_explain_prints_every_stage() -> None:
    plan = Plan(
        "top_k/x",
        1.0,
        0.0,
        "pure",
        None,
        {},
        None,
        None,
        stages=(
            Stage("select groups", "laplace threshold", 0.5, 1e-6, threshold=31.2),
            Stage("top-k", "gumbel", 0.25, times=2, scale=8.0, memory=80_000),
        ),
    )
    text = plan.explain()
    assert (
        "1. select groups: laplace threshold, epsilon = 0.5, delta = 1e-06, threshold = 31.2"
        in text
    )
    assert (
        "2. top-k: gumbel, epsilon = 0.25 in each of up to 2 runs per unit, scale = 8, "
        "memory = 80 kB" in text
    )
    assert plan.to_dict()["stages"][1]["times"] == 2
    assert stages_lines(()) == []
    assert memory_text(1_500_000_000) == "1.5 GB"


def test_a_stage_holding_more_than_the_machine_is_refused_before_the_charge() -> None:
    from dpselect.core.errors import ParameterError
    from dpselect.planning.stage import machine_memory

    big = Stage("top-k", "gumbel", 0.5, memory=3_000_000_000)
    check_stages([big], 1.0, 0.0, memory=4_000_000_000)
    with pytest.raises(ParameterError, match=r"'top-k' \(gumbel\) would hold 3 GB .* 2 GB"):
        check_stages([big], 1.0, 0.0, memory=2_000_000_000)
    total = machine_memory()
    assert total is None or total > 2**20


def test_explain_refuses_a_plan_over_the_machines_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    import pandas as pd

    import dpselect as dp
    from dpselect.core.errors import ParameterError

    monkeypatch.setattr("dpselect.planning.stage.machine_memory", lambda: 1000)
    frame = pd.DataFrame({"v": list("ab")})
    with pytest.raises(ParameterError, match="more than the 1 kB of memory here"):
        dp.top_k(frame, "v", 1, epsilon=1.0, candidates=[str(i) for i in range(100)])
