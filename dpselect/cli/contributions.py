"""The contribution-bound flags as one :class:`~dpselect.Contributions` value.

``--max-contributions`` (or a quantile's and a price's ``--max-rows``), ``--max-rows-per-value``,
``--max-groups`` and the share flags ``--auto-fraction`` / ``--group-fraction`` are the command
line's spelling of the four fields of :class:`~dpselect.Contributions`. Every command builds the
value here and hands it to its query as ``contributions=``, as the Python API does, so that one
constructor validates the bounds and one method (:meth:`Contributions.arguments`) refuses what a
query does not use; the value carries the flags (``spelling=``), so every refusal names the
flag the user typed, not the Python field.
"""

from __future__ import annotations

import click

from ..core.errors import ParameterError
from ..planning.contributions import Contributions

__all__ = ["flag_contributions"]


def flag_contributions(
    values: int | str | None,
    *,
    values_flag: str = "--max-contributions",
    rows_per_value: int = 1,
    groups: int = 1,
    auto_fraction: float | None = None,
    group_fraction: float | None = None,
) -> Contributions:
    """The :class:`~dpselect.Contributions` the flags stand for, validated once.

    Parameters
    ----------
    values : int, "auto" or None
        ``--max-contributions`` (top-k, mode, keys) or ``--max-rows`` (quantile, price):
        ``values_per_unit`` (``None``: the default, 1).
    values_flag : str, default "--max-contributions"
        The flag that set ``values``, as refusals name it.
    rows_per_value, groups : int
        ``--max-rows-per-value`` and ``--max-groups``.
    auto_fraction, group_fraction : float or None
        ``--auto-fraction`` and ``--group-fraction``: one share of epsilon for the query's
        automatic choices (``auto_share``); both given must agree.

    Returns
    -------
    Contributions
        The bounds, spelled with the flags.

    Raises
    ------
    click.UsageError
        A bound that is not an integer >= 1 (or ``auto`` where allowed), a share outside
        ``(0, 1)``, or two shares that differ: public facts, before anything is read or
        charged (exit 2, one line).
    """
    share_flag = "--auto-fraction" if auto_fraction is not None else "--group-fraction"
    if auto_fraction is not None and group_fraction is not None and auto_fraction != group_fraction:
        raise click.UsageError(
            "--auto-fraction and --group-fraction set one share of --epsilon, spent by every "
            f"automatic choice of the query; give one (got {auto_fraction:g} and "
            f"{group_fraction:g})"
        )
    share = auto_fraction if auto_fraction is not None else group_fraction
    spelling = {
        "values_per_unit": values_flag,
        "rows_per_value": "--max-rows-per-value",
        "groups_per_unit": "--max-groups",
        "auto_share": share_flag,
        "privacy_unit": "--privacy-unit",
        "by": "--by",
        "groups": "--groups",
        "bounds": "--bounds",
    }
    try:
        return Contributions(
            values_per_unit=1 if values is None else values,  # type: ignore[arg-type]
            rows_per_value=rows_per_value,
            groups_per_unit=groups,
            auto_share=share,
            spelling=spelling,
        )
    except ParameterError as refusal:
        raise click.UsageError(str(refusal)) from None
