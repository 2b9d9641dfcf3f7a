"""``top_k(..., mechanism="joint")``: the joint exponential mechanism as a top-k recipe.

The recipe runs :func:`~dpselect.mechanisms.make_joint_top_k` (whose exact law is tested in
tests/mechanisms/test_joint_top_k.py) on the candidates' scores, calibrated to the whole
epsilon at one person: ``scale = 2 r / epsilon`` whatever ``max_contributions`` (one person
moves every score by at most ``r``, so every sequence's error by at most ``r``).
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpselect as dp
from dpselect.core import LInfDistance, MaxDivergence, atom_domain, vector_domain
from dpselect.core.errors import ParameterError
from dpselect.data.query import Query, UnitRule
from dpselect.data.tables import open_table
from dpselect.mechanisms import make_joint_top_k
from dpselect.sampling import InsecureSeededSource
from tests.cli_process import run_cli

CANDIDATES = list("abcdefgh")


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    weights = np.arange(8, 0, -1) / 36
    return pd.DataFrame({
        "user": rng.integers(0, 400, 4000),
        "page": rng.choice(CANDIDATES, 4000, p=weights),
    })  # fmt: skip


FRAME = _frame()


@pytest.mark.parametrize(("unit", "r", "m"), [(None, 1, 1), ("user", 1, 3), ("user", 2, 3)])
def test_the_plan_is_one_exponential_mechanism_at_the_whole_epsilon(unit, r, m) -> None:
    bounds = dp.Contributions(values_per_unit=m, rows_per_value=r) if unit else None
    plan = dp.explain(dp.top_k, FRAME, "page", 3, epsilon=1.0, candidates=CANDIDATES,
                      mechanism="joint",
                      privacy_unit=unit, contributions=bounds)  # fmt: skip
    assert plan.query == "top_k/joint" and plan.kind == "bounded_range"
    assert (plan.epsilon, plan.delta) == (1.0, 0.0)
    assert plan.parameters["scale"] == pytest.approx(2 * r, rel=1e-12)  # 2 r / epsilon
    assert plan.parameters["scale"] >= 2 * r  # rounded so that the map holds


def test_the_release_is_the_mechanism_on_the_scores() -> None:
    """For a fixed seed: the recipe's draw is the mechanism's on the same scores (after the
    63 bits of the bounding salt the recipe reads first)."""
    for seed in range(5):
        got = dp.Session(FRAME, source=InsecureSeededSource(seed)).top_k(
            "page", 3, epsilon=1.0, candidates=CANDIDATES, mechanism="joint"
        )
        src = InsecureSeededSource(seed)
        salt = src.bits(63)
        counts = open_table(FRAME).scores(
            Query("page", UnitRule(values_per_unit=1, salt=salt)), CANDIDATES
        )
        mech = make_joint_top_k(vector_domain(atom_domain(int), size=8),
                                LInfDistance(monotonic=True), MaxDivergence(), k=3,
                                scale=got.parameters["scale"], source=src)  # fmt: skip
        assert got.indices == [int(i) for i in mech(counts)]
        assert got.candidates == [CANDIDATES[i] for i in got.indices]


def test_the_accuracy_statement_is_the_utility_theorem() -> None:
    r = dp.Session(FRAME, source=InsecureSeededSource(1)).top_k(
        "page", 3, epsilon=0.5, candidates=CANDIDATES, mechanism="joint"
    )
    scale = r.parameters["scale"]
    margin = scale * (math.log(math.perm(8, 3)) + math.log(20))  # at 95%: beta = 1/20
    printed = float(re.search(r"minus ([0-9.]+)", r.accuracy).group(1))  # type: ignore[union-attr]
    assert margin <= printed <= margin * 1.01  # rounded up, never down
    assert "8!/(8-3)! ordered sequences" in r.accuracy


def test_grouped_and_per_unit_releases_run() -> None:
    df = FRAME.assign(g=np.where(np.arange(len(FRAME)) % 2 == 0, "x", "y"))
    grouped = dp.Session(df, source=InsecureSeededSource(2)).top_k(
        "page", 2, epsilon=1.0, candidates=CANDIDATES, mechanism="joint", by="g", groups=["x", "y"]
    )
    assert [row["group"] for row in grouped.to_dict()["rows"]][:1] == ["x"]
    unit = dp.Session(
        FRAME,
        privacy_unit="user",
        contributions=dp.Contributions(values_per_unit=2),
        source=InsecureSeededSource(2),
    ).top_k("page", 3, epsilon=1.0, candidates=CANDIDATES, mechanism="joint")
    assert len(unit.candidates) == 3 and unit.parameters["max_contributions"] == 2


def test_refusals_name_the_reason() -> None:
    with pytest.raises(ParameterError, match="counts=True"):
        dp.Session(FRAME).top_k(
            "page", 3, epsilon=1.0, candidates=CANDIDATES, mechanism="joint", counts=True
        )
    with pytest.raises(ParameterError, match="without a candidates list"):
        dp.top_k(FRAME, "page", 3, epsilon=1.0, delta=1e-6, mechanism="joint")


def test_a_zcdp_ledger_is_charged_the_bounded_range_cost(tmp_path) -> None:
    book = dp.Ledger.create(tmp_path / "z.db", 4.0, 1e-6, accounting="zcdp")
    dp.Session(FRAME, ledger=book, source=InsecureSeededSource(3)).top_k(
        "page", 3, epsilon=1.0, candidates=CANDIDATES, mechanism="joint"
    )
    (entry,) = book.entries()
    assert entry.charged_rho == Fraction(1, 8)  # epsilon^2 / 8, the whole list at once


def test_the_command_line_takes_mechanism_joint(tmp_path) -> None:
    data = tmp_path / "visits.csv"
    FRAME.to_csv(data, index=False)
    done = run_cli("top-k", data, "--column", "page", "--k", "3", "--epsilon", "1",
                   "--candidates", ",".join(CANDIDATES), "--mechanism", "joint",
                   "--insecure-seed", "4", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["parameters"]["mechanism"] == "joint" and len(shown["candidates"]) == 3


# ------------------------------------------------------------------ the automatic choice
#: (n, c, k, epsilon) where the joint mechanism's 95% bound on the ranked error E is below the
#: bound of what "auto" picks otherwise (permute-and-flip peeled k times: a unit holds many
#: values), and cells where it is not (one value per unit: the noisy histogram; small k).
JOINT_CELLS = [(104, 47, 20, 0.1), (104, 47, 20, 1.0), (104, 47, 20, 10.0), (56, 20, 10, 1.0)]
OTHER_CELLS = [
    (104, 1, 20, 1.0),  # c = 1: the Laplace histogram, 16 against 188
    (4043, 1, 10, 0.1),
    (57, 1, 20, 10.0),
    (104, 47, 5, 1.0),  # peeled, but k = 5: permute-and-flip's bound is the lower
    (223, 47, 20, 1.0),  # peeled, k = 20, more candidates: 213 against 221
]


@pytest.mark.parametrize(("n", "c", "k", "eps"), JOINT_CELLS)
def test_auto_picks_joint_where_its_error_bound_is_the_lower(n, c, k, eps) -> None:
    from dpselect.planning.top_k_plan import plan_top_k

    plan = plan_top_k(n, k, eps, 0.0, "auto", False, c, None)
    other = plan_top_k(n, k, eps, 0.0, "permute_and_flip", False, c, None)
    joint = plan_top_k(n, k, eps, 0.0, "joint", False, c, None)
    assert plan.method == "joint" and plan.margin == joint.margin < other.margin
    assert (plan.epsilon, plan.delta) == (joint.epsilon, 0.0) and plan.epsilon <= eps
    words = re.search(r"E = max_i .*, ([0-9.]+), is below the ([0-9.]+) that (\w+)", plan.accuracy)
    assert words is not None and words.group(3) == "permute_and_flip"
    assert float(words.group(1)) < float(words.group(2))
    # the same public facts, the same choice: it reads no data
    assert plan_top_k(n, k, eps, 0.0, "auto", False, c, None).method == "joint"


@pytest.mark.parametrize(("n", "c", "k", "eps"), OTHER_CELLS)
def test_auto_keeps_its_choice_where_joint_bounds_no_better(n, c, k, eps) -> None:
    from dpselect.planning.top_k_plan import plan_top_k

    plan = plan_top_k(n, k, eps, 0.0, "auto", False, c, None)
    joint = plan_top_k(n, k, eps, 0.0, "joint", False, c, None)
    assert plan.method != "joint" and plan.margin <= joint.margin
    assert "chose it" not in plan.accuracy


def test_auto_weighs_joint_only_for_pure_dp_without_counts_in_a_basic_ledger() -> None:
    from dpselect.planning.top_k_plan import plan_top_k

    n, c, k, eps = JOINT_CELLS[1]
    assert plan_top_k(n, k, eps, 1e-6, "auto", False, c, None).method != "joint"
    assert plan_top_k(n, k, eps, 0.0, "auto", True, c, None).method != "joint"
    assert plan_top_k(n, k, eps, 0.0, "auto", False, c, None, zcdp_ledger=True).method != "joint"
    r4 = plan_top_k(n, k, eps, 0.0, "auto", False, c, None, max_rows_per_value=4)
    assert r4.method == "joint"  # every bound is r times its r = 1 value: the same choice


def test_the_recipe_runs_joint_under_auto_where_units_hold_many_values() -> None:

    rng = np.random.default_rng(3)
    pages = [f"p{i:02d}" for i in range(56)]
    weights = 1 / np.arange(1, 57)
    frame = pd.DataFrame({
        "user": rng.integers(0, 300, 6000),
        "page": rng.choice(pages, 6000, p=weights / weights.sum()),
    })  # fmt: skip
    many = dp.Session(
        frame,
        privacy_unit="user",
        contributions=dp.Contributions(values_per_unit=20),
        source=InsecureSeededSource(4),
    ).top_k("page", 10, epsilon=1.0, candidates=pages)
    assert many.parameters["mechanism"] == "joint" and many.parameters["chosen_by"] == "auto"
    assert "mechanism 'auto' chose it" in many.accuracy
    one = dp.Session(
        frame,
        privacy_unit="user",
        contributions=dp.Contributions(values_per_unit=1),
        source=InsecureSeededSource(4),
    ).top_k("page", 10, epsilon=1.0, candidates=pages)
    assert one.parameters["mechanism"] == "laplace_histogram"


@pytest.mark.parametrize(("n", "c", "k", "eps"), JOINT_CELLS[:2] + OTHER_CELLS[:1])
def test_the_preview_marks_what_auto_runs(n, c, k, eps) -> None:
    from dpselect.planning.top_k_plan import plan_top_k

    preview = dp.preview_top_k(k, n, epsilon=eps, max_contributions=c)
    (chosen,) = [row for row in preview.rows if row.chosen]
    assert chosen.mechanism == plan_top_k(n, k, eps, 0.0, "auto", False, c, None).method
    (joint,) = [row for row in preview.rows if row.mechanism == "joint"]
    scale = joint.scale  # the reference instance's gap, in closed form
    assert joint.gap_90 == pytest.approx(scale * (math.log(math.comb(n, k) - 1) + math.log(9)))
