"""A ledger that knows whom it protects (issue 24, item 3): each entry records its privacy
unit and data source, a ledger may be bound to one unit, and mixed units are warned about."""

from __future__ import annotations

import sqlite3
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

import dpselect
import dpselect as dp
from dpselect.accounting.ledger import APPLICATION_ID, ROWS, Ledger
from dpselect.core.errors import LedgerError

from ..cli_process import run_cli


def _visits() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "user_id": [1, 1, 2, 3, 3, 4, 5, 6],
            "site": ["a", "b", "a", "a", "c", "b", "a", "b"],
            "x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
        }
    )


def _top_k(ledger: Ledger) -> object:
    return dp.Session(
        _visits(),
        privacy_unit="user_id",
        contributions=dp.Contributions(values_per_unit=2),
        ledger=ledger,
    ).top_k("site", 1, epsilon=1.0, candidates=["a", "b", "c"])


def test_entries_record_unit_and_source(tmp_path: Path) -> None:
    book = Ledger.create(tmp_path / "l.db", 10.0)
    _top_k(book)
    dpselect.quantile(_visits(), "x", 0.5, epsilon=1.0, bounds=(0.0, 10.0), ledger=book)
    first, second = Ledger.open(tmp_path / "l.db").entries()
    assert first.privacy_unit == "user_id"
    assert second.privacy_unit == ROWS
    assert first.source is not None and "pandas" in first.source
    assert second.source == first.source
    units = {u.privacy_unit: u for u in book.units()}
    assert set(units) == {"user_id", ROWS}
    assert units["user_id"].epsilon == Fraction(1) and units["user_id"].entries == 1


def test_bound_ledger_refuses_another_unit_before_anything(tmp_path: Path) -> None:
    book = Ledger.create(tmp_path / "l.db", 10.0, privacy_unit="user_id")
    assert Ledger.open(tmp_path / "l.db").privacy_unit == "user_id"
    _top_k(book)
    before = (book.spent(), len(book))
    with pytest.raises(LedgerError, match=r"bound to the unit column 'user_id'.*protects rows"):
        dpselect.quantile(_visits(), "x", 0.5, epsilon=1.0, bounds=(0.0, 10.0), ledger=book)
    ran: list[int] = []
    with pytest.raises(LedgerError, match="unknown unit"):  # a direct charge naming no unit
        book.charge_then(lambda: ran.append(1), 1.0)
    with pytest.raises(LedgerError, match="'other'"):
        book.charge(1.0, privacy_unit="other")
    assert not ran
    assert (book.spent(), len(book)) == before
    assert book.unit_warning() is None


def test_ledger_bound_to_rows(tmp_path: Path) -> None:
    book = Ledger.create(tmp_path / "l.db", 10.0, privacy_unit=ROWS)
    dpselect.quantile(_visits(), "x", 0.5, epsilon=1.0, bounds=(0.0, 10.0), ledger=book)
    with pytest.raises(LedgerError, match="bound to rows"):
        _top_k(book)
    assert len(book) == 1


def test_unbound_ledger_warns_about_mixed_units(tmp_path: Path) -> None:
    book = Ledger.create(tmp_path / "l.db", 10.0)
    _top_k(book)
    assert book.unit_warning() is None
    dpselect.quantile(_visits(), "x", 0.5, epsilon=1.0, bounds=(0.0, 10.0), ledger=book)
    warning = book.unit_warning()
    assert warning is not None and "\n" not in warning
    assert "user_id" in warning and "rows" in warning
    shown = run_cli("budget", "show", "--ledger", tmp_path / "l.db")
    assert shown.returncode == 0
    assert "different privacy units" in shown.stdout
    assert "unit user_id: 1 entries" in shown.stdout and "unit rows: 1 entries" in shown.stdout


_OLD_SCHEMA = """
CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
CREATE TABLE ledger_totals (
    id INTEGER PRIMARY KEY CHECK (id = 1), epsilon TEXT NOT NULL, delta TEXT NOT NULL,
    rho TEXT NOT NULL, entries INTEGER NOT NULL
) STRICT;
CREATE TABLE ledger_entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT, time TEXT NOT NULL, mechanism TEXT NOT NULL,
    parameters TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('pure', 'bounded_range', 'approx', 'zcdp')),
    epsilon TEXT, delta TEXT, rho TEXT, charged_epsilon TEXT NOT NULL,
    charged_delta TEXT NOT NULL, charged_rho TEXT NOT NULL
) STRICT;
"""


def _old_ledger(path: Path) -> None:
    """A ledger file as dpselect wrote it before entries recorded their unit and source."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 1")
    conn.executescript(_OLD_SCHEMA)
    meta = {
        "format": "dpselect-ledger",
        "schema_version": "1",
        "accounting": "basic",
        "budget_epsilon": "5/1",
        "budget_delta": "0/1",
        "budget_rho": "0/1",
        "created": "2025-01-01T00:00:00+00:00",
    }
    conn.executemany("INSERT INTO ledger_meta VALUES (?, ?)", meta.items())
    conn.execute("INSERT INTO ledger_totals VALUES (1, '1/1', '0/1', '0/1', 1)")
    conn.execute(
        "INSERT INTO ledger_entries (time, mechanism, parameters, kind, epsilon, delta, rho, "
        "charged_epsilon, charged_delta, charged_rho) VALUES ('2025-01-01T00:00:00+00:00', "
        "'top_k/old', '{}', 'pure', '1/1', '0/1', NULL, '1/1', '0/1', '0/1')"
    )
    conn.execute("PRAGMA journal_mode = WAL")
    conn.close()


def test_old_ledger_file_shows_unit_unknown_read_only(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _old_ledger(path)
    book = Ledger.open(path, read_only=True)  # not migrated: read as unknown
    (entry,) = book.entries()
    assert entry.privacy_unit is None and entry.source is None
    shown = run_cli("budget", "show", "--ledger", path)
    assert shown.returncode == 0, shown.stderr
    assert "unit unknown: 1 entries" in shown.stdout


def test_old_ledger_file_is_migrated_when_charged(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _old_ledger(path)
    book = Ledger.open(path)
    assert book.spent() == (1.0, 0.0)
    dpselect.quantile(_visits(), "x", 0.5, epsilon=1.0, bounds=(0.0, 10.0), ledger=book)
    units = [u.privacy_unit for u in Ledger.open(path).units()]
    assert units == [None, ROWS]
    assert book.unit_warning() is not None  # unknown and rows: not one guarantee
    assert book.spent() == (2.0, 0.0)


def test_cli_bound_ledger(tmp_path: Path) -> None:
    data = tmp_path / "visits.csv"
    _visits().to_csv(data, index=False)
    ledger = tmp_path / "l.db"
    init = run_cli(
        "budget", "init", "--ledger", ledger, "--epsilon", 5, "--privacy-unit", "user_id"
    )
    assert init.returncode == 0, init.stderr
    top = run_cli(
        "top-k", data, "--column", "site", "--k", 1, "--epsilon", 1, "--candidates", "a,b,c",
        "--privacy-unit", "user_id", "--max-contributions", 2, "--ledger", ledger,
    )  # fmt: skip
    assert top.returncode == 0, top.stderr
    refused = run_cli(
        "quantile", data, "--column", "x", "--q", 0.5, "--epsilon", 1, "--bounds", 0, 10,
        "--ledger", ledger,
    )  # fmt: skip
    assert refused.returncode == 2
    assert refused.stdout == ""
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "bound to the unit column 'user_id'" in lines[0]
    book = Ledger.open(ledger, read_only=True)
    assert len(book) == 1 and book.spent() == (1.0, 0.0)
    shown = run_cli("budget", "show", "--ledger", ledger, "--json")
    assert '"privacy_unit": "user_id"' in shown.stdout


def test_a_unit_column_named_rows_is_refused_with_a_ledger(tmp_path):
    """'rows' is the ledger's word for row-level protection: a unit column of that name would
    be recorded as rows (and pass a ledger bound to rows), so it is refused before the charge."""
    import pandas as pd

    import dpselect as dp
    from dpselect.core.errors import ParameterError

    book = Ledger.create(tmp_path / "l.db", 10.0, 1e-3, privacy_unit="rows")
    data = pd.DataFrame({"rows": [1, 2, 3], "v": ["a", "b", "a"]})
    with pytest.raises(ParameterError, match="reserves"):
        dp.top_k(data, "v", 1, epsilon=1.0, candidates=["a", "b"], privacy_unit="rows", ledger=book)
    assert book.spent() == (0.0, 0.0)
