"""Several levels from one sort: the same outputs as one mechanism per level, bit for bit.

``make_candidate_quantiles`` counts the rows below and above each candidate once for all
levels; ``make_continuous_quantile(presorted=True)`` reads a sorted input by ``searchsorted``
instead of partitioning it. Both must release exactly what the per-level mechanisms release
from the same seeded source (the recipe's ``mechanism="split"`` uses them), and the
multi-level map is the basic composition of the levels' maps.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dpselect.core.arithmetic import float_up
from dpselect.core.errors import ParameterError
from dpselect.mechanisms.quantile_candidates import (
    make_candidate_quantile,
    make_candidate_quantiles,
)
from dpselect.mechanisms.quantile_continuous import make_continuous_quantile
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes.quantiles import quantile as recipe_quantile
from dpselect.sampling.source import InsecureSeededSource


def _data(rng, kind: int, n: int):
    if kind == 0:
        return rng.normal(50, 10, n)
    if kind == 1:
        return np.round(rng.exponential(5, n), 1)  # ties, a block near 0
    if kind == 2:
        return rng.integers(0, 20, n).astype(float)  # few distinct values
    return np.concatenate([rng.uniform(-10, 110, n), [np.nan, 0.0, 100.0]])


def _levels(rng):
    return sorted({int(v) for v in rng.integers(1, 100, int(rng.integers(1, 10)))})


def test_candidate_levels_from_one_sort_match_one_mechanism_each():
    rng = np.random.default_rng(21)
    for trial in range(40):
        x = _data(rng, trial % 4, int(rng.integers(1, 3000)))
        cands = np.unique(np.round(rng.uniform(-5, 105, int(rng.integers(1, 60))), 1))
        qs = [v / 100 for v in _levels(rng)]
        each, r, seed = float(rng.choice([0.01, 0.3, 1.0, 5.0])), int(rng.integers(1, 4)), trial
        many = make_candidate_quantiles(cands, qs, each, source=InsecureSeededSource(seed),
                                        max_rows=r)  # fmt: skip
        src = InsecureSeededSource(seed)
        ones = [make_candidate_quantile(cands, q, each, source=src, max_rows=r) for q in qs]
        assert many(x) == [m(x) for m in ones], trial


def test_candidate_levels_map_is_basic_composition():
    m = make_candidate_quantiles([1.0, 2.0, 3.0], [0.25, 0.5, 0.75], 0.1)
    assert m.map(0) == 0
    assert m.map(1) == float_up(Fraction(0.1) * 3)
    assert m.map(2) == float_up(Fraction(0.1) * 6)
    assert m.map(1) >= 0.3  # rounded outward, never below the sum
    with pytest.raises(ParameterError):
        make_candidate_quantiles([1.0], [], 1.0)
    with pytest.raises(ParameterError):
        make_candidate_quantiles([], [0.5], 1.0)


def test_presorted_continuous_quantile_matches_the_partition():
    rng = np.random.default_rng(22)
    for trial in range(60):
        x = _data(rng, trial % 4, int(rng.integers(1, 5000)))
        q = int(rng.integers(1, 100)) / 100
        eps = float(rng.choice([0.001, 0.05, 0.5, 2.0, 50.0]))
        w = [None, 0.05, 1.0][trial % 3]
        seed = int(rng.integers(0, 2**31))
        plain = make_continuous_quantile((0.0, 100.0), q, eps, resolution=w,
                                         source=InsecureSeededSource(seed))  # fmt: skip
        fast = make_continuous_quantile(
            (0.0, 100.0), q, eps, resolution=w, source=InsecureSeededSource(seed), presorted=True
        )
        ordered = np.sort(x)  # NaN last, as the recipe's sort leaves it
        for _ in range(2):
            assert plain(x) == fast(ordered), trial


def test_split_recipe_matches_one_mechanism_each():
    """``mechanism="split"`` (sorted once, levels in turn) equals the levels run one by one
    on the unsorted rows, from the same seeded source."""
    rng = np.random.default_rng(23)
    for trial in range(6):
        x = _data(rng, trial % 3, 2000)
        qs = [0.1, 0.5, 0.9]
        got = recipe_quantile(
            x,
            quantile_request(None, qs, 1.0, bounds=(0, 100), mechanism="split"),
            source=InsecureSeededSource(trial),
        ).values
        src = InsecureSeededSource(trial)
        each = Fraction(1) / 3
        want = [make_continuous_quantile((0.0, 100.0), q, each, source=src)(x.copy())
                for q in qs]  # fmt: skip
        assert got == want, trial
        cands = list(np.linspace(0, 100, 101))
        got = recipe_quantile(
            x, quantile_request(None, qs, 1.0, candidates=cands), source=InsecureSeededSource(trial)
        ).values
        src = InsecureSeededSource(trial)
        want = [make_candidate_quantile(cands, q, each, source=src)(x) for q in qs]
        assert got == want, trial


def _recursive_reference(values, bounds, qs, epsilon, w, source):
    """The recursive mechanism's loop before it sorted the rows once (each part partitioned
    by the continuous mechanism and split by boolean masks), for the comparison below."""
    from dpselect.mechanisms.quantile_recursive import (
        recursive_depth,
        recursive_tree,
        sorted_levels,
    )

    lo, hi = bounds
    levels = sorted_levels(qs)
    each = Fraction(epsilon) / recursive_depth(len(levels))
    tree = recursive_tree(levels)
    x = np.array(values, dtype=np.float64).ravel()
    x = x[~np.isnan(x)]
    np.clip(x, lo, hi, out=x)
    out = [None] * len(levels)
    parts = {tree[0][0]: x}
    for j, la, ra, rel in tree:
        p_lo, p_hi = (lo if la is None else out[la]), (hi if ra is None else out[ra])
        rows = parts.pop(j)
        if Fraction(p_hi) - Fraction(p_lo) < 4 * Fraction(w):
            v = float(p_lo + (p_hi - p_lo) / 2)
        else:
            mech = make_continuous_quantile((p_lo, p_hi), rel, each, resolution=w,
                                            source=source, overwrite_input=True)  # fmt: skip
            v = float(mech(rows))
        out[j] = v
        left, right = rows[rows <= v], rows[rows > v]
        for child, c_la, c_ra, _ in tree:
            if out[child] is None and c_ra == j and c_la == la:
                parts[child] = left
            elif out[child] is None and c_la == j and c_ra == ra:
                parts[child] = right
    return [float(v) for v in out]


def test_recursive_quantiles_from_one_sort_match_the_partitions():
    from dpselect.mechanisms.quantile_recursive import make_recursive_quantiles

    rng = np.random.default_rng(24)
    for trial in range(30):
        x = _data(rng, trial % 4, int(rng.integers(1, 4000)))
        qs = [v / 100 for v in _levels(rng)]
        eps = float(rng.choice([0.05, 0.5, 2.0, 50.0]))
        w = [1e-4, 0.05, 1.0][trial % 3]
        seed = int(rng.integers(0, 2**31))
        fast = make_recursive_quantiles((0.0, 100.0), qs, eps, resolution=w,
                                        source=InsecureSeededSource(seed))  # fmt: skip
        want = _recursive_reference(x, (0.0, 100.0), qs, eps, w, InsecureSeededSource(seed))
        assert fast(x) == want, trial
