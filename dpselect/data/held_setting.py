"""A setting of dpselect's own DuckDB database, changed while at least one caller needs it.

DuckDB refuses some settings per session (``threads``, ``disabled_optimizers``): they hold
for the whole database. The database is dpselect's own (one per process,
:mod:`dpselect.data.tables`), so a plan may change such a setting while it runs, provided
overlapping callers (threads) do not restore it under each other: the callers are counted,
the first one saves the setting and changes it, the last one restores it. Nothing here reads
data; a setting changes how a query runs, never its result.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["HeldSetting"]


class HeldSetting:
    """The database setting ``name``, set to ``changed(value before)`` while at least one
    caller is inside :meth:`held`, then restored to the value before.

    Parameters
    ----------
    name : str
        The DuckDB setting (``threads``, ``disabled_optimizers``).
    changed : callable
        The value to set, from the setting's value (as text) before the first caller.
    """

    def __init__(self, name: str, changed: Callable[[str], str]) -> None:
        self.name, self.changed = name, changed
        self._lock = threading.Lock()
        self._users = 0
        self._before = ""

    def _set(self, connection: Any, value: str) -> None:
        quoted = value.replace("'", "''")
        connection.execute(f"SET {self.name} = '{quoted}'")

    @contextmanager
    def held(self, connection: Any) -> Iterator[None]:
        """The setting changed on ``connection``'s database while the caller is inside
        (counted across callers; restored when the last one leaves, also on errors).

        Parameters
        ----------
        connection : duckdb.DuckDBPyConnection
            A connection (or cursor) to dpselect's own database: the setting is read and set
            through it, and holds for the whole database.
        """
        with self._lock:
            if self._users == 0:
                found = connection.execute(f"SELECT current_setting('{self.name}')")
                before = str(found.fetchall()[0][0])
                self._set(connection, self.changed(before))
                self._before = before
            self._users += 1
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                if self._users == 0:
                    self._set(connection, self._before)
