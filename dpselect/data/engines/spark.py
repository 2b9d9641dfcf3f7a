"""The Spark engine: the same score vectors, counts and histograms as DuckDB, on a PySpark frame.

dpselect has one data layer with two engines, both implementations of
:class:`dpselect.data.engine.Engine`. DuckDB (:mod:`dpselect.data.engines.duckdb`) is the
default and the test oracle; this module computes the *same* results with the Spark DataFrame
API, for data that lives in a cluster. Only small results come back to the driver: a score
per candidate, the ``limit`` largest counts of the unknown-domain path, or a histogram over a
public grid (per group of a public list for the grouped releases: the section "grouped
releases"). The selection, the noise and the ledger stay in the driver, exactly as with
DuckDB. The rules (all in ``docs/spark.md``):

- **DataFrame API only**: no RDD, no ``SparkContext``, no Python UDF, so that the same code
  runs on classic Spark and on Spark Connect.
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

pyspark is imported only here, and only when a Spark frame or ``--engine spark`` is used;
frames are recognised by their class's module (:func:`is_spark_frame`), which covers classic
and Spark Connect frames alike.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import numpy.typing as npt

from ...core.errors import DataError, ParameterError, given
from ..candidates import as_arrow
from ..discovered_groups import DiscoveredGroups, discovered_from_rows
from ..grids import MAX_CELLS, grid_cell, grid_cell_width, grid_edges, grid_size
from ..rules import M32, MAX_BOUNDED_CANDIDATES, check_bounded_candidates, check_rows_per_value
from ..text_casts import SPARK_TEXT_TYPES, declared_text_sql
from ..values import (
    canonical_text_sql,
    kept_numbers,
    number_kept_sql,
    numeric_candidate_type,
    read_value_sql,
)
from .spark_session import (
    CONNECT_INSTALL_HINT,
    INSTALL_HINT,
    ensure_java,
    spark_session,
)
from .spark_session import import_pyspark as _import_pyspark

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
_SALT_MASK = (1 << 64) - 1


# ----------------------------------------------------------------------------- recognising
def is_spark_frame(obj: Any) -> bool:
    """Whether ``obj`` is a PySpark DataFrame (classic or Spark Connect), without importing it."""
    module = type(obj).__module__
    return module.split(".")[0] == "pyspark" and type(obj).__name__ == "DataFrame"


#: Readers by suffix: Spark's reader and its options (CSV and JSON: every column text).
_SPARK_READERS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".tsv": "csv",
}
# JSON lines are not read by the Spark engine: Spark finds a JSON file's columns by scanning
# its rows, so one person's record could add a column (and change an error into a result).
# DuckDB's reader (the default engine) takes the columns from the query instead.


def _reader_kind(path: str) -> tuple[str, str]:
    """Spark's reader of ``path`` and the path's suffix, from the path alone (a directory:
    Parquet); :class:`DataError` for a missing file or a format Spark does not read."""
    p = Path(path)
    suffix = p.suffix.lower()
    if p.is_dir():
        suffix = ".parquet"
    elif not any(ch in path for ch in "*?[") and not p.exists():
        raise DataError(f"data file {path!r} does not exist")
    kind = _SPARK_READERS.get(suffix)
    if kind is None:
        raise DataError(
            f"data path {path!r} has an unsupported format for Spark "
            f"(use {', '.join(sorted(_SPARK_READERS))}, or a directory of Parquet parts)"
        )
    return kind, suffix


def check_text_schema(path: str, schema: Any) -> dict[str, str]:
    """The declared ``schema`` (:func:`dpselect.data.schema.parse_schema`) for reading
    ``path`` with Spark, checked from public facts only (the path's suffix, the schema),
    before Spark starts and before anything is charged.

    A CSV or TSV file's columns are text, read as the declared types by the rule both engines
    share (:func:`dpselect.data.rules.declared_text_sql`): a type the rule does not convert
    on Spark (:data:`dpselect.data.rules.SPARK_TEXT_TYPES`; e.g. ``DECIMAL(10,2)``,
    ``TIMESTAMP``, ``HUGEINT``) is refused, naming the column. Parquet's types are its own
    (checked against the schema when the table opens, :func:`open_spark_table`).

    Parameters
    ----------
    path : str
        The file, glob or directory to read.
    schema : dict, str or None
        The declared types.

    Returns
    -------
    dict of str to str
        The schema as ``{column: DuckDB type}``.

    Raises
    ------
    DataError
        The path does not exist or has a format Spark does not read.
    ParameterError
        A malformed schema, or a declared type that Spark does not read from CSV text.
    """
    from ..schema import parse_schema

    declared = parse_schema(schema)
    kind, _ = _reader_kind(path)
    if kind == "csv":
        for column, duck_type in declared.items():
            if duck_type.upper() not in SPARK_TEXT_TYPES:
                raise ParameterError(
                    f"schema declares {column!r} as {duck_type}, which the Spark engine does "
                    f"not read from CSV text (it reads {', '.join(SPARK_TEXT_TYPES)}; "
                    "docs/data_input.md, 'Declared types for text columns'): declare one of "
                    "those, or use --engine duckdb"
                )
    return declared


def read_files(spark: Any, path: str, schema: Any = None) -> Any:
    """A Spark frame over a file, a glob of files or a directory of Parquet parts.

    The schema is public: Parquet's own; CSV's header with every column text (no inference),
    each column declared in ``schema`` read as its type by the rule both engines share
    (:func:`dpselect.data.rules.declared_text_sql`; :func:`check_text_schema` refuses a type
    the rule does not read on Spark), so that DuckDB and Spark read the same file to the same
    values; JSON is refused (its columns would come from the rows). The format comes from the
    suffix (a directory: Parquet).

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        The session that reads the files.
    path : str
        A file, a glob of files or a directory of Parquet parts.
    schema : dict, str or None
        Declared types (:func:`dpselect.data.schema.parse_schema`). A Parquet frame is
        returned as it is (its types are checked against the schema when the table opens);
        a declared column absent from a CSV header is left to that check too.

    Returns
    -------
    pyspark.sql.DataFrame
        The frame (not yet read: Spark reads the files when a query runs).

    Raises
    ------
    DataError
        A missing path, an unsupported format, a header that is not UTF-8, or Spark cannot
        read the path (public facts).
    ParameterError
        A declared type Spark does not read from CSV text.
    """
    declared = check_text_schema(path, schema)
    kind, suffix = _reader_kind(path)
    reader = spark.read
    try:
        if kind == "parquet":
            return reader.parquet(path)
        if kind == "csv":
            frame = (
                reader.option("header", True)
                .option("inferSchema", False)
                .option("sep", "\t" if suffix == ".tsv" else ",")
                .option("mode", "DROPMALFORMED")
                .option("encoding", "ISO-8859-1")
                .csv(path)
            )
            return _declared_text(_utf8_rows(frame, path), declared)
        raise AssertionError(kind)  # pragma: no cover - the table above has no other kind
    except Exception as exc:  # an AnalysisException from a public fact (path, format)
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"cannot read {path!r} with Spark: {first}") from None


def _declared_text(frame: Any, declared: dict[str, str]) -> Any:
    """``frame`` (a CSV's text columns) with each declared column read as its type by the
    rule of :func:`dpselect.data.rules.declared_text_sql` (Spark SQL, with ``try_cast``: no
    value raises, ANSI mode or not); other columns as they are. From the schema alone."""
    ruled = {c: t for c, t in declared.items() if c in frame.columns and t.upper() != "VARCHAR"}
    if not ruled:
        return frame
    f = _import_pyspark().functions
    projected = [
        f.expr(declared_text_sql(_spark_quote(c), ruled[c], "spark")).alias(c)
        if c in ruled
        else f.col(_spark_quote(c))
        for c in frame.columns
    ]
    return frame.select(*projected)


def _utf8_rows(frame: Any, path: str) -> Any:
    """A CSV frame read as ISO-8859-1 (one character per byte: the bytes kept exactly) back as
    UTF-8 text, with DuckDB's rule for a line that is not UTF-8: no row.

    Spark's UTF-8 decoder replaces each invalid sequence by U+FFFD, so ``u\\xff`` and
    ``u\\xfe`` were one privacy unit (issue 22) and the engines disagreed (DuckDB drops such a
    line, :mod:`dpselect.data.text_lines`). A CSV delimiter, quote or line break is ASCII, and
    no byte of a multi-byte UTF-8 sequence is, so reading the bytes as ISO-8859-1 splits the
    lines and fields exactly as UTF-8 would. Each field is then its bytes again
    (``encode(.., 'ISO-8859-1')`` cast to text, which Spark does not check), and a row with a
    field that is not valid UTF-8 is dropped: a rule of that row alone. The header (public)
    names the columns in UTF-8; a header that is not UTF-8 is refused.
    """
    sql = _import_pyspark()
    f = sql.functions
    names = []
    for name in frame.columns:
        try:
            names.append(name.encode("latin-1").decode("utf-8"))
        except UnicodeError:
            raise DataError(f"the header line of {path!r} is not UTF-8 text") from None
    raw = [f.encode(f.col(_spark_quote(c)), "ISO-8859-1") for c in frame.columns]
    if hasattr(f, "is_valid_utf8"):  # Spark 4
        valid = [f.is_valid_utf8(r.cast("string")) for r in raw]
    else:  # Spark 3.5: its decode replaces invalid bytes, so a valid field round-trips
        valid = [f.encode(f.decode(r, "UTF-8"), "UTF-8") == r for r in raw]
    rows = frame
    for r, ok in zip(raw, valid, strict=True):
        rows = rows.where(r.isNull() | ok)  # filtered before the projection renames the columns
    return rows.select(*[r.cast("string").alias(n) for r, n in zip(raw, names, strict=True)])


def _spark_quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


# ----------------------------------------------------------------------------- the table
@dataclass
class SparkTable:
    """A Spark frame with its public schema as DuckDB type names: the Spark implementation of
    :class:`dpselect.data.engine.Engine` (the methods delegate to this module's functions).
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
    # One scan for every group of a public list ``groups`` matched on ``by`` (the section
    # "grouped releases" of this module; docs/contribution_bounding.md, "Groups per unit").
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
    from ..schema import parse_schema

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


def nan_safe_frame(frame: Any) -> Any:
    """``frame`` with every floating column read as ``x + 0.0`` (a computed column): the
    Spark engine's NaN-safe reader, applied to every frame it opens (files and users' frames).

    Spark pushes a comparison on a column it reads from Parquet (``x > 5``, ``x = c``) down
    to the files, where a row group whose min/max (which never count NaN) rule the comparison
    out is skipped whole: a NaN row in it, which Spark's comparison keeps (NaN is the largest
    double), was then dropped or kept by the other rows of its row group (measured: ``x > 5``
    kept 3 of 4 rows). No reader option turns this off per read; a computed column is never
    pushed down, so every row is judged on its own (docs/contribution_bounding.md, "What a
    row's fate may depend on"). A NaN is read as NULL, a missing value, as every DuckDB input
    reads it (:func:`dpselect.data.rules.read_value_sql`); ``-0.0`` becomes ``0.0``, as every
    plan groups floats anyway.
    Decided from the schema alone; the projection costs nothing measurable."""
    sql = _import_pyspark()
    f = sql.functions
    changed, projected = False, []
    for fld in frame.schema.fields:
        col = f.col(_spark_quote(fld.name))
        if fld.dataType.typeName() in ("double", "float"):
            changed = True
            shifted = f"({_spark_quote(fld.name)} + CAST(0.0 AS {fld.dataType.simpleString()}))"
            col = f.expr(read_value_sql(shifted, "DOUBLE"))  # NaN read as NULL, as DuckDB
        projected.append(col.alias(fld.name))
    return frame.select(*projected) if changed else frame


def _binary_text(frame: Any) -> Any:
    """``frame`` with every text column that has a collation (Spark 4: ``UTF8_LCASE``,
    ``UNICODE_CI``, ...) or a ``char(n)`` / ``varchar(n)`` type read as plain ``string``,
    compared by its bytes as in DuckDB (issue 22).

    A collation's equality merges distinct texts (``'a'`` and ``'A'``): as a privacy unit,
    two people would be one key; as a ranked value, the label Spark releases for the group is
    whichever spelling it met first (another row's); and the engines would disagree. Decided
    from the schema alone; frames without such columns are returned as they are."""
    sql = _import_pyspark()
    f = sql.functions
    changed, projected = False, []
    for fld in frame.schema.fields:
        kind = fld.dataType.simpleString()
        col = f.col(_spark_quote(fld.name))
        if fld.dataType.typeName() in ("string", "char", "varchar") and kind != "string":
            changed = True
            col = col.cast("string")
        projected.append(col.alias(fld.name))
    return frame.select(*projected) if changed else frame


def _as_double(col: Any, duck_type: str) -> Any:
    """The value as a double, NULL when it is not a number (text parsed by Spark's cast)."""
    if duck_type == "VARCHAR" and hasattr(col, "try_cast"):  # pyspark >= 4: ANSI casts raise
        return col.try_cast("double")
    return col.cast("double")


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
            return pa.table({"v": array, "i": positions}).filter(pc.is_valid(array))
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
    row per 2^20 candidates: with 10^5 candidates the optimizer took 0.2-0.3 s over a local
    relation of 10^5 rows (plan comparisons over its rows), and 0.04-0.06 s over one row.
    Arrow throughout with pyspark 4 (pandas with 3.5)."""
    import pyarrow as pa

    sql = _import_pyspark()
    f = sql.functions
    t = sql.types
    n = typed.num_rows
    values = typed.column("v").combine_chunks()
    positions = typed.column("i").combine_chunks().cast(pa.int64())
    cuts = pa.array([*range(0, n, CANDIDATES_PER_ROW), n], pa.int32())
    table = pa.table(
        {
            "v": pa.ListArray.from_arrays(cuts, values),
            "i": pa.ListArray.from_arrays(cuts, positions),
        }
    )
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


def _fetch_pairs(frame: Any) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The two integer columns of a small result, as arrays (Arrow when available)."""
    first, second = _fetch_longs(frame, 2)
    return first, second


def _fetch_longs(frame: Any, width: int) -> tuple[npt.NDArray[np.int64], ...]:
    """The first ``width`` integer columns of a small result, as arrays (Arrow when
    available)."""
    to_arrow = getattr(frame, "toArrow", None)
    if to_arrow is not None:
        table = to_arrow()
        return tuple(
            np.asarray(table.column(j).to_numpy(zero_copy_only=False), dtype=np.int64)
            for j in range(width)
        )
    rows = frame.collect()  # pragma: no cover - pyspark 3.5
    return tuple(np.asarray([r[j] for r in rows], dtype=np.int64) for j in range(width))


def _spark(frame: Any) -> Any:
    return frame.sparkSession


# ----------------------------------------------------------------------------- bounding
# The rule of dpselect.data.scores (docs/contribution_bounding.md), spelt in Spark columns:
#   seed(u) = first 8 bytes, little-endian, of md5(salt \x1f "u" \x1f text(u)); a, b = halves
#   code    = candidate position, or first 4 bytes LE of md5(salt \x1f "v" \x1f text(v))
#   key     = fmix32(fmix32(code xor a) xor b)
# A user keeps the max_contributions values of smallest (key, position) or (key, value).
_M32 = 0xFFFFFFFF
_FMIX32 = (("xs", 16), ("mul", 0x85EBCA6B), ("xs", 13), ("mul", 0xC2B2AE35), ("xs", 16))
_FLOATING = ("FLOAT", "DOUBLE")


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


#: With at most this many public candidates a unit holds at most this many distinct items,
#: and the candidate plan gathers them in one array per unit (:func:`_kept_per_user`): at
#: most a few MB per unit in a task, whatever the rows.
ARRAY_CANDIDATES = 100_000


def _kept_per_user(
    rows: Any,
    unit_type: str,
    salt: int,
    m: int,
    coded: bool = False,
    weighted: bool = False,
    candidates: int | None = None,
) -> Any:
    """The values each user keeps (column ``x``, one row per kept (user, value)).

    ``weighted``: ``rows`` are distinct (user, value) pairs with a column ``w`` (the user's
    rows with the value, capped: ``max_rows_per_value``), carried to the output beside
    ``x``; the choice is the same (it reads distinct values only).

    ``rows``: columns ``u`` (the unit as grouped) and ``x`` (a candidate position, its own
    code; or with ``coded``, any value, and its code in column ``c``, the value itself carried
    through the choice: the unknown-domain path chooses on longs instead,
    :func:`_kept_ids_per_user`). The rule of
    :func:`dpselect.data.scores.bounding_key`: each user keeps the ``m`` distinct values of
    smallest ``(key, x)``, ``key = fmix32(fmix32(code xor a) xor b)``, ``(a, b)`` the seed of
    the user.

    The plan: each user's seed (an md5) computed once per user, not per row; the key in
    plain column arithmetic (code-generated), one projection per step
    (:func:`_fmix32_steps`); then the ``m`` smallest per user. With ``candidates`` (the
    public list's length) at most :data:`ARRAY_CANDIDATES`, a user holds at most that many
    distinct items, and one ``groupBy(u)`` collects them as a set: the seed from it, the
    items exploded again (still partitioned by user), and the ``m`` smallest from a sorted
    set per user (:func:`_unit_item_seeds`; 1.2-1.8x faster than the plan for any number of
    items, docs/performance.md, "Memory per unit"). Otherwise no array at all: the seeds
    joined back (:func:`_per_unit_seeds`) and a window (:func:`_smallest_per_group`).
    The same kept values either way.
    """
    sql = _import_pyspark()
    f = sql.functions
    fields = ["x", *(["c"] if coded else []), *(["w"] if weighted else [])]
    few = candidates is not None and candidates <= ARRAY_CANDIDATES
    if few:
        seeded = _unit_item_seeds(rows, unit_type, [salt], fields)
    else:
        seeded = _per_unit_seeds(rows, unit_type, [salt], fields)

    def smallest(packed: Any, m: int) -> Any:
        return _smallest_per_group(packed, ["u"], m, in_array=few).select("p")

    code = "c" if coded else "x"  # without a code column, the candidate position itself
    carried = ["w"] if weighted else []
    a, b = f.col("_a0"), f.col("_b0")
    start = seeded.select("u", "x", *carried, b.alias("_b"), f.col(code).bitwiseXOR(a).alias("_x"))
    keyed = _fmix32_steps(start, ["u", "x", *carried])
    if weighted:  # (p, w) ordered by p: p is distinct per user (distinct pairs)
        if coded:
            p = f.struct(f.struct(f.col("k"), f.col("x")).alias("p"), f.col("w"))
            ranked = keyed.select("u", p.alias("p"))
            kept = smallest(ranked, m)
            return kept.select(f.col("p.p.x").alias("x"), f.col("p.w").alias("w"))
        p = f.struct(_packed(f.col("k"), f.col("x")).alias("p"), f.col("w"))
        kept = smallest(keyed.select("u", p.alias("p")), m)
        return kept.select(_unpacked(f.col("p.p")).alias("x"), f.col("p.w").alias("w"))
    if not coded:
        ranked = keyed.select("u", _packed(f.col("k"), f.col("x")).alias("p"))
        return smallest(ranked, m).select(_unpacked(f.col("p")).alias("x"))
    # (key, value): the value breaks ties of the 32-bit codes, in Spark's order
    ranked = keyed.select("u", f.struct(f.col("k"), f.col("x")).alias("p"))
    return smallest(ranked, m).select(f.col("p.x").alias("x"))


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


_CACHED_PARTITIONING = "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning"

#: Held while :func:`_cached` sets, caches and restores the setting: two threads querying one
#: session at once would otherwise interleave the save and the restore (the second saves the
#: first's value and puts it back last).
_CONF_LOCK = threading.Lock()


@contextlib.contextmanager
def _materialised(small: Any) -> Iterator[Any]:
    """``small`` (a frame of the distinct values and their codes) cached and computed before
    the query that joins it with the rows is planned; the cache is dropped on exit.

    Why: Spark estimates an aggregate's size from its input, so a join of the rows with the
    distinct values is planned as a sort-merge join, and adaptive execution shuffles both
    sides at once before it finds the values few enough to broadcast: at 10^7 rows the rows
    were shuffled by value for nothing, then again by unit (docs/performance.md, "Bounding
    plans"). Computed first, the values carry their real size, and Spark's own rule
    (``autoBroadcastJoinThreshold``) broadcasts them when they are small and keeps the
    sort-merge join otherwise: the same result either way, and the plan dpselect builds is
    the same for every data set (the choice of join is Spark's, as with adaptive execution).
    The cache keeps Spark's storage level (memory and disk): it never fails for many values,
    and is dropped even on an error. Where the session offers no cache (a Spark error from
    ``cache()`` itself, as on some managed Connect services), ``small`` is yielded as it is:
    the plan without the cache, the same result.
    """
    cached = _cached(small)
    if cached is None:
        yield small
        return
    try:
        yield cached
    finally:
        cached.unpersist()


def _cached(small: Any) -> Any:
    """``small`` cached and computed (:func:`_materialised`), or ``None`` when the session
    refuses to cache.

    The cached plan is planned with ``canChangeCachedPlanOutputPartitioning`` on (set for the
    ``cache()`` call only, then restored; left as it is where the session refuses the
    setting): otherwise Spark plans it without adaptive coalescing, in 200 tasks of a few
    rows each, which cost as much as the shuffle saved. The set, the ``cache()`` and the
    restore run under one module lock (:data:`_CONF_LOCK`), so threads sharing a session
    restore the setting they found; the values are computed after the lock is released.
    """
    from pyspark.errors import PySparkException

    conf = _spark(small).conf
    with _CONF_LOCK:
        try:
            old = conf.get(_CACHED_PARTITIONING, None)
            conf.set(_CACHED_PARTITIONING, "true")
        except PySparkException:  # a managed session may refuse the setting: only slower
            old, changed = None, False
        else:
            changed = True
        try:
            cached = small.cache()
        except PySparkException:
            return None
        finally:
            if changed and old is None:
                conf.unset(_CACHED_PARTITIONING)
            elif changed:
                conf.set(_CACHED_PARTITIONING, old)
    try:
        cached.count()
    except BaseException:
        cached.unpersist()
        raise
    return cached


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


def _kept_ids_per_user(rows: Any, unit_type: str, salt: int, m: int, weighted: bool) -> Any:
    """The values each user keeps, as their identities ``x`` of :func:`_value_ids` (one row
    per kept (user, value); with ``weighted`` the column ``w`` of the distinct (user, value)
    rows carried): the rule of :func:`_kept_per_user` with ``coded=True``.

    ``rows``: columns ``u``, ``x`` (``_packed(c, t)``: the code ``c`` and the tie-break
    ``t``) and with ``weighted`` ``w``. Each user's seed comes from one ``groupBy(u)``
    (:func:`_per_unit_seeds`); the key ``k`` of the code in column arithmetic; the user keeps
    the ``m`` smallest ``_packed(k, t)`` (longs: a code-generated ``min`` for ``m = 1``, a
    sorted set of longs otherwise), grouped by the unit and its seed halves (the rows are
    partitioned by unit already: no shuffle), and the kept codes are read back from the keys
    with the seed (:func:`_codes_of_keys`, the inverse of the key for a fixed unit).
    """
    sql = _import_pyspark()
    f = sql.functions
    carried = ["w"] if weighted else []
    seeded = _per_unit_seeds(rows, unit_type, [salt], ["x", *carried])
    code = f.shiftright(f.col("x"), 32) + f.lit(1 << 31)
    start = seeded.select(
        "u", "_a0", "_b0", _unpacked(f.col("x")).alias("t"), *carried,
        f.col("_b0").alias("_b"), code.bitwiseXOR(f.col("_a0")).alias("_x"),
    )  # fmt: skip
    keyed = _fmix32_steps(start, ["u", "_a0", "_b0", "t", *carried])
    p = _packed(f.col("k"), f.col("t"))
    item = f.struct(p.alias("p"), f.col("w")) if weighted else p
    ranked = keyed.select("u", "_a0", "_b0", item.alias("p"))
    kept = _smallest_per_group(ranked, ["u", "_a0", "_b0"], m)
    packed = f.col("p.p") if weighted else f.col("p")
    split = kept.select(
        "_a0", "_b0", *([f.col("p.w").alias("w")] if weighted else []),
        (f.shiftright(packed, 32) + f.lit(1 << 31)).alias("k"), _unpacked(packed).alias("t"),
    )  # fmt: skip
    codes = _codes_of_keys(split, ["t", *carried], "k", "_a0", "_b0", "c")
    return codes.select(_packed(f.col("c"), f.col("t")).alias("x"), *carried)


def _per_unit_seeds(rows: Any, unit_type: str, salts: Sequence[int], fields: Sequence[str]) -> Any:
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
    """
    names = [n for j in range(len(salts)) for n in (f"_a{j}", f"_b{j}")]
    seeds = _with_seeds(rows.select("u").distinct(), unit_type, salts, ["u"])
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


def _capped_rows(r: int) -> Any:
    """``w = least(count(*), r)``: a (user, value) group's rows, at most ``r``."""
    sql = _import_pyspark()
    f = sql.functions
    return f.least(f.count(f.lit(1)), f.lit(int(r)).cast("long")).alias("w")


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


def _expr_on(col: Any, template: str) -> Any:
    """The SQL ``template`` with ``__T__`` standing for ``col`` (a named column of the plan)."""
    sql = _import_pyspark()
    return sql.functions.expr(template.replace("__T__", f"`{col}`"))


def _number_kept(name: str) -> Any:
    """:func:`dpselect.data.rules.number_kept_sql` on the named column ``name`` of the plan."""
    sql = _import_pyspark()
    return sql.functions.expr(number_kept_sql(_spark_quote(name)))


def _normalised(col: Any, duck_type: str) -> Any:
    """Floating values as grouped: plus 0.0 (-0.0 is 0.0); other types as they are."""
    sql = _import_pyspark()
    f = sql.functions
    return col.cast("double") + f.lit(0.0) if duck_type in _FLOATING else col


def _unit_rows(frame: Any, privacy_unit: str, unit_type: str) -> tuple[Any, Any]:
    """(the unit as grouped, the condition for a row to have one: not NULL, not NaN)."""
    sql = _import_pyspark()
    f = sql.functions
    unit = f.col(privacy_unit)
    valid = _number_kept(privacy_unit) if unit_type in _FLOATING else unit.isNotNull()
    return _normalised(unit, unit_type), valid


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


def _smallest_per_group(
    ranked: Any, by: Sequence[str], m: int, every_row: bool = False, in_array: bool = False
) -> Any:
    """``ranked`` (columns ``by`` and ``p``, a sortable column) -> the ``m`` smallest ``p`` of
    each ``by``, as rows ``(*by, p)``: distinct ``p`` (equal ``p`` are one item: the choice of
    distinct values and groups), or with ``every_row`` the first ``m`` rows in the order of
    ``p`` (equal ``p`` are rows each: the rule of rows per unit). All of them for groups with
    at most ``m``.

    ``in_array`` (distinct only, where a public number bounds a group's items:
    :data:`ARRAY_CANDIDATES`): the sorted set of the group's ``p``, sliced.

    ``m = 1``: a ``min`` per group (a code-generated hash aggregation). Otherwise a window
    per group ordered by ``p`` (``dense_rank``, then the distinct rows; ``row_number`` for
    ``every_row``) filtered to the first ``m``, which Spark runs as a sort with a group limit
    (``WindowGroupLimit``): a group's rows are sorted and streamed, spilled to disk when they
    are many, never held in one array (a sorted ``collect_set``/``collect_list`` ran a JVM of
    1 GB out of memory on one unit of 10^7 rows). When ``ranked`` is partitioned by a
    subset of ``by`` (the unit, after :func:`_per_unit_seeds`), no shuffle.

    The kept ``p`` pass through a one-element ``explode``: it ends the lineage Spark's
    dynamic partition pruning follows from a later join key back through the projections of
    the key (:func:`_fmix32_steps`), where it inlined every step and grew the expression
    exponentially (the optimizer ran out of memory before the query ran).
    """
    sql = _import_pyspark()
    f = sql.functions
    if m == 1:
        kept = ranked.groupBy(*by).agg(f.min("p").alias("p"))
    elif in_array and not every_row:
        smallest = f.slice(f.sort_array(f.collect_set("p")), 1, int(m))
        kept = ranked.groupBy(*by).agg(smallest.alias("ps")).select(*by, f.explode("ps").alias("p"))
    else:
        order = sql.Window.partitionBy(*by).orderBy(f.col("p").asc())
        rank = (f.row_number() if every_row else f.dense_rank()).over(order)
        kept = ranked.select(*by, "p", rank.alias("_r")).where(f.col("_r") <= f.lit(int(m)))
        kept = kept.select(*by, "p")
        if not every_row:
            kept = kept.distinct()
    return kept.select(*by, f.explode(f.array("p")).alias("p"))


def _canonical_text_sql_template(duck_type: str) -> str:
    return canonical_text_sql("__T__", "DOUBLE" if duck_type in _FLOATING else duck_type, "spark")


def _numeric_match(col: Any, duck_type: str, candidates: Sequence[Any]) -> tuple[Any, str]:
    """(the column as matched, the type candidates are cast to): numbers on a text column
    are matched by value (the rule of ``dpselect.data.scores.match_sql``)."""
    sql = _import_pyspark()
    f = sql.functions
    number = numeric_candidate_type(candidates) if duck_type == "VARCHAR" else None
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


def _try_cast(col: Any, to: str) -> Any:
    return col.try_cast(to) if hasattr(col, "try_cast") else col.cast(to)


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
    :func:`dpselect.data.scores.match_multiplicity`, keeps apart). A row matches candidate
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
    :func:`dpselect.data.scores.candidate_scores` on the same data and salt.

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
        rows = frame.where(valid).select(unit.alias("u"), col.alias("v")).join(cands, on="v")
        pairs = rows.select("u", f.col("i").alias("x"))
        if r > 1:
            pairs = pairs.groupBy("u", "x").agg(_capped_rows(r))
        kept = _kept_per_user(
            pairs, unit_type, salt, int(max_contributions), weighted=r > 1,
            candidates=len(candidates),
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
    :func:`dpselect.data.scores.top_values` (the unknown-domain path's counts;
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
        return [(r[0], int(r[1])) for r in ordered.collect()]
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
        return [(r[0], int(r[1])) for r in ordered.collect()]


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
        column_c = to_arrow().column(0)
        return np.asarray(column_c.to_numpy(zero_copy_only=False), dtype=np.int64)
    rows = counted.collect()  # pragma: no cover - pyspark 3.5
    return np.asarray([r[0] for r in rows], dtype=np.int64)


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
    return np.asarray([r[0] for r in counted.collect()], dtype=np.int64)


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
        grouped = (
            bucketed.select("b", flag.alias("e"), "w")
            .groupBy("b", "e")
            .agg(f.sum("w").alias("n"))
            .collect()
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
        found = est.select(cell.alias("c"), "w").groupBy("c").agg(f.sum("w")).collect()
    for c, n in found:
        counts[int(c)] = int(n)
    return counts


# ----------------------------------------------------------------------------- grouped releases
# The four grouped methods of the Engine protocol (SparkTable delegates to the functions below).
# The rule is docs/contribution_bounding.md, "Groups per unit" (Python reference:
# dpselect.data.rules.kept_groups):
#
# 1. A row belongs to every listed group its ``by`` value matches, matched exactly as
#    candidates are matched on ``column`` (_matching: candidates cast in the driver by
#    DuckDB's TRY_CAST, numbers on text by value). Rows matching no group, no candidate
#    (candidate mode), holding a NULL value (value mode) or no number (numbers), or with a
#    NULL or NaN unit are dropped before any bounding.
# 2. With a privacy unit, the unit keeps the ``max_groups`` distinct group positions of
#    smallest bounding_key(group_salt, T(u), position); its rows in other groups are dropped;
#    in each kept group its rows are bounded by the ungrouped rule keyed by ``salt``.
#
# The plan (candidates and values): the rows joined with the broadcast group list (and the
# candidates), one groupBy(u) computing both seeds once per unit (_per_unit_seeds), the two
# keys in column arithmetic, then the choice per unit with no further shuffle (the rows stay
# partitioned by unit). For max_groups = max_contributions = 1 one aggregate per unit picks
# both: the minimum of (group key, value key) is the kept value of the kept group. Only the
# per-group results come back to the driver.
#
# Privacy (what the grouped recipes cite): a unit's kept groups and, in each, its kept values
# (or rows) are functions of that unit's rows and the salts only, so adding or removing one
# unit changes the data of at most ``max_groups`` groups, in each as the ungrouped method's
# sensitivity states (L-inf r, L1 m r, L0 m); without a unit one row touches at most
# group_multiplicity groups.

#: Group positions are 32-bit codes of the group rule: at most this many groups.
MAX_GROUPS = (1 << 32) - 1

_Int64s = npt.NDArray[np.int64]


# ----------------------------------------------------------------------------- checks
def _positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < 1:
        raise ParameterError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def _check(
    table: SparkTable,
    column: str,
    by: str,
    groups: Sequence[Any],
    privacy_unit: str | None,
    bounds: dict[str, Any],
) -> tuple[str, str | None]:
    """The column's type and the unit's type (or ``None``), every rule checked from public
    facts (the schema and the parameters) before any Spark job.

    ``bounds``: the per-unit bounds by argument name (``max_groups`` and
    ``max_contributions`` or ``max_rows``); each is an integer ``>= 1``, and without a
    privacy unit each must be 1 (each row is its own unit: it counts once in every group it
    matches), as :func:`dpselect.data.rules.check_rows_per_value` words it.
    """
    duck_type = table.require_column(column)
    table.require_column(by, "by")
    unit_type = None
    if privacy_unit is not None:
        unit_type = table.require_column(privacy_unit, "privacy_unit")
    for name, value in bounds.items():
        if _positive(value, name) != 1 and privacy_unit is None:
            raise ParameterError(
                f"{name} applies only with a privacy_unit column (without one each row is its "
                "own unit and counts once in every group it matches), got "
                f"{name}={int(value)}"
            )
    if len(groups) > MAX_GROUPS:
        raise ParameterError(
            f"groups: at most {MAX_GROUPS} (2^32 - 1) groups (the group rule codes a group by "
            f"its 32-bit position), got {len(groups)}"
        )
    return duck_type, unit_type


def _group_frame(table: SparkTable, by: str, groups: Sequence[Any]) -> tuple[Any, Any]:
    """(the ``by`` column as matched, the groups as a broadcast frame ``(gv, g)``, or
    ``None`` when no group converts): matched as candidates are (:func:`_matching`)."""
    sql = _import_pyspark()
    f = sql.functions
    col, frame = _matching(table, by, groups)
    if frame is None:
        return col, None
    return col, frame.select(f.col("v").alias("gv"), f.col("i").alias("g"))


# ----------------------------------------------------------------------------- the choice
def _grouped_kept(
    rows: Any,
    unit_type: str,
    *,
    coded: bool,
    weighted: bool,
    salt: int,
    group_salt: int,
    max_groups: int,
    m: int,
    group_code: bool = False,
) -> Any:
    """The kept ``(g, x[, w], f)`` of every unit: one row per kept (unit, group, value),
    ``f`` 1 on the first kept value of each kept (unit, group) and 0 on the others (the sum
    of ``f`` over a group is the units keeping it).

    ``group_code``: ``rows`` also has ``gk``, the group's code the group key is computed from
    (groups found in the data, :func:`_found_groups`); ``g`` is then the group's tie-break
    among the groups of its code, and the output ``g`` is the group's identity
    ``_packed(gk, g)``.

    ``rows``: columns ``u``, ``g`` (a group position), ``x`` (a candidate position, its own
    code; or with ``coded`` any value with its code in ``c``) and with ``weighted`` the
    capped rows ``w`` of a distinct (u, g, x). The group key ``kg`` is
    :func:`~dpselect.data.rules.bounding_key` of (``group_salt``, unit, ``g``), the value key
    ``k`` that of (``salt``, unit, code): the seeds of both salts come from one ``groupBy(u)``
    (:func:`_per_unit_seeds`).

    The unit keeps the ``max_groups`` groups of smallest ``pg = (kg, g)`` packed (a bijection
    of ``g`` per unit: no ties), and in each the ``m`` values of smallest ``pv`` (``(k, x)``
    packed, or the struct ``(k, x)``: the value breaks code collisions in Spark's order, as the
    ungrouped plan). ``max_groups = m = 1``: one ``min((pg, pv))`` per unit (with candidates
    and one row per candidate, the minimum of one long: :func:`_smallest_pair`). Otherwise one
    aggregate per (unit, group) (the ``m`` smallest ``pv``) and one per unit (the
    ``max_groups`` smallest ``pg``); both reuse the partitioning by unit.
    """
    sql = _import_pyspark()
    f = sql.functions
    carried = ["w"] if weighted else []
    # the group and the value's code travel as one long (a plain array per unit when that is
    # all there is): gc = (g - 2^31) 2^32 + code, code the position itself without ``coded``
    code = f.col("c") if coded else f.col("x")
    gk = ["gk"] if group_code else []
    packed = rows.select("u", _packed(f.col("g"), code).alias("gc"),
                         *(["x"] if coded else []), *gk, *carried)  # fmt: skip
    fields = ["gc", *(["x"] if coded else []), *gk, *carried]
    seeded = _per_unit_seeds(packed, unit_type, [group_salt, salt], fields)
    g = f.shiftright(f.col("gc"), 32) + f.lit(1 << 31)
    c = _unpacked(f.col("gc"))
    keyed_on = f.col("gk") if group_code else g
    # the group key: fmix32(fmix32(g xor a) xor b) with the seed of group_salt
    start = seeded.select(
        "u", g.alias("g"), (f.col("x") if coded else c).alias("x"), c.alias("c"), *carried,
        *gk, "_a1", "_b1", f.col("_b0").alias("_b"),
        keyed_on.bitwiseXOR(f.col("_a0")).alias("_x"),
    )  # fmt: skip
    grouped = _fmix32_steps(start, ["u", "g", "x", "c", *carried, *gk, "_a1", "_b1"])
    start = grouped.select(
        "u", "g", "x", *carried, *gk, f.col("k").alias("kg"),
        f.col("_b1").alias("_b"), f.col("c").bitwiseXOR(f.col("_a1")).alias("_x"),
    )  # fmt: skip
    keyed = _fmix32_steps(start, ["u", "g", "x", *carried, *gk, "kg"])
    pg = _packed(f.col("kg"), f.col("g"))
    if group_code:  # ordered by (key, tie-break), unique per unit; the identity rides along
        pg = f.struct(pg.alias("o"), _packed(f.col("gk"), f.col("g")).alias("id"))
    pv = f.struct(f.col("k"), f.col("x")) if coded else _packed(f.col("k"), f.col("x"))
    item = f.struct(pv.alias("p"), f.col("w")) if weighted else pv
    if max_groups == 1 and m == 1 and not coded and not weighted and not group_code:
        return _smallest_pair(keyed, unit_type, salt, group_salt).withColumn("f", f.lit(1))
    ranked = keyed.select("u", pg.alias("pg"), item.alias("v"))
    if max_groups == 1 and m == 1:
        best = ranked.groupBy("u").agg(f.min(f.struct(f.col("pg"), f.col("v"))).alias("b"))
        kept = best.select(f.col("b.pg").alias("pg"), f.col("b.v").alias("v"), f.lit(1).alias("f"))
    else:  # the groups' ranks in the unit and the values' in each group: two windows
        window = sql.Window
        in_unit = f.dense_rank().over(window.partitionBy("u").orderBy(f.col("pg").asc()))
        in_group = f.dense_rank().over(window.partitionBy("u", "pg").orderBy(f.col("v").asc()))
        both = ranked.select("u", "pg", "v", in_unit.alias("_rg"), in_group.alias("_rv"))
        chosen = both.where((f.col("_rg") <= f.lit(max_groups)) & (f.col("_rv") <= f.lit(m)))
        first = (f.col("_rv") == f.lit(1)).cast("long").alias("f")
        kept = chosen.select("u", "pg", "v", first).distinct()  # per unit: u stays
        # a one-element explode ends the lineage of pg and v (see _smallest_per_group)
        row = f.explode(f.array(f.struct("pg", "v", "f"))).alias("b")
        kept = kept.select(row).select("b.pg", "b.v", "b.f")
    p = f.col("v.p") if weighted else f.col("v")
    x = p.getField("x") if coded else _unpacked(p)
    weight = [f.col("v.w").alias("w")] if weighted else []
    group = f.col("pg.id") if group_code else _unpacked(f.col("pg"))
    return kept.select(group.alias("g"), x.alias("x"), *weight, "f")


def _smallest_pair(keyed: Any, unit_type: str, salt: int, group_salt: int) -> Any:
    """``max_groups = max_contributions = 1`` with candidates, one row per candidate:
    each unit's kept ``(g, x)`` from one ``min`` of a long per unit (a code-generated hash
    aggregate, not a sort).

    ``keyed``: columns ``u``, ``kg`` (the group key) and ``k`` (the value key), 32-bit each.
    ``p = (kg - 2^31) 2^32 + k`` orders as ``(kg, k)``, and for a fixed unit ``kg`` is a
    bijection of the group position and ``k`` of the candidate position
    (:func:`dpselect.data.rules.bounding_key`), so the smallest ``p`` is the smallest value key
    in the group of smallest group key: the rule's choice. The positions are read back from
    the two keys by inverting the keys (:func:`_codes_of_keys`), with the unit's seeds computed
    again (one md5 per unit and salt).
    """
    sql = _import_pyspark()
    f = sql.functions
    both = keyed.select("u", _packed(f.col("kg"), f.col("k")).alias("p"))
    best = both.groupBy("u").agg(f.min("p").alias("p"))
    seeded = _with_seeds(best, unit_type, [group_salt, salt], ["p"])
    split = seeded.select(
        (f.shiftright(f.col("p"), 32) + f.lit(1 << 31)).alias("kg"),
        _unpacked(f.col("p")).alias("k"),
        "_a0", "_b0", "_a1", "_b1",
    )  # fmt: skip
    groups = _codes_of_keys(split, ["k", "_a1", "_b1"], "kg", "_a0", "_b0", "g")
    return _codes_of_keys(groups, ["g"], "k", "_a1", "_b1", "x")


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


def _kept_groups(
    ug: Any, unit_type: str, group_salt: int, max_groups: int, group_code: bool = False
) -> Any:
    """``ug`` (columns ``u``, ``g``; repeats allowed) -> the kept ``(u, g)``: each unit's
    ``max_groups`` positions of smallest :func:`~dpselect.data.rules.bounding_key`
    ``(group_salt, unit, g)`` (:func:`dpselect.data.rules.kept_groups`). ``group_code``:
    ``ug`` also has ``gk``, the code the key is computed from (groups found in the data,
    :func:`_found_groups`; ``g`` the tie-break among the groups of one code, in the order of
    their values: :func:`dpselect.data.rules.kept_found_groups`), and the output ``g`` is the
    group's identity ``_packed(gk, g)``."""
    sql = _import_pyspark()
    f = sql.functions
    gk = ["gk"] if group_code else []
    seeded = _per_unit_seeds(ug, unit_type, [group_salt], ["g", *gk])
    key_of = f.col("gk" if group_code else "g")
    start = seeded.select("u", "g", *gk, f.col("_b0").alias("_b"),
                          key_of.bitwiseXOR(f.col("_a0")).alias("_x"))  # fmt: skip
    keyed = _fmix32_steps(start, ["u", "g", *gk])
    p = _packed(f.col("k"), f.col("g"))
    if group_code:  # ordered by (key, tie-break), unique per unit; the identity rides along
        p = f.struct(p.alias("o"), _packed(f.col("gk"), f.col("g")).alias("id"))
    kept = _smallest_per_group(keyed.select("u", p.alias("p")), ["u"], max_groups)
    group = f.col("p.id") if group_code else _unpacked(f.col("p"))
    return kept.select("u", group.alias("g"))


# ----------------------------------------------------------------------------- the methods
def grouped_candidate_scores(
    table: SparkTable,
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
) -> tuple[_Int64s, _Int64s, _Int64s]:
    """The nonzero scores of every (group, candidate) pair as ``(g, i, n)``, sorted by
    ``(g, i)``: in each group the scores of
    :func:`~dpselect.data.engines.spark.candidate_scores` over that group's kept rows.

    Privacy
    -------
    With a privacy unit, one unit changes the scores of at most ``max_groups`` groups, each
    by at most ``max_rows_per_value`` at ``max_contributions`` candidates (the kept groups and
    values read only that unit's rows and the salts: docs/contribution_bounding.md, "Groups
    per unit" and "Sensitivity"). Without one, a row adds 1 to every (group, candidate) pair
    it matches: at most :func:`group_multiplicity` groups times the candidate multiplicity.
    """
    sql = _import_pyspark()
    f = sql.functions
    r = check_rows_per_value(max_rows_per_value, privacy_unit)
    bounds = {"max_groups": max_groups, "max_contributions": max_contributions}
    _, unit_type = _check(table, column, by, groups, privacy_unit, bounds)
    if unit_type is not None:
        check_bounded_candidates(len(candidates))
    empty = np.zeros(0, dtype=np.int64)
    if len(groups) == 0 or len(candidates) == 0:
        return empty, empty.copy(), empty.copy()
    col, cands = _matching(table, column, candidates)
    by_col, group_frame = _group_frame(table, by, groups)
    if cands is None or group_frame is None:
        return empty, empty.copy(), empty.copy()
    frame = table.frame
    if privacy_unit is None or unit_type is None:
        counted = frame.select(col.alias("v"), by_col.alias("gv")).groupBy("v", "gv").count()
        matched = counted.join(cands, on="v").join(group_frame, on="gv")
        scores = matched.groupBy("g", "i").agg(f.sum("count").cast("long").alias("n"))
    else:
        unit, valid = _unit_rows(frame, privacy_unit, unit_type)
        rows = frame.where(valid).select(unit.alias("u"), col.alias("v"), by_col.alias("gv"))
        matched = rows.join(cands, on="v").join(group_frame, on="gv")
        pairs = matched.select("u", "g", f.col("i").alias("x"))
        if r > 1:
            pairs = pairs.groupBy("u", "g", "x").agg(_capped_rows(r))
        kept = _grouped_kept(
            pairs, unit_type, coded=False, weighted=r > 1, salt=salt, group_salt=group_salt,
            max_groups=int(max_groups), m=int(max_contributions),
        )  # fmt: skip
        total = f.sum("w").cast("long") if r > 1 else f.count(f.lit(1))
        scores = kept.groupBy("g", f.col("x").alias("i")).agg(total.alias("n"))
    g, i, n = _fetch_longs(scores.select("g", "i", "n"), 3)
    order = np.lexsort((i, g))
    return g[order], i[order], n[order]


def grouped_value_counts(
    table: SparkTable,
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
    """For each group (list order), its values with their bounded counts, largest first, ties
    by value, at most ``limit`` (``None``: all): :func:`~dpselect.data.engines.spark.top_values`
    over each group's kept rows. The per-group limit is a window over the aggregated
    ``(group, value, count)`` rows (ordered by count, then value: unique within a group).

    Privacy
    -------
    As :func:`grouped_candidate_scores` with every non-NULL value a candidate: one unit
    changes at most ``max_groups`` groups, in each at most ``max_contributions`` counts by at
    most ``max_rows_per_value`` (docs/contribution_bounding.md, "Groups per unit").
    """
    sql = _import_pyspark()
    f = sql.functions
    r = check_rows_per_value(max_rows_per_value, privacy_unit)
    bounds = {"max_groups": max_groups, "max_contributions": max_contributions}
    duck_type, unit_type = _check(table, column, by, groups, privacy_unit, bounds)
    if limit is not None and (
        isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 0
    ):
        raise ParameterError(f"limit must be None or an integer >= 0, got {limit!r}")
    out: list[list[tuple[Any, int]]] = [[] for _ in groups]
    if len(groups) == 0 or limit == 0:
        return out
    by_col, group_frame = _group_frame(table, by, groups)
    if group_frame is None:
        return out
    frame = table.frame
    value = _normalised(f.col(column), duck_type)
    present = f.col(column).isNotNull()
    if privacy_unit is None or unit_type is None:
        rows = frame.where(present).select(value.alias("v"), by_col.alias("gv"))
        matched = rows.join(group_frame, on="gv")
        counted = matched.groupBy("g", "v").agg(f.count(f.lit(1)).alias("n"))
    else:
        unit, valid = _unit_rows(frame, privacy_unit, unit_type)
        rows = frame.where(present & valid).select(
            unit.alias("u"), value.alias("v"), by_col.alias("gv")
        )
        matched = rows.join(group_frame, on="gv").select("u", "g", "v")
        # r = 1: no DISTINCT (u, g, v) first: the choice is the same over duplicate rows (a
        # minimum, or a set), and it would shuffle the rows once more (10^6 rows, 10^5 units:
        # 5.7 s against 11.6 s with the DISTINCT, local[2])
        pairs = matched.groupBy("u", "g", "v").agg(_capped_rows(r)) if r > 1 else matched
        carried = ["w"] if r > 1 else []
        codes = _value_codes(matched, duck_type, salt)  # one md5 per distinct value
        coded = pairs.join(codes, on="v").select("u", "g", f.col("v").alias("x"), *carried, "c")
        kept = _grouped_kept(
            coded, unit_type, coded=True, weighted=r > 1, salt=salt, group_salt=group_salt,
            max_groups=int(max_groups), m=int(max_contributions),
        )  # fmt: skip
        total = f.sum("w").cast("long") if r > 1 else f.count(f.lit(1))
        counted = kept.groupBy("g", f.col("x").alias("v")).agg(total.alias("n"))
    # each group's rank of (count desc, value): Spark's order of values, then no global sort
    window = sql.Window.partitionBy("g").orderBy(f.col("n").desc(), f.col("v").asc())
    ranked = counted.select("g", "v", "n", f.row_number().over(window).alias("_r"))
    if limit is not None:
        ranked = ranked.where(f.col("_r") <= f.lit(int(min(limit, 2**31 - 1))))
    found = sorted((int(g), int(rank), v, int(n)) for g, v, n, rank in ranked.collect())
    for g, _, v, n in found:
        out[g].append((v, n))
    return out


def grouped_values(
    table: SparkTable,
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
    """For each group (list order), the numbers of ``column`` its kept rows hold (a multiset,
    in no particular order), read as :meth:`SparkTable.column_values` reads them (a double
    plus ``0.0``; NULL, NaN and text that is no number dropped). With ``privacy_unit`` each
    unit keeps ``max_groups`` groups (:func:`_kept_groups`), then at most ``max_rows`` rows in
    each (:func:`~dpselect.data.engines.spark._kept_rows_of`, the rule of
    :func:`dpselect.data.rules.kept_rows` per (unit, group)). Only one ``(group, number,
    rows)`` per distinct number of a group comes back to the driver.

    Privacy
    -------
    One unit adds or removes at most ``max_rows`` rows in each of at most ``max_groups``
    groups (its kept groups and rows read only its rows and the salts;
    docs/contribution_bounding.md, "Rows per unit" and "Groups per unit"); without a unit a
    row is in at most :func:`group_multiplicity` groups.
    """
    sql = _import_pyspark()
    f = sql.functions
    bounds = {"max_groups": max_groups, "max_rows": max_rows}
    duck_type, unit_type = _check(table, column, by, groups, privacy_unit, bounds)
    out: list[npt.NDArray[np.float64]] = [np.zeros(0, dtype=np.float64) for _ in groups]
    if len(groups) == 0:
        return out
    by_col, group_frame = _group_frame(table, by, groups)
    if group_frame is None:
        return out
    frame = table.frame
    if privacy_unit is None or unit_type is None:
        number = _as_double(f.col(column), duck_type) + f.lit(0.0)
        rows = frame.select(number.alias("x"), by_col.alias("gv"))
        rows = rows.where(_number_kept("x"))
        matched = rows.join(group_frame, on="gv")
        counted = matched.groupBy("g", "x").agg(f.count(f.lit(1)).alias("w"))
        collected = counted.collect()
    else:
        nums = _unit_numbers(frame, column, duck_type, privacy_unit, unit_type,
                             by_col.alias("gv"))  # fmt: skip
        matched = nums.join(group_frame, on="gv").select("u", "g", "v")
        chosen = _kept_groups(matched.select("u", "g"), unit_type, group_salt, int(max_groups))
        in_kept = matched.join(chosen, on=["u", "g"], how="left_semi")
        with _kept_rows_of(in_kept, unit_type, int(max_rows), salt, within=("g",)) as kept:
            collected = kept.select("g", "x", f.col("w").cast("long").alias("w")).collect()
    found: dict[int, list[tuple[float, int]]] = {}
    for g, x, w in collected:
        found.setdefault(int(g), []).append((float(x), int(w)))
    for g, items in found.items():
        values = np.asarray([x for x, _ in items], dtype=np.float64)
        out[g] = np.repeat(values, np.asarray([w for _, w in items], dtype=np.int64))
    return out


def group_multiplicity(table: SparkTable, by: str, groups: Sequence[Any]) -> int:
    """The most groups of the list one value of ``by`` matches (at least 1; an empty list:
    1), by Spark's matching of the grouped methods
    (:func:`~dpselect.data.engines.spark.match_multiplicity` of the group list on ``by``):
    from the schema and the list only, no row read.

    Privacy
    -------
    Without a privacy unit one row is in every group its value matches, so it changes the
    data of at most this many groups: the number the grouped recipes compose over.
    """
    table.require_column(by, "by")
    if len(groups) > MAX_GROUPS:
        raise ParameterError(f"groups: at most {MAX_GROUPS} (2^32 - 1) groups, got {len(groups)}")
    if len(groups) == 0:
        return 1
    return match_multiplicity(table, by, groups)


# ----------------------------------------------------------------------------- found groups
# Private groups (dpselect.data.discovered_groups): every non-NULL value of ``by`` is a group,
# coded as a value with the group salt and the tag "g" (one md5 per distinct group); each unit
# keeps the max_groups groups of smallest (key of the code, rank in Spark's order of values),
# as DuckDB's plan does; the persons of a group (the units keeping it) come with its scores
# from the same aggregation, and the results are sorted by the group's value at the end.


def _found_groups(table: SparkTable, by: str, group_salt: int) -> tuple[Any, Any]:
    """(``by`` as grouped, the distinct groups ``(gv, g, gt, gk)``: value, identity,
    tie-break, code).

    The rule breaks ties of the group key by the groups' rank in the order of their values
    (:func:`dpselect.data.rules.kept_found_groups`). For one unit the key is a bijection of
    the code ``gk`` (:func:`~dpselect.data.rules.bounding_key`), so two groups tie only when
    their codes are equal, and ordering by (key, rank) is ordering by (key, ``gt``) with
    ``gt`` the group's rank among the groups *of its code* (a window partitioned by the code:
    0 for almost every group). No window over all groups (which Spark runs on one partition);
    ``g = _packed(gk, gt)`` identifies the group (a bijection of ``(gk, gt)``), and the
    results are put in the order of the values by Spark's sort (:func:`_found_result`).
    """
    sql = _import_pyspark()
    f = sql.functions
    by_type = table.require_column(by, "by")
    by_col = _normalised(f.col(by), by_type)
    g_text = _expr_on("gv", _canonical_text_sql_template(by_type))
    distinct = table.frame.where(f.col(by).isNotNull()).select(by_col.alias("gv")).distinct()
    coded = distinct.select("gv", _hex_le(f.md5(_salted(group_salt, "g", g_text)), 0).alias("gk"))
    in_code = sql.Window.partitionBy("gk").orderBy(f.col("gv").asc())
    ranked = coded.select("gv", "gk", (f.row_number().over(in_code) - f.lit(1)).alias("gt"))
    return by_col, ranked.select("gv", _packed(f.col("gk"), f.col("gt")).alias("g"), "gt", "gk")


def _found_result(
    scores: Any, pf: str, item: str, limit: int | None, ranked: Any
) -> list[tuple[int, Any, Any, int, int]]:
    """``(identity, group, item, n, persons)`` rows of the found groups, in Spark's order of
    the groups' values, then in item order (value mode: count descending then value, at most
    ``limit`` per group), sorted by Spark. ``scores``: the columns ``g`` (the identity of
    :func:`_found_groups`), ``item``, ``n`` and ``pf``, whose sum over a group is its persons
    (a window over the one aggregation, not a second one)."""
    sql = _import_pyspark()
    f = sql.functions
    persons = f.sum(pf).over(sql.Window.partitionBy("g")).cast("long")
    with_p = scores.select("g", item, "n", persons.alias("p"))
    joined = with_p.join(ranked.select("g", "gv"), on="g")
    if item == "v":
        window = sql.Window.partitionBy("g").orderBy(f.col("n").desc(), f.col("v").asc())
        joined = joined.select("*", f.row_number().over(window).alias("_r"))
        cut = 1 if limit == 0 else limit
        if cut is not None:
            joined = joined.where(f.col("_r") <= f.lit(int(min(cut, 2**31 - 1))))
        rows = joined.orderBy("gv", "_r").select("g", "gv", "v", "n", "p").collect()
        return [(int(g), gv, v, int(n), int(p)) for g, gv, v, n, p in rows]
    rows = joined.orderBy("gv", "i").select("g", "gv", "i", "n", "p").collect()
    return [(int(g), gv, int(i), int(n), int(p)) for g, gv, i, n, p in rows]


def discovered_value_counts(
    table: SparkTable,
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
    """Every group of ``by`` found in the data with its persons and its values' bounded
    counts (at most ``limit`` per group), from one aggregation per unit: the rule of
    :func:`dpselect.data.grouped_scores.duckdb_discovered_value_counts`.

    Privacy
    -------
    One unit adds 1 to the persons of at most ``max_groups`` groups and changes, in each,
    at most ``max_contributions`` counts by at most ``max_rows_per_value``
    (:mod:`dpselect.data.discovered_groups`).
    """
    sql = _import_pyspark()
    f = sql.functions
    r = check_rows_per_value(max_rows_per_value, privacy_unit)
    bounds = {"max_groups": max_groups, "max_contributions": max_contributions}
    duck_type, unit_type = _check(table, column, by, [], privacy_unit, bounds)
    if limit is not None and (
        isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 0
    ):
        raise ParameterError(f"limit must be None or an integer >= 0, got {limit!r}")
    by_col, ranked = _found_groups(table, by, group_salt)
    frame = table.frame
    value = _normalised(f.col(column), duck_type)
    present = f.col(column).isNotNull()
    if privacy_unit is None or unit_type is None:
        rows = frame.where(present).select(value.alias("v"), by_col.alias("gv"))
        matched = rows.join(ranked, on="gv")
        scores = matched.groupBy("g", "v").agg(f.count(f.lit(1)).alias("n"))
        scores = scores.select("g", "v", "n", f.col("n").alias("pf"))
    else:
        unit, valid = _unit_rows(frame, privacy_unit, unit_type)
        rows = frame.where(present & valid).select(
            unit.alias("u"), value.alias("v"), by_col.alias("gv")
        )
        matched = rows.join(ranked, on="gv").select("u", f.col("gt").alias("g"), "gk", "v")
        pairs = matched.groupBy("u", "g", "gk", "v").agg(_capped_rows(r)) if r > 1 else matched
        carried = ["w"] if r > 1 else []
        codes = _value_codes(matched, duck_type, salt)  # one md5 per distinct value
        coded = pairs.join(codes, on="v").select(
            "u", "g", "gk", f.col("v").alias("x"), *carried, "c"
        )
        kept = _grouped_kept(
            coded, unit_type, coded=True, weighted=r > 1, salt=salt, group_salt=group_salt,
            max_groups=int(max_groups), m=int(max_contributions), group_code=True,
        )  # fmt: skip
        total = f.sum("w").cast("long") if r > 1 else f.count(f.lit(1))
        scores = kept.groupBy("g", f.col("x").alias("v")).agg(
            total.alias("n"), f.sum("f").cast("long").alias("pf")
        )
    found = _found_result(scores, "pf", "v", limit, ranked)
    return discovered_from_rows(found, "values", limit != 0)


def discovered_candidate_scores(
    table: SparkTable,
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
    """Every group of ``by`` found among the rows matching a candidate, with its persons and
    its nonzero candidate scores: the rule of
    :func:`dpselect.data.grouped_scores.duckdb_discovered_candidate_scores`.

    Privacy
    -------
    As :func:`discovered_value_counts`.
    """
    sql = _import_pyspark()
    f = sql.functions
    r = check_rows_per_value(max_rows_per_value, privacy_unit)
    bounds = {"max_groups": max_groups, "max_contributions": max_contributions}
    _, unit_type = _check(table, column, by, [], privacy_unit, bounds)
    if unit_type is not None:
        check_bounded_candidates(len(candidates))
    empty = np.zeros(0, dtype=np.int64)
    nothing = DiscoveredGroups([], empty, cells=(empty, empty.copy(), empty.copy()))
    if len(candidates) == 0:
        return nothing
    col, cands = _matching(table, column, candidates)
    if cands is None:
        return nothing
    by_col, ranked = _found_groups(table, by, group_salt)
    frame = table.frame
    if privacy_unit is None or unit_type is None:
        counted = frame.select(col.alias("v"), by_col.alias("gv")).groupBy("v", "gv").count()
        matched = counted.join(cands, on="v").join(ranked, on="gv")
        scores = matched.groupBy("g", "i").agg(f.sum("count").cast("long").alias("n"))
        scores = scores.select("g", "i", "n", f.col("n").alias("pf"))
    else:
        unit, valid = _unit_rows(frame, privacy_unit, unit_type)
        rows = frame.where(valid).select(unit.alias("u"), col.alias("v"), by_col.alias("gv"))
        matched = rows.join(cands, on="v").join(ranked, on="gv")
        pairs = matched.select("u", f.col("gt").alias("g"), "gk", f.col("i").alias("x"))
        if r > 1:
            pairs = pairs.groupBy("u", "g", "gk", "x").agg(_capped_rows(r))
        kept = _grouped_kept(
            pairs, unit_type, coded=False, weighted=r > 1, salt=salt, group_salt=group_salt,
            max_groups=int(max_groups), m=int(max_contributions), group_code=True,
        )  # fmt: skip
        total = f.sum("w").cast("long") if r > 1 else f.count(f.lit(1))
        scores = kept.groupBy("g", f.col("x").alias("i")).agg(
            total.alias("n"), f.sum("f").cast("long").alias("pf")
        )
    found = _found_result(scores, "pf", "i", None, ranked)
    return discovered_from_rows(found, "cells")


def discovered_values(
    table: SparkTable,
    column: str,
    by: str,
    *,
    privacy_unit: str | None = None,
    max_groups: int = 1,
    max_rows: int = 1,
    salt: int = 0,
    group_salt: int = 0,
) -> DiscoveredGroups:
    """Every group of ``by`` found among the rows holding a number, with its persons and its
    kept numbers (sorted): the rule of
    :func:`dpselect.data.grouped_scores.duckdb_discovered_values`.

    Privacy
    -------
    One unit adds 1 to the persons of at most ``max_groups`` groups and adds or removes at
    most ``max_rows`` rows in each of them.
    """
    sql = _import_pyspark()
    f = sql.functions
    bounds = {"max_groups": max_groups, "max_rows": max_rows}
    duck_type, unit_type = _check(table, column, by, [], privacy_unit, bounds)
    by_col, ranked = _found_groups(table, by, group_salt)
    frame = table.frame
    if privacy_unit is None or unit_type is None:
        number = _as_double(f.col(column), duck_type) + f.lit(0.0)
        rows = frame.select(number.alias("x"), by_col.alias("gv"))
        rows = rows.where(_number_kept("x"))
        matched = rows.join(ranked, on="gv")
        counted = matched.groupBy("g", "x").agg(f.count(f.lit(1)).alias("w"))
        total = f.sum("w").over(sql.Window.partitionBy("g")).cast("long")
        counted = counted.select("g", "x", "w", total.alias("p"))
        return discovered_from_rows(_found_numbers(counted, ranked), "numbers")
    nums = _unit_numbers(frame, column, duck_type, privacy_unit, unit_type,
                         by_col.alias("gv"))  # fmt: skip
    matched = nums.join(ranked, on="gv").select("u", "g", "gt", "gk", "v")
    chosen = _kept_groups(matched.select("u", f.col("gt").alias("g"), "gk"), unit_type,
                          group_salt, int(max_groups), group_code=True)  # fmt: skip
    people = chosen.groupBy("g").agg(f.count(f.lit(1)).cast("long").alias("p"))
    in_kept = matched.select("u", "g", "v").join(chosen, on=["u", "g"], how="left_semi")
    with _kept_rows_of(in_kept, unit_type, int(max_rows), salt, within=("g",)) as kept:
        counted = kept.select("g", "x", f.col("w").cast("long").alias("w")).join(people, on="g")
        found = _found_numbers(counted, ranked)
    return discovered_from_rows(found, "numbers")


def _found_numbers(counted: Any, ranked: Any) -> list[tuple[int, Any, float, int, int]]:
    """``counted`` (``g``, ``x``, ``w``, ``p``) with each group's value ``gv``, collected in
    the order of ``(gv, x)``: the rows of :func:`discovered_values`."""
    rows_back = counted.join(ranked.select("g", "gv"), on="g").orderBy("gv", "x")
    return [(int(g), gv, float(x), int(w), int(p)) for g, gv, x, w, p in
            rows_back.select("g", "gv", "x", "w", "p").collect()]  # fmt: skip


def check_engine(engine: Any) -> str:
    """``engine``: ``"duckdb"`` or ``"spark"``."""
    if engine not in ("duckdb", "spark"):
        raise ParameterError(f"engine must be 'duckdb' or 'spark', got {engine!r}")
    return str(engine)
