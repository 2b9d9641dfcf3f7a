"""A pure-Python reference of the grouped rule (docs/contribution_bounding.md, "Groups per
unit"), built only from :mod:`dpselect.data.rules`, for any engine's grouped methods.

Each function takes the rows (a list of dicts, column name -> Python value; ``None`` is NULL)
with their column types (DuckDB names: ``VARCHAR``, ``BIGINT``, ``DOUBLE``, ``DATE``) and the
method's parameters, and returns what the engine method returns:

- :func:`candidate_scores`: ``(g, i, n)`` int64 arrays, nonzero cells, sorted by (g, i);
- :func:`value_counts`: one list per group of ``(value, count)``, count descending then value;
- :func:`values`: one sorted float64 array per group.

Matching (of candidates on ``column`` and groups on ``by``) covers what the tests use: a value
equals a candidate of its own type (floats compared as numbers, so ``-0.0`` is ``0.0``); on a
text column, numeric candidates (:func:`dpselect.data.values.numeric_candidate_type`) match
texts that are plain decimal numbers by value (``DOUBLE``: any such text; ``BIGINT``: texts of
integers only).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpselect.data.rules import bounding_key, kept_groups, kept_rows, value_code
from dpselect.data.values import canonical_text, numeric_candidate_type

Rows = Sequence[dict[str, Any]]


def _is_missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _normal(x: Any) -> Any:
    """A value as grouped: floats plus 0.0 (``-0.0`` is ``0.0``)."""
    return x + 0.0 if isinstance(x, float) else x


def _order(x: Any) -> tuple[Any, ...]:
    """The engines' order of values of one type: NaN after every number."""
    if isinstance(x, float):
        return (math.isnan(x), 0.0 if math.isnan(x) else x)
    return (False, x)


def _text_number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def matcher(col_type: str, candidates: Sequence[Any]):
    """A function: value -> the positions of the candidates it matches."""
    number = numeric_candidate_type(candidates) if col_type == "VARCHAR" else None

    def match(value: Any) -> list[int]:
        if value is None:
            return []
        if number is not None:
            x = _text_number(value)
            if x is None or (number == "BIGINT" and not value.strip().lstrip("-").isdigit()):
                return []
            return [i for i, c in enumerate(candidates) if float(c) == x]
        if col_type == "DOUBLE":
            return [
                i
                for i, c in enumerate(candidates)
                if isinstance(c, (int, float)) and not isinstance(c, bool) and float(c) == value
            ]
        return [i for i, c in enumerate(candidates) if type(c) is type(value) and c == value]

    return match


def _unit_text(unit: Any) -> str:
    return canonical_text(_normal(unit))


def _cells(
    rows: Rows,
    types: dict[str, str],
    by: str,
    groups: Sequence[Any],
    privacy_unit: str | None,
    cell: Any,
) -> list[tuple[str | None, int, Any]]:
    """Every (unit text, group, cell) a row gives: rows with no group, no cell (``cell``
    returns ``None``) or a missing unit dropped; a row matching two groups gives two."""
    group_of = matcher(types[by], groups)
    out = []
    for row in rows:
        unit = None
        if privacy_unit is not None:
            if _is_missing(row[privacy_unit]):
                continue
            unit = _unit_text(row[privacy_unit])
        c = cell(row)
        if c is None:
            continue
        for g in group_of(row[by]):
            out.append((unit, g, c))
    return out


def _kept_cells(
    cells: list[tuple[str | None, int, Any]], max_groups: int, group_salt: int
) -> dict[tuple[str, int], list[Any]]:
    """Each unit's cells in each of its kept groups (:func:`kept_groups`)."""
    per_unit: dict[str, list[tuple[int, Any]]] = {}
    for unit, g, c in cells:
        assert unit is not None
        per_unit.setdefault(unit, []).append((g, c))
    out: dict[tuple[str, int], list[Any]] = {}
    for unit, items in per_unit.items():
        kept = set(kept_groups(group_salt, unit, [g for g, _ in items], max_groups))
        for g, c in items:
            if g in kept:
                out.setdefault((unit, g), []).append(c)
    return out


def candidate_scores(
    rows: Rows,
    types: dict[str, str],
    column: str,
    candidates: Sequence[Any],
    by: str,
    groups: Sequence[Any],
    privacy_unit: str | None = None,
    max_groups: int = 1,
    max_contributions: int = 1,
    salt: int = 0,
    group_salt: int = 0,
    max_rows_per_value: int = 1,
):
    """The reference of ``grouped_candidate_scores``."""
    match = matcher(types[column], candidates)

    def cell(row: dict[str, Any]) -> Any:
        return tuple(match(row[column])) or None

    cells = _cells(rows, types, by, groups, privacy_unit, cell)
    scores: dict[tuple[int, int], int] = {}
    if privacy_unit is None:
        for _, g, positions in cells:
            for i in positions:
                scores[g, i] = scores.get((g, i), 0) + 1
    else:
        for (unit, g), lists in _kept_cells(cells, max_groups, group_salt).items():
            copies: dict[int, int] = {}
            for positions in lists:
                for i in positions:
                    copies[i] = copies.get(i, 0) + 1
            chosen = sorted(copies, key=lambda i: (bounding_key(salt, unit, i), i))
            for i in chosen[:max_contributions]:
                scores[g, i] = scores.get((g, i), 0) + min(copies[i], max_rows_per_value)
    keys = sorted(scores)
    g = np.asarray([k[0] for k in keys], dtype=np.int64)
    i = np.asarray([k[1] for k in keys], dtype=np.int64)
    n = np.asarray([scores[k] for k in keys], dtype=np.int64)
    return g, i, n


def value_counts(
    rows: Rows,
    types: dict[str, str],
    column: str,
    by: str,
    groups: Sequence[Any],
    limit: int | None = None,
    privacy_unit: str | None = None,
    max_groups: int = 1,
    max_contributions: int = 1,
    salt: int = 0,
    group_salt: int = 0,
    max_rows_per_value: int = 1,
) -> list[list[tuple[Any, int]]]:
    """The reference of ``grouped_value_counts`` (values grouped by their canonical text)."""

    def cell(row: dict[str, Any]) -> Any:  # a NaN is a missing value (issue 41), not a value
        return None if _is_missing(row[column]) else _normal(row[column])

    cells = _cells(rows, types, by, groups, privacy_unit, cell)
    counts: list[dict[str, list[Any]]] = [{} for _ in groups]  # text -> [value, count]

    def add(g: int, value: Any, n: int) -> None:
        slot = counts[g].setdefault(canonical_text(value), [value, 0])
        slot[1] += n

    if privacy_unit is None:
        for _, g, value in cells:
            add(g, value, 1)
    else:
        for (unit, g), values in _kept_cells(cells, max_groups, group_salt).items():
            copies: dict[str, list[Any]] = {}
            for value in values:
                copies.setdefault(canonical_text(value), [value, 0])[1] += 1

            def key(text: str, unit: str = unit, copies: dict = copies) -> tuple[Any, ...]:
                code = value_code(salt, text)
                return (bounding_key(salt, unit, code), _order(copies[text][0]))

            for text in sorted(copies, key=key)[:max_contributions]:
                value, n = copies[text]
                add(g, value, min(n, max_rows_per_value))
    out = []
    for per_group in counts:
        ranked = sorted(per_group.values(), key=lambda vn: (-vn[1], _order(vn[0])))
        out.append([(v, n) for v, n in ranked[:limit]])
    return out


def _number(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    x = _text_number(value) if isinstance(value, str) else float(value)
    return None if x is None or math.isnan(x) else x + 0.0


def values(
    rows: Rows,
    types: dict[str, str],
    column: str,
    by: str,
    groups: Sequence[Any],
    *,
    privacy_unit: str | None = None,
    max_groups: int = 1,
    max_rows: int = 1,
    salt: int = 0,
    group_salt: int = 0,
) -> list[np.ndarray]:
    """The reference of ``grouped_values`` (each group's numbers, sorted)."""
    cells = _cells(rows, types, by, groups, privacy_unit, lambda row: _number(row[column]))
    found: list[list[float]] = [[] for _ in groups]
    if privacy_unit is None:
        for _, g, x in cells:
            found[g].append(x)
    else:
        for (unit, g), xs in _kept_cells(cells, max_groups, group_salt).items():
            found[g] += kept_rows(salt, [(unit, x) for x in xs], max_rows).get(unit, [])
    return [np.sort(np.asarray(xs, dtype=np.float64)) for xs in found]


def kept_row_indices(
    rows: Rows,
    types: dict[str, str],
    by: str,
    groups: Sequence[Any],
    group: int,
    privacy_unit: str,
    max_groups: int,
    group_salt: int,
    keep: Any,
) -> list[int]:
    """The indices of the rows of ``group`` whose unit kept it: the rows an ungrouped method
    should see to give that group's grouped answer. ``keep(row)``: whether a row counts for
    the group rule (matches a candidate, holds a value or a number)."""
    group_of = matcher(types[by], groups)
    positions: dict[str, list[int]] = {}
    for row in rows:
        if _is_missing(row[privacy_unit]) or not keep(row):
            continue
        positions.setdefault(_unit_text(row[privacy_unit]), []).extend(group_of(row[by]))
    kept = {u: set(kept_groups(group_salt, u, ps, max_groups)) for u, ps in positions.items()}
    out = []
    for j, row in enumerate(rows):
        if _is_missing(row[privacy_unit]) or group not in group_of(row[by]):
            continue
        if group in kept.get(_unit_text(row[privacy_unit]), ()):
            out.append(j)
    return out
