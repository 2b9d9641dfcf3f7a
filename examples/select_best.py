"""A private selection, end to end: the most common diagnosis in a synthetic dataset.

Run: ``python examples/select_best.py``. Each simulated patient contributes one row, so every
count moves by at most 1 between neighbouring datasets, all in the same direction
(monotonic). The exponential mechanism (report-noisy-max with Gumbel noise, seed 001) picks
the most common diagnosis with epsilon = 0.5, exactly, from the OS CSPRNG.
"""

from __future__ import annotations

import numpy as np

from dpselect.core import (
    LInfDistance,
    ZeroConcentratedDivergence,
    atom_domain,
    binary_search_param,
    vector_domain,
)
from dpselect.mechanisms import make_noisy_top_k, make_report_noisy_max_gumbel

CANDIDATES = ["influenza", "migraine", "asthma", "bronchitis", "eczema"]  # public list


def synthetic_counts(n_patients: int = 10_000) -> np.ndarray:
    """Counts of each candidate diagnosis in a synthetic population (the private data)."""
    rng = np.random.default_rng(2026)  # synthetic data only, not the mechanism's noise
    rows = rng.choice(len(CANDIDATES), size=n_patients, p=[0.30, 0.28, 0.2, 0.12, 0.1])
    return np.bincount(rows, minlength=len(CANDIDATES))


def main() -> None:
    epsilon = 0.5
    domain = vector_domain(atom_domain(int))
    metric = LInfDistance(monotonic=True)  # one row moves one count, upward or downward
    # The smallest scale whose privacy loss at d_in = 1 is at most epsilon:
    scale = binary_search_param(
        lambda s: make_report_noisy_max_gumbel(domain, metric, s), d_in=1, d_out=epsilon
    )
    most_common = make_report_noisy_max_gumbel(domain, metric, scale)
    counts = synthetic_counts()
    print(f"scale = {scale:.6g}, privacy loss = {most_common.map(1):.6g} (epsilon)")
    print(f"most common diagnosis (private): {CANDIDATES[most_common(counts)]}")
    top3 = make_noisy_top_k(domain, metric, ZeroConcentratedDivergence(), k=3, scale=scale)
    ranked = [CANDIDATES[i] for i in top3(counts)]
    print(f"top 3 (private, one-shot Gumbel): {ranked}, zCDP rho = {top3.map(1):.6g}")


if __name__ == "__main__":
    main()
