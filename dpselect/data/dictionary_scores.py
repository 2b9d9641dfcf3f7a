"""Contribution bounding on Parquet files without hashing a string per row.

The rule is :mod:`dpselect.data.scores`'s, unchanged (docs/contribution_bounding.md): the
same seeds, codes, keys and choice, so the same scores for the same salt. Only the plan
differs. Parquet stores text columns dictionary-encoded per column chunk; pyarrow reads them
as a dictionary (the distinct texts of the chunk) and one integer per row
(``read_dictionary``), without hashing a string per row. So:

- the candidate match is computed once per **dictionary entry**, by the very SQL of the
  general plan (:func:`~.matching.match_sql`; a plain lookup when the candidates are distinct
  strings), and per row it is an integer ``take``;
- DuckDB then groups the integer pairs ``(user, position)`` by user, with each user's seed
  (one md5 per user, on the grouped rows) and the list of its positions, and
  :func:`~.scores.keep_smallest` (NumPy) keeps each user's ``m`` smallest keys, as the general
  plan for ``m > 1`` does (:func:`~.scores.kept_counts`).

The rows stream row group by row group (``iter_batches``), so only one batch of rows is held.

The plan is chosen by public facts only: the source is Parquet files (their paths) with no
declared schema, pyarrow is installed, and the files' schemas (metadata, not rows) give the
value column as text and the unit as an integer, text or floating column, the same in every
file. Errors and results never depend on the rows: rows whose value or unit is NULL (or a NaN
unit) count for nobody, as in the general plan, and the unit is grouped by value by the same
SQL (:func:`~.scores.unit_sql`).

Chosen by the DuckDB engine
(:meth:`~dpselect.data.engines.duckdb.DuckDBEngine.scores`, the only caller) for a
text unit (DuckDB's Parquet reader cannot give its raw bytes; the SQL plans over a pyarrow
dataset that can measured slower) or ``max_rows_per_value > 1`` (public facts). Other units
with ``max_rows_per_value = 1`` take the packed plan (:mod:`dpselect.data.packed_scores`),
which measured faster than this one for ``m = 3`` on integer units (docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from . import matching, scores
from .candidates import as_arrow
from .unit_keys import RAW_KEY_TYPE, arrow_unit_keys

if TYPE_CHECKING:
    from .tables import Table

__all__ = ["dictionary_candidate_scores", "dictionary_files"]

#: DuckDB unit types of the plan and the pyarrow types that DuckDB reads as them.
_UNIT_TYPES = {
    "TINYINT": ("int8",),
    "SMALLINT": ("int16",),
    "INTEGER": ("int32",),
    "BIGINT": ("int64",),
    "UTINYINT": ("uint8",),
    "USMALLINT": ("uint16",),
    "UINTEGER": ("uint32",),
    "UBIGINT": ("uint64",),
    "VARCHAR": ("string", "large_string"),
    "FLOAT": ("float",),
    "DOUBLE": ("double",),
}
_TEXT_TYPES = ("string", "large_string")
_ROWS_VIEW = "dpselect_dictionary_rows"
_DICTIONARY_VIEW = "dpselect_dictionary"
_BATCH_ROWS = 1 << 20


def dictionary_files(
    table: Table, column: str, col_type: str, privacy_unit: str, unit_type: str
) -> list[str] | None:
    """The Parquet files to read directly, or ``None`` for the general SQL plan.

    Public facts only: the table's source (Parquet files, no declared schema), DuckDB's column
    types, the files' own schemas (footer metadata) and whether pyarrow is installed.

    Parameters
    ----------
    table : Table
        The opened DuckDB table (its ``parquet_files``: ``None`` or empty unless it reads
        Parquet files with no declared schema).
    column : str
        The ranked column; the plan needs it to be text (``VARCHAR``, Arrow ``string`` or
        ``large_string`` in every file).
    col_type : str
        ``column``'s DuckDB type.
    privacy_unit : str
        The privacy unit column (not ``column`` itself).
    unit_type : str
        ``privacy_unit``'s DuckDB type; an integer, text or floating type, stored as the
        matching Arrow type in every file.

    Returns
    -------
    list of str or None
        The table's Parquet files, when every one has both columns with one and the same
        pair of Arrow types; ``None`` otherwise, or without pyarrow.
    """
    files = table.parquet_files
    if not files or col_type.upper() != "VARCHAR" or unit_type.upper() not in _UNIT_TYPES:
        return None
    if column == privacy_unit:
        return None
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow is optional
        return None
    unit_arrow = _UNIT_TYPES[unit_type.upper()]
    seen: set[tuple[str, str]] = set()
    for path in files:
        try:
            schema = pq.read_schema(path)
        except (OSError, ValueError):  # pragma: no cover - DuckDB read it; be safe
            return None
        if column not in schema.names or privacy_unit not in schema.names:
            return None  # union_by_name fills the column with NULLs: the general plan
        value_type = str(schema.field(column).type)
        unit_type_arrow = str(schema.field(privacy_unit).type)
        if value_type not in _TEXT_TYPES or unit_type_arrow not in unit_arrow:
            return None
        seen.add((value_type, unit_type_arrow))
    if len(seen) != 1:
        return None  # one stream has one schema
    return list(files)


class _Matcher:
    """Dictionary entries -> the targets each matches (candidate positions or value ranks).

    ``lookup``: the targets as one text array whose position is the target (distinct texts,
    matched by equality: pyarrow's ``index_in``), or ``None`` to use DuckDB's SQL ``join_sql``
    (a query of ``(k, i)`` pairs from the view of the dictionary ``(k, s)``). The last
    dictionary's answer is reused while the dictionary is the same (one per column chunk).
    """

    def __init__(self, table: matching.HasConnection, lookup: Any, join_sql: str | None) -> None:
        self.table, self.lookup, self.join_sql = table, lookup, join_sql
        self._last: Any = None
        self._answer: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None = None

    def _valid_utf8(self, dictionary: Any) -> Any:
        """``dictionary`` itself, or, when an entry is not valid UTF-8, every entry as
        DuckDB's Parquet reader reads it (``utf8_validation = 'replace'``: each invalid byte
        ``?``; ``decode(blob, 'replace')`` is the same rule), so that both plans see the same
        text (pyarrow reads the bytes unchecked, and DuckDB would refuse them below)."""
        import duckdb
        import pyarrow as pa

        try:
            dictionary.validate(full=True)
            return dictionary
        except pa.ArrowInvalid:
            pass
        raw = dictionary.view(pa.large_binary() if dictionary.type == pa.large_string()
                              else pa.binary())  # fmt: skip
        # a connection of its own: this runs while the query of the rows reads the stream
        con = duckdb.connect(":memory:")
        try:
            con.register("raw", pa.table({"b": raw}))
            relation = con.sql("SELECT decode(b, 'replace') AS s FROM raw")
            fixed = (getattr(relation, "to_arrow_table", None) or relation.arrow)()
        finally:
            con.close()
        return fixed.column(0).combine_chunks().cast(dictionary.type)

    def match(self, dictionary: Any) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """``(starts, targets)``: entry ``k`` matches ``targets[starts[k]:starts[k + 1]]``;
        one extra entry at the end (``len(dictionary)``, used for NULL rows) matches nothing."""
        if self._answer is not None and self._last is not None and self._last.equals(dictionary):
            return self._answer
        import pyarrow as pa
        import pyarrow.compute as pc

        size, given = len(dictionary), dictionary
        dictionary = self._valid_utf8(dictionary)
        if self.join_sql is None:
            if dictionary.type != self.lookup.type:
                dictionary = dictionary.cast(self.lookup.type)
            found = pc.index_in(dictionary, value_set=self.lookup).fill_null(-1).to_numpy()
            found = np.append(found.astype(np.int64), -1)
            has = found >= 0
            starts = np.zeros(size + 2, dtype=np.int64)
            np.cumsum(has, out=starts[1:])
            targets = found[has]
        else:
            keys = pa.array(np.arange(size, dtype=np.int64))
            self.table.connection.register(_DICTIONARY_VIEW, pa.table({"k": keys, "s": dictionary}))
            try:
                pairs = self.table.connection.execute(self.join_sql).fetchnumpy()
            finally:
                self.table.connection.unregister(_DICTIONARY_VIEW)
            k = np.asarray(pairs["k"], dtype=np.int64)
            order = np.lexsort((np.asarray(pairs["i"], dtype=np.int64), k))
            targets = np.asarray(pairs["i"], dtype=np.int64)[order]
            starts = np.zeros(size + 2, dtype=np.int64)
            np.cumsum(np.bincount(k, minlength=size + 1), out=starts[1:])
        self._last, self._answer = given, (starts, targets)
        return starts, targets


def _row_batches(
    files: Sequence[str],
    column: str,
    privacy_unit: str,
    matcher: _Matcher,
    progress: Any = None,
) -> Iterator[Any]:
    """Record batches ``(privacy_unit, c)``: one row per (row, matched target), streamed.

    ``progress(percent)`` after each batch: the rows read so far over the files' row counts
    (their footers), up to 99 (DuckDB cannot measure a Python stream; the grouping after the
    last batch is the rest)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    readers = [pq.ParquetFile(path, read_dictionary=[column]) for path in files]
    total = max(1, sum(reader.metadata.num_rows for reader in readers))
    done = 0
    for reader in readers:
        for batch in reader.iter_batches(_BATCH_ROWS, columns=[privacy_unit, column]):
            done += batch.num_rows
            if progress is not None:
                progress(min(99.0, 100.0 * done / total))
            values = batch.column(column)
            units = batch.column(privacy_unit)
            if not isinstance(values, pa.DictionaryArray):  # pragma: no cover - defensive
                values = values.dictionary_encode()
            starts, targets = matcher.match(values.dictionary)
            index = values.indices.fill_null(len(values.dictionary)).to_numpy()
            if matcher.join_sql is None:  # at most one target per entry (distinct texts)
                target = np.full(len(starts) - 1, -1, dtype=np.int64)
                has = starts[1:] > starts[:-1]
                target[has] = targets
                found = target[index]
                rows = np.flatnonzero(found >= 0)
                c = found[rows].astype(np.uint32)
            else:  # a row matching several targets is one pair per target
                first = starts[index]
                count = starts[index + 1] - first
                rows = np.repeat(np.arange(len(index)), count)
                offset = np.arange(len(rows)) - np.repeat(np.cumsum(count) - count, count)
                c = targets[first[rows] + offset].astype(np.uint32)
            every = matcher.join_sql is None and len(rows) == len(index)  # rows: 0 .. n - 1
            kept = units if every else units.take(pa.array(rows))
            raw = arrow_unit_keys(kept)  # text units byte for byte (data.unit_keys)
            yield pa.record_batch([kept if raw is None else raw, pa.array(c)],
                                  names=[privacy_unit, "c"])  # fmt: skip


def _kept_from_stream(
    table: Table,
    files: Sequence[str],
    column: str,
    privacy_unit: str,
    unit_type: str,
    matcher: _Matcher,
    m: int,
    size: int,
    codes: npt.NDArray[np.uint32] | None,
    salt: int,
    progress: Any,
    r: int = 1,
) -> npt.NDArray[np.int64]:
    """How many users keep each target ``0 .. size - 1`` (:func:`~.scores.kept_counts`;
    ``r > 1``: their rows with it, at most ``r`` each: one pair per row and target)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    unit_arrow = pq.read_schema(files[0]).field(privacy_unit).type
    if str(unit_arrow) in _TEXT_TYPES:  # read as raw-byte keys (_row_batches)
        unit_arrow = pa.large_binary() if str(unit_arrow) == "large_string" else pa.binary()
        unit_type = RAW_KEY_TYPE
    schema = pa.schema([(privacy_unit, unit_arrow), ("c", pa.uint32())])
    stream = pa.RecordBatchReader.from_batches(
        schema, _row_batches(files, column, privacy_unit, matcher, progress)
    )
    unit, valid = scores.unit_sql(privacy_unit, unit_type)
    seed = scores.unit_seed_sql(unit_type)
    sql = f"""
        SELECT {seed} AS h, l
        FROM (SELECT {unit} AS u, list(data.c) AS l FROM {_ROWS_VIEW} AS data
              WHERE {valid} GROUP BY 1)
        WHERE {scores.unit_kept_sql(unit_type)}
    """
    table.connection.register(_ROWS_VIEW, stream)
    try:
        # progress from the stream (_row_batches), not from DuckDB's poll (0% throughout)
        return scores.kept_counts(
            table, sql, {"salt": scores.salt_text(salt)}, m, size, codes, None, r
        )
    finally:
        table.connection.unregister(_ROWS_VIEW)


def dictionary_candidate_scores(
    table: Table,
    files: Sequence[str],
    column: str,
    candidates: Sequence[Any],
    privacy_unit: str,
    unit_type: str,
    m: int,
    salt: int,
    progress: Any = None,
    max_rows_per_value: int = 1,
) -> npt.NDArray[np.int64]:
    """The engine's ungrouped scores with a privacy unit, on the files of
    :func:`dictionary_files` (same rule, same scores; module docstring), ``max_rows_per_value``
    included.

    Parameters
    ----------
    table : Table
        The opened DuckDB table, whose connection groups the streamed rows by unit.
    files : sequence of str
        The Parquet files to read, as :func:`dictionary_files` returned them.
    column : str
        The ranked text column.
    candidates : sequence
        The public candidate list; distinct strings are matched by a plain lookup, any other
        list by the SQL of :func:`~.matching.match_sql`.
    privacy_unit : str
        The privacy unit column (text units are keyed by their raw bytes).
    unit_type : str
        ``privacy_unit``'s DuckDB type.
    m : int
        ``max_contributions``: the most distinct candidates each unit keeps.
    salt : int
        The per-query salt of the bounding rule, drawn independently of the data.
    progress : callable, optional
        Called with the percentage of rows read (up to 99) after each batch.
    max_rows_per_value : int, default 1
        ``r``: each kept candidate adds the unit's rows with it, at most ``r`` (1: each
        unit adds 1).

    Returns
    -------
    numpy.ndarray of int64
        The score of every candidate, in the list's order.
    """
    r = int(max_rows_per_value)
    col_type = "VARCHAR"
    distinct_text = all(isinstance(c, str) for c in candidates) and len(set(candidates)) == len(
        candidates
    )
    if distinct_text:
        lookup = as_arrow(candidates)
        if lookup is None:  # pragma: no cover - as_arrow builds text arrays with pyarrow
            import pyarrow as pa

            lookup = pa.array(list(candidates), pa.string())
        matcher = _Matcher(table, lookup, None)
        return _kept_from_stream(table, files, column, privacy_unit, unit_type, matcher, m,
                                 len(candidates), None, salt, progress, r)  # fmt: skip
    col_match, cand_match = matching.match_sql("d.s", col_type, candidates)
    # The dictionaries are matched while DuckDB reads the stream: on a cursor of their own (a
    # query cannot use the connection that runs it), holding its own copy of the candidates.
    helper = matching.ConnectionOnly(table.connection.cursor())
    try:
        with matching.candidates_source(helper, candidates, True) as (source, _):
            join_sql = f"""SELECT d.k AS k, cands.i AS i
                           FROM {_DICTIONARY_VIEW} AS d
                           JOIN (SELECT {cand_match} AS v, i FROM {source}) AS cands
                             ON {col_match} = cands.v"""
            matcher = _Matcher(helper, None, join_sql)
            return _kept_from_stream(table, files, column, privacy_unit, unit_type, matcher,
                                     m, len(candidates), None, salt, progress, r)  # fmt: skip
    finally:
        helper.connection.close()
