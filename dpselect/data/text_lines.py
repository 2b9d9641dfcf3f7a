"""Text files (CSV, TSV, JSON lines, line-per-record JSON arrays) read line by line.

The guarantee (proof in docs/data_input.md): the file is cut into lines by a rule that reads
only the line breaks, and each line becomes at most one row by a function of that line alone
(and of public facts: the header line, the path's suffix, the declared schema). So adding or
removing one line adds or removes at most one row and changes nothing else: no other row, no
column, no type, no error. Nothing is sniffed from the rows.

- **Lines.** DuckDB's CSV reader is used as a raw line reader (one VARCHAR column, no quote,
  no escape, the delimiter ``\\x01``, no sniffing, ``strict_mode = false``,
  ``ignore_errors = true``): a line ends at every ``\\n`` and every ``\\r`` (so ``\\r\\n``
  ends a line and leaves an empty one), and it keeps its text up to its first ``\\x01``. A line
  that is empty, not UTF-8 (in the kept part) or longer than :data:`MAX_LINE_BYTES` gives no
  row. The tests compare this with a Python model of the rule on random bytes
  (tests/data/test_input_lines.py).
- **CSV / TSV.** The first line is the header (public): it gives the column names and their
  number ``n``. A data line is a row when it matches the fixed dialect in full: ``n`` fields
  separated by ``,`` (``\\t`` for TSV), each either unquoted (no quote, delimiter or NUL) or
  quoted (``"..."``, with ``""`` for a quote inside, no NUL); otherwise it is dropped. Quotes
  never span lines. An empty unquoted field is NULL; a quoted one is the empty string. Values
  are text unless the schema declares a type (the declared text rule of
  :func:`dpselect.data.text_casts.declared_text_sql` for integers, floats, booleans and dates,
  ``TRY_CAST`` for the other types; a value that does not convert is NULL).
- **JSON lines** (``.jsonl``, ``.ndjson``): a line is a row when it is a JSON object; a key's
  value is read as text (numbers as written, ``true``, nested values as JSON text), absent or
  ``null`` is NULL.
- **JSON** (``.json``): the same, after removing from each line, around the object, blanks,
  one leading ``[`` and one trailing ``,`` or ``]``. So an array written one record per line
  (``[{...},`` / ``{...},`` / ``{...}]``, or ``[`` and ``]`` on lines of their own) is read
  record by record. Records spread over several lines (pretty-printed) or several records on
  one line (``json.dump`` without ``indent``) are not rows: such a line is dropped like any
  line that does not parse. Write JSON lines instead (pandas ``to_json(orient="records",
  lines=True)``).
"""

from __future__ import annotations

import gzip
import os
import re
import threading
import zlib
from pathlib import Path

from ..core.errors import DataError
from .values import read_value_sql

__all__ = [
    "MAX_COLUMNS",
    "MAX_LINE_BYTES",
    "check_gzip_stream",
    "csv_view_sql",
    "gzip_line_ends",
    "json_view_sql",
    "raw_lines_sql",
    "read_csv_header",
    "sql_string",
]

#: A line longer than this (in bytes) gives no row (DuckDB's ``max_line_size``).
MAX_LINE_BYTES = 8 * 1024 * 1024
#: The most columns a CSV header may name (RE2's repetition limit).
MAX_COLUMNS = 1000
#: What separates the fields of a raw line: it cannot be inside a kept line (module docstring).
_RAW_DELIMITER = "\x01"


def sql_string(text: str) -> str:
    """``text`` as a SQL string literal.

    Parameters
    ----------
    text : str
        Any text (a path, a pattern, a JSON pointer).

    Returns
    -------
    str
        ``text`` in single quotes, each quote inside doubled.
    """
    return "'" + text.replace("'", "''") + "'"


def quote_identifier(name: str) -> str:
    """``name`` as a SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def raw_lines_sql(path: str, gzipped: bool, skip_first: bool) -> str:
    """A DuckDB table function reading the file's lines as the VARCHAR column ``line``.

    ``path`` may be a glob; ``skip_first``: drop the first line (the CSV header).

    Parameters
    ----------
    path : str
        The file, or a glob of files.
    gzipped : bool
        Whether the file is gzip-compressed (read with ``compression = 'gzip'``).
    skip_first : bool
        Drop the first line (a CSV or TSV header); ``False`` for JSON.

    Returns
    -------
    str
        SQL of a DuckDB ``read_csv`` call, to use as a relation in ``FROM``.
    """
    return (
        f"read_csv({sql_string(path)}, columns = {{'line': 'VARCHAR'}}, header = false, "
        f"skip = {int(skip_first)}, delim = {sql_string(_RAW_DELIMITER)}, quote = '', "
        "escape = '', auto_detect = false, strict_mode = false, ignore_errors = true, "
        f"new_line = '\\n', null_padding = false, max_line_size = {MAX_LINE_BYTES}, "
        f"compression = {sql_string('gzip' if gzipped else 'none')}, "
        "parallel = true)"
    )


def _escaped(delimiter: str) -> str:
    """The delimiter in a pattern (RE2 and Python ``re`` alike)."""
    return {",": ",", "\t": r"\t"}[delimiter]


def _field_pattern(delimiter: str) -> str:
    """RE2 pattern of one field of the fixed dialect (quoted, or unquoted)."""
    d = _escaped(delimiter)
    return rf'(?:"(?:[^"\x00]|"")*"|[^{d}"\x00]*)'


def _line_pattern(delimiter: str, n: int) -> str:
    f = _field_pattern(delimiter)
    d = _escaped(delimiter)
    return f"{f}(?:{d}{f}){{{n - 1}}}" if n > 1 else f


def split_csv_line(line: str, delimiter: str, n: int | None = None) -> list[str | None] | None:
    """The fields of one line in the fixed dialect (unquoted), or None when it does not parse.

    The Python model of the SQL in :func:`csv_view_sql` (used for the header, and by tests).
    ``n``: the required number of fields (any when None).
    """
    f = _field_pattern(delimiter)
    d = _escaped(delimiter)
    if not re.fullmatch(f"{f}(?:{d}{f})*", line):
        return None
    fields = [m.group(1) for m in re.finditer(f"(?:^|{d})({f})", line)]
    if n is not None and len(fields) != n:
        return None
    return [_unquote(field) for field in fields]


def _unquote(field: str) -> str | None:
    if field.startswith('"'):
        return field[1:-1].replace('""', '"')
    return field or None


#: The line ends (``\n`` and ``\r`` bytes) of the gzip files :func:`check_gzip_stream`
#: read, by the file's identity ``(real path, size, mtime_ns, inode)``: the exact row
#: bound of :func:`dpselect.data.unit_partitions.text_rows` (:func:`gzip_line_ends`).
_GZIP_LINE_ENDS: dict[tuple[str, int, int, int], int] = {}
#: The most files remembered (the oldest is forgotten first).
_GZIP_REMEMBERED = 64
_GZIP_LOCK = threading.Lock()


def _file_identity(path: str | os.PathLike[str]) -> tuple[str, int, int, int]:
    """``(real path, size, mtime_ns, inode)``: a file changed or replaced has another."""
    found = os.stat(path)
    return os.path.realpath(path), found.st_size, found.st_mtime_ns, found.st_ino


def check_gzip_stream(path: Path) -> int:
    """Decompress the whole gzip file once; :class:`DataError` if it is corrupt or truncated.

    Run when the table is opened, before any budget is charged. DuckDB's reader fails on a
    truncated stream only while the query runs (after the charge), and does not check the
    CRC-32 of each member, so a flipped byte gave garbage lines silently. Whether a file is a
    valid gzip stream is a property of the file, not of any one person's line: adding or
    removing a line of the text gives another valid stream. Cost: one pass of zlib at
    about 300-500 MB/s of text.

    The same pass counts the text's line ends, the bytes ``\\n`` and ``\\r`` (the line rule
    of the module docstring: a file has at most that many lines plus one, so at most that
    many rows plus one), and remembers the count for :func:`gzip_line_ends` while the file
    is unchanged: the hash parts are then sized by the exact bound rather than by an
    estimate from the first MiB (:func:`dpselect.data.unit_partitions.text_rows`). Bytes
    only: no line is split or parsed, no value read; the count chooses only how many scans
    a plan makes, never a result.

    Parameters
    ----------
    path : pathlib.Path
        The ``.gz`` file.

    Returns
    -------
    int
        The line ends (``\\n`` and ``\\r`` bytes) of the decompressed text.

    Raises
    ------
    DataError
        The file is not a complete gzip stream (corrupt, truncated, unreadable).
    """
    ends = 0
    try:
        before = _file_identity(path)
        with gzip.open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                ends += chunk.count(b"\n")
                if b"\r" in chunk:  # a memchr: most files have none
                    ends += chunk.count(b"\r")
        after = _file_identity(path)
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise DataError(
            f"cannot read file {str(path)!r}: not a complete gzip stream ({exc}); "
            "nothing was charged"
        ) from None
    if before == after:  # not rewritten while it was read
        with _GZIP_LOCK:
            _GZIP_LINE_ENDS.pop(after, None)
            _GZIP_LINE_ENDS[after] = ends
            while len(_GZIP_LINE_ENDS) > _GZIP_REMEMBERED:
                del _GZIP_LINE_ENDS[next(iter(_GZIP_LINE_ENDS))]
    return ends


def gzip_line_ends(path: str | os.PathLike[str]) -> int | None:
    """The line ends :func:`check_gzip_stream` counted in ``path``, or ``None`` when it has
    not read the file as it is now (never read, or changed since). Never raises.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.gz`` file.

    Returns
    -------
    int or None
        The count of ``\\n`` and ``\\r`` bytes of its text, or ``None``.
    """
    try:
        identity = _file_identity(path)
    except (OSError, ValueError):
        return None
    with _GZIP_LOCK:
        return _GZIP_LINE_ENDS.get(identity)


def read_csv_header(path: Path, delimiter: str, gzipped: bool) -> list[str]:
    """The column names from the first line (public); :class:`DataError` if it does not parse.

    The first line ends at the first ``\\n`` or ``\\r`` (the line rule); a UTF-8 byte-order
    mark is dropped. An empty name becomes ``column<i>`` (as pandas' unnamed index column).

    Parameters
    ----------
    path : pathlib.Path
        The CSV or TSV file (one file, not a glob).
    delimiter : str
        The field delimiter: ``","`` (CSV) or ``"\\t"`` (TSV).
    gzipped : bool
        Whether the file is gzip-compressed.

    Returns
    -------
    list of str
        The column names, in order (``column<i>`` for an empty one, ``i`` from 0).

    Raises
    ------
    DataError
        The file cannot be read, or the header line is empty, too long, not UTF-8, does not
        parse in the fixed dialect, names more than :data:`MAX_COLUMNS` columns or one
        column twice.
    """
    opener = gzip.open if gzipped else open
    description = f"file {str(path)!r}"
    try:
        with opener(path, "rb") as handle:
            head = b""
            while len(head) <= MAX_LINE_BYTES:
                chunk = handle.read(65536)
                head += chunk
                if not chunk or re.search(rb"[\r\n]", head):
                    break
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise DataError(f"cannot read {description}: {exc}") from None
    first = re.split(rb"[\r\n]", head, maxsplit=1)[0]
    if len(first) > MAX_LINE_BYTES:
        raise DataError(f"{description}: the header line is longer than {MAX_LINE_BYTES} bytes")
    try:
        text = first.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        raise DataError(f"{description}: the header line is not UTF-8") from None
    if not text:
        raise DataError(f"{description} has no header line (the first line names the columns)")
    fields = split_csv_line(text, delimiter)
    if fields is None or _RAW_DELIMITER in text:
        raise DataError(
            f"{description}: the header line does not parse as "
            f"{'tab' if delimiter == chr(9) else 'comma'}-separated names with double quotes"
        )
    if len(fields) > MAX_COLUMNS:
        raise DataError(f"{description}: more than {MAX_COLUMNS} columns are not supported")
    names = [name if name else f"column{i}" for i, name in enumerate(fields)]
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise DataError(f"{description}: the header names the column {name!r} twice")
        seen.add(name)
    return names


def _typed(expression: str, column: str, schema: dict[str, str]) -> str:
    if column in schema and schema[column] != "VARCHAR":
        return read_value_sql(f"TRY_CAST({expression} AS {schema[column]})", schema[column])
    return expression


def csv_view_sql(
    path: str, gzipped: bool, delimiter: str, names: list[str], schema: dict[str, str]
) -> str:
    """SELECT of the CSV rows: each line parsed on its own (module docstring).

    A line is kept when it matches the whole dialect (RE2, linear time); field ``j`` is then
    the field matched right after the match of ``j`` fields and delimiters (the parse of a
    matching line is unique). Columns a query does not use are
    never extracted (DuckDB drops unused view columns).

    Parameters
    ----------
    path : str
        The file, or a glob of files sharing the header.
    gzipped : bool
        Whether the file is gzip-compressed.
    delimiter : str
        The field delimiter: ``","`` (CSV) or ``"\\t"`` (TSV).
    names : list of str
        The column names of the header (:func:`read_csv_header`); a line is a row only with
        exactly this many fields.
    schema : dict of str to str
        Column -> DuckDB type read by ``TRY_CAST`` (NaN read as NULL); columns absent or
        ``VARCHAR`` stay text. :mod:`dpselect.data.tables` passes only the types outside the
        declared text rule and applies that rule over the view.

    Returns
    -------
    str
        SQL of a ``SELECT`` with one column per name (the header line skipped).
    """
    n = len(names)
    f = _field_pattern(delimiter)
    d = _escaped(delimiter)
    line_pattern = sql_string(_line_pattern(delimiter, n))
    raw_fields, columns = [], []
    for j, name in enumerate(names):
        # Field j starts after the match of j fields and delimiters; both matches are found
        # without submatches (RE2's DFA: about 10x faster than a capture on long lines).
        rest = "line"
        if j:
            prefix = f"regexp_extract(line, {sql_string(f'^(?:{f}{d}){{{j}}}')}, 0)"
            rest = f"substr(line, length({prefix}) + 1)"
        raw_fields.append(f"regexp_extract({rest}, {sql_string('^' + f)}, 0) AS f{j}")
        value = (
            f"CASE WHEN starts_with(f{j}, '\"') THEN replace(substr(f{j}, 2, "
            f"length(f{j}) - 2), '\"\"', '\"') ELSE nullif(f{j}, '') END"
        )
        columns.append(f"{_typed(value, name, schema)} AS {quote_identifier(name)}")
    return (
        f"SELECT {', '.join(columns)} FROM (SELECT {', '.join(raw_fields)} "
        f"FROM {raw_lines_sql(path, gzipped, True)} "
        f"WHERE regexp_full_match(line, {line_pattern}))"
    )


def _json_string_key(text: str) -> str:
    """The key of a JSON string: its bytes, behind ``FF`` when it reads as JSON other than a
    string (a number, ``true``, ``null``, an array, an object)."""
    safe = f"CASE WHEN json_valid({text}) THEN {text} ELSE '\"\"' END"
    return (
        f"CASE WHEN json_type({safe}) <> 'VARCHAR' THEN '\\xFF'::BLOB || encode({text}) "
        f"ELSE encode({text}) END"
    )


def json_view_sql(
    path: str,
    gzipped: bool,
    array: bool,
    columns: dict[str, str],
    raw: dict[str, str] | None = None,
) -> str:
    """SELECT of the JSON rows: each line one object or no row (module docstring).

    ``columns``: name -> DuckDB type (``VARCHAR``: the value as text; others by
    ``TRY_CAST``: :mod:`dpselect.data.tables` passes the types of the declared text rule as
    ``VARCHAR`` and applies that rule over the view).
    ``array``: a ``.json`` file (leading ``[`` and trailing ``,`` / ``]`` removed per line).
    ``raw``: more columns, name -> key, each the privacy unit's key (injective, BLOB): a
    number, boolean, array or object is its JSON text (so the number ``17`` has the seed of
    the text ``17`` of a CSV and of the integer 17 of Parquet); a string is its UTF-8 bytes,
    behind the byte ``FF`` (never in UTF-8, nor in JSON text) when the string itself reads as
    such JSON text: the number ``1`` and the string ``"1"`` differ. JSON ``null`` and an
    absent key are NULL. No function here can fail on a row (``json_type`` sees only valid
    JSON, whatever order DuckDB evaluates the branches in).

    Parameters
    ----------
    path : str
        The file, or a glob of files.
    gzipped : bool
        Whether the file is gzip-compressed.
    array : bool
        ``True`` for a ``.json`` file (one record per line of an array), ``False`` for JSON
        lines.
    columns : dict of str to str
        Key (also the column's name) -> DuckDB type of the value read.
    raw : dict of str to str, optional
        Column name -> JSON key, for the privacy unit's injective BLOB key; ``None``: none.

    Returns
    -------
    str
        SQL of a ``SELECT`` with the columns of ``columns`` then those of ``raw`` (a single
        NULL column ``_`` when both are empty), one row per line holding a JSON object.
    """
    strip = r"regexp_extract(line, '^\s*\[?\s*(.*?)\s*[,\]]?\s*$', 1)"
    record = strip if array else "line"
    selected = []
    for name, type_name in columns.items():
        pointer = sql_string("/" + name.replace("~", "~0").replace("/", "~1"))
        value = _typed(f"json_extract_string(o, {pointer})", name, {name: type_name})
        selected.append(f"{value} AS {quote_identifier(name)}")
    for name, key in (raw or {}).items():
        pointer = sql_string("/" + key.replace("~", "~0").replace("/", "~1"))
        selected.append(
            f"CASE json_type(o, {pointer}) WHEN 'NULL' THEN NULL WHEN 'VARCHAR' THEN "
            f"{_json_string_key(f'json_extract_string(o, {pointer})')} "
            f"ELSE encode(CAST(json_extract(o, {pointer}) AS VARCHAR)) END "
            f"AS {quote_identifier(name)}"
        )
    if not selected:
        selected.append("NULL::VARCHAR AS _")
    # ``o``: the record when it is valid JSON, else NULL, so that no JSON function ever sees
    # an invalid record, whatever order DuckDB evaluates the filter and the columns in.
    return (
        f"SELECT {', '.join(selected)} FROM (SELECT CASE WHEN json_valid(r) THEN r END AS o "
        f"FROM (SELECT {record} AS r FROM {raw_lines_sql(path, gzipped, False)})) "
        "WHERE json_type(o) = 'OBJECT'"
    )
