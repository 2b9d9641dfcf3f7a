"""A quantile query checked from public facts (the parameters, the table's schema): what the
quantile planner reads (:class:`QuantileQuery`). :func:`dpselect.recipes.quantile_query.check_query`
builds it; nothing has been read or charged.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..data.engine import Engine

__all__ = ["QuantileQuery"]


@dataclass(frozen=True)
class QuantileQuery:
    """A quantile query with public bounds or candidates and a fixed ``max_rows``, checked.

    Every attribute is a public fact (the parameters, the schema); nothing has been read or
    charged.

    Attributes
    ----------
    column : str
        The numeric column.
    given, levels : list
        The levels as given (floats) and as the mechanisms use them (exact fractions).
    eps : Fraction
        The total epsilon.
    conf : float
        The confidence of the accuracy statements.
    cands : list of float or None
        The public candidates (``None``: bounds).
    lo_hi : (float, float) or None
        The public bounds (``None``: candidates).
    resolution : float or None
        The resolution as given; ``w`` is the checked one (``None`` for candidates).
    chosen : str
        The method (:func:`~dpselect.planning.quantile_checks.choose_quantile_method`):
        ``"count"`` is the auto rule's noisy row count.
    rows : int
        The most rows one unit keeps (1 without a unit).
    privacy_unit : str or None
        The unit column.
    table : Engine
        The opened table (its schema only was read).
    notes : list of str
        The notes on the column and the unit the result shows.
    step : Fraction or None
        The grid the column's type puts values on (``None``: a float or text column).
    """

    column: str
    given: list[float]
    levels: list[Fraction]
    eps: Fraction
    conf: float
    cands: list[float] | None
    lo_hi: tuple[float, float] | None
    resolution: float | None
    w: float | None
    chosen: str
    rows: int
    privacy_unit: str | None
    table: Engine
    notes: list[str]
    step: Fraction | None
