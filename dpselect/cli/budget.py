"""``dpselect budget``: create a privacy budget ledger (``budget init``) and show what it
holds (``budget show``: the entries, the sums per privacy unit, what is spent and what
remains).

The ledger and rich load inside the commands, so that ``dpselect --help`` starts fast.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from ..core.arithmetic import float_up, sqrt_down
from ..core.jsonvalues import strict_dumps

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from ..accounting.ledger import Ledger
    from ..accounting.ledger_records import LedgerEntry, UnitTotal

__all__ = ["budget"]


@click.group("budget")
def budget() -> None:
    """Create or inspect a privacy budget ledger."""


@budget.command("init")
@click.option("--ledger", required=True, type=str)
@click.option("--epsilon", required=True, type=float)
@click.option("--delta", type=float, default=0.0, show_default=True)
@click.option(
    "--accounting", type=click.Choice(["basic", "zcdp"]), default="basic", show_default=True
)
@click.option(
    "--privacy-unit",
    type=str,
    default=None,
    help="Bind the ledger to one privacy unit: a unit column (the --privacy-unit of the "
    "queries), or 'rows' for queries that protect rows. A query protecting another unit is "
    "then refused before anything runs. Default: unbound (mixed units are warned about).",
)
def budget_init(
    ledger: str, epsilon: float, delta: float, accounting: str, privacy_unit: str | None
) -> None:
    """Create a new ledger with an (epsilon, delta) budget."""
    from ..accounting.ledger import Ledger
    from ..accounting.ledger_records import describe_unit

    book = Ledger.create(
        ledger,
        epsilon,
        delta,
        accounting=accounting,  # type: ignore[arg-type]
        privacy_unit=privacy_unit,
    )
    bound = "" if privacy_unit is None else f", bound to {describe_unit(privacy_unit)}"
    click.echo(
        f"created ledger {book.path}: budget epsilon = {epsilon:g}, delta = {delta:g} "
        f"({accounting} accounting{bound})"
    )
    if book.accounting == "zcdp":
        click.echo(_zcdp_explanation(book.rho_budget, epsilon, delta))


def _zcdp_explanation(rho: float, epsilon: float, delta: float) -> str:
    """What a zCDP budget means, in the units people know."""
    return (
        f"kept as zCDP rho = {rho:.6g} (the largest rho that converts to ({epsilon:g}, "
        f"{delta:g})-DP, Canonne-Kamath-Steinke 2020). Queries cost rho: epsilon^2/8 for the "
        "exponential mechanism, epsilon^2/2 for other pure-DP queries, so many small queries "
        "fit where basic accounting would refuse, but one query near the whole epsilon does "
        "not. Choose zcdp for many queries, basic for a few (docs/accounting.md)."
    )


@dataclass(frozen=True)
class _LedgerView:
    """What ``budget show`` reads from a ledger, read once, in this order."""

    book: Ledger
    units: list[UnitTotal]
    warning: str | None
    budget: tuple[float, float]
    spent: tuple[float, float]
    remaining: tuple[float, float]
    entries: list[LedgerEntry]

    @property
    def zcdp(self) -> bool:
        """Whether the ledger keeps its budget in zCDP ``rho``."""
        return self.book.accounting == "zcdp"


def _read_view(book: Ledger) -> _LedgerView:
    """Read the ledger's units, warning, budget, spent, remaining and entries."""
    units = book.units()
    warning = book.unit_warning()
    budget_eps, budget_delta = book.budget
    spent = book.spent()
    remaining = book.remaining()
    entries = book.entries()
    return _LedgerView(book, units, warning, (budget_eps, budget_delta), spent, remaining, entries)


@budget.command("show")
@click.option("--ledger", required=True, type=str)
@click.option("--json", "as_json", is_flag=True)
def budget_show(ledger: str, as_json: bool) -> None:
    """Show a ledger's budget, what is spent and what remains."""
    from rich.console import Console

    from ..accounting.ledger import Ledger

    book = Ledger.open(ledger, read_only=True)  # shown from a read-only directory too
    view = _read_view(book)
    if as_json:
        click.echo(strict_dumps(_json_view(view)))
        return
    console = Console()
    console.print(_entries_table(view))
    _print_units(console, view)
    if view.zcdp:
        _print_zcdp_totals(console, view)
        return
    (budget_eps, budget_delta), spent, remaining = view.budget, view.spent, view.remaining
    console.print(f"budget:    epsilon = {budget_eps:.6g}, delta = {budget_delta:.3g}")
    console.print(f"spent:     epsilon = {spent[0]:.6g}, delta = {spent[1]:.3g}")
    console.print(f"remaining: epsilon = {remaining[0]:.6g}, delta = {remaining[1]:.3g}")


def _json_view(view: _LedgerView) -> dict[str, Any]:
    """``budget show --json``: the ledger's budget, spent, remaining and units."""
    book = view.book
    (budget_eps, budget_delta), spent, remaining = view.budget, view.spent, view.remaining
    info: dict[str, Any] = {
        "ledger": book.path,
        "accounting": book.accounting,
        "budget": {"epsilon": budget_eps, "delta": budget_delta},
        "spent": {"epsilon": spent[0], "delta": spent[1]},
        "remaining": {"epsilon": remaining[0], "delta": remaining[1]},
        "entries": len(view.entries),
        "privacy_unit": book.privacy_unit,
        "units": [
            {
                "privacy_unit": u.privacy_unit,
                "entries": u.entries,
                "epsilon": float_up(u.epsilon),
                "delta": float_up(u.delta),
                "rho": float_up(u.rho),
                "sources": list(u.sources),
            }
            for u in view.units
        ],
        "warning": view.warning,
    }
    if view.zcdp:
        info["budget"]["rho"] = book.rho_budget
        info["spent"]["rho"] = book.spent_rho()
        info["remaining"]["rho"] = book.remaining_rho()
        # remaining epsilon of a zCDP ledger: the largest single pure-DP query that fits
        info["remaining"]["exponential_mechanism_epsilon"] = sqrt_down(8 * book.remaining_rho())
    return info


def _entries_table(view: _LedgerView) -> Table:
    """The ledger's entries as a rich table (long labels wrap, never cut)."""
    from rich.table import Table

    book = view.book
    table = Table(title=f"ledger {book.path} ({book.accounting} accounting)")
    for name in ("when (UTC)", "mechanism", "unit", "source", "epsilon", "delta", "rho"):
        table.add_column(name, overflow="fold")  # long labels wrap, never cut
    for e in view.entries:
        table.add_row(
            _when(str(getattr(e, "time", ""))),
            str(getattr(e, "mechanism", "")),
            "unknown" if e.privacy_unit is None else e.privacy_unit,
            "unknown" if e.source is None else e.source,
            _fmt(getattr(e, "epsilon", None)),
            _fmt(getattr(e, "delta", None)),
            _fmt(getattr(e, "rho", None)),
        )
    return table


def _print_units(console: Console, view: _LedgerView) -> None:
    """The ledger's binding, its charges per privacy unit and the mixed-unit warning."""
    from ..accounting.ledger_records import describe_unit

    bound = view.book.privacy_unit
    console.print(
        "bound to:  " + ("no unit (any accepted)" if bound is None else describe_unit(bound))
    )
    for u in view.units:
        amount = (
            f"rho = {float_up(u.rho):.6g}"
            if view.zcdp
            else f"epsilon = {float_up(u.epsilon):.6g}, delta = {float_up(u.delta):.3g}"
        )
        name = "unknown" if u.privacy_unit is None else u.privacy_unit
        sources = ", ".join(u.sources) or "unknown"
        console.print(
            f"unit {name}: {u.entries} entries, {amount}; sources: {sources}", markup=False
        )
    if view.warning is not None:
        console.print(view.warning, style="bold", soft_wrap=True)


def _print_zcdp_totals(console: Console, view: _LedgerView) -> None:
    """A zCDP ledger's budget, spent and remaining ``rho``, in epsilon too."""
    book = view.book
    (budget_eps, budget_delta), spent, remaining = view.budget, view.spent, view.remaining
    left = book.remaining_rho()
    console.print(
        f"budget:    rho = {book.rho_budget:.6g}  (= epsilon {budget_eps:.6g}, "
        f"delta {budget_delta:.3g})"
    )
    console.print(
        f"spent:     rho = {book.spent_rho():.6g}  (= epsilon {spent[0]:.6g} at delta "
        f"{budget_delta:.3g})"
    )
    console.print(
        f"remaining: rho = {left:.6g}  (one more query up to epsilon "
        f"{sqrt_down(8 * left):.4g} for the exponential mechanism, "
        f"{remaining[0]:.4g} for other pure-DP queries)"
    )
    console.print(_zcdp_explanation(book.rho_budget, budget_eps, budget_delta))


def _when(iso: str) -> str:
    """A ledger entry's time as shown: ``2026-12-06 23:04:18`` (UTC, to the second; the
    ledger keeps the full ISO time, ``--json`` prints it)."""
    return iso[:19].replace("T", " ") if len(iso) >= 19 and iso[10:11] == "T" else iso


def _fmt(value: Any) -> str:
    """A loss as shown in the entries table (``""`` when it does not apply)."""
    return "" if value is None else f"{value:.6g}" if isinstance(value, float) else str(value)
