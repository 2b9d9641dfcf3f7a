"""The durable budget ledger: exact budgets, refusal of foreign files, concurrency, kill -9."""

import multiprocessing
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from fractions import Fraction

import pytest

from dpselect.accounting import APPLICATION_ID, Ledger
from dpselect.core import BudgetExceeded, LedgerError, ParameterError


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "budget.ledger")


def test_create_charge_spent_remaining(path):
    ledger = Ledger.create(path, 1.0, 1e-6)
    assert ledger.spent() == (0.0, 0.0) and ledger.remaining() == (1.0, 1e-6)
    entry = ledger.charge(0.25, mechanism="top_k", parameters={"k": 3, "scores": "counts"})
    assert (
        entry.id == 1 and entry.kind == "pure" and entry.parameters == {"k": 3, "scores": "counts"}
    )
    ledger.charge(0.5, 1e-7, mechanism="gaussian", parameters={"sigma": 2.0})
    assert ledger.spent() == (0.75, 1e-7)
    assert ledger.remaining() == (0.25, float(Fraction(1e-6) - Fraction(1e-7)))
    with pytest.raises(BudgetExceeded) as info:
        ledger.charge(0.5, mechanism="too much")
    assert "remaining epsilon=0.25" in str(info.value) and "nothing was charged" in str(info.value)
    assert len(ledger) == 2
    reopened = Ledger.open(path)
    entries = reopened.entries()
    assert [e.mechanism for e in entries] == ["top_k", "gaussian"]
    assert entries[1].delta == 1e-7 and entries[1].epsilon == 0.5 and entries[1].time
    assert reopened.budget == (1.0, 1e-6)
    assert reopened.total().theorem.startswith("basic composition")
    assert reopened.total("approx").value == (0.75, 1e-7)
    with pytest.raises(ParameterError):
        reopened.total("zcdp")  # an entry has delta > 0


def test_exact_sums_never_round_past_the_budget(path):
    ledger = Ledger.create(path, 1.0)
    ok = 0
    for _ in range(12):
        try:
            ledger.charge(0.1)
            ok += 1
        except BudgetExceeded:
            pass
    assert ok == 9  # 10 * Fraction(0.1) > 1: the float sum 0.1 * 10 == 1.0 would overspend
    assert Fraction(ledger.spent()[0]) <= 1


def test_two_handles_see_each_other(path):
    a = Ledger.create(path, 1.0)
    b = Ledger.open(path)
    a.charge(0.75)
    with pytest.raises(BudgetExceeded):
        b.charge(0.5)  # b re-reads the total inside its transaction
    b.charge(0.25)
    assert a.remaining() == (0.0, 0.0)


def test_charge_then_releases_only_after_a_durable_charge(path):
    ledger = Ledger.create(path, 1.0)
    calls = []
    assert ledger.charge_then(lambda: calls.append(1) or "result", 0.5, mechanism="q") == "result"
    with pytest.raises(BudgetExceeded):
        ledger.charge_then(lambda: calls.append(2), 0.75)
    assert calls == [1]
    with ledger.charging(0.5, mechanism="block") as entry:
        assert Ledger.open(path).entries()[-1].id == entry.id  # recorded before the block
    with pytest.raises(ParameterError):
        ledger.charge(0.0, parameters={"bad": object()})
    assert len(ledger) == 2


def test_zcdp_ledger(path):
    ledger = Ledger.create(path, 1.0, 1e-6, accounting="zcdp")
    assert ledger.rho_budget == pytest.approx(0.0243560, rel=1e-5)
    n = 0
    while True:
        try:
            ledger.charge(0.05, kind="bounded_range", mechanism="exponential")
            n += 1
        except BudgetExceeded as exc:
            assert "remaining rho=" in str(exc)
            break
    assert n == 77  # basic composition would allow 19
    eps, delta = ledger.spent()
    assert eps <= 1.0 and delta == 1e-6
    ledger.charge_zcdp(ledger.remaining_rho(), mechanism="gaussian")
    with pytest.raises(ParameterError):
        ledger.charge(0.01, 1e-9)
    assert ledger.total("zcdp").value <= ledger.rho_budget
    with pytest.raises(ParameterError):
        Ledger.create(path + "2", 1.0, 0.0, accounting="zcdp")


def test_zcdp_charges_in_a_basic_ledger_name_their_delta(path):
    ledger = Ledger.create(path, 5.0, 1e-5)
    with pytest.raises(ParameterError):
        ledger.charge_zcdp(0.125)
    entry = ledger.charge_zcdp(0.125, delta=1e-6, mechanism="gaussian")
    assert entry.rho == 0.125 and float(entry.charged_epsilon) == pytest.approx(2.419, abs=1e-3)


# --- refusal of anything that is not a ledger -------------------------------------------------


def test_missing_file_is_refused(path):
    with pytest.raises(LedgerError, match="does not exist"):
        Ledger.open(path)
    assert not os.path.exists(path)


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"garbage" * 100,
        random.Random(4096).randbytes(4096),
        b"SQLite format 3\x00" + b"\x00" * 50,
    ],
    ids=["empty", "garbage", "random bytes", "sqlite header"],  # the same ids in every process
)
def test_garbage_file_is_refused_and_left_unchanged(path, content):
    with open(path, "wb") as f:
        f.write(content)
    with pytest.raises(LedgerError):
        Ledger.open(path)
    with pytest.raises(LedgerError):
        Ledger.create(path, 1.0)
    with open(path, "rb") as f:
        assert f.read() == content
    assert sorted(os.listdir(os.path.dirname(path))) == [os.path.basename(path)]


def test_foreign_sqlite_file_is_refused_and_left_unchanged(path):
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE ledger_entries (id INTEGER, epsilon REAL)")
    conn.execute("INSERT INTO ledger_entries VALUES (1, 0.5)")
    conn.commit()
    conn.close()
    with open(path, "rb") as f:
        before = f.read()
    with pytest.raises(LedgerError, match="not a dpselect ledger"):
        Ledger.open(path)
    with open(path, "rb") as f:
        assert f.read() == before
    assert sorted(os.listdir(os.path.dirname(path))) == [os.path.basename(path)]


def test_corrupted_ledger_is_refused(path, tmp_path):
    ledger = Ledger.create(path, 100.0)
    for i in range(200):
        ledger.charge(0.01, mechanism=f"m{i}", parameters={"pad": "x" * 200})
    ledger.close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    with open(path, "rb") as f:
        data = bytearray(f.read())
    assert int.from_bytes(data[68:72], "big") == APPLICATION_ID
    # (a) tampered totals: a consistent-looking SQLite file whose total disagrees
    tampered = str(tmp_path / "tampered.ledger")
    with open(tampered, "wb") as f:
        f.write(data)
    conn = sqlite3.connect(tampered)
    conn.execute("UPDATE ledger_totals SET epsilon = '0/1'")
    conn.commit()
    conn.close()
    with pytest.raises(LedgerError, match="inconsistent"):
        Ledger.open(tampered)
    # (b) garbled pages in the middle of the file
    page = 4096
    garbled = str(tmp_path / "garbled.ledger")
    for offset in range(page, len(data) - page, page):
        data[offset + 8 : offset + page - 8] = os.urandom(page - 16)
    with open(garbled, "wb") as f:
        f.write(data)
    with pytest.raises(LedgerError):
        Ledger.open(garbled)


def test_create_refuses_an_existing_ledger(path):
    Ledger.create(path, 1.0).charge(0.5)
    with pytest.raises(LedgerError, match="already exists"):
        Ledger.create(path, 10.0)
    assert Ledger.open(path).spent() == (0.5, 0.0)


# --- concurrency ------------------------------------------------------------------------------

PROCESSES, CHARGES, EPS, BUDGET = 8, 20, 0.1, 7.3


def _charge_many(path, queue):
    ledger = Ledger.open(path)
    ok = refused = 0
    for _ in range(CHARGES):
        try:
            ledger.charge(EPS, mechanism="worker", parameters={"pid": os.getpid()})
            ok += 1
        except BudgetExceeded:
            refused += 1
    queue.put((ok, refused))


def test_concurrent_processes_never_overspend(path):
    Ledger.create(path, BUDGET)
    fits = 0
    while (fits + 1) * Fraction(EPS) <= Fraction(BUDGET):
        fits += 1
    assert fits == 72 < PROCESSES * CHARGES  # 73 * Fraction(0.1) > 7.3: exactness matters
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    workers = [ctx.Process(target=_charge_many, args=(path, queue)) for _ in range(PROCESSES)]
    for w in workers:
        w.start()
    results = [queue.get(timeout=120) for _ in workers]
    for w in workers:
        w.join(timeout=60)
        assert w.exitcode == 0
    assert sum(ok for ok, _ in results) == fits
    assert sum(refused for _, refused in results) == PROCESSES * CHARGES - fits
    ledger = Ledger.open(path)
    assert len(ledger.entries()) == fits
    exact_total = sum(e.charged_epsilon for e in ledger.entries())
    assert exact_total == fits * Fraction(EPS) <= Fraction(BUDGET)
    assert Fraction(ledger.spent()[0]) >= exact_total  # reported rounded up


# --- kill -9 ----------------------------------------------------------------------------------

CHILD = r"""
import sys
from dpselect.accounting import Ledger
ledger = Ledger.open(sys.argv[1])
print("ready", flush=True)
while True:
    entry = ledger.charge(1e-6, mechanism="child", parameters={"blob": "y" * 500})
    print(entry.id, flush=True)
"""


@pytest.mark.slow  # long: run by .ci/run's `pytest -m slow`
def test_sigkill_at_random_points_loses_no_committed_charge(path):
    Ledger.create(path, 1e6)
    rng = random.Random(20261120)
    reported: set[int] = set()
    for _ in range(10):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, path], stdout=subprocess.PIPE, text=True
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.15))
        child.send_signal(signal.SIGKILL)
        out, _ = child.communicate(timeout=30)
        assert child.returncode == -signal.SIGKILL
        lines = out.split("\n")
        complete = lines[:-1]  # a final fragment without newline is not a report
        reported.update(int(line) for line in complete if line)
        ledger = Ledger.open(path)  # opens, passes its integrity and total checks
        ids = {e.id for e in ledger.entries()}
        assert reported <= ids
        ledger.close()
    assert len(reported) > 10  # the children did get charges through


def test_lock_timeout_is_a_clear_error_and_charges_nothing(path):
    Ledger.create(path, 1.0)
    ledger = Ledger.open(path, timeout=0.5)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    try:
        started = time.monotonic()
        with pytest.raises(LedgerError, match="stayed locked"):
            ledger.charge(0.1)
        assert time.monotonic() - started < 10
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert ledger.spent() == (0.0, 0.0)
    ledger.charge(0.1)  # the lock is free again
    assert len(ledger) == 1


def test_threads_may_share_a_ledger(path):
    import threading

    ledger = Ledger.create(path, 2.0)
    counts = []

    def work():
        ok = 0
        for _ in range(10):
            try:
                ledger.charge(0.125)
                ok += 1
            except BudgetExceeded:
                pass
        counts.append(ok)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(counts) == 16 == len(ledger)
    assert ledger.remaining() == (0.0, 0.0)


def test_a_refusal_prints_what_remains_rounded_down_and_it_fits(tmp_path):
    """The refusal prints short decimals (no 9.999999999999997e-07); what remains is rounded
    down, so asking for exactly the printed amount is accepted."""
    import re

    ledger = Ledger.create(tmp_path / "l.db", 1.0, 1e-5)
    for _ in range(3):
        ledger.charge(0.2, 3e-6, mechanism="gaussian")
    with pytest.raises(BudgetExceeded) as info:
        ledger.charge(0.2, 3e-6, mechanism="gaussian")
    text = str(info.value)
    assert "remaining epsilon=0.399999, delta=9.99999e-07 " in text, text
    left = re.search(r"remaining epsilon=([^,]+), delta=(\S+)", text)
    assert left is not None, text
    ledger.charge(float(left.group(1)), float(left.group(2)), mechanism="the rest")


def test_zcdp_total_reads_an_approx_entry_without_delta_as_pure(tmp_path) -> None:
    from dpselect.accounting import Ledger
    from dpselect.core.errors import ParameterError

    book = Ledger.create(tmp_path / "l.db", 10.0, 1e-5)
    book.charge(1.0, 0.0, kind="approx")
    book.charge(0.5, 0.0, kind="bounded_range")
    assert book.total("zcdp").value == pytest.approx(1.0 / 2 + 0.25 / 8)
    book.charge(0.5, 1e-6, kind="approx")
    with pytest.raises(ParameterError, match="with delta > 0"):
        book.total("zcdp")
