"""select and tune take a privacy unit as the ledger's label (issue 24, item 4), and tune is
charged before any run touches the data (issue 24, verification 3)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

import dpselect as dp
import dpselect.core as dc
from dpselect.accounting.ledger import ROWS, Ledger
from dpselect.core.errors import BudgetExceeded, LedgerError, ParameterError
from dpselect.mechanisms.gaussian import make_gaussian
from dpselect.sampling import InsecureSeededSource


def _count(data: list[str], c: str) -> int:
    return data.count(c)


DATA = list("aaaab")


def test_select_records_the_unit_and_a_bound_ledger_checks_it(tmp_path: Path):
    book = Ledger.create(tmp_path / "l.db", 10.0, privacy_unit="user_id")
    with pytest.raises(LedgerError, match=r"bound to the unit column 'user_id'.*protects rows"):
        dp.select(["a", "b"], _count, DATA, epsilon=1.0, sensitivity=1, ledger=book)
    with pytest.raises(LedgerError, match="'other'"):
        dp.select(
            ["a", "b"], _count, DATA, epsilon=1.0, sensitivity=1, ledger=book, privacy_unit="other"
        )
    assert len(book) == 0 and book.spent() == (0.0, 0.0)
    r = dp.select(["a", "b"], _count, DATA, epsilon=1.0, sensitivity=4, monotonic=True, ledger=book,
                  privacy_unit="user_id", source=InsecureSeededSource(1))  # fmt: skip
    assert r.parameters["privacy_unit"] == "user_id"
    (entry,) = book.entries()
    assert entry.privacy_unit == "user_id" and entry.mechanism == "select"


def test_select_without_a_unit_charges_rows_as_before(tmp_path: Path):
    book = Ledger.create(tmp_path / "l.db", 10.0)
    r = dp.select(
        ["a", "b"],
        _count,
        DATA,
        epsilon=1.0,
        sensitivity=1,
        ledger=book,
        source=InsecureSeededSource(1),
    )
    assert "privacy_unit" not in r.parameters
    assert book.entries()[0].privacy_unit == ROWS


@pytest.mark.parametrize("unit", ["", 3, ["u"]])
def test_select_refuses_a_bad_label_before_the_charge(tmp_path: Path, unit: Any):
    book = Ledger.create(tmp_path / "l.db", 10.0)
    with pytest.raises(ParameterError, match="privacy_unit"):
        dp.select(
            ["a", "b"], _count, DATA, epsilon=1.0, sensitivity=1, ledger=book, privacy_unit=unit
        )
    assert len(book) == 0


def _train(log: list[str], book: Ledger | None = None):
    """A run for config c on a count: c * x + discrete Gaussian noise, rho-zCDP. It logs
    when it is built and when it reads the data (with the budget spent at that moment)."""
    src = InsecureSeededSource(5)

    def train(config: int, rho: float) -> dc.Measurement:
        log.append("train")
        sigma = config / math.sqrt(2 * rho) * (1 + 1e-9)
        noisy = make_gaussian(dc.atom_domain(int), dc.L1Distance(), sigma, source=src)

        def function(x: Any) -> Any:
            spent = None if book is None else book.spent()[0]
            log.append(f"run after charging {spent}")
            return noisy(config * int(x)), f"model-{config}"

        return dc.Measurement(dc.AnyDomain(), dc.SymmetricDistance(),
                              dc.ZeroConcentratedDivergence(), function,
                              lambda d_in: noisy.map(config * d_in))  # fmt: skip

    return train


class _Untouchable:
    """Private data that records any use (int(), attribute access)."""

    def __init__(self, log: list[str]) -> None:
        self._log = log

    def __int__(self) -> int:
        self._log.append("data read")
        return 10

    def __getattr__(self, name: str) -> Any:
        self._log.append(f"data.{name}")
        raise AttributeError(name)


def test_tune_is_charged_before_any_run_reads_the_data(tmp_path: Path):
    """train(config, rho) is called before the charge (to build and check the runs) but is
    not given the data; the runs, which read it, run only once the charge is durable."""
    book = Ledger.create(tmp_path / "l.db", 5.0, 1e-3, privacy_unit="user_id")
    log: list[str] = []
    data = _Untouchable(log)
    r = dp.tune(_train(log, book), [1, 2], 1.0, data=data, ledger=book,
                privacy_unit="user_id", source=InsecureSeededSource(2))  # fmt: skip
    first_run = next(i for i, e in enumerate(log) if e.startswith("run"))
    assert log[:first_run] == ["train", "train"]  # nothing touched the data before the runs
    assert all(e == "run after charging 1.0" for e in log if e.startswith("run"))
    assert r.parameters["privacy_unit"] == "user_id"
    assert book.entries()[0].privacy_unit == "user_id"
    # over budget, or bound to another unit: refused, and no run ever reads the data
    log.clear()
    with pytest.raises(BudgetExceeded):
        dp.tune(_train(log), [1, 2], 10.0, data=data, ledger=book, privacy_unit="user_id")
    with pytest.raises(LedgerError, match="protects rows"):
        dp.tune(_train(log), [1, 2], 1.0, data=data, ledger=book)
    assert set(log) == {"train"} and len(book) == 1


def test_tune_refuses_a_bad_label_before_anything(tmp_path: Path):
    book = Ledger.create(tmp_path / "l.db", 5.0, 1e-3)
    log: list[str] = []
    with pytest.raises(ParameterError, match="privacy_unit"):
        dp.tune(_train(log), [1], 1.0, data=1, ledger=book, privacy_unit="")
    assert log == [] and len(book) == 0
