"""What the paths with values from the data release: :class:`KeysResult`, the ranking of
released values (:func:`rank_released`) and the words their statements use.

Shared by :mod:`dpselect.recipes.unknown_domain` (partition selection, top-k without a
candidate list), :mod:`dpselect.recipes.grouped` and :mod:`dpselect.recipes.grouped_keys`
(the same per group). The choices and calibrations they run are planned in
:mod:`dpselect.planning.unknown_domain_choice`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..mechanisms.histogram_top_k import rank_noisy_counts
from ..mechanisms.partition_selection import ordered_values
from ..sampling.source import RandomSource, resolve_source
from ._common import jsonable
from .result import Result

__all__ = ["KeysResult", "Progress", "counted_in_words", "ordinal", "rank_released"]

Progress = Callable[[float], None] | None


@dataclass(frozen=True)
class KeysResult(Result):
    """The values that may be published, what it cost, and how likely a value is shown.

    Attributes
    ----------
    values : list
        The released values, in a fixed order that does not depend on their counts (sorted
        when comparable, else by type name and ``repr``); empty when none was released.
    mechanism : str
        The partition selection that ran, cited by name.
    epsilon : float
        The ``epsilon`` of the release's ``(epsilon, delta)`` guarantee (what the ledger was
        charged; in a :class:`~dpselect.recipes.grouping.GroupedResult`, one group's).
    delta : float
        The ``delta`` of that guarantee.
    accuracy : str
        How likely a value is released: the count (of persons or rows) above which it is
        released with probability at least 95%, and the ``delta`` bound for a value one person
        holds.
    ledger : str or None
        The path of the ledger charged for this release; ``None`` without a ledger.
    parameters : dict
        The query's public parameters (``column``, ``epsilon``, ``delta``, ``privacy_unit``,
        ``max_contributions``, ``mechanism``, the rule's threshold or scale, ...); empty for
        the groups of a grouped release.
    """

    values: list[Any]
    mechanism: str
    epsilon: float
    delta: float
    accuracy: str
    ledger: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)

    def _dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        out = asdict(self)
        out["values"] = [jsonable(v) for v in self.values]
        return out

    def _rows(self) -> list[dict[str, Any]]:
        return [{"value": v} for v in self.to_dict()["values"]]

    def _text(self) -> str:
        return "\n".join(
            [
                *(str(v) for v in self.values),
                f"{len(self.values)} values released",
                f"mechanism: {self.mechanism}",
                f"privacy cost: epsilon = {self.epsilon:.6g}, delta = {self.delta:.3g}",
                self.accuracy,
            ]
        )


def rank_released(kept: dict[Any, int], k: int, source: RandomSource | None = None) -> list[Any]:
    """The ``k`` released values with the largest noisy counts, best first.

    Equal noisy counts are ordered uniformly at random with fresh bits of ``source`` (a fixed
    order, e.g. by value, favours the same values at every tie: on airports by state it put the
    11th state, IL with 88 airports, before the 10th, MN with 89, whenever their noisy counts
    tied). Post-processing of the thresholding's output: no privacy cost.

    Parameters
    ----------
    kept : dict
        The released values and their noisy counts (the thresholding's output).
    k : int
        How many to return.
    source : RandomSource, optional
        The randomness that breaks ties (``None``: the private default; a seeded source for
        tests only).

    Returns
    -------
    list
        At most ``k`` values, the largest noisy count first.
    """
    values = ordered_values(kept)
    noisy = np.array([kept[v] for v in values], dtype=object)
    order = rank_noisy_counts(noisy, min(k, len(values)), resolve_source(source))
    return [values[int(i)] for i in order]


def counted_in_words(count: int, rows_cap: int) -> str:
    """A value's count in words: persons, or (``max_rows_per_value > 1``) rows.

    Parameters
    ----------
    count : int
        The count (persons, or rows with ``rows_cap > 1``).
    rows_cap : int
        ``max_rows_per_value``: 1 counts persons, more counts rows.

    Returns
    -------
    str
        The phrase, e.g. ``"held by at least 12 persons (after contribution bounding)"``.
    """
    if rows_cap == 1:
        return f"held by at least {count} persons (after contribution bounding)"
    return (
        f"with at least {count} rows (at most {rows_cap} per person and value, after "
        "contribution bounding)"
    )


def ordinal(n: int) -> str:
    """``n`` as an English ordinal: ``1st``, ``2nd``, ``3rd``, ``11th``, ``21st``, ...

    Parameters
    ----------
    n : int
        A non-negative integer.

    Returns
    -------
    str
        The number with its suffix.
    """
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
