"""The options of the selection commands (``top-k``, ``mode``) and the option types the
commands share: ``--schema``, ``--max-contributions`` (a number or ``auto``) and
``--max-rows-per-value``.

Light imports only: the options are built when ``dpselect`` starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ..data.schema import parse_schema_spec
from .engines import engine_options
from .explaining import EXPLAIN_OPTION
from .grouping import grouping_options

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

#: ``sorted(recipes.top_k.MECHANISMS)``, spelled out so that the options need not import the
#: library (tests/cli/test_startup.py checks that they agree).
MECHANISM_NAMES = (
    "auto",
    "gaussian_histogram",
    "gumbel",
    "joint",
    "laplace",
    "laplace_histogram",
    "permute_and_flip",
)


def _schema_spec(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    return None if value is None else parse_schema_spec(value)


#: ``--schema col:TYPE,...``: declared column types (a bad spec is one line, exit 2).
SCHEMA_OPTION = click.option(
    "--schema",
    type=str,
    default=None,
    callback=_schema_spec,
    help="Column types, e.g. 'age:BIGINT,day:DATE' (CSV/JSON columns are text otherwise; "
    "a value that does not convert is missing).",
)


class _Contributions(click.ParamType):  # type: ignore[type-arg]  # generic in click 8.2+
    """``--max-contributions``: a positive integer or ``auto``."""

    name = "INTEGER|auto"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        text = str(value).strip()
        if text == "auto":
            return "auto"
        try:
            return int(text)
        except ValueError:
            self.fail(f"{value!r} is not an integer or 'auto'", param, ctx)


CONTRIBUTIONS = _Contributions()

ROWS_PER_VALUE_OPTION = click.option(
    "--max-rows-per-value",
    type=int,
    default=1,
    show_default=True,
    help="With --privacy-unit: how many of a person's rows count toward one value (1: a "
    "score counts persons; R: rows, at most R per person and value, on at most "
    "--max-contributions values).",
)


def _what_options() -> list[Decorator]:
    """What is selected and at which privacy cost: the file, the column, the candidates,
    ``--epsilon``, ``--delta`` and ``--k-bar``."""
    return [
        click.argument("file", type=str),
        click.option("--column", required=True, help="The column whose values are ranked."),
        click.option("--epsilon", required=True, type=float, help="Total privacy cost."),
        click.option(
            "--candidates",
            "candidates",
            type=str,
            default=None,
            help="Public candidate list: a text file (one value per line) or values "
            "separated by commas (a,b,c).",
        ),
        click.option(
            "--delta",
            type=float,
            default=None,
            help="The target is (epsilon, delta) (default delta 0: pure DP). With --candidates a "
            "delta > 0 may buy a more accurate mechanism (tighter accounting); without "
            "--candidates it is required: values come from the data (partition selection), "
            "and fewer values than asked for may come back (none, for mode).",
        ),
        click.option(
            "--k-bar",
            type=int,
            default=None,
            help="Limited domain only: how many of the true top values are looked at "
            "(default K + 10).",
        ),
    ]


def _unit_options() -> list[Decorator]:
    """Whom the release protects and how much one person may contribute."""
    return [
        click.option(
            "--privacy-unit",
            type=str,
            default=None,
            help="Column identifying a person (default: each row is a person).",
        ),
        click.option(
            "--max-contributions",
            type=CONTRIBUTIONS,
            default="1",
            show_default=True,
            help="Candidates a person may count toward (with --privacy-unit), or 'auto': "
            "chosen privately from 1, 2, 4, ..., 256 (needs --candidates; costs "
            "--auto-fraction of --epsilon, docs/private_selection.md).",
        ),
        click.option(
            "--auto-fraction",
            type=float,
            default=None,
            help="With --max-contributions auto: the share of --epsilon spent on the choice "
            "[default: 0.25].",
        ),
        ROWS_PER_VALUE_OPTION,
    ]


def _how_options() -> list[Decorator]:
    """How the selection runs and is shown: the mechanism, counts, plan, ledger, output,
    schema and seed."""
    return [
        click.option(
            "--mechanism",
            type=click.Choice(MECHANISM_NAMES),
            default="auto",
            show_default=True,
            help="auto: the most accurate for K, epsilon, delta, the number of candidates and "
            "--max-contributions (public facts only); or a fixed mechanism.",
        ),
        click.option(
            "--counts",
            is_flag=True,
            help="Also release noisy counts (free with a histogram mechanism; one-shot Gumbel "
            "spends half the budget on them).",
        ),
        click.option(
            "--plan",
            is_flag=True,
            help="Show the mechanisms weighed and the accuracy each would give, then stop: "
            "nothing is read from the data and nothing is charged.",
        ),
        click.option(
            "--ledger",
            type=str,
            default=None,
            help="Budget ledger to charge before the answer is shown.",
        ),
        EXPLAIN_OPTION,
        click.option("--json", "as_json", is_flag=True, help="Machine-readable output."),
        SCHEMA_OPTION,
        click.option(
            "--insecure-seed",
            type=int,
            default=None,
            help="Seeded randomness for tests and demos: NOT private.",
        ),
    ]


def selection_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a selection command with its options, in the order ``--help`` shows them.

    Parameters
    ----------
    func : callable
        The command's function.

    Returns
    -------
    callable
        The function with every option of ``top-k`` and ``mode``.
    """
    options = [*_what_options(), *_unit_options(), *_how_options()]
    for option in reversed(options):
        func = option(func)
    return engine_options(grouping_options(func))
