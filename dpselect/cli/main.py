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
from dataclasses import dataclass
from typing import Any

import click

# Light imports only: rich, NumPy, python-flint, DuckDB and the library load inside the
# commands that use them, so ``dpselect --help`` and ``--version`` start fast.
from .. import __version__
from ..core.errors import BudgetExceeded, DPSelectError
from ..core.jsonvalues import strict_dumps
from ..data.query import PublicGroups
from ..planning.contributions import Contributions
from .applications import register as register_applications
from .budget import budget
from .contributions import flag_contributions
from .engines import as_given, check_engine, format_option, local_path, open_data
from .explaining import EXPLAIN_OPTION, run_or_explain
from .grouping import grouping_arguments, grouping_options, print_grouped
from .interrupts import caused_by_interrupt, exit_interrupted, ledger_argument, ledger_entries
from .lists import file_or_list
from .options import ROWS_PER_VALUE_OPTION, selection_options
from .results import print_result, progress_bar
from .seeding import source_from_seed

__all__ = ["cli", "main"]

EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 1


@dataclass(frozen=True)
class _SelectionArgs:
    """The arguments of ``top-k`` and ``mode`` (``k = 1``) as the command line gave them."""

    k: int
    file: str
    column: str
    epsilon: float
    candidates: str | None
    delta: float | None
    k_bar: int | None
    privacy_unit: str | None
    max_contributions: int | str
    auto_fraction: float | None
    max_rows_per_value: int
    mechanism: str
    counts: bool
    plan: bool
    ledger: str | None
    explain: bool
    as_json: bool
    insecure_seed: int | None
    schema: dict[str, str] | None = None
    engine: str = "duckdb"
    spark_master: str | None = None
    by: str | None = None
    groups: str | None = None
    max_groups: int = 1
    group_fraction: float | None = None


def _run_selection(k: int, **options: Any) -> None:
    """Run ``top-k`` (``mode``: ``k = 1``): check the flags, then show the plan (``--plan``:
    nothing read, nothing charged) or release the answer."""
    args = _SelectionArgs(k, **options)
    check_engine(args.engine, args.spark_master)
    grouped = grouping_arguments(args.by, args.groups, args.max_groups, args.group_fraction)
    bounds = flag_contributions(
        args.max_contributions, rows_per_value=args.max_rows_per_value, groups=args.max_groups,
        auto_fraction=args.auto_fraction, group_fraction=args.group_fraction,
    )  # fmt: skip
    if args.max_contributions == "auto":
        if args.plan:
            raise click.UsageError(
                "--plan needs a number for --max-contributions (with 'auto' the bound is "
                "chosen from the data, after the charge)"
            )
        if args.privacy_unit is None:
            raise click.UsageError("--max-contributions auto needs --privacy-unit")
    if args.plan:
        _plan_selection(args, grouped, bounds)
        return
    _release_selection(args, grouped, bounds)


def _plan_selection(args: _SelectionArgs, grouped: dict[str, Any], bounds: Contributions) -> None:
    """``--plan``: the mechanisms weighed and their accuracy, from public facts only (the
    options, the candidate list, the column's name and the schema); no row read."""
    from ..data.candidates import candidates_note, load_candidates

    file, engine, spark_master, schema = args.file, args.engine, args.spark_master, args.schema
    epsilon, delta, privacy_unit = args.epsilon, args.delta, args.privacy_unit
    listed = file_or_list(args.candidates, "--candidates")
    cand_list = None if listed is None else load_candidates(listed)
    c = int(args.max_contributions)
    note = None
    if cand_list is not None:
        from ..data.tables import open_table

        table = open_table(open_data(file, engine, spark_master), schema=schema)
        # The notes top-k shows with its answer (a header line, numbers matched as text):
        # the list, the column's name and the schema only.
        note = candidates_note(cand_list, args.column, table)
        if privacy_unit is None:
            # As top_k weighs them: one row moves every candidate its value matches (the
            # schema and the list only, by the engine's own matching:
            # Engine.multiplicity; no row read).
            c = table.multiplicity(args.column, cand_list)
    n = None if cand_list is None else len(cand_list)
    if grouped:
        shares = {"max_groups": bounds.groups_per_unit, "group_fraction": bounds.auto_share}
        epsilon, delta = _group_plan_header(
            {**grouped, **shares}, file, engine, spark_master, schema, privacy_unit, epsilon,
            delta,
            cand_list is None or args.mechanism == "gaussian_histogram", args.as_json,
        )  # fmt: skip
    _print_plan(args.k, n, epsilon, delta, c, args.as_json, note, args.max_rows_per_value)


def _release_selection(
    args: _SelectionArgs, grouped: dict[str, Any], bounds: Contributions
) -> None:
    """Charge, read and release the top-k (or explain it, ``--explain``); print the answer."""
    from ..planning.top_k_request import top_k_request
    from ..recipes.grouping import GroupedResult
    from ..recipes.top_k import top_k

    as_json, explain = args.as_json, args.explain
    data = open_data(args.file, args.engine, args.spark_master)
    candidates = file_or_list(args.candidates, "--candidates")
    show_bar = (not as_json) and sys.stderr.isatty() and args.engine == "duckdb"
    with progress_bar(show_bar and not explain) as progress:
        request = top_k_request(
            args.column, args.k, args.epsilon, privacy_unit=args.privacy_unit,
            contributions=bounds, mechanism=args.mechanism, counts=args.counts,
            candidates=candidates, delta=args.delta, k_bar=args.k_bar,
            by=grouped.get("by"), groups=grouped.get("groups"),
        )  # fmt: skip
        result = run_or_explain(
            explain, as_json, top_k, data, request, ledger=args.ledger,
            source=source_from_seed(args.insecure_seed), progress=progress, schema=args.schema,
        )  # fmt: skip
    if result is None:  # --explain: the plan was printed
        return
    if isinstance(result, GroupedResult):
        print_grouped(result, as_json)
        return
    print_result(result, as_json)


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
    from ..planning.group_plan import group_budget

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
@selection_options
def top_k_command(k: int, **kwargs: Any) -> None:
    """The K most common values of a column, privately.

    With --candidates (a public list, one per line) the answer is one of those values; without
    it (and with --delta) values come from the data: private partition selection, then the
    K largest noisy counts (or the limited-domain top-k). --plan shows the options first.
    """
    _run_selection(k, **kwargs)


@cli.command("mode")
@selection_options
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
    from ..planning.partition_selection_request import partition_selection_request
    from ..recipes.grouping import GroupedResult
    from ..recipes.unknown_domain import partition_selection

    grouped = grouping_arguments(by, groups, max_groups, group_fraction)
    bounds = flag_contributions(
        max_contributions, rows_per_value=max_rows_per_value, groups=max_groups,
        group_fraction=group_fraction,
    )  # fmt: skip
    show_bar = (not as_json) and sys.stderr.isatty() and not explain
    with progress_bar(show_bar) as progress:
        data = local_path(file)
        request = partition_selection_request(
            column, epsilon, delta, privacy_unit=privacy_unit, contributions=bounds,
            mechanism=method, by=grouped.get("by"), groups=grouped.get("groups"),
        )  # fmt: skip
        result = run_or_explain(
            explain, as_json, partition_selection, data, request, ledger=ledger,
            source=source_from_seed(insecure_seed), progress=progress,
        )  # fmt: skip
    if result is None:  # --explain: the plan was printed
        return
    if isinstance(result, GroupedResult):
        print_grouped(result, as_json)
        return
    if as_json:
        click.echo(strict_dumps(result.to_dict()))
        return
    click.echo(str(result))
    if result.ledger is not None:
        click.echo(f"charged to the ledger {result.ledger}")


cli.add_command(budget)
register_applications(cli)

#: One name per job in Python and on the command line: the command is the Python
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
    ledger_path = ledger_argument(args)
    before = ledger_entries(ledger_path)
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
        exit_interrupted(ledger_path, before)
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
        if caused_by_interrupt(exc):  # e.g. a clean-up step failing after Ctrl-C
            exit_interrupted(ledger_path, before)
        if os.environ.get("DPSELECT_DEBUG"):
            raise
        click.echo(f"internal error: {type(exc).__name__}: {_one_line(str(exc))}", err=True)
        sys.exit(EXIT_INTERNAL)
    sys.exit(0)
