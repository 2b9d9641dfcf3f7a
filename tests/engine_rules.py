"""The unit rule of an engine query from the bounding parameters' recipe names (tests that
build one set of keyword arguments for several engines or for a reference)."""

from __future__ import annotations

from dpselect.data.query import UnitRule


def unit_rule(
    privacy_unit: str | None = None,
    max_contributions: int = 1,
    salt: int = 0,
    *,
    max_rows_per_value: int = 1,
    max_rows: int = 1,
    max_groups: int = 1,
    group_salt: int = 0,
) -> UnitRule:
    """The :class:`~dpselect.data.query.UnitRule` of these recipe parameters (the first three
    in the order of the old score methods' arguments)."""
    return UnitRule(
        privacy_unit=privacy_unit,
        values_per_unit=max_contributions,
        rows_per_value=max_rows_per_value,
        rows_per_unit=max_rows,
        groups_per_unit=max_groups,
        salt=salt,
        group_salt=group_salt,
    )
