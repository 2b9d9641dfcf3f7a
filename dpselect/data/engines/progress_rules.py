"""The rules of a query's progress reports, shared by the engines (DuckDB's
:mod:`~dpselect.data.engines.duckdb_progress`, Spark's
:mod:`~dpselect.data.engines.spark.progress`): what ``progress(percent)`` is shown of the
percentages an engine reads while one query runs.

- nothing for a query that ends within :data:`REPORT_AFTER_SECONDS` (about one second);
- for a longer one, the engine's percentage, clamped to ``0 .. 100`` and never decreasing (a
  value below or equal to the last one shown is not reported; a negative or NaN reading is
  none), then ``100.0`` once the query has ended without an error;
- an exception raised by ``progress`` is swallowed and stops the reports of that query: a
  progress bar never fails a query (the budget is charged before the data is read).

Engine-independent: no engine is imported here.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["POLL_SECONDS", "REPORT_AFTER_SECONDS", "ProgressReports"]

#: A query reports its progress only once it has run this long (seconds).
REPORT_AFTER_SECONDS = 1.0
#: How often an engine's progress is read while a query runs (seconds).
POLL_SECONDS = 0.1


class ProgressReports:
    """The reports of one query to ``progress``: :meth:`offer` a reading, :meth:`finish` at
    its successful end; shown only after ``after`` seconds (default
    :data:`REPORT_AFTER_SECONDS`), clamped and never decreasing."""

    def __init__(
        self, progress: Callable[[float], None] | None, after: float | None = None
    ) -> None:
        self.progress = progress
        self.after = REPORT_AFTER_SECONDS if after is None else float(after)
        self.started = time.monotonic()
        #: the last percentage reported (``None``: nothing reported yet)
        self.shown: float | None = None

    def _long(self) -> bool:
        """Whether the query has run long enough to report."""
        return time.monotonic() - self.started >= self.after

    def wanted(self) -> bool:
        """Whether a reading would be shown now (a callback, and the query ran long enough)."""
        return self.progress is not None and self._long()

    def _report(self, percent: float) -> None:
        """Call ``progress(percent)``; a failure stops the reports."""
        if self.progress is None:
            return
        try:
            self.progress(percent)
        except Exception:  # a failing progress bar stops reporting; the query goes on
            self.progress = None
            return
        self.shown = percent

    def offer(self, percent: float) -> None:
        """Report an engine's reading if the query has run long enough and it went up."""
        if not self.wanted():
            return
        if not percent >= 0.0:  # -1: no query (yet); NaN
            return
        percent = min(percent, 100.0)
        if self.shown is not None and percent <= self.shown:
            return
        self._report(percent)

    def finish(self) -> None:
        """The query ended without an error: ``100.0`` if it ran long enough to report."""
        if self.wanted() and self.shown != 100.0:
            self._report(100.0)
