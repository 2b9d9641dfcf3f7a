"""The keyed hash of contribution bounding (:func:`dpselect.data.rules.bounding_key`) spelt in
Spark columns, the same salt, user and value giving the same key as on DuckDB: each unit's seed,
the md5 of its salted text, computed once per unit (:func:`_per_unit_seeds`,
:func:`_with_seeds`, :func:`_unit_item_seeds`); a value's 32-bit code, one md5 per distinct
value (:func:`_value_codes`), and its 64-bit identity (:func:`_value_ids`); the key
``fmix32(fmix32(code xor a) xor b)`` in plain column arithmetic, one projection per step
(:func:`_fmix32_steps`), and its inverse (:func:`_codes_of_keys`); a 32-bit key and a position
packed into one sortable long (:func:`_packed`, :func:`_unpacked`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...rules import M32
from ...values import canonical_text_sql
from ..spark_session import import_pyspark as _import_pyspark
from .columns import _FLOATING, _expr_on

_SALT_MASK = (1 << 64) - 1


# ----------------------------------------------------------------------------- bounding
# The rule of dpselect.data.scores (docs/contribution_bounding.md), spelt in Spark columns:
#   seed(u) = first 8 bytes, little-endian, of md5(salt \x1f "u" \x1f text(u)); a, b = halves
#   code    = candidate position, or first 4 bytes LE of md5(salt \x1f "v" \x1f text(v))
#   key     = fmix32(fmix32(code xor a) xor b)
# A user keeps the max_contributions values of smallest (key, position) or (key, value).
_M32 = 0xFFFFFFFF
_FMIX32 = (("xs", 16), ("mul", 0x85EBCA6B), ("xs", 13), ("mul", 0xC2B2AE35), ("xs", 16))


def _hex_le(h: Any, first: int, count: int = 4) -> Any:
    """Bytes ``first .. first + count - 1`` of the hex digest ``h``, little-endian, as a bigint.

    Typed not nullable (``coalesce`` with 0, which never applies: the digits of a digest
    always convert). Spark types ``conv`` and the cast as nullable, and every column computed
    from a nullable one is nullable too; a join on such a column (the identities of
    :func:`_kept_ids_per_user` joined back to the values) then gets an inferred ``IS NOT
    NULL`` filter pushed below the projections that compute it, where the column is spelt as
    one nested expression: the key's inverse (:func:`_codes_of_keys`) uses each step's input
    twice, so that expression doubles at each of its ten steps (44,000 characters of SQL,
    evaluated per kept row, in a method too large for the JIT to compile).
    """
    sql = _import_pyspark()
    f = sql.functions
    digits = [f.substring(h, 2 * k + 1, 2) for k in reversed(range(first, first + count))]
    return f.coalesce(f.conv(f.concat(*digits), 16, 10).cast("long"), f.lit(0).cast("long"))


def _value_codes(rows: Any, duck_type: str, salt: int) -> Any:
    """The distinct values of ``rows.v`` with their codes, ``(v, c)``
    (:func:`dpselect.data.rules.value_code`: the first 4 bytes, little-endian, of the md5 of
    the salted text), for the unknown-domain plans to join back to the rows.

    One md5 per distinct value instead of one per row, with the same codes: rows are joined
    by Spark's equality of their type, and equal values have one canonical text (floating
    values are normalised before: ``-0.0`` is ``0.0``, and every NaN is the text ``NaN``;
    text compares by its bytes, :func:`_binary_text`). An md5 costs about a microsecond in
    Spark (a ``MessageDigest`` per call), as much at 10^7 rows as the plain count twice over
    (docs/performance.md, "Spark engine"); the distinct values cost one more scan and a
    small aggregation, and the join is a broadcast when adaptive execution finds them few.
    """
    sql = _import_pyspark()
    f = sql.functions
    v_text = _expr_on("v", _canonical_text_sql_template(duck_type))
    code = _hex_le(f.md5(_salted(salt, "v", v_text)), 0).alias("c")
    return rows.select("v").distinct().select("v", code)


def _value_ids(rows: Any, duck_type: str, salt: int) -> Any:
    """The distinct values of ``rows.v`` with a 64-bit identity ``x = _packed(c, t)``, as
    ``(v, x)``: ``c`` the value's code (:func:`_value_codes`) and ``t`` its rank among the
    values of the same code in Spark's order of values (a window partitioned by the code: 0
    for almost every value).

    For one unit the key is a bijection of the code (:func:`~dpselect.data.rules.bounding_key`),
    so two values tie on the key only when their codes are equal, and ordering by (key,
    value), the rule, is ordering by (key, ``t``): :func:`_kept_ids_per_user` chooses on
    longs instead of values (text, dates, ...), and ``x`` is a bijection of ``(c, t)``, so the
    values are joined back by ``x`` after counting. No window over all values.
    """
    sql = _import_pyspark()
    f = sql.functions
    codes = _value_codes(rows, duck_type, salt)
    in_code = sql.Window.partitionBy("c").orderBy(f.col("v").asc())
    ranked = codes.select("v", "c", (f.row_number().over(in_code) - f.lit(1)).alias("t"))
    return ranked.select("v", _packed(f.col("c"), f.col("t")).alias("x"))


def _per_unit_seeds(
    rows: Any, unit_type: str, salts: Sequence[int], fields: Sequence[str], units: Any = None
) -> Any:
    """``rows`` (the unit ``u`` and ``fields``) with each unit's seeds beside every row:
    columns ``u``, ``fields``, then ``_a{j}``, ``_b{j}`` (the two halves of
    :func:`dpselect.data.rules.unit_seed` with ``salts[j]``) for each salt.

    The seeds are computed once per distinct unit (one md5 per unit and salt, never per row)
    and joined back to the rows by unit, the seeds on the build side of a shuffled hash join
    (a task holds the seeds of its share of the units, never a unit's rows). The rows come
    out partitioned by unit, so the per-unit choices after it (:func:`_smallest_per_group`)
    need no second shuffle. Memory does not grow with one unit's rows: nothing here gathers a
    unit's items into one array (docs/spark.md, "Memory: no unit is held in one array"; only
    the candidate plan with few public candidates does, :func:`_unit_item_seeds`).

    ``units``: a frame whose column ``u`` holds every unit of ``rows`` (``None``: ``rows``).
    A unit's seeds depend on the unit alone and the join keeps the units of ``rows``, so the
    rows and their seeds are the same; the candidates' score query passes its rows before
    they join the candidates, which Spark otherwise joined a second time for the seeds' units
    (a sort-merge join of every candidate, once more, beyond a broadcast).
    """
    names = [n for j in range(len(salts)) for n in (f"_a{j}", f"_b{j}")]
    source = rows if units is None else units
    seeds = _with_seeds(source.select("u").distinct(), unit_type, salts, ["u"])
    return rows.join(seeds.hint("shuffle_hash"), on="u").select("u", *fields, *names)


def _with_seeds(rows: Any, unit_type: str, salts: Sequence[int], keep: Sequence[str]) -> Any:
    """``rows`` (one per unit: column ``u``) as ``keep`` and the unit's seeds ``_a{j}``,
    ``_b{j}`` (the low and high halves of :func:`dpselect.data.rules.unit_seed` with
    ``salts[j]``): one md5 per row and salt, each digest projected once."""
    sql = _import_pyspark()
    f = sql.functions
    text = _expr_on("u", _canonical_text_sql_template(unit_type))
    hashes = [f.md5(_salted(s, "u", text)).alias(f"_h{j}") for j, s in enumerate(salts)]
    hashed = rows.select(*keep, *hashes)
    halves = []
    for j in range(len(salts)):
        h = f.col(f"_h{j}")
        halves += [_hex_le(h, 0).alias(f"_a{j}"), _hex_le(h, 4).alias(f"_b{j}")]
    return hashed.select(*keep, *halves)


def _packed(key: Any, position: Any) -> Any:
    """``(key - 2^31) * 2^32 + position`` for a 32-bit key and a position below 2^32: one
    signed long (no overflow: it lies in ``[-2^63, 2^63 - 1]``) ordered as ``(key,
    position)``, distinct per (user, position) (the key is a bijection of the position for
    a fixed user) and equal for duplicate rows. :func:`_unpacked` gives the position back."""
    sql = _import_pyspark()
    f = sql.functions
    return (key - f.lit(1 << 31)) * f.lit(1 << 32) + position


def _unpacked(packed: Any) -> Any:
    """The position of :func:`_packed`: its low 32 bits (two's complement)."""
    sql = _import_pyspark()
    return packed.bitwiseAND(sql.functions.lit((1 << 32) - 1))


def _fmix32_steps(rows: Any, keep: Sequence[str]) -> Any:
    """``rows`` (columns ``keep``, ``_x = code xor a`` and ``_b``) with ``k = fmix32(fmix32(_x)
    xor _b)``, the other columns dropped.

    One projection per arithmetic step: each intermediate is a column, so the plan is linear
    in the number of steps. (As one nested expression, every xorshift and multiplication uses
    its input twice and the tree doubles at each of the ten steps: Spark then evaluated the
    md5 of a seed about a thousand times per row.) Spark keeps the projections apart because
    it does not inline a non-trivial expression used twice (``CollapseProject``).
    """
    sql = _import_pyspark()
    f = sql.functions
    cols = [f.col(c) for c in keep]
    out = rows
    for round_ in (0, 1):
        carry = [f.col("_b")] if round_ == 0 else []
        for op, k in _FMIX32:
            x = f.col("_x")
            if op == "xs":
                step = x.bitwiseXOR(f.shiftright(x, k))
            else:  # x * k mod 2^32 with k >= 2^31: x (k - 2^31) + (x mod 2) 2^31
                step = x * f.lit(k - (1 << 31)) + f.shiftleft(x.bitwiseAND(f.lit(1)), 31)
                step = step.bitwiseAND(f.lit(_M32))
            out = out.select(*cols, *carry, step.alias("_x"))
        if round_ == 0:
            out = out.select(*cols, f.col("_x").bitwiseXOR(f.col("_b")).alias("_x"))
    return out.select(*cols, f.col("_x").alias("k"))


def _salted(salt: int, tag: str, text: Any) -> Any:
    sql = _import_pyspark()
    f = sql.functions
    return f.concat_ws("\x1f", f.lit(str(int(salt) & ((1 << 64) - 1))), f.lit(tag), text)


def _unit_item_seeds(rows: Any, unit_type: str, salts: Sequence[int], fields: Sequence[str]) -> Any:
    """``rows`` (``u`` and ``fields``) as the distinct ``(u, *fields)`` with each unit's
    seeds (the columns of :func:`_per_unit_seeds`), from one ``groupBy(u)`` collecting the
    unit's distinct items as a set (one md5 per unit), exploded again (still partitioned by
    unit). Only where the items of a unit are bounded by a public number (at most
    :data:`ARRAY_CANDIDATES` candidate positions): a set holds all of a unit's items."""
    sql = _import_pyspark()
    f = sql.functions
    single = len(fields) == 1
    item = f.col(fields[0]) if single else f.struct(*[f.col(c) for c in fields])
    grouped = rows.groupBy("u").agg(f.collect_set(item).alias("items"))
    seeded = _with_seeds(grouped, unit_type, salts, ["u", "items"])
    names = [n for j in range(len(salts)) for n in (f"_a{j}", f"_b{j}")]
    exploded = seeded.select("u", *names, f.explode("items").alias("it"))
    values = [(f.col("it") if single else f.col(f"it.{c}")).alias(c) for c in fields]
    return exploded.select("u", *values, *names)


def _canonical_text_sql_template(duck_type: str) -> str:
    return canonical_text_sql("__T__", "DOUBLE" if duck_type in _FLOATING else duck_type, "spark")


#: The inverse of ``fmix32`` (:data:`dpselect.data.rules.FMIX32_STEPS` undone in reverse
#: order): ``xs 16`` is its own inverse, ``x ^ (x >> 13)`` is undone by
#: ``x ^ (x >> 13) ^ (x >> 26)``, and a product by an odd ``c`` by the product by ``c^-1 mod
#: 2^32``.
_UNFMIX32 = (
    ("xs", 16),
    ("mul", pow(0xC2B2AE35, -1, 1 << 32)),
    ("unxs13", 13),
    ("mul", pow(0x85EBCA6B, -1, 1 << 32)),
    ("xs", 16),
)


def _codes_of_keys(rows: Any, keep: Sequence[str], key: str, a: str, b: str, out: str) -> Any:
    """``rows`` as ``keep`` and ``out``: the code whose key is ``key`` for the seed halves
    ``a`` and ``b``, i.e. ``fmix32^-1(fmix32^-1(key) xor b) xor a``, the inverse of
    ``key = fmix32(fmix32(code xor a) xor b)`` (a bijection of 32-bit words). One projection
    per step, as :func:`_fmix32_steps`."""
    sql = _import_pyspark()
    f = sql.functions
    cols = [f.col(c) for c in keep]
    out_rows = rows.select(*cols, f.col(a).alias("_a"), f.col(b).alias("_b"),
                           f.col(key).alias("_x"))  # fmt: skip
    for round_ in (0, 1):
        carry = [f.col("_a"), f.col("_b")] if round_ == 0 else [f.col("_a")]
        for op, k in _UNFMIX32:
            x = f.col("_x")
            if op == "xs":
                step = x.bitwiseXOR(f.shiftright(x, k))
            elif op == "unxs13":
                step = x.bitwiseXOR(f.shiftright(x, 13)).bitwiseXOR(f.shiftright(x, 26))
            else:
                step = _times_mod32(x, k)
            out_rows = out_rows.select(*cols, *carry, step.alias("_x"))
        if round_ == 0:
            out_rows = out_rows.select(*cols, "_a", f.col("_x").bitwiseXOR(f.col("_b")).alias("_x"))
    return out_rows.select(*cols, f.col("_x").bitwiseXOR(f.col("_a")).alias(out))


def _times_mod32(x: Any, k: int) -> Any:
    """``x * k mod 2^32`` for ``0 <= x, k < 2^32`` in signed 64-bit arithmetic without
    overflow: directly for ``k < 2^31``, else ``x (k - 2^31) + (x mod 2) 2^31``."""
    sql = _import_pyspark()
    f = sql.functions
    if k < (1 << 31):
        return (x * f.lit(k)).bitwiseAND(f.lit(M32))
    step = x * f.lit(k - (1 << 31)) + f.shiftleft(x.bitwiseAND(f.lit(1)), 31)
    return step.bitwiseAND(f.lit(M32))
