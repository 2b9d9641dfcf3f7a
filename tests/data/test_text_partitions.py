"""Hash parts of the units on every file source: CSV, CSV.gz, JSON lines, Parquet with a
declared schema.

The number of parts comes from a row bound read from metadata
(:func:`dpselect.data.unit_partitions.source_rows`: footers, or file sizes over a sampled
mean line length), and the parts never change a score (docs/contribution_bounding.md, "Data
larger than memory"). Here a small memory budget forces at least 4 parts over the view
``data`` of each source (declared types, JSON keys of the units, ``TRY_CAST``) and every
plan must give the one-part answer bit for bit: candidate scores (``m = 1`` and ``m = 3``),
``top_values`` (unknown domain, ``m = 1`` and ``m = 3``) and grouped counts. The units hold
NULL, NaN, ``0.0`` and ``-0.0`` (one unit), and for JSON the number ``1`` and the string
``"1"`` (two units).
"""

from __future__ import annotations

import gzip
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpselect.data import (
    grouped_sql,
    join_order,
    packed_scores,
    scores,
    tables,
    unit_partitions,
)
from dpselect.data.query import PublicGroups, Query, UnitRule
from dpselect.data.tables import open_table

from .test_grouped_partitions import _same  # bit-for-bit equality of the plans' answers

ROWS = 2400
SITES = [f"s{i}" for i in range(30)]
GROUPS = ["a", "b", "c", "d"]
#: The bytes per row of the plans run here: a budget of ``rows * SMALLEST // 4`` gives each
#: of them at least 4 parts.
PER_ROW = (
    packed_scores.PACKED_MIN_BYTES_PER_ROW,
    packed_scores.PACKED_BYTES_PER_ROW,
    scores.TOP_VALUES_BYTES_PER_ROW,
    grouped_sql.GROUPED_MIN_BYTES_PER_ROW,
    grouped_sql.GROUPED_CELLS_BYTES_PER_ROW,
)
SMALLEST = min(PER_ROW)


def _rows(seed: int = 3) -> list[dict[str, Any]]:
    """Units (floats, 150 of them, ``0.0`` and ``-0.0`` among them, NaN and NULL rows),
    Zipf-like sites (some NULL) and groups."""
    rng = np.random.default_rng(seed)
    pool = np.round(rng.normal(size=150) * 40, 1)
    pool[:2] = [0.0, -0.0]
    units: list[Any] = pool[rng.integers(0, len(pool), ROWS)].tolist()
    for k in rng.choice(ROWS, 80, replace=False).tolist():
        units[k] = None if k % 2 else math.nan
    units[:6] = [0.0, -0.0, -0.0, 0.0, -0.0, 0.0]
    picks = np.minimum(rng.zipf(1.5, ROWS) - 1, len(SITES) - 1).tolist()
    sites: list[Any] = [SITES[k] for k in picks]
    sites[::89] = [None] * len(sites[::89])
    by = [GROUPS[k] for k in rng.integers(0, len(GROUPS), ROWS).tolist()]
    return [{"user_id": u, "site": s, "grp": g} for u, s, g in zip(units, sites, by, strict=True)]


def _csv_text(rows: list[dict[str, Any]]) -> str:
    def field(value: Any) -> str:
        if value is None:
            return ""
        if isinstance(value, float) and math.isnan(value):
            return "nan"
        return str(value)

    lines = ["user_id,site,grp"]
    lines += [",".join(field(row[c]) for c in ("user_id", "site", "grp")) for row in rows]
    return "\n".join(lines) + "\n"


def _csv(tmp_path: Path) -> tuple[str, dict[str, str]]:
    path = tmp_path / "visits.csv"
    path.write_text(_csv_text(_rows()))
    return str(path), {"user_id": "DOUBLE"}  # NaN, 0.0 and -0.0 by the declared type


def _csv_gz(tmp_path: Path) -> tuple[str, dict[str, str]]:
    path = tmp_path / "visits.csv.gz"
    text = _csv_text(_rows(seed=4))
    half = len(text) // 2
    cut = text.index("\n", half) + 1  # two gzip members, one after the other
    path.write_bytes(gzip.compress(text[:cut].encode()) + gzip.compress(text[cut:].encode()))
    return str(path), {}  # the units as text: "nan", "0.0" and "-0.0" are three units


def _jsonl(tmp_path: Path) -> tuple[str, dict[str, str]]:
    path = tmp_path / "visits.jsonl"
    lines = []
    for k, row in enumerate(_rows(seed=5)):
        record = dict(row)
        unit = record["user_id"]
        if unit is None and k % 4 == 1:
            del record["user_id"]  # an absent key: no unit, as null
        elif isinstance(unit, float) and math.isnan(unit):
            record["user_id"] = "nan"  # JSON has no NaN: a string
        elif unit is not None and k % 3 == 0:
            record["user_id"] = str(unit)  # the string "12.5": another unit than 12.5
        lines.append(json.dumps(record))
    lines.insert(100, "not json")  # no row
    path.write_text("\n".join(lines) + "\n")
    return str(path), {}


def _parquet_schema(tmp_path: Path) -> tuple[str, dict[str, str]]:
    rows = _rows(seed=6)
    path = tmp_path / "visits.parquet"
    pq.write_table(
        pa.table({
            "user_id": pa.array([r["user_id"] for r in rows], pa.float64()),
            "site": pa.array([r["site"] for r in rows], pa.string()),
            "grp": pa.array([r["grp"] for r in rows], pa.string()),
        }),
        path,
        row_group_size=600,
    )  # fmt: skip
    return str(path), {"user_id": "DOUBLE", "site": "VARCHAR"}


SOURCES = {"csv": _csv, "csv.gz": _csv_gz, "jsonl": _jsonl, "parquet schema": _parquet_schema}


def _answers(path: str, schema: dict[str, str]) -> dict[str, Any]:
    table = open_table(path, schema=schema) if schema else open_table(path)
    cands = [*SITES[:20], "absent"]
    out: dict[str, Any] = {}
    for m in (1, 3):
        out[f"candidates m={m}"] = table.scores(
            Query("site", UnitRule(privacy_unit="user_id", values_per_unit=m, salt=99)), cands
        )
        out[f"top_values m={m}"] = table.counts(
            Query("site", UnitRule(privacy_unit="user_id", values_per_unit=m, salt=99)), 12
        )
    out["grouped g=1"] = table.counts(
        Query(
            "site",
            UnitRule(
                privacy_unit="user_id", values_per_unit=1, groups_per_unit=1, salt=11, group_salt=12
            ),
            PublicGroups("grp", GROUPS),
        )
    )
    out["grouped g=2 m=3"] = table.counts(
        Query(
            "site",
            UnitRule(
                privacy_unit="user_id", values_per_unit=3, groups_per_unit=2, salt=11, group_salt=12
            ),
            PublicGroups("grp", GROUPS),
        ),
        5,
    )
    return out


def _nonempty(a: Any) -> bool:
    if isinstance(a, np.ndarray):
        return int(a.sum()) > 0
    return any(len(x) > 0 for x in a)


@pytest.mark.parametrize("name", list(SOURCES))
def test_parts_give_the_one_pass_scores(tmp_path, monkeypatch, name):
    path, schema = SOURCES[name](tmp_path)
    table = open_table(path, schema=schema) if schema else open_table(path)
    # a line counts for at least one row in every plan (each plan's text weight is >= 1)
    rows = unit_partitions.source_rows(
        table.connection, table.parquet_files, table.source_files, text_weight=1
    )
    assert ROWS <= rows <= ROWS + 3  # exact for small files
    monkeypatch.setattr(unit_partitions, "MEMORY_BUDGET", 10**15)
    whole = _answers(path, schema)
    budget = rows * SMALLEST // 4
    assert all(unit_partitions.part_count(rows, b, budget) >= 4 for b in PER_ROW)
    monkeypatch.setattr(unit_partitions, "MEMORY_BUDGET", budget)
    split = _answers(path, schema)
    for key, expected in whole.items():
        assert _same(split[key], expected), key
        assert _nonempty(expected), key


def _lines_file(path: Path, lines: int, seed: int = 1) -> str:
    rng = np.random.default_rng(seed)
    users = rng.integers(0, 10**7, lines).tolist()
    items = rng.integers(0, 10**5, lines).tolist()
    body = "".join(f"{u},item{i}\n" for u, i in zip(users, items, strict=True))
    return "user_id,item\n" + body


def test_text_rows_bound_the_lines(tmp_path):
    """Small files are counted exactly; larger ones (beyond the samples) within
    ``[1, 1.25 * 1.1]`` times their lines; gzip by a prefix's compression ratio."""
    small = tmp_path / "small.csv"
    small.write_text("a,b\n1,2\n3,4")
    assert unit_partitions.text_rows(str(small)) == 3
    lines = 400_000  # about 6 MB: beyond the 8 windows of 128 KiB
    text = _lines_file(tmp_path, lines)
    big = tmp_path / "big.csv"
    big.write_text(text)
    assert os.path.getsize(big) > 8 * 2**17
    zipped = tmp_path / "big.csv.gz"
    zipped.write_bytes(gzip.compress(text.encode(), compresslevel=6))
    assert os.path.getsize(zipped) > 2**20  # beyond the 1 MiB prefix
    for found in (unit_partitions.text_rows(str(big)),
                  unit_partitions.text_rows(str(zipped), gzipped=True)):  # fmt: skip
        assert lines + 1 <= found <= 1.25 * 1.1 * (lines + 1)
    members = tmp_path / "members.jsonl.gz"
    members.write_bytes(gzip.compress(b'{"a": 1}\n{"a": 2}\n') + gzip.compress(b'{"a": 3}\n'))
    assert unit_partitions.text_rows(str(members), gzipped=True) == 4


def test_text_rows_never_fail(tmp_path):
    """A missing, empty, corrupt or truncated file gives a bound, never an error (the scan
    reports the problem, before the charge where the table is opened)."""
    assert unit_partitions.text_rows(str(tmp_path / "absent.csv")) == 1
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    assert unit_partitions.text_rows(str(empty)) == 1
    corrupt = tmp_path / "corrupt.csv.gz"
    corrupt.write_bytes(b"not a gzip stream" * 100)
    assert unit_partitions.text_rows(str(corrupt), gzipped=True) >= 1
    truncated = tmp_path / "truncated.csv.gz"
    truncated.write_bytes(gzip.compress(_lines_file(tmp_path, 50_000).encode())[:5000])
    assert unit_partitions.text_rows(str(truncated), gzipped=True) >= 1
    one_line = tmp_path / "one_line.jsonl"
    one_line.write_bytes(b"x" * (3 * 2**20))  # no line end in any sample
    assert unit_partitions.text_rows(str(one_line)) >= 1


def test_source_rows_of_every_source(tmp_path):
    """Parquet with a declared schema reads the footers (exact), text files the estimate
    (weighted by ``TEXT_ROW_WEIGHT``), frames in memory no bound (one part)."""
    for name, make in SOURCES.items():
        path, schema = make(tmp_path)
        table = open_table(path, schema=schema)
        assert table.source_files is not None, name
        rows = unit_partitions.source_rows(
            table.connection, table.parquet_files, table.source_files
        )
        if name == "parquet schema":
            assert rows == ROWS
        else:  # the lines (a header, a line that is no row), each for several Parquet rows
            lines = unit_partitions.text_rows(path, gzipped=path.endswith(".gz"))
            assert ROWS < lines <= ROWS + 3, name
            assert rows == unit_partitions.TEXT_ROW_WEIGHT * lines, name
    frame = open_table(pa.table({"user_id": [1, 2], "site": ["a", "b"]}))
    assert frame.source_files is None
    assert unit_partitions.source_rows(frame.connection, None, frame.source_files) == 0


def _disabled(connection: Any) -> str:
    return str(connection.execute("SELECT current_setting('disabled_optimizers')").fetchall()[0][0])


def test_the_written_join_order_is_counted_and_restored():
    connection = tables._database()
    before = _disabled(connection)
    connection.execute("SET disabled_optimizers = 'top_n'")
    try:
        with join_order.written_join_order(connection):
            inner = set(_disabled(connection).split(","))
            with join_order.written_join_order(connection):
                pass
            assert set(_disabled(connection).split(",")) == inner  # still on for the first
        assert inner == {"top_n", "join_order", "build_side_probe_side"}
        assert _disabled(connection) == "top_n"
    finally:
        connection.execute(f"SET disabled_optimizers = '{before}'")


def test_the_packed_plan_on_a_csv_runs_its_joins_as_written(tmp_path, monkeypatch):
    """The packed plan on a text source runs with the join-order optimizers off (seen from
    another cursor while it runs) and restores them; the scores are those of the same rows
    from Parquet (where the optimizer plans as it likes)."""
    from dpselect.data.engines import duckdb_progress

    monkeypatch.setattr(duckdb_progress, "REPORT_AFTER_SECONDS", 0.0)  # every query reports
    path, schema = _csv(tmp_path)
    table = open_table(path, schema=schema)
    other = tables._database().cursor()
    seen: list[str] = []
    before = _disabled(other)
    got = packed_scores.packed_candidate_scores(
        table, "site", SITES, "user_id", 3, 11, progress=lambda _: seen.append(_disabled(other))
    )
    assert any("build_side_probe_side" in s for s in seen)
    assert _disabled(other) == before
    frame = pa.Table.from_pylist(_rows())
    parquet = tmp_path / "same.parquet"
    pq.write_table(frame, parquet)
    want = packed_scores.packed_candidate_scores(
        open_table(str(parquet)), "site", SITES, "user_id", 3, 11
    )
    assert got.sum() > 0
    assert np.array_equal(got, want)
