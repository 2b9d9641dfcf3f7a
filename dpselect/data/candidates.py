"""Public candidate lists: from a Python sequence or a text file, one candidate per line.

The candidate list must not depend on the private data (seed 003's warning); it is public
input, so errors about it (missing file, empty list, None, duplicates) may be raised, and notes
about it (a first line that looks like a header: :func:`header_note`) may be printed.

A file is read as text, one candidate per line: UTF-8, or UTF-16/UTF-32 when it starts with
their byte-order mark; a leading UTF-8 byte-order mark (Excel's "CSV UTF-8") is dropped, so
that the first candidate matches its value. CSV, TSV and JSON files are read the
same way, one candidate per line, never parsed into fields.

Lists of 10^5 candidates and more are common (every product, every site): a list of strings
is converted once to an Arrow array (when pyarrow is installed), which checks the type, finds
repeated values without a Python set (:func:`_arrow_repeats`) and is what the score query
scans; other lists are checked in plain Python.
"""

from __future__ import annotations

import codecs
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import ParameterError

if TYPE_CHECKING:
    from .engine import Engine

__all__ = [
    "CandidateList",
    "as_arrow",
    "candidates_note",
    "header_note",
    "load_candidates",
    "numbers_as_text_note",
]


#: Shorter lists skip pyarrow: importing it (and pandas, which pyarrow imports on its first
#: array when installed) costs more than it saves; they go to DuckDB as a query parameter.
ARROW_MIN_CANDIDATES = 1024


class CandidateList(list):  # type: ignore[type-arg]
    """A validated candidate list; ``arrow`` holds it as a pyarrow array when one was built,
    ``path`` the file it was read from (``None``: given as values)."""

    arrow: Any = None
    path: str | None = None


#: Byte-order marks and the codec that decodes the text after them (UTF-32 first: its
#: little-endian mark starts with UTF-16's).
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def load_candidates(candidates: Any, argument: str = "candidates") -> list[Any]:
    """The candidate list: a sequence as given, or the non-empty lines of a text file.

    Parameters
    ----------
    candidates : sequence or str or os.PathLike
        The values, or a text file holding one per line (stripped; blank lines skipped; a
        byte-order mark decides the encoding and is dropped, else UTF-8).
    argument : str
        The argument's name in error messages.

    Returns
    -------
    CandidateList
        The distinct candidates, in order.

    Raises
    ------
    ParameterError
        The file is missing or unreadable, not text, or the list is empty, holds ``None`` or
        repeats a value.
    """
    if isinstance(candidates, (str, os.PathLike)):
        path = Path(candidates)
        if not path.is_file():
            raise ParameterError(f"{argument} file {str(path)!r} does not exist")
        values = CandidateList(_read_lines(path, argument))
        values.path = str(path)
    elif isinstance(candidates, Sequence) and not isinstance(candidates, bytes):
        values = CandidateList(candidates)
    elif type(candidates).__module__.split(".")[0] in ("numpy", "pandas", "polars", "pyarrow"):
        values = CandidateList(candidates.tolist() if hasattr(candidates, "tolist") else candidates)
    else:
        raise ParameterError(
            f"{argument} must be a list of values or a path to a text file, "
            f"got {type(candidates).__name__}"
        )
    if not values:
        raise ParameterError(f"{argument} must not be empty")
    out = values
    out.arrow = _arrow_strings(values)
    if out.arrow is not None:  # all str (the usual case): the type check came with it
        if out.arrow.null_count:
            raise ParameterError(f"{argument} must not contain None")
        if _arrow_repeats(out.arrow):
            raise ParameterError(f"{argument} must be distinct values")
        return out
    kinds = set(map(type, values))
    if type(None) in kinds:
        raise ParameterError(f"{argument} must not contain None")
    # One type: values compare as themselves. Mixed types: by repr, so that 1, 1.0 and True
    # stay distinct candidates.
    try:
        distinct = len(set(values)) if len(kinds) == 1 else len(set(map(repr, values)))
    except TypeError:  # unhashable values
        distinct = len(set(map(repr, values)))
    if distinct != len(values):
        raise ParameterError(f"{argument} must be distinct values")
    return out


def _read_lines(path: Path, argument: str) -> list[str]:
    """The stripped, non-empty lines of ``path``, decoded by its byte-order mark (or UTF-8)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ParameterError(f"{argument} file {str(path)!r} cannot be read: {exc}") from None
    encoding, skip = "utf-8", 0
    for bom, codec in _BOMS:
        if raw.startswith(bom):
            encoding, skip = codec, len(bom)
            break
    try:
        text = raw[skip:].decode(encoding)
    except UnicodeDecodeError as exc:
        raise ParameterError(
            f"{argument} file {str(path)!r} is not {encoding.upper()} text ({exc.reason} at "
            f"byte {exc.start + skip}): save it as UTF-8"
        ) from None
    if "\0" in text:  # UTF-16 without a byte-order mark decodes as UTF-8 with NULs
        raise ParameterError(
            f"{argument} file {str(path)!r} holds NUL characters (UTF-16 without a "
            "byte-order mark?): save it as UTF-8"
        )
    return [line for line in map(str.strip, text.splitlines()) if line]


def header_note(candidates: Sequence[Any], column: str) -> str | None:
    """A note when the first candidate is the ranked column's name (a header line?), or None.

    The candidate is kept (the list is public and the user decides); the note depends only on
    the list and the column's name, never on the data.

    Parameters
    ----------
    candidates : sequence
        The loaded candidates (:func:`load_candidates`).
    column : str
        The name of the ranked column.

    Returns
    -------
    str or None
        One sentence to show with the result, or ``None``.
    """
    if not candidates:
        return None
    first = candidates[0]
    if not isinstance(first, str) or first.casefold() != column.casefold():
        return None
    path = getattr(candidates, "path", None)
    where = "the first candidate" if path is None else f"the first line of {path!r}"
    return (
        f"note: {where} is {first!r}, the name of the ranked column: a header line? It was "
        "ranked as a candidate; remove it from the list if it is not one"
    )


#: A decimal number as people write it (no "nan", "inf", "1_000" or blanks, which Python's
#: ``float`` also reads).
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def numbers_as_text_note(candidates: Sequence[Any], column: str, table: Engine) -> str | None:
    """A note when every candidate is text that reads as a number and the column is untyped
    text (CSV/JSON outside the schema), or None.

    Text is matched as text: ``"3.0"`` never matches a row ``3``, and every score
    is then 0 while the accuracy line reads as a promise. The note depends only on the list,
    the column's name and the schema (``table.column_type_known``, the column's type): public
    facts, never on the rows.

    Parameters
    ----------
    candidates : sequence
        The loaded candidates (:func:`load_candidates`).
    column : str
        The name of the ranked column.
    table : Engine
        The opened data (:class:`dpselect.data.engine.Engine`).

    Returns
    -------
    str or None
        One sentence to show with the result, or ``None``.
    """
    kind = str(table.columns.get(column, "")).upper()
    if table.column_type_known(column) or not kind.startswith("VARCHAR"):
        return None
    if not candidates or not all(
        isinstance(c, str) and _DECIMAL.fullmatch(c) is not None for c in candidates
    ):
        return None
    first = candidates[0]
    return (
        f"note: column {column!r} is text (CSV/JSON columns have no type) and every candidate "
        f"reads as a number, but text is matched as text: {first!r} matches only rows spelled "
        f"exactly {first}; to match by value, declare the type: --schema {column}:DOUBLE "
        f"(Python: schema={{{column!r}: 'DOUBLE'}})"
    )


def candidates_note(candidates: Sequence[Any], column: str, table: Engine) -> str | None:
    """:func:`header_note` and :func:`numbers_as_text_note`, one per line, or None.

    Parameters
    ----------
    candidates : sequence
        The loaded candidates (:func:`load_candidates`).
    column : str
        The name of the ranked column.
    table : Engine
        The opened data (:class:`dpselect.data.engine.Engine`); only its schema is read.

    Returns
    -------
    str or None
        The notes that apply, joined by line breaks, or ``None`` when neither does.
    """
    notes = [header_note(candidates, column), numbers_as_text_note(candidates, column, table)]
    shown = [note for note in notes if note is not None]
    return "\n".join(shown) if shown else None


def _arrow_strings(values: list[Any]) -> Any:
    """``values`` as a pyarrow string array when they are all str (or None), else None.

    One pass in C that also checks the type (about 3x faster than a Python type scan).
    """
    if len(values) < ARROW_MIN_CANDIDATES:
        return None
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is optional
        return None
    if not isinstance(values[0], str):
        return None
    try:
        return pa.array(values, type=pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None


def _arrow_repeats(array: Any) -> bool:
    """Whether a pyarrow string array without nulls repeats a value.

    Arrow sorts the positions (one int64 each), and neighbours in that order are compared a
    slice of :data:`_REPEAT_SLICE` at a time: no Python set of the strings and no sorted copy
    of them (10^7 candidates: a set took 5 s and 384 MiB, this about 2 s and 117 MiB). Two
    Python strings are equal exactly when their UTF-8 bytes are, which Arrow compares: the
    answer is the set's.
    """
    import pyarrow.compute as pc

    order = pc.sort_indices(array)
    n = len(array)
    for start in range(0, n - 1, _REPEAT_SLICE):
        run = array.take(order[start : start + _REPEAT_SLICE + 1])
        if pc.any(pc.equal(run[1:], run[:-1])).as_py():
            return True
    return False


#: Sorted neighbours compared per slice by :func:`_arrow_repeats` (a few MB of strings).
_REPEAT_SLICE = 1 << 20


def as_arrow(values: Sequence[Any]) -> Any:
    """The candidates as one typed pyarrow array, or ``None`` (no pyarrow, or mixed types).

    Only str, int (no bool) and float lists are converted: those are what DuckDB then casts to
    the column's type, exactly as it would cast the same Python values.

    Parameters
    ----------
    values : sequence
        The candidates; a :class:`CandidateList` whose ``arrow`` array was already built
        returns that array.

    Returns
    -------
    pyarrow.Array or None
        A ``string``, ``int64`` or ``float64`` array of the values, in order; ``None`` for
        fewer than :data:`ARROW_MIN_CANDIDATES` values (not already built), without
        pyarrow, for mixed or other types, or ints beyond int64.
    """
    built = getattr(values, "arrow", None)
    if built is not None:
        return built
    if len(values) < ARROW_MIN_CANDIDATES:
        return None
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is optional
        return None
    kinds = set(map(type, values))
    arrow_type = {str: pa.string(), int: pa.int64(), float: pa.float64()}.get(
        next(iter(kinds)) if len(kinds) == 1 else type(None)
    )
    if arrow_type is None:
        return None
    try:
        return pa.array(values, type=arrow_type)
    except (pa.ArrowInvalid, OverflowError):  # ints beyond int64
        return None
