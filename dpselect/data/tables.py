"""Data sources as DuckDB tables: files (CSV, TSV, JSON, Parquet) and in-memory frames.

:func:`open_table` turns what the user passes into a :class:`Table`: an embedded DuckDB
connection with a view named ``data``. Only public facts are checked here (the path exists,
its format is readable, the columns exist, the declared schema); the private rows are read
later, once, by the score queries in :mod:`dpselect.data.scores`.

The schema must not depend on the private rows, or a neighbouring dataset could change the
columns, their types, and so which rows match which candidate (a score moving by more than
one), or raise an error. And one row must never change how another is read. So:

- **Parquet** (a file, a glob ``dir/*.parquet`` or a directory of ``.parquet`` files),
  **polars, pyarrow**: the schema is the files' or the frame's own metadata.
- **pandas**: the dtypes; ``object`` columns are text (DuckDB's sampling of the values to guess
  a type is turned off).
- **CSV, TSV** (also ``.gz``): read line by line (:mod:`dpselect.data.text_lines`): the header
  line gives the columns, every column is text unless the schema says otherwise, the dialect
  is fixed (comma, or tab for ``.tsv``; double quotes that never span lines), and a line that
  does not parse is dropped alone.
- **JSON lines** (``.jsonl``, ``.ndjson``) and **JSON** (``.json``, one record per line), also
  ``.gz``: each line is one object or no row; there is no header, so any column name is
  accepted, read as text unless the schema says otherwise, and a key absent from every row is
  a column of nulls (every score 0). So a misspelt column name is *not* an error for JSON.

``schema={column: type}`` (:mod:`dpselect.data.schema`) declares column types, applied value
by value (a value that does not convert is NULL, missing; never an error). The text of a CSV,
TSV or JSON column is read by the rule both engines share
(:func:`dpselect.data.text_casts.declared_text_sql`: integers, floats, booleans, dates, text;
docs/data_input.md, "Declared types for text columns"), other declared types of such a column
by DuckDB's ``TRY_CAST``. A type that contradicts a Parquet or frame column is converted by
``TRY_CAST`` (never refused on the data). Nested columns (LIST, ARRAY, STRUCT, MAP, UNION) are
refused by :meth:`Table.require_column`, from the schema, before anything is charged. The
proof that one row added or removed changes only that row's own contribution is in
docs/data_input.md.
"""

from __future__ import annotations

import glob
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import duckdb

from ..core.errors import DataError, given
from .engine import Engine, is_opened_table
from .engines.duckdb import DuckDBEngine
from .engines.duckdb_progress import run_query
from .frame_text import FRAME_VIEW, utf8_safe_arrow, utf8_safe_frame, utf8_safe_pandas
from .frame_types import (
    float64_columns,
    frame_arrow_types,
    pandas_scan_converted,
    parquet_scan_converted,
    scan_dated,
)
from .held_setting import HeldSetting
from .schema import is_nested, parse_schema
from .text_casts import declared_text_sql, has_text_rule
from .text_lines import (
    check_gzip_stream,
    csv_view_sql,
    json_view_sql,
    quote_identifier,
    read_csv_header,
    sql_string,
)
from .unit_keys import RAW_KEY_TYPE, FrameUnits, ParquetUnits
from .unit_partitions import SourceFiles
from .values import is_floating, read_value_sql

__all__ = ["FILE_FORMATS", "Table", "one_column", "open_table", "parquet_sql"]

#: File suffix (before an optional ``.gz``) -> format.
FILE_FORMATS: dict[str, str] = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
}
_GZIP_FORMATS = ("csv", "tsv", "jsonl", "json")
_FRAME_MODULES = ("pandas", "polars", "pyarrow")


class _UnitSource(Protocol):
    """How a source reads a privacy unit byte for byte (:meth:`Table.unit_column`)."""

    def key_column(
        self, table: Table, column: str, kind: str, argument: str
    ) -> tuple[str, str] | None: ...


@dataclass
class _JsonSource:
    """A JSON file whose view ``data`` holds the columns required so far."""

    path: str
    gzipped: bool
    array: bool
    #: hidden column -> key: privacy units as JSON text (:class:`~.unit_keys.JsonUnits`)
    raw: dict[str, str] = field(default_factory=dict)

    def key_column(
        self, table: Table, column: str, kind: str, argument: str
    ) -> tuple[str, str] | None:
        """A JSON text unit is keyed by its JSON text, not by the text it is read as (the
        number ``1`` and the string ``"1"`` are both read as ``1``: two people, one key)."""
        if column in table.known:
            return None  # declared: the declared type's value is the unit, by the user's word
        hidden = f"dpselect unit key {column}"
        while hidden in table.columns:
            hidden += "'"
        self.raw[hidden] = column
        table._create_json_view()
        return hidden, RAW_KEY_TYPE


@dataclass
class Table(DuckDBEngine):
    """A DuckDB connection with the data as the view ``data`` and its public schema: the
    DuckDB implementation of :class:`dpselect.data.engine.Engine` (its engine methods in
    :class:`~dpselect.data.engines.duckdb.DuckDBEngine`).

    ``columns``: name -> DuckDB type. ``known``: the columns whose type is known from public
    facts (typed files and frames, and declared ones); CSV and JSON columns outside the schema
    are text read as text, not known to be text (:meth:`column_type_known`).
    """

    connection: duckdb.DuckDBPyConnection
    description: str
    columns: dict[str, str] = field(default_factory=dict)  # name -> DuckDB type
    known: set[str] = field(default_factory=set)
    json_source: _JsonSource | None = None
    #: The Parquet files behind ``data`` when it is exactly their columns (no declared schema):
    #: lets :mod:`dpselect.data.dictionary_scores` read dictionary-encoded columns directly.
    parquet_files: list[str] | None = None
    #: The files behind ``data`` and their format, whatever the schema (``None`` for a frame):
    #: the row bound that sizes the hash parts (:func:`~.unit_partitions.source_rows`).
    source_files: SourceFiles | None = None
    #: How to read a privacy unit byte for byte (:meth:`unit_column`), set by the source.
    unit_source: _UnitSource | None = None
    _unit_columns: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: A frame's Arrow column types (pyarrow, polars) where DuckDB's type does not say all
    #: that matters (:mod:`dpselect.data.column_roles`).
    arrow_types: dict[str, str] = field(default_factory=dict)
    #: A pandas frame's float64 columns as the frame holds them (NumPy arrays, not copied):
    #: :meth:`quantile_values` reads them without a query (the same values, in the same order).
    float_columns: dict[str, Any] = field(default_factory=dict)
    #: The projection of the view ``data`` over a typed source (declared types, NaN as
    #: NULL): the unit readers rebuild the view with it.
    select_sql: str = "SELECT *"

    def require_column(self, column: Any, argument: str = "column") -> str:
        """The column's DuckDB type; :class:`DataError` naming ``argument`` if it is absent
        or nested (LIST, ARRAY, STRUCT, MAP, UNION: every use in dpselect is a scalar one)."""
        if not isinstance(column, str) or not column:
            raise DataError(f"{argument} must be a column name, got {given(column)}")
        if self.json_source is not None and column not in self.columns:
            self.columns[column] = "VARCHAR"
            self._create_json_view()
        if column not in self.columns:
            known = ", ".join(sorted(self.columns)) or "none"
            raise DataError(
                f"{argument} {column!r} is not a column of {self.description} (columns: {known})"
            )
        kind = self.columns[column]
        if is_nested(kind):
            raise DataError(
                f"{argument} {column!r} of {self.description} has the nested type {kind}; "
                "only scalar columns (numbers, text, dates, booleans) can be used"
            )
        return kind

    def unit_column(self, column: Any, argument: str = "privacy_unit") -> tuple[str, str]:
        """The column of ``data`` that keys the privacy unit ``column``, and its type for the
        unit SQL: the column itself, or a hidden column of raw-byte keys
        (:mod:`dpselect.data.unit_keys`, type :data:`~.unit_keys.RAW_KEY_TYPE`) where the
        view's text is repaired or an object column mixes types. Decided from the schema and
        the source's kind (public facts); the keys are an injective function of each row's
        own unit value. Raises :class:`DataError` (before any charge) where no injective key
        can be read."""
        kind = self.require_column(column, argument)
        if column not in self._unit_columns:
            found = None if self.unit_source is None else self.unit_source.key_column(
                self, column, kind, argument
            )  # fmt: skip
            self._unit_columns[column] = (column, kind) if found is None else found
        return self._unit_columns[column]

    def column_type_known(self, column: str) -> bool:
        """Whether the column's type is a public fact of the source or of the schema: False for
        CSV and JSON columns not in the declared schema (text, whatever the values look like),
        True otherwise."""
        return column in self.known

    def _create_json_view(self) -> None:
        source = self.json_source
        assert source is not None
        texts = {c: "VARCHAR" if has_text_rule(t) else t for c, t in self.columns.items()}
        sql = json_view_sql(source.path, source.gzipped, source.array, texts, source.raw)
        sql = _declared_text_view(sql, self.columns)
        self.connection.execute(f"CREATE OR REPLACE TEMP VIEW data AS {sql}")

    def query(
        self,
        sql: str,
        params: list[Any] | dict[str, Any] | None = None,
        progress: Callable[[float], None] | None = None,
    ) -> list[tuple[Any, ...]]:
        """Run ``sql`` and fetch every row; ``progress(percent)`` is told DuckDB's progress
        while it runs (a query over a second: :mod:`~.engines.duckdb_progress`)."""
        rows: list[tuple[Any, ...]] = self._run(sql, params, progress, lambda r: r.fetchall())
        return rows

    def query_numpy(
        self,
        sql: str,
        params: list[Any] | dict[str, Any] | None = None,
        progress: Callable[[float], None] | None = None,
        serial: bool = False,
    ) -> dict[str, Any]:
        """Run ``sql`` and fetch the columns as NumPy arrays (no Python object per row).

        ``serial=True``: DuckDB runs with one thread while this query runs (a database-wide
        setting, restored afterwards): a large result then peaks at about 2.5x its bytes
        instead of about 3.3x with two threads.
        """
        if not serial:
            columns: dict[str, Any] = self._run(sql, params, progress, lambda r: r.fetchnumpy())
            return columns
        with _ONE_THREAD.held(self.connection):
            columns = self._run(sql, params, progress, lambda r: r.fetchnumpy())
        return columns

    def query_batches(
        self,
        sql: str,
        params: dict[str, Any] | None,
        consume: Callable[[Any], None],
        progress: Callable[[float], None] | None = None,
        batch_rows: int = 1 << 16,
    ) -> None:
        """Run ``sql`` and pass its result to ``consume`` as Arrow record batches of at most
        ``batch_rows`` rows, one at a time (the whole result is never held at once)."""

        def fetch(relation: Any) -> None:
            for batch in relation.to_arrow_reader(batch_rows):
                consume(batch)

        self._run(sql, params, progress, fetch, relation=True)

    def _run(
        self,
        sql: str,
        params: list[Any] | dict[str, Any] | None,
        progress: Callable[[float], None] | None,
        fetch: Callable[[Any], Any],
        relation: bool = False,
    ) -> Any:
        # Every query of the engine's methods runs here, through run_query: in a worker thread
        # (Ctrl-C interrupts DuckDB at once), DuckDB's own progress reported to ``progress``
        # for a query that runs over a second (dpselect.data.engines.duckdb_progress).
        def call() -> Any:
            if relation:  # a relation streams Arrow batches without an extra copy
                return fetch(self.connection.sql(sql, params=params or None))
            return fetch(self.connection.execute(sql, params or []))

        return run_query(self.connection, call, progress)


def _split_suffix(path: str) -> tuple[str, bool]:
    """The format suffix of ``path`` (lower case) and whether it is gzipped."""
    name = path.lower()
    gzipped = name.endswith(".gz")
    if gzipped:
        name = name[:-3]
    return os.path.splitext(name)[1], gzipped


def _has_glob(path: str) -> bool:
    return any(char in path for char in "*?[")


def _open_file(
    data: str | os.PathLike[str], connection: duckdb.DuckDBPyConnection, schema: dict[str, str]
) -> Table:
    """The table over a file, a Parquet glob or a directory of Parquet files.

    Everything here is decided by the path (its suffix, the files it names), the CSV header
    line and the schema: public facts.
    """
    text = os.fspath(data)
    formats = ", ".join([*FILE_FORMATS, ".csv.gz", ".tsv.gz", ".jsonl.gz", ".json.gz"])
    if Path(text).is_dir():
        files = sorted(glob.glob(os.path.join(glob.escape(text), "**", "*.parquet"),
                                 recursive=True))  # fmt: skip
        if not files:
            raise DataError(f"data directory {text!r} holds no .parquet file")
        text = os.path.join(text, "**", "*.parquet")
        suffix, gzipped = ".parquet", False
    elif _has_glob(text) and not Path(text).exists():
        suffix, gzipped = _split_suffix(text)
        if FILE_FORMATS.get(suffix) != "parquet" or gzipped:
            raise DataError(f"data pattern {text!r}: only Parquet files can be read by a glob "
                            "(e.g. dir/*.parquet)")  # fmt: skip
        if not glob.glob(text, recursive=True):
            raise DataError(f"data pattern {text!r} matches no file")
    else:
        path = Path(text)
        if not path.exists():
            raise DataError(f"data file {text!r} does not exist")
        if not os.access(path, os.R_OK):
            raise DataError(f"data file {text!r} is not readable")
        suffix, gzipped = _split_suffix(text)
    kind = FILE_FORMATS.get(suffix)
    if kind is None or (gzipped and kind not in _GZIP_FORMATS):
        raise DataError(f"data file {text!r} has an unsupported format (use {formats})")
    description = f"file {text!r}"
    if gzipped:
        check_gzip_stream(Path(text))
    if kind in ("json", "jsonl"):
        source = _JsonSource(text, gzipped, kind == "json")
        table = Table(connection, description, dict(schema), set(schema), source)
        table.unit_source = source
        table.source_files = SourceFiles(kind, (text,), gzipped)
        table._create_json_view()
        return table
    if kind in ("csv", "tsv"):
        delimiter = "\t" if kind == "tsv" else ","
        names = read_csv_header(Path(text), delimiter, gzipped)
        _check_schema_columns(schema, names, description)
        cast = {c: t for c, t in schema.items() if not has_text_rule(t)}  # TRY_CAST
        sql = _declared_text_view(csv_view_sql(text, gzipped, delimiter, names, cast), schema)
        connection.execute(f"CREATE TEMP VIEW data AS {sql}")
        columns = {name: schema.get(name, "VARCHAR") for name in names}
        table = Table(connection, description, columns, set(schema))
        table.source_files = SourceFiles(kind, (text,), gzipped)
        return table
    source_sql = parquet_sql(text)
    table = _typed_table(connection, source_sql, description, schema)
    # the files DuckDB's read_parquet reads (its own glob rules), from the paths alone
    listed = connection.execute("SELECT file FROM glob(?)", [text]).fetchall()
    files = [str(row[0]) for row in listed]
    if not schema:
        table.parquet_files = files
    table.source_files = SourceFiles("parquet", tuple(files))
    table.unit_source = ParquetUnits(files, schema, table.select_sql)
    table.arrow_types = parquet_scan_converted(files)
    return table


def parquet_sql(path: str) -> str:
    """The DuckDB reader of the Parquet files ``path`` (a path or glob): the only one there is.

    - ``can_have_nan = true``: DuckDB otherwise takes a file's float statistics (min/max, which
      never count NaN) as proof that a row group holds no NaN, and folds ``isnan`` or prunes a
      comparison by them, so a NaN row's fate would depend on the other rows of its row group
      (DuckDB issue 25521). With it, every row is judged on
      its own (:func:`dpselect.data.values.number_kept_sql`). DuckDB has it from 1.3.1 (the
      project's minimum).
    - ``utf8_validation = 'replace'``: text that is not valid UTF-8 is read with every invalid
      byte as "?", row by row (the default 'strict' raised in the score query, after the
      charge, on one such row; privacy audit 2026-11-22). :mod:`dpselect.data.dictionary_scores`
      reads the dictionaries by the same rule.
    - ``union_by_name = true``: files with their columns in other orders read as one table.
    """
    return (
        f"read_parquet({sql_string(path)}, union_by_name = true, "
        "utf8_validation = 'replace', can_have_nan = true)"
    )


def _declared_text_view(sql: str, types: dict[str, str]) -> str:
    """``sql`` (a SELECT of text columns: a CSV or JSON view) with every column whose type in
    ``types`` the text rule reads replaced by its value under the rule
    (:func:`dpselect.data.text_casts.declared_text_sql`, the rule the Spark engine applies too);
    ``sql`` itself when there is none. Row by row: each value is read on its own.

    Parameters
    ----------
    sql : str
        A SELECT whose columns named in ``types`` hold text.
    types : dict of str to str
        Column -> declared DuckDB type (undeclared columns: ``VARCHAR``, left as they are).

    Returns
    -------
    str
        The SELECT with the declared types applied.
    """
    ruled = [c for c, t in types.items() if has_text_rule(t) and t.upper() != "VARCHAR"]
    if not ruled:
        return sql
    replaced = ", ".join(
        f"{declared_text_sql(quote_identifier(c), types[c])} AS {quote_identifier(c)}"
        for c in ruled
    )
    return f"SELECT * REPLACE ({replaced}) FROM ({sql})"


def _check_schema_columns(schema: dict[str, str], names: Any, description: str) -> None:
    missing = [column for column in schema if column not in names]
    if missing:
        known = ", ".join(sorted(names)) or "none"
        raise DataError(
            f"schema names {missing[0]!r}, which is not a column of {description} "
            f"(columns: {known})"
        )


def _typed_table(
    connection: duckdb.DuckDBPyConnection, source_sql: str, description: str,
    schema: dict[str, str],
) -> Table:  # fmt: skip
    """The view ``data`` over a typed source (Parquet, a frame), the schema by ``TRY_CAST``."""
    try:
        described = connection.execute(f"DESCRIBE SELECT * FROM {source_sql}").fetchall()
    except duckdb.Error as exc:
        raise DataError(f"cannot read {description}: {_first_line(exc)}") from None
    names = [str(row[0]) for row in described]
    _check_schema_columns(schema, names, description)
    select = _select_sql(schema, {str(row[0]): str(row[1]) for row in described})
    connection.execute(f"CREATE TEMP VIEW data AS {select} FROM {source_sql}")
    if schema:  # the declared types: read back from the view
        described = connection.execute("DESCRIBE data").fetchall()
    columns = {str(row[0]): str(row[1]) for row in described}  # else the source's, as is
    table = Table(connection, description, columns, set(columns))
    table.select_sql = select
    return table


def _select_sql(schema: dict[str, str], source_types: dict[str, str]) -> str:
    """The projection of the view ``data`` over a typed source (``source_types``: its columns'
    own types): the declared types by ``TRY_CAST``, and a floating NaN read as NULL
    (:func:`dpselect.data.values.read_value_sql`)."""
    replaced = []
    for c, own in source_types.items():
        kind = schema.get(c, own)
        expr = f"TRY_CAST({quote_identifier(c)} AS {kind})" if c in schema else quote_identifier(c)
        if c in schema or is_floating(kind):
            replaced.append(f"{read_value_sql(expr, kind)} AS {quote_identifier(c)}")
    return f"SELECT * REPLACE ({', '.join(replaced)})" if replaced else "SELECT *"


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


#: DuckDB's ``threads`` set to 1 while at least one caller is inside
#: (:meth:`Table.query_numpy` with ``serial=True``; counted across callers).
_ONE_THREAD = HeldSetting("threads", lambda before: "1")


def _is_frame(obj: Any) -> bool:
    module = type(obj).__module__.split(".")[0]
    return module in _FRAME_MODULES


#: The name of the column of an unnamed pandas/polars Series or of a NumPy array.
VALUES_COLUMN = "value"


def _series_name(data: Any) -> tuple[str, bool] | None:
    """``(column name, named)`` when ``data`` is one column (a pandas or polars Series, a
    1-D NumPy array), else ``None``; a NumPy array of another shape is refused (public)."""
    module = type(data).__module__.split(".")[0]
    kind = type(data).__name__
    if module == "numpy" and kind == "ndarray":
        if data.ndim != 1 or data.dtype.names is not None:
            raise DataError(
                "data as a NumPy array must be 1-D, one column of values (a table: a pandas "
                f"DataFrame, or a path), got shape {data.shape}"
            )
        return VALUES_COLUMN, False
    if module in ("pandas", "polars") and kind == "Series":
        name = data.name
        if isinstance(name, str) and name:
            return name, True
        return VALUES_COLUMN, False
    return None


def _series_table(data: Any, name: str) -> Any:
    """A one-column source as a frame of that column (its dtype kept: a public fact)."""
    if type(data).__module__.split(".")[0] == "polars":
        return data.rename(name).to_frame()
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is optional; pyarrow is not
        import pyarrow as pa

        return pa.table({name: data})
    if isinstance(data, pd.Series):
        return data.rename(name).to_frame().reset_index(drop=True)
    return pd.DataFrame({name: data})


def one_column(data: Any, column: Any, argument: str = "column") -> tuple[Any, Any]:
    """``(data, column)`` as the recipes read them: a pandas or polars Series or a 1-D NumPy
    array is one column, turned into a one-column table; ``column`` is then ``None`` or the
    Series' name. Other data is returned unchanged (:func:`open_table` checks it).

    Parameters
    ----------
    data : object
        What the user passed as the data.
    column : str or None
        The column argument; for one column of values, ``None`` (or the Series' name).
    argument : str
        The column argument's name in error messages.

    Returns
    -------
    tuple
        The data to open and the column name to use.

    Raises
    ------
    DataError
        ``column`` names another column than the Series' (public facts only).
    """
    found = _series_name(data)
    if found is None:
        return data, column
    name, named = found
    if column is None or (named and column == name):
        return _series_table(data, name), name
    what = f"a {type(data).__module__.split('.')[0]} Series named {name!r}" if named else (
        "a NumPy array" if type(data).__name__ == "ndarray" else "an unnamed Series"
    )  # fmt: skip
    allowed = f"None or {name!r}" if named else "None"
    raise DataError(
        f"{argument} {column!r} does not name the data: {what} is one column of values "
        f"(pass {argument}={allowed})"
    )


def _relation_table(data: Any) -> Any:
    """A DuckDB relation as an Arrow table: its columns and types are the relation's own
    (public: its schema); its query runs once, here, as the caller's own ``.arrow()`` would."""
    read = getattr(data, "to_arrow_table", None) or data.arrow
    try:
        table = read()
    except duckdb.Error as exc:
        raise DataError(f"cannot read the DuckDB relation: {_first_line(exc)}") from None
    return table.read_all() if hasattr(table, "read_all") else table


def open_table(data: Any, schema: Any = None) -> Engine:
    """Open ``data`` with the engine that holds it (:class:`~dpselect.data.engine.Engine`):
    a Spark frame on Spark (:mod:`dpselect.data.engines.spark`), everything else on DuckDB
    (a :class:`Table`). ``data``: a path (CSV, TSV, JSON lines, JSON, their ``.gz``; Parquet,
    a Parquet glob or directory), a pandas/polars/pyarrow table, a DuckDB relation, or one column of
    values (a pandas or polars Series, a 1-D NumPy array: :func:`one_column`, the column
    named by the Series' name, else ``"value"``).

    ``schema``: ``{column: type}`` declared types (:mod:`dpselect.data.schema`): CSV, TSV and
    JSON text read by :func:`dpselect.data.text_casts.declared_text_sql` (other types, and typed
    sources, by ``TRY_CAST``). Raises :class:`DataError` for a missing or unreadable file, an
    unsupported format or object, a header that does not parse, a schema column that does not
    exist, and :class:`~dpselect.core.errors.ParameterError` for a malformed schema: all public
    facts. A table already opened (by this function; :class:`dpselect.Session` opens its data
    once) is returned as it is: its schema was declared when it was opened.
    """
    if is_opened_table(data):
        opened: Engine = data
        return opened
    if type(data).__module__.split(".")[0] == "pyspark":  # the Spark engine (its own module)
        from .engines.spark import is_spark_frame, open_spark_table

        if is_spark_frame(data):
            return open_spark_table(data, schema)
    declared = parse_schema(schema)
    connection = _database().cursor()  # its own session: views and frames stay private to it
    # pandas object columns are text, whatever their values look like (module docstring).
    connection.execute("SET SESSION pandas_analyze_sample = 0")
    if isinstance(data, (str, os.PathLike)):
        return _open_file(data, connection, declared)
    description = None
    if isinstance(data, duckdb.DuckDBPyRelation):
        data, description = _relation_table(data), "the DuckDB relation"
    found = _series_name(data)
    if found is not None:
        data = _series_table(data, found[0])
    if _is_frame(data):
        module = type(data).__module__.split(".")[0]
        description = description or f"the {module} table"
        try:  # a polars type Arrow cannot hold (Int128): the schema, public
            registered, source_sql = utf8_safe_frame(data), FRAME_VIEW
        except Exception as exc:  # pyarrow's or polars' own errors
            raise DataError(f"cannot read {description}: {_first_line(exc)}") from None
        if module == "pandas":
            registered = utf8_safe_pandas(registered)
        else:
            registered, source_sql = utf8_safe_arrow(registered)
        try:  # a column type DuckDB cannot scan (Arrow float16, decimal256): public
            connection.register(FRAME_VIEW, registered)
        except duckdb.Error as exc:
            raise DataError(f"cannot read {description}: {_first_line(exc)}") from None
        table = _typed_table(connection, source_sql, description, declared)
        table.unit_source = FrameUnits(data, source_sql, table.select_sql, declared)
        arrow = frame_arrow_types(data)  # a declared column is read by TRY_CAST instead
        table.arrow_types = {c: t for c, t in arrow.items() if c not in declared}
        table.arrow_types.update(pandas_scan_converted(data))
        table.arrow_types.update(scan_dated(data))
        table.float_columns = float64_columns(data, declared)
        return table
    hint = (
        " (a list of values: pass pandas.Series(values) or numpy.array(values))"
        if isinstance(data, (list, tuple))
        else ""
    )
    raise DataError(
        "data must be a path to a CSV, TSV, JSON lines, JSON or Parquet file, a pandas, "
        "polars or pyarrow table, a DuckDB relation, or one column (a pandas Series, a 1-D "
        f"NumPy array), got {type(data).__name__}{hint}"
    )
