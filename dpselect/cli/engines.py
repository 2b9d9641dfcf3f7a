"""``--engine duckdb|spark``, ``--spark-master``, ``--spark-remote`` and ``--format``: how FILE
is read.

DuckDB (the default) reads the file in this process. With ``--engine spark`` the file, glob or
directory of Parquet parts is read by a Spark session (pyspark is imported only then); the
scores, counts or histograms are computed there and only they come back
(:mod:`dpselect.data.engines.spark`). The session runs on ``--spark-master URL`` (classic
Spark: ``local[*]``, ``spark://host:7077``), or on a Spark Connect server with
``--spark-remote URL`` (``sc://host:15002``; a ``sc://`` URL given to ``--spark-master`` is
read the same way); without either, on ``SPARK_REMOTE`` when it is set, else ``local[*]``
(:func:`dpselect.data.engines.spark_session.spark_session`). ``--spark-master`` or
``--spark-remote`` without ``--engine spark`` is refused (it would be ignored), and so is the
pair.

FILE ``-`` is standard input (DuckDB only): read once, whole, into a temporary file named by
its format (``--format csv``, the default, ``tsv`` or ``jsonl``), which is then read by the
same line-by-line rules as any file (docs/data_input.md) and removed when the command ends.
``--format`` applies to standard input only: files are read by their suffix. The option is
kept in the click context (``ctx.meta``), so that commands need not pass it on.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import click

__all__ = [
    "STDIN",
    "as_given",
    "check_engine",
    "engine_options",
    "format_option",
    "local_path",
    "open_data",
    "spark_remote",
    "spark_target",
]

#: FILE meaning standard input.
STDIN = "-"
#: ``--format`` -> the suffix the temporary file gets (which decides how it is read).
STDIN_FORMATS = {"csv": ".csv", "tsv": ".tsv", "jsonl": ".jsonl"}
_FORMAT_KEY = "dpselect.input_format"
_STDIN_KEY = "dpselect.stdin_path"
_REMOTE_KEY = "dpselect.spark_remote"
DEFAULT_SPARK_MASTER = "local[*]"


def _keep_format(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    ctx.meta[_FORMAT_KEY] = value


def format_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--format csv|tsv|jsonl`` (the format of FILE ``-``, standard input).

    Parameters
    ----------
    func : callable
        A click command callback. The option is not passed to it: its value is kept in
        ``ctx.meta`` and read by :func:`local_path` and :func:`open_data`.

    Returns
    -------
    callable
        ``func`` with the option added.
    """
    return click.option(
        "--format",
        type=click.Choice(sorted(STDIN_FORMATS)),
        default=None,
        expose_value=False,
        callback=_keep_format,
        help="With FILE '-' (standard input): its format [default: csv]. Files are read by "
        "their suffix.",
    )(func)


def _keep_remote(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    ctx.meta[_REMOTE_KEY] = value


def engine_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--engine``, ``--spark-master``, ``--spark-remote`` and ``--format`` to a command.

    Parameters
    ----------
    func : callable
        A click command callback; it receives ``engine`` and ``spark_master`` as keyword
        arguments (``--spark-remote`` and ``--format`` are kept in ``ctx.meta`` instead).

    Returns
    -------
    callable
        ``func`` with the four options added.
    """
    func = format_option(func)
    func = click.option(
        "--spark-remote",
        type=str,
        default=None,
        expose_value=False,
        callback=_keep_remote,
        help="With --engine spark: a Spark Connect URL (sc://host:15002) [default: "
        "$SPARK_REMOTE]; needs pip install 'dpselect[spark-connect]'.",
    )(func)
    func = click.option(
        "--spark-master",
        type=str,
        default=None,
        help="With --engine spark: the Spark master URL [default: local[*], or Spark Connect "
        "on $SPARK_REMOTE when set].",
    )(func)
    return click.option(
        "--engine",
        type=click.Choice(["duckdb", "spark"]),
        default="duckdb",
        show_default=True,
        help="Engine reading FILE: DuckDB in this process, or Spark (files, globs, a "
        "directory of Parquet parts; needs pip install 'dpselect[spark]').",
    )(func)


def local_path(file: str) -> str:
    """FILE as a path DuckDB reads: standard input (``-``) copied to a temporary file, read
    once per command; any other FILE as given (``--format`` is then refused).

    Must be called inside a click command (it reads and writes the current context).

    Parameters
    ----------
    file : str
        The FILE argument: a path, or ``"-"`` for standard input.

    Returns
    -------
    str
        ``file`` itself, or the path of the temporary copy of standard input (suffixed by
        ``--format``, default ``.csv``; the same path on every call within one command,
        removed when the command ends).

    Raises
    ------
    click.UsageError
        ``--format`` given with a file, or FILE ``-`` while standard input is a terminal.
    """
    ctx = click.get_current_context()
    fmt = ctx.meta.get(_FORMAT_KEY)
    if file != STDIN:
        if fmt is not None:
            raise click.UsageError(
                "--format applies only to FILE '-' (standard input); files are read by their "
                "suffix (.csv, .tsv, .jsonl, .json, .parquet)"
            )
        return file
    saved = ctx.meta.get(_STDIN_KEY)
    if saved is not None:
        return str(saved)
    if sys.stdin is None or sys.stdin.isatty():
        raise click.UsageError(
            "FILE '-' reads standard input, which is a terminal here: pipe the data in "
            "(e.g. cat data.csv | dpselect ... -)"
        )
    folder = tempfile.mkdtemp(prefix="dpselect-stdin-")
    ctx.call_on_close(lambda: shutil.rmtree(folder, ignore_errors=True))
    path = os.path.join(folder, "stdin" + STDIN_FORMATS[fmt or "csv"])
    with open(path, "wb") as out:
        shutil.copyfileobj(sys.stdin.buffer, out, 1 << 20)
    ctx.meta[_STDIN_KEY] = path
    _STDIN_PATHS.append(path)
    return path


#: The temporary files holding standard input in this process (for :func:`as_given`).
_STDIN_PATHS: list[str] = []


def as_given(message: str) -> str:
    """``message`` with the temporary file of standard input named as the user gave it.

    Parameters
    ----------
    message : str
        An error message that may name a temporary copy of standard input made by
        :func:`local_path` in this process.

    Returns
    -------
    str
        ``message`` with each such path (quoted or not) replaced by ``-`` and
        ``file '<path>'`` by ``standard input ('-')``.
    """
    for path in _STDIN_PATHS:
        message = message.replace(f"file {path!r}", "standard input ('-')")
        message = message.replace(repr(path), "'-'").replace(path, "-")
    return message


def spark_remote() -> str | None:
    """``--spark-remote`` as given (``None`` without it, or outside a command)."""
    ctx = click.get_current_context(silent=True)
    return None if ctx is None else ctx.meta.get(_REMOTE_KEY)


def check_engine(engine: str, spark_master: str | None) -> None:
    """Refuse ``--spark-master`` / ``--spark-remote`` without ``--engine spark`` (they would
    be ignored), and the two together.

    Parameters
    ----------
    engine : str
        ``--engine``: ``"duckdb"`` or ``"spark"``.
    spark_master : str or None
        ``--spark-master``; ``None`` when not given. ``--spark-remote`` is read from the
        click context (:func:`spark_remote`).

    Raises
    ------
    click.UsageError
        A Spark option without ``--engine spark``, or both Spark options.
    """
    remote = spark_remote()
    for name, value in (("--spark-master", spark_master), ("--spark-remote", remote)):
        if engine != "spark" and value is not None:
            raise click.UsageError(
                f"{name} applies only with --engine spark (DuckDB reads FILE in this process)"
            )
    if spark_master is not None and remote is not None:
        raise click.UsageError(
            "--spark-master and --spark-remote: give one (a Spark master, or a Spark Connect "
            "server)"
        )


def spark_target(spark_master: str | None) -> tuple[str | None, str | None]:
    """``(master, remote)`` for :func:`~dpselect.data.engines.spark_session.spark_session`:
    a ``sc://`` URL given to ``--spark-master`` is a Spark Connect server.

    Parameters
    ----------
    spark_master : str or None
        ``--spark-master``; ``None`` when not given.

    Returns
    -------
    tuple of (str or None, str or None)
        ``(master, remote)``: ``(None, spark_master)`` for a ``sc://`` URL, otherwise
        ``spark_master`` and ``--spark-remote`` as given (either may be ``None``; both
        ``None`` lets the session use ``SPARK_REMOTE`` or ``local[*]``).
    """
    remote = spark_remote()
    if spark_master is not None and spark_master.startswith("sc://"):
        return None, spark_master
    return spark_master, remote


def open_data(
    file: str, engine: str, spark_master: str | None, schema: dict[str, str] | None = None
) -> Any:
    """FILE as given (DuckDB reads it; ``-``: standard input, :func:`local_path`), or a Spark
    frame over it.

    With ``--engine spark`` a CSV or TSV file's declared columns (``schema``, else the
    command's parsed ``--schema`` from the click context) are read as their types by the rule
    both engines share (:func:`dpselect.data.engines.spark.read_files`), so that both read
    the file to the same values; a declared type the Spark engine does not read from text is
    refused (exit 2, one line naming the column) before Spark starts, nothing charged.

    Parameters
    ----------
    file : str
        The FILE argument: a path (with ``--engine spark`` also a glob or a directory of
        Parquet parts), or ``"-"`` for standard input (DuckDB only).
    engine : str
        ``--engine``: ``"duckdb"`` or ``"spark"``.
    spark_master : str or None
        ``--spark-master``; ``None`` when not given.
    schema : dict of str to str, optional
        Declared column types (column name -> type name) for a CSV or TSV file read by Spark;
        ``None``: the command's ``schema`` parameter from the click context, if any.

    Returns
    -------
    str or pyspark.sql.DataFrame
        The path DuckDB reads (:func:`local_path`), or a Spark frame over ``file``.

    Raises
    ------
    click.UsageError
        Bad engine options (:func:`check_engine`), FILE ``-`` with Spark, or ``--format``
        with a file.
    DataError
        With Spark: ``file`` (not a glob) does not exist, or has a format Spark does not read.
    ParameterError
        With Spark: a malformed schema, or a declared type Spark does not read from text.
    """
    check_engine(engine, spark_master)
    if engine != "spark":
        return local_path(file)
    if file == STDIN:
        raise click.UsageError("FILE '-' (standard input) is read by --engine duckdb only")
    ctx = click.get_current_context()
    if ctx.meta.get(_FORMAT_KEY) is not None:
        raise click.UsageError("--format applies only to FILE '-' (standard input)")
    from pathlib import Path

    from ..core.errors import DataError
    from ..data.engines.spark import check_text_schema, read_files, spark_session

    if schema is None:
        schema = ctx.params.get("schema")
    # A missing path is said first (a public fact), before Spark is needed or started.
    if not any(ch in file for ch in "*?[") and not Path(file).exists():
        raise DataError(f"data file {file!r} does not exist")
    declared = check_text_schema(file, schema)  # before Spark starts: public facts only
    master, remote = spark_target(spark_master)
    return read_files(spark_session(master, remote), file, declared)
