"""Digital-goods pricing (seed 003): the worked example, the law, the revenue guarantee."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpselect.accounting.ledger import Ledger
from dpselect.core.errors import DataError, ParameterError
from dpselect.planning.price_request import price_request
from dpselect.recipes import best_price, default_price_step, preview, price_grid
from dpselect.recipes.pricing import make_price_mechanism, revenue_scores
from dpselect.sampling import InsecureSeededSource
from tests.gof import ALPHA, assert_fits

SEED_VALUATIONS = [1.0, 1.0, 3.01]


def softmax(logits):
    w = np.exp(np.asarray(logits, dtype=float) - np.max(logits))
    return w / w.sum()


def revenue(valuations, price):
    return price * sum(v >= price for v in valuations)


def test_seed_003_revenues():
    # "$3 at $1, $1.01 at $1.01, $3.01 at $3.01, $0 at $3.02."
    grid = price_grid(prices=[1, 1.01, 3.01, 3.02], max_price=4)
    units = revenue_scores(SEED_VALUATIONS, grid)
    assert [u * grid.unit for u in units] == [3, Fraction("1.01"), Fraction("3.01"), 0]


def test_seed_003_example_law_and_probabilities():
    grid = price_grid(prices=[1, 1.01, 3.01, 3.02], max_price=4)
    m = make_price_mechanism(grid, 2.0, source=InsecureSeededSource(1))
    revenues = [3, 1.01, 3.01, 0]
    probs = softmax(np.array(revenues) * 2.0 / 3.02)  # monotonic: exp(eps s / Delta)
    tally = Counter(m(SEED_VALUATIONS) for _ in range(3000))
    assert_fits([tally[p] for p in grid.prices], probs)
    assert m.map(1) <= 2.0
    # The preview gives the same law before any data is touched.
    law = preview(dict(zip(grid.prices, revenues, strict=True)), 2.0, 3.02, monotonic=True)
    assert np.allclose(law.rows[0].probabilities, probs, rtol=1e-12)


def test_seed_003_example_on_a_cent_grid():
    # Prices $0.01 ... $4.00: with three buyers the mechanism can do little (Delta = 4).
    cents = [round(0.01 * k, 2) for k in range(1, 401)]
    grid = price_grid(prices=cents, max_price=4)
    assert grid.unit == Fraction(1, 100) and len(grid.prices) == 400
    revenues = [float(u * grid.unit) for u in revenue_scores(SEED_VALUATIONS, grid)]
    assert max(revenues) == pytest.approx(3.01)
    p = preview(revenues, [1.0, 10.0, 100.0], sensitivity=4, monotonic=True)
    expected = [
        sum(pr * r for pr, r in zip(row.probabilities, revenues, strict=True)) for row in p.rows
    ]
    assert expected[0] < expected[1] < expected[2] <= 3.01
    # eps = 100: $3.01 is the most likely single price, but prices just below it are close.
    assert grid.prices[int(np.argmax(p.rows[2].probabilities))] == 3.01
    assert 0.1 < p.rows[2].p_best < 0.3


def test_default_price_step_is_the_seeds():
    assert default_price_step(1000, 1.0) == pytest.approx(math.log(1000) / 1000)
    assert default_price_step(1000, 0.5, max_price=10) == pytest.approx(10 * math.log(1000) / 500)
    grid = price_grid(price_step=0.3, max_price=1.0)
    assert grid.prices == pytest.approx([0.3, 0.6, 0.9]) and grid.multiples == [1, 2, 3]


def test_best_price_result_and_ledger(tmp_path):
    book = Ledger.create(tmp_path / "l.db", 1.0)
    r = best_price(
        SEED_VALUATIONS,
        price_request(1.0, prices=[1, 1.01, 3.01, 3.02], max_price=4),
        ledger=book,
        source=InsecureSeededSource(2),
    )
    assert r.price in (1, 1.01, 3.01, 3.02) and r.epsilon == 1.0 and r.n_prices == 4
    assert r.discretization_loss is None and "best listed price" in r.accuracy
    assert book.spent()[0] == 1.0 and book.entries()[-1].mechanism == "best_price"
    assert r.to_dict()["price"] == r.price and "price:" in str(r)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({}, ParameterError, "public number of buyers"),
        ({"n": 1}, ParameterError, "at least 2"),
        ({"price_step": 2.0}, ParameterError, "at most max_price"),
        ({"price_step": 1e-9}, ParameterError, "grid prices"),
        ({"price_step": 0.1, "prices": [0.5]}, ParameterError, "not both"),
        ({"prices": [0.5, 2.0]}, ParameterError, "at most max_price"),
        ({"prices": [0.5, -1]}, ParameterError, "positive"),
        ({"prices": [1 / 3, 0.5]}, ParameterError, "common unit"),
        ({"prices": [0.5], "epsilon": -1}, ParameterError, "epsilon"),
        ({"prices": [0.5], "confidence": 1.0}, ParameterError, "confidence"),
        ({"prices": [0.5], "valuations": "a string"}, DataError, "sequence"),
    ],
)
def test_best_price_errors(kwargs, error, match):
    args = {"valuations": [0.2, 0.9], "epsilon": 1.0, **kwargs}
    with pytest.raises(error, match=match):
        valuations = args.pop("valuations")
        best_price(valuations, price_request(args.pop("epsilon"), **args))


def test_revenue_guarantee_holds_over_many_runs():
    """A large synthetic population: revenue against the optimum and the seed's bound."""
    rng = np.random.default_rng(3)
    n, eps, conf = 1000, 1.0, 0.95
    valuations = rng.beta(2, 5, n)
    r = best_price(valuations, price_request(eps, n=n))  # alpha = ln(n) / (n eps)
    grid = price_grid(price_step=r.price_step, max_price=1.0)
    m = make_price_mechanism(grid, eps, source=InsecureSeededSource(4))
    v = np.sort(valuations)
    gamma = max(v[i] * (n - i) for i in range(n))  # best revenue at any price in [0, 1]
    revenues = {p: revenue(v, p) for p in grid.prices}
    opt = max(revenues.values())
    assert opt >= gamma - r.price_step * n  # the discretisation argument
    runs = 400
    got = np.array([revenues[m(valuations)] for _ in range(runs)])
    limit = stats.binom.isf(ALPHA, runs, 1 - conf)
    assert (got < opt - r.selection_loss).sum() <= limit
    assert (got < gamma - r.price_step * n - r.selection_loss).sum() <= limit
    # And the mechanism does much better than its worst case: typically a few percent off.
    assert np.median(got) > 0.9 * opt


class _BadFloat:
    def __float__(self):
        raise RuntimeError("boom")


ODD_VALUES = ["abc", None, [1, 2], b"\xff", 10**400, math.nan, _BadFloat(), {"x": 1}, "", "1e"]


@pytest.mark.parametrize("odd", ODD_VALUES, ids=[repr(v)[:12] for v in ODD_VALUES])
@pytest.mark.parametrize("where", [0, 2, 4])
def test_best_price_in_memory_value_that_does_not_convert_is_missing(tmp_path, odd, where):
    """Issue 15, item 7: best_price([1, 2, 3, "abc"], ...) raised before the charge. A value
    that does not convert is missing, as in a table: the release is the same as without it
    (same seeded draws), the ledger is charged, and nothing raises, wherever the value is."""
    base = [0.2, 0.9, 0.5, 0.7]
    with_odd = [*base[:where], odd, *base[where:]]
    book = Ledger.create(tmp_path / "l.db", 10.0)
    prices = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    for_odd = best_price(
        with_odd, price_request(1.0, prices=prices), ledger=book, source=InsecureSeededSource(3)
    )
    plain = best_price(base, price_request(1.0, prices=prices), source=InsecureSeededSource(3))
    assert for_odd.price == plain.price
    assert book.spent()[0] == 1.0


def test_revenue_scores_read_each_value_on_its_own():
    grid = price_grid(prices=[1, 2, 3], max_price=3)
    mixed = [1, "2", " 3 ", "abc", None, [4], np.float32(2.5), True]
    # 1, 2, 3, 2.5 and True (= 1.0, as a table's BOOLEAN -> DOUBLE) are read; the rest is missing
    assert revenue_scores(mixed, grid) == revenue_scores([1, 2, 3, 2.5, 1.0], grid)
    assert revenue_scores(np.asarray(mixed, dtype=object), grid) == revenue_scores(mixed, grid)
    assert revenue_scores([], grid) == [0, 0, 0]
