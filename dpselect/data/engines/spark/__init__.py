"""The Spark engine: the same score vectors, counts and histograms as DuckDB, on a PySpark frame.

dpselect has one data layer with two engines, both implementations of
:class:`dpselect.data.engine.Engine`. DuckDB (:mod:`dpselect.data.engines.duckdb`) is the
default and the test oracle; this package computes the *same* results with the Spark DataFrame
API, for data that lives in a cluster. Only small results come back to the driver: a score
per candidate, the ``limit`` largest counts of the unknown-domain path, or a histogram over a
public grid (per group of a public list for the grouped releases: the section "grouped
releases"). The selection, the noise and the ledger stay in the driver, exactly as with
DuckDB. The rules (all in ``docs/spark.md``):

- **DataFrame API only**: no RDD, no ``SparkContext``, no Python UDF, so that the same code
  runs on classic Spark and on Spark Connect. The one exception is a side channel: the
  progress reports (:mod:`~.progress`) read a classic session's status tracker, and are
  left out on Spark Connect.
- **Nothing random on executors**: no ``rand()``, no ``monotonically_increasing_id``, no
  sampling, no approximate aggregate. The only per-query secret is the salt, drawn in the
  driver and sent as a literal; every executor computation is a deterministic function of the
  rows and the salt, so a task retry or a different partitioning gives the same answer.
- **Types from the schema**: a column's type is the frame's schema (never the rows), mapped
  to the DuckDB type of the same values (:data:`SPARK_TO_DUCKDB`); an unsupported type is a
  :class:`DataError` raised from the schema.
- **Candidates are converted in the driver, by DuckDB**: each public candidate is cast to the
  column's type with DuckDB's own ``TRY_CAST`` (the oracle's rule), and Spark only compares
  typed values for equality, with the equality of the column's type: DuckDB's for every
  mapped type, but a collated text column (``string collate UTF8_LCASE``) matches ``'a'``
  and ``'A'`` to one value. So the most candidates one value matches (the histograms' L1
  sensitivity) is counted by Spark's own join (:func:`match_multiplicity`). No row is read.
- **Contribution bounding** uses the keyed hash of :mod:`dpselect.data.rules`
  (:func:`~dpselect.data.rules.bounding_key`): the same salt, user and value give the same
  rank in both engines.

pyspark is imported only in this package (and :mod:`dpselect.data.engines.spark_session`), and
only when a Spark frame or ``--engine spark`` is used; frames are recognised by their class's
module (:func:`is_spark_frame`), which covers classic and Spark Connect frames alike.

The modules, one concept each (this package re-exports the names the rest of dpselect uses):

- :mod:`~.reader`: the one reader (:func:`read_files`, :func:`nan_safe_frame`,
  :func:`check_text_schema`, :func:`is_spark_frame`);
- :mod:`~.table`: :class:`SparkTable` (the engine's methods; ``SparkConnectTable`` on Spark
  Connect, without progress reports), :func:`open_spark_table`, :data:`SPARK_TO_DUCKDB`;
- :mod:`~.progress`: the one place the actions that read a query's data run, reporting
  Spark's task progress to the query's ``progress``;
- :mod:`~.matching`: the public candidates typed by DuckDB and matched on Spark
  (:func:`typed_candidates`, :func:`match_multiplicity`);
- :mod:`~.scores`: the ungrouped scores and counts (:func:`candidate_scores`,
  :func:`top_values`, :func:`contribution_counts`);
- :mod:`~.rows`: the rows each unit keeps (:func:`kept_rows`, :func:`row_counts`);
- :mod:`~.histograms`: the counts the quantile values are read from (:func:`bucket_counts`,
  :func:`grid_counts`);
- :mod:`~.grouped`: the grouped releases over a public list of groups;
- :mod:`~.discovered`: the grouped releases over the groups found in the data;
- :mod:`~.bounding`: each unit's kept values (the ``m`` smallest keys);
- :mod:`~.keys`: the bounding key of :mod:`dpselect.data.rules` in Spark columns;
- :mod:`~.cache`: a small frame computed and cached before the plan that joins it;
- :mod:`~.columns`: the column expressions the plans share.
"""

from __future__ import annotations

from ...grids import MAX_CELLS, grid_cell, grid_cell_width, grid_edges, grid_size
from ...rules import MAX_BOUNDED_CANDIDATES, check_bounded_candidates
from ..spark_session import CONNECT_INSTALL_HINT, INSTALL_HINT, ensure_java, spark_session
from .grouped import (
    MAX_GROUPS,
    group_multiplicity,
    grouped_candidate_scores,
    grouped_value_counts,
    grouped_values,
)
from .histograms import bucket_counts, grid_counts
from .matching import match_multiplicity, typed_candidates
from .reader import check_text_schema, is_spark_frame, nan_safe_frame, read_files
from .rows import kept_rows, row_counts
from .scores import ALL_VALUES, candidate_scores, contribution_counts, top_values
from .table import SPARK_TO_DUCKDB, SparkTable, check_engine, open_spark_table

__all__ = [
    "ALL_VALUES",
    "CONNECT_INSTALL_HINT",
    "INSTALL_HINT",
    "MAX_BOUNDED_CANDIDATES",
    "MAX_CELLS",
    "MAX_GROUPS",
    "SPARK_TO_DUCKDB",
    "SparkTable",
    "bucket_counts",
    "candidate_scores",
    "check_bounded_candidates",
    "check_engine",
    "check_text_schema",
    "contribution_counts",
    "ensure_java",
    "grid_cell",
    "grid_cell_width",
    "grid_counts",
    "grid_edges",
    "grid_size",
    "group_multiplicity",
    "grouped_candidate_scores",
    "grouped_value_counts",
    "grouped_values",
    "is_spark_frame",
    "kept_rows",
    "match_multiplicity",
    "nan_safe_frame",
    "open_spark_table",
    "read_files",
    "row_counts",
    "spark_session",
    "top_values",
    "typed_candidates",
]
