"""Rows per unit on Spark: the same kept rows as DuckDB (the oracle) for the same salt.

The histograms of the quantile modes (candidates, bounds grid), the pricing counts and the
per-unit row counts, computed on the executors from the capped rows, equal what DuckDB's
kept rows give.
"""

import numpy as np
import pytest

from dpselect.data.grids import grid_cell, grid_edges, grid_size
from dpselect.data.query import Query, UnitRule
from dpselect.data.tables import open_table
from dpselect.mechanisms.quantile_score import quantile_fraction, rank_excess_of_candidates
from dpselect.planning.contributions import Contributions
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes.quantiles import quantile as recipe_quantile

from .helpers import both, random_rows

SEEDS = range(3)
SALTS = (0, 123456789, 2**63 - 1)


@pytest.fixture(scope="module")
def datasets(spark):
    out = [both(spark, random_rows(seed, n=250)) for seed in SEEDS]
    out.append(both(spark, []))
    return out


def _duckdb_kept(arrow, column, unit, r, salt):
    table = open_table(arrow)
    return np.sort(
        table.numbers(Query(column, UnitRule(privacy_unit=unit, rows_per_unit=r, salt=salt)))
    )


@pytest.mark.parametrize("column, unit", [("d", "user"), ("x", "user"), ("s", "user"), ("d", "s")])
@pytest.mark.parametrize("r", [1, 3])
def test_kept_rows_equal_duckdb(datasets, column, unit, r):
    for arrow, frame in datasets:
        spark = open_table(frame)
        for salt in SALTS:
            expected = _duckdb_kept(arrow, column, unit, r, salt)
            got = np.sort(
                spark.numbers(
                    Query(column, UnitRule(privacy_unit=unit, rows_per_unit=r, salt=salt))
                )
            )
            assert np.array_equal(got, expected)


def test_histogram_modes_and_buyers_equal_duckdb(datasets):
    cands = [0.0, 0.5, 1.25, 3.0, 7.5]
    lo, hi = -1.0, 12.0
    for arrow, frame in datasets:
        spark = open_table(frame)
        for salt in SALTS[:2]:
            kept = _duckdb_kept(arrow, "d", "user", 2, salt)
            # candidates: every candidate has the real rows' rank excess
            stand_ins = spark.quantile_values(
                Query("d", UnitRule(privacy_unit="user", rows_per_unit=2, salt=salt)),
                candidates=cands,
                bounds=None,
                resolution=None,
            )
            for q in (0.1, 0.5, 0.9):
                level = quantile_fraction(q)
                assert np.array_equal(
                    rank_excess_of_candidates(stand_ins, cands, level),
                    rank_excess_of_candidates(kept, cands, level),
                )
            # bounds: the kept rows rounded down to the public grid
            grid = spark.quantile_values(
                Query("d", UnitRule(privacy_unit="user", rows_per_unit=2, salt=salt)),
                candidates=None,
                bounds=(lo, hi),
                resolution=0.5,
            )
            cells = grid_size(lo, hi, 0.5)
            rounded = grid_edges(lo, hi, cells)[grid_cell(kept, lo, hi, cells)]
            assert np.array_equal(np.sort(grid), np.sort(rounded))
            prices = [0.25, 1.0, 2.0, 9.0]
            got = spark.buyers_at(
                Query("d", UnitRule(privacy_unit="user", rows_per_unit=2, salt=salt)), prices
            )
            assert got.tolist() == [int(np.sum(kept >= p)) for p in prices]


def test_row_counts_equal_duckdb(datasets):
    for arrow, frame in datasets:
        expected = np.sort(
            open_table(arrow).unit_sizes(Query("d", UnitRule(privacy_unit="user")), "rows")
        )
        assert np.array_equal(
            np.sort(
                open_table(frame).unit_sizes(Query("d", UnitRule(privacy_unit="user")), "rows")
            ),
            expected,
        )


def test_quantile_recipe_per_unit_on_spark(datasets):
    from dpselect.sampling import InsecureSeededSource

    _arrow, frame = datasets[0]
    result = recipe_quantile(
        frame,
        quantile_request(
            "d",
            [0.25, 0.75],
            1.0,
            bounds=(0.0, 10.0),
            privacy_unit="user",
            contributions=Contributions(values_per_unit=2),
        ),
        source=InsecureSeededSource(1),
    )
    assert result.parameters["privacy_unit"] == "user" and len(result.values) == 2


def test_auto_rows_and_auto_bounds_per_unit_on_spark(datasets):
    from dpselect.sampling import InsecureSeededSource

    _arrow, frame = datasets[0]
    result = recipe_quantile(
        frame,
        quantile_request(
            "d",
            0.5,
            1.0,
            bounds="auto",
            privacy_unit="user",
            contributions=Contributions(values_per_unit="auto"),
        ),
        source=InsecureSeededSource(2),
    )
    assert result.parameters["max_rows"] in (1, 2, 4, 8, 16, 32, 64, 128, 256)
    assert result.epsilon <= 1.0


def test_bounds_choice_reads_counts_not_values(datasets):
    """choose_bounds reads the engine's counts at the bins' edges (no column collected): the
    same scores on Spark as DuckDB's, with and without a unit."""
    from fractions import Fraction

    from dpselect.planning.value_bounds import bound_bins
    from dpselect.recipes.value_bins import _engine_bin_scores, bin_scores

    bins, levels = bound_bins(), [Fraction(1, 20), Fraction(19, 20)]
    for arrow, frame in datasets:
        duck, spark = open_table(arrow), open_table(frame)
        expected = [bin_scores(duck.numbers(Query("d")), bins, lv) for lv in levels]
        assert _engine_bin_scores(spark, "d", bins, levels, {}) == expected
        unit = {"privacy_unit": "user", "max_rows": 2, "salt": 5}
        kept = _duckdb_kept(arrow, "d", "user", 2, 5)
        expected = [bin_scores(kept, bins, lv) for lv in levels]
        assert _engine_bin_scores(spark, "d", bins, levels, unit) == expected
