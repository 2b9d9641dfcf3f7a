"""``dpselect quantile`` on text columns, ties and many levels, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd


def run(*args):
    proc = subprocess.run(
        [sys.executable, "-m", "dpselect", "quantile", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.returncode, proc.stdout, proc.stderr


def test_typed_text_column_is_refused_in_one_line(tmp_path):
    path = tmp_path / "w.parquet"
    pd.DataFrame({"weather": ["sun", "rain", "fog"], "t": [1.0, 2.0, 3.0]}).to_parquet(path)
    code, out, err = run(path, "--column", "weather", "--q", 0.5, "--epsilon", 1, "--bounds", 0, 1)
    assert code == 2 and out == ""
    assert "'weather' has type VARCHAR" in err and len(err.strip().splitlines()) == 1


def test_csv_text_column_is_parsed_and_the_output_says_so(tmp_path):
    path = tmp_path / "w.csv"
    path.write_text("t\n12.5\n12.5\n12.5\n12.5\n12.5\n12.5\n12.5\nn/a\n11\n14\n")
    code, out, err = run(
        path,
        "--column",
        "t",
        "--q",
        0.5,
        "--epsilon",
        5,
        "--bounds",
        -20,
        50,
        "--insecure-seed",
        1,
    )
    assert code == 0, err
    assert out.startswith("q = 0.5: 12.5\n")  # the tied value itself
    assert "do not parse as numbers" in out and "--schema t:DOUBLE" in out


def test_deciles_recursive_json(tmp_path):
    path = tmp_path / "v.csv"
    path.write_text("v\n" + "\n".join(str(i) for i in range(1, 1001)) + "\n")
    args = [path, "--column", "v", "--epsilon", 1, "--bounds", 0, 2000, "--json"]
    for q in range(1, 10):
        args += ["--q", q / 10]
    code, out, err = run(*args, "--insecure-seed", 2)
    assert code == 0, err
    result = json.loads(out)
    # auto: 0.95 N >= 700 here (N about 1000), so the noisy count picks the joint mechanism
    assert result["parameters"]["method"] == "joint" and len(result["values"]) == 9
    code, out, err = run(*args, "--mechanism", "recursive")
    assert code == 0, err
    assert json.loads(out)["parameters"]["method"] == "recursive"
    code, out, err = run(*args, "--mechanism", "split", "--resolution", 0.5)
    assert code == 0, err
    assert json.loads(out)["parameters"]["method"] == "split"
    code, out, err = run(*args, "--resolution", 1000)
    assert code == 2 and "resolution must be in" in err
