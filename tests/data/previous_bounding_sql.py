"""The bounding queries as they were before issue 14 (kept verbatim as a test reference).

The rule (docs/contribution_bounding.md) is unchanged by issue 14; only the physical plan is
new. These are the previous plans (md5 through ``md5_number_upper``, signed arithmetic,
``arg_min`` per user, ``DISTINCT`` pairs and struct ranks on the unknown-domain path), so that
tests/data/test_bounding_plan.py can check that the new SQL gives the same scores for the same
salt. Not used by the library.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpselect.data.matching import (
    candidates_source as _candidates_source,
)
from dpselect.data.matching import match_sql
from dpselect.data.scores import (
    _FMIX32,
    _M32,
    _hashed_text_sql,
    _is_floating,
    _quote,
    canonical_text_sql,
    normalised_sql,
    salt_text,
)
from dpselect.data.tables import Table


def _md5_bits_sql(text_sql: str, first_bytes: int) -> str:
    whole = f"md5_number_upper({text_sql})"
    return whole if first_bytes == 8 else f"CAST({whole} & {_M32} AS BIGINT)"


def _fmix32_bodies(x: str) -> list[str]:
    bodies = []
    for op, k in _FMIX32:
        if op == "xs":
            bodies.append(f"xor({x}, {x} >> {k})")
        elif k < 1 << 31:
            bodies.append(f"({x} * {k}) & {_M32}")
        else:
            bodies.append(f"(({x} * {k - (1 << 31)}) + (({x} & 1) << 31)) & {_M32}")
    return bodies


def _chain(source: str, bodies: list[str], x: str = "x") -> str:
    for body in bodies:
        source = f"(SELECT * REPLACE ({body} AS {x}) FROM {source})"
    return source


def _unit_text_sql(unit_type: str) -> str:
    return canonical_text_sql("u", "DOUBLE" if _is_floating(unit_type) else unit_type)


def _keyed_sql(pairs: str, code: str, unit_type: str) -> str:
    seed = _md5_bits_sql(_hashed_text_sql("u", _unit_text_sql(unit_type)), 8)
    seeds = f"""(SELECT u, CAST(h & {_M32} AS BIGINT) AS a, CAST(h >> 32 AS BIGINT) AS b
                 FROM (SELECT u, {seed} AS h FROM (SELECT DISTINCT u FROM {pairs})))"""
    start = f"""(SELECT p.*, xor(p.{code}, s.a) AS x, s.b AS b
                 FROM {pairs} AS p JOIN {seeds} AS s ON p.u = s.u)"""
    return _chain(start, [*_fmix32_bodies("x"), "xor(x, b)", *_fmix32_bodies("x")])


def _unit_sql(privacy_unit: str, unit_type: str) -> tuple[str, str]:
    unit = f"data.{_quote(privacy_unit)}"
    valid = f"{unit} IS NOT NULL"
    if _is_floating(unit_type):
        valid += f" AND NOT isnan({unit})"
    return normalised_sql(unit, unit_type), valid


def _bounded_scores_sql(
    col_match: str, cands: str, privacy_unit: str, unit_type: str, m: int
) -> str:
    unit, valid = _unit_sql(privacy_unit, unit_type)
    rows = f"""(SELECT {unit} AS u, cands.i AS i FROM data JOIN cands ON {col_match} = cands.v
               WHERE {valid})"""
    pairs = "(SELECT * FROM unit_rows)" if m == 1 else "(SELECT DISTINCT u, i FROM unit_rows)"
    chosen = "arg_min(i, x)" if m == 1 else f"unnest(arg_min(i, x, {m}))"
    return f"""
        WITH cands AS ({cands}), unit_rows AS {rows}, unit_pairs AS {pairs}
        SELECT i, count(*) AS n
        FROM (SELECT {chosen} AS i FROM {_keyed_sql("unit_pairs", "i", unit_type)} GROUP BY u)
        GROUP BY i
    """


def previous_candidate_scores(
    table: Table, column: str, candidates: list[Any], privacy_unit: str, m: int, salt: int
) -> np.ndarray:
    """``candidate_scores(table, column, candidates, privacy_unit, m, salt)`` by the old plan."""
    col_type = table.require_column(column)
    unit_type = table.require_column(privacy_unit, "privacy_unit")
    col_match, cand_match = match_sql(f"data.{_quote(column)}", col_type, candidates)
    with _candidates_source(table, candidates, False) as (source, params):
        cands = f"SELECT {cand_match} AS v, i FROM {source}"
        sql = _bounded_scores_sql(col_match, cands, privacy_unit, unit_type, m)
        found = table.query_numpy(sql, params | {"salt": salt_text(salt)})
    scores = np.zeros(len(candidates), dtype=np.int64)
    scores[np.asarray(found["i"], dtype=np.int64)] = np.asarray(found["n"], dtype=np.int64)
    return scores


def previous_top_values(
    table: Table, column: str, limit: int, privacy_unit: str, m: int, salt: int
) -> list[tuple[Any, int]]:
    """``top_values(table, column, limit, privacy_unit, m, salt)`` by the old plan."""
    col_type = table.require_column(column)
    col = normalised_sql(f"data.{_quote(column)}", col_type)
    unit_type = table.require_column(privacy_unit, "privacy_unit")
    unit, valid = _unit_sql(privacy_unit, unit_type)
    v_text = canonical_text_sql("v", "DOUBLE" if _is_floating(col_type) else col_type)
    code = _md5_bits_sql(_hashed_text_sql("v", v_text), 4)
    rows = f"""(SELECT {unit} AS u, vals.v AS v, vals.w AS w
               FROM data JOIN vals ON {col} = vals.v WHERE {valid})"""
    pairs = "(SELECT DISTINCT u, v, w FROM unit_rows)"
    if m == 1:
        pairs = "(SELECT * FROM unit_rows)"
    rank = "{'k': x, 'v': v}"
    chosen = f"arg_min(v, {rank})" if m == 1 else f"unnest(arg_min(v, {rank}, {m}))"
    counted = f"""
        WITH vals AS (SELECT v, {code} AS w
                      FROM (SELECT DISTINCT {col} AS v FROM data
                            WHERE data.{_quote(column)} IS NOT NULL)),
             unit_rows AS {rows}, unit_pairs AS {pairs}
        SELECT v, count(*) AS n
        FROM (SELECT {chosen} AS v FROM {_keyed_sql("unit_pairs", "w", unit_type)} GROUP BY u)
        GROUP BY v
    """
    sql = f"SELECT v, n FROM ({counted}) ORDER BY n DESC, v LIMIT {int(limit)}"
    return [(v, int(n)) for v, n in table.query(sql, {"salt": salt_text(salt)})]
