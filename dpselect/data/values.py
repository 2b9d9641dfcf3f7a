"""The value of a row as every engine reads it: a number or none, grouped, matched, hashed.

Each engine (:mod:`dpselect.data.engines`) spells these rules in its own language (DuckDB
SQL, Spark columns), and the Python functions here are their reference:

- **a number** (:func:`number_kept_sql`, :func:`read_value_sql`): whether a row holds a
  number, NaN and NULL being none; every engine and every SQL or DataFrame builder filters
  numbers (and floating units) by it, and nothing else. Every test of NaN of the data layer
  is written here (tests/data/test_one_reader.py); for values already read,
  :func:`holds_number` and :func:`kept_numbers` (:mod:`dpselect.core.domains`, re-exported);
- **matching** (:func:`numeric_candidate_type`, :func:`is_text`, :func:`is_floating`,
  :func:`normalised_sql`): which candidates are matched by value on a text column, and how
  floating values are grouped (``-0.0`` as ``0.0``);
- **canonical text** (:func:`canonical_text`, :func:`canonical_text_sql`): the text a unit
  or a value is hashed as by the keyed bounding rule (:mod:`dpselect.data.rules`), in either
  SQL dialect (NaN and the infinities recognised by the engine's text of the value).

Nothing here reads data or imports an engine.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..core.domains import holds_number, kept_numbers

__all__ = [
    "canonical_text",
    "canonical_text_sql",
    "holds_number",
    "is_floating",
    "is_text",
    "kept_numbers",
    "normalised_sql",
    "number_kept_sql",
    "numeric_candidate_type",
    "read_value_sql",
]


def is_floating(sql_type: str) -> bool:
    """Whether the DuckDB type ``sql_type`` is a floating type (NaN and ``-0.0`` possible).

    Parameters
    ----------
    sql_type : str
        A type name, any case.

    Returns
    -------
    bool
        True for ``FLOAT``, ``DOUBLE``, ``REAL``, ``FLOAT4`` and ``FLOAT8``.
    """
    return sql_type.upper() in ("FLOAT", "DOUBLE", "REAL", "FLOAT4", "FLOAT8")


def number_kept_sql(expr: str) -> str:
    """The condition that the DOUBLE ``expr`` holds a number: not NULL and not NaN (either sign).

    The one definition of "a number" of the data layer, written for DuckDB SQL and Spark SQL
    alike (both spell ``isnan`` and ``IS NOT NULL`` so). The infinities are numbers: they
    sit at the ends of the order and every bounded mechanism clamps them to its bounds, as it
    does any value outside them. NULL and NaN rows are no rows: they take no slot of a unit's
    row cap and are in no group. ``-0.0`` is a number equal to ``0.0``.

    The rule reads the row alone, so its result may not depend on the other rows of a file:
    it relies on the readers being NaN-safe (a Parquet file's statistics never count NaN, so
    a reader that trusts them folds ``isnan`` to false, or prunes a NaN row by a comparison;
    see docs/contribution_bounding.md, "What a row's fate may depend on"). DuckDB reads
    Parquet with ``can_have_nan`` (:func:`dpselect.data.tables.parquet_sql`); Spark frames are
    read through :func:`dpselect.data.engines.spark.nan_safe_frame`.

    Parameters
    ----------
    expr : str
        A DOUBLE (or FLOAT) expression.

    Returns
    -------
    str
        A SQL condition, true exactly when the row holds a number.
    """
    return f"({expr} IS NOT NULL AND NOT isnan({expr}))"


def read_value_sql(expr: str, sql_type: str) -> str:
    """``expr`` (of the DuckDB type ``sql_type``) as every engine reads it: a floating NaN is
    NULL, a missing value; any other value as it is.

    The one reading of NaN, by every input format alike: DuckDB already reads a pandas
    frame's NaN as NULL, so Arrow, polars, Parquet and CSV (a declared floating type) read it
    so too, as does Spark (:func:`dpselect.data.engines.spark.nan_safe_frame`). A NaN row
    then holds no number and no ranked value, and is in no group, whatever the format
    (otherwise a ranked NaN would be a value in Parquet and Arrow, none in pandas). Applied in the
    view ``data`` (:mod:`dpselect.data.tables`), row by row.

    Parameters
    ----------
    expr : str
        A SQL expression of one column's value in a row.
    sql_type : str
        Its DuckDB type.

    Returns
    -------
    str
        A SQL expression: ``expr`` with NaN read as NULL for a floating type, else ``expr``.
    """
    if is_floating(sql_type):
        return f"(CASE WHEN isnan({expr}) THEN NULL ELSE {expr} END)"
    return expr


def normalised_sql(expr: str, sql_type: str) -> str:
    """``expr`` as grouped: floating values plus ``0.0`` (so ``-0.0`` is ``+0.0``), else as is.

    Parameters
    ----------
    expr : str
        A SQL expression of a value or a unit.
    sql_type : str
        Its DuckDB type.

    Returns
    -------
    str
        A SQL expression: ``expr`` as DOUBLE plus ``0.0`` for a floating type, else ``expr``.
    """
    if is_floating(sql_type):
        return f"(CAST({expr} AS DOUBLE) + CAST(0.0 AS DOUBLE))"
    return expr


def canonical_text(value: Any) -> str:
    """The text a unit or a value is hashed as (Python reference of :func:`canonical_text_sql`).

    str as is; bool ``true``/``false``; int in decimal; float as ``[-]Mp E`` with ``M`` the
    53-bit integer significand and ``E`` the power of two (``0``, ``inf``, ``-inf``, ``nan``
    for the special values; ``-0.0`` is ``0``); dates ISO ``YYYY-MM-DD``; timestamps the
    integer microseconds since 1970-01-01 (UTC; naive timestamps read as UTC).

    Parameters
    ----------
    value : object
        A unit or a value as Python holds it. Decimals are written in plain notation and
        bytes as upper-case hex; any other type is its ``str`` (not portable).

    Returns
    -------
    str
        The text hashed by :func:`~dpselect.data.rules.unit_seed` and
        :func:`~dpselect.data.rules.value_code`.
    """
    import datetime as dt
    import decimal

    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value == 0:
            return "0"
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        mantissa, exponent = math.frexp(abs(value))
        sign = "-" if value < 0 else ""
        return f"{sign}{int(mantissa * 2**53)}p{exponent - 53}"
    if isinstance(value, dt.datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
        delta = aware - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
        return str((delta.days * 86400 + delta.seconds) * 10**6 + delta.microseconds)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, bytes):
        return value.hex().upper()
    return str(value)


def canonical_text_sql(expr: str, sql_type: str, dialect: str = "duckdb") -> str:
    """SQL text of ``expr`` (a value of the DuckDB type ``sql_type``) as :func:`canonical_text`.

    ``dialect`` is ``"duckdb"`` or ``"spark"`` (the Spark SQL spelling of the same rule, for
    the Spark engine; its equality with DuckDB is that engine's test). Types: text, booleans,
    integers, decimals (plain notation with the column's scale), dates, timestamps, floats,
    blobs (upper-case hex); anything else is the engine's own text (not portable).

    Parameters
    ----------
    expr : str
        A SQL expression of a unit or a value.
    sql_type : str
        Its DuckDB type (callers pass ``"DOUBLE"`` for every floating type).
    dialect : {"duckdb", "spark"}, default ``"duckdb"``
        The SQL spelling.

    Returns
    -------
    str
        A text SQL expression (``VARCHAR`` or Spark ``STRING``), the hashed text of the value.

    Raises
    ------
    ValueError
        An unknown dialect.
    """
    if dialect not in ("duckdb", "spark"):
        raise ValueError(f"dialect must be 'duckdb' or 'spark', got {dialect!r}")
    text = "STRING" if dialect == "spark" else "VARCHAR"
    t = sql_type.upper()
    if t in ("VARCHAR", "STRING", "TEXT") or t.startswith("VARCHAR"):
        return expr
    if t.startswith("TIMESTAMP") or t == "DATETIME":
        if dialect == "spark":
            return f"CAST(unix_micros({expr}) AS {text})"
        # DuckDB's infinite timestamps have no microseconds: their own text ('infinity')
        return f"coalesce(CAST(epoch_us({expr}) AS {text}), CAST({expr} AS {text}))"
    if t in ("BLOB", "BINARY", "BYTEA"):
        return f"hex({expr})"
    if is_floating(t):
        x = f"CAST({expr} AS DOUBLE)"
        # NaN and the infinities are recognised by the engine's text of the value ('nan',
        # 'inf', '-inf' in DuckDB; 'NaN', 'Infinity', '-Infinity' in Spark), not by isnan:
        # DuckDB folds isnan(x) to false in a projection when the Parquet statistics have no
        # NaN (they never count NaNs), and the NaN would then reach the casts below after the
        # charge.
        word = f"lower(CAST({x} AS {text}))"
        nan = f"{word} IN ('nan', '-nan')"
        pos_inf = f"{word} IN ('inf', 'infinity')"
        neg_inf = f"{word} IN ('-inf', '-infinity')"
        # The significand and exponent come from a sanitised magnitude (0, NaN and the
        # infinities become 1.0) and go through TRY_CAST: no row can make them raise, whatever
        # order the engine evaluates the branches in. Finite non-zero values are unchanged.
        a = (
            f"(CASE WHEN {x} = 0 OR {nan} OR {pos_inf} OR {neg_inf} "
            f"THEN CAST(1.0 AS DOUBLE) ELSE abs({x}) END)"
        )
        e0 = f"floor(log2({a}))"
        ratio = f"({a} / pow(2.0, {e0}))"
        e = f"({e0} + CASE WHEN {ratio} >= 2 THEN 1 WHEN {ratio} < 1 THEN -1 ELSE 0 END)"
        significand = f"TRY_CAST({a} / pow(2.0, {e}) * pow(2.0, 52) AS BIGINT)"
        exponent = f"TRY_CAST({e} AS BIGINT) - 52"
        return (
            f"CASE WHEN {x} = 0 THEN '0' WHEN {nan} THEN 'nan' "
            f"WHEN {pos_inf} THEN 'inf' WHEN {neg_inf} THEN '-inf' "
            f"ELSE concat(CASE WHEN {x} < 0 THEN '-' ELSE '' END, "
            f"CAST({significand} AS {text}), 'p', CAST({exponent} AS {text})) END"
        )
    return f"CAST({expr} AS {text})"


_INT64 = (-(1 << 63), (1 << 63) - 1)


def is_text(sql_type: str) -> bool:
    """Whether the DuckDB type ``sql_type`` is text (``VARCHAR``, any case).

    Parameters
    ----------
    sql_type : str
        A type name as DuckDB reports it (``VARCHAR``, not an alias such as ``TEXT``).

    Returns
    -------
    bool
        True for ``VARCHAR`` only: a text column, matched with number candidates by value.
    """
    return sql_type.upper() == "VARCHAR"


def numeric_candidate_type(candidates: Sequence[Any]) -> str | None:
    """``"BIGINT"`` (all int in int64), ``"DOUBLE"`` (float, or int and float), or ``None``.

    ``bool`` is not a number here (``True`` is not matched to ``"1"``).

    Parameters
    ----------
    candidates : sequence
        The public candidate list.

    Returns
    -------
    str or None
        The type a text column is read as to match the candidates by value: ``"BIGINT"``
        when all are int within int64, ``"DOUBLE"`` when all are int or float and one is a
        float; ``None`` (matched as text) for an empty list, any other type, or an int
        outside int64 with no float.
    """
    kinds = set(map(type, candidates))
    if not kinds or not kinds <= {int, float}:
        return None
    if kinds == {int}:
        if all(_INT64[0] <= c <= _INT64[1] for c in candidates):
            return "BIGINT"
        return None
    return "DOUBLE"
