"""The column expressions every plan of the Spark engine shares: a name quoted for Spark SQL
(:func:`_spark_quote`), a column read as a double (:func:`_as_double`, :func:`_try_cast`),
floating values as grouped (:func:`_normalised`: ``-0.0`` is ``0.0``), the privacy unit as
grouped with the condition for a row to have one (:func:`_unit_rows`), a number kept by the rule
of :func:`dpselect.data.rules.number_kept_sql` (:func:`_number_kept`), a SQL template on a named
column (:func:`_expr_on`), a (user, value) group's rows capped (:func:`_capped_rows`), a frame's
session (:func:`_spark`), and small integer results fetched back to the driver
(:func:`_fetch_pairs`, :func:`_fetch_longs`: Arrow when available). No plan of their own: the
building blocks of the package's other modules.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ...values import number_kept_sql
from ..spark_session import import_pyspark as _import_pyspark
from .progress import collect, run_action


def _spark_quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _as_double(col: Any, duck_type: str) -> Any:
    """The value as a double, NULL when it is not a number (text parsed by Spark's cast)."""
    if duck_type == "VARCHAR" and hasattr(col, "try_cast"):  # pyspark >= 4: ANSI casts raise
        return col.try_cast("double")
    return col.cast("double")


def _fetch_pairs(frame: Any) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The two integer columns of a small result, as arrays (Arrow when available)."""
    first, second = _fetch_longs(frame, 2)
    return first, second


def _fetch_longs(frame: Any, width: int) -> tuple[npt.NDArray[np.int64], ...]:
    """The first ``width`` integer columns of a small result, as arrays (Arrow when
    available)."""
    to_arrow = getattr(frame, "toArrow", None)
    if to_arrow is not None:
        table = run_action(to_arrow)
        return tuple(
            np.asarray(table.column(j).to_numpy(zero_copy_only=False), dtype=np.int64)
            for j in range(width)
        )
    rows = collect(frame)  # pragma: no cover - pyspark 3.5
    return tuple(np.asarray([r[j] for r in rows], dtype=np.int64) for j in range(width))


def _spark(frame: Any) -> Any:
    return frame.sparkSession


_FLOATING = ("FLOAT", "DOUBLE")


def _capped_rows(r: int) -> Any:
    """``w = least(count(*), r)``: a (user, value) group's rows, at most ``r``."""
    sql = _import_pyspark()
    f = sql.functions
    return f.least(f.count(f.lit(1)), f.lit(int(r)).cast("long")).alias("w")


def _expr_on(col: Any, template: str) -> Any:
    """The SQL ``template`` with ``__T__`` standing for ``col`` (a named column of the plan)."""
    sql = _import_pyspark()
    return sql.functions.expr(template.replace("__T__", f"`{col}`"))


def _number_kept(name: str) -> Any:
    """:func:`dpselect.data.rules.number_kept_sql` on the named column ``name`` of the plan."""
    sql = _import_pyspark()
    return sql.functions.expr(number_kept_sql(_spark_quote(name)))


def _normalised(col: Any, duck_type: str) -> Any:
    """Floating values as grouped: plus 0.0 (-0.0 is 0.0); other types as they are."""
    sql = _import_pyspark()
    f = sql.functions
    return col.cast("double") + f.lit(0.0) if duck_type in _FLOATING else col


def _unit_rows(frame: Any, privacy_unit: str, unit_type: str) -> tuple[Any, Any]:
    """(the unit as grouped, the condition for a row to have one: not NULL, not NaN)."""
    sql = _import_pyspark()
    f = sql.functions
    unit = f.col(privacy_unit)
    valid = _number_kept(privacy_unit) if unit_type in _FLOATING else unit.isNotNull()
    return _normalised(unit, unit_type), valid


def _try_cast(col: Any, to: str) -> Any:
    return col.try_cast(to) if hasattr(col, "try_cast") else col.cast(to)
