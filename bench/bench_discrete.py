"""Throughput of the exact discrete Laplace and discrete Gaussian samplers.

Run: ``python bench/bench_discrete.py [--n 1000000] [--repeats 5]``. Prints one table: samples
per second (``n`` samples per call, median of ``repeats`` calls, default CSPRNG source) for
scales 1, 10 and 1000 (``sigma`` for the Gaussian, so ``sigma2 = sigma^2``), and the ratio to
the unsafe NumPy float sampler (``np.rint(rng.laplace(...))`` / ``np.rint(rng.normal(...))``,
PCG64) timed in the same process. OpenDP's exact samplers (``make_laplace`` /
``make_gaussian`` on an int vector) are added on ``n / 10`` samples when the bench extra is
installed, unless ``--no-opendp``.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from dpselect.sampling.discrete import sample_discrete_gaussian, sample_discrete_laplace

SCALES = (1, 10, 1000)


def rate(fn: Callable[[int], Any], n: int, repeats: int) -> float:
    """Samples per second: ``n`` over the median time of ``repeats`` calls (after a warm-up)."""
    fn(min(n, 1000))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(n)
        times.append(time.perf_counter() - start)
    return n / statistics.median(times)


def opendp_samplers() -> dict[str, Callable[[float, int], Any]]:
    try:
        import opendp.prelude as dp
    except ImportError:
        return {}
    dp.enable_features("contrib")

    def laplace(scale: float, n: int) -> Any:
        space = dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int)
        return dp.m.make_laplace(*space, scale=scale)([0] * n)

    def gaussian(scale: float, n: int) -> Any:
        space = dp.vector_domain(dp.atom_domain(T=int)), dp.l2_distance(T=int)
        return dp.m.make_gaussian(*space, scale=scale)([0] * n)

    return {"laplace": laplace, "gaussian": gaussian}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-opendp", action="store_true")
    args = parser.parse_args()
    n, repeats = args.n, args.repeats
    rng = np.random.default_rng()
    opendp = {} if args.no_opendp else opendp_samplers()

    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print(f"n = {n:,} per call, median of {repeats}; samples per second (M = 10^6)\n")
    header = f"{'law':<10}{'scale':>7}{'dpselect exact':>16}{'numpy unsafe':>14}{'ratio':>8}"
    if opendp:
        header += f"{'OpenDP (n/10)':>15}"
    print(header)
    for law in ("laplace", "gaussian"):
        for scale in SCALES:
            if law == "laplace":
                exact = rate(lambda m, s=scale: sample_discrete_laplace(s, m), n, repeats)
                unsafe = rate(lambda m, s=scale: np.rint(rng.laplace(0.0, s, m)), n, repeats)
            else:
                exact = rate(lambda m, s=scale: sample_discrete_gaussian(s * s, m), n, repeats)
                unsafe = rate(lambda m, s=scale: np.rint(rng.normal(0.0, s, m)), n, repeats)
            line = (
                f"{law:<10}{scale:>7}{exact / 1e6:>14.2f} M{unsafe / 1e6:>12.2f} M"
                f"{exact / unsafe:>8.2f}"
            )
            if opendp:
                small = max(1, n // 10)
                peer = rate(lambda m, s=scale, f=opendp[law]: f(float(s), m), small, repeats)
                line += f"{peer / 1e6:>13.3f} M"
            print(line)


if __name__ == "__main__":
    main()
