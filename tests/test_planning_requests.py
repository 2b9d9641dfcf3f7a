"""The quantile and price requests: every argument checked from public facts, in the recipe's
order, before any data is opened; the bounds taken as one :class:`~dpselect.Contributions`."""

from __future__ import annotations

from typing import Any

import pytest

import dpselect as dp
from dpselect.core.errors import ParameterError
from dpselect.planning.price_request import PriceRequest, price_request
from dpselect.planning.quantile_request import QuantileRequest, quantile_request


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"q": 1.5, "bounds": (0, 1)}, "q must be in"),
        ({"epsilon": 0, "bounds": (0, 1)}, "epsilon"),
        ({}, "exactly one of bounds"),
        ({"bounds": (0, 1), "confidence": 1.0}, "confidence"),
        ({"candidates": [1, 1]}, "distinct"),
        ({"candidates": [1, 2], "resolution": 0.1}, "resolution applies to bounds"),
        ({"bounds": (0, 1), "mechanism": "fast"}, "mechanism must be one of"),
        ({"bounds": "auto", "candidates": [1, 2]}, "do not give candidates"),
        ({"bounds": "wide"}, "bounds must be a pair"),
        ({"bounds": (0, 1), "delta": 1e-6}, "delta applies to quantile only with by"),
        ({"bounds": (0, 1), "groups": ["a"]}, "apply only with by"),
        ({"bounds": "auto", "by": "g", "groups": ["a"]}, "not available with by"),
        ({"bounds": (0, 1), "by": "g", "privacy_unit": "u",
          "contributions": dp.Contributions(values_per_unit="auto")},
         "not available for a quantile with by="),
        ({"bounds": (0, 1), "contributions": dp.Contributions(values_per_unit=2)},
         "needs privacy_unit="),
        ({"bounds": (0, 1), "privacy_unit": "u",
          "contributions": dp.Contributions(values_per_unit="auto"), "epsilon": -1}, "epsilon"),
    ],
)  # fmt: skip
def test_every_refusal_comes_from_the_arguments_alone(kwargs: dict[str, Any], match: str) -> None:
    args = {"q": 0.5, "epsilon": 1.0, **kwargs}
    with pytest.raises(ParameterError, match=match):
        quantile_request("x", args.pop("q"), args.pop("epsilon"), **args)


def test_the_request_maps_the_bounds_and_names_its_route(tmp_path: Any) -> None:
    path = tmp_path / "cands.txt"
    path.write_text("1\n2\n3\n")
    release = quantile_request("x", 0.5, 1.0, candidates=str(path))
    assert release.route == "release" and release.candidates == [1.0, 2.0, 3.0]
    auto_rows = quantile_request(
        "x", 0.5, 1.0, bounds=(0, 1), privacy_unit="u",
        contributions=dp.Contributions(values_per_unit="auto", auto_share=0.3),
    )  # fmt: skip
    assert (auto_rows.route, auto_rows.rows, auto_rows.auto_fraction) == ("auto_rows", "auto", 0.3)
    auto_bounds = quantile_request("x", 0.5, 1.0, bounds="auto")
    assert (auto_bounds.route, auto_bounds.rows, auto_bounds.auto_fraction) == ("auto_bounds", 1,
                                                                               None)  # fmt: skip
    grouped = quantile_request(
        "x", 0.5, 1.0, bounds=(0, 1), privacy_unit="u", by="g", delta=1e-6,
        contributions=dp.Contributions(values_per_unit=3, groups_per_unit=2, auto_share=0.4),
    )  # fmt: skip
    assert grouped == QuantileRequest(
        "x", 0.5, 1.0, bounds=(0, 1), privacy_unit="u", rows=3, by="g", delta=1e-6,
        max_groups=2, group_fraction=0.4,
    )  # fmt: skip
    assert grouped.route == "grouped"


def test_the_price_request_takes_one_bound() -> None:
    request = price_request(1.0, n=10, column="bid", privacy_unit="buyer",
                            contributions=dp.Contributions(values_per_unit=3))  # fmt: skip
    assert request == PriceRequest(1.0, None, None, 1.0, 10, "bid", 0.95, "buyer", 3)
    assert price_request(1.0, n=10).max_rows is None
    for bounds in (dp.Contributions(values_per_unit="auto"), dp.Contributions(rows_per_value=2)):
        with pytest.raises(ParameterError, match="best_price takes"):
            price_request(1.0, n=10, privacy_unit="buyer", contributions=bounds)
    with pytest.raises(ParameterError, match=r"must be a dpselect\.Contributions"):
        price_request(1.0, n=10, contributions={"values_per_unit": 2})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": -1.0}, "epsilon"),
        ({"confidence": 1.5}, "confidence"),
        ({"n": 1}, "at least 2"),
        ({"n": None}, "public number of buyers"),
        ({"prices": [0.5, 2.0]}, "at most max_price"),
        ({"price_step": 1e-9}, "grid prices"),
    ],
)
def test_the_price_request_checks_before_anything_is_opened(
    kwargs: dict[str, Any], match: str
) -> None:
    args = {"epsilon": 1.0, "n": 10, **kwargs}
    with pytest.raises(ParameterError, match=match):
        price_request(args.pop("epsilon"), **args)
