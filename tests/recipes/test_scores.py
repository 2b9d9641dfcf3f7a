"""Score sensitivities by brute force over neighbouring datasets (seeds 002, 003).

Every dataset of size at most 4 over a small domain is paired with each neighbour (one record
added or removed; for hypotheses also one record changed). The largest change of every score
must be at most the sensitivity the recipe uses and must be attained (so it is not
overstated), and the monotonic claims must hold exactly where they are made.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from dpselect.recipes.hypothesis import mistakes, threshold_hypotheses
from dpselect.recipes.pricing import price_grid, revenue_scores
from dpselect.recipes.quantiles import (
    quantile_fraction,
    quantile_scores,
    score_sensitivity,
)


def datasets(domain, max_size):
    for size in range(max_size + 1):
        yield from itertools.combinations_with_replacement(domain, size)


def add_remove_pairs(domain, max_size):
    """(x, x') with x' = x plus one record of the domain (both orders are covered by abs)."""
    for x in datasets(domain, max_size - 1):
        for extra in domain:
            yield list(x), sorted([*x, extra])


def sweep(score, domain, max_size):
    """Largest |score change| and whether some pair moves scores in both directions."""
    largest, mixed = 0, False
    for x, bigger in add_remove_pairs(domain, max_size):
        diff = np.asarray(score(bigger), dtype=object) - np.asarray(score(x), dtype=object)
        largest = max(largest, max(abs(d) for d in diff))
        mixed |= any(d > 0 for d in diff) and any(d < 0 for d in diff)
    return largest, mixed


@pytest.mark.parametrize("q", [0, 0.1, 0.25, 0.3, 0.5, 2 / 3, 0.9, 1])
def test_quantile_score_sensitivity_and_not_monotonic(q):
    level = quantile_fraction(q)
    candidates = [0.5, 1, 1.5, 2, 2.5, 3, 3.5]
    largest, mixed = sweep(lambda x: quantile_scores(x, candidates, q), [1, 2, 3], 4)
    assert largest == score_sensitivity(level)
    if 0 < q < 1:
        # Scores move both ways between some neighbours: the 2 Delta form is needed.
        assert mixed


def test_quantile_levels_are_small_fractions():
    assert quantile_fraction(0.5) == Fraction(1, 2)
    assert quantile_fraction(0.9) == Fraction(9, 10)
    assert quantile_fraction(0.999) == Fraction(999, 1000)
    assert quantile_fraction(0.9999) == Fraction(9999, 10000)
    assert quantile_fraction(1 / 3) == Fraction(1, 3)
    assert score_sensitivity(Fraction(1, 2)) == 1
    assert score_sensitivity(Fraction(9, 10)) == 9


def test_revenue_score_sensitivity_and_monotonic():
    grid = price_grid(prices=[1, 1.01, 2, 3.01, 3.02], max_price=4)
    largest, mixed = sweep(lambda v: revenue_scores(v, grid), [0.5, 1, 2, 3.01, 3.5], 4)
    # In units of the grid's unit (0.01): Delta = 3.02 = 302 units, attained.
    assert grid.unit == Fraction(1, 100)
    assert largest == max(grid.multiples) == 302
    assert not mixed  # every revenue moves the same way: monotonic
    assert grid.sensitivity == Fraction(302, 100)


def test_revenue_on_the_alpha_grid():
    grid = price_grid(price_step=0.25, max_price=1.0)
    assert grid.prices == [0.25, 0.5, 0.75, 1.0]
    largest, mixed = sweep(lambda v: revenue_scores(v, grid), [0.1, 0.3, 0.6, 1.0], 4)
    assert largest == 4 and not mixed


def test_mistakes_sensitivity_add_remove_and_change_one():
    hyps = list(threshold_hypotheses([0.5, 1.5, 2.5]).values())
    domain = [(x, y) for x in (0, 1, 2, 3) for y in (0, 1)]

    def score(rows):
        if not rows:
            return [0] * len(hyps)
        X = np.array([r[0] for r in rows])
        y = np.array([r[1] for r in rows])
        return [-m for m in mistakes(X, y, hyps)]

    largest, mixed = sweep(score, domain, 3)
    assert largest == 1 and not mixed  # sensitivity 1, monotonic under add/remove
    # Change one example (seed 003's neighbours): still at most 1, but not monotonic.
    largest_change, mixed_change = 0, False
    for rows in datasets(domain, 3):
        for pos, new in itertools.product(range(len(rows)), domain):
            other = list(rows)
            other[pos] = new
            diff = np.subtract(score(other), score(list(rows)))
            largest_change = max(largest_change, int(np.abs(diff).max()))
            mixed_change |= bool((diff > 0).any() and (diff < 0).any())
    assert largest_change == 1 and mixed_change
