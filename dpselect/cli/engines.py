"""``--engine duckdb|spark`` and ``--spark-master``: which engine reads FILE.

DuckDB (the default) reads the file in this process. With ``--engine spark`` the file, glob or
directory of Parquet parts is read by a Spark session on ``--spark-master`` (pyspark is
imported only then); the scores, counts or histograms are computed there and only they come
back (:mod:`dpselect.data.spark_engine`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

__all__ = ["engine_options", "open_data"]


def engine_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--engine`` and ``--spark-master`` to a command."""
    func = click.option(
        "--spark-master",
        type=str,
        default="local[*]",
        show_default=True,
        help="With --engine spark: the Spark master URL.",
    )(func)
    return click.option(
        "--engine",
        type=click.Choice(["duckdb", "spark"]),
        default="duckdb",
        show_default=True,
        help="Engine reading FILE: DuckDB in this process, or Spark (files, globs, a "
        "directory of Parquet parts; needs pip install 'dpselect[spark]').",
    )(func)


def open_data(file: str, engine: str, spark_master: str) -> Any:
    """FILE as given (DuckDB reads it), or a Spark frame over it."""
    if engine != "spark":
        return file
    from pathlib import Path

    from ..core.errors import DataError
    from ..data.spark_engine import read_files, spark_session

    # A missing path is said first (a public fact), before Spark is needed or started.
    if not any(ch in file for ch in "*?[") and not Path(file).exists():
        raise DataError(f"data file {file!r} does not exist")
    return read_files(spark_session(spark_master), file)
