"""What every application recipe shares: the ledger charge, confidence checks, JSON values.

The recipes follow :func:`dpselect.top_k`: validate public parameters, open the data,
calibrate, charge the ledger durably, and only then touch the private rows and release.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from fractions import Fraction
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from ..accounting.ledger import Ledger
from ..core.errors import ParameterError
from ..core.measurement import Measurement
from ..data.column_roles import check_column_role
from ..data.engine import Engine
from ..data.query import Query
from ..data.values import kept_numbers
from ..mechanisms.validate import check_confidence
from ..planning.contributions import AUTO_FRACTION

__all__ = [
    "AUTO_FRACTION",
    "CONFIDENCE",
    "NUMERIC_TYPES",
    "check_confidence",
    "column_values",
    "jsonable",
    "memory_values",
    "numeric_column",
    "open_ledger",
    "to_float",
]

T = TypeVar("T")
F64 = npt.NDArray[np.float64]

#: The confidence of every accuracy statement unless the caller asks for another.
CONFIDENCE = 0.95

#: Column types read as numbers, by the SQL names every engine reports (DECIMAL(p, s) is
#: matched by its prefix).
NUMERIC_TYPES = (
    "TINYINT",
    "SMALLINT",
    "INTEGER",
    "BIGINT",
    "HUGEINT",
    "UTINYINT",
    "USMALLINT",
    "UINTEGER",
    "UBIGINT",
    "UHUGEINT",
    "FLOAT",
    "DOUBLE",
    "DECIMAL",
)


def precompose(mechanism: Measurement, scores: Callable[[Any], Any]) -> Measurement:
    """``mechanism`` applied to ``scores(data)``: same domain, metric, measure and map.

    For a mechanism built over a score vector whose sensitivity *is* that of ``scores`` as a
    function of the data (the recipes compute every candidate's score in one pass, instead
    of once per candidate through ``make_exponential_mechanism``'s ``score(data, c)``).
    """
    return Measurement(
        input_domain=mechanism.input_domain,
        input_metric=mechanism.input_metric,
        output_measure=mechanism.output_measure,
        function=lambda data: mechanism(scores(data)),
        privacy_map=mechanism.privacy_map,
    )


def open_ledger(ledger: Any) -> Ledger | None:
    """A :class:`Ledger`, opened from a path when given one; ``None`` stays ``None``."""
    if ledger is None or isinstance(ledger, Ledger):
        return ledger
    if isinstance(ledger, (str, os.PathLike)):
        return Ledger.open(ledger)
    raise ParameterError(f"ledger must be a Ledger, a path or None, got {type(ledger).__name__}")


def numeric_column(table: Engine, column: str, argument: str = "column") -> None:
    """Refuse (from the public schema) a column that is neither numeric nor text.

    Text columns (CSV and JSON columns are read as text, so that the schema never depends on
    the rows) are parsed row by row; see :func:`column_values`.
    """
    check_column_role(table, column, "numeric", argument)


def column_values(table: Engine, column: str) -> F64:
    """The column as float64; NULL, NaN and unparseable rows are dropped.

    Each row is mapped on its own (``TRY_CAST(value AS DOUBLE)``, NULL when the text is not
    a number) and rows without a number are filtered out: a 1-stable row-by-row map, so the
    neighbouring relation and every sensitivity built on it carry over, and no row can cause
    an error. Values beyond 2^53 in integer columns are rounded to the nearest float.
    The engine that holds ``table`` computes it (:meth:`dpselect.data.engine.Engine.numbers`).
    """
    return table.numbers(Query(column))


def to_float(value: Any) -> float:
    """One value as a float, or NaN when it does not convert (never raises)."""
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            return math.nan
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return math.nan
    except Exception:  # a user object whose __float__ raises anything else
        return math.nan


def memory_values(values: Any) -> F64:
    """An in-memory sequence or array of private values as float64, like a table column.

    Each value is converted on its own, as :func:`column_values` does with ``TRY_CAST``: a
    number is kept, a text that parses as a number (Python's ``float``) is read, and anything
    else (``"abc"``, ``None``, a nested list, a huge integer, NaN) is *missing* and dropped. A
    1-stable row-by-row map: one value added or removed changes the output by that value
    alone, and no value can cause an error, so neither errors nor shapes depend on the rows.
    The caller checks the container's type (public) beforehand.
    """
    if isinstance(values, np.ndarray) and values.dtype.kind in "biuf":
        flat: F64 = values.astype(np.float64).ravel()
    else:
        items = values.ravel().tolist() if isinstance(values, np.ndarray) else list(values)
        flat = np.fromiter((to_float(v) for v in items), dtype=np.float64, count=len(items))
    return kept_numbers(flat)


def jsonable(value: Any) -> Any:
    """``value`` as a JSON type: numbers and strings as they are (a non-finite number as
    ``None``: strict JSON, :mod:`dpselect.core.jsonvalues`), anything else as ``str``."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if math.isfinite(v) else None  # strict JSON: no NaN, no Infinity
    if isinstance(value, Fraction):
        return float(value)
    return str(value)
