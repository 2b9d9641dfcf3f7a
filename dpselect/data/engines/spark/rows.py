"""Rows per unit on Spark: the rows each privacy unit keeps, at most ``max_rows`` by the keyed
rule of :func:`dpselect.data.rules.kept_rows` (:func:`kept_rows`; :func:`_kept_rows_of`, also
within each group of a grouped release), a column's numbers with their weights, every row or the
kept rows (:func:`_number_rows`, what the histograms count; :class:`_UnitCap` carries the cap),
and each unit's rows for ``max_rows="auto"`` (:func:`row_counts`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..spark_session import import_pyspark as _import_pyspark
from .bounding import _smallest_per_group
from .cache import _materialised
from .columns import _as_double, _number_kept, _unit_rows
from .keys import _codes_of_keys, _fmix32_steps, _packed, _per_unit_seeds, _unpacked, _value_ids
from .progress import collect

if TYPE_CHECKING:
    from .table import SparkTable

__all__ = [
    "kept_rows",
    "row_counts",
]


# ----------------------------------------------------------------------------- rows per unit
@dataclass(frozen=True)
class _UnitCap:
    """Each unit of ``privacy_unit`` keeps at most ``max_rows`` rows, by the keyed rule of
    ``salt`` (:func:`kept_rows`)."""

    privacy_unit: str
    max_rows: int
    salt: int


@contextlib.contextmanager
def kept_rows(
    table: SparkTable, column: str, privacy_unit: str, max_rows: int, salt: int
) -> Iterator[Any]:
    """The rows each unit keeps, as a frame ``(x, w)``: a number and how many kept rows hold
    it (the rule of :func:`dpselect.data.rules.kept_rows`, the same rows as
    :func:`dpselect.data.engines.duckdb.kept_rows_sql`).

    A context manager: the distinct numbers' identities are cached while it is open
    (:func:`_kept_rows_of`); consume (collect) the frame inside the ``with``.

    The rows are the column as a double plus ``0.0`` (``-0.0`` is ``0.0``), NULL and NaN
    dropped row by row, and a unit without a NULL or NaN key. Nothing is collected; a unit's
    kept rows depend only on its rows and the salt.
    """
    duck_type = table.require_column(column)
    unit_type = table.require_column(privacy_unit, "privacy_unit")
    nums = _unit_numbers(table.frame, column, duck_type, privacy_unit, unit_type)
    with _kept_rows_of(nums, unit_type, int(max_rows), salt) as kept:
        yield kept


def _unit_numbers(
    frame: Any, column: str, duck_type: str, privacy_unit: str, unit_type: str, *extra: Any
) -> Any:
    """The rows as ``(u, v, *extra)``: the unit as grouped and the number (a double plus
    ``0.0``), rows with a NULL or NaN unit or number dropped row by row."""
    sql = _import_pyspark()
    f = sql.functions
    unit, valid = _unit_rows(frame, privacy_unit, unit_type)
    number = _as_double(f.col(column), duck_type) + f.lit(0.0)
    return (
        frame.where(valid)
        .select(unit.alias("u"), number.alias("v"), *extra)
        .where(_number_kept("v"))
    )


@contextlib.contextmanager
def _kept_rows_of(
    nums: Any, unit_type: str, max_rows: int, salt: int, within: Sequence[str] = ()
) -> Iterator[Any]:
    """The kept rows of ``nums`` (columns ``u``, ``v``, the number, and ``within``) as
    ``(*within, x, w)``, one row per ``(*within, x)``: ``w`` of the rows holding the number
    ``x`` are kept, summed over the units. The rule of :func:`dpselect.data.rules.kept_rows`
    applied in each ``(u, *within)`` separately (a grouped release: each unit's rows in each
    of its kept groups): the unit's rows ordered by ``(row_key, v)``, the first
    ``max_rows`` kept.

    A context manager: the identities of the distinct numbers are cached while it is open
    (:func:`_materialised`); the frame must be consumed inside the ``with``.

    The plan, the one of :func:`top_values` (docs/performance.md, "Spark kept rows"):

    1. The distinct numbers with their identities ``x = _packed(c, t)`` (:func:`_value_ids`:
       ``c`` the code, one md5 per distinct number; ``t`` the rank of ``v`` among the numbers
       of code ``c``), computed and cached first, so that Spark broadcasts them to the rows
       when they are few (no sort-merge join shuffling every row by number).
    2. Each unit's seed once per unit (:func:`_per_unit_seeds`, the rows stay partitioned by
       unit) and each row's key ``k`` of ``c`` in column arithmetic (:func:`_fmix32_steps`).
    3. Per ``(u, *within)``, the ``max_rows`` smallest longs ``_packed(k, t)``, one per row
       (duplicate rows give equal longs, each kept: a sorted list, not a set; a ``min`` for
       ``max_rows = 1``), with no shuffle; the code read back from the key
       (:func:`_codes_of_keys`), ``x`` rebuilt, the kept rows counted per ``(*within, x)``
       and joined back to the cached identities for the number.

    Why it is the rule: for one unit the key is a bijection of the code
    (:func:`~dpselect.data.rules.bounding_key`), so two rows tie on the key only when their
    numbers share a code, and then ``t`` orders them as the numbers themselves (Spark's
    order of doubles: numeric, and ``-0.0`` and NaN never occur here). So ``(k, t)`` orders a
    unit's rows as ``(row_key, v)`` does, equal longs being rows of one number, which are
    interchangeable; ``_packed`` orders as ``(k, t)`` (``t < 2^32``).
    """
    sql = _import_pyspark()
    f = sql.functions
    m = int(max_rows)
    with _materialised(_value_ids(nums, "DOUBLE", salt)) as ids:
        coded = nums.join(ids, on="v").select("u", *within, "x")
        seeded = _per_unit_seeds(coded, unit_type, [salt], [*within, "x"])
        code = f.shiftright(f.col("x"), 32) + f.lit(1 << 31)
        start = seeded.select(
            "u", *within, "_a0", "_b0", _unpacked(f.col("x")).alias("t"),
            f.col("_b0").alias("_b"), code.bitwiseXOR(f.col("_a0")).alias("_x"),
        )  # fmt: skip
        keyed = _fmix32_steps(start, ["u", *within, "_a0", "_b0", "t"])
        ranked = keyed.select(
            "u", *within, "_a0", "_b0", _packed(f.col("k"), f.col("t")).alias("p")
        )
        # partitioned by u: no shuffle; every row, not distinct: duplicate rows are kept rows
        kept = _smallest_per_group(ranked, ["u", *within, "_a0", "_b0"], m, every_row=True)
        split = kept.select(
            *within, "_a0", "_b0",
            (f.shiftright(f.col("p"), 32) + f.lit(1 << 31)).alias("k"),
            _unpacked(f.col("p")).alias("t"),
        )  # fmt: skip
        codes = _codes_of_keys(split, [*within, "t"], "k", "_a0", "_b0", "c")
        ids_kept = codes.select(*within, _packed(f.col("c"), f.col("t")).alias("x"))
        counted = ids_kept.groupBy(*within, "x").agg(f.count(f.lit(1)).alias("w"))
        yield counted.join(ids, on="x").select(*within, f.col("v").alias("x"), "w")


@contextlib.contextmanager
def _number_rows(table: SparkTable, column: str, unit: _UnitCap | None) -> Iterator[Any]:
    """The rows as ``(x, w)``: every number with weight 1, or with ``unit`` the kept rows
    (:func:`kept_rows`), NULL, NaN and text that is no number dropped. A context manager
    (:func:`kept_rows` caches while open): consume the frame inside the ``with``."""
    sql = _import_pyspark()
    f = sql.functions
    if unit is not None:
        with kept_rows(table, column, unit.privacy_unit, unit.max_rows, unit.salt) as kept:
            yield kept
        return
    duck_type = table.require_column(column)
    x = _as_double(f.col(column), duck_type)
    rows = table.frame.select(x.alias("x")).where(_number_kept("x"))
    yield rows.select("x", f.lit(1).cast("long").alias("w"))


def row_counts(table: SparkTable, column: str, privacy_unit: str) -> npt.NDArray[np.int64]:
    """Each unit's number of rows with a number in ``column`` (one entry per unit with a
    non-null, non-NaN unit): the numbers of the DuckDB engine's ``row_counts``, for
    ``max_rows="auto"``. One ``groupBy(unit)``; one integer per unit comes back."""
    sql = _import_pyspark()
    f = sql.functions
    duck_type = table.require_column(column)
    unit_type = table.require_column(privacy_unit, "privacy_unit")
    unit, valid = _unit_rows(table.frame, privacy_unit, unit_type)
    x = _as_double(f.col(column), duck_type)
    counted = (
        table.frame.where(valid)
        .select(unit.alias("u"), x.alias("x"))
        .where(_number_kept("x"))
        .groupBy("u")
        .agg(f.count(f.lit(1)).alias("c"))
        .select("c")
    )
    return np.asarray([r[0] for r in collect(counted)], dtype=np.int64)
