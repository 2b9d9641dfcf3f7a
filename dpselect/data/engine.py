"""The engine interface: what an engine of the data layer must compute.

An engine holds the data (a DuckDB view, a Spark frame) with its public schema and turns a
query into a small result for the driver: a bounded score vector over public candidates,
counts for partition selection, values or a histogram for quantiles, buyer counts for
pricing. Selection, noise and the ledger stay in the driver. Every engine follows the rules
of :mod:`dpselect.data.rules` (canonical text, matching, the keyed bounding order, grids),
so the same data and salt give the same results in every engine (DuckDB is the test oracle).

The methods take a :class:`~dpselect.data.query.Query` (the column, the
:class:`~dpselect.data.query.UnitRule` bounding each privacy unit, and the groups), and the
kind of groups selects the shape of the result: ungrouped (``groups=None``), a public list
(:class:`~dpselect.data.query.PublicGroups`, results in list order) or the groups found in
the data (:class:`~dpselect.data.query.PrivateGroups`, a
:class:`~dpselect.data.discovered_groups.DiscoveredGroups`). What an engine can or cannot do
is declared in its :class:`Capabilities`.

The recipes (:mod:`dpselect.recipes`) call these methods and never ask
which engine they hold. The implementations: :class:`dpselect.data.tables.Table` (DuckDB,
its methods in :mod:`dpselect.data.engines.duckdb`) and
:class:`dpselect.data.engines.spark.SparkTable`; both take the dispatch on the kind of groups
(:meth:`Engine.scores`, :meth:`Engine.counts`, :meth:`Engine.numbers`,
:meth:`Engine.multiplicity`) from :class:`dpselect.data.engines.group_dispatch.GroupDispatch`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, overload, runtime_checkable

from .query import PrivateGroups, Progress, PublicGroups, Query

if TYPE_CHECKING:  # annotations only: importing the interface loads no heavy module
    import numpy as np
    import numpy.typing as npt

    from .discovered_groups import DiscoveredGroups

__all__ = ["Capabilities", "Cells", "Engine", "Progress", "UnitSize", "is_opened_table"]

#: What :meth:`Engine.unit_sizes` counts per unit: its distinct non-null values
#: (``max_contributions="auto"``) or its rows holding a number (``max_rows="auto"``).
UnitSize = Literal["values", "rows"]

#: The cells of a grouped score query: ``(group position, candidate position, score)``.
Cells = tuple["npt.NDArray[np.int64]", "npt.NDArray[np.int64]", "npt.NDArray[np.int64]"]


@dataclass(frozen=True)
class Capabilities:
    """What an engine can do, declared (public facts: the recipes ask these, never the
    engine's kind).

    Parameters
    ----------
    persons_in_driver : bool
        Whether :meth:`Engine.person_values` can hold each person's values in the driver
        (policy set union); an engine that cannot refuses it.
    progress : bool
        Whether the engine reports a query's progress to ``Query.progress``.
    """

    persons_in_driver: bool
    progress: bool


@runtime_checkable
class Engine(Protocol):
    """An opened data source (:func:`dpselect.data.tables.open_table`) and its engine.

    Attributes
    ----------
    name : str
        ``"duckdb"`` or ``"spark"``: for reports only.
    description : str
        The source, as error messages name it (``"file 'visits.csv'"``).
    columns : dict of str to str
        The public schema: column name -> DuckDB type name.
    arrow_types : dict of str to str
        Source types that the DuckDB type does not fully describe (a frame's zoned Arrow
        timestamps, :mod:`dpselect.data.column_roles`); empty when there are none.
    capabilities : Capabilities
        What the engine can do (:class:`Capabilities`).

    Notes
    -----
    With a privacy unit, each unit keeps what ``query.rule`` allows
    (docs/contribution_bounding.md): at most ``values_per_unit`` distinct values by the keyed
    order of ``salt``, each adding ``min(rows, rows_per_value)``; where numbers are read, at
    most ``rows_per_unit`` rows (:func:`dpselect.data.rules.kept_rows`). With groups, each unit
    first keeps at most ``groups_per_unit`` of its groups (:func:`dpselect.data.rules.
    kept_groups`, keyed by ``group_salt``; private groups are keyed by their value's code,
    :func:`dpselect.data.rules.kept_found_groups`), then in each kept group the ungrouped
    rule; one scan serves every group. ``rows_per_value > 1`` without a privacy unit is a
    :class:`~dpselect.core.errors.ParameterError`.
    """

    name: str
    description: str
    columns: dict[str, str]
    arrow_types: dict[str, str]
    capabilities: ClassVar[Capabilities]

    # ------------------------------------------------------------------- the schema
    def require_column(self, column: Any, argument: str = "column") -> str:
        """The column's DuckDB type; :class:`~dpselect.core.errors.DataError` naming
        ``argument`` when it is absent or of a type the engine cannot use (public facts)."""
        ...

    def unit_column(self, column: Any, argument: str = "privacy_unit") -> tuple[str, str]:
        """The column that keys the privacy unit ``column`` injectively, and its type."""
        ...

    def column_type_known(self, column: str) -> bool:
        """Whether the column's type is a public fact (not text parsed row by row)."""
        ...

    def multiplicity(self, of: str | PublicGroups, values: Sequence[Any] = ()) -> int:
        """The most entries of a public list one value matches, by this engine's matching
        (at least 1), from the schema and the list only (no row read, so public).

        Parameters
        ----------
        of : str or PublicGroups
            A column, matched against ``values`` (the candidates): the L1 sensitivity of
            :meth:`scores` without a privacy unit. Or a public group list: the most of its
            groups one value of ``by`` matches (an empty list: 1), how many groups one row
            may touch without a privacy unit.
        values : sequence, default ()
            The candidates (with a column only).

        Returns
        -------
        int
            The multiplicity.
        """
        ...

    # ------------------------------------------------------------------- scores
    @overload
    def scores(self, query: Query[None], candidates: Sequence[Any]) -> npt.NDArray[np.int64]: ...
    @overload
    def scores(self, query: Query[PublicGroups], candidates: Sequence[Any]) -> Cells: ...
    @overload
    def scores(self, query: Query[PrivateGroups], candidates: Sequence[Any]) -> DiscoveredGroups:
        """The bounded score of every candidate: the rows (or units) matching it.

        Parameters
        ----------
        query : Query
            The ranked column, the unit rule and the groups.
        candidates : sequence
            The public candidate list.

        Returns
        -------
        numpy.ndarray of int64, tuple of three arrays, or DiscoveredGroups
            Ungrouped: every candidate's score, in order. Public groups: the nonzero cells
            ``(group position, candidate position, score)`` sorted by group then candidate.
            Private groups: the groups found, their persons and those cells.
        """
        ...

    # ------------------------------------------------------------------- partition selection
    @overload
    def counts(self, query: Query[None], limit: int | None = None) -> list[tuple[Any, int]]: ...
    @overload
    def counts(
        self, query: Query[PublicGroups], limit: int | None = None
    ) -> list[list[tuple[Any, int]]]: ...
    @overload
    def counts(self, query: Query[PrivateGroups], limit: int | None = None) -> DiscoveredGroups:
        """Every value of the column with its bounded count (the units keeping it; without a
        privacy unit, its rows), largest first, ties by value, at most ``limit``.

        Parameters
        ----------
        query : Query
            The counted column, the unit rule and the groups.
        limit : int or None, default None
            The most values returned (per group); ``None``: all.

        Returns
        -------
        list of (object, int), list of such lists, or DiscoveredGroups
            Ungrouped: the ``(value, count)`` pairs. Public groups: one list per group, in
            list order. Private groups: the groups found, their persons and their lists.
        """
        ...

    def person_values(self, query: Query[None]) -> list[list[Any]]:
        """Each unit's kept values, units in the keyed order (policy set union; with
        ``rows_per_value = r > 1`` each kept value once per row, at most ``r``). Needs a
        privacy unit, and ``capabilities.persons_in_driver`` (else refused)."""
        ...

    def unit_sizes(self, query: Query[None], what: UnitSize) -> npt.NDArray[np.int64]:
        """Each unit's number of distinct non-null values (``"values"``) or of rows with a
        number (``"rows"``) in the column, one entry per unit: what ``"auto"`` bounds read."""
        ...

    # ------------------------------------------------------------------- numbers
    @overload
    def numbers(self, query: Query[None]) -> npt.NDArray[np.float64]: ...
    @overload
    def numbers(self, query: Query[PublicGroups]) -> list[npt.NDArray[np.float64]]: ...
    @overload
    def numbers(self, query: Query[PrivateGroups]) -> DiscoveredGroups:
        """The column's numbers as float64 (NULL, NaN and text that is no number dropped, row
        by row), of the rows each unit keeps (at most ``rows_per_unit``) with a privacy unit.

        Parameters
        ----------
        query : Query
            The numeric column, the unit rule and the groups.

        Returns
        -------
        numpy.ndarray of float64, list of arrays, or DiscoveredGroups
            Ungrouped: the numbers. Public groups: one array per group, in list order.
            Private groups: the groups found, their persons and their numbers.
        """
        ...

    def quantile_values(
        self,
        query: Query[None],
        candidates: Sequence[float] | None = None,
        bounds: tuple[float, float] | None = None,
        resolution: float | None = None,
    ) -> npt.NDArray[np.float64]:
        """The rows as the quantile mechanisms read them: every value, or stand-ins from a
        histogram over the candidates or a public grid of ``bounds`` (same scores)."""
        ...

    def grid_width(self, bounds: tuple[float, float], resolution: float | None) -> float | None:
        """The widest cell of the grid :meth:`quantile_values` rounds rows to in the bounds
        mode (an extra accuracy error), or ``None`` when the rows are not rounded."""
        ...

    def buyers_at(self, query: Query[None], prices: Sequence[float]) -> npt.NDArray[np.int64]:
        """``#{rows with value >= p}`` for each price ``p`` (values as in :meth:`numbers`):
        what the revenue scores of pricing read."""
        ...


def is_opened_table(data: Any) -> bool:
    """Whether ``data`` is a table dpselect opened (an :class:`Engine` of its own classes).

    ``isinstance(data, Engine)`` alone is not enough: the protocol check asks whether each
    member exists, and a Spark Connect DataFrame answers every attribute name with a
    ``Column``, so it would pass as an opened table and fail on the first call."""
    return type(data).__module__.startswith("dpselect.") and isinstance(data, Engine)
