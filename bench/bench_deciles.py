"""Quantiles of a Parquet file against DuckDB's ``quantile_cont``, every method, one run.

Run: ``python bench/bench_deciles.py [--rows 10000000] [--repeats 3] [--levels 1 9 99]
[--methods auto tree ...]``.

Writes (fixed seed, cached in ``$TMPDIR/dpselect-bench``) a Parquet file of ``rows`` float64
values (normal, mean 50, sd 10). For each number of levels ``m`` (default 1, 9 and 99, evenly
spaced: ``m = 9`` are the deciles) it times, in turns (every job once per repeat, so the
machine's load hits them alike; best of ``repeats``), DuckDB's ``SELECT quantile_cont(v,
[levels]) FROM read_parquet(...)`` (the baseline) and ``quantile(path, "v", levels, 1.0,
bounds=(0, 100), mechanism=M)`` for every method that takes ``m`` levels: ``auto`` (the
default), ``tree``, ``joint`` (at most 64 levels), ``recursive``, ``split``, and the
exponential mechanism over 1,001 public ``candidates`` (``np.linspace(0, 100, 1001)``). It
prints each job's best time and its ratio to DuckDB's (target of issue 25: at most 2x for
every method and number of levels), then the process's peak resident memory.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from dpselect import quantile

SEED = 20261125
BOUNDS = (0.0, 100.0)
METHODS = ("auto", "tree", "joint", "recursive", "split", "candidates")


def data_file(rows: int, cache: Path) -> Path:
    path = cache / f"deciles_{rows}.parquet"
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        values = np.random.default_rng(SEED).normal(50, 10, rows)
        pq.write_table(pa.table({"v": values}), path)
    return path


def levels_of(m: int) -> list[float]:
    """``m`` evenly spaced levels ``k / (m + 1)`` (``m = 9``: the deciles)."""
    return [k / (m + 1) for k in range(1, m + 1)]


def jobs(path: Path, m: int, methods: tuple[str, ...] = METHODS) -> dict[str, Callable[[], Any]]:
    """The baseline and every method of ``methods`` that takes ``m`` levels, as callables."""
    levels = levels_of(m)
    con = duckdb.connect()
    sql = f"SELECT quantile_cont(v, {levels}) FROM read_parquet('{path}')"
    out: dict[str, Callable[[], Any]] = {"duckdb": lambda: con.execute(sql).fetchall()}
    candidates = list(np.linspace(*BOUNDS, 1001))
    for method in methods:
        if method == "joint" and m > 64:
            continue
        if method == "candidates":
            out[method] = lambda: quantile(
                str(path), "v", levels, epsilon=1.0, candidates=candidates
            )
        else:
            out[method] = lambda method=method: quantile(
                str(path), "v", levels, epsilon=1.0, bounds=BOUNDS, mechanism=method
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 9, 99])
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    cache = Path(tempfile.gettempdir()) / "dpselect-bench"
    parser.add_argument("--cache", type=Path, default=cache)
    args = parser.parse_args()
    path = data_file(args.rows, args.cache)
    print(f"## quantiles of {args.rows:,} float64 from Parquet, best of {args.repeats} in turns")
    print("| levels | job | best (s) | ratio to DuckDB |")
    print("| --- | --- | --- | --- |")
    for m in args.levels:
        todo = jobs(path, m, tuple(args.methods))
        best = {name: float("inf") for name in todo}
        for _ in range(args.repeats):  # in turns: the load hits every job alike
            for name, job in todo.items():
                start = time.perf_counter()
                job()
                best[name] = min(best[name], time.perf_counter() - start)
        for name, t in best.items():
            print(f"| {m} | {name} | {t:.3f} | {t / best['duckdb']:.2f}x |", flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of the process: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
