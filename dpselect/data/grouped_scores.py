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
first (:func:`_one_value_per_group_sql`). Otherwise the rows are grouped by ``(unit, group, value)``
with their count, each unit keeps its groups by DuckDB's top-n aggregate
``min(p, max_groups)`` over its distinct groups, and in each kept ``(unit, group)`` the values
by ``min(p, m)`` (numbers: the window of :func:`dpselect.data.engines.duckdb.kept_rows_sql`
per unit and group).

Memory (docs/contribution_bounding.md, "Data larger than memory"): with a privacy unit each
plan holds state per unit (seeds, kept groups, pairs or lists), so on Parquet files it runs
once per hash part of the units (:func:`grouped_parts`, :mod:`dpselect.data.unit_partitions`:
``hash(u) % P = p``, ``P`` from the footers' row count, the plan's measured bytes per row
and the memory budget), each part from its own units' rows, and the parts' kept cells and
persons are added in a temporary table before any ranking (:func:`_kept_parts`). What a unit
keeps (its groups by ``group_salt``, then its values by ``salt``) reads only its own rows,
and every unit falls in one part, so the sums are the one-pass counts for every ``P``: the
split changes the time and the memory, never a result, and reads no value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..core.errors import ParameterError
from .discovered_groups import DiscoveredGroups, discovered_from_rows
from .engine import Progress
from .join_order import text_join_order
from .matching import candidates_source, match_multiplicity, match_sql
from .rules import (
    M32,
    check_bounded_candidates,
    check_rows_per_value,
    hashed_text_sql,
    md5_bits_sql,
    salt_text,
)
from .scores import (
    bounding_key_sql,
    keyed_sql,
    unit_kept_sql,
    unit_seed_sql,
    unit_sql,
)
from .text_lines import quote_identifier as _quote
from .unit_partitions import (
    memory_budget,
    part_count,
    part_filter_sql,
    part_progress,
    source_rows,
)
from .values import canonical_text_sql, holds_number, is_floating, normalised_sql, number_kept_sql

if TYPE_CHECKING:
    from .tables import Table

__all__ = [
    "check_grouped_bounds",
    "duckdb_discovered_candidate_scores",
    "duckdb_discovered_value_counts",
    "duckdb_discovered_values",
    "duckdb_group_multiplicity",
    "duckdb_grouped_candidate_scores",
    "duckdb_grouped_value_counts",
    "duckdb_grouped_values",
    "grouped_parts",
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
# SQL pieces
# ----------------------------------------------------------------------------------------


def _two_seeds_sql(privacy_unit: str, unit_type: str, part: str = "TRUE") -> str:
    """``(u, a, b, ga, gb)`` for every distinct unit of the data: the seed halves of the value
    rule (``$salt``) and of the group rule (``$group_salt``), two md5 per unit, none per row
    (a narrow scan of the unit column, as :func:`dpselect.data.scores._seeds_sql`). ``part``:
    a condition on the rows (the units of one hash part, :func:`~.unit_partitions.
    part_filter_sql`)."""
    unit, valid = unit_sql(privacy_unit, unit_type)
    seed = unit_seed_sql(unit_type)
    group_seed = unit_seed_sql(unit_type, "$group_salt")
    return f"""(SELECT u, h & {M32} AS a, h >> 32 AS b, k & {M32} AS ga, k >> 32 AS gb
                FROM (SELECT u, {seed} AS h, {group_seed} AS k
                      FROM (SELECT DISTINCT {unit} AS u FROM data WHERE {valid} AND {part})
                      WHERE {unit_kept_sql(unit_type)}))"""


def _kept_cells_sql(
    rows: str,
    privacy_unit: str,
    unit_type: str,
    g: int,
    m: int,
    r: int,
    gc: str = "g",
    persons: bool = False,
    part: str = "TRUE",
) -> tuple[str, str]:
    """CTEs and the query of ``(g, t, n)``: for each kept (group, tie-break) how many units
    keep it (``r > 1``: their rows, capped at ``r``). ``rows`` has the columns ``u``, ``g``
    (group position), ``code`` and ``t`` (the value rule's code and tie-break), all UBIGINT
    below 2^32.

    ``g = m = r = 1``: one aggregate per unit, the minimum of
    ``p = gkey 2^96 + g 2^64 + key 2^32 + t`` (UHUGEINT) over its rows: its smallest
    ``(gkey, g)`` is its kept group (``gkey`` is a bijection of ``g`` for a fixed unit), and
    among the rows of that group its smallest ``(key, t)`` is its kept value, which is the
    ungrouped rule on that group's rows. Otherwise the rows are grouped by
    ``(u, g, code, t)`` with their count first.

    ``gc``: the column of ``rows`` the group key is computed from (``g`` itself for a public
    list; the group value's code for groups found in the data, ``g`` then being the value's
    rank, the tie-break). ``persons``: the general plan also defines ``persons(g, p)``, the
    units keeping each group (the other plans keep one value per kept group, so there the
    units of a group are the sum of its ``n``). ``part``: the condition ``rows`` is filtered
    by (the units of one hash part), applied to the seeds' scan too.

    Returns
    -------
    tuple of str
        The CTE definitions (``name AS (...)``, comma separated, to follow others in one
        ``WITH``) and the ``SELECT`` of ``(g, t, n)`` reading them.
    """
    seeds = _two_seeds_sql(privacy_unit, unit_type, part)
    if g == 1 and m == 1 and r == 1:
        start = f"""(SELECT rows.u AS u, rows.g AS g, rows.t AS t,
                            xor(rows.{gc}, s.ga) AS y, s.gb AS gb, xor(rows.code, s.a) AS x,
                            s.b AS b
                     FROM {rows} AS rows JOIN seeds AS s ON rows.u = s.u)"""
        keyed = bounding_key_sql(bounding_key_sql(start, "y", "gb"))
        packed = (
            "(CAST(y AS UHUGEINT) << 96) | (CAST(g AS UHUGEINT) << 64) "
            "| CAST((x << 32) | t AS UHUGEINT)"
        )
        ctes = f"""seeds AS {seeds},
                   chosen AS (SELECT min({packed}) AS p FROM {keyed} GROUP BY u)"""
        final = f"""SELECT CAST((p >> 64) & {M32} AS BIGINT) AS g,
                           CAST(p & {M32} AS BIGINT) AS t, count(*) AS n
                    FROM chosen GROUP BY 1, 2"""
        return ctes, final
    if m == 1 and r == 1:
        return _one_value_per_group_sql(rows, seeds, g, gc)
    group_p = "(y << 32) | g"
    if g == 1:
        kept_groups = f"SELECT u, min({group_p}) & {M32} AS g FROM gkeyed GROUP BY u"
    else:
        kept_groups = f"""SELECT u, unnest(min({group_p}, {g})) & {M32} AS g FROM gkeyed
                          GROUP BY u"""
    extra = "" if gc == "g" else f", {gc}"
    gstart = f"""(SELECT c.u AS u, c.g AS g, xor(c.{gc}, s.ga) AS y, s.gb AS gb
                  FROM (SELECT DISTINCT u, g{extra} FROM cells) AS c
                       JOIN seeds AS s ON c.u = s.u)"""
    vstart = """(SELECT c.u AS u, c.g AS g, c.t AS t, c.n AS n,
                         xor(c.code, s.a) AS x, s.b AS b
                  FROM cells AS c JOIN kept_groups AS k ON c.u = k.u AND c.g = k.g
                       JOIN seeds AS s ON c.u = s.u)"""
    vchain = bounding_key_sql(vstart)
    vkeyed = f"(SELECT u, g, t, n, (x << 32) | t AS p FROM {vchain})"
    if m == 1:
        chosen = "SELECT u, g, min(p) AS p FROM vkeyed GROUP BY u, g"
    else:
        chosen = f"SELECT u, g, unnest(min(p, {m})) AS p FROM vkeyed GROUP BY u, g"
    if r == 1:
        counted = f"""SELECT CAST(g AS BIGINT) AS g, CAST(p & {M32} AS BIGINT) AS t,
                             count(*) AS n FROM chosen GROUP BY 1, 2"""
    else:
        counted = f"""SELECT CAST(v.g AS BIGINT) AS g, CAST(v.t AS BIGINT) AS t,
                             CAST(sum(least(v.n, {r})) AS BIGINT) AS n
                      FROM vkeyed AS v JOIN chosen AS c ON v.u = c.u AND v.g = c.g AND v.p = c.p
                      GROUP BY 1, 2"""
    ctes = f"""seeds AS {seeds},
             cells AS (SELECT u, g{extra}, code, t, count(*) AS n FROM {rows}
                       GROUP BY u, g{extra}, code, t),
             gkeyed AS (SELECT u, g, y FROM {bounding_key_sql(gstart, "y", "gb")}),
             kept_groups AS {"MATERIALIZED " if persons else ""}({kept_groups}),
             vkeyed AS {vkeyed},
             chosen AS ({chosen})"""
    if persons:
        ctes += ", persons AS (SELECT g, count(*) AS p FROM kept_groups GROUP BY g)"
    return ctes, counted


def lambda_syntax() -> bool:
    """Whether the installed DuckDB reads ``lambda x, i: ...`` (1.3 and later; 2.0 refuses
    the older arrow form by default): a fact of the installation, not of the data."""
    import duckdb

    parts = [int(p) if p.isdigit() else 0 for p in duckdb.__version__.split(".")[:2]]
    return tuple(parts) >= (1, 3)


def _one_value_per_group_sql(rows: str, seeds: str, g: int, gc: str = "g") -> tuple[str, str]:
    """:func:`_kept_cells_sql` for ``m = r = 1`` and any ``max_groups``, without a join back.

    Where DuckDB has lambdas (:func:`lambda_syntax`): per unit, the sorted list of
    ``q = gkey 2^96 + group 2^64 + key 2^32 + t`` over its rows (one aggregate per unit, as
    for ``max_groups = 1``); the first entry of each group in it holds that group's smallest
    ``(key, t)``, the unit's kept value there, and the first ``g`` such entries are its kept
    groups (smallest ``(gkey, group)`` first). Measured at 10^8 rows (10^7 units, 200 groups,
    ``max_groups = 3``, ``bench/bench_grouped.py``): 1.46x the ungrouped top-k in the same
    run, against 2.86x for the plan below, whose aggregate per ``(unit, group)`` has about
    7 * 10^7 groups.

    Otherwise two aggregates: per (unit, group) the minimum ``p = key 2^32 + t`` over its rows
    (the value that unit keeps there, if it keeps the group); then per unit the ``g`` smallest
    ``gkey 2^96 + group 2^64 + p`` over its (unit, group) pairs, one per group.
    """
    if lambda_syntax():
        return _sorted_lists_sql(rows, seeds, g, gc)
    extra = "" if gc == "g" else f", rows.{gc} AS {gc}"
    start = f"""(SELECT rows.u AS u, rows.g AS g, rows.t AS t, xor(rows.code, s.a) AS x,
                        s.b AS b{extra}
                 FROM {rows} AS rows JOIN seeds AS s ON rows.u = s.u)"""
    keyed = bounding_key_sql(start)
    gstart = f"""(SELECT c.u AS u, c.g AS g, c.p AS p, xor(c.{gc}, s.ga) AS y, s.gb AS gb
                 FROM pairs AS c JOIN seeds AS s ON c.u = s.u)"""
    gkeyed = bounding_key_sql(gstart, "y", "gb")
    packed = "(CAST(y AS UHUGEINT) << 96) | (CAST(g AS UHUGEINT) << 64) | CAST(p AS UHUGEINT)"
    ctes = f"""seeds AS {seeds},
               pairs AS (SELECT u, g{"" if gc == "g" else ", " + gc}, min((x << 32) | t) AS p
                         FROM {keyed} GROUP BY u, g{"" if gc == "g" else ", " + gc}),
               chosen AS (SELECT unnest(min({packed}, {g})) AS q FROM {gkeyed} GROUP BY u)"""
    final = f"""SELECT CAST((q >> 64) & {M32} AS BIGINT) AS g, CAST(q & {M32} AS BIGINT) AS t,
                       count(*) AS n
                FROM chosen GROUP BY 1, 2"""
    return ctes, final


def _sorted_lists_sql(rows: str, seeds: str, g: int, gc: str = "g") -> tuple[str, str]:
    """The lists plan of :func:`_one_value_per_group_sql` (DuckDB lambdas)."""
    start = f"""(SELECT rows.u AS u, rows.g AS g, rows.t AS t,
                        xor(rows.{gc}, s.ga) AS y, s.gb AS gb, xor(rows.code, s.a) AS x, s.b AS b
                 FROM {rows} AS rows JOIN seeds AS s ON rows.u = s.u)"""
    keyed = bounding_key_sql(bounding_key_sql(start, "y", "gb"))
    packed = (
        "(CAST(y AS UHUGEINT) << 96) | (CAST(g AS UHUGEINT) << 64) "
        "| CAST((x << 32) | t AS UHUGEINT)"
    )
    first = "lambda q, i: i = 1 OR (q >> 64) != (l[i - 1] >> 64)"  # a group's first entry
    ctes = f"""seeds AS {seeds},
               lists AS (SELECT list_sort(list({packed})) AS l FROM {keyed} GROUP BY u),
               chosen AS (SELECT unnest(list_filter(l, {first})[1:{g}]) AS q FROM lists)"""
    final = f"""SELECT CAST((q >> 64) & {M32} AS BIGINT) AS g, CAST(q & {M32} AS BIGINT) AS t,
                       count(*) AS n
                FROM chosen GROUP BY 1, 2"""
    return ctes, final


def _groups_sql(group_match: str, source: str) -> str:
    return f"SELECT {group_match} AS v, CAST(i AS UBIGINT) AS g FROM {source}"


#: The temporary tables of the distinct values (``vals``) and of the groups found in the
#: data (``gvals``) while a query runs.
_VALUES_TABLE = "dpselect_grouped_values"
_FOUND_GROUPS_TABLE = "dpselect_found_groups"


@contextmanager
def _temporary_table(table: Table, name: str, sql: str, params: dict[str, Any]) -> Iterator[str]:
    """The result of ``sql`` as the temporary table ``name`` while in use (dropped after).

    The distinct values (or groups) with their codes and ranks go to a table, not to a
    ``MATERIALIZED`` CTE: a table's known size makes DuckDB build the join's hash table on
    it, not on the rows (as :func:`dpselect.data.scores.duckdb_top_values` does; measured in
    docs/performance.md, "Contribution bounding per privacy unit").
    """
    try:
        table.query(f"CREATE OR REPLACE TEMP TABLE {name} AS {sql}", params)
        yield name
    finally:
        table.connection.execute(f"DROP TABLE IF EXISTS {name}")


#: Bytes per row of the data that each grouped plan with a privacy unit holds for one hash
#: part of the units (DuckDB's hash tables and lists of the part's units, pairs and cells):
#: the growth of the peak resident memory over the rows, measured in a fresh process with
#: one part at 10^7 and 5 * 10^7 rows (one unit per ten rows, 200 groups;
#: ``bench/bench_grouped.py --budget-mb 1e9``, docs/performance.md, "Grouped releases"),
#: the larger of the two, rounded up to a multiple of 4. ``max_groups = m = r = 1`` (one
#: aggregate per unit; 51.2 and 27.7 measured):
GROUPED_MIN_BYTES_PER_ROW = 52
#: ``m = r = 1``, ``max_groups > 1`` (one sorted list per unit, :func:`_sorted_lists_sql`;
#: 87.6 and 62.2):
GROUPED_LISTS_BYTES_PER_ROW = 88
#: Any other ``m``, ``r`` (the cells ``(unit, group, value)`` with their count; 165.4 and
#: 146.1 at ``max_groups = m = 3``):
GROUPED_CELLS_BYTES_PER_ROW = 168
#: Numbers (``grouped_values``, ``discovered_values``: the pairs ``(unit, group, number)``
#: and the window over them; 145.8 and 151.7, groups found in the data 193.3 and 183.6):
GROUPED_NUMBERS_BYTES_PER_ROW = 196
#: The rows a line of a text source (CSV, TSV, JSON lines) counts for when the grouped
#: plans size their parts (:func:`~.unit_partitions.source_rows`): their joins run as
#: written there (:func:`~.join_order.text_join_order`, in :func:`_kept_parts`), and one
#: line then costs less than the plan's constant above: in one part, at 10^7 and 5 * 10^7
#: lines, 45.7 and 31.8 bytes with ``max_groups = m = 1`` (52), 75.3 and 59.4 with
#: ``max_groups = 3`` (88), 129.5 and 128.7 for the cells (168), 47.6 and 29.9 for the
#: groups found in the data (52), 136.0 and 155.0 for the numbers (196): at most 0.92 of
#: the constant; with the optimizer's join order up to 206.6 (docs/performance.md, "Data
#: larger than memory").
GROUPED_TEXT_ROW_WEIGHT = 1
#: The temporary table that collects the parts' kept cells while a query runs.
_KEPT_TABLE = "dpselect_grouped_kept"


def grouped_parts(
    table: Table,
    max_groups: int = 1,
    max_contributions: int = 1,
    max_rows_per_value: int = 1,
    *,
    numbers: bool = False,
) -> int:
    """The number of hash parts of the units a grouped plan with a privacy unit runs in
    (:func:`~.unit_partitions.part_count`): from the source files' row bound, the plan's
    bytes per row (a constant, chosen by the bounds) and the memory budget. Public facts
    only; the parts change no result (docs/contribution_bounding.md, "Data larger than
    memory").

    Parameters
    ----------
    table : Table
        The DuckDB table (its Parquet files and connection).
    max_groups, max_contributions, max_rows_per_value : int
        The bounds, which choose the plan.
    numbers : bool, default False
        The plan of the numbers (``grouped_values``, ``discovered_values``).

    Returns
    -------
    int
        The number of parts (1 when the source is a frame in memory).
    """
    if numbers:
        per_row = GROUPED_NUMBERS_BYTES_PER_ROW
    elif max_groups == max_contributions == max_rows_per_value == 1:
        per_row = GROUPED_MIN_BYTES_PER_ROW
    elif max_contributions == max_rows_per_value == 1 and lambda_syntax():
        per_row = GROUPED_LISTS_BYTES_PER_ROW
    else:
        per_row = GROUPED_CELLS_BYTES_PER_ROW
    rows = source_rows(table.connection, table.parquet_files, table.source_files,
                       text_weight=GROUPED_TEXT_ROW_WEIGHT)  # fmt: skip
    return part_count(rows, per_row, memory_budget(table.connection))


@contextmanager
def _kept_parts(
    table: Table,
    columns: str,
    unit: str,
    parts: int,
    part_sql: Callable[[str], str],
    params: dict[str, Any],
    progress: Progress,
) -> Iterator[str]:
    """The temporary table ``columns`` of what every hash part of the units keeps, while in
    use (a context manager yielding its name, dropped after).

    Part ``j`` of ``parts`` is the units with ``hash(unit) % parts = j``
    (:func:`~.unit_partitions.part_filter_sql` of ``unit``, the unit as grouped);
    ``part_sql(condition)`` is the query of that part's kept cells, reading only the rows
    that meet ``condition``. Each unit falls in exactly one part and keeps there what it
    keeps in one pass (its rows and the salts alone decide), so the sums of the table's
    counts over the parts are the one-pass counts for every ``parts``.

    On a text source the parts run with the joins as written
    (:func:`~.join_order.text_join_order`): every plan here writes the rows on the left of
    each join and the smaller side on the right (the public lists, the values' and groups'
    tables, the units' seeds and kept groups), so DuckDB builds its hash tables on those,
    whatever the text reader reports to the optimizer.
    """
    try:
        table.query(f"CREATE OR REPLACE TEMP TABLE {_KEPT_TABLE} ({columns})")
        with text_join_order(table):  # text: the rows probe the lists, values and seeds
            for j in range(parts):
                sql = part_sql(part_filter_sql(unit, parts, j))
                table.query(f"INSERT INTO {_KEPT_TABLE} {sql}", params,
                            part_progress(progress, j, parts))  # fmt: skip
        yield _KEPT_TABLE
    finally:
        table.connection.execute(f"DROP TABLE IF EXISTS {_KEPT_TABLE}")


#: The columns of the kept cells of one part: ``t`` a candidate position or a value's rank;
#: a row with ``t = -1`` holds in ``n`` the persons of the group ``g`` (the units keeping it).
_CELLS = "g BIGINT, t BIGINT, n BIGINT"
#: The columns of the kept numbers of one part: a row with ``v`` NULL holds in ``n`` the
#: persons of the group ``g``.
_NUMBERS = "g BIGINT, v DOUBLE, n BIGINT"


def _with_persons(ctes: str, final: str, g: int, m: int, r: int) -> str:
    """One part's query of ``(g, t, n)`` from :func:`_kept_cells_sql` with ``persons=True``,
    the persons of each group appended as rows ``(g, -1, persons)`` where the plan counts
    them apart (``m`` or ``r`` above 1; otherwise they are the sum of the group's ``n``)."""
    if m == 1 and r == 1:
        return f"WITH {ctes} {final}"
    return f"""WITH {ctes} SELECT * FROM ({final})
               UNION ALL SELECT CAST(g AS BIGINT), -1, CAST(p AS BIGINT) FROM persons"""


def _summed_cells_sql(kept: str) -> str:
    """CTEs ``kept (g, t, n)`` and ``persons (g, p)``: the parts' rows of ``kept`` (the table
    of :func:`_kept_parts` with :data:`_CELLS`) added up."""
    return f"""kept AS (SELECT g, t, CAST(sum(n) AS BIGINT) AS n FROM {kept} WHERE t >= 0
                        GROUP BY g, t),
               persons AS (SELECT g, CAST(sum(n) AS BIGINT) AS p FROM {kept} WHERE t < 0
                           GROUP BY g)"""


class _Grouped:
    """The public facts of one grouped query, checked (:class:`~dpselect.core.errors.
    DataError` naming the argument): the column's and ``by``'s types, the unit's key column
    (:meth:`~dpselect.data.tables.Table.unit_column`) and its type."""

    def __init__(self, table: Table, column: str, by: str, privacy_unit: str | None) -> None:
        self.col_type = table.require_column(column)
        self.by_type = table.require_column(by, "by")
        self.unit: str | None = None
        self.unit_type = ""
        if privacy_unit is not None:
            table.require_column(privacy_unit, "privacy_unit")
            self.unit, self.unit_type = table.unit_column(privacy_unit)

    @property
    def unit_key(self) -> str:
        """The unit's key column (a query with a privacy unit only)."""
        assert self.unit is not None
        return self.unit


# ----------------------------------------------------------------------------------------
# The three queries
# ----------------------------------------------------------------------------------------


def duckdb_grouped_candidate_scores(
    table: Table,
    column: str,
    candidates: Sequence[Any],
    by: str,
    groups: Sequence[Any],
    privacy_unit: str | None = None,
    max_groups: int = 1,
    max_contributions: int = 1,
    salt: int = 0,
    group_salt: int = 0,
    progress: Progress = None,
    max_rows_per_value: int = 1,
) -> Cells:
    """The nonzero scores of every (group, candidate) pair, sorted by group then candidate.

    In each group the scores are those of :func:`dpselect.data.scores.duckdb_candidate_scores` over
    the group's kept rows (module docstring; ``by`` matched to ``groups`` as ``column`` to
    ``candidates``).

    Parameters
    ----------
    table : Table
        The DuckDB table.
    column, candidates : str, sequence
        The ranked column and the public candidate list.
    by, groups : str, sequence
        The group column and the public group list.
    privacy_unit : str or None
        The unit column; without one every row counts once in each group it matches.
    max_groups, max_contributions, max_rows_per_value : int
        The groups a unit keeps, the candidates it keeps in each, the rows it adds to each
        kept candidate (at most).
    salt, group_salt : int
        The salts of the value rule and of the group rule.
    progress : callable or None
        Polled with the percentage done.

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
    g, m, r, _ = check_grouped_bounds(
        groups, privacy_unit, max_groups, max_contributions, max_rows_per_value
    )
    q = _Grouped(table, column, by, privacy_unit)
    groups = list(groups)
    if q.unit is not None:
        check_bounded_candidates(len(candidates))
    empty = np.zeros(0, dtype=np.int64)
    if len(groups) == 0 or len(candidates) == 0:
        return empty, empty.copy(), empty.copy()
    col_match, cand_match = match_sql(f"data.{_quote(column)}", q.col_type, candidates)
    by_match, group_match = match_sql(f"data.{_quote(by)}", q.by_type, groups)
    with ExitStack() as stack:
        materialize = progress is not None
        source, params = stack.enter_context(candidates_source(table, candidates, materialize))
        gsource, gparams = stack.enter_context(
            candidates_source(table, groups, materialize, "groups")
        )
        params = params | gparams
        prefix = f"""WITH cands AS (SELECT {cand_match} AS v, CAST(i AS UBIGINT) AS i
                                    FROM {source}),
                          grps AS ({_groups_sql(group_match, gsource)})"""
        if q.unit is None:
            sql = f"""{prefix},
                counted AS (SELECT {by_match} AS gv, {col_match} AS v, count(*) AS n
                            FROM data GROUP BY 1, 2)
                SELECT CAST(grps.g AS BIGINT) AS g, CAST(cands.i AS BIGINT) AS t,
                       CAST(sum(counted.n) AS BIGINT) AS n
                FROM counted JOIN grps ON counted.gv = grps.v JOIN cands ON counted.v = cands.v
                GROUP BY 1, 2"""
        else:
            unit, valid = unit_sql(q.unit, q.unit_type)

            def part_sql(part: str) -> str:
                rows = f"""(SELECT {unit} AS u, grps.g AS g, cands.i AS code, cands.i AS t
                           FROM data JOIN grps ON {by_match} = grps.v
                                JOIN cands ON {col_match} = cands.v
                           WHERE {valid} AND {part})"""
                ctes, final = _kept_cells_sql(rows, q.unit_key, q.unit_type, g, m, r, part=part)
                return f"{prefix}, {ctes} {final}"

            salts = {"salt": salt_text(salt), "group_salt": salt_text(group_salt)}
            kept = stack.enter_context(_kept_parts(
                table, _CELLS, unit, grouped_parts(table, g, m, r), part_sql, params | salts,
                progress,
            ))  # fmt: skip
            sql = f"SELECT g, t, CAST(sum(n) AS BIGINT) AS n FROM {kept} GROUP BY g, t"
            params, progress = {}, None
        found = table.query_numpy(f"SELECT g, t, n FROM ({sql}) ORDER BY g, t", params, progress)
    cols = [np.asarray(np.ma.getdata(found[k]), dtype=np.int64) for k in ("g", "t", "n")]
    keep = cols[2] != 0
    return cols[0][keep], cols[1][keep], cols[2][keep]


def _value_ranks_sql(
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
    table: Table,
    column: str,
    by: str,
    groups: Sequence[Any],
    limit: int | None = None,
    privacy_unit: str | None = None,
    max_groups: int = 1,
    max_contributions: int = 1,
    salt: int = 0,
    group_salt: int = 0,
    progress: Progress = None,
    max_rows_per_value: int = 1,
) -> list[list[tuple[Any, int]]]:
    """For each group (list order), its values with their bounded counts, largest first, ties
    by value, at most ``limit`` (``None``: all): :func:`dpselect.data.scores.duckdb_top_values`
    over each group's kept rows (module docstring).

    Parameters
    ----------
    table : Table
        The DuckDB table.
    column : str
        The ranked column (every non-NULL value is a candidate).
    by, groups : str, sequence
        The group column and the public group list.
    limit : int or None
        The most values per group (``None``: every value).
    privacy_unit, max_groups, max_contributions, salt, group_salt, progress, max_rows_per_value
        As in :func:`duckdb_grouped_candidate_scores`.

    Returns
    -------
    list of list of (value, int)
        One list per group, in the groups' order (empty where no kept row falls).

    Privacy
    -------
    As :func:`duckdb_grouped_candidate_scores`: one unit changes at most ``max_groups``
    groups, in each at most ``m`` counts by at most ``r``.
    """
    g, m, r, _ = check_grouped_bounds(
        groups, privacy_unit, max_groups, max_contributions, max_rows_per_value
    )
    if limit is not None and (
        isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 0
    ):
        raise ParameterError(f"limit must be an integer >= 0 or None, got {limit!r}")
    q = _Grouped(table, column, by, privacy_unit)
    groups = list(groups)
    out: list[list[tuple[Any, int]]] = [[] for _ in groups]
    if len(groups) == 0 or limit == 0:
        return out
    col = normalised_sql(f"data.{_quote(column)}", q.col_type)
    by_match, group_match = match_sql(f"data.{_quote(by)}", q.by_type, groups)
    with ExitStack() as stack:
        source, params = stack.enter_context(
            candidates_source(table, groups, progress is not None, "groups")
        )
        grps = f"grps AS ({_groups_sql(group_match, source)})"
        if q.unit is None:
            sql = f"""WITH {grps},
                counted AS (SELECT {by_match} AS gv, {col} AS v, count(*) AS n FROM data
                            WHERE data.{_quote(column)} IS NOT NULL GROUP BY 1, 2),
                found AS (SELECT grps.g AS g, counted.v AS v, sum(counted.n) AS n
                          FROM counted JOIN grps ON counted.gv = grps.v GROUP BY 1, 2)"""
        else:
            unit, valid = unit_sql(q.unit, q.unit_type)
            salts = {"salt": salt_text(salt), "group_salt": salt_text(group_salt)}
            vals = stack.enter_context(_temporary_table(
                table, _VALUES_TABLE, _value_ranks_sql(col, q.col_type, column),
                {"salt": salts["salt"]},
            ))  # fmt: skip

            def part_sql(part: str) -> str:
                rows = f"""(SELECT {unit} AS u, grps.g AS g, vals.w AS code, vals.r AS t
                           FROM data JOIN grps ON {by_match} = grps.v
                                JOIN {vals} AS vals ON {col} = vals.v
                           WHERE {valid} AND {part})"""
                ctes, final = _kept_cells_sql(rows, q.unit_key, q.unit_type, g, m, r, part=part)
                return f"WITH {grps}, {ctes} {final}"

            kept = stack.enter_context(_kept_parts(
                table, _CELLS, unit, grouped_parts(table, g, m, r), part_sql, params | salts,
                progress,
            ))  # fmt: skip
            sql = f"""WITH {_summed_cells_sql(kept)},
                found AS (SELECT kept.g AS g, vals.v AS v, kept.n AS n
                          FROM kept JOIN {vals} AS vals ON kept.t = vals.r)"""
            params, progress = {}, None
        ranked = "row_number() OVER (PARTITION BY g ORDER BY n DESC, v)"
        cut = "" if limit is None else f"WHERE k <= {int(limit)}"
        sql += f"""
            SELECT CAST(g AS BIGINT) AS g, v, CAST(n AS BIGINT) AS n
            FROM (SELECT g, v, n, {ranked} AS k FROM found) {cut}
            ORDER BY g, n DESC, v"""
        for position, value, n in table.query(sql, params, progress):
            out[int(position)].append((value, int(n)))
    return out


def duckdb_grouped_values(
    table: Table,
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
    in no particular order), read as :meth:`~dpselect.data.engines.duckdb.DuckDBEngine.
    column_values` reads them (``TRY_CAST`` to DOUBLE plus ``0.0``; NULL and NaN dropped).

    Parameters
    ----------
    table : Table
        The DuckDB table.
    column : str
        The numeric column.
    by, groups : str, sequence
        The group column and the public group list.
    privacy_unit : str or None
        The unit column; without one every row with a number counts in each group it matches.
    max_groups, max_rows : int
        The groups a unit keeps, then the rows it keeps in each (:func:`dpselect.data.rules.
        kept_rows` per unit and group, keyed by ``salt``).
    salt, group_salt : int
        The salts of the row rule and of the group rule.

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
    g, _, _, rows_cap = check_grouped_bounds(groups, privacy_unit, max_groups, 1, 1, max_rows)
    q = _Grouped(table, column, by, privacy_unit)
    groups = list(groups)
    if len(groups) == 0:
        return []
    by_match, group_match = match_sql(f"data.{_quote(by)}", q.by_type, groups)
    number = f"(TRY_CAST(data.{_quote(column)} AS DOUBLE) + CAST(0.0 AS DOUBLE))"
    with ExitStack() as stack:
        source, params = stack.enter_context(candidates_source(table, groups, False, "groups"))
        grps = f"grps AS ({_groups_sql(group_match, source)})"
        if q.unit is None:
            sql = f"""WITH {grps}
                SELECT CAST(grps.g AS BIGINT) AS g, nums.x AS v, CAST(count(*) AS BIGINT) AS n
                FROM (SELECT {by_match} AS gv, {number} AS x FROM data) AS nums
                     JOIN grps ON nums.gv = grps.v
                WHERE {number_kept_sql("nums.x")} GROUP BY 1, 2"""
        else:
            unit_key, unit_type = q.unit, q.unit_type
            unit, _ = unit_sql(unit_key, unit_type)
            salts = {"salt": salt_text(salt), "group_salt": salt_text(group_salt)}
            kept = stack.enter_context(_kept_parts(
                table, _NUMBERS, unit, grouped_parts(table, g, numbers=True),
                lambda part: _kept_group_rows_sql(grps, by_match, number, unit_key, unit_type,
                                                  g, rows_cap, part=part),
                params | salts, None,
            ))  # fmt: skip
            sql = f"SELECT g, v, CAST(sum(n) AS BIGINT) AS n FROM {kept} GROUP BY g, v"
            params = {}
        found = table.query_numpy(f"SELECT g, v, n FROM ({sql}) ORDER BY g, v", params)
    positions = np.asarray(np.ma.getdata(found["g"]), dtype=np.int64)
    values = np.asarray(np.ma.filled(found["v"], np.nan), dtype=np.float64)
    counts = np.asarray(np.ma.getdata(found["n"]), dtype=np.int64)
    keep = holds_number(values)  # NULL read as NaN
    positions, values, counts = positions[keep], values[keep], counts[keep]
    out = []
    for position in range(len(groups)):
        here = positions == position
        out.append(np.repeat(values[here], counts[here]).astype(np.float64))
    return out


def _kept_group_rows_sql(
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
    code ``w``, rank ``r``; :func:`_found_groups`); a group is keyed by its code and ``g`` is
    its rank (:mod:`dpselect.data.discovered_groups`); the query also returns, as the rows
    ``(g, NULL, p)``, the units keeping each group (:data:`_NUMBERS`)."""
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


# ----------------------------------------------------------------------------------------
# Groups found in the data (private groups): the persons of each group and its scores, in
# the same scan (dpselect.data.discovered_groups)
# ----------------------------------------------------------------------------------------


def _found_groups(table: Table, by_col: str, by_type: str, by: str, group_salt: str) -> Any:
    """The temporary table of the groups found in the data (a context manager yielding its
    name; :func:`_temporary_table`): each distinct non-NULL value ``v`` of ``by`` (as
    ``by_col`` reads it) with its code ``w`` (group salt, tag ``g``) and rank ``r``."""
    sql = _value_ranks_sql(by_col, by_type, by, "g", "$group_salt")
    return _temporary_table(table, _FOUND_GROUPS_TABLE, sql, {"group_salt": group_salt})


def _found_rows_sql(
    q: _Grouped, by: str, gvals: str, joins: str, item: str, part: str = "TRUE"
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
    q: _Grouped, by: str, gvals: str, joins: str, item: str, bounds: tuple[int, int, int],
    before: str = "",
) -> Callable[[str], str]:  # fmt: skip
    """The query of one hash part's kept cells and persons on the groups found in the data
    (:func:`_kept_parts`' ``part_sql``): the part's rows (:func:`_found_rows_sql`, ``joins``
    and ``item`` as there), each unit's kept cells (:func:`_kept_cells_sql`, ``bounds`` =
    ``(g, m, r)``), ``before``: CTEs put ahead of them (ending with ``", "``)."""
    g, m, r = bounds

    def part_sql(part: str) -> str:
        rows = _found_rows_sql(q, by, gvals, joins, item, part)
        ctes, final = _kept_cells_sql(rows, q.unit_key, q.unit_type, g, m, r, "gc", True, part)
        return _with_persons(f"{before}{ctes}", final, g, m, r)

    return part_sql


def _persons_sql(g: int, m: int, r: int) -> str:
    """The persons of a group from the cells ``kept (g, t, n)``: the sum of its ``n`` when each
    unit keeps one value per kept group (``m = r = 1``), else the ``persons`` CTE."""
    if m == 1 and r == 1:
        return "sum(n) OVER (PARTITION BY g)"
    return "(SELECT p FROM persons WHERE persons.g = found.g)"


def duckdb_discovered_value_counts(
    table: Table,
    column: str,
    by: str,
    limit: int | None = None,
    privacy_unit: str | None = None,
    max_groups: int = 1,
    max_contributions: int = 1,
    salt: int = 0,
    group_salt: int = 0,
    progress: Progress = None,
    max_rows_per_value: int = 1,
) -> DiscoveredGroups:
    """Every group of ``by`` found in the data with its persons and its values' bounded
    counts (at most ``limit`` per group), in one scan (:mod:`dpselect.data.discovered_groups`).

    Parameters
    ----------
    table, column, by, limit, privacy_unit, max_groups, max_contributions, salt, group_salt,
    progress, max_rows_per_value
        As in :func:`duckdb_grouped_value_counts`, without the group list.

    Returns
    -------
    DiscoveredGroups
        The groups some unit keeps (engine order), their persons, their value lists.

    Privacy
    -------
    One unit adds 1 to the persons of at most ``max_groups`` groups and changes, in each of
    them, at most ``m`` counts by at most ``r`` (:mod:`dpselect.data.discovered_groups`).
    """
    g, m, r, _ = check_grouped_bounds(
        [], privacy_unit, max_groups, max_contributions, max_rows_per_value
    )
    if limit is not None and (
        isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 0
    ):
        raise ParameterError(f"limit must be an integer >= 0 or None, got {limit!r}")
    q = _Grouped(table, column, by, privacy_unit)
    col = normalised_sql(f"data.{_quote(column)}", q.col_type)
    params: dict[str, Any] = {}
    present = f"data.{_quote(column)} IS NOT NULL"
    if q.unit is None:
        by_col = normalised_sql(f"data.{_quote(by)}", q.by_type)
        sql = f"""WITH found AS (SELECT {by_col} AS g, {col} AS v, count(*) AS n FROM data
                                 WHERE {present} AND data.{_quote(by)} IS NOT NULL
                                 GROUP BY 1, 2)
                  SELECT dense_rank() OVER (ORDER BY g) AS gi, g AS gv, v, n, persons, k
                  FROM (SELECT g, v, n, sum(n) OVER (PARTITION BY g) AS persons,
                               row_number() OVER (PARTITION BY g ORDER BY n DESC, v) AS k
                        FROM found)"""
    cut = "k <= 1" if limit == 0 else ("TRUE" if limit is None else f"k <= {int(limit)}")
    with ExitStack() as stack:
        if q.unit is not None:
            params = {"salt": salt_text(salt), "group_salt": salt_text(group_salt)}
            by_col = normalised_sql(f"data.{_quote(by)}", q.by_type)
            gvals = stack.enter_context(
                _found_groups(table, by_col, q.by_type, by, params["group_salt"])
            )
            vals = stack.enter_context(_temporary_table(
                table, _VALUES_TABLE, _value_ranks_sql(col, q.col_type, column),
                {"salt": params["salt"]},
            ))  # fmt: skip

            part_sql = _found_cells_sql(
                q, by, gvals, f"JOIN {vals} AS vals ON {col} = vals.v",
                "vals.w AS code, vals.r AS t", (g, m, r),
            )  # fmt: skip
            unit, _ = unit_sql(q.unit, q.unit_type)
            kept = stack.enter_context(_kept_parts(
                table, _CELLS, unit, grouped_parts(table, g, m, r), part_sql, params, progress
            ))  # fmt: skip
            params, progress = {}, None
            sql = f"""WITH {_summed_cells_sql(kept)},
                found AS (SELECT kept.g AS g, vals.v AS v, kept.n AS n
                          FROM kept JOIN {vals} AS vals ON kept.t = vals.r)
                SELECT ranked.g AS gi, gvals.v AS gv, ranked.v AS v, n, persons, k
                FROM (SELECT g, v, n, {_persons_sql(g, m, r)} AS persons,
                             row_number() OVER (PARTITION BY g ORDER BY n DESC, v) AS k
                      FROM found) AS ranked JOIN {gvals} AS gvals ON ranked.g = gvals.r"""
        sql = f"SELECT gi, gv, v, n, persons FROM ({sql}) WHERE {cut} ORDER BY gi, n DESC, v"
        found_rows = table.query(sql, params, progress)
    return discovered_from_rows(found_rows, "values", limit != 0)


def duckdb_discovered_candidate_scores(
    table: Table,
    column: str,
    candidates: Sequence[Any],
    by: str,
    privacy_unit: str | None = None,
    max_groups: int = 1,
    max_contributions: int = 1,
    salt: int = 0,
    group_salt: int = 0,
    progress: Progress = None,
    max_rows_per_value: int = 1,
) -> DiscoveredGroups:
    """Every group of ``by`` found among the rows that match a candidate, with its persons and
    its nonzero candidate scores, in one scan (:mod:`dpselect.data.discovered_groups`).

    Parameters
    ----------
    table, column, candidates, by, privacy_unit, max_groups, max_contributions, salt,
    group_salt, progress, max_rows_per_value
        As in :func:`duckdb_grouped_candidate_scores`, without the group list.

    Returns
    -------
    DiscoveredGroups
        The groups some unit keeps (engine order), their persons and the cells ``(group
        index, candidate position, score)``.

    Privacy
    -------
    As :func:`duckdb_discovered_value_counts`.
    """
    g, m, r, _ = check_grouped_bounds(
        [], privacy_unit, max_groups, max_contributions, max_rows_per_value
    )
    q = _Grouped(table, column, by, privacy_unit)
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
            sql = f"""WITH {cands},
                counted AS (SELECT {by_col} AS gv, {col_match} AS v, count(*) AS n FROM data
                            WHERE data.{_quote(by)} IS NOT NULL GROUP BY 1, 2),
                found AS (SELECT gv, CAST(cands.i AS BIGINT) AS t,
                                 CAST(sum(counted.n) AS BIGINT) AS n
                          FROM counted JOIN cands ON counted.v = cands.v GROUP BY 1, 2)
                SELECT dense_rank() OVER (ORDER BY gv) AS gi, gv, t, n,
                       sum(n) OVER (PARTITION BY gv) AS persons
                FROM found"""
        else:
            salts = {"salt": salt_text(salt), "group_salt": salt_text(group_salt)}
            by_col = normalised_sql(f"data.{_quote(by)}", q.by_type)
            gvals = stack.enter_context(
                _found_groups(table, by_col, q.by_type, by, salts["group_salt"])
            )

            part_sql = _found_cells_sql(
                q, by, gvals, f"JOIN cands ON {col_match} = cands.v",
                "cands.i AS code, cands.i AS t", (g, m, r), f"{cands}, ",
            )  # fmt: skip
            unit, _ = unit_sql(q.unit, q.unit_type)
            kept = stack.enter_context(_kept_parts(
                table, _CELLS, unit, grouped_parts(table, g, m, r), part_sql, params | salts,
                progress,
            ))  # fmt: skip
            sql = f"""WITH {_summed_cells_sql(kept)},
                found AS (SELECT g, t, n FROM kept)
                SELECT c.g AS gi, gvals.v AS gv, c.t AS t, c.n AS n, persons
                FROM (SELECT g, t, n, {_persons_sql(g, m, r)} AS persons FROM found) AS c
                     JOIN {gvals} AS gvals ON c.g = gvals.r"""
            params, progress = {}, None
        found = table.query(f"SELECT gi, gv, t, n, persons FROM ({sql}) ORDER BY gi, t",
                            params, progress)  # fmt: skip
    return discovered_from_rows(found, "cells")


def duckdb_discovered_values(
    table: Table,
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
    kept numbers (sorted), in one scan: :func:`duckdb_grouped_values` with the groups found
    in the data (:mod:`dpselect.data.discovered_groups`).

    Parameters
    ----------
    table, column, by, privacy_unit, max_groups, max_rows, salt, group_salt
        As in :func:`duckdb_grouped_values`, without the group list: every non-NULL value of
        ``by`` (among the rows holding a number) is a group, and ``group_salt`` keys the
        unit's choice of groups by the group's value code.

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
    g, _, _, rows_cap = check_grouped_bounds([], privacy_unit, max_groups, 1, 1, max_rows)
    q = _Grouped(table, column, by, privacy_unit)
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
            params = {"salt": salt_text(salt), "group_salt": salt_text(group_salt)}
            gvals = stack.enter_context(
                _found_groups(table, by_col, q.by_type, by, params["group_salt"])
            )
            unit_key, unit_type = q.unit, q.unit_type
            unit, _ = unit_sql(unit_key, unit_type)
            kept = stack.enter_context(_kept_parts(
                table, _NUMBERS, unit, grouped_parts(table, g, numbers=True),
                lambda part: _kept_group_rows_sql(gvals, by_col, number, unit_key, unit_type,
                                                  g, rows_cap, found=True, part=part),
                params, None,
            ))  # fmt: skip
            params = {}
            sql = f"""WITH kept AS (SELECT g, v, CAST(sum(n) AS BIGINT) AS n FROM {kept}
                                    WHERE v IS NOT NULL GROUP BY g, v),
                           persons AS (SELECT g, CAST(sum(n) AS BIGINT) AS p FROM {kept}
                                       WHERE v IS NULL GROUP BY g)
                SELECT kept.g AS gi, gvals.v AS gv, kept.v AS v, kept.n AS n, persons.p AS p
                FROM kept JOIN persons ON kept.g = persons.g
                     JOIN {gvals} AS gvals ON kept.g = gvals.r"""
        found = table.query(f"SELECT gi, gv, v, n, p FROM ({sql}) ORDER BY gi, v", params)
    return discovered_from_rows(found, "numbers")
