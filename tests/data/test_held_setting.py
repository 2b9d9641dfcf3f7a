"""A database-wide DuckDB setting held while callers need it (``HeldSetting``): changed by
the first caller, kept while any caller is inside (threads overlap), restored by the last one,
also when a caller fails."""

from __future__ import annotations

import threading

import duckdb
import pytest

from dpselect.data.held_setting import HeldSetting


def _threads(connection: duckdb.DuckDBPyConnection) -> int:
    return int(connection.execute("SELECT current_setting('threads')").fetchall()[0][0])


def test_the_setting_is_held_while_any_caller_is_inside_and_restored_after():
    connection = duckdb.connect()
    connection.execute("SET threads = 3")
    setting = HeldSetting("threads", lambda before: "1")
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with setting.held(connection.cursor()):
            inside.set()
            release.wait(10)

    worker = threading.Thread(target=other)
    worker.start()
    assert inside.wait(10)
    with setting.held(connection):
        assert _threads(connection) == 1
    assert _threads(connection) == 1  # the other caller is still inside
    release.set()
    worker.join(10)
    assert _threads(connection) == 3
    with pytest.raises(ZeroDivisionError), setting.held(connection):
        assert _threads(connection) == 1
        _ = 1 / 0
    assert _threads(connection) == 3


def test_the_value_set_is_computed_from_the_value_before_and_quoted():
    connection = duckdb.connect()
    connection.execute("SET disabled_optimizers = 'top_n'")
    setting = HeldSetting("disabled_optimizers", lambda before: before + ",join_order")
    with setting.held(connection):
        found = connection.execute("SELECT current_setting('disabled_optimizers')").fetchall()
        assert set(str(found[0][0]).split(",")) == {"top_n", "join_order"}
    found = connection.execute("SELECT current_setting('disabled_optimizers')").fetchall()
    assert found[0][0] == "top_n"
