"""What the command line says when it is interrupted (Ctrl-C): whether a result was
released and what, if anything, was already charged to the ``--ledger``.

A charge is made before the data is read and stands; the report reads the ledger's entries
before and after the command.
"""

from __future__ import annotations

import os
import sys

import click

from ..core.errors import DPSelectError

__all__ = [
    "EXIT_INTERRUPTED",
    "caused_by_interrupt",
    "exit_interrupted",
    "ledger_argument",
    "ledger_entries",
]

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report Ctrl-C


def ledger_argument(argv: list[str]) -> str | None:
    """The value of ``--ledger`` in ``argv`` (for the interrupt report), if any.

    Parameters
    ----------
    argv : list of str
        The command's arguments.

    Returns
    -------
    str or None
        The ledger's path, ``None`` without ``--ledger``.
    """
    for i, arg in enumerate(argv):
        if arg == "--ledger" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--ledger="):
            return arg.split("=", 1)[1]
    return None


def ledger_entries(path: str | None) -> int | None:
    """How many charges the ledger at ``path`` holds (None: no ledger, or not readable).

    Parameters
    ----------
    path : str or None
        The ledger's path.

    Returns
    -------
    int or None
        The number of entries.
    """
    if path is None:
        return None
    from ..accounting.ledger import Ledger

    try:
        book = Ledger.open(path)
    except DPSelectError:
        return None
    try:
        return len(book)
    finally:
        book.close()


def _interrupted(path: str | None, before: int | None) -> str:
    """One line saying that the command stopped and what, if anything, was charged."""
    after = ledger_entries(path)
    if path is None:
        return "interrupted: no result was released (no --ledger: nothing recorded)"
    if before is None or after is None or after <= before:
        return f"interrupted: no result was released; nothing was charged to the ledger {path}"
    from ..accounting.ledger import Ledger

    book = Ledger.open(path)
    try:
        new = book.entries()[before:]
    finally:
        book.close()
    charged = "; ".join(
        f"{e.mechanism}: "
        + (
            f"rho = {e.rho:.6g}"
            if e.kind == "zcdp" and e.epsilon is None
            else f"epsilon = {e.epsilon:.6g}, delta = {e.delta or 0.0:.3g}"
        )
        for e in new
    )
    return (
        f"interrupted: no result was released, but the ledger {path} was already charged "
        f"({charged}): the charge is made before the data is read, and stands"
    )


def caused_by_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while a KeyboardInterrupt was being handled.

    Parameters
    ----------
    exc : BaseException
        The exception; its causes and contexts are followed.

    Returns
    -------
    bool
        Whether a :class:`KeyboardInterrupt` is among them.
    """
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def exit_interrupted(ledger_path: str | None, before: int | None) -> None:
    """Report the interrupt and what was charged; exit 130 at once.

    ``os._exit`` skips the interpreter's teardown, during which an interrupted DuckDB query
    still unwinding in its worker thread could abort the process.

    Parameters
    ----------
    ledger_path : str or None
        The command's ``--ledger``.
    before : int or None
        The ledger's number of entries when the command started.
    """
    try:
        message = _interrupted(ledger_path, before)
    except Exception:  # the ledger itself unreadable: still exit cleanly
        message = f"interrupted: no result was released; check the ledger {ledger_path}"
    click.echo(message, err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(EXIT_INTERRUPTED)
