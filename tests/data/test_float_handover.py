"""A pandas frame's float64 column (a NumPy array, a Series) reaches the quantile mechanisms
without a DuckDB query: the same values, in the same order, as the query gives."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpselect.data import frame_types
from dpselect.data.query import Query
from dpselect.data.tables import one_column, open_table


def _query_values(table, column):
    held, table.float_columns = table.float_columns, {}
    try:
        return table.quantile_values(Query(column))
    finally:
        table.float_columns = held


def test_float64_column_is_read_from_the_frame_as_the_query_reads_it():
    rng = np.random.default_rng(4)
    x = rng.normal(0, 1, 50_000)
    x[rng.random(x.shape[0]) < 0.05] = np.nan
    x[:6] = [-0.0, np.inf, -np.inf, 0.0, 1e308, 5e-324]
    frame = pd.DataFrame({"a": x, "b": x.astype(np.float32), "c": np.arange(x.shape[0])})
    table = open_table(frame)
    assert set(table.float_columns) == {"a"}  # float32 and integers go through the query
    got, want = table.quantile_values(Query("a")), _query_values(table, "a")
    assert np.array_equal(got.view(np.int64), want.view(np.int64))  # -0.0 and order kept
    assert not np.shares_memory(got, x)  # the recipe may sort it in place
    seen = []
    table.quantile_values(Query("a", progress=seen.append))
    assert seen == []  # no query: nothing to report (a query under a second reports nothing)
    for data in (x, pd.Series(x, name="v")):
        frame, column = one_column(data, None)
        table = open_table(frame)
        got = table.quantile_values(Query(column))
        assert np.array_equal(got.view(np.int64), _query_values(table, column).view(np.int64))


def test_declared_or_duplicated_columns_are_queried():
    frame = pd.DataFrame({"a": [1.5, np.nan, 2.5]})
    assert open_table(frame, schema={"a": "DOUBLE"}).float_columns == {}
    twice = pd.DataFrame([[1.0, 2.0]], columns=["a", "a"])
    assert frame_types.float64_columns(twice, {}) == {}
