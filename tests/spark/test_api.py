"""The API, the recipes and the CLI on a Spark frame, end to end on tiny data.

With the same seeded source the Spark path releases exactly what the DuckDB path releases:
the salt is drawn first in both, the score vectors are equal (test_equality), and the
selection runs in the driver on them.
"""

import json

import pandas as pd
import pytest

import dpselect as dp
from dpselect.cli.main import main
from dpselect.core.errors import DataError
from dpselect.planning.price_request import price_request
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes import best_price, quantile
from dpselect.sampling.source import InsecureSeededSource
from tests.session_queries import session_top_k

from .helpers import both, random_rows

SITES = ["news", "mail", "search", "video", "maps"]


@pytest.fixture(scope="module")
def visits(spark):
    rows = [(i % 97, SITES[min(4, int(i**0.5) % 7)], float(i % 50)) for i in range(600)]
    pdf = pd.DataFrame(rows, columns=["user_id", "site", "amount"])
    return pdf, spark.createDataFrame(pdf)


def seeded():
    return InsecureSeededSource(2024)


def test_top_k_matches_duckdb(visits):
    pdf, sdf = visits
    for kw in (
        {},
        {"privacy_unit": "user_id", "contributions": dp.Contributions(values_per_unit=2)},
        {"counts": True},
        {"mechanism": "joint"},
        {
            "mechanism": "joint",
            "privacy_unit": "user_id",
            "contributions": dp.Contributions(values_per_unit=2),
        },
    ):
        a = session_top_k(pdf, "site", 3, 1.0, candidates=[*SITES, "absent"], source=seeded(), **kw)
        b = session_top_k(sdf, "site", 3, 1.0, candidates=[*SITES, "absent"], source=seeded(), **kw)
        assert (a.candidates, a.counts, a.epsilon) == (b.candidates, b.counts, b.epsilon)


def test_most_common_and_the_unknown_domain_path(visits):
    pdf, sdf = visits
    a = dp.Session(sdf, source=seeded()).most_common("site", epsilon=2.0, candidates=SITES)
    assert a.candidates[0] in SITES
    a = dp.Session(pdf, source=seeded()).top_k("site", 2, epsilon=2.0, delta=1e-6)
    b = dp.Session(sdf, source=seeded()).top_k("site", 2, epsilon=2.0, delta=1e-6)
    assert a.candidates == b.candidates and a.delta == b.delta


def test_quantile_with_candidates_matches_duckdb(visits):
    pdf, sdf = visits
    cands = [float(c) for c in range(0, 60, 5)]
    a = quantile(
        pdf, quantile_request("amount", [0.5, 0.9], 2.0, candidates=cands), source=seeded()
    )
    b = quantile(
        sdf, quantile_request("amount", [0.5, 0.9], 2.0, candidates=cands), source=seeded()
    )
    assert a.values == b.values and a.epsilon == b.epsilon


def test_quantile_with_bounds_on_a_grid(visits):
    _, sdf = visits
    r = quantile(
        sdf, quantile_request("amount", [0.25, 0.5], 50.0, bounds=(0.0, 64.0)), source=seeded()
    )
    assert all(0.0 <= v <= 64.0 for v in r.values)
    # a large epsilon puts it within a few resolutions of the true quartile and median
    assert abs(r.values[0] - 12) < 1.0 and abs(r.values[1] - 24.5) < 1.0
    three = quantile(
        sdf, quantile_request("amount", [0.25, 0.5, 0.75], 50.0, bounds=(0, 64)), source=seeded()
    )
    assert "Gillenwater" in three.method and len(three.values) == 3  # auto: joint for 2-20


def test_best_price_on_a_spark_column(visits):
    pdf, sdf = visits
    kw = {"prices": [1.0, 10.0, 20.0], "max_price": 50.0, "column": "amount"}
    a = best_price(pdf, price_request(1.0, **kw), source=seeded())
    b = best_price(sdf, price_request(1.0, **kw), source=seeded())
    assert a.price == b.price


def test_schema_errors_come_from_the_schema(spark):
    from pyspark.sql import functions as f

    _, sdf = both(spark, random_rows(1, n=10))
    with pytest.raises(DataError, match="not a column"):
        dp.top_k(sdf, "nope", 1, epsilon=1.0, candidates=["a"])
    arrays = sdf.select(f.array("x").alias("xs"))
    with pytest.raises(DataError, match="does not compare"):
        dp.top_k(arrays, "xs", 1, epsilon=1.0, candidates=["a"])


@pytest.fixture(scope="module")
def files(tmp_path_factory, visits):
    pdf, sdf = visits
    root = tmp_path_factory.mktemp("spark_cli")
    pdf.to_parquet(root / "visits.parquet", index=False)
    pdf.to_csv(root / "visits.csv", index=False)
    pdf.to_json(root / "visits.jsonl", orient="records", lines=True)
    sdf.repartition(3).write.parquet(str(root / "parts"))
    return root


def run_cli(capsys, *args):
    with pytest.raises(SystemExit) as exit_:
        main([str(a) for a in args])
    out = capsys.readouterr()
    return exit_.value.code, out.out, out.err


@pytest.mark.parametrize("name", ["visits.parquet", "visits.csv", "parts"])
def test_cli_engine_spark(files, capsys, name):
    common = ["--column", "site", "--k", 2, "--epsilon", 1, "--candidates", files / "sites.txt"]
    (files / "sites.txt").write_text("\n".join(SITES) + "\n")
    local = files / "visits.parquet"
    code, duck, err = run_cli(capsys, "top-k", local, *common, "--json", "--insecure-seed", 5)
    assert code == 0, err
    code, out, err = run_cli(
        capsys,
        "top-k",
        files / name,
        *common,
        "--json",
        "--insecure-seed",
        5,
        "--engine",
        "spark",
        "--spark-master",
        "local[1]",
    )
    assert code == 0, err
    assert json.loads(out)["candidates"] == json.loads(duck)["candidates"]


def test_cli_quantile_engine_spark(files, capsys):
    code, out, err = run_cli(
        capsys,
        "quantile",
        files / "parts",
        "--column",
        "amount",
        "--q",
        0.5,
        "--epsilon",
        1,
        "--bounds",
        0,
        64,
        "--json",
        "--insecure-seed",
        1,
        "--engine",
        "spark",
    )
    assert code == 0, err
    assert 0 <= json.loads(out)["values"][0] < 64


def test_cli_engine_spark_bad_path(capsys):
    code, _, err = run_cli(
        capsys,
        "top-k",
        "/nonexistent.parquet",
        "--column",
        "site",
        "--k",
        1,
        "--epsilon",
        1,
        "--delta",
        1e-6,
        "--engine",
        "spark",
    )
    assert code == 2 and "does not exist" in err and len(err.strip().splitlines()) == 1


def test_cli_engine_spark_refuses_json_lines(files, capsys):
    # Spark would take a JSON file's columns from its rows (private): refused from the suffix.
    code, _, err = run_cli(
        capsys,
        "top-k",
        files / "visits.jsonl",
        "--column",
        "site",
        "--k",
        1,
        "--epsilon",
        1,
        "--candidates",
        "a,b",
        "--engine",
        "spark",
    )
    assert code == 2 and "unsupported format for Spark" in err
    assert len(err.strip().splitlines()) == 1
