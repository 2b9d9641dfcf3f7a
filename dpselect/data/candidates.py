"""Public candidate lists: from a Python sequence or a text file, one candidate per line.

The candidate list must not depend on the private data (seed 003's warning); it is public
input, so errors about it (missing file, empty list, None, duplicates) may be raised.

Lists of 10^5 candidates and more are common (every product, every site): a list of strings
is converted once to an Arrow array (when pyarrow is installed), which checks the type and is
what the score query scans; other lists are checked in plain Python.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.errors import ParameterError

__all__ = ["CandidateList", "as_arrow", "load_candidates"]


#: Shorter lists skip pyarrow: importing it (and pandas, which pyarrow imports on its first
#: array when installed) costs more than it saves; they go to DuckDB as a query parameter.
ARROW_MIN_CANDIDATES = 1024


class CandidateList(list):  # type: ignore[type-arg]
    """A validated candidate list; ``arrow`` holds it as a pyarrow array when one was built."""

    arrow: Any = None


def load_candidates(candidates: Any, argument: str = "candidates") -> list[Any]:
    """The candidate list: a sequence as given, or the non-empty lines of a text file."""
    if isinstance(candidates, (str, os.PathLike)):
        path = Path(candidates)
        if not path.is_file():
            raise ParameterError(f"{argument} file {str(path)!r} does not exist")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ParameterError(f"{argument} file {str(path)!r} cannot be read: {exc}") from None
        values = CandidateList(s for s in map(str.strip, text.splitlines()) if s)
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
        if len(set(values)) != len(values):
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


def as_arrow(values: Sequence[Any]) -> Any:
    """The candidates as one typed pyarrow array, or ``None`` (no pyarrow, or mixed types).

    Only str, int (no bool) and float lists are converted: those are what DuckDB then casts to
    the column's type, exactly as it would cast the same Python values.
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
