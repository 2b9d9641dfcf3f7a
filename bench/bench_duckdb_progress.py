"""The cost of DuckDB's query progress (:mod:`dpselect.data.engines.duckdb_progress`) on a
10^7-row Parquet file: wall time with ``progress=`` against without, in the same run.

Run: ``python bench/bench_duckdb_progress.py [--rows 10000000] [--repeats 5]`` from the
repository root. Two workloads, each timed ``repeats`` times alternately with and without a
progress callback (a fresh table each time: DuckDB's progress tracking is a setting of the
connection, turned on by the first query with progress), medians reported with their ratio:

- ``query``: one aggregation over the file through :meth:`dpselect.data.tables.Table.query`
  (the engine's choke point), ``count(DISTINCT user)`` per item;
- ``top_k``: :func:`dpselect.top_k` with 50 public candidates, a privacy unit and
  ``max_contributions=3`` (the packed plan: a few queries, one callback for all).

The callback does nothing but count its calls, so the ratio is the cost of DuckDB tracking its
progress plus the polling (every 0.1 s, from the first second of a query on).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import dpselect as dp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's dpselect

import duckdb

from dpselect.data.tables import open_table
from dpselect.sampling import InsecureSeededSource

QUERY = "SELECT item, count(DISTINCT user_id) AS n FROM data GROUP BY item"


def _write(path: Path, rows: int) -> None:
    duckdb.execute(
        f"COPY (SELECT i % {max(rows // 20, 1)} AS user_id, 'v' || (hash(i) % 50) AS item "
        f"FROM range({rows}) t(i)) TO '{path}' (FORMAT parquet)"
    )


def _query(path: Path, with_progress: bool) -> tuple[float, int]:
    table = open_table(str(path))
    calls = [0]

    def count(_: float) -> None:
        calls[0] += 1

    t0 = time.perf_counter()
    table.query(QUERY, None, count if with_progress else None)  # type: ignore[attr-defined]
    return time.perf_counter() - t0, calls[0]


def _top_k(path: Path, with_progress: bool) -> tuple[float, int]:
    calls = [0]

    def count(_: float) -> None:
        calls[0] += 1

    t0 = time.perf_counter()
    dp.Session(
        str(path),
        privacy_unit="user_id",
        contributions=dp.Contributions(values_per_unit=3),
        source=InsecureSeededSource(1),
    ).top_k(
        "item",
        3,
        epsilon=1.0,
        candidates=[f"v{i}" for i in range(50)],
        progress=count if with_progress else None,
    )
    return time.perf_counter() - t0, calls[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "visits.parquet"
        _write(path, args.rows)
        print(f"{args.rows:,} rows, {args.repeats} repeats each, alternating; medians")
        print(f"{'workload':>8} {'without s':>10} {'with s':>8} {'ratio':>6} {'calls':>6}")
        for name, run in (("query", _query), ("top_k", _top_k)):
            run(path, False)  # warm the file cache
            times: dict[bool, list[float]] = {False: [], True: []}
            calls = 0
            for i in range(2 * args.repeats):
                with_progress = i % 2 == 1
                took, n = run(path, with_progress)
                times[with_progress].append(took)
                calls = max(calls, n)
            off, on = statistics.median(times[False]), statistics.median(times[True])
            print(f"{name:>8} {off:>10.2f} {on:>8.2f} {on / off:>6.3f} {calls:>6}")


if __name__ == "__main__":
    main()
