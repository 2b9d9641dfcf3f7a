"""Examples per privacy unit: each unit keeps at most ``r`` of its examples (in memory).

The in-memory counterpart, for labelled examples, of the keyed bounding order of
:mod:`dpselect.data.rules` (docs/contribution_bounding.md): hypothesis selection with a
privacy unit (:func:`dpselect.recipes.hypothesis.select_hypothesis`) counts mistakes only on
the examples each unit keeps.

**The rule.** Units are keyed injectively by :func:`~dpselect.data.unit_keys.object_unit_key`
(``1``, ``1.0``, ``True`` and ``"1"`` are four units; a missing unit, ``None`` or NaN, keeps
nothing). Each example comes with its *encoding*, bytes that are a function of that example
alone (the caller's choice; the recipe uses the example's mistake vector). A unit holding at
most ``r`` examples keeps them all. A unit ``u`` holding more sorts its examples by ``(key,
encoding)`` with ``key = bounding_key(salt, hex(u), value_code(salt, hex(encoding)))`` (the
rules' md5 seed and code, and the two ``fmix32`` rounds keyed by the unit's seed) and keeps
the first ``r``. Two examples tie only when their encodings are equal, so the kept *multiset of
encodings* is a function of the salt, the unit's key and the multiset of that unit's own
encodings: it does not depend on any other unit, nor on the order of the rows.

Nothing here reads anything but the arguments, and nothing raises on their content.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .rules import M32, fmix32, unit_seed, value_code
from .unit_keys import object_unit_key

__all__ = ["example_unit_keys", "kept_examples"]


def example_unit_keys(units: Sequence[Any]) -> list[bytes | None]:
    """The injective key of each example's unit (:func:`object_unit_key`; ``None``: no unit).

    Never raises: a value without an injective encoding is no unit, by a rule of its own.

    Parameters
    ----------
    units : sequence
        Each example's privacy unit (any Python value, e.g. a person's id).

    Returns
    -------
    list of bytes or None
        The unit key of each example, in order; ``None`` for a missing unit (``None``, NaN)
        or a value without an injective encoding (that example is kept by no unit).
    """
    return [object_unit_key(unit) for unit in units]


def kept_examples(
    unit_keys: Sequence[bytes | None], encodings: Sequence[bytes], max_rows: int, salt: int
) -> npt.NDArray[np.int64]:
    """The indices (sorted) of the examples their units keep, by the rule of the module
    docstring: at most ``max_rows`` per unit, none for a missing unit.

    Parameters
    ----------
    unit_keys : sequence of bytes or None
        Each example's unit key (:func:`example_unit_keys`).
    encodings : sequence of bytes
        Each example's encoding, a function of that example alone (same length).
    max_rows : int
        ``r >= 1``, the most examples a unit keeps.
    salt : int
        The per-query salt, drawn from the randomness source independently of the data.

    Returns
    -------
    numpy.ndarray
        The kept indices, increasing.
    """
    groups: dict[bytes, list[int]] = {}
    for index, key in enumerate(unit_keys):
        if key is not None:
            groups.setdefault(key, []).append(index)
    kept: list[int] = []
    codes: dict[bytes, int] = {}  # one md5 per distinct encoding
    for key, members in groups.items():
        if len(members) <= max_rows:
            kept.extend(members)
            continue
        seed = unit_seed(salt, key.hex())
        low, high = seed & M32, seed >> 32
        ranked = []
        for index in members:
            encoding = encodings[index]
            code = codes.get(encoding)
            if code is None:
                code = codes[encoding] = value_code(salt, encoding.hex())
            ranked.append((fmix32(fmix32(code ^ low) ^ high), encoding, index))
        ranked.sort(key=lambda item: (item[0], item[1]))  # ties: equal encodings only
        kept.extend(index for _, _, index in ranked[:max_rows])
    return np.asarray(sorted(kept), dtype=np.int64)
