"""Contribution bounds as one typed value: how much one privacy unit may add to a release.

A release that protects a *privacy unit* (a person: all the rows sharing a value of the unit
column) bounds what one unit contributes before counting, and its privacy map is stated at
those bounds (docs/contribution_bounding.md). :class:`Contributions` holds every bound in one
frozen value, validated in one place (its constructor), and maps it to the arguments of each
query (:meth:`Contributions.arguments`), refusing the fields a query does not use with the
reason, before anything is read or charged. The same value is accepted by
:class:`dpselect.Session`, by :func:`~dpselect.top_k`, :func:`~dpselect.most_common`,
:func:`~dpselect.partition_selection` and :func:`~dpselect.quantile` (``contributions=``).

The fields and the arguments they stand for:

=====================  ==========================================  ==========================
field                  top-k, most common, partition selection      quantile, best price
=====================  ==========================================  ==========================
``values_per_unit``    ``max_contributions`` (distinct values)      ``max_rows`` (each row is
                                                                     one value or bid)
``rows_per_value``     ``max_rows_per_value``                       (not used: 1)
``groups_per_unit``    ``max_groups`` (with ``by=``)                ``max_groups`` (quantile)
``auto_share``         ``auto_fraction`` (``values_per_unit="auto"``) and ``group_fraction``
                       (private groups); the quantile's ``bounds="auto"`` too
=====================  ==========================================  ==========================

PipelineDP's ``AggregateParams`` holds the same bounds (``max_partitions_contributed``,
``max_contributions_per_partition``); OpenDP's ``Context`` binds a unit and its bound once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

from ..core.arithmetic import plain_number
from ..core.errors import ParameterError, given

__all__ = [
    "AUTO_FRACTION", "PYTHON_SPELLING", "Contributions", "Query", "as_contributions",
    "check_auto_fraction", "check_no_grouping", "contributions_line", "merged",
]  # fmt: skip

#: The default share of epsilon spent on choosing ``max_contributions`` or ``bounds`` when
#: they are ``"auto"`` (a public rule; the rest goes to the query).
AUTO_FRACTION = 0.25

#: The queries a :class:`Contributions` maps to (``most_common`` is a top-k).
Query = Literal["top_k", "partition_selection", "quantile", "best_price"]
_QUERIES = ("top_k", "partition_selection", "quantile", "best_price")


#: How a refusal names each field and the query facts it speaks of, as a Python caller typed
#: them; the command line passes its own flags (``spelling=``), so that a message names what
#: the user typed.
PYTHON_SPELLING: Mapping[str, str] = {
    "values_per_unit": "Contributions(values_per_unit=...)",
    "rows_per_value": "Contributions(rows_per_value=...)",
    "groups_per_unit": "Contributions(groups_per_unit=...)",
    "auto_share": "Contributions(auto_share=...)",
    "privacy_unit": "privacy_unit=",
    "by": "by=",
    "groups": "groups=",
    "bounds": "bounds=",
}


def _bound(value: Any, name: str, auto: bool) -> int | Literal["auto"]:
    if auto and isinstance(value, str) and value == "auto":
        return "auto"
    number = plain_number(value)
    if isinstance(number, bool) or not isinstance(number, int):
        rule = "an int >= 1 or 'auto'" if auto else "an int >= 1"
        raise ParameterError(f"{name} must be {rule}, got {given(value)}")
    if number < 1:
        raise ParameterError(f"{name} must be at least 1, got {number}")
    return number


@dataclass(frozen=True, slots=True)
class Contributions:
    """Every contribution bound of one privacy unit, each a number or ``"auto"``.

    Parameters
    ----------
    values_per_unit : int or "auto", default 1
        The most distinct values one unit counts for (top-k, partition selection:
        ``max_contributions``), or the most rows it keeps (quantile: ``max_rows``; each row
        is one value). ``"auto"``: chosen privately with ``auto_share`` of epsilon, in the
        same charge (docs/private_selection.md, "values_per_unit='auto'").
    rows_per_value : int, default 1
        The most rows one unit adds to one value's count (``max_rows_per_value``); with ``r >
        1`` a value's count moves by up to ``r`` for one unit. Top-k and partition selection.
    groups_per_unit : int, default 1
        The most groups one unit contributes to in a grouped release (``by=``; ``max_groups``).
    auto_share : float, optional
        The share of epsilon in ``(0, 1)`` an automatic choice spends (``values_per_unit=
        "auto"``, private groups, a quantile's ``bounds="auto"``); default 0.25. Given only
        where some choice is automatic.
    spelling : mapping, optional
        How refusals name each field and query fact (default :data:`PYTHON_SPELLING`); the
        command line passes its flags (``--max-contributions``, ...). Not part of the value:
        not compared, printed or recorded.

    Raises
    ------
    ParameterError
        A field that is not an int ``>= 1`` (or ``"auto"`` where allowed), or a share outside
        ``(0, 1)``: public facts, raised when the value is made.

    Examples
    --------
    >>> from dpselect import Contributions
    >>> Contributions(values_per_unit=3, rows_per_value=2)
    Contributions(values_per_unit=3, rows_per_value=2, groups_per_unit=1, auto_share=None)
    >>> print(Contributions(values_per_unit=3, rows_per_value=2))
    contributions per unit: 3 values, 2 rows per value, 1 group
    """

    values_per_unit: int | Literal["auto"] = 1
    rows_per_value: int = 1
    groups_per_unit: int = 1
    auto_share: float | None = None
    spelling: Mapping[str, str] | None = field(
        default=None, compare=False, repr=False, kw_only=True
    )

    def _say(self, name: str) -> str:
        return (self.spelling or PYTHON_SPELLING).get(name, PYTHON_SPELLING[name])

    def __post_init__(self) -> None:
        say = self._say
        values = _bound(self.values_per_unit, say("values_per_unit"), True)
        object.__setattr__(self, "values_per_unit", values)
        rows = _bound(self.rows_per_value, say("rows_per_value"), False)
        object.__setattr__(self, "rows_per_value", rows)
        groups = _bound(self.groups_per_unit, say("groups_per_unit"), False)
        object.__setattr__(self, "groups_per_unit", groups)
        if self.auto_share is not None:
            share = plain_number(self.auto_share)
            if isinstance(share, bool) or not isinstance(share, (int, float, Fraction)):
                raise ParameterError(
                    f"{say('auto_share')} must be a number in (0, 1), got {given(self.auto_share)}"
                )
            if not 0 < float(share) < 1:
                raise ParameterError(
                    f"{say('auto_share')} must be in (0, 1), got {self.auto_share!r}"
                )
            object.__setattr__(self, "auto_share", float(share))

    @property
    def bounded(self) -> bool:
        """Whether any bound differs from one value, one row and one group per unit."""
        return (self.values_per_unit, self.rows_per_value, self.groups_per_unit) != (1, 1, 1)

    def __str__(self) -> str:
        share = AUTO_FRACTION if self.auto_share is None else self.auto_share
        values = (
            f"values chosen privately (auto, {share:g} of epsilon)"
            if self.values_per_unit == "auto"
            else f"{self.values_per_unit} value{'s' * (self.values_per_unit != 1)}"
        )
        rows = f"{self.rows_per_value} row{'s' * (self.rows_per_value != 1)} per value"
        groups = f"{self.groups_per_unit} group{'s' * (self.groups_per_unit != 1)}"
        return f"contributions per unit: {values}, {rows}, {groups}"

    def to_dict(self) -> dict[str, Any]:
        """The four fields as a JSON-ready dictionary."""
        return {
            "values_per_unit": self.values_per_unit,
            "rows_per_value": self.rows_per_value,
            "groups_per_unit": self.groups_per_unit,
            "auto_share": self.auto_share,
        }

    def _check_scope(self, privacy_unit: str | None, by: str | None) -> None:
        """Refuse a bound that needs a privacy unit or a grouping the query does not have."""
        say = self._say
        if privacy_unit is None and (self.values_per_unit != 1 or self.rows_per_value != 1):
            typed = "values_per_unit" if self.values_per_unit != 1 else "rows_per_value"
            raise ParameterError(
                f"{say(typed)} other than 1 needs {say('privacy_unit')} (a unit column; without "
                "one each row is its own unit and counts once)"
            )
        if by is None and self.groups_per_unit != 1:
            raise ParameterError(
                f"{say('groups_per_unit')} applies only to a grouped release ({say('by')})"
            )

    def arguments(
        self,
        query: Query,
        privacy_unit: str | None,
        *,
        by: str | None = None,
        groups: Any = None,
        auto_bounds: bool = False,
    ) -> dict[str, Any]:
        """The recipe's keyword arguments these bounds stand for (the table in the module
        docstring), from public facts only: refused with the reason when a field does not
        apply to ``query`` (a bound other than 1 without a ``privacy_unit``, groups without
        ``by``, rows per value for a quantile, a share where nothing is automatic).

        Parameters
        ----------
        query : {"top_k", "partition_selection", "quantile", "best_price"}
            The query the bounds are for.
        privacy_unit : str or None
            The unit column (``None``: each row is its own unit).
        by, groups
            The query's grouping column and public groups (``groups=None`` with ``by``:
            private groups, an automatic choice).
        auto_bounds : bool, default False
            Whether a quantile's value bounds are chosen privately (``bounds="auto"``).

        Returns
        -------
        dict
            ``max_contributions``/``max_rows``, ``max_rows_per_value``, ``max_groups``,
            ``auto_fraction`` and ``group_fraction``, as the query takes them.
        """
        say = self._say
        if query not in _QUERIES:
            raise ParameterError(f"query must be one of {', '.join(_QUERIES)}, got {query!r}")
        self._check_scope(privacy_unit, by)
        private_groups = by is not None and groups is None
        auto_values = self.values_per_unit == "auto"
        automatic = auto_values or private_groups or (query == "quantile" and auto_bounds)
        if self.auto_share is not None and not automatic:
            raise ParameterError(
                f"{say('auto_share')} applies only where a choice is automatic "
                f"({say('values_per_unit')} 'auto', private groups: {say('by')} without "
                f"{say('groups')}, or a quantile's {say('bounds')} 'auto')"
            )
        if query == "best_price":
            if auto_values or self.rows_per_value != 1:
                raise ParameterError(
                    f"best_price takes {say('values_per_unit')} only, a number: the most bids "
                    "one unit keeps (each row is one bid)"
                )
            return {"max_rows": None if privacy_unit is None else self.values_per_unit}
        out: dict[str, Any] = {"max_groups": self.groups_per_unit}
        out["group_fraction"] = self.auto_share if private_groups else None
        if query == "quantile":
            if self.rows_per_value != 1:
                raise ParameterError(
                    f"{say('rows_per_value')} does not apply to a quantile: each row is one "
                    f"value; bound a unit's rows with {say('values_per_unit')}"
                )
            if auto_values and by is not None:
                raise ParameterError(
                    f"{say('values_per_unit')} 'auto' is not available for a quantile with "
                    f"{say('by')}: give a number"
                )
            out["max_rows"] = None if privacy_unit is None else self.values_per_unit
            out["auto_fraction"] = self.auto_share if (auto_values or auto_bounds) else None
            return out
        if query == "partition_selection" and auto_values:
            raise ParameterError(
                f"{say('values_per_unit')} 'auto' is not planned for partition_selection: "
                "give a number"
            )
        out["max_contributions"] = self.values_per_unit
        out["max_rows_per_value"] = self.rows_per_value
        if query == "top_k":
            out["auto_fraction"] = self.auto_share if auto_values else None
        return out


def as_contributions(value: Any) -> Contributions:
    """``value`` if it is a :class:`Contributions`, else refused naming ``contributions``.

    Parameters
    ----------
    value : object
        What the caller gave as ``contributions=``.

    Returns
    -------
    Contributions
        ``value`` itself.
    """
    if not isinstance(value, Contributions):
        raise ParameterError(
            f"contributions must be a dpselect.Contributions, got {type(value).__name__}"
        )
    return value


def merged(
    contributions: Any,
    query: Query,
    privacy_unit: str | None,
    loose: dict[str, Any],
    defaults: dict[str, Any],
    **facts: Any,
) -> dict[str, Any]:
    """The loose bound arguments ``loose`` of a recipe, replaced by ``contributions`` when it
    is given (a :class:`Contributions`); refused when both are given (a loose argument that
    differs from its default in ``defaults``), naming the argument typed.

    Parameters
    ----------
    contributions : Contributions or None
        What the caller gave as ``contributions=`` (``None``: the loose arguments stand).
    query : {"top_k", "partition_selection", "quantile", "best_price"}
        The recipe's query.
    privacy_unit : str or None
        The unit column.
    loose, defaults : dict
        The recipe's loose bound arguments as given, and their defaults.
    **facts
        ``by``, ``groups`` and ``auto_bounds``, as :meth:`Contributions.arguments` takes them.

    Returns
    -------
    dict
        The loose arguments to use, with the same keys as ``loose``.
    """
    if contributions is None:
        return loose
    contributions = as_contributions(contributions)
    typed = [name for name, value in loose.items() if value != defaults.get(name)]
    if typed:
        raise ParameterError(
            f"give the contribution bounds either as contributions= or as {', '.join(typed)}, "
            "not both"
        )
    args = contributions.arguments(query, privacy_unit, **facts)
    return {name: args[name] for name in loose if name in args}


def contributions_line(parameters: dict[str, Any]) -> str:
    """The contribution bounds a release's recorded ``parameters`` were made at, as
    :class:`Contributions` prints them (``"contributions per unit: 3 values, ..."``); ``""``
    without a privacy unit or a numeric ``max_contributions`` (a release that states its
    bounds itself, such as a quantile's ``max_rows``).

    Parameters
    ----------
    parameters : dict
        A release's public parameters (its ledger entry's).

    Returns
    -------
    str
        One line, or ``""``.
    """
    m = parameters.get("max_contributions")
    if not parameters.get("privacy_unit") or not isinstance(m, int) or isinstance(m, bool):
        return ""
    bounds = Contributions(values_per_unit=m,
                           rows_per_value=int(parameters.get("max_rows_per_value") or 1),
                           groups_per_unit=int(parameters.get("max_groups") or 1))  # fmt: skip
    return str(bounds)


def check_auto_fraction(fraction: Any, name: str = "auto_fraction") -> float:
    """A share of epsilon in ``(0, 1)`` (``None``: :data:`AUTO_FRACTION`), refused naming
    ``name``, the argument the caller typed (``auto_fraction``, ``group_fraction``).

    Parameters
    ----------
    fraction : float or None
        The share given.
    name : str, default "auto_fraction"
        The argument's name in the error message.

    Returns
    -------
    float
        The share, :data:`AUTO_FRACTION` for ``None``.
    """
    if fraction is None:
        return AUTO_FRACTION
    fraction = plain_number(fraction)
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float, Fraction)):
        raise ParameterError(f"{name} must be a number in (0, 1), got {fraction!r}")
    if not 0 < float(fraction) < 1:
        raise ParameterError(f"{name} must be in (0, 1), got {fraction!r}")
    return float(fraction)


def check_no_grouping(groups: Any, max_groups: Any, group_fraction: Any) -> None:
    """``groups``, ``max_groups`` and ``group_fraction`` apply only with ``by``.

    Parameters
    ----------
    groups : object
        Must be ``None`` without ``by``.
    max_groups : object
        Must be 1 without ``by``.
    group_fraction : object
        Must be ``None`` without ``by``.
    """
    if groups is not None or group_fraction is not None or max_groups != 1:
        raise ParameterError("groups, max_groups and group_fraction apply only with by")
