"""The range of a release's epsilon, checked where a user's call begins.

Every recipe takes a total ``epsilon`` in ``[2^-20, 2^20]`` (about ``9.5e-07`` to
``1.05e+06``) and refuses any other, naming the argument, before anything is read or
charged. Outside the range no release means anything (at ``2^-20`` the noise is a million
times the sensitivity; at ``2^20`` a likelihood ratio of ``e^1048576`` protects nobody), and
the exact samplers' own ranges (for instance the tree's Laplace scale in ``[2^-64, 2^52]``,
the quantile methods' floor of ``2^-31`` per row, the partition-selection table) hold for
every share the recipes split a total in range into. So a call in range is planned whole
before its charge, and a call out of range never reaches a stage that could fail after it
(docs/accounting.md, "The range of epsilon").

The stages of one release (a recipe that runs other recipes on shares of its epsilon, after
its one charge) are not checked again: :func:`stages_of_a_release` marks them, around the
release that :func:`dpselect.recipes.release.charge_then` runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from fractions import Fraction
from typing import Any, TypeVar

from ..core.errors import ParameterError

__all__ = [
    "EPSILON_RANGE", "check_epsilon_range", "in_a_stage", "run_as_stages", "stages_of_a_release",
]  # fmt: skip

#: The total epsilon a recipe accepts: ``[2^-20, 2^20]``.
EPSILON_RANGE = (Fraction(1, 1 << 20), Fraction(1 << 20))

_IN_RELEASE: ContextVar[bool] = ContextVar("dpselect_in_release", default=False)

T = TypeVar("T")


def check_epsilon_range(epsilon: Any, name: str = "epsilon") -> None:
    """Refuse a total ``epsilon`` (already a checked finite number > 0) outside
    :data:`EPSILON_RANGE`, naming ``name``; a stage of a release is not checked (its share
    comes from a total in range).

    Parameters
    ----------
    epsilon : int, float or Fraction
        The total epsilon a user gave, already checked finite and positive.
    name : str, default "epsilon"
        The argument's name in the error message.
    """
    if _IN_RELEASE.get():
        return
    lo, hi = EPSILON_RANGE
    value = Fraction(epsilon)
    if not lo <= value <= hi:
        raise ParameterError(
            f"{name} must lie in [2^-20, 2^20] (about 9.5e-07 to 1.05e+06), got {float(value):g}"
        )


def in_a_stage() -> bool:
    """Whether the current call is a stage of a release (:func:`stages_of_a_release`).

    Returns
    -------
    bool
        ``True`` inside a release's stages (its charge is the enclosing release's).
    """
    return _IN_RELEASE.get()


@contextmanager
def stages_of_a_release() -> Iterator[None]:
    """Everything run inside is a stage of a release already checked and charged."""
    token = _IN_RELEASE.set(True)
    try:
        yield
    finally:
        _IN_RELEASE.reset(token)


def run_as_stages(release: Callable[[], T]) -> T:
    """``release()``, its inner recipe calls marked as stages (:func:`stages_of_a_release`).

    Parameters
    ----------
    release : callable
        The release, already checked and charged.

    Returns
    -------
    object
        What ``release()`` returns.
    """
    with stages_of_a_release():
        return release()
