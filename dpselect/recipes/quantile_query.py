"""A quantile query checked from public facts only, before anything is charged: the levels, the
bounds or candidates, the method, the column's type and the privacy unit
(:class:`QuantileQuery`, :func:`check_query`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..core.errors import DataError, ParameterError
from ..data.candidates import load_candidates
from ..data.column_roles import check_column_role, recorded_step
from ..data.engine import Engine
from ..data.tables import open_table
from ..mechanisms.quantile_continuous import check_bounds, check_resolution
from ..mechanisms.quantile_joint_parameters import MAX_JOINT_LEVELS
from ..mechanisms.quantile_recursive import recursive_depth
from ..mechanisms.quantile_score import quantile_fraction
from ..mechanisms.validate import check_user_epsilon
from ..planning.epsilon_range import check_epsilon_range
from ..planning.quantile_request import check_rows_per_unit
from ._common import NUMERIC_TYPES, check_confidence

__all__ = [
    "JOINT_AUTO_MAX_LEVELS",
    "QuantileQuery",
    "check_numeric_column",
    "check_query",
    "check_rows_per_unit",
    "check_unit_column",
]

#: ``mechanism="auto"`` uses the joint mechanism for 2 to this many levels (docs/quantiles.md).
JOINT_AUTO_MAX_LEVELS = 20
_METHODS = ("auto", "split", "recursive", "joint", "tree")


def _numeric_candidates(candidates: Any) -> list[float]:
    values = load_candidates(candidates)
    out: list[float] = []
    for v in values:
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise ParameterError(f"candidates must be numbers, got {v!r}") from None
        if not math.isfinite(f):
            raise ParameterError(f"candidates must be finite numbers, got {v!r}")
        out.append(f)
    if len(set(out)) != len(out):
        raise ParameterError("candidates must be distinct numbers")
    return out


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


def _levels(q: Any) -> tuple[list[float], list[Fraction]]:
    qs: list[Any] = list(q) if isinstance(q, (list, tuple)) else [q]
    if not qs:
        raise ParameterError("q must be a number in [0, 1] or a non-empty list of them")
    levels = [quantile_fraction(v) for v in qs]
    return [float(v) for v in qs], levels


def _choose_method(method: str, m: int, bounds: bool) -> str:
    if method not in _METHODS:
        raise ParameterError(
            f"mechanism must be one of {', '.join(repr(x) for x in _METHODS)}, got {method!r}"
        )
    if method in ("recursive", "joint", "tree") and not bounds:
        raise ParameterError(f"mechanism={method!r} needs bounds (not candidates)")
    if method == "joint" and m > MAX_JOINT_LEVELS:
        raise ParameterError(f"mechanism='joint' takes at most {MAX_JOINT_LEVELS} levels, got {m}")
    if method != "auto":
        return method
    # Public parameters only (m): docs/quantiles.md, "Choosing the method", has the evidence.
    if not bounds or m == 1:
        return "split"
    if m <= JOINT_AUTO_MAX_LEVELS:
        return "count"  # a paid noisy row count picks the tree or the joint mechanism
    return "recursive" if recursive_depth(m) < m else "split"


@dataclass(frozen=True)
class QuantileQuery:
    """A quantile query with public bounds or candidates and a fixed ``max_rows``, checked.

    Every attribute is a public fact (the parameters, the schema); nothing has been read or
    charged.

    Attributes
    ----------
    column : str
        The numeric column.
    given, levels : list
        The levels as given (floats) and as the mechanisms use them (exact fractions).
    eps : Fraction
        The total epsilon.
    conf : float
        The confidence of the accuracy statements.
    cands : list of float or None
        The public candidates (``None``: bounds).
    lo_hi : (float, float) or None
        The public bounds (``None``: candidates).
    resolution : float or None
        The resolution as given; ``w`` is the checked one (``None`` for candidates).
    chosen : str
        The method (:func:`_choose_method`): ``"count"`` is the auto rule's noisy row count.
    rows : int
        The most rows one unit keeps (1 without a unit).
    privacy_unit : str or None
        The unit column.
    table : Engine
        The opened table (its schema only was read).
    notes : list of str
        The notes on the column and the unit the result shows.
    step : Fraction or None
        The grid the column's type puts values on (``None``: a float or text column).
    """

    column: str
    given: list[float]
    levels: list[Fraction]
    eps: Fraction
    conf: float
    cands: list[float] | None
    lo_hi: tuple[float, float] | None
    resolution: float | None
    w: float | None
    chosen: str
    rows: int
    privacy_unit: str | None
    table: Engine
    notes: list[str]
    step: Fraction | None


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
    eps = Fraction(check_user_epsilon(epsilon))
    check_epsilon_range(eps)
    given, levels = _levels(q)
    conf = check_confidence(confidence)
    if (bounds is None) == (candidates is None):
        raise ParameterError(
            "give exactly one of bounds=(lo, hi) (continuous mechanism) and candidates "
            "(a public list of numbers)"
        )
    cands = _numeric_candidates(candidates) if candidates is not None else None
    lo_hi = check_bounds(bounds) if bounds is not None else None
    if resolution is not None and lo_hi is None:
        raise ParameterError("resolution applies to bounds (the continuous mechanism) only")
    w = check_resolution(resolution, *lo_hi) if lo_hi is not None else None
    chosen = _choose_method(mechanism, len(levels), lo_hi is not None)
    if chosen == "tree" and resolution is not None:
        raise ParameterError("resolution does not apply to mechanism='tree' (its leaves are fixed)")
    # the schema only, before anything is charged (the joint mechanism's default resolution
    # reads the grid the column's type puts values on)
    table = open_table(data, schema=schema)
    note = check_numeric_column(table, data, column)
    unit_note = check_unit_column(table, privacy_unit, rows)
    step = recorded_step(table.require_column(column, "column"))
    notes = ([] if note is None else [note]) + unit_note
    return QuantileQuery(column, given, levels, eps, conf, cands, lo_hi, resolution, w, chosen,
                         rows, privacy_unit, table, notes, step)  # fmt: skip
