"""Privacy audit (2026-11-22) on Spark: no error after the charge that depends on the rows."""

import math

import numpy as np
import pytest

from dpselect.core.errors import ParameterError
from dpselect.data.engines import spark as spark_engine
from dpselect.data.query import Query, UnitRule
from dpselect.data.tables import open_table
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes import quantile
from dpselect.sampling.source import InsecureSeededSource

FAR = [math.inf, -math.inf, 1e300, -1e300, 1e20, 5.0, 0.25]


def test_grid_counts_take_rows_far_outside_the_bounds(spark):
    # ANSI Spark (the 4.x default) raised ARITHMETIC_OVERFLOW in floor((x - lo) * scale) for a
    # row far outside the bounds, after the charge: one outlier row decided whether the
    # query failed. The cell is that of the clamped row, as grid_cell computes it.
    frame = spark.createDataFrame([(v,) for v in FAR], "v double")
    cells = 1 << 16
    counts = spark_engine.grid_counts(open_table(frame), "v", 0.0, 10.0, cells)
    expected = np.bincount(spark_engine.grid_cell(np.array(FAR), 0.0, 10.0, cells), minlength=cells)
    np.testing.assert_array_equal(counts, expected)
    for method in ("split", "joint"):
        got = quantile(
            frame,
            quantile_request("v", [0.25, 0.75], 1.0, bounds=(0, 10), mechanism=method),
            source=InsecureSeededSource(1),
        )
        assert all(0 <= v <= 10 for v in got.values)


def test_bounds_whose_width_overflows_are_refused_before_the_charge(spark):
    frame = spark.createDataFrame([(1.0,)], "v double")
    with pytest.raises(ParameterError, match="bounds"):
        quantile(frame, quantile_request("v", 0.5, 1.0, bounds=(-1e308, 1e308)))


def test_int_candidates_on_text_take_huge_and_infinite_rows(spark):
    # The integrality test floor(x) = x overflowed a long on "inf" or "1e300" (Spark's floor
    # of a double is a long): an ANSI error after the charge, decided by one row. The scores
    # are DuckDB's (the oracle).
    import pandas as pd

    # ("4.0" is left out: Spark's try_cast to long refuses it where DuckDB's takes it, an
    # engine difference in matching, not in privacy: each is a rule row by row)
    rows = ["inf", "-inf", "1e300", "-1e20", "9.3e18", "4", " 4 ", "4.5", "x", "nan"]
    users = list(range(len(rows)))
    frame = spark.createDataFrame(list(zip(rows, users, strict=True)), "s string, u long")
    local = open_table(pd.DataFrame({"s": rows, "u": users}))
    cands = [4, 5, -(10**18)]
    for unit in (None, "u"):
        got = open_table(frame).scores(
            Query("s", UnitRule(privacy_unit=unit, values_per_unit=1, salt=3)), cands
        )
        np.testing.assert_array_equal(
            got,
            local.scores(Query("s", UnitRule(privacy_unit=unit, values_per_unit=1, salt=3)), cands),
        )
