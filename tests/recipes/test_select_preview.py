"""Generic selection and previews; seed 002's hair-colour example reproduced."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from dpselect.accounting.ledger import Ledger
from dpselect.core.errors import BudgetExceeded, ParameterError
from dpselect.mechanisms.utility import hair_colour_example
from dpselect.recipes import plot_preview, preview, select
from dpselect.sampling import InsecureSeededSource
from tests.gof import assert_fits, chi2_statistic, chi2_threshold

HAIR = {"dark": 500, "blond": 400, "brown": 400, "red": 400}


def test_hair_colour_bound_and_exact_probability():
    p = preview(HAIR, 0.1)
    row = p.rows[0]
    # Seed 002: P[not 'dark'] <= 4 e^-5 <= 0.027 (t = 5 - ln 4).
    assert row.bound_wrong == pytest.approx(4 * math.exp(-5), rel=1e-12)
    assert row.bound_wrong <= 0.027
    # Exact, with blond and red at the worst case 400: 3 e^-5 / (1 + 3 e^-5).
    exact = 3 * math.exp(-5) / (1 + 3 * math.exp(-5))
    assert row.p_wrong == pytest.approx(exact, rel=1e-12)
    assert round(row.p_wrong, 4) == 0.0198 and row.p_best == pytest.approx(1 - exact)
    assert row.scale == 20.0
    # The mechanisms module's own account of the example agrees.
    example = hair_colour_example()
    assert example.p_not_dark == pytest.approx(row.p_wrong, rel=1e-12)
    assert example.bound.probability == pytest.approx(row.bound_wrong, rel=1e-12)
    text = str(p)
    assert "no budget spent" in text and "0.0198" in text
    d = p.to_dict()
    assert d["names"] == list(HAIR) and d["rows"][0]["epsilon"] == 0.1


def test_preview_several_epsilons_monotonic_and_other_mechanisms():
    p = preview([3, 1, 0], [0.1, 1, 10], monotonic=True)
    assert [r.scale for r in p.rows] == [10.0, 1.0, 0.1]
    assert p.rows[0].p_best < p.rows[1].p_best < p.rows[2].p_best
    pf = preview([3, 1, 0], 1.0, monotonic=True, mechanism="permute_and_flip")
    assert pf.rows[0].bound_wrong is None and pf.rows[0].p_best >= p.rows[1].p_best
    lap = preview([3, 1, 0], 1.0, mechanism="laplace")
    assert sum(lap.rows[0].probabilities) == pytest.approx(1.0, abs=1e-9)
    tie = preview({"a": 2, "b": 2}, 1.0)
    assert tie.rows[0].p_best == 1.0 and tie.rows[0].bound_wrong == 0.0


@pytest.mark.parametrize(
    "scores, kwargs, match",
    [
        ([], {}, "not be empty"),
        ("abc", {}, "list of numbers"),
        ([1, "x"], {}, "must be a number"),
        ([1, math.nan], {}, "finite"),
        ([1, 2], {"epsilon": []}, "non-empty"),
        ([1, 2], {"epsilon": 0}, "epsilon"),
        ([1, 2], {"mechanism": "magic"}, "mechanism"),
        ([1, 2], {"sensitivity": 0}, "sensitivity"),
    ],
)
def test_preview_errors(scores, kwargs, match):
    args = {"epsilon": 1.0, **kwargs}
    with pytest.raises(ParameterError, match=match):
        preview(scores, **args)


def test_select_samples_the_law_the_preview_computes():
    """The map and the function agree: select's draws fit preview's exact probabilities."""
    rows = ["a"] * 6 + ["b"] * 4 + ["c"] * 2 + ["d"]
    candidates = ["a", "b", "c", "d", "e"]

    def count(data, c):
        return data.count(c)

    source = InsecureSeededSource(1)
    draws = Counter(
        select(
            candidates, count, rows, epsilon=0.8, sensitivity=1, monotonic=True, source=source
        ).candidate
        for _ in range(2000)
    )
    law = preview({c: count(rows, c) for c in candidates}, 0.8, monotonic=True)
    observed = [draws[c] for c in candidates]
    assert_fits(observed, law.rows[0].probabilities)
    # The non-monotonic law (half the exponent) is told apart by the same test.
    wrong = preview({c: count(rows, c) for c in candidates}, 0.8).rows[0].probabilities
    stat, df = chi2_statistic(observed, wrong)
    assert stat > chi2_threshold(df)


def test_select_minimise_ledger_and_refusal(tmp_path):
    calls = []

    def score(data, c):
        calls.append(c)
        return abs(c - data)

    book = Ledger.create(tmp_path / "l.db", 1.0)
    r = select(
        [0, 5, 10],
        score,
        5,
        epsilon=1.0,
        sensitivity=1,
        optimize="min",
        ledger=book,
        source=InsecureSeededSource(2),
    )
    assert r.index in (0, 1, 2) and r.candidate == [0, 5, 10][r.index]
    assert "smallest score" in r.accuracy and book.spent()[0] == 1.0
    calls.clear()
    with pytest.raises(BudgetExceeded):
        select([0, 5, 10], score, 5, epsilon=0.5, sensitivity=1, ledger=book)
    assert calls == []  # refused before the score function ever saw the data
    r = select(
        [1, 1], lambda d, c: 0, None, epsilon=1.0, sensitivity=1, source=InsecureSeededSource(3)
    )
    assert r.index in (0, 1) and r.to_dict()["candidate"] == 1 and "selected: 1" in str(r)
    with pytest.raises(ParameterError, match="sensitivity"):
        select([1], score, 5, epsilon=1.0, sensitivity=0)
    with pytest.raises(ParameterError, match="candidates"):
        select("ab", score, 5, epsilon=1.0, sensitivity=1)
    with pytest.raises(ParameterError, match="callable"):
        select([1], 3, 5, epsilon=1.0, sensitivity=1)


def test_plot_preview_writes_a_png(tmp_path):
    out = plot_preview(HAIR, tmp_path / "p.png", epsilon=[0.1])
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    auto = plot_preview([3, 1, 0], tmp_path / "q.png", monotonic=True, mechanism="permute_and_flip")
    assert auto.stat().st_size > 1000
    assert np.isfinite(auto.stat().st_size)


def test_select_nan_score_is_worst_for_min_and_max():
    """Issue 15, item 5, through the recipe."""
    scores = {"nan": math.nan, "low": 0.0, "high": 3.0}
    for optimize in ("max", "min"):
        picks = {
            select(
                list(scores),
                lambda data, c: scores[c],
                None,
                epsilon=1.0,
                sensitivity=100.0,
                optimize=optimize,
                source=InsecureSeededSource(i),
            ).candidate
            for i in range(100)
        }
        assert "nan" not in picks and picks == {"low", "high"}
