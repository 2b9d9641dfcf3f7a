"""Shared cases of the policy set union tests at ``max_rows_per_value = r`` (Policy Laplace:
test_set_union_rows.py; Policy Gaussian: test_set_union_gaussian_rows.py): random weight
pairs for the update checks, random persons with rows, and the exact enumeration of the
delta small neighbours need at a plan's epsilon."""

from __future__ import annotations

import math

from dpselect.mechanisms.set_union import SetUnionPlan, policy_weights
from tests.release_laws import delta_needed, independent_release_law


def random_case(rng, units):
    """``(h, h' >= h, the person's values, caps, cutoff, budget r units)`` at random."""
    items = list(range(8))
    r = int(rng.integers(1, 6))
    c = int(rng.integers(1, 6))
    cutoff = int(rng.integers(1, 4 * r * units))
    h = {v: int(rng.integers(0, cutoff + 1)) if rng.random() < 0.8 else 0 for v in items}
    h2 = {v: min(cutoff, w + int(rng.integers(0, r * units + 1))) for v, w in h.items()}
    values = [int(v) for v in rng.choice(items, size=c, replace=False)]
    caps = {v: int(rng.integers(1, r + 1)) * units for v in values}
    return h, h2, values, caps, cutoff, r * units


def random_persons(rng, n, universe, c, r):
    """``n`` persons with up to ``c`` values of ``universe``, each repeated 1 to ``2 r`` times
    (rows)."""
    out = []
    for _ in range(n):
        vals = rng.choice(universe, size=int(rng.integers(1, c + 1)), replace=False)
        out.append([int(v) for v in vals for _ in range(int(rng.integers(1, 2 * r + 1)))])
    return out


def tail(noise, scale, x):
    """``P(Z >= x)``: Laplace of scale ``scale`` or Gaussian of deviation ``scale``."""
    if noise == "gaussian":
        return 0.5 * math.erfc(x / (scale * math.sqrt(2)))
    return 0.5 * math.exp(-x / scale) if x >= 0 else 1 - 0.5 * math.exp(x / scale)


def release_law(weights, plan: SetUnionPlan):
    return independent_release_law(
        {v: tail(plan.noise, plan.scale, plan.rho - w / plan.units) for v, w in weights.items()}
    )


def worst_delta(plan: SetUnionPlan, persons_list, extras, r):
    """The largest delta any neighbour (one of ``extras`` added at any position) needs at the
    plan's epsilon, by exact enumeration of the released-set laws."""
    worst = 0.0
    for persons in persons_list:
        h = policy_weights(persons, plan.noise, plan.cutoff_units, r)
        for extra in extras:
            for pos in range(len(persons) + 1):
                h2 = policy_weights([*persons[:pos], extra, *persons[pos:]], plan.noise,
                                    plan.cutoff_units, r)  # fmt: skip
                law, law2 = release_law(h, plan), release_law(h2, plan)
                worst = max(worst, delta_needed(law, law2, plan.epsilon))
    return worst


SMALL = [
    [["a"] * 3 + ["b"], ["a"], ["a"] * 5 + ["c"] * 2, ["b", "c"], ["a", "b"] * 3],
    [["a"] * 4, ["a"], ["a"] * 2 + ["b"] * 3],
    [],
]
EXTRAS = [["a"] * 3 + ["b"] * 3, ["d"] * 3 + ["e"] * 3, ["a", "d", "d", "d"], ["c"] * 7]
