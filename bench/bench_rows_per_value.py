"""Top destinations by flights: ``max_rows_per_value`` on flights-like data (units hold many rows).

Run: ``python bench/bench_rows_per_value.py [--trials 20] [--seed 0]``.

A seeded generator makes NYC-flights-like data: 4,000 planes (the privacy unit), each with a
Zipf-like number of flights between 1 and 575, over 100 destinations. Which destinations a
plane serves (up to 8, by a popularity "by planes") and how its flights split among them (a
different, independent popularity "by flights per plane") are drawn separately, so the top
destinations by planes and by flights differ, as in the real data.

For ``r`` in {1, 10, 50} (``max_contributions = 4``, epsilon 1, the 100 destinations as public
candidates, ``mechanism="auto"``) it runs ``top_k(k=10)`` ``--trials`` times (a fresh salt and
noise each time) and prints the precision against the true top 10 by flights (no bounding)
and by planes (distinct planes), with a 95% interval, and the median wall time of one call
with its ratio to ``r = 1`` in the same run. Then the scores alone
(``candidate_scores``) on the same rows as a Parquet file (the dictionary plan where ``m > 1``
or ``r > 1``; the SQL plan for ``m = r = 1``), ``m`` in {1, 4} and ``r`` in {1, 10, 50}:
medians of ``--trials`` interleaved rounds and the ratio to ``r = 1`` at the same ``m``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import dpselect as dp
from dpselect.data.query import Query, UnitRule
from dpselect.data.tables import open_table
from dpselect.sampling import InsecureSeededSource

PLANES, MAX_FLIGHTS, DESTINATIONS = 4000, 575, 100


def flights(seed: int) -> pd.DataFrame:
    """The seeded flights-like table ``(tailnum, dest)``."""
    rng = np.random.default_rng(seed)
    dests = np.array([f"D{i:03d}" for i in range(DESTINATIONS)], dtype=object)
    by_planes = 1 / np.arange(1, DESTINATIONS + 1) ** 0.9
    by_planes /= by_planes.sum()
    per_plane = (1 / np.arange(1, DESTINATIONS + 1) ** 1.2)[rng.permutation(DESTINATIONS)]
    n_flights = np.minimum(MAX_FLIGHTS, np.ceil(MAX_FLIGHTS * rng.random(PLANES) ** 3)).astype(int)
    planes, dest = [], []
    for plane in range(PLANES):
        served = rng.choice(DESTINATIONS, rng.integers(1, 9), replace=False, p=by_planes)
        weights = per_plane[served] / per_plane[served].sum()
        picks = rng.choice(served, n_flights[plane], p=weights)
        planes.append(np.full(len(picks), plane))
        dest.append(picks)
    return pd.DataFrame({"tailnum": np.concatenate(planes), "dest": dests[np.concatenate(dest)]})


def precision(found: list[str], truth: set[str]) -> float:
    return len(set(found) & truth) / len(truth)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    df = flights(args.seed)
    candidates = sorted(df["dest"].unique())
    by_flights = set(df["dest"].value_counts().index[:10])
    by_planes = set(df.drop_duplicates().groupby("dest").size().sort_values(ascending=False)
                    .index[:10])  # fmt: skip
    print(f"{len(df):,} flights, {df['tailnum'].nunique():,} planes, {len(candidates)} dests; "
          f"top 10 by flights and by planes share {len(by_flights & by_planes)}")  # fmt: skip
    rs = (1, 10, 50)
    p_flights: dict[int, list[float]] = {r: [] for r in rs}
    p_planes: dict[int, list[float]] = {r: [] for r in rs}
    times: dict[int, list[float]] = {r: [] for r in rs}
    mechanism: dict[int, str] = {}

    def run(r: int, seed: int) -> dp.TopKResult:
        return dp.Session(
            df,
            privacy_unit="tailnum",
            contributions=dp.Contributions(values_per_unit=4, rows_per_value=r),
            source=InsecureSeededSource(seed),
        ).top_k("dest", 10, epsilon=1.0, candidates=candidates)

    run(1, 0)  # warm-up (imports, first connection), not timed
    for trial in range(args.trials):  # the values of r in turns: same load for each
        for r in rs:
            start = time.perf_counter()
            result = run(r, 1000 * r + trial)
            times[r].append(time.perf_counter() - start)
            p_flights[r].append(precision(result.candidates, by_flights))
            p_planes[r].append(precision(result.candidates, by_planes))
            mechanism[r] = result.parameters["mechanism"]
    base = statistics.median(times[1])
    for r in rs:
        median = statistics.median(times[r])
        found = p_flights[r]
        half = 1.96 * statistics.stdev(found) / len(found) ** 0.5
        print(f"r = {r:>2}: precision vs top 10 by flights {statistics.mean(found):.3f} "
              f"+- {half:.3f}, by planes {statistics.mean(p_planes[r]):.3f}; {mechanism[r]}; "
              f"median {median * 1000:.0f} ms, {median / base:.2f}x r = 1")  # fmt: skip
    scores_alone(df, candidates, args.trials)


def scores_alone(df: pd.DataFrame, candidates: list[str], trials: int) -> None:
    """The scores' time on a Parquet file, per (m, r), interleaved."""
    cells = [(m, r) for m in (1, 4) for r in (1, 10, 50)]
    times: dict[tuple[int, int], list[float]] = {cell: [] for cell in cells}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "flights.parquet"
        df.to_parquet(path, index=False)
        table = open_table(path)
        table.scores(
            Query("dest", UnitRule(privacy_unit="tailnum", values_per_unit=1, salt=0)), candidates
        )  # warm-up
        for trial in range(trials):
            for m, r in cells:
                start = time.perf_counter()
                table.scores(
                    Query(
                        "dest",
                        UnitRule(
                            privacy_unit="tailnum", values_per_unit=m, rows_per_value=r, salt=trial
                        ),
                    ),
                    candidates,
                )
                times[m, r].append(time.perf_counter() - start)
    for m, r in cells:
        median = statistics.median(times[m, r])
        base = statistics.median(times[m, 1])
        print(f"scores alone, Parquet, m = {m}, r = {r:>2}: median {median * 1000:.0f} ms, "
              f"{median / base:.2f}x r = 1")  # fmt: skip


if __name__ == "__main__":
    main()
