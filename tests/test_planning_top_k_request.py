"""planning/top_k_request.py: every public argument of a top-k checked in one place, in order.

Each bad argument is refused by :func:`top_k_request` with the message a top-k shows, and
:func:`dpselect.top_k` refuses it before the data (a path that does not exist) is opened or the
ledger (a path) is created or charged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import dpselect as dp
from dpselect.core.errors import ParameterError
from dpselect.planning.contributions import Contributions
from dpselect.planning.top_k_request import TopKRequest, top_k_request

CANDIDATES = ["a", "b", "c"]

#: ``(arguments of a top-k besides the column, the message of the first bad one)``
BAD: list[tuple[dict[str, Any], str]] = [
    ({"contributions": {"values_per_unit": 2}, "k": 0},
     "contributions must be a dpselect.Contributions, got dict"),
    ({"contributions": Contributions(groups_per_unit=2), "k": 0},
     "Contributions(groups_per_unit=...) applies only to a grouped release (by=)"),
    ({"contributions": Contributions(values_per_unit=2), "k": 0},
     "Contributions(values_per_unit=...) other than 1 needs privacy_unit= (a unit column; "
     "without one each row is its own unit and counts once)"),
    ({"contributions": Contributions(auto_share=0.5), "privacy_unit": "user", "k": 0},
     "Contributions(auto_share=...) applies only where a choice is automatic "
     "(Contributions(values_per_unit=...) 'auto', private groups: by= without groups=, or a "
     "quantile's bounds= 'auto')"),
    ({"groups": ["x"], "k": 0}, "groups, max_groups and group_fraction apply only with by"),
    ({"k": 0, "epsilon": -1.0}, "k must be at least 1, got 0"),
    ({"k": "two"}, "k must be an int, got str"),
    ({"epsilon": 1e9}, "epsilon must lie in [2^-20, 2^20] (about 9.5e-07 to 1.05e+06), got 1e+09"),
    ({"mechanism": "nope", "counts": "yes"},
     "mechanism must be one of ['auto', 'gaussian_histogram', 'gumbel', 'joint', 'laplace', "
     "'laplace_histogram', 'permute_and_flip'], got 'nope'"),
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
    """:func:`top_k_request` on ``arguments`` as a session or a shorthand passes them."""
    given = {"k": 2, "epsilon": 1.0, "candidates": CANDIDATES, **arguments}
    return top_k_request("site", given.pop("k"), given.pop("epsilon"), **given)


#: The arguments :func:`dpselect.top_k` takes (the others are a session's query's).
SHORTHAND = {"k", "epsilon", "delta", "candidates", "mechanism", "privacy_unit",
             "contributions", "by", "groups"}  # fmt: skip


@pytest.mark.parametrize(("arguments", "message"), BAD)
def test_each_bad_argument_is_refused_with_the_message_of_top_k(
    arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(ParameterError) as planned:
        _request(arguments)
    assert str(planned.value) == message


@pytest.mark.parametrize(
    ("arguments", "message"), [case for case in BAD if set(case[0]) <= SHORTHAND]
)
def test_top_k_refuses_before_the_data_is_opened_or_the_ledger_charged(
    arguments: dict[str, Any], message: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.json"
    given = {"k": 2, "epsilon": 1.0, "candidates": CANDIDATES, **arguments}
    with pytest.raises(ParameterError) as refused:
        dp.top_k(str(tmp_path / "no such file.csv"), "site", ledger=str(ledger), **given)
    assert str(refused.value) == message
    assert not ledger.exists()


def test_a_good_request_holds_the_checked_arguments() -> None:
    request = _request(
        {
            "privacy_unit": "user",
            "delta": 0,
            "contributions": Contributions(values_per_unit="auto", rows_per_value=2),
        }
    )
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


def test_the_contributions_are_the_requests_bounds() -> None:
    request = _request(
        {
            "privacy_unit": "user",
            "contributions": Contributions(values_per_unit=3, rows_per_value=2),
        }
    )
    assert (request.max_contributions, request.rows_per_value) == (3, 2)
