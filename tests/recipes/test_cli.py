"""``dpselect quantile``, ``price`` and ``preview`` as a user runs them (subprocesses)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest


def run(*args, cwd=None):
    proc = subprocess.run(
        [sys.executable, "-m", "dpselect", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "people.csv"
    rng = np.random.default_rng(0)
    incomes = np.round(rng.lognormal(10, 1, 500), 2)
    valuations = np.round(rng.random(500), 3)
    lines = ["income,valuation"] + [f"{a},{b}" for a, b in zip(incomes, valuations, strict=True)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_quantile_json_and_ledger(data, tmp_path):
    ledger = tmp_path / "budget.db"
    assert run("budget", "init", "--ledger", ledger, "--epsilon", 1.5)[0] == 0
    code, out, err = run(
        "quantile",
        data,
        "--column",
        "income",
        "--q",
        0.5,
        "--q",
        0.9,
        "--epsilon",
        1,
        "--bounds",
        0,
        1e6,
        "--ledger",
        ledger,
        "--json",
        "--insecure-seed",
        3,
    )
    assert code == 0, err
    result = json.loads(out)
    # auto: 1/20 of epsilon to a noisy row count, the rest to the tree or the joint mechanism
    assert result["q"] == [0.5, 0.9] and result["parameters"]["method"] in ("tree", "joint")
    assert result["epsilon_each"] == 0.95 and result["epsilon"] == 1.0
    assert result["values"][0] < result["values"][1] and "NOT private" in err
    # Over budget: one line, exit 2, nothing charged.
    code, out, err = run(
        "quantile",
        data,
        "--column",
        "income",
        "--q",
        0.5,
        "--epsilon",
        1,
        "--candidates",
        "10000,20000,40000",
        "--ledger",
        ledger,
    )
    assert code == 2 and out == "" and err.startswith("error: refused, over budget")
    assert len(err.strip().splitlines()) == 1
    shown = json.loads(run("budget", "show", "--ledger", ledger, "--json")[1])
    assert shown["spent"]["epsilon"] == 1.0


@pytest.mark.parametrize(
    "args, message",
    [
        (["--column", "nope", "--q", 0.5, "--epsilon", 1, "--bounds", 0, 1], "not a column"),
        (["--column", "income", "--q", 2, "--epsilon", 1, "--bounds", 0, 1], "q must be in"),
        (["--column", "income", "--q", 0.5, "--epsilon", 0, "--bounds", 0, 1], "epsilon"),
        (["--column", "income", "--q", 0.5, "--epsilon", 1], "exactly one of bounds"),
    ],
)
def test_quantile_bad_input_exits_2(data, args, message):
    code, out, err = run("quantile", data, *args)
    assert code == 2 and out == "" and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_price_text_and_errors(data):
    code, out, err = run(
        "price", data, "--column", "valuation", "--epsilon", 1, "--n", 500, "--insecure-seed", 1
    )
    assert code == 0, err
    assert out.startswith("price: ") and "gamma - " in out
    code, out, err = run(
        "price",
        data,
        "--column",
        "valuation",
        "--epsilon",
        1,
        "--prices",
        "0.25,0.5,0.75",
        "--json",
    )
    assert code == 0 and json.loads(out)["price"] in (0.25, 0.5, 0.75)
    code, out, err = run("price", data, "--column", "valuation", "--epsilon", 1)
    assert code == 2 and "public number of buyers" in err and out == ""
    code, _, err = run("price", data, "--column", "valuation", "--epsilon", 1, "--prices", "a,b")
    assert code == 2 and "--prices" in err


def test_preview_json_plot_and_errors(tmp_path):
    plot = tmp_path / "hair.png"
    code, out, err = run(
        "preview",
        "--scores",
        "dark=500,blond=400,brown=400,red=400",
        "--epsilon",
        0.1,
        "--plot",
        plot,
        "--json",
    )
    assert code == 0, err
    result = json.loads(out)
    row = result["rows"][0]
    assert abs(row["p_wrong"] - 0.019813) < 1e-6 and row["bound_wrong"] <= 0.027
    assert result["plot"] == str(plot) and plot.read_bytes()[:4] == b"\x89PNG"
    code, out, _ = run("preview", "--scores", "3,1,0", "--epsilon", 1, "--monotonic")
    assert code == 0 and "P[best]" in out and "no budget spent" in out
    for args, message in (
        (["--scores", "3,1"], "--epsilon"),
        (["--scores", "3,x", "--epsilon", 1], "--scores"),
        (["--scores", "3,1", "--epsilon", -1], "epsilon"),
        (["--scores", "3,1", "--plot", tmp_path / "x.txt"], ".png"),
    ):
        code, out, err = run("preview", *args)
        assert code == 2 and out == "" and message in err, (args, err)
