"""The engine interface: what an engine of the data layer must compute.

An engine holds the data (a DuckDB view, a Spark frame) with its public schema and turns a
query into a small result for the driver: a bounded score vector over public candidates,
counts for partition selection, values or a histogram for quantiles, buyer counts for
pricing. Selection, noise and the ledger stay in the driver. Every engine follows the rules
of :mod:`dpselect.data.rules` (canonical text, matching, the keyed bounding order, grids),
so the same data and salt give the same results in every engine (DuckDB is the test oracle).

The recipes (:mod:`dpselect.recipes`) call these methods and never ask
which engine they hold. The implementations: :class:`dpselect.data.tables.Table` (DuckDB,
its methods in :mod:`dpselect.data.engines.duckdb`) and
:class:`dpselect.data.engines.spark.SparkTable`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # annotations only: importing the interface loads no heavy module
    import numpy as np
    import numpy.typing as npt

    from .discovered_groups import DiscoveredGroups

__all__ = ["Engine", "Progress", "is_opened_table"]

#: ``progress(percent)``, ``0 .. 100``, called while a query runs (an engine may ignore it;
#: DuckDB reports its own query progress for a query over a second,
#: :mod:`dpselect.data.engines.duckdb_progress`).
Progress = Callable[[float], None] | None


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
    holds_persons_in_driver : bool
        Whether :meth:`person_values` can hold each person's values in the driver (policy
        set union); an engine that cannot refuses it.
    """

    name: str
    description: str
    columns: dict[str, str]
    arrow_types: dict[str, str]
    holds_persons_in_driver: bool

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

    # ------------------------------------------------------------------- candidates
    def candidate_scores(
        self,
        column: str,
        candidates: Sequence[Any],
        privacy_unit: str | None = None,
        max_contributions: int = 1,
        salt: int = 0,
        progress: Progress = None,
        max_rows_per_value: int = 1,
    ) -> npt.NDArray[np.int64]:
        """The score of every candidate, in order: rows (or persons, each keeping at most
        ``max_contributions`` candidates by the keyed order of ``salt``) matching it. With
        ``max_rows_per_value = r > 1`` (a privacy unit only; else
        :class:`~dpselect.core.errors.ParameterError`) a person adds ``min(rows, r)`` to each
        kept candidate: L-infinity ``r``, L1 ``m r``, L0 ``m``."""
        ...

    def candidate_multiplicity(self, column: str, candidates: Sequence[Any]) -> int:
        """The most candidates one value of ``column`` matches, by this engine's matching:
        the L1 sensitivity of :meth:`candidate_scores` without a privacy unit (no row read)."""
        ...

    # ------------------------------------------------------------------- partition selection
    def top_values(
        self,
        column: str,
        limit: int,
        privacy_unit: str | None = None,
        max_contributions: int = 1,
        salt: int = 0,
        progress: Progress = None,
        max_rows_per_value: int = 1,
    ) -> list[tuple[Any, int]]:
        """The ``limit`` values with the largest bounded counts, ties by value
        (``max_rows_per_value`` as in :meth:`candidate_scores`)."""
        ...

    def value_counts(
        self,
        column: str,
        privacy_unit: str | None = None,
        max_contributions: int = 1,
        salt: int = 0,
        progress: Progress = None,
        max_rows_per_value: int = 1,
    ) -> dict[Any, int]:
        """``{value: persons}`` for every non-NULL value, after contribution bounding
        (``max_rows_per_value > 1``: each person's rows with the value, capped)."""
        ...

    def person_values(
        self,
        column: str,
        privacy_unit: str,
        max_contributions: int,
        salt: int = 0,
        progress: Progress = None,
        max_rows_per_value: int = 1,
    ) -> list[list[Any]]:
        """Each person's kept values, persons in the keyed order (policy set union;
        ``max_rows_per_value = r > 1``: each kept value once per row, at most ``r``)."""
        ...

    def contribution_counts(self, column: str, privacy_unit: str) -> npt.NDArray[np.int64]:
        """Each person's number of distinct non-null values (``max_contributions="auto"``)."""
        ...

    def row_counts(self, column: str, privacy_unit: str) -> npt.NDArray[np.int64]:
        """Each unit's number of rows with a number in ``column`` (``max_rows="auto"``)."""
        ...

    # ------------------------------------------------------------------- numbers
    # With ``privacy_unit``, the methods below read only the rows each unit keeps: at most
    # ``max_rows`` per unit, by the keyed rule of ``salt`` (:func:`dpselect.data.rules.
    # kept_rows`, docs/contribution_bounding.md "Rows per unit"); the defaults read every row.
    def column_values(
        self,
        column: str,
        *,
        privacy_unit: str | None = None,
        max_rows: int = 1,
        salt: int = 0,
    ) -> npt.NDArray[np.float64]:
        """The column as float64 (NULL, NaN and text that is no number dropped, row by row)."""
        ...

    def quantile_values(
        self,
        column: str,
        candidates: Sequence[float] | None = None,
        bounds: tuple[float, float] | None = None,
        resolution: float | None = None,
        progress: Progress = None,
        *,
        privacy_unit: str | None = None,
        max_rows: int = 1,
        salt: int = 0,
    ) -> npt.NDArray[np.float64]:
        """The rows as the quantile mechanisms read them: every value, or stand-ins from a
        histogram over the candidates or a public grid of ``bounds`` (same scores)."""
        ...

    def grid_width(self, bounds: tuple[float, float], resolution: float | None) -> float | None:
        """The widest cell of the grid :meth:`quantile_values` rounds rows to in the bounds
        mode (an extra accuracy error), or ``None`` when the rows are not rounded."""
        ...

    def buyers_at(
        self,
        column: str,
        prices: Sequence[float],
        *,
        privacy_unit: str | None = None,
        max_rows: int = 1,
        salt: int = 0,
    ) -> npt.NDArray[np.int64]:
        """``#{rows with value >= p}`` for each price ``p`` (values as in
        :meth:`column_values`): what the revenue scores of pricing read."""
        ...

    # ------------------------------------------------------------------- grouped releases
    # One scan for every group of a public list ``groups`` matched on the column ``by`` (as
    # candidates are matched on ``column``). With ``privacy_unit`` each unit first keeps at
    # most ``max_groups`` of its groups (:func:`dpselect.data.rules.kept_groups`, keyed by
    # ``group_salt``), then in each kept group the rule of the ungrouped method (keyed by
    # ``salt``): docs/contribution_bounding.md, "Groups per unit".
    def grouped_candidate_scores(
        self,
        column: str,
        candidates: Sequence[Any],
        by: str,
        groups: Sequence[Any],
        privacy_unit: str | None = None,
        max_groups: int = 1,
        max_contributions: int = 1,
        salt: int = 0,
        group_salt: int = 0,
        progress: Progress = None,
        max_rows_per_value: int = 1,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The nonzero scores of every (group, candidate) pair, as three arrays
        ``(group position, candidate position, score)`` sorted by group then candidate: in
        each group the scores of :meth:`candidate_scores` over that group's kept rows."""
        ...

    def grouped_value_counts(
        self,
        column: str,
        by: str,
        groups: Sequence[Any],
        limit: int | None = None,
        privacy_unit: str | None = None,
        max_groups: int = 1,
        max_contributions: int = 1,
        salt: int = 0,
        group_salt: int = 0,
        progress: Progress = None,
        max_rows_per_value: int = 1,
    ) -> list[list[tuple[Any, int]]]:
        """For each group (list order), its values with their bounded counts, largest first,
        ties by value, at most ``limit`` (``None``: all): :meth:`top_values` per group."""
        ...

    def grouped_values(
        self,
        column: str,
        by: str,
        groups: Sequence[Any],
        *,
        privacy_unit: str | None = None,
        max_groups: int = 1,
        max_rows: int = 1,
        salt: int = 0,
        group_salt: int = 0,
    ) -> list[npt.NDArray[np.float64]]:
        """For each group (list order), the numbers of ``column`` its kept rows hold (each
        unit keeps ``max_groups`` groups, then at most ``max_rows`` rows in each by
        :func:`dpselect.data.rules.kept_rows`), as :meth:`column_values` reads them."""
        ...

    def group_multiplicity(self, by: str, groups: Sequence[Any]) -> int:
        """The most groups of the list one value of ``by`` matches (public: schema and list):
        without a privacy unit, how many groups one row may touch."""
        ...

    # Private groups: every group of ``by`` found in the data, with its persons (the units
    # keeping it: the score of the group selection) and its scores, in one scan
    # (:mod:`dpselect.data.discovered_groups`; the group rule keys a group by its value's
    # code, :func:`dpselect.data.rules.kept_found_groups`).
    def discovered_candidate_scores(
        self,
        column: str,
        candidates: Sequence[Any],
        by: str,
        privacy_unit: str | None = None,
        max_groups: int = 1,
        max_contributions: int = 1,
        salt: int = 0,
        group_salt: int = 0,
        progress: Progress = None,
        max_rows_per_value: int = 1,
    ) -> DiscoveredGroups:
        """The groups found, their persons and the cells ``(group index, candidate position,
        score)``: :meth:`grouped_candidate_scores` over the groups found."""
        ...

    def discovered_value_counts(
        self,
        column: str,
        by: str,
        limit: int | None = None,
        privacy_unit: str | None = None,
        max_groups: int = 1,
        max_contributions: int = 1,
        salt: int = 0,
        group_salt: int = 0,
        progress: Progress = None,
        max_rows_per_value: int = 1,
    ) -> DiscoveredGroups:
        """The groups found, their persons and their value lists: :meth:`grouped_value_counts`
        over the groups found."""
        ...

    def discovered_values(
        self,
        column: str,
        by: str,
        *,
        privacy_unit: str | None = None,
        max_groups: int = 1,
        max_rows: int = 1,
        salt: int = 0,
        group_salt: int = 0,
    ) -> DiscoveredGroups:
        """The groups found, their persons and their kept numbers: :meth:`grouped_values`
        over the groups found."""
        ...


def is_opened_table(data: Any) -> bool:
    """Whether ``data`` is a table dpselect opened (an :class:`Engine` of its own classes).

    ``isinstance(data, Engine)`` alone is not enough: the protocol check asks whether each
    member exists, and a Spark Connect DataFrame answers every attribute name with a
    ``Column``, so it would pass as an opened table and fail on the first call."""
    return type(data).__module__.startswith("dpselect.") and isinstance(data, Engine)
