"""The installed DuckDB joins correctly when a hash join's build side spills to disk.

Every bounding plan joins the rows with a table of the units or of the candidates
(docs/contribution_bounding.md), and the hash parts keep a plan near its memory budget, not
far below it, so a join may go external. A DuckDB whose external hash join loses rows would
make the scores a function of how the build side was split into rounds, not of each unit's
own rows: a wrong answer whose change between neighbouring datasets is not bounded by the
privacy map. duckdb/duckdb#25702 reports such a bug (a Bloom filter built from the first
round only, pushed into the probe side) in builds after 1.5.5; ``pyproject.toml`` admits any
DuckDB from 1.0, so this test runs the packed plan's join of the rows with a temporary table
of units and with the candidates (dpselect/data/packed_scores.py, step 2) on the installed
one, under a memory limit that makes it write to its temporary files, against the same join
in memory. (The report's own semi join did not spill on DuckDB 2.0.1 at any limit that let
it run, so it is not repeated here.)
"""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest


@pytest.fixture
def connection(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    """A database of its own (the memory limit is a database setting), spilling to a
    temporary directory, on one thread (the case the report reproduces)."""
    path = tmp_path_factory.mktemp("spill")
    con = duckdb.connect(str(path / "spill.duckdb"))
    con.execute(f"SET temp_directory = '{path / 'tmp'}'")
    con.execute("SET threads = 1")
    yield con
    con.close()


def _spilled_and_in_memory(
    con: duckdb.DuckDBPyConnection, sql: str, limit: str
) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
    con.execute("SET memory_limit = '4GB'")
    whole = con.execute(sql).fetchall()
    con.execute(f"SET memory_limit = '{limit}'")
    try:
        spilled = con.execute(sql).fetchall()
        # the limit did make DuckDB write to its temporary files (else nothing was tested)
        files = con.execute("SELECT count(*) FROM duckdb_temporary_files()").fetchall()
        assert files[0][0] > 0
    finally:
        con.execute("SET memory_limit = '4GB'")
    return spilled, whole


def test_the_packed_plans_join_keeps_every_row_when_it_spills(
    connection: duckdb.DuckDBPyConnection,
) -> None:
    con = connection
    con.execute(
        "CREATE TABLE data AS SELECT CAST(hash(i) % 1000000 AS BIGINT) AS user_id, "
        "'s' || CAST(i % 500 AS VARCHAR) AS item FROM range(3000000) t(i)"
    )
    con.execute("CHECKPOINT")
    con.execute(
        "CREATE TEMP TABLE units AS SELECT u, md5_number(CAST(u AS VARCHAR)) AS h "
        "FROM (SELECT DISTINCT user_id AS u FROM data)"
    )
    con.execute(
        "CREATE TEMP TABLE cands AS SELECT 's' || CAST(i * 2 AS VARCHAR) AS v, "
        "CAST(i AS UBIGINT) AS i FROM range(250) t(i)"
    )
    sql = """SELECT count(*), sum(CAST(s.rowid AS HUGEINT) * 1000 + c.i)
             FROM data JOIN cands AS c ON data.item = c.v
                  JOIN units AS s ON data.user_id = s.u"""
    spilled, whole = _spilled_and_in_memory(con, sql, "40MB")
    assert whole[0][0] == 1_500_000  # every row whose item is an even site
    assert spilled == whole
