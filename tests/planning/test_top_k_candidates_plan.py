"""The planner of a top-k over public candidates: its stages, its charge, what explain prints."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pandas as pd
import pytest

import dpselect as dp
from dpselect.core.errors import ParameterError
from dpselect.planning.contribution_choice import DEFAULT_CONTRIBUTIONS, contribution_choice_cost
from dpselect.planning.stage import check_stages
from dpselect.planning.top_k_candidates_plan import (
    AutoBoundTopKPlan,
    CandidatesTopKPlan,
    plan_top_k_candidates,
    top_k_memory,
)
from dpselect.planning.top_k_request import TopKRequest, top_k_request
from dpselect.sampling.noisy_max import CHUNK_SIZE

CANDIDATES = [f"w{i}" for i in range(20)]
FRAME = pd.DataFrame({"user": [1, 1, 2, 3, 3, 4], "word": ["w1", "w2", "w1", "w3", "w1", "w2"]})


def _request(**contributions: Any) -> TopKRequest:
    return top_k_request("word", 3, 1.0, candidates=CANDIDATES, privacy_unit="user",
                         contributions=dp.Contributions(**contributions))  # fmt: skip


def _costs(plan: CandidatesTopKPlan | AutoBoundTopKPlan) -> tuple[Fraction, Fraction]:
    eps = sum((Fraction(s.epsilon) * s.times for s in plan.stages), Fraction(0))
    delta = sum((Fraction(s.delta) * s.times for s in plan.stages), Fraction(0))
    return eps, delta


@pytest.mark.parametrize(
    ("mechanism", "delta", "method"),
    [
        ("permute_and_flip", 0.0, "permute_and_flip"),
        ("gumbel", 0.0, "gumbel"),
        ("laplace_histogram", 0.0, "laplace_histogram"),
        ("gaussian_histogram", 1e-6, "gaussian_histogram"),
        ("joint", 0.0, "joint"),
    ],
)
def test_a_given_bound_is_one_stage_within_the_charge(
    mechanism: str, delta: float, method: str
) -> None:
    request = top_k_request("word", 3, 1.0, delta=delta or None, mechanism=mechanism,
                            candidates=CANDIDATES, privacy_unit="user",
                            contributions=dp.Contributions(values_per_unit=2))  # fmt: skip
    plan = plan_top_k_candidates(request, len(CANDIDATES), None, accounting=None, source=None)
    assert isinstance(plan, CandidatesTopKPlan)
    (stage,) = plan.stages
    assert stage.name == "top-k" and stage.mechanism == method and stage.times == 1
    assert stage.scale == plan.top_k.scale and stage.memory == top_k_memory(method, 20)
    eps, dlt, _, _ = plan.charge
    assert _costs(plan) == (Fraction(eps), Fraction(dlt))
    check_stages(plan.stages, eps, dlt)
    assert plan.name == f"top_k/{method}" and plan.parameters["mechanism"] == method
    assert plan.parameters["max_contributions"] == 2


def test_without_a_unit_the_multiplicity_is_the_l1_sensitivity() -> None:
    request = top_k_request("word", 3, 1.0, mechanism="laplace_histogram", candidates=CANDIDATES,
                            contributions=dp.Contributions())  # fmt: skip
    plan = plan_top_k_candidates(request, 20, 2, accounting=None, source=None)
    assert isinstance(plan, CandidatesTopKPlan)
    assert plan.parameters["score_l1_sensitivity"] == 2
    one = plan_top_k_candidates(request, 20, 1, accounting=None, source=None)
    assert isinstance(one, CandidatesTopKPlan)
    assert "score_l1_sensitivity" not in one.parameters
    assert plan.top_k.scale == pytest.approx(2 * one.top_k.scale)


def test_the_memory_counts_the_candidates() -> None:
    assert top_k_memory("laplace_histogram", 1000) == 24_000
    assert top_k_memory("joint", 1000) == 24_000
    assert top_k_memory("gumbel", 1000) == 24_000 + 40_000
    n = 10 * CHUNK_SIZE
    assert top_k_memory("permute_and_flip", n) == 24 * n + 40 * CHUNK_SIZE


@pytest.mark.parametrize("rows", [1, 3])
def test_auto_bound_is_the_choice_then_the_costliest_top_k(rows: int) -> None:
    request = _request(values_per_unit="auto", rows_per_value=rows)
    plan = plan_top_k_candidates(request, 20, None, accounting=None, source=None)
    assert isinstance(plan, AutoBoundTopKPlan)
    choice, top = plan.stages
    assert choice.mechanism == "generalized exponential" and choice.epsilon == plan.spent_c
    assert plan.spent_c == contribution_choice_cost(plan.eps_choice, DEFAULT_CONTRIBUTIONS)
    assert plan.bounds == list(DEFAULT_CONTRIBUTIONS) and set(plan.plans) == set(plan.bounds)
    assert top.epsilon == max(p.epsilon for p in plan.plans.values()) <= plan.eps_q
    assert choice.memory == (None if rows == 1 else 8 * 20 * len(plan.bounds))
    eps, dlt, _, _ = plan.charge
    assert _costs(plan)[0] <= Fraction(eps) <= 1.0
    check_stages(plan.stages, eps, dlt)
    assert plan.name == "top_k/max_contributions=auto"
    chosen = plan.chosen_parameters(dict(plan.parameters), 4)
    assert chosen["max_contributions"] == 4 and plan.parameters["max_contributions"] == "auto"


def test_a_zcdp_ledger_weighs_its_options_only() -> None:
    request = top_k_request("word", 3, 1.0, candidates=CANDIDATES, privacy_unit="user",
                            contributions=dp.Contributions(values_per_unit=1))  # fmt: skip
    plan = plan_top_k_candidates(request, 20, None, accounting="zcdp", source=None)
    assert isinstance(plan, CandidatesTopKPlan)
    assert plan.top_k.method in ("gumbel", "gaussian_histogram")


def test_a_mechanism_the_facts_exclude_is_refused_by_the_planner() -> None:
    request = top_k_request("word", 3, 1.0, mechanism="gaussian_histogram",
                            candidates=CANDIDATES, contributions=dp.Contributions())  # fmt: skip
    with pytest.raises(ParameterError, match="needs delta > 0"):
        plan_top_k_candidates(request, 20, 1, accounting=None, source=None)


def test_explain_lists_the_stages() -> None:
    cands = ["w1", "w2", "w3"]
    plan = dp.explain(dp.top_k, FRAME, "word", 2, epsilon=1.0, candidates=cands,
                      privacy_unit="user", mechanism="gumbel")  # fmt: skip
    text = plan.explain()
    assert "stages:" in text and "1. top-k: gumbel, epsilon = 1" in text and "memory =" in text
    auto = dp.explain(dp.top_k, FRAME, "word", 2, epsilon=1.0, candidates=cands,
                      privacy_unit="user",
                      contributions=dp.Contributions(values_per_unit="auto"))  # fmt: skip
    lines = auto.explain()
    assert "1. choose values_per_unit: generalized exponential" in lines
    assert "2. top-k at values_per_unit = " in lines
    assert auto.stages[0].name == "choose values_per_unit"
