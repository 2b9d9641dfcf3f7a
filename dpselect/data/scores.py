"""Score vectors over a public candidate list, computed by DuckDB in one scan of the data.

Two scorings, each with a proven sensitivity used by the mechanisms' maps:

- **Rows are people** (no privacy unit): the score of a candidate is the number of rows whose
  ``column`` equals it. Adding or removing one row changes one score by 1: L-infinity and
  L1 sensitivity 1, monotonic (range sensitivity 1).
- **A privacy unit column** (``privacy_unit="user_id"``): each user's distinct candidate values
  are ranked by a keyed hash of (salt, user, value) and only the first ``max_contributions``
  are kept; the score of a candidate is the number of users who kept it. Which values a user
  keeps depends only on that user's own rows and the per-query salt, so adding or removing one
  user (with any number of rows) changes at most ``max_contributions`` scores, each by 1, all
  in the same direction: L-infinity sensitivity 1, monotonic, L1 sensitivity
  ``max_contributions``. The exact rule (the same in every engine, so that DuckDB and Spark
  give bit-identical scores) is :func:`bounding_key` and docs/contribution_bounding.md.

Privacy units are grouped **by value**, never by their text: ``0.0`` and ``-0.0`` are one unit
(floating units are normalised by adding ``0.0``), and a NULL or NaN unit is missing (its rows
count for nobody). The key is injective in the raw value (:meth:`Table.unit_column`,
:mod:`dpselect.data.unit_keys`): text by its raw bytes, mixed Python objects by type and
value. Rows whose ``column`` is NULL, and values outside the candidate list, are
ignored; candidates absent from the data score 0. Empty data is valid: every score is 0.

**Matching candidates to values** is by value and decided by public facts only (the column's
type from the schema and the candidates' Python types), never by the rows:

- When the column is **text** (every CSV and JSON column, unless a schema says otherwise) and
  the candidates are all **numbers**, the text is read as a number: ``TRY_CAST(column AS
  DOUBLE)`` for float (or mixed int and float) candidates, and for int candidates the same
  value when it is integral, as ``BIGINT``. So ``"4"``, ``"4.0"`` and ``" 4 "`` all match
  ``4.0`` (and ``4``); ``"4.5"`` matches no int; text that is not a number matches nothing.
- Otherwise candidates are converted to the column's type (``TRY_CAST``; one that does not
  convert matches nothing).

Two candidates that convert to the same value (``"7"`` and ``"07"`` for an integer column,
``4`` and ``4.0`` on a text column) both count its rows: without a privacy unit one row then
moves two scores, each by at most 1. The selection maps use only that (L-infinity,
monotonic); the noisy histograms use the L1 / L2 sensitivity, which is then the public
:func:`match_multiplicity` (the most candidates one value matches), not 1. The column's type
never depends on the rows (:mod:`dpselect.data.tables`), so neither does this matching.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from .candidates import as_arrow
from .tables import Table
from .unit_keys import RAW_KEY_TYPE

__all__ = [
    "BOUNDING_SEPARATOR",
    "bounding_key",
    "candidate_multiplicity",
    "candidate_scores",
    "canonical_text",
    "canonical_text_sql",
    "fmix32",
    "keep_smallest",
    "match_multiplicity",
    "match_sql",
    "normalised_sql",
    "numeric_candidate_type",
    "salt_text",
    "top_values",
    "unit_seed",
    "value_code",
]

Progress = Callable[[float], None] | None
_CANDIDATES_VIEW = "dpselect_candidates"
_CANDIDATES_TABLE = "dpselect_candidates_table"

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
_SALT_MASK = (1 << 64) - 1
#: murmur3's 32-bit finaliser (Appleby, MurmurHash3 ``fmix32``): shifts and odd multipliers.
_FMIX32 = (("xs", 16), ("mul", 0x85EBCA6B), ("xs", 13), ("mul", 0xC2B2AE35), ("xs", 16))


def salt_text(salt: int) -> str:
    """The salt as hashed: the decimal digits of ``salt mod 2^64``."""
    return str(int(salt) & _SALT_MASK)


def fmix32(x: int) -> int:
    """murmur3's ``fmix32`` of ``x`` (0 <= x < 2^32): a bijection of 32-bit words."""
    for op, k in _FMIX32:
        x = x ^ (x >> k) if op == "xs" else (x * k) & _M32
    return x


def unit_seed(salt: int, unit_text: str) -> int:
    """The user's 64-bit seed: little-endian first 8 bytes of md5(salt, "u", unit text)."""
    text = BOUNDING_SEPARATOR.join((salt_text(salt), "u", unit_text))
    return int.from_bytes(hashlib.md5(text.encode("utf-8")).digest()[:8], "little")


def value_code(salt: int, value_text: str) -> int:
    """A value's 32-bit code on the unknown-domain path (md5 of salt, "v", value text)."""
    text = BOUNDING_SEPARATOR.join((salt_text(salt), "v", value_text))
    return int.from_bytes(hashlib.md5(text.encode("utf-8")).digest()[:4], "little")


def bounding_key(salt: int, unit_text: str, code: int) -> int:
    """The 32-bit key of the pair (user, value code): smaller keys are kept first.

    A two-round Even-Mansour construction over ``fmix32`` keyed by the user's seed; for a
    fixed user it is a bijection of the code, so distinct candidate positions never tie.
    """
    seed = unit_seed(salt, unit_text)
    return fmix32(fmix32(code ^ (seed & _M32)) ^ (seed >> 32))


def canonical_text(value: Any) -> str:
    """The text a unit or a value is hashed as (Python reference of :func:`canonical_text_sql`).

    str as is; bool ``true``/``false``; int in decimal; float as ``[-]Mp E`` with ``M`` the
    53-bit integer significand and ``E`` the power of two (``0``, ``inf``, ``-inf``, ``nan``
    for the special values; ``-0.0`` is ``0``); dates ISO ``YYYY-MM-DD``; timestamps the
    integer microseconds since 1970-01-01 (UTC; naive timestamps read as UTC).
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


def _is_floating(sql_type: str) -> bool:
    return sql_type.upper() in ("FLOAT", "DOUBLE", "REAL", "FLOAT4", "FLOAT8")


def normalised_sql(expr: str, sql_type: str) -> str:
    """``expr`` as grouped: floating values plus ``0.0`` (so ``-0.0`` is ``+0.0``), else as is."""
    if _is_floating(sql_type):
        return f"(CAST({expr} AS DOUBLE) + CAST(0.0 AS DOUBLE))"
    return expr


def canonical_text_sql(expr: str, sql_type: str, dialect: str = "duckdb") -> str:
    """SQL text of ``expr`` (a value of the DuckDB type ``sql_type``) as :func:`canonical_text`.

    ``dialect`` is ``"duckdb"`` or ``"spark"`` (the Spark SQL spelling of the same rule, for
    the Spark engine; its equality with DuckDB is that engine's test). Types: text, booleans,
    integers, decimals (plain notation with the column's scale), dates, timestamps, floats,
    blobs (upper-case hex); anything else is the engine's own text (not portable).
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
    if _is_floating(t):
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


def _md5_bits_sql(text_sql: str, first_bytes: int, dialect: str = "duckdb") -> str:
    """The first ``first_bytes`` (4 or 8) bytes of md5(text), little-endian, as SQL.

    DuckDB: ``md5_number`` is the digest read as a little-endian 128-bit integer, so its low
    64 (or 32) bits are the first 8 (or 4) bytes, as UBIGINT (``md5_number_upper`` is the same
    number, but a macro through BIT and VARCHAR text, about 6x slower).
    """
    if dialect == "spark":
        h = f"md5({text_sql})"
        hexdigits = ", ".join(f"substr({h}, {2 * k + 1}, 2)" for k in reversed(range(first_bytes)))
        return f"CAST(conv(concat({hexdigits}), 16, 10) AS DECIMAL(20, 0))"
    mask = (1 << (8 * first_bytes)) - 1
    return f"CAST(md5_number({text_sql}) & {mask} AS UBIGINT)"


def _hashed_text_sql(tag: str, text_sql: str, salt_sql: str = "$salt") -> str:
    """SQL of the hashed text ``salt \x1f tag \x1f text`` (the salt as a text parameter)."""
    return f"concat_ws(chr(31), {salt_sql}, '{tag}', {text_sql})"


def _fmix32_bodies(x: str) -> list[str]:
    """``fmix32`` as successive DuckDB SQL expressions of the UBIGINT column ``x`` (each applied
    to the last). ``x < 2^32`` and every multiplier is below 2^32, so each product is below
    2^64: exact in UBIGINT, and the same numbers as the Spark engine's signed arithmetic.
    Each shift-xor is merged with the multiplication after it (``x`` appears twice in one
    expression, never more), so the five steps take three projections."""
    bodies = []
    pending = None
    for op, k in _FMIX32:
        if op == "xs":
            pending = f"xor({x}, {x} >> {k})"
        else:
            bodies.append(f"({pending} * CAST({k} AS UBIGINT)) & CAST({_M32} AS UBIGINT)")
            pending = None
    if pending is not None:
        bodies.append(pending)
    return bodies


def _chain(source: str, bodies: list[str], x: str = "x") -> str:
    """``source`` with the column ``x`` replaced by each body in turn (one projection each:
    nesting them would repeat ``x`` 2^10 times in one expression)."""
    for body in bodies:
        source = f"(SELECT * REPLACE ({body} AS {x}) FROM {source})"
    return source


def _keyed_sql(pairs: str, code: str, unit_type: str) -> str:
    """``pairs`` (columns ``u`` and the code column) with ``x`` = :func:`bounding_key` and
    ``b`` = the seed's upper half, every column kept (used by
    :func:`dpselect.data.partitions.person_values`). The seeds come from the distinct units
    of ``pairs``, one md5 each."""
    seed = _unit_seed_sql(unit_type)
    seeds = f"""(SELECT u, h & {_M32} AS a, h >> 32 AS b
                 FROM (SELECT u, {seed} AS h FROM (SELECT DISTINCT u FROM {pairs})
                       WHERE {_unit_kept_sql(unit_type)}))"""
    start = f"""(SELECT p.*, xor(p.{code}, s.a) AS x, s.b AS b
                 FROM {pairs} AS p JOIN {seeds} AS s ON p.u = s.u)"""
    return _chain(start, [*_fmix32_bodies("x"), "xor(x, b)", *_fmix32_bodies("x")])


def _unit_kept_sql(unit_type: str) -> str:
    """The condition on a distinct unit ``u`` (after grouping) that it is a unit: a floating
    unit that is NaN is none. The per-row filter of :func:`_unit_sql` uses ``isnan``, which
    DuckDB folds to false when a Parquet file's statistics (which never count NaN) say the
    column has none: all NaN rows were then one unit (issue 22). The engine's text of the
    value cannot be folded; it is computed once per distinct unit, not per row."""
    if not _is_floating(unit_type):
        return "TRUE"
    return "lower(CAST(u AS VARCHAR)) NOT IN ('nan', '-nan')"


def _seeds_sql(privacy_unit: str, unit_type: str) -> str:
    """``(u, a, b)`` for every distinct unit of the data: one md5 per unit, not per row.

    Read from the unit column alone (a narrow scan); a unit without candidate rows gets a
    seed that is never used. A row whose unit has no seed is dropped by the inner join with
    the seeds, so :func:`_unit_kept_sql` here removes NaN units from every plan using it."""
    unit, valid = _unit_sql(privacy_unit, unit_type)
    seed = _unit_seed_sql(unit_type)
    return f"""(SELECT u, h & {_M32} AS a, h >> 32 AS b
                FROM (SELECT u, {seed} AS h FROM (SELECT DISTINCT {unit} AS u FROM data
                                                  WHERE {valid})
                      WHERE {_unit_kept_sql(unit_type)}))"""


def _packed_sql(pairs: str, code: str, tie: str) -> str:
    """``pairs`` (columns ``u``, ``code`` and ``tie``, UBIGINT below 2^32) as ``(u, p)`` with
    ``p = key * 2^32 + tie``, ``key`` = :func:`bounding_key` of (u, code): ordering ``p`` is
    ordering ``(key, tie)``, and ``p mod 2^32`` gives the tie-break back. The seeds come
    from the CTE ``seeds`` (:func:`_seeds_sql`), joined on the unit.
    """
    start = f"""(SELECT p.u AS u, p.{tie} AS t, xor(p.{code}, s.a) AS x, s.b AS b
                 FROM {pairs} AS p JOIN seeds AS s ON p.u = s.u)"""
    rounds = _fmix32_bodies("x")  # the last one (a shift-xor) is merged with what follows
    keyed = _chain(start, [*rounds[:-1], f"xor({rounds[-1]}, b)", *rounds[:-1]])
    return f"(SELECT u, ({rounds[-1]} << 32) | t AS p FROM {keyed})"


def _kept_sql(pairs: str, code: str, tie: str, m: int) -> str:
    """The tie-break value of every kept (user, value): per user, the ``m`` smallest ``p``
    (:func:`_packed_sql`) among the user's distinct pairs, as the column ``t``.

    ``m = 1``: ``min(p)`` over the rows, so duplicate rows need no ``DISTINCT`` (one integer
    aggregate per user). ``m > 1``: the pairs are made distinct first, then DuckDB's bounded
    top-n aggregate ``min(p, m)`` keeps the ``m`` smallest.
    """
    if m == 1:
        return f"(SELECT min(p) & {_M32} AS t FROM {_packed_sql(pairs, code, tie)} GROUP BY u)"
    distinct = f"(SELECT DISTINCT u, {code}, {tie} FROM {pairs})"
    chosen = f"(SELECT unnest(min(p, {m})) AS p FROM {_packed_sql(distinct, code, tie)} GROUP BY u)"
    return f"(SELECT p & {_M32} AS t FROM {chosen})"


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
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    if len(lengths) == 0:
        return np.zeros(0, dtype=np.int64)
    seeds = np.asarray(seeds, dtype=np.uint64)
    x = np.asarray(codes, dtype=np.uint32) ^ np.repeat((seeds & _M32).astype(np.uint32), lengths)
    _fmix32_numpy(x)
    x ^= np.repeat((seeds >> np.uint64(32)).astype(np.uint32), lengths)
    _fmix32_numpy(x)
    p = (x.astype(np.uint64) << np.uint64(32)) | np.asarray(ties, dtype=np.uint64)
    del x
    starts = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    if m <= 8:
        gone = np.uint64(np.iinfo(np.uint64).max)  # above every p (ties < 2^32 - 1)
        rounds = []
        for round_ in range(m):
            best = np.minimum.reduceat(p, starts)
            rounds.append(best[best != gone])
            if round_ + 1 < m:
                p[p == np.repeat(best, lengths)] = gone
        found = np.concatenate(rounds)
    else:
        user = np.repeat(np.arange(len(lengths)), lengths)
        order = np.lexsort((p, user))
        p, user = p[order], user[order]
        first = np.ones(len(p), dtype=bool)
        first[1:] = (p[1:] != p[:-1]) | (user[1:] != user[:-1])  # distinct within a user
        p, user = p[first], user[first]
        begin = np.searchsorted(user, user, side="left")
        found = p[np.arange(len(p)) - begin < m]
    kept: npt.NDArray[np.int64] = (found & np.uint64(_M32)).astype(np.int64)
    return kept


def _unit_text_sql(unit_type: str) -> str:
    return canonical_text_sql("u", "DOUBLE" if _is_floating(unit_type) else unit_type)


def _unit_seed_sql(unit_type: str) -> str:
    """SQL of the seed of the unit ``u`` (:func:`unit_seed`): md5 of (salt, ``u``, the unit's
    canonical text), or of its bytes for a raw key (:data:`~.unit_keys.RAW_KEY_TYPE`: text
    read byte for byte, so valid text has the seed of its text)."""
    if unit_type == RAW_KEY_TYPE:
        prefix = _hashed_text_sql("u", "''")
        return f"CAST(md5_number(encode({prefix}) || u) & {(1 << 64) - 1} AS UBIGINT)"
    return _md5_bits_sql(_hashed_text_sql("u", _unit_text_sql(unit_type)), 8)


# ----------------------------------------------------------------------------------------
# Candidates and matching
# ----------------------------------------------------------------------------------------


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@contextmanager
def _candidates_source(
    table: Table, candidates: Sequence[Any], materialize: bool
) -> Iterator[tuple[str, dict[str, Any]]]:
    """SQL of the candidates ``(c, i)`` (``i`` = position) and its parameters, while in use.

    A typed Arrow array is registered (zero copy, fast for 10^5 and more candidates); without
    pyarrow, or for mixed types, the list goes as a query parameter (str for other types).
    ``materialize``: copy them into a temporary table first (a few ms), without which DuckDB
    reports no progress for the query (it cannot for a scan of a Python object).
    """
    array = as_arrow(candidates)
    registered = False
    if array is not None:
        import pyarrow as pa

        positions = pa.array(np.arange(len(array), dtype=np.int64))
        table.connection.register(_CANDIDATES_VIEW, pa.table({"c": array, "i": positions}))
        registered = True
        source, params = _CANDIDATES_VIEW, {}
    else:
        kinds = set(map(type, candidates))
        plain = len(kinds) == 1 and kinds <= {str, int, float}
        values = list(candidates) if plain else [str(c) for c in candidates]
        source = (
            "(SELECT unnest($cands) AS c, CAST(generate_subscripts($cands, 1) - 1 AS BIGINT) AS i)"
        )
        params = {"cands": values}
    try:
        if materialize:
            table.connection.execute(
                f"CREATE OR REPLACE TEMP TABLE {_CANDIDATES_TABLE} AS SELECT c, i FROM {source}",
                params,
            )
            yield _CANDIDATES_TABLE, {}
            table.connection.execute(f"DROP TABLE IF EXISTS {_CANDIDATES_TABLE}")
        else:
            yield source, dict(params)
    finally:
        if registered:
            table.connection.unregister(_CANDIDATES_VIEW)


_INT64 = (-(1 << 63), (1 << 63) - 1)


def _is_text(sql_type: str) -> bool:
    return sql_type.upper() == "VARCHAR"


def numeric_candidate_type(candidates: Sequence[Any]) -> str | None:
    """``"BIGINT"`` (all int in int64), ``"DOUBLE"`` (float, or int and float), or ``None``.

    ``bool`` is not a number here (``True`` is not matched to ``"1"``).
    """
    kinds = set(map(type, candidates))
    if not kinds or not kinds <= {int, float}:
        return None
    if kinds == {int}:
        if all(_INT64[0] <= c <= _INT64[1] for c in candidates):
            return "BIGINT"
        return None
    return "DOUBLE"


def match_sql(column_sql: str, col_type: str, candidates: Sequence[Any]) -> tuple[str, str]:
    """SQL of (the column's value as matched, the candidate ``c`` as matched) (module doc)."""
    number = numeric_candidate_type(candidates) if _is_text(col_type) else None
    if number == "DOUBLE":
        return f"TRY_CAST({column_sql} AS DOUBLE)", "TRY_CAST(c AS DOUBLE)"
    if number == "BIGINT":
        as_double = f"TRY_CAST({column_sql} AS DOUBLE)"
        as_int = f"TRY_CAST({column_sql} AS BIGINT)"
        integral = f"CASE WHEN {as_double} = floor({as_double}) THEN {as_int} END"
        return integral, "TRY_CAST(c AS BIGINT)"
    return column_sql, f"TRY_CAST(c AS {col_type})"


def match_multiplicity(col_type: str, candidates: Sequence[Any]) -> int:
    """The most candidates that one value of a ``col_type`` column matches (:func:`match_sql`).

    Public: it reads the column's type and the candidates, never the rows (the candidates are
    cast and grouped in a DuckDB of their own). Without a privacy unit one row adds 1 to the
    score of every candidate its value matches, so this is the L1 sensitivity (and the squared
    L2 sensitivity at most) of the rows-are-people scores: 1, unless two candidates convert to
    one value (``4`` and ``4.0`` on a text column, ``"7"`` and ``"07"`` on an integer one).
    With a privacy unit the bounding rule keeps candidate *positions*, so such candidates
    count toward ``max_contributions`` like any others.
    """
    import duckdb

    if _is_text(col_type) and all(isinstance(c, str) for c in candidates):
        return 1  # text matched as text: distinct candidates (load_candidates), one value each
    _, cand_match = match_sql("x", col_type, candidates)
    con = duckdb.connect(":memory:")
    try:
        holder = cast(Table, _ConnectionOnly(con))
        with _candidates_source(holder, candidates, False) as (source, params):
            rows = con.execute(
                f"""SELECT coalesce(max(n), 1) FROM (
                        SELECT count(*) AS n FROM (SELECT {cand_match} AS v FROM {source})
                        WHERE v IS NOT NULL GROUP BY v)""",
                params or None,
            ).fetchall()  # every row fetched: the registered view is dropped after this
    finally:
        con.close()
    return int(rows[0][0]) if rows else 1


def candidate_multiplicity(table: Table, column: str, candidates: Sequence[Any]) -> int:
    """The most candidates one value of ``column`` matches, by the matching of the engine that
    holds ``table``: the L1 sensitivity of :func:`candidate_scores` without a privacy unit.

    The recipes ask this, never which engine they hold. DuckDB tables: :func:`match_multiplicity`
    of the column's type (DuckDB's casts and equality, those of the score query). Spark tables:
    their own count (:meth:`dpselect.data.spark_engine.SparkTable.match_multiplicity`), with
    the Spark score query's join, whose equality is the column's: a collated text column
    (``string collate UTF8_LCASE``) matches ``'a'`` and ``'A'`` to one value, which DuckDB's
    rule keeps apart. Both read the schema and the candidates only, never a row, so the number
    is public and is known before the charge.
    """
    if getattr(table, "engine", "duckdb") == "spark":  # its own equality (data.spark_engine)
        return int(cast(Any, table).match_multiplicity(column, candidates))
    return match_multiplicity(table.require_column(column), candidates)


class _ConnectionOnly:
    """What :func:`_candidates_source` uses of a table: its connection."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection


# ----------------------------------------------------------------------------------------
# The score queries
# ----------------------------------------------------------------------------------------


def candidate_scores(
    table: Table,
    column: str,
    candidates: Sequence[Any],
    privacy_unit: str | None = None,
    max_contributions: int = 1,
    salt: int = 0,
    progress: Progress = None,
) -> npt.NDArray[np.int64]:
    """The score of every candidate, in the candidate list's order (module docstring).

    One scan of the data. Without a privacy unit the data is grouped by value first and the
    groups are then joined with the candidates (as fast as the plain ``GROUP BY``); with one,
    the rows are joined with the candidates first (so that a user's contributions are only
    spent on candidates), then grouped by user (:func:`_bounded_scores_sql`).
    """
    if getattr(table, "engine", "duckdb") == "spark":  # same semantics (data.spark_engine)
        from . import spark_engine

        return spark_engine.candidate_scores(
            cast(Any, table),
            column,
            candidates,
            privacy_unit,
            max_contributions,
            salt,
            progress,
        )
    col_type = table.require_column(column)
    unit_type = None
    if privacy_unit is not None:
        unit_type = table.require_column(privacy_unit, "privacy_unit")
    if (
        privacy_unit is not None
        and unit_type is not None
        and (int(max_contributions) > 1 or _is_text(unit_type))
    ):
        # Parquet text read as dictionaries (public facts only). m = 1 stays on the SQL plan,
        # which measured faster (docs/performance.md), unless the unit is text: DuckDB's
        # reader cannot give its raw bytes, and the SQL plan over a pyarrow dataset that
        # can (Table.unit_column) measured 1.32x the old plan's time and 1.33x its memory,
        # this one 1.21-1.32x and 0.78x (10^7 rows, 10^6 text users).
        from .dictionary_scores import dictionary_candidate_scores, dictionary_files

        files = dictionary_files(table, column, col_type, privacy_unit, unit_type)
        if files is not None:
            return dictionary_candidate_scores(table, files, column, candidates, privacy_unit,
                                               unit_type, int(max_contributions), salt,
                                               progress)  # fmt: skip
    if privacy_unit is not None:
        privacy_unit, unit_type = table.unit_column(privacy_unit)  # the injective key
    col_match, cand_match = match_sql(f"data.{_quote(column)}", col_type, candidates)
    with _candidates_source(table, candidates, progress is not None) as (source, params):
        cands = f"SELECT {cand_match} AS v, i FROM {source}"
        if privacy_unit is None or unit_type is None:
            sql = f"""
                WITH cands AS ({cands}),
                     counted AS (SELECT {col_match} AS v, count(*) AS n FROM data GROUP BY 1)
                SELECT cands.i AS i, counted.n AS n FROM counted JOIN cands ON counted.v = cands.v
            """
        elif int(max_contributions) > 1:
            sql = _unit_lists_sql(col_match, cands, privacy_unit, unit_type)
            params = params | {"salt": salt_text(salt)}
            return _kept_counts(table, sql, params, int(max_contributions), len(candidates),
                                None, progress)  # fmt: skip
        else:
            sql = _bounded_scores_sql(col_match, cands, privacy_unit, unit_type, 1)
            params = params | {"salt": salt_text(salt)}
        found = table.query_numpy(sql, params, progress)
    scores = np.zeros(len(candidates), dtype=np.int64)
    # One row per matched candidate position (the groups are distinct values, and two
    # candidates that cast to the same value are two positions, each with the full count).
    scores[np.asarray(found["i"], dtype=np.int64)] = np.asarray(found["n"], dtype=np.int64)
    return scores


def _unit_sql(privacy_unit: str, unit_type: str) -> tuple[str, str]:
    """(the unit as grouped, the condition for a row to have a unit): by value, not NULL/NaN."""
    unit = f"data.{_quote(privacy_unit)}"
    valid = f"{unit} IS NOT NULL"
    if _is_floating(unit_type):
        valid += f" AND NOT isnan({unit})"
    return normalised_sql(unit, unit_type), valid


def _bounded_scores_sql(
    col_match: str, cands: str, privacy_unit: str, unit_type: str, m: int
) -> str:
    """Scores with contributions bounded to ``m`` per user (:func:`bounding_key`'s rule).

    Rows are joined with the candidates first (contributions are only spent on candidates);
    each user's seed is one md5 per distinct user (:func:`_seeds_sql`), joined back on the
    unit; each row's key is 32-bit arithmetic, packed with the position as one integer, and one
    integer aggregate per user keeps the smallest (:func:`_kept_sql`). The key is a bijection
    of the position for a fixed user, so there are no ties.
    """
    unit, valid = _unit_sql(privacy_unit, unit_type)
    rows = f"""(SELECT {unit} AS u, CAST(cands.i AS UBIGINT) AS i
               FROM data JOIN cands ON {col_match} = cands.v WHERE {valid})"""
    return f"""
        WITH cands AS ({cands}), seeds AS {_seeds_sql(privacy_unit, unit_type)}
        SELECT CAST(t AS BIGINT) AS i, count(*) AS n FROM {_kept_sql(rows, "i", "i", m)}
        GROUP BY t
    """


def _unit_lists_sql(col_match: str, cands: str, privacy_unit: str, unit_type: str) -> str:
    """One row per user: its seed ``h`` (one md5 per user, on the grouped rows) and the list
    ``l`` of the candidate positions of its rows (duplicates included), for :func:`keep_smallest`.
    """
    unit, valid = _unit_sql(privacy_unit, unit_type)
    seed = _unit_seed_sql(unit_type)
    return f"""
        WITH cands AS ({cands})
        SELECT {seed} AS h, l
        FROM (SELECT {unit} AS u, list(CAST(cands.i AS UINTEGER)) AS l
              FROM data JOIN cands ON {col_match} = cands.v WHERE {valid} GROUP BY 1)
        WHERE {_unit_kept_sql(unit_type)}
    """


def _kept_counts(
    table: Table,
    sql: str,
    params: dict[str, Any],
    m: int,
    size: int,
    codes: npt.NDArray[np.uint32] | None,
    progress: Progress,
) -> npt.NDArray[np.int64]:
    """How many users keep each tie-break ``0 .. size - 1``: ``sql`` gives per user its seed
    ``h`` and the list ``l`` of its tie-breaks; the codes are the ties themselves (candidate
    positions) or ``codes[tie]`` (value ranks). Streamed in Arrow batches of users."""
    counts = np.zeros(size, dtype=np.int64)

    def consume(batch: Any) -> None:
        lists = batch.column(1)
        ties = lists.flatten().to_numpy()
        kept = keep_smallest(
            batch.column(0).to_numpy(),
            lists.value_lengths().to_numpy(),
            ties if codes is None else codes[ties],
            ties,
            m,
        )
        counts[:] += np.bincount(kept, minlength=size)

    table.query_batches(sql, params, consume, progress)
    return counts


def top_values(
    table: Table,
    column: str,
    limit: int,
    privacy_unit: str | None = None,
    max_contributions: int = 1,
    salt: int = 0,
    progress: Progress = None,
) -> list[tuple[Any, int]]:
    """The ``limit`` values with the largest scores, ties by value: input to the limited-domain
    mechanism, which is built for candidate sets taken from the data (Durfee and Rogers 2019).

    The scores are those of :func:`candidate_scores` with every non-NULL value a candidate
    (floating values grouped by value, ``-0.0`` as ``0.0``): a user changes at most
    ``max_contributions`` of them, each by 1 (the l0 sensitivity). With a privacy unit each
    distinct value gets a code (:func:`value_code`, one md5 per distinct value) and a user
    keeps the values with the smallest (:func:`bounding_key`, value).
    """
    if getattr(table, "engine", "duckdb") == "spark":  # same semantics (data.spark_engine)
        from . import spark_engine

        return spark_engine.top_values(
            cast(Any, table),
            column,
            limit,
            privacy_unit,
            max_contributions,
            salt,
            progress,
        )
    col_type = table.require_column(column)
    col = normalised_sql(f"data.{_quote(column)}", col_type)
    params: dict[str, Any] = {}
    if privacy_unit is not None:
        privacy_unit, unit_type = table.unit_column(privacy_unit)
        unit, valid = _unit_sql(privacy_unit, unit_type)
        v_text = canonical_text_sql("v", "DOUBLE" if _is_floating(col_type) else col_type)
        code = _md5_bits_sql(_hashed_text_sql("v", v_text), 4)
        # r: the value's rank in the engine's order, the rule's tie-break between two values
        # whose codes collide; it is packed below the key, so it must stay below 2^32 - 1
        # (keep_smallest marks removed entries with 2^64 - 1).
        rank = "(row_number() OVER (ORDER BY v) - 1)"
        vals = f"""SELECT v, w, CAST(CASE WHEN r < {_M32} THEN r
                                         ELSE error('more than 2^32 distinct values') END
                                    AS UBIGINT) AS r
                   FROM (SELECT v, {code} AS w, {rank} AS r
                         FROM (SELECT DISTINCT {col} AS v FROM data
                               WHERE data.{_quote(column)} IS NOT NULL))"""
        params["salt"] = salt_text(salt)
        if int(max_contributions) > 1:
            return _top_values_lists(
                table, vals, col, privacy_unit, unit_type, int(max_contributions), limit,
                params, progress,
            )  # fmt: skip
        rows = f"""(SELECT {unit} AS u, vals.w AS w, vals.r AS r
                   FROM data JOIN vals ON {col} = vals.v WHERE {valid})"""
        counted = f"""
            WITH vals AS MATERIALIZED ({vals}), seeds AS {_seeds_sql(privacy_unit, unit_type)},
                 kept AS (SELECT t AS r, count(*) AS n
                          FROM {_kept_sql(rows, "w", "r", 1)} GROUP BY t)
            SELECT vals.v AS v, kept.n AS n FROM kept JOIN vals ON kept.r = vals.r
        """
    else:
        counted = f"""SELECT {col} AS v, count(*) AS n FROM data
                      WHERE data.{_quote(column)} IS NOT NULL GROUP BY 1"""
    sql = f"SELECT v, n FROM ({counted}) ORDER BY n DESC, v LIMIT {int(limit)}"
    return [(v, int(n)) for v, n in table.query(sql, params, progress)]


_VALUES_TABLE = "dpselect_values"


def _top_values_lists(
    table: Table,
    vals: str,
    col: str,
    privacy_unit: str,
    unit_type: str,
    m: int,
    limit: int,
    params: dict[str, Any],
    progress: Progress,
) -> list[tuple[Any, int]]:
    """:func:`top_values` with ``m > 1``: the distinct values (code ``w``, rank ``r``) go to a
    temporary table; DuckDB lists each user's value ranks, :func:`keep_smallest` keeps ``m``
    per user, and the ``limit`` best ranks are turned back into values."""
    unit, valid = _unit_sql(privacy_unit, unit_type)
    seed = _unit_seed_sql(unit_type)
    try:
        table.query(f"CREATE OR REPLACE TEMP TABLE {_VALUES_TABLE} AS {vals}", params)
        codes = table.query_numpy(f"SELECT w FROM {_VALUES_TABLE} ORDER BY r")["w"]
        codes = np.asarray(codes, dtype=np.uint32)
        sql = f"""
            SELECT {seed} AS h, l
            FROM (SELECT {unit} AS u, list(CAST(vals.r AS UINTEGER)) AS l
                  FROM data JOIN {_VALUES_TABLE} AS vals ON {col} = vals.v WHERE {valid}
                  GROUP BY 1)
            WHERE {_unit_kept_sql(unit_type)}
        """
        counts = _kept_counts(table, sql, params, m, len(codes), codes, progress)
        ranks = np.flatnonzero(counts)
        best = ranks[np.lexsort((ranks, -counts[ranks]))][: max(int(limit), 0)]
        if len(best) == 0:
            return []
        found = table.query(
            f"SELECT r, v FROM {_VALUES_TABLE} WHERE r IN (SELECT unnest($ranks))",
            {"ranks": best.tolist()},
        )
        value_of = dict(found)
        return [(value_of[r], int(counts[r])) for r in best.tolist()]
    finally:
        table.connection.execute(f"DROP TABLE IF EXISTS {_VALUES_TABLE}")
