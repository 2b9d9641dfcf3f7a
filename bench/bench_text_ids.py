"""Text unit ids against integer ids on the same rows, each against its per-person floor.

Run: ``python bench/bench_text_ids.py [--rows 5e6] [--values 1e5] [--repeats 3]``.

The first run writes (fixed seed) a Parquet file of ``rows`` rows into a cache directory
(``--cache``, default ``$TMPDIR/dpselect-bench``): ``user_id`` (int64, ``rows / 10`` users,
uniform), ``user_name`` (text, ``'user-' || user_id``: the same units) and ``page`` (text,
``values`` Zipf-like values). Then, in one process and in turns (best of ``repeats``), it
times on each id column

- the floor: DuckDB's per-person count with no bound, seed or key (``GROUP BY unit, page``
  then ``GROUP BY page``; with candidates, only the candidates' values: a join with them);
- the engine's scores with a privacy unit and ``values_per_unit = m`` over the candidates
  (every page) and without candidates (the unknown-domain counts),

and prints the best wall times, the ratios text / integer and dpselect / floor, and the load
average, and a digest of each result (for a fixed salt, a change of plan must keep it).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from dpselect.data.query import Query, UnitRule
from dpselect.data.tables import open_table

SALT = 12345


def make_file(path: Path, n_rows: int, n_values: int) -> None:
    """``user_id``, ``user_name`` and Zipf-like ``page`` (fixed seed)."""
    rng = np.random.default_rng(45)
    users = rng.integers(0, max(1, n_rows // 10), n_rows, dtype=np.int64)
    weights = 1.0 / np.arange(1, n_values + 1)
    pages = rng.choice(n_values, size=n_rows, p=weights / weights.sum())
    names = np.char.add("user-", users.astype(str))
    table = pa.table(
        {
            "user_id": pa.array(users),
            "user_name": pa.array(names.tolist(), pa.string()),
            "page": pa.array([f"page-{i}" for i in range(n_values)]).take(pa.array(pages)),
        }
    )
    pq.write_table(table, path, row_group_size=1 << 20)


def best_of(fns: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """The best wall time of each function, the functions run in turns."""
    best = {name: float("inf") for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=5e6)
    parser.add_argument("--values", type=float, default=1e5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--m", type=int, nargs="+", default=[3])
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "dpselect-bench"))
    args = parser.parse_args()
    n_rows, n_values = int(args.rows), int(args.values)
    os.makedirs(args.cache, exist_ok=True)
    path = Path(args.cache) / f"text_ids_{n_rows}_{n_values}.parquet"
    if not path.exists():
        make_file(path, n_rows, n_values)
    candidates = [f"page-{i}" for i in range(n_values)]
    con = duckdb.connect()
    con.register("cands", pa.table({"v": pa.array(candidates)}))
    source = f"read_parquet('{path}')"
    ids = {"integer": "user_id", "text": "user_name"}
    tables = {kind: open_table(path) for kind in ids}  # one table each: a text unit's view
    fns: dict[str, Callable[[], Any]] = {}
    results: dict[str, Any] = {}

    def keep(name: str, fn: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> None:
            results[name] = fn()

        return run

    for kind, unit in ids.items():
        fns[f"floor {kind}, candidates"] = lambda unit=unit: con.execute(
            f"SELECT page, count(*) FROM (SELECT d.{unit}, d.page FROM {source} d "
            f"JOIN cands c ON d.page = c.v GROUP BY 1, 2) GROUP BY 1"
        ).fetchall()
        fns[f"floor {kind}, no candidates"] = lambda unit=unit: con.execute(
            f"SELECT page, count(*) FROM (SELECT {unit}, page FROM {source} "
            "GROUP BY 1, 2) GROUP BY 1"
        ).fetchall()
    for m in args.m:
        for kind, unit in ids.items():
            table, rule = tables[kind], UnitRule(privacy_unit=unit, values_per_unit=m, salt=SALT)
            fns[f"dpselect {kind}, candidates, m={m}"] = keep(
                f"{kind} c {m}", lambda t=table, r=rule: t.scores(Query("page", r), candidates)
            )
            fns[f"dpselect {kind}, no candidates, m={m}"] = keep(
                f"{kind} n {m}", lambda t=table, r=rule: t.counts(Query("page", r), 10)
            )
    for fn in fns.values():  # warm the page cache and the views once
        fn()
    for name, found in sorted(results.items()):
        digest = hashlib.md5(repr(np.asarray(found, dtype=object).tolist()).encode()).hexdigest()
        print(f"  result {name}: {digest[:12]}")
    best = best_of(fns, args.repeats)
    print(f"{n_rows} rows, {n_rows // 10} users, {n_values} pages, best of {args.repeats}, "
          f"load average {os.getloadavg()[0]:.2f} (after)")  # fmt: skip
    for name, seconds in best.items():
        print(f"  {name:42s} {seconds:7.3f} s")
    for m in args.m:
        for what, label in (("candidates", "candidates"), ("no candidates", "no candidates")):
            floor = {kind: best[f"floor {kind}, {what}"] for kind in ids}
            ours = {kind: best[f"dpselect {kind}, {what}, m={m}"] for kind in ids}
            print(
                f"m={m}, {label:13s}: text/integer {ours['text'] / ours['integer']:.2f}x "
                f"(floor {floor['text'] / floor['integer']:.2f}x); dpselect/floor integer "
                f"{ours['integer'] / floor['integer']:.2f}x, text "
                f"{ours['text'] / floor['text']:.2f}x"
            )


if __name__ == "__main__":
    main()
