"""``max_rows_per_value`` through the recipes and the CLI: public errors before any charge,
``r = 1`` answers unchanged for the same seed, the parameter recorded in the result, the
ledger and ``--json``."""

import json

import numpy as np
import pandas as pd
import pytest

import dpselect as dp
from dpselect.accounting.ledger import Ledger
from dpselect.core.errors import ParameterError
from dpselect.data.query import Query, UnitRule
from dpselect.sampling import InsecureSeededSource
from tests.cli_process import run_cli
from tests.session_queries import session_top_k


def flights(seed=0, planes=60, rows=3000):
    rng = np.random.default_rng(seed)
    dests = np.array([f"D{i}" for i in range(12)], dtype=object)
    weights = 1 / np.arange(1, 13)
    return pd.DataFrame(
        {
            "plane": rng.zipf(1.4, rows) % planes,
            "dest": dests[rng.choice(12, rows, p=weights / weights.sum())],
        }
    )


CANDS = [f"D{i}" for i in range(12)]


@pytest.fixture
def book(tmp_path):
    return Ledger.create(tmp_path / "l.db", 10.0, 1e-3)


BAD = [
    ({"rows_per_value": 0}, "plane", r"Contributions\(rows_per_value=...\) must be"),
    ({"rows_per_value": 2.5}, "plane", r"Contributions\(rows_per_value=...\) must be"),
    ({"rows_per_value": 3}, None, "needs privacy_unit="),
]


@pytest.mark.parametrize(("fields", "unit", "match"), BAD)
def test_top_k_errors_before_the_charge(book, fields, unit, match):
    with pytest.raises(ParameterError, match=match):
        session_top_k(flights(), "dest", 3, 1.0, candidates=CANDS, ledger=book,
                      privacy_unit=unit, contributions=dp.Contributions(**fields))  # fmt: skip
    with pytest.raises(ParameterError, match=match):  # values from the data
        session_top_k(flights(), "dest", 3, 1.0, delta=1e-6, ledger=book, privacy_unit=unit,
                      contributions=dp.Contributions(**fields))  # fmt: skip
    assert book.entries() == []


def test_partition_selection_policy_gaussian_at_r(book):
    """Policy Gaussian at r: the projection on the capped ball (docs/partition_selection.md,
    section 6); without a unit, rows per value are refused before the charge."""
    res = dp.Session(
        flights(),
        privacy_unit="plane",
        contributions=dp.Contributions(values_per_unit=2, rows_per_value=5),
        ledger=book,
    ).partition_selection("dest", epsilon=1.0, delta=1e-6, mechanism="policy_gaussian")
    assert res.parameters["max_rows_per_value"] == 5 and res.epsilon <= 1.0
    assert len(book.entries()) == 1
    with pytest.raises(ParameterError, match="other than 1 needs privacy_unit="):
        dp.Session(
            flights(), contributions=dp.Contributions(rows_per_value=5), ledger=book
        ).partition_selection("dest", epsilon=1.0, delta=1e-6)
    assert len(book.entries()) == 1


@pytest.mark.parametrize("mechanism", ["auto", "gumbel", "laplace_histogram", "gaussian_histogram"])
def test_r_one_is_todays_answer(mechanism):
    df = flights(1)
    delta = 1e-6 if mechanism == "gaussian_histogram" else 0.0
    runs = [
        dp.Session(
            df,
            privacy_unit="plane",
            contributions=dp.Contributions(values_per_unit=2, **extra),
            source=InsecureSeededSource(9),
        ).top_k("dest", 3, epsilon=1.0, candidates=CANDS, delta=delta, mechanism=mechanism)
        for extra in ({}, {"rows_per_value": 1})
    ]
    assert runs[0].candidates == runs[1].candidates
    assert runs[0].parameters["scale"] == runs[1].parameters["scale"]
    assert runs[1].parameters["max_rows_per_value"] == 1


def test_rows_change_the_scale_and_are_recorded(book):
    df = flights(2)
    one = dp.Session(
        df,
        privacy_unit="plane",
        contributions=dp.Contributions(values_per_unit=2),
        source=InsecureSeededSource(4),
    ).top_k("dest", 3, epsilon=1.0, candidates=CANDS, mechanism="laplace_histogram", counts=True)
    ten = dp.Session(
        df,
        privacy_unit="plane",
        contributions=dp.Contributions(values_per_unit=2),
        ledger=book,
        source=InsecureSeededSource(4),
    ).top_k("dest", 3, epsilon=1.0, candidates=CANDS, mechanism="laplace_histogram", counts=True)
    assert ten.parameters["max_rows_per_value"] == 1
    ten = dp.Session(
        df,
        privacy_unit="plane",
        contributions=dp.Contributions(values_per_unit=2, rows_per_value=10),
        ledger=book,
        source=InsecureSeededSource(4),
    ).top_k("dest", 3, epsilon=1.0, candidates=CANDS, mechanism="laplace_histogram", counts=True)
    assert ten.parameters["scale"] == pytest.approx(10 * one.parameters["scale"])
    assert ten.parameters["max_rows_per_value"] == 10 and ten.epsilon <= 1.0
    assert json.loads(json.dumps(ten.to_dict()))["parameters"]["max_rows_per_value"] == 10
    assert len(book.entries()) == 2


@pytest.mark.parametrize("mechanism", ["auto", "laplace_histogram", "gaussian_histogram", "gumbel"])
def test_unknown_domain_with_rows(mechanism):
    df = flights(3, rows=6000)
    result = dp.Session(
        df,
        privacy_unit="plane",
        contributions=dp.Contributions(values_per_unit=2, rows_per_value=20),
        source=InsecureSeededSource(1),
    ).top_k("dest", 3, epsilon=2.0, delta=1e-5, mechanism=mechanism)
    assert result.parameters["max_rows_per_value"] == 20
    assert set(result.candidates) <= set(CANDS) and result.epsilon <= 2.0
    assert "policy" not in result.mechanism.lower()
    keys = dp.Session(
        df,
        privacy_unit="plane",
        contributions=dp.Contributions(values_per_unit=2, rows_per_value=20),
        source=InsecureSeededSource(1),
    ).partition_selection("dest", epsilon=2.0, delta=1e-5)
    # a released set: "auto" selects by persons (docs/partition_selection.md, section 6)
    assert keys.parameters["mechanism"] in ("optimal", "policy_laplace")
    assert keys.parameters["max_rows_per_value"] == 20
    assert keys.parameters["selected_by"] == "persons" and "persons" in keys.accuracy
    rows = dp.Session(
        df,
        privacy_unit="plane",
        contributions=dp.Contributions(values_per_unit=2, rows_per_value=20),
        source=InsecureSeededSource(1),
    ).partition_selection("dest", epsilon=2.0, delta=1e-5, mechanism="laplace")
    assert "rows (at most 20 per person and value" in rows.accuracy


def test_cli_option(tmp_path):
    path = tmp_path / "f.csv"
    flights(4).to_csv(path, index=False)
    ledger = tmp_path / "l.db"
    Ledger.create(ledger, 5.0, 1e-3).close()
    ok, plan, bad_unit, bad_value, keys = (
        run_cli("top-k", path, "--column", "dest", "--k", 2, "--epsilon", 1, "--candidates",
                ",".join(CANDS), "--privacy-unit", "plane", "--max-contributions", 2,
                "--max-rows-per-value", 10, "--json", "--insecure-seed", 3, "--ledger", ledger),
        run_cli("top-k", path, "--column", "dest", "--k", 2, "--epsilon", 1, "--candidates",
                ",".join(CANDS), "--privacy-unit", "plane", "--max-rows-per-value", 10, "--plan",
                "--json"),
        run_cli("top-k", path, "--column", "dest", "--k", 2, "--epsilon", 1, "--candidates",
                ",".join(CANDS), "--max-rows-per-value", 10, "--ledger", ledger),
        run_cli("mode", path, "--column", "dest", "--epsilon", 1, "--candidates",
                ",".join(CANDS), "--privacy-unit", "plane", "--max-rows-per-value", 0,
                "--ledger", ledger),
        run_cli("keys", path, "--column", "dest", "--epsilon", 1, "--delta", 1e-5,
                "--privacy-unit", "plane", "--max-rows-per-value", 10, "--mechanism",
                "policy_gaussian", "--ledger", ledger),
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["parameters"]["max_rows_per_value"] == 10
    assert plan.returncode == 0, plan.stderr
    one = run_cli("top-k", path, "--column", "dest", "--k", 2, "--epsilon", 1, "--candidates",
                  ",".join(CANDS), "--privacy-unit", "plane", "--plan", "--json")  # fmt: skip
    scales = [row["scale"] for row in json.loads(plan.stdout)["rows"]]
    assert scales == pytest.approx([10 * row["scale"] for row in json.loads(one.stdout)["rows"]])
    assert keys.returncode == 0, keys.stderr  # Policy Gaussian at r
    for result in (bad_unit, bad_value):
        assert result.returncode == 2 and result.stdout == ""
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    assert len(Ledger.open(str(ledger)).entries()) == 2


@pytest.mark.parametrize(("m", "r"), [(1, 10), (3, 4), (4, 50)])
def test_neighbours_scores_and_the_exact_selection_law(m, r):
    """End to end at one salt: adding a plane with 3,000 flights moves the DuckDB scores by at
    most r each, m of them, one way; the exact law of the calibrated exponential mechanism
    (softmax of scores / scale) then moves by at most the charged epsilon, and the Laplace
    histogram's loss (L1 distance / b) too."""
    from dpselect.data.tables import open_table
    from dpselect.planning.top_k_plan import plan_top_k

    df = flights(5)
    rng = np.random.default_rng(m + r)
    heavy = pd.DataFrame({"plane": np.full(3000, 10**6), "dest": rng.choice(CANDS, 3000)})
    salt = 99 + r
    before = open_table(df).scores(
        Query(
            "dest", UnitRule(privacy_unit="plane", values_per_unit=m, rows_per_value=r, salt=salt)
        ),
        CANDS,
    )
    after = open_table(pd.concat([df, heavy])).scores(
        Query(
            "dest", UnitRule(privacy_unit="plane", values_per_unit=m, rows_per_value=r, salt=salt)
        ),
        CANDS,
    )
    diff = after - before
    assert diff.min() >= 0 and diff.max() <= r and np.count_nonzero(diff) <= m
    gumbel = plan_top_k(len(CANDS), 1, 1.0, 0.0, "gumbel", False, m, None, max_rows_per_value=r)

    def log_law(scores):
        z = scores / gumbel.scale
        return z - np.logaddexp.reduce(z)

    assert np.max(np.abs(log_law(after) - log_law(before))) <= gumbel.epsilon + 1e-12
    hist = plan_top_k(len(CANDS), 3, 1.0, 0.0, "laplace_histogram", False, m, None,
                      max_rows_per_value=r)  # fmt: skip
    assert np.abs(diff).sum() / hist.scale <= hist.epsilon + 1e-12
