"""The quantile tree (hierarchical histogram with exact discrete Laplace noise) and the rule
that picks it: sensitivity by brute force, the noise law by simulation (with a broken
variant that fails), consistency as post-processing, empty and one-value columns, the auto
rule, the ledger kind, the CLI. docs/quantiles.md, "Many quantiles: the tree"."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpselect.accounting.ledger import Ledger
from dpselect.core.errors import ParameterError
from dpselect.mechanisms.quantile_tree import (
    consistent_counts,
    make_tree_quantiles,
    noisy_tree_counts,
    tree_accuracy,
    tree_counts,
    tree_descend,
    tree_scale,
)
from dpselect.planning import quantile_count_rule as recipe
from dpselect.planning.quantile_checks import choose_quantile_method as _choose_method
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes import quantile
from dpselect.sampling.source import InsecureSeededSource
from tests.gof import ALPHA, fits

DECILES = [i / 10 for i in range(1, 10)]


# ----------------------------------------------------------------------------- sensitivity
def test_neighbours_change_one_count_per_level_by_one_brute_force():
    """Every dataset of up to 3 rows over a domain with the edges, the bounds, points outside
    them and NaN, and every row added: each level changes by exactly one in one bucket (or not
    at all for NaN, which is dropped): L1 sensitivity h."""
    lo, hi, b, h = 0.0, 1.0, 2, 3
    edges = [k / 8 for k in range(9)]
    domain = [*edges, -5.0, 7.0, 0.3, 1 / 3, math.nextafter(0.5, 0.0), math.nan]
    for size in range(4):
        for rows in itertools.combinations_with_replacement(domain, size):
            base = tree_counts(list(rows), lo, hi, b, h)
            for extra in domain:
                other = tree_counts([*rows, extra], lo, hi, b, h)
                diffs = [o - c for o, c in zip(other, base, strict=True)]
                if math.isnan(extra):
                    assert all(not d.any() for d in diffs)
                    continue
                for level, d in enumerate(diffs):
                    assert d.sum() == 1 and np.abs(d).sum() == 1, (rows, extra, level)


def test_privacy_map_and_worst_case_loss_of_the_noisy_counts():
    m = make_tree_quantiles((0, 1), [0.25, 0.75], 0.7, branching=4, height=3)
    assert m.map(1) == pytest.approx(0.7) and m.map(1) >= 0.7 and m.map(3) >= 2.1
    scale = tree_scale(3, Fraction(7, 10))
    assert scale == Fraction(30, 7)
    # The log density ratio of the noisy vector at z is (|z - c'|_1 - |z - c|_1) / scale, at
    # most |c - c'|_1 / scale = h / scale = eps, over all neighbours of a small brute force.
    worst = Fraction(0)
    for rows in itertools.combinations_with_replacement([0.0, 0.2, 0.5, 0.9, 1.0], 2):
        c = np.concatenate(tree_counts(list(rows), 0, 1, 4, 3))
        for extra in [0.0, 0.26, 0.74, 1.0]:
            c2 = np.concatenate(tree_counts([*rows, extra], 0, 1, 4, 3))
            worst = max(worst, Fraction(int(np.abs(c - c2).sum())) / scale)
    assert worst == Fraction(7, 10)


# ----------------------------------------------------------------------------- the noise law
def _laplace_probs(scale: float, cut: int) -> np.ndarray:
    q = math.exp(-1 / scale)
    ks = np.arange(-cut, cut + 1)
    p = (1 - q) / (1 + q) * q ** np.abs(ks)
    tail = q ** (cut + 1) / (1 + q)  # P(X > cut) = P(X < -cut)
    return np.concatenate(([tail], p, [tail]))


def _binned(noise: np.ndarray, cut: int) -> np.ndarray:
    clipped = np.clip(noise, -cut - 1, cut + 1) + cut + 1
    return np.bincount(clipped, minlength=2 * cut + 3)


def _noise_sample(scale_of, runs: int) -> np.ndarray:
    rows = np.array([0.1, 0.1, 0.4, 0.9, 0.95])
    exact = np.concatenate(tree_counts(rows, 0, 1, 2, 2))
    src = InsecureSeededSource(12)
    out = [
        np.concatenate(noisy_tree_counts(rows, 0, 1, 2, 2, scale_of, src)) - exact
        for _ in range(runs)
    ]
    return np.concatenate(out)


def test_noisy_tree_law_is_discrete_laplace_of_scale_h_over_eps():
    """4000 trees of 6 counts (b = 2, h = 2, eps = 1: scale 2), chi-square at 1e-6."""
    scale = tree_scale(2, 1)
    noise = _noise_sample(scale, 4000)
    assert fits(_binned(noise, 12), _laplace_probs(2.0, 12), ALPHA)


def test_noisy_tree_law_check_fails_for_the_scale_h_over_2():
    """The broken variant (scale h / (2 eps): half the noise, loss 2 eps) fails the same test."""
    noise = _noise_sample(tree_scale(2, 1) / 2, 4000)
    assert not fits(_binned(noise, 12), _laplace_probs(2.0, 12), ALPHA)


def _exceed_rate(scale: Fraction, t: int, runs: int) -> int:
    rows = np.linspace(0, 1, 50)
    exact = np.concatenate(tree_counts(rows, 0, 1, 8, 2))
    src = InsecureSeededSource(3)
    bad = 0
    for _ in range(runs):
        noisy = np.concatenate(noisy_tree_counts(rows, 0, 1, 8, 2, scale, src))
        bad += int(np.abs(noisy - exact).max() > t)
    return bad


def test_noise_bound_of_the_accuracy_statement_by_simulation():
    """At confidence 0.5 the statement says: all 72 counts within t in at least half the runs.
    Binomial test at 1e-6 over 1000 runs; with twice the scale (a broken variant) it fails."""
    shape = tree_accuracy((0, 1), 1.0, 0.5, 8, 2, 1.0)
    runs = 1000
    allowed = stats.binom.isf(ALPHA, runs, 0.5)
    assert _exceed_rate(tree_scale(2, 1), shape.noise_bound, runs) <= allowed
    assert _exceed_rate(2 * tree_scale(2, 1), shape.noise_bound, runs) > allowed


def test_rank_statement_holds_in_every_run():
    """The printed statement (rows below v - width at most q n + E, above v + width at most
    (1 - q) n + E) over 300 runs on clustered data (a loose bound: E is large)."""
    x = np.concatenate([np.full(40, 12.5), np.random.default_rng(1).uniform(10, 20, 60)])
    bounds, eps = (0.0, 100.0), 2.0
    shape = tree_accuracy(bounds, eps, 0.95, 8, 2, 1.0)
    m = make_tree_quantiles(bounds, DECILES, eps, branching=8, height=2, threshold=1.0,
                            source=InsecureSeededSource(4))  # fmt: skip
    n = len(x)
    for _ in range(300):
        for q, v in zip(DECILES, m(x), strict=True):
            assert (x < v - shape.leaf_width).sum() <= q * n + shape.rank_error
            assert (x > v + shape.leaf_width).sum() <= (1 - q) * n + shape.rank_error


# ----------------------------------------------------------------------------- post-processing
def test_consistency_is_a_projection_of_the_noisy_counts_only():
    rng = np.random.default_rng(0)
    b, h = 3, 3
    noisy = [rng.integers(-5, 20, b**k).astype(float) for k in range(1, h + 1)]
    out = consistent_counts(noisy, b)
    for parent, kids in itertools.pairwise(out):
        assert np.allclose(kids.reshape(-1, b).sum(axis=1), parent)
    again = consistent_counts(out, b)  # idempotent
    assert all(np.allclose(a, c) for a, c in zip(out, again, strict=True))
    size = sum(b**k for k in range(1, h + 1))  # symmetric: an orthogonal projection
    cols = []
    for i in range(size):
        e = np.zeros(size)
        e[i] = 1
        parts = np.split(e, np.cumsum([b**k for k in range(1, h)]))
        cols.append(np.concatenate(consistent_counts(parts, b)))
    mat = np.array(cols).T
    assert np.allclose(mat, mat.T) and np.allclose(mat @ mat, mat)
    # the descent reads the counts and public parameters only: same counts, same values
    a = tree_descend(out, DECILES, 0, 1, b, [1.0, 1.0, 1.0])
    assert a == tree_descend(out, DECILES, 0, 1, b, [1.0, 1.0, 1.0]) and a == sorted(a)


@pytest.mark.parametrize("rows", [[], [3.5], [3.5] * 50, [-1e300, 1e300, math.nan]])
def test_empty_and_one_value_columns_answer_in_the_bounds(rows):
    m = make_tree_quantiles((-10, 10), DECILES, 0.5, source=InsecureSeededSource(5))
    out = m(np.array(rows, dtype=float))
    assert len(out) == 9 and out == sorted(out) and all(-10 <= v <= 10 for v in out)
    r = quantile(
        pd.DataFrame({"v": np.array(rows, dtype=float)}),
        quantile_request("v", DECILES, 0.5, bounds=(-10, 10), mechanism="tree"),
        source=InsecureSeededSource(6),
    )
    assert len(r.values) == 9 and all(-10 <= v <= 10 for v in r.values)


def test_accurate_at_large_epsilon():
    x = np.random.default_rng(2).uniform(0, 100, 2000)
    m = make_tree_quantiles((0, 100), DECILES, 50.0, source=InsecureSeededSource(7))
    truth = np.quantile(x, DECILES)
    assert np.abs(np.array(m(x)) - truth).max() < 2.0


# ----------------------------------------------------------------------------- the recipe
def test_bad_parameters_raise_before_any_charge(tmp_path):
    book = Ledger.create(tmp_path / "l.db", 5.0)
    frame = pd.DataFrame({"v": [1.0, 2.0]})
    with pytest.raises(ParameterError, match="branching"):
        make_tree_quantiles((0, 1), [0.5], 1.0, branching=1)
    with pytest.raises(ParameterError, match="height"):
        make_tree_quantiles((0, 1), [0.5], 1.0, height=0)
    with pytest.raises(ParameterError, match="leaves"):
        make_tree_quantiles((0, 1), [0.5], 1.0, branching=16, height=6)
    with pytest.raises(ParameterError, match="threshold"):
        make_tree_quantiles((0, 1), [0.5], 1.0, threshold=-1.0)
    with pytest.raises(ParameterError, match="epsilon"):
        make_tree_quantiles((0, 1), [0.5], 1e-20)
    with pytest.raises(ParameterError, match="needs bounds"):
        quantile(
            frame,
            quantile_request("v", [0.2, 0.8], 1.0, candidates=[1, 2], mechanism="tree"),
            ledger=book,
        )
    with pytest.raises(ParameterError, match="resolution"):
        quantile(
            frame,
            quantile_request("v", [0.2, 0.8], 1.0, bounds=(0, 3), resolution=0.1, mechanism="tree"),
            ledger=book,
        )
    with pytest.raises(ParameterError, match="bounds"):
        quantile(
            frame,
            quantile_request("v", [0.2, 0.8], 1.0, bounds=(3, 0), mechanism="tree"),
            ledger=book,
        )
    assert book.spent()[0] == 0


def test_tree_and_auto_are_charged_once_as_pure_dp(tmp_path):
    book = Ledger.create(tmp_path / "l.db", 5.0)
    frame = pd.DataFrame({"v": np.arange(100, dtype=float)})
    r = quantile(
        frame,
        quantile_request("v", DECILES, 1.0, bounds=(0, 200), mechanism="tree"),
        ledger=book,
        source=InsecureSeededSource(8),
    )
    assert "quantile tree" in r.method and book.entries()[-1].kind == "pure"
    r = quantile(
        frame,
        quantile_request("v", DECILES, 1.0, bounds=(0, 200)),
        ledger=book,
        source=InsecureSeededSource(9),
    )
    assert book.entries()[-1].kind == "pure" and len(book.entries()) == 2
    assert book.spent()[0] == pytest.approx(2.0) and "noisy row count" in r.notes[-1]
    r = quantile(
        frame, quantile_request("v", DECILES, 1.0, bounds=(0, 200), mechanism="joint"), ledger=book
    )
    assert book.entries()[-1].kind == "bounded_range"
    r = quantile(frame, quantile_request("v", DECILES, 1.0, bounds="auto"), ledger=book)
    assert book.entries()[-1].kind == "pure" and len(r.values) == 9


def test_auto_rule_reads_only_the_noisy_count(monkeypatch):
    """The choice is a function of N = n + noise and public parameters: the same noise gives
    the same choice on different rows with the same n, and it flips at eps' N = 700."""
    noise = [0]
    monkeypatch.setattr(recipe, "make_laplace", lambda *a, **k: lambda n: n + noise[0])
    # float rows: the count is the sum of the noisy grain histogram (all rows in bin 0 here)
    monkeypatch.setattr(
        recipe,
        "make_grain_histogram",
        lambda ks, *a, **k: lambda v: [len(v) + noise[0]] + [0] * len(ks),
    )

    def picked(rows, eps):
        frame = pd.DataFrame({"v": rows})
        r = quantile(
            frame,
            quantile_request("v", [0.25, 0.5, 0.75], eps, bounds=(0, 10)),
            source=InsecureSeededSource(1),
        )
        return "tree" if "quantile tree" in r.method else "joint"

    rng = np.random.default_rng(0)
    a, b = rng.uniform(0, 10, 736), np.full(736, 3.0)  # eps' = 0.95: 0.95 * 736 < 700
    assert picked(a, 1.0) == picked(b, 1.0) == "tree"
    noise[0] = 1  # 0.95 * 737 >= 700
    assert picked(a, 1.0) == picked(b, 1.0) == "joint"
    noise[0] = -300
    assert picked(a, 1.0) == "tree"
    assert _choose_method("auto", 9, True) == "count"
    assert _choose_method("auto", 1, True) == "split"


def test_cli_method_tree_end_to_end(tmp_path):
    path = tmp_path / "v.csv"
    path.write_text("v\n" + "\n".join(str(i % 97) for i in range(500)) + "\n")
    args = [path, "--column", "v", "--epsilon", 2, "--bounds", 0, 200, "--json"]
    args += ["--q", 0.25, "--q", 0.5, "--q", 0.75, "--mechanism", "tree", "--insecure-seed", 3]
    proc = subprocess.run(
        [sys.executable, "-m", "dpselect", "quantile", *map(str, args)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert "quantile tree" in out["method"] and out["parameters"]["method"] == "tree"
    assert len(out["values"]) == 3 and all(0 <= v <= 200 for v in out["values"])
    assert abs(out["values"][1] - 48) < 15
