"""choose_max_contributions (GEM), issue 16: the choice on data with a known answer, the
ledger charge, exact neighbouring-dataset checks on small inputs, refusals before the charge."""

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
from dpselect.recipes.bounds import choose_max_contributions, contribution_scores
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
            10.0,
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
    r = choose_max_contributions(frame, "item", "user", 2.0, source=InsecureSeededSource(1))
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
        (lambda f, b: choose_max_contributions(f, "missing", "u", 1.0, ledger=b), "missing"),
        (
            lambda f, b: choose_max_contributions(f, "x", "u", 1.0, candidates=[0], ledger=b),
            "candidates",
        ),
        (lambda f, b: choose_max_contributions(f, "x", "nope", 1.0, ledger=b), "nope"),
        (lambda f, b: choose_max_contributions(f, "x", "u", -1.0, ledger=b), "epsilon"),
    ],
)
def test_refusals_before_the_charge(tmp_path, call, match):
    frame = pd.DataFrame({"x": [1.0, 2.0], "u": ["a", "b"]})
    book = Ledger.create(tmp_path / "l.db", 10.0)
    with pytest.raises(dc.DPSelectError, match=match):
        call(frame, book)
    assert book.spent()[0] == 0.0
