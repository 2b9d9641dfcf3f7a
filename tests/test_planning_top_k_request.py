"""planning/top_k_request.py: every public argument of a top-k checked in one place, in order.

Each bad argument is refused by :func:`top_k_request` with the message ``top_k`` shows, and
``top_k`` refuses it before the data (a path that does not exist) is opened or the ledger
(a path) is created or charged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dpselect.core.errors import ParameterError
from dpselect.planning.contributions import Contributions
from dpselect.planning.top_k_request import LOOSE_DEFAULTS, TopKRequest, top_k_request
from dpselect.recipes.top_k import top_k

CANDIDATES = ["a", "b", "c"]

#: ``(arguments of top_k besides data, column, the message of the first bad one)``
BAD: list[tuple[dict[str, Any], str]] = [
    ({"contributions": Contributions(values_per_unit=2), "max_contributions": 3,
      "privacy_unit": "user"},
     "give the contribution bounds either as contributions= or as max_contributions, not both"),
    ({"groups": ["x"]}, "groups, max_groups and group_fraction apply only with by"),
    ({"max_groups": 2, "k": 0}, "groups, max_groups and group_fraction apply only with by"),
    ({"k": 0, "epsilon": -1.0}, "k must be at least 1, got 0"),
    ({"k": "two"}, "k must be an int, got str"),
    ({"epsilon": 1e9}, "epsilon must lie in [2^-20, 2^20] (about 9.5e-07 to 1.05e+06), got 1e+09"),
    ({"mechanism": "nope", "max_rows_per_value": 0},
     "mechanism must be one of ['auto', 'gaussian_histogram', 'gumbel', 'joint', 'laplace', "
     "'laplace_histogram', 'permute_and_flip'], got 'nope'"),
    ({"max_rows_per_value": 2, "max_contributions": 2},
     "max_rows_per_value applies only with a privacy_unit column (without one each row is its "
     "own unit and counts once)"),
    ({"max_contributions": 2}, "max_contributions applies only with a privacy_unit column"),
    ({"max_contributions": "auto"},
     "max_contributions='auto' needs a privacy_unit column (without one each row is a person "
     "and counts once)"),
    ({"auto_fraction": 0.5, "privacy_unit": "user"},
     "auto_fraction applies only with max_contributions='auto'"),
    ({"max_contributions": "auto", "auto_fraction": 2.0, "privacy_unit": "user"},
     "auto_fraction must be in (0, 1), got 2.0"),
    ({"counts": "yes", "delta": -1.0}, "counts must be a bool, got 'yes'"),
    ({"candidates": None},
     "without a public candidates list, give delta > 0: values that come from the data can "
     "only be shown with a small chance of failure delta"),
    ({"k": 5}, "k must be at most the number of candidates (3), got 5"),
    ({"k_bar": 3, "k": 5}, "k_bar applies only without a candidates list (limited domain)"),
    ({"by": "city", "k_bar": 3, "k": 5}, "k must be at most the number of candidates (3), got 5"),
    ({"by": "city", "k_bar": 3}, "k_bar applies only without a candidates list (limited domain)"),
]  # fmt: skip


def _request(arguments: dict[str, Any]) -> TopKRequest:
    """:func:`top_k_request` on ``arguments`` as :func:`top_k` passes them."""
    given = {"k": 2, "epsilon": 1.0, "candidates": CANDIDATES, "delta": None,
             "privacy_unit": None, "mechanism": "auto", "counts": False, "k_bar": None,
             "by": None, "groups": None, "contributions": None, **LOOSE_DEFAULTS,
             **arguments}  # fmt: skip
    loose = {name: given.pop(name) for name in LOOSE_DEFAULTS}
    return top_k_request("site", given.pop("k"), given.pop("epsilon"), given.pop("privacy_unit"),
                         given.pop("contributions"), loose, **given)  # fmt: skip


@pytest.mark.parametrize(("arguments", "message"), BAD)
def test_each_bad_argument_is_refused_with_the_message_of_top_k(
    arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(ParameterError) as planned:
        _request(arguments)
    assert str(planned.value) == message


@pytest.mark.parametrize(("arguments", "message"), BAD)
def test_top_k_refuses_before_the_data_is_opened_or_the_ledger_charged(
    arguments: dict[str, Any], message: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.json"
    given = {"k": 2, "epsilon": 1.0, "candidates": CANDIDATES, **arguments}
    with pytest.raises(ParameterError) as refused:
        top_k(str(tmp_path / "no such file.csv"), "site", ledger=str(ledger), **given)
    assert str(refused.value) == message
    assert not ledger.exists()


def test_a_good_request_holds_the_checked_arguments() -> None:
    request = _request({"privacy_unit": "user", "max_contributions": "auto",
                        "max_rows_per_value": 2, "delta": 0})  # fmt: skip
    assert request == TopKRequest(
        column="site", k=2, epsilon=1.0, delta=0.0, mechanism="auto", privacy_unit="user",
        rows_per_value=2, max_contributions=None, auto_fraction=0.25, counts=False,
        candidates=CANDIDATES, k_bar=None, by=None, groups=None, max_groups=1,
        group_fraction=None,
    )  # fmt: skip
    values = _request({"candidates": None, "delta": 1e-6, "k_bar": 4, "mechanism": None})
    assert (values.candidates, values.delta, values.k_bar, values.mechanism) == (
        None, 1e-6, 4, "auto",
    )  # fmt: skip


def test_contributions_stand_for_the_loose_bounds() -> None:
    request = _request(
        {
            "privacy_unit": "user",
            "contributions": Contributions(values_per_unit=3, rows_per_value=2),
        }
    )
    assert (request.max_contributions, request.rows_per_value) == (3, 2)
