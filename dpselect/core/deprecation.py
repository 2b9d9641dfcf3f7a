"""Deprecated spellings: one warning text for a renamed parameter or value (issue 23)."""

from __future__ import annotations

import warnings
from typing import Any, TypeVar

__all__ = ["renamed_keyword", "warn_renamed"]

T = TypeVar("T")


def warn_renamed(old: str, new: str, stacklevel: int = 3) -> None:
    """Warn that ``old`` is a deprecated spelling of ``new`` (which behaves identically).

    Parameters
    ----------
    old, new : str
        The deprecated spelling and its replacement, as the user writes them.
    stacklevel : int, default 3
        Passed to :func:`warnings.warn` (3: the caller of the function that checks).
    """
    warnings.warn(
        f"{old} is deprecated: use {new} (the same behaviour)",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def renamed_keyword(
    new_name: str, new: T, old_name: str, old: Any, default: Any, stacklevel: int = 4
) -> T:
    """The value of a keyword renamed from ``old_name`` to ``new_name``.

    ``old`` is ``None`` when the deprecated spelling was not given; otherwise it warns (through
    :func:`warn_renamed`) and is returned, unless ``new`` differs from its ``default`` too.

    Parameters
    ----------
    new_name, old_name : str
        The keyword's name and its deprecated spelling.
    new, old : object
        The values given for each (``old`` is ``None`` when not given).
    default : object
        The default of ``new``: any other value counts as given.
    stacklevel : int, default 4
        Passed to :func:`warn_renamed` (4: the caller of the function that calls this one).

    Returns
    -------
    object
        The value to use.

    Raises
    ------
    ParameterError
        Both spellings were given.
    """
    if old is None:
        return new
    warn_renamed(f"{old_name}=", f"{new_name}=", stacklevel=stacklevel)
    if new is not default and new != default:
        from .errors import ParameterError

        raise ParameterError(f"give {new_name} or its deprecated form {old_name}, not both")
    return old  # type: ignore[no-any-return]
