"""Regenerate the numbers and the picture of ``docs/examples.md``.

Run from the repository root: ``python -m tests.recipes.docs_numbers`` (about a minute).
Seeded sources make the runs reproducible; they are NOT private and are used here only to
measure the mechanisms' behaviour. The picture is written to ``docs/preview_hair_colour.png``.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dpselect.planning.price_request import price_request
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes import (
    best_price,
    pac_sample_size,
    plot_preview,
    preview,
    price_grid,
    quantile,
    select_hypothesis,
    threshold_hypotheses,
)
from dpselect.recipes.pricing import make_price_mechanism, revenue_scores
from dpselect.recipes.quantiles import make_candidate_quantile, make_continuous_quantile
from dpselect.sampling import InsecureSeededSource

DOCS = Path(__file__).resolve().parents[2] / "docs"
HAIR = {"dark": 500, "blond": 400, "brown": 400, "red": 400}


def hair_colour() -> None:
    print("## hair colour (seed 002)")
    row = preview(HAIR, 0.1).rows[0]
    print(f"bound 4 e^-5 = {row.bound_wrong:.6f}; exact P[not dark] = {row.p_wrong:.6f}")
    for eps in (0.01, 0.03, 0.05, 0.1, 0.2):
        r = preview(HAIR, eps).rows[0]
        print(f"  eps {eps:g}: P[dark] = {r.p_best:.4f}, bound on P[wrong] = {r.bound_wrong:.4g}")
    out = plot_preview(HAIR, DOCS / "preview_hair_colour.png", epsilon=[0.1])
    print(f"picture: {out}")


def pricing() -> None:
    print("## pricing (seed 003)")
    cents = [round(0.01 * k, 2) for k in range(1, 401)]
    grid = price_grid(prices=cents, max_price=4)
    valuations = [1.0, 1.0, 3.01]
    revenues = [float(u * grid.unit) for u in revenue_scores(valuations, grid)]
    for p in (1.0, 1.01, 3.01, 3.02):
        print(f"  revenue at ${p:.2f}: ${revenues[cents.index(p)]:.2f}")
    for eps in (1.0, 10.0, 100.0):
        row = preview(revenues, eps, sensitivity=4, monotonic=True).rows[0]
        expected = sum(p * r for p, r in zip(row.probabilities, revenues, strict=True))
        p_1 = row.probabilities[cents.index(1.0)]
        print(
            f"  eps {eps:g}: P[$3.01] = {row.p_best:.4f}, P[$1.00] = {p_1:.4f}, "
            f"E[revenue] = ${expected:.3f} (optimum $3.01)"
        )
    n, eps, runs = 10_000, 1.0, 1000
    rng = np.random.default_rng(3)
    v = rng.beta(2, 5, n)
    result = best_price(v, price_request(eps, n=n), source=InsecureSeededSource(1))
    grid = price_grid(price_step=result.price_step, max_price=1.0)
    mech = make_price_mechanism(grid, eps, source=InsecureSeededSource(2))
    sv = np.sort(v)
    gamma = max(sv[i] * (n - i) for i in range(n))
    counts = n - np.searchsorted(sv, grid.prices, side="left")
    rev = dict(zip(grid.prices, np.asarray(grid.prices) * counts, strict=True))
    opt = max(rev.values())
    got = np.array([rev[mech(v)] for _ in range(runs)])
    bound = gamma - result.price_step * n - result.selection_loss
    print(
        f"  n = {n} Beta(2, 5) valuations, eps = {eps:g}: alpha = {result.price_step:.6g}, "
        f"|H| = {len(grid.prices)}, gamma = {gamma:.1f}, grid OPT = {opt:.1f}"
    )
    print(
        f"  {runs} runs: mean revenue {got.mean():.1f}, "
        f"5th percentile {np.quantile(got, 0.05):.1f}, "
        f"min {got.min():.1f}; seed's bound gamma - alpha n - loss = {bound:.1f} "
        f"(alpha n = {result.price_step * n:.2f}, loss = {result.selection_loss:.2f}); "
        f"below the bound: {(got < bound).mean():.3%}"
    )


def pac() -> None:
    print("## PAC learning (seed 003, Theorem 6)")
    alpha, eps, target, runs = 0.1, 1.0, 0.37, 500
    hyps = threshold_hypotheses(np.round(np.linspace(0, 1, 101), 2))
    n = pac_sample_size(len(hyps), alpha, eps)
    rng = np.random.default_rng(5)
    source = InsecureSeededSource(6)
    errors = []
    for _ in range(runs):
        xs = rng.random(n)
        r = select_hypothesis(
            xs, (xs >= target).astype(int), hyps, epsilon=eps, target_error=alpha, source=source
        )
        errors.append(abs(r.name - target))
    e = np.array(errors)
    print(
        f"  |C| = {len(hyps)}, alpha = {alpha}, eps = {eps}: n = {n}; {runs} runs: mean error "
        f"{e.mean():.4f}, max {e.max():.4f}, P[error > alpha] = {(e > alpha).mean():.3f}"
    )
    for n_small in (100, 300, 1000):
        errs = []
        for _ in range(runs):
            xs = rng.random(n_small)
            r = select_hypothesis(xs, (xs >= target).astype(int), hyps, epsilon=eps, source=source)
            errs.append(abs(r.name - target))
        print(f"  n = {n_small}: mean error {np.mean(errs):.4f}, max {np.max(errs):.4f}")


def quantiles() -> None:
    print("## median of a synthetic income column")
    rng = np.random.default_rng(9)
    n, runs = 5000, 100
    income = np.round(rng.lognormal(10, 1, n), 2)
    truth = float(np.median(income))
    print(f"  n = {n} lognormal(10, 1) incomes, true median {truth:.2f}")
    candidates = [float(c) for c in range(0, 1_000_001, 100)]
    try:
        import opendp.prelude as dp

        dp.enable_features("contrib")
    except ImportError:  # pragma: no cover - optional comparison
        dp = None
    for eps in (0.01, 0.1, 1.0):
        cont = make_continuous_quantile((0.0, 1e6), 0.5, eps, source=InsecureSeededSource(1))
        cand = make_candidate_quantile(candidates, 0.5, eps, source=InsecureSeededSource(2))
        t = time.perf_counter()
        err_cont = [abs(cont(income) - truth) for _ in range(runs)]
        per_call = (time.perf_counter() - t) / runs
        err_cand = [abs(cand(income) - truth) for _ in range(runs)]
        line = (
            f"  eps {eps:g}: median |error| continuous [0, 1e6] {np.median(err_cont):.1f} "
            f"({per_call * 1e3:.0f} ms/call), candidates step 100 {np.median(err_cand):.1f}"
        )
        if dp is not None:
            dom = dp.vector_domain(dp.atom_domain(T=float, nan=False))

            def make(s, dom=dom):
                return dp.m.make_private_quantile(
                    dom, dp.symmetric_distance(), dp.max_divergence(), candidates, 0.5, s
                )

            m = make(dp.binary_search_param(make, d_in=1, d_out=eps))
            data = [float(x) for x in income]
            err_odp = [abs(m(data) - truth) for _ in range(runs)]
            line += f", OpenDP make_private_quantile (same candidates) {np.median(err_odp):.1f}"
        print(line)
    r = quantile(
        pd.DataFrame({"income": income}),
        quantile_request("income", [0.5, 0.9], 1.0, bounds=(0, 1e6)),
        source=InsecureSeededSource(3),
    )
    print("  recipe:", str(r).splitlines()[:3])
    print(f"  true 90th percentile {np.quantile(income, 0.9):.2f}")


def main() -> None:
    hair_colour()
    pricing()
    pac()
    quantiles()
    print(f"(the exact probability of the seed's bound: t = 5 - ln 4 = {5 - math.log(4):.4f})")


if __name__ == "__main__":
    main()
