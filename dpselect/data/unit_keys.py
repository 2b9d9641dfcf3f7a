"""Privacy-unit keys: one person is one key, and two people are never one.

The guarantee of a privacy unit (``privacy_unit="user_id"``) covers everything one *unit* holds,
so the function from the raw unit value to the key that rows are grouped by must be
**injective**: two distinct raw values that became one key would be bounded as one person,
and removing one of them could then lower one score and raise another (not monotone, L1 up to
``2m``: the audit measured a loss of 1.36 where epsilon = 1 was claimed). Text repair that is
fine for a *ranked* value (each row still counts toward one value) is therefore never applied
to a unit. The rule, per source (docs/contribution_bounding.md, "The unit key"):

- **Typed columns** (integers, floats, decimals, dates, timestamps, booleans, blobs) are
  grouped by value, as the engine holds them; floats normalised (``-0.0`` is ``0.0``; NaN is
  no unit).
- **Text** is grouped by its **raw bytes**. A Parquet file, an Arrow table or a polars frame
  may hold text that is not valid UTF-8: the key is the bytes as stored (DuckDB's Parquet
  reader would replace each invalid byte by ``?``, so text units of Parquet files are read
  through pyarrow, which keeps the bytes). CSV and JSON lines that are not UTF-8 are no rows
  (:mod:`dpselect.data.text_lines`), so their text is valid.
- **Python objects** (a pandas ``object`` or ``string[python]`` column, the categories of a
  categorical): :func:`object_unit_key`. A ``str`` is its UTF-8 bytes, lone surrogates encoded
  as themselves (``surrogatepass``: three bytes ``ED xx xx`` that no valid UTF-8 text holds);
  every other object is the byte ``FF`` (never in the encoding of a ``str``), a type tag and an
  injective encoding of the value in that type. So ``1``, ``1.0``, ``True`` and ``"1"`` are
  four units, ``("a", 1)`` and ``"('a', 1)"`` two. An object of a type without such an
  encoding is no unit (its rows count for nobody), by a rule that reads that row alone.

Valid text keeps the very bytes it had, so its seed (md5 of salt, ``u``, the bytes) is the one
of :func:`dpselect.data.scores.unit_seed` and of the Spark engine: answers on valid data are
unchanged, and DuckDB and Spark stay bit-identical on text that is not valid UTF-8 too (Spark
hashes a string's bytes).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
import uuid
from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from .join_order import is_text_source, text_join_order, written_join_order
from .values import canonical_text

if TYPE_CHECKING:
    from .tables import Table

__all__ = [
    "RAW_KEY_TYPE",
    "FrameUnits",
    "ParquetUnits",
    "arrow_unit_keys",
    "object_unit_key",
    "object_unit_keys",
    "unit_join_order",
    "value_rows",
]

#: The type name a raw unit key column has in the unit SQL (a DuckDB BLOB whose seed is the md5
#: of its bytes, not of its hex text as for a BLOB column's own values).
RAW_KEY_TYPE = "RAW UNIT KEY"

_TAG = b"\xff"  # never a byte of a str's surrogatepass UTF-8 encoding


def _length_prefixed(part: bytes) -> bytes:
    return len(part).to_bytes(8, "little") + part


def object_unit_key(value: Any) -> bytes | None:
    """The unit key of one Python object, or ``None`` for no unit (module docstring).

    Injective on the values it keys: a ``str`` is its ``surrogatepass`` UTF-8 bytes (no byte
    ``FF``); anything else starts with ``FF`` and a tag byte that names its type, followed by
    an encoding that is injective in that type (decimal digits for integers, the exact
    significand and exponent for floats, the bytes themselves, ISO text, length-prefixed keys
    of a tuple's items). Missing values (``None``, NaN, ``pd.NA``, ``NaT``) and objects of any
    other type give ``None``. Never raises.

    Parameters
    ----------
    value : object
        One row's privacy unit value, as Python holds it.

    Returns
    -------
    bytes or None
        The unit's key, or ``None`` when the row has no unit (its rows count for nobody).
    """
    try:
        return _key(value)
    except Exception:  # an object whose conversion raises is no unit (a rule of its row)
        return None


def _key(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _TAG + b"y" + bytes(value)
    kind = type(value).__module__.split(".")[0]
    if kind == "numpy":
        import numpy as np

        # times first: np.timedelta64 is an np.integer too
        if isinstance(value, (np.datetime64, np.timedelta64)):
            if np.isnat(value):
                return None
            unit, multiple = np.datetime_data(value.dtype)
            tag = b"M" if isinstance(value, np.datetime64) else b"m"
            # the count of units of ``multiple`` base units (datetime64[3M]): both in the key
            step = "" if multiple == 1 else f"x{multiple}"
            return _TAG + tag + f"{value.astype(np.int64)}{unit}{step}".encode()
        if isinstance(value, np.bool_):
            value = bool(value)
        elif isinstance(value, np.integer):
            value = int(value)
        elif isinstance(value, np.floating):
            wide = value
            value = float(wide)
            if not math.isnan(value) and value != wide:  # a long double float64 cannot hold
                numerator, denominator = wide.as_integer_ratio()  # exact
                return _TAG + b"q" + f"{numerator}/{denominator}".encode()
    if isinstance(value, bool):
        return _TAG + (b"b1" if value else b"b0")
    if isinstance(value, int):  # int's own digits: a subclass's str() may be anything
        return _TAG + b"i" + int.__repr__(value).encode()
    if isinstance(value, float):
        if math.isnan(value):
            return None
        return _TAG + b"f" + canonical_text(value).encode()
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            return None if value.is_nan() else _TAG + b"d" + str(value).encode()
        return _TAG + b"d" + _decimal_text(value).encode()
    if kind == "pandas":
        import pandas as pd

        if value is pd.NA or value is pd.NaT:
            return None
        if isinstance(value, pd.Timestamp):
            if value.tzinfo is None:
                return _TAG + b"tn" + str(value.value).encode()
            return _TAG + b"ta" + str(value.value).encode()  # .value: ns since epoch, UTC
        if isinstance(value, pd.Timedelta):
            return _TAG + b"m" + f"{value.value}ns".encode()
        return None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            return _TAG + b"Tn" + value.isoformat().encode()
        return _TAG + b"Ta" + value.astimezone(dt.timezone.utc).isoformat().encode()
    if isinstance(value, dt.date):
        return _TAG + b"D" + value.isoformat().encode()
    if isinstance(value, dt.time):
        return _TAG + b"h" + value.isoformat().encode() + _TAG + str(value.utcoffset()).encode()
    if isinstance(value, dt.timedelta):
        return _TAG + b"e" + repr((value.days, value.seconds, value.microseconds)).encode()
    if isinstance(value, uuid.UUID):
        return _TAG + b"U" + value.bytes
    if isinstance(value, tuple):
        parts = [_key(item) for item in value]
        if any(part is None for part in parts):
            return None  # a missing or unkeyed item: the tuple keys nobody
        return _TAG + b"(" + b"".join(_length_prefixed(p) for p in parts if p is not None)
    return None


def _decimal_text(value: decimal.Decimal) -> str:
    """A finite decimal as ``[-]DIGITSeEXP``, its digits without trailing zeros (``0`` for
    zero): one text per value, every digit kept. Read from ``as_tuple()``, not by
    ``normalize()``, which rounds to the context's precision (28 digits by default: two
    38-digit ids were one unit; privacy audit 2026-11-26), and never written out in plain
    notation (``1E-999999`` would be a million characters)."""
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)  # finite
    text = "".join(map(str, digits)).lstrip("0")
    if not text:
        return "0"  # zero, whatever its sign and exponent: equal values are one unit
    stripped = text.rstrip("0")
    return f"{'-' if sign else ''}{stripped}e{exponent + len(text) - len(stripped)}"


def object_unit_keys(values: Iterable[Any]) -> Any:
    """The keys of a sequence of Python objects as a pyarrow ``binary`` array (nulls: no unit).

    A column of plain valid ``str`` (and missing values) is converted in C by pyarrow (the same
    bytes :func:`object_unit_key` gives); any other column value by value.

    Parameters
    ----------
    values : iterable
        The privacy unit value of each row, in order (e.g. a pandas ``object`` column as a
        NumPy array).

    Returns
    -------
    pyarrow.Array
        A ``binary`` array of the keys, one per value, null where a row has no unit.
    """
    import pyarrow as pa

    values = list(values) if not hasattr(values, "__len__") else values
    try:  # inferred, not cast: a cast to text would take bytes and numbers as text
        text = pa.array(values, from_pandas=True)
    except Exception:  # mixed types or a lone surrogate: value by value
        text = None
    if text is not None and pa.types.is_string(text.type):
        return text.view(pa.binary())
    if text is not None and pa.types.is_large_string(text.type):
        return text.view(pa.large_binary()).cast(pa.binary())
    return pa.array([object_unit_key(value) for value in values], type=pa.binary())


def arrow_unit_keys(array: Any) -> Any | None:
    """The raw-byte keys of an Arrow text column (string, large or view; a dictionary of
    them), as a binary array of the same length; ``None`` for any other type (the column is
    grouped by value as it is). Never validates or repairs the bytes: that is the point.

    Parameters
    ----------
    array : pyarrow.Array or pyarrow.ChunkedArray
        The unit column as Arrow holds it.

    Returns
    -------
    pyarrow.Array or pyarrow.ChunkedArray or None
        The same bytes viewed as ``binary`` (``large_binary`` for large or view strings;
        chunked for a chunked input), nulls kept; ``None`` when the column is not text.
    """
    import pyarrow as pa
    import pyarrow.types as pt

    if isinstance(array, pa.ChunkedArray):
        chunks = [arrow_unit_keys(chunk) for chunk in array.chunks]
        if not array.chunks:
            return pa.array([], type=pa.binary()) if _is_text(array.type) else None
        present = [chunk for chunk in chunks if chunk is not None]
        if len(present) != len(chunks):
            return None
        return pa.chunked_array(present, type=present[0].type)
    kind = array.type
    if pt.is_dictionary(kind):
        if not _is_text(kind.value_type):
            return None
        return arrow_unit_keys(array.dictionary_decode())
    if pt.is_string(kind):
        return array.view(pa.binary())
    if pt.is_large_string(kind):
        return array.view(pa.large_binary())
    if hasattr(pt, "is_string_view") and pt.is_string_view(kind):
        return array.view(pa.binary_view()).cast(pa.large_binary())
    return None


def _is_text(kind: Any) -> bool:
    import pyarrow.types as pt

    return bool(
        pt.is_string(kind)
        or pt.is_large_string(kind)
        or (hasattr(pt, "is_string_view") and pt.is_string_view(kind))
    )


# ----------------------------------------------------------------------------------------
# Sources: where a table's raw unit keys come from
# ----------------------------------------------------------------------------------------


def _hidden_name(table: Table, column: str) -> str:
    name = f"dpselect unit key {column}"
    while name in table.columns:
        name += "'"
    return name


def _text_type(kind: str) -> bool:
    t = kind.upper()
    return t in ("VARCHAR", "STRING", "TEXT") or t.startswith("VARCHAR")


class FrameUnits:
    """Raw unit keys of an in-memory frame: pandas, pyarrow or polars.

    ``original``: the frame as the user passed it (before any text repair); ``source``: the SQL
    of its rows as DuckDB reads them, and ``select`` the projection of the view ``data`` over
    them; ``declared``: the declared schema (a declared column is its declared value, not its
    raw one). The keys are a table of their own, joined by position (``POSITIONAL JOIN``:
    both are in-memory tables of the same rows in the same order), so the frame is never
    converted (DuckDB's conversion of a pandas frame with an Arrow column converts every
    column through pyarrow, which refuses mixed-type objects).
    """

    _KEYS = "dpselect_unit_keys"

    def __init__(self, original: Any, source: str, select: str, declared: dict[str, str]) -> None:
        self.original, self.source, self.select, self.declared = original, source, select, declared
        self.keys: Any = None

    def key_column(
        self, table: Table, column: str, kind: str, argument: str
    ) -> tuple[str, str] | None:
        """The hidden column of raw-byte keys for the unit ``column``, added to the view
        ``data`` (by position), or ``None`` where the column keys units as it is.

        Parameters
        ----------
        table : Table
            The table over this frame; its view ``data`` is replaced by one with the hidden
            column (every key column asked for so far).
        column : str
            The privacy unit column.
        kind, argument : str
            The column's DuckDB type and the argument's name (unused here: a frame's keys
            are always readable).

        Returns
        -------
        tuple of (str, str) or None
            ``(hidden column, RAW_KEY_TYPE)`` for a text or object column; ``None`` for a
            declared or typed column (grouped by value).
        """
        import pyarrow as pa

        if column in self.declared:
            return None  # the declared type's value (TRY_CAST) is the unit, by the user's word
        # DuckDB names a frame's columns in order (a repeated name gets a suffix: 1 and "1"
        # read as "1" and "1_1"), so the view's position is the frame's
        keys = self._keys(list(table.columns).index(column))
        if keys is None:
            return None  # a typed column: grouped by value
        hidden = _hidden_name(table, column)
        if isinstance(keys, pa.ChunkedArray):
            keys = keys.combine_chunks()
        if self.keys is None:
            self.keys = pa.table({hidden: keys})
        else:
            self.keys = self.keys.append_column(hidden, keys)
        connection = table.connection
        connection.register(self._KEYS, self.keys)
        rows = f"(SELECT * FROM {self.source} POSITIONAL JOIN {self._KEYS})"
        connection.execute(f"CREATE OR REPLACE TEMP VIEW data AS {self.select} FROM {rows}")
        return hidden, RAW_KEY_TYPE

    def _keys(self, position: int) -> Any | None:
        import pyarrow as pa

        frame = self.original
        module = type(frame).__module__.split(".")[0]
        if module == "pyarrow":
            return arrow_unit_keys(frame.column(position))
        if module == "polars":
            return arrow_unit_keys(frame.to_series(position).to_arrow())

        series = frame.iloc[:, position]
        dtype = series.dtype
        name = type(dtype).__name__
        if name == "CategoricalDtype":
            categories = series.cat.categories
            keys = self._pandas_keys(pd_series=categories.to_series(index=None))
            if keys is None:
                return None  # typed categories (ints, dates): grouped by value
            import pyarrow.compute as pc

            codes = pa.array(series.cat.codes.to_numpy(), type=pa.int64())
            codes = pc.if_else(pc.less(codes, 0), pa.scalar(None, pa.int64()), codes)
            return keys.take(codes)
        return self._pandas_keys(series)

    @staticmethod
    def _pandas_keys(pd_series: Any) -> Any | None:
        import numpy as np
        import pyarrow as pa

        dtype = pd_series.dtype
        name = type(dtype).__name__
        if isinstance(dtype, np.dtype) and dtype.kind == "O":
            return object_unit_keys(pd_series.to_numpy(dtype=object))
        if name == "StringDtype":
            if getattr(dtype, "storage", "") == "python":
                return object_unit_keys(pd_series.to_numpy(dtype=object))
            return arrow_unit_keys(pa.array(pd_series))
        if name == "ArrowDtype":
            return arrow_unit_keys(pa.array(pd_series))
        return None


class ParquetUnits:
    """Raw unit keys of Parquet files: DuckDB's reader repairs text that is not valid UTF-8
    (each invalid byte ``?``), so a text unit is read through a pyarrow dataset of the same
    files, which keeps the bytes; the other text columns are repaired by the same rule as
    DuckDB's (``decode(blob, 'replace')``), so the view is the same but for the hidden keys.
    Refused (from the files' schemas, before any charge) where the dataset's columns would not
    be DuckDB's (schemas pyarrow cannot unify, hive partition columns)."""

    _VIEW = "dpselect_parquet_raw"
    #: DuckDB's own reader of the files, as the view ``data`` was before the hidden keys:
    #: the same rows and columns (:func:`value_rows`).
    NATIVE_VIEW = "dpselect_parquet_rows"

    def __init__(self, files: list[str], declared: dict[str, str], select: str) -> None:
        self.files, self.declared, self.select = files, declared, select

    def key_column(
        self, table: Table, column: str, kind: str, argument: str
    ) -> tuple[str, str] | None:
        """The hidden column of raw-byte keys for the text unit ``column``, read through a
        pyarrow dataset of the files, or ``None`` where the column keys units as it is.

        Parameters
        ----------
        table : Table
            The table over these files; for a text unit its view ``data`` is replaced by one
            reading the dataset, with the hidden column.
        column : str
            The privacy unit column.
        kind : str
            The column's DuckDB type.
        argument : str
            The argument's name in errors (``"privacy_unit"``).

        Returns
        -------
        tuple of (str, str) or None
            ``(hidden column, RAW_KEY_TYPE)`` for a text column; ``None`` for a typed
            column, or one declared as a type other than text (grouped by value).

        Raises
        ------
        DataError
            A Parquet type DuckDB reads with a loss (a decimal over 38 digits, INT96), or a
            text column whose bytes cannot be read apart (schemas that differ, hive columns).
        """
        import pyarrow as pa
        import pyarrow.dataset as ds
        import pyarrow.parquet as pq

        from ..core.errors import DataError

        # whatever is declared: the declared cast reads DuckDB's value
        _refuse_lossy(self.files, table, column, kind, argument)
        if not _text_type(kind) or (column in self.declared and not _text_type(
            self.declared[column]
        )):  # fmt: skip
            return None
        refusal = DataError(
            f"{argument} {column!r} of {table.description}: its text cannot be read byte for "
            "byte (the files' schemas differ, or the columns come from the paths); declare "
            f"its type (schema={{{column!r}: 'BIGINT'}} or another type) or rewrite the files "
            "with one schema"
        )
        try:
            schema = pa.unify_schemas([pq.read_schema(path) for path in self.files])
        except (pa.ArrowInvalid, pa.ArrowTypeError, OSError, ValueError):
            raise refusal from None
        if column not in schema.names or not _arrow_text(schema.field(column).type):
            return None  # DuckDB's text of a typed value: injective already
        raw = pa.schema([field.with_type(_as_binary(field.type)) for field in schema])
        dataset = ds.dataset(self.files, schema=raw, format="parquet")
        hidden = _hidden_name(table, column)
        inner = _raw_rows_sql(schema, column, hidden, self._VIEW)
        table.connection.register(self._VIEW, dataset)
        try:
            described = table.connection.execute(f"DESCRIBE {self.select} FROM {inner}").fetchall()
        except Exception:
            raise refusal from None
        columns = {str(row[0]): str(row[1]) for row in described}
        if columns.pop(hidden, None) != "BLOB" or columns != table.columns:
            raise refusal
        self._keep_native_view(table.connection)
        table.connection.execute(f"CREATE OR REPLACE TEMP VIEW data AS {self.select} FROM {inner}")
        return hidden, RAW_KEY_TYPE

    def _keep_native_view(self, connection: Any) -> None:
        """The view ``data`` as DuckDB's Parquet reader gives it, kept as :attr:`NATIVE_VIEW`
        before ``data`` reads the dataset (once: a second text unit replaces ``data`` again)."""
        if connection.execute(
            "SELECT count(*) FROM duckdb_views() WHERE temporary AND view_name = ?",
            [self.NATIVE_VIEW],
        ).fetchall()[0][0]:
            return
        found = connection.execute(
            "SELECT sql FROM duckdb_views() WHERE temporary AND view_name = 'data'"
        ).fetchall()
        sql = str(found[0][0]).rstrip().rstrip(";") if found else ""
        head = re.match(r'CREATE TEMP(?:ORARY)? VIEW "?data"? AS ', sql)
        if head is not None:  # else value_rows reads data, the dataset's rows (slower, same)
            connection.execute(f"CREATE TEMP VIEW {self.NATIVE_VIEW} AS {sql[head.end() :]}")


def value_rows(table: Table) -> str:
    """The view of ``table``'s rows to read where no unit key is needed (the distinct values
    of a column): ``data``, or DuckDB's own reader of Parquet files where ``data`` reads them
    through a pyarrow dataset for a text unit's raw bytes (:class:`ParquetUnits`). The two
    hold the same rows with the same values in every column of ``table.columns`` (the text
    repaired by the same rule, checked by ``DESCRIBE`` before ``data`` is replaced); the
    native reader is the faster scan (docs/performance.md, "Text unit ids").

    Parameters
    ----------
    table : Table
        The DuckDB table.

    Returns
    -------
    str
        The name of a view to read as ``data`` is read, but for the hidden unit keys.
    """
    found = table.connection.execute(
        "SELECT count(*) FROM duckdb_views() WHERE temporary AND view_name = ?",
        [ParquetUnits.NATIVE_VIEW],
    ).fetchall()
    units = getattr(table, "unit_source", None)
    if isinstance(units, ParquetUnits) and found[0][0]:
        return ParquetUnits.NATIVE_VIEW
    return "data"


def unit_join_order(table: Table, unit_type: str) -> AbstractContextManager[None]:
    """The join order of a bounding plan keyed by a unit of ``unit_type``: the joins as the
    SQL writes them (rows on the left, the candidates, values and seeds built on the right)
    for a text source (:func:`~.join_order.text_join_order`) and for a raw unit key of
    Parquet files (:class:`ParquetUnits`: the rows are a pyarrow dataset's, whose scan gives
    DuckDB's optimizer no row count, and its own order would build the hash table on the
    5 * 10^6 rows rather than on the 10^5 values: docs/performance.md, "Text unit ids").
    Public facts only (the source's format and the unit column's type); it changes how a
    query is planned, never a result.

    Parameters
    ----------
    table : Table
        The DuckDB table the plan reads.
    unit_type : str
        The unit's type in the unit SQL (:meth:`~.tables.Table.unit_column`).

    Returns
    -------
    contextlib.AbstractContextManager
        A context manager to run the plan's queries in.
    """
    files = getattr(table, "source_files", None)
    parquet = files is not None and files.kind == "parquet"
    if unit_type == RAW_KEY_TYPE and parquet and not is_text_source(table):
        return written_join_order(table.connection)
    return text_join_order(table)


def _refuse_lossy(files: list[str], table: Table, column: str, kind: str, argument: str) -> None:
    """Refuse a unit ``column`` whose Parquet type DuckDB reads with a loss
    (:func:`_lossy_parquet_type`): distinct values would be one unit."""
    from ..core.errors import DataError

    lossy = _lossy_parquet_type(files, column)
    if lossy is not None:
        raise DataError(
            f"{argument} {column!r} of {table.description}: its Parquet type {lossy} is "
            f"read as {kind}, which makes distinct values one (two people one unit); store "
            "it as text, an integer or a decimal of at most 38 digits"
        )


def _raw_rows_sql(schema: Any, column: str, hidden: str, view: str) -> str:
    """The rows of the raw-bytes ``view`` as DuckDB would read the files (every text column
    repaired by ``decode(blob, 'replace')``), with ``column``'s raw bytes as ``hidden``."""
    from .text_lines import quote_identifier

    repaired = ", ".join(
        f"decode({quote_identifier(f.name)}, 'replace') AS {quote_identifier(f.name)}"
        for f in schema
        if _arrow_text(f.type)
    )
    return (
        f"(SELECT * REPLACE ({repaired}), {quote_identifier(column)} AS "
        f"{quote_identifier(hidden)} FROM {view})"
    )


def _lossy_parquet_type(files: list[str], column: str) -> str | None:
    """The Parquet type of ``column`` in ``files`` (their footers: the schema) where DuckDB
    reads it with a loss, else None: a decimal of more than 38 digits (read as DOUBLE), an
    INT96 timestamp (nanoseconds, read as microseconds). Distinct values then read as one,
    so it cannot key a unit (privacy audit 2026-11-26). A footer that cannot be read adds
    nothing here (DuckDB read it already)."""
    import pyarrow.parquet as pq
    import pyarrow.types as pt

    for path in files:
        try:
            metadata = pq.read_metadata(path)
        except (OSError, ValueError):  # pragma: no cover - DuckDB read it
            continue
        arrow = metadata.schema.to_arrow_schema()
        if column not in arrow.names:
            continue
        kind = arrow.field(column).type
        if pt.is_decimal(kind) and kind.precision > 38:
            return str(kind)
        names = [metadata.schema.column(i).path for i in range(metadata.num_columns)]
        if column in names and metadata.schema.column(names.index(column)).physical_type == (
            "INT96"
        ):  # fmt: skip
            return "INT96 timestamp"
    return None


def _arrow_text(kind: Any) -> bool:
    import pyarrow.types as pt

    if pt.is_dictionary(kind):
        return _is_text(kind.value_type)
    return _is_text(kind)


def _as_binary(kind: Any) -> Any:
    import pyarrow as pa
    import pyarrow.types as pt

    if pt.is_dictionary(kind):
        kind = kind.value_type
    if pt.is_large_string(kind):
        return pa.large_binary()
    if _is_text(kind):
        return pa.binary()
    return kind
