"""Hypothesis selection with a privacy unit against the row-level selection, same data.

The baseline is ``select_hypothesis`` without a unit (each example its own unit: mistakes
counted row by row). The unit path keeps at most ``r`` examples per unit
(dpselect/data/kept_examples.py) after computing each example's mistake vector. Both run in
the same process on the same examples (``--units`` people holding the examples, threshold
hypotheses on NumPy arrays); the script prints the median times and their ratio.

    python bench/bench_hypothesis_units.py                # 10^5 examples, 101 hypotheses
    python bench/bench_hypothesis_units.py --examples 1e6 --units 1e4 --max-rows 4
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from dpselect.recipes import select_hypothesis, threshold_hypotheses
from dpselect.sampling import InsecureSeededSource


def timed(run, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=float, default=1e5)
    parser.add_argument("--units", type=float, default=1e4)
    parser.add_argument("--hypotheses", type=int, default=101)
    parser.add_argument("--max-rows", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n, units = int(args.examples), int(args.units)
    rng = np.random.default_rng(1)
    X = rng.random(n)
    y = (X >= 0.37).astype(np.int64)
    people = rng.integers(0, units, n)
    hyps = threshold_hypotheses(np.round(np.linspace(0, 1, args.hypotheses), 6))

    def rows() -> None:
        select_hypothesis(X, y, hyps, epsilon=1.0, source=InsecureSeededSource(2))

    def per_unit() -> None:
        select_hypothesis(X, y, hyps, epsilon=1.0, source=InsecureSeededSource(2),
                          privacy_unit=people, max_rows=args.max_rows)  # fmt: skip

    base = timed(rows, args.repeats)
    unit = timed(per_unit, args.repeats)
    print(f"{n} examples, {units} units, {args.hypotheses} hypotheses, r = {args.max_rows}")
    print(f"rows (baseline): {base:.3f} s")
    print(f"privacy_unit:    {unit:.3f} s")
    print(f"ratio unit / rows: {unit / base:.2f}")


if __name__ == "__main__":
    main()
