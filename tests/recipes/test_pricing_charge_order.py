"""best_price with in-memory valuations (issue 24, verification 2): every refusal comes before
the charge and reads no valuation; after the charge no valuation can make it fail."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dpselect.accounting.ledger import Ledger
from dpselect.core.errors import BudgetExceeded, DataError, LedgerError, ParameterError
from dpselect.planning.price_request import price_request
from dpselect.recipes.pricing import best_price
from dpselect.sampling import InsecureSeededSource


class Watched(list):  # type: ignore[type-arg]
    """A list of valuations that records every read of its items (or its length)."""

    reads: list[str]

    def __init__(self, values: list[Any]) -> None:
        super().__init__(values)
        self.reads = []

    def __iter__(self) -> Iterator[Any]:
        self.reads.append("iter")
        return super().__iter__()

    def __getitem__(self, index: Any) -> Any:
        self.reads.append("getitem")
        return super().__getitem__(index)

    def __len__(self) -> int:
        self.reads.append("len")
        return super().__len__()


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"epsilon": 5.0}, BudgetExceeded, ""),
        ({"epsilon": -1.0}, ParameterError, "epsilon"),
        ({"prices": [0.5, 2.0]}, ParameterError, "at most max_price"),
        ({"prices": [0.5], "price_step": 0.1}, ParameterError, "not both"),
        ({"prices": None}, ParameterError, "public number of buyers"),
        ({"n": 1, "prices": None}, ParameterError, "n"),
        ({"confidence": 1.5}, ParameterError, "confidence"),
        ({"price_step": 1e-9, "prices": None}, ParameterError, "grid prices"),
    ],
)
def test_refusals_come_before_the_charge_and_read_nothing(tmp_path: Path, kwargs, error, match):
    book = Ledger.create(tmp_path / "l.db", 2.0)
    valuations = Watched([0.2, 0.5, 0.9, 0.9])
    arguments: dict[str, Any] = {"epsilon": 1.0, "prices": [0.25, 0.5, 1.0]}
    arguments.update(kwargs)
    with pytest.raises(error, match=match):
        best_price(valuations, price_request(arguments.pop("epsilon"), **arguments), ledger=book)
    assert valuations.reads == []
    assert book.spent() == (0.0, 0.0) and len(book) == 0


def test_a_bound_ledger_refuses_before_reading(tmp_path: Path):
    book = Ledger.create(tmp_path / "l.db", 2.0, privacy_unit="buyer_id")
    valuations = Watched([0.2, 0.5])
    with pytest.raises(LedgerError, match="protects rows"):
        best_price(valuations, price_request(1.0, prices=[0.5, 1.0]), ledger=book)
    assert valuations.reads == [] and len(book) == 0


@pytest.mark.parametrize("container", [{"a": 1.0}, iter([1.0]), "0.5", 0.5])
def test_containers_are_refused_by_type_before_the_charge(tmp_path: Path, container):
    book = Ledger.create(tmp_path / "l.db", 2.0)
    with pytest.raises(DataError, match="valuations must be"):
        best_price(container, price_request(1.0, prices=[0.5, 1.0]), ledger=book)
    assert len(book) == 0


ODD = [None, "abc", [1, 2], float("nan"), float("inf"), float("-inf"), 10**400, True, "0.75",
       b"1", object(), np.float32(0.5), {"x": 1}, complex(1, 1)]  # fmt: skip


@pytest.mark.parametrize(
    "valuations",
    [
        Watched(ODD),
        np.asarray(ODD, dtype=object),
        pd.Series(ODD, dtype=object),
        np.asarray([[0.5, 0.7], [np.nan, np.inf]]),
        pd.Series([1.0, None], dtype="Int64"),
        [],
    ],
    ids=["list", "object array", "object series", "2-D array", "Int64 series", "empty"],
)
def test_after_the_charge_no_valuation_makes_it_fail(tmp_path: Path, valuations):
    book = Ledger.create(tmp_path / "l.db", 2.0)
    result = best_price(
        valuations,
        price_request(1.0, prices=[0.25, 0.5, 1.0]),
        ledger=book,
        source=InsecureSeededSource(1),
    )
    assert result.price in (0.25, 0.5, 1.0)
    assert book.spent() == (1.0, 0.0) and len(book) == 1
    if isinstance(valuations, Watched):
        assert valuations.reads  # read, after the charge
