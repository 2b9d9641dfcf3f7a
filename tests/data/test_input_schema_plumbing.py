"""``schema=`` through the Python API and ``--schema`` on every data command (in process)."""

import json

import pytest

import dpselect as dp
from dpselect.cli.main import main
from dpselect.core.errors import ParameterError
from dpselect.planning.price_request import price_request
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes.pricing import best_price as recipe_best_price
from dpselect.recipes.quantiles import quantile as recipe_quantile
from dpselect.sampling.source import InsecureSeededSource


@pytest.fixture()
def data(tmp_path):
    path = tmp_path / "d.csv"
    rows = [f"u{i},{'ab'[i % 2]},{i % 4}" for i in range(40)] + ["mallory,a,notanumber"]
    path.write_text("user,site,n\n" + "\n".join(rows) + "\n")
    (tmp_path / "cands.txt").write_text("0\n1\n2\n3\n")
    return tmp_path


def test_python_api_schema(data):
    path = data / "d.csv"
    got = dp.Session(path, schema={"n": int}, source=InsecureSeededSource(1)).top_k(
        "n", 1, epsilon=50.0, candidates=[0, 1, 2, 3, 9]
    )
    assert got.candidates[0] in (0, 1, 2, 3)
    assert (
        dp.Session(path, schema={"n": "BIGINT"}, source=InsecureSeededSource(1))
        .most_common("site", epsilon=1.0, candidates=["a", "b"])
        .candidates
    )
    q = recipe_quantile(
        path,
        quantile_request("n", 0.5, 1.0, bounds=(0, 10)),
        source=InsecureSeededSource(2),
        schema={"n": "DOUBLE"},
    )
    assert 0 <= q.values[0] <= 10
    price = recipe_best_price(
        path,
        price_request(1.0, prices=[1, 2, 3], max_price=3, column="n"),
        source=InsecureSeededSource(3),
        schema={"n": float},
    )
    assert price.price in (1, 2, 3)
    with pytest.raises(ParameterError, match="unknown type"):
        dp.Session(path, schema={"n": "NOPE"}).top_k("n", 1, epsilon=1.0, candidates=[0, 1])


def run(capsys, *args):
    with pytest.raises(SystemExit) as exit_info:
        main([str(a) for a in args])
    out = capsys.readouterr()
    return exit_info.value.code, out.out, out.err


def test_cli_schema_on_every_data_command(data, capsys):
    path = data / "d.csv"
    commands = [
        ["top-k", path, "--column", "n", "--k", "1", "--epsilon", "1",
         "--candidates", data / "cands.txt"],
        ["mode", path, "--column", "n", "--epsilon", "1", "--candidates", data / "cands.txt"],
        ["quantile", path, "--column", "n", "--q", "0.5", "--epsilon", "1", "--bounds", "0", "9"],
        ["price", path, "--column", "n", "--epsilon", "1", "--prices", "1,2,3", "--max-price", "3"],
    ]  # fmt: skip
    for command in commands:
        code, out, err = run(capsys, *command, "--schema", "n:BIGINT", "--json",
                             "--insecure-seed", "1")  # fmt: skip
        assert code == 0, (command, err)
        json.loads(out)
        for bad in ["n", "n:NOPE", "n:INT,n:INT", "n:INTEGER[]", "zz:INT"]:
            code, out, err = run(capsys, *command, "--schema", bad)
            assert code == 2 and len(err.strip().splitlines()) == 1, (command, bad, err)
            assert "schema" in err
