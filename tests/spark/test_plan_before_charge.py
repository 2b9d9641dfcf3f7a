"""Issue 41, part 2, on the Spark engine: every table recipe releases or refuses before the
ledger moves, at every epsilon and delta of the matrix of tests/test_plan_before_charge.py
(its table recipes on a Spark frame of the same rows)."""

from __future__ import annotations

from typing import Any

import pytest

import dpselect as dp
from dpselect.core.errors import DPSelectError
from tests.test_plan_before_charge import DELTAS, EPSILONS, FRAME, _call

TABLE_RECIPES = [
    "top_k_unit", "top_k_unit_auto", "top_k_by", "partition_selection_unit",
    "quantile_unit", "quantile_autorows", "quantile_by", "best_price_unit", "choose_bounds",
    "choose_max_contributions",
]  # fmt: skip
#: the whole matrix: 9 epsilons x 3 deltas (those outside [2^-20, 2^20] refused at once)
CASES = [(eps, delta) for eps in EPSILONS for delta in DELTAS]


@pytest.fixture(scope="module")
def frame(spark):
    return spark.createDataFrame(FRAME)


@pytest.mark.slow
@pytest.mark.parametrize("name", TABLE_RECIPES)
def test_spark_releases_or_refuses_before_charge(frame, tmp_path: Any, name: str) -> None:
    released = []
    for eps, delta in CASES:
        book = dp.Ledger.create(tmp_path / f"{eps}-{delta}.db", 1e308, 0.5)
        before = book.spent()
        try:
            result = _call(name, eps, delta, book, frame)
        except DPSelectError:
            assert book.spent() == before, f"{name} at {eps}, {delta}: refused after the charge"
            assert eps != 1.0, f"{name} refused at epsilon 1"
            continue
        if result is not None:
            assert book.spent() != before
            released.append(eps)
    assert 1.0 in released


@pytest.mark.parametrize("name", TABLE_RECIPES)
def test_spark_explain_is_the_charge(frame, tmp_path: Any, name: str) -> None:
    """``dp.explain`` on a Spark frame: the plan names the release, cost and parameters the
    run then charges, and explaining charges nothing (tests/test_explain.py on DuckDB)."""
    delta = 1e-6 if name in ("top_k_unit", "top_k_by", "quantile_by") else None
    book = dp.Ledger.create(tmp_path / "l.db", 1e6, 0.5)
    plan = dp.explain(_call, name, 1.0, delta, book, frame)
    assert len(book) == 0
    _call(name, 1.0, delta, book, frame)
    (entry,) = book.entries()
    assert (plan.query, plan.kind, plan.epsilon, plan.delta) == (
        entry.mechanism, entry.kind, entry.epsilon, entry.delta,
    )  # fmt: skip
    assert plan.charged == (entry.charged_epsilon, entry.charged_delta, entry.charged_rho)
    assert plan.fits is True and plan.source == entry.source
