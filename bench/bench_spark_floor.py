"""The floor of the privacy-unit path on Spark, and one plan with a Python map per partition.

Run: ``python bench/bench_spark_floor.py [--rows 10000000] [--repeats 3] [--check-rows N]``
(the Parquet file of ``bench/bench_spark.py``, written by it first). In one Spark session on
``local[2]``, every query once untimed, then ``--repeats`` rounds of all queries in turn;
medians and ratios against the plain query of the same rounds:

- plain ``groupBy("item").count()``, top 10 collected (bench_spark.py's baseline);
- the rows joined with the 10^5 candidates, counted per position (no user: the work every
  privacy-unit plan does before it groups by user);
- ``distinct(user_id).count()`` (the least shuffle by user: one row per user);
- the joined rows, ``groupBy(user).min(position)``, then counted per position: a per-user
  rule with no seed and no key (the floor of any rule that groups the rows by user);
- ``repartition(user)`` then ``mapInArrow`` (NumPy: one md5 per distinct user, the keys of
  ``dpselect.data.scores.bounding_key`` vectorised, each user's m smallest distinct (key,
  position)), counted per position. Runs Python on the executors (PYSPARK_PYTHON must have
  NumPy and pyarrow), which the Spark engine does not (docs/spark.md); the seed text here is
  an int64 unit's (``str``), so this is a measurement, not a general implementation. With
  ``--check-rows N`` it first checks its scores against the engine's on the N-row file;
- dpselect's plan: ``dpselect.data.engines.spark.candidate_scores(..., "user_id", 3, salt)``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
SALT = 987654321
M = 3


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _fmix32(x: Any) -> Any:
    x = x ^ (x >> np.uint32(16))
    x = x * np.uint32(0x85EBCA6B)
    x = x ^ (x >> np.uint32(13))
    x = x * np.uint32(0xC2B2AE35)
    return x ^ (x >> np.uint32(16))


def kept_positions(salt: int, m: int) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The mapInArrow function: batches ``(u, i)`` of whole users -> the kept positions."""
    prefix = f"{salt & ((1 << 64) - 1)}\x1fu\x1f".encode()

    def fn(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        parts = [b for b in batches if b.num_rows]
        if not parts:
            return
        tab = pa.Table.from_batches(parts)
        u = tab.column("u").to_numpy()
        i = tab.column("i").to_numpy()
        users, inv = np.unique(u, return_inverse=True)
        seeds = np.fromiter(
            (
                int.from_bytes(hashlib.md5(prefix + str(x).encode()).digest()[:8], "little")
                for x in users.tolist()
            ),
            dtype=np.uint64,
            count=len(users),
        )
        a = (seeds & np.uint64(0xFFFFFFFF)).astype(np.uint32)[inv]
        b = (seeds >> np.uint64(32)).astype(np.uint32)[inv]
        with np.errstate(over="ignore"):
            k = _fmix32(_fmix32(i.astype(np.uint32) ^ a) ^ b)
        order = np.lexsort((i, k, inv))  # by user, then (key, position)
        su, si = inv[order], i[order]
        distinct = np.ones(len(su), bool)
        distinct[1:] = (su[1:] != su[:-1]) | (si[1:] != si[:-1])
        su, si = su[distinct], si[distinct]
        first = np.flatnonzero(np.r_[True, su[1:] != su[:-1]])
        rank = np.arange(len(su)) - np.repeat(first, np.diff(np.append(first, len(su))))
        yield pa.RecordBatch.from_arrays([pa.array(si[rank < m])], names=["i"])

    return fn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--values", type=int, default=100_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--check-rows", type=int, default=0)
    parser.add_argument("--cache", default="/tmp/dpselect-bench")
    args = parser.parse_args()

    from bench_spark import value_names

    from dpselect.data.engines import spark as se

    names = value_names(args.values)
    print("load start", _load(), flush=True)
    spark = se.spark_session(args.master, **{"spark.ui.showConsoleProgress": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    from pyspark.sql import functions as f
    from pyspark.sql import types as t

    typed = se.typed_candidates(names, "VARCHAR")

    def frame(rows: int) -> Any:
        return spark.read.parquet(f"{args.cache}/spark_{rows}_{args.values}.parquet")

    def joined(df: Any) -> Any:
        cands = f.broadcast(se._candidate_frame(spark, typed, t.StringType()))
        rows = df.where(f.col("user_id").isNotNull())
        rows = rows.select(f.col("user_id").alias("u"), f.col("item").alias("v"))
        return rows.join(cands, on="v").select("u", "i")

    def arrow_plan(df: Any, m: int = M) -> Any:
        kept = joined(df).repartition("u").mapInArrow(kept_positions(SALT, m), "i long")
        tab = kept.groupBy("i").count().toArrow()
        out = np.zeros(len(names), np.int64)
        out[tab.column(0).to_numpy()] = tab.column(1).to_numpy()
        return out

    def per_user_min(df: Any) -> Any:
        return joined(df).groupBy("u").agg(f.min("i").alias("p")).groupBy("p").count()

    def engine(df: Any, m: int = M) -> Any:
        return se.candidate_scores(se.open_spark_table(df), "item", names, "user_id", m, SALT)

    if args.check_rows:
        small = frame(args.check_rows)
        for m in (1, M):
            same = np.array_equal(engine(small, m), arrow_plan(small, m))
            print(f"mapInArrow plan equal to the engine's scores at m = {m}: {same}")
            if not same:
                raise SystemExit("the mapInArrow plan disagrees with the engine")
    df = frame(args.rows)
    # every call builds a new frame: Spark would reuse a frame's shuffle files otherwise
    queries: dict[str, Callable[[], Any]] = {
        "plain `groupBy(item).count()`, top 10": lambda: (
            df.groupBy("item").count().orderBy(f.desc("count")).limit(10).collect()
        ),
        "rows joined with the candidates, count per position (no user)": lambda: (
            joined(df).groupBy("i").count().toArrow()
        ),
        "`distinct(user_id).count()`": lambda: df.select("user_id").distinct().count(),
        "joined rows, `groupBy(user).min(position)`, count per position (no seed, no key)": (
            lambda: per_user_min(df).toArrow()
        ),
        f"`repartition(user)` + `mapInArrow` (NumPy), m = {M}": lambda: arrow_plan(df),
        f"dpselect's plan (`candidate_scores`), m = {M}": lambda: engine(df),
    }
    for fn in queries.values():
        fn()
    times: dict[str, list[float]] = {k: [] for k in queries}
    for r in range(args.repeats):
        for k, fn in queries.items():
            start = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - start)
        print(f"round {r}: load {_load()}", flush=True)
    base = statistics.median(next(iter(times.values())))
    print(f"\n{args.rows:,} rows, master {args.master}, medians of {args.repeats}")
    print("| query | seconds | ratio to plain | runs |\n| --- | ---: | ---: | --- |")
    for k, ts in times.items():
        med = statistics.median(ts)
        print(f"| {k} | {med:.2f} | {med / base:.2f}x | {', '.join(f'{x:.2f}' for x in ts)} |")
    print("load end", _load())


if __name__ == "__main__":
    sys.exit(main())
