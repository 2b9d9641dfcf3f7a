"""Deciles of 10^6 floats in memory: dpselect against OpenDP, diffprivlib and DuckDB, one run.

Run: ``python bench/bench_deciles_memory.py [--rows 1000000] [--repeats 3]``.

A row of issue 25's table: deciles (0.1, ..., 0.9) of ``rows`` float64 values (normal, mean
100, sd 15, fixed seed) held in memory as a NumPy array, at epsilon 1 with bounds (0, 200).
Times in turns (median of ``repeats``) DuckDB's ``quantile_cont`` over the array (the
baseline), ``dpselect.quantile`` on the array with ``mechanism`` ``auto`` (the default),
``tree`` and ``joint``, OpenDP 0.16 (exponential mechanism over 1,001 candidates, epsilon / 9
per decile: ``bench_quantiles._opendp``) and diffprivlib 0.6 (``tools.quantile``, epsilon
split), and prints each median and its ratio to DuckDB (target: the default faster than
every peer and at most 2x DuckDB), then the process's peak resident memory.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from collections.abc import Callable
from typing import Any

import duckdb
import numpy as np

from dpselect import quantile

DECILES = [i / 10 for i in range(1, 10)]
BOUNDS = (0.0, 200.0)


def _median(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-peers", action="store_true", help="skip OpenDP and diffprivlib")
    args = parser.parse_args()
    x = np.random.default_rng(20261125).normal(100.0, 15.0, args.rows)
    con = duckdb.connect()
    con.register("x", {"v": x})
    sql = f"SELECT quantile_cont(v, {DECILES}) FROM x"
    rows: list[tuple[str, float]] = [("DuckDB quantile_cont (baseline)", _median(
        lambda: con.execute(sql).fetchall(), args.repeats))]  # fmt: skip
    for method in ("auto", "tree", "joint"):
        rows.append((f"dpselect quantile, mechanism={method}", _median(
            lambda m=method: quantile(x, None, DECILES, 1.0, bounds=BOUNDS, mechanism=m),
            args.repeats)))  # fmt: skip
    if not args.no_peers:
        from bench_quantiles import _diffprivlib, _opendp

        rows.append(("OpenDP 0.16 (EM over 1001 candidates, eps/9)",
                     _median(lambda: _opendp(x, BOUNDS, 1.0), 1)))  # fmt: skip
        rows.append(("diffprivlib 0.6 (eps/9)", _median(lambda: _diffprivlib(x, BOUNDS, 1.0), 1)))
    base = rows[0][1]
    print(f"## deciles of {args.rows:,} float64 in memory, epsilon 1, bounds {BOUNDS}")
    print("| job | median (s) | ratio to DuckDB |")
    print("| --- | --- | --- |")
    for name, t in rows:
        print(f"| {name} | {t:.3f} | {t / base:.2f}x |")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of the process: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
