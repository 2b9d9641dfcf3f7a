"""Data sources as DuckDB tables: files (CSV, Parquet, JSON lines) and in-memory frames.

:func:`open_table` turns what the user passes into a :class:`Table`: an embedded DuckDB
connection with a view named ``data``. Only public facts are checked here (the path exists,
its format is readable, the columns exist); the private rows are read later, once, by the
score queries in :mod:`dpselect.data.scores`.
"""

from __future__ import annotations

import os
import threading
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
    """A DuckDB connection with the data as the view ``data`` and its public schema."""

    connection: duckdb.DuckDBPyConnection
    description: str
    columns: dict[str, str] = field(default_factory=dict)  # name -> DuckDB type

    def require_column(self, column: Any, argument: str = "column") -> str:
        """The column's DuckDB type; :class:`DataError` naming ``argument`` if it is absent."""
        if not isinstance(column, str) or not column:
            raise DataError(f"{argument} must be a column name, got {column!r}")
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
        if progress is None:
            return fetch(self.connection.execute(sql, params or []))
        result: list[Any] = []
        failure: list[BaseException] = []

        def run() -> None:
            try:
                result.append(fetch(self.connection.execute(sql, params or [])))
            except BaseException as exc:  # re-raised in the caller's thread
                failure.append(exc)

        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        while worker.is_alive():
            worker.join(0.1)
            try:
                percent = float(self.connection.query_progress())
            except (duckdb.Error, RuntimeError):  # pragma: no cover - depends on timing
                percent = -1.0
            if percent >= 0:
                progress(percent)
        if failure:
            raise failure[0]
        progress(100.0)
        return result[0]


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _open_file(path: Path, connection: duckdb.DuckDBPyConnection) -> str:
    if not path.exists():
        raise DataError(f"data file {str(path)!r} does not exist")
    if path.is_dir():
        raise DataError(f"data path {str(path)!r} is a directory, not a file")
    if not os.access(path, os.R_OK):
        raise DataError(f"data file {str(path)!r} is not readable")
    reader = FILE_READERS.get(path.suffix.lower())
    if reader is None:
        formats = ", ".join(sorted(FILE_READERS))
        raise DataError(f"data file {str(path)!r} has an unsupported format (use {formats})")
    options = (
        ", format = 'newline_delimited'" if path.suffix.lower() in (".jsonl", ".ndjson") else ""
    )
    source = f"{reader}({_sql_string(str(path))}{options})"
    connection.execute(f"CREATE VIEW data AS SELECT * FROM {source}")
    return f"file {str(path)!r}"


def _is_frame(obj: Any) -> bool:
    module = type(obj).__module__.split(".")[0]
    return module in _FRAME_MODULES


def open_table(data: Any) -> Table:
    """Open ``data`` (a path to CSV/Parquet/JSON lines, or a pandas/polars/pyarrow table).

    Raises :class:`DataError` for a missing or unreadable file, an unsupported format or an
    unsupported object, all public facts.
    """
    connection = duckdb.connect(":memory:", config={"threads": max(1, os.cpu_count() or 1)})
    if isinstance(data, (str, os.PathLike)):
        description = _open_file(Path(data), connection)
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
        first_line = str(exc).splitlines()[0]
        raise DataError(f"cannot read {description}: {first_line}") from None
    return Table(connection, description, {str(row[0]): str(row[1]) for row in schema})
