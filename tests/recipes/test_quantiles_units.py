"""Quantiles (and prices) per person: ``privacy_unit=COL, max_rows=r``.

Calibration (every mechanism at ``max_rows = r`` is its row-level self at ``eps / r``, map
``d_in * eps``), the law of the candidate mechanism against exact probabilities, the
neighbouring-dataset bound (one unit moves every rank count by at most ``r``), errors before
the charge, the ledger's unit, ``max_rows="auto"``, the CLI; the accuracy statements by
simulation (slow).
"""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpselect.accounting.ledger import Ledger
from dpselect.core.errors import DataError, DPSelectError, LedgerError, ParameterError
from dpselect.data.query import Query, UnitRule
from dpselect.data.tables import open_table
from dpselect.mechanisms.quantile_candidates import make_candidate_quantile
from dpselect.mechanisms.quantile_continuous import (
    QuantileAccuracy,
    continuous_accuracy,
    make_continuous_quantile,
)
from dpselect.mechanisms.quantile_joint import make_joint_quantiles
from dpselect.mechanisms.quantile_recursive import make_recursive_quantiles
from dpselect.mechanisms.quantile_score import (
    quantile_fraction,
    rank_excess,
    rank_excess_of_candidates,
    score_sensitivity,
)
from dpselect.mechanisms.quantile_tree import make_tree_quantiles, tree_accuracy
from dpselect.planning.contributions import Contributions
from dpselect.planning.price_request import price_request
from dpselect.planning.quantile_plan import TREE_BRANCHING, TREE_HEIGHT, TREE_THRESHOLD
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes.pricing import best_price as recipe_best_price
from dpselect.recipes.pricing import make_price_mechanism, price_grid
from dpselect.recipes.quantiles import quantile as recipe_quantile
from dpselect.sampling import InsecureSeededSource
from dpselect.sampling.source import resolve_source
from tests.gof import ALPHA, assert_fits, fits


def _planes(seed=5, units=60, most=300):
    """Flights-like rows: units (planes) holding 1 to ``most`` rows, ties at 10.0."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, most, units)
    u = np.repeat(np.arange(units), sizes)
    x = np.round(rng.gamma(2.0, 8.0, len(u)), 0)
    return pd.DataFrame({"tail": u, "delay": x})


# ----------------------------------------------------------------------------- calibration
DATA = np.random.default_rng(1).normal(5, 2, 500)


@pytest.mark.parametrize(
    "make",
    [
        lambda e, **k: make_candidate_quantile(list(range(11)), 0.3, e, **k),
        lambda e, **k: make_continuous_quantile((0, 10), 0.3, e, **k),
        lambda e, **k: make_tree_quantiles((0, 10), [0.1, 0.5, 0.9], e, **k),
        lambda e, **k: make_joint_quantiles((0, 10), [0.1, 0.5, 0.9], e, **k),
        lambda e, **k: make_recursive_quantiles((0, 10), [0.1, 0.5, 0.9], e, **k),
    ],
)
@pytest.mark.parametrize("r", [1, 3, 8])
def test_max_rows_runs_the_row_level_mechanism_at_eps_over_r(make, r):
    eps = Fraction(1)
    per_unit = make(eps, max_rows=r, source=InsecureSeededSource(7))
    per_row = make(eps / r, source=InsecureSeededSource(7))
    assert per_unit(DATA.copy()) == per_row(DATA.copy())
    assert per_unit.map(1) == 1.0 and per_unit.map(2) == 2.0  # d_in counts units


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2", None])
def test_mechanisms_refuse_a_bad_max_rows(bad):
    with pytest.raises(ParameterError, match="max_rows"):
        make_continuous_quantile((0, 1), 0.5, 1.0, max_rows=bad)


def _candidate_law(data, cands, level, eps, r):
    excess = rank_excess_of_candidates(data, cands, level).astype(float)
    logits = -eps * excess / (2 * r * score_sensitivity(level))
    p = np.exp(logits - logits.max())
    return p / p.sum()


def _candidate_draws(r_mech, n):
    data = np.arange(20, dtype=float)
    cands = [2.0, 5.0, 8.0, 10.0, 12.0, 15.0]
    m = make_candidate_quantile(cands, 0.5, 1.0, max_rows=r_mech, source=InsecureSeededSource(3))
    counts = dict.fromkeys(cands, 0)
    for _ in range(n):
        counts[m(data)] += 1
    return data, cands, [counts[c] for c in cands]


def test_candidate_law_with_max_rows():
    """chi-square at false-failure rate 1e-6 against exp(-eps s / (2 r Delta)); 20000 draws
    fail a mechanism calibrated to r = 1 instead of r = 2 (a factor 2 in the scale)."""
    data, cands, counts = _candidate_draws(2, 20000)
    law = _candidate_law(data, cands, Fraction(1, 2), 1.0, 2)
    assert_fits(counts, law)
    assert not fits(counts, _candidate_law(data, cands, Fraction(1, 2), 1.0, 1))


# ----------------------------------------------------------------------------- neighbours
@pytest.mark.parametrize("r", [1, 5])
def test_one_unit_moves_every_rank_score_by_at_most_r(r):
    base = _planes(units=30)
    heavy = pd.DataFrame({"tail": [10**6] * 800, "delay": np.full(800, 16.0)})
    points = np.linspace(-5, 120, 400)
    for salt in (0, 17, 2**62):
        kept = []
        for frame in (base, pd.concat([base, heavy], ignore_index=True)):
            values = open_table(frame).numbers(
                Query("delay", UnitRule(privacy_unit="tail", rows_per_unit=r, salt=salt))
            )
            kept.append(np.sort(values))
        (x0, x1) = kept
        assert 0 < len(x1) - len(x0) <= r
        for q in (Fraction(1, 2), Fraction(1, 10), Fraction(99, 100)):
            scores = []
            for x in (x0, x1):
                below = np.searchsorted(x, points, side="left")
                above = len(x) - np.searchsorted(x, points, side="right")
                assert below.max() <= len(x)
                scores.append(rank_excess(below, above, len(x), q))
            moved = np.abs(scores[1] - scores[0]).max()
            assert moved <= r * score_sensitivity(q)


# ----------------------------------------------------------------------------- recipe
def test_result_names_the_unit_and_runs_every_method():
    frame = _planes()
    for kw in (
        {"bounds": (0.0, 100.0)},
        {"bounds": (0.0, 100.0), "mechanism": "tree"},
        {"bounds": (0.0, 100.0), "mechanism": "joint"},
        {"bounds": (0.0, 100.0), "mechanism": "recursive"},
        {"candidates": list(range(0, 101, 5))},
        {"bounds": "auto"},
    ):
        request = quantile_request(
            "delay",
            [0.25, 0.5, 0.75],
            2.0,
            privacy_unit="tail",
            contributions=Contributions(values_per_unit=4),
            **kw,
        )
        result = recipe_quantile(frame, request, source=InsecureSeededSource(1))
        assert result.parameters["privacy_unit"] == "tail"
        assert result.parameters["max_rows"] == 4
        assert any("max_rows = 4" in note for note in result.notes)
        assert result.epsilon <= 2.0
        assert len(result.values) == 3


def test_privacy_unit_defaults_to_one_row_and_matches_the_row_count():
    frame = _planes()
    result = recipe_quantile(
        frame,
        quantile_request("delay", 0.5, 1.0, bounds=(0.0, 100.0), privacy_unit="tail"),
        source=InsecureSeededSource(2),
    )
    assert result.parameters["max_rows"] == 1


def test_auto_rule_reads_the_row_level_epsilon():
    frame = _planes()
    result = recipe_quantile(
        frame,
        quantile_request(
            "delay",
            [0.1, 0.5, 0.9],
            1.0,
            bounds=(0.0, 100.0),
            privacy_unit="tail",
            contributions=Contributions(values_per_unit=8),
        ),
        source=InsecureSeededSource(2),
    )
    assert "(0.95 / 8) N" in result.budget_split
    assert "8 / epsilon" in str(result) or "max_rows" in str(result)


def _ledger(tmp_path, unit=None):
    return Ledger.create(tmp_path / "l.db", 100.0, privacy_unit=unit)


def test_the_ledger_records_the_unit(tmp_path):
    book = _ledger(tmp_path)
    frame = _planes()
    recipe_quantile(
        frame,
        quantile_request(
            "delay",
            0.5,
            1.0,
            bounds=(0.0, 100.0),
            privacy_unit="tail",
            contributions=Contributions(values_per_unit=3),
        ),
        ledger=book,
    )
    recipe_quantile(
        frame,
        quantile_request(
            "delay",
            0.5,
            1.0,
            bounds="auto",
            privacy_unit="tail",
            contributions=Contributions(values_per_unit=3),
        ),
        ledger=book,
    )
    recipe_quantile(
        frame,
        quantile_request(
            "delay",
            0.5,
            1.0,
            bounds=(0.0, 100.0),
            privacy_unit="tail",
            contributions=Contributions(values_per_unit="auto"),
        ),
        ledger=book,
    )
    recipe_best_price(
        frame,
        price_request(
            1.0,
            prices=[5, 10, 20],
            max_price=100,
            column="delay",
            privacy_unit="tail",
            contributions=Contributions(values_per_unit=2),
        ),
        ledger=book,
    )
    entries = book.entries()
    assert [e.privacy_unit for e in entries] == ["tail"] * 4
    assert book.spent()[0] <= 4.0


def _refused(book, call, error=DPSelectError, match=None):
    before = (book.spent(), len(book))
    with pytest.raises(error, match=match):
        call()
    assert (book.spent(), len(book)) == before


def test_errors_come_before_the_charge(tmp_path):
    book = _ledger(tmp_path)
    frame = _planes()

    def q(rows=None, **kw):
        args = {"bounds": (0.0, 100.0), **kw}

        def run():
            if rows is not None:
                args["contributions"] = Contributions(values_per_unit=rows)
            return recipe_quantile(frame, quantile_request("delay", 0.5, 1.0, **args), ledger=book)

        return run

    unitless = r"values_per_unit=\.\.\.\) other than 1 needs privacy_unit="
    _refused(book, q(rows=3), ParameterError, unitless)
    for bad in (0, -2, 1.5, "two", True):
        _refused(book, q(privacy_unit="tail", rows=bad), ParameterError, "values_per_unit")
    _refused(book, q(privacy_unit="nope"), DataError, "privacy_unit 'nope'")
    _refused(book, q(privacy_unit="tail", rows="auto", bounds=None), ParameterError)
    _refused(book, q(bounds="auto", rows=2), ParameterError, unitless)

    def price(valuations, rows=None, **kw):
        def run():
            if rows is not None:
                kw["contributions"] = Contributions(values_per_unit=rows)
            request = price_request(1.0, prices=[1, 2], max_price=2, **kw)
            return recipe_best_price(valuations, request, ledger=book)

        return run

    _refused(book, price([1.0, 2.0], privacy_unit="tail"), ParameterError,
             "array of valuations has no unit column")  # fmt: skip
    _refused(book, price(frame, column="delay", rows=2), ParameterError, unitless)


def test_a_ledger_bound_to_another_unit_refuses_first(tmp_path):
    book = _ledger(tmp_path, unit="owner")
    frame = _planes()

    def run():
        return recipe_quantile(
            frame,
            quantile_request(
                "delay",
                0.5,
                1.0,
                bounds=(0.0, 100.0),
                privacy_unit="tail",
                contributions=Contributions(values_per_unit=2),
            ),
            ledger=book,
        )

    _refused(book, run, LedgerError, "'owner'")


def test_max_rows_auto_is_private_and_shows_its_split():
    frame = _planes()
    result = recipe_quantile(
        frame,
        quantile_request(
            "delay",
            [0.1, 0.5, 0.9],
            1.0,
            bounds=(0.0, 100.0),
            privacy_unit="tail",
            contributions=Contributions(values_per_unit="auto"),
        ),
        source=InsecureSeededSource(4),
    )
    r = result.parameters["max_rows"]
    assert r in (1, 2, 4, 8, 16, 32, 64, 128, 256)
    assert result.budget_split.startswith(f"{result.parameters['choice_epsilon']:.6g} to choose")
    assert result.epsilon <= 1.0
    assert any(f"max_rows = {r}, chosen privately" in note for note in result.notes)


def test_price_per_buyer_is_the_row_level_mechanism_at_eps_over_r():
    grid = price_grid([5, 10, 20], max_price=20)
    values = np.array([4.0, 5, 10, 10, 12, 20, 20, 25])
    per_unit = make_price_mechanism(grid, Fraction(1), max_rows=3, source=InsecureSeededSource(8))
    per_row = make_price_mechanism(grid, Fraction(1, 3), source=InsecureSeededSource(8))
    assert [per_unit(values) for _ in range(20)] == [per_row(values) for _ in range(20)]
    frame = _planes()
    result = recipe_best_price(
        frame,
        price_request(
            1.0,
            prices=[5, 10, 20],
            max_price=100,
            column="delay",
            privacy_unit="tail",
            contributions=Contributions(values_per_unit=3),
        ),
        source=InsecureSeededSource(1),
    )
    assert "Delta = max_rows max(prices) = 60" in result.accuracy
    assert result.parameters["max_rows"] == 3


# ----------------------------------------------------------------------------- CLI
def _cli(*args):
    proc = subprocess.run(
        [sys.executable, "-m", "dpselect", *map(str, args)], capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    return proc.returncode, proc.stdout, proc.stderr


def test_cli_quantile_and_price_per_person(tmp_path):
    path = tmp_path / "planes.parquet"
    _planes().to_parquet(path)
    code, out, err = _cli("quantile", path, "--column", "delay", "--q", 0.5, "--epsilon", 1,
                          "--bounds", 0, 100, "--privacy-unit", "tail", "--max-rows", 5,
                          "--insecure-seed", 1, "--json")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["parameters"]["max_rows"] == 5
    code, out, err = _cli("quantile", path, "--column", "delay", "--q", 0.5, "--epsilon", 1,
                          "--bounds", 0, 100, "--privacy-unit", "tail", "--max-rows", "auto",
                          "--insecure-seed", 1, "--json")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["parameters"]["max_rows_choice"].startswith("max_rows = ")
    for bad in (["--max-rows", 3], ["--privacy-unit", "tail", "--max-rows", 0],
                ["--privacy-unit", "tail", "--max-rows", "x"]):  # fmt: skip
        code, out, err = _cli("quantile", path, "--column", "delay", "--q", 0.5, "--epsilon",
                              1, "--bounds", 0, 100, *bad)  # fmt: skip
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    code, out, err = _cli("price", path, "--column", "delay", "--epsilon", 1, "--prices",
                          "5,10,20", "--max-price", 100, "--privacy-unit", "tail",
                          "--max-rows", 2, "--insecure-seed", 1)  # fmt: skip
    assert code == 0 and "Delta = max_rows max(prices) = 40" in out, err


# ----------------------------------------------------------------------------- accuracy
CONF = 0.95


def _allowed(runs):
    return float(stats.binom.isf(ALPHA, runs, 1 - CONF))


def _heavy_ties(seed=9):
    """Adversarial planes: a few units hold hundreds of rows tied at the median."""
    rng = np.random.default_rng(seed)
    light = pd.DataFrame({"tail": np.arange(3000) % 1500, "delay": rng.uniform(0, 40, 3000)})
    heavy = pd.DataFrame({"tail": np.repeat([10**4, 10**4 + 1, 10**4 + 2], 300), "delay": 20.0})
    return pd.concat([light, heavy], ignore_index=True)


def _recipe_failures(runs, r, eps, *, line_eps=None):
    """Runs of the recipe's continuous method per unit whose printed statement is false on the
    rows the units kept (the salt is the recipe's first draw after the charge)."""
    frame = _heavy_ties()
    table = open_table(frame)
    bounds, q = (-10.0, 50.0), 0.5
    w = (bounds[1] - bounds[0]) / 10**6
    alpha = continuous_accuracy(bounds, q, Fraction(eps) / (line_eps or r), CONF, w).margin
    statement = QuantileAccuracy(alpha, w, CONF)
    failures = 0
    for seed in range(runs):
        result = recipe_quantile(
            frame,
            quantile_request(
                "delay",
                q,
                eps,
                bounds=bounds,
                privacy_unit="tail",
                contributions=Contributions(values_per_unit=r),
            ),
            source=InsecureSeededSource(seed),
        )
        if line_eps is None:
            assert f"{alpha:.4g} rows" in result.accuracy[0]
        salt = resolve_source(InsecureSeededSource(seed)).bits(63)
        rule = UnitRule(privacy_unit="tail", rows_per_unit=r, salt=salt)
        kept = np.clip(table.numbers(Query("delay", rule)), *bounds)
        failures += not statement.holds(kept, result.values[0], quantile_fraction(q))
    return failures


@pytest.mark.slow
def test_the_recipes_statement_holds_per_unit():
    runs = 200
    assert _recipe_failures(runs, 32, 1.0) <= _allowed(runs)


@pytest.mark.slow
def test_the_statement_at_row_level_epsilon_fails():
    """The broken variant: the line computed at epsilon, not epsilon / r (a margin r = 32
    times too small) is false far more often than 5% of the runs."""
    runs = 200
    assert _recipe_failures(runs, 32, 1.0, line_eps=1) > _allowed(runs)


@pytest.mark.slow
def test_the_tree_statement_holds_per_unit():
    frame = _heavy_ties()
    table = open_table(frame)
    bounds, levels, r, eps = (-10.0, 50.0), [0.25, 0.5, 0.75], 4, Fraction(1)
    shape = tree_accuracy(bounds, eps / r, CONF, TREE_BRANCHING, TREE_HEIGHT, TREE_THRESHOLD)
    runs, failures = 150, 0
    for seed in range(runs):
        rule = UnitRule(privacy_unit="tail", rows_per_unit=r, salt=seed)
        kept = np.clip(table.numbers(Query("delay", rule)), *bounds)
        mech = make_tree_quantiles(bounds, levels, eps, branching=TREE_BRANCHING,
                                   height=TREE_HEIGHT, threshold=TREE_THRESHOLD, max_rows=r,
                                   source=InsecureSeededSource(seed))  # fmt: skip
        out = mech(kept)
        n = len(kept)
        for q, v in zip(levels, out, strict=True):
            below = np.count_nonzero(kept < v - shape.leaf_width)
            above = np.count_nonzero(kept > v + shape.leaf_width)
            if below > q * n + shape.rank_error or above > (1 - q) * n + shape.rank_error:
                failures += 1
                break
    assert failures <= _allowed(runs)
