"""The DuckDB engine: the methods of :class:`dpselect.data.engine.Engine` for a DuckDB table.

:class:`DuckDBEngine` is the method half of :class:`dpselect.data.tables.Table` (the other
half, in :mod:`dpselect.data.tables`, opens the source and runs queries). The score queries
are :mod:`dpselect.data.scores` (with :mod:`dpselect.data.dictionary_scores` for Parquet
text, chosen here) and :mod:`dpselect.data.partitions`; the rules they follow are
:mod:`dpselect.data.rules`. Only small results come back as Python objects; column values
come back as NumPy arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt

from .. import dictionary_scores, partitions, scores
from ..engine import Progress
from ..rules import is_text
from ..text_lines import quote_identifier as _quote

if TYPE_CHECKING:
    from ..tables import Table

__all__ = ["DuckDBEngine"]


class DuckDBEngine:
    """The engine methods of a DuckDB :class:`~dpselect.data.tables.Table` (a mixin)."""

    #: The engine's name, for reports (never for dispatch: recipes call the methods).
    name: str = "duckdb"
    #: :meth:`person_values` holds each person's values in the driver.
    holds_persons_in_driver: bool = True

    def _table(self) -> Table:
        return cast("Table", self)

    def candidate_scores(
        self,
        column: str,
        candidates: Sequence[Any],
        privacy_unit: str | None = None,
        max_contributions: int = 1,
        salt: int = 0,
        progress: Progress = None,
        max_rows_per_value: int = 1,
    ) -> npt.NDArray[np.int64]:
        """The bounded score vector: the dictionary plan
        (:func:`dpselect.data.dictionary_scores.dictionary_candidate_scores`) where
        :func:`~dpselect.data.dictionary_scores.dictionary_files` allows it, else the SQL plan
        (:func:`dpselect.data.scores.duckdb_candidate_scores`); the same rule, so the same
        scores. The plan is chosen by public facts only. ``max_rows_per_value``: each kept
        value adds the person's rows with it, at most that many (module
        :mod:`dpselect.data.scores`)."""
        table = self._table()
        r = scores.check_rows_per_value(max_rows_per_value, privacy_unit)
        if privacy_unit is not None:
            col_type = table.require_column(column)
            unit_type = table.require_column(privacy_unit, "privacy_unit")
            if int(max_contributions) > 1 or r > 1 or is_text(unit_type):
                # Parquet text read as dictionaries. m = 1 stays on the SQL plan, which
                # measured faster (docs/performance.md), unless the unit is text: DuckDB's
                # reader cannot give its raw bytes, and the SQL plan over a pyarrow dataset
                # that can (Table.unit_column) measured 1.32x the old plan's time and 1.33x
                # its memory, this one 1.21-1.32x and 0.78x (10^7 rows, 10^6 text users).
                files = dictionary_scores.dictionary_files(
                    table, column, col_type, privacy_unit, unit_type
                )
                if files is not None:
                    return dictionary_scores.dictionary_candidate_scores(
                        table, files, column, candidates, privacy_unit, unit_type,
                        int(max_contributions), salt, progress, r,
                    )  # fmt: skip
        return scores.duckdb_candidate_scores(
            table, column, candidates, privacy_unit, max_contributions, salt, progress, r
        )

    def candidate_multiplicity(self, column: str, candidates: Sequence[Any]) -> int:
        """DuckDB's casts and equality (:func:`dpselect.data.scores.match_multiplicity`)."""
        return scores.match_multiplicity(self._table().require_column(column), candidates)

    def top_values(
        self,
        column: str,
        limit: int,
        privacy_unit: str | None = None,
        max_contributions: int = 1,
        salt: int = 0,
        progress: Progress = None,
        max_rows_per_value: int = 1,
    ) -> list[tuple[Any, int]]:
        """The ``limit`` best values (:func:`dpselect.data.scores.duckdb_top_values`)."""
        return scores.duckdb_top_values(
            self._table(), column, limit, privacy_unit, max_contributions, salt, progress,
            max_rows_per_value,
        )  # fmt: skip

    def value_counts(
        self,
        column: str,
        privacy_unit: str | None = None,
        max_contributions: int = 1,
        salt: int = 0,
        progress: Progress = None,
        max_rows_per_value: int = 1,
    ) -> dict[Any, int]:
        """``{value: persons}`` for every non-NULL value (:meth:`top_values`, no limit;
        ``max_rows_per_value > 1``: each person's rows with the value, capped)."""
        rows = self.top_values(column, partitions.ALL_VALUES, privacy_unit, max_contributions,
                               salt, progress, max_rows_per_value)  # fmt: skip
        return {value: int(n) for value, n in rows}

    def person_values(
        self,
        column: str,
        privacy_unit: str,
        max_contributions: int,
        salt: int = 0,
        progress: Progress = None,
    ) -> list[list[Any]]:
        """Each person's kept values (:func:`dpselect.data.partitions.duckdb_person_values`)."""
        return partitions.duckdb_person_values(
            self._table(), column, privacy_unit, max_contributions, salt, progress
        )

    def contribution_counts(self, column: str, privacy_unit: str) -> npt.NDArray[np.int64]:
        """``c_u``: each person's number of distinct non-null values of ``column`` (one row per
        person with a non-null unit). A person's count reads only their rows."""
        sql = (
            f"SELECT count(DISTINCT {_quote(column)}) AS c FROM data "
            f"WHERE {_quote(privacy_unit)} IS NOT NULL GROUP BY {_quote(privacy_unit)}"
        )
        raw = self._table().connection.execute(sql).fetchnumpy()["c"]
        return np.asarray(raw, dtype=np.int64)

    def column_values(self, column: str) -> npt.NDArray[np.float64]:
        """The column as float64; NULL, NaN and unparseable rows are dropped.

        Each row is mapped on its own (``TRY_CAST(value AS DOUBLE)``, NULL when the text is
        not a number) and rows without a number are filtered out: a 1-stable row-by-row map,
        so the neighbouring relation and every sensitivity built on it carry over, and no row
        can cause an error. Values beyond 2^53 in integer columns are rounded to the nearest
        float.
        """
        sql = (
            f"SELECT v FROM (SELECT TRY_CAST({_quote(column)} AS DOUBLE) AS v FROM data) "
            "WHERE v IS NOT NULL"
        )
        raw = self._table().connection.execute(sql).fetchnumpy()["v"]
        values = np.asarray(np.ma.filled(raw, np.nan), dtype=np.float64)
        out: npt.NDArray[np.float64] = values[~np.isnan(values)]
        return out

    def quantile_values(
        self,
        column: str,
        candidates: Sequence[float] | None = None,
        bounds: tuple[float, float] | None = None,
        resolution: float | None = None,
        progress: Progress = None,
    ) -> npt.NDArray[np.float64]:
        """Every value of the column as float64 (the candidates and bounds need no summary
        here); NULL, NaN and text that does not parse are dropped row by row.

        ``TRY_CAST`` maps each row on its own (a 1-stable map: neighbours stay neighbours).
        The row order is not needed (``preserve_insertion_order = false`` for this session:
        less memory while scanning). ``progress(percent)`` is polled while the scan runs.
        """
        table = self._table()
        sql = (
            f"SELECT v FROM (SELECT TRY_CAST({_quote(column)} AS DOUBLE) AS v FROM data) "
            "WHERE v IS NOT NULL AND NOT isnan(v)"
        )
        table.connection.execute("SET SESSION preserve_insertion_order = false")
        # One DuckDB thread for this fetch: with two, the peak memory was about 3.3x the
        # column's bytes (per-thread result partitions merged, then converted), with one
        # about 2.5x (docs/performance.md); the scan time is about the same.
        raw = table.query_numpy(sql, None, progress, serial=True)["v"]
        out: npt.NDArray[np.float64] = np.asarray(np.ma.getdata(raw), dtype=np.float64)
        return out

    def grid_width(self, bounds: tuple[float, float], resolution: float | None) -> float | None:
        """``None``: DuckDB gives the mechanisms the rows themselves, not rounded to a grid."""
        return None

    def buyers_at(self, column: str, prices: Sequence[float]) -> npt.NDArray[np.int64]:
        """``#{rows with value >= p}`` for each price ``p`` (in the given order), from
        :meth:`column_values` held in the driver (the counts the revenue scores read)."""
        values = np.sort(self.column_values(column))
        asked = np.asarray(prices, dtype=np.float64)
        out: npt.NDArray[np.int64] = (
            values.shape[0] - np.searchsorted(values, asked, side="left")
        ).astype(np.int64)
        return out
