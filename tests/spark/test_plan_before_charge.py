"""Issue 41, part 2, on the Spark engine: every table recipe releases or refuses before the
ledger moves, at the extremes of epsilon and delta (the matrix of
tests/test_plan_before_charge.py, its table recipes on a Spark frame of the same rows)."""

from __future__ import annotations

from typing import Any

import pytest

import dpselect as dp
from dpselect.core.errors import DPSelectError
from tests.test_plan_before_charge import FRAME, _call

TABLE_RECIPES = [
    "top_k_unit", "top_k_unit_auto", "top_k_by", "partition_selection_unit",
    "quantile_unit", "quantile_autorows", "quantile_by", "best_price_unit", "choose_bounds",
    "choose_max_contributions",
]  # fmt: skip
CASES = [(5e-324, None), (5e-324, 1e-6), (1.0, None), (1.0, 1e-6), (1e6, 1e-300),
         (1e300, 1e-6)]  # fmt: skip


@pytest.fixture(scope="module")
def frame(spark):
    return spark.createDataFrame(FRAME)


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
