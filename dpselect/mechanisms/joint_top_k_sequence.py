"""The sequence of the joint exponential mechanism for top-k, given its error level.

Step 3 of the module docstring of :mod:`dpselect.mechanisms.joint_top_k`: the first position
whose error equals ``E`` by its count of sequences, then each position uniformly among its
set minus the earlier picks (exact uniform choices), and the candidates at the drawn ranks.
"""

from __future__ import annotations

import bisect
from typing import Any

import numpy as np
import numpy.typing as npt

from ..sampling.source import RandomSource
from ..sampling.uniform import uniform_index
from .joint_top_k_profile import _Profile, _values


def _position_sets(profile: _Profile, level: int) -> tuple[list[int], list[int]]:
    """Per position ``i = 1..k``: ``|S_i(<E)|`` and ``|S_i(<=E)|``."""
    dtype = profile.asc.dtype
    le = profile.at_least(_values([t - level for t in profile.top], dtype))
    lt = profile.at_least(_values([t - level + 1 for t in profile.top], dtype))
    n_lt, n_le = [], []
    for b in range(len(profile.top)):
        n_lt += [int(lt[b])] * profile.length[b]
        n_le += [int(le[b])] * profile.length[b]
    return n_lt, n_le


def _first_position_weights(n_lt: list[int], n_le: list[int]) -> list[int]:
    """Sequences of error exactly ``E`` whose first position of error ``E`` is ``i*``."""
    k = len(n_lt)
    suffix = [1] * (k + 1)
    for i in range(k - 1, -1, -1):
        suffix[i] = suffix[i + 1] * (n_le[i] - i)
    weights, prefix = [], 1
    for i in range(k):
        weights.append(prefix * (n_le[i] - n_lt[i]) * suffix[i + 1])
        prefix *= max(0, n_lt[i] - i)
    return weights


def _pick(bound: int, picked: list[int], source: RandomSource) -> int:
    """A uniform rank in ``[0, bound)`` outside ``picked`` (sorted; all below ``bound``)."""
    x = uniform_index(bound - len(picked), source)
    for p in picked:
        if p <= x:
            x += 1
        else:
            break
    return x


def _sample_ranks(sets: tuple[list[int], list[int], list[int]], source: RandomSource) -> list[int]:
    """Ranks (in the order count descending) of a uniform sequence of error exactly ``E``,
    from ``|S_i(<E)|``, ``|S_i(<=E)|`` and the first-position weights at ``E``."""
    n_lt, n_le, weights = sets
    r = uniform_index(sum(weights), source)
    star = 0
    while r >= weights[star]:
        r -= weights[star]
        star += 1
    ranks: list[int] = []
    picked: list[int] = []
    for i in range(len(n_lt)):
        if i < star:
            rank = _pick(n_lt[i], picked, source)
        elif i == star:
            rank = n_lt[i] + uniform_index(n_le[i] - n_lt[i], source)
        else:
            rank = _pick(n_le[i], picked, source)
        ranks.append(rank)
        bisect.insort(picked, rank)
    return ranks


def _descending(values: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """Every index, by count descending then index ascending."""
    d = values.shape[0]
    keys = sorted(range(d), key=lambda j: (-values[j], j))
    return np.asarray(keys, dtype=np.int64)


def _items(values: npt.NDArray[Any], ranks: list[int]) -> npt.NDArray[np.int64]:
    """The candidates at the given ranks of the order (count descending, index ascending)."""
    k = len(ranks)
    top_rank = max(ranks)
    # The count at rank top_rank: the (d - top_rank)-th smallest.
    d = values.shape[0]
    if values.dtype.kind == "O":
        return _descending(values)[ranks]
    floor = np.partition(values, d - 1 - top_rank)[d - 1 - top_rank]
    above = np.flatnonzero(values > floor)
    above = above[np.argsort(-values[above], kind="stable")]
    at = np.flatnonzero(values == floor)
    out = np.empty(k, dtype=np.int64)
    for i, r in enumerate(ranks):
        out[i] = above[r] if r < above.shape[0] else at[r - above.shape[0]]
    return out


def _items_by_profile(
    values: npt.NDArray[Any], ranks: list[int], profile: _Profile
) -> npt.NDArray[np.int64]:
    """The candidates at the given ranks of the order (count descending, index ascending),
    from the profile's distinct counts (the ranks are below the candidates it holds): one
    pass to find the candidates holding the counts needed, one stable radix sort of those."""
    if values.dtype.kind == "O":
        return _items(values, ranks)
    desc = profile.asc[::-1]
    r = np.asarray(ranks, dtype=np.int64)
    t = np.searchsorted(profile.cum, r, side="right")
    offset = r - np.where(t > 0, profile.cum[np.maximum(t - 1, 0)], 0)
    needed = np.unique(desc[t])  # ascending, at most k values
    span = int(needed[-1] - needed[0])
    if span <= 4 * values.shape[0] + (1 << 16):  # a lookup table over the needed range
        table = np.full(span + 2, -1, dtype=np.int16)
        table[needed - needed[0]] = np.arange(needed.shape[0], dtype=np.int16)
        shifted = values - needed[0]
        np.clip(shifted, -1, span + 1, out=shifted)
        found = table[shifted]  # -1 (the last slot) for values outside the range
        idx = np.flatnonzero(found >= 0)
        group = found[idx].astype(np.uint16)
    else:
        idx = np.flatnonzero(np.isin(values, needed))
        group = np.searchsorted(needed, values[idx]).astype(np.uint16)  # <= k groups
    order = idx[np.argsort(group, kind="stable")]  # by group, then index (a radix sort)
    starts = np.concatenate(([0], np.cumsum(np.bincount(group, minlength=needed.shape[0]))))
    g = np.searchsorted(needed, desc[t])
    return order[starts[g] + offset].astype(np.int64)
