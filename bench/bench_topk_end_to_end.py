"""End to end: private ``top_k`` on a Parquet file against the plain DuckDB query.

Run: ``python bench/bench_topk_end_to_end.py [--rows 10000000] [--values 100000] [--repeats 5]``.

The first run writes (fixed seed) a Parquet file of ``rows`` rows with ``values`` distinct
string values of a Zipf-like popularity into a cache directory (``--cache``, default
``$TMPDIR/dpselect-bench``); later runs reuse it. Then, in the same process, it times the
median of ``repeats`` runs of

- the plain query ``SELECT col, count(*) FROM read_parquet(...) GROUP BY col
  ORDER BY count(*) DESC LIMIT 10`` (one long-lived DuckDB connection, all threads), and
- the private ``top_k(path, col, 10, 1.0, candidates=<the values public list>)``,

and prints their ratio (target: private <= 1.2x plain), plus one breakdown of the private call
(opening, scoring, calibration and sampling) to show where the time goes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from dpselect.api import top_k
from dpselect.data.scores import candidate_scores
from dpselect.data.tables import open_table

COLUMN = "item"
SEED = 20260101


def value_names(n_values: int) -> list[str]:
    width = len(str(n_values - 1))
    return [f"v{i:0{width}d}" for i in range(n_values)]


def make_file(path: Path, n_rows: int, n_values: int) -> None:
    """``n_rows`` rows drawn from a Zipf(1.1)-like law over ``n_values`` names, fixed seed."""
    rng = np.random.default_rng(SEED)
    weights = 1.0 / np.arange(1, n_values + 1) ** 1.1
    names = pa.array(value_names(n_values))
    tmp = path.with_suffix(".tmp")
    chunk = 1_000_000
    schema = pa.schema([(COLUMN, pa.string())])
    with pq.ParquetWriter(tmp, schema) as writer:
        for start in range(0, n_rows, chunk):
            size = min(chunk, n_rows - start)
            idx = rng.choice(n_values, size=size, p=weights / weights.sum())
            writer.write_table(pa.table({COLUMN: names.take(pa.array(idx))}, schema=schema))
    os.replace(tmp, path)


_PLAIN = duckdb.connect(":memory:")


def plain_query(path: Path) -> list[tuple[Any, ...]]:
    """The plain query on one long-lived connection: the query's own time only."""
    return _PLAIN.execute(
        f"SELECT {COLUMN}, count(*) FROM read_parquet(?) GROUP BY {COLUMN} "
        "ORDER BY count(*) DESC LIMIT 10",
        [str(path)],
    ).fetchall()


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def interleaved_medians(fns: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """Median time of each function, run in turns (a load change hits both alike)."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            times[name].append(timed(fn))
    return {name: statistics.median(ts) for name, ts in times.items()}


def breakdown(path: Path, candidates: list[str]) -> dict[str, float]:
    """One private run split into its steps (rough: each step timed alone)."""
    out: dict[str, float] = {}
    start = time.perf_counter()
    table = open_table(path)
    out["open_table"] = time.perf_counter() - start
    start = time.perf_counter()
    candidate_scores(table, COLUMN, candidates)
    out["candidate_scores"] = time.perf_counter() - start
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--values", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "dpselect-bench"
    )
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    path = args.cache / f"topk_{args.rows}_{args.values}_{SEED}.parquet"
    if not path.exists():
        start = time.perf_counter()
        make_file(path, args.rows, args.values)
        print(f"wrote {path} in {time.perf_counter() - start:.1f} s")
    candidates = value_names(args.values)
    size_mb = path.stat().st_size / 1e6
    print(f"file: {path} ({args.rows:,} rows, {args.values:,} values, {size_mb:.0f} MB)")
    print(f"cpus: {os.cpu_count()}, duckdb {duckdb.__version__}, repeats: {args.repeats}")

    # warm the page cache and the imports once, then alternate fairly
    plain_query(path)
    top_k(path, COLUMN, 10, 1.0, candidates=candidates)
    medians = interleaved_medians(
        {
            "plain": lambda: plain_query(path),
            "private": lambda: top_k(path, COLUMN, 10, 1.0, candidates=candidates),
        },
        args.repeats,
    )
    plain, private = medians["plain"], medians["private"]
    print(f"plain DuckDB GROUP BY ... LIMIT 10: {plain * 1e3:8.1f} ms (median)")
    print(f"private top_k (k=10, eps=1):        {private * 1e3:8.1f} ms (median)")
    print(f"ratio private / plain:              {private / plain:8.2f}x (target <= 1.2x)")
    for step, seconds in breakdown(path, candidates).items():
        print(f"  {step:<20} {seconds * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
