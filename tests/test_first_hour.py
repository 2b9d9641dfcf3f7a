"""Issue 27, "the first hour of a new user": friction found on real data, item by item.

1. every ``--json`` output is strict JSON (RFC 8259: no NaN or Infinity);
2. NumPy scalars as numbers; a pandas Series, a 1-D NumPy array or a DuckDB relation as data;
3. ``budget init`` refuses what queries refuse; ``budget show`` reads a read-only ledger;
4. ``-`` reads standard input; ``--spark-master`` without ``--engine spark`` is refused;
5. accuracy statements evaluated in numbers; noisy counts below the noise never negative;
6. numeric-looking candidates against an untyped text column: a note pointing to --schema.
"""

import json
import os
import re
import subprocess
from contextlib import contextmanager

import duckdb
import numpy as np
import pandas as pd
import pytest

import dpselect as dp
from dpselect.accounting.ledger import Ledger
from dpselect.core.errors import DataError, DPSelectError, ParameterError
from dpselect.data.tables import one_column
from dpselect.planning.price_request import price_request
from dpselect.planning.quantile_request import quantile_request
from dpselect.planning.top_k_request import top_k_request
from dpselect.recipes import best_price, quantile
from dpselect.recipes.top_k import top_k
from dpselect.sampling.source import InsecureSeededSource

from .cli_process import run_cli

SITES = ["news", "mail", "search", "video", "maps", "absent"]


def run(*args, stdin=None):
    return run_cli(*args, stdin=stdin)


def strict_json(text):
    """``json.loads`` that refuses NaN, Infinity and -Infinity (RFC 8259)."""

    def refuse(name):
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("first_hour")
    weights = [40, 20, 10, 5, 2]
    rows = [
        (f"u{(i * 7 + j) % 30}", s, float(10 * w + i % 7))
        for s, w in zip(SITES[:5], weights, strict=True)
        for i in range(w)
        for j in range(2)
    ]
    df = pd.DataFrame(rows, columns=["user_id", "site", "income"])
    df.to_parquet(root / "visits.parquet", index=False)
    df.to_csv(root / "visits.csv", index=False)
    with open(root / "visits.jsonl", "w") as out:
        for record in df.to_dict("records"):
            out.write(json.dumps(record) + "\n")
    (root / "sites.txt").write_text("\n".join(SITES) + "\n")
    zcdp = root / "zcdp.ledger"
    Ledger.create(str(zcdp), 2.0, 1e-5, accounting="zcdp").close()
    Ledger.create(str(root / "basic.ledger"), 100.0, 1e-5).close()
    return root


# ------------------------------------------------------------------ item 1: strict JSON
def json_commands(files):
    """Every command with ``--json`` (paths hold no blanks: split on them)."""
    data, sites = files / "visits.parquet", files / "sites.txt"
    sel = "--column site --epsilon 1 --insecure-seed 1 --json"
    unit = "--privacy-unit user_id --max-contributions"
    q = f"quantile {data} --column income --epsilon 1 --insecure-seed 1 --json"
    keys = f"keys {data} --column site --epsilon 1 --delta 1e-6 --insecure-seed 1 --json"
    commands = {
        "top-k": f"top-k {data} --k 2 --candidates {sites} --counts {sel}",
        "top-k gumbel": f"top-k {data} --k 2 --candidates a,news --mechanism gumbel --counts {sel}",
        "top-k from the data": f"top-k {data} --k 2 --delta 1e-6 {sel}",
        "top-k policy": f"top-k {data} --k 2 --delta 1e-6 {unit} 3 {sel}",
        "mode": f"mode {data} --candidates {sites} {sel}",
        "plan": f"top-k {data} --k 2 --candidates {sites} --plan {sel}",
        "plan policy": f"top-k {data} --k 2 --delta 1e-6 {unit} 4 --plan {sel}",
        "plan from the data": f"top-k {data} --k 2 --delta 1e-6 --plan {sel}",
        "keys": keys,
        "keys policy": f"{keys} {unit} 3",
        "median": f"{q} --q 0.5 --bounds 0 1000",
        "quartiles": f"{q} --q 0.25 --q 0.5 --q 0.75 --bounds 0 1000",
        "joint": f"{q} --q 0.25 --q 0.75 --bounds 0 1000 --mechanism joint",
        "tree": f"{q} --q 0.25 --q 0.75 --bounds 0 1000 --mechanism tree",
        "recursive": f"{q} --q 0.25 --q 0.75 --bounds 0 1000 --mechanism recursive",
        "quantile candidates": f"{q} --q 0.5 --candidates 100,200,300",
        "quantile auto bounds": f"{q} --q 0.5 --bounds auto",
        "price": f"price {data} --column income --epsilon 1 --max-price 500 --n 100 --json",
        "preview": "preview --scores a=10,b=5,c=1 --epsilon 1 --json",
        "budget show": f"budget show --ledger {files / 'basic.ledger'} --json",
        "budget show zcdp": f"budget show --ledger {files / 'zcdp.ledger'} --json",
    }
    return {name: text.split() for name, text in commands.items()}


def test_every_json_output_is_strict_json(files):
    from concurrent.futures import ThreadPoolExecutor

    commands = json_commands(files)
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda c: run(*c), commands.values()))
    for name, result in zip(commands, results, strict=True):
        assert result.returncode == 0, (name, result.stderr)
        strict_json(result.stdout)  # raises on NaN / Infinity


def test_plan_text_says_na_not_nan(files):
    result = run("top-k", files / "visits.parquet", "--column", "site", "--k", 2, "--epsilon", 1,
                 "--delta", 1e-6, "--privacy-unit", "user_id", "--max-contributions", 4,
                 "--plan")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "nan" not in result.stdout.split() and "needed -" in result.stdout


def test_to_dict_of_a_plan_is_strict_json():
    from dpselect.recipes.preview import preview_top_k

    out = json.dumps(
        preview_top_k(2, None, 1.0, delta=1e-6, max_contributions=4).to_dict(), allow_nan=False
    )
    row = strict_json(out)["rows"][0]
    assert row["mechanism"] == "policy_top_k" and row["gap_90"] is None


# ------------------------------------------------------------------ item 2: Python types
def frame():
    return pd.DataFrame(
        {"site": ["news"] * 30 + ["mail"] * 20 + ["maps"] * 5, "v": np.arange(55.0)}
    )


def seeded():
    return InsecureSeededSource(7)


def test_numpy_scalars_are_numbers(tmp_path):
    df = frame()
    expected = dp.Session(df, source=seeded()).top_k(
        "site", 2, epsilon=1.0, candidates=SITES, counts=True
    )
    got = dp.Session(df, source=seeded()).top_k(
        "site",
        np.int64(2),
        epsilon=np.float32(1),
        delta=np.float32(0),
        candidates=SITES,
        counts=True,
    )
    assert got.candidates == expected.candidates and got.counts == expected.counts
    assert got.parameters["k"] == 2 and type(got.parameters["k"]) is int
    # np.float32(0.1) is not 0.1: it is read exactly, as float() gives it
    tenth = dp.Session(df, source=seeded()).top_k(
        "site", 1, epsilon=np.float32(0.1), candidates=SITES
    )
    assert 0.1 < tenth.epsilon <= float(np.float32(0.1))
    users = df.assign(user=np.arange(55) % 9)
    dp.Session(
        users,
        privacy_unit="user",
        contributions=dp.Contributions(values_per_unit=np.int64(2)),
        source=seeded(),
    ).top_k("site", np.int32(1), epsilon=np.float64(1), candidates=SITES)
    q = quantile(
        df,
        quantile_request(
            "v",
            np.float32(0.5),
            np.float32(1),
            bounds=(np.int64(0), np.float32(60)),
            confidence=np.float32(0.9),
        ),
        source=seeded(),
    )
    assert q.parameters["bounds"] == [0.0, 60.0]
    quantile(
        df,
        quantile_request(
            "v",
            [np.float64(0.25), np.float32(0.75)],
            np.int64(1),
            bounds=(0, 60),
            resolution=np.float32(0.5),
            mechanism="joint",
        ),
        source=seeded(),
    )
    best_price(
        df,
        price_request(np.float32(1), max_price=np.int64(60), n=np.int64(55), column="v"),
        source=seeded(),
    )
    book = Ledger.create(str(tmp_path / "np.ledger"), np.float32(2), np.float64(1e-6))
    dp.Session(df, ledger=book, source=seeded()).top_k(
        "site", 1, epsilon=np.float32(0.5), candidates=SITES
    )
    assert book.spent()[0] == pytest.approx(0.5)


def test_numpy_bools_and_strings_are_not_numbers():
    with pytest.raises(ParameterError, match="k must be an int"):
        dp.Session(frame()).top_k("site", np.bool_(True), epsilon=1.0, candidates=SITES)
    with pytest.raises(ParameterError, match="epsilon must be a number"):
        dp.Session(frame()).top_k("site", 1, epsilon=np.str_("1"), candidates=SITES)


def test_a_series_or_an_array_is_one_column():
    df = frame()
    expected = dp.Session(df, source=seeded()).top_k(
        "site", 2, epsilon=1.0, candidates=SITES, counts=True
    )
    for data, column in [
        (df["site"], None),
        (df["site"], "site"),
        (df["site"].astype("string"), None),  # StringDtype: was "not iterable"
        (df["site"].astype("category"), None),
        (df["site"].to_numpy(), None),
        (df["site"].to_numpy().astype(str), None),
        (df["site"].rename(None), None),
    ]:
        table, name = one_column(data, column)  # as dp.top_k reads one column of values
        request = top_k_request(name, 2, 1.0, candidates=SITES, counts=True)
        got = top_k(table, request, source=seeded())
        assert (got.candidates, got.counts) == (expected.candidates, expected.counts), data
    q = quantile(
        df["v"].to_numpy(), quantile_request(None, 0.5, 1.0, bounds=(0, 60)), source=seeded()
    )
    assert (
        q.values
        == quantile(df, quantile_request("v", 0.5, 1.0, bounds=(0, 60)), source=seeded()).values
    )
    assert (
        quantile(df["v"], quantile_request(None, 0.5, 1.0, bounds=(0, 60)), source=seeded()).values
        == q.values
    )
    price = best_price(df["v"], price_request(1.0, max_price=60, n=55), source=seeded())
    assert (
        price.price
        == best_price(list(df["v"]), price_request(1.0, max_price=60, n=55), source=seeded()).price
    )


def test_a_series_refuses_another_column_name_and_2d_arrays():
    with pytest.raises(DataError, match=r"column .*'other'.*Series named 'site'"):
        dp.top_k(frame()["site"], "other", 1, epsilon=1.0, candidates=SITES)
    with pytest.raises(DataError, match=r"data .*1-D"):
        dp.top_k(np.zeros((3, 2)), None, 1, epsilon=1.0, candidates=[0.0])
    with pytest.raises(DataError, match="column must be a column name"):
        dp.top_k(frame(), None, 1, epsilon=1.0, candidates=SITES)


def test_a_duckdb_relation_is_a_table():
    df = frame()
    connection = duckdb.connect()
    relation = connection.sql("SELECT * FROM df")
    expected = dp.Session(df, source=seeded()).top_k(
        "site", 2, epsilon=1.0, candidates=SITES, counts=True
    )
    got = dp.Session(relation, source=seeded()).top_k(
        "site", 2, epsilon=1.0, candidates=SITES, counts=True
    )
    assert (got.candidates, got.counts) == (expected.candidates, expected.counts)
    q = quantile(relation, quantile_request("v", 0.5, 1.0, bounds=(0, 60)), source=seeded())
    assert (
        q.values
        == quantile(df, quantile_request("v", 0.5, 1.0, bounds=(0, 60)), source=seeded()).values
    )
    with pytest.raises(DataError, match="'nope' is not a column of the DuckDB relation"):
        dp.Session(relation).top_k("nope", 1, epsilon=1.0, candidates=SITES)


@pytest.mark.parametrize("data", [{"site": ["a"]}, 42, b"site\na\n", [["a"]]])
def test_other_data_is_one_line_naming_data(data):
    with pytest.raises(DPSelectError, match=r"^data must be"):
        dp.Session(data).top_k("site", 1, epsilon=1.0, candidates=SITES)


# ------------------------------------------------------------------ item 3: the ledger
def test_budget_init_refuses_what_queries_refuse(tmp_path):
    for eps, delta, match in [(0, 0.0, "epsilon must be positive"), (1, 1, r"delta must be in"),
                              (1, 1.5, r"delta must be in"), (-1, 0.0, "epsilon")]:  # fmt: skip
        with pytest.raises(ParameterError, match=match):
            Ledger.create(str(tmp_path / "x.ledger"), eps, delta)
        result = run("budget", "init", "--ledger", tmp_path / "x.ledger", "--epsilon", eps,
                     "--delta", delta)  # fmt: skip
        assert result.returncode == 2 and result.stdout == "", result
        assert len(result.stderr.splitlines()) == 1 and match.split()[0] in result.stderr
        assert not (tmp_path / "x.ledger").exists()


@contextmanager
def read_only_directory(path):
    """``path`` made read-only: chmod for a user, the immutable attribute for root."""
    if os.geteuid() != 0:
        path.chmod(0o555)
        try:
            yield
        finally:
            path.chmod(0o755)
        return
    made = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
    if made.returncode != 0:
        pytest.skip("root without chattr +i: a directory cannot be made read-only here")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_budget_show_reads_a_ledger_in_a_read_only_directory(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "budget.ledger"
    book = Ledger.create(str(path), 2.0, 1e-5)
    dp.Session(frame(), ledger=book, source=seeded()).top_k(
        "site", 1, epsilon=0.5, candidates=SITES
    )
    book.close()
    with read_only_directory(folder):
        text = run("budget", "show", "--ledger", path)
        as_json = run("budget", "show", "--ledger", path, "--json")
        with Ledger.open(str(path), read_only=True) as ro:
            assert ro.spent() == (0.5, 0.0) and len(ro.entries()) == 1
            with pytest.raises(DPSelectError, match="read-only"):
                ro.charge(0.1, 0.0, "x", {})
    assert text.returncode == 0, text.stderr
    assert "remaining: epsilon = 1.5" in text.stdout and "top_k/" in text.stdout
    assert as_json.returncode == 0 and strict_json(as_json.stdout)["entries"] == 1
    assert sorted(p.name for p in folder.iterdir()) == ["budget.ledger"]


# ------------------------------------------------------------------ item 4: stdin, engines
def test_standard_input_csv_and_jsonl(files):
    args = ["--column", "site", "--k", 2, "--epsilon", 1, "--candidates", files / "sites.txt",
            "--counts", "--json", "--insecure-seed", 3]  # fmt: skip
    from_file = run("top-k", files / "visits.csv", *args)
    from_csv = run("top-k", "-", *args, stdin=(files / "visits.csv").read_text())
    from_jsonl = run("top-k", "-", "--format", "jsonl", *args,
                     stdin=(files / "visits.jsonl").read_text())  # fmt: skip
    for result in (from_file, from_csv, from_jsonl):
        assert result.returncode == 0, result.stderr
    assert strict_json(from_csv.stdout) == strict_json(from_file.stdout)
    assert strict_json(from_jsonl.stdout)["counts"] == strict_json(from_file.stdout)["counts"]
    q = run("quantile", "-", "--column", "income", "--q", 0.5, "--epsilon", 1, "--bounds", 0, 500,
            "--schema", "income:DOUBLE", stdin=(files / "visits.csv").read_text())  # fmt: skip
    keys = run("keys", "-", "--column", "site", "--epsilon", 1, "--delta", 1e-6,
               stdin=(files / "visits.csv").read_text())  # fmt: skip
    assert q.returncode == 0 and keys.returncode == 0, (q.stderr, keys.stderr)


def test_format_only_with_standard_input_and_spark_master_only_with_spark(files):
    base = ["--column", "site", "--k", 1, "--epsilon", 1, "--candidates", "news,mail"]
    for extra, match in [
        (["--format", "csv"], "--format"),
        (["--spark-master", "local[2]"], "--spark-master"),
    ]:
        result = run("top-k", files / "visits.csv", *base, *extra)
        assert result.returncode == 2 and result.stdout == "", result
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:") and match in lines[0]


# ------------------------------------------------------------------ item 5: readable accuracy
def test_joint_statement_is_evaluated(files):
    result = quantile(
        frame(),
        quantile_request("v", [0.25, 0.5, 0.75], 1.0, bounds=(0, 60), mechanism="joint"),
        source=seeded(),
    )
    text = str(result)
    assert " E + " not in text and "ln((hi - lo) / l)" not in text, text
    assert "float log-weights" not in text
    assert re.search(r"within \d+(\.\d+)? rows", text), text
    out = strict_json(json.dumps(result.to_dict(), allow_nan=False))
    assert any("ln((hi - lo) / l)" in line for line in out["derivation"])
    assert out["rounding_loss"] > 0


def test_counts_below_the_noise_are_never_negative():
    shown, marked = [], 0
    for seed in range(12):
        r = dp.Session(frame(), source=InsecureSeededSource(seed)).top_k(
            "site", 3, epsilon=1.0, candidates=["x", "y", "z", "w"], counts=True
        )
        text = str(r)
        shown += re.findall(r"noisy count (-?\d+)", text)
        marked += text.count("< noise")
        assert "indistinguishable from zero" in r.accuracy
    assert marked > 0 and all(int(c) >= 0 for c in shown), shown


def test_cli_counts_table_marks_counts_below_the_noise(files):
    result = run("top-k", files / "visits.parquet", "--column", "site", "--k", 3,
                 "--epsilon", 1, "--candidates", "x,y,z,w", "--counts",
                 "--insecure-seed", 5)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "< noise" in result.stdout and not re.search(r"│\s+-\d", result.stdout)


# ------------------------------------------------------------------ item 6: text vs numbers
def test_numeric_candidates_against_a_text_column_get_a_note(tmp_path):
    path = tmp_path / "n.csv"
    path.write_text("n\n" + "4\n" * 50 + "3\n" * 5)
    result = dp.Session(str(path), source=seeded()).top_k(
        "n", 1, epsilon=1.0, candidates=["3.0", "4.0"]
    )
    note = result.parameters.get("candidates_note", "")
    assert "--schema n:DOUBLE" in note and "text" in note, note
    assert "--schema n:DOUBLE" in str(result)
    cli = run("top-k", path, "--column", "n", "--k", 1, "--epsilon", 1, "--candidates", "3.0,4.0")
    assert cli.returncode == 0 and "--schema n:DOUBLE" in cli.stdout, cli
    # public facts only: no note with a declared type, text candidates, or a typed column
    typed = pd.DataFrame({"n": ["4", "3"]})  # a pandas object column: known to be text
    cases = [(str(path), ["3.0", "4.0"], {"n": "DOUBLE"}), (str(path), ["a", "4"], None),
             (typed, ["3.0", "4.0"], None)]  # fmt: skip
    for data, cands, schema in cases:
        r = dp.Session(data, schema=schema, source=seeded()).top_k(
            "n", 1, epsilon=1.0, candidates=cands
        )
        assert "candidates_note" not in r.parameters, (data, cands, schema)
