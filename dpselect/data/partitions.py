"""Per-value person counts for partition selection and unknown-domain top-k.

Every non-NULL value of a column is a partition. Its count is the number of persons having it
after contribution bounding (each person keeps at most ``max_contributions`` of their values,
chosen by :mod:`dpselect.data.scores`' salted rule, which reads only that person's rows and the
salt): one person changes at most ``max_contributions`` counts, each by 1, all the same way.
Without a privacy unit each row is a person and counts are row counts (``max_contributions``
is 1). The query itself is :func:`dpselect.data.scores.duckdb_top_values` with no limit, so the
bounding rule is the one the rest of the data layer uses. The counts come from the engine
that holds the table (:class:`dpselect.data.engine.Engine`).

In :func:`duckdb_person_values`, ``max_rows_per_value = r > 1``: each kept value ``v`` comes
``min(n, r)`` times, ``n`` the person's rows with ``v`` (the same kept values as ``r = 1``: the
choice reads the person's distinct values only), so each value's total over persons is exactly
``value_counts(..., max_rows_per_value=r)``; ``r = 1`` is the list of distinct kept values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .rules import check_rows_per_value, salt_text
from .rules import hashed_text_sql as _hashed_text_sql
from .rules import md5_bits_sql as _md5_bits_sql
from .scores import keyed_sql, unit_sql
from .text_lines import quote_identifier as _quote
from .values import canonical_text_sql, normalised_sql
from .values import is_floating as _is_floating

if TYPE_CHECKING:
    from .tables import Table

__all__ = ["ALL_VALUES", "duckdb_person_values"]

#: No limit in practice: every value with a positive count (a Java int, so that the Spark
#: engine's ``limit`` accepts it too).
ALL_VALUES = (1 << 31) - 1


def duckdb_person_values(
    table: Table,
    column: str,
    privacy_unit: str,
    max_contributions: int,
    salt: int = 0,
    progress: Callable[[float], None] | None = None,
    max_rows_per_value: int = 1,
) -> list[list[Any]]:
    """Each person's kept values, persons in a random order fixed per person.

    A person keeps at most ``max_contributions`` distinct non-NULL values of ``column``, by the
    same salted rule as :func:`value_counts` (so the counts of this output are exactly
    ``value_counts``). Persons come sorted by a keyed hash of (salt, person) (the person's
    bounding seed, ties by the person's value): a fresh salt makes the order a random one,
    and adding or removing a person never changes the relative order of the others, which is
    what policy set union's proof needs (``docs/partition_selection.md``, section 5). Held in
    the driver: for data whose persons fit in memory. DuckDB engine only.

    Parameters
    ----------
    table : Table
        The opened data (a DuckDB table).
    column : str
        The column whose non-NULL values are the partitions.
    privacy_unit : str
        The privacy unit column (required: the output is per unit).
    max_contributions : int
        ``m``: the most distinct values each unit keeps.
    salt : int, default 0
        The per-query salt of the bounding rule, drawn independently of the data.
    progress : callable or None, default None
        Called with the percentage of the scan done while the query runs.
    max_rows_per_value : int, default 1
        ``r``: each kept value comes once per row of the unit holding it, at most ``r``
        times (1: once).

    Returns
    -------
    list of list
        One list per unit that keeps a value, units sorted by their keyed hash: the unit's
        kept values, each once (``r = 1``) or ``min(n, r)`` times.

    Raises
    ------
    DataError
        ``column`` or ``privacy_unit`` is not a usable column, or the unit has no injective
        key.
    ParameterError
        A bad ``max_rows_per_value``.
    """
    m = int(max_contributions)
    r = check_rows_per_value(max_rows_per_value, privacy_unit)
    col_type = table.require_column(column)
    privacy_unit, unit_type = table.unit_column(privacy_unit)
    col = normalised_sql(f"data.{_quote(column)}", col_type)
    unit, valid = unit_sql(privacy_unit, unit_type)
    v_text = canonical_text_sql("v", "DOUBLE" if _is_floating(col_type) else col_type)
    code = _md5_bits_sql(_hashed_text_sql("v", v_text), 4)
    rows = f"""(SELECT {unit} AS u, vals.v AS v, vals.w AS w
               FROM data JOIN vals ON {col} = vals.v WHERE {valid})"""
    chosen, pairs = _kept_list_sql(m, r)
    sql = f"""
        WITH vals AS (SELECT v, {code} AS w
                      FROM (SELECT DISTINCT {col} AS v FROM data
                            WHERE data.{_quote(column)} IS NOT NULL)),
             unit_rows AS {rows}, unit_pairs AS ({pairs})
        SELECT {chosen} AS vs, min(b) AS o, u
        FROM {keyed_sql("unit_pairs", "w", unit_type)} GROUP BY u ORDER BY o, u
    """
    out = table.query(sql, {"salt": salt_text(salt)}, progress)
    return _unit_lists(out, r)


def _kept_list_sql(m: int, r: int) -> tuple[str, str]:
    """(the aggregate of a unit's kept values, the query of its distinct pairs ``(u, v, w)``
    from ``unit_rows``, with ``n``: its rows with the value, at most ``r``, when ``r > 1``):
    the ``m`` pairs with the smallest ``(key, value)``."""
    rank = "{'k': x, 'v': v}"
    kept = "v" if r == 1 else "{'v': v, 'n': n}"
    chosen = f"list_value(arg_min({kept}, {rank}))" if m == 1 else f"arg_min({kept}, {rank}, {m})"
    pairs = (
        "SELECT DISTINCT u, v, w FROM unit_rows"
        if r == 1
        else f"SELECT u, v, w, least(count(*), {r}) AS n FROM unit_rows GROUP BY u, v, w"
    )
    return chosen, pairs


def _unit_lists(out: list[Any], r: int) -> list[list[Any]]:
    """The rows ``(vs, o, u)`` of the query as one list per unit: its kept values, each once
    (``r = 1``) or ``n`` times."""
    if r == 1:
        return [list(vs) for vs, _, _ in out]
    return [[s["v"] for s in vs for _ in range(int(s["n"]))] for vs, _, _ in out]
