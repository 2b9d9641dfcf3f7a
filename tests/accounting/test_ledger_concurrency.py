"""Several processes charging one ledger file at once under a privacy unit (issue 41 audit)."""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction
from pathlib import Path

from dpselect.accounting.ledger import Ledger

_WORKER = """
import sys
from dpselect.accounting.ledger import Ledger
from dpselect.core.errors import BudgetExceeded

path, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
ok = []
with Ledger.open(path) as book:
    for i in range(n):
        try:
            book.charge(0.125, mechanism="t", parameters={"p": name, "i": i},
                        privacy_unit="user_id")
        except BudgetExceeded:
            continue
        ok.append(i)
print(" ".join(map(str, ok)))
"""


def test_processes_charging_one_ledger_never_overspend_lose_or_duplicate(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    Ledger.create(path, 20.0, privacy_unit="user_id").close()
    procs, n = 4, 60  # 240 charges of 1/8 (exact in binary), budget 20: exactly 160 fit
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(path), f"w{k}", str(n)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(procs)
    ]
    seen: set[tuple[str, int]] = set()
    for k, child in enumerate(children):
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, err
        seen |= {(f"w{k}", int(i)) for i in out.split()}
    with Ledger.open(path) as book:
        entries = book.entries()
        recorded = [(e.parameters["p"], e.parameters["i"]) for e in entries]
        assert len(recorded) == len(set(recorded))  # nothing duplicated
        assert set(recorded) == seen  # nothing lost, nothing recorded that was refused
        total = sum((e.charged_epsilon for e in entries), Fraction(0))
        assert total == Fraction(len(seen), 8)
        assert total <= 20  # the cap held
        assert len(seen) == 160  # every charge that fitted went in
        assert {e.privacy_unit for e in entries} == {"user_id"}
        assert Fraction(book.spent()[0]) == total
