"""Score vectors over a public candidate list, computed by DuckDB in one scan of the data.

Two scorings, each with a proven sensitivity used by the mechanisms' maps:

- **Rows are people** (no privacy unit): the score of a candidate is the number of rows whose
  ``column`` equals it. Adding or removing one row changes one score by 1: L-infinity and
  L1 sensitivity 1, monotonic (range sensitivity 1).
- **A privacy unit column** (``privacy_unit="user_id"``): each user's distinct candidate values
  are ranked by a keyed hash of (salt, user, value) and only the first ``max_contributions``
  are kept; the score of a candidate is the number of users who kept it. Which values a user
  keeps depends only on that user's own rows and the per-query salt, so adding or removing one
  user (with any number of rows) changes at most ``max_contributions`` scores, each by 1, all
  in the same direction: L-infinity sensitivity 1, monotonic, L1 sensitivity
  ``max_contributions``. The exact rule (the same in every engine, so that DuckDB and Spark
  give bit-identical scores) is :func:`bounding_key` and docs/contribution_bounding.md.
- **Rows per value** (``max_rows_per_value=r``, with a privacy unit): each user keeps the
  same ``max_contributions`` values as above and adds ``min(its rows with the value, r)`` to
  each kept value's score. The weights read only the user's own rows, so one user added or
  removed moves at most ``m`` scores, each by at most ``r``, all in the same direction:
  L-infinity ``r``, L1 ``m r``, L0 ``m``, L2 ``r sqrt(m)``, monotonic. ``r = 1`` is the
  scoring above, bit for bit.

Privacy units are grouped **by value**, never by their text: ``0.0`` and ``-0.0`` are one unit
(floating units are normalised by adding ``0.0``), and a NULL or NaN unit is missing (its rows
count for nobody). The key is injective in the raw value (:meth:`Table.unit_column`,
:mod:`dpselect.data.unit_keys`): text by its raw bytes, mixed Python objects by type and
value. Rows whose ``column`` is NULL, and values outside the candidate list, are
ignored; candidates absent from the data score 0. Empty data is valid: every score is 0.

Candidates are matched to values by :mod:`dpselect.data.matching` (public facts only).

**The candidate scores' plans** (:func:`duckdb_candidate_scores`). ``max_rows_per_value = r >
1`` (with a privacy unit only): each user keeps the same values and adds ``min(its rows with the
value, r)`` to each (the lists plan for every ``m``, :func:`kept_counts`).

One scan of the data. Without a privacy unit the data is grouped by value first and the
groups are then joined with the candidates (as fast as the plain ``GROUP BY``); with one,
the rows are joined with the candidates first (so that a user's contributions are only
spent on candidates), then grouped by user (:func:`_bounded_scores_sql`).

With a unit, on a text source (CSV, TSV, JSON lines) or a text unit of Parquet files (its
raw bytes read through pyarrow) the joins run as written, the rows probing the candidates
and the units' seeds (:func:`~.unit_keys.unit_join_order`); a line of a text source is
sized as :data:`TOP_VALUES_TEXT_ROW_WEIGHT` rows for the hash parts: how the query is
planned, never what it returns. The distinct values of the unknown-domain plan are read
without the unit (:func:`~.unit_keys.value_rows`: DuckDB's own Parquet reader).

This is the SQL plan. For Parquet text the DuckDB engine may choose the dictionary plan
first (:meth:`dpselect.data.engines.duckdb.DuckDBEngine.scores` with
:mod:`dpselect.data.dictionary_scores`): the same rule, so the same scores.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .matching import candidates_source, match_sql
from .rules import (
    BOUNDING_SEPARATOR,
    bounding_key,
    check_rows_per_value,
    fmix32,
    keep_smallest,
    keep_smallest_counted,
    salt_text,
    unit_seed,
    value_code,
)
from .rules import (
    FMIX32_STEPS as _FMIX32,
)
from .rules import (
    M32 as _M32,
)
from .rules import hashed_text_sql as _hashed_text_sql
from .rules import md5_bits_sql as _md5_bits_sql
from .text_lines import quote_identifier as _quote
from .unit_keys import RAW_KEY_TYPE, unit_join_order, value_rows
from .unit_partitions import (
    memory_budget,
    part_count,
    part_filter_sql,
    part_progress,
    source_rows,
)
from .values import (
    canonical_text,
    canonical_text_sql,
    normalised_sql,
    number_kept_sql,
    numeric_candidate_type,
)
from .values import is_floating as _is_floating

if TYPE_CHECKING:
    from .tables import Table

__all__ = [
    "BOUNDING_SEPARATOR",
    "bounding_key",
    "bounding_key_sql",
    "canonical_text",
    "canonical_text_sql",
    "check_rows_per_value",
    "duckdb_candidate_scores",
    "duckdb_top_values",
    "fmix32",
    "keep_smallest",
    "kept_counts",
    "keyed_sql",
    "normalised_sql",
    "numeric_candidate_type",
    "salt_text",
    "unit_kept_sql",
    "unit_seed",
    "unit_seed_sql",
    "unit_sql",
    "value_code",
]

Progress = Callable[[float], None] | None


def _fmix32_bodies(x: str) -> list[str]:
    """``fmix32`` as successive DuckDB SQL expressions of the UBIGINT column ``x`` (each applied
    to the last). ``x < 2^32`` and every multiplier is below 2^32, so each product is below
    2^64: exact in UBIGINT, and the same numbers as the Spark engine's signed arithmetic.
    Each shift-xor is merged with the multiplication after it (``x`` appears twice in one
    expression, never more), so the five steps take three projections."""
    bodies = []
    pending = None
    for op, k in _FMIX32:
        if op == "xs":
            pending = f"xor({x}, {x} >> {k})"
        else:
            bodies.append(f"({pending} * CAST({k} AS UBIGINT)) & CAST({_M32} AS UBIGINT)")
            pending = None
    if pending is not None:
        bodies.append(pending)
    return bodies


def _chain(source: str, bodies: list[str], x: str = "x") -> str:
    """``source`` with the column ``x`` replaced by each body in turn (one projection each:
    nesting them would repeat ``x`` 2^10 times in one expression)."""
    for body in bodies:
        source = f"(SELECT * REPLACE ({body} AS {x}) FROM {source})"
    return source


def bounding_key_sql(source: str, x: str = "x", b: str = "b") -> str:
    """``source`` with its UBIGINT column ``x`` (a code xor the seed's lower half ``a``)
    replaced by :func:`bounding_key` (``b``: the seed's upper half), one projection per step
    of the two ``fmix32`` rounds (the chain :func:`keyed_sql` ends with). Shared with
    :mod:`dpselect.data.grouped_scores`, which keys groups and values side by side.

    Parameters
    ----------
    source : str
        SQL of a relation with the columns ``x`` and ``b``.
    x, b : str
        The names of those columns.

    Returns
    -------
    str
        SQL of the relation, ``x`` holding the 32-bit key.
    """
    return _chain(source, [*_fmix32_bodies(x), f"xor({x}, {b})", *_fmix32_bodies(x)], x)


def keyed_sql(pairs: str, code: str, unit_type: str, salt_sql: str = "$salt") -> str:
    """``pairs`` (columns ``u`` and the code column) with ``x`` = :func:`bounding_key` and
    ``b`` = the seed's upper half, every column kept. The seeds come from the distinct units
    of ``pairs``, one md5 each. Shared with :func:`dpselect.data.partitions.duckdb_person_values`.

    Parameters
    ----------
    pairs : str
        SQL of a relation with the unit column ``u`` and the column ``code``.
    code : str
        The name of the 32-bit code column (a value code or a candidate position).
    unit_type : str
        The unit's type for the seed SQL (:func:`unit_seed_sql`).
    salt_sql : str, default ``"$salt"``
        SQL of the salt text the seeds are keyed by (a grouped release's group rule has
        its own salt, ``$group_salt``).

    Returns
    -------
    str
        SQL of a relation: ``pairs``' columns with ``x`` and ``b``.
    """
    seed = unit_seed_sql(unit_type, salt_sql)
    seeds = f"""(SELECT u, h & {_M32} AS a, h >> 32 AS b
                 FROM (SELECT u, {seed} AS h FROM (SELECT DISTINCT u FROM {pairs})
                       WHERE {unit_kept_sql(unit_type)}))"""
    start = f"""(SELECT p.*, xor(p.{code}, s.a) AS x, s.b AS b
                 FROM {pairs} AS p JOIN {seeds} AS s ON p.u = s.u)"""
    return _chain(start, [*_fmix32_bodies("x"), "xor(x, b)", *_fmix32_bodies("x")])


def unit_kept_sql(unit_type: str) -> str:
    """The condition on a distinct unit ``u`` (after grouping) that it is a unit: a floating
    unit that is NaN is none (:func:`dpselect.data.values.number_kept_sql`, the rule of
    :func:`unit_sql` too). Shared with :mod:`dpselect.data.dictionary_scores`.

    Parameters
    ----------
    unit_type : str
        The unit's DuckDB type.

    Returns
    -------
    str
        A SQL condition on ``u`` (``TRUE`` for a type without NaN).
    """
    if not _is_floating(unit_type):
        return "TRUE"
    return number_kept_sql("u")


def _seeds_sql(privacy_unit: str, unit_type: str, part: str = "TRUE") -> str:
    """``(u, a, b)`` for every distinct unit of the data: one md5 per unit, not per row.

    Read from the unit column alone (a narrow scan); a unit without candidate rows gets a
    seed that is never used. A row whose unit has no seed is dropped by the inner join with
    the seeds, so :func:`unit_kept_sql` here removes NaN units from every plan using it.
    ``part``: a condition on the rows (the units of one hash part,
    :func:`dpselect.data.unit_partitions.part_filter_sql`)."""
    unit, valid = unit_sql(privacy_unit, unit_type)
    seed = unit_seed_sql(unit_type)
    return f"""(SELECT u, h & {_M32} AS a, h >> 32 AS b
                FROM (SELECT u, {seed} AS h FROM (SELECT DISTINCT {unit} AS u FROM data
                                                  WHERE {valid} AND {part})
                      WHERE {unit_kept_sql(unit_type)}))"""


def _packed_sql(pairs: str, code: str, tie: str) -> str:
    """``pairs`` (columns ``u``, ``code`` and ``tie``, UBIGINT below 2^32) as ``(u, p)`` with
    ``p = key * 2^32 + tie``, ``key`` = :func:`bounding_key` of (u, code): ordering ``p`` is
    ordering ``(key, tie)``, and ``p mod 2^32`` gives the tie-break back. The seeds come
    from the CTE ``seeds`` (:func:`_seeds_sql`), joined on the unit.
    """
    start = f"""(SELECT p.u AS u, p.{tie} AS t, xor(p.{code}, s.a) AS x, s.b AS b
                 FROM {pairs} AS p JOIN seeds AS s ON p.u = s.u)"""
    rounds = _fmix32_bodies("x")  # the last one (a shift-xor) is merged with what follows
    keyed = _chain(start, [*rounds[:-1], f"xor({rounds[-1]}, b)", *rounds[:-1]])
    return f"(SELECT u, ({rounds[-1]} << 32) | t AS p FROM {keyed})"


def _kept_sql(pairs: str, code: str, tie: str, m: int) -> str:
    """The tie-break value of every kept (user, value): per user, the ``m`` smallest ``p``
    (:func:`_packed_sql`) among the user's distinct pairs, as the column ``t``.

    ``m = 1``: ``min(p)`` over the rows, so duplicate rows need no ``DISTINCT`` (one integer
    aggregate per user). ``m > 1``: the pairs are made distinct first, then DuckDB's bounded
    top-n aggregate ``min(p, m)`` keeps the ``m`` smallest.
    """
    if m == 1:
        return f"(SELECT min(p) & {_M32} AS t FROM {_packed_sql(pairs, code, tie)} GROUP BY u)"
    distinct = f"(SELECT DISTINCT u, {code}, {tie} FROM {pairs})"
    chosen = f"(SELECT unnest(min(p, {m})) AS p FROM {_packed_sql(distinct, code, tie)} GROUP BY u)"
    return f"(SELECT p & {_M32} AS t FROM {chosen})"


def _unit_text_sql(unit_type: str) -> str:
    return canonical_text_sql("u", "DOUBLE" if _is_floating(unit_type) else unit_type)


def unit_seed_sql(unit_type: str, salt_sql: str = "$salt") -> str:
    """SQL of the seed of the unit ``u`` (:func:`unit_seed`): md5 of (salt, ``u``, the unit's
    canonical text), or of its bytes for a raw key (:data:`~.unit_keys.RAW_KEY_TYPE`: text
    read byte for byte, so valid text has the seed of its text). Shared with
    :mod:`dpselect.data.dictionary_scores`.

    Parameters
    ----------
    unit_type : str
        The unit's DuckDB type, or :data:`~.unit_keys.RAW_KEY_TYPE`.
    salt_sql : str, default ``"$salt"``
        SQL of the salt text (a query parameter).

    Returns
    -------
    str
        A UBIGINT SQL expression of ``u`` and the salt (by default the parameter ``$salt``).
    """
    if unit_type == RAW_KEY_TYPE:
        prefix = _hashed_text_sql("u", "''", salt_sql)
        return f"CAST(md5_number(encode({prefix}) || u) & {(1 << 64) - 1} AS UBIGINT)"
    return _md5_bits_sql(_hashed_text_sql("u", _unit_text_sql(unit_type), salt_sql), 8)


# ----------------------------------------------------------------------------------------
# The score queries
# ----------------------------------------------------------------------------------------


def duckdb_candidate_scores(
    table: Table,
    column: str,
    candidates: Sequence[Any],
    privacy_unit: str | None = None,
    max_contributions: int = 1,
    salt: int = 0,
    progress: Progress = None,
    max_rows_per_value: int = 1,
) -> npt.NDArray[np.int64]:
    """The score of every candidate, in the candidate list's order (module docstring, the
    candidate scores' plans).

    Parameters
    ----------
    table : Table
        The opened DuckDB table (its view ``data``).
    column : str
        The ranked column.
    candidates : sequence
        The public candidate list (:func:`~dpselect.data.candidates.load_candidates`).
    privacy_unit : str or None, default None
        The privacy unit column; ``None``: each row is its own unit (row counts).
    max_contributions : int, default 1
        ``m``: with a privacy unit, the most distinct candidates each unit keeps.
    salt : int, default 0
        The per-query salt of the bounding rule, drawn independently of the data (used only
        with a privacy unit).
    progress : callable or None, default None
        Called with the percentage of the scan done while the query runs.
    max_rows_per_value : int, default 1
        ``r``: with a privacy unit, each kept candidate adds the unit's rows with it, at most
        ``r``; it must be 1 without a unit.

    Returns
    -------
    numpy.ndarray of int64
        The score of every candidate, in the list's order.

    Raises
    ------
    DataError
        ``column`` or ``privacy_unit`` is not a usable column, or the unit has no injective
        key (:meth:`~dpselect.data.tables.Table.unit_column`).
    ParameterError
        A bad ``max_rows_per_value`` (:func:`check_rows_per_value`).
    """
    col_type = table.require_column(column)
    r = check_rows_per_value(max_rows_per_value, privacy_unit)
    unit_type = None
    if privacy_unit is not None:
        unit_type = table.require_column(privacy_unit, "privacy_unit")
        privacy_unit, unit_type = table.unit_column(privacy_unit)  # the injective key
    col_match, cand_match = match_sql(f"data.{_quote(column)}", col_type, candidates)
    # with a unit, on a text source or a raw key of Parquet files: the joins as written (the
    # candidates and the units' seeds built on the right; unit_keys.unit_join_order)
    order = unit_join_order(table, unit_type) if unit_type is not None else nullcontext()
    with order, candidates_source(table, candidates, progress is not None) as (source, params):
        cands = f"SELECT {cand_match} AS v, i FROM {source}"
        if privacy_unit is None or unit_type is None:
            sql = _row_counts_sql(col_match, cands)
        elif int(max_contributions) > 1 or r > 1:
            params = params | {"salt": salt_text(salt)}
            lists = _UnitLists(col_match, cands, privacy_unit, unit_type)
            return _listed_scores(table, lists, params, int(max_contributions),
                                  len(candidates), progress, r)  # fmt: skip
        else:
            sql = _bounded_scores_sql(col_match, cands, privacy_unit, unit_type, 1)
            params = params | {"salt": salt_text(salt)}
        found = table.query_numpy(sql, params, progress)
    scores = np.zeros(len(candidates), dtype=np.int64)
    # One row per matched candidate position (the groups are distinct values, and two
    # candidates that cast to the same value are two positions, each with the full count).
    scores[np.asarray(found["i"], dtype=np.int64)] = np.asarray(found["n"], dtype=np.int64)
    return scores


def _row_counts_sql(col_match: str, cands: str) -> str:
    """``(i, n)`` without a privacy unit: the data grouped by value first, the groups then
    joined with the candidates (each row counts once)."""
    return f"""
                WITH cands AS ({cands}),
                     counted AS (SELECT {col_match} AS v, count(*) AS n FROM data GROUP BY 1)
                SELECT cands.i AS i, counted.n AS n FROM counted JOIN cands ON counted.v = cands.v
            """


@dataclass(frozen=True)
class _UnitLists:
    """What the lists plan of the candidate scores reads: the matched column and candidates
    (:func:`~.matching.match_sql`), the unit column (its injective key) and its type."""

    col_match: str
    cands: str
    privacy_unit: str
    unit_type: str


def _listed_scores(
    table: Table,
    lists: _UnitLists,
    params: dict[str, Any],
    m: int,
    size: int,
    progress: Progress,
    r: int,
) -> npt.NDArray[np.int64]:
    """The candidate scores by the lists plan (``m > 1`` or ``r > 1``), summed over hash parts
    of the units (:mod:`dpselect.data.unit_partitions`), each part's users' lists kept by
    :func:`kept_counts`."""
    unit, _ = unit_sql(lists.privacy_unit, lists.unit_type)
    rows = source_rows(table.connection, table.parquet_files, table.source_files,
                       text_weight=TOP_VALUES_TEXT_ROW_WEIGHT)  # fmt: skip
    parts = part_count(rows, TOP_VALUES_BYTES_PER_ROW, memory_budget(table.connection))
    counts = np.zeros(size, dtype=np.int64)
    for j in range(parts):  # hash parts of the units (unit_partitions)
        sql = _unit_lists_sql(lists.col_match, lists.cands, lists.privacy_unit,
                              lists.unit_type, part_filter_sql(unit, parts, j))  # fmt: skip
        counts += kept_counts(table, sql, params, m, size, None,
                              part_progress(progress, j, parts), r)  # fmt: skip
    return counts


def unit_sql(privacy_unit: str, unit_type: str) -> tuple[str, str]:
    """(the unit as grouped, the condition for a row to have a unit): by value, not NULL/NaN.

    Shared with :mod:`dpselect.data.partitions` and :mod:`dpselect.data.dictionary_scores`,
    so that every plan groups units the same way.

    Parameters
    ----------
    privacy_unit : str
        The unit column of the view ``data`` (or of the relation aliased ``data``).
    unit_type : str
        Its DuckDB type (or :data:`~.unit_keys.RAW_KEY_TYPE`).

    Returns
    -------
    tuple of str
        SQL of the normalised unit and of the condition that the row has one.
    """
    unit = f"data.{_quote(privacy_unit)}"
    valid = number_kept_sql(unit) if _is_floating(unit_type) else f"{unit} IS NOT NULL"
    return normalised_sql(unit, unit_type), valid


def _bounded_scores_sql(
    col_match: str, cands: str, privacy_unit: str, unit_type: str, m: int
) -> str:
    """Scores with contributions bounded to ``m`` per user (:func:`bounding_key`'s rule).

    Rows are joined with the candidates first (contributions are only spent on candidates);
    each user's seed is one md5 per distinct user (:func:`_seeds_sql`), joined back on the
    unit; each row's key is 32-bit arithmetic, packed with the position as one integer, and one
    integer aggregate per user keeps the smallest (:func:`_kept_sql`). The key is a bijection
    of the position for a fixed user, so there are no ties.
    """
    unit, valid = unit_sql(privacy_unit, unit_type)
    rows = f"""(SELECT {unit} AS u, CAST(cands.i AS UBIGINT) AS i
               FROM data JOIN cands ON {col_match} = cands.v WHERE {valid})"""
    return f"""
        WITH cands AS ({cands}), seeds AS {_seeds_sql(privacy_unit, unit_type)}
        SELECT CAST(t AS BIGINT) AS i, count(*) AS n FROM {_kept_sql(rows, "i", "i", m)}
        GROUP BY t
    """


def _unit_lists_sql(
    col_match: str, cands: str, privacy_unit: str, unit_type: str, part: str = "TRUE"
) -> str:
    """One row per user: its seed ``h`` (one md5 per user, on the grouped rows) and the list
    ``l`` of the candidate positions of its rows (duplicates included), for :func:`keep_smallest`
    (``part``: a condition on the rows, the units of one hash part).
    """
    unit, valid = unit_sql(privacy_unit, unit_type)
    seed = unit_seed_sql(unit_type)
    return f"""
        WITH cands AS ({cands})
        SELECT {seed} AS h, l
        FROM (SELECT {unit} AS u, list(CAST(cands.i AS UINTEGER)) AS l
              FROM data JOIN cands ON {col_match} = cands.v WHERE {valid} AND {part}
              GROUP BY 1)
        WHERE {unit_kept_sql(unit_type)}
    """


def kept_counts(
    table: Table,
    sql: str,
    params: dict[str, Any],
    m: int,
    size: int,
    codes: npt.NDArray[np.uint32] | None,
    progress: Progress,
    max_rows_per_value: int = 1,
) -> npt.NDArray[np.int64]:
    """How many users keep each tie-break ``0 .. size - 1``: ``sql`` gives per user its seed
    ``h`` and the list ``l`` of its tie-breaks; the codes are the ties themselves (candidate
    positions) or ``codes[tie]`` (value ranks). Streamed in Arrow batches of users; shared
    with :mod:`dpselect.data.dictionary_scores`.

    Parameters
    ----------
    table : Table
        The table that runs ``sql`` (:meth:`~dpselect.data.tables.Table.query_batches`).
    sql, params : str, dict
        The query of ``(h, l)`` per user and its parameters.
    m : int
        How many tie-breaks each user keeps (:func:`keep_smallest`).
    size : int
        The number of tie-breaks (the length of the result).
    codes : numpy.ndarray of uint32 or None
        The code of each tie-break, or ``None`` when the tie-breaks are the codes.
    progress : callable or None
        Polled with the percentage done while the query runs.
    max_rows_per_value : int, default 1
        ``r``: each kept (user, tie-break) adds ``min(its copies in the list, r)`` (its
        rows, capped; :func:`keep_smallest_counted`) instead of 1.

    Returns
    -------
    numpy.ndarray of int64
        The number of users keeping each tie-break (``r > 1``: their capped rows).
    """
    counts = np.zeros(size, dtype=np.int64)
    r = int(max_rows_per_value)

    def consume(batch: Any) -> None:
        lists = batch.column(1)
        ties = lists.flatten().to_numpy()
        args = (
            batch.column(0).to_numpy(),
            lists.value_lengths().to_numpy(),
            ties if codes is None else codes[ties],
            ties,
            m,
        )
        if r == 1:
            counts[:] += np.bincount(keep_smallest(*args), minlength=size)
            return
        kept, rows = keep_smallest_counted(*args, r)
        counts[:] += np.bincount(kept, weights=rows, minlength=size).astype(np.int64)

    table.query_batches(sql, params, consume, progress)
    return counts


def duckdb_top_values(
    table: Table,
    column: str,
    limit: int,
    privacy_unit: str | None = None,
    max_contributions: int = 1,
    salt: int = 0,
    progress: Progress = None,
    max_rows_per_value: int = 1,
) -> list[tuple[Any, int]]:
    """The ``limit`` values with the largest scores, ties by value: input to the limited-domain
    mechanism, which is built for candidate sets taken from the data (Durfee and Rogers 2019).

    ``max_rows_per_value = r > 1`` (with a privacy unit): a kept value adds the user's rows
    with it, at most ``r`` (the lists plan for every ``m``).

    The scores are those of :func:`candidate_scores` with every non-NULL value a candidate
    (floating values grouped by value, ``-0.0`` as ``0.0``): a user changes at most
    ``max_contributions`` of them, each by 1 (the l0 sensitivity). With a privacy unit each
    distinct value gets a code (:func:`value_code`, one md5 per distinct value) and a user
    keeps the values with the smallest (:func:`bounding_key`, value).

    Parameters
    ----------
    table : Table
        The opened DuckDB table (its view ``data``).
    column : str
        The ranked column (every non-NULL value is a candidate).
    limit : int
        The most values returned.
    privacy_unit : str or None, default None
        The privacy unit column; ``None``: each row is its own unit (row counts).
    max_contributions : int, default 1
        ``m``: with a privacy unit, the most distinct values each unit keeps.
    salt : int, default 0
        The per-query salt of the bounding rule, drawn independently of the data (used only
        with a privacy unit).
    progress : callable or None, default None
        Called with the percentage of the scan done while the query runs.
    max_rows_per_value : int, default 1
        ``r``: with a privacy unit, each kept value adds the unit's rows with it, at most
        ``r``; it must be 1 without a unit.

    Returns
    -------
    list of (object, int)
        Up to ``limit`` pairs ``(value, bounded count)``, largest count first, ties by value;
        only values with a positive count (floating values normalised, ``-0.0`` as ``0.0``).

    Raises
    ------
    DataError
        ``column`` or ``privacy_unit`` is not a usable column, or the unit has no injective
        key.
    ParameterError
        A bad ``max_rows_per_value`` (:func:`check_rows_per_value`).
    """
    col_type = table.require_column(column)
    r = check_rows_per_value(max_rows_per_value, privacy_unit)
    col = normalised_sql(f"data.{_quote(column)}", col_type)
    params: dict[str, Any] = {}
    if privacy_unit is not None:
        privacy_unit, unit_type = table.unit_column(privacy_unit)
        vals = _ranked_values_sql(column, col_type, col, value_rows(table))
        params["salt"] = salt_text(salt)
        return _top_values_by_rank(
            table, vals, col, privacy_unit, unit_type, int(max_contributions), limit, params,
            progress, r,
        )  # fmt: skip
    counted = f"""SELECT {col} AS v, count(*) AS n FROM data
                  WHERE data.{_quote(column)} IS NOT NULL GROUP BY 1"""
    sql = f"SELECT v, n FROM ({counted}) ORDER BY n DESC, v LIMIT {int(limit)}"
    return [(v, int(n)) for v, n in table.query(sql, params, progress)]


def _ranked_values_sql(column: str, col_type: str, col: str, rows: str = "data") -> str:
    """The distinct non-NULL values ``v`` of ``column`` (normalised: ``col``) with their code
    ``w`` (:func:`value_code`) and their rank ``r`` in the engine's order, read from the view
    ``rows`` (aliased ``data``: :func:`~.unit_keys.value_rows`, no unit key needed).

    ``r`` is the rule's tie-break between two values whose codes collide; it is packed below
    the key, so it must stay below 2^32 - 1 (:func:`keep_smallest` marks removed entries with
    2^64 - 1)."""
    v_text = canonical_text_sql("v", "DOUBLE" if _is_floating(col_type) else col_type)
    code = _md5_bits_sql(_hashed_text_sql("v", v_text), 4)
    rank = "(row_number() OVER (ORDER BY v) - 1)"
    return f"""SELECT v, w, CAST(CASE WHEN r < {_M32} THEN r
                                     ELSE error('more than 2^32 distinct values') END
                                AS UBIGINT) AS r
               FROM (SELECT v, {code} AS w, {rank} AS r
                     FROM (SELECT DISTINCT {col} AS v FROM {rows} AS data
                           WHERE data.{_quote(column)} IS NOT NULL))"""


_VALUES_TABLE = "dpselect_values"


#: Bytes per row of the data that the unknown-domain plans hold for one hash part (DuckDB's
#: hash tables of the part's units, or its lists): measured (docs/performance.md), rounded up.
TOP_VALUES_BYTES_PER_ROW = 32
#: The rows a line of a text source (CSV, TSV, JSON lines) counts for when these plans size
#: their parts (:func:`~.unit_partitions.source_rows`): their joins run as written there
#: (:func:`~.join_order.text_join_order`), and one line then cost, in one part at 10^7
#: lines, 47.8 bytes (``top_values``, ``m = 1``), 55.4 (``m = 3``) and 59.5 (the lists
#: plan of the candidate scores, ``m = 3``, ``max_rows_per_value = 2``; 99.0 to 112.2 with
#: the optimizer's join order), at 5 * 10^7 lines 35.5 and 36.9 (``m = 3``): the largest
#: over :data:`TOP_VALUES_BYTES_PER_ROW`, rounded up, ``ceil(59.5 / 32)``
#: (docs/performance.md, "Data larger than memory").
TOP_VALUES_TEXT_ROW_WEIGHT = 2


def _top_values_by_rank(
    table: Table,
    vals: str,
    col: str,
    privacy_unit: str,
    unit_type: str,
    m: int,
    limit: int,
    params: dict[str, Any],
    progress: Progress,
    rows_cap: int = 1,
) -> list[tuple[Any, int]]:
    """:func:`top_values` with a privacy unit: the distinct values (code ``w``, rank ``r``)
    go to a temporary table, each value's count is summed over hash parts of the units
    (:mod:`dpselect.data.unit_partitions`: each part bounded from its own units' rows, the
    same counts for every number of parts), and the ``limit`` best ranks are turned back into
    values (ties by rank: the engine's order of the values).

    Per part (:func:`_top_values_part`), ``m = 1`` and ``rows_cap = 1``: one SQL query,
    ``min(p)`` per unit (:func:`_kept_sql`); otherwise DuckDB lists each unit's value ranks
    and :func:`keep_smallest` keeps ``m`` per unit (:func:`kept_counts`). On a text source
    or a raw unit key of Parquet files the parts' joins run as written
    (:func:`~.unit_keys.unit_join_order`); a line of a text source is sized as
    :data:`TOP_VALUES_TEXT_ROW_WEIGHT` rows.
    """
    unit, _ = unit_sql(privacy_unit, unit_type)
    rows = source_rows(table.connection, table.parquet_files, table.source_files,
                       text_weight=TOP_VALUES_TEXT_ROW_WEIGHT)  # fmt: skip
    parts = part_count(rows, TOP_VALUES_BYTES_PER_ROW, memory_budget(table.connection))
    try:
        table.query(f"CREATE OR REPLACE TEMP TABLE {_VALUES_TABLE} AS {vals}", params)
        codes = table.query_numpy(f"SELECT w FROM {_VALUES_TABLE} ORDER BY r")["w"]
        codes = np.asarray(codes, dtype=np.uint32)
        counts = np.zeros(len(codes), dtype=np.int64)
        with unit_join_order(table, unit_type):  # the rows probe the values and the seeds
            for j in range(parts):
                counts += _top_values_part(table, col, privacy_unit, unit_type, m, codes,
                                           params, part_filter_sql(unit, parts, j),
                                           part_progress(progress, j, parts), rows_cap)  # fmt: skip
        ranks = np.flatnonzero(counts)
        best = ranks[np.lexsort((ranks, -counts[ranks]))][: max(int(limit), 0)]
        if len(best) == 0:
            return []
        found_values = table.query(
            f"SELECT r, v FROM {_VALUES_TABLE} WHERE r IN (SELECT unnest($ranks))",
            {"ranks": best.tolist()},
        )
        value_of = dict(found_values)
        return [(value_of[r], int(counts[r])) for r in best.tolist()]
    finally:
        table.connection.execute(f"DROP TABLE IF EXISTS {_VALUES_TABLE}")


def _top_values_part(
    table: Table,
    col: str,
    privacy_unit: str,
    unit_type: str,
    m: int,
    codes: npt.NDArray[np.uint32],
    params: dict[str, Any],
    part: str,
    progress: Progress,
    rows_cap: int,
) -> npt.NDArray[np.int64]:
    """The counts of every value rank that the units of one hash part (``part``) keep, for
    :func:`_top_values_by_rank`: ``m = 1`` and ``rows_cap = 1`` by one SQL query, ``min(p)``
    per unit (:func:`_kept_sql`); otherwise from DuckDB's list of each unit's value ranks
    (:func:`kept_counts`). The rows are written on the left of each join, the values' table
    and the units' seeds on the right (the sides the hash tables are built on when the
    joins run as written: :func:`~.unit_keys.unit_join_order`)."""
    unit, valid = unit_sql(privacy_unit, unit_type)
    if m == 1 and rows_cap == 1:
        pairs = f"""(SELECT {unit} AS u, vals.w AS w, vals.r AS r
                    FROM data JOIN {_VALUES_TABLE} AS vals ON {col} = vals.v
                    WHERE {valid} AND {part})"""
        sql = f"""
            WITH seeds AS {_seeds_sql(privacy_unit, unit_type, part)}
            SELECT t AS r, count(*) AS n FROM {_kept_sql(pairs, "w", "r", 1)} GROUP BY t
        """
        found = table.query_numpy(sql, params, progress)
        counts = np.zeros(len(codes), dtype=np.int64)
        counts[np.asarray(found["r"], dtype=np.int64)] += np.asarray(found["n"], dtype=np.int64)
        return counts
    sql = f"""
        SELECT {unit_seed_sql(unit_type)} AS h, l
        FROM (SELECT {unit} AS u, list(CAST(vals.r AS UINTEGER)) AS l
              FROM data JOIN {_VALUES_TABLE} AS vals ON {col} = vals.v
              WHERE {valid} AND {part} GROUP BY 1)
        WHERE {unit_kept_sql(unit_type)}
    """
    return kept_counts(table, sql, params, m, len(codes), codes, progress, rows_cap)
