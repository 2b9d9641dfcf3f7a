"""Resident memory of a process, in MiB (``2^20`` bytes), for the bench scripts.

Linux reports both figures in KiB (``/proc/self/status``'s ``VmRSS: ... kB``,
``getrusage``'s ``ru_maxrss`` and ``/usr/bin/time -v``'s "Maximum resident set size
(kbytes)" are all units of 1024 bytes), so a MiB is 1024 of them.
"""

from __future__ import annotations

import resource
from pathlib import Path

KIB_PER_MIB = 1024


def rss_mib() -> float:
    """This process's resident memory now (``VmRSS``), in MiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / KIB_PER_MIB
    return float("nan")  # pragma: no cover - Linux only


def peak_rss_mib() -> float:
    """This process's peak resident memory so far (``ru_maxrss``), in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / KIB_PER_MIB


def peak_rss_mib_of(pid: int) -> float:
    """Another process's peak resident memory (``VmHWM``: a driver JVM), in MiB; NaN when
    unreadable (the process is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / KIB_PER_MIB
    except OSError:
        pass
    return float("nan")


def kib_to_mib(kib: float) -> float:
    """A figure in KiB (``/usr/bin/time -v``) in MiB."""
    return kib / KIB_PER_MIB
