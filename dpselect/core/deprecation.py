"""Deprecated spellings: one warning text for a renamed parameter or value (issue 23)."""

from __future__ import annotations

import warnings

__all__ = ["warn_renamed"]


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
