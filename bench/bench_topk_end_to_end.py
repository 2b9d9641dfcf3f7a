"""End to end: private ``top_k`` on a Parquet file against the plain DuckDB query.

Run: ``python bench/bench_topk_end_to_end.py [--rows 10000000] [--values 100000] [--repeats 5]``.

The first run writes (fixed seed) a Parquet file of ``rows`` rows with ``values`` distinct
string values of a Zipf-like popularity into a cache directory (``--cache``, default
``$TMPDIR/dpselect-bench``); later runs reuse it. Then, in the same process, it times the
median of ``repeats`` runs of

- the plain query ``SELECT col, count(*) FROM read_parquet(...) GROUP BY col
  ORDER BY count(*) DESC LIMIT 10`` (one long-lived DuckDB connection, all threads), and
- the private ``top_k(path, col, 10, 1.0, candidates=<the values public list>)``,

and prints their ratio (target: private <= 1.2x plain), plus one breakdown of the private call
(opening, scoring, calibration and sampling) to show where the time goes.

With ``--units`` (on by default; ``--no-units`` skips it) it also writes a second file with a
privacy unit (``user_id``: ``rows / 10`` users, so about 10 rows each, uniform) beside the
same item column, and times in turns the plain ``GROUP BY item`` of *that* file, the scores
with contribution bounding (``candidate_scores(..., privacy_unit="user_id",
max_contributions=m)`` for m = 1 and 3, the privacy-unit path of ``top_k``) and the
unknown-domain path (``top_values``, m = 1 and 3), the general SQL plan for m = 1 and 3 and
the dictionary plan for m = 3 (the plans that the packed plan, dpselect.data.packed_scores,
replaces for these calls), and ``top_k`` end to end (m = 1 and 3), printing each median (or,
with ``--best``, the best) wall time and process CPU time (all threads) and their ratios to
the plain query (target: at most 5x), and the load average. A "floor" row times only the join
of every row with the candidates and one integer ``min`` per user (no seed, no key): what
any plan of the rule must at least do.
``--previous`` adds the plan before issue 14 (tests/data/previous_bounding_sql.py).
``--memory`` adds each query's peak resident memory, one spawned process per
query (same imports, table opened, then one query): the peak of the whole process and its growth
during the query, each with its ratio to the plain query's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from _rss import peak_rss_mib

import dpselect as dp
from dpselect.data.dictionary_scores import dictionary_candidate_scores
from dpselect.data.query import Query, UnitRule
from dpselect.data.scores import duckdb_candidate_scores
from dpselect.data.tables import open_table

COLUMN = "item"
SEED = 20260101


def value_names(n_values: int) -> list[str]:
    width = len(str(n_values - 1))
    return [f"v{i:0{width}d}" for i in range(n_values)]


def make_file(path: Path, n_rows: int, n_values: int) -> None:
    """``n_rows`` rows drawn from a Zipf(1.1)-like law over ``n_values`` names, fixed seed."""
    rng = np.random.default_rng(SEED)
    weights = 1.0 / np.arange(1, n_values + 1) ** 1.1
    names = pa.array(value_names(n_values))
    tmp = path.with_suffix(".tmp")
    chunk = 1_000_000
    schema = pa.schema([(COLUMN, pa.string())])
    with pq.ParquetWriter(tmp, schema) as writer:
        for start in range(0, n_rows, chunk):
            size = min(chunk, n_rows - start)
            idx = rng.choice(n_values, size=size, p=weights / weights.sum())
            writer.write_table(pa.table({COLUMN: names.take(pa.array(idx))}, schema=schema))
    os.replace(tmp, path)


def make_unit_file(path: Path, n_rows: int, n_values: int) -> None:
    """The same law of items, plus ``user_id`` uniform over ``n_rows // 10`` users."""
    rng = np.random.default_rng(SEED + 1)
    weights = 1.0 / np.arange(1, n_values + 1) ** 1.1
    names = pa.array(value_names(n_values))
    n_users = max(1, n_rows // 10)
    tmp = path.with_suffix(".tmp")
    chunk = 1_000_000
    schema = pa.schema([("user_id", pa.int64()), (COLUMN, pa.string())])
    with pq.ParquetWriter(tmp, schema) as writer:
        for start in range(0, n_rows, chunk):
            size = min(chunk, n_rows - start)
            idx = rng.choice(n_values, size=size, p=weights / weights.sum())
            users = pa.array(rng.integers(0, n_users, size=size))
            writer.write_table(
                pa.table({"user_id": users, COLUMN: names.take(pa.array(idx))}, schema=schema)
            )
    os.replace(tmp, path)


_PLAIN = duckdb.connect(":memory:")


def plain_query(path: Path) -> list[tuple[Any, ...]]:
    """The plain query on one long-lived connection: the query's own time only."""
    return _PLAIN.execute(
        f"SELECT {COLUMN}, count(*) FROM read_parquet(?) GROUP BY {COLUMN} "
        "ORDER BY count(*) DESC LIMIT 10",
        [str(path)],
    ).fetchall()


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def timed_cpu(fn: Callable[[], Any]) -> tuple[float, float]:
    """(wall seconds, process CPU seconds on all threads) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def interleaved_medians(fns: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """Median time of each function, run in turns (a load change hits both alike)."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            times[name].append(timed(fn))
    return {name: statistics.median(ts) for name, ts in times.items()}


def interleaved_medians_cpu(
    fns: dict[str, Callable[[], Any]], repeats: int, best: bool = False
) -> dict[str, tuple[float, float]]:
    """Median (``best``: smallest) (wall, CPU) of each function, run in turns."""
    walls: dict[str, list[float]] = {name: [] for name in fns}
    cpus: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            wall, cpu = timed_cpu(fn)
            walls[name].append(wall)
            cpus[name].append(cpu)
    pick = min if best else statistics.median
    return {name: (pick(walls[name]), pick(cpus[name])) for name in fns}


def breakdown(path: Path, candidates: list[str]) -> dict[str, float]:
    """One private run split into its steps (rough: each step timed alone)."""
    out: dict[str, float] = {}
    start = time.perf_counter()
    table = open_table(path)
    out["open_table"] = time.perf_counter() - start
    start = time.perf_counter()
    table.scores(Query(COLUMN), candidates)
    out["candidate_scores"] = time.perf_counter() - start
    return out


def _status_mb(field: str) -> float:
    """A memory field of /proc/self/status (VmRSS, VmHWM), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1e3
    raise RuntimeError(f"no {field} in /proc/self/status")


def _peak_child(query: str, path: str, n_values: int) -> tuple[float, float]:
    """In a fresh process: (resident MB before, peak resident MB during) one query.

    The peak (VmHWM) is reset just before the query (``/proc/self/clear_refs``, Linux), so the
    peak of the imports does not hide the query's own.
    """

    candidates = value_names(n_values)
    table = open_table(path)
    connection = duckdb.connect(":memory:")
    Path("/proc/self/clear_refs").write_text("5")
    before = _status_mb("VmRSS")
    if query == "plain":
        connection.execute(
            f"SELECT {COLUMN}, count(*) FROM read_parquet(?) GROUP BY {COLUMN} "
            "ORDER BY count(*) DESC LIMIT 10",
            [path],
        ).fetchall()
    elif query.startswith("top_values"):
        table.counts(
            Query(
                COLUMN, UnitRule(privacy_unit="user_id", values_per_unit=int(query[-1]), salt=12345)
            ),
            11,
        )
    elif query.startswith("sql"):
        duckdb_candidate_scores(table, COLUMN, candidates, "user_id", int(query[-1]), 12345)
    elif query.startswith("dict"):
        dictionary_candidate_scores(
            table, [path], COLUMN, candidates, "user_id", "BIGINT", int(query[-1]), 12345
        )
    else:
        table.scores(
            Query(COLUMN, UnitRule(privacy_unit="user_id", values_per_unit=int(query), salt=12345)),
            candidates,
        )
    return before, _status_mb("VmHWM")


MEMORY_QUERIES = {
    "plain": "plain GROUP BY item",
    "1": "unit, m=1: candidate_scores",
    "3": "unit, m=3: candidate_scores",
    "top_values1": "unit, m=1: top_values",
    "top_values3": "unit, m=3: top_values",
    "sql1": "SQL plan, m=1: candidate_scores",
    "dict3": "dictionary plan, m=3",
}


def peak_memory(path: Path, n_values: int) -> None:
    """Peak RSS of each query's process (spawned, same imports and table opened first)."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    peaks = {}
    for query in MEMORY_QUERIES:
        with context.Pool(1) as pool:
            peaks[query] = pool.apply(_peak_child, (query, str(path), n_values))
    base_before, base_after = peaks["plain"]
    print(f"{'peak RSS (MB)':<34} {'process':>8} {'ratio':>7} {'growth':>8} {'ratio':>7}")
    for query, (before, after) in peaks.items():
        growth = after - before
        print(
            f"{MEMORY_QUERIES[query]:<34} {after:8.0f} {after / base_after:6.2f}x "
            f"{growth:8.0f} {growth / max(base_after - base_before, 1.0):6.2f}x"
        )


def bounding_rows(
    path: Path,
    candidates: list[str],
    repeats: int,
    end_to_end: bool,
    floor: bool = True,
    previous: bool = False,
    best: bool = False,
) -> None:
    """The privacy-unit queries against the plain GROUP BY of the same file, in turns."""

    table = open_table(path)
    fns: dict[str, Callable[[], Any]] = {
        "plain GROUP BY item (same file)": lambda: plain_query(path),
        "no unit: candidate_scores": lambda: table.scores(Query(COLUMN), candidates),
        "unit, m=1: candidate_scores": lambda: table.scores(
            Query(COLUMN, UnitRule(privacy_unit="user_id", values_per_unit=1, salt=12345)),
            candidates,
        ),
        "unit, m=3: candidate_scores": lambda: table.scores(
            Query(COLUMN, UnitRule(privacy_unit="user_id", values_per_unit=3, salt=12345)),
            candidates,
        ),
        "unit, m=1: top_values (no list)": lambda: table.counts(
            Query(COLUMN, UnitRule(privacy_unit="user_id", values_per_unit=1, salt=12345)), 11
        ),
        "unit, m=3: top_values (no list)": lambda: table.counts(
            Query(COLUMN, UnitRule(privacy_unit="user_id", values_per_unit=3, salt=12345)), 11
        ),
        "SQL plan, m=1: candidate_scores": lambda: duckdb_candidate_scores(
            table, COLUMN, candidates, "user_id", 1, 12345
        ),
        "SQL plan, m=3: candidate_scores": lambda: duckdb_candidate_scores(
            table, COLUMN, candidates, "user_id", 3, 12345
        ),
        "dictionary plan, m=3": lambda: dictionary_candidate_scores(
            table, [str(path)], COLUMN, candidates, "user_id", "BIGINT", 3, 12345
        ),
    }
    if floor:
        # No key, no seed: only the join of every row with the candidates and one integer
        # aggregate per user, the two steps any plan of the rule needs (a lower bound).
        floor_sql = (
            "SELECT count(*) FROM (SELECT d.user_id, min(c.i) FROM data d "
            f"JOIN dpselect_floor c ON d.{COLUMN} = c.v GROUP BY 1)"
        )
        table.connection.register(
            "dpselect_floor",
            pa.table({"v": pa.array(candidates), "i": np.arange(len(candidates))}),
        )
        fns["floor: join + GROUP BY user, no key"] = lambda: table.query(floor_sql)
        # Lower still: no candidates, no seed, DuckDB's own (non-cryptographic) hash. The
        # cheapest m = 1 rule conceivable (each user's item of least hash, then a count per
        # item), and the per-user grouping alone, which every per-user rule must do.
        fns["floor: arg_min per user, no join"] = lambda: table.query(
            f"SELECT {COLUMN}, count(*) FROM (SELECT arg_min({COLUMN}, hash(user_id, "
            f"{COLUMN})) AS {COLUMN} FROM data GROUP BY user_id) GROUP BY 1 "
            "ORDER BY 2 DESC LIMIT 10"
        )
        fns["floor: DISTINCT user_id alone"] = lambda: table.query(
            "SELECT count(*) FROM (SELECT DISTINCT user_id FROM data)"
        )
    if previous:
        # The plan before issue 14 (kept as the tests' reference): same rule, same scores.
        import sys

        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from tests.data.previous_bounding_sql import (
            previous_candidate_scores,
            previous_top_values,
        )

        for m in (1, 3):
            fns[f"previous plan, m={m}: candidate_scores"] = lambda m=m: previous_candidate_scores(  # type: ignore[misc]
                table, COLUMN, candidates, "user_id", m, 12345
            )
        fns["previous plan, m=1: top_values"] = lambda: previous_top_values(
            table, COLUMN, 11, "user_id", 1, 12345
        )
    if end_to_end:
        for m in (1, 3):
            fns[f"unit, m={m}: top_k end to end"] = lambda m=m: dp.Session(
                path, privacy_unit="user_id", contributions=dp.Contributions(values_per_unit=m)
            ).top_k(COLUMN, 10, epsilon=1.0, candidates=candidates)
    for fn in fns.values():  # warm
        fn()
    load = os.getloadavg()
    medians = interleaved_medians_cpu(fns, repeats, best)
    load_after = os.getloadavg()
    base_wall, base_cpu = medians["plain GROUP BY item (same file)"]
    print(f"load average (1 min) {load[0]:.1f} before, {load_after[0]:.1f} after; "
          f"cpus {os.cpu_count()}, duckdb {duckdb.__version__}, "
          f"{'best' if best else 'median'} of {repeats}")  # fmt: skip
    print(f"{'query':<34} {'wall':>10} {'ratio':>7} {'cpu':>9} {'ratio':>7}")
    for name, (wall, cpu) in medians.items():
        print(
            f"{name:<34} {wall * 1e3:7.0f} ms {wall / base_wall:6.2f}x "
            f"{cpu:7.2f} s {cpu / base_cpu:6.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--values", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "dpselect-bench"
    )
    parser.add_argument(
        "--units",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time contribution bounding per privacy unit",
    )
    parser.add_argument("--only-units", action="store_true", help="skip the first table")
    parser.add_argument("--memory", action="store_true", help="peak RSS of each unit query")
    parser.add_argument("--best", action="store_true", help="the best round, not the median")
    parser.add_argument(
        "--no-end-to-end", action="store_true", help="skip the top_k row of the unit table"
    )
    parser.add_argument(
        "--previous", action="store_true", help="also time the plan before issue 14 (tests/)"
    )
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    path = args.cache / f"topk_{args.rows}_{args.values}_{SEED}.parquet"
    if not path.exists():
        start = time.perf_counter()
        make_file(path, args.rows, args.values)
        print(f"wrote {path} in {time.perf_counter() - start:.1f} s")
    candidates = value_names(args.values)
    if args.units:
        unit_path = args.cache / f"topk_units_{args.rows}_{args.values}_{SEED}.parquet"
        if not unit_path.exists():
            make_unit_file(unit_path, args.rows, args.values)
        print(f"privacy units: {unit_path} ({args.rows:,} rows, {args.rows // 10:,} users)")
        bounding_rows(
            unit_path, candidates, args.repeats, not args.no_end_to_end, previous=args.previous,
            best=args.best,
        )  # fmt: skip
        if args.memory:
            peak_memory(unit_path, args.values)
        print(f"peak RSS of this process so far: {peak_rss_mib():.0f} MiB (one query alone "
              "in a fresh process: --memory)", flush=True)  # fmt: skip
        if args.only_units:
            return
    size_mb = path.stat().st_size / 1e6
    print(f"file: {path} ({args.rows:,} rows, {args.values:,} values, {size_mb:.0f} MB)")
    print(f"cpus: {os.cpu_count()}, duckdb {duckdb.__version__}, repeats: {args.repeats}")

    # warm the page cache and the imports once, then alternate fairly
    plain_query(path)
    dp.Session(path).top_k(COLUMN, 10, epsilon=1.0, candidates=candidates)
    medians = interleaved_medians(
        {
            "plain": lambda: plain_query(path),
            "private": lambda: dp.Session(path).top_k(
                COLUMN, 10, epsilon=1.0, candidates=candidates
            ),
        },
        args.repeats,
    )
    plain, private = medians["plain"], medians["private"]
    print(f"plain DuckDB GROUP BY ... LIMIT 10: {plain * 1e3:8.1f} ms (median)")
    print(f"private top_k (k=10, eps=1):        {private * 1e3:8.1f} ms (median)")
    print(f"ratio private / plain:              {private / plain:8.2f}x (target <= 1.2x)")
    for step, seconds in breakdown(path, candidates).items():
        print(f"  {step:<20} {seconds * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
