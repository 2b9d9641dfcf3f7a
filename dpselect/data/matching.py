"""Public candidates matched to a column's values by DuckDB's casts and equality.

**Matching candidates to values** is by value and decided by public facts only (the column's
type from the schema and the candidates' Python types), never by the rows:

- When the column is **text** (every CSV and JSON column, unless a schema says otherwise) and
  the candidates are all **numbers**, the text is read as a number: ``TRY_CAST(column AS
  DOUBLE)`` for float (or mixed int and float) candidates, and for int candidates the same
  value when it is integral, as ``BIGINT``. So ``"4"``, ``"4.0"`` and ``" 4 "`` all match
  ``4.0`` (and ``4``); ``"4.5"`` matches no int; text that is not a number matches nothing.
- Otherwise candidates are converted to the column's type (``TRY_CAST``; one that does not
  convert matches nothing).

Two candidates that convert to the same value (``"7"`` and ``"07"`` for an integer column,
``4`` and ``4.0`` on a text column) both count its rows: without a privacy unit one row then
moves two scores, each by at most 1. The selection maps use only that (L-infinity,
monotonic); the noisy histograms use the L1 / L2 sensitivity, which is then the public
:func:`match_multiplicity` (the most candidates one value matches), not 1. The column's type
never depends on the rows (:mod:`dpselect.data.tables`), so neither does this matching.

:func:`candidates_source` registers the candidates with their positions, :func:`match_sql`
gives the two sides of the join, :func:`match_multiplicity` the most candidates one value
matches (the L1 sensitivity of the scores without a privacy unit).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

import numpy as np

from .candidates import as_arrow
from .values import is_text as _is_text
from .values import numeric_candidate_type

__all__ = [
    "ConnectionOnly",
    "HasConnection",
    "candidates_source",
    "match_multiplicity",
    "match_sql",
]


class HasConnection(Protocol):
    """What :func:`candidates_source` uses of a table: its DuckDB connection (a
    :class:`~dpselect.data.tables.Table`, or a :class:`ConnectionOnly`)."""

    connection: Any


@contextmanager
def candidates_source(
    table: HasConnection, candidates: Sequence[Any], materialize: bool, name: str = "candidates"
) -> Iterator[tuple[str, dict[str, Any]]]:
    """SQL of the candidates ``(c, i)`` (``i`` = position) and its parameters, while in use.

    A typed Arrow array is registered (zero copy, fast for 10^5 and more candidates); without
    pyarrow, or for mixed types, the list goes as a query parameter (str for other types).
    ``materialize``: copy them into a temporary table first (a few ms), without which DuckDB
    reports no progress for the query (it cannot for a scan of a Python object). Shared with
    :mod:`dpselect.data.dictionary_scores`.

    Parameters
    ----------
    table : HasConnection
        What holds the DuckDB connection the candidates are registered on.
    candidates : sequence
        The candidate list, in its order.
    materialize : bool
        Copy the candidates into a temporary table first.
    name : str, default ``"candidates"``
        The word the registered view, the temporary table and the query parameter are named
        after (a grouped release registers its group list beside the candidates as
        ``"groups"``).

    Yields
    ------
    tuple of (str, dict)
        SQL of the candidates' relation and the query parameters it needs.
    """
    array = as_arrow(candidates)
    view, stored, param = f"dpselect_{name}", f"dpselect_{name}_table", name[:5]
    registered = False
    if array is not None:
        import pyarrow as pa

        positions = pa.array(np.arange(len(array), dtype=np.int64))
        table.connection.register(view, pa.table({"c": array, "i": positions}))
        registered = True
        source, params = view, {}
    else:
        kinds = set(map(type, candidates))
        plain = len(kinds) == 1 and kinds <= {str, int, float}
        values = list(candidates) if plain else [str(c) for c in candidates]
        source = (
            f"(SELECT unnest(${param}) AS c, "
            f"CAST(generate_subscripts(${param}, 1) - 1 AS BIGINT) AS i)"
        )
        params = {param: values}
    try:
        if materialize:
            table.connection.execute(
                f"CREATE OR REPLACE TEMP TABLE {stored} AS SELECT c, i FROM {source}",
                params,
            )
            yield stored, {}
            table.connection.execute(f"DROP TABLE IF EXISTS {stored}")
        else:
            yield source, dict(params)
    finally:
        if registered:
            table.connection.unregister(view)


def match_sql(column_sql: str, col_type: str, candidates: Sequence[Any]) -> tuple[str, str]:
    """SQL of (the column's value as matched, the candidate ``c`` as matched) (module doc).

    Parameters
    ----------
    column_sql : str
        SQL of the column's value in a row (e.g. ``data."city"``).
    col_type : str
        The column's DuckDB type (from the schema, never the rows).
    candidates : sequence
        The public candidate list; it decides, with ``col_type``, how values are matched.

    Returns
    -------
    tuple of (str, str)
        Two SQL expressions to compare with ``=``: the column's value (``column_sql``, or a
        text column read as ``DOUBLE``/integral ``BIGINT`` for number candidates) and the
        candidate (the candidates' column ``c``, ``TRY_CAST`` to the matching type).
    """
    number = numeric_candidate_type(candidates) if _is_text(col_type) else None
    if number == "DOUBLE":
        return f"TRY_CAST({column_sql} AS DOUBLE)", "TRY_CAST(c AS DOUBLE)"
    if number == "BIGINT":
        as_double = f"TRY_CAST({column_sql} AS DOUBLE)"
        as_int = f"TRY_CAST({column_sql} AS BIGINT)"
        integral = f"CASE WHEN {as_double} = floor({as_double}) THEN {as_int} END"
        return integral, "TRY_CAST(c AS BIGINT)"
    return column_sql, f"TRY_CAST(c AS {col_type})"


def match_multiplicity(col_type: str, candidates: Sequence[Any]) -> int:
    """The most candidates that one value of a ``col_type`` column matches (:func:`match_sql`).

    Public: it reads the column's type and the candidates, never the rows (the candidates are
    cast and grouped in a DuckDB of their own). Without a privacy unit one row adds 1 to the
    score of every candidate its value matches, so this is the L1 sensitivity (and the squared
    L2 sensitivity at most) of the rows-are-people scores: 1, unless two candidates convert to
    one value (``4`` and ``4.0`` on a text column, ``"7"`` and ``"07"`` on an integer one).
    With a privacy unit the bounding rule keeps candidate *positions*, so such candidates
    count toward ``max_contributions`` like any others.

    Parameters
    ----------
    col_type : str
        The column's DuckDB type.
    candidates : sequence
        The public candidate list.

    Returns
    -------
    int
        The most candidates that convert to one value (at least 1).
    """
    import duckdb

    if _is_text(col_type) and all(isinstance(c, str) for c in candidates):
        return 1  # text matched as text: distinct candidates (load_candidates), one value each
    _, cand_match = match_sql("x", col_type, candidates)
    con = duckdb.connect(":memory:")
    try:
        with candidates_source(ConnectionOnly(con), candidates, False) as (source, params):
            rows = con.execute(
                f"""SELECT coalesce(max(n), 1) FROM (
                        SELECT count(*) AS n FROM (SELECT {cand_match} AS v FROM {source})
                        WHERE v IS NOT NULL GROUP BY v)""",
                params or None,
            ).fetchall()  # every row fetched: the registered view is dropped after this
    finally:
        con.close()
    return int(rows[0][0]) if rows else 1


class ConnectionOnly:
    """A DuckDB connection alone, as a :class:`HasConnection` for :func:`candidates_source`
    (and :mod:`dpselect.data.dictionary_scores`' matcher), where no table is needed.

    Parameters
    ----------
    connection : duckdb.DuckDBPyConnection
        The connection (or cursor) the candidates are registered on.
    """

    def __init__(self, connection: Any) -> None:
        self.connection = connection
