"""Public column types: a declared schema for text sources, and the scalar-type rule.

A schema is public input (like the candidate list): ``{column: type}`` with DuckDB type names
(``BIGINT``, ``DOUBLE``, ``VARCHAR``, ``DATE``, ``BOOLEAN``, ``DECIMAL(10,2)``, ...) or the
Python types ``int``, ``float``, ``str``, ``bool`` (and ``datetime.date`` / ``datetime``).
It is applied value by value (:mod:`dpselect.data.tables`): the text of a CSV, TSV or JSON
column by the rule both engines share (:func:`dpselect.data.text_casts.declared_text_sql`:
integers, ``FLOAT``/``DOUBLE``, ``BOOLEAN``, ``DATE``, ``VARCHAR``), other types and typed
sources by DuckDB's ``TRY_CAST``: a value that does not convert is NULL, that is missing,
never an error. Errors about the schema itself
(an unknown type, a nested type, a malformed ``--schema`` spec) depend only on it and are
raised at once, before anything is charged.

Every use of a column in dpselect is as a scalar (equality with candidates, a number, a unit
to group by), so nested types (LIST, ARRAY, STRUCT, MAP, UNION) are refused from the schema
(:func:`is_nested`): on such a column a user's value could be unhashable or compare in ways
the score sensitivity does not cover.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from typing import Any

from ..core.errors import ParameterError

__all__ = ["PYTHON_TYPES", "check_type_name", "is_nested", "parse_schema", "parse_schema_spec"]

#: Python types accepted in a schema, and the DuckDB type each stands for.
PYTHON_TYPES: dict[type, str] = {
    bool: "BOOLEAN",
    int: "BIGINT",
    float: "DOUBLE",
    str: "VARCHAR",
    datetime.date: "DATE",
    datetime.datetime: "TIMESTAMP",
}
_NESTED_PREFIXES = ("STRUCT", "MAP", "UNION", "LIST")
_TYPE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_ ]*(\(\s*\d+\s*(,\s*\d+\s*)?\))?")


_CONNECTION: list[Any] = []


def _connection() -> Any:
    """A DuckDB connection of its own, to resolve type names (no data in it)."""
    if not _CONNECTION:
        import duckdb

        _CONNECTION.append(duckdb.connect(":memory:"))
    return _CONNECTION[0].cursor()


def is_nested(type_name: str) -> bool:
    """Whether a DuckDB type (as ``DESCRIBE`` prints it) is nested: LIST, ARRAY, STRUCT, MAP,
    UNION (``VARCHAR[]``, ``INTEGER[3]``, ``STRUCT(a INTEGER)``, ``MAP(VARCHAR, INTEGER)``).

    Parameters
    ----------
    type_name : str
        A DuckDB type name, any case.

    Returns
    -------
    bool
        Whether it ends with ``]`` (a list or an array) or starts with ``STRUCT``, ``MAP``,
        ``UNION`` or ``LIST``.
    """
    upper = type_name.strip().upper()
    return upper.endswith("]") or upper.startswith(_NESTED_PREFIXES)


def check_type_name(type_name: Any, column: str, argument: str = "schema") -> str:
    """The canonical DuckDB name of a declared type; :class:`ParameterError` if unknown or nested.

    The name is resolved by DuckDB itself (``CAST(NULL AS type)``), so aliases such as ``INT``,
    ``TEXT`` or ``FLOAT8`` work, and only the public schema is read.

    Parameters
    ----------
    type_name : str or type
        A DuckDB type name (aliases included), or one of the Python types of
        :data:`PYTHON_TYPES`.
    column : str
        The column it is declared for (named in errors).
    argument : str, default ``"schema"``
        The argument's name in errors (``"--schema"`` on the command line).

    Returns
    -------
    str
        The type as DuckDB names it (``"INTEGER"`` for ``"INT"``; the mapped name for a
        Python type).

    Raises
    ------
    ParameterError
        An unsupported Python type, a value that is not a type name, a name DuckDB does not
        know, or a nested type.
    """
    if isinstance(type_name, type):
        if type_name not in PYTHON_TYPES:
            known = ", ".join(t.__name__ for t in PYTHON_TYPES)
            raise ParameterError(
                f"{argument}: column {column!r} has the Python type {type_name.__name__}; "
                f"use one of {known} or a DuckDB type name"
            )
        return PYTHON_TYPES[type_name]
    if isinstance(type_name, str) and is_nested(type_name):
        raise ParameterError(
            f"{argument}: column {column!r} has the nested type {type_name.strip()}; only "
            "scalar types are supported"
        )
    if not isinstance(type_name, str) or not _TYPE_NAME.fullmatch(type_name.strip()):
        raise ParameterError(
            f"{argument}: column {column!r} needs a type name such as BIGINT, DOUBLE, VARCHAR, "
            f"DATE or BOOLEAN, got {type_name!r}"
        )
    import duckdb

    try:
        resolved = (
            _connection().execute(f"SELECT typeof(CAST(NULL AS {type_name.strip()}))").fetchone()
        )
    except duckdb.Error:
        raise ParameterError(
            f"{argument}: column {column!r} has an unknown type {type_name!r} "
            "(use e.g. BIGINT, DOUBLE, VARCHAR, DATE, BOOLEAN)"
        ) from None
    name = str(resolved[0]) if resolved else type_name
    if is_nested(name):
        raise ParameterError(
            f"{argument}: column {column!r} has the nested type {name}; only scalar types "
            "are supported"
        )
    return name


def parse_schema(schema: Any, argument: str = "schema") -> dict[str, str]:
    """``schema`` (None, a mapping, or a ``col:TYPE,...`` string) as ``{column: DuckDB type}``.

    Parameters
    ----------
    schema : dict or str or None
        ``{column: type}`` (each type as :func:`check_type_name` takes it), a spec string
        (:func:`parse_schema_spec`), or ``None`` for no declared types.
    argument : str, default ``"schema"``
        The argument's name in errors.

    Returns
    -------
    dict of str to str
        Each declared column's canonical DuckDB type; ``{}`` for ``None``.

    Raises
    ------
    ParameterError
        ``schema`` is of another kind, a column name is not a non-empty string, or a type is
        refused by :func:`check_type_name`.
    """
    if schema is None:
        return {}
    if isinstance(schema, str):
        return parse_schema_spec(schema, argument)
    if not isinstance(schema, Mapping):
        raise ParameterError(
            f"{argument} must be a dict {{column: type}} or None, got {type(schema).__name__}"
        )
    out: dict[str, str] = {}
    for column, type_name in schema.items():
        if not isinstance(column, str) or not column:
            raise ParameterError(f"{argument}: column names must be non-empty strings, got "
                                 f"{column!r}")  # fmt: skip
        out[column] = check_type_name(type_name, column, argument)
    return out


def parse_schema_spec(spec: str, argument: str = "--schema") -> dict[str, str]:
    """A ``col:TYPE,col:TYPE`` spec (as the CLI's ``--schema``) as ``{column: DuckDB type}``.

    Commas inside parentheses belong to the type (``price:DECIMAL(10,2)``); the last colon of
    an item separates the column from its type, so column names may contain colons.

    Parameters
    ----------
    spec : str
        The spec, e.g. ``"age:BIGINT,price:DECIMAL(10,2)"``; column names and types are
        stripped of surrounding blanks.
    argument : str, default ``"--schema"``
        The argument's name in errors.

    Returns
    -------
    dict of str to str
        Each column's canonical DuckDB type (:func:`check_type_name`), in the spec's order.

    Raises
    ------
    ParameterError
        An item without a column or a type, a column named twice, or a refused type.
    """
    items: list[str] = []
    depth, start = 0, 0
    for i, char in enumerate(spec):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append(spec[start:i])
            start = i + 1
    items.append(spec[start:])
    out: dict[str, str] = {}
    for item in items:
        column, sep, type_name = item.strip().rpartition(":")
        if not sep or not column.strip() or not type_name.strip():
            raise ParameterError(
                f"{argument} must be col:TYPE,col:TYPE (e.g. age:BIGINT,city:VARCHAR), "
                f"got {item.strip()!r}"
            )
        if column.strip() in out:
            raise ParameterError(f"{argument} names column {column.strip()!r} twice")
        out[column.strip()] = check_type_name(type_name.strip(), column.strip(), argument)
    return out
