"""Public candidate lists: from a Python sequence or a text file, one candidate per line.

The candidate list must not depend on the private data (seed 003's warning); it is public
input, so errors about it (missing file, empty list, duplicates) may be raised.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.errors import ParameterError

__all__ = ["load_candidates"]


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
        values: list[Any] = [line.strip() for line in text.splitlines() if line.strip()]
    elif isinstance(candidates, Sequence) and not isinstance(candidates, bytes):
        values = list(candidates)
    else:
        raise ParameterError(
            f"{argument} must be a list of values or a path to a text file, "
            f"got {type(candidates).__name__}"
        )
    if not values:
        raise ParameterError(f"{argument} must not be empty")
    if any(v is None for v in values):
        raise ParameterError(f"{argument} must not contain None")
    if len(set(map(repr, values))) != len(values):
        raise ParameterError(f"{argument} must be distinct values")
    return values
