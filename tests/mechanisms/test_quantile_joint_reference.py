"""The joint mechanism's fast code against exact sums and against its frozen reference.

The range sums (:class:`dpselect.mechanisms.quantile_joint_sums.BlockedSums`: doubling inside
blocks and over them, every range's parts summed at once) take their float operations in
another order than :mod:`tests.mechanisms.joint_reference` (the module before its speed-ups,
one chain of ``logaddexp`` a block), so their floats differ by rounding. The tests here check
what docs/quantiles.md ("Exactness") states: every range sum within the per-operation error
times the operations a value passes, against an exact sum in python-flint's ``arb``, for every
block size, with ``-inf`` terms and empty ranges; the forward pass within the bound's ``2^-22``
a level of the reference's; and the moved intervals (unchanged code) bit for bit. The law
itself is checked by simulation in tests/recipes/test_quantiles_joint.py.
"""

from __future__ import annotations

import math
from fractions import Fraction

import flint
import numpy as np
import pytest

from dpselect.mechanisms import quantile_joint as qj
from dpselect.mechanisms import quantile_joint_moves as qjm
from dpselect.mechanisms import quantile_joint_parameters as qjp
from dpselect.mechanisms import quantile_joint_sums as qjs

from . import joint_reference as ref

#: The per-operation error docs/quantiles.md assumes: ``2^-53 |result| + 2^-49``.
REL, ABS = 2.0**-53, 2.0**-49


def _same(x, y) -> bool:
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    return x.shape == y.shape and np.array_equal(x.view(np.int64), y.view(np.int64))


def _exact_logaddexp(a: float, b: float) -> flint.arb:
    top, low = max(a, b), min(a, b)
    if low == -math.inf:
        return flint.arb(top)
    return flint.arb(top) + (1 + (flint.arb(low) - flint.arb(top)).exp()).log()


def test_logaddexp_within_one_operation_and_exact_on_empty_sums():
    """max + log(1 + exp(-|a - b|)) with its argument floored at -40: within one operation's
    error of the exact value (arb, 200 bits), the floor changes no float, -inf is neutral."""
    rng = np.random.default_rng(1)
    for scale in (1e-3, 1.0, 30.0, 1e5, 1e300):
        a, b = rng.normal(0, scale, 2000), rng.normal(0, scale, 2000)
        a[rng.random(2000) < 0.1] = -np.inf
        b[rng.random(2000) < 0.1] = -np.inf
        tie = rng.random(2000) < 0.05
        b[tie] = a[tie]
        got = qjs.logaddexp(a, b)
        with flint.ctx.workprec(200):
            for x, y, g in list(zip(a, b, got, strict=True))[::7]:
                if x == y == -math.inf:
                    assert g == -math.inf
                    continue
                exact = _exact_logaddexp(float(x), float(y))
                assert abs(exact - flint.arb(float(g))) <= REL * abs(float(g)) + ABS
        top = np.maximum(a, b)
        assert _same(got[np.isneginf(b)], a[np.isneginf(b)])  # logaddexp(x, -inf) = x
        # the floor: 1 + exp(d) is exactly 1 for every d <= -40 (so flooring changes nothing)
        with np.errstate(invalid="ignore"):
            d = np.minimum(a, b) - top
        low = d[np.isfinite(d) & (d <= -40)]
        assert np.all(1.0 + np.exp(low) == 1.0)
    assert 1.0 + math.exp(-40.0) == 1.0 and 1.0 + math.exp(-36.0) > 1.0


def _exact_range_sums(a, bc, factor, kind, start, stop, pivot):
    c = flint.arb(factor)
    out = []
    for s, e, p in zip(start, stop, pivot, strict=True):
        total = flint.arb(0)
        for i in range(int(s), int(e)):
            if a[i] == -math.inf:
                continue
            x = flint.arb(float(a[i]))
            if kind == "left":
                x -= c * int(p - bc[i])
            elif kind == "right":
                x -= c * int(bc[i] - p)
            total += x.exp()
        out.append(None if total == 0 else total.log())
    return out


@pytest.mark.parametrize("levels", [0, 1, 2, 3, None])
def test_range_sums_within_the_bound_against_arb(monkeypatch, levels):
    """Every path of _BlockedSums (one leaf; inside one block at every level; across blocks
    with none, one and two sparse-table entries; empty ranges; -inf terms) within ``k``
    operations of the exact sum, ``k`` the operations a value passes (the block's levels, the
    table's, one shift and one sum of the parts: docs/quantiles.md)."""
    if levels is not None:
        monkeypatch.setattr(qjs, "_leaf_levels", lambda n: levels)
    rng = np.random.default_rng(17 if levels is None else levels)
    for n in (1, 2, 3, 7, 8, 9, 33, 64, 150):
        a = rng.normal(0, 30, n)
        a[rng.random(n) < 0.15] = -np.inf
        bc = np.cumsum(rng.integers(0, 40, n)) * 3
        start, stop = rng.integers(0, n + 1, 60), rng.integers(0, n + 1, 60)
        start, stop = np.minimum(start, stop), np.maximum(start, stop)
        sums = qjs.BlockedSums(a, bc, 0.05)
        ops = sums.h + sums.table_levels + 2 + 8  # a _log_sum_rows counts as 8 operations
        last = bc[np.maximum(stop - 1, 0)] + rng.integers(0, 9, 60)
        first = bc[np.minimum(start, n - 1)] - 1 - rng.integers(0, 9, 60)
        with flint.ctx.workprec(200):
            for kind, pivot in (("plain", None), ("left", last), ("right", first)):
                got = sums.query(kind, start.copy(), stop.copy(), pivot)
                pv = np.zeros(60, dtype=np.int64) if pivot is None else pivot
                want = _exact_range_sums(a, bc, 0.05, kind, start, stop, pv)
                for g, w in zip(got, want, strict=True):
                    if w is None:
                        assert g == -math.inf, (n, kind)
                        continue
                    # every value on the way is at most this large (the terms, their shifts)
                    size = float(np.max(np.abs(a[np.isfinite(a)]))) + 0.05 * float(bc[-1]) + 10
                    bound = ops * (REL * size + ABS)
                    assert abs(w - flint.arb(float(g))) <= bound, (n, kind, levels)


def _data(rng, kind: int, n: int):
    if kind == 0:
        return rng.normal(50, 10, n)
    if kind == 1:
        return np.round(rng.exponential(5, n), 1)  # ties and a block at 0
    if kind == 2:
        return rng.integers(0, 20, n).astype(float)
    return np.concatenate([rng.uniform(-10, 110, n), [np.nan, 0.0, 100.0]])


@pytest.mark.parametrize("levels", [None, 0, 2])
def test_forward_pass_within_the_bound_of_the_reference(monkeypatch, levels):
    """The forward pass's log-weights against the reference's: the same ``-inf`` and, level
    ``j`` (0-based), within ``2 j JOINT_LOG_ERROR`` (each level's local error is at most
    ``JOINT_LOG_ERROR`` in both, and an error in the previous level passes through at most
    unchanged: docs/quantiles.md), on many inputs, levels and epsilons (capped terms at 50)."""
    if levels is not None:
        monkeypatch.setattr(qjs, "_leaf_levels", lambda n: levels)
    rng = np.random.default_rng(5 if levels is None else 6 + levels)
    eta = float(qjp.JOINT_LOG_ERROR)
    for trial in range(24 if levels is None else 8):
        x = _data(rng, trial % 4, int(rng.integers(1, 3000)))
        levels_q = sorted({int(v) for v in rng.integers(1, 100, int(rng.integers(1, 12)))})
        qs = [Fraction(v, 100) for v in levels_q]
        eps = float(rng.choice([0.1, 0.5, 1.0, 3.0, 50.0]))
        plan, old_plan = qj._Plan(qs, Fraction(eps)), ref._Plan(qs, Fraction(eps))
        edges, counts, n = qjm.joint_intervals(x, 0.0, 100.0)
        bc = counts * plan.denom
        loglen = qj.log_lengths(edges[:-1], edges[1:])
        got, cost = qj._forward(plan, loglen, bc, n, None)
        want, old_cost = ref._forward(old_plan, loglen, bc, n, None)
        assert _same(cost, old_cost)
        assert np.array_equal(np.isfinite(got), np.isfinite(want)), trial
        assert np.all(got[~np.isfinite(want)] == want[~np.isfinite(want)])
        for j in range(plan.m):
            ok = np.isfinite(want[j])
            assert np.all(np.abs(got[j][ok] - want[j][ok]) <= 2 * j * eta), (trial, j)


def test_repeat_rows_are_the_same_floats_in_both_passes():
    """The forward pass sums, and the backward pass draws from, the repeat rows of
    ``_repeats``: bit for bit ``ref.repeat_row`` of each ``r`` (the telescoping argument of
    docs/quantiles.md needs both passes to read the same floats)."""
    rng = np.random.default_rng(3)
    for m in (1, 2, 5, 9, 20):
        plan = qj._Plan([Fraction(k, m + 1) for k in range(1, m + 1)], Fraction(1))
        alpha1 = rng.normal(0, 100, (m, 500))
        alpha1[rng.random((m, 500)) < 0.1] = -np.inf
        self_cost, loglen = np.abs(rng.normal(0, 50, m + 1)), rng.normal(0, 3, 500)
        for j in range(m):
            for stop in (None, 37, 500):
                rows = qj._repeats(plan, alpha1, self_cost, loglen, j, stop)
                for r in range(1, j + 2):
                    one = ref.repeat_row(plan, alpha1, self_cost, loglen, j, r, stop)
                    assert _same(rows[r - 1], one), (m, j, r, stop)


def test_moved_intervals_are_bit_identical():
    rng = np.random.default_rng(7)
    for trial in range(30):
        n = int(rng.integers(1, 20000))
        x = np.concatenate([rng.normal(50, 30, n), [0.0, 100.0, -5.0, 105.0]])
        words = rng.integers(0, 2**64, x.shape[0], dtype=np.uint64)
        w = float(rng.choice([0.001, 0.05, 0.3, 2.0]))
        got = qjm.joint_moved_intervals(x, 0.0, 100.0, w, words)
        want = ref.joint_moved_intervals(x, 0.0, 100.0, w, words)
        assert _same(got[0], want[0]) and np.array_equal(got[1], want[1]), trial
        assert got[2] == want[2]
        short = (list(x[:50]), 0.0, 100.0, w, list(words[:50]))
        got, want = qjm.joint_moved_intervals(*short), ref.joint_moved_intervals(*short)
        assert _same(got[0], want[0]) and np.array_equal(got[1], want[1])
