"""Candidate scores with a privacy unit, stage by stage, against the plain ``GROUP BY item``.

Run: ``flock /tmp/dpselect-bench.lock python bench/bench_bounding_stages.py [--rows 10000000]
[--repeats 3]``.

The file is ``bench/bench_topk_end_to_end.py``'s unit file (``rows`` rows, ``user_id`` int64
uniform over ``rows / 10`` users, ``item`` text over 10^5 Zipf-like values; written once into
the same cache). Every query below runs on one table (``open_table``), in interleaved rounds
(a load change hits all alike); each prints its best wall and process CPU time (all threads)
and their ratios to the plain ``GROUP BY item`` of the same round set. The stages are the
steps of the packed plan (``dpselect/data/packed_scores.py``), each timed alone, and the
floors any plan of the rule runs:

- ``distinct users``: ``SELECT DISTINCT user_id`` (every per-user rule groups the rows by
  user);
- ``md5 of the users``: one ``md5_number`` per distinct user (the rule's seed), without the
  scan (the users are held in a temporary table first);
- ``units table``: the packed plan's step 1 (distinct users and their seed; the code is the rowid);
- ``join candidates``: every row joined with the candidates (contributions are spent on
  candidates only), counted;
- ``join candidates + units``: the packed plan's step 2, counted, then streamed to Python
  as Arrow batches of words (no NumPy work);
- ``keys + choice (NumPy)``: steps 3 and 4 on the words held in memory (m = 1 and 3);
- ``packed plan``: the whole ``candidate_scores`` (m = 1 and 3; m = 1 also through the held,
  sorted words of m > 1, against the per-unit minimum folded batch by batch).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_topk_end_to_end import SEED, make_unit_file, value_names

from dpselect.data import packed_scores, scores
from dpselect.data.query import Query, UnitRule
from dpselect.data.rules import salt_text
from dpselect.data.tables import open_table

SALT = 12345


def timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """(wall seconds, process CPU seconds on all threads) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def stages(path: Path, n_values: int) -> dict[str, Callable[[], Any]]:
    """The timed callables (the table, candidates and held words prepared once)."""
    table = open_table(path)
    con = table.connection
    candidates = value_names(n_values)
    con.register("bench_cands", pa.table({"v": pa.array(candidates),
                                          "i": np.arange(n_values, dtype=np.uint64)}))  # fmt: skip
    unit, valid = scores.unit_sql("user_id", "BIGINT")
    seed = scores.unit_seed_sql("BIGINT")
    params = {"salt": salt_text(SALT)}
    con.execute(f"CREATE TEMP TABLE bench_users AS SELECT DISTINCT {unit} AS u FROM data")
    units_sql = f"""CREATE OR REPLACE TEMP TABLE bench_units AS
        SELECT u, {seed} AS h FROM (SELECT DISTINCT {unit} AS u FROM data WHERE {valid})"""
    con.execute(units_sql, params)
    found = con.execute("SELECT rowid AS k, h FROM bench_units").fetchnumpy()
    seeds = np.zeros(len(found["k"]), dtype=np.uint64)
    seeds[np.asarray(found["k"], dtype=np.int64)] = np.asarray(found["h"], dtype=np.uint64)
    low = (seeds & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    high = (seeds >> np.uint64(32)).astype(np.uint32)
    words_sql = f"""SELECT (CAST(s.rowid AS UBIGINT) << 32) | c.i AS w
                    FROM data JOIN bench_cands AS c ON data.item = c.v
                    JOIN bench_units AS s ON {unit} = s.u WHERE {valid}"""
    held = con.execute(words_sql).fetchnumpy()["w"]
    held = np.asarray(held, dtype=np.uint64)

    def stream() -> int:
        n = 0
        for batch in con.sql(words_sql).to_arrow_reader(1 << 20):
            n += batch.num_rows
        return n

    def choice(m: int) -> Callable[[], Any]:
        def run() -> Any:
            with packed_scores._Collector(low, high) as collector:
                for start in range(0, len(held), 1 << 20):
                    collector.add(pa.record_batch([pa.array(held[start:start + (1 << 20)])],
                                                  names=["w"]))  # fmt: skip
                out = np.zeros(n_values, dtype=np.int64)
                for kept in collector.kept(m):
                    out += np.bincount(kept, minlength=n_values)
            return out

        return run

    class HeldWords(packed_scores._Collector):
        """``m = 1`` through the held, sorted words (the plan of ``m > 1``)."""

        def kept(self, m: int = 1) -> Any:  # type: ignore[override]
            return np.concatenate(list(super().kept(1)))

    def held_words_m1() -> Any:
        saved = packed_scores._Smallest
        packed_scores._Smallest = HeldWords  # type: ignore[misc,assignment]
        try:
            return table.scores(
                Query("item", UnitRule(privacy_unit="user_id", values_per_unit=1, salt=SALT)),
                candidates,
            )
        finally:
            packed_scores._Smallest = saved  # type: ignore[misc]

    def q(sql: str, p: dict[str, Any] | None = None) -> Callable[[], Any]:
        return lambda: con.execute(sql, p).fetchall()

    return {
        "plain GROUP BY item": q(
            "SELECT item, count(*) FROM data GROUP BY item ORDER BY 2 DESC LIMIT 10"
        ),
        "distinct users": q("SELECT count(*) FROM (SELECT DISTINCT user_id FROM data)"),
        "md5 of the users (no scan)": q(f"SELECT sum({seed}) FROM bench_users", params),
        "units table (step 1)": q(units_sql, params),
        "join candidates": q("SELECT count(*) FROM data JOIN bench_cands AS c ON data.item = c.v"),
        "join candidates + units": q(f"SELECT count(*) FROM ({words_sql})"),
        "  ... streamed as Arrow words": stream,
        "keys + choice (NumPy), m=1": choice(1),
        "keys + choice (NumPy), m=3": choice(3),
        "packed plan, m=1": lambda: table.scores(
            Query("item", UnitRule(privacy_unit="user_id", values_per_unit=1, salt=SALT)),
            candidates,
        ),
        "packed plan, m=1, held words": held_words_m1,
        "packed plan, m=3": lambda: table.scores(
            Query("item", UnitRule(privacy_unit="user_id", values_per_unit=3, salt=SALT)),
            candidates,
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--values", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "dpselect-bench"
    )
    parser.add_argument("--only", nargs="*", default=None, help="stages to run (and plain)")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    path = args.cache / f"topk_units_{args.rows}_{args.values}_{SEED}.parquet"
    if not path.exists():
        make_unit_file(path, args.rows, args.values)
    fns = stages(path, args.values)
    if args.only is not None:
        fns = {k: v for k, v in fns.items() if k == "plain GROUP BY item" or k in args.only}
    for fn in fns.values():  # warm
        fn()
    walls: dict[str, list[float]] = {k: [] for k in fns}
    cpus: dict[str, list[float]] = {k: [] for k in fns}
    load = os.getloadavg()[0]
    for _ in range(args.repeats):
        for name, fn in fns.items():
            wall, cpu = timed(fn)
            walls[name].append(wall)
            cpus[name].append(cpu)
    base_wall, base_cpu = min(walls["plain GROUP BY item"]), min(cpus["plain GROUP BY item"])
    print(f"{args.rows:,} rows, {args.rows // 10:,} users; best of {args.repeats}; load "
          f"{load:.1f} before, {os.getloadavg()[0]:.1f} after; cpus {os.cpu_count()}")  # fmt: skip
    print(f"{'stage':<34} {'wall':>9} {'ratio':>7} {'cpu':>8} {'ratio':>7}")
    for name in fns:
        wall, cpu = min(walls[name]), min(cpus[name])
        print(f"{name:<34} {wall * 1e3:6.0f} ms {wall / base_wall:6.2f}x {cpu:6.2f} s "
              f"{cpu / base_cpu:6.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
