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
  floor of any per-user rule;
- ``lists``: ``candidate_scores`` with the candidates and ``max_rows_per_value = 2`` (the
  SQL lists plan of :func:`~dpselect.data.scores.duckdb_candidate_scores`);
- ``grouped``, ``grouped3``, ``cells``, ``discovered``: the grouped plans over a third
  column ``grp`` (200 groups, ``floor(exp(ln(200) U))`` with ``U`` another hash of ``i``:
  Zipf-like; the file is then ``bounding_{rows}_{users}_grp``): ``grouped_value_counts``
  of ``item`` by the 200 groups, limit 10, with ``max_groups = m = 1`` (one aggregate per
  unit), ``max_groups = 3`` (the sorted lists), ``max_groups = 2, m = 3`` (the cells), and
  ``discovered_value_counts`` (the groups found in the data, ``max_groups = m = 1``);
  ``numbers``: ``grouped_values`` of ``item`` read as a number, ``max_groups = 2``,
  ``max_rows = 3``.

A job named ``JOB@MIB`` runs ``JOB`` with the budget ``MIB`` (``candidates@1e9``: one
part), so one run can compare the default budget with one part. A job named ``JOB~opt``
runs ``JOB`` as before the text sources' written join order: DuckDB's optimizer orders the
joins of ``top_values``, the lists plan and the grouped plans, and a text line counts
``TEXT_ROW_WEIGHT`` rows (the packed plan, ``candidates``, is not changed by it), so one
run compares the two plans in turns (``unknown@1e9,unknown~opt@1e9``).

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

import dpselect as dp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _rss import kib_to_mib, rss_mib

from dpselect.data.query import PrivateGroups, PublicGroups, Query, UnitRule

VALUES = 100_000


GROUPS = [f"g{k}" for k in range(200)]
#: The jobs that read the column ``grp`` (the grouped plans).
GROUPED_JOBS = ("grouped", "grouped3", "cells", "discovered", "numbers")


def make_file(
    path: Path, rows: int, users: int, kind: str = "parquet", groups: bool = False
) -> None:
    """The file described in the module docstring (written to a temporary name first), as
    Parquet (zstd) or, with ``kind="csv"``, as CSV text (``user_id,item``, a header line);
    ``groups``: with the third column ``grp``."""
    import duckdb

    tmp = path.with_suffix(".tmp")
    con = duckdb.connect()
    con.execute("SET preserve_insertion_order = false")
    options = "FORMAT csv, HEADER true" if kind == "csv" else "FORMAT parquet, COMPRESSION zstd"
    grp = (
        f""", 'g' || CAST(floor(exp(ln({len(GROUPS)}) * ((hash(i * 5 + 2) % 1000000007)
                                                       / 1000000007.0))) - 1 AS BIGINT) AS grp"""
        if groups
        else ""
    )
    con.execute(
        f"""COPY (SELECT CAST(hash(i) % {users} AS BIGINT) AS user_id,
                   CAST(floor(exp(ln({VALUES}) * ((hash(i * 2 + 1) % 1000000007)
                                                   / 1000000007.0))) AS BIGINT) - 1 AS item
                   {grp}
                 FROM range({rows}) t(i))
            TO '{tmp}' ({options})"""
    )
    os.replace(tmp, path)


def _optimizer_joins() -> None:
    """The plans as before the text sources' written join order (``JOB~opt``): the
    optimizer orders the joins and a line counts ``TEXT_ROW_WEIGHT`` rows."""
    from contextlib import nullcontext

    from dpselect.data import grouped_scores, grouped_sql, scores, unit_partitions

    for module in (scores, grouped_scores):
        module.text_join_order = lambda table: nullcontext()  # type: ignore[attr-defined]
    scores.TOP_VALUES_TEXT_ROW_WEIGHT = unit_partitions.TEXT_ROW_WEIGHT
    grouped_sql.GROUPED_TEXT_ROW_WEIGHT = unit_partitions.TEXT_ROW_WEIGHT


def _per_row(job: str, m: int) -> float:
    """The bytes per row the plan of ``job`` is sized by."""
    from dpselect.data import grouped_sql, packed_scores, scores

    if job == "candidates":
        return float(
            packed_scores.PACKED_MIN_BYTES_PER_ROW if m == 1 else packed_scores.PACKED_BYTES_PER_ROW
        )
    return float({
        "grouped": grouped_sql.GROUPED_MIN_BYTES_PER_ROW,
        "grouped3": grouped_sql.GROUPED_LISTS_BYTES_PER_ROW,
        "cells": grouped_sql.GROUPED_CELLS_BYTES_PER_ROW,
        "discovered": grouped_sql.GROUPED_MIN_BYTES_PER_ROW,
        "numbers": grouped_sql.GROUPED_NUMBERS_BYTES_PER_ROW,
    }.get(job, scores.TOP_VALUES_BYTES_PER_ROW))  # fmt: skip


def _grouped_call(job: str, table: object) -> object:
    """The grouped plan of ``job`` on ``table`` (``item`` by ``grp``, unit ``user_id``)."""
    if job == "discovered":
        found = table.counts(
            Query(
                "item",
                UnitRule(
                    privacy_unit="user_id",
                    values_per_unit=1,
                    groups_per_unit=1,
                    salt=7,
                    group_salt=8,
                ),
                PrivateGroups("grp"),
            ),
            10,
        )
        return found.counts()[:3]
    if job == "numbers":
        numbers = table.numbers(
            Query(
                "item",
                UnitRule(
                    privacy_unit="user_id", rows_per_unit=3, groups_per_unit=2, salt=7, group_salt=8
                ),
                PublicGroups("grp", GROUPS),
            )
        )
        return [len(x) for x in numbers[:3]]
    g, m = {"grouped": (1, 1), "grouped3": (3, 1), "cells": (2, 3)}[job]
    counts = table.counts(
        Query(
            "item",
            UnitRule(
                privacy_unit="user_id", values_per_unit=m, groups_per_unit=g, salt=7, group_salt=8
            ),
            PublicGroups("grp", GROUPS),
        ),
        10,
    )
    return [c[:1] for c in counts[:3]]


def child(job: str, path: str, m: int, budget_mb: float | None = None) -> None:
    """One job in this process; prints a JSON line with what it found."""
    start = time.perf_counter()
    job, _, variant = job.partition("~")
    if variant == "opt":
        _optimizer_joins()
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
        from dpselect.data import grouped_sql, scores, unit_partitions
        from dpselect.data.tables import open_table

        if budget_mb is not None:
            unit_partitions.MEMORY_BUDGET = int(budget_mb * 2**20)
        schema = {"user_id": "BIGINT"} if csv else None
        table = open_table(path, schema=schema)
        # what a line of a text source counts for, by plan (unit_partitions.source_rows)
        weight = 1 if job == "candidates" else scores.TOP_VALUES_TEXT_ROW_WEIGHT
        if job in GROUPED_JOBS:
            weight = grouped_sql.GROUPED_TEXT_ROW_WEIGHT
        rows = unit_partitions.source_rows(
            table.connection, table.parquet_files, table.source_files, text_weight=weight
        )
        budget = unit_partitions.memory_budget(table.connection)
        out["parts"] = unit_partitions.part_count(rows, _per_row(job, m), budget)
        out["rows_bound"] = rows
        out["budget_mib"] = budget / 2**20
        out["base_mib"] = rss_mib()
        candidates = [str(i) for i in range(VALUES)] if csv else list(range(VALUES))
        if job == "candidates":
            found = dp.Session(
                path,
                privacy_unit="user_id",
                contributions=dp.Contributions(values_per_unit=m),
                schema=schema,
            ).top_k("item", 10, epsilon=1.0, candidates=candidates)
        elif job == "lists":
            scored = table.scores(
                Query(
                    "item",
                    UnitRule(privacy_unit="user_id", values_per_unit=m, rows_per_value=2, salt=7),
                ),
                candidates,
            )
            out["result"] = str(sorted(scored.tolist(), reverse=True)[:5])
        elif job in GROUPED_JOBS:
            out["result"] = str(_grouped_call(job, table))
        else:
            found = dp.Session(
                path,
                privacy_unit="user_id",
                contributions=dp.Contributions(values_per_unit=m),
                schema=schema,
            ).top_k("item", 10, epsilon=1.0, delta=1e-9)
        if job in ("candidates", "unknown"):
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
    jobs = args.jobs.split(",")
    groups = any(j.split("@")[0].split("~")[0] in GROUPED_JOBS for j in jobs)
    name = f"bounding_{args.rows}_{users}{'_grp' if groups else ''}.{args.format}"
    path = args.dir / name
    if not path.exists():
        start = time.perf_counter()
        make_file(path, args.rows, users, args.format, groups)
        print(f"wrote {path} in {time.perf_counter() - start:.0f} s")
    size = path.stat().st_size / 1e9
    print(f"{path}: {args.rows:,} rows, {users:,} users, {size:.1f} GB; m = {args.m}; "
          f"load {os.getloadavg()[0]:.1f}; cpus {os.cpu_count()}")  # fmt: skip
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
