"""A top-k request: every public argument of a top-k, checked in one place before anything else.

:func:`top_k_request` takes the arguments of :meth:`dpselect.Session.top_k` as the caller
typed them (grouped or not), with the session's unit and :class:`~dpselect.Contributions`, and
returns a frozen :class:`TopKRequest`; the session, the shorthands and the command line build it
first and hand only the request to the recipes (:func:`dpselect.recipes.top_k.top_k`,
:func:`dpselect.recipes.grouped.grouped_top_k`). Nothing is opened, read or charged here: the
checks use public facts only (the arguments and the candidate list), so a refused call costs
nothing.

The checks run in one fixed order, and a call with several bad arguments is refused naming the
first: ``contributions`` against the query (:meth:`Contributions.arguments`: the bounds that
need a unit or a grouping, the share where nothing is automatic); without ``by``, the grouping
arguments; ``k``; ``epsilon`` and its range; ``mechanism``; the rows per value; the values per
unit with the share; ``counts``; ``delta`` (``> 0`` without
candidates); the candidates, loaded and checked against the bounding rule and ``k``; and
``k_bar``, which needs values from the data. With ``by`` the groups are checked once the
data's schema is known (:func:`dpselect.planning.group_plan.check_groups`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.errors import ParameterError
from ..data.candidates import load_candidates
from ..data.rules import check_bounded_candidates, check_rows_per_value
from ..mechanisms.validate import check_delta, check_int, check_user_epsilon
from .contributions import Contributions, as_contributions, check_auto_fraction, check_no_grouping
from .epsilon_range import check_epsilon_range
from .top_k_mechanisms import Mechanism, check_mechanism

__all__ = ["TopKRequest", "top_k_request"]

_K_BAR = "k_bar applies only without a candidates list (limited domain)"


@dataclass(frozen=True)
class TopKRequest:
    """A top-k's public arguments, checked (:func:`top_k_request`).

    Attributes
    ----------
    column : str
        The column whose values are ranked.
    k : int
        How many values to release.
    epsilon : float
        The total epsilon, in range.
    delta : float
        The total delta (``> 0`` without candidates; 0 when not given with them).
    mechanism : str
        A key of :data:`~dpselect.planning.top_k_mechanisms.MECHANISMS`.
    privacy_unit : str or None
        The unit column (``None``: each row is a person).
    rows_per_value : int
        ``Contributions.rows_per_value``.
    max_contributions : int or None
        ``Contributions.values_per_unit``; ``None`` for ``"auto"`` (chosen privately).
    auto_fraction : float
        The share of epsilon that chooses the bound (``Contributions.auto_share``; 0 with a
        bound given).
    counts : bool
        Whether noisy counts are released too.
    candidates : list or None
        The public candidates, loaded; ``None``: the values come from the data.
    k_bar : int or None
        The limited domain's ``k_bar`` as given (checked where it applies).
    by : str or None
        The column of groups, as given (checked with the data's schema).
    groups, max_groups, group_fraction
        The public groups as given, ``Contributions.groups_per_unit`` and the share of the
        private groups' choice (checked with ``by``).
    """

    column: str
    k: int
    epsilon: float
    delta: float
    mechanism: Mechanism
    privacy_unit: str | None
    rows_per_value: int
    max_contributions: int | None
    auto_fraction: float
    counts: bool
    candidates: list[Any] | None
    k_bar: int | None
    by: str | None
    groups: Any
    max_groups: Any
    group_fraction: Any


def top_k_request(
    column: str,
    k: Any,
    epsilon: Any,
    *,
    privacy_unit: str | None = None,
    contributions: Contributions | None = None,
    mechanism: Any = "auto",
    counts: Any = False,
    candidates: Any = None,
    delta: Any = None,
    k_bar: Any = None,
    by: Any = None,
    groups: Any = None,
) -> TopKRequest:
    """Every public argument of a top-k checked, in the order of the module docstring.

    Parameters
    ----------
    column : str
        The column whose values are ranked.
    k : int
        How many values to release (at least 1, at most the number of candidates).
    epsilon : float
        The total privacy cost at distance 1 (one unit added or removed).
    privacy_unit : str, optional
        The unit column (``None``: each row is its own unit).
    contributions : Contributions, optional
        What one unit may contribute (default ``Contributions()``: one value, one row per
        value, one group): ``values_per_unit`` (``"auto"``: chosen privately with
        ``auto_share`` of ``epsilon``), ``rows_per_value``, ``groups_per_unit`` (with ``by``),
        ``auto_share`` (also the share of a private choice of groups).
    mechanism : str, default "auto"
        A key of :data:`~dpselect.planning.top_k_mechanisms.MECHANISMS`, or ``"auto"``.
    counts : bool, default False
        Also release noisy counts of the returned values.
    candidates : list or str, optional
        The public candidates, or a text file of them; without them the values come from the
        data and ``delta > 0`` is required.
    delta : float, optional
        The approximate-DP ``delta`` (default 0, pure DP).
    k_bar : int, optional
        The limited domain's ``k_bar`` (without candidates only).
    by, groups : optional
        A column of groups and its public groups (``None``: chosen privately).

    Returns
    -------
    TopKRequest
        The checked arguments, the candidates loaded.

    Raises
    ------
    ParameterError, DataError
        The first bad argument, before anything is opened or charged.
    """
    given = Contributions() if contributions is None else as_contributions(contributions)
    bounds = given.arguments("top_k", privacy_unit, by=by, groups=groups)
    max_groups, group_fraction = bounds["max_groups"], bounds["group_fraction"]
    if by is None:
        check_no_grouping(groups, max_groups, group_fraction)
    k = check_int(k, "k", minimum=1)
    eps = float(check_user_epsilon(epsilon))
    check_epsilon_range(eps)
    mech = check_mechanism(mechanism)
    rows, m, fraction = _checked_bounds(bounds, privacy_unit)
    if not isinstance(counts, bool):
        raise ParameterError(f"counts must be a bool, got {counts!r}")
    cand_list = None
    if candidates is None:
        if delta is None or delta == 0:
            raise ParameterError(
                "without a public candidates list, give delta > 0: values that come from the "
                "data can only be shown with a small chance of failure delta"
            )
        dlt = float(check_delta(delta, allow_zero=False))
    else:
        if k_bar is not None and by is None:
            raise ParameterError(_K_BAR)
        dlt = 0.0 if delta is None else float(check_delta(delta))
        cand_list = load_candidates(candidates)
        if privacy_unit is not None:  # the bounding rule's 32-bit codes (public: the size)
            check_bounded_candidates(len(cand_list))
        if k > len(cand_list):
            raise ParameterError(
                f"k must be at most the number of candidates ({len(cand_list)}), got {k}"
            )
        if k_bar is not None:
            raise ParameterError(_K_BAR)
    return TopKRequest(column, k, eps, dlt, mech, privacy_unit, rows, m, fraction, counts,
                       cand_list, k_bar, by, groups, max_groups, group_fraction)  # fmt: skip


def _checked_bounds(
    bounds: dict[str, Any], privacy_unit: str | None
) -> tuple[int, int | None, float]:
    """The rows per value, then the values per unit with the share (public facts only):
    ``(r, m, 0.0)`` for a number ``m >= 1`` (not 1 only with a privacy unit; no
    ``auto_fraction``), ``(r, None, fraction)`` for ``"auto"`` (which needs a privacy unit)."""
    rows = check_rows_per_value(bounds["max_rows_per_value"], privacy_unit)
    max_contributions, auto_fraction = bounds["max_contributions"], bounds["auto_fraction"]
    if isinstance(max_contributions, str) and max_contributions == "auto":
        fraction = check_auto_fraction(auto_fraction)
        if privacy_unit is None:
            raise ParameterError(
                "max_contributions='auto' needs a privacy_unit column (without one each row "
                "is a person and counts once)"
            )
        return rows, None, fraction
    if auto_fraction is not None:
        raise ParameterError("auto_fraction applies only with max_contributions='auto'")
    m = check_int(max_contributions, "max_contributions", minimum=1)
    if privacy_unit is None and m != 1:
        raise ParameterError("max_contributions applies only with a privacy_unit column")
    return rows, m, 0.0
