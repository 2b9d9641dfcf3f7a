"""The joint mechanism's default resolution from the column type's step (docs/quantiles.md,
"The joint mechanism's default resolution"): integer and DECIMAL(p, s) columns."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from dpselect.data.column_roles import recorded_step
from dpselect.mechanisms import quantile_joint_parameters as qjp
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes import quantile
from dpselect.sampling import InsecureSeededSource

DECILES = [i / 10 for i in range(1, 10)]


@pytest.mark.parametrize(
    ("sql_type", "step"),
    [
        ("BIGINT", Fraction(1)),
        ("integer", Fraction(1)),
        ("UTINYINT", Fraction(1)),
        ("HUGEINT", Fraction(1)),
        ("DECIMAL(18,2)", Fraction(1, 100)),
        ("DECIMAL(9, 0)", Fraction(1)),
        ("DECIMAL(38,10)", Fraction(1, 10**10)),
        ("DOUBLE", None),
        ("FLOAT", None),
        ("VARCHAR", None),  # text is parsed row by row: no step from the schema
        ("DATE", None),
    ],
)
def test_recorded_step_from_the_type_alone(sql_type, step):
    assert recorded_step(sql_type) == step


def test_joint_resolution_with_a_step():
    assert qjp.joint_resolution(None, 0.0, 20000.0, 1, Fraction(1)) == 0.5
    assert qjp.joint_resolution(None, 0.0, 20000.0, 0.1, Fraction(1)) == 0.5  # any epsilon
    w = qjp.joint_resolution(None, 0.0, 100.0, 1, Fraction(1, 100))
    assert w >= 0.005 and qjp.decimal_step(w) == Fraction(1, 100)  # rounded up, same step
    # a step too coarse for the bounds: the bounds' rule
    assert qjp.joint_resolution(None, 0.0, 1.0, 1, Fraction(1)) == qjp.joint_resolution(
        None, 0.0, 1.0, 1
    )
    assert qjp.joint_resolution(None, 0.0, 2.0, 1, Fraction(1)) == 0.5  # step = (hi - lo) / 2
    # a step finer than (hi - lo) / 10^6: raised to it, as every default
    assert qjp.joint_resolution(None, 0.0, 1e8, 1, Fraction(1)) == 100.0
    assert qjp.joint_resolution(0.25, 0.0, 100.0, 1, Fraction(1)) == 0.25  # a given w is kept
    assert qjp.joint_resolution(0, 0.0, 100.0, 1, Fraction(1)) == 0.0


def test_integer_column_reads_its_step_float_column_keeps_the_bounds_rule():
    rng = np.random.default_rng(4)
    prices = rng.integers(300, 19000, 2000)
    ints = quantile(
        pd.DataFrame({"v": prices}),
        quantile_request("v", DECILES, 1.0, bounds=(0, 20000), mechanism="joint"),
        source=InsecureSeededSource(1),
    )
    floats = quantile(
        pd.DataFrame({"v": prices.astype(float)}),
        quantile_request("v", DECILES, 1.0, bounds=(0, 20000), mechanism="joint"),
        source=InsecureSeededSource(1),
    )
    assert ints.resolution == 0.5 and ints.parameters["resolution"] == 0.5
    assert floats.resolution == 5.0
    assert all(v == round(v) for v in ints.values)
    assert "multiple of 1;" in " ".join(ints.accuracy)
    # the auto rule (noisy count, then the joint mechanism here) reads the same step
    auto = quantile(
        pd.DataFrame({"v": prices}),
        quantile_request("v", DECILES, 1.0, bounds=(0, 20000)),
        source=InsecureSeededSource(2),
    )
    assert auto.parameters["method"] == "joint" and auto.resolution == 0.5


def test_declared_decimal_column(tmp_path):
    path = tmp_path / "p.csv"
    values = np.round(np.random.default_rng(3).uniform(0, 100, 3000), 2)
    path.write_text("price\n" + "\n".join(f"{v:.2f}" for v in values) + "\n")
    typed = quantile(
        str(path),
        quantile_request("price", [0.5], 1.0, bounds=(0, 100), mechanism="joint"),
        source=InsecureSeededSource(1),
        schema={"price": "DECIMAL(10,2)"},
    )
    text = quantile(
        str(path),
        quantile_request("price", [0.5], 1.0, bounds=(0, 100), mechanism="joint"),
        source=InsecureSeededSource(1),
    )
    assert qjp.decimal_step(typed.resolution) == Fraction(1, 100)
    assert qjp.decimal_step(text.resolution) == Fraction(1, 10)  # (hi - lo) / 600: step 0.1


def test_a_tied_integer_comes_back_exactly():
    """1,000 rows at 7 and 100 spread over [0, 10000]: with w = 1/2 the median is 7 in every
    run; with the bounds' step of 10 it could only be a multiple of 10 (so never 7). Each run
    misses with probability below 1e-100 (the tied block holds the median with a margin of 400
    rows against intervals at most 10^4 / 0.5 times longer), so the test fails only on a
    broken rule."""
    rows = np.concatenate([np.full(1000, 7), np.arange(0, 10000, 100)])
    frame = pd.DataFrame({"v": rows})
    source = InsecureSeededSource(8)
    got = [
        quantile(
            frame,
            quantile_request("v", [0.25, 0.5, 0.75], 1.0, bounds=(0, 10000), mechanism="joint"),
            source=source,
        ).values[1]
        for _ in range(50)
    ]
    assert got == [7.0] * 50


def test_grouped_quantile_reads_the_step():
    rng = np.random.default_rng(6)
    frame = pd.DataFrame({"g": np.repeat(["a", "b"], 3000), "v": rng.integers(0, 20000, 6000)})
    res = quantile(
        frame,
        quantile_request(
            "v", DECILES, 2.0, bounds=(0, 20000), mechanism="joint", by="g", groups=["a", "b"]
        ),
        source=InsecureSeededSource(5),
    )
    for group in res.releases:
        assert group.resolution == 0.5
        assert all(v == round(v) for v in group.values)


@pytest.mark.parametrize("method", ["split", "recursive", "tree", "joint", "auto"])
def test_every_method_releases_values_on_an_integer_columns_grid(method):
    """The type is public: on an int64 column every method's values are integers (the joint
    mechanism rounds its own; the others are rounded after release, post-processing)."""
    data = pd.DataFrame({"x": np.random.default_rng(0).integers(0, 100, 1000)})  # test data
    for seed in range(3):
        r = quantile(
            data,
            quantile_request("x", [0.25, 0.5, 0.75], 1.0, bounds=(0, 100), mechanism=method),
            source=InsecureSeededSource(seed),
        )
        assert all(float(v).is_integer() for v in r.values), r.values
        assert r.values == sorted(r.values)
    floats = quantile(
        data.astype(float),
        quantile_request("x", 0.5, 1.0, bounds=(0, 100), mechanism="split"),
        source=InsecureSeededSource(1),
    )
    assert not float(floats.values[0]).is_integer()  # a float column: no grid
