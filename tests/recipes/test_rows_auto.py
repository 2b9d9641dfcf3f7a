"""``max_contributions="auto"`` with ``max_rows_per_value = r > 1``: GEM over the candidates'
kept rows at each bound (sensitivity ``m r``), the law of the choice, one composed charge,
the CLI (docs/private_selection.md, "Rows per value")."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpselect as dp
import dpselect.recipes.top_k as top_k_module
from dpselect.accounting.ledger import Ledger
from dpselect.data.query import Query, UnitRule
from dpselect.data.tables import Table, open_table
from dpselect.mechanisms.generalized_exponential import gem_threshold
from dpselect.planning.contribution_choice import DEFAULT_CONTRIBUTIONS
from dpselect.planning.top_k_plan import plan_top_k
from dpselect.sampling import InsecureSeededSource
from tests.cli_process import run_cli
from tests.gof import assert_fits, fits
from tests.session_queries import session_top_k

BOUNDS = list(DEFAULT_CONTRIBUTIONS)
CANDS = [f"v{i}" for i in range(6)]


def even_frame(units: int = 40, rows: int = 3) -> pd.DataFrame:
    """Every unit holds ``rows`` rows of each of the 6 candidates: the kept rows at bound
    ``m`` are ``units min(m, 6) min(rows, r)`` whatever the salt."""
    return pd.DataFrame(
        [(f"u{u}", v) for u in range(units) for v in CANDS for _ in range(rows)],
        columns=["unit", "item"],
    )


def gem_law(family: dict[int, Fraction], deltas: list[int], eps: Fraction) -> np.ndarray:
    """GEM's output law (docs/private_selection.md): ``P[m] ~ exp(s_m / scale)``, ``s_m =
    min_j (a_m - a_j) / (Delta_m + Delta_j)``, ``a = q - t Delta``, ``scale = 2 / eps``
    (the 2^-40 grid and the scale's 2^-40 slack move no probability visibly)."""
    t = gem_threshold(len(BOUNDS), 0.05, eps)
    a = [family[m] - t * d for m, d in zip(BOUNDS, deltas, strict=True)]
    s = [min((ai - aj) / (di + dj) for aj, dj in zip(a, deltas, strict=True))
         for ai, di in zip(a, deltas, strict=True)]  # fmt: skip
    x = np.array([float(v) * float(eps) / 2 for v in s])
    p = np.exp(x - x.max())
    return p / p.sum()


def test_the_family_is_the_kept_rows_and_moves_by_m_r():
    r = 2
    table = open_table(even_frame())
    for salt in (1, 2):
        rules = [UnitRule("unit", m, r, salt=salt) for m in BOUNDS]
        got = [int(table.scores(Query("item", rule), CANDS).sum()) for rule in rules]
        assert got == [40 * min(m, 6) * 2 for m in BOUNDS]
    # one unit with many rows on every candidate moves each R(m) by at most m r (here exactly
    # min(m, 6) r: it keeps min(m, 6) values, r rows each)
    heavy = pd.concat([even_frame(), pd.DataFrame({"unit": "big", "item": CANDS * 50})])
    bigger = open_table(heavy)
    for m in BOUNDS:
        before = int(
            table.scores(
                Query(
                    "item",
                    UnitRule(privacy_unit="unit", values_per_unit=m, rows_per_value=r, salt=7),
                ),
                CANDS,
            ).sum()
        )
        after = int(
            bigger.scores(
                Query(
                    "item",
                    UnitRule(privacy_unit="unit", values_per_unit=m, rows_per_value=r, salt=7),
                ),
                CANDS,
            ).sum()
        )
        assert 0 <= after - before == min(m, 6) * r <= m * r


def test_the_choice_has_gems_law_at_m_r(monkeypatch):
    """4000 seeded choices against the exact GEM law with ``Delta_m = m r`` (chi-square,
    false-failure rate 1e-6). The same counts reject the law of ``Delta_m = m`` (the
    sensitivity of distinct values, a factor r = 2 too small): the test can fail."""
    r, eps_c = 2, Fraction(1, 4)
    table = open_table(even_frame())
    vectors = {
        m: table.scores(
            Query(
                "item", UnitRule(privacy_unit="unit", values_per_unit=m, rows_per_value=r, salt=1)
            ),
            CANDS,
        )
        for m in BOUNDS
    }
    # the kept rows do not depend on the salt here (previous test): score each bound once
    monkeypatch.setattr(Table, "scores",
                        lambda t, query, cands: vectors[query.rule.values_per_unit])  # fmt: skip
    margins = {m: Fraction(5) for m in BOUNDS}
    source = InsecureSeededSource(2024)
    query = top_k_module._Query(table, "item", 3, CANDS, "unit", False, source, None, r)
    counts = np.zeros(len(BOUNDS), dtype=int)
    for _ in range(4000):
        m, scores = top_k_module._choose_rows_bound(query, BOUNDS, margins, eps_c, r)
        assert scores is vectors[m]
        counts[BOUNDS.index(m)] += 1
    family = {m: Fraction(int(vectors[m].sum())) - margins[m] for m in BOUNDS}
    assert_fits(counts, gem_law(family, [m * r for m in BOUNDS], eps_c))
    assert not fits(counts, gem_law(family, list(BOUNDS), eps_c))


def test_one_composed_charge_and_the_chosen_bound_is_used(tmp_path):
    rng = np.random.default_rng(3)  # test data only
    df = pd.DataFrame({"unit": rng.integers(0, 80, 4000), "item": rng.choice(CANDS, 4000)})
    book = Ledger.create(tmp_path / "l.db", 10.0)
    res = dp.Session(
        df,
        privacy_unit="unit",
        contributions=dp.Contributions(values_per_unit="auto", rows_per_value=5),
        ledger=book,
        source=InsecureSeededSource(9),
    ).top_k("item", 2, epsilon=1.0, candidates=CANDS)
    entries = book.entries()
    assert len(entries) == 1 and entries[0].mechanism == "top_k/max_contributions=auto"
    assert entries[0].epsilon == res.epsilon <= 1.0
    assert res.parameters["max_rows_per_value"] == 5
    m = res.parameters["max_contributions"]
    assert m in BOUNDS and f"max_contributions = {m}" in str(res)
    # the plan at the chosen m is the plan at r = 5: scale 5 times the one of r = 1
    plan_r = plan_top_k(6, 2, res.parameters["query_epsilon"], 0.0, "auto", False, m, None,
                        max_rows_per_value=5)  # fmt: skip
    assert res.parameters["scale"] == plan_r.scale


def test_r_one_is_unchanged(monkeypatch):
    """``r = 1`` keeps the choice by each person's distinct values (today's answers): the
    rows path is never entered."""

    def boom(*args, **kwargs):
        raise AssertionError("the rows path ran at r = 1")

    monkeypatch.setattr(top_k_module, "_choose_rows_bound", boom)
    df = even_frame()
    res = dp.Session(
        df,
        privacy_unit="unit",
        contributions=dp.Contributions(values_per_unit="auto"),
        source=InsecureSeededSource(1),
    ).top_k("item", 2, epsilon=1.0, candidates=CANDS)
    assert "max_rows_per_value" not in res.parameters or res.parameters["max_rows_per_value"] == 1


def test_cli_top_k_auto_with_rows_per_value(tmp_path):
    path = tmp_path / "f.csv"
    even_frame().to_csv(path, index=False)
    ledger = tmp_path / "l.db"
    run_cli("budget", "init", "--ledger", str(ledger), "--epsilon", "5")
    out = run_cli("top-k", str(path), "--column", "item", "--k", "2", "--epsilon", "1",
                  "--candidates", ",".join(CANDS), "--privacy-unit", "unit",
                  "--max-contributions", "auto", "--max-rows-per-value", "3",
                  "--ledger", str(ledger), "--json", "--insecure-seed", "4")  # fmt: skip
    result = json.loads(out.stdout)
    assert result["parameters"]["max_rows_per_value"] == 3
    assert result["parameters"]["max_contributions"] in BOUNDS
    assert len(Ledger.open(ledger).entries()) == 1


@pytest.mark.parametrize("bad", [0, 2.5])
def test_refusals_before_the_charge(tmp_path, bad):
    book = Ledger.create(tmp_path / "l.db", 10.0)
    with pytest.raises(dp.ParameterError, match=r"Contributions\(rows_per_value=...\)"):
        dp.Session(
            even_frame(),
            privacy_unit="unit",
            contributions=dp.Contributions(values_per_unit="auto", rows_per_value=bad),
            ledger=book,
        ).top_k("item", 2, epsilon=1.0, candidates=CANDS)
    assert book.entries() == []


def test_the_recipe_replays_gem_with_the_plans_margins_at_r():
    """The same seed replays the recipe's choice from the plans' margins at ``r`` (the
    family GEM saw), and the "values" criterion (measured, not the default) runs too."""
    rng = np.random.default_rng(4)  # test data only
    df = pd.DataFrame({"unit": rng.integers(0, 60, 3000), "item": rng.choice(CANDS, 3000)})
    kw = {"candidates": CANDS, "privacy_unit": "unit",
          "contributions": dp.Contributions(values_per_unit="auto", rows_per_value=6)}  # fmt: skip
    for seed in range(3):
        res = session_top_k(df, "item", 2, 2.0, source=InsecureSeededSource(seed), **kw)
        eps_q = res.parameters["query_epsilon"]
        margins = {m: Fraction(plan_top_k(6, 2, eps_q, 0.0, "auto", False, m, None,
                                          max_rows_per_value=6).margin)
                   for m in BOUNDS}  # fmt: skip
        source = InsecureSeededSource(seed)
        query = top_k_module._Query(open_table(df), "item", 2, CANDS, "unit", False, source,
                                    None, 6)  # fmt: skip
        eps_c = Fraction(2.0) * Fraction(top_k_module.AUTO_FRACTION)
        m, _ = top_k_module._choose_rows_bound(query, BOUNDS, margins, eps_c, 6)
        assert m == res.parameters["max_contributions"]


def test_the_values_criterion_runs(monkeypatch):
    monkeypatch.setattr(top_k_module, "ROWS_CRITERION", "values")
    res = dp.Session(
        even_frame(),
        privacy_unit="unit",
        contributions=dp.Contributions(values_per_unit="auto", rows_per_value=2),
        source=InsecureSeededSource(1),
    ).top_k("item", 2, epsilon=1.0, candidates=CANDS)
    assert res.parameters["max_contributions"] in BOUNDS and len(res.candidates) == 2
