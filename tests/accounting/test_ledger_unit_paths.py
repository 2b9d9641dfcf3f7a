"""A ledger bound to a unit checks it on every charging path (issue 24, verification 4): the
zCDP path of top_k (bounded-range accounting), partition selection and top_k without
candidates (every mechanism), refused before anything is charged for another unit (or rows),
accepted and recorded for the same unit."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import dpselect as dp
from dpselect.accounting.ledger import Ledger
from dpselect.core.errors import LedgerError, ParameterError
from dpselect.sampling import InsecureSeededSource


def _visits() -> pd.DataFrame:
    users = [u for u in range(60) for _ in range(3)]
    sites = [["a", "b", "c", "d"][(u + j) % 4] for u in range(60) for j in range(3)]
    return pd.DataFrame({"user_id": users, "session": list(range(180)), "site": sites})


def _state(book: Ledger) -> tuple[Any, ...]:
    return (*book.spent(), book.spent_rho() if book.accounting == "zcdp" else 0, len(book))


Query = Callable[[Ledger, str | None], Any]


def _top_k_candidates(book: Ledger, unit: str | None) -> Any:
    return dp.Session(
        _visits(),
        privacy_unit=unit,
        contributions=dp.Contributions(values_per_unit=2 if unit else 1),
        ledger=book,
        source=InsecureSeededSource(1),
    ).top_k("site", 2, epsilon=1.0, candidates=["a", "b", "c", "d"])


def _top_k_gumbel(book: Ledger, unit: str | None) -> Any:
    return dp.Session(
        _visits(), privacy_unit=unit, ledger=book, source=InsecureSeededSource(1)
    ).top_k("site", 2, epsilon=1.0, candidates=["a", "b", "c", "d"], mechanism="gumbel")


def _partition(mechanism: str, m: int) -> Query:
    def query(book: Ledger, unit: str | None) -> Any:
        return dp.Session(
            _visits(),
            privacy_unit=unit,
            contributions=dp.Contributions(values_per_unit=m if unit else 1),
            ledger=book,
            source=InsecureSeededSource(2),
        ).partition_selection("site", epsilon=1.0, delta=1e-5, mechanism=mechanism)

    return query


def _unknown_top_k(mechanism: str, m: int, k_bar: int | None = None) -> Query:
    def query(book: Ledger, unit: str | None) -> Any:
        return dp.Session(
            _visits(),
            privacy_unit=unit,
            contributions=dp.Contributions(values_per_unit=m if unit else 1),
            ledger=book,
            source=InsecureSeededSource(3),
        ).top_k("site", 2, epsilon=1.0, delta=1e-5, mechanism=mechanism, k_bar=k_bar)

    return query


PATHS = {
    "top_k candidates, zcdp": ("zcdp", _top_k_candidates),
    "top_k gumbel, zcdp (bounded range)": ("zcdp", _top_k_gumbel),
    "partition_selection auto": ("basic", _partition("auto", 1)),
    "partition_selection gaussian": ("basic", _partition("gaussian", 2)),
    "partition_selection laplace": ("basic", _partition("laplace", 2)),
    "partition_selection policy": ("basic", _partition("policy_laplace", 2)),
    "top_k no candidates auto": ("basic", _unknown_top_k("auto", 1)),
    "top_k no candidates auto m=2": ("basic", _unknown_top_k("auto", 2)),
    "top_k no candidates limited domain": ("basic", _unknown_top_k("gumbel", 1, k_bar=3)),
}


@pytest.mark.parametrize("name", list(PATHS))
def test_bound_ledger_refuses_other_units_and_takes_its_own(tmp_path: Path, name: str) -> None:
    accounting, query = PATHS[name]
    book = Ledger.create(
        tmp_path / "l.db",
        50.0,
        1e-3,
        accounting=accounting,
        privacy_unit="user_id",  # type: ignore[arg-type]
    )
    before = _state(book)
    with pytest.raises(LedgerError, match=r"bound to the unit column 'user_id'.*'session'"):
        query(book, "session")
    with pytest.raises((LedgerError, ParameterError), match=r"protects rows|needs a privacy_unit"):
        query(book, None)
    assert _state(book) == before  # nothing charged
    query(book, "user_id")
    (entry,) = book.entries()
    assert entry.privacy_unit == "user_id"
    assert _state(book) != before
    if accounting == "zcdp":
        assert book.spent_rho() > 0


@pytest.mark.parametrize("name", ["partition_selection auto", "top_k no candidates auto"])
def test_a_zcdp_ledger_checks_the_unit_before_refusing_delta(tmp_path: Path, name: str) -> None:
    """Values from the data cost (epsilon, delta), which a zCDP ledger cannot take: the unit is
    checked first (one line naming the units), and nothing is charged either way."""
    _, query = PATHS[name]
    book = Ledger.create(tmp_path / "l.db", 50.0, 1e-3, accounting="zcdp", privacy_unit="user_id")
    with pytest.raises(LedgerError, match="'session'"):
        query(book, "session")
    with pytest.raises(ParameterError, match="zCDP ledger"):
        query(book, "user_id")
    assert len(book) == 0 and book.spent_rho() == 0
