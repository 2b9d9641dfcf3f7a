"""The Spark table: :class:`SparkTable`, a Spark frame with its public schema as DuckDB type
names (:data:`SPARK_TO_DUCKDB`), the Spark implementation of
:class:`dpselect.data.engine.Engine`, whose methods delegate to the functions of the package's
other modules; :func:`open_spark_table`, which opens a frame (its schema read from the frame's
metadata, a declared schema checked, never applied, the frame read by :func:`nan_safe_frame`);
and :func:`check_engine`, the check of an engine's name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ....core.errors import DataError, ParameterError, given
from ...discovered_groups import DiscoveredGroups
from ...grids import grid_cell_width, grid_edges, grid_size
from ...values import kept_numbers
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
from .reader import _binary_text, nan_safe_frame
from .rows import _UnitCap, kept_rows, row_counts
from .scores import ALL_VALUES, candidate_scores, contribution_counts, top_values

__all__ = [
    "SPARK_TO_DUCKDB",
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
class SparkTable:
    """A Spark frame with its public schema as DuckDB type names: the Spark implementation of
    :class:`dpselect.data.engine.Engine` (the methods delegate to the functions of the package's
    other modules).
    """

    frame: Any
    description: str
    columns: dict[str, str] = field(default_factory=dict)  # name -> DuckDB type
    spark_types: dict[str, str] = field(default_factory=dict)  # name -> Spark simpleString
    #: Spark's types are mapped to DuckDB's exactly (:data:`SPARK_TO_DUCKDB`): none needed.
    arrow_types: dict[str, str] = field(default_factory=dict)
    #: The engine's name, for reports (never for dispatch: recipes call the methods).
    name: str = "spark"
    #: :meth:`person_values` would hold every person's values in the driver: refused.
    holds_persons_in_driver: bool = False
    #: The columns of a declared schema (their types are public facts, text included).
    declared: set[str] = field(default_factory=set)

    def candidate_scores(
        self,
        column: str,
        candidates: Sequence[Any],
        privacy_unit: str | None = None,
        max_contributions: int = 1,
        salt: int = 0,
        progress: Any = None,
        max_rows_per_value: int = 1,
    ) -> npt.NDArray[np.int64]:
        """The bounded score vector (:func:`candidate_scores`)."""
        return candidate_scores(
            self, column, candidates, privacy_unit, max_contributions, salt, progress,
            max_rows_per_value,
        )  # fmt: skip

    def candidate_multiplicity(self, column: str, candidates: Sequence[Any]) -> int:
        """The most candidates one value matches (:func:`match_multiplicity`)."""
        return match_multiplicity(self, column, candidates)

    def top_values(
        self,
        column: str,
        limit: int,
        privacy_unit: str | None = None,
        max_contributions: int = 1,
        salt: int = 0,
        progress: Any = None,
        max_rows_per_value: int = 1,
    ) -> list[tuple[Any, int]]:
        """The ``limit`` best values and their bounded counts (:func:`top_values`)."""
        return top_values(self, column, limit, privacy_unit, max_contributions, salt, progress,
                          max_rows_per_value)  # fmt: skip

    def value_counts(
        self,
        column: str,
        privacy_unit: str | None = None,
        max_contributions: int = 1,
        salt: int = 0,
        progress: Any = None,
        max_rows_per_value: int = 1,
    ) -> dict[Any, int]:
        """``{value: persons}`` for every non-NULL value (:func:`top_values`, no limit;
        ``max_rows_per_value > 1``: each person's rows with the value, capped)."""
        rows = top_values(self, column, ALL_VALUES, privacy_unit, max_contributions, salt,
                          progress, max_rows_per_value)  # fmt: skip
        return {value: int(n) for value, n in rows}

    # --------------------------------------------------------------- grouped releases
    # One scan for every group of a public list ``groups`` matched on ``by`` (the module
    # grouped.py of this package; docs/contribution_bounding.md, "Groups per unit").
    def grouped_candidate_scores(
        self,
        column: str,
        candidates: Sequence[Any],
        by: str,
        groups: Sequence[Any],
        privacy_unit: str | None = None,
        max_groups: int = 1,
        max_contributions: int = 1,
        salt: int = 0,
        group_salt: int = 0,
        progress: Any = None,
        max_rows_per_value: int = 1,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The nonzero ``(group, candidate, score)`` triples, sorted by group then candidate
        (:func:`~dpselect.data.engines.spark.grouped_candidate_scores`)."""
        return grouped_candidate_scores(
            self, column, candidates, by, groups, privacy_unit, max_groups, max_contributions,
            salt, group_salt, progress, max_rows_per_value,
        )  # fmt: skip

    def grouped_value_counts(
        self,
        column: str,
        by: str,
        groups: Sequence[Any],
        limit: int | None = None,
        privacy_unit: str | None = None,
        max_groups: int = 1,
        max_contributions: int = 1,
        salt: int = 0,
        group_salt: int = 0,
        progress: Any = None,
        max_rows_per_value: int = 1,
    ) -> list[list[tuple[Any, int]]]:
        """Each group's values with their bounded counts, largest first, ties by value
        (:func:`~dpselect.data.engines.spark.grouped_value_counts`)."""
        return grouped_value_counts(
            self, column, by, groups, limit, privacy_unit, max_groups, max_contributions, salt,
            group_salt, progress, max_rows_per_value,
        )  # fmt: skip

    def grouped_values(
        self,
        column: str,
        by: str,
        groups: Sequence[Any],
        *,
        privacy_unit: str | None = None,
        max_groups: int = 1,
        max_rows: int = 1,
        salt: int = 0,
        group_salt: int = 0,
    ) -> list[npt.NDArray[np.float64]]:
        """Each group's kept numbers
        (:func:`~dpselect.data.engines.spark.grouped_values`)."""
        return grouped_values(
            self, column, by, groups, privacy_unit=privacy_unit, max_groups=max_groups,
            max_rows=max_rows, salt=salt, group_salt=group_salt,
        )  # fmt: skip

    def group_multiplicity(self, by: str, groups: Sequence[Any]) -> int:
        """The most groups one value of ``by`` matches
        (:func:`~dpselect.data.engines.spark.group_multiplicity`)."""
        return group_multiplicity(self, by, groups)

    def discovered_candidate_scores(
        self,
        column: str,
        candidates: Sequence[Any],
        by: str,
        privacy_unit: str | None = None,
        max_groups: int = 1,
        max_contributions: int = 1,
        salt: int = 0,
        group_salt: int = 0,
        progress: Any = None,
        max_rows_per_value: int = 1,
    ) -> DiscoveredGroups:
        """The groups found with their persons and candidate scores
        (:func:`~dpselect.data.engines.spark.discovered_candidate_scores`)."""
        return discovered_candidate_scores(
            self, column, candidates, by, privacy_unit, max_groups, max_contributions, salt,
            group_salt, progress, max_rows_per_value,
        )  # fmt: skip

    def discovered_value_counts(
        self,
        column: str,
        by: str,
        limit: int | None = None,
        privacy_unit: str | None = None,
        max_groups: int = 1,
        max_contributions: int = 1,
        salt: int = 0,
        group_salt: int = 0,
        progress: Any = None,
        max_rows_per_value: int = 1,
    ) -> DiscoveredGroups:
        """The groups found with their persons and value counts
        (:func:`~dpselect.data.engines.spark.discovered_value_counts`)."""
        return discovered_value_counts(
            self, column, by, limit, privacy_unit, max_groups, max_contributions, salt,
            group_salt, progress, max_rows_per_value,
        )  # fmt: skip

    def discovered_values(
        self,
        column: str,
        by: str,
        *,
        privacy_unit: str | None = None,
        max_groups: int = 1,
        max_rows: int = 1,
        salt: int = 0,
        group_salt: int = 0,
    ) -> DiscoveredGroups:
        """The groups found with their persons and kept numbers
        (:func:`~dpselect.data.engines.spark.discovered_values`)."""
        return discovered_values(
            self, column, by, privacy_unit=privacy_unit, max_groups=max_groups,
            max_rows=max_rows, salt=salt, group_salt=group_salt,
        )  # fmt: skip

    def person_values(
        self,
        column: str,
        privacy_unit: str,
        max_contributions: int,
        salt: int = 0,
        progress: Any = None,
        max_rows_per_value: int = 1,
    ) -> list[list[Any]]:
        """Refused (any ``max_rows_per_value``): policy set union reads each person's values
        into the driver."""
        raise ParameterError(
            "policy set union reads each person's values into the driver: use the DuckDB "
            "engine (mechanism='laplace' or 'gaussian' runs on Spark)"
        )

    def contribution_counts(self, column: str, privacy_unit: str) -> npt.NDArray[np.int64]:
        """``c_u``: each person's distinct non-null values (:func:`contribution_counts`)."""
        return contribution_counts(self, column, privacy_unit)

    def row_counts(self, column: str, privacy_unit: str) -> npt.NDArray[np.int64]:
        """Each unit's rows with a number in ``column`` (:func:`row_counts`)."""
        return row_counts(self, column, privacy_unit)

    def quantile_values(
        self,
        column: str,
        candidates: Sequence[float] | None = None,
        bounds: tuple[float, float] | None = None,
        resolution: float | None = None,
        progress: Any = None,
        *,
        privacy_unit: str | None = None,
        max_rows: int = 1,
        salt: int = 0,
    ) -> npt.NDArray[np.float64]:
        """Stand-in rows for the quantile mechanisms (:meth:`histogram_values`); with
        ``privacy_unit``, of the rows each unit keeps (:func:`kept_rows`, on the executors)."""
        unit = _UnitCap(privacy_unit, int(max_rows), salt) if privacy_unit is not None else None
        return self.histogram_values(column, candidates, bounds, resolution, unit=unit)

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

    def column_values(
        self,
        column: str,
        *,
        privacy_unit: str | None = None,
        max_rows: int = 1,
        salt: int = 0,
    ) -> npt.NDArray[np.float64]:
        """The column as float64 on the driver (NULL and unparseable rows dropped).

        This collects the column (the recipes do not: quantiles, prices and ``bounds="auto"``
        read histograms, :func:`bucket_counts`). With ``privacy_unit``: the rows each unit
        keeps (:func:`kept_rows`), collected as one count per distinct kept value.
        """
        sql = _import_pyspark()
        if privacy_unit is not None:
            f = sql.functions
            with kept_rows(self, column, privacy_unit, int(max_rows), salt) as kept:
                found = kept.groupBy("x").agg(f.sum("w").alias("n")).collect()
            values = np.asarray([r[0] for r in found], dtype=np.float64)
            return np.repeat(values, np.asarray([int(r[1]) for r in found], dtype=np.int64))
        f = sql.functions
        value = _as_double(f.col(column), self.columns[column])
        rows = self.frame.select(value.alias("v")).where(f.col("v").isNotNull()).collect()
        values = np.asarray([r[0] for r in rows], dtype=np.float64)
        return kept_numbers(values)

    def buyers_at(
        self,
        column: str,
        prices: Sequence[float],
        *,
        privacy_unit: str | None = None,
        max_rows: int = 1,
        salt: int = 0,
    ) -> npt.NDArray[np.int64]:
        """``#{rows with value >= p}`` for each public price ``p`` (in the given order), from
        one aggregation on Spark (:func:`bucket_counts` over the sorted distinct prices, then
        suffix sums in the driver): the numbers the revenue scores need, without collecting
        the column. Values as in :meth:`column_values` (NULL, NaN and text that is no number
        dropped), so the counts equal ``np.sum(column_values(column) >= p)``. With
        ``privacy_unit``: of the rows each unit keeps (:func:`kept_rows`)."""
        self.require_column(column)
        asked = np.asarray(prices, dtype=np.float64)
        edges = np.unique(asked)
        if edges.size == 0:
            return np.zeros(0, dtype=np.int64)
        unit = _UnitCap(privacy_unit, int(max_rows), salt) if privacy_unit is not None else None
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

    def match_multiplicity(self, column: str, candidates: Sequence[Any]) -> int:
        """The most candidates one value of ``column`` matches, by Spark's matching (the
        noisy histograms' L1 sensitivity without a privacy unit; :func:`match_multiplicity`).
        From the schema and the candidates only; no row is read."""
        return match_multiplicity(self, column, candidates)

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
    return SparkTable(frame, "the Spark frame", columns, spark_types, declared=set(declared))


def check_engine(engine: Any) -> str:
    """``engine``: ``"duckdb"`` or ``"spark"``."""
    if engine not in ("duckdb", "spark"):
        raise ParameterError(f"engine must be 'duckdb' or 'spark', got {engine!r}")
    return str(engine)
