"""NumPy work cut in two independent halves, run on two threads at once.

The machine's two cores (and DuckDB, the baseline of the benchmarks, uses every core): NumPy
releases the GIL inside its loops, so two threads working on disjoint halves of the same
arrays run side by side. :func:`in_halves` runs ``work`` on the first half in the calling
thread and on the second in a worker thread of one process-wide pool of :data:`WORKERS`
threads, created on first use.

What may run in halves: work whose halves read shared inputs and write disjoint outputs,
each half's floats computed by the same operations as in one pass (elementwise operations,
reductions along the other axis, counts added up afterwards), so the result is the same to
the bit whichever way it runs; the tests compare both. A worker never waits on the pool, so
callers on many threads cannot deadlock it (their second halves queue), and a child made by
``fork`` starts a pool of its own (the parent's threads are not copied into it). NumPy's error
state (``np.errstate``) is per thread: ``work`` sets its own.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["WORKERS", "in_halves"]

#: Threads of the pool (the halves of a call run on the caller's and one of these).
WORKERS = 2

_T = TypeVar("_T")


def _cores() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it)."""
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        return len(affinity(0))
    return os.cpu_count() or 1  # pragma: no cover - no affinity call (macOS, Windows)


#: With one core, two threads only take turns: every call then runs in one pass.
_CORES = _cores()
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(WORKERS, thread_name_prefix="dpselect-halves")
        return _POOL


def _forget_pool() -> None:
    """In a child made by ``fork``: the parent's worker threads are not in it, so its pool
    would queue work that nothing runs; the child makes its own on first use."""
    global _POOL, _POOL_LOCK
    _POOL, _POOL_LOCK = None, threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_forget_pool)


def in_halves(work: Callable[[slice], _T], n: int, least: int) -> list[_T]:
    """``[work(slice(0, n // 2)), work(slice(n // 2, n))]``, the second on a worker thread at
    the same time; ``[work(slice(0, n))]`` when ``n < least`` (a thread costs tens of
    microseconds: only work long enough gains) or the process has one core. An exception in
    either half is raised here, after both have ended.

    Parameters
    ----------
    work : callable
        ``work(rows) -> result`` for a ``slice`` of rows; halves must write disjoint outputs
        and give the same bits as one pass (module docstring).
    n : int
        The number of rows, ``>= 0``.
    least : int
        The smallest ``n`` worth splitting (below it, and for ``n < 2``, one pass).

    Returns
    -------
    list
        The results in row order: two (first half, second half) or one (the whole range).
    """
    if n < least or n < 2 or _CORES < 2:
        return [work(slice(0, n))]
    mid = n // 2
    second = _pool().submit(work, slice(mid, n))
    try:
        first = work(slice(0, mid))
    except BaseException:
        second.exception()  # both halves end before the first one's error is raised
        raise
    return [first, second.result()]
