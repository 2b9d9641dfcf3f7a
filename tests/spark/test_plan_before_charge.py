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
