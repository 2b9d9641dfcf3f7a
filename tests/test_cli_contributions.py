"""The command line's contribution flags are one :class:`dpselect.Contributions` value: one
constructor validates them, one method refuses what a query does not use, and every refusal
names the flag the user typed (issue 44), with exit 2, one line, before any charge."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pandas as pd
import pytest

from dpselect.accounting.ledger import Ledger

from .cli_process import run_cli


@pytest.fixture(scope="module")
def visits(tmp_path_factory: Any) -> Any:
    root = tmp_path_factory.mktemp("bounds")
    frame = pd.DataFrame(
        {
            "user": [i % 40 for i in range(400)],
            "site": [f"s{i % 5}" for i in range(400)],
            "minutes": [float(i % 97) for i in range(400)],
            "country": [("fr", "de")[i % 2] for i in range(400)],
        }
    )
    frame.to_csv(root / "visits.csv", index=False)
    return root / "visits.csv"


TOP = ["top-k", "--column", "site", "--k", "2", "--epsilon", "1", "--candidates", "s0,s1,s2"]
KEYS = ["keys", "--column", "site", "--epsilon", "1", "--delta", "1e-6"]
QUANTILE = ["quantile", "--column", "minutes", "--q", "0.5", "--epsilon", "1", "--bounds", "0",
            "100"]  # fmt: skip
PRICE = ["price", "--column", "minutes", "--epsilon", "1", "--prices", "10,20,30",
         "--max-price", "100"]  # fmt: skip

REFUSALS = [
    ([*TOP, "--max-contributions", "2"], "--max-contributions other than 1 needs --privacy-unit"),
    ([*TOP, "--max-contributions", "0", "--privacy-unit", "user"],
     "--max-contributions must be at least 1"),
    ([*TOP, "--max-rows-per-value", "2"], "--max-rows-per-value other than 1 needs --privacy-unit"),
    ([*TOP, "--privacy-unit", "user", "--auto-fraction", "0.3"],
     "--auto-fraction applies only where a choice is automatic"),
    ([*TOP, "--privacy-unit", "user", "--by", "country", "--delta", "1e-6",
            "--group-fraction", "1.5"], "--group-fraction must be in (0, 1)"),
    ([*TOP, "--privacy-unit", "user", "--by", "country", "--delta", "1e-6",
            "--max-contributions", "auto", "--auto-fraction", "0.2", "--group-fraction", "0.3"],
     "--auto-fraction and --group-fraction set one share"),
    ([*KEYS, "--max-rows-per-value", "0", "--privacy-unit", "user"],
     "--max-rows-per-value must be at least 1"),
    ([*QUANTILE, "--max-rows", "0", "--privacy-unit", "user"], "--max-rows must be at least 1"),
    ([*QUANTILE, "--max-rows", "3"], "--max-rows other than 1 needs --privacy-unit"),
    ([*QUANTILE, "--auto-fraction", "0.3"],
     "--auto-fraction applies only where a choice is automatic"),
    ([*PRICE, "--max-rows", "2"], "--max-rows other than 1 needs --privacy-unit"),
]  # fmt: skip


def test_every_refusal_names_the_flag_typed(visits: Any, tmp_path: Any) -> None:
    book = tmp_path / "b.ledger"
    Ledger.create(book, epsilon=10.0).close()
    commands = [[cmd[0], visits, *cmd[1:], "--ledger", book] for cmd, _ in REFUSALS]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda c: run_cli(*c), commands))
    for (command, message), result in zip(REFUSALS, results, strict=True):
        assert result.returncode == 2, (command, result.stderr)
        assert message in result.stderr, (command, result.stderr)
        assert "Contributions(" not in result.stderr, (command, result.stderr)
        assert len(result.stderr.strip().splitlines()) <= 3, result.stderr  # no traceback
    with Ledger.open(book) as ledger:
        assert len(ledger) == 0  # refused before any charge


def test_the_flags_reach_the_release_as_the_python_value(visits: Any) -> None:
    """Same seed: the command line's bounds are the release's (recorded in its parameters)."""
    import json

    flags = ["--privacy-unit", "user", "--max-contributions", "2", "--max-rows-per-value", "3"]
    result = run_cli("top-k", visits, *TOP[1:], *flags, "--json", "--insecure-seed", "4")
    assert result.returncode == 0, result.stderr
    parameters = json.loads(result.stdout)["parameters"]
    assert (parameters["max_contributions"], parameters["max_rows_per_value"]) == (2, 3)
