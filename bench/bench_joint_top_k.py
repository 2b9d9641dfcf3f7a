"""Joint exponential top-k against one-shot Gumbel top-k on the same counts, one run.

Run: ``python bench/bench_joint_top_k.py [--sizes 10000 100000 1000000] [--ks 10 100]
[--epsilons 0.1 1 10] [--repeats 3]``.

For each size ``d`` a Zipf-like integer count vector (fixed seed): ``10 d`` draws of a
Zipf(1.2) rank, those up to ``d`` counted per rank, the candidates shuffled (ties at the low
counts, gaps at the top). For each ``k`` and ``epsilon`` (pure DP, ``d_in = 1``, monotonic):

- joint: ``make_joint_top_k`` with ``scale = 2 / epsilon`` (the map gives ``epsilon``);
- one-shot: ``make_noisy_top_k(..., noise="gumbel")`` with ``scale = k / epsilon``
  (``k`` compositions of ``1 / scale``, the same ``epsilon``).

Prints the median time of ``repeats`` calls of each (a call includes everything the
measurement does on the vector), their ratio (the target of issue 43: at most 5x one-shot at
``d = 10^6``, ``k = 100``) and the paper's error measure ``E(s) = max_i (c_(i) - c_{s_i})``
of each output, averaged over the repeats.
"""

from __future__ import annotations

import argparse
import statistics
import time
from fractions import Fraction

import numpy as np

from dpselect.core import LInfDistance, MaxDivergence, atom_domain, vector_domain
from dpselect.mechanisms import make_joint_top_k, make_noisy_top_k

SEED = 20261207


def counts_for(d: int) -> np.ndarray:
    rng = np.random.default_rng(SEED + d)
    ranks = rng.zipf(1.2, 10 * d)
    counts = np.bincount(ranks[ranks <= d] - 1, minlength=d).astype(np.int64)
    rng.shuffle(counts)
    return counts


def error(counts: np.ndarray, s: np.ndarray) -> int:
    top = np.sort(counts)[::-1][: len(s)]
    return int((top - counts[s]).max())


def timed(measurement, counts, repeats):
    times, errs = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        out = measurement(counts)
        times.append(time.perf_counter() - start)
        errs.append(error(counts, np.asarray(out)))
    return statistics.median(times), statistics.mean(errs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--ks", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 1.0, 10.0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    domain, metric = vector_domain(atom_domain(int)), LInfDistance(monotonic=True)
    print(
        f"{'d':>8} {'k':>4} {'eps':>5} {'joint s':>9} {'gumbel s':>9} {'ratio':>6} "
        f"{'E joint':>8} {'E gumbel':>9} {'distinct':>8}"
    )
    for d in args.sizes:
        counts = counts_for(d)
        distinct = len(np.unique(counts))
        for k in args.ks:
            for eps in args.epsilons:
                e = Fraction(eps)
                joint = make_joint_top_k(domain, metric, MaxDivergence(), k=k, scale=2 / e)
                gumbel = make_noisy_top_k(
                    domain, metric, MaxDivergence(), k=k, scale=k / e, noise="gumbel"
                )
                assert joint.map(1) <= eps and gumbel.map(1) <= eps
                gumbel(counts)  # warm up (thread pool, imports)
                tj, ej = timed(joint, counts, args.repeats)
                tg, eg = timed(gumbel, counts, args.repeats)
                print(
                    f"{d:>8} {k:>4} {eps:>5g} {tj:>9.4f} {tg:>9.4f} {tj / tg:>6.1f} "
                    f"{ej:>8.1f} {eg:>9.1f} {distinct:>8}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
