"""The tree's unbiased descent and the auto rule's tree on a small type grid
(docs/quantiles.md, "Reading the quantiles" and "Choosing the method")."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpselect as dp
from dpselect.mechanisms.quantile_tree import tree_descend
from dpselect.planning.quantile_plan import GRID_TREE_POINTS, grid_tree_fits
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes import quantile
from dpselect.sampling import InsecureSeededSource

DECILES = [i / 10 for i in range(1, 10)]
LEVELS = [0.25, 0.5, 0.75]


# ----------------------------------------------------------------------------- the descent
def test_noise_of_either_sign_in_empty_buckets_cancels():
    """Two empty buckets with noises +3 and -3 read as two empty buckets: the descent keeps the
    negative count instead of clipping it to zero (clipped, the +3 would pull every level
    right: 0.575, 1.5 and 3.425 here)."""
    noisy = tree_descend([np.array([10.0, 3.0, -3.0, 10.0])], LEVELS, 0.0, 4.0, 4)
    clean = tree_descend([np.array([10.0, 0.0, 0.0, 10.0])], LEVELS, 0.0, 4.0, 4)
    assert noisy == clean == [0.5, 1.0, 3.5]


def test_counts_within_the_threshold_are_zero_on_both_sides():
    out = tree_descend([np.array([10.0, 0.9, -0.9, 10.0])], LEVELS, 0.0, 4.0, 4, [1.0])
    assert out == [0.5, 1.0, 3.5]
    # beyond it, a positive count is kept alone and moves the levels (as it should)
    moved = tree_descend([np.array([10.0, 1.5, -0.9, 10.0])], LEVELS, 0.0, 4.0, 4, [1.0])
    assert moved != out


def test_negative_totals_read_as_uniform_and_zero_share_enters_rows():
    # children totalling at most zero: uniform over the node
    assert tree_descend([np.array([-2.0, 1.0, 0.0, 0.0])], [0.5], 0.0, 4.0, 4) == [2.0]
    # q = 0: the first child holding rows, at its left edge
    assert tree_descend([np.array([-2.0, 0.0, 5.0, 5.0])], [0.0], 0.0, 4.0, 4) == [2.0]
    # a first crossing after a dip: the child crossed into has a positive count
    out = tree_descend([np.array([4.0, -3.0, 6.0, 3.0])], [0.5], 0.0, 4.0, 4)
    assert out == [2.0 + (0.5 - 0.1) / 0.6]


# ----------------------------------------------------------------------------- the grid rule
@pytest.mark.parametrize(
    ("lo_hi", "step", "fits"),
    [
        ((0.0, 1000.0), Fraction(1), True),
        ((0.0, GRID_TREE_POINTS - 1.0), Fraction(1), True),
        ((0.0, float(GRID_TREE_POINTS)), Fraction(1), False),
        ((0.0, 10.0), Fraction(1, 100), True),
        ((0.0, 20.0), Fraction(1, 100), False),
        ((0.0, 1000.0), None, False),
        (None, Fraction(1), False),
    ],
)
def test_grid_tree_fits_reads_the_type_grid_and_bounds_only(lo_hi, step, fits):
    assert grid_tree_fits(lo_hi, step) is fits


def _equiprobable(n: int = 1000, seed: int = 6) -> np.ndarray:
    return np.random.default_rng(seed).choice([0, 250, 500, 750, 1000], n).astype(np.int64)


def _auto(values: np.ndarray, eps: float, bounds: tuple[float, float], seed: int):
    return quantile(
        pd.DataFrame({"v": values}),
        quantile_request("v", DECILES, eps, bounds=bounds),
        source=InsecureSeededSource(seed),
    )


def test_auto_runs_the_512_leaf_tree_on_a_small_integer_grid():
    x = _equiprobable()
    r = _auto(x, 4.0, (0, 1000), 1)  # eps' N about 3800 >= 700
    assert r.parameters["method"] == "tree"
    assert "3 levels, 512 leaves" in r.method
    assert any("512-leaf tree on the column type's grid" in note for note in r.notes)
    assert all(v == round(v) for v in r.values)
    # a float column with the same rows, or a grid of more points: the joint mechanism
    assert _auto(x.astype(float), 4.0, (0, 1000), 1).parameters["method"] == "joint"
    assert _auto(x, 4.0, (0, 5000), 1).parameters["method"] == "joint"
    # below the count's limit the 64-leaf tree, as on any column
    small = _auto(x[:200], 1.0, (0, 1000), 1)  # eps' N about 190 < 700
    assert small.parameters["method"] == "tree" and "2 levels, 64 leaves" in small.method


def test_plan_states_both_trees_before_the_charge():
    plan = dp.explain(dp.quantile, pd.DataFrame({"v": _equiprobable()}), "v", DECILES,
                      epsilon=4.0, bounds=(0, 1000))  # fmt: skip
    text = plan.explain()
    assert "tree (8-ary, 2 levels" in text and "tree (8-ary, 3 levels" in text


def test_equiprobable_values_at_epsilon_4_far_below_the_joint_mechanism():
    """Five equally likely values, deciles at the edges of tied blocks (docs/performance.md):
    the joint mechanism samples inside the 249-wide gaps (mean decile error about 45); the rule
    runs the tree, about 5-9. Fixed seeds: a regression check, and the broken variant (the rule
    off, so the joint mechanism runs) fails it (measured: 44.3 over these seeds)."""
    x = _equiprobable()
    truth = np.quantile(x, DECILES, method="inverted_cdf")
    errors = [np.abs(np.array(_auto(x, 4.0, (0, 1000), seed).values) - truth).mean()
              for seed in range(20)]  # fmt: skip
    assert float(np.mean(errors)) < 20.0
