"""The SQL pieces and the memory parts the grouped DuckDB plans share
(:mod:`dpselect.data.grouped_scores`, :mod:`dpselect.data.discovered_scores`).

Each unit's kept groups and cells (:func:`kept_cells_sql`: the group rule, then the ungrouped
rule in each kept group), the sorted lists of the value mode, the temporary tables a plan
writes, and the hash parts of the units for data larger than memory (:func:`grouped_parts`,
:func:`kept_parts`; docs/contribution_bounding.md, "Data larger than memory"). The plans and
their privacy argument: :mod:`dpselect.data.grouped_scores`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .engine import Progress
from .join_order import text_join_order
from .rules import (
    M32,
)
from .scores import (
    bounding_key_sql,
    unit_kept_sql,
    unit_seed_sql,
    unit_sql,
)
from .unit_partitions import (
    memory_budget,
    part_count,
    part_filter_sql,
    part_progress,
    source_rows,
)

if TYPE_CHECKING:
    from .tables import Table

__all__ = [
    "CELLS",
    "FOUND_GROUPS_TABLE",
    "GROUPED_CELLS_BYTES_PER_ROW",
    "GROUPED_LISTS_BYTES_PER_ROW",
    "GROUPED_MIN_BYTES_PER_ROW",
    "GROUPED_NUMBERS_BYTES_PER_ROW",
    "GROUPED_TEXT_ROW_WEIGHT",
    "NUMBERS",
    "VALUES_TABLE",
    "Grouped",
    "grouped_parts",
    "groups_sql",
    "kept_cells_sql",
    "kept_parts",
    "lambda_syntax",
    "summed_cells_sql",
    "temporary_table",
    "with_persons",
]


Cells = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]


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


def kept_cells_sql(
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

    ``g = m = r = 1``: one aggregate per unit (:func:`_one_cell_per_unit_sql`). Otherwise the
    rows are grouped by ``(u, g, code, t)`` with their count first.

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
        return _one_cell_per_unit_sql(rows, seeds, gc)
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


def _one_cell_per_unit_sql(rows: str, seeds: str, gc: str) -> tuple[str, str]:
    """:func:`kept_cells_sql` for ``g = m = r = 1``: one aggregate per unit, the minimum of
    ``p = gkey 2^96 + g 2^64 + key 2^32 + t`` (UHUGEINT) over its rows: its smallest
    ``(gkey, g)`` is its kept group (``gkey`` is a bijection of ``g`` for a fixed unit), and
    among the rows of that group its smallest ``(key, t)`` is its kept value, which is the
    ungrouped rule on that group's rows."""
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


def lambda_syntax() -> bool:
    """Whether the installed DuckDB reads ``lambda x, i: ...`` (1.3 and later; 2.0 refuses
    the older arrow form by default): a fact of the installation, not of the data."""
    import duckdb

    parts = [int(p) if p.isdigit() else 0 for p in duckdb.__version__.split(".")[:2]]
    return tuple(parts) >= (1, 3)


def _one_value_per_group_sql(rows: str, seeds: str, g: int, gc: str = "g") -> tuple[str, str]:
    """:func:`kept_cells_sql` for ``m = r = 1`` and any ``max_groups``, without a join back.

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


def groups_sql(group_match: str, source: str) -> str:
    return f"SELECT {group_match} AS v, CAST(i AS UBIGINT) AS g FROM {source}"


#: The temporary tables of the distinct values (``vals``) and of the groups found in the
#: data (``gvals``) while a query runs.
VALUES_TABLE = "dpselect_grouped_values"
FOUND_GROUPS_TABLE = "dpselect_found_groups"


@contextmanager
def temporary_table(table: Table, name: str, sql: str, params: dict[str, Any]) -> Iterator[str]:
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
#: written there (:func:`~.join_order.text_join_order`, in :func:`kept_parts`), and one
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
def kept_parts(
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
CELLS = "g BIGINT, t BIGINT, n BIGINT"
#: The columns of the kept numbers of one part: a row with ``v`` NULL holds in ``n`` the
#: persons of the group ``g``.
NUMBERS = "g BIGINT, v DOUBLE, n BIGINT"


def with_persons(ctes: str, final: str, g: int, m: int, r: int) -> str:
    """One part's query of ``(g, t, n)`` from :func:`kept_cells_sql` with ``persons=True``,
    the persons of each group appended as rows ``(g, -1, persons)`` where the plan counts
    them apart (``m`` or ``r`` above 1; otherwise they are the sum of the group's ``n``)."""
    if m == 1 and r == 1:
        return f"WITH {ctes} {final}"
    return f"""WITH {ctes} SELECT * FROM ({final})
               UNION ALL SELECT CAST(g AS BIGINT), -1, CAST(p AS BIGINT) FROM persons"""


def summed_cells_sql(kept: str) -> str:
    """CTEs ``kept (g, t, n)`` and ``persons (g, p)``: the parts' rows of ``kept`` (the table
    of :func:`kept_parts` with :data:`CELLS`) added up."""
    return f"""kept AS (SELECT g, t, CAST(sum(n) AS BIGINT) AS n FROM {kept} WHERE t >= 0
                        GROUP BY g, t),
               persons AS (SELECT g, CAST(sum(n) AS BIGINT) AS p FROM {kept} WHERE t < 0
                           GROUP BY g)"""


class Grouped:
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
