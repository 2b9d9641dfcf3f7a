"""Private hypothesis selection / PAC learning (seed 003, Theorem 6)."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from dpselect.accounting.ledger import Ledger
from dpselect.core.errors import BudgetExceeded, ParameterError
from dpselect.recipes import pac_sample_size, select_hypothesis, threshold_hypotheses
from dpselect.recipes.hypothesis import make_hypothesis_selection, mistakes
from dpselect.sampling import InsecureSeededSource
from tests.gof import ALPHA, assert_fits

THRESHOLDS = np.round(np.linspace(0, 1, 101), 2)


def softmax(logits):
    w = np.exp(np.asarray(logits, dtype=float) - np.max(logits))
    return w / w.sum()


def test_pac_sample_size_formula():
    beta = 0.05
    size, alpha, eps = 101, 0.1, 1.0
    generalisation = 2 * math.log(2 * size / beta) / alpha**2
    selection = 2 * (math.log(size) + math.log(2 / beta)) / (alpha * eps)
    assert pac_sample_size(size, alpha, eps) == math.ceil(generalisation + selection) == 1827
    # The seed's change-one form doubles the privacy term.
    assert pac_sample_size(size, alpha, eps, monotonic=False) > 1827
    # Omega(log|C| / alpha^2 + log|C| / (alpha eps)): the privacy term grows like 1 / eps.
    assert pac_sample_size(size, alpha, eps / 10) == math.ceil(generalisation + 10 * selection)
    with pytest.raises(ParameterError, match="target_error"):
        pac_sample_size(10, 1.5, 1.0)


def test_selection_law_fits_softmax_of_minus_mistakes():
    rng = np.random.default_rng(1)
    X = rng.random(60)
    y = (X >= 0.4).astype(int)
    y[:6] = 1 - y[:6]  # label noise: agnostic
    hyps = list(threshold_hypotheses([0.2, 0.3, 0.4, 0.5, 0.6]).values())
    counts = mistakes(X, y, hyps)
    m = make_hypothesis_selection(hyps, 0.5, source=InsecureSeededSource(2))
    tally = Counter(int(m((X, y))) for _ in range(3000))
    assert_fits([tally[i] for i in range(5)], softmax(-0.5 * np.array(counts)))
    assert m.map(1) <= 0.5


def test_prediction_matrix_and_mapping_inputs(tmp_path):
    y = np.array([0, 1, 1, 0, 1])
    predictions = np.array([[0, 1, 1, 0, 1], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]])
    book = Ledger.create(tmp_path / "l.db", 60.0)
    r = select_hypothesis(
        None, y, predictions, epsilon=50.0, ledger=book, source=InsecureSeededSource(3)
    )
    assert r.index == 0 and r.name == 0  # eps = 50: the perfect row, with overwhelming odds
    assert book.entries()[-1].mechanism == "select_hypothesis"
    named = {"all ones": lambda X: np.ones(len(X)), "copy": lambda X: np.asarray(X)}
    r = select_hypothesis([0, 1, 1], [0, 1, 1], named, epsilon=50.0, source=InsecureSeededSource(4))
    assert r.name == "copy" and r.to_dict()["name"] == "copy" and "selected" in str(r)
    assert "n >= " in r.guarantee and r.sample_size == pac_sample_size(2, 0.1, 50.0)
    with pytest.raises(BudgetExceeded):
        select_hypothesis(None, y, predictions, epsilon=20.0, ledger=book)


@pytest.mark.parametrize(
    "hypotheses, match",
    [
        ([], "not be empty"),
        ("abc", "list or mapping"),
        (np.zeros(3), "2-D"),
        ({"h": 3}, "callable"),
    ],
)
def test_hypothesis_errors(hypotheses, match):
    with pytest.raises(ParameterError, match=match):
        select_hypothesis([0.1], [0], hypotheses, epsilon=1.0)


@pytest.mark.slow  # long: run by .ci/run's `pytest -m slow`
def test_theorem_6_holds_statistically_on_a_threshold_class():
    """Realizable threshold class: n from pac_sample_size gives error <= alpha w.p. 95%."""
    alpha, eps, conf = 0.1, 1.0, 0.95
    target = 0.37  # c* is in the class
    hyps = threshold_hypotheses(THRESHOLDS)
    n = pac_sample_size(len(hyps), alpha, eps, confidence=conf)
    rng = np.random.default_rng(5)
    source = InsecureSeededSource(6)
    runs, too_wrong, excess = 200, 0, []
    for _ in range(runs):
        xs = rng.random(n)
        y = (xs >= target).astype(int)
        r = select_hypothesis(
            xs, y, hyps, epsilon=eps, target_error=alpha, confidence=conf, source=source
        )
        too_wrong += abs(r.name - target) > alpha  # true error of h_t under U[0, 1]
        excess.append(mistakes(xs, y, [r.hypothesis])[0])
    assert too_wrong <= stats.binom.isf(ALPHA, runs, 1 - conf)
    # The selection's own claim: at most `loss` more mistakes than the best (here 0).
    loss = float(r.accuracy.split("at most ")[1].split(" ")[0])
    assert sum(e > loss for e in excess) <= stats.binom.isf(ALPHA, runs, 1 - conf)


def test_mistakes_never_raise_on_the_rows():
    """Issue 15, item 7: in-memory labels of any type are read row by row; np.asarray of a
    ragged list raised (after the charge) depending on one example."""
    y = [0, 1, [1, 2], "a", None]
    preds = [[0, 1, 1, "a", None], [1, 1, 1, 1, 1]]
    # row 2 ([1, 2] vs 1) is a mistake for both; "a" and None match the first one
    assert mistakes(None, y, preds) == [1, 4]
    # a hypothesis that is not row by row: unmatched rows are mistakes, no error
    assert mistakes(None, [0, 1, 1], [[0, 1], [0, 1, 1, 0]]) == [1, 1]
    assert mistakes(None, np.asarray([[0], [1]]), [np.asarray([0, 1])]) == [0]


def test_select_hypothesis_with_odd_labels_charges_and_releases(tmp_path):
    book = Ledger.create(tmp_path / "l.db", 5.0)
    r = select_hypothesis(
        None,
        [0, 1, [1, 2], "abc"],
        [[0, 1, 1, 1], [0, 1, 0, 0]],
        epsilon=1.0,
        ledger=book,
        source=InsecureSeededSource(1),
    )
    assert r.index in (0, 1) and book.spent()[0] == 1.0


def test_threshold_hypotheses_read_rows_on_their_own():
    h = threshold_hypotheses([0.5])[0.5]
    assert h([0.2, "0.9", "abc", None, 1]).tolist() == [0, 1, 0, 0, 1]
    assert h(np.asarray([0.2, 0.7])).tolist() == [0, 1]
