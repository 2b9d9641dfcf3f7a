"""Deciles per person on flights-like data: error and time against the row-level quantile.

Run: ``python bench/bench_quantiles_units.py [--planes 4000] [--runs 20] [--epsilon 1]``.

The data (a seeded generator shaped like NYC flights 2013, written to Parquet): ``planes``
planes (the person, ``tail``), each with between 1 and 575 flights (a lognormal count, so a
few planes hold hundreds of rows), a per-plane offset, and departure delays in whole minutes
(mostly small, a long right tail: ties). Released: the deciles of ``delay`` with bounds (-60,
600) at ``epsilon``, by ``quantile``'s default mechanism:

- **row-level** (no privacy unit): epsilon protects one flight only (about 575x weaker per
  plane than it reads);
- **per plane** with ``max_rows`` 1, 5 and ``"auto"`` (chosen privately with a quarter of
  epsilon): epsilon protects all of one plane's flights.

Error: the mean absolute difference between the released deciles and the deciles of all the
rows (what the analyst asks for; per plane this includes the bias of keeping at most ``r``
rows of each plane), averaged over ``runs`` runs with a 95% normal interval. Time: median of
the runs' wall times, and the ratio to the row-level call in the same run; and the engine's
part alone (reading the rows the mechanism gets, ``Engine.quantile_values``: every row, or
the rows each plane keeps) against the row-level read, median of 5.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dpselect.data.query import Query
from dpselect.data.tables import open_table
from dpselect.planning.contributions import Contributions
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes import quantile
from dpselect.sampling import InsecureSeededSource
from tests.engine_rules import unit_rule

DECILES = [i / 10 for i in range(1, 10)]
BOUNDS = (-60.0, 600.0)


def flights(planes: int, seed: int = 2013) -> pd.DataFrame:
    """Seeded flights-like rows ``(tail, delay)``."""
    rng = np.random.default_rng(seed)
    counts = np.clip(np.round(rng.lognormal(4.0, 1.1, planes)), 1, 575).astype(np.int64)
    tail = np.repeat(np.arange(planes), counts)
    offset = np.repeat(rng.normal(0.0, 8.0, planes), counts)
    late = rng.random(len(tail)) < 0.35
    delay = np.where(late, rng.exponential(45.0, len(tail)), rng.normal(-4.0, 4.0, len(tail)))
    delay = np.round(delay + offset)
    return pd.DataFrame({"tail": tail.astype(np.int64), "delay": delay})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--planes", type=int, default=4000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--epsilon", type=float, default=1.0)
    args = parser.parse_args()
    frame = flights(args.planes)
    truth = np.quantile(frame["delay"].to_numpy(), DECILES)
    sizes = frame.groupby("tail").size()
    print(
        f"{len(frame)} flights, {args.planes} planes, flights per plane: median "
        f"{int(sizes.median())}, max {int(sizes.max())}; true deciles {truth.round(1).tolist()}"
    )
    configs: dict[str, dict[str, object]] = {
        "row-level (protects one flight)": {},
        "per plane, max_rows=1": {
            "privacy_unit": "tail",
            "contributions": Contributions(values_per_unit=1),
        },
        "per plane, max_rows=5": {
            "privacy_unit": "tail",
            "contributions": Contributions(values_per_unit=5),
        },
        "per plane, max_rows=auto": {
            "privacy_unit": "tail",
            "contributions": Contributions(values_per_unit="auto"),
        },
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "flights.parquet")
        frame.to_parquet(path)
        quantile(path, quantile_request("delay", DECILES, args.epsilon, bounds=BOUNDS))  # warm up
        results = {}
        for name, kw in configs.items():
            errors, times, chosen = [], [], []
            for run in range(args.runs):
                start = time.perf_counter()
                result = quantile(
                    path,
                    quantile_request("delay", DECILES, args.epsilon, bounds=BOUNDS, **kw),
                    source=InsecureSeededSource(run),
                )
                times.append(time.perf_counter() - start)
                errors.append(float(np.mean(np.abs(np.asarray(result.values) - truth))))
                chosen.append(result.parameters.get("max_rows"))
            results[name] = (errors, times, chosen)
        table = open_table(path)
        reads = {}
        for r in (None, 1, 5, 256):
            kw = {} if r is None else {"privacy_unit": "tail", "max_rows": r, "salt": 1}
            ts = []
            for _ in range(5):
                start = time.perf_counter()
                table.quantile_values(
                    Query("delay", unit_rule(**kw)), candidates=None, bounds=BOUNDS, resolution=None
                )
                ts.append(time.perf_counter() - start)
            reads[r] = statistics.median(ts)
    base = statistics.median(results["row-level (protects one flight)"][1])
    print(f"deciles at epsilon {args.epsilon}, bounds {BOUNDS}, {args.runs} runs each")
    print(f"{'':34s} {'error':>8s} {'95% CI':>18s} {'time s':>8s} {'x row-level':>12s}")
    for name, (errors, times, chosen) in results.items():
        mean = statistics.fmean(errors)
        half = 1.96 * statistics.stdev(errors) / len(errors) ** 0.5
        t = statistics.median(times)
        extra = ""
        if name.endswith("auto"):
            extra = f"  chosen max_rows: {sorted(set(chosen))}"
        print(
            f"{name:34s} {mean:8.3f} [{mean - half:7.3f}, {mean + half:7.3f}] {t:8.3f} "
            f"{t / base:12.2f}{extra}"
        )
    print("reading the rows the mechanism gets (Engine.quantile_values), median of 5:")
    for r, t in reads.items():
        name = "every row" if r is None else f"kept rows, max_rows={r}"
        print(f"  {name:28s} {t:8.3f} s  {t / reads[None]:6.2f}x the row-level read")


if __name__ == "__main__":
    main()
