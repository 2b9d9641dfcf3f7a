"""The rules by which rows are dropped, stated with every result they apply to.

Some rows count for nothing, by a rule of that row alone (docs/contribution_bounding.md, "What a
row's fate may depend on"): a line of a text file that does not parse, a missing value, a
missing privacy unit. How many rows a rule dropped is never said (that number depends on the
private rows); which rules applied is a public fact of the input's format and the query's
arguments, so every result carries them (``parameters["row_rules"]``) and prints them, whether
or not any row was dropped.
"""

from __future__ import annotations

import re

from .text_lines import MAX_LINE_BYTES

__all__ = ["row_rules"]

_FILE = re.compile(r"^file '(?P<path>.*)'$")
_CSV = (".csv", ".tsv", ".csv.gz", ".tsv.gz")
_JSON = (".jsonl", ".ndjson", ".json", ".jsonl.gz", ".ndjson.gz", ".json.gz")
_LONG = f"longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB"


def row_rules(source: str | None, privacy_unit: str | None) -> list[str]:
    """The row rules that apply to data described as ``source`` (a table's public
    ``description``: ``"file 'visits.csv'"``, ``"the pandas table"``; ``None`` when the data
    is not a table) read with ``privacy_unit`` (``None``: rows).

    Parameters
    ----------
    source : str or None
        The table's description.
    privacy_unit : str or None
        The unit column, if any.

    Returns
    -------
    list of str
        One sentence per rule (none when ``source`` is ``None``).
    """
    if source is None:
        return []
    rules = []
    match = _FILE.match(source)
    path = match.group("path").lower() if match else ""
    if path.endswith(_CSV):
        rules.append(
            f"a line that is empty, not UTF-8 text, {_LONG}, or not the header's fields in "
            "the file's dialect is no row"
        )
    elif path.endswith(_JSON):
        rules.append(f"a line that is empty, not UTF-8 text, {_LONG}, or not one JSON object "
                     "is no row")  # fmt: skip
    rules.append("a row whose value is missing (NULL; NaN in a number column) counts for nothing")
    if privacy_unit is not None:
        rules.append(
            f"a row whose privacy unit {privacy_unit!r} is missing (NULL or NaN) belongs to no "
            "unit and counts for nothing"
        )
    return rules
