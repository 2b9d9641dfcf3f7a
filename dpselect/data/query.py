"""The query value an engine answers: a column, the rule bounding each privacy unit, and the
groups.

A :class:`Query` names the column read, the :class:`UnitRule` (how many values, rows and
groups each privacy unit keeps, and the salts of the keyed rules that choose them:
docs/contribution_bounding.md) and, for a grouped release, the groups: a public list
(:class:`PublicGroups`) or the groups found in the data (:class:`PrivateGroups`). The methods
of :class:`dpselect.data.engine.Engine` take one query instead of repeating these parameters;
the kind of groups selects the result's shape (``Query[None]``, ``Query[PublicGroups]``,
``Query[PrivateGroups]``).

A :class:`UnitRule` checks its own fields when it is made (whole numbers at least 1, salts
at least 0), so no engine meets a bound it cannot apply; the other values carry what the
caller gave, checked by the engine before any row is read.
"""

from __future__ import annotations

import operator
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic

from ..core.errors import ParameterError, given

__all__ = ["PrivateGroups", "Progress", "PublicGroups", "Query", "UnitRule"]

#: ``progress(percent)``, ``0 .. 100``, called while a query runs (an engine may ignore it;
#: DuckDB reports its own query progress for a query over a second,
#: :mod:`dpselect.data.engines.duckdb_progress`).
Progress = Callable[[float], None] | None


@dataclass(frozen=True)
class UnitRule:
    """How each privacy unit's rows are bounded (docs/contribution_bounding.md).

    Parameters
    ----------
    privacy_unit : str or None, default None
        The privacy unit column; ``None``: each row is its own unit (no bounding: the other
        fields keep their defaults).
    values_per_unit : int, default 1
        ``m``: the most distinct values (candidates) each unit keeps
        (``max_contributions``).
    rows_per_value : int, default 1
        ``r``: each kept value adds the unit's rows with it, at most ``r``
        (``max_rows_per_value``; other than 1 only with a privacy unit).
    rows_per_unit : int, default 1
        The most rows each unit keeps where numbers are read (``max_rows``).
    groups_per_unit : int, default 1
        The most groups each unit keeps in a grouped release (``max_groups``).
    salt : int, default 0
        The salt of the keyed rule choosing each unit's values or rows, drawn independently
        of the data.
    group_salt : int, default 0
        The salt of the keyed rule choosing each unit's groups.
    """

    privacy_unit: str | None = None
    values_per_unit: int = 1
    rows_per_value: int = 1
    rows_per_unit: int = 1
    groups_per_unit: int = 1
    salt: int = 0
    group_salt: int = 0

    def __post_init__(self) -> None:
        unit = self.privacy_unit
        if unit is not None and (not isinstance(unit, str) or not unit):
            raise ParameterError(
                f"UnitRule(privacy_unit=...) must be None or a column name, got {given(unit)}"
            )
        for name in ("values_per_unit", "rows_per_value", "rows_per_unit", "groups_per_unit"):
            _whole(name, getattr(self, name), 1)
        for name in ("salt", "group_salt"):
            _whole(name, getattr(self, name), 0)


def _whole(name: str, value: Any, least: int) -> None:
    """``UnitRule(name=value)`` refused unless ``value`` is an integer (a NumPy integer too,
    not a bool) at least ``least``."""
    try:
        n = None if isinstance(value, bool) else operator.index(value)
    except TypeError:
        n = None
    if n is None or n < least:
        raise ParameterError(
            f"UnitRule({name}=...) must be an integer at least {least}, got {given(value)}"
        )


@dataclass(frozen=True)
class PublicGroups:
    """The public group list of a grouped release, matched on the column ``by`` as candidates
    are matched on the ranked column.

    Parameters
    ----------
    by : str
        The group column.
    groups : sequence
        The public groups, in the order of the results.
    """

    by: str
    groups: Sequence[Any]


@dataclass(frozen=True)
class PrivateGroups:
    """The groups of ``by`` found in the data (private groups: each with its persons, the
    score of the group selection; :mod:`dpselect.data.discovered_groups`).

    Parameters
    ----------
    by : str
        The group column.
    """

    by: str


G = typing.TypeVar("G", None, PublicGroups, PrivateGroups)


@dataclass(frozen=True)
class Query(Generic[G]):
    """What an engine reads: the column, the unit rule, the groups and a progress callback.

    Parameters
    ----------
    column : str
        The column read (ranked, counted or read as numbers).
    rule : UnitRule, default UnitRule()
        How each unit's rows are bounded.
    groups : PublicGroups, PrivateGroups or None, default None
        The groups of a grouped release; ``None``: ungrouped.
    progress : callable or None, default None
        Called with the percentage of the scan done while the query runs.
    """

    column: str
    rule: UnitRule = field(default_factory=UnitRule)
    groups: G = None  # type: ignore[assignment]
    progress: Progress = None
