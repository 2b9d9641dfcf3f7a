"""Spark reports a query's progress through the same ``progress=`` hook as DuckDB
(:mod:`dpselect.data.engines.spark.progress`): Spark's own task progress, by the shared rules
(:mod:`dpselect.data.engines.progress_rules`), as a side channel that changes no result.
"""

from __future__ import annotations

import _thread
import itertools
import threading
import time
from types import SimpleNamespace

import pytest

import dpselect
from dpselect.data.engines.spark import progress as spark_progress
from dpselect.data.engines.spark.progress import collect, reporting, run_action, status_context
from dpselect.data.query import Query
from dpselect.data.tables import open_table
from dpselect.sampling import InsecureSeededSource
from tests.engine_rules import unit_rule


def _rising(seen: list[float]) -> bool:
    """Every report in ``0 .. 100``, never decreasing, the last one ``100``."""
    return (
        bool(seen)
        and all(0.0 <= p <= 100.0 for p in seen)
        and all(a <= b for a, b in itertools.pairwise(seen))
        and seen[-1] == 100.0
    )


@pytest.fixture(scope="module")
def big(spark):
    """A frame whose scores take a few seconds on ``local[1]`` (several stages and tasks)."""
    f = spark.range(0, 4_000_000, numPartitions=8)
    return f.selectExpr("id % 997 AS u", "CAST(id % 13 AS STRING) AS v")


@pytest.fixture(scope="module")
def small(spark):
    users = [u for u in range(60) for _ in range(3)]
    rows = [(u, f"v{(u * 7 + i) % 11}") for i, u in enumerate(users)]
    return spark.createDataFrame(rows, "user long, item string")


def test_a_classic_session_declares_progress(small):
    assert open_table(small).capabilities.progress is True


def test_a_long_query_reports_sparks_task_progress_ending_at_100(big, monkeypatch):
    monkeypatch.setattr(spark_progress, "REPORT_AFTER_SECONDS", 0.0)  # every query reports
    table = open_table(big)
    seen: list[float] = []
    cands = [str(i) for i in range(13)]
    with_progress = table.scores(Query("v", unit_rule(), progress=seen.append), cands)
    without = table.scores(Query("v", unit_rule()), cands)
    assert _rising(seen), seen
    assert with_progress.tolist() == without.tolist()


def test_the_job_group_tracks_the_querys_tasks(small):
    """Inside :func:`reporting`, each action runs under the query's job group: its tasks are
    all completed once the action has returned."""
    with reporting(small, lambda p: None, after=3600.0):
        current = spark_progress._CURRENT.get()
        assert current is not None
        rows = collect(small.groupBy("item").count())
        assert spark_progress.task_percent(current.context, current.group) == 100.0
    assert spark_progress._CURRENT.get() is None
    assert sorted(rows) == sorted(small.groupBy("item").count().collect())


def test_an_action_keeps_the_callers_local_properties(small):
    """The worker thread inherits the caller's local properties (a scheduler pool, say)."""
    context = small.sparkSession.sparkContext
    context.setLocalProperty("dpselect.test.pool", "mine")
    try:
        with reporting(small, lambda p: None):
            got = run_action(lambda: context.getLocalProperty("dpselect.test.pool"))
    finally:
        context.setLocalProperty("dpselect.test.pool", None)
    assert got == "mine"


def test_a_quick_query_reports_nothing(small):
    seen: list[float] = []
    table = open_table(small)
    expected = table.counts(Query("item", unit_rule()))  # warm: the plan's classes loaded
    started = time.monotonic()
    counts = table.counts(Query("item", unit_rule(), progress=seen.append))
    took = time.monotonic() - started
    assert counts == expected
    if took >= spark_progress.REPORT_AFTER_SECONDS:  # a loaded machine: not a quick query
        pytest.skip(f"the small query took {took:.1f} s")
    assert seen == []


def test_a_raising_callback_fails_no_query(small, monkeypatch):
    monkeypatch.setattr(spark_progress, "REPORT_AFTER_SECONDS", 0.0)
    calls: list[float] = []

    def broken(percent: float) -> None:
        calls.append(percent)
        raise RuntimeError("a broken progress bar")

    table = open_table(small)
    rule = unit_rule("user", 2)
    cands = [f"v{i}" for i in range(11)]
    got = table.scores(Query("item", rule, progress=broken), cands)
    assert got.tolist() == table.scores(Query("item", rule), cands).tolist()
    assert len(calls) == 1  # the first report raised: no other one
    numbers = table.buyers_at(Query("user", unit_rule(), progress=broken), [1.0, 30.0])
    assert numbers.tolist() == table.buyers_at(Query("user", unit_rule()), [1.0, 30.0]).tolist()


def test_top_k_releases_the_same_with_and_without_progress(small, monkeypatch):
    """Progress reads no randomness and changes no query's answer: the same seed gives the
    same release with and without it."""
    monkeypatch.setattr(spark_progress, "REPORT_AFTER_SECONDS", 0.0)  # every query reports
    cands = [f"v{i}" for i in range(11)]
    runs = {}
    for with_progress in (False, True):
        seen: list[float] = []
        session = dpselect.Session(small, privacy_unit="user", source=InsecureSeededSource(7))
        result = session.top_k(
            "item", 3, epsilon=1.0, candidates=cands, counts=True,
            progress=seen.append if with_progress else None,
        )  # fmt: skip
        runs[with_progress] = (result.candidates, result.to_dict(), seen)
    assert runs[True][:2] == runs[False][:2]
    assert _rising(runs[True][2]), runs[True][2]
    assert runs[False][2] == []


def test_quantiles_report_on_spark(small, monkeypatch):
    monkeypatch.setattr(spark_progress, "REPORT_AFTER_SECONDS", 0.0)
    table = open_table(small)
    seen: list[float] = []
    rule = unit_rule("user", max_rows=2)
    got = table.quantile_values(Query("user", rule, progress=seen.append), bounds=(0.0, 60.0))
    assert got.tolist() == table.quantile_values(Query("user", rule), bounds=(0.0, 60.0)).tolist()
    assert _rising(seen), seen


# ----------------------------------------------------------------- without Spark's tracker
class _NoTracker:
    """A Spark Connect frame's session: no SparkContext."""

    @property
    def sparkContext(self):
        raise RuntimeError("[JVM_ATTRIBUTE_NOT_SUPPORTED] sparkContext on Spark Connect")


def test_spark_connect_runs_the_action_plainly():
    frame = SimpleNamespace(sparkSession=_NoTracker())
    assert status_context(frame) is None
    seen: list[float] = []
    with reporting(frame, seen.append, after=0.0):
        assert spark_progress._CURRENT.get() is None
        assert run_action(lambda: 42) == 42
    assert seen == []


class _FakeContext:
    """A SparkContext whose tracker sees one stage of 4 tasks, 1 more done at each read."""

    def __init__(self, most: int = 4) -> None:
        self.most = most  # the tracker never sees more tasks completed
        self.groups: list[str] = []
        self.cancelled: list[str] = []
        self.done = 0

    def statusTracker(self):
        return self

    def setJobGroup(self, group, description, interruptOnCancel=False):
        self.groups.append(group)

    def cancelJobGroup(self, group):
        self.cancelled.append(group)

    def getJobIdsForGroup(self, group):
        return [0] if group in self.groups else []

    def getJobInfo(self, job):
        return SimpleNamespace(stageIds=[0])

    def getStageInfo(self, stage):
        self.done = min(self.done + 1, self.most)
        return SimpleNamespace(numTasks=4, numCompletedTasks=self.done)


def test_reports_follow_the_tracker_and_end_at_100():
    context = _FakeContext()
    frame = SimpleNamespace(sparkSession=SimpleNamespace(sparkContext=context))
    seen: list[float] = []
    with reporting(frame, seen.append, after=0.0):
        assert run_action(lambda: time.sleep(0.65) or "rows") == "rows"
    assert seen[0] == 25.0 and _rising(seen), seen
    assert len(context.groups) == 1


def test_the_end_of_a_successful_query_is_100_whatever_the_tracker_says():
    context = _FakeContext(most=1)  # a skipped stage's tasks never complete
    frame = SimpleNamespace(sparkSession=SimpleNamespace(sparkContext=context))
    seen: list[float] = []
    with reporting(frame, seen.append, after=0.0):
        run_action(lambda: time.sleep(0.35))
        run_action(lambda: time.sleep(0.35))
    assert seen == [25.0, 100.0]


def test_a_failing_action_reports_no_end():
    context = _FakeContext()
    frame = SimpleNamespace(sparkSession=SimpleNamespace(sparkContext=context))
    seen: list[float] = []

    def fail() -> None:
        raise ValueError("the job failed")

    with pytest.raises(ValueError, match="the job failed"), reporting(frame, seen.append, 0.0):
        run_action(fail)
    assert 100.0 not in seen


def test_ctrl_c_cancels_the_job_group():
    context = _FakeContext()
    frame = SimpleNamespace(sparkSession=SimpleNamespace(sparkContext=context))
    release = threading.Event()
    context.cancelJobGroup = lambda group: (context.cancelled.append(group), release.set())
    threading.Timer(0.3, _thread.interrupt_main).start()
    with pytest.raises(KeyboardInterrupt), reporting(frame, lambda p: None):
        run_action(lambda: release.wait(30))
    assert context.cancelled == context.groups and len(context.groups) == 1
