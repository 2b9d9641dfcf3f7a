"""Hash partitions of the privacy units: bounding data larger than memory, one part at a time.

The bounding rule (docs/contribution_bounding.md, "The rule, exactly") chooses each unit's
values from that unit's own rows and the salt alone. So the units can be split into ``P``
parts by any function of the unit alone, each part bounded by itself (from the rows whose
unit falls in it), and the parts' scores added: every unit falls in exactly one part and
keeps there exactly what it keeps in one pass over all the rows, so the sum is the same score
vector, bit for bit, whatever ``P`` is. Only the time (``P`` scans of the data) and the
memory (the state of one part's units and pairs) change.

- **The split** (:func:`part_filter_sql`): ``hash(u) % P = p``, DuckDB's ``hash`` of the
  unit as grouped (:func:`dpselect.data.scores.unit_sql`: by value, so ``0.0`` and ``-0.0``,
  one unit, are in one part). A function of the unit alone, read from no other row.
- **The number of parts** (:func:`part_count`): from metadata and settings, never from a
  value: a bound on the rows of the source files (:func:`source_rows`: the Parquet footers'
  row count; for CSV, TSV and JSON lines, their sizes over a mean line length read from
  samples of their bytes, or a ``.gz`` file's line ends counted when it was opened,
  :func:`text_rows`, each line weighted by the plan's text weight; frames in memory are not
  split), the bytes a
  plan holds per row (a constant of the plan, measured: docs/performance.md) and a memory
  budget (:data:`MEMORY_BUDGET`, by default a quarter of DuckDB's ``memory_limit``). The row
  bound is a fact about the data, but ``P`` changes no output (above): only how long the
  scans take and how much memory one part holds, as the number of rows itself does. So the
  bound need not be exact: over-estimating the rows costs extra scans, under-estimating
  costs memory, and neither changes a score.

Nothing here reads a row as a row: the footers, file sizes and byte samples are read before
any query, no value is parsed, and reading them never raises (a failure gives a fallback
bound); the split is SQL the plans run over the view ``data``, whatever the source behind it.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .text_lines import gzip_line_ends

__all__ = [
    "MEMORY_BUDGET",
    "MEMORY_SHARE",
    "ROW_MARGIN",
    "TEXT_ROW_WEIGHT",
    "SourceFiles",
    "memory_budget",
    "part_count",
    "part_filter_sql",
    "part_progress",
    "source_rows",
    "text_rows",
]

#: The bytes the bounding plans may hold at once (their NumPy arrays and DuckDB's hash
#: tables of one part); ``None``: :data:`MEMORY_SHARE` of DuckDB's ``memory_limit``. A
#: setting of the library (``dpselect.data.unit_partitions.MEMORY_BUDGET = 2 * 2**30``).
MEMORY_BUDGET: int | None = None
#: The share of DuckDB's ``memory_limit`` (by default 80% of the machine's memory) taken as
#: the budget when :data:`MEMORY_BUDGET` is ``None``.
MEMORY_SHARE = 1 / 4
#: The most parts (each one scan of the data).
_MAX_PARTS = 1024
#: The factor on the estimated rows of a text file (:func:`text_rows`): the mean line length
#: of the samples may exceed the file's (lines longer at the start than in the rest).
ROW_MARGIN = 1.25
#: How many rows of a Parquet file one line of a text source (CSV, TSV, JSON lines) counts
#: for when the parts are sized (:func:`source_rows`). DuckDB's CSV reader with a fixed
#: dialect reports about 42 rows to its optimizer whatever the file's size, so the plans'
#: joins build their hash tables on the rows of the text view rather than on the candidates
#: and the units: per line of the row bound, at 10^8 rows, 2.0 times ``top_values``'
#: constant, and (with the optimizer choosing) 5.0 and 3.7 times the packed plan's ``m = 1``
#: and ``m > 1`` constants (docs/performance.md, "Data larger than memory"); 6 covers them
#: with a margin. The default of :func:`source_rows`, for a plan whose joins the optimizer
#: orders on a text source. dpselect's plans all run their joins as written there
#: (:func:`dpselect.data.join_order.text_join_order`) and pass their own measured weight:
#: 1 for the packed plan and the grouped plans, 2 for ``top_values`` and the lists plans
#: (:data:`dpselect.data.scores.TOP_VALUES_TEXT_ROW_WEIGHT`).
TEXT_ROW_WEIGHT = 6
#: The bytes a text file's samples read: ``_SAMPLES`` windows of ``_WINDOW`` bytes, spread
#: over the file (uncompressed), or the first ``_GZIP_INPUT`` compressed bytes (gzip).
_SAMPLES = 8
_WINDOW = 1 << 17
_GZIP_INPUT = 1 << 20
#: At most this many decompressed bytes are read from a gzip prefix.
_GZIP_OUTPUT = 1 << 25
#: The fallbacks when the samples cannot be read (the scan then fails on its own): a mean
#: line of 16 bytes, a compression ratio of 8.
_FALLBACK_LINE_BYTES = 16
_FALLBACK_RATIO = 8
_UNITS = {
    "": 1, "b": 1, "byte": 1, "bytes": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}  # fmt: skip


def _bytes(text: str) -> int | None:
    """DuckDB's text of a memory size (``'18.8 GiB'``, ``'500.0 MiB'``) in bytes."""
    found = re.fullmatch(r"\s*([0-9.]+)\s*([A-Za-z]*)\s*", text)
    if found is None or found.group(2).lower() not in _UNITS:
        return None
    return int(float(found.group(1)) * _UNITS[found.group(2).lower()])


def memory_budget(connection: Any) -> int:
    """The bytes a bounding plan may hold: :data:`MEMORY_BUDGET`, or :data:`MEMORY_SHARE` of
    the connection's ``memory_limit`` (a setting, public), at least 64 MiB.

    Parameters
    ----------
    connection : duckdb.DuckDBPyConnection
        The connection whose ``memory_limit`` is read.

    Returns
    -------
    int
        The budget in bytes.
    """
    if MEMORY_BUDGET is not None:
        return max(1, int(MEMORY_BUDGET))
    setting = connection.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    limit = _bytes(str(setting))
    if limit is None:  # pragma: no cover - DuckDB always prints a size
        limit = 8 * 2**30
    return max(64 * 2**20, int(limit * MEMORY_SHARE))


@dataclass(frozen=True)
class SourceFiles:
    """The files behind a table's view ``data``, as public facts: what :func:`source_rows`
    bounds the rows of.

    Attributes
    ----------
    kind : str
        ``"parquet"``, ``"csv"``, ``"tsv"``, ``"jsonl"`` or ``"json"``
        (:data:`dpselect.data.tables.FILE_FORMATS`).
    files : tuple of str
        The paths (a glob or a directory listed: the files DuckDB reads).
    gzipped : bool, default False
        Whether the text files are gzip streams.
    """

    kind: str
    files: tuple[str, ...]
    gzipped: bool = False


def source_rows(
    connection: Any,
    parquet_files: list[str] | None,
    source: SourceFiles | None = None,
    text_weight: int = TEXT_ROW_WEIGHT,
) -> int:
    """The rows the hash parts are sized by, from metadata: the Parquet files' footers
    (exact), the text files' lines (:func:`text_rows`: estimated on the high side, or
    counted for a ``.gz`` opened as a table) times ``text_weight`` (what one line of a text
    view costs the plan in Parquet rows' memory), or ``0`` when the source is no file (a
    frame in memory: one part).

    Parameters
    ----------
    connection : duckdb.DuckDBPyConnection
        The connection that reads the footers.
    parquet_files : list of str or None
        The Parquet files behind the table when the view is exactly their columns
        (:attr:`dpselect.data.tables.Table.parquet_files`).
    source : SourceFiles or None, default None
        The files behind the table, of any format
        (:attr:`dpselect.data.tables.Table.source_files`); read when ``parquet_files`` is
        empty.
    text_weight : int, default TEXT_ROW_WEIGHT
        The rows a line of a text source counts for: the plan's measured weight when it
        runs its joins in the written order (:func:`dpselect.data.join_order.
        text_join_order`), whose hash tables are then built on the candidates, values,
        groups and units as on Parquet (1 for the packed and grouped plans, 2 for
        ``top_values`` and the lists plans).

    Returns
    -------
    int
        The rows the footers declare, the text files' weighted estimate, or 0.

    Notes
    -----
    The bound chooses only the number of hash parts, and the parts change no score (module
    docstring; docs/contribution_bounding.md, "Data larger than memory"): only the time
    (one scan per part) and the memory of one part. It reads no value and never fails on
    the files' content (:func:`text_rows`).
    """
    if parquet_files:
        return _footer_rows(connection, list(parquet_files))
    if source is None or not source.files:
        return 0
    if source.kind == "parquet":
        return _footer_rows(connection, list(source.files))
    return text_weight * sum(text_rows(path, source.gzipped) for path in source.files)


def _footer_rows(connection: Any, files: list[str]) -> int:
    """The rows the Parquet footers declare (metadata, read without a row)."""
    found = connection.execute(
        "SELECT sum(num_rows) FROM parquet_file_metadata($files)", {"files": files}
    ).fetchall()
    return int(found[0][0] or 0)


def text_rows(path: str, gzipped: bool = False) -> int:
    """An estimate, on the high side, of the lines of a text file (CSV, TSV, JSON lines):
    each row is one line, so it bounds the rows.

    The rule: ``ceil(ROW_MARGIN * S / L) + 1``, where ``S`` is the file's size in bytes
    (``os.stat``; for gzip, the compressed size times the compression ratio of its first
    ``2^20`` compressed bytes) and ``L`` the mean line length of samples of the text:
    ``_SAMPLES = 8`` windows of ``2^17`` bytes at evenly spaced offsets (each from its first
    line end to its last; gzip: the decompressed prefix). A file that fits in the samples is
    counted exactly (its newlines, plus one). ``ROW_MARGIN = 1.25`` covers lines longer in
    the samples than in the rest of the file. When the samples hold no line end, ``L`` is
    their length (the lines are at least that long); when the file cannot be read (the scan
    then fails on its own), ``L = 16`` bytes and the gzip ratio is 8.

    A gzip file opened as a table was decompressed in full then
    (:func:`~dpselect.data.text_lines.check_gzip_stream`), which counted its line ends (the
    bytes ``\\n`` and ``\\r``, every end of a line by the line rule): while the file is
    unchanged its bound is that count plus one, exact (:func:`~dpselect.data.text_lines.
    gzip_line_ends`), not an estimate.

    Parameters
    ----------
    path : str
        The file.
    gzipped : bool, default False
        Whether it is a gzip stream (members one after another).

    Returns
    -------
    int
        The estimated number of lines (at least 1).

    Notes
    -----
    Public facts in the sense of :func:`source_rows`: the estimate only chooses the number
    of hash parts, which changes no score. It reads bytes, not rows (no value is parsed) and
    never raises: a read error gives the fallback.
    """
    if gzipped:
        counted = gzip_line_ends(path)  # read in full when the table was opened
        if counted is not None:
            return counted + 1
    try:
        size = os.stat(path).st_size
    except OSError:
        return 1
    try:
        exact, text_size, line = (_gzip_sample if gzipped else _plain_sample)(path, size)
    except (OSError, EOFError, ValueError, zlib.error):
        ratio = _FALLBACK_RATIO if gzipped else 1
        exact, text_size, line = None, float(size * ratio), float(_FALLBACK_LINE_BYTES)
    if exact is not None:
        return exact + 1
    return int(ROW_MARGIN * text_size / max(line, 1.0)) + 1


def _plain_sample(path: str, size: int) -> tuple[int | None, float, float]:
    """``(exact lines or None, text bytes, mean line bytes)`` of an uncompressed file, from
    ``_SAMPLES`` windows of ``_WINDOW`` bytes spread evenly over it (the whole file when it
    is smaller)."""
    with open(path, "rb") as handle:
        if size <= _SAMPLES * _WINDOW:
            return handle.read().count(b"\n"), float(size), 0.0
        spanned = lines = 0
        for k in range(_SAMPLES):
            handle.seek(k * (size - _WINDOW) // (_SAMPLES - 1))
            chunk = handle.read(_WINDOW)
            start = 0 if k == 0 else chunk.find(b"\n") + 1  # the first whole line
            end = chunk.rfind(b"\n") + 1
            if 0 < start < end or (k == 0 and end > 0):
                lines += chunk.count(b"\n", start, end)
                spanned += end - start
    line = spanned / lines if lines else float(_WINDOW)  # no line end: lines that long
    return None, float(size), line


def _gzip_sample(path: str, size: int) -> tuple[int | None, float, float]:
    """``(exact lines or None, text bytes, mean line bytes)`` of a gzip file, from its first
    ``_GZIP_INPUT`` compressed bytes (at most ``_GZIP_OUTPUT`` decompressed): the text size
    is the compressed size times the prefix's compression ratio; a file read to its end is
    counted exactly."""
    decoder = zlib.decompressobj(wbits=31)
    consumed = produced = lines = 0
    with open(path, "rb") as handle:
        while consumed < _GZIP_INPUT and produced < _GZIP_OUTPUT:
            chunk = handle.read(1 << 16)
            if not chunk:
                break
            while chunk and produced < _GZIP_OUTPUT:
                out = decoder.decompress(chunk, _GZIP_OUTPUT - produced)
                produced += len(out)
                lines += out.count(b"\n")
                rest = decoder.unused_data if decoder.eof else decoder.unconsumed_tail
                consumed += len(chunk) - len(rest)
                chunk = rest
                if decoder.eof:  # the next member of the stream
                    decoder = zlib.decompressobj(wbits=31)
        if consumed >= size:
            return lines, float(produced), 0.0
    if not consumed or not produced:
        raise ValueError("no text in the sample")
    line = produced / lines if lines else float(produced)
    return None, size * produced / consumed, line


def part_count(rows: int, bytes_per_row: float, budget: int) -> int:
    """``P = ceil(rows * bytes_per_row / budget)``, between 1 and 1024: the parts that keep
    one part's state within ``budget`` (public: the footers' row count, a constant of the
    plan, a setting).

    Parameters
    ----------
    rows : int
        The rows of the source (:func:`source_rows`; 0 when unknown).
    bytes_per_row : float
        What the plan holds per row of one part (its measured constant).
    budget : int
        :func:`memory_budget`.

    Returns
    -------
    int
        The number of parts.
    """
    need = int(rows) * float(bytes_per_row)
    return int(min(_MAX_PARTS, max(1, -(-int(need) // max(1, int(budget))))))


def part_filter_sql(unit: str, parts: int, part: int) -> str:
    """SQL condition that the unit ``unit`` (as grouped) falls in part ``part`` of ``parts``
    (``TRUE`` for one part). ``hash`` is DuckDB's 64-bit hash of the value: a function of the
    unit alone, so a unit's rows all fall in one part.

    Parameters
    ----------
    unit : str
        SQL of the unit as grouped (:func:`dpselect.data.scores.unit_sql`).
    parts, part : int
        The number of parts and this part (``0 <= part < parts``).

    Returns
    -------
    str
        A SQL condition.
    """
    if int(parts) <= 1:
        return "TRUE"
    return f"(hash({unit}) % {int(parts)} = {int(part)})"


def part_progress(
    progress: Callable[[float], None] | None, part: int, parts: int
) -> Callable[[float], None] | None:
    """``progress`` with one part's ``0 .. 100`` mapped to its share of the whole (parts run
    one after the other, each one scan of the data).

    Parameters
    ----------
    progress : callable or None
        Called with the percentage done of the whole job.
    part, parts : int
        This part and the number of parts.

    Returns
    -------
    callable or None
        The progress of this part (``None`` when ``progress`` is ``None``).
    """
    if progress is None:
        return None
    report = progress
    lo, width = 100.0 * part / parts, 100.0 / parts

    def scaled(percent: float) -> None:
        report(lo + width * min(max(percent, 0.0), 100.0) / 100.0)

    return scaled
