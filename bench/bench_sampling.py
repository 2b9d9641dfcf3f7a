"""Speed and memory of the exact noisy argmax / top-k, against unsafe NumPy and peers.

Run: ``python bench/bench_sampling.py [--n 10000000] [--repeats 5]``. The dpselect rows use
the default source (ChaCha20 keyed from the OS) except the one marked ``source os``, which
reads ``os.urandom`` for every word. Prints one table: the median of ``repeats`` runs of each
row (interleaved: each round runs every row once) and its ratio to the unsafe NumPy baseline
timed in the same process, its CPU time (all threads; less sensitive than wall time to other
load on a shared machine), then the peak memory beyond the input of each row, measured in a
fresh child process (peak resident set size during the call minus the resident size before
it, Linux). The OpenDP rows appear when the bench extra is installed
(``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from dpselect.sampling import noisy_argmax, noisy_top_k, source_by_name


def unsafe_argmax(s: np.ndarray, scale: float) -> int:
    return int(np.argmax(s / scale + np.random.default_rng().gumbel(size=s.size)))


def unsafe_top_k(s: np.ndarray, scale: float, k: int) -> np.ndarray:
    keys = s / scale + np.random.default_rng().gumbel(size=s.size)
    top = np.argpartition(keys, s.size - k)[s.size - k :]
    return top[np.argsort(-keys[top])]


def opendp_rows(n: int) -> dict[str, Callable[[np.ndarray], Any]]:
    try:
        import opendp.prelude as dp
    except ImportError:
        return {}
    dp.enable_features("contrib")
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=n)
    metric = dp.linf_distance(T=float)
    m1 = dp.m.make_noisy_max(domain, metric, dp.zero_concentrated_divergence(), scale=1.0)
    m10 = dp.m.make_noisy_top_k(domain, metric, dp.zero_concentrated_divergence(), k=10, scale=1.0)
    return {
        "OpenDP 0.16 make_noisy_max (zCDP, f64)": lambda s: m1(s.tolist()),
        "OpenDP 0.16 make_noisy_top_k (k=10)": lambda s: m10(s.tolist()),
    }


def rows(n: int, peers: bool = True) -> dict[str, tuple[str, Callable[[np.ndarray], Any]]]:
    """name -> (baseline name, function of the scores)."""
    table: dict[str, tuple[str, Callable[[np.ndarray], Any]]] = {
        "unsafe argmax (np gumbel)": ("", lambda s: unsafe_argmax(s, 1.0)),
        "dpselect noisy_argmax gumbel": (
            "unsafe argmax (np gumbel)",
            lambda s: noisy_argmax(s, 1.0),
        ),
        "dpselect noisy_argmax gumbel, source os": (
            "unsafe argmax (np gumbel)",
            lambda s: noisy_argmax(s, 1.0, source=source_by_name("os")),
        ),
        "dpselect noisy_argmax exponential": (
            "unsafe argmax (np gumbel)",
            lambda s: noisy_argmax(s, 1.0, noise="exponential"),
        ),
        "dpselect noisy_argmax laplace": (
            "unsafe argmax (np gumbel)",
            lambda s: noisy_argmax(s, 1.0, noise="laplace"),
        ),
        "unsafe top-1000 (gumbel+argpartition)": ("", lambda s: unsafe_top_k(s, 1.0, 1000)),
        "dpselect noisy_top_k k=1000": (
            "unsafe top-1000 (gumbel+argpartition)",
            lambda s: noisy_top_k(s, 1.0, 1000),
        ),
    }
    for name, fn in (opendp_rows(n) if peers else {}).items():
        table[name] = ("unsafe argmax (np gumbel)", fn)
    return table


def scores(n: int) -> np.ndarray:
    s = np.random.default_rng(0).standard_normal(n)
    s *= 10.0  # in place: no temporary that would inflate the memory baseline
    return s


PEER_REPEATS = 1  # the peers take tens of seconds at n = 10^7


def median_time(fn: Callable[[np.ndarray], Any], s: np.ndarray, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(s)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _peak_child(name: str, n: int, out: Any) -> None:
    s = scores(n)
    fn = rows(n)[name][1]
    if name.startswith("dpselect"):
        rows(1000)[name][1](scores(1000))  # load lazily imported modules before measuring
    before = _status_kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak (VmHWM) to the current resident size
    fn(s)
    out.put((_status_kib("VmHWM") - before) / 1024.0)


def _status_kib(field: str) -> int:
    """A field of /proc/self/status in KiB (ru_maxrss would carry the parent's peak over exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def peak_memory_mib(name: str, n: int) -> float:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_peak_child, args=(name, n, queue))
    proc.start()
    value = float(queue.get())
    proc.join()
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=10**7)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--no-peers", action="store_true", help="skip the slow OpenDP rows")
    args = parser.parse_args()
    s = scores(args.n)
    table = rows(args.n, peers=not args.no_peers)
    print(
        f"n = {args.n:,}, median of {args.repeats} interleaved rounds (peers: {PEER_REPEATS} run); "
        f"{platform.machine()}, {mp.cpu_count()} cores"
    )
    # Interleaved: every round times each row once, so a load change on a shared machine hits
    # the baseline and the rows compared with it alike.
    times: dict[str, list[float]] = {name: [] for name in table}
    cpu: dict[str, list[float]] = {name: [] for name in table}
    for round_ in range(args.repeats):
        for name, (_, fn) in table.items():
            if name.startswith("OpenDP") and round_ >= PEER_REPEATS:
                continue
            c0 = time.process_time()
            times[name].append(median_time(fn, s, 1))
            cpu[name].append(time.process_time() - c0)
    medians = {name: statistics.median(ts) for name, ts in times.items()}
    cpus = {name: statistics.median(ts) for name, ts in cpu.items()}
    print(f"{'row':42} {'median s':>9} {'ratio':>7} {'cpu s':>7} {'vs':>40} {'peak MiB':>9}")
    for name, (baseline, _) in table.items():
        ratio = f"{medians[name] / medians[baseline]:.2f}x" if baseline else "1.00x"
        mem = "" if args.no_memory else f"{peak_memory_mib(name, args.n):9.1f}"
        print(
            f"{name:42} {medians[name]:9.3f} {ratio:>7} {cpus[name]:7.3f} "
            f"{baseline or '(baseline)':>40} {mem}"
        )


if __name__ == "__main__":
    main()
