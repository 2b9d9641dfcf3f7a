"""The order in which DuckDB runs a plan's joins: as the SQL writes them, for text sources.

Nothing here reads data: a setting of dpselect's own database, switched while a plan runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from .held_setting import HeldSetting

__all__ = ["is_text_source", "text_join_order", "written_join_order"]

#: The optimizers that reorder joins and flip their sides by estimated row counts.
_JOIN_ORDER_OPTIMIZERS = ("join_order", "build_side_probe_side")


def _with_join_order_off(before: str) -> str:
    """``disabled_optimizers``: the ones disabled before, and the join-order ones."""
    names = [n.strip() for n in before.split(",") if n.strip()]
    return ",".join(names + [n for n in _JOIN_ORDER_OPTIMIZERS if n not in names])


_JOIN_ORDER_OFF = HeldSetting("disabled_optimizers", _with_join_order_off)


@contextmanager
def written_join_order(connection: Any) -> Iterator[None]:
    """DuckDB's joins run in the order the SQL writes them, each building its hash table on
    the right-hand side, while at least one caller is inside.

    For text sources (CSV, TSV, JSON lines): DuckDB's CSV reader reports about 42 rows to its
    optimizer whatever the file's size, so the optimizer builds the joins of the bounding
    plans on the rows instead of on the candidates and the units (several times the memory:
    docs/performance.md, "Data larger than memory"). A plan that writes its small tables on
    the right runs inside this. ``disabled_optimizers`` is a setting of the whole database
    (DuckDB refuses it per session): the database is dpselect's own (one per process,
    :mod:`dpselect.data.tables`), the setting is counted (overlapping callers restore it
    only when the last one leaves: :class:`~dpselect.data.held_setting.HeldSetting`), and it
    changes no result, only how a query is planned.

    Parameters
    ----------
    connection : duckdb.DuckDBPyConnection
        A connection (or cursor) to dpselect's own database, on which the plan runs.
    """
    with _JOIN_ORDER_OFF.held(connection):
        yield


def is_text_source(table: Any) -> bool:
    """Whether ``table``'s view ``data`` reads text files (CSV, TSV, JSON lines, JSON, their
    ``.gz``): a public fact, the file format of its
    :attr:`~dpselect.data.tables.Table.source_files` (``None`` for a frame in memory).

    Parameters
    ----------
    table : Table
        A DuckDB table (anything with ``source_files``).

    Returns
    -------
    bool
        True for text files, False for Parquet files and frames.
    """
    files = getattr(table, "source_files", None)
    return files is not None and files.kind != "parquet"


def text_join_order(table: Any) -> AbstractContextManager[None]:
    """:func:`written_join_order` on ``table``'s connection when its source is text
    (:func:`is_text_source`), else nothing: Parquet files and frames report their rows to
    DuckDB's optimizer, which keeps the join order there.

    A plan whose SQL writes the rows on the left of each join and its small tables (the
    candidates, the values, the groups, the units' seeds) on the right runs its scans of a
    text source inside this. Only how the query is planned changes, never a result (the
    tests compare the text sources' answers with Parquet's, bit for bit).

    Parameters
    ----------
    table : Table
        The DuckDB table the plan reads (its ``connection`` and ``source_files``).

    Returns
    -------
    contextlib.AbstractContextManager
        A context manager to run the plan's queries in.
    """
    if is_text_source(table):
        return written_join_order(table.connection)
    return nullcontext()
