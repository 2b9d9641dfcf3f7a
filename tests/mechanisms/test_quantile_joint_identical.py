"""The joint mechanism's fast code against its frozen reference: bit-identical, same source.

:mod:`tests.mechanisms.joint_reference` is the module before its speed-up (batched range sums,
the six chains of a block side by side, the sparse table's kinds together, moves computed in
place). Every change keeps the sequence of float operations behind each value, so the forward
pass's log-weights, the range sums, the moved intervals and the released values must be equal
bit for bit, on many random inputs and for every ``SUM_BLOCK`` the tests use.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dpselect.mechanisms import quantile_joint as qj
from dpselect.sampling.source import InsecureSeededSource

from . import joint_reference as ref


def _same(x, y) -> bool:
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    return x.shape == y.shape and np.array_equal(x.view(np.int64), y.view(np.int64))


def test_logaddexp_is_bit_identical():
    rng = np.random.default_rng(1)
    for scale in (1e-3, 1.0, 30.0, 1e5, 1e300):
        a, b = rng.normal(0, scale, 2000), rng.normal(0, scale, 2000)
        a[rng.random(2000) < 0.1] = -np.inf
        b[rng.random(2000) < 0.1] = -np.inf
        tie = rng.random(2000) < 0.05
        b[tie] = a[tie]
        assert _same(qj.logaddexp(a, b), ref.logaddexp(a, b))
        assert _same(qj.logaddexp(a[::3], b[::3]), ref.logaddexp(a[::3], b[::3]))


@pytest.mark.parametrize(("block", "held"), [(1, 1 << 20), (2, 1 << 20), (4, 3), (64, 100)])
def test_blocked_sums_are_bit_identical(monkeypatch, block, held):
    """Every SUM_BLOCK the tests use; ``held``: the terms of in-block ranges gathered at once
    (small: the ranges summed in several parts)."""
    monkeypatch.setattr(qj, "SUM_BLOCK", block)
    monkeypatch.setattr(qj, "_INSIDE_TERMS", held)
    monkeypatch.setattr(ref, "SUM_BLOCK", block)
    rng = np.random.default_rng(block)
    for n in (1, 2, 3, 63, 64, 65, 200, 1000, 5000):
        a = rng.normal(0, 300, n)
        a[rng.random(n) < 0.1] = -np.inf
        bc = np.sort(rng.integers(0, 10**6, n)) * 3
        start, stop = rng.integers(0, n + 1, 400), rng.integers(0, n + 1, 400)
        start, stop = np.minimum(start, stop), np.maximum(start, stop)
        old, new = ref._BlockedSums(a, bc, 0.01), qj._BlockedSums(a, bc, 0.01)
        last = bc[np.maximum(stop - 1, 0)] + rng.integers(0, 9, 400)
        first = bc[np.minimum(start, n - 1)] - 1 - rng.integers(0, 9, 400)
        for kind, pivot in (("plain", None), ("left", last), ("right", first)):
            want = old.query(kind, start.copy(), stop.copy(), pivot)
            assert _same(new.query(kind, start.copy(), stop.copy(), pivot), want), (n, kind)


def _data(rng, kind: int, n: int):
    if kind == 0:
        return rng.normal(50, 10, n)
    if kind == 1:
        return np.round(rng.exponential(5, n), 1)  # ties and a block at 0
    if kind == 2:
        return rng.integers(0, 20, n).astype(float)
    return np.concatenate([rng.uniform(-10, 110, n), [np.nan, 0.0, 100.0]])


CASES = [(64, 1 << 20, 30), (64, 8, 8), (2, 1 << 20, 6), (1, 1 << 20, 3)]


@pytest.mark.parametrize(("block", "held", "trials"), CASES)
def test_forward_pass_and_releases_are_bit_identical(monkeypatch, block, held, trials):
    """``held``: small, the dynamic program's in-block ranges are summed after the chains
    (:meth:`_BlockedSums._inside`) instead of alongside them."""
    monkeypatch.setattr(qj, "SUM_BLOCK", block)
    monkeypatch.setattr(ref, "SUM_BLOCK", block)
    monkeypatch.setattr(qj, "_INSIDE_TERMS", held)
    rng = np.random.default_rng(5 + block + held)
    for trial in range(trials):
        x = _data(rng, trial % 4, int(rng.integers(1, 3000)))
        levels = sorted({int(v) for v in rng.integers(1, 100, int(rng.integers(1, 12)))})
        qs = [Fraction(v, 100) for v in levels]
        eps = float(rng.choice([0.1, 0.5, 1.0, 3.0, 50.0]))
        resolution = [0, None, 0.3][trial % 3]
        seed = int(rng.integers(0, 2**31))
        new = qj.make_joint_quantiles((0.0, 100.0), qs, eps, resolution=resolution,
                                      source=InsecureSeededSource(seed))  # fmt: skip
        old = ref.make_joint_quantiles((0.0, 100.0), qs, eps, resolution=resolution,
                                       source=InsecureSeededSource(seed))  # fmt: skip
        for _ in range(3):
            assert _same(new(x), old(x)), trial
        plan, old_plan = qj._Plan(qs, Fraction(eps)), ref._Plan(qs, Fraction(eps))
        edges, counts, n = qj.joint_intervals(x, 0.0, 100.0)
        bc = counts * plan.denom
        loglen = qj.log_lengths(edges[:-1], edges[1:])
        got, cost = qj._forward(plan, loglen, bc, n, None)
        want, old_cost = ref._forward(old_plan, loglen, bc, n, None)
        assert _same(got, want) and _same(cost, old_cost), trial


def test_moved_intervals_are_bit_identical():
    rng = np.random.default_rng(7)
    for trial in range(30):
        n = int(rng.integers(1, 20000))
        x = np.concatenate([rng.normal(50, 30, n), [0.0, 100.0, -5.0, 105.0]])
        words = rng.integers(0, 2**64, x.shape[0], dtype=np.uint64)
        w = float(rng.choice([0.001, 0.05, 0.3, 2.0]))
        got = qj.joint_moved_intervals(x, 0.0, 100.0, w, words)
        want = ref.joint_moved_intervals(x, 0.0, 100.0, w, words)
        assert _same(got[0], want[0]) and np.array_equal(got[1], want[1]), trial
        assert got[2] == want[2]
        short = (list(x[:50]), 0.0, 100.0, w, list(words[:50]))
        got, want = qj.joint_moved_intervals(*short), ref.joint_moved_intervals(*short)
        assert _same(got[0], want[0]) and np.array_equal(got[1], want[1])
