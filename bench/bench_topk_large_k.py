"""Top-k with a large k: ``k = values`` against ``k = 10``, same file, same candidates, one run.

Run: ``python bench/bench_topk_large_k.py [--rows 10000000] [--values 100000] [--repeats 3]``.

Writes (fixed seed, cached in ``$TMPDIR/dpselect-bench``) a Parquet file of ``rows`` rows over
``values`` distinct strings of Zipf-like popularity, then times in turns (median of
``repeats``) the private ``top_k(path, "item", k, 1.0, candidates=<every value>)`` with
``k = 10`` (the baseline) and with ``k = values`` (every candidate ranked), the default
``mechanism="auto"``, and prints each median, the mechanism ``auto`` chose and the ratio
(target of issue 25: at most 3x). The scan is the same for both; what differs is the
selection: a peeled mechanism draws ``k * n`` exact noise values, a histogram ``n``.
Peak resident memory of the process is printed at the end.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from dpselect import top_k

SEED = 20261125


def data_file(rows: int, values: int, cache: Path) -> tuple[Path, list[str]]:
    width = len(str(values - 1))
    names = [f"v{i:0{width}d}" for i in range(values)]
    path = cache / f"large_k_{rows}_{values}.parquet"
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng(SEED)
        ranks = np.minimum(rng.zipf(1.2, rows) - 1, values - 1)
        column = pa.DictionaryArray.from_arrays(pa.array(ranks, pa.int32()), pa.array(names))
        pq.write_table(pa.table({"item": column.cast(pa.string())}), path)
    return path, names


def timed(path: Path, names: list[str], k: int, repeats: int) -> tuple[float, str]:
    times, chosen = [], ""
    for _ in range(repeats):
        start = time.perf_counter()
        result = top_k(str(path), "item", k, epsilon=1.0, candidates=names)
        times.append(time.perf_counter() - start)
        chosen = str(result.parameters.get("mechanism"))
    return statistics.median(times), chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--values", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "dpselect-bench"
    )
    args = parser.parse_args()
    path, names = data_file(args.rows, args.values, args.cache)
    base, base_mech = timed(path, names, 10, args.repeats)
    large, large_mech = timed(path, names, args.values, args.repeats)
    print(f"rows {args.rows:,}, candidates {args.values:,}, median of {args.repeats}")
    print(f"k = 10          {base:8.2f} s   auto chose {base_mech}")
    print(f"k = {args.values:<11,} {large:8.2f} s   auto chose {large_mech}")
    print(f"ratio k = {args.values:,} / k = 10: {large / base:.2f}x (target <= 3x)")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MB")


if __name__ == "__main__":
    main()
