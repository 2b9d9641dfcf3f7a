"""Unknown-domain top-k (``top_k(candidates=None)``): the ranking of the released values and
the choice of the path, a pure function of public parameters."""

from __future__ import annotations

import math

import pytest
from scipy import stats

import dpselect as dp
from dpselect.mechanisms.partition_selection import (
    make_threshold_partition_selection,
    ordered_values,
    threshold_plan,
)
from dpselect.planning.unknown_domain_choice import choose_unknown_domain
from dpselect.recipes.unknown_domain_result import rank_released
from dpselect.sampling import InsecureSeededSource

ALPHA = 1e-6


def _first_before(rank, runs: int, seed: int) -> tuple[int, int]:
    """How often ``a`` is placed before ``b`` when both are returned, over ``runs`` runs of
    thresholding at epsilon 2 (discrete Laplace of scale 0.5: equal noisy counts are frequent)
    on ``a`` and ``b`` with equal counts."""
    hist = {"a": 20, "b": 20, "c": 19, "d": 5}
    plan = threshold_plan("laplace", 2.0, 1e-3, 1)
    src = InsecureSeededSource(seed)
    measurement = make_threshold_partition_selection(plan, counts=True, source=src)
    before = both = 0
    for _ in range(runs):
        got = rank(measurement(hist), 3, src)
        if "a" in got and "b" in got:
            both += 1
            before += got.index("a") < got.index("b")
    return before, both


def _by_value(kept, k, source):  # the bench's old rule: equal noisy counts by value
    return sorted(ordered_values(kept), key=lambda v: -kept[v])[:k]


def test_equal_counts_are_exchangeable_and_a_fixed_order_fails():
    """``a`` and ``b`` have the same count, so with ties in uniformly random order each is
    placed first with probability exactly 1/2 (exchangeable). Two-sided binomial test at
    1e-6; ranking ties by value (``a`` first at every tie, P about 0.78 here) fails it."""
    before, both = _first_before(rank_released, 1500, 11)
    assert both > 1400
    assert stats.binomtest(before, both, 0.5).pvalue > ALPHA
    before, both = _first_before(_by_value, 1500, 12)
    assert stats.binomtest(before, both, 0.5).pvalue < ALPHA


def test_rank_released_orders_by_noisy_count():
    kept = {"x": 5, "y": 9, "z": 7, "w": 9}
    got = rank_released(kept, 3, InsecureSeededSource(3))
    assert set(got[:2]) == {"y", "w"} and got[2] == "z"
    assert rank_released(kept, 10, InsecureSeededSource(3))[-1] == "x"
    assert rank_released({}, 3, InsecureSeededSource(3)) == []


def test_choose_unknown_domain_is_a_pure_function_of_public_parameters():
    grid = [(10, eps, 1e-6, c) for eps in (0.1, 1.0) for c in (1, 5, 10)] + [(3, 0.5, 1e-9, 2)]
    first = [choose_unknown_domain(*args)[0] for args in grid]
    assert first == [choose_unknown_domain(*args)[0] for args in grid]  # deterministic
    for best in first:
        assert best.mechanism in ("laplace_histogram", "gaussian_histogram", "gumbel")
        assert math.isfinite(best.gap)


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_one_contribution_runs_laplace_thresholding_at_scale_one_over_epsilon(eps):
    """With one value per person the default is the Laplace threshold at scale 1/epsilon (the
    mechanism OpenDP's ``then_laplace_threshold`` runs at the same guarantee)."""
    best, _ = choose_unknown_domain(10, eps, 1e-6, 1)
    assert best.mechanism == "laplace_histogram"
    assert best.scale == pytest.approx(1 / eps)


# ------------------------------------------------------------------------------------------
# Policy set union, then the top k


def test_use_policy_top_k_is_a_pure_function_of_public_parameters():
    from dpselect.planning.unknown_domain_plan import (
        POLICY_TOP_K_MIN_CONTRIBUTIONS,
        POLICY_TOP_K_MIN_EPSILON,
        use_policy_top_k,
    )

    grid = [(10, e, d, c, s) for e in (0.1, 0.5, 1.0, 2.0) for d in (1e-6,) for c in (1, 5, 10, 20)
            for s in (False, True)]  # fmt: skip
    first = [use_policy_top_k(*args) for args in grid]
    assert first == [use_policy_top_k(*args) for args in grid]
    for (_, e, _, c, s), got in zip(grid, first, strict=True):
        assert got == (s and c >= POLICY_TOP_K_MIN_CONTRIBUTIONS and e >= POLICY_TOP_K_MIN_EPSILON)


def test_top_k_without_candidates_runs_policy_top_k_with_many_values_and_charges_once(tmp_path):
    import pandas as pd

    from dpselect.accounting.ledger import Ledger
    from dpselect.planning.unknown_domain_choice import POLICY_TOP_K_NAME

    rows = [(f"u{i}", v) for i in range(400) for v in ("a", "b")]
    rows += [(f"w{i}", "c") for i in range(250)] + [(f"x{i}", f"r{i}") for i in range(30)]
    df = pd.DataFrame(rows, columns=["user", "item"])
    book = Ledger.create(tmp_path / "l.db", 2.0, 1e-5)
    r = dp.Session(
        df,
        privacy_unit="user",
        contributions=dp.Contributions(values_per_unit=10),
        ledger=book,
        source=InsecureSeededSource(8),
    ).top_k("item", 2, epsilon=1.0, delta=1e-6, counts=True)
    assert r.mechanism == POLICY_TOP_K_NAME
    assert set(r.candidates) == {"a", "b"} and r.counts is not None and len(r.counts) == 2
    assert r.epsilon <= 1.0 * (1 + 1e-15) and r.delta <= 1e-6 * (1 + 1e-15)
    assert len(book.entries()) == 1
    assert book.spent() == pytest.approx((r.epsilon, r.delta))
    r2 = dp.Session(
        df,
        privacy_unit="user",
        contributions=dp.Contributions(values_per_unit=2),
        source=InsecureSeededSource(8),
    ).top_k("item", 2, epsilon=1.0, delta=1e-6)
    assert r2.mechanism != POLICY_TOP_K_NAME  # thresholding with few values per person


def test_choose_unknown_domain_predicts_from_threshold_and_ranking_noise():
    """The criterion is the threshold plus 0.4 k standard deviations of the ranking noise,
    from public parameters only: flights-like top-10 with 4 values per person at epsilon 0.5
    and a search log's top-50 at epsilon 0.1 run Laplace thresholding (lower ranking noise, a
    threshold close to the Gaussian one), 10 values at epsilon 0.1 Gaussian thresholding
    (half the threshold), and the top 10 with 5 values at epsilon 2 too."""
    from dpselect.planning.unknown_domain_choice import RANKING_SDS_PER_RANK

    best, options = choose_unknown_domain(10, 0.5, 1e-6, 4)
    assert best.mechanism == "laplace_histogram"
    lap = next(o for o in options if o.mechanism == "laplace_histogram")
    assert lap.noise_sd == pytest.approx(math.sqrt(2) * 8.0)
    assert lap.criterion == pytest.approx(lap.threshold + RANKING_SDS_PER_RANK * 10 * lap.noise_sd)
    assert choose_unknown_domain(10, 0.1, 1e-6, 10)[0].mechanism == "gaussian_histogram"
    assert choose_unknown_domain(10, 2.0, 1e-6, 5)[0].mechanism == "gaussian_histogram"
    assert choose_unknown_domain(50, 0.1, 1e-6, 4)[0].mechanism == "laplace_histogram"
    assert best.criterion == min(o.criterion for o in options)


def test_plan_shows_the_unknown_domain_comparison():
    import dpselect as dp

    text = str(dp.preview_top_k(10, None, 0.5, delta=1e-6, max_contributions=4))
    assert "threshold 118" in text and "needed 163.3" in text
    chosen = [line for line in text.splitlines() if line.startswith("* laplace_histogram")]
    assert len(chosen) == 1
