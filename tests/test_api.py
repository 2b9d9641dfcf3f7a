"""The Python API: top_k / most_common over real data, the ledger, counts, the limited domain."""

import json
import math
import runpy
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpselect as dp
from dpselect.accounting.ledger import Ledger
from dpselect.core.errors import BudgetExceeded, DataError, ParameterError
from dpselect.data.tables import Table
from dpselect.mechanisms.limited_domain import limited_domain_threshold
from dpselect.planning.unknown_domain_choice import limited_domain_per_round
from dpselect.recipes.top_k import TopKResult
from dpselect.sampling.source import InsecureSeededSource
from tests.session_queries import session_top_k

ROOT = Path(__file__).resolve().parents[1]
SITES = [f"site{i}" for i in range(12)]  # site10, site11: absent from the data


def visits(seed=0, n_rows=3000, n_users=300):
    """Zipf-like visits of sites site0..site9 by users, one user many rows."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, 11) ** 1.2
    site = rng.choice([f"site{i}" for i in range(10)], size=n_rows, p=weights / weights.sum())
    return pd.DataFrame({"user_id": rng.integers(0, n_users, n_rows), "site": site})


@pytest.fixture
def ledger_path(tmp_path):
    path = tmp_path / "budget.ledger"
    Ledger.create(str(path), 2.0, 1e-5)
    return str(path)


def test_result_object():
    r = dp.Session(visits(), source=InsecureSeededSource(1)).top_k(
        "site", 3, epsilon=1.0, candidates=SITES, mechanism="gumbel"
    )
    assert isinstance(r, TopKResult)
    assert len(r.candidates) == 3 and len(set(r.candidates)) == 3
    assert set(r.candidates) <= set(SITES)
    assert r.candidates == [SITES[i] for i in r.indices]
    assert r.epsilon == 1.0 and r.delta == 0.0
    assert r.rho == pytest.approx(3 * (1 / 3) ** 2 / 8)  # bounded range: k (eps/k)^2 / 8
    assert "Gumbel" in r.mechanism and r.counts is None and r.ledger is None
    assert r.parameters["scale"] == 3.0 and r.parameters["n_candidates"] == len(SITES)
    assert "accuracy" in r.accuracy and "95%" in r.accuracy
    out = json.loads(json.dumps(r.to_dict()))
    assert out["candidates"] == r.candidates and out["stopped_early"] is False
    assert set(out) >= {"candidates", "indices", "mechanism", "epsilon", "delta", "rho"}
    assert str(r).startswith(f"1. {r.candidates[0]}")
    # a clear leader wins at this epsilon
    assert r.candidates[0] == "site0"


def test_same_seed_same_result_and_most_common():
    a = dp.Session(visits(), source=InsecureSeededSource(7)).top_k(
        "site", 4, epsilon=0.5, candidates=SITES
    )
    b = dp.Session(visits(), source=InsecureSeededSource(7)).top_k(
        "site", 4, epsilon=0.5, candidates=SITES
    )
    assert a == b
    m = dp.Session(visits(), source=InsecureSeededSource(7)).most_common(
        "site", epsilon=1.0, candidates=SITES
    )
    assert len(m.candidates) == 1 and m.parameters["k"] == 1


def as_kind(df, kind, tmp_path):
    if kind == "csv":
        df.to_csv(tmp_path / "v.csv", index=False)
        return tmp_path / "v.csv"
    if kind == "parquet":
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "v.parquet")
        return str(tmp_path / "v.parquet")
    if kind == "jsonl":
        df.to_json(tmp_path / "v.jsonl", orient="records", lines=True)
        return tmp_path / "v.jsonl"
    return {
        "pandas": lambda: df,
        "polars": lambda: pl.from_pandas(df),
        "pyarrow": lambda: pa.Table.from_pandas(df, preserve_index=False),
    }[kind]()


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"privacy_unit": "user_id", "contributions": dp.Contributions(values_per_unit=2)},
        {"counts": True},
        {"mechanism": "laplace"},
    ],
)
def test_equal_results_across_input_kinds(tmp_path, options):
    # Small epsilon so that the seed, not the data, decides most of the ranking.
    df = visits(3)
    results = {}
    for kind in ["csv", "parquet", "jsonl", "pandas", "polars", "pyarrow"]:
        for seed in range(3):
            r = session_top_k(
                as_kind(df, kind, tmp_path),
                "site",
                4,
                0.05,
                candidates=SITES,
                source=InsecureSeededSource(seed),
                **options,
            )
            results.setdefault(seed, {})[kind] = (r.candidates, r.counts)
    for seed, by_kind in results.items():
        assert len(set(map(repr, by_kind.values()))) == 1, (seed, by_kind)


def test_candidates_from_a_file_and_absent_values(tmp_path):
    path = tmp_path / "sites.txt"
    path.write_text("\n".join(["site10", "site11", "site0"]) + "\n")
    r = dp.Session(visits(), source=InsecureSeededSource(0)).top_k(
        "site", 1, epsilon=2.0, candidates=path
    )
    assert r.candidates == ["site0"] and r.indices == [2]


@pytest.mark.parametrize("counts", [False, True])
def test_ledger_charged_before_release(ledger_path, monkeypatch, counts):
    seen = []
    real = Table.scores

    def spy(*args, **kwargs):
        seen.append(Ledger.open(ledger_path).spent())  # the data is read after the charge
        return real(*args, **kwargs)

    monkeypatch.setattr(Table, "scores", spy)
    r = dp.Session(visits(), ledger=ledger_path).top_k(
        "site", 2, epsilon=0.5, candidates=SITES, mechanism="gumbel", counts=counts
    )
    assert seen == [(0.5, 0.0)]
    assert r.ledger == ledger_path
    book = Ledger.open(ledger_path)
    assert book.spent() == (0.5, 0.0) and len(book.entries()) == 1
    assert book.entries()[0].kind == ("pure" if counts else "bounded_range")


def test_over_budget_refused_nothing_charged_nothing_read(ledger_path, monkeypatch):
    dp.Session(visits(), ledger=ledger_path).top_k("site", 2, epsilon=1.5, candidates=SITES)
    called = []
    monkeypatch.setattr(Table, "scores", lambda *a, **k: called.append(1))
    with pytest.raises(BudgetExceeded):
        dp.Session(visits(), ledger=Ledger.open(ledger_path)).top_k(
            "site", 2, epsilon=1.0, candidates=SITES
        )
    assert called == []
    assert Ledger.open(ledger_path).spent() == (1.5, 0.0)


def test_zcdp_ledger(tmp_path):
    path = str(tmp_path / "z.ledger")
    Ledger.create(path, 10.0, 1e-6, accounting="zcdp")
    r = dp.Session(visits(), ledger=path).top_k("site", 2, epsilon=1.0, candidates=SITES)
    assert Ledger.open(path).spent_rho() == pytest.approx(r.rho)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"k": 0}, ParameterError, "k must be at least 1"),
        ({"epsilon": 0.0}, ParameterError, "epsilon"),
        ({"epsilon": -1.0}, ParameterError, "epsilon"),
        ({"k": 13}, ParameterError, "at most the number of candidates"),
        ({"column": "nope"}, DataError, "'nope' is not a column"),
        ({"privacy_unit": "nope"}, DataError, "privacy_unit 'nope'"),
        (
            {"contributions": dp.Contributions(values_per_unit=2)},
            ParameterError,
            "needs privacy_unit=",
        ),
        (
            {"contributions": dp.Contributions(values_per_unit=2, rows_per_value=2)},
            ParameterError,
            "needs privacy_unit=",
        ),
        ({"data": "/nonexistent/v.parquet"}, DataError, "does not exist"),
        ({"candidates": "/nonexistent/sites.txt"}, ParameterError, "does not exist"),
        ({"candidates": None}, ParameterError, "give delta"),
        ({"candidates": None, "delta": 0.0}, ParameterError, "delta"),
        (
            {"candidates": None, "delta": 1e-6, "counts": True, "mechanism": "gumbel"},
            ParameterError,
            "histogram",
        ),
        (
            {"candidates": None, "delta": 1e-6, "mechanism": "permute_and_flip"},
            ParameterError,
            "gumbel",
        ),
        ({"mechanism": "gaussian_histogram"}, ParameterError, "delta > 0"),
        ({"candidates": None, "delta": 1e-6, "mechanism": "laplace"}, ParameterError, "gumbel"),
        ({"candidates": None, "delta": 1e-6, "k_bar": 1}, ParameterError, "k_bar"),
        ({"k_bar": 20}, ParameterError, "k_bar applies only"),
        ({"mechanism": "nope"}, ParameterError, "mechanism"),
        ({"counts": True, "mechanism": "laplace"}, ParameterError, "counts"),
        ({"delta": 2.0}, ParameterError, "delta"),
    ],
)
def test_bad_input_raises_and_charges_nothing(ledger_path, kwargs, error, match):
    args = {"data": visits(), "column": "site", "k": 2, "epsilon": 1.0, "candidates": SITES}
    args.update(kwargs)
    with pytest.raises(error, match=match):
        session_top_k(ledger=ledger_path, **args)
    assert Ledger.open(ledger_path).spent() == (0.0, 0.0)


@pytest.mark.parametrize("kind", ["empty", "nulls"])
def test_empty_data_and_null_column_are_valid(kind):
    df = pd.DataFrame({"user_id": [1, 2], "site": [None, None]})
    if kind == "empty":
        df = df.iloc[:0]
    for options in [{}, {"privacy_unit": "user_id"}, {"counts": True}]:
        r = session_top_k(
            df, "site", 3, 1.0, candidates=SITES, source=InsecureSeededSource(0), **options
        )
        assert len(r.candidates) == 3 and len(r.indices) == 3  # same form as with data
        if r.counts is not None:
            assert len(r.counts) == 3


def test_counts_law_sanity():
    # One candidate far ahead: it is picked; its noisy count is discrete Laplace with scale
    # t = 2 k / epsilon = 2 around the true count (mean 0, variance 2 e^-1/2 / (1 - e^-1/2)^2).
    df = pd.DataFrame({"site": ["site0"] * 1000 + ["site1"] * 10})
    errors = []
    for seed in range(400):
        r = dp.Session(df, source=InsecureSeededSource(seed)).top_k(
            "site", 1, epsilon=1.0, candidates=["site0", "site1"], mechanism="gumbel", counts=True
        )
        assert r.candidates == ["site0"] and r.parameters["count_scale"] == 2.0
        errors.append(r.counts[0] - 1000)
    errors = np.asarray(errors)
    q = math.exp(-1 / 2)
    variance = 2 * q / (1 - q) ** 2
    assert abs(errors.mean()) < 6 * math.sqrt(variance / len(errors))
    assert 0.6 * variance < errors.var() < 1.6 * variance  # fails a factor-2 scale bug
    assert np.all(errors == np.round(errors))


def test_limited_domain_releases_values_from_the_data(ledger_path):
    df = visits(5, n_rows=20_000, n_users=5000)
    r = dp.Session(df, ledger=ledger_path, source=InsecureSeededSource(2)).top_k(
        "site", 3, epsilon=1.0, delta=1e-6, mechanism="gumbel"
    )
    assert r.candidates == ["site0", "site1", "site2"]  # large margins: the true top 3
    assert r.indices is None and r.rho is None
    assert r.epsilon <= 1.0 and r.delta == 1e-6
    per_round = limited_domain_per_round(3, 1.0, 1e-6)
    assert per_round > 1 / 3  # Renyi bounded-range accounting, not epsilon / k
    assert r.parameters["k_bar"] == 13 and "Durfee" in r.mechanism
    assert r.parameters["threshold"] == limited_domain_threshold(per_round, 5e-7, 13, 1)
    entry = Ledger.open(ledger_path).entries()[0]
    assert entry.kind == "approx" and (entry.epsilon, entry.delta) == (r.epsilon, 1e-6)
    json.dumps(r.to_dict())


def test_limited_domain_with_privacy_unit_uses_max_contributions():
    df = visits(6, n_rows=20_000, n_users=5000)
    r = dp.Session(
        df,
        privacy_unit="user_id",
        contributions=dp.Contributions(values_per_unit=3),
        source=InsecureSeededSource(0),
    ).top_k("site", 2, epsilon=1.0, delta=1e-6, k_bar=4)
    assert r.candidates == ["site0", "site1"]
    per_round = limited_domain_per_round(2, 1.0, 1e-6)
    assert r.parameters["threshold"] == limited_domain_threshold(per_round, 5e-7, 4, 3)


def test_limited_domain_stops_early_on_small_or_empty_data():
    small = pd.DataFrame({"site": ["a"] * 5 + ["b"] * 2})
    for df in [small, small.iloc[:0], pd.DataFrame({"site": [None, None]})]:
        r = dp.Session(df, source=InsecureSeededSource(0)).top_k("site", 3, epsilon=1.0, delta=1e-9)
        assert r.candidates == [] and r.stopped_early
        assert r.to_dict()["stopped_early"] is True and "stopped early" in str(r)


def test_limited_domain_zcdp_ledger_refused(tmp_path):
    path = str(tmp_path / "z.ledger")
    Ledger.create(path, 1.0, 1e-6, accounting="zcdp")
    with pytest.raises(ParameterError, match="zCDP"):
        dp.Session(visits(), ledger=path).top_k("site", 2, epsilon=1.0, delta=1e-6)
    assert Ledger.open(path).entries() == []


def test_example_script_runs(capsys):
    runpy.run_path(str(ROOT / "examples" / "top_sites.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "news.example" in out and "noisy count" in out


# --- the (epsilon, delta) target and the public choice (issue 11, issue 10 items 10, 13) ---


def test_choice_depends_on_public_parameters_only():
    a = visits(1)
    b = pd.DataFrame({"site": ["site11"] * 5000})  # a very different dataset
    runs = [
        dp.Session(df, source=InsecureSeededSource(0)).top_k(
            "site", k, epsilon=1.0, delta=d, candidates=SITES
        )
        for df in (a, b)
        for k, d in [(1, None), (4, None), (4, 1e-6)]
    ]
    keys = [(r.parameters["mechanism"], r.parameters["scale"], r.epsilon, r.delta) for r in runs]
    assert keys[:3] == keys[3:]
    assert [r.parameters["chosen_by"] for r in runs] == ["auto"] * 6
    assert keys[0][0] == "permute_and_flip"  # k = 1, pure: never worse than the EM


def test_delta_with_candidates_is_used():
    pure = dp.Session(visits(), source=InsecureSeededSource(0)).top_k(
        "site", 6, epsilon=1.0, candidates=SITES, mechanism="gumbel"
    )
    approx = dp.Session(visits(), source=InsecureSeededSource(0)).top_k(
        "site", 6, epsilon=1.0, delta=1e-6, candidates=SITES, mechanism="gumbel"
    )
    assert pure.parameters["scale"] == 6.0 and pure.delta == 0.0
    assert approx.parameters["scale"] < 6.0  # the tighter accounting buys less noise
    assert "Renyi" in approx.parameters["accounting"]
    assert approx.epsilon <= 1.0 and approx.delta == 1e-6


def test_methods_cited_by_name():
    for mech in ["gumbel", "permute_and_flip", "laplace", "laplace_histogram"]:
        r = dp.Session(visits(), source=InsecureSeededSource(0)).top_k(
            "site", 2, epsilon=1.0, candidates=SITES, mechanism=mech
        )
        assert "seed" not in r.mechanism and "(" in r.mechanism
    r = dp.Session(visits()).top_k("site", 2, epsilon=1.0, candidates=SITES, mechanism="gumbel")
    assert r.mechanism == "exponential mechanism, one-shot Gumbel top-k (Durfee and Rogers 2019)"


def test_ledger_records_the_charge_in_its_accounting(tmp_path):
    basic = str(tmp_path / "b.ledger")
    Ledger.create(basic, 5.0, 1e-5)
    r = dp.Session(visits(), ledger=basic).top_k(
        "site", 4, epsilon=1.0, delta=1e-6, candidates=SITES, mechanism="gumbel"
    )
    entry = Ledger.open(basic).entries()[0]
    assert entry.kind == "approx" and (entry.epsilon, entry.delta) == (r.epsilon, r.delta)
    zc = str(tmp_path / "z.ledger")
    Ledger.create(zc, 10.0, 1e-6, accounting="zcdp")
    r = dp.Session(visits(), ledger=zc).top_k("site", 4, epsilon=1.0, delta=1e-6, candidates=SITES)
    assert Ledger.open(zc).spent_rho() == pytest.approx(r.rho)


def test_unknown_domain_recall_and_counts():
    df = visits(5, n_rows=20_000, n_users=5000)
    r = dp.Session(df, source=InsecureSeededSource(1)).top_k(
        "site", 3, epsilon=1.0, delta=1e-6, counts=True
    )
    assert r.candidates == ["site0", "site1", "site2"]
    assert "partition selection" in r.mechanism and r.counts is not None
    true = df["site"].value_counts()
    assert all(abs(c - true[v]) < 30 for v, c in zip(r.candidates, r.counts, strict=True))


def test_unknown_domain_ties_in_random_order():
    """Four values with equal counts, k = 2, noise negligible (epsilon 1000): every value is
    returned in some run (a fixed order would return the same two every time)."""
    import pandas as pd

    df = pd.DataFrame({"v": ["d", "c", "b", "a"] * 500})
    src = InsecureSeededSource(5)
    seen = set()
    for _ in range(40):
        r = dp.Session(df, source=src).top_k(
            "v", 2, epsilon=1000.0, delta=1e-6, mechanism="laplace_histogram"
        )
        seen.update(r.candidates)
    assert seen == {"a", "b", "c", "d"}


def test_cli_delta_candidates_plan_and_keys(tmp_path, capsys):
    from dpselect.cli.main import main

    data = str(ROOT / "examples" / "visits.parquet")
    cands = str(ROOT / "examples" / "sites.txt")

    def run(*args):
        with pytest.raises(SystemExit) as exit_info:
            main(list(args))
        assert exit_info.value.code == 0

    common = ["--column", "site", "--k", "5", "--epsilon", "1", "--candidates", cands]
    run("top-k", data, *common, "--delta", "1e-6", "--mechanism", "gumbel", "--json",
        "--insecure-seed", "1")  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert out["delta"] == 1e-6 and out["parameters"]["scale"] < 5.0  # --delta is used
    run("top-k", data, *common, "--plan")
    plan = capsys.readouterr().out
    assert "permute_and_flip" in plan and "gap 90%" in plan and "no budget spent" in plan
    run("keys", data, "--column", "site", "--epsilon", "1", "--delta", "1e-6",
        "--privacy-unit", "user_id", "--max-contributions", "3",
        "--insecure-seed", "0")  # fmt: skip
    keys = capsys.readouterr().out
    assert "news.example" in keys and "values released" in keys


def test_zcdp_ledger_weighs_bounded_range_options_only(tmp_path):
    zc = str(tmp_path / "z.ledger")
    Ledger.create(zc, 10.0, 1e-6, accounting="zcdp")
    r = dp.Session(visits(), ledger=zc).top_k("site", 1, epsilon=1.0, candidates=SITES)
    assert r.parameters["mechanism"] == "gumbel"  # eps^2/8, not permute-and-flip's eps^2/2
    assert r.rho == pytest.approx(1 / 8)
    plain = dp.Session(visits()).top_k("site", 1, epsilon=1.0, candidates=SITES)
    assert plain.parameters["mechanism"] == "permute_and_flip"
