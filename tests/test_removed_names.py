"""The spellings removed in 0.2.0 (CHANGELOG.md) fail in the normal way: no module, no
attribute, an unexpected keyword, a value or an option not among the choices."""

from __future__ import annotations

import importlib

import pandas as pd
import pytest
from click.testing import CliRunner

import dpselect as dp
from dpselect.cli.main import cli
from dpselect.planning.price_request import price_request
from dpselect.recipes.pricing import best_price as recipe_best_price
from dpselect.sampling import InsecureSeededSource


@pytest.mark.parametrize(
    "module", ["dpselect.api", "dpselect.data.spark_engine", "dpselect.recipes.auto_bounds",
               "dpselect.core.deprecation"],
)  # fmt: skip
def test_removed_modules_do_not_import(module):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(module)


@pytest.mark.parametrize("name", ["make_laplace", "vector_domain", "pac_sample_size", "api"])
def test_framework_names_are_not_at_the_top_level(name):
    import dpselect.core
    import dpselect.mechanisms
    import dpselect.recipes

    with pytest.raises(AttributeError):
        getattr(dp, name)
    with pytest.raises(ImportError):
        exec(f"from dpselect import {name}", {})
    if name != "api":  # still in their sub-namespace
        assert any(
            name in pkg.__all__ for pkg in (dpselect.core, dpselect.mechanisms, dpselect.recipes)
        )


def test_old_keywords_are_unknown():
    from dpselect.mechanisms.limited_domain import make_limited_domain_top_k

    values = pd.Series([float(i) for i in range(1, 101)])
    with pytest.raises(TypeError, match="method"):
        dp.quantile(values, None, 0.5, epsilon=1.0, bounds=(0, 100), method="split")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="method"):
        dp.partition_selection(values, None, epsilon=1.0, delta=1e-6, method="laplace")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="score_fn"):
        dp.select(["a"], data=[], epsilon=1.0, sensitivity=1, score_fn=len)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="l0_sensitivity"):
        make_limited_domain_top_k(2, 3, 1.0, delta=1e-4, l0_sensitivity=3)  # type: ignore[call-arg]
    frame = pd.DataFrame({"user": [1, 1, 2], "item": list("aab")})
    with pytest.raises(TypeError, match="beta"):
        dp.choose_max_contributions(frame, "item", "user", epsilon=1.0, beta=0.05)  # type: ignore[call-arg]


def test_exponential_is_not_a_mechanism_name():
    with pytest.raises(dp.ParameterError, match="mechanism must be one of"):
        dp.top_k(pd.Series(list("aab")), None, 1, epsilon=1.0, candidates=["a", "b"],
                 mechanism="exponential")  # type: ignore[arg-type]  # fmt: skip
    with pytest.raises(dp.ParameterError, match="mechanism must be one of"):
        dp.preview([3, 1], 1.0, mechanism="exponential")  # type: ignore[arg-type]


def test_price_result_has_no_guarantee():
    r = recipe_best_price(
        [0.2, 0.5, 0.9] * 10, price_request(1.0, n=30), source=InsecureSeededSource(6)
    )
    assert "guarantee" not in r.to_dict()
    with pytest.raises(AttributeError):
        r.guarantee  # type: ignore[attr-defined]  # noqa: B018


@pytest.mark.parametrize(
    "args, message",
    [
        (["quantile", "x.csv", "--column", "v", "--q", "0.5", "--epsilon", "1", "--method",
          "split"], "No such option '--method'"),
        (["partition-selection", "x.csv", "--column", "v", "--epsilon", "1", "--delta", "1e-6",
          "--method", "laplace"], "No such option '--method'"),
        (["top-k", "x.csv", "--column", "v", "--k", "1", "--epsilon", "1", "--mechanism",
          "exponential"], "'exponential' is not one of"),
        (["preview", "--scores", "3,1", "--epsilon", "1", "--mechanism", "exponential"],
         "'exponential' is not one of"),
    ],
)  # fmt: skip
def test_removed_cli_spellings_are_usage_errors(args, message):
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and message in result.output, result.output
