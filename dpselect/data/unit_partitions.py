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
  value: the number of rows in the Parquet files' footers (other sources are not split), the
  bytes a plan holds per row (a constant of the plan, measured: docs/performance.md) and a
  memory budget (:data:`MEMORY_BUDGET`, by default a quarter of DuckDB's ``memory_limit``).
  The row count is a fact about the data, but ``P`` changes no output (above): only how long
  the scan takes, as the number of rows itself does.

Nothing here reads a row: the row count is the footers' and the split is SQL the plans run.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = [
    "MEMORY_BUDGET",
    "MEMORY_SHARE",
    "memory_budget",
    "part_count",
    "part_filter_sql",
    "part_progress",
    "source_rows",
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


def source_rows(connection: Any, parquet_files: list[str] | None) -> int:
    """The number of rows in the Parquet files' footers (metadata, read without a row), or
    ``0`` when the source is not a set of Parquet files (it is then not split).

    Parameters
    ----------
    connection : duckdb.DuckDBPyConnection
        The connection that reads the footers.
    parquet_files : list of str or None
        The files behind the table (:attr:`dpselect.data.tables.Table.parquet_files`).

    Returns
    -------
    int
        The rows the footers declare, or 0.
    """
    if not parquet_files:
        return 0
    found = connection.execute(
        "SELECT sum(num_rows) FROM parquet_file_metadata($files)", {"files": list(parquet_files)}
    ).fetchall()
    return int(found[0][0] or 0)


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
