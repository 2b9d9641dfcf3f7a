"""One rule for list-valued options (``--candidates``, ``--prices``, ...) in every command.

A value names a file when such a file exists (one value per line); otherwise it is an inline,
comma-separated list (``--candidates a,b,c``). A value that looks like a path (it has a path
separator or a file suffix such as ``.txt``) but names no file is refused with one line, so
that a misspelt file name is never silently taken as a one-candidate list.
"""

from __future__ import annotations

import os
from typing import Any

import click

__all__ = ["file_or_list"]

_FILE_SUFFIXES = (".txt", ".csv", ".tsv", ".lst", ".list", ".json", ".jsonl")


def file_or_list(text: str | None, option: str, numbers: bool = False) -> Any:
    """The path itself (a file), or the inline list (``numbers``: parsed as floats).

    Parameters
    ----------
    text : str or None
        The option's value as typed: a path to an existing file, or a comma-separated list;
        ``None`` when the option was not given (returned unchanged).
    option : str
        The option's name as the user writes it (``"--candidates"``), for error messages.
    numbers : bool, default False
        Parse the inline values as floats (``--prices``); a file is returned as its path
        either way.

    Returns
    -------
    str or list of str or list of float or None
        ``text`` itself when it is ``None`` or names a file; otherwise the stripped,
        non-empty comma-separated values (floats with ``numbers``).

    Raises
    ------
    click.BadParameter
        ``text`` looks like a path but names no file, has no values, or (``numbers``) has a
        value that is not a number.
    """
    if text is None or os.path.isfile(text):
        return text
    if "," not in text and (os.sep in text or text.lower().endswith(_FILE_SUFFIXES)):
        raise click.BadParameter(
            f"file {text!r} does not exist (for an inline list, separate values with commas)",
            param_hint=option,
        )
    parts = [part.strip() for part in text.split(",")]
    values = [part for part in parts if part]
    if not values:
        raise click.BadParameter("must not be empty", param_hint=option)
    if not numbers:
        return values
    try:
        return [float(part) for part in values]
    except ValueError:
        raise click.BadParameter(
            "must be a file (one value per line) or a comma-separated list of numbers",
            param_hint=option,
        ) from None
