"""The Spark engine's former address: everything now lives in :mod:`dpselect.data.engines.spark`
(the engine) and :mod:`dpselect.data.rules` (the grids and the bounding limits it shares with
DuckDB). Kept as a thin re-export so that ``dpselect.data.spark_engine.X`` still works."""

from __future__ import annotations

from .engines.spark import (
    INSTALL_HINT,
    SPARK_TO_DUCKDB,
    SparkTable,
    bucket_counts,
    candidate_scores,
    check_engine,
    contribution_counts,
    ensure_java,
    grid_counts,
    is_spark_frame,
    match_multiplicity,
    open_spark_table,
    read_files,
    spark_session,
    top_values,
    typed_candidates,
)
from .grids import MAX_CELLS, grid_cell, grid_cell_width, grid_edges, grid_size
from .rules import MAX_BOUNDED_CANDIDATES, check_bounded_candidates

__all__ = [
    "INSTALL_HINT",
    "MAX_BOUNDED_CANDIDATES",
    "MAX_CELLS",
    "SPARK_TO_DUCKDB",
    "SparkTable",
    "bucket_counts",
    "candidate_scores",
    "check_bounded_candidates",
    "check_engine",
    "contribution_counts",
    "ensure_java",
    "grid_cell",
    "grid_cell_width",
    "grid_counts",
    "grid_edges",
    "grid_size",
    "is_spark_frame",
    "match_multiplicity",
    "open_spark_table",
    "read_files",
    "spark_session",
    "top_values",
    "typed_candidates",
]
