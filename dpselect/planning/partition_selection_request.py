"""A partition-selection request: every public argument of a partition selection, checked in one
place before anything else.

:func:`partition_selection_request` takes the arguments of
:meth:`dpselect.Session.partition_selection` as the caller typed them (grouped or not), with the
session's unit and :class:`~dpselect.Contributions`, and returns a frozen
:class:`PartitionSelectionRequest`; the session, the shorthands and the command line build it
first and hand only the request to the recipes
(:func:`dpselect.recipes.unknown_domain.partition_selection`,
:func:`dpselect.recipes.grouped_keys.grouped_partition_selection`). Nothing is opened, read or
charged here: the checks use public facts only, so a refused call costs nothing.

The checks run in one fixed order, and a call with several bad arguments is refused naming the
first: ``contributions`` against the query (:meth:`Contributions.arguments`); without ``by``,
the grouping arguments; ``epsilon`` and its range; ``delta`` (``> 0``); the values per unit;
the rows per value; ``mechanism`` (with ``by``, one that runs per group; without, a policy set
union needs a unit). With ``by`` the groups are checked once the data's schema is known
(:func:`dpselect.planning.group_plan.check_groups`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.errors import ParameterError
from ..data.rules import check_rows_per_value
from ..mechanisms.validate import check_delta, check_int, check_user_epsilon
from .contributions import Contributions, as_contributions, check_no_grouping
from .epsilon_range import check_epsilon_range

__all__ = ["KEYS_METHODS", "PartitionSelectionRequest", "partition_selection_request"]

#: The mechanisms a partition selection accepts.
KEYS_METHODS = ("auto", "optimal", "laplace", "gaussian", "policy_laplace", "policy_gaussian")

#: The mechanisms a grouped partition selection runs per group.
GROUPED_KEYS_METHODS = ("auto", "optimal", "laplace", "gaussian")


@dataclass(frozen=True)
class PartitionSelectionRequest:
    """A partition selection's public arguments, checked (:func:`partition_selection_request`).

    Attributes
    ----------
    column : str
        The column whose values may be published.
    epsilon, delta : float
        The total privacy cost, in range (``delta > 0``).
    privacy_unit : str or None
        The unit column (``None``: each row is its own unit).
    max_contributions : int
        ``Contributions.values_per_unit``: the distinct values one unit counts toward.
    rows_per_value : int
        ``Contributions.rows_per_value``: a unit's rows counted per value.
    mechanism : str
        A key of :data:`KEYS_METHODS` (with ``by``: of :data:`GROUPED_KEYS_METHODS`).
    by : str or None
        The column of groups, as given (checked with the data's schema).
    groups, max_groups, group_fraction
        The public groups as given, ``Contributions.groups_per_unit`` and the share of the
        private groups' choice (checked with ``by``).
    """

    column: str
    epsilon: float
    delta: float
    privacy_unit: str | None
    max_contributions: int
    rows_per_value: int
    mechanism: str
    by: str | None
    groups: Any
    max_groups: Any
    group_fraction: Any


def partition_selection_request(
    column: str,
    epsilon: Any,
    delta: Any,
    *,
    privacy_unit: str | None = None,
    contributions: Contributions | None = None,
    mechanism: Any = "auto",
    by: Any = None,
    groups: Any = None,
) -> PartitionSelectionRequest:
    """Every public argument of a partition selection checked, in the order of the module
    docstring.

    Parameters
    ----------
    column : str
        The column whose values may be published.
    epsilon : float
        The total privacy cost at distance 1 (one unit added or removed).
    delta : float
        The approximate-DP ``delta`` (``> 0``: values that come from the data need it).
    privacy_unit : str, optional
        The unit column (``None``: each row is its own unit).
    contributions : Contributions, optional
        What one unit may contribute (default ``Contributions()``): ``values_per_unit`` (a
        number here), ``rows_per_value``, ``groups_per_unit`` (with ``by``), ``auto_share``
        (the share of a private choice of groups).
    mechanism : str, default "auto"
        ``"optimal"``, ``"laplace"``, ``"gaussian"``, ``"policy_laplace"``,
        ``"policy_gaussian"`` or ``"auto"``.
    by, groups : optional
        A column of groups and its public groups (``None``: chosen privately).

    Returns
    -------
    PartitionSelectionRequest
        The checked arguments.

    Raises
    ------
    ParameterError
        The first bad argument, before anything is opened or charged.
    """
    given = Contributions() if contributions is None else as_contributions(contributions)
    bounds = given.arguments("partition_selection", privacy_unit, by=by, groups=groups)
    if by is None:
        check_no_grouping(groups, bounds["max_groups"], bounds["group_fraction"])
    eps = float(check_user_epsilon(epsilon))
    check_epsilon_range(eps)
    dlt = float(check_delta(delta, allow_zero=False))
    c = check_int(bounds["max_contributions"], "max_contributions", minimum=1)
    if privacy_unit is None and c != 1:
        raise ParameterError("max_contributions applies only with a privacy_unit column")
    rows = check_rows_per_value(bounds["max_rows_per_value"], privacy_unit)
    if by is not None:
        if mechanism not in GROUPED_KEYS_METHODS:
            raise ParameterError(
                "with by, mechanism must be 'auto', 'optimal', 'laplace' or 'gaussian' (policy "
                "set union holds persons in the driver and is not run per group), got "
                f"{mechanism!r}"
            )
    elif mechanism not in KEYS_METHODS:
        raise ParameterError(
            f"mechanism must be one of {', '.join(KEYS_METHODS)}, got {mechanism!r}"
        )
    elif mechanism.startswith("policy") and privacy_unit is None:
        raise ParameterError(f"mechanism {mechanism!r} needs a privacy_unit column")
    return PartitionSelectionRequest(column, eps, dlt, privacy_unit, c, rows, mechanism, by,
                                     groups, bounds["max_groups"],
                                     bounds["group_fraction"])  # fmt: skip
