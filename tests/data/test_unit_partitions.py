"""Hash parts of the units (dpselect/data/unit_partitions.py) never change a score.

The rule keeps each unit's values from that unit's rows and the salt alone, so bounding the
units part by part and adding the parts' scores gives the one-pass scores bit for bit. Here
a small memory budget forces several parts on Parquet files with units of several types
(NaN and -0.0 floats, text, dates, ...), and every DuckDB plan that splits (the packed plan
of candidate scores, the SQL lists plan, the unknown-domain plans for m = 1 and m > 1, rows
per value) must give the same answer as with one part.
"""

import datetime as dt
import decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpselect.data import packed_scores, scores, unit_partitions
from dpselect.data.query import Query, UnitRule
from dpselect.data.scores import duckdb_candidate_scores
from dpselect.data.tables import open_table

ROWS = 3000
SITES = [f"s{i}" for i in range(40)]


def _units(kind, rng):
    n = 400
    if kind == "int64":
        pool = pa.array(rng.integers(-(2**62), 2**62, n), pa.int64())
    elif kind == "float":
        values = rng.normal(size=n)
        values[:4] = [0.0, -0.0, np.nan, np.inf]
        pool = pa.array(values, pa.float64())
    elif kind == "text":
        pool = pa.array([f"user-{i}" for i in range(n)], pa.string())
    elif kind == "date":
        pool = pa.array([dt.date(2000, 1, 1) + dt.timedelta(days=i) for i in range(n)])
    elif kind == "decimal":
        pool = pa.array([decimal.Decimal(i) / 4 for i in range(n)], pa.decimal128(10, 2))
    else:
        raise AssertionError(kind)
    picks = rng.integers(0, n, ROWS)
    units = pool.take(pa.array(picks))
    mask = rng.random(ROWS) < 0.02  # a few rows without a unit
    kept = [None if drop else u for drop, u in zip(mask, units.to_pylist(), strict=True)]
    return pa.array(kept, units.type)


def _file(tmp_path, kind, seed=7):
    rng = np.random.default_rng(seed)
    sites = np.array(SITES)[np.minimum(rng.zipf(1.5, ROWS) - 1, len(SITES) - 1)].tolist()
    sites[::97] = [None] * len(sites[::97])
    path = tmp_path / f"{kind}.parquet"
    pq.write_table(pa.table({"user_id": _units(kind, rng), "site": sites}), path,
                   row_group_size=700)  # fmt: skip
    return str(path)


def _answers(path):
    table = open_table(path)
    cands = [*SITES[:30], "absent"]
    out = {}
    for m in (1, 3):
        out[f"candidates m={m}"] = table.scores(
            Query("site", UnitRule(privacy_unit="user_id", values_per_unit=m, salt=99)), cands
        )
        out[f"top_values m={m}"] = table.counts(
            Query("site", UnitRule(privacy_unit="user_id", values_per_unit=m, salt=99)), 12
        )
    out["candidates r=2"] = table.scores(
        Query(
            "site", UnitRule(privacy_unit="user_id", values_per_unit=2, rows_per_value=2, salt=99)
        ),
        cands,
    )
    out["top_values r=2"] = table.counts(
        Query(
            "site", UnitRule(privacy_unit="user_id", values_per_unit=2, rows_per_value=2, salt=99)
        ),
        12,
    )
    out["SQL plan m=3"] = duckdb_candidate_scores(table, "site", cands, "user_id", 3, 99)
    out["SQL plan r=2"] = duckdb_candidate_scores(table, "site", cands, "user_id", 1, 99,
                                                  max_rows_per_value=2)  # fmt: skip
    return out


@pytest.mark.parametrize("kind", ["int64", "float", "text", "date", "decimal"])
def test_parts_give_the_one_pass_scores(tmp_path, monkeypatch, kind):
    path = _file(tmp_path, kind)
    monkeypatch.setattr(unit_partitions, "MEMORY_BUDGET", 10**15)
    whole = _answers(path)
    budget = ROWS * packed_scores.PACKED_BYTES_PER_ROW // 5  # 5 parts (packed), 10 (values)
    assert unit_partitions.part_count(ROWS, packed_scores.PACKED_BYTES_PER_ROW, budget) == 5
    assert unit_partitions.part_count(ROWS, scores.TOP_VALUES_BYTES_PER_ROW, budget) > 5
    monkeypatch.setattr(unit_partitions, "MEMORY_BUDGET", budget)
    split = _answers(path)
    for name, expected in whole.items():
        if isinstance(expected, np.ndarray):
            assert np.array_equal(split[name], expected), name
            assert expected.sum() > 0
        else:
            assert split[name] == expected, name
            assert expected


def test_each_unit_falls_in_one_part(tmp_path):
    """The parts' units are disjoint and cover every unit (the split is a function of the
    unit as grouped: 0.0 and -0.0 in one part)."""
    path = _file(tmp_path, "float")
    table = open_table(path)
    unit, valid = scores.unit_sql("user_id", "DOUBLE")
    seen = []
    for part in range(6):
        cond = unit_partitions.part_filter_sql(unit, 6, part)
        rows = table.query(f"SELECT DISTINCT {unit} FROM data WHERE {valid} AND {cond}")
        seen += [row[0] for row in rows]
    everyone = table.query(f"SELECT DISTINCT {unit} FROM data WHERE {valid}")
    assert len(seen) == len(set(seen)) == len(everyone)
    assert unit_partitions.part_filter_sql(unit, 1, 0) == "TRUE"


def test_part_count_from_public_facts(tmp_path, monkeypatch):
    assert unit_partitions.part_count(0, 24, 10**9) == 1
    assert unit_partitions.part_count(10**9, 24, 2 * 10**9) == 12
    assert unit_partitions.part_count(10**12, 24, 1) == 1024
    path = _file(tmp_path, "int64")
    table = open_table(path)
    assert unit_partitions.source_rows(table.connection, table.parquet_files) == ROWS
    assert unit_partitions.source_rows(table.connection, None) == 0
    monkeypatch.setattr(unit_partitions, "MEMORY_BUDGET", None)
    table.connection.execute("SET memory_limit = '800MiB'")
    try:
        assert unit_partitions.memory_budget(table.connection) == 200 * 2**20
    finally:
        table.connection.execute("RESET memory_limit")
    monkeypatch.setattr(unit_partitions, "MEMORY_BUDGET", 12345)
    assert unit_partitions.memory_budget(table.connection) == 12345
