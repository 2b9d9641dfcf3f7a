"""Histograms of a column's numbers on Spark, which the quantile and price methods of
:class:`~dpselect.data.engines.spark.table.SparkTable` read instead of the column: counts over
public sorted edges (:func:`bucket_counts`, exact comparisons only) and over the public grid of
the bounds mode (:func:`grid_counts`, the cells of :func:`dpselect.data.rules.grid_cell`), of
every row or of the rows each unit keeps. One pass each; only the counts come back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..spark_session import import_pyspark as _import_pyspark
from .progress import collect
from .rows import _number_rows

if TYPE_CHECKING:
    from .rows import _UnitCap
    from .table import SparkTable

__all__ = [
    "TREE_EDGES",
    "bucket_counts",
    "grid_counts",
]


# ----------------------------------------------------------------------------- histograms
#: Up to this many edges a row's bucket is one expression (a balanced tree of comparisons);
#: beyond, an unrolled binary search over an array literal (a projection per step), which
#: keeps the generated code small.
TREE_EDGES = 64


def _bucket_tree(value: Any, edges: Sequence[float]) -> Any:
    """``#{j : edges[j] <= value}`` as a balanced tree of exact comparisons with literals."""
    sql = _import_pyspark()
    f = sql.functions

    def build(lo: int, hi: int) -> Any:  # the count is in [lo, hi]
        if lo == hi:
            return f.lit(lo)
        mid = (lo + hi + 1) // 2  # is edges[mid - 1] <= value?
        return f.when(value >= f.lit(float(edges[mid - 1])), build(mid, hi)).otherwise(
            build(lo, mid - 1)
        )

    return build(0, len(edges))


def _with_bucket(rows: Any, edges: Sequence[float]) -> Any:
    """``rows`` (columns ``x`` and the weight ``w``) with ``b = #{j : edges[j] <= x}``: exact
    comparisons only."""
    sql = _import_pyspark()
    f = sql.functions
    m = len(edges)
    if m <= TREE_EDGES:
        return rows.select("x", "w", _bucket_tree(f.col("x"), edges).alias("b"))
    array = f.array(*[f.lit(float(e)) for e in edges])
    out = rows.select("x", "w", f.lit(0).alias("b"))
    step = 1 << m.bit_length()
    while step >= 1:  # invariant: edges[b - 1] <= x (or b = 0), and x < edges[b + 2 step - 1]
        ahead = f.col("b") + f.lit(step)
        ok = (ahead <= f.lit(m)) & (f.col("x") >= f.element_at(array, f.least(ahead, f.lit(m))))
        out = out.select("x", "w", f.when(ok, ahead).otherwise(f.col("b")).alias("b"))
        step >>= 1
    return out


def bucket_counts(
    table: SparkTable,
    column: str,
    edges: Sequence[float],
    equal: bool = False,
    unit: _UnitCap | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """A histogram of the column (as a double; NULL, NaN and text that is no number dropped)
    over public sorted ``edges``: ``counts[j] = #{x : #{e <= x} = j}`` for ``j = 0..m``.

    With ``equal=True`` also ``ties[j] = #{x : x = edges[j]}`` (``j = 0..m-1``), else zeros.
    One pass; only ``m + 1`` (or ``2m + 1``) numbers come back. ``unit``: only the rows each
    unit keeps (:func:`kept_rows`).
    """
    sql = _import_pyspark()
    f = sql.functions
    m = len(edges)
    with _number_rows(table, column, unit) as rows:
        bucketed = _with_bucket(rows, edges)
        if equal:
            array = f.array(*[f.lit(float(e)) for e in edges])
            hit = f.col("x") == f.element_at(array, f.greatest(f.col("b"), f.lit(1)))
            flag = (f.col("b") > 0) & hit
        else:
            flag = f.lit(False)
        grouped = collect(
            bucketed.select("b", flag.alias("e"), "w").groupBy("b", "e").agg(f.sum("w").alias("n"))
        )
    counts = np.zeros(m + 1, dtype=np.int64)
    ties = np.zeros(m, dtype=np.int64)
    for b, e, n in grouped:
        counts[int(b)] += int(n)
        if e:
            ties[int(b) - 1] += int(n)
    return counts, ties


def grid_counts(
    table: SparkTable,
    column: str,
    lo: float,
    hi: float,
    cells: int,
    unit: _UnitCap | None = None,
) -> npt.NDArray[np.int64]:
    """Rows per cell of the public grid: the cell ``j`` with ``g_j <= clamp(x) < g_{j+1}``
    exactly, for the float edges ``g_j`` of :func:`grid_edges` (``g_cells = hi``, the last
    cell closed). Computed as ``floor((x - lo) * (cells / (hi - lo)))``, clamped to
    ``[0, cells - 1]``, then corrected by one cell against the edges themselves (the float
    estimate is off by at most one: cells are at least ``2^-38`` of the range wide). IEEE
    double arithmetic only, the same in Java and NumPy (:func:`grid_cell`). NULL, NaN and text
    that is no number are dropped. One pass; ``cells`` numbers come back. ``unit``: only the
    rows each unit keeps (:func:`kept_rows`)."""
    sql = _import_pyspark()
    f = sql.functions
    table.require_column(column)  # public facts first, as before the frame is opened
    if unit is not None:
        table.require_column(unit.privacy_unit, "privacy_unit")
    lo, hi = float(lo), float(hi)
    scale = float(cells) / (hi - lo)
    # The estimate from the clamped row: ``floor`` of an unclamped one far outside the bounds
    # (an infinity, 1e20) overflows a long, which ANSI Spark raises as an error, after the
    # charge (privacy audit 2026-11-22). Clamped, the product is at most about ``cells``.
    clamped = f.least(f.greatest(f.col("x"), f.lit(lo)), f.lit(hi))
    raw = f.floor((clamped - f.lit(lo)) * f.lit(scale))

    def edge(j: Any) -> Any:  # lo + (hi - lo) * j / cells, as grid_edges computes it
        return f.lit(lo) + f.lit(hi - lo) * j.cast("double") / f.lit(float(cells))

    j = f.col("j")
    cell = (
        f.when(f.col("x") < edge(j), j - 1)
        .when((j < f.lit(cells - 1)) & (f.col("x") >= edge(j + 1)), j + 1)
        .otherwise(j)
    )
    counts = np.zeros(cells, dtype=np.int64)
    with _number_rows(table, column, unit) as rows:
        est = rows.select(
            clamped.alias("x"),
            "w",
            f.least(f.greatest(raw, f.lit(0)), f.lit(cells - 1)).cast("long").alias("j"),
        )
        found = collect(est.select(cell.alias("c"), "w").groupBy("c").agg(f.sum("w")))
    for c, n in found:
        counts[int(c)] = int(n)
    return counts
