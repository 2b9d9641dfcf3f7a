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
  (:mod:`dpselect.mechanisms.quantile_joint`: all levels in one draw); one charge for both
  parts, made before any row is read. Above 20 levels the recursive algorithm of Kaplan,
  Schnapp and Stemmer (2022) (:mod:`dpselect.mechanisms.quantile_recursive`); basic
  composition (``epsilon / m`` each) on request (``mechanism="split"``) and with candidates. The
  rule reads ``m``, epsilon and the paid count ``N`` only; docs/quantiles.md has the
  evidence.

Every accuracy line printed is the conclusion of a theorem in docs/quantiles.md, checked by
simulation on adversarial data in tests/recipes/test_quantiles_accuracy.py.

The entry, :func:`quantile`, sends each query to the module holding its concept:

- fixed ``bounds=(lo, hi)`` or ``candidates``: :mod:`~dpselect.recipes.quantile_release`
  (checked in :mod:`~dpselect.recipes.quantile_query`, planned in
  :mod:`~dpselect.recipes.quantile_methods` and :mod:`~dpselect.recipes.quantile_count_rule`);
- ``bounds="auto"``: the bounds are chosen privately first with ``auto_fraction`` (default
  0.25) of ``epsilon``, one composed charge (:mod:`~dpselect.recipes.quantile_auto_bounds`);
- ``privacy_unit``: a column identifying people; ``epsilon`` then protects one person (all
  their rows added or removed), not one row. Each person keeps at most ``max_rows`` rows
  (default 1), chosen by the salted keyed rule of docs/contribution_bounding.md ("Rows per
  unit"), which reads only that person's rows; the rank scores then move by at most
  ``max_rows``, and every method is calibrated for it (it runs at ``epsilon / max_rows`` per
  row: group privacy; docs/quantiles.md, "Privacy units"). The accuracy lines count the kept
  rows. ``max_rows="auto"`` chooses the bound privately first with ``auto_fraction`` of
  ``epsilon``, one composed charge (:mod:`~dpselect.recipes.quantile_auto_rows`). ``max_rows``
  without a ``privacy_unit`` is refused (each row is then its own unit);
- ``by``: the quantiles of every group in one scan (:mod:`~dpselect.recipes.quantile_grouped`).

The ledger is charged durably before the data are read (as pure DP for the tree and the auto
rule's count, else as bounded range). Rows with NULL, NaN or (text columns of CSV/JSON) text
that is not a number are dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
from ..planning.contributions import Contributions, check_no_grouping, merged
from ..sampling.source import RandomSource
from ._common import CONFIDENCE
from .grouping import GroupedResult
from .quantile_auto_bounds import quantile_with_auto_bounds
from .quantile_auto_rows import quantile_with_auto_rows
from .quantile_grouped import grouped_quantile
from .quantile_query import check_rows_per_unit
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
    column: str | None,
    q: float | Sequence[float],
    epsilon: float,
    bounds: tuple[float, float] | str | None = None,
    candidates: Any = None,
    confidence: float = CONFIDENCE,
    ledger: Any = None,
    source: RandomSource | None = None,
    resolution: float | None = None,
    mechanism: str = "auto",
    progress: Callable[[float], None] | None = None,
    schema: Any = None,
    auto_fraction: float | None = None,
    work_progress: Callable[[float], None] | None = None,
    privacy_unit: str | None = None,
    max_rows: int | str | None = None,
    by: str | None = None,
    groups: Any = None,
    max_groups: int = 1,
    group_fraction: float | None = None,
    delta: float | None = None,
    contributions: Contributions | None = None,
) -> Any:
    """The ``q``-quantile(s) of a numeric ``column``, privately (``q = 0.5``: the median).

    Give ``candidates`` or ``bounds=(lo, hi)`` (the continuous mechanism; rows clamped).
    ``mechanism`` "auto" picks the method from public facts (module docstring); ``epsilon``
    is the total pure-DP cost under adding or removing one row (one unit with a
    ``privacy_unit``), charged before the data are read. ``data`` may also be a
    DuckDB relation, or one column of values (a pandas or polars Series or a 1-D NumPy array,
    with ``column=None`` or the Series' name).

    Parameters
    ----------
    data : str, path, DataFrame, relation, Series or array
        The private rows, as for :func:`dpselect.top_k`.
    column : str or None
        A numeric column.
    q : float or list of float
        The quantile level(s) in [0, 1] (0.5: the median).
    epsilon : float
        The total privacy cost at distance 1.
    bounds, candidates
        Public clamping bounds ``(lo, hi)`` (``"auto"``: chosen privately), or public candidate
        values (a list or a text file of numbers): exactly one of them.
    confidence, mechanism
        The confidence of the accuracy statements (default 0.95); ``"auto"`` (default),
        ``"tree"``, ``"joint"``, ``"recursive"`` or ``"split"`` (``epsilon / m`` per level).
    ledger, source, resolution, progress, schema, auto_fraction, work_progress
        The budget ledger, the randomness (tests and demos only), the public resolution ``w``,
        ``progress(percent)`` while the column is scanned, declared column types
        (:func:`dpselect.data.tables.open_table`), the share of ``epsilon`` for a private
        choice (default 0.25), ``work_progress(fraction)`` while the mechanism works.
    privacy_unit : str, optional
        The column identifying people (each row is a person without it).
    max_rows : int or "auto", optional
        The most rows one person keeps (default 1 with a ``privacy_unit``; ``"auto"``: chosen
        privately).
    by, groups, max_groups, group_fraction
        A column of groups: the quantiles of every group in one scan
        (:func:`~dpselect.recipes.quantile_grouped.grouped_quantile`), as for
        :func:`dpselect.top_k`.
    delta : float, optional
        With ``by`` and private groups only: the delta of their selection.
    contributions : Contributions, optional
        Every contribution bound as one value (:class:`~dpselect.Contributions`; each row is
        one value, so ``values_per_unit`` is the most rows a unit keeps), in place of
        ``max_rows``, ``max_groups``, ``auto_fraction`` and ``group_fraction`` (giving both
        is refused).

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
    >>> import dpselect as dp
    >>> from dpselect.sampling import InsecureSeededSource  # reproducible, not private
    >>> values = pd.Series([float(i) for i in range(1, 1001)])
    >>> result = dp.quantile(values, None, q=0.5, epsilon=1.0, bounds=(0, 1000),
    ...                      source=InsecureSeededSource(1))
    >>> result.values
    [501.463]
    """
    data, column = one_column(data, column)
    bound = _bound_arguments(contributions, privacy_unit, max_rows, max_groups, auto_fraction,
                             group_fraction, by=by, groups=groups, bounds=bounds)  # fmt: skip
    common: dict[str, Any] = {
        "confidence": confidence, "source": source, "resolution": resolution,
        "mechanism": mechanism, "schema": schema,
    }  # fmt: skip
    if by is not None:
        return _by_groups(data, column, q, epsilon, bound, bounds, candidates, by, groups,
                          delta, privacy_unit, ledger, common, progress, work_progress)  # fmt: skip
    check_no_grouping(groups, bound.max_groups, bound.group_fraction)
    if delta is not None:
        raise ParameterError("delta applies to quantile only with by and private groups")
    return _one_release(data, column, q, epsilon, bound, bounds, candidates, privacy_unit,
                        ledger, common, progress, work_progress)  # fmt: skip


def _one_release(
    data: Any,
    column: str,
    q: Any,
    epsilon: float,
    bound: _Bounds,
    bounds: Any,
    candidates: Any,
    privacy_unit: str | None,
    ledger: Any,
    common: dict[str, Any],
    progress: Callable[[float], None] | None,
    work_progress: Callable[[float], None] | None,
) -> QuantileResult:
    """A release without groups: ``max_rows="auto"`` or ``bounds="auto"`` chosen privately
    first (one composed charge), else the release with fixed bounds or candidates."""
    rows = check_rows_per_unit(privacy_unit, bound.max_rows)
    if rows == "auto":
        assert privacy_unit is not None
        return quantile_with_auto_rows(
            data, column, q, epsilon, privacy_unit, bounds=bounds, candidates=candidates,
            ledger=ledger, progress=progress, auto_fraction=bound.auto_fraction, **common,
        )  # fmt: skip
    r = int(rows)
    if isinstance(bounds, str):
        if bounds != "auto":
            raise ParameterError(f"bounds must be a pair (lo, hi) or 'auto', got {bounds!r}")
        return quantile_with_auto_bounds(
            data, column, q, epsilon, candidates=candidates, ledger=ledger, progress=progress,
            auto_fraction=bound.auto_fraction, privacy_unit=privacy_unit,
            max_rows=None if privacy_unit is None else r, **common,
        )  # fmt: skip
    if bound.auto_fraction is not None:
        raise ParameterError("auto_fraction applies only with bounds='auto'")
    return quantile_release(
        data, column, q, epsilon, bounds=bounds, candidates=candidates, ledger=ledger,
        progress=progress, work_progress=work_progress, privacy_unit=privacy_unit, rows=r,
        **common,
    )  # fmt: skip


@dataclass(frozen=True)
class _Bounds:
    """The contribution bounds of a query: as typed, or from ``contributions``."""

    max_rows: Any
    max_groups: int
    auto_fraction: float | None
    group_fraction: float | None


def _bound_arguments(
    contributions: Contributions | None,
    privacy_unit: str | None,
    max_rows: Any,
    max_groups: int,
    auto_fraction: float | None,
    group_fraction: float | None,
    *,
    by: str | None,
    groups: Any,
    bounds: Any,
) -> _Bounds:
    """The loose bound arguments, or those of ``contributions`` (giving both is refused)."""
    bound_args = merged(
        contributions, "quantile", privacy_unit,
        {"max_rows": max_rows, "max_groups": max_groups, "auto_fraction": auto_fraction,
         "group_fraction": group_fraction},
        {"max_rows": None, "max_groups": 1, "auto_fraction": None, "group_fraction": None},
        by=by, groups=groups, auto_bounds=isinstance(bounds, str) and bounds == "auto",
    )  # fmt: skip
    return _Bounds(bound_args["max_rows"], bound_args["max_groups"],
                   bound_args["auto_fraction"], bound_args["group_fraction"])  # fmt: skip


def _by_groups(
    data: Any,
    column: str,
    q: Any,
    epsilon: float,
    bound: _Bounds,
    bounds: Any,
    candidates: Any,
    by: str,
    groups: Any,
    delta: float | None,
    privacy_unit: str | None,
    ledger: Any,
    common: dict[str, Any],
    progress: Callable[[float], None] | None,
    work_progress: Callable[[float], None] | None,
) -> GroupedResult:
    """``quantile(by=...)``: the per-group options as given, then
    :func:`~dpselect.recipes.quantile_grouped.grouped_quantile`."""
    if bound.auto_fraction is not None or work_progress is not None or progress is not None:
        raise ParameterError("auto_fraction and progress callbacks do not apply with by")
    max_rows = bound.max_rows
    if max_rows == "auto":
        raise ParameterError("max_rows='auto' is not available with by: give a number")
    options: dict[str, Any] = {"mechanism": common["mechanism"],
                               "confidence": common["confidence"]}  # fmt: skip
    for key, value in (("bounds", bounds), ("candidates", candidates),
                       ("resolution", common["resolution"])):  # fmt: skip
        if value is not None:
            options[key] = value
    return grouped_quantile(
        data, column, q, epsilon, by=by, groups=groups, delta=delta,
        privacy_unit=privacy_unit, max_groups=bound.max_groups,
        max_rows=1 if max_rows is None else int(max_rows), group_fraction=bound.group_fraction,
        ledger=ledger, source=common["source"], schema=common["schema"], **options,
    )  # fmt: skip
