"""Peak memory and time of ``top_k`` with a privacy unit on large Parquet or CSV files.

Run: ``python bench/bench_bounding_memory.py --rows 1000000000 --users 100000000
[--dir /work/big] [--format parquet|csv] [--m 3] [--jobs plain,candidates,unknown]
[--repeats 1] [--delete]``.

The first run writes (DuckDB, deterministic: no random generator, a hash of the row number)
``rows`` rows of ``user_id`` (int64, ``hash(i) mod users``: about ``rows / users`` rows per
user) and ``item`` (int64, ``floor(exp(ln(10^5) U)) - 1`` with ``U`` a hash of ``i`` read as
uniform on [0, 1): a log-uniform, Zipf-like law over 10^5 values) to
``dir/bounding_{rows}_{users}.parquet`` (zstd) or, with ``--format csv``, to
``dir/bounding_{rows}_{users}.csv`` (a header line, then ``user_id,item`` per line; read with
the schema ``{"user_id": "BIGINT"}``, the item as text, the candidates as text); later runs
reuse it unless the run ends with ``--delete`` (the file is removed). Then each job runs in a
fresh process under ``/usr/bin/time -v`` (its peak resident memory, ``Maximum resident set
size``), in turns:

- ``plain``: DuckDB's ``SELECT item, count(*) FROM read_parquet(...) GROUP BY item ORDER BY 2
  DESC LIMIT 10`` (``read_csv`` for CSV; the baseline of the time ratios);
- ``candidates``: ``top_k(path, "item", 10, 1.0, candidates=range(10^5),
  privacy_unit="user_id", max_contributions=m)`` (the packed plan);
- ``unknown``: the same without candidates, ``delta=1e-9`` (every value's bounded count,
  the unknown-domain plan of ``top_values``);
- ``distinct``: DuckDB's ``SELECT count(*) FROM (SELECT DISTINCT user_id FROM ...)``, the
  floor of any per-user rule.

A job named ``JOB@MIB`` runs ``JOB`` with the budget ``MIB`` (``candidates@1e9``: one
part), so one run can compare the default budget with one part.

Printed per job: wall time (the whole process, imports included), its ratio to ``plain``,
peak RSS in MiB (``/usr/bin/time``'s KiB over 1024), the resident memory before the call
(after the imports), the growth to the peak per row (``B/row``: how the constants
``PACKED_BYTES_PER_ROW``, ``m > 1``, and ``PACKED_MIN_BYTES_PER_ROW``, ``m = 1``, of
:mod:`dpselect.data.packed_scores` are measured, with ``--budget-mb 1e9`` for one part),
the number of hash parts the bounding plans chose (:mod:`dpselect.data.unit_partitions`;
``--budget-mb`` sets their budget) and the rows they were sized by
(:func:`~dpselect.data.unit_partitions.source_rows`).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _rss import kib_to_mib, rss_mib

VALUES = 100_000


def make_file(path: Path, rows: int, users: int, kind: str = "parquet") -> None:
    """The file described in the module docstring (written to a temporary name first), as
    Parquet (zstd) or, with ``kind="csv"``, as CSV text (``user_id,item``, a header line)."""
    import duckdb

    tmp = path.with_suffix(".tmp")
    con = duckdb.connect()
    con.execute("SET preserve_insertion_order = false")
    options = "FORMAT csv, HEADER true" if kind == "csv" else "FORMAT parquet, COMPRESSION zstd"
    con.execute(
        f"""COPY (SELECT CAST(hash(i) % {users} AS BIGINT) AS user_id,
                   CAST(floor(exp(ln({VALUES}) * ((hash(i * 2 + 1) % 1000000007)
                                                   / 1000000007.0))) AS BIGINT) - 1 AS item
                 FROM range({rows}) t(i))
            TO '{tmp}' ({options})"""
    )
    os.replace(tmp, path)


def child(job: str, path: str, m: int, budget_mb: float | None = None) -> None:
    """One job in this process; prints a JSON line with what it found."""
    start = time.perf_counter()
    out: dict[str, object] = {"job": job, "base_mib": rss_mib()}
    csv = path.endswith(".csv")
    if job in ("plain", "distinct"):
        import duckdb

        read = "read_csv(?)" if csv else "read_parquet(?)"
        sql = (
            f"SELECT item, count(*) FROM {read} GROUP BY item ORDER BY 2 DESC LIMIT 10"
            if job == "plain"
            else f"SELECT count(*) FROM (SELECT DISTINCT user_id FROM {read})"
        )
        out["result"] = str(duckdb.connect().execute(sql, [path]).fetchall()[:3])
    else:
        from dpselect.api import top_k
        from dpselect.data import packed_scores, scores, unit_partitions
        from dpselect.data.tables import open_table

        if budget_mb is not None:
            unit_partitions.MEMORY_BUDGET = int(budget_mb * 2**20)
        schema = {"user_id": "BIGINT"} if csv else None
        table = open_table(path, schema=schema)
        # the packed plan (candidates) runs its joins as written on a text source, so its
        # lines count as Parquet rows; the other plans weight them (unit_partitions)
        weight = 1 if job == "candidates" else unit_partitions.TEXT_ROW_WEIGHT
        rows = unit_partitions.source_rows(
            table.connection, table.parquet_files, table.source_files, text_weight=weight
        )
        budget = unit_partitions.memory_budget(table.connection)
        per_row = scores.TOP_VALUES_BYTES_PER_ROW
        if job == "candidates":
            per_row = packed_scores.PACKED_BYTES_PER_ROW
            if m == 1:
                per_row = getattr(packed_scores, "PACKED_MIN_BYTES_PER_ROW", per_row)
        out["parts"] = unit_partitions.part_count(rows, per_row, budget)
        out["rows_bound"] = rows
        out["budget_mib"] = budget / 2**20
        out["base_mib"] = rss_mib()
        candidates = [str(i) for i in range(VALUES)] if csv else list(range(VALUES))
        if job == "candidates":
            found = top_k(path, "item", 10, 1.0, candidates=candidates, schema=schema,
                          privacy_unit="user_id", max_contributions=m)  # fmt: skip
        else:
            found = top_k(path, "item", 10, 1.0, delta=1e-9, privacy_unit="user_id",
                          max_contributions=m, schema=schema)  # fmt: skip
        out["result"] = str(found.candidates[:5])
    out["seconds"] = time.perf_counter() - start
    print(json.dumps(out))


def run_job(job: str, path: Path, m: int, budget_mb: float | None = None) -> dict[str, object]:
    """``job`` in a fresh process under ``/usr/bin/time -v``: its line plus peak RSS (MiB).
    ``job@MIB``: with the budget ``MIB``."""
    start = time.perf_counter()
    if "@" in job:
        job, given = job.split("@")
        budget_mb = float(given)
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
    found["peak_mib"] = kib_to_mib(int(peak.group(1))) if peak else float("nan")
    found["wall"] = wall
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10**8)
    parser.add_argument("--users", type=int, default=None, help="default rows / 10")
    parser.add_argument("--dir", type=Path, default=Path("/work/big"))
    parser.add_argument("--m", type=int, default=3)
    parser.add_argument("--format", choices=["parquet", "csv"], default="parquet")
    parser.add_argument("--jobs", default="plain,candidates,unknown")
    parser.add_argument("--delete", action="store_true", help="remove the data file at the end")
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
    path = args.dir / f"bounding_{args.rows}_{users}.{args.format}"
    if not path.exists():
        start = time.perf_counter()
        make_file(path, args.rows, users, args.format)
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
    print(f"{'job':<16} {'wall':>9} {'ratio':>7} {'peak RSS':>11} {'base':>9} {'B/row':>6} "
          f"{'parts':>6} {'sized rows':>11}")  # fmt: skip
    for job, found in best.items():
        wall = float(found["wall"])  # type: ignore[arg-type]
        peak, start = float(found["peak_mib"]), float(found["base_mib"])  # type: ignore[arg-type]
        per_row = (peak - start) * 2**20 / args.rows
        print(f"{job:<16} {wall:8.1f}s {wall / base:6.2f}x {peak:7.0f} MiB {start:5.0f} MiB "
              f"{per_row:6.1f} {found.get('parts', '-'):>6} {found.get('rows_bound', '-'):>11}  "
              f"{found['result'][:60]}")  # fmt: skip
    if args.delete:
        path.unlink()
        print(f"removed {path}")


if __name__ == "__main__":
    main()
