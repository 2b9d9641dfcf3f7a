"""The bounding plans on a text source run their joins as written, and size their parts by
the text weight of those plans; a ``.gz`` opened as a table is bounded by its exact lines.

DuckDB's CSV reader reports a few dozen rows to the optimizer whatever the file holds, so
with the optimizer ordering the joins DuckDB built the joins' hash tables on the rows of the
text view (docs/performance.md, "Data larger than memory"). Every plan here writes the rows
on the left of each join and the small side (candidates, values, groups, the units' seeds
and kept groups) on the right, and runs on a text source with the join-order optimizers off
(:func:`dpselect.data.join_order.text_join_order`). Checked on the plans' own queries:
``EXPLAIN`` of every query that reads ``data`` must show no hash join built on the rows of
the text file, and the answers must be those of the same rows read from Parquet, bit for bit.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpselect.data import (
    discovered_scores,
    grouped_scores,
    grouped_sql,
    scores,
    tables,
    text_lines,
    unit_partitions,
)
from dpselect.data.query import PrivateGroups, PublicGroups, Query, UnitRule
from dpselect.data.tables import open_table

from .test_grouped_partitions import _same
from .test_text_partitions import GROUPS, SITES, _csv_text, _lines_file, _rows

#: Operators below which a relation is no longer the text file's rows (one row per unit,
#: value or group, or a table already written).
_AGGREGATES = {
    "HASH_GROUP_BY",
    "PERFECT_HASH_GROUP_BY",
    "UNGROUPED_AGGREGATE",
    "WINDOW",
    "STREAMING_WINDOW",
    "CTE_SCAN",
    "DELIM_SCAN",
    "COLUMN_DATA_SCAN",
}


def _on_rows(node: dict[str, Any]) -> bool:
    """Whether ``node`` outputs rows of the text file (a ``READ_CSV`` below it, no
    aggregate in between)."""
    name = node["name"].strip()
    if name == "READ_CSV":
        return True
    if name in _AGGREGATES:
        return False
    return any(_on_rows(child) for child in node.get("children", []))


def _row_builds(node: dict[str, Any]) -> list[str]:
    """The conditions of the hash joins under ``node`` whose build side (the right child)
    is the text file's rows."""
    found = []
    if node["name"].strip() == "HASH_JOIN" and _on_rows(node["children"][1]):
        found.append(str(node.get("extra_info", {}).get("Conditions", "")))
    for child in node.get("children", []):
        found += _row_builds(child)
    return found


def _query(column: str, groups: Any, rule: UnitRule) -> Query[Any]:
    return Query(column, rule, groups)


def _plans(table: Any) -> dict[str, Any]:
    """Every bounding plan with a privacy unit that runs SQL over the view ``data``."""
    t = table
    cands = [*SITES[:20], "absent"]
    public, private = PublicGroups("grp", GROUPS), PrivateGroups("grp")

    def rule(g: int, m: int, r: int) -> UnitRule:
        return UnitRule("user_id", m, r, groups_per_unit=g, salt=9, group_salt=10)

    numbers = UnitRule("user_id", rows_per_unit=2, groups_per_unit=2, salt=9, group_salt=10)
    return {
        "candidates m=1 sql": lambda: scores.duckdb_candidate_scores(
            t, "site", cands, "user_id", 1, 9
        ),
        "candidates m=3 lists": lambda: scores.duckdb_candidate_scores(
            t, "site", cands, "user_id", 3, 9
        ),
        "candidates r=2 lists": lambda: scores.duckdb_candidate_scores(
            t, "site", cands, "user_id", 1, 9, max_rows_per_value=2
        ),
        "top_values m=1": lambda: scores.duckdb_top_values(t, "site", 12, "user_id", 1, 9),
        "top_values m=3": lambda: scores.duckdb_top_values(t, "site", 12, "user_id", 3, 9),
        "grouped cands g=1": lambda: grouped_scores.duckdb_grouped_candidate_scores(
            t, _query("site", public, rule(1, 1, 1)), cands
        ),
        "grouped cands g=2 r=2": lambda: grouped_scores.duckdb_grouped_candidate_scores(
            t, _query("site", public, rule(2, 3, 2)), cands
        ),
        "grouped counts g=3": lambda: grouped_scores.duckdb_grouped_value_counts(
            t, _query("site", public, rule(3, 1, 1)), 5
        ),
        "grouped counts g=2 m=3": lambda: grouped_scores.duckdb_grouped_value_counts(
            t, _query("site", public, rule(2, 3, 1)), 5
        ),
        "grouped numbers": lambda: grouped_scores.duckdb_grouped_values(
            t, _query("num", public, numbers)
        ),
        "discovered counts g=1": lambda: discovered_scores.duckdb_discovered_value_counts(
            t, _query("site", private, rule(1, 1, 1)), 5
        ),
        "discovered cands g=2 r=2": lambda: discovered_scores.duckdb_discovered_candidate_scores(
            t, _query("site", private, rule(2, 3, 2)), cands
        ),
        "discovered numbers": lambda: discovered_scores.duckdb_discovered_values(
            t, _query("num", private, numbers)
        ),
    }


def _with_numbers() -> list[dict[str, Any]]:
    rows = _rows()
    for k, row in enumerate(rows):
        row["num"] = None if k % 13 == 0 else (k * 7919 % 41) / 4
    return rows


@pytest.fixture(scope="module")
def sources(tmp_path_factory: Any) -> tuple[str, str]:
    """The same rows as CSV (units declared DOUBLE) and as Parquet."""
    where = tmp_path_factory.mktemp("join_order")
    rows = _with_numbers()
    csv = where / "visits.csv"
    text = _csv_text(rows).splitlines()
    nums = ["num"] + ["" if r["num"] is None else str(r["num"]) for r in rows]
    csv.write_text("\n".join(f"{a},{b}" for a, b in zip(text, nums, strict=True)) + "\n")
    parquet = where / "visits.parquet"
    pq.write_table(pa.Table.from_pylist(rows), parquet, row_group_size=700)
    return str(csv), str(parquet)


def test_every_plan_on_a_csv_builds_no_hash_table_on_the_rows(sources, monkeypatch):
    """``EXPLAIN`` of each query a plan runs over ``data`` (with the settings it runs
    under): no hash join may build on the text file's rows; and the answers are those of
    the Parquet file, bit for bit."""
    csv, parquet = sources
    table = open_table(csv, schema={"user_id": "DOUBLE", "num": "DOUBLE"})
    run = tables.Table._run
    builds: list[str] = []
    explained = [0]

    def explained_run(self: Any, sql: str, params: Any, *rest: Any, **named: Any) -> Any:
        body = sql.lstrip()
        if body.upper().startswith("INSERT INTO"):
            body = body.split(None, 3)[3]
        reads = re.search(r"\b(FROM|JOIN)\s+data\b", body) and " JOIN " in body
        if reads and body.upper().startswith(("WITH", "SELECT")):
            plan = self.connection.execute("EXPLAIN (FORMAT json) " + body, params or []).fetchall()
            for root in json.loads(plan[0][1]):
                builds.extend(_row_builds(root))
            explained[0] += 1
        return run(self, sql, params, *rest, **named)

    monkeypatch.setattr(tables.Table, "_run", explained_run)
    got = {name: plan() for name, plan in _plans(table).items()}
    assert explained[0] >= len(got)
    assert builds == []
    monkeypatch.undo()
    want = {name: plan() for name, plan in _plans(open_table(parquet)).items()}
    for name, answer in got.items():
        assert _same(answer, want[name]), name


def test_text_parts_are_sized_by_the_measured_weights(sources, monkeypatch):
    """With their joins as written, the plans size a text source's parts by the measured
    weight of a line (docs/performance.md, "Data larger than memory"): 2 rows for
    ``top_values`` and the lists plans of the candidate scores, 1 for the grouped plans
    (6 before, for all of them); Parquet by its footers."""
    csv, parquet = sources
    sized: list[int] = []

    def recorded(rows: int, per_row: float, budget: int) -> int:
        sized.append(int(rows))
        return unit_partitions.part_count(rows, per_row, budget)

    monkeypatch.setattr(scores, "part_count", recorded)
    monkeypatch.setattr(grouped_sql, "part_count", recorded)
    csv_table = open_table(csv, schema={"user_id": "DOUBLE"})
    lines = unit_partitions.text_rows(csv)
    for table, text in ((csv_table, True), (open_table(parquet), False)):
        for name, plan in _plans(table).items():
            sized.clear()
            plan()
            if name == "candidates m=1 sql":  # one query, not split
                assert sized == [], name
                continue
            weight = (1 if name.startswith(("grouped", "discovered")) else 2) if text else 1
            assert sized == [weight * lines if text else len(_rows())], (name, text)


def test_a_gzip_file_opened_is_bounded_by_its_exact_lines(tmp_path):
    """The line ends counted when a ``.gz`` is opened bound its rows exactly (every ``\\n``
    and ``\\r``: ``\\r\\n`` ends two lines by the line rule); a file changed since falls back
    to the estimate; nothing raises."""
    lines = 300_000
    text = _lines_file(tmp_path, lines).replace("\n", "\r\n", 1000)  # 1000 CRLF
    path = tmp_path / "big.csv.gz"
    path.write_bytes(gzip.compress(text.encode(), compresslevel=6))
    assert os.path.getsize(path) > 2**20  # beyond the 1 MiB prefix the estimate reads
    estimate = unit_partitions.text_rows(str(path), gzipped=True)
    ends = lines + 1 + 1000  # the header's end, each line's, and the 1000 \r
    assert estimate > 1.1 * (ends + 1)  # the estimate's margin: not the exact count
    table = open_table(str(path), schema={"user_id": "BIGINT"})
    assert unit_partitions.text_rows(str(path), gzipped=True) == ends + 1
    assert unit_partitions.source_rows(table.connection, None, table.source_files, 1) == ends + 1
    path.write_bytes(gzip.compress(text[: len(text) // 2].encode()))  # changed: not known
    assert text_lines.gzip_line_ends(path) is None
    assert unit_partitions.text_rows(str(path), gzipped=True) < ends
    assert text_lines.gzip_line_ends(tmp_path / "absent.gz") is None
    assert text_lines.gzip_line_ends("bad\x00path") is None
    members = tmp_path / "members.jsonl.gz"
    members.write_bytes(gzip.compress(b'{"a": 1}\r\n') + gzip.compress(b'{"a": 2}\n{"a": 3}'))
    assert text_lines.check_gzip_stream(members) == 3
    assert unit_partitions.text_rows(str(members), gzipped=True) == 4
    np.testing.assert_equal(text_lines.gzip_line_ends(members), 3)
