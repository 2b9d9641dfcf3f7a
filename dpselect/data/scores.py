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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .tables import Table

__all__ = ["candidate_scores", "top_values"]

Progress = Callable[[float], None] | None


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _kept_pairs(column: str, unit: str, max_contributions: int) -> str:
    """SQL of the (user, value) pairs kept after bounding each user's contributions."""
    return f"""
        SELECT v FROM (
            SELECT v, row_number() OVER (PARTITION BY u ORDER BY hash($salt, u, v)) AS r
            FROM (SELECT DISTINCT {_quote(unit)} AS u, {_quote(column)} AS v
                  FROM data
                  WHERE {_quote(unit)} IS NOT NULL AND {_quote(column)} IS NOT NULL
                    AND {{filter}})
        ) WHERE r <= {int(max_contributions)}
    """


def candidate_scores(
    table: Table,
    column: str,
    candidates: Sequence[Any],
    privacy_unit: str | None = None,
    max_contributions: int = 1,
    salt: int = 0,
    progress: Progress = None,
) -> npt.NDArray[np.int64]:
    """The score of every candidate, in the candidate list's order (module docstring)."""
    col_type = table.require_column(column)
    if privacy_unit is not None:
        table.require_column(privacy_unit, "privacy_unit")
    # Candidates are cast to the column's type; one that cannot be cast matches nothing.
    cands = f"""
        SELECT TRY_CAST(c AS {col_type}) AS v, i
        FROM (SELECT unnest($cands) AS c, generate_subscripts($cands, 1) AS i)
    """
    if privacy_unit is None:
        counted = f"""
            SELECT {_quote(column)} AS v, count(*) AS n FROM data
            WHERE {_quote(column)} IN (SELECT v FROM cands) GROUP BY {_quote(column)}
        """
    else:
        kept = _kept_pairs(column, privacy_unit, max_contributions).replace(
            "{filter}", f"{_quote(column)} IN (SELECT v FROM cands)"
        )
        counted = f"SELECT v, count(*) AS n FROM ({kept}) GROUP BY v"
    sql = f"""
        WITH cands AS ({cands}), counted AS ({counted})
        SELECT cands.i, coalesce(counted.n, 0) FROM cands
        LEFT JOIN counted ON counted.v = cands.v ORDER BY cands.i
    """
    params: dict[str, Any] = {
        "cands": [str(c) if not isinstance(c, (int, float)) else c for c in candidates]
    }
    if privacy_unit is not None:
        params["salt"] = salt
    rows = _run(table, sql, params, progress)
    return np.asarray([int(n) for _, n in rows], dtype=np.int64)


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
    """
    table.require_column(column)
    if privacy_unit is not None:
        table.require_column(privacy_unit, "privacy_unit")
        kept = _kept_pairs(column, privacy_unit, max_contributions).replace("{filter}", "TRUE")
        counted = f"SELECT v, count(*) AS n FROM ({kept}) GROUP BY v"
        params: dict[str, Any] = {"salt": salt}
    else:
        counted = f"""SELECT {_quote(column)} AS v, count(*) AS n FROM data
                      WHERE {_quote(column)} IS NOT NULL GROUP BY {_quote(column)}"""
        params = {}
    sql = f"SELECT v, n FROM ({counted}) ORDER BY n DESC, v LIMIT {int(limit)}"
    return [(v, int(n)) for v, n in _run(table, sql, params, progress)]


def _run(table: Table, sql: str, params: dict[str, Any], progress: Progress) -> list[Any]:
    # DuckDB's named parameters ($name) are passed as a dict.
    return table.query(sql, params, progress)  # type: ignore[arg-type]
