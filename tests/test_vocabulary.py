"""One vocabulary (issue 23): the new spellings, and the old ones as warned aliases that behave
identically."""

from __future__ import annotations

import pandas as pd
import pytest
from click.testing import CliRunner

import dpselect as dp
from dpselect.cli.main import COMMAND_ALIASES, cli
from dpselect.sampling import InsecureSeededSource

COUNTS = pd.Series(["a"] * 9 + ["b"] * 7 + ["c"] * 3 + ["d"])


def _top(mechanism: str) -> dp.TopKResult:
    return dp.top_k(
        COUNTS, None, k=2, epsilon=1.0, candidates=["a", "b", "c", "d"],
        mechanism=mechanism, source=InsecureSeededSource(3),
    )  # fmt: skip


def test_permute_and_flip_is_the_name_and_exponential_a_deprecated_alias():
    new = _top("permute_and_flip")
    with pytest.warns(DeprecationWarning, match="permute_and_flip"):
        old = _top("exponential")
    assert new.to_dict() == old.to_dict() and str(new) == str(old)
    assert new.parameters["mechanism"] == "permute_and_flip"


def test_preview_accepts_permute_and_flip():
    new = dp.preview([10, 8, 1], epsilon=1.0, mechanism="permute_and_flip")
    with pytest.warns(DeprecationWarning):
        old = dp.preview([10, 8, 1], epsilon=1.0, mechanism="exponential")
    assert new.rows == old.rows


def test_choose_max_contributions_confidence_and_deprecated_beta():
    frame = pd.DataFrame({"user": [1, 1, 2, 3, 3, 3], "item": list("abacbd")})

    def choose(**kw):
        return dp.choose_max_contributions(
            frame, "item", "user", 1.0, source=InsecureSeededSource(5), **kw
        )

    with pytest.warns(DeprecationWarning, match="confidence"):
        old = choose(beta=0.05)
    assert choose().to_dict() == old.to_dict() == choose(confidence=0.95).to_dict()
    with pytest.raises(dp.ParameterError), pytest.warns(DeprecationWarning):
        choose(beta=0.1, confidence=0.8)


@pytest.mark.parametrize("short", sorted(COMMAND_ALIASES))
def test_cli_commands_have_the_python_names_and_keep_the_short_ones(short):
    name = COMMAND_ALIASES[short]
    assert name.replace("-", "_") in dp.__all__
    runner = CliRunner()
    long_help = runner.invoke(cli, [name, "--help"]).output
    short_help = runner.invoke(cli, [short, "--help"]).output
    assert long_help.replace(name, short, 1) == short_help


VALUES = pd.Series([float(i) for i in range(1, 201)])
KEYS = pd.Series(["a"] * 300 + ["b"] * 200 + ["c"] * 2)


@pytest.mark.parametrize(
    "run, value",
    [
        (lambda **kw: dp.quantile(VALUES, None, [0.25, 0.75], 1.0, bounds=(0, 200),
                                  source=InsecureSeededSource(4), **kw), "joint"),
        (lambda **kw: dp.quantile(VALUES, None, 0.5, 1.0, bounds="auto",
                                  source=InsecureSeededSource(4), **kw), "split"),
        (lambda **kw: dp.partition_selection(KEYS, None, 1.0, 1e-6,
                                             source=InsecureSeededSource(4), **kw), "laplace"),
    ],
)  # fmt: skip
def test_mechanism_is_the_name_and_method_a_deprecated_alias(run, value):
    new = run(mechanism=value)
    with pytest.warns(DeprecationWarning, match="mechanism="):
        old = run(method=value)
    assert new.to_dict() == old.to_dict() and str(new) == str(old)
    with pytest.raises(dp.ParameterError), pytest.warns(DeprecationWarning):
        run(method=value, mechanism=value)


@pytest.mark.parametrize(
    "args, value",
    [
        (["quantile", "--column", "v", "--q", "0.5", "--epsilon", "1", "--bounds", "0", "200"],
         "split"),
        (["partition-selection", "--column", "v", "--epsilon", "1", "--delta", "1e-6"], "laplace"),
    ],
)  # fmt: skip
def test_cli_mechanism_flag_and_its_former_name(tmp_path, args, value):
    path = tmp_path / "v.csv"
    path.write_text("v\n" + "".join(f"{i % 7}\n" for i in range(200)))
    runner = CliRunner()
    assert "--mechanism" in runner.invoke(cli, [args[0], "--help"]).output
    common = [args[0], str(path), *args[1:], "--insecure-seed", "2", "--json"]
    new = runner.invoke(cli, [*common, "--mechanism", value])
    old = runner.invoke(cli, [*common, "--method", value])
    assert new.exit_code == 0, new.output
    assert new.output == old.output


def test_price_result_accuracy_and_deprecated_guarantee():
    r = dp.best_price([0.2, 0.5, 0.7, 0.9] * 10, 1.0, n=40, source=InsecureSeededSource(6))
    with pytest.warns(DeprecationWarning, match="accuracy"):
        assert r.guarantee == r.accuracy
    assert r.to_dict()["guarantee"] == r.to_dict()["accuracy"] == r.accuracy
    assert r.accuracy in str(r)


def test_score_fn_is_a_deprecated_spelling_of_score():
    import dpselect as dp
    from dpselect.core.errors import ParameterError
    from dpselect.sampling.source import InsecureSeededSource

    def score(data, c):
        return data.count(c)

    args = (["a", "b"],)
    rest = {"data": list("aab"), "epsilon": 1.0, "sensitivity": 1}
    new = dp.select(*args, score=score, source=InsecureSeededSource(3), **rest)
    with pytest.warns(DeprecationWarning, match="score="):
        old = dp.select(*args, score_fn=score, source=InsecureSeededSource(3), **rest)
    assert old.to_dict() == new.to_dict()
    with pytest.raises(ParameterError, match="not both"):
        dp.select(*args, score=score, score_fn=score, **rest)


def test_l0_sensitivity_is_a_deprecated_spelling_of_max_contributions():
    from dpselect.mechanisms.limited_domain import make_limited_domain_top_k

    new = make_limited_domain_top_k(2, 3, 1.0, 1e-4, max_contributions=3)
    with pytest.warns(DeprecationWarning, match="max_contributions="):
        old = make_limited_domain_top_k(2, 3, 1.0, 1e-4, l0_sensitivity=3)
    assert old.map(1) == new.map(1)
