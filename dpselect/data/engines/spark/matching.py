"""Public candidates matched on Spark: each candidate cast to the column's type in the driver by
DuckDB's ``TRY_CAST`` (:func:`typed_candidates`, the oracle's rule), sent as a few rows of
arrays (:func:`_candidate_frame`) that are broadcast to the rows or, beyond
:data:`MAX_BROADCAST_CANDIDATES`, joined by sort-merge (:func:`_matching`), numbers on a text
column matched by value (:func:`_numeric_match`); and :func:`match_multiplicity`, the most
candidates one value matches, counted by Spark's own join (the noisy histograms' L1
sensitivity). Public facts only: no row is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np

from ...candidates import as_arrow
from ...values import numeric_candidate_type
from ..spark_session import import_pyspark as _import_pyspark
from .columns import _spark, _try_cast

if TYPE_CHECKING:
    from .table import SparkTable

__all__ = [
    "CANDIDATES_PER_ROW",
    "MAX_BROADCAST_CANDIDATES",
    "match_multiplicity",
    "typed_candidates",
]


# ----------------------------------------------------------------------------- candidates
def typed_candidates(candidates: Sequence[Any], duck_type: str) -> Any:
    """A pyarrow table ``(v, i)``: the candidates cast to ``duck_type`` by DuckDB's
    ``TRY_CAST`` (the oracle's rule) and their positions; candidates that do not convert are
    left out (they match nothing).

    Text candidates for a text column skip DuckDB: ``TRY_CAST`` of text to ``VARCHAR`` is the
    identity, so the table is the Arrow array and its positions, the NULLs left out (the same
    table, 0.05-0.15 s sooner for 10^5 candidates)."""
    array = as_arrow(candidates)
    if duck_type == "VARCHAR" and array is not None:
        import pyarrow as pa
        import pyarrow.compute as pc

        if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
            positions = pa.array(np.arange(len(array), dtype=np.int64))
            table = pa.table({"v": array, "i": positions})
            # no NULL (a loaded list has none): the table as it is, no filtered copy
            return table.filter(pc.is_valid(array)) if array.null_count else table
    con = duckdb.connect(":memory:")
    try:
        if array is not None:
            import pyarrow as pa

            positions = pa.array(np.arange(len(array), dtype=np.int64))
            con.register("cands", pa.table({"c": array, "i": positions}))
            source, params = "cands", {}
        else:
            kinds = set(map(type, candidates))
            plain = len(kinds) == 1 and kinds <= {str, int, float}
            values = list(candidates) if plain else [str(c) for c in candidates]
            source = (
                "(SELECT unnest($cands) AS c, "
                "CAST(generate_subscripts($cands, 1) - 1 AS BIGINT) AS i)"
            )
            params = {"cands": values}
        relation = con.sql(
            f"SELECT v, i FROM (SELECT TRY_CAST(c AS {duck_type}) AS v, i FROM {source}) "
            "WHERE v IS NOT NULL ORDER BY i",
            params=params or None,
        )
        fetch = getattr(relation, "to_arrow_table", None) or getattr(relation, "arrow")  # noqa: B009
        return fetch()
    finally:
        con.close()


#: Candidates per row of the candidate frame (:func:`_candidate_frame`): a row holds two
#: arrays, so a Java array never comes near its 2^31 - 1 element limit, and a row stays a
#: few MB (a driver of 512 MB ran out of heap copying a row of 10^6 candidates; rows of 2^16
#: take 10^6 in the same driver).
CANDIDATES_PER_ROW = 1 << 16

#: The most candidates broadcast to the rows (:func:`_matching`); a longer list is joined by
#: a shuffle (sort-merge) join, which needs no driver memory: the broadcast of 1.5 million
#: candidates ran a 512 MB driver out of memory after the charge. A public size decides.
MAX_BROADCAST_CANDIDATES = 1 << 18


def _candidate_frame(spark: Any, typed: Any, spark_type: Any) -> Any:
    """A two-column frame ``(v, i)`` of the typed candidates.

    Built from a few rows of two arrays (values, positions; at most
    :data:`CANDIDATES_PER_ROW` each), unpacked by ``inline(arrays_zip(v, i))`` on the
    executors. The same rows as a local relation of one row per candidate, but a plan of one
    row per :data:`CANDIDATES_PER_ROW` candidates: with 10^5 candidates the optimizer took
    0.2-0.3 s over a local relation of 10^5 rows (plan comparisons over its rows), and
    0.04-0.06 s over one row. Each row is a partition of its own (one Arrow record batch), so
    a task carries at most one row: the driver's heap holds the candidates once, never a
    task of all of them. Arrow throughout with pyspark 4 (pandas with 3.5)."""
    import pyarrow as pa

    sql = _import_pyspark()
    f = sql.functions
    t = sql.types
    n = typed.num_rows
    values = typed.column("v").combine_chunks()
    positions = typed.column("i").combine_chunks().cast(pa.int64())
    cuts = pa.array([*range(0, n, CANDIDATES_PER_ROW), n], pa.int32())
    packed_rows = pa.table(
        {
            "v": pa.ListArray.from_arrays(cuts, values),
            "i": pa.ListArray.from_arrays(cuts, positions),
        }
    )
    # one record batch per row: Spark makes a partition of each batch, and a task carries its
    # partition's bytes (one batch of every row put 10^7 candidates in one task of about
    # 200 MB, which ran the default 1 GB driver out of heap while serializing it)
    table = pa.Table.from_batches(packed_rows.to_batches(max_chunksize=1))
    schema = t.StructType(
        [
            t.StructField("v", t.ArrayType(spark_type, True), True),
            t.StructField("i", t.ArrayType(t.LongType(), True), True),
        ]
    )
    try:
        packed = spark.createDataFrame(table, schema)  # pyspark >= 4: a pyarrow table
    except (TypeError, ValueError):  # pragma: no cover - pyspark 3.5
        packed = spark.createDataFrame(table.to_pandas(), schema)
    return packed.select(f.inline(f.arrays_zip(f.col("v"), f.col("i"))))


def _numeric_match(col: Any, duck_type: str, candidates: Sequence[Any]) -> tuple[Any, str]:
    """(the column as matched, the type candidates are cast to): numbers on a text column
    are matched by value (the rule of ``dpselect.data.matching.match_sql``)."""
    sql = _import_pyspark()
    f = sql.functions
    # a loaded list held as an Arrow array is all text (load_candidates): no type scan
    text = getattr(candidates, "arrow", None) is not None
    number = numeric_candidate_type(candidates) if duck_type == "VARCHAR" and not text else None
    if number == "DOUBLE":
        return _try_cast(col, "double"), "DOUBLE"
    if number == "BIGINT":
        # integral: x mod 1 = 0 (a double remainder, exact; NaN for infinities, which match
        # no int anyway). Not floor(x) = x: Spark's floor of a double is a long, which
        # overflows on "inf" or "1e300", an ANSI error after the charge decided by one row
        # (privacy audit 2026-11-22).
        as_double = _try_cast(col, "double")
        return f.when(as_double % f.lit(1.0) == f.lit(0.0), _try_cast(col, "long")), "BIGINT"
    return col, duck_type


def _matching(table: SparkTable, column: str, candidates: Sequence[Any]) -> tuple[Any, Any]:
    """(the column as matched, the candidates as a broadcast frame ``(v, i)`` (a frame with a
    sort-merge hint beyond :data:`MAX_BROADCAST_CANDIDATES`), or ``None`` when no candidate
    converts): the score query joins the two on ``v``.

    Public facts only: the frame's schema (the column's Spark type, with its collation) and
    the candidates, cast in the driver by DuckDB (:func:`typed_candidates`); no row is read.
    """
    sql = _import_pyspark()
    f = sql.functions
    t = sql.types
    duck_type = table.require_column(column)
    frame = table.frame
    col, match_type = _numeric_match(f.col(column), duck_type, candidates)
    typed = typed_candidates(candidates, match_type)
    if typed.num_rows == 0:
        return col, None
    if match_type == duck_type:
        v_type = frame.schema[column].dataType
    else:
        v_type = t.DoubleType() if match_type == "DOUBLE" else t.LongType()
    candidates_frame = _candidate_frame(_spark(frame), typed, v_type)
    if typed.num_rows > MAX_BROADCAST_CANDIDATES:  # a public size: no broadcast
        return col, candidates_frame.hint("shuffle_merge")
    return col, f.broadcast(candidates_frame)


def match_multiplicity(table: SparkTable, column: str, candidates: Sequence[Any]) -> int:
    """The most candidates that one value of ``column`` matches on Spark (at least 1).

    Without a privacy unit one row adds 1 to the score of every candidate its value matches,
    so this is the L1 sensitivity (and at least the squared L2 one) of the rows-are-people
    scores of :func:`candidate_scores`, which the noisy histograms are calibrated to.

    *Computed with the score query's own matching*: the candidate frame of
    :func:`_matching` joined with itself on ``v``, the join the score query uses, so with
    Spark's equality of the column's type (its collation included: ``'a'`` and ``'A'`` are
    one value of a ``UTF8_LCASE`` column, which DuckDB's rule,
    :func:`dpselect.data.matching.match_multiplicity`, keeps apart). A row matches candidate
    ``j`` iff its matched value equals ``v_j``; as equality is an equivalence relation (each
    type, each collation; Spark's joins identify ``-0.0`` with ``0.0`` and NaN with NaN), the
    candidates one value matches are one class of equal ``v_j``, and a class is counted by
    joining one member with all. One Spark job over the candidates (a local relation), never
    the rows, run before any charge.

    Proof that the shortcut is exact: text candidates on a text column of the binary
    collation (Spark's default, ``string``) are distinct Python strings
    (:func:`dpselect.data.candidates.load_candidates`), hence distinct UTF-8 bytes, which
    Spark compares byte by byte: each value matches at most one, and no job is run.
    """
    sql = _import_pyspark()
    f = sql.functions
    duck_type = table.require_column(column)
    binary_text = table.spark_types.get(column) == "string"
    if binary_text and duck_type == "VARCHAR" and all(isinstance(c, str) for c in candidates):
        return 1
    _, cands = _matching(table, column, candidates)
    if cands is None:
        return 1  # nothing converts: nothing matches
    members = cands.select("v", f.col("i").alias("j"))
    per_value = members.join(cands, on="v").groupBy("j").count()
    top = per_value.agg(f.max("count")).first()
    return max(1, int(top[0] or 1)) if top is not None else 1
