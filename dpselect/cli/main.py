"""``dpselect``: private top-k, mode and budget management from the shell.

Bad input (a missing file, an unreadable format, a missing column, k < 1, epsilon <= 0, a
missing candidates file, a query over budget) prints one line on stderr and exits with code 2,
with no traceback and nothing charged. Unexpected failures print one line and exit with 1
(set ``DPSELECT_DEBUG=1`` for the traceback).
"""

from __future__ import annotations

import copy
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

# Light imports only: rich, NumPy, python-flint, DuckDB and the library load inside the
# commands that use them, so ``dpselect --help`` and ``--version`` start fast (issue 14).
from .. import __version__
from ..core.arithmetic import float_up, sqrt_down
from ..core.errors import BudgetExceeded, DPSelectError
from ..core.jsonvalues import strict_dumps
from ..data.query import PublicGroups
from ..data.schema import parse_schema_spec
from .applications import register as register_applications
from .contributions import flag_contributions
from .engines import as_given, check_engine, engine_options, format_option, local_path, open_data
from .explaining import EXPLAIN_OPTION, run_or_explain
from .grouping import grouping_arguments, grouping_options, print_grouped
from .lists import file_or_list
from .seeding import source_from_seed

if TYPE_CHECKING:
    from ..recipes.top_k_result import TopKResult

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

__all__ = ["cli", "main"]

EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 1
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report Ctrl-C


@contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[float], None] | None]:
    """A rich progress bar on stderr while the data is scanned (TTY only): DuckDB's own
    query progress (``progress(percent)``), shown from the first report (a query over a
    second, :mod:`dpselect.data.engines.duckdb_progress`): nothing for a quick run."""
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


def _print_result(result: TopKResult, as_json: bool) -> None:
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


def _selection_options(func: Callable[..., Any]) -> Callable[..., Any]:
    options = [
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
    for option in reversed(options):
        func = option(func)
    return engine_options(grouping_options(func))


def _run_selection(
    k: int,
    file: str,
    column: str,
    epsilon: float,
    candidates: str | None,
    delta: float | None,
    k_bar: int | None,
    privacy_unit: str | None,
    max_contributions: int | str,
    auto_fraction: float | None,
    max_rows_per_value: int,
    mechanism: str,
    counts: bool,
    plan: bool,
    ledger: str | None,
    explain: bool,
    as_json: bool,
    insecure_seed: int | None,
    schema: dict[str, str] | None = None,
    engine: str = "duckdb",
    spark_master: str | None = None,
    by: str | None = None,
    groups: str | None = None,
    max_groups: int = 1,
    group_fraction: float | None = None,
) -> None:
    check_engine(engine, spark_master)
    grouped = grouping_arguments(by, groups, max_groups, group_fraction)
    bounds = flag_contributions(
        max_contributions, rows_per_value=max_rows_per_value, groups=max_groups,
        auto_fraction=auto_fraction, group_fraction=group_fraction,
    )  # fmt: skip
    if max_contributions == "auto":
        if plan:
            raise click.UsageError(
                "--plan needs a number for --max-contributions (with 'auto' the bound is "
                "chosen from the data, after the charge)"
            )
        if privacy_unit is None:
            raise click.UsageError("--max-contributions auto needs --privacy-unit")
    if plan:
        from ..data.candidates import candidates_note, load_candidates

        listed = file_or_list(candidates, "--candidates")
        cand_list = None if listed is None else load_candidates(listed)
        c = int(max_contributions)
        note = None
        if cand_list is not None:
            from ..data.tables import open_table

            table = open_table(open_data(file, engine, spark_master), schema=schema)
            # The notes top-k shows with its answer (a header line, numbers matched as text):
            # the list, the column's name and the schema only.
            note = candidates_note(cand_list, column, table)
            if privacy_unit is None:
                # As top_k weighs them: one row moves every candidate its value matches (the
                # schema and the list only, by the engine's own matching:
                # Engine.multiplicity; no row read).
                c = table.multiplicity(column, cand_list)
        n = None if cand_list is None else len(cand_list)
        if grouped:
            shares = {"max_groups": bounds.groups_per_unit, "group_fraction": bounds.auto_share}
            epsilon, delta = _group_plan_header(
                {**grouped, **shares}, file, engine, spark_master, schema, privacy_unit, epsilon,
                delta,
                cand_list is None or mechanism == "gaussian_histogram", as_json,
            )  # fmt: skip
        _print_plan(k, n, epsilon, delta, c, as_json, note, max_rows_per_value)
        return
    from ..recipes.top_k import top_k

    data = open_data(file, engine, spark_master)
    show_bar = (not as_json) and sys.stderr.isatty() and engine == "duckdb"
    with _progress(show_bar and not explain) as progress:
        result = run_or_explain(
            explain,
            as_json,
            top_k,
            data,
            column,
            k,
            epsilon,
            candidates=file_or_list(candidates, "--candidates"),
            delta=delta,
            privacy_unit=privacy_unit,
            contributions=bounds,
            mechanism=mechanism,  # type: ignore[arg-type]
            ledger=ledger,
            source=source_from_seed(insecure_seed),
            counts=counts,
            progress=progress,
            k_bar=k_bar,
            schema=schema,
            **grouped,
        )
    if result is None:  # --explain: the plan was printed
        return
    if grouped:
        print_grouped(result, as_json)
        return
    _print_result(result, as_json)


def _group_plan_header(
    grouped: dict[str, Any],
    file: str,
    engine: str,
    spark_master: str | None,
    schema: dict[str, str] | None,
    privacy_unit: str | None,
    epsilon: float,
    delta: float | None,
    values_from_data: bool,
    as_json: bool,
) -> tuple[float, float]:
    """``--plan --by``: the per-group budget (public facts: the options, the group list and
    the schema), printed as a header; the plan below is each group's."""
    from ..recipes.grouping import group_budget

    private = grouped["groups"] is None
    g = int(grouped["max_groups"])
    if privacy_unit is None and not private:
        from ..data.candidates import load_candidates
        from ..data.tables import open_table

        listed = load_candidates(grouped["groups"], "groups")
        table = open_table(open_data(file, engine, spark_master), schema=schema)
        table.require_column(grouped["by"], "by")
        g = min(table.multiplicity(PublicGroups(grouped["by"], listed)), len(listed))
    eps_g, delta_g, eps_s, delta_s = group_budget(
        epsilon, delta or 0.0, g, private, grouped["group_fraction"], values_from_data
    )
    if not as_json:
        where = "groups selected privately" if private else "public groups"
        click.echo(
            f"per group of --by {grouped['by']} ({where}; a person in at most {g}): "
            f"epsilon_g = {eps_g:.6g}, delta_g = {delta_g:.3g}"
            + (
                f"; the selection of the groups: epsilon {eps_s:.6g}, delta {delta_s:.3g}"
                if private
                else ""
            )
        )
    return eps_g, delta_g


def _print_plan(
    k: int,
    n: int | None,
    epsilon: float,
    delta: float | None,
    max_contributions: int,
    as_json: bool,
    note: str | None = None,
    max_rows_per_value: int = 1,
) -> None:
    from ..recipes.preview import preview_top_k

    result = preview_top_k(
        k,
        n,
        epsilon,
        delta=delta or 0.0,
        max_contributions=max_contributions,
        max_rows_per_value=max_rows_per_value,
    )
    if as_json:
        shown = result.to_dict()
        if note is not None:
            shown["candidates_note"] = note
        click.echo(strict_dumps(shown))
    else:
        click.echo(str(result))
        if note is not None:
            click.echo(note)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dpselect")  # no importlib.metadata at start-up
def cli() -> None:
    """Differentially private selection: top-k, mode, and a privacy budget ledger.

    FILE is a CSV, TSV, JSON lines, JSON or Parquet file (by its suffix; .gz for the text
    formats), a glob or directory of Parquet files, or '-' for standard input (CSV unless
    --format tsv or jsonl).
    """


@cli.command("top-k")
@click.option("--k", "k", required=True, type=int, help="How many candidates to release.")
@_selection_options
def top_k_command(k: int, **kwargs: Any) -> None:
    """The K most common values of a column, privately.

    With --candidates (a public list, one per line) the answer is one of those values; without
    it (and with --delta) values come from the data: private partition selection, then the
    K largest noisy counts (or the limited-domain top-k). --plan shows the options first.
    """
    _run_selection(k, **kwargs)


@cli.command("mode")
@_selection_options
def mode_command(**kwargs: Any) -> None:
    """The most common value of a column, privately (--candidates, or --delta)."""
    _run_selection(1, **kwargs)


@cli.command("keys")
@click.argument("file", type=str)
@click.option("--column", required=True, help="The column whose values may be published.")
@click.option("--epsilon", required=True, type=float, help="Privacy cost epsilon.")
@click.option("--delta", required=True, type=float, help="Privacy cost delta (> 0).")
@click.option(
    "--privacy-unit",
    type=str,
    default=None,
    help="Column identifying a person (default: each row is a person).",
)
@click.option(
    "--max-contributions",
    type=int,
    default=1,
    show_default=True,
    help="Values a person may count toward (with --privacy-unit).",
)
@ROWS_PER_VALUE_OPTION
@click.option(
    "--mechanism",
    "method",
    type=click.Choice(
        ["auto", "optimal", "laplace", "gaussian", "policy_laplace", "policy_gaussian"]
    ),
    default="auto",
    show_default=True,
    help="auto: optimal partition selection (Desfontaines et al. 2022) for one value per "
    "person; with --privacy-unit and --max-contributions > 1, policy set union (Gopi et al. "
    "2020, Policy Laplace); else the threshold with the lower cut.",
)
@click.option("--ledger", type=str, default=None, help="Budget ledger to charge first.")
@EXPLAIN_OPTION
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option(
    "--insecure-seed",
    type=int,
    default=None,
    help="Seeded randomness for tests and demos: NOT private.",
)
@grouping_options
@format_option
def keys_command(
    file: str,
    column: str,
    epsilon: float,
    delta: float,
    privacy_unit: str | None,
    max_contributions: int,
    max_rows_per_value: int,
    method: str,
    ledger: str | None,
    explain: bool,
    as_json: bool,
    insecure_seed: int | None,
    by: str | None,
    groups: str | None,
    max_groups: int,
    group_fraction: float | None,
) -> None:
    """The values of a column that can be published at all (private partition selection).

    Each value is shown or not independently; rare values (held by few persons) are hidden.
    The list comes sorted, never by count.
    """
    from ..recipes.unknown_domain import partition_selection

    grouped = grouping_arguments(by, groups, max_groups, group_fraction)
    bounds = flag_contributions(
        max_contributions, rows_per_value=max_rows_per_value, groups=max_groups,
        group_fraction=group_fraction,
    )  # fmt: skip
    show_bar = (not as_json) and sys.stderr.isatty() and not explain
    with _progress(show_bar) as progress:
        result = run_or_explain(
            explain, as_json, partition_selection,
            local_path(file), column, epsilon, delta, privacy_unit, contributions=bounds,
            mechanism=method,  # type: ignore[arg-type]
            ledger=ledger, source=source_from_seed(insecure_seed), progress=progress,
            **grouped,
        )  # fmt: skip
    if result is None:  # --explain: the plan was printed
        return
    if grouped:
        print_grouped(result, as_json)
        return
    if as_json:
        click.echo(strict_dumps(result.to_dict()))
        return
    click.echo(str(result))
    if result.ledger is not None:
        click.echo(f"charged to the ledger {result.ledger}")


@cli.group("budget")
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
    from ..accounting.ledger import Ledger, describe_unit

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


@budget.command("show")
@click.option("--ledger", required=True, type=str)
@click.option("--json", "as_json", is_flag=True)
def budget_show(ledger: str, as_json: bool) -> None:
    """Show a ledger's budget, what is spent and what remains."""
    from rich.console import Console
    from rich.table import Table

    from ..accounting.ledger import Ledger, describe_unit

    book = Ledger.open(ledger, read_only=True)  # shown from a read-only directory too
    units = book.units()
    warning = book.unit_warning()
    budget_eps, budget_delta = book.budget
    spent = book.spent()
    remaining = book.remaining()
    entries = book.entries()
    zcdp = book.accounting == "zcdp"
    if as_json:
        info: dict[str, Any] = {
            "ledger": book.path,
            "accounting": book.accounting,
            "budget": {"epsilon": budget_eps, "delta": budget_delta},
            "spent": {"epsilon": spent[0], "delta": spent[1]},
            "remaining": {"epsilon": remaining[0], "delta": remaining[1]},
            "entries": len(entries),
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
                for u in units
            ],
            "warning": warning,
        }
        if zcdp:
            info["budget"]["rho"] = book.rho_budget
            info["spent"]["rho"] = book.spent_rho()
            info["remaining"]["rho"] = book.remaining_rho()
            # remaining epsilon of a zCDP ledger: the largest single pure-DP query that fits
            info["remaining"]["exponential_mechanism_epsilon"] = sqrt_down(8 * book.remaining_rho())
        click.echo(strict_dumps(info))
        return
    table = Table(title=f"ledger {book.path} ({book.accounting} accounting)")
    for name in ("when (UTC)", "mechanism", "unit", "source", "epsilon", "delta", "rho"):
        table.add_column(name, overflow="fold")  # long labels wrap, never cut
    for e in entries:
        table.add_row(
            _when(str(getattr(e, "time", ""))),
            str(getattr(e, "mechanism", "")),
            "unknown" if e.privacy_unit is None else e.privacy_unit,
            "unknown" if e.source is None else e.source,
            _fmt(getattr(e, "epsilon", None)),
            _fmt(getattr(e, "delta", None)),
            _fmt(getattr(e, "rho", None)),
        )
    console = Console()
    console.print(table)
    bound = book.privacy_unit
    console.print(
        "bound to:  " + ("no unit (any accepted)" if bound is None else describe_unit(bound))
    )
    for u in units:
        amount = (
            f"rho = {float_up(u.rho):.6g}"
            if zcdp
            else f"epsilon = {float_up(u.epsilon):.6g}, delta = {float_up(u.delta):.3g}"
        )
        name = "unknown" if u.privacy_unit is None else u.privacy_unit
        sources = ", ".join(u.sources) or "unknown"
        console.print(
            f"unit {name}: {u.entries} entries, {amount}; sources: {sources}", markup=False
        )
    if warning is not None:
        console.print(warning, style="bold", soft_wrap=True)
    if zcdp:
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
        return
    console.print(f"budget:    epsilon = {budget_eps:.6g}, delta = {budget_delta:.3g}")
    console.print(f"spent:     epsilon = {spent[0]:.6g}, delta = {spent[1]:.3g}")
    console.print(f"remaining: epsilon = {remaining[0]:.6g}, delta = {remaining[1]:.3g}")


register_applications(cli)

#: One name per job in Python and on the command line (issue 23): the command is the Python
#: function's name, ``most-common`` runs :func:`dpselect.most_common`, ``partition-selection``
#: :func:`dpselect.partition_selection`, ``best-price`` :func:`dpselect.best_price`. The short
#: names stay as aliases (short name -> command).
COMMAND_ALIASES = {"mode": "most-common", "keys": "partition-selection", "price": "best-price"}


def _register_aliases(group: click.Group) -> None:
    for short, name in COMMAND_ALIASES.items():
        command = group.commands.pop(short)
        command.name = name
        group.add_command(command, name)
        alias = copy.copy(command)
        alias.name = short
        alias.short_help = f"Alias of '{name}'."
        group.add_command(alias, short)


_register_aliases(cli)


def _when(iso: str) -> str:
    """A ledger entry's time as shown: ``2026-12-06 23:04:18`` (UTC, to the second; the
    ledger keeps the full ISO time, ``--json`` prints it)."""
    return iso[:19].replace("T", " ") if len(iso) >= 19 and iso[10:11] == "T" else iso


def _fmt(value: Any) -> str:
    return "" if value is None else f"{value:.6g}" if isinstance(value, float) else str(value)


#: The arguments of the running command, as typed (:func:`main`), for :func:`as_typed`.
_TYPED: list[str] = []


def _one_line(message: str) -> str:
    return " ".join(as_typed(as_given(str(message)), _TYPED).split())


def as_typed(message: str, args: list[str]) -> str:
    """``message`` with each Python argument name of a flag the user typed written as that
    flag (``group_fraction`` -> ``--group-fraction``): the recipes name their arguments, the
    command line names its flags. Only names with an underscore (never an English word)."""
    for arg in args:
        flag = arg.split("=", 1)[0]
        name = flag[2:].replace("-", "_")
        if flag.startswith("--") and "_" in name:
            message = re.sub(rf"(?<![\w-]){re.escape(name)}(?!\w)", flag, message)
    return message


def _ledger_argument(argv: list[str]) -> str | None:
    """The value of ``--ledger`` in ``argv`` (for the interrupt report), if any."""
    for i, arg in enumerate(argv):
        if arg == "--ledger" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--ledger="):
            return arg.split("=", 1)[1]
    return None


def _ledger_entries(path: str | None) -> int | None:
    """How many charges the ledger at ``path`` holds (None: no ledger, or not readable)."""
    if path is None:
        return None
    from ..accounting.ledger import Ledger

    try:
        book = Ledger.open(path)
    except DPSelectError:
        return None
    try:
        return len(book)
    finally:
        book.close()


def _interrupted(path: str | None, before: int | None) -> str:
    """One line saying that the command stopped and what, if anything, was charged."""
    after = _ledger_entries(path)
    if path is None:
        return "interrupted: no result was released (no --ledger: nothing recorded)"
    if before is None or after is None or after <= before:
        return f"interrupted: no result was released; nothing was charged to the ledger {path}"
    from ..accounting.ledger import Ledger

    book = Ledger.open(path)
    try:
        new = book.entries()[before:]
    finally:
        book.close()
    charged = "; ".join(
        f"{e.mechanism}: "
        + (
            f"rho = {e.rho:.6g}"
            if e.kind == "zcdp" and e.epsilon is None
            else f"epsilon = {e.epsilon:.6g}, delta = {e.delta or 0.0:.3g}"
        )
        for e in new
    )
    return (
        f"interrupted: no result was released, but the ledger {path} was already charged "
        f"({charged}): the charge is made before the data is read, and stands"
    )


def _caused_by_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while a KeyboardInterrupt was being handled."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def _exit_interrupted(ledger_path: str | None, before: int | None) -> None:
    """Report the interrupt and what was charged; exit 130 at once.

    ``os._exit`` skips the interpreter's teardown, during which an interrupted DuckDB query
    still unwinding in its worker thread could abort the process.
    """
    try:
        message = _interrupted(ledger_path, before)
    except Exception:  # the ledger itself unreadable: still exit cleanly
        message = f"interrupted: no result was released; check the ledger {ledger_path}"
    click.echo(message, err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(EXIT_INTERRUPTED)


def _auto_bounds_argv(args: list[str]) -> list[str]:
    """``--bounds auto`` (one word where ``--bounds`` takes ``LO HI``) as the hidden flag
    ``--bounds-auto`` (click options take a fixed number of values)."""
    out: list[str] = []
    i = 0
    while i < len(args):
        if args[i] == "--bounds" and i + 1 < len(args) and args[i + 1] == "auto":
            out.append("--bounds-auto")
            i += 2
            continue
        out.append("--bounds-auto" if args[i] == "--bounds=auto" else args[i])
        i += 1
    return out


def _quiet_library_logs() -> None:
    """Keep libraries' log records off the terminal (``DPSELECT_DEBUG`` keeps them).

    py4j logs a traceback through the root logger for every call that Ctrl-C interrupts in
    a Spark session (four on one interrupt); a handler on the root logger stops
    :func:`logging.basicConfig` from printing them. The command's own line says what happened.
    """
    import logging

    if os.environ.get("DPSELECT_DEBUG"):
        return
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())


def main(argv: list[str] | None = None) -> None:
    """Run the command line; exit 2 with one line on stderr for bad input, 130 on Ctrl-C.

    Always ends the process with :func:`sys.exit` (on Ctrl-C with :func:`os._exit`): 0 on
    success, 2 for bad input or a refused charge, 1 for an internal error (no traceback
    unless ``DPSELECT_DEBUG`` is set), 130 on an interrupt (after saying what was charged to
    the ``--ledger``, if any).

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program name; ``None``: ``sys.argv[1:]``.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    _TYPED[:] = args
    _quiet_library_logs()
    if args[:1] == ["quantile"]:
        args = _auto_bounds_argv(args)
    ledger_path = _ledger_argument(args)
    before = _ledger_entries(ledger_path)
    if any(a.lower().endswith((".json", ".json.gz")) for a in args):
        # Public (the file's name), the same for every such file: never reads a row.
        click.echo(
            "note: a .json file is read one record per line (docs/data_input.md); an array "
            "written on one line or pretty-printed gives no rows: convert it to JSON lines "
            "(jq -c '.[]' in.json > out.jsonl)",
            err=True,
        )
    try:
        cli.main(args=args, prog_name="dpselect", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt):
        _exit_interrupted(ledger_path, before)
    except click.ClickException as exc:
        click.echo(f"error: {_one_line(exc.format_message())}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except BudgetExceeded as exc:
        click.echo(f"error: refused, over budget: {_one_line(str(exc))}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except DPSelectError as exc:
        click.echo(f"error: {_one_line(str(exc))}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except Exception as exc:  # never a traceback on the user's terminal
        if _caused_by_interrupt(exc):  # e.g. a clean-up step failing after Ctrl-C
            _exit_interrupted(ledger_path, before)
        if os.environ.get("DPSELECT_DEBUG"):
            raise
        click.echo(f"internal error: {type(exc).__name__}: {_one_line(str(exc))}", err=True)
        sys.exit(EXIT_INTERNAL)
    sys.exit(0)
