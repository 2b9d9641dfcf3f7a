"""How a selection command shows its work on the terminal: the scan's progress bar and the
released top-k (a table with its notes, or one JSON line).

rich loads inside these functions only, so that ``dpselect --help`` starts fast.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from ..core.jsonvalues import strict_dumps

if TYPE_CHECKING:
    from ..recipes.top_k_result import TopKResult

__all__ = ["print_result", "progress_bar"]


@contextmanager
def progress_bar(enabled: bool) -> Iterator[Callable[[float], None] | None]:
    """A rich progress bar on stderr while the data is scanned (TTY only): DuckDB's own
    query progress (``progress(percent)``), shown from the first report (a query over a
    second, :mod:`dpselect.data.engines.duckdb_progress`): nothing for a quick run.

    Parameters
    ----------
    enabled : bool
        Whether to show the bar (a terminal, not ``--json``).

    Yields
    ------
    callable or None
        ``progress(percent)``, or ``None`` when the bar is off.
    """
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn

    console = Console(stderr=True)
    with Progress(
        TextColumn("scanning"), BarColumn(), TaskProgressColumn(), console=console, transient=True
    ) as bar:
        yield _lazy_task(bar, "scan")


def _lazy_task(bar: Any, name: str) -> Callable[[float], None]:
    """``progress(percent)`` updating a task of ``bar`` added at the first report."""
    task: list[Any] = []

    def report(percent: float) -> None:
        if not task:
            task.append(bar.add_task(name, total=100.0))
        bar.update(task[0], completed=percent)

    return report


def print_result(result: TopKResult, as_json: bool) -> None:
    """Print a top-k result: a table and its notes, or one JSON line.

    Parameters
    ----------
    result : TopKResult
        The released top-k.
    as_json : bool
        One JSON line instead of the table.
    """
    if as_json:
        click.echo(strict_dumps(result.to_dict()))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"private top-{result.parameters.get('k', len(result.candidates))}")
    table.add_column("rank", justify="right")
    table.add_column("candidate")
    shown = result.shown_counts()  # below the noise: "< noise", never negative
    if shown is not None:
        table.add_column("noisy count", justify="right")
    for rank, cand in enumerate(result.candidates, start=1):
        row = [str(rank), str(cand)]
        if shown is not None:
            row.append(shown[rank - 1])
        table.add_row(*row)
    console = Console()
    console.print(table)
    if result.stopped_early:
        console.print(result.stopped_early)
    if result.all_below_noise:
        from ..recipes.top_k_result import ALL_BELOW_NOISE

        console.print(ALL_BELOW_NOISE)
    for key in ("max_contributions_choice", "candidates_note"):
        if result.parameters.get(key):
            console.print(str(result.parameters[key]))
    console.print(f"mechanism: {result.mechanism}")
    chosen = result.parameters.get("chosen_by")
    accounting = result.parameters.get("accounting")
    if accounting:
        console.print(
            f"calibration: {accounting}; noise scale {result.parameters.get('scale', 0):.4g}"
            + (" (mechanism chosen from public parameters only)" if chosen == "auto" else "")
        )
    cost = f"privacy cost: epsilon = {result.epsilon:.6g}, delta = {result.delta:.3g}"
    if result.rho is not None:
        cost += f", zCDP rho = {result.rho:.6g}"
    console.print(cost)
    console.print(result.accuracy)
    if result.rules_line():
        console.print(result.rules_line(), highlight=False, markup=False)
    if result.ledger is not None:
        console.print(f"charged to the ledger {result.ledger}")
