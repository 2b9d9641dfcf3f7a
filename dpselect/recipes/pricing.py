"""Digital-goods pricing with the exponential mechanism (seed 003, "Selling one digital good").

A seller with unlimited copies picks one price ``p``; buyer ``i`` buys when ``v_i >= p``.
The revenue ``p |{i : v_i >= p}|`` is irregular in ``p`` (seed 003: valuations $1, $1, $3.01
give revenue $3 at $1, $1.01 at $1.01, $3.01 at $3.01 and $0 at $3.02), so the price is
*selected* among candidate prices with the revenue as score, not computed and noised.

**Candidates.** The public grid ``{price_step, 2 price_step, ..., J price_step}`` (the seed's
``alpha``) with ``J = floor(max_price / price_step)``, or a public list of prices in ``(0,
max_price]``. Every candidate is a multiple ``j u`` of a public unit ``u`` (``price_step`` for
the grid; for a list, the largest ``u`` dividing every price written in decimals, so $3.01
with $1 has ``u = 0.01``). The default ``price_step`` is ``max_price ln(n) / (n eps)``, the
seed's ``ln(n) / (n eps)`` with prices scaled to
``[0, max_price]``. The number of buyers ``n`` is private under adding or removing a buyer,
so the default needs a **public** ``n`` (a published count or an estimate) from the caller:
``n`` only sets the grid and the reported guarantee, never the privacy.

**Score and privacy.** ``s(v, j u) = j u |{i : v_i >= j u}|``, computed exactly as the integer
``j |{i : v_i >= j u}|`` (in units of ``u``; values beyond ``2^53`` are clamped, a monotone
1-Lipschitz map). Adding or removing a buyer changes each count by at most 1, so each score by
at most ``J u = max price <= max_price``: sensitivity ``Delta = max(prices)``; and every
score moves in the same direction, so the score is **monotonic** and the exponential
mechanism uses ``exp(eps s / Delta)`` (seed 001's monotonic form; the seed's ``2 Delta`` is
for any score). The release is ``eps``-DP (and ``eps``-bounded-range) for one buyer added or
removed; a buyer *changing* valuation is two such steps (``2 eps``).

**Guarantee (seed 003).** Let ``gamma`` be the best revenue over all prices in ``[0,
max_price]`` and ``OPT`` the best over the candidates. Rounding any price down to the grid loses
at most ``price_step`` per buyer: ``OPT >= gamma - price_step n``. The utility theorem (seed
003, Theorem 3, monotonic form) gives ``revenue >= OPT - (Delta / eps)(ln |H| + t)`` with
probability at least ``1 - e^-t``. Together: ``revenue >= gamma - price_step n - (Delta / eps)
(ln |H| + t)``; with ``price_step = ln(n)/(n eps)`` and ``max_price = 1`` this is ``gamma -
O(ln(n) / eps)`` as in the seed. Both terms are reported (they use public numbers only; neither
``gamma`` nor ``OPT`` is released).

**Buyers with several bids** (``privacy_unit=COL`` with ``Contributions(values_per_unit=r)``:
the request's ``max_rows = r``, table input): each buyer
keeps at most ``r`` bids, chosen by the salted keyed rule of docs/contribution_bounding.md
("Rows per unit"), which reads only that buyer's rows; the score counts kept bids,
``s(v, p) = p #{kept bids >= p}``. Adding or removing one buyer adds or removes at most ``r``
kept bids, so every count moves by at most ``r`` (all the same way) and every score by at
most ``r max(prices)``: the mechanism is calibrated to ``Delta = r max(prices)``
(:func:`make_price_mechanism`), ``eps``-DP per buyer, and the guarantee's selection term is
``(r max(prices) / eps)(ln |H| + t)``; with a public number of buyers ``n``, at most ``r n``
bids lose at most ``price_step`` each to the grid (``price_step r n``). For an array of valuations
there is no unit column: ``privacy_unit`` is refused (open the bids as a table with a buyer
column instead).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ..core.errors import DataError, ParameterError
from ..core.measurement import Measurement
from ..data.column_roles import check_column_role
from ..data.query import Query, UnitRule
from ..data.tables import open_table
from ..mechanisms.exponential import make_exponential_mechanism
from ..mechanisms.validate import check_max_rows
from ..planning.price_grid import MAX_GRID, PriceGrid, default_price_step, price_grid
from ..planning.price_plan import plan_price
from ..planning.price_request import PriceRequest
from ..sampling.source import RandomSource, resolve_source
from ._common import (
    memory_values,
    numeric_column,
    open_ledger,
    precompose,
)
from .release import charge_then
from .result import Result

__all__ = [
    "MAX_GRID",
    "BuyerCounts",
    "PriceGrid",
    "PriceResult",
    "best_price",
    "default_price_step",
    "make_price_mechanism",
    "price_grid",
    "revenue_scores",
]

F64 = npt.NDArray[np.float64]
_SCORE_CAP = 2**53


@dataclass(frozen=True)
class BuyerCounts:
    """The valuations summarised by an engine: ``counts[i] = |{i : v_i >= prices[i]}|`` at
    the grid's prices (what :func:`revenue_scores` needs, and all it reads). An engine
    computes them in one aggregation (:meth:`dpselect.data.engine.Engine.buyers_at`), so the
    column is never collected; the counts are the same function of the rows as the in-memory
    path's."""

    prices: tuple[float, ...]
    counts: tuple[int, ...]


def revenue_scores(valuations: Any, grid: PriceGrid) -> list[int]:
    """Revenue of each grid price in units of ``grid.unit``: ``j * |{i : v_i >= j u}|``.

    Valuations that are not numbers (NaN, ``"abc"``, ``None``, ...) are missing and dropped,
    each on its own (:func:`memory_values`). Clamped at ``2^53`` (monotone and 1-Lipschitz).
    ``valuations`` may also be :class:`BuyerCounts` at the grid's prices (an engine's summary).

    Parameters
    ----------
    valuations : array_like or BuyerCounts
        The valuations (private; one per bid), or an engine's buyer counts at the grid's prices.
    grid : PriceGrid
        The candidate prices (:func:`price_grid`).

    Returns
    -------
    list of int
        The revenue of each price, in units of ``grid.unit``, in the grid's order.
    """
    if isinstance(valuations, BuyerCounts):
        if list(valuations.prices) != list(grid.prices):
            raise ParameterError("the buyer counts are not at the grid's prices")
        buyers = np.asarray(valuations.counts, dtype=np.int64)
    else:
        v = np.sort(memory_values(valuations))
        n = v.shape[0]
        buyers = n - np.searchsorted(v, np.asarray(grid.prices, dtype=np.float64), side="left")
    return [min(j * int(c), _SCORE_CAP) for j, c in zip(grid.multiples, buyers, strict=True)]


def make_price_mechanism(
    grid: PriceGrid,
    epsilon: Any,
    *,
    source: RandomSource | None = None,
    max_rows: int = 1,
) -> Measurement:
    """The exponential mechanism over ``grid`` with the revenue score (monotonic).

    Input: valuations (1-D); output: the chosen price (a float). Privacy map
    (``SymmetricDistance``, one buyer added or removed): ``d_in * Delta / scale <= d_in eps``.
    ``max_rows = r``: one buyer holds at most ``r`` input valuations (bids), so each revenue
    moves by at most ``r max(prices)``: the score's sensitivity is ``r max(multiples)`` in
    units of the grid (module docstring), and ``d_in`` counts buyers.

    Parameters
    ----------
    grid : PriceGrid
        The candidate prices (:func:`price_grid`).
    epsilon : float or Fraction
        The privacy loss for one buyer added or removed.
    source : RandomSource, optional
        The randomness (``None``: the private default; a seeded source for tests only).
    max_rows : int, default 1
        ``r``, the most bids one buyer holds.

    Returns
    -------
    Measurement
        From the valuations (or :class:`BuyerCounts`) to the chosen price; map ``d_in *
        epsilon`` at most.
    """
    mech = make_exponential_mechanism(
        list(range(len(grid.prices))),
        lambda scores, i: scores[i],
        max(grid.multiples) * check_max_rows(max_rows),
        epsilon=epsilon,
        monotonic=True,
        source=source,
    )
    return precompose(mech, lambda valuations: revenue_scores(valuations, grid)) >> (
        lambda i: grid.prices[i]
    )


@dataclass(frozen=True)
class PriceResult(Result):
    """A private price with the seed's revenue guarantee beside it.

    Attributes
    ----------
    price : float
        The chosen price, one of the candidate prices.
    epsilon : float
        The pure-DP cost (``delta = 0``), for one buyer added or removed.
    n_prices : int
        ``|H|``, the number of candidate prices.
    price_step : float or None
        The grid's step, in price units (the candidates are ``price_step, 2 price_step, ...``);
        ``None`` when a list of prices was given.
    n : int or None
        The public number of buyers given by the caller; ``None`` when not given.
    selection_loss : float
        The revenue the selection may lose against the best candidate price, with probability
        at least ``confidence``: ``(Delta / eps)(ln |H| + t)``, ``t = -ln(1 - confidence)``,
        ``Delta = max_rows max(prices)``.
    discretization_loss : float or None
        The revenue lost at most by rounding prices down to the grid: ``price_step n max_rows``;
        ``None`` without both a grid (``price_step``) and ``n``.
    confidence : float
        The confidence of the revenue guarantee.
    accuracy : str
        The revenue guarantee, as a sentence.
    ledger : str or None
        The path of the ledger charged for this release; ``None`` without a ledger.
    parameters : dict
        The public parameters (``epsilon``, ``n_prices``, ``price_step``, ``max_price``, ``n``,
        ``column``, and ``privacy_unit`` and ``max_rows`` with a unit).
    """

    price: float
    epsilon: float
    n_prices: int
    price_step: float | None
    n: int | None
    selection_loss: float
    discretization_loss: float | None
    confidence: float
    accuracy: str
    ledger: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)

    def _text(self) -> str:
        return "\n".join(
            [
                f"price: {self.price:.6g}",
                "mechanism: exponential mechanism over "
                f"{self.n_prices} public prices (revenue score, monotonic)",
                f"privacy cost: epsilon = {self.epsilon:.6g}, delta = 0",
                self.accuracy,
            ]
        )


def _valuation_values(
    valuations: Any,
    column: str | None,
    grid: PriceGrid,
    schema: Any = None,
    privacy_unit: str | None = None,
    max_rows: int = 1,
    source: RandomSource | None = None,
    progress: Callable[[float], None] | None = None,
) -> tuple[Any, Any]:
    """A reader of the valuations, checked from public facts only (type, schema). A table's
    engine summarises the column as :class:`BuyerCounts` at the grid's prices
    (:meth:`dpselect.data.engine.Engine.buyers_at`: no engine collects the column); with a
    ``privacy_unit``, of the bids each buyer keeps (at most ``max_rows``, the salt drawn when
    the reader runs, after the charge)."""
    if column is not None:
        table = open_table(valuations, schema=schema)
        numeric_column(table, column)
        prices = tuple(grid.prices)
        if privacy_unit is None:
            whole = Query(column, progress=progress)
            return table, lambda: BuyerCounts(
                prices, tuple(int(c) for c in table.buyers_at(whole, prices))
            )
        check_column_role(table, privacy_unit, "unit", "privacy_unit")

        def kept() -> BuyerCounts:
            salt = resolve_source(source).bits(63)
            rule = UnitRule(privacy_unit, rows_per_unit=max_rows, salt=salt)
            counts = table.buyers_at(Query(column, rule, progress=progress), prices)
            return BuyerCounts(prices, tuple(int(c) for c in counts))

        return table, kept
    if privacy_unit is not None:
        raise ParameterError(
            "privacy_unit needs a table of bids with column= (the unit is a column of it); an "
            "array of valuations has no unit column: open the bids as a table with a buyer "
            "column"
        )
    if type(valuations).__name__ == "Series" and hasattr(valuations, "to_numpy"):
        valuations = valuations.to_numpy()  # a pandas or polars Series: its values
    if isinstance(valuations, (str, bytes)) or not isinstance(valuations, (Sequence, np.ndarray)):
        raise DataError(
            "valuations must be a sequence or array of numbers (or a table with column=...), "
            f"got {type(valuations).__name__}"
        )
    # Read after the charge, value by value: a value that does not convert is missing,
    # as in a table; no value can raise.
    return None, lambda: memory_values(valuations)


def best_price(
    valuations: Any,
    request: PriceRequest,
    *,
    ledger: Any = None,
    source: RandomSource | None = None,
    progress: Callable[[float], None] | None = None,
    schema: Any = None,
) -> PriceResult:
    """A revenue-maximising price for a digital good, chosen privately (seed 003).

    Parameters
    ----------
    valuations : list, array, path or table
        The buyers' private valuations (a column of a data file or table with the request's
        ``column``); read only once the ledger is charged.
    request : PriceRequest
        The query (:func:`dpselect.planning.price_request.price_request`, or
        :meth:`dpselect.Session.best_price` and :func:`dpselect.best_price`, which build it):
        ``epsilon``, the public ``prices`` or grid (``price_step``, ``max_price``), the public
        number of buyers ``n``, the ``column``, the guarantee's ``confidence``, and with a
        ``privacy_unit`` (table input only: an array of valuations has no unit column) the
        most bids one buyer keeps ``max_rows`` (the salted keyed rule of
        docs/contribution_bounding.md, "Rows per unit"); the revenue ``p #{kept bids >= p}``
        then moves by at most ``max_rows * max_price`` per buyer, to which the mechanism and
        the guarantee are calibrated (module docstring).
    ledger : Ledger or path, optional
        The budget ledger, charged before any bid is read.
    source : RandomSource, optional
        The randomness (a seeded source: tests and demos only, not private).
    progress : callable, optional
        ``progress(percent)`` while a table's column is scanned (a scan over a second).
    schema : dict, optional
        Declared column types of a data file (:func:`dpselect.data.tables.open_table`).

    Returns
    -------
    PriceResult
        The chosen price, its cost and the revenue guarantee.

    Raises
    ------
    ParameterError, DataError, BudgetExceeded
        Invalid parameters, unusable data or budget left, before any budget is spent.

    Examples
    --------
    >>> from dpselect.planning.price_request import price_request
    >>> from dpselect.sampling import InsecureSeededSource  # reproducible, not private
    >>> request = price_request(1.0, prices=[5, 8, 10], max_price=10)
    >>> best_price([5.0, 8.0, 8.0, 9.0, 10.0], request, source=InsecureSeededSource(1)).price
    8.0
    """
    max_price, column, privacy_unit = request.max_price, request.column, request.privacy_unit
    plan = plan_price(request.epsilon, request.confidence, request.n, request.prices,
                      request.price_step, max_price, request.max_rows, privacy_unit)  # fmt: skip
    r, grid = plan.max_rows, plan.grid
    # the mechanism at the plan's calibration (epsilon, Delta = r max(prices))
    mechanism = make_price_mechanism(grid, plan.epsilon, source=source, max_rows=r)
    opened, read = _valuation_values(valuations, column, grid, schema, privacy_unit, r, source,
                                     progress)  # fmt: skip
    described = getattr(opened, "description", None) if column is not None else None
    book = open_ledger(ledger)
    parameters = plan.parameters(max_price, column, privacy_unit)

    def release() -> PriceResult:
        return PriceResult(
            price=float(mechanism(read())), epsilon=float(plan.epsilon),
            n_prices=len(grid.prices), price_step=grid.price_step, n=plan.n,
            selection_loss=plan.selection, discretization_loss=plan.discretization,
            confidence=plan.confidence, accuracy=plan.accuracy,
            ledger=None if book is None else book.path, parameters=parameters,
        )  # fmt: skip

    # One buyer (a row, or with privacy_unit all of one buyer's bids) added or removed.
    return charge_then(
        book, release, float(plan.epsilon), 0.0, None, "bounded_range", "best_price", parameters,
        privacy_unit=privacy_unit, source=described, stages=plan.stages,
    )  # fmt: skip
