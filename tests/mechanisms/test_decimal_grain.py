"""The decimal grain histogram (dpselect/mechanisms/decimal_grain.py): the per-row grain,
its sensitivity, the noise's scale, and the recording grid read from it."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpselect.core.errors import ParameterError
from dpselect.mechanisms import decimal_grain
from dpselect.mechanisms.decimal_grain import (
    GRAIN_TOLERANCE,
    grain_counts,
    grain_exponents,
    make_grain_histogram,
    on_grid,
    recorded_exponent,
)
from dpselect.planning.contributions import Contributions
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes.quantiles import quantile as recipe_quantile
from dpselect.sampling import InsecureSeededSource

#: Two-sided normal quantile of a 1e-6 false-failure rate.
Z = 4.892

NON_FINITE = [math.nan, math.inf, -math.inf]


def _grain_of(x: float, exponents: list[int]) -> int:
    """The reference: the number of leading candidates the row is on, read from the decimal
    text of the float (``repr``: the shortest text that parses back to it)."""
    if not math.isfinite(x):  # NaN and infinities lie on no grid
        return 0
    from decimal import Decimal

    d = Decimal(repr(x))
    g = 0
    for k in exponents:
        if d % (Decimal(10) ** k) != 0:
            break
        g += 1
    return g


def test_on_grid_reads_the_decimal_the_float_parses_from():
    tenths = np.array([float(f"{i / 10:.1f}") for i in range(-3000, 3000)])
    assert on_grid(tenths, -1).all()
    whole = np.arange(-500, 500, dtype=float)
    assert on_grid(whole, 0).all() and on_grid(whole * 10, 1).all()
    assert not on_grid(np.array([0.25, 12.3, 7.0000001]), 0).any()
    assert not on_grid(np.array([0.25, 0.05]), -1).any() and on_grid(np.array([0.25]), -2).all()
    assert not on_grid(np.array([np.nan, np.inf]), 0).any()
    with pytest.raises(ParameterError, match="exponent"):
        on_grid(whole, 23)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.integers(-10**6, 10**6).map(float),
                          st.integers(-10**6, 10**6).map(lambda i: float(f"{i / 100:.2f}")),
                          st.floats(-1e4, 1e4), st.sampled_from(NON_FINITE)),
                max_size=60))  # fmt: skip
def test_grain_counts_match_the_decimal_reference(rows):
    ks = [-3, -2, -1, 0, 1]
    expected = np.zeros(len(ks) + 1, dtype=np.int64)
    for x in rows:
        expected[_grain_of(x, ks)] += 1
    assert grain_counts(np.array(rows, dtype=float), ks).tolist() == expected.tolist()


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 15])
def test_grain_counts_in_pieces_are_the_whole_column_counts(monkeypatch, chunk):
    # rows of every grain, NaN and infinities among them, over many pieces (the last one
    # short): the counts of on_grid applied grid by grid to the whole column
    rng = np.random.default_rng(chunk)
    parts = [np.round(rng.uniform(-500, 500, 700), d) for d in (-1, 0, 1, 2, 3)]
    x = np.concatenate([*parts, rng.uniform(0, 1, 300), NON_FINITE * 5])
    rng.shuffle(x)
    ks = [-3, -2, -1, 0, 1]
    alive = np.ones(x.shape[0], dtype=bool)
    expected = np.zeros(len(ks) + 1, dtype=np.int64)
    for g, k in enumerate(ks):
        now = alive & on_grid(x, k)
        expected[g] += np.count_nonzero(alive & ~now)
        alive = now
    expected[len(ks)] = np.count_nonzero(alive)
    monkeypatch.setattr(decimal_grain, "GRAIN_CHUNK", chunk)
    assert grain_counts(x, ks).tolist() == expected.tolist()
    assert expected.min() > 0  # every bin is reached
    assert grain_counts(np.array([]), ks).tolist() == [0] * (len(ks) + 1)


def test_one_row_moves_one_bin_and_one_unit_at_most_r():
    rng = np.random.default_rng(0)
    ks = [-2, -1, 0, 1]
    base = np.concatenate([np.round(rng.uniform(0, 100, 200), d) for d in (0, 1, 2)])
    for extra in ([3.14159], [12.0, 12.5, 0.01], [np.nan, 40.0]):
        moved = grain_counts(np.concatenate([base, extra]), ks) - grain_counts(base, ks)
        assert np.abs(moved).sum() == len(extra) and (moved >= 0).all()


def test_exponents_are_public_and_bounded():
    assert grain_exponents(0, 20000, Fraction(10)) == [-1, 0, 1, 2, 3]
    assert grain_exponents(0, 200, Fraction(1, 10)) == [-3, -2, -1, 0, 1]
    # never finer than 2 (hi - lo) / 10^6 nor coarser than (hi - lo) / 2
    assert grain_exponents(0, 1, Fraction(1, 1000)) == [-5, -4, -3, -2, -1]
    for lo, hi, s in ((0, 1e9, Fraction(10**6)), (-5, 5, Fraction(1, 100))):
        for k in grain_exponents(lo, hi, s):
            width = Fraction(hi) - Fraction(lo)
            assert width * 2 / 10**6 <= Fraction(10) ** k <= width / 2


def test_map_is_epsilon_per_unit_and_noise_has_scale_r_over_epsilon():
    """The privacy map, and the noise's scale by its mean absolute value: discrete Laplace of
    scale b has E|Z| = 2q / (1 - q^2), q = exp(-1/b). 12,000 noise values; the tolerance is
    Z standard errors (sd of |Z| is below b): a scale off by a factor 2 is 25 errors away."""
    ks = [-1, 0, 1]
    for r, eps in ((1, Fraction(1, 2)), (3, Fraction(1, 20))):
        m = make_grain_histogram(ks, eps, max_rows=r, source=InsecureSeededSource(r))
        assert m.map(1) == pytest.approx(float(eps)) and m.map(2) >= 2 * float(eps)
        x = np.arange(0, 100, 0.5)  # grains: .5 on 0.1 only (bin 1), integers on 1 (bin 2)...
        exact = grain_counts(x, ks)
        b = r / float(eps)
        draws = np.array([m(x) for _ in range(3000)]) - exact
        q = math.exp(-1 / b)
        mean_abs = 2 * q / (1 - q * q)
        assert abs(np.abs(draws).mean() - mean_abs) < Z * b / math.sqrt(draws.size)


def test_recorded_exponent_reads_the_coarsest_grid_nearly_all_rows_are_on():
    ks = [-2, -1, 0, 1, 2]
    # tenths: rows on 0.01 and 0.1, about 9 in 10 off 1
    assert recorded_exponent([0, 0, 900, 90, 9, 1], ks) == -1
    assert recorded_exponent([1000, 0, 0, 0, 0, 0], ks) is None  # continuous
    # the tolerance: rows off the grid at most GRAIN_TOLERANCE of the total
    at = int(GRAIN_TOLERANCE * 1000)
    assert recorded_exponent([0, 0, at, 1000 - at, 0, 0], ks) == 0
    assert recorded_exponent([0, 0, at + 1, 1000 - at - 1, 0, 0], ks) == -1
    assert recorded_exponent([-5, 3, 0, 0, 0, 0], ks) is None  # a total <= 0
    with pytest.raises(ParameterError, match="one count per grain"):
        recorded_exponent([1, 2], ks)


def test_false_grids_on_continuous_rows_at_the_auto_rules_smallest_n():
    """Continuous rows at the least N the joint mechanism runs on (eps' N = 700 with eps' =
    0.95 eps; the histogram at eps / 20): no grid in 2,000 runs, while rows on tenths find
    0.1 in most runs (the noise of up to five bins of scale 20 / eps against a tolerance of 74
    / eps rows)."""
    rng = np.random.default_rng(1)
    ks = [-3, -2, -1, 0, 1]
    for eps in (Fraction(1, 10), Fraction(1)):
        n = math.ceil(700 / (Fraction(95, 100) * eps))
        cont = rng.uniform(0, 200, n)
        tenths = np.round(rng.uniform(0, 200, n), 1)
        m = make_grain_histogram(ks, eps / 20, source=InsecureSeededSource(7))
        false = sum(recorded_exponent(m(cont), ks) is not None for _ in range(2000))
        found = sum(recorded_exponent(m(tenths), ks) == -1 for _ in range(2000))
        assert false == 0 and found > 1500


def test_auto_quantiles_of_float_prices_come_back_on_their_grid():
    """Whole-dollar prices given as floats: the auto rule reads the grid 1 from the noisy
    histogram and the joint mechanism runs at resolution 0.5, as for an integer column; the
    released values are whole dollars. Continuous rows keep the default from the bounds."""
    rng = np.random.default_rng(2)
    prices = np.round(rng.lognormal(7, 0.8, 20000))
    r = recipe_quantile(
        pd.DataFrame({"p": prices}),
        quantile_request("p", [0.25, 0.5, 0.75], 1.0, bounds=(0, 20000)),
        source=InsecureSeededSource(3),
    )
    assert "recording grid 1 (resolution 0.5)" in r.notes[-1] and r.resolution == 0.5
    assert all(v == round(v) for v in r.values)
    assert "grain" in r.budget_split and r.parameters["noisy_rows"] > 0
    assert r.parameters["grain_histogram"]["recording_grid"] == 1.0
    typed = recipe_quantile(
        pd.DataFrame({"p": prices.astype(np.int64)}),
        quantile_request("p", [0.25, 0.5, 0.75], 1.0, bounds=(0, 20000)),
        source=InsecureSeededSource(3),
    )
    assert "grain" not in typed.budget_split and typed.resolution == 0.5  # the schema says 1
    cont = recipe_quantile(
        pd.DataFrame({"p": prices + rng.uniform(0, 1, prices.shape[0])}),
        quantile_request("p", [0.25, 0.5, 0.75], 1.0, bounds=(0, 20000)),
        source=InsecureSeededSource(3),
    )
    assert "no recording grid" in cont.notes[-1] and cont.resolution == 5.0


def test_each_group_of_a_grouped_release_reads_its_own_grid():
    rng = np.random.default_rng(4)
    frame = pd.DataFrame(
        {"g": np.repeat(["a", "b"], 5000),
         "v": np.concatenate([np.round(rng.lognormal(7, 0.8, 5000)),
                              np.round(rng.uniform(0, 100, 5000), 1)])}
    )  # fmt: skip
    r = recipe_quantile(
        frame,
        quantile_request("v", [0.25, 0.5, 0.75], 2.0, bounds=(0, 20000), by="g", groups=["a", "b"]),
        source=InsecureSeededSource(5),
    )
    assert "decimal grain" in r.mechanism
    assert [g.resolution for g in r.releases] == [0.5, 0.05]


def test_with_a_privacy_unit_the_histogram_counts_kept_rows_at_scale_r_over_eps_c():
    """Each person keeps at most r rows: the histogram of the kept rows moves by at most r in
    L1 per person, and its noise has scale r / (eps / 20)."""
    rng = np.random.default_rng(6)
    frame = pd.DataFrame({"user": np.repeat(np.arange(4000), 5),
                          "v": np.round(rng.uniform(0, 1000, 20000), 1)})  # fmt: skip
    r = recipe_quantile(
        frame,
        quantile_request(
            "v",
            [0.25, 0.5, 0.75],
            1.0,
            bounds=(0, 1000),
            privacy_unit="user",
            contributions=Contributions(values_per_unit=3),
        ),
        source=InsecureSeededSource(7),
    )
    assert "discrete Laplace of scale 60," in r.notes[-1]
    assert abs(r.parameters["noisy_rows"] - 12000) < 60 * 30  # 4,000 persons x 3 kept rows
    assert r.parameters["grain_histogram"]["recording_grid"] == 0.1 and r.resolution == 0.05
