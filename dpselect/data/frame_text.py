"""The text of an in-memory frame as DuckDB can read it, row by row, never raising.

DuckDB raises in the score query, after the charge, on one row whose text it cannot
convert: a pandas ``str`` holding a lone surrogate, or Arrow text whose bytes are not valid
UTF-8. Here such text is repaired before the frame is
registered: each character UTF-8 cannot encode, and each invalid byte, becomes ``?`` (the
rule of DuckDB's own Parquet reader); valid text is passed as it is.
"""

from __future__ import annotations

from typing import Any

import duckdb

from .text_lines import quote_identifier

__all__ = ["FRAME_VIEW", "utf8_safe_arrow", "utf8_safe_frame", "utf8_safe_pandas"]

#: The name under which a frame is registered on its DuckDB cursor.
FRAME_VIEW = "dpselect_frame"


def _utf8_safe_text(value: Any) -> Any:
    """One value of a pandas object column as DuckDB can read it: a ``str`` as is, with every
    character that UTF-8 cannot encode (a lone surrogate) as ``?``; numbers, bytes and missing
    values as they are (DuckDB converts them); any other object as its ``str()`` by the same
    rule, missing when ``str()`` raises. Row by row, never raising."""
    if isinstance(value, str):
        if value.isascii():
            return value
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-8", "replace").decode("utf-8")
    if value is None or isinstance(value, (bool, int, float, bytes)):
        return value
    try:
        text = str(value)
    except Exception:
        return None
    return _utf8_safe_text(text)


def utf8_safe_pandas(frame: Any) -> Any:
    """``frame`` with its object columns mapped by :func:`_utf8_safe_text` (a copy; other
    columns shared). DuckDB's conversion of a str holding a lone surrogate (``os.fsdecode``,
    ``errors="surrogateescape"``) raised in the score query, after the charge, on that one
    row (privacy audit 2026-11-22).

    Parameters
    ----------
    frame : pandas.DataFrame
        The frame as the user passed it.

    Returns
    -------
    pandas.DataFrame
        The frame to register (``frame`` itself when no column needs the map).
    """
    import numpy as np

    objects = [  # columns of Python objects: NumPy object, and pandas' string[python]
        i
        for i, dtype in enumerate(frame.dtypes)
        if (isinstance(dtype, np.dtype) and dtype.kind == "O")
        or (type(dtype).__name__ == "StringDtype" and getattr(dtype, "storage", "") == "python")
    ]
    if not objects:
        return frame
    out = frame.copy(deep=False)
    for i in objects:
        if _plain_utf8_text(frame.iloc[:, i]):
            continue  # the map would be the identity
        column = frame.iloc[:, i].map(_utf8_safe_text, na_action="ignore").astype(object)
        out.isetitem(i, column)
    return out


def _plain_utf8_text(column: Any) -> bool:
    """Whether every value is a UTF-8-encodable str or missing (pyarrow's conversion, in C:
    about 10x faster than the Python map, which it makes unnecessary when it succeeds)."""
    try:
        import pyarrow as pa

        pa.array(column, type=pa.string(), from_pandas=True)
    except Exception:  # not installed, a non-str value, or a lone surrogate: map it
        return False
    return True


def _repaired_text(array: Any) -> Any | None:
    """An Arrow text array (string, large string, or a dictionary of them) whose bytes are not
    all valid UTF-8, with each invalid byte read as ``?`` (DuckDB's ``decode(b, 'replace')``,
    the rule of its Parquet reader), value by value; ``None`` when it is valid (or not text).
    DuckDB raised "Invalid unicode" on such text in the score query, after the charge."""
    import pyarrow as pa

    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    kind = array.type
    if pa.types.is_dictionary(kind):
        fixed = _repaired_text(array.dictionary)
        if fixed is None:
            return None
        return pa.DictionaryArray.from_arrays(array.indices, fixed)
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        return None
    try:
        array.validate(full=True)
        return None
    except pa.ArrowInvalid:
        pass
    binary = pa.large_binary() if pa.types.is_large_string(kind) else pa.binary()
    connection = duckdb.connect(":memory:")
    try:
        connection.register("raw", pa.table({"b": array.view(binary)}))
        relation = connection.sql("SELECT decode(b, 'replace') AS s FROM raw")
        fixed = (getattr(relation, "to_arrow_table", None) or relation.arrow)()
    finally:
        connection.close()
    return fixed.column(0).combine_chunks().cast(kind)


def utf8_safe_frame(frame: Any) -> Any:
    """A polars frame as an Arrow table (DuckDB reads it so), and a pandas frame with its
    Arrow-backed text columns (the default ``str`` of pandas 3, ``string[pyarrow]``,
    ``ArrowDtype``) holding bytes that are not valid UTF-8 repaired by :func:`_repaired_text`
    (a copy; other columns shared). Unchanged when every column is valid.

    Parameters
    ----------
    frame : pandas, polars or pyarrow table
        The frame as the user passed it.

    Returns
    -------
    object
        The frame to register (``frame`` itself when unchanged).
    """
    module = type(frame).__module__.split(".")[0]
    if module == "polars":
        return frame.to_arrow()
    if module != "pandas":
        return frame
    import pandas as pd
    import pyarrow as pa

    out = None
    for i, dtype in enumerate(frame.dtypes):
        name = type(dtype).__name__
        arrow_backed = (name == "StringDtype" and getattr(dtype, "storage", "") == "pyarrow") or (
            name == "ArrowDtype"
        )
        if not arrow_backed:
            continue
        try:
            fixed = _repaired_text(pa.array(frame.iloc[:, i]))
        except Exception:  # not text, or not convertible: left to DuckDB's own reading
            fixed = None
        if fixed is None:
            continue
        out = frame.copy(deep=False) if out is None else out
        out.isetitem(i, pd.Series(pd.arrays.ArrowExtensionArray(fixed), index=frame.index))
    return frame if out is None else out


def utf8_safe_arrow(table: Any) -> tuple[Any, str]:
    """A pyarrow table as DuckDB can read it, and the SQL of its rows: a text column holding
    bytes that are not valid UTF-8 is passed as binary and read by ``decode(b, 'replace')``
    (each invalid byte ``?``: the rule of DuckDB's Parquet reader), row by row; DuckDB's
    conversion of such text raises in the score query, after the charge, on that one row.
    Valid columns are passed as they are (the same text either way).

    Parameters
    ----------
    table : object
        The frame to register (a pyarrow table is repaired; anything else is returned as is).

    Returns
    -------
    tuple
        The table to register and the SQL of its rows (:data:`FRAME_VIEW`, or a projection
        decoding the repaired columns).
    """
    import pyarrow as pa

    if not isinstance(table, pa.Table):
        return table, FRAME_VIEW
    repaired: list[str] = []
    for i, field_ in enumerate(table.schema):
        kind = field_.type
        if pa.types.is_dictionary(kind):  # small: the dictionary itself repaired
            fixed = _repaired_text(table.column(i))
            if fixed is not None:
                table = table.set_column(i, field_.with_type(fixed.type), fixed)
            continue
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            continue
        try:
            table.column(i).validate(full=True)
        except pa.ArrowInvalid:
            binary = pa.large_binary() if pa.types.is_large_string(kind) else pa.binary()
            column = pa.chunked_array(
                [chunk.view(binary) for chunk in table.column(i).chunks], type=binary
            )
            table = table.set_column(i, field_.with_type(binary), column)
            repaired.append(field_.name)
    if not repaired:
        return table, FRAME_VIEW
    decoded = ", ".join(
        f"decode({quote_identifier(c)}, 'replace') AS {quote_identifier(c)}" for c in repaired
    )
    return table, f"(SELECT * REPLACE ({decoded}) FROM {FRAME_VIEW})"
