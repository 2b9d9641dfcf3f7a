"""The one-call shorthands: one query on one data set, with the query's own words only.

``dpselect.top_k(data, column, k, epsilon=...)`` is a :class:`~dpselect.Session` opened on
``data`` with one query run on it: the same release, the same charge, the same checks (every
error raised from public facts before anything is charged). Each shorthand takes what its
query needs and the three things a session binds (``privacy_unit``, ``contributions`` as one
:class:`~dpselect.Contributions` value, ``ledger``); at most 12 parameters, at most 3 of them
positional. What a session adds (a seeded ``source`` for reproducible demos, declared
``schema``, ``progress``, noisy ``counts``, a quantile's ``resolution`` or a grouped quantile's
``delta``) is given to :class:`~dpselect.Session` and its methods.

Each shorthand runs the recipe of the same name in :mod:`dpselect.recipes` (the layer that
checks, plans, charges and releases); the recipes' own signatures are internal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from .core.errors import ParameterError
from .planning.contributions import Contributions

if TYPE_CHECKING:
    from .accounting.ledger import Ledger
    from .planning.top_k_mechanisms import Mechanism
    from .recipes.grouping import GroupedResult
    from .recipes.pricing import PriceResult
    from .recipes.quantile_result import QuantileResult
    from .recipes.top_k_result import TopKResult
    from .recipes.unknown_domain_result import KeysResult

__all__ = ["best_price", "most_common", "partition_selection", "quantile", "top_k"]

KeysMechanism = Literal[
    "auto", "optimal", "laplace", "gaussian", "policy_laplace", "policy_gaussian"
]


def top_k(
    data: Any,
    column: str | None,
    k: int,
    *,
    epsilon: float,
    delta: float | None = None,
    candidates: Sequence[Any] | str | None = None,
    mechanism: Mechanism = "auto",
    privacy_unit: str | None = None,
    contributions: Contributions | None = None,
    by: str | None = None,
    groups: Sequence[Any] | str | None = None,
    ledger: Ledger | str | None = None,
) -> TopKResult | GroupedResult:
    """The ``k`` most common values of ``column``, privately, at ``(epsilon, delta)``.

    ``mechanism="auto"`` (default) runs the most accurate mechanism for the public facts
    (``k``, ``epsilon``, ``delta``, the number of candidates, the contribution bounds), never
    the data: permute-and-flip, one-shot Gumbel top-k (seed 004), a noisy histogram, or the
    joint exponential mechanism; the result names the method, the theorem and the scale.
    Without ``candidates`` the values come from the data and ``delta > 0`` is required
    (partition selection then the top ``k``; docs/private_selection.md). The charge is
    durable before anything is computed from the rows; every error is raised from public
    facts before it (seed 001's postcondition: empty data is valid input, every score 0).

    Parameters
    ----------
    data : str, path, DataFrame, relation, Series or array
        The private rows: a CSV/Parquet/JSON lines path, a pandas/polars/pyarrow table, a
        DuckDB relation, or one column (with ``column=None``).
    column : str or None
        The column whose values are ranked.
    k : int
        How many values to release, ranked (at most the number of candidates).
    epsilon : float
        The total privacy cost at distance 1 (one privacy unit added or removed).
    delta : float, optional
        The approximate-DP ``delta`` (default 0, pure DP).
    candidates : list or str, optional
        The public candidates, or a text file of them (one per line); values absent from the
        data score 0, values outside the list are ignored.
    mechanism : str, default "auto"
        A key of :data:`dpselect.recipes.top_k.MECHANISMS`, or ``"auto"``.
    privacy_unit : str, optional
        The column identifying people (each row is its own unit without it).
    contributions : Contributions, optional
        What one unit may contribute (values, rows per value, groups, the share of an
        automatic choice); default ``Contributions()``, one value.
    by : str, optional
        A column of groups: the top ``k`` of every group in one query
        (docs/grouped_releases.md).
    groups : list or str, optional
        With ``by``: the public groups (a list or a file); ``None``: selected privately
        (``delta > 0``).
    ledger : Ledger or str, optional
        The budget ledger (or its path) charged before any row is read.

    Returns
    -------
    TopKResult or GroupedResult
        The ranked values, the mechanism, the cost and the accuracy statement (with ``by``:
        one result per group).

    Raises
    ------
    ParameterError, DataError, BudgetExceeded
        An invalid parameter, an unusable column (from the schema) or a budget that does not
        fit, each before any budget is spent.

    Examples
    --------
    >>> import pandas as pd
    >>> import dpselect as dp
    >>> visits = pd.DataFrame({"user": [1, 1, 2, 2, 3, 4, 5, 5, 6, 7],
    ...                        "site": list("aabcaabaca")})
    >>> result = dp.top_k(visits, "site", 2, epsilon=1.0, candidates=["a", "b", "c"],
    ...                   privacy_unit="user")
    >>> len(result.candidates), result.epsilon
    (2, 1.0)
    """
    from .data.tables import one_column
    from .planning.top_k_request import top_k_request
    from .recipes.top_k import top_k as run

    data, column = one_column(data, column)
    request = top_k_request(
        column, k, epsilon, privacy_unit=privacy_unit, contributions=contributions,
        mechanism=mechanism, candidates=candidates, delta=delta, by=by, groups=groups,
    )  # fmt: skip
    return run(data, request, ledger=ledger)


def most_common(
    data: Any,
    column: str | None,
    *,
    epsilon: float,
    delta: float | None = None,
    candidates: Sequence[Any] | str | None = None,
    mechanism: Mechanism = "auto",
    privacy_unit: str | None = None,
    contributions: Contributions | None = None,
    by: str | None = None,
    groups: Sequence[Any] | str | None = None,
    ledger: Ledger | str | None = None,
) -> TopKResult | GroupedResult:
    """The most common value of ``column``, privately: :func:`top_k` with ``k = 1``.

    Parameters
    ----------
    data, column, epsilon, delta, candidates, mechanism, privacy_unit, contributions, by, \
groups, ledger
        As :func:`top_k`.

    Returns
    -------
    TopKResult or GroupedResult
        One value (``result.candidates[0]``), its cost and accuracy.

    Raises
    ------
    ParameterError, DataError, BudgetExceeded
        As :func:`top_k`, before any budget is spent.

    Examples
    --------
    >>> import pandas as pd
    >>> import dpselect as dp
    >>> result = dp.most_common(pd.Series(["x", "y", "x"]), None, epsilon=1.0,
    ...                         candidates=["x", "y"])
    >>> len(result.candidates)
    1
    """
    return top_k(
        data, column, 1, epsilon=epsilon, delta=delta, candidates=candidates,
        mechanism=mechanism, privacy_unit=privacy_unit, contributions=contributions, by=by,
        groups=groups, ledger=ledger,
    )  # fmt: skip


def partition_selection(
    data: Any,
    column: str | None,
    *,
    epsilon: float,
    delta: float,
    mechanism: KeysMechanism = "auto",
    privacy_unit: str | None = None,
    contributions: Contributions | None = None,
    by: str | None = None,
    groups: Sequence[Any] | str | None = None,
    ledger: Ledger | str | None = None,
) -> KeysResult | GroupedResult:
    """The values of ``column`` that can be published, at ``(epsilon, delta)``.

    ``mechanism="auto"`` chooses from public parameters only: the optimal partition selection
    of Desfontaines, Voss, Gipson and Mandayam (2022) with one value per unit, policy set
    union (Gopi et al. 2020) or thresholding with more (docs/partition_selection.md). The
    released values come sorted, never by count.

    Parameters
    ----------
    data, column
        As :func:`top_k`.
    epsilon, delta : float
        The privacy cost (``delta > 0``: values that come from the data need it).
    mechanism : str, default "auto"
        ``"optimal"``, ``"laplace"``, ``"gaussian"``, ``"policy_laplace"``,
        ``"policy_gaussian"`` or ``"auto"``.
    privacy_unit, contributions, by, groups, ledger
        As :func:`top_k` (``contributions.values_per_unit`` cannot be ``"auto"`` here).

    Returns
    -------
    KeysResult or GroupedResult
        The released values, the mechanism, the cost and how likely a value is shown (with
        ``by``: one result per group).

    Raises
    ------
    ParameterError, DataError, BudgetExceeded
        As :func:`top_k`, before any budget is spent.

    Examples
    --------
    >>> import pandas as pd
    >>> import dpselect as dp
    >>> rows = pd.Series(["a"] * 500 + ["b"] * 3)
    >>> dp.partition_selection(rows, None, epsilon=1.0, delta=1e-6).values
    ['a']
    """
    from .data.tables import one_column
    from .planning.partition_selection_request import partition_selection_request
    from .recipes.unknown_domain import partition_selection as run

    data, column = one_column(data, column)
    request = partition_selection_request(
        column, epsilon, delta, privacy_unit=privacy_unit, contributions=contributions,
        mechanism=mechanism, by=by, groups=groups,
    )  # fmt: skip
    return run(data, request, ledger=ledger)


def quantile(
    data: Any,
    column: str | None,
    q: float | Sequence[float],
    *,
    epsilon: float,
    bounds: tuple[float, float] | str | None = None,
    candidates: Sequence[float] | str | None = None,
    mechanism: str = "auto",
    privacy_unit: str | None = None,
    contributions: Contributions | None = None,
    by: str | None = None,
    groups: Sequence[Any] | str | None = None,
    ledger: Ledger | str | None = None,
) -> QuantileResult | GroupedResult:
    """The ``q``-quantile(s) of a numeric ``column``, privately (seed 003).

    Over public ``candidates``, or continuous on public ``bounds`` (Smith 2011); with
    several levels the tree, joint or recursive mechanism (``mechanism="auto"`` chooses from
    public facts and a noisy row count inside the same charge; docs/quantiles.md).
    ``bounds="auto"`` chooses the bounds privately with ``contributions.auto_share`` of
    ``epsilon``. Each row is one value: ``contributions.values_per_unit`` is the most rows a
    unit keeps. A grouped release with privately chosen groups needs a ``delta``:
    :meth:`dpselect.Session.quantile`.

    Parameters
    ----------
    data, column
        As :func:`top_k` (a numeric column).
    q : float or list of float
        The level(s) in ``[0, 1]``.
    epsilon : float
        The total privacy cost (pure DP).
    bounds : (float, float) or "auto", optional
        Public value bounds (``"auto"``: chosen privately); or give ``candidates``.
    candidates : list or str, optional
        Public candidate values (or a file of them).
    mechanism : str, default "auto"
        ``"auto"``, ``"tree"``, ``"joint"``, ``"recursive"`` or ``"split"``.
    privacy_unit, contributions, by, groups, ledger
        As :func:`top_k` (``groups`` public here).

    Returns
    -------
    QuantileResult or GroupedResult
        The released value(s), the method, the cost and the accuracy lines (with ``by``: one
        result per group).

    Raises
    ------
    ParameterError, DataError, BudgetExceeded
        As :func:`top_k`, before any budget is spent.

    Examples
    --------
    >>> import numpy as np
    >>> import dpselect as dp
    >>> ages = np.tile(np.arange(20, 70), 20)
    >>> result = dp.quantile(ages, None, 0.5, epsilon=1.0, bounds=(0, 100))
    >>> 0 <= result.values[0] <= 100
    True
    """
    from .planning.quantile_request import quantile_request
    from .recipes.quantiles import quantile as run

    if by is not None and groups is None:
        raise ParameterError(
            "quantile(by=...) without groups selects the groups privately, which needs a "
            "delta: give the public groups, or use dp.Session(data, ...).quantile(..., by=..., "
            "delta=...)"
        )
    request = quantile_request(
        column, q, epsilon, bounds=bounds, candidates=candidates, mechanism=mechanism,
        privacy_unit=privacy_unit, contributions=contributions, by=by, groups=groups,
    )  # fmt: skip
    return run(data, request, ledger=ledger)


def best_price(
    valuations: Any,
    *,
    epsilon: float,
    prices: Sequence[float] | str | None = None,
    price_step: float | None = None,
    max_price: float = 1.0,
    n: int | None = None,
    column: str | None = None,
    confidence: float = 0.95,
    privacy_unit: str | None = None,
    contributions: Contributions | None = None,
    ledger: Ledger | str | None = None,
) -> PriceResult:
    """A revenue-maximising price for a digital good from buyers' valuations (seed 003).

    The exponential mechanism over the public price grid with the revenue score (sensitivity
    ``max_price``; seed 003's pricing theorem gives the accuracy line).

    Parameters
    ----------
    valuations : array, Series, DataFrame or path
        The bids (with ``column`` for a table or a file).
    epsilon : float
        The privacy cost (pure DP).
    prices : list or str, optional
        The public candidate prices; else the grid ``price_step, 2 price_step, ...`` up to
        ``max_price``.
    price_step : float, optional
        The grid's step (default from the public ``n``: ``max_price ln(n) / (n eps)``).
    max_price : float, default 1.0
        The largest price (and the bound on a valuation).
    n : int, optional
        The public number of buyers (needed for the default grid).
    column : str, optional
        The column of bids in a table or a file.
    confidence : float, default 0.95
        The revenue guarantee's confidence.
    privacy_unit, ledger
        As :func:`top_k`.
    contributions : Contributions, optional
        ``values_per_unit``: the most bids one unit keeps (with ``privacy_unit``).

    Returns
    -------
    PriceResult
        The price, its revenue guarantee and cost.

    Raises
    ------
    ParameterError, DataError, BudgetExceeded
        As :func:`top_k`, before any budget is spent.

    Examples
    --------
    >>> import numpy as np
    >>> import dpselect as dp
    >>> bids = np.array([0.2, 0.5, 0.9] * 100)
    >>> result = dp.best_price(bids, epsilon=1.0, prices=[0.25, 0.5, 0.75])
    >>> result.price in (0.25, 0.5, 0.75)
    True
    """
    from .planning.price_request import price_request
    from .recipes.pricing import best_price as run

    request = price_request(
        epsilon, prices=prices, price_step=price_step, max_price=max_price, n=n, column=column,
        confidence=confidence, privacy_unit=privacy_unit, contributions=contributions,
    )  # fmt: skip
    return run(valuations, request, ledger=ledger)
