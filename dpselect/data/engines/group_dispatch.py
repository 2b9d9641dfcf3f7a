"""The dispatch on the kind of groups, shared by every engine.

The methods of :class:`dpselect.data.engine.Engine` that answer ungrouped, public-group and
private-group queries (:meth:`~GroupDispatch.scores`, :meth:`~GroupDispatch.counts`,
:meth:`~GroupDispatch.numbers`, :meth:`~GroupDispatch.multiplicity`) choose what to compute
from the kind of ``query.groups`` (``None``, :class:`~dpselect.data.query.PublicGroups` or
:class:`~dpselect.data.query.PrivateGroups`) and give each kind its result's type.
:class:`GroupDispatch` holds that choice and those typed signatures once; an engine
(:class:`dpselect.data.engines.duckdb.DuckDBEngine`,
:class:`dpselect.data.engines.spark.SparkTable`) implements one method per kind of groups
(``_ungrouped_scores``, ``_public_group_scores``, ``_private_group_scores``, ...) and may
wrap every query in its own context (:meth:`GroupDispatch._running`: Spark's progress
reports). The choice reads only the kind of the query's groups, a public fact.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, cast, overload

from ..query import PrivateGroups, PublicGroups, Query

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from ..discovered_groups import DiscoveredGroups
    from ..engine import Cells

__all__ = ["GroupDispatch"]

#: The value counts of :meth:`GroupDispatch.counts`: ``(value, count)`` pairs.
ValueCounts = list[tuple[Any, int]]


class GroupDispatch(ABC):
    """The methods of :class:`dpselect.data.engine.Engine` that dispatch on the kind of
    groups, over one abstract method per kind (an engine's base class)."""

    def _running(self, query: Query[Any]) -> AbstractContextManager[object]:
        """The context every dispatched query runs in (:meth:`scores`, :meth:`counts`,
        :meth:`numbers`): none here; an engine may report the query's progress in it."""
        return nullcontext()

    # ------------------------------------------------------------------- multiplicity
    def multiplicity(self, of: str | PublicGroups, values: Sequence[Any] = ()) -> int:
        """The most entries of a public list one value matches
        (:meth:`dpselect.data.engine.Engine.multiplicity`): a group list on ``by``
        (:meth:`_group_multiplicity`) or candidates on a column
        (:meth:`_column_multiplicity`)."""
        if isinstance(of, PublicGroups):
            return self._group_multiplicity(of)
        return self._column_multiplicity(of, values)

    @abstractmethod
    def _column_multiplicity(self, column: str, values: Sequence[Any]) -> int:
        """The most candidates of ``values`` one value of ``column`` matches."""

    @abstractmethod
    def _group_multiplicity(self, groups: PublicGroups) -> int:
        """The most groups of the list one value of ``groups.by`` matches."""

    # ------------------------------------------------------------------- scores
    @overload
    def scores(self, query: Query[None], candidates: Sequence[Any]) -> npt.NDArray[np.int64]: ...
    @overload
    def scores(self, query: Query[PublicGroups], candidates: Sequence[Any]) -> Cells: ...
    @overload
    def scores(
        self, query: Query[PrivateGroups], candidates: Sequence[Any]
    ) -> DiscoveredGroups: ...
    def scores(
        self, query: Query[Any], candidates: Sequence[Any]
    ) -> npt.NDArray[np.int64] | Cells | DiscoveredGroups:
        """The bounded scores (:meth:`dpselect.data.engine.Engine.scores`): ungrouped by
        :meth:`_ungrouped_scores`, public groups by :meth:`_public_group_scores`, private
        groups by :meth:`_private_group_scores`."""
        with self._running(query):
            if isinstance(query.groups, PublicGroups):
                return self._public_group_scores(cast("Query[PublicGroups]", query), candidates)
            if isinstance(query.groups, PrivateGroups):
                return self._private_group_scores(cast("Query[PrivateGroups]", query), candidates)
            return self._ungrouped_scores(cast("Query[None]", query), candidates)

    @abstractmethod
    def _ungrouped_scores(
        self, query: Query[None], candidates: Sequence[Any]
    ) -> npt.NDArray[np.int64]:
        """Every candidate's score, in order."""

    @abstractmethod
    def _public_group_scores(self, query: Query[PublicGroups], candidates: Sequence[Any]) -> Cells:
        """The nonzero cells ``(group position, candidate position, score)``."""

    @abstractmethod
    def _private_group_scores(
        self, query: Query[PrivateGroups], candidates: Sequence[Any]
    ) -> DiscoveredGroups:
        """The groups found, their persons and their cells."""

    # ------------------------------------------------------------------- counts
    @overload
    def counts(self, query: Query[None], limit: int | None = None) -> ValueCounts: ...
    @overload
    def counts(self, query: Query[PublicGroups], limit: int | None = None) -> list[ValueCounts]: ...
    @overload
    def counts(self, query: Query[PrivateGroups], limit: int | None = None) -> DiscoveredGroups: ...
    def counts(
        self, query: Query[Any], limit: int | None = None
    ) -> ValueCounts | list[ValueCounts] | DiscoveredGroups:
        """The bounded value counts (:meth:`dpselect.data.engine.Engine.counts`): ungrouped
        by :meth:`_ungrouped_counts`, public groups by :meth:`_public_group_counts`, private
        groups by :meth:`_private_group_counts`."""
        with self._running(query):
            if isinstance(query.groups, PublicGroups):
                return self._public_group_counts(cast("Query[PublicGroups]", query), limit)
            if isinstance(query.groups, PrivateGroups):
                return self._private_group_counts(cast("Query[PrivateGroups]", query), limit)
            return self._ungrouped_counts(cast("Query[None]", query), limit)

    @abstractmethod
    def _ungrouped_counts(self, query: Query[None], limit: int | None) -> ValueCounts:
        """The ``(value, count)`` pairs, largest first, at most ``limit``."""

    @abstractmethod
    def _public_group_counts(
        self, query: Query[PublicGroups], limit: int | None
    ) -> list[ValueCounts]:
        """One list of ``(value, count)`` pairs per group, in list order."""

    @abstractmethod
    def _private_group_counts(
        self, query: Query[PrivateGroups], limit: int | None
    ) -> DiscoveredGroups:
        """The groups found, their persons and their lists."""

    # ------------------------------------------------------------------- numbers
    @overload
    def numbers(self, query: Query[None]) -> npt.NDArray[np.float64]: ...
    @overload
    def numbers(self, query: Query[PublicGroups]) -> list[npt.NDArray[np.float64]]: ...
    @overload
    def numbers(self, query: Query[PrivateGroups]) -> DiscoveredGroups: ...
    def numbers(
        self, query: Query[Any]
    ) -> npt.NDArray[np.float64] | list[npt.NDArray[np.float64]] | DiscoveredGroups:
        """The column's numbers (:meth:`dpselect.data.engine.Engine.numbers`): ungrouped by
        :meth:`_ungrouped_numbers`, public groups by :meth:`_public_group_numbers`, private
        groups by :meth:`_private_group_numbers`."""
        with self._running(query):
            if isinstance(query.groups, PublicGroups):
                return self._public_group_numbers(cast("Query[PublicGroups]", query))
            if isinstance(query.groups, PrivateGroups):
                return self._private_group_numbers(cast("Query[PrivateGroups]", query))
            return self._ungrouped_numbers(cast("Query[None]", query))

    @abstractmethod
    def _ungrouped_numbers(self, query: Query[None]) -> npt.NDArray[np.float64]:
        """The numbers of the rows kept."""

    @abstractmethod
    def _public_group_numbers(self, query: Query[PublicGroups]) -> list[npt.NDArray[np.float64]]:
        """One array of numbers per group, in list order."""

    @abstractmethod
    def _private_group_numbers(self, query: Query[PrivateGroups]) -> DiscoveredGroups:
        """The groups found, their persons and their numbers."""
