"""The auto rule on integer columns: the 512-leaf tree on a small type grid against the joint
mechanism and the two trees by name, decile error in one run.

Run: ``python bench/bench_quantile_grid_tree.py [--runs 30] [--eps 0.1 1 4] [--only NAME]``.

Cells (``int64`` columns, one row a person unless said): five skewed values 10, 20, 50, 100,
200 and five equiprobable values 0, 250, ..., 1000 (n = 1,000, bounds (0, 1000): 1,001 grid
points); ten equiprobable values 0, 100, ..., 900 (n = 2,000), Poisson(3) (n = 3,000, bounds
(0, 100)) and three skewed values 0, 400, 1000 (n = 600), the held-out synthetic columns of
bench/bench_quantile_method_choice.py; and two columns whose grid has more than
``GRID_TREE_POINTS`` points, where the rule keeps the joint mechanism: the diamond prices
(53,940, bounds (0, 20000)) and the flight distances per plane (``r = 20``, bounds (0, 5000)).

Columns: ``auto`` (the default: a noisy row count at 1/20 of epsilon, then the 64-leaf tree if
``eps' N < 700``, else the 512-leaf tree on a grid of at most 1,024 points, else the joint
mechanism), the joint mechanism, the 64-leaf tree (8x2, the tree by name) and the 512-leaf
tree (8x3) by name; mean absolute error against the ``inverted_cdf`` deciles of all rows,
mean of ``runs`` seeded runs (``InsecureSeededSource(seed)``), 95% normal interval.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from bench_quantile_method_choice import DECILES, Cell, cells, held_out_cells, release

METHODS = [("auto", "auto", 2), ("joint", "joint", 2), ("tree 8x2", "tree", 2),
           ("tree 8x3", "tree", 3)]  # fmt: skip


def grid_cells(only: list[str] | None) -> list[Cell]:
    """The integer cells, held-out ones included (see the module docstring)."""
    names = ("five skewed", "five equiprobable", "diamonds", "distance")
    out = [c for c in cells(None) if any(n in c[0] for n in names)]
    out += [c for c in held_out_cells() if "int64" in c[0]]
    return [c for c in out if not only or any(o in c[0] for o in only)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--eps", type=float, nargs="*", default=[0.1, 1.0, 4.0])
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    print(f"## decile MAE, mean of {args.runs} seeded runs [95% interval]")
    print("| data | eps | " + " | ".join(m[0] for m in METHODS) + " |")
    print("|" + " --- |" * (len(METHODS) + 2))
    start = time.perf_counter()
    for cell in grid_cells(args.only):
        name, frame, column, _, _ = cell
        x = frame[column].dropna().to_numpy(dtype=float)
        truth = np.quantile(x, DECILES, method="inverted_cdf")
        for eps in args.eps:
            out = []
            for _, method, height in METHODS:
                errs = [float(np.mean(np.abs(np.array(release(cell, method, eps, s, height))
                                             - truth))) for s in range(args.runs)]  # fmt: skip
                mean = float(np.mean(errs))
                half = 1.96 * float(np.std(errs, ddof=1)) / np.sqrt(len(errs))
                out.append(f"{mean:.3g} [{mean - half:.3g}, {mean + half:.3g}]")
            print(f"| {name} | {eps:g} | " + " | ".join(out) + " |", flush=True)
    print(f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
