"""Grouped releases on DuckDB: the bounded scores of every group of a public list, in one scan.

A grouped release answers one query per group of the column ``by`` (the top destinations of
every carrier). Groups are a public list, matched on ``by`` exactly as candidates are matched
on ``column`` (:func:`dpselect.data.matching.match_sql`). The rule (docs/contribution_bounding.md,
"Groups per unit"; its Python reference is :func:`dpselect.data.rules.kept_groups` followed by
the ungrouped rule):

1. A row is dropped before any bounding when ``by`` matches no listed group, ``column``
   matches no candidate (candidate mode) or is NULL (value mode; numbers: not a number, NaN),
   or its unit is NULL or NaN.
2. Without a privacy unit each row counts once in every group its ``by`` matches (normally
   one; :func:`duckdb_group_multiplicity`).
3. With a privacy unit ``u``, the unit keeps the ``max_groups`` group positions with the
   smallest :func:`~dpselect.data.rules.bounding_key` ``(group_salt, u, position)`` among
   its rows' positions; its rows in other groups are dropped. In each kept group the unit's
   rows are bounded by the rule of the ungrouped method keyed by ``salt``
   (:func:`dpselect.data.scores.duckdb_candidate_scores`,
   :func:`dpselect.data.scores.duckdb_top_values`, :func:`dpselect.data.rules.kept_rows`).

Privacy
-------
What a unit keeps is a function of its own rows, the two salts and public facts (the lists,
the schema), as for the ungrouped rule (docs/contribution_bounding.md, "Sensitivity"; the
keyed order is that of seed 002's bounded-contribution setting). So adding or removing one
unit changes the data of at most ``max_groups`` groups (without a unit, one row changes at
most :func:`duckdb_group_multiplicity` groups), and inside each of them exactly one summand of
the ungrouped scores: L-infinity ``r``, L1 ``m r``, L0 ``m`` (``m = max_contributions``,
``r = max_rows_per_value``; numbers: at most ``max_rows`` rows). The recipes compose the
groups' mechanisms from these facts.

Plans (all one SQL query over the view ``data``; docs/contribution_bounding.md, "Groups per
unit"): ``max_groups = 1``, ``m = 1``, ``r = 1`` (the common case) packs per row the group's
key and position and the value's key and tie-break as one 128-bit integer and keeps its
minimum per unit: one aggregate picks the kept group and the kept value at once;
``max_groups > 1`` with ``m = r = 1`` sorts the same integers per unit and keeps each group's
first (:mod:`dpselect.data.grouped_sql`). Otherwise the rows are grouped by
``(unit, group, value)`` with their count, each unit keeps its groups by DuckDB's top-n aggregate
``min(p, max_groups)`` over its distinct groups, and in each kept ``(unit, group)`` the values
by ``min(p, m)`` (numbers: the window of :func:`dpselect.data.engines.duckdb.kept_rows_sql`
per unit and group).

Memory (docs/contribution_bounding.md, "Data larger than memory"): with a privacy unit each
plan holds state per unit (seeds, kept groups, pairs or lists), so on Parquet files it runs
once per hash part of the units (:func:`dpselect.data.grouped_sql.grouped_parts`,
:mod:`dpselect.data.unit_partitions`:
``hash(u) % P = p``, ``P`` from the footers' row count, the plan's measured bytes per row
and the memory budget), each part from its own units' rows, and the parts' kept cells and
persons are added in a temporary table before any ranking
(:func:`dpselect.data.grouped_sql.kept_parts`). What a unit
keeps (its groups by ``group_salt``, then its values by ``salt``) reads only its own rows,
and every unit falls in one part, so the sums are the one-pass counts for every ``P``: the
split changes the time and the memory, never a result, and reads no value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..core.errors import ParameterError
from .matching import candidates_source, match_multiplicity, match_sql
from .query import PublicGroups, Query, UnitRule
from .rules import (
    M32,
    check_bounded_candidates,
    check_rows_per_value,
    hashed_text_sql,
    md5_bits_sql,
    salt_text,
)
from .scores import (
    keyed_sql,
    unit_sql,
)
from .text_lines import quote_identifier as _quote
from .values import canonical_text_sql, holds_number, is_floating, normalised_sql, number_kept_sql

if TYPE_CHECKING:
    from .tables import Table

from .grouped_sql import (
    CELLS,
    NUMBERS,
    VALUES_TABLE,
    Grouped,
    grouped_parts,
    groups_sql,
    kept_cells_sql,
    kept_parts,
    summed_cells_sql,
    temporary_table,
)

__all__ = [
    "check_grouped_bounds",
    "check_rule_bounds",
    "duckdb_group_multiplicity",
    "duckdb_grouped_candidate_scores",
    "duckdb_grouped_value_counts",
    "duckdb_grouped_values",
    "salt_params",
]


Cells = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]


def _positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < 1:
        raise ParameterError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def check_grouped_bounds(
    groups: Sequence[Any],
    privacy_unit: str | None,
    max_groups: Any = 1,
    max_contributions: Any = 1,
    max_rows_per_value: Any = 1,
    max_rows: Any = 1,
) -> tuple[int, int, int, int]:
    """The bounds of a grouped release as ints, checked from public facts only.

    Parameters
    ----------
    groups : sequence
        The public group list (at most ``2^32 - 1`` groups: a group's code in the rule is its
        32-bit position).
    privacy_unit : str or None
        The unit column, if any.
    max_groups, max_contributions, max_rows_per_value, max_rows : int
        The bounds, each an integer ``>= 1``.

    Returns
    -------
    tuple of int
        ``(max_groups, max_contributions, max_rows_per_value, max_rows)``.

    Raises
    ------
    ParameterError
        A bound that is not an integer ``>= 1``; without a privacy unit, any bound other than
        1 (each row is then its own unit: it counts once in every group it matches); more
        than ``2^32 - 1`` groups.
    """
    if isinstance(groups, (str, bytes)) or not hasattr(groups, "__len__"):
        raise ParameterError(f"groups must be a list of values, got {type(groups).__name__}")
    if len(groups) > M32:
        raise ParameterError(
            f"groups: at most {M32} (2^32 - 1) groups (the rule codes a group by its 32-bit "
            f"position), got {len(groups)}"
        )
    g = _positive(max_groups, "max_groups")
    m = _positive(max_contributions, "max_contributions")
    rows = _positive(max_rows, "max_rows")
    r = check_rows_per_value(max_rows_per_value, privacy_unit)
    if privacy_unit is None:
        for name, value in (("max_groups", g), ("max_contributions", m), ("max_rows", rows)):
            if value != 1:
                raise ParameterError(
                    f"{name} applies only with a privacy_unit column (without one each row "
                    "is its own unit and counts once in every group it matches)"
                )
    return g, m, r, rows


def check_rule_bounds(
    rule: UnitRule, groups: Sequence[Any] = (), numbers: bool = False
) -> tuple[int, int, int, int]:
    """The bounds of a unit rule in a grouped release, checked by :func:`check_grouped_bounds`:
    ``groups_per_unit``, ``values_per_unit`` and ``rows_per_value`` (value counts and
    candidate scores), or with ``numbers`` ``groups_per_unit`` and ``rows_per_unit`` (the
    others 1).

    Parameters
    ----------
    rule : UnitRule
        The unit rule.
    groups : sequence, default ()
        The public group list (none: the groups found in the data).
    numbers : bool, default False
        Whether the query reads numbers.

    Returns
    -------
    tuple of int
        ``(max_groups, max_contributions, max_rows_per_value, max_rows)``.
    """
    if numbers:
        return check_grouped_bounds(
            groups, rule.privacy_unit, rule.groups_per_unit, 1, 1, rule.rows_per_unit
        )
    return check_grouped_bounds(
        groups, rule.privacy_unit, rule.groups_per_unit, rule.values_per_unit, rule.rows_per_value
    )


def salt_params(rule: UnitRule) -> dict[str, str]:
    """The query parameters ``$salt`` and ``$group_salt`` of a unit rule's two salts
    (:func:`~dpselect.data.rules.salt_text`)."""
    return {"salt": salt_text(rule.salt), "group_salt": salt_text(rule.group_salt)}


def duckdb_group_multiplicity(table: Table, by: str, groups: Sequence[Any]) -> int:
    """The most groups of the list one value of ``by`` matches (:func:`match_multiplicity` of
    the list on ``by``'s type; an empty list: 1). Public: the schema and the list only.

    Parameters
    ----------
    table : Table
        The DuckDB table holding ``by``.
    by : str
        The group column.
    groups : sequence
        The public group list, matched on ``by`` as candidates are on a column.

    Returns
    -------
    int
        At least 1: without a privacy unit, the most groups one row counts in.

    Raises
    ------
    DataError
        ``by`` is not a column of the table (or is nested).
    """
    by_type = table.require_column(by, "by")
    if len(groups) == 0:
        return 1
    return match_multiplicity(by_type, groups)


# ----------------------------------------------------------------------------------------
# The three queries
# ----------------------------------------------------------------------------------------


def duckdb_grouped_candidate_scores(
    table: Table, query: Query[PublicGroups], candidates: Sequence[Any]
) -> Cells:
    """The nonzero scores of every (group, candidate) pair, sorted by group then candidate.

    In each group the scores are those of :func:`dpselect.data.scores.duckdb_candidate_scores` over
    the group's kept rows (module docstring; ``by`` matched to ``groups`` as ``column`` to
    ``candidates``).

    Parameters
    ----------
    table : Table
        The DuckDB table.
    query : Query of PublicGroups
        The ranked ``column``; the group column ``by`` and the public group list; the unit
        rule: the unit column (without one every row counts once in each group it matches),
        the groups a unit keeps (``groups_per_unit``), the candidates it keeps in each
        (``values_per_unit``), the rows it adds to each kept candidate (``rows_per_value``),
        the salts of the value rule and of the group rule; ``progress``, polled with the
        percentage done.
    candidates : sequence
        The public candidate list.

    Returns
    -------
    tuple of numpy.ndarray of int64
        ``(group position, candidate position, score)``, only nonzero scores.

    Privacy
    -------
    One unit changes at most ``max_groups`` groups (without a unit: the group multiplicity),
    in each at most ``m`` scores by at most ``r`` each, all in one direction (module
    docstring; docs/contribution_bounding.md, "Groups per unit").
    """
    column, by, rule, progress = query.column, query.groups.by, query.rule, query.progress
    g, m, r, _ = check_rule_bounds(rule, query.groups.groups)
    q = Grouped(table, column, by, rule.privacy_unit)
    groups = list(query.groups.groups)
    if q.unit is not None:
        check_bounded_candidates(len(candidates))
    empty = np.zeros(0, dtype=np.int64)
    if len(groups) == 0 or len(candidates) == 0:
        return empty, empty.copy(), empty.copy()
    col_match, cand_match = match_sql(f"data.{_quote(column)}", q.col_type, candidates)
    by_match, group_match = match_sql(f"data.{_quote(by)}", q.by_type, groups)
    with ExitStack() as stack:
        prefix, params = _candidate_lists(
            stack, table, (cand_match, candidates), (group_match, groups), progress is not None
        )
        matched = _Matched(prefix, by_match, col_match)
        if q.unit is None:
            sql = _counted_cells_sql(matched)
        else:
            unit, _ = unit_sql(q.unit, q.unit_type)
            salts = salt_params(rule)
            kept = stack.enter_context(kept_parts(
                table, CELLS, unit, grouped_parts(table, g, m, r),
                _candidate_parts(q, matched, (g, m, r)), params | salts, progress,
            ))  # fmt: skip
            sql = f"SELECT g, t, CAST(sum(n) AS BIGINT) AS n FROM {kept} GROUP BY g, t"
            params, progress = {}, None
        found = table.query_numpy(f"SELECT g, t, n FROM ({sql}) ORDER BY g, t", params, progress)
    return _nonzero_cells(found)


def _candidate_lists(
    stack: ExitStack,
    table: Table,
    cands: tuple[str, Sequence[Any]],
    groups: tuple[str, Sequence[Any]],
    materialize: bool,
) -> tuple[str, dict[str, Any]]:
    """The CTEs ``cands`` and ``grps`` of the candidate scores over the two lists (each a
    match SQL and its values; :func:`~.matching.candidates_source`, held open by ``stack``),
    with their parameters."""
    source, params = stack.enter_context(candidates_source(table, cands[1], materialize))
    gsource, gparams = stack.enter_context(
        candidates_source(table, groups[1], materialize, "groups")
    )
    prefix = f"""WITH cands AS (SELECT {cands[0]} AS v, CAST(i AS UBIGINT) AS i
                                FROM {source}),
                      grps AS ({groups_sql(groups[0], gsource)})"""
    return prefix, params | gparams


@dataclass(frozen=True)
class _Matched:
    """The SQL of a grouped query's rows: the lists' CTEs (``cands``/``vals`` and ``grps``),
    ``by`` matched to the groups, and the ranked column (matched to the candidates, or
    normalised)."""

    ctes: str
    by_match: str
    col: str


def _counted_cells_sql(matched: _Matched) -> str:
    """``(g, t, n)`` without a privacy unit: every row counts once in each (group, candidate)
    cell it matches."""
    return f"""{matched.ctes},
                counted AS (SELECT {matched.by_match} AS gv, {matched.col} AS v, count(*) AS n
                            FROM data GROUP BY 1, 2)
                SELECT CAST(grps.g AS BIGINT) AS g, CAST(cands.i AS BIGINT) AS t,
                       CAST(sum(counted.n) AS BIGINT) AS n
                FROM counted JOIN grps ON counted.gv = grps.v JOIN cands ON counted.v = cands.v
                GROUP BY 1, 2"""


def _candidate_parts(
    q: Grouped, matched: _Matched, bounds: tuple[int, int, int]
) -> Callable[[str], str]:
    """The query of one hash part's kept cells (:func:`kept_cells_sql`) for the candidate
    scores: the part's rows matched to a group and a candidate (the code and tie-break: the
    candidate's position)."""
    g, m, r = bounds
    unit, valid = unit_sql(q.unit_key, q.unit_type)

    def part_sql(part: str) -> str:
        rows = f"""(SELECT {unit} AS u, grps.g AS g, cands.i AS code, cands.i AS t
                   FROM data JOIN grps ON {matched.by_match} = grps.v
                        JOIN cands ON {matched.col} = cands.v
                   WHERE {valid} AND {part})"""
        ctes, final = kept_cells_sql(rows, q.unit_key, q.unit_type, g, m, r, part=part)
        return f"{matched.ctes}, {ctes} {final}"

    return part_sql


def _nonzero_cells(found: dict[str, Any]) -> Cells:
    """The ``(g, t, n)`` columns of a query's result as int64 arrays, nonzero ``n`` only."""
    cols = [np.asarray(np.ma.getdata(found[k]), dtype=np.int64) for k in ("g", "t", "n")]
    keep = cols[2] != 0
    return cols[0][keep], cols[1][keep], cols[2][keep]


def value_ranks_sql(
    col: str, col_type: str, column: str, tag: str = "v", salt_sql: str = "$salt"
) -> str:
    """Every distinct non-NULL value ``v`` with its code ``w`` (:func:`~dpselect.data.rules.
    value_code`, one md5 per distinct value) and its rank ``r`` in the engine's order (the
    tie-break), as :func:`dpselect.data.scores.duckdb_top_values` computes them (groups found
    in the data: the tag ``g`` and the group salt)."""
    v_text = canonical_text_sql("v", "DOUBLE" if is_floating(col_type) else col_type)
    code = md5_bits_sql(hashed_text_sql(tag, v_text, salt_sql), 4)
    return f"""SELECT v, w, CAST(CASE WHEN r < {M32} THEN r
                                     ELSE error('more than 2^32 distinct values') END
                                AS UBIGINT) AS r
               FROM (SELECT v, {code} AS w, (row_number() OVER (ORDER BY v) - 1) AS r
                     FROM (SELECT DISTINCT {col} AS v FROM data
                           WHERE data.{_quote(column)} IS NOT NULL))"""


def duckdb_grouped_value_counts(
    table: Table, query: Query[PublicGroups], limit: int | None = None
) -> list[list[tuple[Any, int]]]:
    """For each group (list order), its values with their bounded counts, largest first, ties
    by value, at most ``limit`` (``None``: all): :func:`dpselect.data.scores.duckdb_top_values`
    over each group's kept rows (module docstring).

    Parameters
    ----------
    table : Table
        The DuckDB table.
    query : Query of PublicGroups
        As in :func:`duckdb_grouped_candidate_scores`; every non-NULL value of ``column`` is
        a candidate.
    limit : int or None
        The most values per group (``None``: every value).

    Returns
    -------
    list of list of (value, int)
        One list per group, in the groups' order (empty where no kept row falls).

    Privacy
    -------
    As :func:`duckdb_grouped_candidate_scores`: one unit changes at most ``max_groups``
    groups, in each at most ``m`` counts by at most ``r``.
    """
    column, by, rule, progress = query.column, query.groups.by, query.rule, query.progress
    g, m, r, _ = check_rule_bounds(rule, query.groups.groups)
    check_limit(limit)
    q = Grouped(table, column, by, rule.privacy_unit)
    groups = list(query.groups.groups)
    out: list[list[tuple[Any, int]]] = [[] for _ in groups]
    if len(groups) == 0 or limit == 0:
        return out
    col = normalised_sql(f"data.{_quote(column)}", q.col_type)
    by_match, group_match = match_sql(f"data.{_quote(by)}", q.by_type, groups)
    with ExitStack() as stack:
        source, params = stack.enter_context(
            candidates_source(table, groups, progress is not None, "groups")
        )
        matched = _Matched(f"grps AS ({groups_sql(group_match, source)})", by_match, col)
        if q.unit is None:
            sql = _counted_values_sql(matched, column)
        else:
            unit, _ = unit_sql(q.unit, q.unit_type)
            salts = salt_params(rule)
            vals = stack.enter_context(temporary_table(
                table, VALUES_TABLE, value_ranks_sql(col, q.col_type, column),
                {"salt": salts["salt"]},
            ))  # fmt: skip
            kept = stack.enter_context(kept_parts(
                table, CELLS, unit, grouped_parts(table, g, m, r),
                _value_parts(q, matched, vals, (g, m, r)), params | salts, progress,
            ))  # fmt: skip
            sql = f"""WITH {summed_cells_sql(kept)},
                found AS (SELECT kept.g AS g, vals.v AS v, kept.n AS n
                          FROM kept JOIN {vals} AS vals ON kept.t = vals.r)"""
            params, progress = {}, None
        sql += _ranked_found_sql(limit)
        for position, value, n in table.query(sql, params, progress):
            out[int(position)].append((value, int(n)))
    return out


def check_limit(limit: Any) -> None:
    """Check a per-group limit of values (from public facts only).

    Parameters
    ----------
    limit : int or None
        The most values per group (``None``: every value).

    Raises
    ------
    ParameterError
        ``limit`` is neither ``None`` nor an integer ``>= 0``.
    """
    if limit is not None and (
        isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 0
    ):
        raise ParameterError(f"limit must be an integer >= 0 or None, got {limit!r}")


def _counted_values_sql(matched: _Matched, column: str) -> str:
    """The CTE ``found`` ``(g, v, n)`` without a privacy unit: every row with a non-NULL
    value counts once in each group it matches."""
    return f"""WITH {matched.ctes},
                counted AS (SELECT {matched.by_match} AS gv, {matched.col} AS v, count(*) AS n
                            FROM data
                            WHERE data.{_quote(column)} IS NOT NULL GROUP BY 1, 2),
                found AS (SELECT grps.g AS g, counted.v AS v, sum(counted.n) AS n
                          FROM counted JOIN grps ON counted.gv = grps.v GROUP BY 1, 2)"""


def _value_parts(
    q: Grouped, matched: _Matched, vals: str, bounds: tuple[int, int, int]
) -> Callable[[str], str]:
    """The query of one hash part's kept cells (:func:`kept_cells_sql`) for the value counts:
    the part's rows matched to a group and a value of the table ``vals`` (code ``w``,
    tie-break: the rank ``r``)."""
    g, m, r = bounds
    unit, valid = unit_sql(q.unit_key, q.unit_type)

    def part_sql(part: str) -> str:
        rows = f"""(SELECT {unit} AS u, grps.g AS g, vals.w AS code, vals.r AS t
                   FROM data JOIN grps ON {matched.by_match} = grps.v
                        JOIN {vals} AS vals ON {matched.col} = vals.v
                   WHERE {valid} AND {part})"""
        ctes, final = kept_cells_sql(rows, q.unit_key, q.unit_type, g, m, r, part=part)
        return f"WITH {matched.ctes}, {ctes} {final}"

    return part_sql


def _ranked_found_sql(limit: int | None) -> str:
    """The tail of a value-counts query: the CTE ``found`` ranked per group (count
    descending, ties by value), cut at ``limit`` per group (``None``: no cut)."""
    ranked = "row_number() OVER (PARTITION BY g ORDER BY n DESC, v)"
    cut = "" if limit is None else f"WHERE k <= {int(limit)}"
    return f"""
            SELECT CAST(g AS BIGINT) AS g, v, CAST(n AS BIGINT) AS n
            FROM (SELECT g, v, n, {ranked} AS k FROM found) {cut}
            ORDER BY g, n DESC, v"""


def duckdb_grouped_values(
    table: Table, query: Query[PublicGroups]
) -> list[npt.NDArray[np.float64]]:
    """For each group (list order), the numbers of ``column`` its kept rows hold (a multiset,
    in no particular order), read as :meth:`~dpselect.data.engines.duckdb.DuckDBEngine.
    column_values` reads them (``TRY_CAST`` to DOUBLE plus ``0.0``; NULL and NaN dropped).

    Parameters
    ----------
    table : Table
        The DuckDB table.
    query : Query of PublicGroups
        The numeric ``column``; the group column ``by`` and the public group list; the unit
        rule: the unit column (without one every row with a number counts in each group it
        matches), the groups a unit keeps (``groups_per_unit``), then the rows it keeps in
        each (``rows_per_unit``, :func:`dpselect.data.rules.kept_rows` per unit and group,
        keyed by ``salt``), the salts of the row rule and of the group rule.

    Returns
    -------
    list of numpy.ndarray of float64
        One array per group, in the groups' order.

    Privacy
    -------
    One unit changes the rows of at most ``max_groups`` groups (without a unit: the group
    multiplicity), at most ``max_rows`` rows in each, all added or all removed
    (docs/contribution_bounding.md, "Groups per unit" and "Rows per unit").
    """
    column, by, rule, progress = query.column, query.groups.by, query.rule, query.progress
    g, _, _, rows_cap = check_rule_bounds(rule, query.groups.groups, numbers=True)
    q = Grouped(table, column, by, rule.privacy_unit)
    groups = list(query.groups.groups)
    if len(groups) == 0:
        return []
    by_match, group_match = match_sql(f"data.{_quote(by)}", q.by_type, groups)
    number = f"(TRY_CAST(data.{_quote(column)} AS DOUBLE) + CAST(0.0 AS DOUBLE))"
    with ExitStack() as stack:
        source, params = stack.enter_context(
            candidates_source(table, groups, progress is not None, "groups")
        )
        grps = f"grps AS ({groups_sql(group_match, source)})"
        if q.unit is None:
            sql = f"""WITH {grps}
                SELECT CAST(grps.g AS BIGINT) AS g, nums.x AS v, CAST(count(*) AS BIGINT) AS n
                FROM (SELECT {by_match} AS gv, {number} AS x FROM data) AS nums
                     JOIN grps ON nums.gv = grps.v
                WHERE {number_kept_sql("nums.x")} GROUP BY 1, 2"""
        else:
            unit_key, unit_type = q.unit, q.unit_type
            unit, _ = unit_sql(unit_key, unit_type)
            salts = salt_params(rule)
            kept = stack.enter_context(kept_parts(
                table, NUMBERS, unit, grouped_parts(table, g, numbers=True),
                lambda part: kept_group_rows_sql(grps, by_match, number, unit_key, unit_type,
                                                  g, rows_cap, part=part),
                params | salts, progress,
            ))  # fmt: skip
            sql = f"SELECT g, v, CAST(sum(n) AS BIGINT) AS n FROM {kept} GROUP BY g, v"
            params, progress = {}, None  # the kept parts reported the scan
        found = table.query_numpy(f"SELECT g, v, n FROM ({sql}) ORDER BY g, v", params, progress)
    return _group_multisets(found, len(groups))


def _group_multisets(found: dict[str, Any], size: int) -> list[npt.NDArray[np.float64]]:
    """The ``(g, v, n)`` rows of a numbers query as one array per group position
    ``0 .. size - 1``, each value repeated ``n`` times (NULL and NaN dropped)."""
    positions = np.asarray(np.ma.getdata(found["g"]), dtype=np.int64)
    values = np.asarray(np.ma.filled(found["v"], np.nan), dtype=np.float64)
    counts = np.asarray(np.ma.getdata(found["n"]), dtype=np.int64)
    keep = holds_number(values)  # NULL read as NaN
    positions, values, counts = positions[keep], values[keep], counts[keep]
    out = []
    for position in range(size):
        here = positions == position
        out.append(np.repeat(values[here], counts[here]).astype(np.float64))
    return out


def kept_group_rows_sql(
    grps: str,
    by_match: str,
    number: str,
    privacy_unit: str,
    unit_type: str,
    g: int,
    r: int,
    found: bool = False,
    part: str = "TRUE",
) -> str:
    """``(g, v, n)``: the numbers each unit keeps in each kept group and how many rows hold
    them: the group rule (``$group_salt``) over the unit's distinct groups, then the window of
    :func:`dpselect.data.engines.duckdb.kept_rows_sql` per (unit, group) (``$salt``), over
    the rows that meet ``part`` (the units of one hash part).

    ``found``: ``grps`` is the temporary table of the groups found in the data (value ``v``,
    code ``w``, rank ``r``; :mod:`dpselect.data.discovered_scores`); a group is keyed by its
    code and ``g`` is its rank (:mod:`dpselect.data.discovered_groups`); the query also
    returns, as the rows ``(g, NULL, p)``, the units keeping each group
    (:data:`dpselect.data.grouped_sql.NUMBERS`)."""
    unit, valid = unit_sql(privacy_unit, unit_type)
    code = md5_bits_sql(hashed_text_sql("v", canonical_text_sql("v", "DOUBLE")), 4)
    gk = ", gk" if found else ""
    on = "gk" if found else "g"
    gkeyed = keyed_sql(f"(SELECT DISTINCT u, g{gk} FROM pairs)", on, unit_type, "$group_salt")
    chosen = "min((x << 32) | g)" if g == 1 else f"unnest(min((x << 32) | g, {g}))"
    kept_groups = f"SELECT u, {chosen} & {M32} AS g FROM {gkeyed} GROUP BY u"
    if found:
        group_cols, grps_name, first = "gvals.r AS g, gvals.w AS gk", f"{grps} AS gvals", ""
    else:
        group_cols, grps_name, first = "grps.g AS g", "grps", f"{grps},"
    ctes = f"""
        WITH {first}
             nums AS (SELECT u, g{gk}, v
                      FROM (SELECT {unit} AS u, {group_cols}, {number} AS v
                            FROM data JOIN {grps_name} ON {by_match} = {grps_name.split()[-1]}.v
                            WHERE {valid} AND {part})
                      WHERE {number_kept_sql("v")}),
             pairs AS (SELECT u, g{gk}, v, count(*) AS c FROM nums GROUP BY u, g{gk}, v),
             kept_groups AS {"MATERIALIZED " if found else ""}({kept_groups}),
             codes AS (SELECT v, {code} AS w FROM (SELECT DISTINCT v FROM pairs)),
             coded AS (SELECT p.u AS u, p.g AS g, p.v AS v, p.c AS c, codes.w AS w
                       FROM pairs AS p JOIN kept_groups AS k ON p.u = k.u AND p.g = k.g
                            JOIN codes ON p.v = codes.v),
             ordered AS (SELECT g, v, c, coalesce(sum(c) OVER (
                                 PARTITION BY u, g ORDER BY x, v
                                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
                         FROM {keyed_sql("coded", "w", unit_type)})"""
    final = f"""SELECT CAST(g AS BIGINT) AS g, v, CAST(sum(least(c, {r} - before)) AS BIGINT) AS n
                FROM ordered WHERE before < {r} GROUP BY 1, 2"""
    if not found:
        return f"{ctes} {final}"
    return f"""{ctes} SELECT g, v, n FROM ({final})
        UNION ALL SELECT CAST(g AS BIGINT), NULL, count(*) FROM kept_groups GROUP BY g"""
