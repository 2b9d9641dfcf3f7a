"""The Spark table: :class:`SparkTable`, a Spark frame with its public schema as DuckDB type
names (:data:`SPARK_TO_DUCKDB`), the Spark implementation of
:class:`dpselect.data.engine.Engine`, whose methods delegate to the functions of the package's
other modules; :func:`open_spark_table`, which opens a frame (its schema read from the frame's
metadata, a declared schema checked, never applied, the frame read by :func:`nan_safe_frame`);
and :func:`check_engine`, the check of an engine's name.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

import numpy as np
import numpy.typing as npt

from ....core.errors import DataError, ParameterError, given
from ...discovered_groups import DiscoveredGroups
from ...engine import Capabilities, Cells, UnitSize
from ...grids import grid_cell_width, grid_edges, grid_size
from ...query import PrivateGroups, PublicGroups, Query, UnitRule
from ...values import kept_numbers
from ..group_dispatch import GroupDispatch
from ..spark_session import import_pyspark as _import_pyspark
from .columns import _as_double
from .discovered import discovered_candidate_scores, discovered_value_counts, discovered_values
from .grouped import (
    group_multiplicity,
    grouped_candidate_scores,
    grouped_value_counts,
    grouped_values,
)
from .histograms import bucket_counts, grid_counts
from .matching import match_multiplicity
from .progress import collect, reporting, status_context
from .reader import _binary_text, nan_safe_frame
from .rows import _UnitCap, kept_rows, row_counts
from .scores import ALL_VALUES, candidate_scores, contribution_counts, top_values

__all__ = [
    "SPARK_TO_DUCKDB",
    "SparkConnectTable",
    "SparkTable",
    "check_engine",
    "open_spark_table",
]


#: Spark type name (``DataType.typeName()``) -> the DuckDB type holding the same values.
SPARK_TO_DUCKDB: dict[str, str] = {
    "string": "VARCHAR",
    "varchar": "VARCHAR",
    "char": "VARCHAR",
    "long": "BIGINT",
    "integer": "INTEGER",
    "short": "SMALLINT",
    "byte": "TINYINT",
    "double": "DOUBLE",
    "float": "FLOAT",
    "boolean": "BOOLEAN",
    "date": "DATE",
}


# ----------------------------------------------------------------------------- the table
@dataclass
class SparkTable(GroupDispatch):
    """A Spark frame with its public schema as DuckDB type names: the Spark implementation of
    :class:`dpselect.data.engine.Engine` (the methods delegate to the functions of the package's
    other modules; the dispatch on the kind of groups is :class:`~dpselect.data.engines.
    group_dispatch.GroupDispatch`'s, each query inside Spark's progress reports).
    """

    frame: Any
    description: str
    columns: dict[str, str] = field(default_factory=dict)  # name -> DuckDB type
    spark_types: dict[str, str] = field(default_factory=dict)  # name -> Spark simpleString
    #: Spark's types are mapped to DuckDB's exactly (:data:`SPARK_TO_DUCKDB`): none needed.
    arrow_types: dict[str, str] = field(default_factory=dict)
    #: The engine's name, for reports (never for dispatch: recipes call the methods).
    name: str = "spark"
    #: :meth:`person_values` would hold every person's values in the driver: refused; a
    #: query's progress is Spark's own task progress (:mod:`.progress`; not on Spark Connect:
    #: :class:`SparkConnectTable`).
    capabilities: ClassVar[Capabilities] = Capabilities(persons_in_driver=False, progress=True)
    #: The columns of a declared schema (their types are public facts, text included).
    declared: set[str] = field(default_factory=set)

    def _running(self, query: Query[Any]) -> AbstractContextManager[object]:
        """Spark's task progress reported to ``query.progress`` while the query runs
        (:func:`reporting`)."""
        return reporting(self.frame, query.progress)

    def _column_multiplicity(self, column: str, values: Sequence[Any]) -> int:
        """Spark's matching of candidates on a column (:func:`match_multiplicity`), from the
        schema and the list only; no row is read."""
        return match_multiplicity(self, column, values)

    def _group_multiplicity(self, groups: PublicGroups) -> int:
        """Of a group list on ``by`` (:func:`~dpselect.data.engines.spark.
        group_multiplicity`), from the schema and the list only; no row is read."""
        return group_multiplicity(self, groups.by, groups.groups)

    def _ungrouped_scores(
        self, query: Query[None], candidates: Sequence[Any]
    ) -> npt.NDArray[np.int64]:
        """:func:`candidate_scores`."""
        rule = query.rule
        return candidate_scores(
            self, query.column, candidates, rule.privacy_unit, rule.values_per_unit, rule.salt,
            query.progress, rule.rows_per_value,
        )  # fmt: skip

    def _public_group_scores(self, query: Query[PublicGroups], candidates: Sequence[Any]) -> Cells:
        """:func:`~dpselect.data.engines.spark.grouped_candidate_scores` (one scan for every
        group, the module grouped.py; docs/contribution_bounding.md, "Groups per unit")."""
        return grouped_candidate_scores(self, query, candidates)

    def _private_group_scores(
        self, query: Query[PrivateGroups], candidates: Sequence[Any]
    ) -> DiscoveredGroups:
        """:func:`~dpselect.data.engines.spark.discovered.discovered_candidate_scores`."""
        return discovered_candidate_scores(self, query, candidates)

    def _ungrouped_counts(self, query: Query[None], limit: int | None) -> list[tuple[Any, int]]:
        """:func:`top_values` (no limit: :data:`ALL_VALUES`)."""
        rule = query.rule
        return top_values(
            self, query.column, ALL_VALUES if limit is None else limit, rule.privacy_unit,
            rule.values_per_unit, rule.salt, query.progress, rule.rows_per_value,
        )  # fmt: skip

    def _public_group_counts(
        self, query: Query[PublicGroups], limit: int | None
    ) -> list[list[tuple[Any, int]]]:
        """:func:`~dpselect.data.engines.spark.grouped_value_counts`."""
        return grouped_value_counts(self, query, limit)

    def _private_group_counts(
        self, query: Query[PrivateGroups], limit: int | None
    ) -> DiscoveredGroups:
        """:func:`~dpselect.data.engines.spark.discovered.discovered_value_counts`."""
        return discovered_value_counts(self, query, limit)

    def _ungrouped_numbers(self, query: Query[None]) -> npt.NDArray[np.float64]:
        """:meth:`_column_values`."""
        return self._column_values(query.column, query.rule)

    def _public_group_numbers(self, query: Query[PublicGroups]) -> list[npt.NDArray[np.float64]]:
        """:func:`~dpselect.data.engines.spark.grouped_values`."""
        return grouped_values(self, query)

    def _private_group_numbers(self, query: Query[PrivateGroups]) -> DiscoveredGroups:
        """:func:`~dpselect.data.engines.spark.discovered.discovered_values`."""
        return discovered_values(self, query)

    def person_values(self, query: Query[None]) -> list[list[Any]]:
        """Refused (any ``rows_per_value``): policy set union reads each person's values
        into the driver (``capabilities.persons_in_driver`` is false)."""
        raise ParameterError(
            "policy set union reads each person's values into the driver: use the DuckDB "
            "engine (mechanism='laplace' or 'gaussian' runs on Spark)"
        )

    def unit_sizes(self, query: Query[None], what: UnitSize) -> npt.NDArray[np.int64]:
        """Each unit's distinct non-null values (``"values"``, :func:`contribution_counts`) or
        rows with a number (``"rows"``, :func:`row_counts`) in the column."""
        unit = cast(str, query.rule.privacy_unit)
        with reporting(self.frame, query.progress):
            if what == "values":
                return contribution_counts(self, query.column, unit)
            return row_counts(self, query.column, unit)

    def quantile_values(
        self,
        query: Query[None],
        candidates: Sequence[float] | None = None,
        bounds: tuple[float, float] | None = None,
        resolution: float | None = None,
    ) -> npt.NDArray[np.float64]:
        """Stand-in rows for the quantile mechanisms (:meth:`histogram_values`); with a
        privacy unit, of the rows each unit keeps (:func:`kept_rows`, on the executors)."""
        rule = query.rule
        unit = (
            _UnitCap(rule.privacy_unit, int(rule.rows_per_unit), rule.salt)
            if rule.privacy_unit is not None
            else None
        )
        with reporting(self.frame, query.progress):
            return self.histogram_values(query.column, candidates, bounds, resolution, unit=unit)

    def unit_column(self, column: Any, argument: str = "privacy_unit") -> tuple[str, str]:
        """The column that keys the privacy unit and its type: the column itself (Spark
        groups text by its bytes, and collated text is read as plain text:
        :func:`_binary_text`; :meth:`dpselect.data.tables.Table.unit_column`)."""
        return column, self.require_column(column, argument)

    def require_column(self, column: Any, argument: str = "column") -> str:
        """The column's DuckDB type; :class:`DataError` naming ``argument`` if absent."""
        if not isinstance(column, str) or not column:
            raise DataError(f"{argument} must be a column name, got {given(column)}")
        if column not in self.spark_types:
            known = ", ".join(sorted(self.spark_types)) or "none"
            raise DataError(
                f"{argument} {column!r} is not a column of {self.description} (columns: {known})"
            )
        if column not in self.columns:
            raise DataError(
                f"{argument} {column!r} has Spark type {self.spark_types[column]}, which the "
                f"Spark engine does not compare (use {', '.join(sorted(set(SPARK_TO_DUCKDB)))}, "
                "or decimal)"
            )
        return self.columns[column]

    def _column_values(self, column: str, rule: UnitRule) -> npt.NDArray[np.float64]:
        """The column as float64 on the driver (NULL and unparseable rows dropped).

        This collects the column (the recipes do not: quantiles, prices and ``bounds="auto"``
        read histograms, :func:`bucket_counts`). With ``privacy_unit``: the rows each unit
        keeps (:func:`kept_rows`), collected as one count per distinct kept value.
        """
        sql = _import_pyspark()
        privacy_unit, max_rows, salt = rule.privacy_unit, rule.rows_per_unit, rule.salt
        if privacy_unit is not None:
            f = sql.functions
            with kept_rows(self, column, privacy_unit, int(max_rows), salt) as kept:
                found = collect(kept.groupBy("x").agg(f.sum("w").alias("n")))
            values = np.asarray([r[0] for r in found], dtype=np.float64)
            return np.repeat(values, np.asarray([int(r[1]) for r in found], dtype=np.int64))
        f = sql.functions
        value = _as_double(f.col(column), self.columns[column])
        rows = collect(self.frame.select(value.alias("v")).where(f.col("v").isNotNull()))
        values = np.asarray([r[0] for r in rows], dtype=np.float64)
        return kept_numbers(values)

    def buyers_at(self, query: Query[None], prices: Sequence[float]) -> npt.NDArray[np.int64]:
        """``#{rows with value >= p}`` for each public price ``p`` (in the given order), from
        one aggregation on Spark (:func:`bucket_counts` over the sorted distinct prices, then
        suffix sums in the driver): the numbers the revenue scores need, without collecting
        the column. Values as in :meth:`numbers` (NULL, NaN and text that is no number
        dropped), so the counts equal ``np.sum(numbers(query) >= p)``. With
        a privacy unit: of the rows each unit keeps (:func:`kept_rows`)."""
        column, privacy_unit, max_rows, salt = (
            query.column, query.rule.privacy_unit, query.rule.rows_per_unit, query.rule.salt
        )  # fmt: skip
        self.require_column(column)
        asked = np.asarray(prices, dtype=np.float64)
        edges = np.unique(asked)
        if edges.size == 0:
            return np.zeros(0, dtype=np.int64)
        unit = _UnitCap(privacy_unit, int(max_rows), salt) if privacy_unit is not None else None
        with reporting(self.frame, query.progress):
            counts, _ = bucket_counts(self, column, [float(e) for e in edges], unit=unit)
        # at_least[k] = #{x : #{e <= x} >= k + 1} = #{x >= edges[k]}
        at_least = np.cumsum(counts[::-1])[::-1][1:]
        out: npt.NDArray[np.int64] = at_least[np.searchsorted(edges, asked)].astype(np.int64)
        return out

    def grid_width(self, bounds: tuple[float, float], resolution: float | None) -> float | None:
        """The extra accuracy error of the bounds mode on this engine: the widest cell of the
        grid :meth:`histogram_values` rounds the rows down to (:func:`grid_cell_width`)."""
        lo, hi = float(bounds[0]), float(bounds[1])
        return grid_cell_width(lo, hi, grid_size(lo, hi, resolution))

    def column_type_known(self, column: str) -> bool:
        """Whether the type is a public fact: every non-text type of the frame's schema, and
        every declared column (a text column outside the schema, as from a CSV read by Spark,
        is parsed row by row), as :meth:`dpselect.data.tables.Table.column_type_known`."""
        return column in self.declared or self.columns.get(column) != "VARCHAR"

    def histogram_values(
        self,
        column: str,
        candidates: Sequence[float] | None = None,
        bounds: tuple[float, float] | None = None,
        resolution: float | None = None,
        unit: _UnitCap | None = None,
    ) -> npt.NDArray[np.float64]:
        """Stand-in values for the quantile mechanisms, from a histogram computed on Spark.

        ``unit``: the histogram counts only the rows each unit keeps (:func:`kept_rows`): the
        cap is applied on the executors before the histogram.

        - ``candidates``: the histogram over the sorted candidates (:func:`bucket_counts`),
          expanded to one representative per row: ``e_{b-1}`` for a row equal to it, else a
          float strictly between ``e_{b-1}`` and ``e_b``. Every candidate then has exactly
          the ``#below`` and ``#above`` of the real rows: the scores are identical.
        - ``bounds`` with resolution ``w``: each row is rounded down to the public grid of
          :func:`grid_counts` (``G = ceil((hi - lo) / w)`` cells, at most :data:`MAX_CELLS`):
          the exact mechanism then runs on the rounded rows (a public row-by-row map, so the
          privacy proof is unchanged; docs/spark.md for the accuracy).

        Only ``m + 1`` or ``G`` counts cross the network; the driver holds 8 bytes per row.
        """
        self.require_column(column)
        if candidates is not None:
            edges = np.unique(np.asarray(candidates, dtype=np.float64))
            counts, ties = bucket_counts(
                self, column, [float(e) for e in edges], equal=True, unit=unit
            )
            reps = np.empty(2 * len(edges) + 1, dtype=np.float64)
            sizes = np.zeros(2 * len(edges) + 1, dtype=np.int64)
            reps[0] = np.nextafter(edges[0], -np.inf)
            sizes[0] = counts[0]
            for b in range(1, len(edges) + 1):
                reps[2 * b - 1] = edges[b - 1]  # rows equal to e_{b-1}
                sizes[2 * b - 1] = ties[b - 1]
                reps[2 * b] = np.nextafter(edges[b - 1], np.inf)  # e_{b-1} < x (< e_b)
                sizes[2 * b] = counts[b] - ties[b - 1]
            return np.repeat(reps, sizes)
        if bounds is None:
            raise ParameterError("give candidates or bounds")
        lo, hi = float(bounds[0]), float(bounds[1])
        cells = grid_size(lo, hi, resolution)
        counts = grid_counts(self, column, lo, hi, cells, unit=unit)
        return np.repeat(grid_edges(lo, hi, cells), counts)


@dataclass
class SparkConnectTable(SparkTable):
    """A :class:`SparkTable` of a Spark Connect session: the same queries, without progress
    reports (Spark Connect has no status tracker: :func:`.progress.status_context`)."""

    capabilities: ClassVar[Capabilities] = Capabilities(persons_in_driver=False, progress=False)


def open_spark_table(frame: Any, schema: Any = None) -> SparkTable:
    """The table of a Spark frame: its schema read from the frame's metadata (no rows).

    A declared ``schema`` (``{column: type}``, :func:`dpselect.data.schema.parse_schema`) is
    *checked* against the frame's schema, never applied: every declared column must exist
    (:class:`DataError`, as for files) and have the declared type already
    (:class:`ParameterError` otherwise, naming the column, both types and the fix: cast the
    column in Spark). A user's frame is not converted here because Spark's own casts and
    DuckDB's ``TRY_CAST`` differ (DuckDB reads ``'1_000'`` and ``'0x10'`` as numbers, rounds
    ``'2.5'`` to the integer 3), and the engines must agree. A CSV read by :func:`read_files`
    with the schema (the command line's ``--engine spark --schema``) has its text converted
    already, by the rule both engines share (:func:`dpselect.data.rules.declared_text_sql`),
    so its types are the declared ones. Everything here is public.
    """
    from ...schema import parse_schema

    declared = parse_schema(schema)
    frame = nan_safe_frame(_binary_text(frame))
    columns: dict[str, str] = {}
    spark_types: dict[str, str] = {}
    for fld in frame.schema.fields:
        name = fld.dataType.typeName()
        spark_types[fld.name] = fld.dataType.simpleString()
        if name == "decimal":
            columns[fld.name] = f"DECIMAL({fld.dataType.precision},{fld.dataType.scale})"
        elif name in SPARK_TO_DUCKDB:
            columns[fld.name] = SPARK_TO_DUCKDB[name]
    for column, duck_type in declared.items():
        if column not in spark_types:
            known = ", ".join(sorted(spark_types)) or "none"
            raise DataError(
                f"schema names {column!r}, which is not a column of the Spark frame "
                f"(columns: {known})"
            )
        if columns.get(column) != duck_type:
            raise ParameterError(
                f"schema declares {column!r} as {duck_type}, but the Spark frame's column is "
                f"{spark_types[column]}: dpselect takes a Spark frame's types from its schema "
                f"and does not convert them; cast the column in Spark "
                f"(df.withColumn({column!r}, df[{column!r}].cast(...))) or drop it from schema "
                "(a CSV's text is converted by the declared types when it is read with them: "
                "read_files(spark, path, schema), or --schema on the command line)"
            )
    kind = SparkTable if status_context(frame) is not None else SparkConnectTable
    return kind(frame, "the Spark frame", columns, spark_types, declared=set(declared))


def check_engine(engine: Any) -> str:
    """``engine``: ``"duckdb"`` or ``"spark"``."""
    if engine not in ("duckdb", "spark"):
        raise ParameterError(f"engine must be 'duckdb' or 'spark', got {engine!r}")
    return str(engine)
