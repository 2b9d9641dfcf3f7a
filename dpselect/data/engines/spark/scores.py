"""The ungrouped scores and counts on Spark, the same numbers as :mod:`dpselect.data.scores` on
DuckDB: the score of every public candidate (:func:`candidate_scores`), the values with the
largest counts of the unknown-domain path (:func:`top_values`; :data:`ALL_VALUES` for every
value), and each person's number of distinct values for ``max_contributions="auto"``
(:func:`contribution_counts`). Only small results come back to the driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ...rules import check_bounded_candidates, check_rows_per_value
from ..spark_session import import_pyspark as _import_pyspark
from .bounding import _kept_ids_per_user, _kept_per_user
from .cache import _materialised
from .columns import _capped_rows, _fetch_pairs, _normalised, _spark_quote, _unit_rows
from .keys import _value_ids
from .matching import _matching
from .progress import collect, run_action

if TYPE_CHECKING:
    from .table import SparkTable

__all__ = [
    "ALL_VALUES",
    "candidate_scores",
    "contribution_counts",
    "top_values",
]


def candidate_scores(
    table: SparkTable,
    column: str,
    candidates: Sequence[Any],
    privacy_unit: str | None = None,
    max_contributions: int = 1,
    salt: int = 0,
    progress: Any = None,
    max_rows_per_value: int = 1,
) -> npt.NDArray[np.int64]:
    """The score of every candidate, in the candidate list's order: the same vector as
    :meth:`dpselect.data.engine.Engine.scores` on the same data and salt.

    ``max_rows_per_value = r > 1``: the rows are first counted per (user, position), capped
    at ``r``, and each kept position adds that weight (the same choice of positions).

    Without a privacy unit: ``groupBy(column).count()`` joined (broadcast) with the typed
    candidates. With one: the rows joined with the candidates, one group per user holding
    the user's distinct positions, the ``max_contributions`` of smallest key kept, counted
    per candidate. Only ``(position, score)`` rows come back to the driver.
    """
    sql = _import_pyspark()
    f = sql.functions
    table.require_column(column)
    r = check_rows_per_value(max_rows_per_value, privacy_unit)
    unit_type = None
    if privacy_unit is not None:
        unit_type = table.require_column(privacy_unit, "privacy_unit")
        check_bounded_candidates(len(candidates))
    scores = np.zeros(len(candidates), dtype=np.int64)
    frame = table.frame
    col, cands = _matching(table, column, candidates)
    if cands is None:
        return scores
    if privacy_unit is None or unit_type is None:
        counted = frame.select(col.alias("v")).where(f.col("v").isNotNull()).groupBy("v").count()
        joined = counted.join(cands, on="v").select("i", f.col("count").alias("n"))
    else:
        unit, valid = _unit_rows(frame, privacy_unit, unit_type)
        unjoined = frame.where(valid).select(unit.alias("u"), col.alias("v"))
        pairs = unjoined.join(cands, on="v").select("u", f.col("i").alias("x"))
        if r > 1:
            pairs = pairs.groupBy("u", "x").agg(_capped_rows(r))
        # the seeds' units from the rows before the join: the rows join the candidates once
        kept = _kept_per_user(
            pairs, unit_type, salt, int(max_contributions), weighted=r > 1,
            candidates=len(candidates), units=unjoined,
        )  # fmt: skip
        total = f.sum("w").cast("long") if r > 1 else f.count(f.lit(1))
        joined = kept.groupBy("x").agg(total.alias("n"))
    idx, counts = _fetch_pairs(joined)
    scores[idx] = counts
    return scores


def top_values(
    table: SparkTable,
    column: str,
    limit: int,
    privacy_unit: str | None = None,
    max_contributions: int = 1,
    salt: int = 0,
    progress: Any = None,
    max_rows_per_value: int = 1,
) -> list[tuple[Any, int]]:
    """The ``limit`` values with the largest scores, ties by value: the same list as
    :meth:`dpselect.data.engine.Engine.counts` (the unknown-domain path's counts;
    ``max_rows_per_value`` as in :func:`candidate_scores`)."""
    sql = _import_pyspark()
    f = sql.functions
    duck_type = table.require_column(column)
    r = check_rows_per_value(max_rows_per_value, privacy_unit)
    frame = table.frame
    value = _normalised(f.col(column), duck_type)
    present = f.col(column).isNotNull()
    if privacy_unit is None:
        counted = (
            frame.where(present)
            .select(value.alias("v"))
            .groupBy("v")
            .agg(f.count(f.lit(1)).alias("n"))
        )
        ordered = counted.orderBy(f.col("n").desc(), f.col("v").asc())
        # Spark's limit takes a Java int: a larger limit (the partition selection asks for
        # every value) means no limit at all.
        if int(limit) < 2**31 - 1:
            ordered = ordered.limit(int(limit))
        return [(r[0], int(r[1])) for r in collect(ordered)]
    unit_type = table.require_column(privacy_unit, "privacy_unit")
    unit, valid = _unit_rows(frame, privacy_unit, unit_type)
    both = frame.where(present & valid).select(unit.alias("u"), value.alias("v"))
    # r = 1: no DISTINCT (u, v) first: the choice is the same over a user's duplicate rows (a
    # minimum, or a window over distinct keys: _smallest_per_group), and costs one more shuffle
    pairs = both.groupBy("u", "v").agg(_capped_rows(r)) if r > 1 else both
    carried = ["w"] if r > 1 else []
    # one md5 per distinct value, computed before the rows are planned (_materialised)
    with _materialised(_value_ids(both, duck_type, salt)) as ids:
        coded = pairs.join(ids, on="v").select("u", "x", *carried)
        kept = _kept_ids_per_user(coded, unit_type, salt, int(max_contributions), weighted=r > 1)
        total = f.sum("w").cast("long") if r > 1 else f.count(f.lit(1))
        counted = kept.groupBy("x").agg(total.alias("n")).join(ids, on="x").select("v", "n")
        ordered = counted.orderBy(f.col("n").desc(), f.col("v").asc())
        if int(limit) < 2**31 - 1:
            ordered = ordered.limit(int(limit))
        return [(r[0], int(r[1])) for r in collect(ordered)]


#: No limit in practice: every value with a positive count (Spark's ``limit`` takes a Java
#: int).
ALL_VALUES = (1 << 31) - 1


def contribution_counts(table: SparkTable, column: str, privacy_unit: str) -> npt.NDArray[np.int64]:
    """``c_u``: each person's number of distinct non-null values of ``column``, one entry per
    person with a non-null unit (in no particular order): the numbers of
    :func:`dpselect.recipes.bounds.contribution_counts` on DuckDB, for
    ``max_contributions="auto"``. One ``groupBy(unit)`` with ``countDistinct``; a person's
    count reads only their rows. Only one integer per person comes back to the driver."""
    sql = _import_pyspark()
    f = sql.functions
    table.require_column(column)
    table.require_column(privacy_unit, "privacy_unit")
    unit, value = f.col(_spark_quote(privacy_unit)), f.col(_spark_quote(column))
    counted = (
        table.frame.where(unit.isNotNull())
        .groupBy(unit.alias("u"))
        .agg(f.countDistinct(value).alias("c"))
        .select("c")
    )
    to_arrow = getattr(counted, "toArrow", None)
    if to_arrow is not None:
        column_c = run_action(to_arrow).column(0)
        return np.asarray(column_c.to_numpy(zero_copy_only=False), dtype=np.int64)
    rows = collect(counted)  # pragma: no cover - pyspark 3.5
    return np.asarray([r[0] for r in rows], dtype=np.int64)
