"""Private quantiles and medians: the recipe (docs/quantiles.md has every proof).

- **With bounds** ``(lo, hi)``: the continuous exponential mechanism with the tie-aware rank
  excess and a public resolution ``w`` (:mod:`dpselect.mechanisms.quantile_continuous`): a
  value many rows hold is a likely output, linear time (``np.partition``), float log-weights
  with a bound charged in epsilon.
- **With candidates**: the exponential mechanism over the public list with the same score
  (:mod:`dpselect.mechanisms.quantile_candidates`), scores from one sort.
- **Several levels**: with bounds and ``2 <= m <= JOINT_AUTO_MAX_LEVELS`` levels,
  ``TREE_COUNT_FRACTION`` (1/20) of epsilon goes to a noisy row count ``N`` and the rest
  ``eps'`` to the quantile tree (:mod:`dpselect.mechanisms.quantile_tree`: a hierarchical
  histogram with exact discrete Laplace noise) if ``eps' N < TREE_AUTO_LIMIT`` (700), else to
  the joint exponential mechanism of Gillenwater, Joseph and Kulesza (2021)
  (:mod:`dpselect.mechanisms.quantile_joint`: all levels in one draw), or, on a column whose
  type puts its values on a grid of at most ``GRID_TREE_POINTS`` (1024) points of the bounds
  (an integer or decimal type), to the 512-leaf tree; one charge for both parts, made before
  any row is read. Above 20 levels the recursive algorithm of Kaplan,
  Schnapp and Stemmer (2022) (:mod:`dpselect.mechanisms.quantile_recursive`); basic
  composition (``epsilon / m`` each) on request (``mechanism="split"``) and with candidates. The
  rule reads ``m``, epsilon, the schema's type, the bounds and the paid count ``N`` only;
  docs/quantiles.md has the evidence.

Every accuracy line printed is the conclusion of a theorem in docs/quantiles.md, checked by
simulation on adversarial data in tests/recipes/test_quantiles_accuracy.py.

The entry, :func:`quantile`, takes a checked request
(:func:`dpselect.planning.quantile_request.quantile_request`) and sends it to the module
holding its concept:

- fixed ``bounds=(lo, hi)`` or ``candidates``: :mod:`~dpselect.recipes.quantile_release`
  (checked in :mod:`~dpselect.recipes.quantile_query`, planned in
  :mod:`~dpselect.planning.quantile_methods` and :mod:`~dpselect.planning.quantile_count_rule`);
- ``bounds="auto"``: the bounds are chosen privately first with ``auto_share`` (default
  0.25) of ``epsilon``, one composed charge (:mod:`~dpselect.recipes.quantile_auto_bounds`);
- ``privacy_unit``: a column identifying people; ``epsilon`` then protects one person (all
  their rows added or removed), not one row. Each person keeps at most ``max_rows = r`` rows
  (``Contributions(values_per_unit=r)``, default 1), chosen by the salted keyed rule of
  docs/contribution_bounding.md ("Rows per unit"), which reads only that person's rows; the
  rank scores then move by at most ``r``, and every method is calibrated for it (it runs at
  ``epsilon / r`` per row: group privacy; docs/quantiles.md, "Privacy units"). The accuracy
  lines count the kept rows. ``values_per_unit="auto"`` chooses the bound privately first
  with ``auto_share`` of ``epsilon``, one composed charge
  (:mod:`~dpselect.recipes.quantile_auto_rows`). A bound other than 1 without a
  ``privacy_unit`` is refused (each row is then its own unit);
- ``by``: the quantiles of every group in one scan (:mod:`~dpselect.recipes.quantile_grouped`).

The ledger is charged durably before the data are read (as pure DP for the tree and the auto
rule's count, else as bounded range). Rows with NULL, NaN or (text columns of CSV/JSON) text
that is not a number are dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from ..core.errors import ParameterError
from ..data.engine import Engine
from ..data.query import Query
from ..data.tables import one_column
from ..mechanisms.quantile_candidates import make_candidate_quantile
from ..mechanisms.quantile_continuous import make_continuous_quantile
from ..mechanisms.quantile_score import (
    quantile_fraction,
    rank_excess_of_candidates,
    score_sensitivity,
)
from ..planning.quantile_request import QuantileRequest
from ..sampling.source import RandomSource
from .grouping import GroupedResult
from .quantile_auto_bounds import quantile_with_auto_bounds
from .quantile_auto_rows import quantile_with_auto_rows
from .quantile_grouped import grouped_quantile
from .quantile_release import quantile_release
from .quantile_result import QuantileResult

__all__ = [
    "make_candidate_quantile",
    "make_continuous_quantile",
    "quantile",
    "quantile_fraction",
    "quantile_scores",
    "quantile_values",
    "score_sensitivity",
]

F64 = npt.NDArray[np.float64]


def quantile_scores(values: Any, candidates: Any, q: Any) -> list[int]:
    """The score ``-s(x, c)`` (minus the rank excess) of each candidate, from one sort.

    Parameters
    ----------
    values : array_like of float
        The data (the private rows; NaN dropped).
    candidates : array_like of float
        The candidate values.
    q : float or Fraction
        The quantile level in ``[0, 1]``, read as ``a / b``
        (:func:`~dpselect.mechanisms.quantile_score.quantile_fraction`).

    Returns
    -------
    list of int
        ``-s(x, c)`` for each candidate in the order given: 0 at a ``q``-quantile, else minus
        ``b`` times the rows too many on one side.
    """
    level = quantile_fraction(q)
    return [-int(s) for s in rank_excess_of_candidates(values, candidates, level)]


def quantile_values(
    table: Engine, column: str, progress: Callable[[float], None] | None = None
) -> F64:
    """The column as float64; NULL, NaN and text that does not parse are dropped row by row
    (:meth:`dpselect.data.engine.Engine.quantile_values` without candidates or bounds: every
    row's value; ``TRY_CAST`` maps each row on its own, a 1-stable map). ``progress(percent)``
    is polled while the scan runs.

    Parameters
    ----------
    table : Engine
        The opened table (:func:`dpselect.data.tables.open_table`).
    column : str
        The numeric column.
    progress : callable, optional
        ``progress(percent)``, polled during the scan.

    Returns
    -------
    numpy.ndarray of float64
        Every row's value that holds a number, in no particular order (private data).
    """
    return table.quantile_values(Query(column, progress=progress))


def quantile(
    data: Any,
    request: QuantileRequest,
    *,
    ledger: Any = None,
    source: RandomSource | None = None,
    progress: Callable[[float], None] | None = None,
    work_progress: Callable[[float], None] | None = None,
    schema: Any = None,
) -> QuantileResult | GroupedResult:
    """The quantile(s) a checked request asks for, privately (``q = 0.5``: the median).

    The request (:func:`dpselect.planning.quantile_request.quantile_request`, or
    :meth:`dpselect.Session.quantile` and :func:`dpselect.quantile`, which build it) holds the
    column, the levels, ``epsilon``, the bounds or candidates, the method, the privacy unit
    and its bounds; this sends it to the recipe of its route
    (:attr:`~dpselect.planning.quantile_request.QuantileRequest.route`). ``epsilon`` is the
    total pure-DP cost under adding or removing one row (one unit with a ``privacy_unit``),
    charged before the data are read. ``data`` may also be a DuckDB relation, or one column of
    values (a pandas or polars Series or a 1-D NumPy array, with the request's column ``None``
    or the Series' name).

    Parameters
    ----------
    data : str, path, DataFrame, relation, Series, array or Engine
        The private rows, as for :func:`dpselect.top_k` (or a table opened by
        :func:`dpselect.data.tables.open_table`).
    request : QuantileRequest
        The checked query.
    ledger : Ledger or path, optional
        The budget ledger, charged before any row is read.
    source : RandomSource, optional
        The randomness (a seeded source: tests and demos only, not private).
    progress : callable, optional
        ``progress(percent)`` while the column is scanned (with ``by``: the one scan of
        every group's rows).
    work_progress : callable, optional
        ``work_progress(fraction)`` while the mechanism works (not with ``by``).
    schema : dict, optional
        Declared column types (:func:`dpselect.data.tables.open_table`).

    Returns
    -------
    QuantileResult or GroupedResult
        The released values, the method, the cost and one accuracy line per level (with
        ``by``: one per group).

    Raises
    ------
    ParameterError, DataError, BudgetExceeded
        Invalid parameters, unusable data or budget left, before any budget is spent.

    Examples
    --------
    >>> import pandas as pd
    >>> from dpselect.planning.quantile_request import quantile_request
    >>> from dpselect.sampling import InsecureSeededSource  # reproducible, not private
    >>> values = pd.Series([float(i) for i in range(1, 1001)])
    >>> request = quantile_request(None, 0.5, 1.0, bounds=(0, 1000))
    >>> quantile(values, request, source=InsecureSeededSource(1)).values
    [501.463]
    """
    data, column = one_column(data, request.column)
    request = replace(request, column=column)
    route = request.route
    if route == "grouped":
        if work_progress is not None:
            raise ParameterError(
                "work_progress does not apply with by: each group's mechanism runs on its own "
                "few rows (progress= follows the scan)"
            )
        return grouped_quantile(data, request, ledger=ledger, source=source, progress=progress,
                                schema=schema)  # fmt: skip
    if route == "auto_rows":
        return quantile_with_auto_rows(data, request, ledger=ledger, source=source,
                                       progress=progress, schema=schema)  # fmt: skip
    if route == "auto_bounds":
        return quantile_with_auto_bounds(data, request, ledger=ledger, source=source,
                                         progress=progress, schema=schema)  # fmt: skip
    return quantile_release(data, request, ledger=ledger, source=source, progress=progress,
                            work_progress=work_progress, schema=schema)  # fmt: skip
