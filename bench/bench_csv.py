"""CSV reading line by line (dpselect.data.text_lines) against DuckDB's own read_csv.

The baseline is the reader dpselect used before issue 15: ``read_csv`` with a fixed dialect,
``all_varchar`` and ``ignore_errors`` (fast, but one unclosed quote swallows the rows after
it). Both run the same score query (``candidate_scores``, without and with a privacy unit) on
the same file, in the same process; the script prints the times and their ratio.

    python bench/bench_csv.py            # 10^7 rows
    python bench/bench_csv.py --rows 1e6 --quoted
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import duckdb

from dpselect.data.query import Query, UnitRule
from dpselect.data.tables import Table, _database, open_table
from dpselect.data.text_lines import sql_string


def write_file(path: Path, rows: int, quoted: bool) -> None:
    """``user_id,site,note``: 10^5 users, 50 sites, a note (quoted with a comma if asked)."""
    note = "'\"x, ' || i || '\"'" if quoted else "'x' || i"
    duckdb.connect().execute(
        f"COPY (SELECT CAST(hash(i) % 100000 AS VARCHAR) AS user_id, 's' || (i % 50) AS site, "
        f"{note} AS note FROM range({rows}) t(i)) TO {sql_string(str(path))} "
        "(HEADER, DELIMITER ',', QUOTE '')"
    )


def old_table(path: Path) -> Table:
    """The reader before issue 15 (DuckDB's read_csv, fixed dialect, all text)."""
    connection = _database().cursor()
    connection.execute(
        f"CREATE TEMP VIEW data AS SELECT * FROM read_csv({sql_string(str(path))}, "
        "header = true, delim = ',', quote = '\"', escape = '\"', all_varchar = true, "
        "ignore_errors = true)"
    )
    columns = {str(r[0]): str(r[1]) for r in connection.execute("DESCRIBE data").fetchall()}
    return Table(connection, "old", columns, set())


def best_of(repeats: int, table: Table, candidates: list[str], unit: str | None) -> float:
    """The fastest of ``repeats`` runs of the score query."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        table.scores(Query("site", UnitRule(privacy_unit=unit)), candidates)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quoted", action="store_true", help="every row has a quoted field")
    args = parser.parse_args()
    rows = int(args.rows)
    candidates = [f"s{i}" for i in range(60)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.csv"
        write_file(path, rows, args.quoted)
        size = path.stat().st_size / 1e6
        print(f"{rows:,} rows, {size:.0f} MB, quoted notes: {args.quoted}")
        for label, unit in [("no unit", None), ("privacy unit", "user_id")]:
            old, new = old_table(path), open_table(path)
            expected = old.scores(Query("site", UnitRule(privacy_unit=unit)), candidates)
            got = new.scores(Query("site", UnitRule(privacy_unit=unit)), candidates)
            assert list(got) == list(expected)
            t_old = best_of(args.repeats, old, candidates, unit)
            t_new = best_of(args.repeats, new, candidates, unit)
            print(
                f"{label:>13}: read_csv {t_old:7.3f} s   line by line {t_new:7.3f} s   "
                f"ratio {t_new / t_old:5.2f}"
            )


if __name__ == "__main__":
    main()
