"""The joint mechanism's forward pass on two threads (many intervals) gives the same floats as
on one, and so the same release for the same seeded source."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dpselect.mechanisms import quantile_joint as qj
from dpselect.mechanisms.quantile_continuous import log_lengths
from dpselect.sampling import InsecureSeededSource

DECILES = [Fraction(k, 10) for k in range(1, 10)]


def _inputs(rows: int, seed: int):
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.normal(50, 15, rows), np.full(300, 20.0), [0.0, 100.0]])
    plan = qj._Plan(DECILES, Fraction(1))
    words = qj.joint_move_words(InsecureSeededSource(seed), x.shape[0])
    edges, counts, n = qj.joint_moved_intervals(x, 0.0, 100.0, 0.005, words)
    return plan, log_lengths(edges[:-1], edges[1:]), counts * plan.denom, n


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_forward_on_two_threads_is_the_same_floats(monkeypatch):
    plan, loglen, bc, n = _inputs(40_000, 1)
    assert bc.shape[0] >= qj.THREAD_INTERVALS
    monkeypatch.setattr(qj, "_WORKERS", 2)
    threaded = qj._forward(plan, loglen, bc, n, None)
    monkeypatch.setattr(qj, "_WORKERS", 1)
    alone = qj._forward(plan, loglen, bc, n, None)
    assert np.array_equal(threaded[0], alone[0]) and np.array_equal(threaded[1], alone[1])


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_release_on_two_threads_is_the_same(monkeypatch):
    x = np.random.default_rng(2).normal(50, 15, 30_000)
    out = []
    for workers in (2, 1):
        monkeypatch.setattr(qj, "_WORKERS", workers)
        mech = qj.make_joint_quantiles((0.0, 100.0), DECILES, 1.0, resolution=0.005,
                                       source=InsecureSeededSource(9))  # fmt: skip
        out.append(mech(x))
    assert out[0] == out[1]
