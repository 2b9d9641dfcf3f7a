"""The exact expected recall@10 of thresholding-then-top-k on bench_utility's data sets.

Run: ``python bench/recall_exact.py`` (``--units [--draws D]``: the privacy-unit cells,
:func:`units_main`).

Laplace thresholding (every count gets independent discrete Laplace noise of scale ``b``,
values with ``count + Z >= tau`` are kept, the 10 largest noisy counts are returned) is the
mechanism of dpselect's unknown-domain default at ``max_contributions = 1`` *and* of OpenDP's
``make_count_by >> then_laplace_threshold`` as ``bench_utility.py`` calibrates it (the same
``b = 1/epsilon`` and the same ``tau``, printed below). Its expected recall is computed here
without sampling: a value ``i`` with noisy count ``y >= tau`` is returned when fewer than 10
others are placed before it; each other value ``j`` independently beats it (``n_j + Z_j > y``),
ties it (``= y``) or not, so the number placed before ``i`` is a Poisson-binomial convolution
over the others, with ties broken in uniformly random order (dpselect's ``rank_released``)
or by value (the bench's old ``sorted(..., key=-count)`` on sorted values).

This is analysis in float64 (errors far below the bench's intervals), not a mechanism.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_utility import airports, zipf_sample  # noqa: E402

from dpselect.mechanisms.partition_selection import threshold_plan  # noqa: E402


def expected_recall(
    hist: dict[str, int],
    b: float,
    tau: int,
    k: int = 10,
    ties: str = "random",
    hits: set[str] | None = None,
) -> float:
    """E[recall@k] of thresholding at scale ``b`` and threshold ``tau`` (module docstring).

    ``hits``: the values that count as found (default: those of ``hist`` at least its ``k``-th
    count); with privacy units, the top ``k`` of the unbounded counts while ``hist`` holds the
    bounded ones."""
    values = sorted(hist)
    n = np.array([hist[v] for v in values], dtype=np.int64)
    order = sorted(range(len(values)), key=lambda i: -n[i])
    kth = n[order[k - 1]]
    wanted = None if hits is None else {i for i, v in enumerate(values) if v in hits}
    q = math.exp(-1 / b)
    width = math.ceil(b * 45) + 2  # P(|Z| > width) < e^-45
    z = np.arange(-width, width + 1)
    pmf = (1 - q) / (1 + q) * q ** np.abs(z)
    cdf = np.cumsum(pmf)  # P(Z <= z)

    def p_le(x: np.ndarray) -> np.ndarray:  # P(Z <= x), x integer array
        idx = np.clip(x + width, -1, 2 * width)
        out = np.where(idx < 0, 0.0, cdf[np.clip(idx, 0, 2 * width)])
        return np.where(x >= width, 1.0, out)

    total = 0.0
    everyone = np.arange(len(values))
    for i in range(len(values)):
        if (n[i] < kth) if wanted is None else (i not in wanted):
            continue
        others = everyone[everyone != i]
        prob_in = 0.0
        for zi, pz in zip(z.tolist(), pmf.tolist(), strict=True):
            y = int(n[i]) + zi
            if y < tau or pz < 1e-16:
                continue
            beat = 1 - p_le(y - n[others])  # n_j + Z_j > y
            tie = p_le(y - n[others]) - p_le(y - 1 - n[others])
            if ties == "value":  # j is placed before i when it ties and sorts first
                beat = beat + tie * (others < i)
                tie = np.zeros_like(tie)
            live = (beat + tie > 1e-18) & (beat < 1 - 1e-18)
            sure = int(np.sum(beat >= 1 - 1e-18))
            if sure >= k:
                continue
            # law of (beats capped at k, ties) over the other values, independent
            m = int(np.sum(live & (tie > 0))) + 1
            dist = np.zeros((k + 1, m + 1))
            dist[min(sure, k), 0] = 1.0
            for pb, pt in zip(beat[live].tolist(), tie[live].tolist(), strict=True):
                new = dist * (1 - pb - pt)
                new[1:, :] += dist[:-1, :] * pb
                new[k, :] += dist[k, :] * pb  # capped: still >= k
                new[:, 1:] += dist[:, :-1] * pt
                dist = new
            bb, tt = np.meshgrid(np.arange(k + 1), np.arange(m + 1), indexing="ij")
            place = np.minimum((k - bb) / (tt + 1), 1.0)  # P(i's random place among ties < k - b)
            prob_in += pz * float((dist * place).sum())
        total += prob_in
    return min(total, k) / k


def units_main(draws: int) -> None:
    """``--units``: bench_utility's unit cells (flights top-10, search log top-50, ``c = 4``
    values per person, delta 1e-6). For each of ``draws`` bounded histograms (each person keeps
    a uniformly random subset of ``c`` values: the law of the salted rule), the exact expected
    recall against the unbounded top ``k`` of Laplace thresholding at dpselect's threshold and
    at OpenDP's (``bench_utility.opendp_unknown_units``: the same scale ``c / epsilon``, its
    least threshold plus the one its map is short by). On the same histogram and noise a lower
    threshold releases a superset whose extra values rank below every value released by both,
    so the recall with the lower threshold is at least the other's, run by run."""
    import opendp.prelude as dp
    from bench_utility import flights_planes, zipf_search_log

    dp.enable_features("contrib")
    t = dp.t.make_count_by(dp.vector_domain(dp.atom_domain(T=str)), dp.symmetric_distance(), TV=int)

    def opendp_threshold(scale: float, c: int, delta: float) -> int:
        def d(thr: int) -> float:
            m = t >> dp.m.then_laplace_threshold(scale=scale, threshold=thr)
            return float(m.map(c)[1])

        lo, hi = c, c
        while d(hi) > delta:
            lo, hi = hi, hi * 2
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if d(mid) <= delta else (mid, hi)
        return hi + 1

    rng = np.random.default_rng(3)
    print("| data | k | eps | scale | dpselect threshold | OpenDP threshold | "
          f"E[recall], dpselect (mean of {draws}) | E[recall], OpenDP |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, loader, k in (("flights", flights_planes, 10), ("search log", zipf_search_log, 50)):
        persons = loader()
        full = Counter(v for p in persons for v in p)
        kth = sorted(full.values(), reverse=True)[k - 1]
        hits = {v for v, n in full.items() if n >= kth}
        bounded = []
        for _ in range(draws):
            kept = Counter()
            for p in persons:
                kept.update(p if len(p) <= 4 else rng.choice(p, 4, replace=False).tolist())
            bounded.append(dict(kept))
        for eps in (0.5, 1.0):
            plan = threshold_plan("laplace", eps, 1e-6, 4)
            theirs = opendp_threshold(4 / eps, 4, 1e-6)
            ours = [expected_recall(h, plan.scale, plan.threshold, k, hits=hits) for h in bounded]
            peer = [expected_recall(h, plan.scale, theirs, k, hits=hits) for h in bounded]
            print(f"| {name} | {k} | {eps:g} | {plan.scale:g} | {plan.threshold} | {theirs} | "
                  f"{np.mean(ours):.4f} | {np.mean(peer):.4f} |", flush=True)  # fmt: skip


def main() -> None:
    if "--units" in sys.argv:
        draws = int(sys.argv[sys.argv.index("--draws") + 1]) if "--draws" in sys.argv else 3
        units_main(draws)
        return
    data = {"airports by state": Counter(airports()), "Zipf 500 values": Counter(zipf_sample())}
    print("| data | eps | scale | threshold | E[recall@10], random ties | ties by value |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, hist in data.items():
        for eps in (0.1, 0.5, 1.0, 2.0):
            if eps < 0.5 and len(hist) > 100:  # 500 values at scale 10: too slow to sum here
                continue
            plan = threshold_plan("laplace", eps, 1e-6, 1)
            r = expected_recall(dict(hist), plan.scale, plan.threshold)
            f = expected_recall(dict(hist), plan.scale, plan.threshold, ties="value")
            print(f"| {name} | {eps:g} | {plan.scale:g} | {plan.threshold} | {r:.4f} | {f:.4f} |")


if __name__ == "__main__":
    main()
