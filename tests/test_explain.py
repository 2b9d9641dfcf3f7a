"""``dp.explain`` and ``--explain``: a query's plan before it is paid.

The plan is what the query charges when run: for every recipe variant of the plan-before-charge
matrix (tests/test_plan_before_charge.py), the explained plan names the same release, cost,
kind and public parameters as the ledger entry the same call then writes, and explaining it
charges nothing and runs no release.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import dpselect as dp
import dpselect.recipes.release as release_module
from dpselect.core.errors import BudgetExceeded, ParameterError
from dpselect.planning.epsilon_range import in_a_stage
from tests.cli_process import run_cli
from tests.test_plan_before_charge import FRAME, RECIPES, _call

CASES = [(name, delta) for name in RECIPES for delta in (None, 1e-6)]


def _explained(name: str, delta: float | None, book: Any) -> dp.Plan | None:
    try:
        return dp.explain(_call, name, 1.0, delta, book)
    except ParameterError as exc:
        if "without a charge" in str(exc):  # the matrix skips this combination (no call)
            return None
        raise


@pytest.mark.parametrize(("name", "delta"), CASES, ids=[f"{n}-{d}" for n, d in CASES])
def test_the_plan_is_what_the_run_charges(tmp_path: Any, name: str, delta: float | None) -> None:
    book = dp.Ledger.create(tmp_path / "l.db", 1e6, 0.5)
    plan = _explained(name, delta, book)
    if plan is None:
        return
    assert len(book) == 0, "explain charged the ledger"
    _call(name, 1.0, delta, book)
    (entry,) = book.entries()
    assert (plan.query, plan.kind) == (entry.mechanism, entry.kind)
    assert (plan.epsilon, plan.delta) == (entry.epsilon, entry.delta)
    assert plan.charged == (entry.charged_epsilon, entry.charged_delta, entry.charged_rho)
    assert json.loads(json.dumps(plan.parameters)) == entry.parameters
    assert plan.ledger == book.path and plan.fits is True and plan.refusal is None
    text = str(plan)
    assert text.startswith(f"plan: {entry.mechanism}") and "nothing charged" in text
    json.dumps(plan.to_dict(), allow_nan=False)  # strict JSON


@pytest.mark.parametrize(
    ("name", "delta"),
    [("top_k_unit_auto", None), ("quantile_unit", None), ("top_k_unit", 1e-6),
     ("partition_selection_unit", None)],
)  # fmt: skip
def test_a_zcdp_ledger_is_quoted_in_rho(tmp_path: Any, name: str, delta: float | None) -> None:
    book = dp.Ledger.create(tmp_path / "z.db", 10.0, 1e-6, accounting="zcdp")
    try:
        plan = dp.explain(_call, name, 1.0, delta, book)
    except ParameterError as exc:  # a release with delta > 0 and no rho: refused, as when run
        with pytest.raises(ParameterError, match="zCDP"):
            _call(name, 1.0, delta, book)
        assert "zCDP" in str(exc) and len(book) == 0
        return
    assert len(book) == 0
    _call(name, 1.0, delta, book)
    (entry,) = book.entries()
    assert plan.charged == (entry.charged_epsilon, entry.charged_delta, entry.charged_rho)
    assert plan.charged[2] > 0 and "would be charged rho" in str(plan)


def test_no_release_runs_under_explain(monkeypatch: pytest.MonkeyPatch) -> None:
    """The release (the only step that reads rows) never starts: the stage runner that wraps
    every release raises if called, but for a stage (grouped quantile's plan runs its
    mechanism on the public empty data set before the charge)."""
    runner = release_module.run_as_stages

    def never(release: Any) -> Any:
        if in_a_stage():
            return runner(release)
        raise AssertionError("a release ran under explain")

    monkeypatch.setattr(release_module, "run_as_stages", never)
    for name in ("top_k_unit_auto", "quantile_autobounds_unit", "quantile_by", "top_k_by"):
        delta = 1e-6 if name.endswith("_by") else None
        assert dp.explain(_call, name, 1.0, delta, None) is not None
    with pytest.raises(AssertionError, match="a release ran"):
        _call("top_k_cand", 1.0, None, None)  # the patch does catch a release


def test_a_budget_that_does_not_fit_is_shown_not_raised(tmp_path: Any) -> None:
    book = dp.Ledger.create(tmp_path / "l.db", 0.5, 1e-6)
    plan = dp.explain(dp.top_k, FRAME, "word", 2, epsilon=1.0, candidates=["w1", "w2"], ledger=book)
    assert plan.fits is False and plan.refusal is not None
    assert "does not fit" in str(plan)
    with pytest.raises(BudgetExceeded) as refused:
        dp.top_k(FRAME, "word", 2, epsilon=1.0, candidates=["w1", "w2"], ledger=book)
    assert str(refused.value) == plan.refusal


def test_a_refusal_is_raised_as_when_run() -> None:
    with pytest.raises(ParameterError, match="delta"):
        dp.explain(dp.top_k, FRAME, "word", 2, epsilon=1.0)  # values from the data need delta > 0
    with pytest.raises(ParameterError, match="without a charge"):
        dp.explain(sorted, [3, 1, 2])


def test_a_session_query_is_explained_like_its_shorthand() -> None:
    bounds = dp.Contributions(values_per_unit=2)
    session = dp.Session(FRAME, privacy_unit="user", contributions=bounds)
    cands = [f"w{i}" for i in range(12)]
    plan = dp.explain(session.top_k, "word", 3, epsilon=1.0, candidates=cands)
    same = dp.explain(dp.top_k, FRAME, "word", 3, epsilon=1.0, candidates=cands,
                      privacy_unit="user",
                      contributions=bounds)  # fmt: skip
    assert plan == same
    assert "contributions per unit: 2 values" in str(plan)


def test_the_cli_prints_the_plan_and_charges_nothing(tmp_path: Any) -> None:
    data = tmp_path / "visits.csv"
    FRAME.to_csv(data, index=False)
    ledger = tmp_path / "l.db"
    made = run_cli("budget", "init", "--ledger", ledger, "--epsilon", "5", "--delta", "1e-5")
    assert made.returncode == 0
    runs = {
        "top-k": ["top-k", data, "--column", "word", "--k", "2", "--epsilon", "1",
                  "--candidates", "w1,w2,w3", "--privacy-unit", "user"],
        "keys": ["keys", data, "--column", "word", "--epsilon", "1", "--delta", "1e-6"],
        "quantile": ["quantile", data, "--column", "value", "--q", "0.5", "--epsilon", "1",
                     "--bounds", "0", "100", "--schema", "value:DOUBLE"],
        "price": ["price", data, "--column", "price", "--epsilon", "1", "--n", "300",
                  "--schema", "price:DOUBLE"],
    }  # fmt: skip
    for command, args in runs.items():
        done = run_cli(*args, "--ledger", ledger, "--explain")
        assert done.returncode == 0, (command, done.stderr)
        assert done.stdout.startswith("plan: "), (command, done.stdout)
        assert "fits the budget now" in done.stdout
        shown = run_cli(*args, "--ledger", ledger, "--explain", "--json")
        assert json.loads(shown.stdout)["fits"] is True, command
    assert len(dp.Ledger.open(ledger)) == 0
    refused = run_cli(*runs["top-k"], "--k", "0", "--explain")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
