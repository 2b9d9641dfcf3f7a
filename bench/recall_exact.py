"""The exact expected recall@10 of thresholding-then-top-k on bench_utility's data sets.

Run: ``python bench/recall_exact.py``.

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
    hist: dict[str, int], b: float, tau: int, k: int = 10, ties: str = "random"
) -> float:
    """E[recall@k] of thresholding at scale ``b`` and threshold ``tau`` (module docstring)."""
    values = sorted(hist)
    n = np.array([hist[v] for v in values], dtype=np.int64)
    order = sorted(range(len(values)), key=lambda i: -n[i])
    kth = n[order[k - 1]]
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
    for i in range(len(values)):
        if n[i] < kth:
            continue
        others = np.array([j for j in range(len(values)) if j != i])
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


def main() -> None:
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
