"""Data sources as DuckDB tables: files (CSV, Parquet, JSON lines) and in-memory frames.

:func:`open_table` turns what the user passes into a :class:`Table`: an embedded DuckDB
connection with a view named ``data``. Only public facts are checked here (the path exists,
its format is readable, the columns exist); the private rows are read later, once, by the
score queries in :mod:`dpselect.data.scores`.

The schema must not depend on the private rows, or a neighbouring dataset could change the
columns, their types, and so which rows match which candidate (a score moving by more than
one), or raise an error. So:

- **Parquet, polars, pyarrow**: the schema is the file's or the frame's own metadata.
- **pandas**: the dtypes; ``object`` columns are text (DuckDB's sampling of the values to guess
  a type is turned off).
- **CSV**: the header gives the columns and every column is text; the dialect is fixed (comma,
  or tab for ``.tsv``, double quotes), not sniffed; a malformed row is skipped rather than
  raising in the middle of a scan.
- **JSON lines**: rows are objects and there is no header: any column name is accepted, read
  as text, and a key absent from every row is a column of nulls (every score 0). A malformed
  line is a row of nulls. So a misspelt column name is *not* an error for JSON lines.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from ..core.errors import DataError

__all__ = ["FILE_READERS", "Table", "open_table"]

#: File suffix -> DuckDB table function reading it.
FILE_READERS: dict[str, str] = {
    ".csv": "read_csv",
    ".tsv": "read_csv",
    ".parquet": "read_parquet",
    ".pq": "read_parquet",
    ".jsonl": "read_json",
    ".ndjson": "read_json",
    ".json": "read_json",
}
_FRAME_MODULES = ("pandas", "polars", "pyarrow")


@dataclass
class Table:
    """A DuckDB connection with the data as the view ``data`` and its public schema.

    ``json_source``: for JSON, the path and format arguments of ``read_json``; the view then
    holds the columns required so far, as text (module docstring).
    """

    connection: duckdb.DuckDBPyConnection
    description: str
    columns: dict[str, str] = field(default_factory=dict)  # name -> DuckDB type
    json_source: str | None = None

    def require_column(self, column: Any, argument: str = "column") -> str:
        """The column's DuckDB type; :class:`DataError` naming ``argument`` if it is absent."""
        if not isinstance(column, str) or not column:
            raise DataError(f"{argument} must be a column name, got {column!r}")
        if self.json_source is not None and column not in self.columns:
            self.columns[column] = "VARCHAR"
            _create_json_view(self.connection, self.json_source, self.columns)
        if column not in self.columns:
            known = ", ".join(sorted(self.columns)) or "none"
            raise DataError(
                f"{argument} {column!r} is not a column of {self.description} (columns: {known})"
            )
        return self.columns[column]

    def query(
        self,
        sql: str,
        params: list[Any] | dict[str, Any] | None = None,
        progress: Callable[[float], None] | None = None,
    ) -> list[tuple[Any, ...]]:
        """Run ``sql`` and fetch every row; ``progress(percent)`` is polled while it runs."""
        rows: list[tuple[Any, ...]] = self._run(sql, params, progress, lambda r: r.fetchall())
        return rows

    def query_numpy(
        self,
        sql: str,
        params: list[Any] | dict[str, Any] | None = None,
        progress: Callable[[float], None] | None = None,
    ) -> dict[str, Any]:
        """Run ``sql`` and fetch the columns as NumPy arrays (no Python object per row)."""
        columns: dict[str, Any] = self._run(sql, params, progress, lambda r: r.fetchnumpy())
        return columns

    def _run(
        self,
        sql: str,
        params: list[Any] | dict[str, Any] | None,
        progress: Callable[[float], None] | None,
        fetch: Callable[[duckdb.DuckDBPyConnection], Any],
    ) -> Any:
        # The query runs in a worker thread so that Ctrl-C (KeyboardInterrupt, delivered to the
        # main thread) interrupts DuckDB at once (connection.interrupt) instead of when the
        # scan ends; the KeyboardInterrupt is then re-raised for the CLI to report.
        if progress is not None:
            # DuckDB tracks progress only with its progress bar on (printing stays off).
            self.connection.execute("SET SESSION enable_progress_bar = true")
            self.connection.execute("SET SESSION enable_progress_bar_print = false")
        result: list[Any] = []
        failure: list[BaseException] = []

        # Completion is signalled by an Event, not Thread.join/is_alive: a KeyboardInterrupt
        # that lands inside join() can leave is_alive() False while the thread still runs.
        done = threading.Event()

        def run() -> None:
            try:
                result.append(fetch(self.connection.execute(sql, params or [])))
            except BaseException as exc:  # re-raised in the caller's thread
                failure.append(exc)
            finally:
                done.set()

        threading.Thread(target=run, daemon=True).start()
        try:
            while not done.wait(0.1):
                if progress is None:
                    continue
                try:
                    percent = float(self.connection.query_progress())
                except (duckdb.Error, RuntimeError):  # pragma: no cover - depends on timing
                    percent = -1.0
                if percent >= 0:
                    progress(percent)
        except KeyboardInterrupt:
            # Repeat: an interrupt that arrives before DuckDB starts executing is lost.
            deadline = time.monotonic() + 10.0
            while not done.is_set() and time.monotonic() < deadline:
                self.connection.interrupt()
                done.wait(0.05)
            failure.clear()
            result.clear()
            raise
        if failure:
            raise failure[0]
        if progress is not None:
            progress(100.0)
        return result[0]


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _create_json_view(
    connection: duckdb.DuckDBPyConnection, source: str, columns: dict[str, str]
) -> None:
    """The view ``data`` over a JSON file: the given keys, as text, no type sniffed.

    ``source``: the path and format arguments of ``read_json``.
    """
    struct = ", ".join(f"{_sql_string(name)}: 'VARCHAR'" for name in columns) or "'_': 'VARCHAR'"
    connection.execute(
        "CREATE OR REPLACE TEMP VIEW data AS SELECT * FROM read_json("
        f"{source}, columns = {{{struct}}}, ignore_errors = true)"
    )


def _open_file(path: Path, connection: duckdb.DuckDBPyConnection) -> tuple[str, str | None]:
    """Create the view ``data`` over the file: its description, and the JSON source if any."""
    if not path.exists():
        raise DataError(f"data file {str(path)!r} does not exist")
    if path.is_dir():
        raise DataError(f"data path {str(path)!r} is a directory, not a file")
    if not os.access(path, os.R_OK):
        raise DataError(f"data file {str(path)!r} is not readable")
    suffix = path.suffix.lower()
    reader = FILE_READERS.get(suffix)
    if reader is None:
        formats = ", ".join(sorted(FILE_READERS))
        raise DataError(f"data file {str(path)!r} has an unsupported format (use {formats})")
    description = f"file {str(path)!r}"
    path_sql = _sql_string(str(path))
    if reader == "read_json":
        # .json: one array or one object per line; .jsonl / .ndjson: one object per line
        layout = "auto" if suffix == ".json" else "newline_delimited"
        source = f"{path_sql}, format = {_sql_string(layout)}"
        _create_json_view(connection, source, {})
        return description, source
    options = ""
    if reader == "read_csv":
        delimiter = "\t" if suffix == ".tsv" else ","
        options = (
            f", header = true, delim = {_sql_string(delimiter)}, quote = '\"', escape = '\"', "
            "all_varchar = true, ignore_errors = true"
        )
    try:
        connection.execute(f"CREATE TEMP VIEW data AS SELECT * FROM {reader}({path_sql}{options})")
    except duckdb.Error as exc:
        raise DataError(f"cannot read {description}: {_first_line(exc)}") from None
    return description, None


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


_DATABASE: tuple[int, duckdb.DuckDBPyConnection] | None = None
_DATABASE_LOCK = threading.Lock()


def _database() -> duckdb.DuckDBPyConnection:
    """One embedded in-memory DuckDB per process; each table is a cursor (session) on it.

    A new database costs about 20 ms, a cursor microseconds: many small queries stay cheap.
    Nothing is stored in the database itself (views are temporary, frames registered on the
    cursor), so sessions never see each other's data. A forked child makes its own.
    """
    global _DATABASE
    with _DATABASE_LOCK:
        if _DATABASE is None or _DATABASE[0] != os.getpid():
            config: dict[str, str | bool | int | float | list[str]] = {
                "threads": max(1, os.cpu_count() or 1)
            }
            _DATABASE = (os.getpid(), duckdb.connect(":memory:", config=config))
        return _DATABASE[1]


def _is_frame(obj: Any) -> bool:
    module = type(obj).__module__.split(".")[0]
    return module in _FRAME_MODULES


def open_table(data: Any) -> Table:
    """Open ``data`` (a path to CSV/Parquet/JSON lines, or a pandas/polars/pyarrow table).

    Raises :class:`DataError` for a missing or unreadable file, an unsupported format or an
    unsupported object, all public facts.
    """
    connection = _database().cursor()  # its own session: views and frames stay private to it
    # pandas object columns are text, whatever their values look like (module docstring).
    connection.execute("SET SESSION pandas_analyze_sample = 0")
    json_source = None
    if isinstance(data, (str, os.PathLike)):
        description, json_source = _open_file(Path(data), connection)
    elif _is_frame(data):
        connection.register("data", data)
        description = f"the {type(data).__module__.split('.')[0]} table"
    else:
        raise DataError(
            "data must be a path to a CSV, Parquet or JSON lines file, or a pandas, polars or "
            f"pyarrow table, got {type(data).__name__}"
        )
    try:
        schema = connection.execute("DESCRIBE data").fetchall()
    except duckdb.Error as exc:
        raise DataError(f"cannot read {description}: {_first_line(exc)}") from None
    columns = {} if json_source else {str(row[0]): str(row[1]) for row in schema}
    return Table(connection, description, columns, json_source)
