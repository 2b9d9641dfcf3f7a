"""dpselect on Spark against the plain Spark query and the peers that run on Spark.

Run: ``python bench/bench_spark.py [--rows 10000000] [--values 100000] [--master local[2]]
[--repeats 2] [--tumult-python /work/venv-tumult/bin/python] [--no-peers]``.

The first run writes (fixed seed) a Parquet file of ``rows`` rows: ``item``, a string of
``values`` distinct values with a Zipf(1.1)-like popularity, and ``user_id``, an int64 with
about ten rows per user (users with several rows). Later runs reuse it (``--cache``). Then, in
one Spark session on ``--master`` (its start time is printed: users pay it once), it times

- plain Spark: ``groupBy("item").count()``, top 10 by count (collected);
- dpselect ``top_k(frame, "item", 10, 1.0, candidates=<every value>)``, rows are people;
- the same with ``privacy_unit="user_id", max_contributions=3``;
- PipelineDP (if installed) on the same session: DP counts over the public values with at
  most 3 partitions per user, then the top 10 of the noisy counts (its closest query);

and Tumult Analytics (if ``--tumult-python`` is given: Tumult 0.21 needs PySpark 3.5, so it runs
in its own virtual environment and its own Spark session, started and timed separately):
noisy counts over the public values (rows are people; and with ``MaxGroupsPerID(3)``), then
the top 10. Ratios are against the plain Spark query of the same run; targets: dpselect
without a privacy unit <= 1.3x, with one <= 3x, faster than the peers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import dpselect as dp

SEED = 20260102
ROWS_PER_USER = 10


def value_names(n_values: int) -> list[str]:
    width = len(str(n_values - 1))
    return [f"v{i:0{width}d}" for i in range(n_values)]


def make_file(path: Path, n_rows: int, n_values: int) -> None:
    """Zipf(1.1)-like items; user ids drawn uniformly from ``n_rows / 10`` users."""
    rng = np.random.default_rng(SEED)
    weights = 1.0 / np.arange(1, n_values + 1) ** 1.1
    names = pa.array(value_names(n_values))
    n_users = max(1, n_rows // ROWS_PER_USER)
    tmp = path.with_suffix(".tmp")
    schema = pa.schema([("user_id", pa.int64()), ("item", pa.string())])
    with pq.ParquetWriter(tmp, schema) as writer:
        for start in range(0, n_rows, 1_000_000):
            size = min(1_000_000, n_rows - start)
            idx = rng.choice(n_values, size=size, p=weights / weights.sum())
            users = rng.integers(0, n_users, size=size)
            writer.write_table(
                pa.table({"user_id": users, "item": names.take(pa.array(idx))}, schema=schema)
            )
    os.replace(tmp, path)


def timed(fn: Callable[[], Any], repeats: int, warm: bool = False) -> tuple[float, Any]:
    """The median of ``repeats`` runs (after one untimed run with ``warm``) and the output."""
    times, out = [], fn() if warm else None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def pipelinedp_top10(spark: Any, path: str, names: list[str] | None, unit: bool) -> list[str]:
    """PipelineDP's DP count per item on Spark (its RDD backend), then the top 10: over the
    public items (``names``), or with its private partition selection (``names=None``, the
    unknown-domain query; delta 1e-6)."""
    import pipeline_dp

    rows = spark.read.parquet(path).rdd.map(lambda r: (r[0], r[1]))
    if not unit:  # rows are people: a distinct id per row
        rows = rows.zipWithIndex().map(lambda p: (p[1], p[0][1]))
    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=1.0, total_delta=1e-6)
    engine = pipeline_dp.DPEngine(accountant, pipeline_dp.SparkRDDBackend(spark.sparkContext))
    params = pipeline_dp.AggregateParams(
        noise_kind=pipeline_dp.NoiseKind.LAPLACE,
        metrics=[pipeline_dp.Metrics.COUNT],
        max_partitions_contributed=3 if unit else 1,
        max_contributions_per_partition=1,
    )
    extractors = pipeline_dp.DataExtractors(
        privacy_id_extractor=lambda r: r[0],
        partition_extractor=lambda r: r[1],
        value_extractor=lambda r: 0,
    )
    if names is None:
        result = engine.aggregate(rows, params, extractors)
    else:
        result = engine.aggregate(rows, params, extractors, public_partitions=names)
    accountant.compute_budgets()
    counts = result.collect()
    counts.sort(key=lambda kv: -kv[1].count)
    return [k for k, _ in counts[:10]]


TUMULT_SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master(sys.argv[2]).config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
start = time.perf_counter() - t0
from tmlt.analytics import (AddOneRow, AddRowsWithID, KeySet, MaxGroupsPerID,
                            MaxRowsPerGroupPerID, PureDPBudget, QueryBuilder, Session)
df = spark.read.parquet(sys.argv[1])
keys = KeySet.from_dict({"item": json.loads(open(sys.argv[3]).read())})
from tmlt.analytics import ApproxDPBudget
out = {"start": start}
for unit in (False, True):
    t = time.perf_counter()
    session = Session.from_dataframe(
        privacy_budget=PureDPBudget(1.0), source_id="visits", dataframe=df,
        protected_change=AddRowsWithID("user_id") if unit else AddOneRow())
    query = QueryBuilder("visits")
    if unit:
        query = query.enforce(MaxGroupsPerID("item", 3)).enforce(MaxRowsPerGroupPerID("item", 1))
    answer = session.evaluate(query.groupby(keys).count(), PureDPBudget(1.0))
    top = answer.orderBy("count", ascending=False).limit(10).collect()
    out["unit" if unit else "rows"] = time.perf_counter() - t
    # unknown keys: get_groups (half the budget), then counts over the released keys, top 10
    t = time.perf_counter()
    try:
        session = Session.from_dataframe(
            privacy_budget=ApproxDPBudget(1.0, 1e-6), source_id="visits", dataframe=df,
            protected_change=AddRowsWithID("user_id") if unit else AddOneRow())
        query = QueryBuilder("visits")
        if unit:
            query = query.enforce(MaxGroupsPerID("item", 3)).enforce(
                MaxRowsPerGroupPerID("item", 1))
        groups = session.evaluate(query.get_groups(["item"]), ApproxDPBudget(0.5, 1e-6))
        found = KeySet.from_dataframe(groups)
        query = QueryBuilder("visits")
        if unit:
            query = query.enforce(MaxGroupsPerID("item", 3)).enforce(
                MaxRowsPerGroupPerID("item", 1))
        answer = session.evaluate(query.groupby(found).count(), ApproxDPBudget(0.5, 0))
        top = answer.orderBy("count", ascending=False).limit(10).collect()
        out[("unit" if unit else "rows") + "_groups"] = time.perf_counter() - t
    except Exception as exc:
        out[("unit" if unit else "rows") + "_groups_error"] = repr(exc).splitlines()[0][:300]
print(json.dumps(out))
"""


def run_tumult(python: str, path: str, master: str, names: list[str]) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "tumult_bench.py"
        script.write_text(TUMULT_SCRIPT)
        keys = Path(tmp) / "keys.json"
        keys.write_text(json.dumps(names))
        # Spark's Python workers must run Tumult's interpreter too (else: no module 'tmlt')
        env = {**os.environ, "PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python}
        out = subprocess.run(
            [python, str(script), path, master, str(keys)],
            capture_output=True,
            text=True,
            timeout=3600,
            env=env,
        )
    if out.returncode != 0:  # the Python error line (the last lines are Java frames)
        lines = out.stderr.strip().splitlines() if out.stderr else ["failed"]
        errors = [ln for ln in lines if ("Error" in ln or "Exception" in ln) and ":" in ln]
        raise RuntimeError((errors or lines)[-1].strip())
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


class _Rows(list[tuple[str, float]]):
    """The table's rows, each also printed as it is measured (a long run shows progress)."""

    def append(self, row: tuple[str, float]) -> None:
        print(f"  {row[0]}: {row[1]:.2f} s", flush=True)
        super().append(row)


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--values", type=int, default=100_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "dpselect-bench"))
    parser.add_argument("--tumult-python", default=None)
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--no-unknown", action="store_true", help="skip the unknown-domain rows")
    args = parser.parse_args()

    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"spark_{args.rows}_{args.values}.parquet"
    if not path.exists():
        print(f"writing {path} ...", flush=True)
        make_file(path, args.rows, args.values)
    names = value_names(args.values)

    from dpselect.data.engines.spark import spark_session
    from dpselect.sampling.source import InsecureSeededSource

    load_start = _load()
    t0 = time.perf_counter()
    spark = spark_session(args.master, **{"spark.ui.showConsoleProgress": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    start = time.perf_counter() - t0
    df = spark.read.parquet(str(path))
    from pyspark.sql import functions as f

    def plain() -> Any:
        return df.groupBy("item").count().orderBy(f.desc("count")).limit(10).collect()

    def ours(unit: bool, known: bool = True) -> Callable[[], Any]:
        bound: dict[str, Any] = {}
        if unit:
            bound = {
                "privacy_unit": "user_id",
                "contributions": dp.Contributions(values_per_unit=3),
            }
        kw: dict[str, Any] = {}
        if known:
            kw["candidates"] = names
        else:  # the unknown-domain path (delta > 0)
            kw["delta"] = 1e-6
        return lambda: dp.Session(df, source=InsecureSeededSource(1), **bound).top_k(
            "item", 10, epsilon=1.0, **kw
        )

    print(f"Spark session start {start:.1f} s", flush=True)
    rows = _Rows()
    # every query runs once untimed first (the JVM compiles its plan's code), then timed
    t_plain, _ = timed(plain, args.repeats, warm=True)
    rows.append(("plain Spark groupBy().count() top-10", t_plain))
    t_rows, _ = timed(ours(False), args.repeats, warm=True)
    rows.append(("dpselect top_k, rows are people", t_rows))
    t_unit, _ = timed(ours(True), args.repeats, warm=True)
    rows.append(("dpselect top_k, privacy unit, max 3 per user", t_unit))
    if not args.no_unknown:
        t, _ = timed(ours(False, known=False), args.repeats, warm=True)
        rows.append(("dpselect top_k, unknown domain (delta 1e-6), rows are people", t))
        t, _ = timed(ours(True, known=False), args.repeats, warm=True)
        rows.append(("dpselect top_k, unknown domain (delta 1e-6), max 3 per user", t))
    notes: list[str] = []
    if not args.no_peers:
        try:
            import pipeline_dp  # noqa: F401

            for unit in (False, True):
                label = "max 3 per user" if unit else "rows are people"
                for known in (True, False) if not args.no_unknown else (True,):
                    kind = "over public items" if known else "private partition selection"
                    try:
                        t, _ = timed(
                            lambda u=unit, k=known: pipelinedp_top10(
                                spark, str(path), names if k else None, u
                            ),
                            1,
                        )
                        rows.append((f"PipelineDP 0.3.1 counts {kind}, top-10, {label}", t))
                    except Exception as exc:  # report why it could not run
                        first = str(exc).strip().splitlines()[0][:300] if str(exc) else ""
                        notes.append(f"PipelineDP counts {kind}, {label}: {type(exc).__name__}: "
                                     f"{first}")  # fmt: skip
        except ImportError:
            notes.append("PipelineDP is not installed: skipped")
    spark.stop()
    if args.tumult_python and not args.no_peers:
        try:
            tumult = run_tumult(args.tumult_python, str(path), args.master, names)
        except Exception as exc:
            notes.append(f"Tumult: {type(exc).__name__}: {exc}")
            tumult = {}
        label = "Tumult 0.21 counts over public items, top-10"
        for key, what in (("rows", "rows are people"), ("unit", "max 3 per user")):
            if key in tumult:
                rows.append((f"{label}, {what}", tumult[key]))
            if key + "_groups" in tumult:
                rows.append((f"Tumult 0.21 get_groups (delta 1e-6) then counts, top-10, {what}",
                             tumult[key + "_groups"]))  # fmt: skip
            if key + "_groups_error" in tumult:
                notes.append(f"Tumult get_groups, {what}: {tumult[key + '_groups_error']}")
        if "start" in tumult:
            print(f"Tumult's own Spark session (PySpark 3.5) started in {tumult['start']:.1f} s")

    print(
        f"\n{args.rows:,} rows, {args.values:,} values, {args.rows // ROWS_PER_USER:,} users, "
        f"master {args.master}; Spark session start {start:.1f} s (paid once); load average "
        f"at start {load_start}, at end {_load()} (2 cores)"
    )
    print("| query | seconds | ratio to plain Spark |")
    print("| --- | ---: | ---: |")
    for label, t in rows:
        print(f"| {label} | {t:.2f} | {t / t_plain:.2f}x |")
    for note in notes:
        print(f"not measured: {note}")


if __name__ == "__main__":
    sys.exit(main())
