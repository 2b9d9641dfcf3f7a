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
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime, timezone
from fractions import Fraction
from typing import Any, Literal, TypeVar
from urllib.parse import quote

from dpselect.core.arithmetic import (
    Number,
    as_decimal,
    float_down,
    float_up,
    plain_number,
    printed_down,
    sqrt_down,
)
from dpselect.core.errors import BudgetExceeded, LedgerError, ParameterError, given

from .params import check_delta, check_loss
from .zcdp import approx_dp_to_zcdp_budget, zcdp_to_approx_dp

__all__ = [
    "APPLICATION_ID", "ROWS", "Ledger", "LedgerEntry", "LedgerTotal", "Quote", "UnitTotal",
]  # fmt: skip

#: SQLite ``application_id`` of a dpselect ledger (ASCII "dpSL").
APPLICATION_ID = 0x6470534C
#: Schema version stored in SQLite's ``user_version`` and in the meta table.
SCHEMA_VERSION = 1
_FORMAT = "dpselect-ledger"
_SQLITE_MAGIC = b"SQLite format 3\x00"
#: The privacy unit of a query that protects rows (one row added or removed), as recorded in
#: a ledger entry and as a ledger's binding; any other unit is the name of a unit column.
ROWS = "rows"
#: Columns added to ``ledger_entries`` after the first release of schema version 1; a ledger
#: file without them is migrated when opened for writing (``ALTER TABLE ... ADD COLUMN``), and
#: its older entries have an unknown unit and source (``NULL``).
_ADDED_ENTRY_COLUMNS = ("privacy_unit", "source")

Accounting = Literal["basic", "zcdp"]
ChargeKind = Literal["pure", "bounded_range", "approx", "zcdp"]
T = TypeVar("T")

_SCHEMA = """
CREATE TABLE ledger_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;
CREATE TABLE ledger_totals (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    epsilon TEXT NOT NULL,
    delta   TEXT NOT NULL,
    rho     TEXT NOT NULL,
    entries INTEGER NOT NULL
) STRICT;
CREATE TABLE ledger_entries (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    time            TEXT NOT NULL,
    mechanism       TEXT NOT NULL,
    parameters      TEXT NOT NULL,
    kind            TEXT NOT NULL CHECK (kind IN ('pure', 'bounded_range', 'approx', 'zcdp')),
    epsilon         TEXT,
    delta           TEXT,
    rho             TEXT,
    charged_epsilon TEXT NOT NULL,
    charged_delta   TEXT NOT NULL,
    charged_rho     TEXT NOT NULL,
    privacy_unit    TEXT,
    source          TEXT
) STRICT;
"""


def _q(text: str) -> Fraction:
    return Fraction(text)


def _s(value: Fraction) -> str:
    return f"{value.numerator}/{value.denominator}"


@dataclass(frozen=True)
class LedgerEntry:
    """One recorded charge: when, what, with which parameters, and its loss.

    ``epsilon``, ``delta`` and ``rho`` are the loss in its native measure (``None`` where it
    does not apply); ``charged_*`` are the exact amounts counted against the budget.
    ``privacy_unit`` is whom the release protects: :data:`ROWS` (one row added or removed), the
    name of a unit column (one person, all their rows), or ``None`` when the charge did not say
    (an entry written before ledgers recorded units, or a direct charge that named none).
    ``source`` is the data's public description (a path, "the pandas table"), never anything
    read from its rows; ``None`` when unknown.
    """

    id: int
    time: str
    mechanism: str
    parameters: Any
    kind: ChargeKind
    epsilon: float | None
    delta: float | None
    rho: float | None
    charged_epsilon: Fraction
    charged_delta: Fraction
    charged_rho: Fraction
    privacy_unit: str | None = None
    source: str | None = None


@dataclass(frozen=True)
class Quote:
    """What a charge would count against a ledger's budget (:meth:`Ledger.quote`), in the
    ledger's own accounting, and whether it fits the budget now; nothing is written.

    Attributes
    ----------
    charged_epsilon, charged_delta, charged_rho : Fraction
        The exact amounts a charge would add (a basic ledger counts ``epsilon`` and ``delta``,
        a zCDP ledger ``rho``).
    fits : bool
        Whether the budget holds them now.
    refusal : str or None
        The message the charge would be refused with (``None`` when it fits).
    """

    charged_epsilon: Fraction
    charged_delta: Fraction
    charged_rho: Fraction
    fits: bool
    refusal: str | None


@dataclass(frozen=True)
class UnitTotal:
    """What a ledger has charged for one privacy unit (``None``: unknown) and from which
    data sources; ``epsilon``, ``delta`` and ``rho`` are the exact sums charged."""

    privacy_unit: str | None
    entries: int
    epsilon: Fraction
    delta: Fraction
    rho: Fraction
    sources: tuple[str, ...]


def describe_unit(unit: str | None) -> str:
    """A privacy unit in words: ``rows``, ``unit column 'user_id'`` or ``an unknown unit``."""
    if unit is None:
        return "an unknown unit"
    if unit == ROWS:
        return "rows (one row added or removed)"
    return f"the unit column {unit!r} (one person, all their rows)"


def _check_unit(unit: str | None, argument: str = "privacy_unit") -> None:
    if unit is not None and (not isinstance(unit, str) or not unit):
        raise ParameterError(f"{argument} must be a column name or {ROWS!r}, got {given(unit)}")


@dataclass(frozen=True)
class LedgerTotal:
    """A total in a chosen measure and the theorem that justifies it.

    ``value`` is ``(epsilon, delta)`` for ``measure="approx"`` and ``rho`` for ``"zcdp"``.
    """

    measure: str
    value: Any
    theorem: str


@dataclass(frozen=True)
class _Totals:
    epsilon: Fraction
    delta: Fraction
    rho: Fraction
    entries: int


def _read_header(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(100)
    except FileNotFoundError:
        raise LedgerError(f"no ledger at {path!r}: the file does not exist") from None
    except IsADirectoryError:
        raise LedgerError(f"{path!r} is a directory, not a ledger") from None
    except OSError as exc:
        raise LedgerError(f"cannot read {path!r}: {exc}") from exc


def _check_header(path: str) -> None:
    """Refuse anything but a dpselect ledger, reading the header without SQLite."""
    header = _read_header(path)
    if len(header) < 100 or not header.startswith(_SQLITE_MAGIC):
        raise LedgerError(
            f"{path!r} is not a dpselect ledger (not a SQLite database); refusing to touch it"
        )
    user_version = int.from_bytes(header[60:64], "big")
    application_id = int.from_bytes(header[68:72], "big")
    if application_id != APPLICATION_ID:
        raise LedgerError(
            f"{path!r} is a SQLite database but not a dpselect ledger "
            f"(application_id {application_id:#x}, expected {APPLICATION_ID:#x}); "
            "refusing to touch it"
        )
    if user_version != SCHEMA_VERSION:
        raise LedgerError(
            f"{path!r} has ledger schema version {user_version}; this dpselect reads version "
            f"{SCHEMA_VERSION}"
        )


def _uri(path: str) -> str:
    return "file:" + quote(os.path.abspath(path)) + "?mode=rw"


def _read_only_uri(path: str) -> str:
    """``mode=ro``; also ``immutable=1`` when the directory cannot be written and no ``-wal``
    file exists: then no process can be writing the ledger, and SQLite, which could not
    create its ``-shm`` file there, needs neither it nor locks."""
    uri = "file:" + quote(os.path.abspath(path)) + "?mode=ro"
    directory = os.path.dirname(os.path.abspath(path))
    if not os.access(directory, os.W_OK) and not os.path.exists(path + "-wal"):
        uri += "&immutable=1"
    return uri


def _fsync_dir(path: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


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
        meta = self._load_meta()
        self._accounting: Accounting = "zcdp" if meta["accounting"] == "zcdp" else "basic"
        self._budget_epsilon = _q(meta["budget_epsilon"])
        self._budget_delta = _q(meta["budget_delta"])
        self._budget_rho = _q(meta["budget_rho"])
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
        _check_unit(privacy_unit)
        p = os.fspath(path)
        # NumPy scalars by the value they hold (np.float32(0.1) is not 0.1).
        epsilon, delta = plain_number(epsilon), plain_number(delta)
        # The budget is the decimal the user typed (1/10 for 0.1), as every charge made
        # through dpselect's recipes is calibrated to at most that decimal (as_decimal).
        # The rules of a query's (epsilon, delta): epsilon > 0, delta in [0, 1) (a budget of
        # epsilon 0 admits no query; delta 1 promises nothing).
        eps = check_loss(epsilon, "epsilon")
        if eps == 0:
            raise ParameterError(f"epsilon must be positive, got {epsilon!r}")
        d = check_loss(delta, "delta")
        if d >= 1:
            raise ParameterError(f"delta must be in [0, 1), got {delta!r}")
        eps = as_decimal(epsilon) if isinstance(epsilon, float) else eps
        d = as_decimal(delta) if isinstance(delta, float) else d
        if accounting not in ("basic", "zcdp"):
            raise ParameterError(f"accounting must be 'basic' or 'zcdp', got {accounting!r}")
        rho = Fraction(0)
        if accounting == "zcdp":
            if d == 0:
                raise ParameterError("a zCDP ledger needs delta > 0 to convert its budget")
            rho = Fraction(approx_dp_to_zcdp_budget(eps, d))
        if os.path.lexists(p):
            raise LedgerError(f"{p!r} already exists; refusing to overwrite it")
        directory = os.path.dirname(os.path.abspath(p))
        if not os.path.isdir(directory):
            raise LedgerError(
                f"cannot create the ledger {p!r}: the directory {directory!r} does not exist"
            )
        if not os.access(directory, os.W_OK | os.X_OK):
            raise LedgerError(
                f"cannot create the ledger {p!r}: the directory {directory!r} is not writable"
            )
        tmp = os.path.join(directory, f".{os.path.basename(p)}.{uuid.uuid4().hex}.tmp")
        try:
            try:
                cls._initialise(tmp, eps, d, rho, accounting, privacy_unit)
            except sqlite3.Error as exc:
                raise LedgerError(f"cannot create the ledger {p!r}: {exc}") from None
            try:
                os.link(tmp, p)
            except FileExistsError:
                raise LedgerError(f"{p!r} already exists; refusing to overwrite it") from None
            except OSError as exc:
                raise LedgerError(f"cannot publish the ledger at {p!r}: {exc}") from exc
            _fsync_dir(p)
        finally:
            for leftover in (tmp, tmp + "-wal", tmp + "-shm", tmp + "-journal"):
                with suppress(FileNotFoundError):
                    os.unlink(leftover)
        return cls.open(p, timeout=timeout)

    @staticmethod
    def _initialise(
        tmp: str,
        eps: Fraction,
        d: Fraction,
        rho: Fraction,
        accounting: str,
        privacy_unit: str | None = None,
    ) -> None:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            # The file is private until it is linked into place, so the schema needs no
            # transaction of its own (executescript would commit one anyway).
            conn.executescript(_SCHEMA)
            conn.execute("BEGIN")
            meta = {
                "format": _FORMAT,
                "schema_version": str(SCHEMA_VERSION),
                "accounting": accounting,
                "budget_epsilon": _s(eps),
                "budget_delta": _s(d),
                "budget_rho": _s(rho),
                "created": datetime.now(timezone.utc).isoformat(),
            }
            if privacy_unit is not None:
                meta["privacy_unit"] = privacy_unit
            conn.executemany("INSERT INTO ledger_meta (key, value) VALUES (?, ?)", meta.items())
            conn.execute(
                "INSERT INTO ledger_totals (id, epsilon, delta, rho, entries) "
                "VALUES (1, '0/1', '0/1', '0/1', 0)"
            )
            conn.execute("COMMIT")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":  # pragma: no cover - WAL unsupported here
                raise LedgerError(f"SQLite refused WAL mode for {tmp!r} (got {mode!r})")
        finally:
            conn.close()
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

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
        _check_header(self._path)
        try:
            conn = sqlite3.connect(
                _read_only_uri(self._path) if self._read_only else _uri(self._path),
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
            self._has_units = self._migrate(conn)
        except sqlite3.Error as exc:
            conn.close()
            raise LedgerError(f"the ledger {self._path!r} is unreadable: {exc}") from exc
        except LedgerError:
            conn.close()
            raise
        self._conn = conn
        self._pid = os.getpid()

    def _migrate(self, conn: sqlite3.Connection) -> bool:
        """Add the entry columns of :data:`_ADDED_ENTRY_COLUMNS` to a ledger file written
        without them (its old entries keep ``NULL``: unit and source unknown), in one
        ``BEGIN IMMEDIATE`` transaction; read-only: just say whether they are there."""

        def missing() -> list[str]:
            have = {str(r[1]) for r in conn.execute("PRAGMA table_info(ledger_entries)")}
            return [c for c in _ADDED_ENTRY_COLUMNS if c not in have]

        if not missing():
            return True
        if self._read_only:
            return False
        conn.execute("BEGIN IMMEDIATE")
        try:
            for column in missing():  # re-read under the write lock
                conn.execute(f"ALTER TABLE ledger_entries ADD COLUMN {column} TEXT")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return True

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

    def _load_meta(self) -> dict[str, str]:
        try:
            rows = self._db.execute("SELECT key, value FROM ledger_meta").fetchall()
        except sqlite3.Error as exc:
            raise LedgerError(f"{self._path!r} has no readable ledger metadata: {exc}") from exc
        meta = {str(k): str(v) for k, v in rows}
        if meta.get("format") != _FORMAT or meta.get("schema_version") != str(SCHEMA_VERSION):
            raise LedgerError(f"{self._path!r} is not a dpselect ledger of schema version 1")
        required = ("accounting", "budget_epsilon", "budget_delta", "budget_rho")
        if any(key not in meta for key in required):
            raise LedgerError(f"{self._path!r} lacks part of its budget metadata")
        return meta

    def _read_totals(self, conn: sqlite3.Connection) -> _Totals:
        row = conn.execute(
            "SELECT epsilon, delta, rho, entries FROM ledger_totals WHERE id = 1"
        ).fetchone()
        if row is None:
            raise LedgerError(f"the ledger {self._path!r} has lost its totals row")
        return _Totals(_q(row[0]), _q(row[1]), _q(row[2]), int(row[3]))

    def _verify_totals(self) -> None:
        conn = self._db
        try:
            conn.execute("BEGIN")
            totals = self._read_totals(conn)
            rows = conn.execute(
                "SELECT charged_epsilon, charged_delta, charged_rho FROM ledger_entries"
            ).fetchall()
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise LedgerError(f"the ledger {self._path!r} is unreadable: {exc}") from exc
        sums = [sum((_q(r[i]) for r in rows), Fraction(0)) for i in range(3)]
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

    def _totals(self) -> _Totals:
        try:
            with self._lock:
                return self._read_totals(self._db)
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
        groups: dict[str | None, list[LedgerEntry]] = {}
        for entry in self.entries():
            groups.setdefault(entry.privacy_unit, []).append(entry)
        out = []
        for unit, items in groups.items():
            sources = tuple(dict.fromkeys(e.source for e in items if e.source is not None))
            out.append(
                UnitTotal(
                    unit,
                    len(items),
                    sum((e.charged_epsilon for e in items), Fraction(0)),
                    sum((e.charged_delta for e in items), Fraction(0)),
                    sum((e.charged_rho for e in items), Fraction(0)),
                    sources,
                )
            )
        return out

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
        return float(self._budget_epsilon), float(self._budget_delta)

    @property
    def rho_budget(self) -> float:
        """The ``rho`` budget of a zCDP ledger (0 for a basic ledger)."""
        return float(self._budget_rho)

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
        return zcdp_to_approx_dp(t.rho, self._budget_delta), float(self._budget_delta)

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
            return float_down(self._budget_epsilon - t.epsilon), float_down(
                self._budget_delta - t.delta
            )
        left = self._budget_rho - t.rho
        return sqrt_down(2 * left), 0.0

    def remaining_rho(self) -> float:
        """The ``rho`` left in a zCDP ledger (rounded down)."""
        return float_down(self._budget_rho - self._totals().rho)

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
            rho = Fraction(0)
            for entry in self.entries():
                if entry.kind == "zcdp":
                    rho += Fraction(entry.rho or 0.0)
                elif entry.kind == "bounded_range":
                    rho += Fraction(entry.epsilon or 0.0) ** 2 / 8
                elif entry.kind == "pure" or not entry.delta:
                    # (eps, 0)-DP is pure eps-DP: eps^2 / 2 (Bun-Steinke 2016, Prop. 1.4)
                    rho += Fraction(entry.epsilon or 0.0) ** 2 / 2
                else:
                    raise ParameterError(
                        f"entry {entry.id} is ({entry.epsilon}, {entry.delta})-DP with delta > 0: "
                        "it has no zCDP total"
                    )
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
        return [_entry(row) for row in rows]

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
        priced, charged = self._priced(epsilon, delta, kind)
        native = (float(epsilon), float(delta), None)
        return self._record(priced, native, charged, mechanism, parameters, privacy_unit, source)

    def _priced(
        self,
        epsilon: Number,
        delta: Number,
        kind: Literal["pure", "bounded_range", "approx"] | None,
    ) -> tuple[ChargeKind, tuple[Fraction, Fraction, Fraction]]:
        """The kind and the exact ``(epsilon, delta, rho)`` an ``(epsilon, delta)`` charge
        counts against this ledger's budget (:meth:`charge`, :meth:`quote`)."""
        eps = check_loss(epsilon, "epsilon")
        d = check_delta(delta)
        if kind is None:
            kind = "approx" if d > 0 else "pure"
        if kind not in ("pure", "bounded_range", "approx"):
            raise ParameterError(f"kind must be 'pure', 'bounded_range' or 'approx', got {kind!r}")
        if kind != "approx" and d > 0:
            raise ParameterError(f"a {kind!r} charge has delta = 0, got delta={delta!r}")
        if self._accounting == "basic":
            return kind, (eps, d, Fraction(0))
        if d > 0:
            raise ParameterError(
                "this zCDP ledger cannot take an (epsilon, delta > 0) charge; describe the "
                "mechanism's zCDP loss with charge_zcdp instead"
            )
        return kind, (Fraction(0), Fraction(0), eps * eps / (8 if kind == "bounded_range" else 2))

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
        charged = self._priced_zcdp(rho, delta)
        native = (None, None if delta is None else float(delta), float(rho))
        return self._record("zcdp", native, charged, mechanism, parameters, privacy_unit, source)

    def _priced_zcdp(
        self, rho: Number, delta: Number | None
    ) -> tuple[Fraction, Fraction, Fraction]:
        """The exact ``(epsilon, delta, rho)`` a ``rho``-zCDP charge counts against this
        ledger's budget (:meth:`charge_zcdp`, :meth:`quote_zcdp`)."""
        r = check_loss(rho, "rho")
        if self._accounting == "zcdp":
            return Fraction(0), Fraction(0), r
        if delta is None:
            raise ParameterError(
                "a basic ledger converts zCDP charges to (epsilon, delta): pass delta"
            )
        d = check_delta(delta, allow_zero=False)
        return Fraction(zcdp_to_approx_dp(r, d)), d, Fraction(0)

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
        _, charged = self._priced(epsilon, delta, kind)
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
        return self._quoted(self._priced_zcdp(rho, delta), privacy_unit)

    def _quoted(self, charged: tuple[Fraction, Fraction, Fraction], unit: str | None) -> Quote:
        _check_unit(unit)
        self.check_privacy_unit(unit)
        t = self._totals()
        new = _Totals(t.epsilon + charged[0], t.delta + charged[1], t.rho + charged[2],
                      t.entries + 1)  # fmt: skip
        fits = self._fits(new)
        return Quote(*charged, fits, None if fits else self._refusal(t, charged))

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
        charged: tuple[Fraction, Fraction, Fraction],
        mechanism: str,
        parameters: Any,
        privacy_unit: str | None = None,
        source: str | None = None,
    ) -> LedgerEntry:
        if not isinstance(mechanism, str):
            raise ParameterError(f"mechanism must be a str, got {type(mechanism).__name__}")
        _check_unit(privacy_unit)
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
                if not _is_busy(exc):
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
        charged: tuple[Fraction, Fraction, Fraction],
        mechanism: str,
        params_json: str,
        unit_source: tuple[str | None, str | None] = (None, None),
    ) -> LedgerEntry:
        conn = self._db
        conn.execute("BEGIN IMMEDIATE")
        try:
            t = self._read_totals(conn)  # re-read inside the write lock
            new = _Totals(
                t.epsilon + charged[0], t.delta + charged[1], t.rho + charged[2], t.entries + 1
            )
            if not self._fits(new):
                raise BudgetExceeded(self._refusal(t, charged))
            now = datetime.now(timezone.utc).isoformat()
            cur = conn.execute(
                "INSERT INTO ledger_entries (time, mechanism, parameters, kind, epsilon, delta, "
                "rho, charged_epsilon, charged_delta, charged_rho, privacy_unit, source) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    now,
                    mechanism,
                    params_json,
                    kind,
                    *(None if v is None else _s(Fraction(v)) for v in native),
                    *(_s(c) for c in charged),
                    *unit_source,
                ),
            )
            conn.execute(
                "UPDATE ledger_totals SET epsilon = ?, delta = ?, rho = ?, entries = ? "
                "WHERE id = 1",
                (_s(new.epsilon), _s(new.delta), _s(new.rho), new.entries),
            )
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

    def _fits(self, t: _Totals) -> bool:
        if self._accounting == "basic":
            return t.epsilon <= self._budget_epsilon and t.delta <= self._budget_delta
        return t.rho <= self._budget_rho

    def _refusal(self, t: _Totals, charged: tuple[Fraction, Fraction, Fraction]) -> str:
        if self._accounting == "basic":
            return (
                f"charging epsilon={float_up(charged[0]):.6g}, "
                f"delta={float_up(charged[1]):.6g} would exceed the budget "
                f"(epsilon={float(self._budget_epsilon)!r}, "
                f"delta={float(self._budget_delta)!r}) of {self._path!r}: remaining "
                f"epsilon={printed_down(float_down(self._budget_epsilon - t.epsilon), 6)}, "
                f"delta={printed_down(float_down(self._budget_delta - t.delta), 6)} (rounded "
                "down: asking for them fits); nothing was charged"
            )
        left = self._budget_rho - t.rho
        return (
            f"charging rho={float_up(charged[2]):.6g} would exceed the zCDP budget "
            f"rho={float(self._budget_rho):.6g} of {self._path!r} (the largest rho whose "
            f"conversion is (epsilon={float(self._budget_epsilon):g}, "
            f"delta={float(self._budget_delta):g})-DP); remaining rho={float_down(left):.6g}, "
            f"which fits one pure-DP query up to epsilon={sqrt_down(2 * left):.4g} or one "
            f"exponential-mechanism selection (k = 1) up to epsilon={sqrt_down(8 * left):.4g}"
            " (a one-shot top-k at total epsilon costs epsilon^2/(8k)). Under zCDP "
            "a pure epsilon-DP query costs rho = epsilon^2/2 and an exponential mechanism "
            "(bounded range) epsilon^2/8 (Bun-Steinke 2016; Cesar-Rogers 2021): one large "
            "query costs more than its epsilon suggests, many small ones far less; nothing "
            "was charged"
        )

    def __repr__(self) -> str:
        unit = "" if self._privacy_unit is None else f", privacy_unit={self._privacy_unit!r}"
        return (
            f"Ledger({self._path!r}, accounting={self._accounting!r}, budget={self.budget!r}{unit})"
        )


_OPEN_TOKEN = object()


def _entry(row: tuple[Any, ...]) -> LedgerEntry:
    def opt(text: str | None) -> float | None:
        return None if text is None else float(_q(text))

    return LedgerEntry(
        id=int(row[0]),
        time=str(row[1]),
        mechanism=str(row[2]),
        parameters=json.loads(row[3]),
        kind=row[4],
        epsilon=opt(row[5]),
        delta=opt(row[6]),
        rho=opt(row[7]),
        charged_epsilon=_q(row[8]),
        charged_delta=_q(row[9]),
        charged_rho=_q(row[10]),
        privacy_unit=None if row[11] is None else str(row[11]),
        source=None if row[12] is None else str(row[12]),
    )
