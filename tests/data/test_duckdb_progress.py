"""DuckDB's own query progress (:mod:`dpselect.data.engines.duckdb_progress`): reported for a
query over a second only, within ``0 .. 100``, never decreasing, ending at 100; never failing a
query; its worker thread always ended; the same release with and without it; the CLI's bar on
stderr."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import duckdb
import pandas as pd
import pytest

import dpselect as dp
from dpselect.data.engines import duckdb_progress
from dpselect.data.engines.duckdb_progress import QueryProgress
from dpselect.data.tables import open_table
from dpselect.sampling import InsecureSeededSource

#: About 2 s here (2 cores, shared): one scan of 2 * 10^8 generated rows.
SLOW_SQL = "SELECT sum(hash(i) % 7) AS s FROM range(200000000) t(i)"
#: The same scan, failing at one row near its end.
FAILING_SQL = (
    "SELECT sum(CASE WHEN i = 190000000 THEN error('boom') ELSE hash(i) % 7 END) "
    "FROM range(200000000) t(i)"
)


def _workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "dpselect-duckdb-query" and t.is_alive()]


def _table():
    return open_table(pd.DataFrame({"a": [1, 2, 3]}))


def _timed(seen: list[tuple[float, float]], start: list[float]):
    return lambda percent: seen.append((time.monotonic() - start[0], percent))


def test_a_long_query_reports_duckdbs_progress_ending_at_100():
    table = _table()
    seen: list[tuple[float, float]] = []
    start = [time.monotonic()]
    rows = table.query(SLOW_SQL, None, _timed(seen, start))
    took = time.monotonic() - start[0]
    assert len(rows) == 1
    if took < 1.3:  # pragma: no cover - a machine fast enough for the scan to be quick
        pytest.skip(f"the scan took {took:.2f} s: not long enough to report")
    percents = [p for _, p in seen]
    assert percents, "a query over a second reports its progress"
    assert all(0.0 <= p <= 100.0 for p in percents)
    assert percents == sorted(percents) and len(set(percents)) == len(percents)
    assert percents[-1] == 100.0 and any(p < 100.0 for p in percents)  # DuckDB's own values
    assert seen[0][0] >= duckdb_progress.REPORT_AFTER_SECONDS  # nothing in the first second
    assert not _workers()


def test_a_quick_query_reports_nothing():
    table = _table()
    seen: list[float] = []
    assert table.query("SELECT 42", None, seen.append) == [(42,)]
    assert table.query_numpy("SELECT sum(a) AS s FROM data", None, seen.append)["s"][0] == 6
    table.query("SELECT sum(hash(i) % 7) FROM range(1000000) t(i)", None, seen.append)
    assert seen == []
    assert not _workers()


def test_duckdb_itself_prints_nothing(capfd):
    table = _table()
    duckdb_progress.track_progress(table.connection)
    found = table.connection.execute(
        "SELECT current_setting('enable_progress_bar'), "
        "current_setting('enable_progress_bar_print')"
    ).fetchall()
    assert found == [(True, False)]
    table.query("SELECT sum(hash(i) % 7) FROM range(50000000) t(i)", None, lambda p: None)
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_a_failing_query_ends_its_thread_and_reports_no_end(monkeypatch):
    monkeypatch.setattr(duckdb_progress, "REPORT_AFTER_SECONDS", 0.2)
    table = _table()
    seen: list[float] = []
    with pytest.raises(duckdb.Error, match="boom"):
        table.query(FAILING_SQL, None, seen.append)
    assert not _workers()
    assert 100.0 not in seen  # a query that failed never reports its end
    with pytest.raises(duckdb.Error):
        table.query("SELECT CAST('x' AS INTEGER)", None, seen.append)
    assert not _workers()
    assert table.query("SELECT 1") == [(1,)]  # the connection still works


def test_a_failing_callback_never_fails_the_query(monkeypatch):
    monkeypatch.setattr(duckdb_progress, "REPORT_AFTER_SECONDS", 0.0)
    table = _table()
    calls: list[float] = []

    def broken(percent: float) -> None:
        calls.append(percent)
        raise RuntimeError("a broken progress bar")

    sql = "SELECT sum(hash(i) % 7) AS s FROM range(30000000) t(i)"
    assert table.query(sql, None, broken) == table.query(sql)
    assert len(calls) == 1  # the first failure stops the reports of that query
    assert not _workers()


class _Polled:
    """A connection whose ``query_progress`` returns the given values in turn."""

    def __init__(self, values: list[float]) -> None:
        self.values = list(values)

    def query_progress(self) -> float:
        return self.values.pop(0)


def test_reports_are_clamped_and_never_decrease():
    seen: list[float] = []
    polled = _Polled([-1.0, 10.0, 5.0, 10.0, 42.5, float("nan"), 150.0, 100.0])
    reports = QueryProgress(polled, seen.append, after=0.0)  # type: ignore[arg-type]
    for _ in range(8):
        reports.poll()
    reports.finish()
    assert seen == [10.0, 42.5, 100.0]
    late: list[float] = []
    waiting = QueryProgress(_Polled([50.0]), late.append, after=3600.0)  # type: ignore[arg-type]
    waiting.poll()
    waiting.finish()
    assert late == []  # not yet a second: nothing, not even the end


def test_top_k_releases_the_same_with_and_without_progress(monkeypatch):
    """Progress reads no randomness and changes no query's answer: the same seed gives the
    same release (and the same charge) with and without it."""
    monkeypatch.setattr(duckdb_progress, "REPORT_AFTER_SECONDS", 0.0)  # every query reports
    users = [u for u in range(400) for _ in range(3)]
    frame = pd.DataFrame(
        {"user": users, "item": [f"v{(u * 7 + i) % 11}" for i, u in enumerate(users)]}
    )
    candidates = [f"v{i}" for i in range(11)]
    runs = {}
    for with_progress in (False, True):
        seen: list[float] = []
        result = dp.Session(
            frame,
            privacy_unit="user",
            contributions=dp.Contributions(values_per_unit=2),
            source=InsecureSeededSource(7),
        ).top_k(
            "item",
            3,
            epsilon=1.0,
            candidates=candidates,
            counts=True,
            progress=seen.append if with_progress else None,
        )
        runs[with_progress] = (result.candidates, result.to_dict(), seen)
    assert runs[True][0] == runs[False][0]
    assert runs[True][1] == runs[False][1]
    seen = runs[True][2]
    assert seen and all(0.0 <= p <= 100.0 for p in seen) and seen[-1] == 100.0


@pytest.mark.parametrize("groups", [["fr", "de"], None])
@pytest.mark.parametrize("unit", [None, "user"])
def test_a_grouped_quantile_reports_its_scan_and_releases_the_same(monkeypatch, groups, unit):
    """A quantile with ``by`` (public or private groups, with or without a unit) reports the
    one scan of every group's rows through the same hook, and releases the same for a seed."""
    monkeypatch.setattr(duckdb_progress, "REPORT_AFTER_SECONDS", 0.0)  # every query reports
    users = [u for u in range(300) for _ in range(3)]
    frame = pd.DataFrame({
        "user": users,
        "country": [("fr", "de", "it")[u % 3] for u in users],
        "minutes": [float((u * 13 + i) % 97) for i, u in enumerate(users)],
    })  # fmt: skip
    runs = {}
    for with_progress in (False, True):
        seen: list[float] = []
        with dp.Session(frame, privacy_unit=unit, source=InsecureSeededSource(3),
                        progress=seen.append if with_progress else None) as session:  # fmt: skip
            result = session.quantile("minutes", [0.25, 0.75], epsilon=2.0, bounds=(0, 100),
                                      by="country", groups=groups,
                                      delta=None if groups else 1e-3)  # fmt: skip
        runs[with_progress] = (result.to_dict(), seen)
    assert runs[True][0] == runs[False][0]
    seen = runs[True][1]
    assert seen and all(0.0 <= p <= 100.0 for p in seen) and seen[-1] == 100.0
    assert seen == sorted(seen)
    assert not runs[False][1]


@pytest.mark.parametrize("unit", [None, "buyer"])
def test_a_best_price_reports_its_scan_and_releases_the_same(monkeypatch, unit):
    """best_price on a table reports its one scan of the bids through the session's hook and
    releases the same price for a seed."""
    monkeypatch.setattr(duckdb_progress, "REPORT_AFTER_SECONDS", 0.0)  # every query reports
    bids = pd.DataFrame({"buyer": [i % 40 for i in range(200)],
                         "bid": [float(i % 17) / 16 for i in range(200)]})  # fmt: skip
    runs = {}
    for with_progress in (False, True):
        seen: list[float] = []
        with dp.Session(bids, privacy_unit=unit, source=InsecureSeededSource(5),
                        progress=seen.append if with_progress else None) as session:  # fmt: skip
            result = session.best_price("bid", epsilon=1.0, n=200)
        runs[with_progress] = (result.to_dict(), seen)
    assert runs[True][0] == runs[False][0]
    seen = runs[True][1]
    assert seen and seen[-1] == 100.0 and seen == sorted(seen)
    assert not runs[False][1]


def test_the_passes_of_auto_bounds_share_one_rising_bar(monkeypatch):
    """``max_contributions="auto"`` runs one pass per bound; each maps its percent into its
    share of ``0 .. 100`` (read as a fraction before: every pass's end at about ``100 / n``)."""
    monkeypatch.setattr(duckdb_progress, "REPORT_AFTER_SECONDS", 0.0)  # every query reports
    users = [u for u in range(400) for _ in range(3)]
    frame = pd.DataFrame(
        {"user": users, "item": [f"v{(u * 7 + i) % 11}" for i, u in enumerate(users)]}
    )
    seen: list[float] = []
    dp.Session(
        frame,
        privacy_unit="user",
        contributions=dp.Contributions(values_per_unit="auto"),
        source=InsecureSeededSource(2),
    ).top_k("item", 3, epsilon=1.0, delta=1e-6, progress=seen.append)
    assert len(seen) >= 3 and seen == sorted(seen) and seen[-1] == 100.0
    assert all(0.0 <= p <= 100.0 for p in seen) and seen[-2] > 50.0


def _cli_on_a_terminal(script: str, *args: str) -> tuple[int, str, str]:
    """``script`` then the command ``args`` in a new process whose stderr is a terminal (a
    pseudo-terminal: the bar shows on a TTY only); its exit code, stdout and stderr."""
    import pty

    main, child = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "DPSELECT_DEBUG"}
    env["COLUMNS"] = "120"
    code = f"{script}\nimport sys\nfrom dpselect.cli import main\nmain({list(args)!r})"
    with subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=child, env=env,
        cwd=os.getcwd(), text=True,
    ) as process:  # fmt: skip
        os.close(child)
        err = b""
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the child closed its end
                break
            if not chunk:
                break
            err += chunk
        out = process.stdout.read() if process.stdout else ""
        process.wait(timeout=60)
    os.close(main)
    return process.returncode, out, err.decode("utf-8", "replace")


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal (pty) is POSIX only")
def test_cli_shows_duckdb_progress_on_stderr_and_nothing_for_a_quick_run(tmp_path):
    path = tmp_path / "visits.csv"
    frame = pd.DataFrame({"user": range(3000), "site": [f"s{i % 5}" for i in range(3000)]})
    frame.to_csv(path, index=False)
    args = [
        "top-k", str(path), "--column", "site", "--k", "2", "--epsilon", "1",
        "--candidates", "s0,s1,s2,s3,s4", "--privacy-unit", "user", "--insecure-seed", "3",
    ]  # fmt: skip
    # every query reports (as a query over a second does), and DuckDB's percent is slowed down
    # so that the bar is drawn before the run ends
    slowed = (
        "import time\n"
        "import dpselect.data.engines.duckdb_progress as d\n"
        "d.REPORT_AFTER_SECONDS = 0.0\n"
        "finish = d.QueryProgress.finish\n"
        "def slow_finish(self):\n"
        "    finish(self)\n"
        "    time.sleep(0.3)\n"
        "d.QueryProgress.finish = slow_finish\n"
    )
    code, out, err = _cli_on_a_terminal(slowed, *args)
    assert code == 0, err
    assert "scanning" in err and "100%" in err  # the bar, on stderr
    assert "scanning" not in out  # stdout holds the release only
    code, quick_out, quick_err = _cli_on_a_terminal("", *args)
    assert code == 0, quick_err
    assert "scanning" not in quick_err  # a quick run: no bar at all
    assert quick_out == out  # the same release with and without the bar
