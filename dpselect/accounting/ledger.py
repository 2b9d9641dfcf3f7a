"""A durable privacy-budget ledger in SQLite.

A privacy budget is only as good as its record. A :class:`Ledger` keeps the spent budget of a
dataset in one SQLite file, shared safely by several processes:

- **Durable before release.** :meth:`Ledger.charge` returns only after its transaction is
  committed with ``journal_mode=WAL`` and ``synchronous=FULL`` (the WAL is fsynced at every
  commit), so a charge that returned survives a crash, a ``kill -9`` or a power cut.
  :meth:`Ledger.charge_then` runs a computation only after its charge is recorded.
- **No overspending together.** Each charge runs in a ``BEGIN IMMEDIATE`` transaction (the
  single-writer lock), re-reads the running total *inside* the transaction, compares exactly
  (totals are stored as rational strings and summed as :class:`~fractions.Fraction`), and
  either inserts the entry and the new total or raises :class:`BudgetExceeded` having written
  nothing. A lock that stays busy is retried with backoff until ``timeout``, then a
  :class:`LedgerError` says so.
- **Never silently reset.** :meth:`Ledger.create` refuses an existing path and publishes the
  fully initialised file atomically (built under a temporary name, then hard-linked into
  place). :meth:`Ledger.open` reads the 100-byte SQLite header itself before SQLite touches
  the file: a missing file, a non-SQLite file or a SQLite file without dpselect's
  ``application_id`` is refused with :class:`LedgerError` and left byte-for-byte unchanged; a
  ledger whose integrity check fails, whose schema is unknown or whose stored total disagrees
  with its entries is refused as well.

Two accounting modes, fixed at creation:

- ``accounting="basic"`` (default): the budget is ``(epsilon, delta)`` and charges add up by
  basic composition, which stays valid when each charge is chosen after seeing earlier
  results (a privacy filter; Rogers, Roth, Ullman, Vadhan 2016). zCDP charges must name the
  ``delta`` at which they are converted (Canonne-Kamath-Steinke 2020).
- ``accounting="zcdp"``: the ``(epsilon, delta)`` budget is turned once into the largest
  ``rho`` whose CKS conversion at ``delta`` is at most ``epsilon``; charges are kept in
  ``rho`` (``eps^2/2`` for pure DP, ``eps^2/8`` for bounded range, ``rho`` for zCDP) and may
  not exceed it (a zCDP filter; Feldman and Zrnic 2021, Whitehouse et al. 2023). Many small
  charges cost far less than in the basic mode. ``(epsilon, delta > 0)`` charges are refused.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from fractions import Fraction
from typing import Any, Literal, TypeVar

from dpselect.core.arithmetic import Number, float_down, float_up, sqrt_down
from dpselect.core.errors import BudgetExceeded, LedgerError, ParameterError

from .ledger_pricing import LedgerBudget, fits, new_budget, priced, priced_zcdp, refusal
from .ledger_records import (
    ROWS,
    Accounting,
    Charged,
    ChargeKind,
    LedgerEntry,
    LedgerTotal,
    Quote,
    Totals,
    UnitTotal,
    check_unit,
    describe_unit,
    entry_from_row,
    fraction_text,
    read_fraction,
    unit_totals,
    zcdp_sum,
)
from .ledger_storage import (
    APPLICATION_ID,
    check_header,
    insert_entry,
    is_busy,
    migrate,
    publish,
    read_meta,
    read_only_uri,
    read_totals,
    uri,
    write_totals,
)
from .zcdp import zcdp_to_approx_dp

__all__ = [
    "APPLICATION_ID", "ROWS", "Ledger", "LedgerEntry", "LedgerTotal", "Quote", "UnitTotal",
]  # fmt: skip

T = TypeVar("T")


class Ledger:
    """A durable, multi-process privacy-budget ledger (see the module docstring).

    Create with :meth:`create`, reopen with :meth:`open`; charge with :meth:`charge` (pure or
    approximate DP, or bounded range), :meth:`charge_zcdp`, or :meth:`charge_then`.
    """

    def __init__(
        self, path: str, *, timeout: float = 30.0, read_only: bool = False, _token: object = None
    ) -> None:
        if _token is not _OPEN_TOKEN:
            raise TypeError("use Ledger.create(path, ...) or Ledger.open(path)")
        self._path = os.fspath(path)
        self._timeout = float(timeout)
        self._read_only = bool(read_only)
        self._conn: sqlite3.Connection | None = None
        self._has_units = False  # the entries' privacy_unit and source columns exist
        self._pid = -1
        # One connection per Ledger object, shared by its threads under this lock.
        self._lock = threading.RLock()
        self._connect()
        meta = read_meta(self._db, self._path)
        self._budget = LedgerBudget(
            "zcdp" if meta["accounting"] == "zcdp" else "basic",
            read_fraction(meta["budget_epsilon"]),
            read_fraction(meta["budget_delta"]),
            read_fraction(meta["budget_rho"]),
        )
        self._accounting: Accounting = self._budget.accounting
        self._privacy_unit: str | None = meta.get("privacy_unit")
        self._verify_totals()

    # --- construction -------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        epsilon: Number,
        delta: Number = 0.0,
        *,
        accounting: Accounting = "basic",
        timeout: float = 30.0,
        privacy_unit: str | None = None,
    ) -> Ledger:
        """Create a new ledger at ``path`` with an ``(epsilon, delta)`` budget.

        Refuses (``LedgerError``) when ``path`` exists. ``accounting="zcdp"`` needs
        ``delta > 0`` and keeps the budget as the largest ``rho`` converting to it.
        ``privacy_unit`` binds the ledger to one privacy unit (a unit column's name, or
        :data:`ROWS`): it then refuses, before writing anything, every charge that protects
        another unit or names none. ``None`` (default): unbound, any unit is accepted and
        :meth:`unit_warning` says when units are mixed.

        Parameters
        ----------
        path : str or os.PathLike
            The new ledger file. It must not exist; its directory must exist and be writable.
        epsilon : float
            The budget's ``epsilon > 0``; a float is read as the decimal it prints as (``0.1`` is
            exactly 1/10).
        delta : float, default 0.0
            The budget's ``delta``, in ``[0, 1)``, read the same way.
        accounting : {"basic", "zcdp"}, default "basic"
            How charges add up (module docstring), fixed for the ledger's life.
        timeout : float, default 30.0
            Seconds a charge waits for the write lock before raising :class:`LedgerError`.
        privacy_unit : str or None, default None
            :data:`ROWS` or a unit column's name: the one unit this ledger accepts charges for.

        Returns
        -------
        Ledger
            The new ledger, open for writing.
        """
        check_unit(privacy_unit)
        p = os.fspath(path)
        budget = new_budget(epsilon, delta, accounting)
        publish(p, (budget.epsilon, budget.delta, budget.rho), accounting, privacy_unit)
        return cls.open(p, timeout=timeout)

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], *, timeout: float = 30.0, read_only: bool = False
    ) -> Ledger:
        """Open an existing ledger; refuse (``LedgerError``) anything that is not one.

        ``read_only=True`` (``dpselect budget show``) only reads: SQLite opens the file with
        ``mode=ro`` and writes nothing, so a ledger in a directory one cannot write to (where
        SQLite cannot create its ``-shm`` side file) can still be shown. With no ``-wal`` file
        beside it (no write in progress) and a directory that is not writable, the file is
        opened as ``immutable``: no lock and no side file is needed, and nobody can be
        writing it. Charging a read-only ledger raises :class:`LedgerError`.

        Parameters
        ----------
        path : str or os.PathLike
            The ledger file.
        timeout : float, default 30.0
            Seconds a charge waits for the write lock before raising :class:`LedgerError`.
        read_only : bool, default False
            Open without writing anything (see above).

        Returns
        -------
        Ledger
            The ledger, its integrity, schema and totals checked.
        """
        return cls(os.fspath(path), timeout=timeout, read_only=read_only, _token=_OPEN_TOKEN)

    # --- connection ---------------------------------------------------------------------------

    def _connect(self) -> None:
        check_header(self._path)
        try:
            conn = sqlite3.connect(
                read_only_uri(self._path) if self._read_only else uri(self._path),
                uri=True,
                isolation_level=None,
                timeout=min(self._timeout, 5.0),
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise LedgerError(f"cannot open the ledger {self._path!r}: {exc}") from exc
        try:
            if not self._read_only:  # setting the journal mode writes
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise LedgerError(f"the ledger {self._path!r} is not in WAL mode ({mode!r})")
                conn.execute("PRAGMA synchronous = FULL")
            check = conn.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                raise LedgerError(f"the ledger {self._path!r} failed its integrity check: {check}")
            self._has_units = migrate(conn, self._read_only)
        except sqlite3.Error as exc:
            conn.close()
            raise LedgerError(f"the ledger {self._path!r} is unreadable: {exc}") from exc
        except LedgerError:
            conn.close()
            raise
        self._conn = conn
        self._pid = os.getpid()

    @property
    def _db(self) -> sqlite3.Connection:
        # A connection must not cross fork(): reconnect in a child process.
        if self._conn is None or self._pid != os.getpid():
            self._connect()
        assert self._conn is not None
        return self._conn

    def close(self) -> None:
        """Close the connection (the ledger is reopened on the next use)."""
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- reading ------------------------------------------------------------------------------

    def _verify_totals(self) -> None:
        conn = self._db
        try:
            conn.execute("BEGIN")
            totals = read_totals(conn, self._path)
            rows = conn.execute(
                "SELECT charged_epsilon, charged_delta, charged_rho FROM ledger_entries"
            ).fetchall()
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise LedgerError(f"the ledger {self._path!r} is unreadable: {exc}") from exc
        sums = [sum((read_fraction(r[i]) for r in rows), Fraction(0)) for i in range(3)]
        if (sums[0], sums[1], sums[2], len(rows)) != (
            totals.epsilon,
            totals.delta,
            totals.rho,
            totals.entries,
        ):
            raise LedgerError(
                f"the ledger {self._path!r} is inconsistent: its stored total differs from the "
                "sum of its entries"
            )

    def _totals(self) -> Totals:
        try:
            with self._lock:
                return read_totals(self._db, self._path)
        except sqlite3.Error as exc:
            raise LedgerError(f"cannot read the ledger {self._path!r}: {exc}") from exc

    @property
    def path(self) -> str:
        """The ledger's file path."""
        return self._path

    @property
    def accounting(self) -> Accounting:
        """``"basic"`` or ``"zcdp"`` (fixed at creation)."""
        return self._accounting

    @property
    def privacy_unit(self) -> str | None:
        """The unit the ledger is bound to (:data:`ROWS` or a column), ``None`` if unbound."""
        return self._privacy_unit

    def check_privacy_unit(self, privacy_unit: str | None) -> None:
        """Refuse (``LedgerError``, one line) a query protecting ``privacy_unit`` (``None``:
        not stated) when the ledger is bound to another unit; nothing is written.

        Parameters
        ----------
        privacy_unit : str or None
            The unit the query protects: :data:`ROWS`, a unit column's name, or ``None`` (not
            stated). An unbound ledger accepts any.
        """
        bound = self._privacy_unit
        if bound is None or privacy_unit == bound:
            return
        raise LedgerError(
            f"the ledger {self._path!r} is bound to {describe_unit(bound)} but this query "
            f"protects {describe_unit(privacy_unit)}: refused before anything was charged or "
            "read (a sum of charges for different units is no guarantee for anyone)"
        )

    def units(self) -> list[UnitTotal]:
        """The charges summed per privacy unit, with the data sources of each (first seen
        first); entries of an unknown unit are summed under ``None``."""
        return unit_totals(self.entries())

    def unit_warning(self) -> str | None:
        """One line when the ledger holds charges for more than one privacy unit (an unknown
        unit counts as one): their sum is not a guarantee for anyone. ``None`` otherwise."""
        units = [u.privacy_unit for u in self.units()]
        if len(units) < 2:
            return None
        named = ", ".join("unknown" if u is None else u for u in units)
        return (
            f"warning: this ledger holds charges for different privacy units ({named}); their "
            "total is not a guarantee for any one of them (bind a ledger to one unit: "
            "budget init --privacy-unit)"
        )

    @property
    def budget(self) -> tuple[float, float]:
        """The ``(epsilon, delta)`` budget."""
        return float(self._budget.epsilon), float(self._budget.delta)

    @property
    def rho_budget(self) -> float:
        """The ``rho`` budget of a zCDP ledger (0 for a basic ledger)."""
        return float(self._budget.rho)

    def spent(self) -> tuple[float, float]:
        """The ``(epsilon, delta)`` spent so far, rounded up.

        Basic ledger: the sums. zCDP ledger: the CKS conversion of the spent ``rho`` at the
        budget's ``delta`` (``(0, 0)`` before any charge).
        """
        t = self._totals()
        if self._accounting == "basic":
            return float_up(t.epsilon), float_up(t.delta)
        if t.rho == 0:
            return 0.0, 0.0
        return zcdp_to_approx_dp(t.rho, self._budget.delta), float(self._budget.delta)

    def spent_rho(self) -> float:
        """The ``rho`` spent so far (zCDP ledger; rounded up)."""
        return float_up(self._totals().rho)

    def remaining(self) -> tuple[float, float]:
        """The largest further charge accepted, rounded down.

        Basic ledger: ``(epsilon, delta)`` left. zCDP ledger: ``(epsilon, 0.0)`` where
        ``epsilon`` is the largest pure-DP charge that still fits (``sqrt(2 rho_left)``).
        """
        t = self._totals()
        if self._accounting == "basic":
            return float_down(self._budget.epsilon - t.epsilon), float_down(
                self._budget.delta - t.delta
            )
        left = self._budget.rho - t.rho
        return sqrt_down(2 * left), 0.0

    def remaining_rho(self) -> float:
        """The ``rho`` left in a zCDP ledger (rounded down)."""
        return float_down(self._budget.rho - self._totals().rho)

    def total(self, measure: Literal["approx", "zcdp"] = "approx") -> LedgerTotal:
        """The spent total in ``measure`` and the theorem behind it.

        ``"approx"``: :meth:`spent`. ``"zcdp"``: the sum of the entries' ``rho`` (pure DP, and
        an approximate entry with ``delta = 0``, as ``eps^2/2``; bounded range as ``eps^2/8``);
        refused when an entry has ``delta > 0``.

        Parameters
        ----------
        measure : {"approx", "zcdp"}, default "approx"
            The measure of the total.

        Returns
        -------
        LedgerTotal
            The measure, the total (``(epsilon, delta)`` or ``rho``, rounded up) and the name of the
            theorem behind it.
        """
        if measure == "approx":
            theorem = (
                "basic composition (Dwork et al. 2006; filter: Rogers et al. 2016)"
                if self._accounting == "basic"
                else "zCDP composition (Bun-Steinke 2016) + CKS conversion (2020)"
            )
            return LedgerTotal("approx", self.spent(), theorem)
        if measure == "zcdp":
            rho = zcdp_sum(self.entries())
            return LedgerTotal(
                "zcdp",
                float_up(rho),
                "zCDP composition (Bun-Steinke 2016, Prop. 1.4, Lemma 2.3; Cesar-Rogers 2021)",
            )
        raise ParameterError(f"measure must be 'approx' or 'zcdp', got {measure!r}")

    def entries(self) -> list[LedgerEntry]:
        """Every recorded charge, oldest first."""
        try:
            with self._lock:
                conn = self._db
                added = "privacy_unit, source" if self._has_units else "NULL, NULL"
                rows = conn.execute(
                    "SELECT id, time, mechanism, parameters, kind, epsilon, delta, rho, "
                    f"charged_epsilon, charged_delta, charged_rho, {added} FROM ledger_entries "
                    "ORDER BY id"
                ).fetchall()
        except sqlite3.Error as exc:
            raise LedgerError(f"cannot read the ledger {self._path!r}: {exc}") from exc
        return [entry_from_row(row) for row in rows]

    def __len__(self) -> int:
        return self._totals().entries

    # --- charging -----------------------------------------------------------------------------

    def charge(
        self,
        epsilon: Number,
        delta: Number = 0.0,
        mechanism: str = "unspecified",
        parameters: Any = None,
        *,
        kind: Literal["pure", "bounded_range", "approx"] | None = None,
        privacy_unit: str | None = None,
        source: str | None = None,
    ) -> LedgerEntry:
        """Record an ``(epsilon, delta)``-DP release; durable when this returns.

        ``kind`` defaults to ``"pure"`` (``delta == 0``) or ``"approx"``; pass
        ``"bounded_range"`` for the exponential mechanism (cheaper in a zCDP ledger). Raises
        :class:`BudgetExceeded`, charging nothing, when the budget would be exceeded.
        ``privacy_unit`` (:data:`ROWS` or a unit column; ``None``: not stated) and ``source``
        (the data's public description) are recorded with the entry; a ledger bound to a
        unit refuses any other (:meth:`check_privacy_unit`) before writing.

        Parameters
        ----------
        epsilon : float
            The release's ``epsilon >= 0``.
        delta : float, default 0.0
            The release's ``delta``, in ``[0, 1]``; 0 unless ``kind="approx"``. A zCDP ledger
            refuses ``delta > 0``.
        mechanism : str, default "unspecified"
            The mechanism's name, recorded with the entry.
        parameters : JSON-serialisable, optional
            The mechanism's public parameters, recorded with the entry (no NaN or infinity).
        kind : {"pure", "bounded_range", "approx"} or None, default None
            The loss's class; ``None``: ``"pure"`` when ``delta == 0``, else ``"approx"``. A zCDP
            ledger charges ``rho = epsilon^2 / 8`` for ``"bounded_range"``, ``epsilon^2 / 2``
            otherwise.
        privacy_unit : str or None, default None
            Whom the release protects: :data:`ROWS`, a unit column's name, or ``None`` (not
            stated).
        source : str or None, default None
            The data's public description (a path, "the pandas table"), never read from the rows.

        Returns
        -------
        LedgerEntry
            The recorded entry, committed.
        """
        charge_kind, charged = priced(self._budget, epsilon, delta, kind)
        native = (float(epsilon), float(delta), None)
        return self._record(
            charge_kind, native, charged, mechanism, parameters, privacy_unit, source
        )

    def charge_zcdp(
        self,
        rho: Number,
        mechanism: str = "unspecified",
        parameters: Any = None,
        *,
        delta: Number | None = None,
        privacy_unit: str | None = None,
        source: str | None = None,
    ) -> LedgerEntry:
        """Record a ``rho``-zCDP release; durable when this returns.

        In a basic ledger the charge is converted to ``(CKS epsilon at delta, delta)``, so
        ``delta`` is required; in a zCDP ledger ``rho`` is charged as is. ``privacy_unit`` and
        ``source``: as in :meth:`charge`.

        Parameters
        ----------
        rho : float
            The release's zCDP ``rho >= 0``.
        mechanism : str, default "unspecified"
            The mechanism's name, recorded with the entry.
        parameters : JSON-serialisable, optional
            The mechanism's public parameters, recorded with the entry (no NaN or infinity).
        delta : float or None, default None
            The ``delta`` in ``(0, 1]`` at which a basic ledger converts ``rho`` (required there);
            a zCDP ledger only records it.
        privacy_unit : str or None, default None
            Whom the release protects: :data:`ROWS`, a unit column's name, or ``None`` (not
            stated).
        source : str or None, default None
            The data's public description (a path, "the pandas table"), never read from the rows.

        Returns
        -------
        LedgerEntry
            The recorded entry, committed.
        """
        charged = priced_zcdp(self._budget, rho, delta)
        native = (None, None if delta is None else float(delta), float(rho))
        return self._record("zcdp", native, charged, mechanism, parameters, privacy_unit, source)

    def quote(
        self,
        epsilon: Number,
        delta: Number = 0.0,
        *,
        kind: Literal["pure", "bounded_range", "approx"] | None = None,
        privacy_unit: str | None = None,
    ) -> Quote:
        """What :meth:`charge` would count against the budget, and whether it fits now;
        nothing is written (the budget may change before a charge: only the charge decides).

        Parameters
        ----------
        epsilon, delta, kind, privacy_unit
            As in :meth:`charge`.

        Returns
        -------
        Quote
            The exact amounts, whether they fit, and the refusal :meth:`charge` would raise.

        Raises
        ------
        ParameterError, LedgerError
            What :meth:`charge` would raise before writing.
        """
        _, charged = priced(self._budget, epsilon, delta, kind)
        return self._quoted(charged, privacy_unit)

    def quote_zcdp(
        self, rho: Number, *, delta: Number | None = None, privacy_unit: str | None = None
    ) -> Quote:
        """What :meth:`charge_zcdp` would count against the budget, and whether it fits now;
        nothing is written.

        Parameters
        ----------
        rho, delta, privacy_unit
            As in :meth:`charge_zcdp`.

        Returns
        -------
        Quote
            The exact amounts, whether they fit, and the refusal a charge would raise.
        """
        return self._quoted(priced_zcdp(self._budget, rho, delta), privacy_unit)

    def _quoted(self, charged: Charged, unit: str | None) -> Quote:
        """The :class:`Quote` of ``charged`` for a query protecting ``unit``."""
        check_unit(unit)
        self.check_privacy_unit(unit)
        t = self._totals()
        fit = fits(self._budget, t.plus(charged))
        return Quote(*charged, fit, None if fit else refusal(self._budget, self._path, t, charged))

    def charge_then(
        self,
        release: Callable[[], T],
        epsilon: Number,
        delta: Number = 0.0,
        mechanism: str = "unspecified",
        parameters: Any = None,
        *,
        kind: Literal["pure", "bounded_range", "approx"] | None = None,
        privacy_unit: str | None = None,
        source: str | None = None,
    ) -> T:
        """Charge, and only once the charge is durable, compute and return ``release()``.

        If the charge fails (``BudgetExceeded``, ``LedgerError``) ``release`` never runs. If
        ``release`` raises, the charge stands (the data may already have been touched).

        Parameters
        ----------
        release : callable () -> T
            The computation, run only after the charge is durable.
        epsilon : float
            The release's ``epsilon >= 0``.
        delta : float, default 0.0
            The release's ``delta``, in ``[0, 1]``; 0 unless ``kind="approx"``. A zCDP ledger
            refuses ``delta > 0``.
        mechanism : str, default "unspecified"
            The mechanism's name, recorded with the entry.
        parameters : JSON-serialisable, optional
            The mechanism's public parameters, recorded with the entry (no NaN or infinity).
        kind : {"pure", "bounded_range", "approx"} or None, default None
            The loss's class; ``None``: ``"pure"`` when ``delta == 0``, else ``"approx"``. A zCDP
            ledger charges ``rho = epsilon^2 / 8`` for ``"bounded_range"``, ``epsilon^2 / 2``
            otherwise.
        privacy_unit : str or None, default None
            Whom the release protects: :data:`ROWS`, a unit column's name, or ``None`` (not
            stated).
        source : str or None, default None
            The data's public description (a path, "the pandas table"), never read from the rows.

        Returns
        -------
        T
            What ``release()`` returned.
        """
        self.charge(
            epsilon,
            delta,
            mechanism,
            parameters,
            kind=kind,
            privacy_unit=privacy_unit,
            source=source,
        )
        return release()

    @contextmanager
    def charging(
        self,
        epsilon: Number,
        delta: Number = 0.0,
        mechanism: str = "unspecified",
        parameters: Any = None,
        *,
        kind: Literal["pure", "bounded_range", "approx"] | None = None,
        privacy_unit: str | None = None,
        source: str | None = None,
    ) -> Iterator[LedgerEntry]:
        """``with ledger.charging(eps, ...) as entry:`` charges durably before the block runs.

        Parameters
        ----------
        epsilon : float
            The release's ``epsilon >= 0``.
        delta : float, default 0.0
            The release's ``delta``, in ``[0, 1]``; 0 unless ``kind="approx"``. A zCDP ledger
            refuses ``delta > 0``.
        mechanism : str, default "unspecified"
            The mechanism's name, recorded with the entry.
        parameters : JSON-serialisable, optional
            The mechanism's public parameters, recorded with the entry (no NaN or infinity).
        kind : {"pure", "bounded_range", "approx"} or None, default None
            The loss's class; ``None``: ``"pure"`` when ``delta == 0``, else ``"approx"``. A zCDP
            ledger charges ``rho = epsilon^2 / 8`` for ``"bounded_range"``, ``epsilon^2 / 2``
            otherwise.
        privacy_unit : str or None, default None
            Whom the release protects: :data:`ROWS`, a unit column's name, or ``None`` (not
            stated).
        source : str or None, default None
            The data's public description (a path, "the pandas table"), never read from the rows.

        Yields
        ------
        LedgerEntry
            The recorded entry, committed before the block runs.
        """
        yield self.charge(
            epsilon,
            delta,
            mechanism,
            parameters,
            kind=kind,
            privacy_unit=privacy_unit,
            source=source,
        )

    def _record(
        self,
        kind: ChargeKind,
        native: tuple[float | None, float | None, float | None],
        charged: Charged,
        mechanism: str,
        parameters: Any,
        privacy_unit: str | None = None,
        source: str | None = None,
    ) -> LedgerEntry:
        if not isinstance(mechanism, str):
            raise ParameterError(f"mechanism must be a str, got {type(mechanism).__name__}")
        check_unit(privacy_unit)
        if source is not None and not isinstance(source, str):
            raise ParameterError(f"source must be a str, got {type(source).__name__}")
        self.check_privacy_unit(privacy_unit)  # the binding is fixed: checked before writing
        if self._read_only:
            raise LedgerError(f"the ledger {self._path!r} is open read-only: nothing was charged")
        try:
            params_json = json.dumps(parameters, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ParameterError(f"parameters must be JSON-serialisable: {exc}") from exc
        deadline = time.monotonic() + self._timeout
        backoff = 0.001
        while True:
            try:
                with self._lock:
                    return self._try_record(
                        kind, native, charged, mechanism, params_json, (privacy_unit, source)
                    )
            except sqlite3.OperationalError as exc:
                if not is_busy(exc):
                    raise LedgerError(f"could not record the charge: {exc}") from exc
                if time.monotonic() >= deadline:
                    raise LedgerError(
                        f"the ledger {self._path!r} stayed locked for {self._timeout:g} s; "
                        "nothing was charged"
                    ) from exc
                time.sleep(backoff * (1 + random.random()))
                backoff = min(backoff * 2, 0.1)
            except sqlite3.Error as exc:
                raise LedgerError(f"could not record the charge: {exc}") from exc

    def _try_record(
        self,
        kind: ChargeKind,
        native: tuple[float | None, float | None, float | None],
        charged: Charged,
        mechanism: str,
        params_json: str,
        unit_source: tuple[str | None, str | None] = (None, None),
    ) -> LedgerEntry:
        conn = self._db
        conn.execute("BEGIN IMMEDIATE")
        try:
            t = read_totals(conn, self._path)  # re-read inside the write lock
            new = t.plus(charged)
            if not fits(self._budget, new):
                raise BudgetExceeded(refusal(self._budget, self._path, t, charged))
            now = datetime.now(timezone.utc).isoformat()
            cur = insert_entry(
                conn,
                (
                    now,
                    mechanism,
                    params_json,
                    kind,
                    *(None if v is None else fraction_text(Fraction(v)) for v in native),
                    *(fraction_text(c) for c in charged),
                    *unit_source,
                ),
            )
            write_totals(conn, new)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        entry_id = cur.lastrowid
        assert entry_id is not None
        return LedgerEntry(
            entry_id,
            now,
            mechanism,
            json.loads(params_json),
            kind,
            native[0],
            native[1],
            native[2],
            *charged,
            *unit_source,
        )

    def __repr__(self) -> str:
        unit = "" if self._privacy_unit is None else f", privacy_unit={self._privacy_unit!r}"
        return (
            f"Ledger({self._path!r}, accounting={self._accounting!r}, budget={self.budget!r}{unit})"
        )


_OPEN_TOKEN = object()
