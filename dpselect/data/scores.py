"""Score vectors over a public candidate list, computed by DuckDB in one scan of the data.

Two scorings, each with a proven sensitivity used by the mechanisms' maps:

- **Rows are people** (no privacy unit): the score of a candidate is the number of rows whose
  ``column`` equals it. Adding or removing one row changes one score by 1: L-infinity and
  L1 sensitivity 1, monotonic (range sensitivity 1).
- **A privacy unit column** (``privacy_unit="user_id"``): each user's distinct candidate values
  are ranked by a hash salted per query, and only the first ``max_contributions`` are kept; the
  score of a candidate is the number of users who kept it. Which values a user keeps depends
  only on that user's own rows and the salt, so adding or removing one user (with any number of
  rows) changes at most ``max_contributions`` scores, each by 1, all in the same direction:
  L-infinity sensitivity 1, monotonic, L1 sensitivity ``max_contributions``.

Rows whose ``column`` (or privacy unit) is NULL, and values outside the candidate list, are
ignored; candidates absent from the data score 0. Empty data is valid: every score is 0.

Candidates are converted to the column's type (``TRY_CAST``; one that does not convert matches
nothing). Two candidates that convert to the same value (``"7"`` and ``"07"`` for an integer
column) both count its rows: one row then moves two scores, each still by at most 1, which is
all the selection maps use (L-infinity, monotonic). The column's type never depends on the
rows (:mod:`dpselect.data.tables`), so neither does this matching. The privacy unit's hash
reads the unit as text, so that a user hashes alike from every input kind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt

from .candidates import as_arrow
from .tables import Table

__all__ = ["candidate_scores", "top_values"]

Progress = Callable[[float], None] | None
_CANDIDATES_VIEW = "dpselect_candidates"
_CANDIDATES_TABLE = "dpselect_candidates_table"
# The salt enters DuckDB's hash as a UBIGINT whatever its size, so that a small salt hashes
# like a large one and every input kind (users as text or numbers) hashes the same.
_SALT_MASK = (1 << 64) - 1


def _salted_hash(*columns: str) -> str:
    return f"hash(CAST($salt AS UBIGINT), {', '.join(columns)})"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@contextmanager
def _candidates_source(
    table: Table, candidates: Sequence[Any], materialize: bool
) -> Iterator[tuple[str, dict[str, Any]]]:
    """SQL of the candidates ``(c, i)`` (``i`` = position) and its parameters, while in use.

    A typed Arrow array is registered (zero copy, fast for 10^5 and more candidates); without
    pyarrow, or for mixed types, the list goes as a query parameter (str for other types).
    ``materialize``: copy them into a temporary table first (a few ms), without which DuckDB
    reports no progress for the query (it cannot for a scan of a Python object).
    """
    array = as_arrow(candidates)
    registered = False
    if array is not None:
        import pyarrow as pa

        positions = pa.array(np.arange(len(array), dtype=np.int64))
        table.connection.register(_CANDIDATES_VIEW, pa.table({"c": array, "i": positions}))
        registered = True
        source, params = _CANDIDATES_VIEW, {}
    else:
        kinds = set(map(type, candidates))
        plain = len(kinds) == 1 and kinds <= {str, int, float}
        values = list(candidates) if plain else [str(c) for c in candidates]
        source = (
            "(SELECT unnest($cands) AS c, CAST(generate_subscripts($cands, 1) - 1 AS BIGINT) AS i)"
        )
        params = {"cands": values}
    try:
        if materialize:
            table.connection.execute(
                f"CREATE OR REPLACE TEMP TABLE {_CANDIDATES_TABLE} AS SELECT c, i FROM {source}",
                params,
            )
            yield _CANDIDATES_TABLE, {}
            table.connection.execute(f"DROP TABLE IF EXISTS {_CANDIDATES_TABLE}")
        else:
            yield source, dict(params)
    finally:
        if registered:
            table.connection.unregister(_CANDIDATES_VIEW)


def candidate_scores(
    table: Table,
    column: str,
    candidates: Sequence[Any],
    privacy_unit: str | None = None,
    max_contributions: int = 1,
    salt: int = 0,
    progress: Progress = None,
) -> npt.NDArray[np.int64]:
    """The score of every candidate, in the candidate list's order (module docstring).

    One scan of the data. Without a privacy unit the data is grouped by value first and the
    groups are then joined with the candidates (as fast as the plain ``GROUP BY``); with one,
    the rows are joined with the candidates first, so that a user's contributions are only
    spent on candidates.
    """
    if getattr(table, "engine", "duckdb") == "spark":  # same semantics (data.spark_engine)
        from . import spark_engine

        return spark_engine.candidate_scores(
            table, column, candidates, privacy_unit, max_contributions, salt, progress  # type: ignore[arg-type]
        )
    col_type = table.require_column(column)
    if privacy_unit is not None:
        table.require_column(privacy_unit, "privacy_unit")
    with _candidates_source(table, candidates, progress is not None) as (source, params):
        sql, params = _score_sql(
            column, col_type, source, params, privacy_unit, max_contributions, salt
        )
        found = table.query_numpy(sql, params, progress)
    scores = np.zeros(len(candidates), dtype=np.int64)
    # One row per matched candidate position (the groups are distinct values, and two
    # candidates that cast to the same value are two positions, each with the full count).
    scores[np.asarray(found["i"], dtype=np.int64)] = np.asarray(found["n"], dtype=np.int64)
    return scores


def _score_sql(
    column: str,
    col_type: str,
    source: str,
    params: dict[str, Any],
    privacy_unit: str | None,
    max_contributions: int,
    salt: int,
) -> tuple[str, dict[str, Any]]:
    """The score query over the candidates ``source`` and its parameters."""
    # Candidates are cast to the column's type; one that cannot be cast matches nothing.
    cands = f"SELECT TRY_CAST(c AS {col_type}) AS v, i FROM {source}"
    col = _quote(column)
    if privacy_unit is None:
        sql = f"""
            WITH cands AS ({cands}),
                 counted AS (SELECT {col} AS v, count(*) AS n FROM data GROUP BY {col})
            SELECT cands.i AS i, counted.n AS n FROM counted JOIN cands ON counted.v = cands.v
        """
    else:
        unit = _quote(privacy_unit)
        rank = _salted_hash("u", "i")
        # Each user keeps at most max_contributions of their distinct candidates: those with
        # the smallest salted hash of (user as text, candidate position), ties by position.
        # The rule reads only that user's rows and the salt.
        sql = f"""
            WITH cands AS ({cands}),
                 pairs AS (SELECT DISTINCT CAST(data.{unit} AS VARCHAR) AS u, cands.i AS i
                           FROM data JOIN cands ON data.{col} = cands.v
                           WHERE data.{unit} IS NOT NULL),
                 kept AS (SELECT i FROM pairs
                          QUALIFY row_number() OVER (PARTITION BY u ORDER BY {rank}, i)
                                  <= {int(max_contributions)})
            SELECT i, count(*) AS n FROM kept GROUP BY i
        """
        params = params | {"salt": int(salt) & _SALT_MASK}
    return sql, params


def top_values(
    table: Table,
    column: str,
    limit: int,
    privacy_unit: str | None = None,
    max_contributions: int = 1,
    salt: int = 0,
    progress: Progress = None,
) -> list[tuple[Any, int]]:
    """The ``limit`` values with the largest scores, ties by value: input to the limited-domain
    mechanism, which is built for candidate sets taken from the data (Durfee and Rogers 2019).

    The scores are those of :func:`candidate_scores` with every non-NULL value a candidate: a
    user changes at most ``max_contributions`` of them, each by 1 (the l0 sensitivity).
    """
    if getattr(table, "engine", "duckdb") == "spark":  # same semantics (data.spark_engine)
        from . import spark_engine

        return spark_engine.top_values(
            table, column, limit, privacy_unit, max_contributions, salt, progress  # type: ignore[arg-type]
        )
    table.require_column(column)
    col = _quote(column)
    params: dict[str, Any] = {}
    if privacy_unit is not None:
        table.require_column(privacy_unit, "privacy_unit")
        unit = _quote(privacy_unit)
        counted = f"""
            SELECT v, count(*) AS n FROM (
                SELECT v FROM (SELECT DISTINCT CAST({unit} AS VARCHAR) AS u, {col} AS v FROM data
                               WHERE {unit} IS NOT NULL AND {col} IS NOT NULL)
                QUALIFY row_number()
                        OVER (PARTITION BY u ORDER BY {_salted_hash("u", "CAST(v AS VARCHAR)")}, v)
                        <= {int(max_contributions)}
            ) GROUP BY v
        """
        params["salt"] = int(salt) & _SALT_MASK
    else:
        counted = f"""SELECT {col} AS v, count(*) AS n FROM data
                      WHERE {col} IS NOT NULL GROUP BY {col}"""
    sql = f"SELECT v, n FROM ({counted}) ORDER BY n DESC, v LIMIT {int(limit)}"
    return [(v, int(n)) for v, n in table.query(sql, params, progress)]
