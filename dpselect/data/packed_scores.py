"""Candidate scores with a privacy unit, each (unit, position) pair packed as one 64-bit word.

The rule is :mod:`dpselect.data.scores`'s, unchanged (docs/contribution_bounding.md): the
same seeds, keys and choice, so the same scores for the same salt. Only the plan differs:

1. DuckDB lists the distinct units (grouped by value by :func:`~.scores.unit_sql`, NULL and
   NaN units dropped by :func:`~.scores.unit_kept_sql`) with their seed (one md5 per unit,
   :func:`~.scores.unit_seed_sql`) in a temporary table, each unit's code ``k`` its ``rowid``
   there (distinct per row, ``0 .. K - 1``); NumPy receives each code's seed.
2. DuckDB joins the rows with the candidates (:func:`~.matching.match_sql`, exactly the SQL
   plan's join) and with that table, and sends one word ``k 2^32 + c`` per (row, matched
   position ``c``) as Arrow batches (``k 2^32`` is computed once per unit, so a row costs
   one OR).
3. NumPy computes each word's key ``bounding_key(u, c)`` from the seed of ``k`` (32-bit
   arithmetic, :func:`dpselect.data.rules.fmix32`) and packs ``q = k 2^32 + key``: ordering
   ``q`` orders the pairs by unit, then by key. Each batch is sorted and cut into
   ``_PARTS`` ranges of codes (two worker threads; NumPy releases the GIL).
4. Each range's words are sorted (duplicate rows give equal words, dropped for ``m > 1``),
   and a unit's first ``m`` words are its ``m`` smallest distinct keys: word ``i`` is kept
   when the word ``m`` places earlier belongs to another unit (one comparison). The key is a
   bijection of the position for a fixed unit (two rounds of ``fmix32``, each invertible),
   so each kept key is turned back into its position (:func:`positions_of_keys`), and
   ``np.bincount`` gives the scores. For ``m = 1`` no word is held: each batch's keys are
   folded into a per-unit minimum as they arrive (``np.minimum.at``, :class:`_Smallest`;
   duplicate rows give equal keys, so the minimum is the smallest distinct key), and the
   minima are turned back into positions.

For a fixed unit the key is a bijection of the position, so the rule never needs its
tie-break (the position): ordering the keys is ordering ``(key, position)``.

Memory: for ``m > 1``, 8 bytes per (row, matched position) while the words are collected and
one range's copy while it is sorted; for ``m = 1``, 9 bytes per unit and thread; and DuckDB's
table of the units (their value, seed and code). Units are processed in passes of at most
``2^32`` codes, each pass reading the data once.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from . import matching, scores
from .rules import FMIX32_STEPS, M32, salt_text
from .text_lines import quote_identifier as _quote
from .unit_keys import unit_join_order
from .unit_partitions import memory_budget, part_count, part_filter_sql, source_rows

if TYPE_CHECKING:
    from .tables import Table

__all__ = ["invert_fmix32", "kept_positions", "packed_candidate_scores", "positions_of_keys"]

_SEEDS_TABLE = "dpselect_packed_units"
_BATCH_ROWS = 1 << 20
_WORD = np.uint64(32)
_LOW = np.uint64(M32)
_LITTLE = sys.byteorder == "little"
#: Ranges of unit codes sorted apart (the memory of one sort is the words' over this), and
#: the threads that key and sort them.
_PARTS = 64
_THREADS = 2
#: Units per pass: a unit's code ``k`` is packed above the 32-bit key.
_CODES_PER_PASS = 1 << 32
#: Bytes held per row of the data for one hash part (the words, a range's sorted copy,
#: DuckDB's table of the part's units), ``m > 1``: measured (docs/performance.md), rounded up.
PACKED_BYTES_PER_ROW = 24
#: The same for ``m = 1``, which holds no word (each batch is folded into a per-unit
#: minimum): the process's peak RSS over the rows at 5 * 10^7 rows (870 MiB, 18.2 bytes per
#: row; its growth over the imports 15.5; ``bench/bench_bounding_memory.py --m 1``), as the
#: ``m > 1`` figure was measured, rounded up.
PACKED_MIN_BYTES_PER_ROW = 19


def _fmix32(x: npt.NDArray[np.uint32]) -> None:
    """:func:`dpselect.data.rules.fmix32` of every word of ``x``, in place (uint32 wraps)."""
    for op, k in FMIX32_STEPS:
        if op == "xs":
            x ^= x >> np.uint32(k)
        else:
            x *= np.uint32(k)


def invert_fmix32(x: npt.NDArray[np.uint32]) -> None:
    """The inverse of :func:`dpselect.data.rules.fmix32` on every word of ``x``, in place.

    ``fmix32`` is a composition of bijections of 32-bit words: ``x ^= x >> s`` (inverted by
    ``x ^ (x >> s) ^ (x >> 2s) ^ ...``) and multiplications by odd constants (inverted by
    the constant's inverse modulo ``2^32``); the steps are undone in reverse order.

    Parameters
    ----------
    x : numpy.ndarray of uint32
        Words to invert, overwritten with their preimages (``fmix32`` of the result is the
        input). Returns nothing.
    """
    for op, k in reversed(FMIX32_STEPS):
        if op == "xs":
            term = x >> np.uint32(k)
            for _ in range(31 // k):  # the terms x >> k, x >> 2k, ... below 2^32
                x ^= term
                term >>= np.uint32(k)
        else:
            x *= np.uint32(pow(k, -1, 1 << 32))


def positions_of_keys(
    keys: npt.NDArray[np.uint32], seeds: npt.NDArray[np.uint64]
) -> npt.NDArray[np.uint32]:
    """The code ``c`` with ``bounding_key = keys[j]`` under the seed ``seeds[j]``.

    :func:`dpselect.data.rules.bounding_key` is ``fmix32(fmix32(c ^ a) ^ b)`` with ``a``,
    ``b`` the seed's lower and upper halves: a bijection of ``c`` for a fixed seed, inverted
    step by step (:func:`invert_fmix32`).

    Parameters
    ----------
    keys : numpy.ndarray of uint32
        Keys of the rule.
    seeds : numpy.ndarray of uint64
        The unit seed of each key (:func:`dpselect.data.rules.unit_seed`).

    Returns
    -------
    numpy.ndarray of uint32
        The codes (candidate positions), entry by entry.
    """
    seeds = np.asarray(seeds, dtype=np.uint64)
    low = (seeds & _LOW).astype(np.uint32)
    high = (seeds >> _WORD).astype(np.uint32)
    return _positions(np.array(keys, dtype=np.uint32), low, high)


def _positions(
    x: npt.NDArray[np.uint32], low: npt.NDArray[np.uint32], high: npt.NDArray[np.uint32]
) -> npt.NDArray[np.uint32]:
    """:func:`positions_of_keys` with the seeds' halves, ``x`` overwritten."""
    invert_fmix32(x)
    x ^= high
    invert_fmix32(x)
    x ^= low
    return x


def _halves(words: npt.NDArray[np.uint64]) -> tuple[Any, Any]:
    """Views of the low and the high 32 bits of each word (no copy)."""
    pairs = words.view(np.uint32)
    return (pairs[0::2], pairs[1::2]) if _LITTLE else (pairs[1::2], pairs[0::2])


def _keyed_words(
    words: npt.NDArray[np.uint64], low: npt.NDArray[np.uint32], high: npt.NDArray[np.uint32]
) -> npt.NDArray[np.uint64]:
    """``k 2^32 + c`` -> ``k 2^32 + bounding_key(k, c)`` (``low[k]``, ``high[k]``: the halves
    of unit ``k``'s seed)."""
    keyed = np.array(words, dtype=np.uint64)  # a copy: Arrow's buffer is read-only
    c, k = _halves(keyed)
    x = c ^ low[k]
    _fmix32(x)
    x ^= high[k]
    _fmix32(x)
    c[:] = x
    return keyed


def kept_positions(
    keyed: npt.NDArray[np.uint64], seeds: npt.NDArray[np.uint64], m: int
) -> npt.NDArray[np.uint32]:
    """The positions the units keep, from the words ``q = k 2^32 + key`` (sorted in place).

    Each unit ``k`` keeps its ``m`` distinct words of smallest key: after one sort, the
    distinct words of a unit are consecutive and in key order, so word ``i`` is kept when the
    distinct word ``m`` places before it belongs to another unit.

    Parameters
    ----------
    keyed : numpy.ndarray of uint64
        One word per (row, matched position), duplicates included; sorted in place.
    seeds : numpy.ndarray of uint64
        The seed of each unit code ``k``.
    m : int
        How many values each unit keeps (``max_contributions``).

    Returns
    -------
    numpy.ndarray of uint32
        The kept positions, one per kept (unit, value), in no particular order.
    """
    seeds = np.asarray(seeds, dtype=np.uint64)
    low = (seeds & _LOW).astype(np.uint32)
    high = (seeds >> _WORD).astype(np.uint32)
    return _kept(keyed, low, high, m)


def _kept(
    keyed: npt.NDArray[np.uint64],
    low: npt.NDArray[np.uint32],
    high: npt.NDArray[np.uint32],
    m: int,
) -> npt.NDArray[np.uint32]:
    """:func:`kept_positions` with the seeds' halves."""
    keyed.sort()
    if len(keyed) == 0:
        return np.zeros(0, dtype=np.uint32)
    if m > 1:  # duplicates (a unit's rows with one value) are equal words: keep one
        distinct = np.empty(len(keyed), dtype=bool)
        distinct[0] = True
        np.not_equal(keyed[1:], keyed[:-1], out=distinct[1:])
        keyed = keyed[distinct]
        del distinct
    unit = _halves(keyed)[1]
    first = np.empty(len(keyed), dtype=bool)
    first[:m] = True  # the first m words (fewer when there are fewer)
    np.not_equal(unit[m:], unit[:-m], out=first[m:])
    kept = keyed[first]
    del first, unit, keyed
    key, k = _halves(kept)
    return _positions(np.ascontiguousarray(key), low[k], high[k])


@contextmanager
def _unordered(connection: Any) -> Iterator[None]:
    """DuckDB's ``preserve_insertion_order`` off while the words stream (restored after).

    The scores are sums over the words, whatever their order, and DuckDB then does not
    have to keep the scan's order through the parallel joins (measured in
    docs/performance.md, "Contribution bounding per privacy unit"). The setting is changed
    for this connection's session only (``SET SESSION``): a plain ``SET`` is global to the
    database, and other cursors' queries would run without the order meanwhile."""
    found = connection.execute("SELECT current_setting('preserve_insertion_order')").fetchall()
    before = bool(found[0][0])
    connection.execute("SET SESSION preserve_insertion_order = false")
    try:
        yield
    finally:
        connection.execute(f"SET SESSION preserve_insertion_order = {str(before).lower()}")


def _scaled(progress: Callable[[float], None] | None, lo: float, hi: float) -> Any:
    """``progress`` with ``0 .. 100`` mapped to ``lo .. hi`` (two queries, one bar)."""
    if progress is None:
        return None
    return lambda percent: progress(lo + (hi - lo) * min(max(percent, 0.0), 100.0) / 100.0)


class _Collector:
    """The keyed words of one pass, in ``_PARTS`` ranges of unit codes, built on threads.

    :meth:`add` keys a batch of words (:func:`_keyed_words`) on a worker thread (NumPy
    releases the GIL), sorts it and files each range's slice; :meth:`kept` then sorts each
    range's words and keeps each unit's ``m`` smallest (:func:`_kept`), two ranges at a time.
    A range holds every word of its units, so the ranges are independent; while one is
    sorted the memory is the words plus that range's copy.
    """

    def __init__(self, low: npt.NDArray[np.uint32], high: npt.NDArray[np.uint32]) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.low, self.high = low, high
        width = max(1, -(-len(low) // _PARTS))  # codes per range
        self.bounds = np.arange(1, _PARTS, dtype=np.uint64) * np.uint64(width) << _WORD
        self.parts: list[list[npt.NDArray[np.uint64]]] = [[] for _ in range(_PARTS)]
        self.pending: list[Any] = []
        self.pool = ThreadPoolExecutor(_THREADS)

    def __enter__(self) -> _Collector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)

    def _file(self, words: npt.NDArray[np.uint64]) -> list[npt.NDArray[np.uint64]]:
        keyed = _keyed_words(words, self.low, self.high)
        keyed.sort()
        cuts = np.searchsorted(keyed, self.bounds)
        # copies, so that each range's words are freed once that range is sorted
        return [piece.copy() for piece in np.split(keyed, cuts)]

    def add(self, batch: Any) -> None:
        """Key and file one Arrow batch of words ``k 2^32 + c`` (on a worker thread)."""
        self.pending.append(self.pool.submit(self._file, batch.column(0).to_numpy()))
        if len(self.pending) > _THREADS:  # at most a few batches in flight
            self._collect(self.pending.pop(0))

    def _collect(self, future: Any) -> None:
        for part, piece in zip(self.parts, future.result(), strict=True):
            part.append(piece)

    def _kept_part(self, j: int, m: int) -> npt.NDArray[np.uint32]:
        part = self.parts[j]
        keyed = np.concatenate(part) if part else np.zeros(0, dtype=np.uint64)
        part.clear()
        return _kept(keyed, self.low, self.high, m)

    def kept(self, m: int) -> Any:
        """The kept positions of each range (an iterator of arrays)."""
        for future in self.pending:
            self._collect(future)
        self.pending.clear()
        return self.pool.map(lambda j: self._kept_part(j, m), range(_PARTS))


class _Smallest:
    """Each unit's smallest key over the words of one pass (``m = 1``), no word held.

    :meth:`add` keys a batch of words ``k 2^32 + c`` (:func:`_keyed_words`' arithmetic) and
    folds it into a per-unit minimum (``np.minimum.at``), on a worker thread with its own
    array (so two batches are folded at once); :meth:`kept` takes the minimum of the arrays
    and turns each unit's smallest key back into its position. Duplicate rows give equal
    keys, so the minimum is each unit's smallest distinct key: :func:`_kept` with ``m = 1``,
    in memory that does not grow with the rows (two 32-bit words and a flag per unit).
    """

    def __init__(self, low: npt.NDArray[np.uint32], high: npt.NDArray[np.uint32]) -> None:
        import threading
        from concurrent.futures import ThreadPoolExecutor

        self.low, self.high = low, high
        self.best = [np.full(len(low), M32, dtype=np.uint32) for _ in range(_THREADS)]
        self.seen = [np.zeros(len(low), dtype=bool) for _ in range(_THREADS)]
        self.locks = [threading.Lock() for _ in range(_THREADS)]
        self.pending: list[Any] = []
        self.count = 0
        self.pool = ThreadPoolExecutor(_THREADS)

    def __enter__(self) -> _Smallest:
        return self

    def __exit__(self, *exc: object) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)

    def _fold(self, j: int, words: npt.NDArray[np.uint64]) -> None:
        c, k = _halves(np.asarray(words, dtype=np.uint64))
        x = c ^ self.low[k]
        _fmix32(x)
        x ^= self.high[k]
        _fmix32(x)
        with self.locks[j]:
            np.minimum.at(self.best[j], k, x)
            self.seen[j][k] = True

    def add(self, batch: Any) -> None:
        """Fold one Arrow batch of words ``k 2^32 + c`` (on a worker thread)."""
        j, self.count = self.count % _THREADS, self.count + 1
        self.pending.append(self.pool.submit(self._fold, j, batch.column(0).to_numpy()))
        if len(self.pending) > _THREADS:
            self.pending.pop(0).result()

    def kept(self) -> npt.NDArray[np.uint32]:
        """The position each unit with a word keeps."""
        for future in self.pending:
            future.result()
        self.pending.clear()
        best, seen = self.best[0], self.seen[0]
        for other_best, other_seen in zip(self.best[1:], self.seen[1:], strict=True):
            np.minimum(best, other_best, out=best)
            seen |= other_seen
        return _positions(best[seen], self.low[seen], self.high[seen])


def _part_scores(
    table: Table,
    source: str,
    params: dict[str, Any],
    salt: dict[str, Any],
    col_match: str,
    cand_match: str,
    unit: str,
    valid: str,
    seed: str,
    unit_type: str,
    part: str,
    m: int,
    size: int,
    progress: Callable[[float], None] | None,
) -> npt.NDArray[np.int64]:
    """The scores from the units of one hash part (``part``: the condition on a row that its
    unit is in it, :func:`~.unit_partitions.part_filter_sql`): steps 1 to 4 of the module
    docstring over that part's units and their rows."""
    out = np.zeros(size, dtype=np.int64)
    table.query(
        f"""CREATE OR REPLACE TEMP TABLE {_SEEDS_TABLE} AS
            SELECT u, {seed} AS h
            FROM (SELECT DISTINCT {unit} AS u FROM data WHERE {valid} AND {part})
            WHERE {scores.unit_kept_sql(unit_type)}""",
        salt,
        _scaled(progress, 0.0, 30.0),
    )
    # a unit's code is its rowid in the table: DuckDB's identity of a row, distinct for two
    # rows (so for two units), from 0 in a table just filled (a window's row_number() would
    # number them on one thread; gaps would only leave unused codes)
    found = table.query_numpy(f"SELECT rowid AS k, h FROM {_SEEDS_TABLE}")
    codes = np.asarray(found["k"], dtype=np.int64)
    seeds = np.asarray(found["h"], dtype=np.uint64)
    del found
    size_codes = int(codes.max()) + 1 if len(codes) else 0
    low = np.zeros(size_codes, dtype=np.uint32)
    high = np.zeros(size_codes, dtype=np.uint32)
    low[codes] = (seeds & _LOW).astype(np.uint32)
    high[codes] = (seeds >> _WORD).astype(np.uint32)
    del seeds, codes
    passes = max(1, -(-len(low) // _CODES_PER_PASS))
    for j in range(passes):
        base = j * _CODES_PER_PASS
        # the packed word's parts are cast (and shifted) once per unit and per candidate;
        # per row it is one OR
        sql = f"""
            WITH cands AS (SELECT {cand_match} AS v, CAST(i AS UBIGINT) AS i FROM {source}),
                 units AS (SELECT u, CAST(rowid - {base} AS UBIGINT) << 32 AS k
                           FROM {_SEEDS_TABLE}
                           WHERE rowid >= {base} AND rowid < {base + _CODES_PER_PASS})
            SELECT s.k | cands.i AS w
            FROM data JOIN cands ON {col_match} = cands.v
                 JOIN units AS s ON {unit} = s.u
            WHERE {valid} AND {part}
        """
        end = base + _CODES_PER_PASS
        lo = 30.0 + 70.0 * j / passes
        step = _scaled(progress, lo, lo + 70.0 / passes)
        if m == 1:
            with _Smallest(low[base:end], high[base:end]) as smallest:
                table.query_batches(sql, params, smallest.add, step, _BATCH_ROWS)
                out += np.bincount(smallest.kept(), minlength=size)
            continue
        with _Collector(low[base:end], high[base:end]) as collector:
            table.query_batches(sql, params, collector.add, step, _BATCH_ROWS)
            for kept in collector.kept(m):
                out += np.bincount(kept, minlength=size)
    return out


def packed_candidate_scores(
    table: Table,
    column: str,
    candidates: Sequence[Any],
    privacy_unit: str,
    max_contributions: int,
    salt: int,
    progress: Callable[[float], None] | None = None,
) -> npt.NDArray[np.int64]:
    """The engine's ungrouped scores with a privacy unit and ``max_rows_per_value = 1``
    (module docstring): the same rule, so the same scores as the SQL plan.

    Parameters
    ----------
    table : Table
        The DuckDB table (its view ``data``).
    column : str
        The ranked column.
    candidates : sequence
        The public candidate list (at most ``2^32 - 1``, checked by the recipes).
    privacy_unit : str
        The unit column (its injective key: :meth:`~dpselect.data.tables.Table.unit_column`).
    max_contributions : int
        ``m``: the values each unit keeps.
    salt : int
        The per-query salt of the rule.
    progress : callable or None
        Called with the percentage done.

    Returns
    -------
    numpy.ndarray of int64
        The number of units keeping each candidate, in the list's order.

    Privacy
    -------
    The kept positions of a unit are the rule's (docs/contribution_bounding.md): a function
    of that unit's rows and the salt only, at most ``m`` of them, so one unit added or
    removed moves at most ``m`` scores by 1 each, all in the same direction (L-infinity 1,
    L1 ``m``, monotonic); the proof is the module docstring of :mod:`dpselect.data.scores`.
    """
    col_type = table.require_column(column)
    table.require_column(privacy_unit, "privacy_unit")
    key_column, unit_type = table.unit_column(privacy_unit)  # the injective key
    m = int(max_contributions)
    unit, valid = scores.unit_sql(key_column, unit_type)
    seed = scores.unit_seed_sql(unit_type)
    params = {"salt": salt_text(salt)}
    scores_out = np.zeros(len(candidates), dtype=np.int64)
    # a text source's reader under-reports its rows to DuckDB's optimizer: the joins run as
    # written (the rows on the left, the candidates and the units built on the right), and
    # its lines are then sized as Parquet rows (a public fact: the file format)
    rows = source_rows(table.connection, table.parquet_files, table.source_files, text_weight=1)
    per_row = PACKED_MIN_BYTES_PER_ROW if m == 1 else PACKED_BYTES_PER_ROW
    parts = part_count(rows, per_row, memory_budget(table.connection))
    col_match, cand_match = matching.match_sql(f"data.{_quote(column)}", col_type, candidates)
    try:
        with (
            unit_join_order(table, unit_type),
            _unordered(table.connection),
            matching.candidates_source(table, candidates, progress is not None) as (source, cp),
        ):
            for j in range(parts):
                part = part_filter_sql(unit, parts, j)
                scores_out += _part_scores(
                    table, source, cp, params, col_match, cand_match, unit, valid, seed,
                    unit_type, part, m, len(candidates),
                    _scaled(progress, 100.0 * j / parts, 100.0 * (j + 1) / parts),
                )  # fmt: skip
    finally:
        table.connection.execute(f"DROP TABLE IF EXISTS {_SEEDS_TABLE}")
    return scores_out
