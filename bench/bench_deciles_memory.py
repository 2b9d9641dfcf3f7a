"""Deciles of 10^6 floats in memory: every method against DuckDB, OpenDP and diffprivlib, one run.

Run: ``python bench/bench_deciles_memory.py [--rows 1000000] [--repeats 5] [--no-peers]
[--methods auto tree ...]``.

A row of issue 25's table: deciles (0.1, ..., 0.9) of ``rows`` float64 values (normal, mean
100, sd 15, fixed seed) held in memory as a NumPy array, at epsilon 1 with bounds (0, 200).
Times in turns (every job once per repeat, so the machine's load hits them alike; best of
``repeats``) DuckDB's ``quantile_cont`` over the array (the baseline) and ``dpselect.quantile``
on the array with every method: ``auto`` (the default), ``tree``, ``joint``, ``recursive``,
``split`` and the exponential mechanism over 1,001 public ``candidates``; then, once each,
OpenDP 0.16 (exponential mechanism over 1,001 candidates, epsilon / 9 per decile:
``bench_quantiles._opendp``) and diffprivlib 0.6 (``tools.quantile``, epsilon split). Prints
each time and its ratio to DuckDB's (target: the default faster than every peer and at most
2x DuckDB), then the process's peak resident memory.
"""

from __future__ import annotations

import argparse
import resource
import time
from collections.abc import Callable
from typing import Any

import duckdb
import numpy as np

from dpselect import quantile

DECILES = [i / 10 for i in range(1, 10)]
BOUNDS = (0.0, 200.0)
METHODS = ("auto", "tree", "joint", "recursive", "split", "candidates")


def _timed(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-peers", action="store_true", help="skip OpenDP and diffprivlib")
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    args = parser.parse_args()
    x = np.random.default_rng(20261125).normal(100.0, 15.0, args.rows)
    con = duckdb.connect()
    con.register("x", {"v": x})
    sql = f"SELECT quantile_cont(v, {DECILES}) FROM x"
    candidates = list(np.linspace(*BOUNDS, 1001))
    jobs: dict[str, Callable[[], Any]] = {
        "DuckDB quantile_cont (baseline)": lambda: con.execute(sql).fetchall()
    }
    for method in args.methods:
        if method == "candidates":
            jobs["dpselect quantile, candidates (1,001)"] = lambda: quantile(
                x, None, DECILES, epsilon=1.0, candidates=candidates
            )
        else:
            jobs[f"dpselect quantile, mechanism={method}"] = lambda m=method: quantile(
                x, None, DECILES, epsilon=1.0, bounds=BOUNDS, mechanism=m
            )
    best = {name: float("inf") for name in jobs}
    for _ in range(args.repeats):  # in turns: the load hits every job alike
        for name, job in jobs.items():
            best[name] = min(best[name], _timed(job))
    if not args.no_peers:
        from bench_quantiles import _diffprivlib, _opendp

        best["OpenDP 0.16 (EM over 1001 candidates, eps/9)"] = _timed(
            lambda: _opendp(x, BOUNDS, 1.0)
        )
        best["diffprivlib 0.6 (eps/9)"] = _timed(lambda: _diffprivlib(x, BOUNDS, 1.0))
    base = best["DuckDB quantile_cont (baseline)"]
    print(f"## deciles of {args.rows:,} float64 in memory, epsilon 1, bounds {BOUNDS}")
    print(f"| job | best of {args.repeats} (s; peers: one run) | ratio to DuckDB |")
    print("| --- | --- | --- |")
    for name, t in best.items():
        print(f"| {name} | {t:.3f} | {t / base:.2f}x |")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of the process: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
