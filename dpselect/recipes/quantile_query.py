"""A quantile query checked from public facts only, before anything is charged: the levels, the
bounds or candidates, the method, the column's type and the privacy unit
(:func:`check_query`, which builds the planner's
:class:`~dpselect.planning.quantile_query.QuantileQuery`)."""

from __future__ import annotations

from typing import Any

from ..core.errors import DataError
from ..data.column_roles import check_column_role, recorded_step
from ..data.engine import Engine
from ..data.tables import open_table
from ..planning.quantile_checks import (
    JOINT_AUTO_MAX_LEVELS,
    check_release_arguments,
)
from ..planning.quantile_query import QuantileQuery
from ..planning.quantile_request import check_rows_per_unit
from ._common import NUMERIC_TYPES

__all__ = [
    "JOINT_AUTO_MAX_LEVELS",
    "check_numeric_column",
    "check_query",
    "check_rows_per_unit",
    "check_unit_column",
]


def check_numeric_column(table: Engine, data: Any, column: str) -> str | None:
    """Refuse a column whose known type is not numeric; a note for untyped text columns.

    Decided from the public schema only, before anything is charged.
    """
    kind = check_column_role(table, column, "numeric").upper()
    if kind.startswith(NUMERIC_TYPES):
        return None
    if table.column_type_known(column) or not kind.startswith("VARCHAR"):
        raise DataError(f"column {column!r} has type {kind}: a quantile needs a numeric column")
    return (
        f"note: column {column!r} is text (CSV/JSON columns have no type): values that do not "
        f"parse as numbers were counted as missing; declare the type with --schema "
        f"{column}:DOUBLE (Python: schema={{{column!r}: 'DOUBLE'}})"
    )


def check_unit_column(table: Engine, privacy_unit: str | None, max_rows: int) -> list[str]:
    """The privacy unit's column through the column gate and its injective key (public facts,
    before any charge); the note the result shows about it (none without a unit)."""
    if privacy_unit is None:
        return []
    check_column_role(table, privacy_unit, "unit", "privacy_unit")
    table.unit_column(privacy_unit)
    return [
        f"privacy unit: {privacy_unit!r} (epsilon protects all the rows of one unit); each unit "
        f"keeps at most max_rows = {max_rows} rows, chosen by the salted keyed rule "
        "(docs/contribution_bounding.md, 'Rows per unit'); n in the accuracy lines counts the "
        "kept rows"
    ]


def check_query(
    data: Any,
    column: str,
    q: Any,
    epsilon: float,
    bounds: Any,
    candidates: Any,
    *,
    confidence: float,
    resolution: float | None,
    mechanism: str,
    schema: Any,
    privacy_unit: str | None,
    rows: int,
) -> QuantileQuery:
    """Every public check of a quantile with fixed bounds or candidates, in the order the
    messages are given, then the table's schema (opened, not read).

    Parameters
    ----------
    data, column, q, epsilon, bounds, candidates, confidence, resolution, mechanism, schema
        As for :func:`dpselect.recipes.quantiles.quantile`.
    privacy_unit : str or None
        The unit column.
    rows : int
        The most rows one unit keeps (checked by :func:`check_rows_per_unit`).

    Returns
    -------
    QuantileQuery
        The checked query.
    """
    checked = check_release_arguments(q, epsilon, bounds, candidates, confidence=confidence,
                                      resolution=resolution, mechanism=mechanism)  # fmt: skip
    eps, given, levels, conf = checked.eps, checked.given, checked.levels, checked.conf
    cands, lo_hi, w, chosen = checked.cands, checked.lo_hi, checked.w, checked.chosen
    # the schema only, before anything is charged (the joint mechanism's default resolution
    # reads the grid the column's type puts values on)
    table = open_table(data, schema=schema)
    note = check_numeric_column(table, data, column)
    unit_note = check_unit_column(table, privacy_unit, rows)
    step = recorded_step(table.require_column(column, "column"))
    notes = ([] if note is None else [note]) + unit_note
    return QuantileQuery(column, given, levels, eps, conf, cands, lo_hi, resolution, w, chosen,
                         rows, privacy_unit, table, notes, step)  # fmt: skip
