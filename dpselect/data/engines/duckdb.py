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
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np
import numpy.typing as npt

from .. import (
    dictionary_scores,
    discovered_scores,
    grouped_scores,
    matching,
    packed_scores,
    partitions,
    scores,
)
from ..discovered_groups import DiscoveredGroups
from ..engine import Capabilities, Cells, UnitSize
from ..query import PrivateGroups, Progress, PublicGroups, Query, UnitRule
from ..rules import hashed_text_sql, md5_bits_sql, salt_text
from ..text_lines import quote_identifier as _quote
from ..values import canonical_text_sql, is_text, kept_numbers, number_kept_sql
from .group_dispatch import GroupDispatch

if TYPE_CHECKING:
    from ..tables import Table

__all__ = ["DuckDBEngine", "kept_rows_sql"]


def kept_rows_sql(column: str, privacy_unit: str, unit_type: str, max_rows: int) -> str:
    """SQL of ``(v, n)``: each number ``v`` of ``column`` and how many rows holding it the
    units keep, each unit keeping at most ``max_rows`` rows (:func:`dpselect.data.rules.
    kept_rows`; docs/contribution_bounding.md, "Rows per unit").

    The rows (``TRY_CAST`` to DOUBLE, plus ``0.0``; NULL and NaN dropped row by row) are
    grouped by (unit, value) with their count ``c``; each distinct value gets its code (one
    md5 per distinct value, :func:`dpselect.data.rules.value_code` of its canonical text),
    each unit its seed (one md5 per unit, :func:`dpselect.data.scores.keyed_sql`), each pair
    its key; within a unit the pairs are ordered by ``(key, v)`` and a pair keeps
    ``min(c, max_rows - rows before it)`` rows. A unit's kept rows depend only on its own rows
    and the salt (the parameter ``$salt``).

    Parameters
    ----------
    column : str
        The numeric column of the view ``data``.
    privacy_unit, unit_type : str
        The unit's key column (:meth:`~dpselect.data.tables.Table.unit_column`) and its type.
    max_rows : int
        The rows each unit keeps (at least 1).

    Returns
    -------
    str
        A query of the columns ``v`` (DOUBLE) and ``n`` (the kept rows holding ``v``).
    """
    unit, valid = scores.unit_sql(privacy_unit, unit_type)
    number = f"(TRY_CAST(data.{_quote(column)} AS DOUBLE) + CAST(0.0 AS DOUBLE))"
    code = md5_bits_sql(hashed_text_sql("v", canonical_text_sql("v", "DOUBLE")), 4)
    keyed = scores.keyed_sql("coded", "w", unit_type)
    r = int(max_rows)
    return f"""
        WITH nums AS (SELECT u, v FROM (SELECT {unit} AS u, {number} AS v FROM data
                                        WHERE {valid})
                      WHERE {number_kept_sql("v")}),
             pairs AS (SELECT u, v, count(*) AS c FROM nums GROUP BY u, v),
             codes AS (SELECT v, {code} AS w FROM (SELECT DISTINCT v FROM pairs)),
             coded AS (SELECT pairs.u AS u, pairs.v AS v, pairs.c AS c, codes.w AS w
                       FROM pairs JOIN codes ON pairs.v = codes.v),
             ordered AS (SELECT v, c, coalesce(sum(c) OVER (
                                 PARTITION BY u ORDER BY x, v
                                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
                         FROM {keyed})
        SELECT v, CAST(sum(least(c, {r} - before)) AS BIGINT) AS n FROM ordered
        WHERE before < {r} GROUP BY v
    """


class DuckDBEngine(GroupDispatch):
    """The engine methods of a DuckDB :class:`~dpselect.data.tables.Table` (a mixin): the
    dispatch on the kind of groups is :class:`~dpselect.data.engines.group_dispatch.
    GroupDispatch`'s, the methods per kind of groups are here."""

    #: The engine's name, for reports (never for dispatch: recipes call the methods).
    name: str = "duckdb"
    #: :meth:`person_values` holds each person's values in the driver; DuckDB reports the
    #: progress of a query over a second.
    capabilities: ClassVar[Capabilities] = Capabilities(persons_in_driver=True, progress=True)

    def _table(self) -> Table:
        return cast("Table", self)

    def _column_multiplicity(self, column: str, values: Sequence[Any]) -> int:
        """DuckDB's casts and equality of candidates on a column
        (:func:`dpselect.data.matching.match_multiplicity`)."""
        return matching.match_multiplicity(self._table().require_column(column), values)

    def _group_multiplicity(self, groups: PublicGroups) -> int:
        """Of a group list on ``by``
        (:func:`dpselect.data.grouped_scores.duckdb_group_multiplicity`)."""
        return grouped_scores.duckdb_group_multiplicity(self._table(), groups.by, groups.groups)

    def _public_group_scores(self, query: Query[PublicGroups], candidates: Sequence[Any]) -> Cells:
        """:func:`dpselect.data.grouped_scores.duckdb_grouped_candidate_scores`."""
        return grouped_scores.duckdb_grouped_candidate_scores(self._table(), query, candidates)

    def _private_group_scores(
        self, query: Query[PrivateGroups], candidates: Sequence[Any]
    ) -> DiscoveredGroups:
        """:func:`dpselect.data.discovered_scores.duckdb_discovered_candidate_scores`."""
        return discovered_scores.duckdb_discovered_candidate_scores(
            self._table(), query, candidates
        )

    def _ungrouped_scores(
        self, query: Query[None], candidates: Sequence[Any]
    ) -> npt.NDArray[np.int64]:
        """The ungrouped score vector: with a text unit or ``rows_per_value > 1``, the
        dictionary plan (:func:`dpselect.data.dictionary_scores.dictionary_candidate_scores`)
        where :func:`~dpselect.data.dictionary_scores.dictionary_files` allows it; else with a
        unit and ``rows_per_value = 1`` the packed plan
        (:func:`dpselect.data.packed_scores.packed_candidate_scores`); else the SQL plan
        (:func:`dpselect.data.scores.duckdb_candidate_scores`). The same rule, so the same
        scores; the plan is chosen by public facts only. ``rows_per_value``: each kept
        value adds the person's rows with it, at most that many (module
        :mod:`dpselect.data.scores`)."""
        table, column, rule, progress = self._table(), query.column, query.rule, query.progress
        privacy_unit, max_contributions, salt = rule.privacy_unit, rule.values_per_unit, rule.salt
        r = scores.check_rows_per_value(rule.rows_per_value, privacy_unit)
        if privacy_unit is not None:
            col_type = table.require_column(column)
            unit_type = table.require_column(privacy_unit, "privacy_unit")
            if r > 1 or is_text(unit_type):
                # Parquet text read as dictionaries: a text unit (DuckDB's reader cannot
                # give its raw bytes, and the SQL plans over a pyarrow dataset that can,
                # Table.unit_column, measured 1.32x the time and 1.33x the memory of the
                # old plan, this one 1.21-1.32x and 0.78x: 10^7 rows, 10^6 text users), or
                # max_rows_per_value > 1.
                files = dictionary_scores.dictionary_files(
                    table, column, col_type, privacy_unit, unit_type
                )
                if files is not None:
                    return dictionary_scores.dictionary_candidate_scores(
                        table, files, column, candidates, privacy_unit, unit_type,
                        int(max_contributions), salt, progress, r,
                    )  # fmt: skip
            if r == 1:  # the packed plan (docs/performance.md): faster for every m
                return packed_scores.packed_candidate_scores(
                    table, column, candidates, privacy_unit, int(max_contributions), salt,
                    progress,
                )  # fmt: skip
        return scores.duckdb_candidate_scores(
            table, column, candidates, privacy_unit, max_contributions, salt, progress, r
        )

    def _ungrouped_counts(self, query: Query[None], limit: int | None) -> list[tuple[Any, int]]:
        """:func:`dpselect.data.scores.duckdb_top_values` (no limit:
        :data:`~dpselect.data.partitions.ALL_VALUES`)."""
        rule = query.rule
        return scores.duckdb_top_values(
            self._table(), query.column, partitions.ALL_VALUES if limit is None else limit,
            rule.privacy_unit, rule.values_per_unit, rule.salt, query.progress,
            rule.rows_per_value,
        )  # fmt: skip

    def _public_group_counts(
        self, query: Query[PublicGroups], limit: int | None
    ) -> list[list[tuple[Any, int]]]:
        """:func:`dpselect.data.grouped_scores.duckdb_grouped_value_counts`."""
        return grouped_scores.duckdb_grouped_value_counts(self._table(), query, limit)

    def _private_group_counts(
        self, query: Query[PrivateGroups], limit: int | None
    ) -> DiscoveredGroups:
        """:func:`dpselect.data.discovered_scores.duckdb_discovered_value_counts`."""
        return discovered_scores.duckdb_discovered_value_counts(self._table(), query, limit)

    def person_values(self, query: Query[None]) -> list[list[Any]]:
        """Each person's kept values (:func:`dpselect.data.partitions.duckdb_person_values`)."""
        rule = query.rule
        return partitions.duckdb_person_values(
            self._table(), query.column, cast(str, rule.privacy_unit), rule.values_per_unit,
            rule.salt, query.progress, rule.rows_per_value,
        )  # fmt: skip

    def unit_sizes(self, query: Query[None], what: UnitSize) -> npt.NDArray[np.int64]:
        """Each unit's distinct values (:meth:`_contribution_counts`) or rows with a number
        (:meth:`_row_counts`) in the column."""
        unit = cast(str, query.rule.privacy_unit)
        if what == "values":
            return self._contribution_counts(query.column, unit)
        return self._row_counts(query.column, unit)

    def _contribution_counts(self, column: str, privacy_unit: str) -> npt.NDArray[np.int64]:
        """``c_u``: each person's number of distinct non-null values of ``column`` (one row per
        person with a non-null unit). A person's count reads only their rows."""
        sql = (
            f"SELECT count(DISTINCT {_quote(column)}) AS c FROM data "
            f"WHERE {_quote(privacy_unit)} IS NOT NULL GROUP BY {_quote(privacy_unit)}"
        )
        raw = self._table().query_numpy(sql)["c"]
        return np.asarray(raw, dtype=np.int64)

    def _row_counts(self, column: str, privacy_unit: str) -> npt.NDArray[np.int64]:
        """Each unit's number of rows with a number in ``column`` (one entry per unit, in no
        particular order; ``max_rows="auto"``). A unit's count reads only its rows."""
        table = self._table()
        table.require_column(column)
        key, unit_type = table.unit_column(privacy_unit)
        unit, valid = scores.unit_sql(key, unit_type)
        number = f"TRY_CAST(data.{_quote(column)} AS DOUBLE)"
        sql = f"""
            SELECT c FROM (SELECT {unit} AS u, count(*) AS c FROM data
                           WHERE {valid} AND {number_kept_sql(number)}
                           GROUP BY 1)
            WHERE {scores.unit_kept_sql(unit_type)}
        """
        raw = table.query_numpy(sql)["c"]
        return np.asarray(raw, dtype=np.int64)

    def _kept_values(
        self,
        column: str,
        privacy_unit: str,
        max_rows: int,
        salt: int,
        progress: Progress = None,
    ) -> npt.NDArray[np.float64]:
        """The rows the units keep (:func:`kept_rows_sql`), as a float64 array (a multiset in
        no particular order)."""
        table = self._table()
        table.require_column(column)
        key, unit_type = table.unit_column(privacy_unit)
        sql = kept_rows_sql(column, key, unit_type, int(max_rows))
        found = table.query_numpy(sql, {"salt": salt_text(salt)}, progress)
        values = np.asarray(np.ma.getdata(found["v"]), dtype=np.float64)
        counts = np.asarray(np.ma.getdata(found["n"]), dtype=np.int64)
        out: npt.NDArray[np.float64] = np.repeat(values, counts)
        return out

    def _ungrouped_numbers(self, query: Query[None]) -> npt.NDArray[np.float64]:
        """:meth:`_column_values`."""
        return self._column_values(query.column, query.rule, query.progress)

    def _public_group_numbers(self, query: Query[PublicGroups]) -> list[npt.NDArray[np.float64]]:
        """:func:`dpselect.data.grouped_scores.duckdb_grouped_values`."""
        return grouped_scores.duckdb_grouped_values(self._table(), query)

    def _private_group_numbers(self, query: Query[PrivateGroups]) -> DiscoveredGroups:
        """:func:`dpselect.data.discovered_scores.duckdb_discovered_values`."""
        return discovered_scores.duckdb_discovered_values(self._table(), query)

    def _column_values(
        self, column: str, rule: UnitRule, progress: Progress = None
    ) -> npt.NDArray[np.float64]:
        """The column as float64; NULL, NaN and unparseable rows are dropped.

        Each row is mapped on its own (``TRY_CAST(value AS DOUBLE)``, NULL when the text is
        not a number) and rows without a number are filtered out: a 1-stable row-by-row map,
        so the neighbouring relation and every sensitivity built on it carry over, and no row
        can cause an error. Values beyond 2^53 in integer columns are rounded to the nearest
        float. With a privacy unit: the rows each unit keeps, at most ``rows_per_unit`` per
        unit by the keyed rule of ``salt`` (:func:`kept_rows_sql`), in no particular order.
        ``progress(percent)`` is polled while the scan runs.
        """
        if rule.privacy_unit is not None:
            return self._kept_values(
                column, rule.privacy_unit, rule.rows_per_unit, rule.salt, progress
            )
        sql = (
            f"SELECT v FROM (SELECT TRY_CAST({_quote(column)} AS DOUBLE) AS v FROM data) "
            "WHERE v IS NOT NULL"
        )
        raw = self._table().query_numpy(sql, None, progress)["v"]
        values = np.asarray(np.ma.filled(raw, np.nan), dtype=np.float64)
        return kept_numbers(values)

    def quantile_values(
        self,
        query: Query[None],
        candidates: Sequence[float] | None = None,
        bounds: tuple[float, float] | None = None,
        resolution: float | None = None,
    ) -> npt.NDArray[np.float64]:
        """Every value of the column as float64 (the candidates and bounds need no summary
        here); NULL, NaN and text that does not parse are dropped row by row.

        ``TRY_CAST`` maps each row on its own (a 1-stable map: neighbours stay neighbours).
        The row order is not needed (``preserve_insertion_order = false`` for this session:
        less memory while scanning). ``query.progress(percent)`` is polled while the scan
        runs. With a privacy unit: only the rows each unit keeps (at most ``rows_per_unit``,
        the keyed rule of ``salt``: :func:`kept_rows_sql`). A pandas frame's float64 column
        (and a NumPy array or Series of floats, held as one) is read from the frame's own
        array, with the same values in the same order as the query gives.
        """
        table, column, rule, progress = self._table(), query.column, query.rule, query.progress
        if rule.privacy_unit is not None:
            table.connection.execute("SET SESSION preserve_insertion_order = false")
            return self._kept_values(
                column, rule.privacy_unit, rule.rows_per_unit, rule.salt, progress
            )
        held = table.float_columns.get(column)
        if held is not None:  # a pandas float64 column: the query's result without the query
            out_held = kept_numbers(held)  # a new array, in the rows' order (no query: quick,
            return out_held  # so no progress reported, as for a query under a second)
        sql = (
            f"SELECT v FROM (SELECT TRY_CAST({_quote(column)} AS DOUBLE) AS v FROM data) "
            f"WHERE {number_kept_sql('v')}"
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

    def buyers_at(self, query: Query[None], prices: Sequence[float]) -> npt.NDArray[np.int64]:
        """``#{rows with value >= p}`` for each price ``p`` (in the given order), from
        :meth:`numbers` held in the driver (the counts the revenue scores read); with a
        privacy unit, of the rows the units keep (at most ``rows_per_unit`` each)."""
        values = np.sort(self._column_values(query.column, query.rule, query.progress))
        asked = np.asarray(prices, dtype=np.float64)
        out: npt.NDArray[np.int64] = (
            values.shape[0] - np.searchsorted(values, asked, side="left")
        ).astype(np.int64)
        return out
