"""Deprecated spellings: one warning text for a renamed parameter or value."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar, cast

__all__ = ["renamed_keyword", "renamed_parameters", "warn_renamed"]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


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


def renamed_parameters(**renames: str) -> Callable[[F], F]:
    """A decorator: each ``old=new`` in ``renames`` accepts the keyword ``old`` as a deprecated
    spelling of the parameter ``new`` (it warns through :func:`warn_renamed`; giving both
    raises :class:`~dpselect.core.errors.ParameterError`). For parameters that are positional
    and required, where :func:`renamed_keyword` cannot tell "not given" from a default.

    Parameters
    ----------
    **renames : str
        Deprecated keyword -> the parameter's name.

    Returns
    -------
    callable
        The decorator; the wrapped function keeps its signature (``functools.wraps``).
    """

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in renames.items():
                if old in kwargs:
                    if new in kwargs:
                        from .errors import ParameterError

                        raise ParameterError(f"give {new} or its deprecated form {old}, not both")
                    warn_renamed(f"{old}=", f"{new}=", stacklevel=3)
                    kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return cast(F, wrapper)

    return decorate
