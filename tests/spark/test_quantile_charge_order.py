"""quantile on Spark reads no row before the charge and fails on no row after it (issue 24,
verification 1).

``SparkTable.grid_width`` (the grid's extra accuracy error, asked before the charge) is
arithmetic on the public bounds and resolution; the rows are read once, after the charge, by
``grid_counts`` (clamped first, so no value can overflow). Spark actions are counted with a
job group: the frame's schema is metadata, so a refused query runs no Spark job at all.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dpselect.accounting.ledger import Ledger
from dpselect.core.errors import BudgetExceeded, ParameterError
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes.quantiles import quantile
from dpselect.sampling import InsecureSeededSource

ODD = [0.5, None, float("nan"), float("inf"), float("-inf"), 1e300, -1e300, 2.0**62, 3.0]


def _jobs(spark, group: str) -> int:
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"bounds": (0.0, 10.0)},
        {"bounds": (0.0, 10.0), "mechanism": "joint", "q": [0.25, 0.75]},
        {"bounds": (0.0, 10.0), "mechanism": "tree", "q": [0.25, 0.75]},
        {"bounds": (0.0, 10.0), "mechanism": "recursive", "q": [0.25, 0.5, 0.75]},
        {"bounds": "auto"},
        {"candidates": [1.0, 2.0, 3.0]},
    ],
)
def test_no_spark_job_before_the_charge_and_none_fails_after(spark, tmp_path: Path, kwargs):
    frame = spark.createDataFrame([(v,) for v in ODD * 5], "x double")
    q = kwargs.pop("q", 0.5)
    book = Ledger.create(tmp_path / "l.db", 1.5)
    group = f"probe-{tmp_path.name}"
    spark.sparkContext.setJobGroup(group, "quantile charge order")
    try:
        with pytest.raises(BudgetExceeded):  # over budget: refused before any Spark job
            quantile(frame, quantile_request("x", q, 2.0, **kwargs), ledger=book)
        assert _jobs(spark, group) == 0
        # within budget: charged, then read; extreme, NaN and NULL rows fail nothing
        result = quantile(
            frame,
            quantile_request("x", q, 1.0, **kwargs),
            ledger=book,
            source=InsecureSeededSource(1),
        )
        assert _jobs(spark, group) > 0
    finally:
        spark.sparkContext.setJobGroup("", "")
    assert len(result.values) == (1 if isinstance(q, float) else len(q))
    assert book.spent() == (1.0, 0.0) and len(book) == 1


def test_a_grid_spark_cannot_build_is_refused_before_the_charge(spark, tmp_path: Path):
    """Bounds whose width overflows a float: the grid (grid_width, before the charge) refuses
    them, so the scan after the charge never meets them."""
    frame = spark.createDataFrame([(1.0,), (2.0,)], "x double")
    book = Ledger.create(tmp_path / "l.db", 5.0)
    with pytest.raises(ParameterError, match="overflows a float"):
        quantile(frame, quantile_request("x", 0.5, 1.0, bounds=(-1.5e308, 1.5e308)), ledger=book)
    assert book.spent() == (0.0, 0.0) and len(book) == 0
