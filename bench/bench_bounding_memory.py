"""Peak memory and time of ``top_k`` with a privacy unit on large Parquet files.

Run: ``python bench/bench_bounding_memory.py --rows 1000000000 --users 100000000
[--dir /work/big] [--m 3] [--jobs plain,candidates,unknown] [--repeats 1]``.

The first run writes (DuckDB, deterministic: no random generator, a hash of the row number)
``rows`` rows of ``user_id`` (int64, ``hash(i) mod users``: about ``rows / users`` rows per
user) and ``item`` (int64, ``floor(exp(ln(10^5) U)) - 1`` with ``U`` a hash of ``i`` read as
uniform on [0, 1): a log-uniform, Zipf-like law over 10^5 values) to
``dir/bounding_{rows}_{users}.parquet`` (zstd); later runs reuse it. Then each job runs in a
fresh process under ``/usr/bin/time -v`` (its peak resident memory, ``Maximum resident set
size``), in turns:

- ``plain``: DuckDB's ``SELECT item, count(*) FROM read_parquet(...) GROUP BY item ORDER BY 2
  DESC LIMIT 10`` (the baseline of the time ratios);
- ``candidates``: ``top_k(path, "item", 10, 1.0, candidates=range(10^5),
  privacy_unit="user_id", max_contributions=m)`` (the packed plan);
- ``unknown``: the same without candidates, ``delta=1e-9`` (every value's bounded count,
  the unknown-domain plan of ``top_values``);
- ``distinct``: DuckDB's ``SELECT count(*) FROM (SELECT DISTINCT user_id FROM ...)``, the
  floor of any per-user rule.

Printed per job: wall time (the whole process, imports included), its ratio to ``plain``,
peak RSS, the resident memory before the call (after the imports) and the growth to the
peak per row (``B/row``: how the constants ``PACKED_BYTES_PER_ROW``, ``m > 1``, and
``PACKED_MIN_BYTES_PER_ROW``, ``m = 1``, of :mod:`dpselect.data.packed_scores` are
measured, with ``--budget-mb 1e9`` for one part), and the number of hash parts the bounding
plans chose (:mod:`dpselect.data.unit_partitions`; ``--budget-mb`` sets their budget).
Run it under the shared lock
(``flock /tmp/dpselect-bench.lock python bench/bench_bounding_memory.py ...``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

VALUES = 100_000


def make_file(path: Path, rows: int, users: int) -> None:
    """The file described in the module docstring (written to a temporary name first)."""
    import duckdb

    tmp = path.with_suffix(".tmp")
    con = duckdb.connect()
    con.execute("SET preserve_insertion_order = false")
    con.execute(
        f"""COPY (SELECT CAST(hash(i) % {users} AS BIGINT) AS user_id,
                   CAST(floor(exp(ln({VALUES}) * ((hash(i * 2 + 1) % 1000000007)
                                                   / 1000000007.0))) AS BIGINT) - 1 AS item
                 FROM range({rows}) t(i))
            TO '{tmp}' (FORMAT parquet, COMPRESSION zstd)"""
    )
    os.replace(tmp, path)


def _rss_mb() -> float:
    """This process's resident memory now (``VmRSS``), in MB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1e3
    return float("nan")  # pragma: no cover - Linux only


def child(job: str, path: str, m: int, budget_mb: float | None = None) -> None:
    """One job in this process; prints a JSON line with what it found."""
    start = time.perf_counter()
    out: dict[str, object] = {"job": job, "base_mb": _rss_mb()}
    if job in ("plain", "distinct"):
        import duckdb

        sql = (
            "SELECT item, count(*) FROM read_parquet(?) GROUP BY item ORDER BY 2 DESC LIMIT 10"
            if job == "plain"
            else "SELECT count(*) FROM (SELECT DISTINCT user_id FROM read_parquet(?))"
        )
        out["result"] = str(duckdb.connect().execute(sql, [path]).fetchall()[:3])
    else:
        from dpselect.api import top_k
        from dpselect.data import packed_scores, scores, unit_partitions
        from dpselect.data.tables import open_table

        if budget_mb is not None:
            unit_partitions.MEMORY_BUDGET = int(budget_mb * 2**20)
        table = open_table(path)
        rows = unit_partitions.source_rows(table.connection, table.parquet_files)
        budget = unit_partitions.memory_budget(table.connection)
        per_row = scores.TOP_VALUES_BYTES_PER_ROW
        if job == "candidates":
            per_row = packed_scores.PACKED_BYTES_PER_ROW
            if m == 1:
                per_row = getattr(packed_scores, "PACKED_MIN_BYTES_PER_ROW", per_row)
        out["parts"] = unit_partitions.part_count(rows, per_row, budget)
        out["budget_mb"] = budget / 1e6
        out["base_mb"] = _rss_mb()
        if job == "candidates":
            found = top_k(path, "item", 10, 1.0, candidates=list(range(VALUES)),
                          privacy_unit="user_id", max_contributions=m)  # fmt: skip
        else:
            found = top_k(path, "item", 10, 1.0, delta=1e-9, privacy_unit="user_id",
                          max_contributions=m)  # fmt: skip
        out["result"] = str(found.candidates[:5])
    out["seconds"] = time.perf_counter() - start
    print(json.dumps(out))


def run_job(job: str, path: Path, m: int, budget_mb: float | None = None) -> dict[str, object]:
    """``job`` in a fresh process under ``/usr/bin/time -v``: its line plus peak RSS (MB)."""
    start = time.perf_counter()
    budget = [] if budget_mb is None else ["--budget-mb", str(budget_mb)]
    done = subprocess.run(
        ["/usr/bin/time", "-v", sys.executable, __file__, "--child", job, "--path", str(path),
         "--m", str(m), *budget],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{job} failed:\n{done.stderr[-3000:]}")
    line = [x for x in done.stdout.splitlines() if x.startswith("{")][-1]
    found: dict[str, object] = json.loads(line)
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    found["peak_mb"] = int(peak.group(1)) / 1e3 if peak else float("nan")
    found["wall"] = wall
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10**8)
    parser.add_argument("--users", type=int, default=None, help="default rows / 10")
    parser.add_argument("--dir", type=Path, default=Path("/work/big"))
    parser.add_argument("--m", type=int, default=3)
    parser.add_argument("--jobs", default="plain,candidates,unknown")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument(
        "--budget-mb", type=float, default=None, help="the bounding plans' memory budget (MiB)"
    )
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--path", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.path, args.m, args.budget_mb)
        return
    users = args.users or max(1, args.rows // 10)
    args.dir.mkdir(parents=True, exist_ok=True)
    path = args.dir / f"bounding_{args.rows}_{users}.parquet"
    if not path.exists():
        start = time.perf_counter()
        make_file(path, args.rows, users)
        print(f"wrote {path} in {time.perf_counter() - start:.0f} s")
    size = path.stat().st_size / 1e9
    print(f"{path}: {args.rows:,} rows, {users:,} users, {size:.1f} GB; m = {args.m}; "
          f"load {os.getloadavg()[0]:.1f}; cpus {os.cpu_count()}")  # fmt: skip
    jobs = args.jobs.split(",")
    best: dict[str, dict[str, object]] = {}
    for _ in range(args.repeats):
        for job in jobs:
            found = run_job(job, path, args.m, args.budget_mb)
            if job not in best or float(found["wall"]) < float(best[job]["wall"]):  # type: ignore[arg-type]
                best[job] = found
    base = float(best["plain"]["wall"]) if "plain" in best else float("nan")  # type: ignore[arg-type]
    print(f"load after {os.getloadavg()[0]:.1f}; best of {args.repeats}")
    print(f"{'job':<12} {'wall':>9} {'ratio':>7} {'peak RSS':>10} {'base':>8} {'B/row':>6} "
          f"{'parts':>6}")  # fmt: skip
    for job, found in best.items():
        wall = float(found["wall"])  # type: ignore[arg-type]
        peak, start_mb = float(found["peak_mb"]), float(found["base_mb"])  # type: ignore[arg-type]
        per_row = (peak - start_mb) * 1e6 / args.rows
        print(f"{job:<12} {wall:8.1f}s {wall / base:6.2f}x {peak:7.0f} MB {start_mb:5.0f} MB "
              f"{per_row:6.1f} {found.get('parts', '-'):>6}  {found['result'][:60]}")  # fmt: skip


if __name__ == "__main__":
    main()
