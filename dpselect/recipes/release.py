"""What the top-k recipes share around a release: open the data, charge, then release.

:func:`open_checked` opens the data (:mod:`dpselect.data`) and checks the roles of its columns
from the schema; :func:`charge_then` charges a ledger in its own accounting, durably, before
the release runs (the release is the only step that reads private rows). Used by
:func:`dpselect.top_k` and every recipe that charges a ledger.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar

from ..accounting.ledger import ROWS, Quote
from ..core.errors import ParameterError, given
from ..data.column_roles import check_column_role
from ..data.engine import Engine
from ..data.row_rules import row_rules
from ..data.tables import open_table
from ..planning.epsilon_range import in_a_stage, run_as_stages
from ..planning.explaining import explaining, stop_here
from ..planning.plan import Plan
from ..planning.stage import Stage, check_stages
from ._common import open_ledger

__all__ = [
    "charge_then", "charge_then_release", "check_unit_label", "open_checked", "open_ledger",
]  # fmt: skip

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
    *,
    privacy_unit: str | None,
    source: str | None,
    refusal: str | None = None,
    stages: Sequence[Stage] = (),
) -> T:
    """Charge ``book`` in its own accounting (durably), then run ``release``: every recipe's
    one way to charge.

    A basic ledger is charged ``(eps, delta)`` as ``kind``. A zCDP ledger is charged ``rho``;
    without one, a release with ``delta = 0`` is charged from ``eps`` by ``kind`` (bounded range
    ``eps^2 / 8``, otherwise ``eps^2 / 2``: :meth:`~dpselect.accounting.Ledger.charge`), and
    one with ``delta > 0`` is refused (``refusal``: the message). Without a ledger, ``release``
    just runs.

    Parameters
    ----------
    book : Ledger or None
        The ledger (see :func:`open_ledger`).
    release : callable
        The release; it runs only once the charge is durable.
    eps, delta : float
        The ``(epsilon, delta)`` guarantee a basic ledger is charged.
    rho : float or None
        The zCDP cost (``None``: none, see above).
    kind : {"pure", "bounded_range", "approx"}
        The kind of the ``(epsilon, delta)`` charge.
    name : str
        The ledger entry's mechanism name.
    parameters : dict
        The ledger entry's parameters (public, JSON).
    privacy_unit : str or None
        Whom the release protects: a unit column, or ``None`` for rows (one row added or
        removed; recorded as :data:`~dpselect.accounting.ledger.ROWS`). A ledger bound to
        another unit refuses the query here, before anything is charged or released.
    source : str or None
        The data's public description (``table.description``: a path, "the pandas table");
        ``None`` when the data is not a table (a score function, arrays).
    refusal : str, optional
        The message when a zCDP ledger cannot take the release.
    stages : sequence of Stage, optional
        The release's stages as its planner decided them (shown by ``explain``); checked to
        cost at most ``(eps, delta)`` before anything is charged
        (:func:`~dpselect.planning.stage.check_stages`).

    Returns
    -------
    object
        What ``release`` returns.

    Raises
    ------
    ParameterError, BudgetExceeded, LedgerError
        Refused before anything is charged or released.
    """
    check_stages(stages, eps, delta)
    rules = row_rules(source, privacy_unit)
    release = _staged(_stating_rules(release, rules))
    charge = _Charge(eps, delta, rho, kind, name, parameters, privacy_unit, source, tuple(rules),
                     tuple(stages))  # fmt: skip
    # under explain(), the release's own charge hands back its plan (a stage's is part of it);
    # otherwise no plan is built
    explain_now = explaining() and not in_a_stage()
    if book is None:
        if explain_now:
            stop_here(charge.plan())
        return release()
    return _charge_ledger(book, release, charge, explain_now, refusal)


@dataclass(frozen=True)
class _Charge:
    """One release's charge as the recipe states it: its costs, its ledger entry, its unit."""

    eps: float
    delta: float
    rho: float | None
    kind: Literal["pure", "bounded_range", "approx"]
    name: str
    parameters: dict[str, Any]
    privacy_unit: str | None
    source: str | None
    rules: tuple[str, ...]
    stages: tuple[Stage, ...] = ()

    def plan(self) -> Plan:
        """The plan :func:`~dpselect.explain` hands back (built only when asked)."""
        return Plan(self.name, float(self.eps), float(self.delta), self.kind,
                    None if self.rho is None else float(self.rho), dict(self.parameters),
                    self.privacy_unit, self.source, self.rules,
                    stages=self.stages)  # fmt: skip


def _charge_ledger(
    book: Any, release: Callable[[], T], charge: _Charge, explain_now: bool, refusal: str | None
) -> T:
    """Charge ``book`` as :func:`charge_then` says (its unit checked first), then release."""
    if charge.privacy_unit == ROWS:  # a column named like row-level protection: ambiguous
        raise ParameterError(
            f"privacy_unit {ROWS!r} is a column whose name the ledger reserves for row-level "
            "protection: rename the column to charge a ledger"
        )
    unit = ROWS if charge.privacy_unit is None else charge.privacy_unit
    book.check_privacy_unit(unit)  # first: one line, nothing charged, nothing read
    recorded = {"privacy_unit": unit, "source": charge.source}
    eps, delta, rho, kind, name = charge.eps, charge.delta, charge.rho, charge.kind, charge.name
    if book.accounting == "zcdp":
        if rho is not None:
            if explain_now:
                _stop_with_quote(charge.plan(), book, book.quote_zcdp(rho, privacy_unit=unit))
            book.charge_zcdp(rho, mechanism=name, parameters=charge.parameters, **recorded)
            return release()
        if delta > 0:
            raise ParameterError(
                refusal
                or f"this release costs (epsilon, delta) with delta > 0, which the zCDP ledger "
                f"{book.path} cannot take: use a basic ledger, or a mechanism with a zCDP cost"
            )
    if explain_now:
        _stop_with_quote(charge.plan(), book, book.quote(eps, delta, kind=kind, privacy_unit=unit))
    out: T = book.charge_then(release, eps, delta, name, charge.parameters, kind=kind, **recorded)
    return out


def _stop_with_quote(planned: Plan, book: Any, quote: Quote) -> None:
    """Under :func:`~dpselect.explain`: hand back ``planned`` with what ``book`` would be
    charged and whether it fits (:meth:`~dpselect.accounting.Ledger.quote`)."""
    stop_here(replace(planned, ledger=book.path, fits=quote.fits, refusal=quote.refusal,
                      charged=(quote.charged_epsilon, quote.charged_delta, quote.charged_rho),
                      accounting=book.accounting))  # fmt: skip


def _stating_rules(release: Callable[[], T], rules: list[str]) -> Callable[[], T]:
    """``release`` whose result carries the row rules that applied to its input
    (``parameters["row_rules"]``; :mod:`dpselect.data.row_rules`: public, never a count)."""

    def run() -> T:
        out = release()
        parameters = getattr(out, "parameters", None)
        if rules and isinstance(parameters, dict):
            parameters.setdefault("row_rules", list(rules))
        return out

    return run


def _staged(release: Callable[[], T]) -> Callable[[], T]:
    """``release`` with the recipes it runs marked as stages of it (their shares are not
    checked against the range of a total epsilon again: :mod:`dpselect.planning.epsilon_range`)."""
    return lambda: run_as_stages(release)


def charge_then_release(
    book: Any,
    release: Callable[[], T],
    epsilon: float,
    mechanism: str,
    parameters: dict[str, Any],
    kind: Literal["pure", "bounded_range"] = "bounded_range",
    *,
    privacy_unit: str | None,
    source: str | None,
) -> T:
    """Charge ``epsilon`` (delta 0) as ``kind``, then run ``release``: a shorthand for
    :func:`charge_then`, the recipes' one charging helper.

    By default as an exponential mechanism or a composition of them, which is
    ``epsilon``-bounded-range (so ``epsilon^2 / 8``-zCDP in a zCDP ledger, seed 004);
    ``kind="pure"`` for anything that adds Laplace noise (``epsilon^2 / 2``-zCDP).
    ``privacy_unit`` and ``source``: as in :func:`charge_then`.

    Parameters
    ----------
    book : Ledger or None
        The ledger (``None``: the release just runs).
    release : callable
        The release; it runs only once the charge is durable.
    epsilon : float
        The pure ``epsilon`` charged (delta 0), for one unit added or removed.
    mechanism : str
        The ledger entry's mechanism name.
    parameters : dict
        The ledger entry's public parameters.
    kind : {"pure", "bounded_range"}, default "bounded_range"
        How a zCDP ledger converts ``epsilon``.
    privacy_unit, source : str or None
        Whom the release protects (``None``: rows) and the data's public description.

    Returns
    -------
    object
        What ``release`` returns.
    """
    return charge_then(
        book, release, epsilon, 0.0, None, kind, mechanism, parameters,
        privacy_unit=privacy_unit, source=source,
    )  # fmt: skip


def check_unit_label(privacy_unit: Any, argument: str = "privacy_unit") -> None:
    """A unit given as a label only (recipes whose data is not a table: ``select``, ``tune``):
    ``None`` (rows) or a non-empty str, refused before any charge otherwise.

    Parameters
    ----------
    privacy_unit : object
        The unit label given (``None``: one record added or removed).
    argument : str, default "privacy_unit"
        The argument's name in the error message.
    """
    if privacy_unit is not None and (not isinstance(privacy_unit, str) or not privacy_unit):
        raise ParameterError(
            f"{argument} must be None (one record added or removed) or the unit's name as the "
            f"ledger records it (a non-empty str), got {given(privacy_unit)}"
        )


def open_checked(data: Any, column: str, privacy_unit: str | None, schema: Any = None) -> Engine:
    """The data as a table with its columns checked (public facts only): ``column`` ranked,
    ``privacy_unit`` (if any) a unit column. An opened table is checked as it is.

    Parameters
    ----------
    data : str, path, DataFrame, relation or Table
        The private rows (only the schema is read here).
    column : str
        The column to rank (its role checked from the schema).
    privacy_unit : str or None
        The unit column, checked as one when given.
    schema : dict, optional
        Declared column types (:func:`dpselect.data.tables.open_table`).

    Returns
    -------
    Engine
        The opened table.
    """
    table = open_table(data, schema=schema)  # an opened table as it is
    check_column_role(table, column, "ranked")
    if privacy_unit is not None:
        check_column_role(table, privacy_unit, "unit", "privacy_unit")
    return table
