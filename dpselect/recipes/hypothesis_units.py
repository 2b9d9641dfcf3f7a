"""How :func:`~dpselect.recipes.hypothesis.select_hypothesis` reads who contributed each example.

A privacy unit is given as an array of unit ids parallel to the labels, or as the name of a
column of a pandas, polars or pyarrow table ``X``. :func:`check_units` checks it from public
facts only (types, column names, lengths) before any charge; :func:`unit_ids` reads the ids
after the charge, row by row and never raising on a row (a value that does not convert is no
unit). :func:`as_rows` is the flat list of rows both this module and the mistake counts read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..core.errors import DataError, ParameterError

__all__ = ["UNIT_ARRAY", "as_rows", "check_units", "unit_ids"]


def as_rows(values: Any) -> list[Any]:
    """``values`` as a flat list of rows, whatever their types (never raises on the rows).

    ``np.asarray`` of a ragged or mixed list raises depending on the rows;
    a list of the elements does not. A numpy array is flattened (as before); any other
    iterable is taken element by element.

    Parameters
    ----------
    values : object
        Labels, predictions or unit ids (an array, a list, any iterable, or one value).

    Returns
    -------
    list
        The rows, in order.
    """
    if isinstance(values, np.ndarray):
        rows: list[Any] = values.ravel().tolist()
        return rows
    if isinstance(values, (str, bytes)):
        return [values]
    try:
        return list(values)
    except TypeError:
        return [values]


def _table_kind(X: Any) -> str | None:
    """``"pandas"``, ``"polars"`` or ``"pyarrow"`` for a table of that library, else None
    (recognised by the type's module and name: no import)."""
    module = type(X).__module__.split(".")[0]
    name = type(X).__name__
    if module in ("pandas", "polars") and name == "DataFrame":
        return module
    if module == "pyarrow" and name == "Table":
        return module
    return None


def _length(values: Any) -> int | None:
    """How many rows :func:`as_rows` gives for ``values`` when known without reading them."""
    if isinstance(values, np.ndarray):
        return int(values.size)
    if isinstance(values, (str, bytes)):
        return 1
    if _table_kind(values) is not None:
        return int(values.shape[0]) if hasattr(values, "shape") else None
    try:
        return len(values)
    except TypeError:
        return None


def _each(values: Any, convert: Callable[[Any], Any]) -> list[Any]:
    """``convert`` of every value, ``None`` where it raises (a rule of that value alone)."""
    out = []
    for value in values:
        try:
            out.append(convert(value))
        except Exception:
            out.append(None)
    return out


def _exact_arrow(chunk: Any) -> Any:
    """An Arrow array of times, timestamps or durations as its stored integer counts (one
    type per array, so distinct values stay distinct): Python's datetime, time and timedelta
    hold microseconds, and ``to_pylist`` of nanoseconds made ids 1 ns apart one unit."""
    import pyarrow as pa
    import pyarrow.types as pt

    kind = chunk.type
    if pt.is_timestamp(kind) or pt.is_duration(kind) or pt.is_time(kind) or pt.is_date64(kind):
        return chunk.cast(pa.int64())
    return chunk


def _python_values(values: Any) -> list[Any]:
    """Unit ids as Python objects, one per row, never raising on a row: a pyarrow array or
    chunked array chunk by chunk (a value that does not convert, such as a timestamp beyond
    Python's range, is no unit; times and durations as their integer counts:
    :func:`_exact_arrow`), a polars Series and a pandas Series of an Arrow dtype as their
    Arrow arrays, another Series by its values, anything else by :func:`as_rows`."""
    module = type(values).__module__.split(".")[0]
    if type(values).__name__ == "Series" and (
        module == "polars" or type(getattr(values, "dtype", None)).__name__ == "ArrowDtype"
    ):  # fmt: skip
        try:
            if module == "polars":
                values = values.to_arrow()
            else:
                import pyarrow as pa

                values = pa.array(values)
            module = "pyarrow"
        except Exception:  # a type Arrow cannot hold (polars Object): by its values
            pass
    if module == "pyarrow":
        chunks = values.chunks if hasattr(values, "chunks") else [values]
        out: list[Any] = []
        for chunk in chunks:
            try:
                out.extend(_exact_arrow(chunk).to_pylist())
            except Exception:
                out.extend(_each(chunk, lambda scalar: scalar.as_py()))
        return out
    if type(values).__name__ == "Series":  # pandas or polars
        try:
            return list(values.to_list())
        except Exception:
            at = values.iloc.__getitem__ if hasattr(values, "iloc") else values.__getitem__
            return _each(range(len(values)), at)
    return as_rows(values)


def unit_ids(X: Any, privacy_unit: Any) -> list[Any]:
    """The unit id of each example: a column of the table ``X``, or the array given.

    Parameters
    ----------
    X : object
        The examples (a table when ``privacy_unit`` names a column).
    privacy_unit : str or array_like
        A column of ``X``, or the unit ids parallel to the labels.

    Returns
    -------
    list
        One unit id per example, as Python values (read after the charge, never raising).
    """
    if isinstance(privacy_unit, str):
        kind = _table_kind(X)
        column = X.column(privacy_unit) if kind == "pyarrow" else X[privacy_unit]
        return _python_values(column)
    return _python_values(privacy_unit)


def check_units(X: Any, y: Any, privacy_unit: Any, unit_name: str | None) -> tuple[str, str | None]:
    """``(label, column)``: the unit the ledger records and the column of ``X`` holding the
    unit ids (``None``: an array), from public facts only (types, column names, lengths).

    The lengths compared (examples, labels, unit ids) are those of arrays the caller builds
    from one dataset: adding or removing a unit's examples in all of them keeps them equal,
    so the check reads nothing a neighbour could change.

    Parameters
    ----------
    X, y : object
        The examples and their labels.
    privacy_unit : str or array_like
        A column of ``X``, or the unit ids parallel to ``y``.
    unit_name : str or None
        The ledger's name for an array of unit ids.

    Returns
    -------
    (str, str or None)
        The unit's label and its column (``None`` for an array).

    Raises
    ------
    ParameterError, DataError
        An unusable unit, refused before any charge.
    """
    if unit_name is not None and (not isinstance(unit_name, str) or not unit_name):
        raise ParameterError(f"unit_name must be a non-empty str, got {unit_name!r}")
    n_labels = _length(y)
    if n_labels is None:
        raise ParameterError(
            "with privacy_unit, y must be a list or array (its length is checked against the "
            f"unit ids), got {type(y).__name__}"
        )
    if isinstance(privacy_unit, str):
        kind = _table_kind(X)
        if kind is None:
            raise ParameterError(
                f"privacy_unit={privacy_unit!r} names a column, so X must be a table (pandas, "
                f"polars or pyarrow), got {type(X).__name__}; or give an array of unit ids"
            )
        columns = list(X.column_names if kind == "pyarrow" else X.columns)
        if sum(isinstance(c, str) and c == privacy_unit for c in columns) != 1:
            raise DataError(
                f"privacy_unit {privacy_unit!r} is not a column of X (or names several); "
                f"columns: {', '.join(map(str, columns)) or 'none'}"
            )
        if unit_name is not None and unit_name != privacy_unit:
            raise ParameterError("unit_name applies to an array of unit ids, not a column")
        n_units, label, column = _length(X), privacy_unit, privacy_unit
    else:
        if isinstance(privacy_unit, (bytes, Mapping)) or _table_kind(privacy_unit) is not None:
            raise ParameterError(
                "privacy_unit must be a column name of X or an array of unit ids parallel to "
                f"y, got {type(privacy_unit).__name__}"
            )
        n_units = _length(privacy_unit)
        if n_units is None:
            raise ParameterError(
                "privacy_unit must be a list or array of unit ids parallel to y, got "
                f"{type(privacy_unit).__name__}"
            )
        series_name = getattr(privacy_unit, "name", None)
        named = series_name if isinstance(series_name, str) and series_name else UNIT_ARRAY
        label = unit_name or named
        column = None
    if n_units != n_labels:
        raise ParameterError(
            f"privacy_unit gives {n_units} unit ids for {n_labels} labels: one unit id per "
            "example, in the order of y"
        )
    return label, column


#: What the ledger records for an array of unit ids without a name (``unit_name=``).
UNIT_ARRAY = "privacy_unit array"
