"""Grouped releases on DuckDB over the groups found in the data (private groups): every
group of ``by`` with its persons (the units keeping it: the score of the group selection) and
its scores, in one scan (:mod:`dpselect.data.discovered_groups`).

The rule is that of :mod:`dpselect.data.grouped_scores` over the groups found, each group
keyed by its value's code (:func:`dpselect.data.rules.kept_found_groups`;
docs/contribution_bounding.md, "Groups found in the data"); the SQL pieces are
:mod:`dpselect.data.grouped_sql`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

import numpy as np

from .discovered_groups import DiscoveredGroups, discovered_from_rows
from .matching import candidates_source, match_sql
from .query import PrivateGroups, Query
from .rules import check_bounded_candidates
from .scores import (
    unit_sql,
)
from .text_lines import quote_identifier as _quote
from .values import normalised_sql, number_kept_sql

if TYPE_CHECKING:
    from .tables import Table

from .grouped_scores import (
    check_limit,
    check_rule_bounds,
    kept_group_rows_sql,
    salt_params,
    value_ranks_sql,
)
from .grouped_sql import (
    CELLS,
    FOUND_GROUPS_TABLE,
    NUMBERS,
    VALUES_TABLE,
    Grouped,
    grouped_parts,
    kept_cells_sql,
    kept_parts,
    summed_cells_sql,
    temporary_table,
    with_persons,
)

__all__ = [
    "duckdb_discovered_candidate_scores",
    "duckdb_discovered_value_counts",
    "duckdb_discovered_values",
]

# ----------------------------------------------------------------------------------------
# Groups found in the data (private groups): the persons of each group and its scores, in
# the same scan (dpselect.data.discovered_groups)
# ----------------------------------------------------------------------------------------


def _found_groups(table: Table, by_col: str, by_type: str, by: str, group_salt: str) -> Any:
    """The temporary table of the groups found in the data (a context manager yielding its
    name; :func:`temporary_table`): each distinct non-NULL value ``v`` of ``by`` (as
    ``by_col`` reads it) with its code ``w`` (group salt, tag ``g``) and rank ``r``."""
    sql = value_ranks_sql(by_col, by_type, by, "g", "$group_salt")
    return temporary_table(table, FOUND_GROUPS_TABLE, sql, {"group_salt": group_salt})


def _found_rows_sql(
    q: Grouped, by: str, gvals: str, joins: str, item: str, part: str = "TRUE"
) -> str:
    """The rows ``(u, g, gc, code, t)`` (``g`` a group's rank, ``gc`` its code) joined with
    the groups found in the data (the table ``gvals``, :func:`_found_groups`), those of one
    hash part of the units (``part``)."""
    assert q.unit is not None
    by_col = normalised_sql(f"data.{_quote(by)}", q.by_type)
    unit, valid = unit_sql(q.unit, q.unit_type)
    return f"""(SELECT {unit} AS u, gvals.r AS g, gvals.w AS gc, {item}
               FROM data JOIN {gvals} AS gvals ON {by_col} = gvals.v {joins}
               WHERE {valid} AND {part})"""


def _found_cells_sql(
    q: Grouped, by: str, gvals: str, joins: str, item: str, bounds: tuple[int, int, int],
    before: str = "",
) -> Callable[[str], str]:  # fmt: skip
    """The query of one hash part's kept cells and persons on the groups found in the data
    (:func:`kept_parts`' ``part_sql``): the part's rows (:func:`_found_rows_sql`, ``joins``
    and ``item`` as there), each unit's kept cells (:func:`kept_cells_sql`, ``bounds`` =
    ``(g, m, r)``), ``before``: CTEs put ahead of them (ending with ``", "``)."""
    g, m, r = bounds

    def part_sql(part: str) -> str:
        rows = _found_rows_sql(q, by, gvals, joins, item, part)
        ctes, final = kept_cells_sql(rows, q.unit_key, q.unit_type, g, m, r, "gc", True, part)
        return with_persons(f"{before}{ctes}", final, g, m, r)

    return part_sql


def _persons_sql(g: int, m: int, r: int) -> str:
    """The persons of a group from the cells ``kept (g, t, n)``: the sum of its ``n`` when each
    unit keeps one value per kept group (``m = r = 1``), else the ``persons`` CTE."""
    if m == 1 and r == 1:
        return "sum(n) OVER (PARTITION BY g)"
    return "(SELECT p FROM persons WHERE persons.g = found.g)"


def _counted_found_values_sql(by_col: str, col: str, present: str, by: str) -> str:
    """``(gi, gv, v, n, persons, k)`` without a privacy unit: every row with a value and a
    group counts once; ``k`` ranks a group's values (count descending, ties by value)."""
    return f"""WITH found AS (SELECT {by_col} AS g, {col} AS v, count(*) AS n FROM data
                                 WHERE {present} AND data.{_quote(by)} IS NOT NULL
                                 GROUP BY 1, 2)
                  SELECT dense_rank() OVER (ORDER BY g) AS gi, g AS gv, v, n, persons, k
                  FROM (SELECT g, v, n, sum(n) OVER (PARTITION BY g) AS persons,
                               row_number() OVER (PARTITION BY g ORDER BY n DESC, v) AS k
                        FROM found)"""


def _kept_found_values_sql(kept: str, vals: str, gvals: str, bounds: tuple[int, int, int]) -> str:
    """``(gi, gv, v, n, persons, k)`` from the parts' kept cells ``kept``: the ranks turned
    back into values (``vals``) and groups (``gvals``), ``k`` as without a unit."""
    g, m, r = bounds
    return f"""WITH {summed_cells_sql(kept)},
                found AS (SELECT kept.g AS g, vals.v AS v, kept.n AS n
                          FROM kept JOIN {vals} AS vals ON kept.t = vals.r)
                SELECT ranked.g AS gi, gvals.v AS gv, ranked.v AS v, n, persons, k
                FROM (SELECT g, v, n, {_persons_sql(g, m, r)} AS persons,
                             row_number() OVER (PARTITION BY g ORDER BY n DESC, v) AS k
                      FROM found) AS ranked JOIN {gvals} AS gvals ON ranked.g = gvals.r"""


def _counted_found_cells_sql(cands: str, by_col: str, col_match: str, by: str) -> str:
    """``(gi, gv, t, n, persons)`` without a privacy unit: every row with a group counts once
    in the (group, candidate) cells it matches (``cands``: the candidates' CTE)."""
    return f"""WITH {cands},
                counted AS (SELECT {by_col} AS gv, {col_match} AS v, count(*) AS n FROM data
                            WHERE data.{_quote(by)} IS NOT NULL GROUP BY 1, 2),
                found AS (SELECT gv, CAST(cands.i AS BIGINT) AS t,
                                 CAST(sum(counted.n) AS BIGINT) AS n
                          FROM counted JOIN cands ON counted.v = cands.v GROUP BY 1, 2)
                SELECT dense_rank() OVER (ORDER BY gv) AS gi, gv, t, n,
                       sum(n) OVER (PARTITION BY gv) AS persons
                FROM found"""


def _kept_found_cells_sql(kept: str, gvals: str, bounds: tuple[int, int, int]) -> str:
    """``(gi, gv, t, n, persons)`` from the parts' kept cells ``kept``, the group ranks turned
    back into groups (``gvals``)."""
    g, m, r = bounds
    return f"""WITH {summed_cells_sql(kept)},
                found AS (SELECT g, t, n FROM kept)
                SELECT c.g AS gi, gvals.v AS gv, c.t AS t, c.n AS n, persons
                FROM (SELECT g, t, n, {_persons_sql(g, m, r)} AS persons FROM found) AS c
                     JOIN {gvals} AS gvals ON c.g = gvals.r"""


def duckdb_discovered_value_counts(
    table: Table, query: Query[PrivateGroups], limit: int | None = None
) -> DiscoveredGroups:
    """Every group of ``by`` found in the data with its persons and its values' bounded
    counts (at most ``limit`` per group), in one scan (:mod:`dpselect.data.discovered_groups`).

    Parameters
    ----------
    table, query, limit
        As in :func:`duckdb_grouped_value_counts`, the groups those found in the data (of
        ``query.groups.by``) instead of a list.

    Returns
    -------
    DiscoveredGroups
        The groups some unit keeps (engine order), their persons, their value lists.

    Privacy
    -------
    One unit adds 1 to the persons of at most ``max_groups`` groups and changes, in each of
    them, at most ``m`` counts by at most ``r`` (:mod:`dpselect.data.discovered_groups`).
    """
    column, by, rule, progress = query.column, query.groups.by, query.rule, query.progress
    g, m, r, _ = check_rule_bounds(rule)
    check_limit(limit)
    q = Grouped(table, column, by, rule.privacy_unit)
    col = normalised_sql(f"data.{_quote(column)}", q.col_type)
    params: dict[str, Any] = {}
    present = f"data.{_quote(column)} IS NOT NULL"
    if q.unit is None:
        by_col = normalised_sql(f"data.{_quote(by)}", q.by_type)
        sql = _counted_found_values_sql(by_col, col, present, by)
    cut = "k <= 1" if limit == 0 else ("TRUE" if limit is None else f"k <= {int(limit)}")
    with ExitStack() as stack:
        if q.unit is not None:
            params = salt_params(rule)
            by_col = normalised_sql(f"data.{_quote(by)}", q.by_type)
            gvals = stack.enter_context(
                _found_groups(table, by_col, q.by_type, by, params["group_salt"])
            )
            vals = stack.enter_context(temporary_table(
                table, VALUES_TABLE, value_ranks_sql(col, q.col_type, column),
                {"salt": params["salt"]},
            ))  # fmt: skip

            part_sql = _found_cells_sql(
                q, by, gvals, f"JOIN {vals} AS vals ON {col} = vals.v",
                "vals.w AS code, vals.r AS t", (g, m, r),
            )  # fmt: skip
            unit, _ = unit_sql(q.unit, q.unit_type)
            kept = stack.enter_context(kept_parts(
                table, CELLS, unit, grouped_parts(table, g, m, r), part_sql, params, progress
            ))  # fmt: skip
            params, progress = {}, None
            sql = _kept_found_values_sql(kept, vals, gvals, (g, m, r))
        sql = f"SELECT gi, gv, v, n, persons FROM ({sql}) WHERE {cut} ORDER BY gi, n DESC, v"
        found_rows = table.query(sql, params, progress)
    return discovered_from_rows(found_rows, "values", limit != 0)


def duckdb_discovered_candidate_scores(
    table: Table, query: Query[PrivateGroups], candidates: Sequence[Any]
) -> DiscoveredGroups:
    """Every group of ``by`` found among the rows that match a candidate, with its persons and
    its nonzero candidate scores, in one scan (:mod:`dpselect.data.discovered_groups`).

    Parameters
    ----------
    table, query, candidates
        As in :func:`duckdb_grouped_candidate_scores`, the groups those found in the data (of
        ``query.groups.by``) instead of a list.

    Returns
    -------
    DiscoveredGroups
        The groups some unit keeps (engine order), their persons and the cells ``(group
        index, candidate position, score)``.

    Privacy
    -------
    As :func:`duckdb_discovered_value_counts`.
    """
    column, by, rule, progress = query.column, query.groups.by, query.rule, query.progress
    g, m, r, _ = check_rule_bounds(rule)
    q = Grouped(table, column, by, rule.privacy_unit)
    if q.unit is not None:
        check_bounded_candidates(len(candidates))
    empty = np.zeros(0, dtype=np.int64)
    if len(candidates) == 0:
        return DiscoveredGroups([], empty, cells=(empty, empty.copy(), empty.copy()))
    col_match, cand_match = match_sql(f"data.{_quote(column)}", q.col_type, candidates)
    with ExitStack() as stack:
        source, params = stack.enter_context(
            candidates_source(table, candidates, progress is not None)
        )
        cands = f"cands AS (SELECT {cand_match} AS v, CAST(i AS UBIGINT) AS i FROM {source})"
        if q.unit is None:
            by_col = normalised_sql(f"data.{_quote(by)}", q.by_type)
            sql = _counted_found_cells_sql(cands, by_col, col_match, by)
        else:
            salts = salt_params(rule)
            by_col = normalised_sql(f"data.{_quote(by)}", q.by_type)
            gvals = stack.enter_context(
                _found_groups(table, by_col, q.by_type, by, salts["group_salt"])
            )

            part_sql = _found_cells_sql(
                q, by, gvals, f"JOIN cands ON {col_match} = cands.v",
                "cands.i AS code, cands.i AS t", (g, m, r), f"{cands}, ",
            )  # fmt: skip
            unit, _ = unit_sql(q.unit, q.unit_type)
            kept = stack.enter_context(kept_parts(
                table, CELLS, unit, grouped_parts(table, g, m, r), part_sql, params | salts,
                progress,
            ))  # fmt: skip
            sql = _kept_found_cells_sql(kept, gvals, (g, m, r))
            params, progress = {}, None
        found = table.query(f"SELECT gi, gv, t, n, persons FROM ({sql}) ORDER BY gi, t",
                            params, progress)  # fmt: skip
    return discovered_from_rows(found, "cells")


def duckdb_discovered_values(table: Table, query: Query[PrivateGroups]) -> DiscoveredGroups:
    """Every group of ``by`` found among the rows holding a number, with its persons and its
    kept numbers (sorted), in one scan: :func:`duckdb_grouped_values` with the groups found
    in the data (:mod:`dpselect.data.discovered_groups`).

    Parameters
    ----------
    table, query
        As in :func:`duckdb_grouped_values`, without the group list: every non-NULL value of
        ``query.groups.by`` (among the rows holding a number) is a group, and the rule's
        ``group_salt`` keys the unit's choice of groups by the group's value code.

    Returns
    -------
    DiscoveredGroups
        The groups some unit keeps (engine order), their persons (without a privacy unit:
        their rows holding a number) and each group's kept numbers, sorted.

    Privacy
    -------
    One unit adds 1 to the persons of at most ``max_groups`` groups and adds or removes at
    most ``max_rows`` rows in each of them.
    """
    column, by, rule, progress = query.column, query.groups.by, query.rule, query.progress
    g, _, _, rows_cap = check_rule_bounds(rule, numbers=True)
    q = Grouped(table, column, by, rule.privacy_unit)
    number = f"(TRY_CAST(data.{_quote(column)} AS DOUBLE) + CAST(0.0 AS DOUBLE))"
    by_col = normalised_sql(f"data.{_quote(by)}", q.by_type)
    params: dict[str, Any] = {}
    if q.unit is None:
        counted = f"""SELECT g, x AS v, CAST(count(*) AS BIGINT) AS n
                      FROM (SELECT {by_col} AS g, {number} AS x FROM data
                            WHERE data.{_quote(by)} IS NOT NULL)
                      WHERE {number_kept_sql("x")} GROUP BY 1, 2"""
        sql = f"""SELECT dense_rank() OVER (ORDER BY g) AS gi, g AS gv, v, n,
                         sum(n) OVER (PARTITION BY g) AS p
                  FROM ({counted})"""
    with ExitStack() as stack:
        if q.unit is not None:
            params = salt_params(rule)
            gvals = stack.enter_context(
                _found_groups(table, by_col, q.by_type, by, params["group_salt"])
            )
            unit_key, unit_type = q.unit, q.unit_type
            unit, _ = unit_sql(unit_key, unit_type)
            kept = stack.enter_context(kept_parts(
                table, NUMBERS, unit, grouped_parts(table, g, numbers=True),
                lambda part: kept_group_rows_sql(gvals, by_col, number, unit_key, unit_type,
                                                  g, rows_cap, found=True, part=part),
                params, progress,
            ))  # fmt: skip
            params, progress = {}, None  # the kept parts reported the scan
            sql = f"""WITH kept AS (SELECT g, v, CAST(sum(n) AS BIGINT) AS n FROM {kept}
                                    WHERE v IS NOT NULL GROUP BY g, v),
                           persons AS (SELECT g, CAST(sum(n) AS BIGINT) AS p FROM {kept}
                                       WHERE v IS NULL GROUP BY g)
                SELECT kept.g AS gi, gvals.v AS gv, kept.v AS v, kept.n AS n, persons.p AS p
                FROM kept JOIN persons ON kept.g = persons.g
                     JOIN {gvals} AS gvals ON kept.g = gvals.r"""
        found = table.query(f"SELECT gi, gv, v, n, p FROM ({sql}) ORDER BY gi, v", params, progress)
    return discovered_from_rows(found, "numbers")
