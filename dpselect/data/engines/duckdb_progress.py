"""DuckDB's own query progress, reported while a query runs: the one place where the DuckDB
engine executes its queries (:meth:`dpselect.data.tables.Table.query` and its siblings call
:func:`run_query`).

The query runs in a worker thread (DuckDB releases the GIL while it executes) and the
caller's thread waits for it, polling ``connection.query_progress()`` (DuckDB's percentage of
the query's work done, ``-1`` when no query runs) every :data:`POLL_SECONDS`. Why this way
round: Ctrl-C (``KeyboardInterrupt``) is delivered to the main thread, which then interrupts
DuckDB at once (``connection.interrupt``) instead of when the scan ends; and ``progress`` is
called in the caller's own thread, never concurrently with it.

What ``progress(percent)`` sees (:class:`QueryProgress`):

- nothing for a query that ends within :data:`REPORT_AFTER_SECONDS` (about one second);
- for a longer one, DuckDB's percentage, clamped to ``0 .. 100`` and never decreasing (a
  value below the last one shown is not reported), then ``100.0`` once the query has ended
  without an error;
- an exception raised by ``progress`` is swallowed and stops the reports of that query: a
  progress bar never fails a query (the budget is charged before the data is read, so a
  failure here would lose it without a result).

DuckDB tracks a query's progress only with its progress bar on; printing is turned off
(``enable_progress_bar_print = false``), so DuckDB itself writes nothing. Progress is a
function of the query's execution only (its time and DuckDB's count of work done): it is
not part of any result and changes nothing that is released or charged.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import duckdb

from .progress_rules import POLL_SECONDS, REPORT_AFTER_SECONDS, ProgressReports

__all__ = ["POLL_SECONDS", "REPORT_AFTER_SECONDS", "QueryProgress", "run_query", "track_progress"]

#: After Ctrl-C, how long DuckDB is asked to stop before the interrupt is re-raised anyway.
_INTERRUPT_SECONDS = 10.0

T = TypeVar("T")


class QueryProgress(ProgressReports):
    """The progress reports of one query: DuckDB's percentage polled by :meth:`poll`, shown
    by the shared rules (:class:`~dpselect.data.engines.progress_rules.ProgressReports`:
    only after ``after`` seconds, clamped and never decreasing, ended by :meth:`finish`)."""

    def __init__(
        self,
        connection: duckdb.DuckDBPyConnection,
        progress: Callable[[float], None] | None,
        after: float | None = None,
    ) -> None:
        # this module's REPORT_AFTER_SECONDS, read at each query (tests patch it here)
        super().__init__(progress, REPORT_AFTER_SECONDS if after is None else after)
        self.connection = connection

    def poll(self) -> None:
        """Report DuckDB's progress if the query has run long enough and it went up."""
        if not self.wanted():
            return
        try:
            percent = float(self.connection.query_progress())
        except (duckdb.Error, RuntimeError, TypeError, ValueError):  # pragma: no cover
            return
        self.offer(percent)


def track_progress(connection: duckdb.DuckDBPyConnection) -> None:
    """Turn on DuckDB's progress tracking on this connection, its printing off."""
    connection.execute("SET SESSION enable_progress_bar = true")
    connection.execute("SET SESSION enable_progress_bar_print = false")


def run_query(
    connection: duckdb.DuckDBPyConnection,
    call: Callable[[], T],
    progress: Callable[[float], None] | None = None,
    after: float | None = None,
) -> T:
    """``call()`` (a query on ``connection`` and its fetch) run in a worker thread while this
    thread reports DuckDB's progress to ``progress(percent)`` (:class:`QueryProgress`) and
    waits; the worker has ended when this returns or raises (unless Ctrl-C could not stop
    DuckDB within 10 s). ``call``'s exception is re-raised here; ``KeyboardInterrupt``
    interrupts DuckDB and is re-raised. ``after``: seconds before the first report (default
    :data:`REPORT_AFTER_SECONDS`)."""
    if progress is not None:
        track_progress(connection)
    result: list[Any] = []
    failure: list[BaseException] = []
    # Completion is signalled by an Event, not Thread.join/is_alive: a KeyboardInterrupt
    # that lands inside join() can leave is_alive() False while the thread still runs.
    done = threading.Event()

    def run() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # re-raised in the caller's thread
            failure.append(exc)
        finally:
            done.set()

    reports = QueryProgress(connection, progress, after)
    worker = threading.Thread(target=run, name="dpselect-duckdb-query", daemon=True)
    worker.start()
    try:
        while not done.wait(POLL_SECONDS):
            reports.poll()
    except KeyboardInterrupt:
        # Repeat: an interrupt that arrives before DuckDB starts executing is lost.
        deadline = time.monotonic() + _INTERRUPT_SECONDS
        while not done.is_set() and time.monotonic() < deadline:
            connection.interrupt()
            done.wait(0.05)
        failure.clear()
        result.clear()
        raise
    finally:
        if done.is_set():  # its last step: the thread ends at once
            worker.join()
    if failure:
        raise failure[0]
    reports.finish()
    out: T = result[0]
    return out
