"""DuckDB is the oracle: the same data and salt give the same score vectors on Spark.

Random datasets (with NULLs, empty ones), text and numeric columns, candidates of the
column's type, of another type (numbers on a text column, text on a numeric one), absent and
unconvertible candidates; with and without a privacy unit.
"""

import numpy as np
import pytest

from dpselect.data import scores
from dpselect.data.query import Query
from dpselect.data.tables import open_table
from dpselect.mechanisms.quantile_score import quantile_fraction, rank_excess_of_candidates
from dpselect.recipes.quantiles import quantile_values
from tests.engine_rules import unit_rule

from .helpers import both, random_rows

SEEDS = range(3)
CANDIDATES = {
    "x": [list(range(45)), [str(i) for i in range(45)] + ["07", "x", "1.5"], [3, 1, 99]],
    "s": [[str(i) for i in range(45)] + ["07", "", "a"], list(range(45)), [1.0, 2.5]],
    "d": [[i / 4 for i in range(45)], list(range(12)), ["0.25", "1e0", "no"]],
}


@pytest.fixture(scope="module")
def datasets(spark):
    out = [both(spark, random_rows(seed)) for seed in SEEDS]
    out.append(both(spark, []))  # empty data: every score 0
    return out


def _scores(data, column, cands, **kw):
    return open_table(data).scores(Query(column, unit_rule(**kw)), cands)


@pytest.mark.parametrize("column", ["x", "s", "d"])
def test_scores_without_a_privacy_unit(datasets, column):
    for arrow, frame in datasets:
        for cands in CANDIDATES[column]:
            expected = _scores(arrow, column, cands)
            got = _scores(frame, column, cands)
            np.testing.assert_array_equal(got, expected, err_msg=f"{column} {cands[:3]}")


# The Spark engine implements the portable keyed-hash rule; until DuckDB's engine has it too
# (scores.bounding_key), the bounded scores differ and these tests are expected to fail. Once it
# is there they must pass (strict).
PENDING = pytest.mark.xfail(
    not hasattr(scores, "bounding_key"),
    reason="DuckDB's engine does not have the keyed-hash bounding rule yet (h-bounding)",
    strict=True,
)


@PENDING
@pytest.mark.parametrize("column", ["x", "s"])
@pytest.mark.parametrize("arrays", [True, False], ids=["unit arrays", "no arrays"])
def test_scores_with_a_privacy_unit(datasets, column, arrays, monkeypatch):
    # few candidates: a unit's positions in one set; many (forced here): the seeds joined
    # back and a window (docs/spark.md, "Memory: no unit is held in one array")
    from dpselect.data.engines.spark import bounding

    if not arrays:
        monkeypatch.setattr(bounding, "ARRAY_CANDIDATES", 0)
    for seed, (arrow, frame) in enumerate(datasets):
        for k in (1, 3):
            for cands in CANDIDATES[column][:2]:
                kw = {"privacy_unit": "user", "max_contributions": k, "salt": 1000 + seed}
                expected = _scores(arrow, column, cands, **kw)
                got = _scores(frame, column, cands, **kw)
                np.testing.assert_array_equal(got, expected, err_msg=f"{column} k={k}")


@pytest.mark.parametrize("unit", [None, pytest.param("user", marks=PENDING)])
def test_top_values(datasets, unit):
    for seed, (arrow, frame) in enumerate(datasets):
        for column in ("x", "s"):
            kw = {"privacy_unit": unit, "max_contributions": 2 if unit else 1, "salt": seed}
            expected = open_table(arrow).counts(Query(column, unit_rule(**kw)), 12)
            got = open_table(frame).counts(Query(column, unit_rule(**kw)), 12)
            assert got == expected, (column, unit)


def test_quantile_scores_from_the_spark_histogram(datasets):
    cands = [7.5, 0.0, 1.0, 2.25, -3.0, 100.0, 0.5]
    many = [j / 8 for j in range(-10, 90)]  # more than TREE_EDGES: the binary search
    for arrow, frame in datasets:
        for column in ("x", "s", "d"):
            values = quantile_values(open_table(arrow), column)
            for cs in (cands, many):
                stand_in = open_table(frame).histogram_values(column, candidates=cs)
                for q in (0.5, 0.9, 0.1):
                    level = quantile_fraction(q)
                    np.testing.assert_array_equal(
                        rank_excess_of_candidates(stand_in, cs, level),
                        rank_excess_of_candidates(values, cs, level),
                    )


def test_grid_histogram_is_rounding_down_to_the_grid(datasets):
    from dpselect.data.engines.spark import grid_cell, grid_counts, grid_edges

    for arrow, frame in datasets:
        for column in ("d", "x"):
            values = quantile_values(open_table(arrow), column)
            counts = grid_counts(open_table(frame), column, 0.5, 8.0, 64)
            cells = grid_cell(values, 0.5, 8.0, 64)
            np.testing.assert_array_equal(counts, np.bincount(cells, minlength=64))
            # up to float rounding, the cell is clamping then rounding down to the grid
            points = np.append(grid_edges(0.5, 8.0, 64), 8.0)
            clamped = np.clip(values, 0.5, 8.0)
            assert np.all(points[cells] <= clamped) and np.all(clamped <= points[cells + 1])
            table = open_table(frame)
            stand_in = table.histogram_values(column, bounds=(0.5, 8.0), resolution=7.5 / 64)
            np.testing.assert_array_equal(np.sort(stand_in), np.sort(points[cells]))


def test_many_candidates_in_a_frame_of_several_rows(datasets, monkeypatch):
    """1,500 text candidates on a text column (an Arrow array: no DuckDB cast) and integers on
    an integer column, in a candidate frame of several rows (``CANDIDATES_PER_ROW`` lowered to
    7, the last row shorter): the same scores as DuckDB, with and without a privacy unit."""
    from dpselect.data.engines.spark import matching

    monkeypatch.setattr(matching, "CANDIDATES_PER_ROW", 7)
    many = {"s": [str(i) for i in range(1500)] + ["07", ""], "x": list(range(-3, 1497))}
    for arrow, frame in datasets:
        for column, cands in many.items():
            for kw in ({}, {"privacy_unit": "user", "max_contributions": 2, "salt": 5}):
                expected = _scores(arrow, column, cands, **kw)
                got = _scores(frame, column, cands, **kw)
                np.testing.assert_array_equal(got, expected, err_msg=f"{column} {kw}")
