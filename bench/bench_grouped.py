"""Grouped releases on DuckDB: all groups in one scan against one ungrouped top-k.

Run: ``python bench/bench_grouped.py [--rows 1e7] [--repeat 2] [--cache DIR]``.

Builds (seeded, cached under the temporary directory) a Parquet file of ``--rows`` rows:
``user`` (10^6 users for 10^7 rows, 10^7 for 10^8: one per ten rows, uniform), ``grp`` (200
groups ``g000``..``g199`` with Zipf-like sizes, weight ``1 / k^0.8``) and ``val`` (10^6 values
``v0``..``v999999``, Zipf: ``(zipf(1.2) - 1) mod 10^6``). Then times, each call in a fresh
process (so that its peak RSS is its own; the best of ``--repeat`` runs):

- ``plain``: DuckDB's ``GROUP BY grp, val`` with ``count(*)`` (no bounding; the count of the
  result's rows is fetched);
- ``ungrouped``: ``top_values("val", 100, privacy_unit="user")`` (``m = 1``), the baseline;
- ``grouped G=1`` and ``grouped G=3``: ``grouped_value_counts("val", "grp", <200 groups>,
  100, privacy_unit="user", max_groups=G)`` (``m = 1``);
- ``candidates``: ``grouped_candidate_scores`` with the 1,000 most common values as
  candidates (``max_groups = 1``, ``m = 1``), and ``candidates ungrouped``:
  ``candidate_scores`` with the same candidates (its own baseline);

- ``release ungrouped``, ``release public`` and ``release private``: whole releases through
  the public API, the baseline ``top_k(path, "val", 10, 1.0, delta=1e-6,
  privacy_unit="user")`` against the same with ``by="grp"`` and the 200 public groups, or
  with the groups selected privately (``groups=None``: the persons of every group come from
  the same scan); their ratios are to ``release ungrouped``;

and prints each time with its ratio to ``ungrouped`` (releases: to ``release ungrouped``), its
ratio to ``plain`` (when run) and the peak RSS. The target of a grouped release: at most 1.5x
the ungrouped call.

The grouped plans with a privacy unit bound the units in hash parts
(:mod:`dpselect.data.unit_partitions`): ``--budget-mb`` sets their memory budget
(``MEMORY_BUDGET``; default: a quarter of DuckDB's ``memory_limit``), and each line also
prints the resident memory before the call (``base``), its growth to the peak divided by the
rows (``B/row``) and the parts the plan chose. ``--budget-mb 1e9`` (one part) measures a
plan's bytes per row, the constants of :mod:`dpselect.data.grouped_sql`; a name ending in
`` one part`` (``"grouped G=3 one part"``) runs that call with one part, to compare it with
the hash parts in the same run. The plans not
timed above (run them with ``--only``): ``cells G=3`` (``grouped_value_counts`` with
``max_groups = 3``, ``m = 3``), ``numbers G=3`` (``grouped_values`` of the number ``num``,
``max_rows = 3``), ``discovered G=3`` (``discovered_value_counts``, ``m = 1``) and
``discovered numbers G=3`` (``discovered_values``, ``max_rows = 3``); the numbers read a copy
of the file with ``num = CAST(substr(val, 2) AS DOUBLE)`` (built once, cached).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _rss import peak_rss_mib, rss_mib

import dpselect as dp
from dpselect.data.query import PrivateGroups, PublicGroups, Query, UnitRule

GROUPS = [f"g{k:03d}" for k in range(200)]
VALUES = 10**6


def build(path: Path, rows: int, seed: int = 0) -> None:
    """The seeded Parquet file (written in chunks of 10^7 rows, row groups of 10^6)."""
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    users = max(1, rows // 10)
    weights = 1 / np.arange(1, len(GROUPS) + 1) ** 0.8
    weights /= weights.sum()
    rng = np.random.default_rng(seed)
    raw = path.with_suffix(".raw.parquet")
    writer = None
    chunk = 10**7
    for start in range(0, rows, chunk):
        n = min(chunk, rows - start)
        table = pa.table(
            {
                "user": rng.integers(0, users, n, dtype=np.int64),
                "grp": rng.choice(len(GROUPS), n, p=weights).astype(np.int32),
                "val": ((rng.zipf(1.2, n) - 1) % VALUES).astype(np.int64),
            }
        )
        if writer is None:
            writer = pq.ParquetWriter(raw, table.schema)
        writer.write_table(table, row_group_size=10**6)
    assert writer is not None
    writer.close()
    con = duckdb.connect()
    con.execute(
        f"""COPY (SELECT user, 'g' || lpad(CAST(grp AS VARCHAR), 3, '0') AS grp,
                         'v' || CAST(val AS VARCHAR) AS val
                  FROM read_parquet('{raw}'))
            TO '{path}' (FORMAT PARQUET, ROW_GROUP_SIZE 1000000)"""
    )
    con.close()
    raw.unlink()


def with_numbers(path: Path) -> Path:
    """The file ``path`` with the number ``num = CAST(substr(val, 2) AS DOUBLE)`` (cached)."""
    import duckdb

    out = path.with_name(path.stem + "_num.parquet")
    if not out.exists():
        tmp = out.with_suffix(".tmp")
        duckdb.connect().execute(
            f"""COPY (SELECT user, grp, CAST(substr(val, 2) AS DOUBLE) AS num
                      FROM read_parquet('{path}'))
                TO '{tmp}' (FORMAT PARQUET, ROW_GROUP_SIZE 1000000)"""
        )
        tmp.rename(out)
    return out


def _parts(name: str, table: object) -> int:
    """The hash parts the grouped plan of ``name`` chooses (1 for the ungrouped calls, 0 for
    the whole releases: the recipe picks the plan, printed as ``-``)."""
    from dpselect.data import grouped_sql

    chooser = getattr(grouped_sql, "grouped_parts", None)
    if name.startswith("release"):
        return 0
    g = int(name.split("=")[1].split()[0]) if "G=" in name else 1
    if chooser is None or not (
        name.startswith(("grouped", "cells", "numbers", "discovered")) or name == "candidates"
    ):
        return 1
    m = 3 if name.startswith("cells") else 1
    numbers = "numbers" in name
    return int(chooser(table, g, m, 1, numbers=numbers))


def one(name: str, path: str, budget_mb: float | None = None) -> dict[str, float]:
    """Run one measurement in this process: its wall time, this process's resident memory
    before the call and its peak RSS."""
    from dpselect.data import unit_partitions
    from dpselect.data.tables import open_table

    if budget_mb is not None:
        unit_partitions.MEMORY_BUDGET = int(budget_mb * 2**20)
    if name.endswith(" one part"):  # the same call with one part, whatever the budget
        name = name.removesuffix(" one part")
        unit_partitions.MEMORY_BUDGET = 2**60
    if "numbers" in name:
        path = str(with_numbers(Path(path)))
    table = open_table(path)
    candidates: list[str] = []
    if name.startswith("candidates"):
        top = table.connection.execute(
            "SELECT val FROM data GROUP BY val ORDER BY count(*) DESC, val LIMIT 1000"
        ).fetchall()
        candidates = [v for (v,) in top]
    parts = _parts(name, table)
    base_mib = rss_mib()
    start = time.perf_counter()
    if name == "plain":
        table.connection.execute(
            "SELECT count(*) FROM (SELECT grp, val, count(*) AS n FROM data GROUP BY grp, val)"
        ).fetchall()
    elif name == "ungrouped":
        table.counts(Query("val", UnitRule(privacy_unit="user", values_per_unit=1, salt=7)), 100)
    elif name.startswith("grouped G="):
        g = int(name.split("=")[1])
        table.counts(
            Query(
                "val",
                UnitRule(
                    privacy_unit="user", values_per_unit=1, groups_per_unit=g, salt=7, group_salt=8
                ),
                PublicGroups("grp", GROUPS),
            ),
            100,
        )
    elif name == "cells G=3":
        table.counts(
            Query(
                "val",
                UnitRule(
                    privacy_unit="user", values_per_unit=3, groups_per_unit=3, salt=7, group_salt=8
                ),
                PublicGroups("grp", GROUPS),
            ),
            100,
        )
    elif name == "numbers G=3":
        table.numbers(
            Query(
                "num",
                UnitRule(
                    privacy_unit="user", rows_per_unit=3, groups_per_unit=3, salt=7, group_salt=8
                ),
                PublicGroups("grp", GROUPS),
            )
        )
    elif name == "discovered G=3":
        table.counts(
            Query(
                "val",
                UnitRule(
                    privacy_unit="user", values_per_unit=1, groups_per_unit=3, salt=7, group_salt=8
                ),
                PrivateGroups("grp"),
            ),
            100,
        )
    elif name == "discovered numbers G=3":
        table.numbers(
            Query(
                "num",
                UnitRule(
                    privacy_unit="user", rows_per_unit=3, groups_per_unit=3, salt=7, group_salt=8
                ),
                PrivateGroups("grp"),
            )
        )
    elif name == "candidates":
        table.scores(
            Query(
                "val",
                UnitRule(
                    privacy_unit="user", values_per_unit=1, groups_per_unit=1, salt=7, group_salt=8
                ),
                PublicGroups("grp", GROUPS),
            ),
            candidates,
        )
    elif name == "candidates ungrouped":
        table.scores(
            Query("val", UnitRule(privacy_unit="user", values_per_unit=1, salt=7)), candidates
        )
    elif name.startswith("release "):
        grouping = {
            "release ungrouped": {},
            "release public": {"by": "grp", "groups": GROUPS},
            "release private": {"by": "grp"},
        }[name]
        start = time.perf_counter()
        dp.Session(path, privacy_unit="user").top_k("val", 10, epsilon=1.0, delta=1e-6, **grouping)
    else:
        raise ValueError(name)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "peak_mib": peak_rss_mib(), "base_mib": base_mib, "parts": parts}


NAMES = [
    "plain",
    "ungrouped",
    "grouped G=1",
    "grouped G=3",
    "candidates",
    "candidates ungrouped",
    "release ungrouped",
    "release public",
    "release private",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "dpselect_bench"))
    parser.add_argument("--only", nargs="*", default=None, help="measurements to run")
    parser.add_argument(
        "--budget-mb", type=float, default=None, help="the bounding plans' memory budget (MiB)"
    )
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--path", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(one(args.one, args.path, args.budget_mb)))
        return
    rows = int(args.rows)
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"grouped_{rows}.parquet"
    if not path.exists():
        start = time.perf_counter()
        build(path, rows)
        print(f"built {path} in {time.perf_counter() - start:.1f} s")
    names = NAMES if args.only is None else args.only
    best: dict[str, dict[str, float]] = {}
    for _ in range(args.repeat):  # interleaved rounds: a slow moment hits every call alike
        for name in names:
            budget = [] if args.budget_mb is None else ["--budget-mb", str(args.budget_mb)]
            out = subprocess.run(
                [sys.executable, __file__, "--one", name, "--path", str(path), *budget],
                check=True, capture_output=True, text=True,
            )  # fmt: skip
            found = json.loads(out.stdout.strip().splitlines()[-1])
            if name not in best or found["seconds"] < best[name]["seconds"]:
                best[name] = found
    print(f"{rows:,} rows, {max(1, rows // 10):,} users, {len(GROUPS)} groups, best of "
          f"{args.repeat}")  # fmt: skip
    for name in names:
        base_name = "release ungrouped" if name.startswith("release ") else "ungrouped"
        base = best.get(base_name, {}).get("seconds")
        ratio = f"{best[name]['seconds'] / base:5.2f}x" if base else "  -  "
        found = best[name]
        plain = best.get("plain", {}).get("seconds")
        ratio += f" {found['seconds'] / plain:6.2f}x plain" if plain else ""
        per_row = (found["peak_mib"] - found["base_mib"]) * 2**20 / rows
        parts = f"{found['parts']:.0f}" if found["parts"] else "-"
        print(f"{name:22s} {found['seconds']:8.2f} s  {ratio}  peak {found['peak_mib']:7.0f} MiB"
              f"  base {found['base_mib']:5.0f} MiB  {per_row:6.1f} B/row"
              f"  parts {parts}")  # fmt: skip


if __name__ == "__main__":
    main()
