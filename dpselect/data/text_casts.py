"""Declared types for text: how a CSV, TSV or JSON text value is read as the type a schema
declares, the same in DuckDB and Spark (docs/data_input.md, "Declared types for text columns").

:func:`declared_text_sql` spells the rule in either SQL dialect, :func:`declared_text_value`
is its Python reference, :func:`has_text_rule` says which declared types it reads.

Nothing here reads data or imports an engine.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = [
    "SPARK_TEXT_TYPES",
    "TEXT_DATE_PATTERN",
    "TEXT_DECIMAL_PATTERN",
    "TEXT_FALSE_PATTERN",
    "TEXT_INFINITY_PATTERN",
    "TEXT_INTEGER_PATTERN",
    "TEXT_MINUS_INFINITY_PATTERN",
    "TEXT_RULE_TYPES",
    "TEXT_TRUE_PATTERN",
    "declared_text_sql",
    "declared_text_value",
    "has_text_rule",
]

# ----------------------------------------------------------------------------------------
# Declared types for text: how a CSV, TSV or JSON text value is read as a declared type
# (docs/data_input.md, "Declared types for text columns").
#
# One rule, spelt in DuckDB SQL and in Spark SQL, identical on every string: the text is
# trimmed of spaces and tabs (nothing else), must match a fixed pattern in full (explicit
# ASCII character classes, the same in RE2 and in Java's regular expressions), and only then
# is cast, by a cast that cannot fail on a matched text (TRY_CAST / try_cast: Spark 4's ANSI
# casts raise). Anything else is NULL, a missing value, never an error.
# ----------------------------------------------------------------------------------------

#: The integer types the rule reads (DuckDB names); Spark holds the first four.
_TEXT_INTEGERS = (
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT",
    "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT",
)  # fmt: skip
#: The declared types read from text by the rule (DuckDB names, as
#: :func:`dpselect.data.schema.check_type_name` resolves them). Other declared types
#: (DECIMAL, TIMESTAMP, TIME, ...) keep DuckDB's ``TRY_CAST`` on DuckDB.
TEXT_RULE_TYPES = (*_TEXT_INTEGERS, "FLOAT", "DOUBLE", "BOOLEAN", "DATE", "VARCHAR")
#: The declared types the Spark engine reads from CSV text: the rule's types that Spark holds,
#: with the Spark type each is cast to. Any other declared type on a CSV is refused.
SPARK_TEXT_TYPES: dict[str, str] = {
    "TINYINT": "TINYINT",
    "SMALLINT": "SMALLINT",
    "INTEGER": "INT",
    "BIGINT": "BIGINT",
    "FLOAT": "FLOAT",
    "DOUBLE": "DOUBLE",
    "BOOLEAN": "BOOLEAN",
    "DATE": "DATE",
    "VARCHAR": "STRING",
}
#: The ranges of the integer types (for :func:`declared_text_value`).
_INTEGER_RANGES = {
    "TINYINT": (-(1 << 7), (1 << 7) - 1),
    "SMALLINT": (-(1 << 15), (1 << 15) - 1),
    "INTEGER": (-(1 << 31), (1 << 31) - 1),
    "BIGINT": (-(1 << 63), (1 << 63) - 1),
    "HUGEINT": (-(1 << 127), (1 << 127) - 1),
    "UTINYINT": (0, (1 << 8) - 1),
    "USMALLINT": (0, (1 << 16) - 1),
    "UINTEGER": (0, (1 << 32) - 1),
    "UBIGINT": (0, (1 << 64) - 1),
    "UHUGEINT": (0, (1 << 128) - 1),
}
#: The patterns a trimmed text must match in full (no backslash: the same text in a DuckDB
#: and a Spark SQL string literal, whatever Spark's escaping setting).
TEXT_INTEGER_PATTERN = "[+-]?[0-9]+"
TEXT_DECIMAL_PATTERN = "[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?"
TEXT_INFINITY_PATTERN = "[+]?[Ii][Nn][Ff]([Ii][Nn][Ii][Tt][Yy])?"
TEXT_MINUS_INFINITY_PATTERN = "-[Ii][Nn][Ff]([Ii][Nn][Ii][Tt][Yy])?"
TEXT_TRUE_PATTERN = "[Tt][Rr][Uu][Ee]|[Tt]|1|[Yy][Ee][Ss]|[Yy]"
TEXT_FALSE_PATTERN = "[Ff][Aa][Ll][Ss][Ee]|[Ff]|0|[Nn][Oo]|[Nn]"
TEXT_DATE_PATTERN = "[0-9]{4}-[0-9]{2}-[0-9]{2}"


def has_text_rule(sql_type: str, dialect: str = "duckdb") -> bool:
    """Whether the declared type ``sql_type`` (a DuckDB name) is read from text by the rule
    of :func:`declared_text_sql` in ``dialect``: :data:`TEXT_RULE_TYPES` in DuckDB, the keys
    of :data:`SPARK_TEXT_TYPES` in Spark.

    Parameters
    ----------
    sql_type : str
        A declared type, a DuckDB name (any case, surrounding blanks ignored).
    dialect : {"duckdb", "spark"}, default ``"duckdb"``
        The engine reading the text.

    Returns
    -------
    bool
        Whether the rule reads it; otherwise DuckDB uses ``TRY_CAST`` and Spark refuses it.

    Raises
    ------
    ValueError
        An unknown dialect.
    """
    if dialect not in ("duckdb", "spark"):
        raise ValueError(f"dialect must be 'duckdb' or 'spark', got {dialect!r}")
    t = sql_type.strip().upper()
    return t in (SPARK_TEXT_TYPES if dialect == "spark" else TEXT_RULE_TYPES)


def _full_match_sql(expr: str, pattern: str, dialect: str) -> str:
    """The condition that the text ``expr`` matches ``pattern`` in full (a non-NULL text).

    DuckDB: RE2's ``regexp_full_match``. Spark: ``RLIKE`` (Java's ``find``) anchored by
    ``^`` and a look-ahead for the end of the text: ``$`` would also match before a final
    line break (``'5\\n'``), and ``(?s)`` lets ``.`` see every character."""
    if dialect == "spark":
        return f"({expr} RLIKE '(?s)^(?:{pattern})(?!.)')"
    return f"regexp_full_match({expr}, '{pattern}')"


def declared_text_sql(expr: str, sql_type: str, dialect: str = "duckdb") -> str:
    """SQL reading the text ``expr`` as the declared type ``sql_type``: the rule both engines
    apply to the text columns of CSV, TSV and JSON files (docs/data_input.md, "Declared types
    for text columns"); :func:`declared_text_value` is its Python reference.

    The text ``t`` is ``expr`` without leading and trailing spaces and tabs (no other
    character is trimmed). Then, by the declared type:

    - integers (:data:`TEXT_RULE_TYPES`; Spark: ``TINYINT`` to ``BIGINT``): ``t`` matches
      ``[+-]?[0-9]+`` in full, then is cast; a value out of the type's range is NULL.
      ``'007'`` is 7, ``'+5'`` is 5; ``'2.5'``, ``'1e5'``, ``'1_000'``, ``'0x10'`` are NULL.
    - ``DOUBLE`` and ``FLOAT``: ``t`` is a plain decimal, ``[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)
      ([eE][+-]?[0-9]+)?``, cast to the type (correctly rounded to it in both engines); a
      number too large for the type (``'1e400'``) is NULL. The words ``inf`` and ``infinity``
      (ASCII letters in any case, with a sign) are the infinities; ``nan`` and every other
      word is NULL (so the rule never gives a NaN).
    - ``BOOLEAN``: ``true``, ``t``, ``1``, ``yes``, ``y`` are true and ``false``, ``f``,
      ``0``, ``no``, ``n`` false (ASCII letters in any case); anything else is NULL.
    - ``DATE``: ``t`` matches ``[0-9]{4}-[0-9]{2}-[0-9]{2}`` with a year from 0001, then is
      cast; a date that does not exist (``'2021-02-30'``) is NULL.
    - ``VARCHAR``: the text as it is (not trimmed).
    - any other type: DuckDB's ``TRY_CAST`` in DuckDB (not portable); refused in Spark.

    Letters are matched by explicit ASCII classes, never by ``lower``: DuckDB lowers
    ``'İNF'`` to ``'inf'``, Java to four characters. The condition is checked before the
    cast, and the cast is a try-cast, so no text makes the expression raise, whatever order
    an engine evaluates it in.

    Parameters
    ----------
    expr : str
        A SQL expression of text (DuckDB ``VARCHAR``, Spark ``STRING``).
    sql_type : str
        The declared type, a DuckDB name (:func:`dpselect.data.schema.check_type_name`).
    dialect : {"duckdb", "spark"}
        The SQL spelling.

    Returns
    -------
    str
        A SQL expression of the declared type (the Spark type of :data:`SPARK_TEXT_TYPES`).

    Raises
    ------
    ValueError
        An unknown dialect, or in Spark a type outside :data:`SPARK_TEXT_TYPES` (the callers
        refuse it from the schema first).
    """
    if dialect not in ("duckdb", "spark"):
        raise ValueError(f"dialect must be 'duckdb' or 'spark', got {dialect!r}")
    t_upper = sql_type.strip().upper()
    if not has_text_rule(t_upper, dialect):
        if dialect == "spark":
            raise ValueError(f"the Spark engine does not read {sql_type} from text")
        return f"TRY_CAST({expr} AS {sql_type})"
    if t_upper == "VARCHAR":
        return expr
    spark = dialect == "spark"
    target = SPARK_TEXT_TYPES[t_upper] if spark else t_upper
    blanks = "concat(' ', chr(9))"
    t = f"trim(BOTH {blanks} FROM {expr})" if spark else f"trim({expr}, {blanks})"
    return _ruled_text_sql(t, t_upper, target, dialect)


def _ruled_text_sql(t: str, t_upper: str, target: str, dialect: str) -> str:
    """The rule's SQL for the trimmed text ``t`` and a declared type ``t_upper`` the rule
    reads (not ``VARCHAR``): the pattern is matched in full, then the text try-cast to
    ``target`` (:func:`declared_text_sql`)."""
    spark = dialect == "spark"

    def matches(pattern: str) -> str:
        return _full_match_sql(t, pattern, dialect)

    def cast(text: str) -> str:
        return f"try_cast({text} AS {target})" if spark else f"TRY_CAST({text} AS {target})"

    if t_upper in _TEXT_INTEGERS:
        return f"(CASE WHEN {matches(TEXT_INTEGER_PATTERN)} THEN {cast(t)} END)"
    if t_upper in ("FLOAT", "DOUBLE"):
        x = cast(t)
        infinity = f"CAST('inf' AS {target})"
        return (
            f"(CASE WHEN {matches(TEXT_DECIMAL_PATTERN)} THEN "
            f"(CASE WHEN abs({x}) = {infinity} THEN NULL ELSE {x} END) "
            f"WHEN {matches(TEXT_INFINITY_PATTERN)} THEN {infinity} "
            f"WHEN {matches(TEXT_MINUS_INFINITY_PATTERN)} THEN -{infinity} END)"
        )
    if t_upper == "BOOLEAN":
        return (
            f"(CASE WHEN {matches(TEXT_TRUE_PATTERN)} THEN true "
            f"WHEN {matches(TEXT_FALSE_PATTERN)} THEN false END)"
        )
    assert t_upper == "DATE", t_upper
    return (
        f"(CASE WHEN {matches(TEXT_DATE_PATTERN)} AND substr({t}, 1, 4) <> '0000' "
        f"THEN {cast(t)} END)"
    )


def declared_text_value(text: str | None, sql_type: str) -> Any:
    """The Python reference of :func:`declared_text_sql`: the value the text ``text`` is read
    as when ``sql_type`` (one of :data:`TEXT_RULE_TYPES`) is declared.

    Parameters
    ----------
    text : str or None
        The text of a CSV, TSV or JSON value (``None``: NULL).
    sql_type : str
        The declared type, a DuckDB name.

    Returns
    -------
    object
        ``int``, ``float`` (``FLOAT``: the value of the nearest float32, ties to even),
        ``bool``, ``datetime.date``, ``str``, or ``None`` (NULL).

    Raises
    ------
    ValueError
        ``sql_type`` is not one of :data:`TEXT_RULE_TYPES`.
    """
    import datetime as dt
    import re

    kind = sql_type.strip().upper()
    if kind not in TEXT_RULE_TYPES:
        raise ValueError(f"{sql_type} is not read from text by the rule")
    if text is None or kind == "VARCHAR":
        return text
    t = text.strip(" \t")

    def full(pattern: str) -> bool:
        return re.fullmatch(f"(?:{pattern})", t) is not None

    if kind in _INTEGER_RANGES:
        if not full(TEXT_INTEGER_PATTERN):
            return None
        lo, hi = _INTEGER_RANGES[kind]
        if len(t.lstrip("+-").lstrip("0")) > 40:  # beyond every type (Python's int() limit)
            return None
        value = int(t)
        return value if lo <= value <= hi else None
    if kind in ("FLOAT", "DOUBLE"):
        if full(TEXT_INFINITY_PATTERN):
            return math.inf
        if full(TEXT_MINUS_INFINITY_PATTERN):
            return -math.inf
        if not full(TEXT_DECIMAL_PATTERN):
            return None
        x = float(t) if kind == "DOUBLE" else _nearest_float32(t)
        return None if math.isinf(x) else x
    if kind == "BOOLEAN":
        return True if full(TEXT_TRUE_PATTERN) else False if full(TEXT_FALSE_PATTERN) else None
    if not full(TEXT_DATE_PATTERN):
        return None
    try:
        return dt.date(int(t[:4]), int(t[5:7]), int(t[8:10]))
    except ValueError:  # no such date, or the year 0000
        return None


def _nearest_float32(text: str) -> float:
    """The float32 nearest to the decimal ``text`` (ties to the even significand; past the
    largest float32 by half a step or more: infinity), as a Python float."""
    from fractions import Fraction

    sign = -1.0 if text.startswith("-") else 1.0
    near = float(text)  # correctly rounded to a double: 0 or infinite only far beyond float32
    if near == 0 or math.isinf(near):
        return near
    a = abs(Fraction(text))  # exact (a moderate exponent: the double is finite, not zero)
    largest = Fraction(2 - Fraction(1, 1 << 23)) * (1 << 127)
    if a >= largest + (1 << 103):  # half a step (2^104) above the largest: infinity
        return sign * math.inf
    # the step of the float32 binade of a (subnormal steps below 2^-126)
    e = max(a.numerator.bit_length() - a.denominator.bit_length(), -126)
    while Fraction(2) ** e > a and e > -126:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    step = Fraction(2) ** (max(e, -126) - 23)
    q, r = divmod(a, step)
    if r * 2 > step or (r * 2 == step and q % 2 == 1):
        q += 1
    return sign * float(q * step)
