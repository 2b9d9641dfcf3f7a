"""Groups found in the data: what one scan returns when the groups of a grouped release are
not a public list but are selected privately (docs/grouped_releases.md, "Private groups").

The rule (docs/contribution_bounding.md, "Groups per unit"; Python reference
:func:`dpselect.data.rules.kept_found_groups`): every non-NULL value of ``by`` is a group,
coded as values are on the unknown-domain path (:func:`~dpselect.data.rules.value_code` of
the group salt, tag ``g``) and ranked in the engine's order of values; each unit keeps the
``max_groups`` groups of smallest (:func:`~dpselect.data.rules.bounding_key` of
``(group_salt, unit, code)``, rank) among the groups of its rows, then in each kept group the
ungrouped rule (keyed by ``salt``). The units keeping a group are its *persons*: the score of
the group selection. A unit adds 1 to the persons of at most ``max_groups`` groups, so the
selection's sensitivity is L-infinity 1, L0 ``max_groups``; the per-group scores are those
of the public-list rule. Both come from the same kept groups, so the release reads the data
once.

Privacy
-------
What a unit keeps reads only its own rows and the two salts: the code of a group is a
function of the group's value alone, and the rank only breaks ties between two groups of
equal key, in the order of their values (a fact of the two values, not of the data). Adding
or removing one unit therefore changes the persons of at most ``max_groups`` groups by 1
each and, in each of them, one summand of the ungrouped scores.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

__all__ = ["DiscoveredGroups", "discovered_from_rows"]


@dataclass(frozen=True)
class DiscoveredGroups:
    """The groups a scan found, with what each unit kept in them (module docstring).

    Attributes
    ----------
    groups : list
        The groups some unit keeps, in the engine's order of the ``by`` values.
    persons : numpy.ndarray of int64
        For each group, the units keeping it (without a privacy unit: its rows).
    values : list of list of (value, int) or None
        Value mode: each group's values with their bounded counts, largest first, ties by
        value, at most the ``limit`` asked for.
    cells : tuple of numpy.ndarray of int64 or None
        Candidate mode: the nonzero ``(group index, candidate position, score)`` cells,
        sorted by group index then candidate.
    numbers : list of numpy.ndarray of float64 or None
        Numbers (quantiles): each group's kept numbers, sorted.
    """

    groups: list[Any]
    persons: npt.NDArray[np.int64]
    values: list[list[tuple[Any, int]]] | None = None
    cells: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]] | None = None
    numbers: list[npt.NDArray[np.float64]] | None = None

    def counts(self) -> list[tuple[Any, int]]:
        """``[(group, persons)]``: the input of the group selection."""
        return [(g, int(n)) for g, n in zip(self.groups, self.persons, strict=True)]


def discovered_from_rows(
    rows: Iterable[tuple[Any, Any, Any, int, int]],
    kind: Literal["values", "cells", "numbers"],
    keep_items: bool = True,
) -> DiscoveredGroups:
    """The :class:`DiscoveredGroups` of an engine's result rows ``(group key, group, item,
    n, persons)``, sorted by group key (then by the item order of ``kind``): ``values`` lists
    ``(value, n)`` per group (``keep_items=False``: the groups and persons only, for a limit
    of 0), ``cells`` the candidate cells, ``numbers`` each number repeated ``n`` times.

    Parameters
    ----------
    rows : iterable of tuple
        ``(group key, group, item, n, persons)``, already sorted by group key (rows of one
        group are consecutive; a new key starts a new group). The group key is the group's
        index in the engine's order, ``group`` its value, ``item`` a value, a candidate
        position or a number (by ``kind``), ``n`` the item's bounded count and ``persons``
        the group's persons (read from its first row).
    kind : {"values", "cells", "numbers"}
        What the items are: values with their counts, candidate positions with their scores,
        or numbers kept ``n`` times.
    keep_items : bool, default True
        ``False``: the items are dropped (``values`` is a list of empty lists); used for
        ``kind="values"`` with a limit of 0.

    Returns
    -------
    DiscoveredGroups
        ``groups`` and ``persons`` in the order of the rows, with ``values``, ``cells`` or
        ``numbers`` set by ``kind``.
    """
    groups: list[Any] = []
    persons: list[int] = []
    items: list[list[tuple[Any, int]]] = []
    g_idx: list[int] = []
    last: Any = None
    for key, group, item, n, p in rows:
        if not groups or key != last:
            last = key
            groups.append(group)
            persons.append(int(p))
            items.append([])
        if keep_items:
            items[-1].append((item, int(n)))
        g_idx.append(len(groups) - 1)
    people = np.asarray(persons, dtype=np.int64)
    if kind == "values":
        return DiscoveredGroups(groups, people, values=items)
    if kind == "numbers":
        numbers = [
            np.repeat(np.asarray([float(x) for x, _ in group], dtype=np.float64),
                      np.asarray([n for _, n in group], dtype=np.int64))
            for group in items
        ]  # fmt: skip
        return DiscoveredGroups(groups, people, numbers=numbers)
    flat = [pair for group in items for pair in group]
    cells = (
        np.asarray(g_idx, dtype=np.int64),
        np.asarray([i for i, _ in flat], dtype=np.int64),
        np.asarray([n for _, n in flat], dtype=np.int64),
    )
    return DiscoveredGroups(groups, people, cells=cells)
