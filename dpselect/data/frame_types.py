"""Public type facts of a data source that DuckDB's scan would otherwise hide.

DuckDB converts some column types while scanning, before any declared type applies
(timestamps in seconds, milliseconds or nanoseconds to microseconds; Arrow ``date64`` to a
``DATE``). These functions read, from the source's metadata alone (dtypes, Arrow schemas,
Parquet footers; never a row), which columns are so converted, so that the column gate can
refuse them where a conversion could merge or drop values; and which pandas columns are
NumPy float64 arrays, handed over as they are.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "float64_columns", "frame_arrow_types", "pandas_scan_converted", "parquet_scan_converted",
    "scan_dated",
]  # fmt: skip


def pandas_scan_converted(frame: Any) -> dict[str, str]:
    """A pandas frame's time-zoned timestamps in seconds, milliseconds or nanoseconds, as
    Arrow prints their type: DuckDB converts them to microseconds while scanning, before any
    declared type applies, so one value beyond that range raises in the query (seconds and
    milliseconds: the gate refuses them), and nanoseconds are truncated (two values 1 ns
    apart are one: the gate refuses them as a privacy unit).

    Parameters
    ----------
    frame : object
        The frame (only a pandas frame has such columns here).

    Returns
    -------
    dict
        ``{column: Arrow type}``.
    """
    if type(frame).__module__.split(".")[0] != "pandas":
        return {}
    out = {}
    for name, dtype in zip(frame.columns, frame.dtypes, strict=True):
        unit, zone = getattr(dtype, "unit", None), getattr(dtype, "tz", None)
        if unit in ("s", "ms", "ns") and zone is not None:
            out[str(name)] = f"timestamp[{unit}, tz={zone}]"
    return out


def scan_dated(frame: Any) -> dict[str, str]:
    """A frame's Arrow ``date64`` columns (a pyarrow table's, a pandas ``ArrowDtype``'s):
    milliseconds since the epoch, which DuckDB reads as a ``DATE``, dropping any time of day
    the values hold (the Arrow format asks for whole days but does not enforce it), before
    any declared type applies; two values of one day would be one privacy unit, so the gate
    refuses them as a unit (:func:`dpselect.data.column_roles.check_column_role`).

    Parameters
    ----------
    frame : object
        The frame (pyarrow or pandas; polars has none).

    Returns
    -------
    dict
        ``{column: Arrow type}``.
    """
    schema: Any = getattr(frame, "schema", None)
    if hasattr(schema, "names") and hasattr(schema, "types"):  # pyarrow
        pairs = [(n, str(t)) for n, t in zip(schema.names, schema.types, strict=True)]
    elif type(frame).__module__.split(".")[0] == "pandas":
        pairs = [
            (n, str(getattr(d, "pyarrow_dtype", "")))
            for n, d in zip(frame.columns, frame.dtypes, strict=True)
        ]
    else:  # polars: its Date is days (date32)
        return {}
    return {str(n): t for n, t in pairs if t.startswith("date64")}


def parquet_scan_converted(files: list[str]) -> dict[str, str]:
    """The Parquet columns stored as timestamps in milliseconds (or seconds), from the files'
    footers: DuckDB converts them to microseconds while scanning (before any declared type),
    and raises on a value beyond that range. A footer that cannot be read adds nothing here
    (DuckDB read it already).

    Parameters
    ----------
    files : list of str
        The Parquet files.

    Returns
    -------
    dict
        ``{column: Arrow type}``.
    """
    import pyarrow.parquet as pq
    import pyarrow.types as pt

    out: dict[str, str] = {}
    for path in files:
        try:
            schema = pq.read_schema(path)
        except (OSError, ValueError):  # pragma: no cover - DuckDB read it
            continue
        for fld in schema:
            if pt.is_timestamp(fld.type) and fld.type.unit in ("s", "ms"):
                out[fld.name] = str(fld.type)
    return out


def frame_arrow_types(frame: Any) -> dict[str, str]:
    """The Arrow types of a pyarrow or polars frame's columns (``{}`` for pandas).

    Parameters
    ----------
    frame : object
        The frame.

    Returns
    -------
    dict
        ``{column: Arrow type}``.
    """
    schema: Any = getattr(frame, "schema", None)
    if hasattr(schema, "names") and hasattr(schema, "types"):  # pyarrow
        return {str(n): str(t) for n, t in zip(schema.names, schema.types, strict=True)}
    if type(frame).__module__.split(".")[0] == "polars":
        out = {}
        for name, dtype in frame.schema.items():
            unit, zone = getattr(dtype, "time_unit", None), getattr(dtype, "time_zone", None)
            if unit is not None and zone is not None:  # Datetime: as Arrow prints it
                out[str(name)] = f"timestamp[{unit}, tz={zone}]"
        return out
    return {}


def float64_columns(frame: Any, declared: dict[str, str]) -> dict[str, Any]:
    """A pandas frame's columns of NumPy dtype float64 (not declared in a schema, names
    unique) as the NumPy arrays the frame holds: public facts (dtypes), nothing read.

    Parameters
    ----------
    frame : object
        The frame (only a pandas frame has such columns here).
    declared : dict
        The declared schema (a declared column is read by ``TRY_CAST`` instead).

    Returns
    -------
    dict
        ``{column: float64 array}``.
    """
    if type(frame).__module__.split(".")[0] != "pandas":
        return {}
    import numpy as np

    names = [str(c) for c in frame.columns]
    out: dict[str, Any] = {}
    for name, column in zip(names, frame.columns, strict=True):
        if names.count(name) == 1 and name not in declared and frame[column].dtype == np.float64:
            out[name] = frame[column].to_numpy(dtype=np.float64, copy=False)
    return out
