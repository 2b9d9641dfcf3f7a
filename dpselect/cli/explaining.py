"""``--explain`` on every query command: the plan, printed before anything is paid.

The query runs under :func:`dpselect.explain` up to its charge: its checks run (a refusal is
the usual one line and exit 2), nothing is read from the rows, nothing is charged, and the
plan is printed instead of a result (``--json``: one JSON object, ``Plan.to_dict()``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

import click

from ..core.jsonvalues import strict_dumps
from ..planning.explaining import explain

__all__ = ["EXPLAIN_OPTION", "run_or_explain"]

P = ParamSpec("P")
R = TypeVar("R")

EXPLAIN_OPTION = click.option(
    "--explain",
    is_flag=True,
    help="Print the plan (the mechanism, every share of the budget, the guarantee, what the "
    "ledger would be charged and whether it fits) and stop: nothing is read from the rows and "
    "nothing is charged.",
)


def run_or_explain(
    explaining: bool, as_json: bool, query: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs
) -> R | None:
    """``query(*args, **kwargs)``; with ``--explain``, its plan printed instead and ``None``.

    Parameters
    ----------
    explaining : bool
        Whether ``--explain`` was given.
    as_json : bool
        Whether ``--json`` was given (the plan as one JSON object).
    query : callable
        The recipe the command runs.
    *args, **kwargs
        Its arguments.

    Returns
    -------
    object or None
        What ``query`` returned, or ``None`` when the plan was printed.
    """
    if not explaining:
        return query(*args, **kwargs)
    plan = explain(query, *args, **kwargs)
    click.echo(strict_dumps(plan.to_dict()) if as_json else plan.explain())
    return None
