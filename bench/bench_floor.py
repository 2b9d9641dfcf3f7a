"""The privacy-unit paths of ``top_k`` against their per-person floor on DuckDB.

Run: ``python bench/bench_floor.py --rows 10000000 [--repeats 3] [--memory]
[--paths cand-int-m3,cand-text-m3,...] [--cache DIR] [--quick]``, under the shared lock
(``flock /tmp/dpselect-bench.lock python bench/bench_floor.py ...``).

The data, written once per row count (DuckDB, deterministic: hashes of the row number, no
random generator) to ``DIR/floor_v1_{rows}.parquet`` (``DIR``: ``--cache``, default
``$TMPDIR/dpselect-bench``), a page-view log:

- ``user_id`` (int64, ``rows / 10`` users): 95% of the rows uniform over the users, 5% from
  ``floor(users U^2)`` (heavy users: the first users hold hundreds to thousands of rows);
- ``user_name`` (text): the same users as text ids, ``'u'`` and the id padded to 10 digits,
  so the two columns hold the same units;
- ``page`` (int64, 10^5 values): ``floor(exp(ln(10^5) U)) - 1``, a log-uniform (Zipf, exponent
  1) law; page 0 is the most common;
- ``country`` (text, 200 values ``c000`` .. ``c199``): each user's home country (a Zipf-like
  law over a hash of the user), and on 10% of the rows another country (a hash of the row).

Each path is one ``dpselect.Session(path, privacy_unit=..., contributions=
Contributions(values_per_unit=m)).top_k("page", 10, epsilon=1, ...)`` (no ledger, so the
budget never runs out; ``delta = 1e-6`` where the values come from the data) and
its floor, the same engine's per-person count with no bound, seed or key, on a DuckDB
connection configured as dpselect's (``threads`` = the CPU count, the same ``read_parquet``
options, :func:`dpselect.data.tables.parquet_sql`):

- ``cand-{int,text}-m{1,3}``: the 10^5 pages as candidates; floor ``GROUP BY unit, page`` over
  the rows joined with the candidates (an inner hash join: measured faster than ``IN`` or a
  ``SEMI JOIN`` here), then ``GROUP BY page``; ``cand10k-...``: the 10^4 most
  common pages as candidates;
- ``nocand-{int,text}-m{1,3}``: no candidates; floor ``GROUP BY unit, page``, then
  ``GROUP BY page``;
- ``public-{int,text}-m3`` and ``private-{int,text}-m3``: ``by="country"`` with the 200
  countries given, or found privately (``groups_per_unit = 1``); floor ``GROUP BY country,
  unit, page`` (public: the rows joined with the listed countries), then ``GROUP BY country, page``.

Timing: one untimed warm-up call of each, then ``--repeats`` rounds, in each round every
path's floor and its dpselect call in turn (interleaved, so load changes hit both); the best
wall and process CPU time (all threads) of each, and the ratios dpselect/floor. For every
``text`` path whose ``int`` twin ran, the ratios text/int for dpselect and for the floor.
``--memory``: each floor and each dpselect call once more in a fresh process (this script
with ``--child``), its peak resident memory (``VmHWM``, imports included: ``ru_maxrss`` would
carry this process's memory over ``exec``; the process after the imports is printed as
``base``). ``--quick``: 10^5 rows, one repeat (a smoke run).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _rss import peak_rss_mib_of, rss_mib

PAGES = 100_000
COUNTRIES = [f"c{j:03d}" for j in range(200)]
UNITS = {"int": "user_id", "text": "user_name"}
ALL_PATHS = (
    "cand-int-m1,cand-int-m3,cand-text-m1,cand-text-m3,cand10k-int-m3,"
    "nocand-int-m1,nocand-int-m3,nocand-text-m1,nocand-text-m3,"
    "public-int-m3,public-text-m3,private-int-m3,private-text-m3"
)


def _uniform(i: str, j: int) -> str:
    """SQL: a number in [0, 1) from a hash of ``i`` (stream ``j``)."""
    return f"((hash({i} * 8 + {j}) % 1000000007) / 1000000007.0)"


def make_file(path: Path, rows: int) -> None:
    """The page-view log of the module docstring (written to a temporary name first)."""
    import duckdb

    users = max(1, rows // 10)
    tmp = path.with_suffix(".tmp")
    con = duckdb.connect()
    con.execute("SET preserve_insertion_order = false")
    con.execute(
        f"""COPY (
            WITH r AS (
                SELECT i, CASE WHEN hash(i * 8) % 20 = 0
                               THEN CAST(floor({users} * pow({_uniform("i", 1)}, 2)) AS BIGINT)
                               ELSE CAST(hash(i * 8 + 2) % {users} AS BIGINT) END AS user_id
                FROM range({rows}) t(i))
            SELECT user_id,
                   'u' || lpad(CAST(user_id AS VARCHAR), 10, '0') AS user_name,
                   CAST(floor(exp(ln({PAGES}) * {_uniform("i", 3)})) AS BIGINT) - 1 AS page,
                   'c' || lpad(CAST(CAST(CASE WHEN hash(i * 8 + 4) % 10 = 0
                                  THEN hash(i * 8 + 5) % {len(COUNTRIES)}
                                  ELSE floor(exp(ln({len(COUNTRIES)}) * {_uniform("user_id", 6)}))
                                       - 1 END AS BIGINT) AS VARCHAR), 3, '0') AS country
            FROM r)
        TO '{tmp}' (FORMAT parquet, COMPRESSION zstd)"""
    )
    os.replace(tmp, path)


def data_file(rows: int, cache: Path) -> Path:
    """The cached file of ``rows`` rows, written on first use."""
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"floor_v1_{rows}.parquet"
    if not path.exists():
        start = time.perf_counter()
        make_file(path, rows)
        print(f"wrote {path} in {time.perf_counter() - start:.1f} s", flush=True)
    return path


def parse_path(name: str) -> tuple[str, str, int]:
    """``kind-ids-mM`` -> ``(kind, unit column, m)``."""
    kind, ids, m = name.split("-")
    if kind not in ("cand", "cand10k", "nocand", "public", "private") or ids not in UNITS:
        raise SystemExit(f"unknown path {name!r} (paths: {ALL_PATHS})")
    return kind, UNITS[ids], int(m.removeprefix("m"))


def _candidates(kind: str) -> list[int] | None:
    return {"cand": list(range(PAGES)), "cand10k": list(range(PAGES // 10))}.get(kind)


class Floor:
    """The floor queries on a DuckDB connection configured as dpselect's own."""

    def __init__(self, path: Path) -> None:
        import duckdb

        from dpselect.data.tables import parquet_sql

        self.con = duckdb.connect(":memory:", config={"threads": max(1, os.cpu_count() or 1)})
        self.con.execute("SET enable_progress_bar = false")
        self.source = parquet_sql(str(path))
        for kind in ("cand", "cand10k"):  # the candidates of _candidates: 0 .. n - 1
            n = len(_candidates(kind) or [])
            self.con.execute(f"CREATE TABLE {kind}_list AS SELECT range AS v FROM range({n})")
        self.con.execute("CREATE TABLE countries (g VARCHAR)")
        self.con.execute("INSERT INTO countries SELECT unnest(?)", [COUNTRIES])

    def sql(self, kind: str, unit: str) -> str:
        """The floor query of a path."""
        rows = self.source
        if kind in ("cand", "cand10k"):
            return f"""SELECT page, count(*) AS n FROM (
                         SELECT {unit}, page FROM {rows} JOIN {kind}_list ON page = v
                         GROUP BY {unit}, page)
                       GROUP BY page"""
        if kind == "nocand":
            return f"""SELECT page, count(*) AS n FROM (
                         SELECT {unit}, page FROM {rows} GROUP BY {unit}, page)
                       GROUP BY page"""
        listed = "JOIN countries ON country = g" if kind == "public" else ""
        return f"""SELECT country, page, count(*) AS n FROM (
                     SELECT country, {unit}, page FROM {rows} {listed}
                     GROUP BY country, {unit}, page)
                   GROUP BY country, page"""

    def run(self, kind: str, unit: str) -> int:
        found = self.con.execute(self.sql(kind, unit)).fetchnumpy()
        return len(found["n"])


def dpselect_call(path: Path, kind: str, unit: str, m: int) -> Any:
    """The path's dpselect query (a fresh session, no ledger), returning its result."""
    import dpselect as dp

    session = dp.Session(
        str(path), privacy_unit=unit, contributions=dp.Contributions(values_per_unit=m)
    )
    return session_call(session, kind)


def session_call(session: Any, kind: str) -> Any:
    if kind in ("cand", "cand10k"):
        return session.top_k("page", 10, epsilon=1.0, candidates=_candidates(kind))
    if kind == "nocand":
        return session.top_k("page", 10, epsilon=1.0, delta=1e-6)
    if kind == "public":
        return session.top_k("page", 10, epsilon=1.0, delta=1e-6, by="country", groups=COUNTRIES)
    return session.top_k("page", 10, epsilon=1.0, delta=1e-6, by="country")


def _timed(fn: Any, *args: Any) -> tuple[float, float]:
    """``fn(*args)``'s wall and process CPU time (every thread's), in seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn(*args)
    return time.perf_counter() - wall, time.process_time() - cpu


def child(side: str, name: str, path: Path) -> None:
    """One call in this process; prints its peak resident memory as a JSON line."""
    kind, unit, m = parse_path(name)
    import duckdb  # noqa: F401  (the imports count in ``base``, not in the call)

    import dpselect.data.tables
    import dpselect.recipes.top_k  # noqa: F401

    base = rss_mib()
    if side == "floor":
        Floor(path).run(kind, unit)
    else:
        dpselect_call(path, kind, unit, m)
    print(json.dumps({"base": base, "peak": peak_rss_mib_of(os.getpid())}))


def peak_of(side: str, name: str, path: Path) -> dict[str, float]:
    """``side`` of path ``name`` in a fresh process: its base and peak RSS (MiB)."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", side, "--paths", name, "--file", str(path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{side} {name} failed:\n{done.stderr[-3000:]}")
    found: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return found


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10**7)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--paths", default=ALL_PATHS)
    parser.add_argument("--memory", action="store_true", help="peak RSS in fresh processes")
    parser.add_argument("--quick", action="store_true", help="10^5 rows, one repeat")
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("TMPDIR") or "/tmp") / "dpselect-bench",
    )
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--file", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.paths, args.file)
        return
    if args.quick:
        args.rows, args.repeats = 10**5, 1
    names = args.paths.split(",")
    for name in names:
        parse_path(name)
    path = data_file(args.rows, args.cache)
    import dpselect as dp

    print(f"{path}: {args.rows:,} rows, {path.stat().st_size / 1e6:.0f} MB; cpus "
          f"{os.cpu_count()}; dpselect {dp.__version__}; load {_load()}", flush=True)  # fmt: skip
    floor = Floor(path)
    sessions = {}
    for name in names:
        kind, unit, m = parse_path(name)
        sessions[name] = dp.Session(
            str(path), privacy_unit=unit, contributions=dp.Contributions(values_per_unit=m)
        )
        floor.run(kind, unit)  # warm-up: the file in the page cache, the imports done
        session_call(sessions[name], kind)
    best: dict[tuple[str, str], tuple[float, float]] = {}
    for r in range(args.repeats):
        for name in names:
            kind, unit, _ = parse_path(name)
            session = sessions[name]
            for side, fn, args_ in (
                ("floor", floor.run, (kind, unit)),
                ("dpselect", session_call, (session, kind)),
            ):
                wall, cpu = _timed(fn, *args_)
                old = best.get((name, side))
                best[(name, side)] = (
                    (wall, cpu) if old is None else (min(old[0], wall), min(old[1], cpu))
                )
        print(f"round {r + 1} done, load {_load()}", flush=True)
    peaks = {}
    if args.memory:
        for name in names:
            for side in ("floor", "dpselect"):
                peaks[(name, side)] = peak_of(side, name, path)
    print(f"\nbest of {args.repeats}; load at the end {_load()}")
    head = "| path | floor wall | dpselect wall | ratio | floor CPU | dpselect CPU | CPU ratio |"
    if args.memory:
        head += " floor peak | dpselect peak | base |"
    print(head)
    print("|" + " --- |" * (head.count("|") - 1))
    for name in names:
        fw, fc = best[(name, "floor")]
        dw, dc = best[(name, "dpselect")]
        line = (f"| {name} | {fw:.2f} s | {dw:.2f} s | {dw / fw:.2f}x | {fc:.2f} s | "
                f"{dc:.2f} s | {dc / fc:.2f}x |")  # fmt: skip
        if args.memory:
            fp, dpk = peaks[(name, "floor")], peaks[(name, "dpselect")]
            line += f" {fp['peak']:.0f} MiB | {dpk['peak']:.0f} MiB | {dpk['base']:.0f} MiB |"
        print(line)
    twins = [(n, n.replace("-text-", "-int-")) for n in names if "-text-" in n]
    twins = [(t, i) for t, i in twins if i in names]
    if twins:
        print("\n| path | dpselect wall text/int | CPU | floor wall text/int | CPU |")
        print("| --- | --- | --- | --- | --- |")
        for t, i in twins:
            ratios = []
            for side in ("dpselect", "floor"):
                (tw, tc), (iw, ic) = best[(t, side)], best[(i, side)]
                ratios += [tw / iw, tc / ic]
            print(f"| {t} | " + " | ".join(f"{x:.2f}x" for x in ratios) + " |")


if __name__ == "__main__":
    main()
