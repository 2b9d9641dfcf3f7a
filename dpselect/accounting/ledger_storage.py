"""A ledger's SQLite file: its schema, its header check, its connection URIs, its atomic
creation and its migration.

Everything here reads or writes the file of a :class:`~dpselect.accounting.Ledger` below the
level of a charge: the file is created complete under a temporary name, fsynced and
hard-linked into place (never overwriting anything), and a file is checked byte by byte
before SQLite opens it.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from contextlib import suppress
from datetime import datetime, timezone
from fractions import Fraction
from urllib.parse import quote

from dpselect.core.errors import LedgerError

from .ledger_records import Totals, fraction_text, read_fraction

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION"]

#: SQLite ``application_id`` of a dpselect ledger (ASCII "dpSL").
APPLICATION_ID = 0x6470534C
#: Schema version stored in SQLite's ``user_version`` and in the meta table.
SCHEMA_VERSION = 1
FORMAT = "dpselect-ledger"
_SQLITE_MAGIC = b"SQLite format 3\x00"
#: Columns added to ``ledger_entries`` after the first release of schema version 1; a ledger
#: file without them is migrated when opened for writing (``ALTER TABLE ... ADD COLUMN``), and
#: its older entries have an unknown unit and source (``NULL``).
ADDED_ENTRY_COLUMNS = ("privacy_unit", "source")

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


def _read_header(path: str) -> bytes:
    """The file's first 100 bytes (the SQLite header), read without SQLite."""
    try:
        with open(path, "rb") as f:
            return f.read(100)
    except FileNotFoundError:
        raise LedgerError(f"no ledger at {path!r}: the file does not exist") from None
    except IsADirectoryError:
        raise LedgerError(f"{path!r} is a directory, not a ledger") from None
    except OSError as exc:
        raise LedgerError(f"cannot read {path!r}: {exc}") from exc


def check_header(path: str) -> None:
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


def uri(path: str) -> str:
    """The read-write SQLite URI of a ledger file."""
    return "file:" + quote(os.path.abspath(path)) + "?mode=rw"


def read_only_uri(path: str) -> str:
    """``mode=ro``; also ``immutable=1`` when the directory cannot be written and no ``-wal``
    file exists: then no process can be writing the ledger, and SQLite, which could not
    create its ``-shm`` file there, needs neither it nor locks."""
    uri = "file:" + quote(os.path.abspath(path)) + "?mode=ro"
    directory = os.path.dirname(os.path.abspath(path))
    if not os.access(directory, os.W_OK) and not os.path.exists(path + "-wal"):
        uri += "&immutable=1"
    return uri


def _fsync_dir(path: str) -> None:
    """Fsync the directory holding ``path`` (so a new link in it is durable)."""
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


def is_busy(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite failed because another connection holds the lock."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _initialise(
    tmp: str,
    eps: Fraction,
    d: Fraction,
    rho: Fraction,
    accounting: str,
    privacy_unit: str | None = None,
) -> None:
    """Write a complete, empty ledger with this budget into the private file ``tmp``; fsync."""
    conn = sqlite3.connect(tmp, isolation_level=None)
    try:
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        # The file is private until it is linked into place, so the schema needs no
        # transaction of its own (executescript would commit one anyway).
        conn.executescript(_SCHEMA)
        conn.execute("BEGIN")
        meta = {
            "format": FORMAT,
            "schema_version": str(SCHEMA_VERSION),
            "accounting": accounting,
            "budget_epsilon": fraction_text(eps),
            "budget_delta": fraction_text(d),
            "budget_rho": fraction_text(rho),
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


def publish(
    p: str,
    budget: tuple[Fraction, Fraction, Fraction],
    accounting: str,
    privacy_unit: str | None,
) -> None:
    """Create the ledger file ``p`` with ``budget`` ``(epsilon, delta, rho)`` atomically:
    built under a temporary name, then hard-linked into place; an existing path is refused."""
    eps, d, rho = budget
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
            _initialise(tmp, eps, d, rho, accounting, privacy_unit)
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


def migrate(conn: sqlite3.Connection, read_only: bool) -> bool:
    """Add the entry columns of :data:`ADDED_ENTRY_COLUMNS` to a ledger file written
    without them (its old entries keep ``NULL``: unit and source unknown), in one
    ``BEGIN IMMEDIATE`` transaction; read-only: just say whether they are there."""

    def missing() -> list[str]:
        have = {str(r[1]) for r in conn.execute("PRAGMA table_info(ledger_entries)")}
        return [c for c in ADDED_ENTRY_COLUMNS if c not in have]

    if not missing():
        return True
    if read_only:
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


def read_meta(conn: sqlite3.Connection, path: str) -> dict[str, str]:
    """The ledger's metadata (format, schema, accounting, budget, binding), checked."""
    try:
        rows = conn.execute("SELECT key, value FROM ledger_meta").fetchall()
    except sqlite3.Error as exc:
        raise LedgerError(f"{path!r} has no readable ledger metadata: {exc}") from exc
    meta = {str(k): str(v) for k, v in rows}
    if meta.get("format") != FORMAT or meta.get("schema_version") != str(SCHEMA_VERSION):
        raise LedgerError(f"{path!r} is not a dpselect ledger of schema version 1")
    required = ("accounting", "budget_epsilon", "budget_delta", "budget_rho")
    if any(key not in meta for key in required):
        raise LedgerError(f"{path!r} lacks part of its budget metadata")
    return meta


def read_totals(conn: sqlite3.Connection, path: str) -> Totals:
    """The stored running totals (the ``ledger_totals`` row)."""
    row = conn.execute(
        "SELECT epsilon, delta, rho, entries FROM ledger_totals WHERE id = 1"
    ).fetchone()
    if row is None:
        raise LedgerError(f"the ledger {path!r} has lost its totals row")
    return Totals(read_fraction(row[0]), read_fraction(row[1]), read_fraction(row[2]), int(row[3]))


def insert_entry(conn: sqlite3.Connection, values: tuple[str | None, ...]) -> sqlite3.Cursor:
    """Insert one ``ledger_entries`` row (inside the caller's write transaction)."""
    return conn.execute(
        "INSERT INTO ledger_entries (time, mechanism, parameters, kind, epsilon, delta, "
        "rho, charged_epsilon, charged_delta, charged_rho, privacy_unit, source) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        values,
    )


def write_totals(conn: sqlite3.Connection, new: Totals) -> None:
    """Store the running totals ``new`` (inside the caller's write transaction)."""
    conn.execute(
        "UPDATE ledger_totals SET epsilon = ?, delta = ?, rho = ?, entries = ? WHERE id = 1",
        (fraction_text(new.epsilon), fraction_text(new.delta), fraction_text(new.rho), new.entries),
    )
