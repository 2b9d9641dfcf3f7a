"""Issue 13's small gaps on Spark: best_price from counts (no column collected), schema= on a
Spark frame (checked, never applied), and the bounds-mode quantile accuracy line with the
grid's cell width d (checked by simulation, with the line without d failing it)."""

import math

import numpy as np
import pandas as pd
import pytest

import dpselect as dp
from dpselect.core.errors import DataError, ParameterError
from dpselect.data.engines import spark as spark_engine
from dpselect.data.query import Query
from dpselect.data.tables import open_table
from dpselect.mechanisms.quantile_continuous import continuous_accuracy, make_continuous_quantile
from dpselect.planning.price_request import price_request
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes import best_price, quantile
from dpselect.recipes._common import column_values
from dpselect.sampling.source import InsecureSeededSource


@pytest.fixture(scope="module")
def prices_frame(spark):
    rng = np.random.default_rng(7)
    values = [*np.round(rng.uniform(0, 10, 300), 2), 1.0, 2.5, 2.5, math.inf, -math.inf]
    rows = [(float(v),) for v in values] + [(None,), (math.nan,)]
    return spark.createDataFrame(rows, "v double")


def test_buyers_at_are_the_counts_at_each_price(prices_frame):
    table = open_table(prices_frame)
    values = column_values(table, "v")  # the rule the in-memory path uses (collects)
    prices = [2.5, 1.0, 0.01, 9.99, 2.5, 10.0, 5.5]  # unsorted, with a repeat
    got = table.buyers_at(Query("v"), prices)
    np.testing.assert_array_equal(got, [int(np.sum(values >= p)) for p in prices])
    many = [j / 10 for j in range(1, 101)]  # more than TREE_EDGES: the binary search
    np.testing.assert_array_equal(
        table.buyers_at(Query("v"), many), [int(np.sum(values >= p)) for p in many]
    )


def test_best_price_on_spark_never_collects_the_column(prices_frame, monkeypatch):
    pdf = pd.DataFrame({"v": [r[0] for r in prices_frame.collect()]})

    def refuse(self, column, rule):
        raise AssertionError("the Spark path collected the column")

    monkeypatch.setattr(spark_engine.SparkTable, "_column_values", refuse)
    for kw in ({"prices": [1.0, 2.5, 5.0, 9.0]}, {"price_step": 0.05, "max_price": 10.0}):
        kw = {"max_price": 10.0, **kw}
        a = best_price(pdf, price_request(2.0, column="v", **kw), source=InsecureSeededSource(3))
        b = best_price(
            prices_frame, price_request(2.0, column="v", **kw), source=InsecureSeededSource(3)
        )
        assert a.price == b.price


def test_schema_is_checked_against_the_frame(spark):
    df = spark.createDataFrame([(1, "a", 2.0)], "u long, s string, d double")
    table = open_table(df, schema={"u": "BIGINT", "s": str, "d": "DOUBLE"})
    assert table.columns == {"u": "BIGINT", "s": "VARCHAR", "d": "DOUBLE"}
    with pytest.raises(ParameterError, match=r"'s' as DOUBLE.*Spark frame's column is string"):
        open_table(df, schema={"s": "DOUBLE"})
    with pytest.raises(DataError, match="not a column of the Spark frame"):
        open_table(df, schema={"nope": "DOUBLE"})
    with pytest.raises(ParameterError, match="unknown type"):
        open_table(df, schema={"u": "NOTATYPE"})


def test_schema_through_the_recipes(spark):

    df = spark.createDataFrame([(i % 5, "ab"[i % 2]) for i in range(40)], "u long, s string")
    r = dp.Session(df, schema={"s": "VARCHAR"}, source=InsecureSeededSource(1)).top_k(
        "s", 1, epsilon=1.0, candidates=["a", "b"]
    )
    assert r.candidates[0] in ("a", "b")
    with pytest.raises(ParameterError, match="cast the column in Spark"):
        dp.Session(df, schema={"s": "BIGINT"}).top_k("s", 1, epsilon=1.0, candidates=["a"])


def test_grid_cells_hold_the_row_exactly():
    rng = np.random.default_rng(1)
    for lo, hi, cells in ((0.0, 1.0, 3), (-7.3, 1e6, 1 << 20), (0.1, 0.7, 1000)):
        edges = np.append(spark_engine.grid_edges(lo, hi, cells), hi)
        x = np.concatenate([rng.uniform(lo - 1, hi + 1, 4000), edges, np.nextafter(edges, -9)])
        c = spark_engine.grid_cell(x, lo, hi, cells)
        clamped = np.clip(x, lo, hi)
        assert np.all(edges[c] <= clamped)
        inner = c < cells - 1
        assert np.all(clamped[inner] < edges[c + 1][inner])
        width = spark_engine.grid_cell_width(lo, hi, cells)
        assert np.all(clamped - edges[c] < width) and width <= (hi - lo) / cells * (1 + 1e-9)


def test_quantile_line_on_spark_names_the_grid(spark):
    df = spark.createDataFrame([(float(i),) for i in range(50)], "x double")
    r = quantile(
        df, quantile_request("x", 0.5, 1.0, bounds=(0.0, 64.0)), source=InsecureSeededSource(1)
    )
    assert "value + 2w + d" in r.accuracy[0] and "d = 6.4e-05" in r.accuracy[0]
    levels = [0.2, 0.5, 0.8]
    rec = quantile(
        df,
        quantile_request("x", levels, 1.0, bounds=(0, 64), mechanism="recursive"),
        source=InsecureSeededSource(1),
    )
    assert "2w + d" in rec.accuracy[-1] and "engine grid" in rec.accuracy[-1]
    joint = quantile(
        df,
        quantile_request("x", levels, 1.0, bounds=(0, 64), mechanism="joint"),
        source=InsecureSeededSource(1),
    )
    assert "within d above a released value" in joint.accuracy[-1]


def _violations(stand_in, real, lv, eps, w, conf, extra, runs, seed):
    """How many of ``runs`` releases on the rounded rows break the statement for the real
    rows with ``extra`` added on the upper side."""
    alpha = continuous_accuracy((0.0, 1.0), lv, eps, conf, w).margin
    n = real.size
    bad = 0
    for r in range(runs):
        m = make_continuous_quantile((0.0, 1.0), lv, eps, resolution=w,
                                     source=InsecureSeededSource(seed + r))  # fmt: skip
        v = float(m(stand_in.copy()))
        below = np.sum(real < v - 2 * w)
        above = np.sum(real > v + 2 * w + extra)
        bad += int(below > lv * n + alpha or above > (1 - lv) * n + alpha)
    return bad


def test_the_grid_term_is_needed_and_enough():
    # A capped grid (w < range / 2^20) makes d much larger than w: rows just below a cell's
    # right edge move down by almost d. The statement with + d holds; without it, it fails.
    lo, hi, w = 0.0, 1.0, 2.0**-30
    cells = spark_engine.grid_size(lo, hi, w)
    d = spark_engine.grid_cell_width(lo, hi, cells)
    assert cells == spark_engine.MAX_CELLS and d > 1000 * w
    edges = spark_engine.grid_edges(lo, hi, cells)
    real = np.full(400, edges[cells // 2] + 0.9 * d)
    stand_in = edges[spark_engine.grid_cell(real, lo, hi, cells)]
    conf, runs = 0.9, 60
    # P(more than 20 failures in 60 | each <= 0.1) < 1e-6 (binomial tail): never fails falsely
    assert _violations(stand_in, real, 0.5, 2.0, w, conf, d, runs, 100) <= 20
    assert _violations(stand_in, real, 0.5, 2.0, w, conf, 0.0, runs, 100) > 20
