"""The front door: a :class:`Session` holds the private data, whom it protects, the contribution
bounds and the ledger, bound once; its queries take only what is specific to them.

As Tumult's ``Session`` (data, protected change and budget bound at creation) and OpenDP's
``Context`` (``privacy_unit``, ``privacy_loss``, queries that inherit them), with the bounds as
one typed value (:class:`~dpselect.Contributions`, as PipelineDP's ``AggregateParams``), a
durable ledger and the exact mechanisms of the recipes. Each query method runs the recipe of
the same name (:func:`dpselect.top_k`, :func:`~dpselect.most_common`,
:func:`~dpselect.partition_selection`, :func:`~dpselect.quantile`,
:func:`~dpselect.best_price`) on the table the session
opened, with the session's unit, bounds, ledger and source (a top-k and a partition
selection build their request, :mod:`dpselect.planning.top_k_request`, and run the recipe on
it): the same release, for a fixed seed, as the recipe run with the same arguments
(tests/test_session_front_door.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Literal

from .accounting.ledger import ROWS, Ledger
from .core.errors import ParameterError
from .data.column_roles import check_column_role
from .data.engine import Engine
from .data.tables import open_table
from .planning.contributions import Contributions, as_contributions
from .planning.top_k_mechanisms import Mechanism
from .planning.top_k_plan import CONFIDENCE
from .recipes.grouping import GroupedResult
from .recipes.pricing import PriceResult
from .recipes.quantile_result import QuantileResult
from .recipes.release import open_ledger
from .recipes.top_k_result import TopKResult
from .recipes.unknown_domain_plans import KeysResult
from .sampling.source import RandomSource

__all__ = ["Session"]

Progress = Callable[[float], None] | None
#: The mechanisms of a partition selection (:func:`dpselect.partition_selection`).
KeysMechanism = Literal[
    "auto", "optimal", "laplace", "gaussian", "policy_laplace", "policy_gaussian"
]


class Session:
    """Private data opened once, with whom it protects, its contribution bounds and its ledger.

    Opening reads the schema once (``schema``: declared column types, as for
    :func:`dpselect.top_k`), checks the unit column's type once (public facts: refused here,
    before any query), opens the ledger once and checks that it is bound to this unit. Every
    query charges that ledger (when there is one) before it reads a row.

    Parameters
    ----------
    data : str, path, DataFrame, relation, Series or array
        The private rows: a CSV, Parquet or JSON lines path, a pandas, polars or pyarrow
        table, a DuckDB relation or a Spark DataFrame.
    privacy_unit : str, optional
        The column identifying a person: every release protects all of one person's rows.
        Without it each row is its own unit.
    contributions : Contributions, optional
        The contribution bounds of every query (default: one value, one row per value, one
        group per unit); a query may give its own.
    ledger : Ledger or path, optional
        The durable privacy-budget ledger every query charges first.
    schema : dict, optional
        Declared column types (``{column: type}``) for text files.
    source : RandomSource, optional
        The randomness; the default is the OS CSPRNG. A seeded source is for tests and
        reproducible demos only, and is not private.
    progress : callable, optional
        Called with the percentage done (``0 .. 100``) while a query's scan runs over a second:
        every query's reporter unless the query gives its own.

    Raises
    ------
    DataError
        The data cannot be opened, or the unit column does not exist or has a type a unit
        cannot have (from the schema).
    ParameterError
        A malformed argument.
    LedgerError
        The ledger cannot be opened, or is bound to another privacy unit.

    Examples
    --------
    >>> import pandas as pd
    >>> import dpselect as dp
    >>> from dpselect.sampling import InsecureSeededSource  # reproducible, not private
    >>> visits = pd.DataFrame({"user": [1, 1, 2, 2, 3, 4, 5, 5, 6, 7],
    ...                        "site": list("aabcaabaca")})
    >>> with dp.Session(visits, privacy_unit="user",
    ...                 contributions=dp.Contributions(values_per_unit=2),
    ...                 source=InsecureSeededSource(1)) as session:
    ...     session.top_k("site", 2, epsilon=1.0, candidates=["a", "b", "c"]).candidates
    ['a', 'c']
    """

    def __init__(
        self,
        data: Any,
        *,
        privacy_unit: str | None = None,
        contributions: Contributions | None = None,
        ledger: Ledger | str | None = None,
        schema: dict[str, str] | None = None,
        source: RandomSource | None = None,
        progress: Progress = None,
    ) -> None:
        if privacy_unit is not None and (not isinstance(privacy_unit, str) or not privacy_unit):
            raise ParameterError(
                f"privacy_unit must be a column name, got {type(privacy_unit).__name__}"
            )
        self._table: Engine = open_table(data, schema=schema)
        if privacy_unit is not None:
            check_column_role(self._table, privacy_unit, "unit", "privacy_unit")
            self._table.unit_column(privacy_unit)
        self._owns_ledger = ledger is not None and not isinstance(ledger, Ledger)
        self._ledger = open_ledger(ledger)
        if self._ledger is not None:
            self._ledger.check_privacy_unit(ROWS if privacy_unit is None else privacy_unit)
        self._unit = privacy_unit
        self._contributions = (
            Contributions() if contributions is None else as_contributions(contributions)
        )
        self._source = source
        self._progress = progress

    # --- what the session holds ---------------------------------------------------------------

    @property
    def privacy_unit(self) -> str | None:
        """The unit column (``None``: each row is its own unit)."""
        return self._unit

    @property
    def contributions(self) -> Contributions:
        """The contribution bounds every query uses unless it gives its own."""
        return self._contributions

    @property
    def ledger(self) -> Ledger | None:
        """The ledger every query charges (``None``: none)."""
        return self._ledger

    @property
    def table(self) -> Engine:
        """The opened data (its engine and public schema)."""
        return self._table

    def __repr__(self) -> str:
        unit = "each row" if self._unit is None else repr(self._unit)
        lines = [
            f"Session over {self._table.description} ({len(self._table.columns)} columns, "
            f"{self._table.name} engine)",
            f"  privacy unit: {unit}",
            f"  {self._contributions}",
        ]
        if self._ledger is None:
            lines.append("  ledger: none (nothing recorded)")
        else:
            eps, delta = self._ledger.spent()
            lines.append(f"  ledger: {self._ledger.path} (spent epsilon {eps:g}, delta {delta:g})")
        return "\n".join(lines)

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the ledger the session opened from a path (a :class:`Ledger` given stays
        open: its owner closes it)."""
        if self._owns_ledger and self._ledger is not None:
            self._ledger.close()

    # --- queries ------------------------------------------------------------------------------

    def _common(self, contributions: Contributions | None) -> dict[str, Any]:
        return {
            "privacy_unit": self._unit,
            "contributions": self._contributions if contributions is None else contributions,
            "ledger": self._ledger,
            "source": self._source,
        }

    def top_k(
        self,
        column: str,
        k: int,
        *,
        epsilon: float,
        delta: float | None = None,
        candidates: Sequence[Any] | str | None = None,
        mechanism: Mechanism = "auto",
        by: str | None = None,
        groups: Sequence[Any] | str | None = None,
        counts: bool = False,
        contributions: Contributions | None = None,
        progress: Progress = None,
        k_bar: int | None = None,
    ) -> TopKResult | GroupedResult:
        """The ``k`` most common values of ``column``: :func:`dpselect.top_k` on this session.

        Parameters
        ----------
        column : str
            The column whose values are ranked.
        k : int
            How many values to release, ranked.
        epsilon, delta : float
            The query's privacy cost (``delta`` defaults to 0; values found in the data,
            without ``candidates``, need ``delta > 0``).
        candidates : list or path, optional
            The public candidate values (a list or a text file, one per line).
        mechanism : str, default "auto"
            A key of :data:`dpselect.recipes.top_k.MECHANISMS`, or ``"auto"``.
        by, groups : optional
            A column of groups and the public groups (``None``: chosen privately).
        counts : bool, default False
            Also release noisy counts.
        contributions : Contributions, optional
            This query's bounds, in place of the session's.
        progress : callable, optional
            Called with the percentage done (``0 .. 100``) while a query runs over a second
            (default: the session's ``progress``).
        k_bar : int, optional
            Without ``candidates``: the limited-domain mechanism's ``k_bar`` (Durfee and
            Rogers 2019), the number of top values it looks past ``k``.

        Returns
        -------
        TopKResult or GroupedResult
            As :func:`dpselect.top_k`.
        """
        from .planning.top_k_request import top_k_request
        from .recipes.top_k import top_k

        request = top_k_request(
            column, k, epsilon, privacy_unit=self._unit,
            contributions=self._contributions if contributions is None else contributions,
            mechanism=mechanism, counts=counts, candidates=candidates, delta=delta,
            k_bar=k_bar, by=by, groups=groups,
        )  # fmt: skip
        return top_k(self._table, request, ledger=self._ledger, source=self._source,
                     progress=self._progress if progress is None else progress)  # fmt: skip

    def most_common(
        self,
        column: str,
        *,
        epsilon: float,
        delta: float | None = None,
        candidates: Sequence[Any] | str | None = None,
        mechanism: Mechanism = "auto",
        by: str | None = None,
        groups: Sequence[Any] | str | None = None,
        contributions: Contributions | None = None,
    ) -> TopKResult | GroupedResult:
        """The most common value of ``column``: :meth:`top_k` with ``k = 1``.

        Parameters
        ----------
        column, epsilon, delta, candidates, mechanism, by, groups, contributions
            As :meth:`top_k`.

        Returns
        -------
        TopKResult or GroupedResult
            One value (``result.candidates[0]``), its cost and accuracy.
        """
        return self.top_k(column, 1, epsilon=epsilon, delta=delta, candidates=candidates,
                          mechanism=mechanism, by=by, groups=groups,
                          contributions=contributions)  # fmt: skip

    def partition_selection(
        self,
        column: str,
        *,
        epsilon: float,
        delta: float,
        mechanism: KeysMechanism = "auto",
        by: str | None = None,
        groups: Sequence[Any] | str | None = None,
        contributions: Contributions | None = None,
        progress: Progress = None,
    ) -> KeysResult | GroupedResult:
        """The values of ``column`` that can be published: :func:`dpselect.partition_selection`
        on this session.

        Parameters
        ----------
        column : str
            The column whose values may be published.
        epsilon, delta : float
            The query's privacy cost (``delta > 0``).
        mechanism : str, default "auto"
            ``"optimal"``, ``"laplace"``, ``"gaussian"``, ``"policy_laplace"``,
            ``"policy_gaussian"`` or ``"auto"``.
        by, groups, contributions, progress
            As :meth:`top_k`.

        Returns
        -------
        KeysResult or GroupedResult
            As :func:`dpselect.partition_selection`.
        """
        from .planning.partition_selection_request import partition_selection_request
        from .recipes.unknown_domain import partition_selection

        request = partition_selection_request(
            column, epsilon, delta, privacy_unit=self._unit,
            contributions=self._contributions if contributions is None else contributions,
            mechanism=mechanism, by=by, groups=groups,
        )  # fmt: skip
        reporter = self._progress if progress is None else progress
        return partition_selection(self._table, request, ledger=self._ledger,
                                   source=self._source, progress=reporter)  # fmt: skip

    def quantile(
        self,
        column: str,
        q: float | Sequence[float],
        *,
        epsilon: float,
        bounds: tuple[float, float] | str | None = None,
        candidates: Sequence[float] | str | None = None,
        mechanism: str = "auto",
        resolution: float | None = None,
        confidence: float = CONFIDENCE,
        by: str | None = None,
        groups: Sequence[Any] | str | None = None,
        delta: float | None = None,
        contributions: Contributions | None = None,
    ) -> QuantileResult | GroupedResult:
        """The ``q``-quantile(s) of a numeric ``column``: :func:`dpselect.quantile` on this
        session (each row is one value: ``values_per_unit`` is the most rows a unit keeps,
        ``"auto"``: chosen privately with ``auto_share`` of ``epsilon``; ``groups_per_unit``
        the most groups with ``by``). The session's ``progress`` follows the scan.

        ``mechanism="auto"`` picks the method from public facts (docs/quantiles.md);
        ``epsilon`` is the total pure-DP cost under adding or removing one unit, charged
        before the data are read.

        Parameters
        ----------
        column : str
            A numeric column.
        q : float or list of float
            The level(s) in ``[0, 1]`` (0.5: the median).
        epsilon : float
            The query's privacy cost.
        bounds : (float, float) or "auto", optional
            Public value bounds, the rows clamped to them (``"auto"``: chosen privately with
            the session's ``auto_share``, default 0.25, of ``epsilon``); or give
            ``candidates``.
        candidates : list or path, optional
            Public candidate values (a list or a text file of numbers).
        mechanism : str, default "auto"
            ``"auto"``, ``"tree"``, ``"joint"``, ``"recursive"`` or ``"split"`` (``epsilon /
            m`` per level).
        resolution : float, optional
            The public resolution ``w`` of the continuous mechanisms (fixed bounds only).
        confidence : float, default 0.95
            The confidence of the accuracy statements.
        by, groups
            A column of groups and the public groups (``None``: chosen privately), as
            :meth:`top_k`.
        delta : float, optional
            With ``by`` and private groups only: the delta of their selection.
        contributions : Contributions, optional
            This query's bounds, in place of the session's.

        Returns
        -------
        QuantileResult or GroupedResult
            The released values, the method, the cost and one accuracy line per level (with
            ``by``: one result per group).

        Raises
        ------
        ParameterError, DataError, BudgetExceeded
            Invalid parameters, unusable data or budget left, before any budget is spent.
        """
        from .planning.quantile_request import quantile_request
        from .recipes.quantiles import quantile

        request = quantile_request(
            column, q, epsilon, bounds=bounds, candidates=candidates, confidence=confidence,
            resolution=resolution, mechanism=mechanism, privacy_unit=self._unit,
            contributions=self._contributions if contributions is None else contributions,
            by=by, groups=groups, delta=delta,
        )  # fmt: skip
        return quantile(self._table, request, ledger=self._ledger, source=self._source,
                        progress=self._progress)  # fmt: skip

    def best_price(
        self,
        column: str,
        *,
        epsilon: float,
        prices: Sequence[float] | str | None = None,
        price_step: float | None = None,
        max_price: float = 1.0,
        n: int | None = None,
        confidence: float = CONFIDENCE,
        contributions: Contributions | None = None,
    ) -> PriceResult:
        """A revenue-maximising price for a digital good from the buyers' valuations in
        ``column`` (seed 003): :func:`dpselect.best_price` on this session (each row is one
        bid: ``values_per_unit`` is the most bids a unit keeps).

        Parameters
        ----------
        column : str
            The numeric column of valuations (bids).
        epsilon : float
            The query's privacy cost (pure DP).
        prices : list or path, optional
            The public candidate prices; else the grid ``price_step, 2 price_step, ...``, up
            to ``max_price``.
        price_step : float, optional
            The grid's step (default from the public ``n``: ``max_price ln(n) / (n eps)``).
        max_price : float, default 1.0
            The largest price of the grid.
        n : int, optional
            The public number of buyers (needed for the default grid).
        confidence : float, default 0.95
            The revenue guarantee's confidence.
        contributions : Contributions, optional
            This query's bounds, in place of the session's (``values_per_unit`` only).

        Returns
        -------
        PriceResult
            As :func:`dpselect.best_price`.
        """
        from .planning.price_request import price_request
        from .recipes.pricing import best_price

        request = price_request(
            epsilon, prices=prices, price_step=price_step, max_price=max_price, n=n,
            column=column, confidence=confidence, privacy_unit=self._unit,
            contributions=self._contributions if contributions is None else contributions,
        )  # fmt: skip
        return best_price(self._table, request, ledger=self._ledger, source=self._source,
                          progress=self._progress)  # fmt: skip
