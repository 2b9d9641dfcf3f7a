"""The rules that drop rows are stated with every result they apply to (public facts of the
input's format and the query's arguments), never with a count of the rows they dropped."""

from __future__ import annotations

import json

import pandas as pd

import dpselect as dp
from dpselect.data.row_rules import row_rules
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes.quantiles import quantile as recipe_quantile
from dpselect.sampling import InsecureSeededSource
from tests.cli_process import run_cli


def test_the_rules_follow_the_format_and_the_unit():
    csv = row_rules("file '/d/visits.csv.gz'", "user")
    assert len(csv) == 3 and "not UTF-8" in csv[0] and "'user'" in csv[2]
    assert "JSON object" in row_rules("file 'x.JSONL'", None)[0]
    assert row_rules("file 'x.parquet'", None) == row_rules("the pandas table", None)
    assert len(row_rules("the pandas table", None)) == 1
    assert row_rules(None, "user") == []


def test_results_state_them_the_same_whatever_the_rows(tmp_path):
    """Two inputs that differ in dropped lines (a line that is not UTF-8, a NULL unit) carry
    the same statement: it depends on the format, never on what was dropped."""
    clean = tmp_path / "clean.csv"
    clean.write_bytes(b"v,u\na,1\nb,2\n")
    dirty = tmp_path / "dirty.csv"
    dirty.write_bytes(b"v,u\na,1\nb,2\n\xff\xfe,3\na,\n")
    said = []
    for path in (clean, dirty):
        r = dp.Session(str(path), privacy_unit="u", source=InsecureSeededSource(1)).top_k(
            "v", 1, epsilon=1.0, candidates=["a", "b"]
        )
        rules = r.parameters["row_rules"]
        assert str(r).endswith("rows read: " + "; ".join(rules))
        words = "".join(rules).replace("8 MiB", "").replace("UTF-8", "")
        assert not any(ch.isdigit() for ch in words)  # no count of anything
        said.append([line.replace(path.name, "") for line in rules])
    assert said[0] == said[1]
    q = recipe_quantile(
        pd.DataFrame({"x": [1.0, 2.0, None]}),
        quantile_request("x", 0.5, 1.0, bounds=(0, 3)),
        source=InsecureSeededSource(1),
    )
    assert q.parameters["row_rules"] == row_rules("the pandas table", None)
    assert "rows read: a row whose value is missing" in str(q)


def test_the_command_prints_them_and_json_carries_them(tmp_path):
    path = tmp_path / "v.csv"
    path.write_text("v,u\na,1\nb,2\na,3\n")
    base = ["top-k", path, "--column", "v", "--k", 1, "--epsilon", 1, "--candidates", "a,b",
            "--privacy-unit", "u", "--insecure-seed", 1]  # fmt: skip
    table = run_cli(*base)
    assert table.returncode == 0, table.stderr
    assert "rows read: a line that is empty, not UTF-8 text" in table.stdout
    out = json.loads(run_cli(*base, "--json").stdout)
    assert out["parameters"]["row_rules"] == row_rules(f"file '{path}'", "u")
