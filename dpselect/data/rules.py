"""The engine-neutral rules of the data layer: what every engine computes the same way.

Each engine (:mod:`dpselect.data.engines`) spells these rules in its own language (DuckDB
SQL, Spark columns), and the Python functions here are their reference:

- **canonical text** (:func:`canonical_text`, :func:`canonical_text_sql`): the text a unit
  or a value is hashed as, in either SQL dialect;
- **matching** (:func:`numeric_candidate_type`, :func:`is_text`, :func:`is_floating`,
  :func:`normalised_sql`): which candidates are matched by value on a text column, and how
  floating values are grouped;
- **the keyed bounding order** (:func:`bounding_key`, :func:`unit_seed`,
  :func:`value_code`, :func:`keep_smallest`; docs/contribution_bounding.md): which values a
  person keeps, bit-identical in every engine for the same salt;
- **rows kept per unit** (:func:`row_key`, :func:`kept_rows`; docs/contribution_bounding.md,
  "Rows per unit"): which rows of a numeric column a unit keeps for quantiles and pricing;
- **a number** (:func:`number_kept_sql`): whether a row holds a number, NaN and NULL
  being none; every engine and every SQL or DataFrame builder filters numbers (and floating
  units) by it, and nothing else;
- **declared types for text** (:func:`declared_text_sql`, :func:`declared_text_value`): how
  the text of a CSV, TSV or JSON column is read as the type a schema declares, the same in
  DuckDB and Spark (docs/data_input.md, "Declared types for text columns");
- **grids** (:func:`grid_size`, :func:`grid_edges`, :func:`grid_cell`,
  :func:`grid_cell_width`): the public grid a histogram engine rounds quantile rows to.

Nothing here reads data or imports an engine.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..core.domains import holds_number, kept_numbers
from ..core.errors import ParameterError

__all__ = [
    "BOUNDING_SEPARATOR",
    "FMIX32_STEPS",
    "M32",
    "MAX_BOUNDED_CANDIDATES",
    "MAX_CELLS",
    "SPARK_TEXT_TYPES",
    "TEXT_DATE_PATTERN",
    "TEXT_DECIMAL_PATTERN",
    "TEXT_FALSE_PATTERN",
    "TEXT_INFINITY_PATTERN",
    "TEXT_INTEGER_PATTERN",
    "TEXT_MINUS_INFINITY_PATTERN",
    "TEXT_RULE_TYPES",
    "TEXT_TRUE_PATTERN",
    "bounding_key",
    "canonical_text",
    "canonical_text_sql",
    "check_bounded_candidates",
    "check_rows_per_value",
    "declared_text_sql",
    "declared_text_value",
    "fmix32",
    "grid_cell",
    "grid_cell_width",
    "grid_edges",
    "grid_size",
    "has_text_rule",
    "hashed_text_sql",
    "holds_number",
    "is_floating",
    "is_text",
    "keep_smallest",
    "keep_smallest_counted",
    "kept_found_groups",
    "kept_groups",
    "kept_numbers",
    "kept_rows",
    "md5_bits_sql",
    "normalised_sql",
    "number_kept_sql",
    "numeric_candidate_type",
    "read_value_sql",
    "row_key",
    "salt_text",
    "unit_seed",
    "value_code",
]

# ----------------------------------------------------------------------------------------
# The bounding rule: which values a user keeps (docs/contribution_bounding.md).
#
# Every engine computes it with the same bytes and the same integer arithmetic:
#   seed(u)  = the first 8 bytes, little-endian, of md5(salt_text \x1f "u" \x1f text(u))
#   a, b     = seed(u) mod 2^32, seed(u) div 2^32
#   code(x)  = the candidate's 0-based position (candidate path), or the first 4 bytes,
#              little-endian, of md5(salt_text \x1f "v" \x1f text(x)) (unknown-domain path)
#   key(u,x) = fmix32(fmix32(code(x) xor a) xor b)
# A user keeps the max_contributions distinct values with the smallest (key, tie-break),
# the tie-break being the position (never needed: key is a bijection of a position) or the
# value itself on the unknown-domain path. md5 is computed once per user and once per
# distinct value, never per row; the per-pair work is 32-bit integer arithmetic in which no
# intermediate exceeds 2^63 (so it is exact in signed 64-bit SQL integers, DuckDB and Spark).
# ----------------------------------------------------------------------------------------

#: Field separator of the hashed texts (ASCII unit separator, ``chr(31)``).
BOUNDING_SEPARATOR = "\x1f"
_M32 = 0xFFFFFFFF
#: The 32-bit mask of the bounding key's arithmetic (public: the SQL builders use it).
M32 = _M32
_SALT_MASK = (1 << 64) - 1
#: murmur3's 32-bit finaliser (Appleby, MurmurHash3 ``fmix32``): shifts and odd multipliers.
_FMIX32 = (("xs", 16), ("mul", 0x85EBCA6B), ("xs", 13), ("mul", 0xC2B2AE35), ("xs", 16))
#: murmur3's fmix32 steps (public: the SQL builders spell them out).
FMIX32_STEPS = _FMIX32


def salt_text(salt: int) -> str:
    """The salt as hashed: the decimal digits of ``salt mod 2^64``.

    Parameters
    ----------
    salt : int
        The per-query salt of a bounding rule, drawn from the randomness source
        independently of the data (any int; negative ones wrap modulo ``2^64``).

    Returns
    -------
    str
        The decimal text the md5 inputs start with (the SQL plans pass it as ``$salt``).
    """
    return str(int(salt) & _SALT_MASK)


def fmix32(x: int) -> int:
    """murmur3's ``fmix32`` of ``x`` (0 <= x < 2^32): a bijection of 32-bit words.

    Parameters
    ----------
    x : int
        A 32-bit word.

    Returns
    -------
    int
        Its image, also a 32-bit word.
    """
    for op, k in _FMIX32:
        x = x ^ (x >> k) if op == "xs" else (x * k) & _M32
    return x


def unit_seed(salt: int, unit_text: str) -> int:
    """The user's 64-bit seed: little-endian first 8 bytes of md5(salt, "u", unit text).

    Parameters
    ----------
    salt : int
        The per-query salt (:func:`salt_text`).
    unit_text : str
        The privacy unit's canonical text (:func:`canonical_text` of its value).

    Returns
    -------
    int
        The seed, ``0 <= seed < 2^64``: its low half ``a`` and high half ``b`` key the unit's
        :func:`bounding_key`.
    """
    text = BOUNDING_SEPARATOR.join((salt_text(salt), "u", unit_text))
    return int.from_bytes(hashlib.md5(text.encode("utf-8")).digest()[:8], "little")


def value_code(salt: int, value_text: str, tag: str = "v") -> int:
    """A value's 32-bit code on the unknown-domain path (md5 of salt, ``tag``, value text);
    a group found in the data is coded with the tag ``g`` (:func:`kept_found_groups`).

    Parameters
    ----------
    salt : int
        The per-query salt (for a group, the group rule's salt).
    value_text : str
        The value's canonical text (:func:`canonical_text`).
    tag : str, default ``"v"``
        ``"v"`` for a ranked value, ``"g"`` for a group found in the data.

    Returns
    -------
    int
        The code: the first 4 bytes of the md5, little-endian, ``0 <= code < 2^32``.
    """
    text = BOUNDING_SEPARATOR.join((salt_text(salt), tag, value_text))
    return int.from_bytes(hashlib.md5(text.encode("utf-8")).digest()[:4], "little")


def bounding_key(salt: int, unit_text: str, code: int) -> int:
    """The 32-bit key of the pair (user, value code): smaller keys are kept first.

    A two-round Even-Mansour construction over ``fmix32`` keyed by the user's seed; for a
    fixed user it is a bijection of the code, so distinct candidate positions never tie.

    Parameters
    ----------
    salt : int
        The per-query salt.
    unit_text : str
        The privacy unit's canonical text (:func:`unit_seed`).
    code : int
        The value's 32-bit code: a candidate's 0-based position, or :func:`value_code` of a
        value (or group) found in the data.

    Returns
    -------
    int
        The 32-bit key; each unit keeps the values of smallest key.
    """
    seed = unit_seed(salt, unit_text)
    return fmix32(fmix32(code ^ (seed & _M32)) ^ (seed >> 32))


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
        The text hashed by :func:`unit_seed` and :func:`value_code`.
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
    (issue 41: a ranked NaN was a value in Parquet and Arrow, none in pandas). Applied in the
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
        # NaN (they never count NaNs), and the NaN then reached the casts below after the
        # charge (issue 22).
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


def md5_bits_sql(text_sql: str, first_bytes: int, dialect: str = "duckdb") -> str:
    """The first ``first_bytes`` (4 or 8) bytes of md5(text), little-endian, as SQL.

    DuckDB: ``md5_number`` is the digest read as a little-endian 128-bit integer, so its low
    64 (or 32) bits are the first 8 (or 4) bytes, as UBIGINT (``md5_number_upper`` is the same
    number, but a macro through BIT and VARCHAR text, about 6x slower).

    Parameters
    ----------
    text_sql : str
        A text SQL expression, usually :func:`hashed_text_sql`.
    first_bytes : int
        4 (a value code, :func:`value_code`) or 8 (a unit seed, :func:`unit_seed`).
    dialect : {"duckdb", "spark"}, default ``"duckdb"``
        The SQL spelling (anything but ``"spark"`` is DuckDB).

    Returns
    -------
    str
        A SQL expression of the number: ``UBIGINT`` in DuckDB, ``DECIMAL(20, 0)`` in Spark.
    """
    if dialect == "spark":
        h = f"md5({text_sql})"
        hexdigits = ", ".join(f"substr({h}, {2 * k + 1}, 2)" for k in reversed(range(first_bytes)))
        return f"CAST(conv(concat({hexdigits}), 16, 10) AS DECIMAL(20, 0))"
    mask = (1 << (8 * first_bytes)) - 1
    return f"CAST(md5_number({text_sql}) & {mask} AS UBIGINT)"


def hashed_text_sql(tag: str, text_sql: str, salt_sql: str = "$salt") -> str:
    """SQL of the hashed text ``salt \\x1f tag \\x1f text`` (the salt as a text parameter).

    Parameters
    ----------
    tag : str
        ``"u"`` (a unit's seed), ``"v"`` (a value's code) or ``"g"`` (a group's code); put
        into the SQL as a literal.
    text_sql : str
        A text SQL expression: the canonical text (:func:`canonical_text_sql`).
    salt_sql : str, default ``"$salt"``
        SQL of the salt's text (:func:`salt_text`), by default the query parameter ``$salt``
        (a grouped release's group rule uses ``$group_salt``).

    Returns
    -------
    str
        A text SQL expression (``concat_ws`` with the separator ``chr(31)``).
    """
    return f"concat_ws(chr(31), {salt_sql}, '{tag}', {text_sql})"


def _fmix32_numpy(x: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    """:func:`fmix32` of every word of ``x`` (uint32 arithmetic wraps mod 2^32), in place."""
    for op, k in _FMIX32:
        if op == "xs":
            x ^= x >> np.uint32(k)
        else:
            x *= np.uint32(k)
    return x


def keep_smallest(
    seeds: npt.NDArray[np.uint64],
    lengths: npt.NDArray[np.int64],
    codes: npt.NDArray[np.uint32],
    ties: npt.NDArray[np.uint32],
    m: int,
) -> npt.NDArray[np.int64]:
    """The tie-breaks each user keeps, by the rule of :func:`bounding_key` (NumPy).

    Users come as consecutive runs: user ``j`` has the seed ``seeds[j]`` (:func:`unit_seed`)
    and the next ``lengths[j] >= 1`` entries of ``codes`` and ``ties`` (duplicates allowed).
    Each user keeps the ``m`` distinct entries with the smallest ``(key, tie)``; the result
    lists the kept ties (in no particular order). ``p = key * 2^32 + tie`` orders as
    ``(key, tie)``; for ``m`` up to 8 the ``m`` smallest distinct ``p`` of each run are found
    by ``m`` rounds of a segmented minimum (each round removes every copy of the last
    minimum), beyond that by one sort.

    Parameters
    ----------
    seeds : numpy.ndarray of uint64
        Each user's seed (:func:`unit_seed`), one per run.
    lengths : numpy.ndarray of int64
        The length of each user's run, each ``>= 1``.
    codes : numpy.ndarray of uint32
        Each entry's code (a candidate position or a value's :func:`value_code`).
    ties : numpy.ndarray of uint32
        Each entry's tie-break, below ``2^32 - 1`` (a candidate position or a value's rank);
        equal ties are the same value.
    m : int
        ``max_contributions``: the most distinct entries each user keeps.

    Returns
    -------
    numpy.ndarray of int64
        The kept ties, every user's together (``bincount`` gives each value's score).
    """
    return _keep(seeds, lengths, codes, ties, m, 1)[0]


def keep_smallest_counted(
    seeds: npt.NDArray[np.uint64],
    lengths: npt.NDArray[np.int64],
    codes: npt.NDArray[np.uint32],
    ties: npt.NDArray[np.uint32],
    m: int,
    max_rows_per_value: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """:func:`keep_smallest` with each kept entry's row count, capped.

    The kept ties are those of :func:`keep_smallest` (the same ``m`` values per user: the
    choice reads distinct entries only), and beside each one ``min(copies, r)``: how many of
    the user's entries carry that tie (the user's rows with that value), at most
    ``r = max_rows_per_value`` (docs/contribution_bounding.md, "Rows per value"). A
    user's weights depend on that user's entries only, so one user moves each score by at
    most ``r``, at most ``m`` scores.

    Parameters
    ----------
    seeds, lengths, codes, ties, m
        As in :func:`keep_smallest`.
    max_rows_per_value : int
        ``r >= 1``: the cap on one user's rows counted for one kept value.

    Returns
    -------
    tuple of numpy.ndarray of int64
        The kept ties and their capped counts, entry by entry.
    """
    return _keep(seeds, lengths, codes, ties, m, max_rows_per_value)


def _keep(
    seeds: npt.NDArray[np.uint64],
    lengths: npt.NDArray[np.int64],
    codes: npt.NDArray[np.uint32],
    ties: npt.NDArray[np.uint32],
    m: int,
    r: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The kept ties and (``r > 1``) their copies capped at ``r`` (``r = 1``: all ones)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if len(lengths) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    seeds = np.asarray(seeds, dtype=np.uint64)
    x = np.asarray(codes, dtype=np.uint32) ^ np.repeat((seeds & _M32).astype(np.uint32), lengths)
    _fmix32_numpy(x)
    x ^= np.repeat((seeds >> np.uint64(32)).astype(np.uint32), lengths)
    _fmix32_numpy(x)
    p = (x.astype(np.uint64) << np.uint64(32)) | np.asarray(ties, dtype=np.uint64)
    del x
    starts = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    copies: npt.NDArray[np.int64] | None = None
    if m <= 8:
        gone = np.uint64(np.iinfo(np.uint64).max)  # above every p (ties < 2^32 - 1)
        rounds, counted = [], []
        for round_ in range(m):
            best = np.minimum.reduceat(p, starts)
            live = best != gone
            rounds.append(best[live])
            if round_ + 1 < m or r > 1:
                copy = p == np.repeat(best, lengths)
                if r > 1:  # every copy of the minimum is one row of that (user, value)
                    counted.append(np.add.reduceat(copy.astype(np.int64), starts)[live])
                if round_ + 1 < m:
                    p[copy] = gone
        found = np.concatenate(rounds)
        if r > 1:
            copies = np.concatenate(counted)
    else:
        user = np.repeat(np.arange(len(lengths)), lengths)
        order = np.lexsort((p, user))
        p, user = p[order], user[order]
        first = np.ones(len(p), dtype=bool)
        first[1:] = (p[1:] != p[:-1]) | (user[1:] != user[:-1])  # distinct within a user
        at = np.flatnonzero(first)
        runs = np.diff(np.append(at, len(p)))  # copies of each distinct (user, p)
        p, user = p[first], user[first]
        begin = np.searchsorted(user, user, side="left")
        chosen = np.arange(len(p)) - begin < m
        found = p[chosen]
        copies = runs[chosen].astype(np.int64)
    kept: npt.NDArray[np.int64] = (found & np.uint64(_M32)).astype(np.int64)
    if r > 1 and copies is not None:
        return kept, np.minimum(copies, r).astype(np.int64)
    return kept, np.ones(len(kept), dtype=np.int64)


def check_rows_per_value(max_rows_per_value: Any, privacy_unit: str | None) -> int:
    """``max_rows_per_value`` as an int ``>= 1``; other than 1 only with a privacy unit.

    Public facts only (the parameter and whether a unit is given), so the recipes raise it
    before any charge; the engines check again.

    Parameters
    ----------
    max_rows_per_value : int
        The most rows one unit counts for each value it keeps.
    privacy_unit : str or None
        The privacy unit column; ``None`` when rows are the units.

    Returns
    -------
    int
        ``max_rows_per_value`` as an int.

    Raises
    ------
    ParameterError
        Not an integer ``>= 1``, or ``!= 1`` without a privacy unit (each row is then its
        own unit and counts once).
    """
    if isinstance(max_rows_per_value, bool) or not isinstance(
        max_rows_per_value, (int, np.integer)
    ):
        raise ParameterError(
            f"max_rows_per_value must be an integer >= 1, got {max_rows_per_value!r}"
        )
    r = int(max_rows_per_value)
    if r < 1:
        raise ParameterError(f"max_rows_per_value must be an integer >= 1, got {r}")
    if r != 1 and privacy_unit is None:
        raise ParameterError(
            "max_rows_per_value applies only with a privacy_unit column (without one each "
            "row is its own unit and counts once)"
        )
    return r


# ----------------------------------------------------------------------------------------
# Rows per unit: the rows of a numeric column each unit keeps (quantiles, pricing).
# ----------------------------------------------------------------------------------------


def row_key(salt: int, unit_text: str, value: float) -> int:
    """The 32-bit key of a row of unit ``unit_text`` holding the number ``value``.

    ``bounding_key(salt, unit_text, value_code(salt, canonical_text(value)))``: the key of
    the unknown-domain path with the row's value (a float64, ``-0.0`` read as ``0.0``) as the
    value. Rows of one unit with equal values have equal keys.

    Parameters
    ----------
    salt : int
        The per-query salt of the row rule.
    unit_text : str
        The unit's canonical text.
    value : float
        The row's number (not NaN).

    Returns
    -------
    int
        The 32-bit key; each unit keeps its rows of smallest ``(key, value)``.
    """
    x = float(value) + 0.0  # -0.0 is 0.0, as the engines normalise it
    return bounding_key(salt, unit_text, value_code(salt, canonical_text(x)))


def kept_rows(
    salt: int, rows: Sequence[tuple[str, float]], max_rows: int
) -> dict[str, list[float]]:
    """The Python reference of the rule "each unit keeps at most ``max_rows`` rows".

    ``rows`` are ``(unit text, value)`` pairs (the unit's canonical text, the row's number;
    rows without a unit or a number are not given). Within a unit the rows are ordered by
    ``(row_key, value)`` and the first ``max_rows`` are kept. Rows with equal values are
    interchangeable, so the kept multiset is determined, and it depends only on that unit's
    rows and the salt (docs/contribution_bounding.md, "Rows per unit").

    Parameters
    ----------
    salt : int
        The per-query salt.
    rows : sequence of (str, float)
        The rows as (canonical unit text, value); NaN values are not rows.
    max_rows : int
        How many rows each unit keeps (at least 1).

    Returns
    -------
    dict of str to list of float
        Each unit's kept values, in the rule's order.
    """
    by_unit: dict[str, list[tuple[int, float]]] = {}
    for unit, value in rows:
        x = float(value) + 0.0
        by_unit.setdefault(unit, []).append((row_key(salt, unit, x), x))
    return {u: [x for _, x in sorted(items)[: int(max_rows)]] for u, items in by_unit.items()}


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


#: Candidate positions are 32-bit codes of the rule (docs/contribution_bounding.md), packed
#: below the key: at most this many candidates with a privacy unit (both engines).
MAX_BOUNDED_CANDIDATES = (1 << 32) - 1


def check_bounded_candidates(count: int) -> None:
    """Public: with a privacy unit a candidate's code is its position, a 32-bit word
    (docs/contribution_bounding.md, rule 4): at most :data:`MAX_BOUNDED_CANDIDATES`.

    Parameters
    ----------
    count : int
        The number of candidates (or listed groups), checked only when a privacy unit is
        given (the caller's choice).

    Raises
    ------
    ParameterError
        More than :data:`MAX_BOUNDED_CANDIDATES`.
    """
    if count > MAX_BOUNDED_CANDIDATES:
        raise ParameterError(
            f"candidates: at most {MAX_BOUNDED_CANDIDATES} (2^32 - 1) candidates with a "
            f"privacy_unit (the bounding rule codes a candidate by its 32-bit position), "
            f"got {count}"
        )


# ----------------------------------------------------------------------------------------
# Grids
# ----------------------------------------------------------------------------------------

#: The most cells of a quantile grid (its counts come back to the driver).
MAX_CELLS = 1 << 20


def grid_size(lo: float, hi: float, resolution: float | None) -> int:
    """``G = ceil((hi - lo) / w)`` cells (``w`` default ``(hi - lo) / 10^6``), 1 to
    :data:`MAX_CELLS`.

    Parameters
    ----------
    lo, hi : float
        The public bounds, ``lo < hi``.
    resolution : float or None
        The grid's cell width ``w > 0`` (checked by the caller); ``None``: ``(hi - lo) / 10^6``.

    Returns
    -------
    int
        The number of cells, at least 1 and at most :data:`MAX_CELLS`.

    Raises
    ------
    ParameterError
        ``hi - lo`` overflows a float.
    """
    if not math.isfinite(hi - lo):
        raise ParameterError(
            f"bounds ({lo:g}, {hi:g}) are too wide for the Spark engine's grid: hi - lo "
            "overflows a float"
        )
    w = float(resolution) if resolution is not None else (hi - lo) / 10**6
    return int(min(MAX_CELLS, max(1, math.ceil((hi - lo) / w))))


def grid_edges(lo: float, hi: float, cells: int) -> npt.NDArray[np.float64]:
    """The left edges ``lo + (hi - lo) j / cells``, ``j = 0..cells-1`` (float).

    Parameters
    ----------
    lo, hi : float
        The public bounds.
    cells : int
        The number of cells (:func:`grid_size`).

    Returns
    -------
    numpy.ndarray of float64
        The ``cells`` left edges, increasing, the first ``lo`` (``hi`` is not included).
    """
    edges: npt.NDArray[np.float64] = lo + (hi - lo) * np.arange(cells, dtype=np.float64) / cells
    return edges


def grid_cell(
    values: npt.NDArray[np.float64], lo: float, hi: float, cells: int
) -> npt.NDArray[np.int64]:
    """The cell of each value, by the arithmetic :func:`grid_counts` runs on Spark.

    Parameters
    ----------
    values : numpy.ndarray of float64
        Numbers (no NaN); each is clamped to ``[lo, hi]`` first.
    lo, hi : float
        The public bounds.
    cells : int
        The number of cells (:func:`grid_size`).

    Returns
    -------
    numpy.ndarray of int64
        For each value the cell ``j`` with ``g_j <= x < g_{j+1}`` (:func:`grid_edges`, the
        last cell closed at ``hi``), in ``0 .. cells - 1``.
    """
    lo, hi = float(lo), float(hi)
    scale = float(cells) / (hi - lo)
    x = np.clip(np.asarray(values, dtype=np.float64), lo, hi)
    with np.errstate(invalid="ignore", over="ignore"):
        raw = np.floor((x - lo) * scale)
    j = np.clip(raw, 0, cells - 1).astype(np.int64)

    def edge(k: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        out: npt.NDArray[np.float64] = lo + (hi - lo) * k.astype(np.float64) / float(cells)
        return out

    down = x < edge(j)
    up = (j < cells - 1) & (x >= edge(j + 1))
    out: npt.NDArray[np.int64] = np.where(down, j - 1, np.where(up, j + 1, j))
    return out


def grid_cell_width(lo: float, hi: float, cells: int) -> float:
    """The widest cell of the float grid (``max g_{j+1} - g_j``, ``g_cells = hi``), rounded
    up: a row rounded down to its cell's left edge moves by less than this. It is ``(hi - lo)
    / cells`` up to rounding, at most the resolution ``w`` unless the grid is capped at
    :data:`MAX_CELLS` (``w < (hi - lo) / 2^20``). Public parameters only.

    Parameters
    ----------
    lo, hi : float
        The public bounds.
    cells : int
        The number of cells (:func:`grid_size`).

    Returns
    -------
    float
        The widest cell's width, two float steps up: how far rounding a row down to its
        cell's edge may move it.
    """
    points = np.append(grid_edges(lo, hi, cells), float(hi))
    widest = float(np.max(np.diff(points)))  # each difference within 2^-53 relative
    return float(np.nextafter(np.nextafter(widest, np.inf), np.inf))


# ----------------------------------------------------------------------------------------
# Groups per unit: the groups of a grouped release each unit keeps.
# ----------------------------------------------------------------------------------------


def kept_groups(
    group_salt: int, unit_text: str, positions: Sequence[int], max_groups: int
) -> list[int]:
    """The Python reference of the rule "each unit keeps at most ``max_groups`` groups".

    ``positions`` are the positions, in the public group list, of the groups the unit's rows
    fall in (after rows matching no candidate, no group or holding NULL are dropped;
    repeats allowed). The unit keeps the ``max_groups`` distinct positions with the smallest
    :func:`bounding_key` ``(group_salt, unit_text, position)``: a bijection of the position
    for a fixed unit, so there are no ties. The choice depends only on that unit's rows and
    the salt; a unit then touches at most ``max_groups`` groups, the fact the grouped
    release's composition rests on (docs/contribution_bounding.md, "Groups per unit").

    Parameters
    ----------
    group_salt : int
        The per-query salt of the group rule (drawn apart from the value rule's salt).
    unit_text : str
        The unit's canonical text (as :func:`unit_seed` hashes it).
    positions : sequence of int
        The unit's group positions (each below ``2^32``).
    max_groups : int
        How many groups the unit keeps (at least 1).

    Returns
    -------
    list of int
        The kept positions, smallest key first.
    """
    seed = unit_seed(group_salt, unit_text)
    a, b = seed & _M32, seed >> 32

    def key(g: int) -> int:
        return fmix32(fmix32(int(g) ^ a) ^ b)

    return sorted(set(int(g) for g in positions), key=key)[: int(max_groups)]


def kept_found_groups(
    group_salt: int, unit_text: str, groups: Sequence[Any], max_groups: int
) -> list[Any]:
    """The Python reference of the rule "each unit keeps at most ``max_groups`` groups" when
    the groups are found in the data (:mod:`dpselect.data.discovered_groups`).

    ``groups`` are the ``by`` values of the unit's rows (repeats allowed, no NULL). Each is
    coded by :func:`value_code` ``(group_salt, canonical_text(group), "g")``; the unit keeps
    the ``max_groups`` distinct groups with the smallest (:func:`bounding_key` ``(group_salt,
    unit_text, code)``, group), the group itself (its order among values) breaking the ties of
    two codes that collide. The choice reads only the unit's rows and the salt, as
    :func:`kept_groups` does.

    Parameters
    ----------
    group_salt : int
        The per-query salt of the group rule.
    unit_text : str
        The unit's canonical text.
    groups : sequence
        The ``by`` values of the unit's rows (comparable with each other).
    max_groups : int
        How many groups the unit keeps (at least 1).

    Returns
    -------
    list
        The kept groups, smallest key first.
    """

    def key(group: Any) -> tuple[int, Any]:
        code = value_code(group_salt, canonical_text(group), "g")
        return bounding_key(group_salt, unit_text, code), group

    return sorted(set(groups), key=key)[: int(max_groups)]
