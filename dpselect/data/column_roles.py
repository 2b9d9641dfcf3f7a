"""Which column types each role accepts: one gate, from the schema alone, before any charge.

A column plays one of three roles in a recipe:

- ``"unit"``: the privacy unit (rows grouped by it, its canonical text hashed);
- ``"ranked"``: the value ranked by top-k, the mode and partition selection (matched with
  candidates, grouped, its canonical text hashed, released as a Python value);
- ``"numeric"``: a number (quantiles, pricing, clamping bounds), read with
  ``TRY_CAST(value AS DOUBLE)``.

For every type listed here, every value of that type goes through the role's queries without
an error (NaN, the infinities, the extreme integers, decimals, dates and timestamps
included; ``tests/data/test_type_fuzz.py``). Every other type is refused here, in one line
naming the argument, the column, its type and the supported types, before anything is
charged: after the charge an error that one row can cause is a privacy breach (one row
decides whether the release fails). Refused, and why:

- ``INTERVAL`` (Arrow durations and intervals): DuckDB raises converting a duration of 2^62
  seconds, and Python raises converting an extreme interval back.
- ``TIME``, ``TIME_NS``, ``TIME WITH TIME ZONE``: a time beyond 24 hours (Arrow allows it)
  makes DuckDB fail internally when printed, which invalidates the whole database.
- ``TIMESTAMP_S``, ``TIMESTAMP_MS``, ``TIMESTAMPTZ_NS``: seconds or milliseconds beyond the
  microsecond range raise when converted (to microseconds, or to Python); declaring the
  column ``TIMESTAMP`` (``schema=``) converts each value on its own (``TRY_CAST``: missing
  when out of range) and is accepted. A timestamp that DuckDB converts to microseconds while
  scanning is refused for the same reason, whatever it is declared as (the conversion comes
  first): an Arrow ``timestamp[s]`` or ``timestamp[ms]`` with a time zone, a pandas
  ``datetime64[s|ms, tz]``, a Parquet ``timestamp[ms]`` (its schema read from the files'
  footers).
- nested types (``LIST``, ``STRUCT``, ``MAP``, ``UNION``, arrays), ``BIT``, ``BIGNUM`` and any
  other type not listed.
- As a privacy unit only: a pandas ``datetime64[ns, tz]`` column, which DuckDB reads as
  ``TIMESTAMP WITH TIME ZONE`` truncated to microseconds (two ids 1 ns apart would be one
  unit: the key must be injective); as a ranked value it is accepted. Likewise an Arrow
  ``date64`` column (a pyarrow table's or a pandas ``ArrowDtype``'s): its milliseconds are
  read as a ``DATE``, any time of day dropped.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal

from ..core.errors import DataError

if TYPE_CHECKING:
    from .engine import Engine

__all__ = [
    "ROLES",
    "Role",
    "check_column_role",
    "recorded_step",
    "supported_types",
    "type_supported",
]

Role = Literal["unit", "ranked", "numeric"]

_INTEGERS = (
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT",
    "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT",
)  # fmt: skip
_NUMBERS = (*_INTEGERS, "FLOAT", "DOUBLE", "DECIMAL(p,s)")
_KEYS = (
    *_NUMBERS, "BOOLEAN", "VARCHAR", "BLOB", "UUID", "ENUM", "DATE", "TIMESTAMP",
    "TIMESTAMP_NS", "TIMESTAMP WITH TIME ZONE", '"NULL"',
)  # fmt: skip

#: The DuckDB types each role accepts (``DECIMAL(p,s)`` and ``ENUM`` stand for every one).
ROLES: dict[str, tuple[str, ...]] = {
    "unit": _KEYS,
    "ranked": _KEYS,
    "numeric": (*_NUMBERS, "VARCHAR"),
}
_ROLE_WORDS = {
    "unit": "as a privacy unit",
    "ranked": "as a ranked value",
    "numeric": "as a number",
}
_DECIMAL = re.compile(r"DECIMAL\(\s*\d+\s*,\s*\d+\s*\)")
#: Why a type is refused, and what to do instead, where there is something to do.
_HINTS = {
    "INTERVAL": "durations and intervals are not supported; convert them to a number first",
    "TIMESTAMP_S": "declare the column as TIMESTAMP (schema=) to read it in microseconds",
    "TIMESTAMP_MS": "declare the column as TIMESTAMP (schema=) to read it in microseconds",
    "TIMESTAMPTZ_NS": "declare the column as TIMESTAMPTZ (schema=) to read it in microseconds",
}
_ARROW_COARSE_ZONED = re.compile(r"timestamp\[(s|ms)[,\]]")
#: A zoned timestamp in nanoseconds that DuckDB reads as TIMESTAMP WITH TIME ZONE (a pandas
#: ``datetime64[ns, tz]``): truncated to microseconds, so refused as a unit (not injective).
_NANOS_ZONED = re.compile(r"timestamp\[ns, tz=")


def _canonical(sql_type: str) -> str:
    """The type as listed in :data:`ROLES`: upper case, ``DECIMAL(p,s)`` and ``ENUM`` folded."""
    upper = " ".join(sql_type.strip().upper().split())
    if _DECIMAL.fullmatch(upper):
        return "DECIMAL(p,s)"
    if upper.startswith("ENUM("):
        return "ENUM"
    return upper


def recorded_step(sql_type: str) -> Fraction | None:
    """The spacing of the grid every value of a column of this DuckDB type lies on, read from
    the type alone (a public fact, like the schema): ``1`` for the integer types, ``10^-s``
    for ``DECIMAL(p, s)``, ``None`` for the others (floats, and text, whose values are parsed
    row by row). The joint quantile mechanism takes half of it as its default resolution
    (:func:`dpselect.mechanisms.quantile_joint_parameters.joint_resolution`).

    Parameters
    ----------
    sql_type : str
        A DuckDB type name (any case and spacing, e.g. ``"decimal(10, 2)"``).

    Returns
    -------
    fractions.Fraction or None
        The grid's spacing, exact, or ``None`` when the type fixes none.
    """
    upper = " ".join(sql_type.strip().upper().split())
    if upper in _INTEGERS:
        return Fraction(1)
    if _DECIMAL.fullmatch(upper):
        scale = int(upper.rsplit(",", 1)[1].rstrip(")").strip())
        return Fraction(1, 10**scale)
    return None


def supported_types(role: Role) -> tuple[str, ...]:
    """The DuckDB types ``role`` accepts.

    Parameters
    ----------
    role : {"unit", "ranked", "numeric"}
        The column's role (module docstring).

    Returns
    -------
    tuple of str
        The accepted type names (``DECIMAL(p,s)`` and ``ENUM`` stand for every one).

    Raises
    ------
    ValueError
        ``role`` is not one of the three roles.
    """
    if role not in ROLES:
        raise ValueError(f"role must be one of {sorted(ROLES)}, got {role!r}")
    return ROLES[role]


def type_supported(sql_type: str, role: Role) -> bool:
    """Whether a column of the DuckDB type ``sql_type`` can play ``role`` (schema only).

    Parameters
    ----------
    sql_type : str
        A DuckDB type name (any case; every ``DECIMAL(p,s)`` and ``ENUM`` included).
    role : {"unit", "ranked", "numeric"}
        The column's role (module docstring).

    Returns
    -------
    bool
        Whether the type is in :data:`ROLES` for ``role``. Unlike :func:`check_column_role`
        it reads the type name only, not the Arrow type a frame is scanned from.
    """
    return _canonical(sql_type) in supported_types(role)


def check_column_role(
    table: Engine | str, column: Any, role: Role, argument: str = "column"
) -> str:
    """The DuckDB type of ``column``; :class:`DataError` unless it can play ``role``.

    ``table``: an opened table (:class:`~dpselect.data.engine.Engine`, whose
    ``require_column`` refuses a missing or nested column), or a DuckDB type name.
    Reads the schema only (the column's type, and for Arrow frames the Arrow type DuckDB
    converts while scanning), so it may and must run before the ledger is charged.

    Parameters
    ----------
    table : Engine or str
        The opened table holding ``column``, or the column's DuckDB type name itself.
    column : object
        The column's name (shown in the error; with a type name it is not looked up).
    role : {"unit", "ranked", "numeric"}
        The column's role (module docstring). A unit column of an opened table is also
        checked for an injective key (:meth:`~dpselect.data.engine.Engine.unit_column`).
    argument : str, default ``"column"``
        The argument's name in error messages (``"privacy_unit"``, ``"by"``, ...).

    Returns
    -------
    str
        The column's DuckDB type, as the table reports it.

    Raises
    ------
    DataError
        The column is missing or nested, or its type (or the Arrow type it is scanned from)
        cannot play ``role``, or it has no injective unit key.
    """
    if isinstance(table, str):
        sql_type, where, arrow_type = table, "", ""
    else:
        sql_type = table.require_column(column, argument)
        where = f" in {table.description}" if table.description else ""
        arrow_type = str(table.arrow_types.get(column, ""))
    supported = supported_types(role)
    name = _canonical(sql_type)
    if role == "unit" and name == "TIMESTAMP WITH TIME ZONE" and _NANOS_ZONED.match(arrow_type):
        raise DataError(
            f"{argument} {column!r} has type {sql_type} (pandas {arrow_type}){where}: its "
            "nanoseconds are truncated to microseconds while the data is read, which makes "
            "distinct values one (two people one unit); store it as timestamp[us] or without "
            "a time zone (TIMESTAMP_NS) first"
        )
    if role == "unit" and arrow_type.startswith("date64"):
        raise DataError(
            f"{argument} {column!r} has type {sql_type} (Arrow {arrow_type}){where}: its "
            "milliseconds are read as a date, dropping any time of day they hold, which can "
            "make distinct values one (two people one unit); cast it to date32 (whole days) "
            "or to a timestamp first"
        )
    if name in supported and not _ARROW_COARSE_ZONED.match(arrow_type):
        if role == "unit" and not isinstance(table, str):
            # the injective key (text by its bytes, objects by type and value), or a refusal
            # from the schema where none can be read: here, before any charge
            table.unit_column(column, argument)
        return sql_type
    shown = f"{sql_type} (Arrow {arrow_type})" if arrow_type and name in supported else sql_type
    hint = _HINTS.get(name, "")
    if name in supported:  # a zoned Arrow timestamp in seconds or milliseconds
        hint = (
            "its seconds or milliseconds are converted to microseconds while the data is read, "
            "which fails on a value beyond that range: store it as timestamp[us] (or ns) first"
        )
    raise DataError(
        f"{argument} {column!r} has type {shown}{where}, which cannot be used "
        f"{_ROLE_WORDS[role]} (supported: {', '.join(supported)})" + (f"; {hint}" if hint else "")
    )
