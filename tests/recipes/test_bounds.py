"""choose_max_contributions (GEM) and choose_bounds (bin quantiles), issue 16: choices on data
with a known answer, the ledger charge, exact neighbouring-dataset checks on small inputs,
refusals before the charge."""

from __future__ import annotations

import itertools
from collections import Counter
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpselect.core as dc
from dpselect.accounting.ledger import Ledger
from dpselect.mechanisms.generalized_exponential import GRID_BITS, gem_shifts, gem_threshold
from dpselect.planning.value_bounds import bound_bins
from dpselect.recipes.bounds import (
    choose_bounds,
    choose_max_contributions,
    contribution_scores,
)
from dpselect.recipes.value_bins import bin_scores
from dpselect.sampling import InsecureSeededSource


def users(spec):
    """A frame with spec = [(n_users, n_values), ...]: each user holds n_values distinct."""
    rows, uid = [], 0
    for n_users, n_values in spec:
        for _ in range(n_users):
            rows += [(f"u{uid}", f"v{j}") for j in range(n_values)]
            uid += 1
    return pd.DataFrame(rows, columns=["user", "item"])


def test_choose_max_contributions_on_known_data(tmp_path):
    # 200 users with 3 items, 5 with 60: sum min(c, L) - L / 0.01 is largest at L = 4 (620 -
    # 400 = 220 against 210 at L = 2); GEM at eps = 10 (t = 0.99) keeps L = 4 ahead
    frame = users([(200, 3), (5, 60)])
    cands = [1, 2, 4, 8, 16, 32, 64]
    book = Ledger.create(tmp_path / "l.db", 10.0)
    picks = Counter(
        choose_max_contributions(
            frame,
            "item",
            "user",
            epsilon=10.0,
            candidates=cands,
            release_epsilon=0.01,
            source=InsecureSeededSource(i),
            ledger=book if i == 0 else None,
        ).max_contributions
        for i in range(20)
    )
    counts = np.array([3] * 200 + [60] * 5)
    scores = contribution_scores(counts, cands, Fraction(1, 100))
    best = cands[int(np.argmax([float(s) for s in scores]))]
    assert best == 4 and picks.most_common(1)[0][0] == 4
    assert book.spent()[0] <= 10.0 and book.entries()[-1].mechanism == "choose_max_contributions"
    r = choose_max_contributions(frame, "item", "user", epsilon=2.0, source=InsecureSeededSource(1))
    assert "max_contributions" in str(r) and r.to_dict()["epsilon"] <= 2.0


def test_choose_max_contributions_neighbours_exact():
    """Small inputs: every dataset of 3 users with 1..4 items and each neighbour (one user
    added with 1..6 items): the exact GEM output laws differ by at most epsilon."""
    eps, cands = Fraction(1), [1, 2, 4]
    deltas = [Fraction(L) for L in cands]
    t = gem_threshold(3, 0.05, eps)
    scale = Fraction(dc.float_up(2 * (1 + Fraction(1, 1 << GRID_BITS)) / eps))

    def law(counts):
        z = gem_shifts(contribution_scores(counts, cands, eps), deltas, t)
        z = np.asarray([int(v) for v in z], dtype=float) / (float(scale) * (1 << GRID_BITS))
        w = np.exp(z - z.max())
        return w / w.sum()

    worst = 0.0
    for base in itertools.product(range(1, 5), repeat=3):
        p = law(list(base))
        for extra in range(1, 7):
            q = law([*base, extra])
            worst = max(worst, float(np.max(np.abs(np.log(p) - np.log(q)))))
    assert worst <= 1.0 + 1e-9 and worst > 0.2


@pytest.mark.parametrize(
    "call, match",
    [
        (
            lambda f, b: choose_max_contributions(f, "missing", "u", epsilon=1.0, ledger=b),
            "missing",
        ),
        (lambda f, b: choose_bounds(f, "x", 1.0, quantiles=(0.9, 0.1), ledger=b), "quantiles"),
        (lambda f, b: choose_bounds(f, "missing", 1.0, ledger=b), "missing"),
        (lambda f, b: choose_bounds(f, "x", -1.0, ledger=b), "epsilon"),
        (
            lambda f, b: choose_max_contributions(
                f, "x", "u", epsilon=1.0, candidates=[0], ledger=b
            ),
            "candidates",
        ),
        (lambda f, b: choose_max_contributions(f, "x", "nope", epsilon=1.0, ledger=b), "nope"),
        (lambda f, b: choose_max_contributions(f, "x", "u", epsilon=-1.0, ledger=b), "epsilon"),
    ],
)
def test_refusals_before_the_charge(tmp_path, call, match):
    frame = pd.DataFrame({"x": [1.0, 2.0], "u": ["a", "b"]})
    book = Ledger.create(tmp_path / "l.db", 10.0)
    with pytest.raises(dc.DPSelectError, match=match):
        call(frame, book)
    assert book.spent()[0] == 0.0


# ----------------------------------------------------------------------------- choose_bounds
def test_choose_bounds_on_known_data(tmp_path):
    rng = np.random.default_rng(1)  # test data only
    frame = pd.DataFrame({"x": rng.normal(100, 10, 2000)})
    book = Ledger.create(tmp_path / "l.db", 10.0)
    r = choose_bounds(frame, "x", 1.0, ledger=book, source=InsecureSeededSource(2))
    # the histogram method: the bin [64, 128) holds the 5% and 95% quantiles; 0 is inside
    assert (r.lower, r.upper) == (0.0, 128.0)
    assert book.spent()[0] <= 1.0 and book.entries()[-1].mechanism == "choose_bounds"
    assert book.entries()[-1].kind == "pure"  # Laplace noise: never charged as bounded range
    for method, expected in (("histogram", (0.0, 128.0)), ("levels", (64.0, 128.0))):
        picks = Counter(
            (c.lower, c.upper)
            for c in (choose_bounds(frame, "x", 1.0, source=InsecureSeededSource(i),
                                    method=method) for i in range(20))
        )  # fmt: skip
        assert picks == Counter({expected: 20})  # an empty bin: probability < 99 e^-25
    negative = pd.DataFrame({"x": rng.normal(-3, 0.5, 2000)})
    r = choose_bounds(negative, "x", 1.0, source=InsecureSeededSource(3))
    assert (r.lower, r.upper) == (-4.0, 0.0) and "bounds" in str(r)  # 5%: -3.8, 95%: -2.2
    r = choose_bounds(negative, "x", 1.0, source=InsecureSeededSource(3), method="levels")
    assert (r.lower, r.upper) == (-4.0, -2.0)
    text = pd.DataFrame({"x": ["1", "abc", None, "3"] * 50})  # text rows parse one by one
    r = choose_bounds(text, "x", 4.0, source=InsecureSeededSource(3))
    assert r.lower <= r.upper


def test_choose_bounds_neighbours_exact():
    """Every dataset of 3 values from a small set and every neighbour (one value added):
    each level's exact exponential-mechanism law over the bins differs by at most eps / 2."""
    bins = bound_bins()
    eps = Fraction(1)
    values = [-5.0, -0.001, 0.3, 3.0, 100.0]
    worst = 0.0
    for level in (Fraction(1, 20), Fraction(19, 20), Fraction(1, 2)):
        sens = max(level.numerator, level.denominator - level.numerator)

        def law(data, level=level, sens=sens):
            s = np.asarray(bin_scores(data, bins, level), dtype=float)
            z = float(eps / 2) * s / (2 * sens)
            w = np.exp(z - z.max())
            return w / w.sum()

        for base in itertools.combinations_with_replacement(values, 3):
            p = law(list(base))
            for extra in values:
                q = law([*base, extra])
                worst = max(worst, float(np.max(np.abs(np.log(p) - np.log(q)))))
    assert worst <= 0.5 + 1e-9 and worst > 0.1
    # broken variant: the score treated as sensitivity 1 (the 5% level's is 19) leaks more
    level = Fraction(1, 20)
    broken = 0.0
    for base in itertools.combinations_with_replacement(values, 3):
        s0 = np.asarray(bin_scores(list(base), bins, level), dtype=float) * float(eps / 2) / 2
        p = np.exp(s0 - s0.max()) / np.exp(s0 - s0.max()).sum()
        for extra in values:
            s1 = np.asarray(bin_scores([*base, extra], bins, level), dtype=float)
            s1 = s1 * float(eps / 2) / 2
            q = np.exp(s1 - s1.max()) / np.exp(s1 - s1.max()).sum()
            broken = max(broken, float(np.max(np.abs(np.log(p) - np.log(q)))))
    assert broken > 1.0
