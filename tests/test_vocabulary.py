"""One vocabulary (issue 23): the names the recipes and the command take."""

from __future__ import annotations

import pandas as pd
import pytest
from click.testing import CliRunner

import dpselect as dp
from dpselect.cli.main import COMMAND_ALIASES, cli
from dpselect.planning.price_request import price_request
from dpselect.recipes.pricing import best_price as recipe_best_price
from dpselect.sampling import InsecureSeededSource

COUNTS = pd.Series(["a"] * 9 + ["b"] * 7 + ["c"] * 3 + ["d"])


def _top(mechanism: str) -> dp.TopKResult:
    with dp.Session(COUNTS, source=InsecureSeededSource(3)) as session:
        return session.top_k("value", 2, epsilon=1.0, candidates=["a", "b", "c", "d"],
                             mechanism=mechanism)  # type: ignore[arg-type]  # fmt: skip


def test_permute_and_flip_is_the_name():
    r = _top("permute_and_flip")
    assert r.parameters["mechanism"] == "permute_and_flip"


def test_preview_accepts_permute_and_flip():
    r = dp.preview([10, 8, 1], epsilon=1.0, mechanism="permute_and_flip")
    assert r.mechanism == "permute_and_flip"


@pytest.mark.parametrize("short", sorted(COMMAND_ALIASES))
def test_cli_commands_have_the_python_names_and_keep_the_short_ones(short):
    name = COMMAND_ALIASES[short]
    assert name.replace("-", "_") in dp.__all__
    runner = CliRunner()
    long_help = runner.invoke(cli, [name, "--help"]).output
    short_help = runner.invoke(cli, [short, "--help"]).output
    assert long_help.replace(name, short, 1) == short_help


@pytest.mark.parametrize(
    "args, value",
    [
        (["quantile", "--column", "v", "--q", "0.5", "--epsilon", "1", "--bounds", "0", "200"],
         "split"),
        (["partition-selection", "--column", "v", "--epsilon", "1", "--delta", "1e-6"], "laplace"),
    ],
)  # fmt: skip
def test_cli_mechanism_flag(tmp_path, args, value):
    path = tmp_path / "v.csv"
    path.write_text("v\n" + "".join(f"{i % 7}\n" for i in range(200)))
    runner = CliRunner()
    assert "--mechanism" in runner.invoke(cli, [args[0], "--help"]).output
    common = [args[0], str(path), *args[1:], "--insecure-seed", "2", "--json"]
    result = runner.invoke(cli, [*common, "--mechanism", value])
    assert result.exit_code == 0, result.output


def test_price_result_accuracy():
    r = recipe_best_price(
        [0.2, 0.5, 0.7, 0.9] * 10, price_request(1.0, n=40), source=InsecureSeededSource(6)
    )
    assert r.to_dict()["accuracy"] == r.accuracy
    assert r.accuracy in str(r)


def _public_names() -> list[tuple[str, str]]:
    """Every parameter and result field of the task tier (``dpselect.__all__``,
    ``dpselect.recipes.__all__``, the Session's methods): ``(owner, name)``."""
    import dataclasses
    import inspect

    import dpselect.recipes as recipes

    out = []
    owners = [(n, getattr(dp, n)) for n in dp.__all__]
    owners += [(n, getattr(recipes, n)) for n in recipes.__all__]
    owners += [(f"Session.{n}", getattr(dp.Session, n)) for n in dir(dp.Session)
               if not n.startswith("_")]  # fmt: skip
    for owner, obj in owners:
        if dataclasses.is_dataclass(obj):
            out += [(owner, f.name) for f in dataclasses.fields(obj)]
        if callable(obj):
            try:
                out += [(owner, p) for p in inspect.signature(obj).parameters]
            except (TypeError, ValueError):
                continue
    return out


def test_one_word_one_meaning() -> None:
    """``alpha`` is the Renyi order only (dpselect.accounting); the task tier says
    ``price_step``, ``target_error`` and ``margin_95``; ``bounds`` is value bounds only."""
    names = _public_names()
    assert ("best_price", "price_step") in names and ("select_hypothesis", "target_error") in names
    assert not [x for x in names if "alpha" in x[1]]
    assert {x[0] for x in names if x[1] == "bounds"} <= {"quantile", "Session.quantile"}
    runner = CliRunner()
    assert "--price-step" in runner.invoke(cli, ["price", "--help"]).output
    assert "--alpha" not in runner.invoke(cli, ["price", "--help"]).output
