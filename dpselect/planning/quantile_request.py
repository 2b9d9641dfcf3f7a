"""A quantile request: the arguments of a quantile as one checked value, before anything is
opened.

:func:`quantile_request` takes the arguments of :func:`dpselect.quantile` as the caller typed
them (grouped or not), maps the contribution bounds (a :class:`~.contributions.Contributions`:
``values_per_unit`` is the most rows a unit keeps, ``groups_per_unit`` the most groups,
``auto_share`` the share of an automatic choice) and returns a frozen :class:`QuantileRequest`;
the recipe :func:`dpselect.recipes.quantiles.quantile` takes only the request. Nothing is
opened, read or charged here: the checks use public facts only, so a refused call costs
nothing.

The checks run in one fixed order, and a call with several bad arguments is refused naming the
first: the bounds against the query (:meth:`~.contributions.Contributions.arguments`); with
``by``, an automatic share (none applies per group) and ``values_per_unit="auto"``; without
``by``, the grouping arguments, ``delta``, the rows per unit, and ``bounds`` given as text other
than ``"auto"``; then the checks of the route the request takes
(:attr:`QuantileRequest.route`) that need no table, in the order its recipe makes them
(:mod:`~.quantile_checks`: ``epsilon``, the levels, the confidence, ``bounds`` or
``candidates``, the resolution, the method). What needs the table's schema (the column's type,
the unit column, the groups; with ``by`` the levels and the method too, checked per group)
follows in the recipe, before the charge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from ..core.errors import ParameterError
from ..mechanisms.quantile_score import check_max_rows
from .contributions import Contributions, as_contributions, check_no_grouping
from .quantile_checks import (
    check_auto_bounds_arguments,
    check_grouped_arguments,
    check_release_arguments,
)
from .top_k_plan import CONFIDENCE

__all__ = ["QuantileRequest", "Route", "check_rows_per_unit", "quantile_request"]

#: The recipe a request goes to: groups, ``max_rows`` chosen privately, bounds chosen
#: privately, or one release with public bounds or candidates.
Route = Literal["grouped", "auto_rows", "auto_bounds", "release"]


@dataclass(frozen=True)
class QuantileRequest:
    """A quantile's public arguments, checked (:func:`quantile_request`).

    Attributes
    ----------
    column : str or None
        The numeric column (``None``: one column of values, a Series or an array).
    q : float or sequence of float
        The level(s), as given.
    epsilon : float
        The total epsilon, as given (checked by the route's recipe).
    bounds : (float, float) or "auto" or None
        Public clamping bounds, ``"auto"`` (chosen privately) or ``None`` (candidates).
    candidates : list or path or None
        Public candidate values.
    confidence : float
        The confidence of the accuracy statements.
    resolution : float or None
        The continuous mechanisms' public resolution ``w``.
    mechanism : str
        ``"auto"``, ``"tree"``, ``"joint"``, ``"recursive"`` or ``"split"``.
    privacy_unit : str or None
        The unit column (``None``: each row is its own unit).
    rows : int or "auto"
        The most rows one unit keeps (1 without a unit; ``"auto"``: chosen privately).
    by, groups, delta
        The column of groups, the public groups (``None``: chosen privately) and the groups'
        selection delta (private groups only).
    max_groups : int
        The most groups one unit contributes to (with ``by``).
    group_fraction : float or None
        The share of epsilon that selects private groups.
    auto_fraction : float or None
        The share of epsilon of an automatic choice (``rows="auto"``, ``bounds="auto"``).
    """

    column: str | None
    q: float | Sequence[float]
    epsilon: float
    bounds: tuple[float, float] | str | None = None
    candidates: Any = None
    confidence: float = CONFIDENCE
    resolution: float | None = None
    mechanism: str = "auto"
    privacy_unit: str | None = None
    rows: int | Literal["auto"] = 1
    by: str | None = None
    groups: Any = None
    delta: float | None = None
    max_groups: int = 1
    group_fraction: float | None = None
    auto_fraction: float | None = None

    @property
    def route(self) -> Route:
        """The recipe this request goes to (public facts only)."""
        if self.by is not None:
            return "grouped"
        if self.rows == "auto":
            return "auto_rows"
        return "auto_bounds" if self.bounds == "auto" else "release"


def check_rows_per_unit(privacy_unit: Any, max_rows: Any) -> int | Literal["auto"]:
    """``max_rows`` checked from public facts: ``"auto"`` or an int at least 1, given only with a
    ``privacy_unit`` (default 1 with one; without one each row is its own unit: 1).

    Parameters
    ----------
    privacy_unit : str or None
        The unit column.
    max_rows : int or "auto" or None
        The most rows one unit keeps, as given (``None``: 1).

    Returns
    -------
    int or "auto"
        The bound.
    """
    if max_rows is None:
        return 1
    if privacy_unit is None:
        raise ParameterError(
            "max_rows applies only with a privacy_unit column (without one each row is its own "
            "unit and counts once)"
        )
    if isinstance(max_rows, str):
        if max_rows != "auto":
            raise ParameterError(f"max_rows must be an int >= 1 or 'auto', got {max_rows!r}")
        return "auto"
    return check_max_rows(max_rows)


def quantile_request(
    column: str | None,
    q: float | Sequence[float],
    epsilon: float,
    *,
    bounds: tuple[float, float] | str | None = None,
    candidates: Any = None,
    confidence: float = CONFIDENCE,
    resolution: float | None = None,
    mechanism: str = "auto",
    privacy_unit: str | None = None,
    contributions: Contributions | None = None,
    by: str | None = None,
    groups: Any = None,
    delta: float | None = None,
) -> QuantileRequest:
    """Every argument of a quantile checked, in the order of the module docstring.

    Parameters
    ----------
    column : str or None
        A numeric column (``None`` for one column of values).
    q : float or list of float
        The quantile level(s) in ``[0, 1]`` (0.5: the median).
    epsilon : float
        The total privacy cost at distance 1 (one row, or one unit with a ``privacy_unit``).
    bounds, candidates
        Public clamping bounds ``(lo, hi)`` (``"auto"``: chosen privately), or public candidate
        values (a list or a text file of numbers): exactly one of them.
    confidence : float, default 0.95
        The confidence of the accuracy statements.
    resolution : float, optional
        The public resolution ``w`` of the continuous mechanisms (fixed bounds only).
    mechanism : str, default "auto"
        ``"auto"``, ``"tree"``, ``"joint"``, ``"recursive"`` or ``"split"`` (``epsilon / m``
        per level).
    privacy_unit : str, optional
        The column identifying people (each row is a person without it).
    contributions : Contributions, optional
        The contribution bounds (each row is one value: ``values_per_unit`` is the most rows a
        unit keeps, a number or ``"auto"``; ``groups_per_unit`` the most groups with ``by``;
        ``auto_share`` the share of epsilon of an automatic choice, default 0.25).
    by, groups
        A column of groups: the quantiles of every group in one scan, over the public
        ``groups`` (``None``: chosen privately).
    delta : float, optional
        With ``by`` and private groups only: the delta of their selection.

    Returns
    -------
    QuantileRequest
        The checked arguments.

    Raises
    ------
    ParameterError
        The first bad argument, before anything is opened or charged.
    """
    bound: dict[str, Any] = {"max_rows": None, "max_groups": 1, "auto_fraction": None,
                             "group_fraction": None}  # fmt: skip
    if contributions is not None:
        auto_bounds = isinstance(bounds, str) and bounds == "auto"
        args = as_contributions(contributions).arguments(
            "quantile", privacy_unit, by=by, groups=groups, auto_bounds=auto_bounds
        )
        bound = {name: args[name] for name in bound}
    if by is None:
        check_no_grouping(groups, bound["max_groups"], bound["group_fraction"])
        if delta is not None:
            raise ParameterError("delta applies to quantile only with by and private groups")
    rows = _rows(privacy_unit, bound["max_rows"], bound["auto_fraction"], by=by, bounds=bounds)
    request = QuantileRequest(column, q, epsilon, bounds, candidates, confidence, resolution,
                              mechanism, privacy_unit, rows, by, groups, delta,
                              bound["max_groups"], bound["group_fraction"],
                              bound["auto_fraction"])  # fmt: skip
    return _checked_route(request)


def _rows(
    privacy_unit: str | None, max_rows: Any, auto_fraction: Any, *, by: Any, bounds: Any
) -> int | Literal["auto"]:
    """The rows per unit, with the refusals of an automatic choice where none applies: with
    ``by``, a share and ``"auto"`` rows (per group); without, a share where nothing is
    automatic, and ``bounds`` given as text other than ``"auto"``."""
    if by is not None:
        if isinstance(bounds, str) and bounds == "auto":
            raise ParameterError(
                "bounds='auto' is not available with by: give bounds=(lo, hi) or candidates"
            )
        # Contributions.arguments refuses a share and 'auto' rows with by before this
        assert auto_fraction is None and max_rows != "auto"
        return 1 if max_rows is None else int(max_rows)
    rows = check_rows_per_unit(privacy_unit, max_rows)
    if rows != "auto":
        if isinstance(bounds, str) and bounds != "auto":
            raise ParameterError(f"bounds must be a pair (lo, hi) or 'auto', got {bounds!r}")
        if not isinstance(bounds, str) and auto_fraction is not None:
            raise ParameterError("auto_fraction applies only with bounds='auto'")
    return rows


def _checked_route(request: QuantileRequest) -> QuantileRequest:
    """The checks of the request's route that need no table, in its recipe's order
    (:mod:`~.quantile_checks`); the candidates loaded (a file is read once)."""
    r = request
    kw: dict[str, Any] = {"confidence": r.confidence, "resolution": r.resolution,
                          "mechanism": r.mechanism}  # fmt: skip
    route = r.route
    if route == "grouped":
        check_grouped_arguments(r.epsilon, r.bounds, r.privacy_unit, r.rows)
        return r
    if route == "auto_bounds":
        check_auto_bounds_arguments(r.q, r.epsilon, r.candidates, auto_fraction=r.auto_fraction,
                                    **kw)  # fmt: skip
        return r
    if route == "auto_rows":
        checked = check_release_arguments(r.q, r.epsilon, r.bounds, r.candidates,
                                          auto_fraction=r.auto_fraction, choose_rows=True,
                                          **kw)  # fmt: skip
    else:
        checked = check_release_arguments(r.q, r.epsilon, r.bounds, r.candidates, **kw)
    return r if checked.cands is None else replace(r, candidates=checked.cands)
