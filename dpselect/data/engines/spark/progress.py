"""Spark's own job progress, reported while a query runs: the one place where the Spark engine
runs the actions (``collect``, ``toArrow``, ``count``) that read the data for a query.

A :class:`~dpselect.data.engines.spark.SparkTable` method that reads the data opens
:func:`reporting` with the query's ``progress``; every action inside it goes through
:func:`run_action` (or :func:`collect`). The action runs in a worker thread under one job
group for the whole query (``setJobGroup(group, ..., interruptOnCancel=True)``, set in that
thread), while the caller's thread polls Spark's status tracker every :data:`POLL_SECONDS`:
the percentage is the completed tasks over all the tasks of the group's stages seen so far
(``getJobIdsForGroup``, ``getJobInfo(..).stageIds``, ``getStageInfo(..).numTasks`` and
``numCompletedTasks``). What ``progress(percent)`` sees follows the rules DuckDB's reports
follow (:mod:`dpselect.data.engines.progress_rules`): nothing for a query that ends within
:data:`REPORT_AFTER_SECONDS`; then the percentage, clamped to ``0 .. 100`` and never
decreasing (a later action adds tasks: its lower reading is not shown), ``100.0`` once the
query has ended without an error; an exception raised by ``progress`` is swallowed and stops
the reports. Ctrl-C (``KeyboardInterrupt``) cancels the job group and is re-raised.

A Spark Connect session has no SparkContext nor status tracker: its actions run plainly, with
no report (the table's ``capabilities.progress`` is false there, :func:`status_context`).
Progress never fails a query, and is a side channel only: the actions, their results and
their order are the same with and without it.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from ..progress_rules import POLL_SECONDS, REPORT_AFTER_SECONDS, ProgressReports

__all__ = [
    "POLL_SECONDS",
    "REPORT_AFTER_SECONDS",
    "collect",
    "reporting",
    "run_action",
    "status_context",
    "task_percent",
]

#: After Ctrl-C, how long to wait for the cancelled job group before re-raising anyway.
_INTERRUPT_SECONDS = 10.0

T = TypeVar("T")


@dataclass(frozen=True)
class _QueryReports:
    """The progress of one query: its SparkContext, its job group and its reports."""

    context: Any
    group: str
    reports: ProgressReports


#: The reports of the query running in this context (``None``: actions run plainly).
_CURRENT: ContextVar[_QueryReports | None] = ContextVar("dpselect_spark_progress", default=None)


def status_context(frame: Any) -> Any:
    """The SparkContext of ``frame``'s session if it has a status tracker, else ``None``
    (Spark Connect). Never raises."""
    try:
        context = frame.sparkSession.sparkContext
        context.statusTracker()
    except Exception:  # Spark Connect: no SparkContext
        return None
    return context


def task_percent(context: Any, group: str) -> float:
    """The completed tasks over all the tasks of the job group's stages seen so far, as a
    percent (``-1.0``: no task seen yet, or the tracker could not be read)."""
    try:
        tracker = context.statusTracker()
        total = completed = 0
        for job in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job)
            for stage in info.stageIds if info is not None else ():
                found = tracker.getStageInfo(stage)
                if found is not None:
                    total += int(found.numTasks)
                    completed += int(found.numCompletedTasks)
    except Exception:  # the tracker is a side channel: never fail a query
        return -1.0
    return 100.0 * completed / total if total > 0 else -1.0


@contextmanager
def reporting(
    frame: Any, progress: Callable[[float], None] | None, after: float | None = None
) -> Iterator[None]:
    """Report the progress of the actions run inside to ``progress(percent)``, as one query
    (``100.0`` at its end without an error, if it ran long enough); nothing with no
    ``progress`` or on Spark Connect. ``after``: seconds before the first report (default
    :data:`REPORT_AFTER_SECONDS`)."""
    context = status_context(frame) if progress is not None else None
    if context is None:
        yield
        return
    reports = ProgressReports(progress, REPORT_AFTER_SECONDS if after is None else after)
    token = _CURRENT.set(_QueryReports(context, f"dpselect-{uuid.uuid4().hex}", reports))
    try:
        yield
    finally:
        _CURRENT.reset(token)
    reports.finish()


def run_action(call: Callable[[], T]) -> T:
    """``call()`` (a Spark action), reporting its progress inside :func:`reporting`: run in a
    worker thread under the query's job group while this thread polls Spark's status tracker
    and waits. ``call``'s exception is re-raised here; ``KeyboardInterrupt`` cancels the job
    group and is re-raised. Outside :func:`reporting`: ``call()`` as is."""
    current = _CURRENT.get()
    if current is None:
        return call()
    result: list[Any] = []
    failure: list[BaseException] = []
    done = threading.Event()  # as duckdb_progress.run_query: an Event, not Thread.join

    def run() -> None:
        try:
            current.context.setJobGroup(current.group, "dpselect query", interruptOnCancel=True)
            result.append(call())
        except BaseException as exc:  # re-raised in the caller's thread
            failure.append(exc)
        finally:
            done.set()

    worker = _worker(run)
    worker.start()
    try:
        while not done.wait(POLL_SECONDS):
            if current.reports.wanted():
                current.reports.offer(task_percent(current.context, current.group))
    except KeyboardInterrupt:
        deadline = time.monotonic() + _INTERRUPT_SECONDS
        try:
            current.context.cancelJobGroup(current.group)
        finally:
            while not done.is_set() and time.monotonic() < deadline:
                done.wait(0.05)
            failure.clear()
            result.clear()
        raise
    finally:
        if done.is_set():
            worker.join()
    if failure:
        raise failure[0]
    out: T = result[0]
    return out


def _worker(run: Callable[[], None]) -> threading.Thread:
    """The thread an action runs in: PySpark's ``InheritableThread``, so that the action
    keeps the caller's local properties (a scheduler pool, say) as if run in its thread."""
    try:
        from pyspark import InheritableThread

        thread: threading.Thread = InheritableThread(run, name="dpselect-spark-action")
    except Exception:  # pragma: no cover - an old PySpark: a plain thread
        thread = threading.Thread(target=run, name="dpselect-spark-action")
    thread.daemon = True
    return thread


def collect(frame: Any) -> list[Any]:
    """``frame.collect()`` through :func:`run_action`."""
    rows: list[Any] = run_action(frame.collect)
    return rows
