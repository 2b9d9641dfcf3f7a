"""The mechanisms ``top_k(mechanism=...)`` accepts, by name, and their check.

Shared by :mod:`dpselect.recipes.top_k` and :mod:`dpselect.recipes.grouped` (the same names
per group).
"""

from __future__ import annotations

from typing import Any, Literal

from ..core.errors import ParameterError
from ..mechanisms.choice import METHOD_NAMES

__all__ = ["MECHANISMS", "Mechanism", "check_mechanism"]

Mechanism = Literal[
    "auto",
    "gumbel",
    "permute_and_flip",
    "laplace",
    "laplace_histogram",
    "gaussian_histogram",
    "joint",
]
#: The mechanisms ``mechanism=`` accepts, cited by name. "auto" picks one by public facts.
MECHANISMS: dict[str, str] = {
    "auto": "the most accurate for (k, epsilon, delta, candidates, max_contributions)",
    "gumbel": METHOD_NAMES["gumbel"],
    "permute_and_flip": METHOD_NAMES["permute_and_flip"],
    "laplace": METHOD_NAMES["laplace"],
    "laplace_histogram": METHOD_NAMES["laplace_histogram"],
    "gaussian_histogram": METHOD_NAMES["gaussian_histogram"],
    "joint": METHOD_NAMES["joint"],
}


def check_mechanism(mechanism: Any) -> Mechanism:
    """``mechanism`` checked against :data:`MECHANISMS` (``None``: ``"auto"``).

    Parameters
    ----------
    mechanism : str or None
        A key of :data:`MECHANISMS`, or ``None``.

    Returns
    -------
    str
        The name as given (``"auto"`` for ``None``).
    """
    if mechanism is None:
        return "auto"
    if mechanism not in MECHANISMS:
        raise ParameterError(f"mechanism must be one of {sorted(MECHANISMS)}, got {mechanism!r}")
    return mechanism  # type: ignore[no-any-return]
