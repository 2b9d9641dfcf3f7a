"""What the top-k recipes share around a release: open the data, charge, then release.

:func:`open_checked` opens the data (:mod:`dpselect.data`) and checks the roles of its columns
from the schema; :func:`charge_then` charges a ledger in its own accounting, durably, before
the release runs (the release is the only step that reads private rows). Used by
:func:`dpselect.api.top_k` and :mod:`dpselect.recipes.unknown_domain`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar

from ..core.errors import ParameterError
from ..data.column_roles import check_column_role
from ..data.engine import Engine
from ..data.tables import open_table
from ._common import open_ledger

__all__ = ["charge_then", "open_checked", "open_ledger"]

T = TypeVar("T")


def charge_then(
    book: Any,
    release: Callable[[], T],
    eps: float,
    delta: float,
    rho: float | None,
    kind: Literal["pure", "bounded_range", "approx"],
    name: str,
    parameters: dict[str, Any],
) -> T:
    """Charge ``book`` in its own accounting (durably), then run ``release``.

    A basic ledger is charged ``(eps, delta)`` as ``kind``; a zCDP ledger ``rho`` (``None``:
    the release has no zCDP cost, refused). Without a ledger, ``release`` just runs.
    """
    if book is None:
        return release()
    if book.accounting == "zcdp":
        if rho is None:
            raise ParameterError(
                f"this release costs (epsilon, delta) with delta > 0, which the zCDP ledger "
                f"{book.path} cannot take: use a basic ledger, or a mechanism with a zCDP cost"
            )
        book.charge_zcdp(rho, mechanism=name, parameters=parameters)
        return release()
    out: T = book.charge_then(release, eps, delta, name, parameters, kind=kind)
    return out


def open_checked(data: Any, column: str, privacy_unit: str | None, schema: Any = None) -> Engine:
    """The data as a table with its columns checked (public facts only): ``column`` ranked,
    ``privacy_unit`` (if any) a unit column."""
    table = open_table(data, schema=schema)
    check_column_role(table, column, "ranked")
    if privacy_unit is not None:
        check_column_role(table, privacy_unit, "unit", "privacy_unit")
    return table
