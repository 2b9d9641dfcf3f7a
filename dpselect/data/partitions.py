"""Per-value person counts for partition selection and unknown-domain top-k.

Every non-NULL value of a column is a partition. Its count is the number of persons having it
after contribution bounding (each person keeps at most ``max_contributions`` of their values,
chosen by :mod:`dpselect.data.scores`' salted rule, which reads only that person's rows and the
salt): one person changes at most ``max_contributions`` counts, each by 1, all the same way.
Without a privacy unit each row is a person and counts are row counts (``max_contributions``
is 1). The query itself is :func:`dpselect.data.scores.top_values` with no limit, so the
bounding rule is the one the rest of the data layer uses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .scores import top_values
from .tables import Table

__all__ = ["value_counts"]

#: No limit in practice: every value with a positive count (a Java int, so that the Spark
#: engine's ``limit`` accepts it too).
_ALL = (1 << 31) - 1


def value_counts(
    table: Table,
    column: str,
    privacy_unit: str | None = None,
    max_contributions: int = 1,
    salt: int = 0,
    progress: Callable[[float], None] | None = None,
) -> dict[Any, int]:
    """``{value: persons}`` for every non-NULL value of ``column`` (module docstring)."""
    rows = top_values(table, column, _ALL, privacy_unit, max_contributions, salt, progress)
    return {value: int(n) for value, n in rows}
