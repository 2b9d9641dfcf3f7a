"""``--by``, ``--groups``, ``--max-groups``, ``--group-fraction``: grouped releases on the
command line (:mod:`dpselect.recipes.grouped`), and how their table is printed."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import click

from ..core.jsonvalues import strict_dumps
from .lists import file_or_list

__all__ = ["grouping_arguments", "grouping_options", "print_grouped"]


def grouping_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The four grouping options of ``top-k``, ``mode``, ``keys`` and ``quantile``.

    Parameters
    ----------
    func : callable
        A click command callback; it receives the options as the keyword arguments ``by``,
        ``groups``, ``max_groups`` and ``group_fraction``.

    Returns
    -------
    callable
        ``func`` decorated with the four :func:`click.option` decorators.
    """
    options = [
        click.option(
            "--by",
            type=str,
            default=None,
            help="A column of groups: one answer per group, in one query and one charge "
            "(docs/grouped_releases.md).",
        ),
        click.option(
            "--groups",
            type=str,
            default=None,
            help="With --by: the public groups, a text file (one per line) or 'a,b,c'; each "
            "gets an answer. Without it the groups are selected privately (needs --delta).",
        ),
        click.option(
            "--max-groups",
            type=int,
            default=1,
            show_default=True,
            help="With --by and --privacy-unit: how many groups one person counts in (chosen "
            "by a salted keyed rule that reads only that person's rows).",
        ),
        click.option(
            "--group-fraction",
            type=float,
            default=None,
            help="With --by and no --groups: the share of --epsilon that selects the groups "
            "[default: 0.25].",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def grouping_arguments(
    by: str | None, groups: str | None, max_groups: int, group_fraction: float | None
) -> dict[str, Any]:
    """The recipes' keyword arguments for the options (``--groups`` a file or a list).

    Parameters
    ----------
    by : str or None
        ``--by``: the column whose values form the groups; ``None`` for an ungrouped release
        (then the other three options must keep their defaults).
    groups : str or None
        ``--groups``: the public groups, a file (one per line) or ``'a,b,c'``; ``None`` to
        select the groups privately.
    max_groups : int
        ``--max-groups``: how many groups one privacy unit's rows may count toward.
    group_fraction : float or None
        ``--group-fraction``: the share of epsilon that selects the groups privately;
        ``None`` for the recipe's default.

    Returns
    -------
    dict
        ``{}`` without ``by``; otherwise ``by`` and ``groups`` (``None``, a file's path or a
        list, see :func:`~dpselect.cli.lists.file_or_list`), to pass on to the recipe
        (``--max-groups`` and ``--group-fraction`` go into its ``contributions``:
        :func:`~dpselect.cli.contributions.flag_contributions`).

    Raises
    ------
    click.UsageError
        One of the other options was given without ``--by``.
    click.BadParameter
        ``--groups`` is a bare number (a count typed where the list goes) or a bad list.
    """
    if by is None and (groups is not None or max_groups != 1 or group_fraction is not None):
        raise click.UsageError("--groups, --max-groups and --group-fraction need --by")
    if by is None:
        return {}
    typed = None if groups is None else groups.strip()
    if typed and "," not in typed and typed.lstrip("+-").isdigit() and not os.path.isfile(typed):
        raise click.BadParameter(  # a count typed where the list of groups goes
            f"takes the public groups (a file, or a list 'a,b,c'), got the number {typed}: "
            f"for how many groups a person counts in, use --max-groups; for the one group "
            f"{typed!r}, write '{typed},'",
            param_hint="--groups",
        )
    return {"by": by, "groups": file_or_list(groups, "--groups")}


def print_grouped(result: Any, as_json: bool) -> None:
    """A :class:`~dpselect.recipes.grouped.GroupedResult`: JSON, or a rich table and the
    summary lines (cost, per-group epsilon, accounting, accuracy).

    Parameters
    ----------
    result : GroupedResult
        The grouped release to print.
    as_json : bool
        ``--json``: print ``result.to_dict()`` as one line of strict JSON instead.
    """
    if as_json:
        click.echo(strict_dumps(result.to_dict()))
        return
    from rich.console import Console
    from rich.table import Table

    lines = result.lines()
    table = Table(title=f"private {result.kind.replace('_', ' ')} by {result.by}")
    for name in lines[0]:
        table.add_column(name, justify="right" if name in ("rank", "q", "noisy count") else "left")
    for row in lines[1:]:
        table.add_row(*row)
    console = Console()
    console.print(table)
    for line in [*result.summary(), result.rules_line()]:
        if line:
            console.print(line, highlight=False, markup=False)
    if result.ledger is not None:
        console.print(f"charged to the ledger {result.ledger}")
