"""The limited-domain top-k's map composes its rounds by the tightest valid theorem.

Checks: the map equals what the recipe charges the ledger; it never states less than the
optimal composition of ``k`` bounded-range mechanisms (Dong, Durfee and Rogers 2020, Theorem 3:
the least epsilon any valid bound can state); it is never above DR19's closed forms; and on
tiny neighbouring histograms the exact output laws (Plackett-Luce, cut at bottom) need no more
than the map's delta at the map's epsilon, while a broken variant (threshold without its
``ln(k_bar / delta)`` term) does.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpselect as dp
from dpselect.accounting import Ledger
from dpselect.accounting.optimal import bounded_range_composition_delta
from dpselect.core.errors import ParameterError
from dpselect.mechanisms.choice import composed_epsilon, per_round_epsilon
from dpselect.mechanisms.limited_domain import (
    DR19_THEOREM,
    limited_domain_accounting,
    limited_domain_epsilon,
    limited_domain_threshold,
    make_limited_domain_top_k,
)
from dpselect.sampling.source import InsecureSeededSource
from tests.sampling.laws import plackett_luce

CASES = [(1, 1.0, 1e-6), (2, 0.5, 1e-6), (5, 0.1, 1e-6), (10, 1.0, 1e-6), (20, 2.0, 1e-5)]


@pytest.mark.parametrize("k, eps, delta", CASES)
def test_map_between_the_optimal_composition_and_dr19(k, eps, delta):
    per_round = per_round_epsilon("bounded_range", k, eps, delta / 2)[0]
    m = make_limited_domain_top_k(k, k + 3, per_round, delta=delta / 2, delta_prime=delta / 2)
    e, d = m.map(1)
    assert d == delta and e <= eps
    # never above the paper's closed forms, and equal to the library's composition
    assert e <= limited_domain_epsilon(per_round, k, delta / 2)
    assert e == composed_epsilon("bounded_range", k, per_round, delta / 2)[0]
    # never under-states: the optimal (non-adaptive) composition of k per_round-bounded-range
    # mechanisms needs at most delta' at the map's epsilon (certified, rounded up) ...
    assert bounded_range_composition_delta(per_round, k, e) <= delta / 2
    # ... and the map is not loose by a factor: at 0.9 of it the optimum needs more than delta'
    assert bounded_range_composition_delta(per_round, k, 0.9 * e) > delta / 2


def test_dr19_accounting_keeps_the_closed_forms():
    m = make_limited_domain_top_k(10, 20, 0.1, delta=1e-6, delta_prime=1e-6, accounting="dr19")
    assert math.isclose(m.map(1)[0], 0.8811290681345552, rel_tol=1e-12)
    tight = make_limited_domain_top_k(10, 20, 0.1, delta=1e-6, delta_prime=1e-6)
    assert tight.map(1)[0] < 0.8811290681345552 * 0.9  # Renyi of bounded-range curves
    assert tight.map(1)[1] == 2e-6
    # delta' = 0: both are k eps (basic composition), the closed form
    assert make_limited_domain_top_k(3, 5, 0.5, delta=1e-5).map(1) == (1.5, 1e-5)
    assert limited_domain_accounting(0.5, 3, 0)[1] == DR19_THEOREM
    with pytest.raises(ParameterError):
        make_limited_domain_top_k(3, 5, 0.5, delta=1e-5, accounting="loose")  # type: ignore[arg-type]


def test_per_round_epsilon_is_rounded_up_and_slack_down():
    """A Fraction per-round epsilon that is not a float: the bound is for a larger one."""
    e, theorem = limited_domain_accounting(Fraction(1, 3), 4, Fraction(1, 3 * 10**6))
    assert e >= composed_epsilon("bounded_range", 4, 1 / 3, 1 / (3 * 10**6))[0]
    assert theorem != DR19_THEOREM


def test_ledger_is_charged_what_the_map_states(tmp_path):
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"site": [f"s{int(i)}" for i in rng.zipf(1.5, 2000) if i < 200]})
    path = tmp_path / "ledger.db"
    Ledger.create(path, 10.0, 1e-4)
    k, eps, delta = 4, 1.0, 1e-6
    out = dp.Session(frame, ledger=str(path), source=InsecureSeededSource(3)).top_k(
        "site", k, epsilon=eps, delta=delta, mechanism="gumbel"
    )
    (entry,) = Ledger.open(path).entries()
    per_round = per_round_epsilon("bounded_range", k, eps, delta / 2)[0]
    m = make_limited_domain_top_k(k, k + 10, per_round, delta=delta / 2, delta_prime=delta / 2)
    e, d = m.map(1)
    assert entry.charged_epsilon == Fraction(e) and entry.charged_delta == Fraction(d)
    assert out.epsilon == e and out.delta == d
    assert out.parameters["accounting"] == limited_domain_accounting(per_round, k, delta / 2)[1]


# ------------------------------------------------------------------------------------------
# Brute force on tiny histograms: the exact law against the map


def _law(hist, k, k_bar, eps, bottom):
    """The exact output law of make_limited_domain_top_k (its docstring's algorithm)."""
    ranked = sorted(((v, c) for v, c in hist.items() if c > 0), key=lambda p: p[0])
    ranked.sort(key=lambda p: p[1], reverse=True)
    top = ranked[:k_bar]
    base = ranked[k_bar][1] if len(ranked) > k_bar else 0
    shifts = [c - base for _, c in top] + [-base] * (k_bar - len(top)) + [bottom]
    outcomes, probs = plackett_luce(shifts, 1 / eps, k)
    law: dict[tuple, float] = {}
    for outcome, p in zip(outcomes, probs, strict=True):
        released = []
        for i in outcome:
            if i >= len(top):
                break
            released.append(top[i][0])
        law[tuple(released)] = law.get(tuple(released), 0.0) + float(p)
    return law


def _delta_at(p, q, eps):
    keys = set(p) | set(q)
    return sum(max(p.get(o, 0.0) - math.exp(eps) * q.get(o, 0.0), 0.0) for o in keys)


def _neighbours(hist, l0):
    """Every dataset with one more person, who adds 1 to at most l0 values (one may be new)."""
    values = [*hist, "new"]
    for size in range(1, l0 + 1):
        for chosen in itertools.combinations(values, size):
            out = dict(hist)
            for v in chosen:
                out[v] = out.get(v, 0) + 1
            yield out


def _worst_delta(hist, k, k_bar, per_round, d_thr, l0, eps_out, bottom):
    worst = 0.0
    p = _law(hist, k, k_bar, per_round, bottom)
    for other in _neighbours(hist, l0):
        q = _law(other, k, k_bar, per_round, bottom)
        worst = max(worst, _delta_at(p, q, eps_out), _delta_at(q, p, eps_out))
    return worst


@pytest.mark.parametrize(
    "hist",
    [
        {"a": 5, "b": 4, "c": 3, "d": 1},
        {"a": 2, "b": 2, "c": 2},
        {"a": 1},
        {"a": 3, "b": 3, "c": 2, "d": 2, "e": 1},
    ],
)
def test_exact_laws_of_neighbours_fit_the_map(hist):
    k, k_bar, l0 = 2, 3, 2
    per_round, d_thr, d_prime = 1.0, 0.05, 0.01
    m = make_limited_domain_top_k(
        k, k_bar, per_round, delta=d_thr, max_contributions=l0, delta_prime=d_prime
    )
    e, d = m.map(1)
    bottom = limited_domain_threshold(per_round, d_thr, k_bar, l0)
    assert _worst_delta(hist, k, k_bar, per_round, d_thr, l0, e, bottom) <= d


def test_brute_force_catches_a_threshold_without_its_log_term():
    hist = {"a": 3, "b": 3, "c": 2, "d": 2, "e": 1}
    k, k_bar, l0 = 2, 3, 2
    per_round, d_thr, d_prime = 1.0, 0.05, 0.01
    e, d = make_limited_domain_top_k(
        k, k_bar, per_round, delta=d_thr, max_contributions=l0, delta_prime=d_prime
    ).map(1)
    assert _worst_delta(hist, k, k_bar, per_round, d_thr, l0, e, 1.0) > d  # broken: fails


def test_brute_force_can_fail_at_half_the_maps_epsilon():
    hist = {"a": 5, "b": 4, "c": 3, "d": 1}
    k, k_bar, l0 = 2, 3, 2
    m = make_limited_domain_top_k(k, k_bar, 1.0, delta=0.05, max_contributions=l0, delta_prime=0.01)
    e, d = m.map(1)
    bottom = limited_domain_threshold(1.0, 0.05, k_bar, l0)
    assert _worst_delta(hist, k, k_bar, 1.0, 0.05, l0, e / 2, bottom) > d  # 0.085 > 0.06
