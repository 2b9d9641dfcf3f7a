"""Exact laws of mechanisms that release each value independently (partition selection, set
union), and the delta two laws need at a given epsilon: the brute-force side of the
neighbouring-dataset checks."""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Mapping


def independent_release_law(probs: Mapping[Hashable, float]) -> dict[frozenset, float]:
    """The law of the released set when each value ``v`` is released alone with ``probs[v]``."""
    values = sorted(probs)  # type: ignore[type-var]
    law = {}
    for keep in itertools.product([False, True], repeat=len(values)):
        p = 1.0
        for v, k in zip(values, keep, strict=True):
            p *= probs[v] if k else 1 - probs[v]
        law[frozenset(v for v, k in zip(values, keep, strict=True) if k)] = p
    return law


def delta_needed(p: Mapping, q: Mapping, eps: float) -> float:
    """The least delta for which the laws ``p`` and ``q`` are (eps, delta)-indistinguishable."""
    keys = set(p) | set(q)
    return max(
        sum(max(0.0, p.get(o, 0) - math.exp(eps) * q.get(o, 0)) for o in keys),
        sum(max(0.0, q.get(o, 0) - math.exp(eps) * p.get(o, 0)) for o in keys),
    )
