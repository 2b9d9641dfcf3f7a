"""CLI subcommands of the application recipes: ``quantile``, ``price``, ``preview``.

Same conventions as the main job (:mod:`dpselect.cli.main`): bad input prints one line and
exits with code 2 (the recipes raise :class:`DPSelectError` subclasses, which ``main`` turns
into that line), ``--json`` prints one JSON object, ``--ledger`` is charged before the answer
is computed, ``--insecure-seed`` makes a run reproducible and NOT private.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from ..core.jsonvalues import strict_dumps
from ..data.schema import parse_schema_spec
from .contributions import flag_contributions
from .engines import engine_options, open_data
from .explaining import EXPLAIN_OPTION, run_or_explain
from .grouping import grouping_arguments, grouping_options, print_grouped
from .lists import file_or_list
from .seeding import source_from_seed

__all__ = ["register"]


def _emit(result: Any, as_json: bool) -> None:
    if as_json:
        click.echo(strict_dumps(result.to_dict()))
        return
    click.echo(str(result))
    ledger = getattr(result, "ledger", None)
    if ledger is not None:
        click.echo(f"charged to the ledger {ledger}")


def _file_or_list(text: str | None, option: str) -> Any:
    """A path to a text file (passed on as is) or a comma-separated list of numbers."""
    return file_or_list(text, option, numbers=True)


def _scores(text: str) -> dict[str, float] | list[float]:
    """``name=score,...`` or ``score,...`` (or a file holding either, one per line)."""
    if os.path.isfile(text):
        with open(text, encoding="utf-8") as handle:
            text = ",".join(line.strip() for line in handle if line.strip())
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise click.BadParameter("must not be empty", param_hint="--scores")
    try:
        if all("=" in p for p in parts):
            pairs = [p.split("=", 1) for p in parts]
            return {name.strip(): float(value) for name, value in pairs}
        return [float(p) for p in parts]
    except ValueError:
        raise click.BadParameter(
            "must be numbers 'a,b,...' or 'name=number,...' (or a file of them)",
            param_hint="--scores",
        ) from None


_LEDGER = click.option(
    "--ledger", type=str, default=None, help="Budget ledger to charge before the answer is shown."
)
_JSON = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
_SEED = click.option(
    "--insecure-seed",
    type=int,
    default=None,
    help="Seeded randomness for tests and demos: NOT private.",
)
_SCHEMA = click.option(
    "--schema",
    type=str,
    default=None,
    callback=lambda ctx, param, value: None if value is None else parse_schema_spec(value),
    help="Column types, e.g. 'price:DOUBLE' (CSV/JSON columns are text otherwise; a value "
    "that does not convert is missing).",
)
_UNIT = click.option(
    "--privacy-unit",
    type=str,
    default=None,
    help="Column identifying a person: epsilon protects all of one person's rows (default: "
    "each row is a person).",
)


def _max_rows(text: str | None, allow_auto: bool) -> int | str | None:
    """``--max-rows``: a positive integer (or ``auto`` where allowed); checked again by the
    recipe."""
    if text is None:
        return None
    if allow_auto and text.strip() == "auto":
        return "auto"
    try:
        return int(text)
    except ValueError:
        expected = "an integer or 'auto'" if allow_auto else "an integer"
        raise click.BadParameter(f"{text!r} is not {expected}", param_hint="--max-rows") from None


_CONFIDENCE = click.option(
    "--confidence",
    type=float,
    default=0.95,
    show_default=True,
    help="Confidence of the accuracy statement.",
)


@click.command("quantile")
@click.argument("file", type=str)
@click.option("--column", required=True, help="The numeric column.")
@click.option(
    "--q",
    "q",
    required=True,
    multiple=True,
    type=float,
    help="Quantile level in [0, 1] (0.5: the median); repeat for several (see --mechanism).",
)
@click.option("--epsilon", required=True, type=float, help="Total privacy cost.")
@click.option(
    "--bounds",
    type=float,
    nargs=2,
    default=None,
    help="LO HI: public bounds (continuous mechanism; data clamped); or 'auto': bounds "
    "chosen privately first with --auto-fraction of --epsilon (docs/private_selection.md).",
)
@click.option("--bounds-auto", "bounds_auto", is_flag=True, hidden=True)
@click.option(
    "--auto-fraction",
    type=float,
    default=None,
    help="With --bounds auto or --max-rows auto: the share of --epsilon spent on each choice "
    "[default: 0.25].",
)
@_UNIT
@click.option(
    "--max-rows",
    type=str,
    default=None,
    help="With --privacy-unit: the most rows one person keeps (chosen by a salted keyed rule "
    "that reads only that person's rows) [default: 1], or 'auto': chosen privately from 1, 2, "
    "4, ..., 256 with --auto-fraction of --epsilon.",
)
@click.option(
    "--candidates",
    type=str,
    default=None,
    help="Public candidate values: a text file (one per line) or 'a,b,c'.",
)
@click.option(
    "--resolution",
    type=float,
    default=None,
    help="With --bounds: public resolution w; values within w count as ties "
    "[default: (hi - lo) / 10^6; the joint method: half the power of ten at most (hi - lo) "
    "/ 600, and its values are rounded to that power of ten].",
)
@click.option(
    "--mechanism",
    "method",
    type=click.Choice(["auto", "split", "recursive", "joint", "tree"]),
    default="auto",
    show_default=True,
    help="Several --q with --bounds: 'tree' (a hierarchical histogram with exact discrete "
    "Laplace noise) or 'joint' (Gillenwater et al. 2021); auto for 2-20 levels spends 1/20 of "
    "epsilon on a noisy row count N and runs the tree if epsilon N < 700, else joint; "
    "'recursive' (Kaplan et al. 2022; auto above 20) or 'split' (epsilon / m).",
)
@_CONFIDENCE
@_LEDGER
@EXPLAIN_OPTION
@_JSON
@_SEED
@_SCHEMA
@grouping_options
@click.option(
    "--delta",
    type=float,
    default=None,
    help="With --by and no --groups: the delta of the groups' private selection.",
)
@engine_options
def quantile_command(
    file: str,
    column: str,
    q: tuple[float, ...],
    epsilon: float,
    bounds: tuple[float, float] | None,
    bounds_auto: bool,
    auto_fraction: float | None,
    privacy_unit: str | None,
    max_rows: str | None,
    candidates: str | None,
    resolution: float | None,
    method: str,
    confidence: float,
    ledger: str | None,
    explain: bool,
    as_json: bool,
    insecure_seed: int | None,
    schema: dict[str, str] | None,
    by: str | None,
    groups: str | None,
    max_groups: int,
    group_fraction: float | None,
    delta: float | None,
    engine: str,
    spark_master: str | None,
) -> None:
    """Quantiles (the median with --q 0.5) of a numeric column, privately (per group with
    --by)."""
    from ..planning.quantile_request import quantile_request  # loaded when a command runs
    from ..recipes import quantile

    _check_bounds_and_levels(bounds, bounds_auto, q, method)
    rows = _max_rows(max_rows, allow_auto=True)
    grouped = grouping_arguments(by, groups, max_groups, group_fraction)
    per_unit = flag_contributions(
        rows, values_flag="--max-rows", groups=max_groups, auto_fraction=auto_fraction,
        group_fraction=group_fraction,
    )  # fmt: skip
    if delta is not None and not grouped:
        raise click.UsageError("--delta applies to quantile only with --by (private groups)")
    data = open_data(file, engine, spark_master)
    request = quantile_request(
        column, list(q), epsilon,
        bounds="auto" if bounds_auto else None if bounds is None else (bounds[0], bounds[1]),
        candidates=_file_or_list(candidates, "--candidates"), confidence=confidence,
        resolution=resolution, mechanism=method, privacy_unit=privacy_unit,
        contributions=per_unit, delta=delta, **grouped,
    )  # fmt: skip
    source = source_from_seed(insecure_seed)
    run: dict[str, Any] = {"ledger": ledger, "source": source, "schema": schema}
    bars = (not as_json) and sys.stderr.isatty() and not explain
    if grouped:  # one scan of every group's rows: its bar only
        with _scan_progress(bars) as (progress, _):
            grouped_result = run_or_explain(explain, as_json, quantile, data, request,
                                            progress=progress, **run)  # fmt: skip
        if grouped_result is not None:
            print_grouped(grouped_result, as_json)
        return
    with _scan_progress(bars) as (progress, work):
        result = run_or_explain(explain, as_json, quantile, data, request, progress=progress,
                                work_progress=work, **run)  # fmt: skip
    if result is not None:
        _emit(result, as_json)


def _check_bounds_and_levels(
    bounds: tuple[float, float] | None, bounds_auto: bool, q: tuple[float, ...], method: str
) -> None:
    """Refuse ``--bounds`` given twice, and levels out of order for a method that answers
    several levels together (all but ``split``)."""
    if bounds_auto and bounds is not None:
        raise click.UsageError("give --bounds once: LO HI, or auto")
    if method != "split" and any(b <= a for a, b in itertools.pairwise(q)):
        how = (
            "the default method (auto: tree, joint or recursive) answers"
            if method == "auto"
            else f"--mechanism {method} answers"
        )
        raise click.BadParameter(
            f"levels must be strictly increasing (each once, in order), got {list(q)}: {how} "
            "several levels together, split at them in order; sort them, or use --mechanism split "
            "(any order)",
            param_hint="--q",
        )


_Progress = Callable[[float], None]


@contextmanager
def _scan_progress(enabled: bool) -> Iterator[tuple[_Progress | None, _Progress | None]]:
    """Rich progress bars on stderr (TTY only), each from its first report: reading the
    column (percent: DuckDB's own query progress, for a query over a second), then the
    mechanism's work (fraction: of the levels for the joint and recursive methods, of the rows
    processed for the continuous one)."""
    if not enabled:
        yield None, None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        scan: list[Any] = []  # from the first report: DuckDB reports a query over a second
        work: list[Any] = []

        def on_scan(percent: float) -> None:
            if not scan:
                scan.append(bar.add_task("reading the column", total=100.0))
            bar.update(scan[0], completed=percent)

        def on_work(fraction: float) -> None:
            if not work:
                work.append(bar.add_task("computing the quantiles", total=1.0))
            bar.update(work[0], completed=fraction)

        yield on_scan, on_work


@click.command("price")
@click.argument("file", type=str)
@click.option("--column", required=True, help="The column of buyers' valuations.")
@click.option("--epsilon", required=True, type=float, help="Privacy cost (one buyer).")
@click.option(
    "--prices",
    type=str,
    default=None,
    help="Public candidate prices: a text file (one per line) or '1,1.01,3.01'.",
)
@click.option(
    "--price-step",
    type=float,
    default=None,
    help="Grid step: prices s, 2 s, ... up to --max-price (the seed's alpha).",
)
@click.option(
    "--max-price", type=float, default=1.0, show_default=True, help="Largest price considered."
)
@click.option(
    "--n",
    "n",
    type=int,
    default=None,
    help="Public number of buyers (or an estimate): sets the default --price-step, "
    "max_price ln(n)/(n eps).",
)
@_UNIT
@click.option(
    "--max-rows",
    type=str,
    default=None,
    help="With --privacy-unit: the most bids one buyer keeps (chosen by a salted keyed rule "
    "that reads only that buyer's rows) [default: 1].",
)
@_CONFIDENCE
@_LEDGER
@EXPLAIN_OPTION
@_JSON
@_SEED
@_SCHEMA
@engine_options
def price_command(
    file: str,
    column: str,
    epsilon: float,
    prices: str | None,
    price_step: float | None,
    max_price: float,
    n: int | None,
    privacy_unit: str | None,
    max_rows: str | None,
    confidence: float,
    ledger: str | None,
    explain: bool,
    as_json: bool,
    insecure_seed: int | None,
    schema: dict[str, str] | None,
    engine: str,
    spark_master: str | None,
) -> None:
    """A revenue-maximising price for a digital good, privately (seed 003)."""
    from ..planning.price_request import price_request
    from ..recipes import best_price

    rows = _max_rows(max_rows, allow_auto=False)
    bounds = flag_contributions(rows, values_flag="--max-rows")  # flag-named refusals
    data = open_data(file, engine, spark_master)
    request = price_request(
        epsilon, prices=_file_or_list(prices, "--prices"), price_step=price_step,
        max_price=max_price, n=n, column=column, confidence=confidence,
        privacy_unit=privacy_unit, contributions=bounds,
    )  # fmt: skip
    with _scan_progress((not as_json) and sys.stderr.isatty() and not explain) as (progress, _):
        result = run_or_explain(explain, as_json, best_price, data, request, ledger=ledger,
                                source=source_from_seed(insecure_seed), progress=progress,
                                schema=schema)  # fmt: skip
    if result is not None:
        _emit(result, as_json)


@click.command("preview")
@click.option(
    "--scores",
    required=True,
    type=str,
    help="Hypothetical scores: 'dark=500,brown=400,...' or '500,400,...' (or a file).",
)
@click.option(
    "--epsilon",
    "epsilon",
    multiple=True,
    type=float,
    help="Privacy parameter to preview; repeat for several (optional with --plot).",
)
@click.option("--sensitivity", type=float, default=1.0, show_default=True)
@click.option(
    "--monotonic", is_flag=True, help="Scores move together (counts, as top-k and mode use)."
)
@click.option(
    "--mechanism",
    type=click.Choice(["gumbel", "permute_and_flip", "laplace"]),
    default="gumbel",
    show_default=True,
)
@_CONFIDENCE
@click.option("--plot", type=str, default=None, help="Write a PNG: P(correct) against epsilon.")
@_JSON
def preview_command(
    scores: str,
    epsilon: tuple[float, ...],
    sensitivity: float,
    monotonic: bool,
    mechanism: str,
    confidence: float,
    plot: str | None,
    as_json: bool,
) -> None:
    """The exact law of a selection on hypothetical scores; no data read, no budget spent."""
    from ..recipes import plot_preview, preview

    if not epsilon and plot is None:
        raise click.UsageError("give --epsilon (one or more), or --plot for a curve")
    values = _scores(scores)
    if plot is not None and not plot.lower().endswith(".png"):
        raise click.BadParameter("must be a path ending in .png", param_hint="--plot")
    result = None
    if epsilon:
        result = preview(
            values,
            list(epsilon),
            sensitivity=sensitivity,
            monotonic=monotonic,
            mechanism=mechanism,  # type: ignore[arg-type]
            confidence=confidence,
        )
    if plot is not None:
        try:
            path = plot_preview(
                values,
                plot,
                epsilon=list(epsilon) or None,
                sensitivity=sensitivity,
                monotonic=monotonic,
                mechanism=mechanism,  # type: ignore[arg-type]
            )
        except ImportError:
            raise click.ClickException("--plot needs matplotlib: pip install matplotlib") from None
        except OSError as exc:
            raise click.ClickException(f"cannot write the plot {plot!r}: {exc}") from None
    if as_json:
        out = result.to_dict() if result is not None else {}
        if plot is not None:
            out["plot"] = str(path)
        click.echo(strict_dumps(out))
        return
    if result is not None:
        click.echo(str(result))
    if plot is not None:
        click.echo(f"plot written to {path}")


def register(cli: click.Group) -> None:
    """Add the application subcommands to the ``dpselect`` group.

    Parameters
    ----------
    cli : click.Group
        The ``dpselect`` command group; ``quantile``, ``price`` and ``preview`` are added to
        it in place.
    """
    cli.add_command(quantile_command)
    cli.add_command(price_command)
    cli.add_command(preview_command)
