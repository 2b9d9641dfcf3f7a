"""Deciles end to end: ``quantile`` on a Parquet file against DuckDB's ``quantile_cont``, one run.

Run: ``python bench/bench_deciles.py [--rows 10000000] [--repeats 3]``.

Writes (fixed seed, cached in ``$TMPDIR/dpselect-bench``) a Parquet file of ``rows`` float64
values (normal, mean 50, sd 10), then times in turns (median of ``repeats``) DuckDB's
``SELECT quantile_cont(v, [0.1, ..., 0.9])`` (the baseline) and the private deciles
``quantile(path, "v", deciles, 1.0, bounds=(0, 100), mechanism=M)`` for ``M`` in ``auto``,
``tree`` and ``joint``, and prints each median and its ratio to DuckDB (target of issue 25:
at most 2x for every method), then the process's peak resident memory.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from dpselect import quantile

SEED = 20261125
DECILES = [i / 10 for i in range(1, 10)]


def data_file(rows: int, cache: Path) -> Path:
    path = cache / f"deciles_{rows}.parquet"
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        values = np.random.default_rng(SEED).normal(50, 10, rows)
        pq.write_table(pa.table({"v": values}), path)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    cache = Path(tempfile.gettempdir()) / "dpselect-bench"
    parser.add_argument("--cache", type=Path, default=cache)
    args = parser.parse_args()
    path = data_file(args.rows, args.cache)
    con = duckdb.connect()
    sql = f"SELECT quantile_cont(v, {DECILES}) FROM read_parquet('{path}')"
    names = ["duckdb", "auto", "tree", "joint"]
    times: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(args.repeats):  # in turns: the load hits every row alike
        for name in names:
            start = time.perf_counter()
            if name == "duckdb":
                con.execute(sql).fetchall()
            else:
                quantile(str(path), "v", DECILES, 1.0, bounds=(0, 100), mechanism=name)
            times[name].append(time.perf_counter() - start)
    base = statistics.median(times["duckdb"])
    print(f"deciles of {args.rows:,} float64 from Parquet, median of {args.repeats}")
    for name in names:
        med = statistics.median(times[name])
        print(f"{name:<7} {med:7.2f} s  {med / base:5.2f}x DuckDB")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MB")


if __name__ == "__main__":
    main()
