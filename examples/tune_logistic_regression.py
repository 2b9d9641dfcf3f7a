"""Tuning private logistic regression's regularisation with :func:`dpselect.tune` (PS22).

Run: ``python examples/tune_logistic_regression.py`` (needs scikit-learn, in the test extra).

Data: scikit-learn's bundled Wisconsin breast cancer table (569 rows, 30 features), treated
as private. Rows are split by a public rule (row number modulo 3) into a training part, a
validation part and a test part; the test part only shows how good the released model is.

One private *run* for a regularisation ``Lambda`` and a budget ``rho``:

1. Features are mapped row by row (clamped to the ranges printed in the dataset's
   documentation, centred, an intercept column, divided by ``sqrt(31) / 2``): every row has
   norm at most 1, so the logistic loss has gradient norm at most 1.
2. ``w = argmin sum_i loss(w; x_i, y_i) + (Lambda / 2) |w|^2`` (scikit-learn, ``C = 1 /
   Lambda``). Adding or removing one training row moves ``w`` by at most ``1 / Lambda`` in L2
   (the objective is ``Lambda``-strongly convex and the row's gradient has norm <= 1;
   Chaudhuri, Monteleoni and Sarwate 2011, output perturbation), so ``w`` plus discrete
   Gaussian noise (:func:`dpselect.mechanisms.make_gaussian`) is ``rho / 2``-zCDP.
3. The score is the number of validation rows the noisy model gets right (sensitivity 1) plus
   discrete Gaussian noise: ``rho / 2``-zCDP. Together ``rho``-zCDP (adaptive composition).

``dpselect.tune`` runs a random number of such runs (logarithmic law, mean 10; Papernot and
Steinke 2022) over the configurations and releases the best, ``(epsilon, delta)``-DP in
total. For comparison, the script also runs every configuration once at the per-run budget
that composition allows (all runs paid for) and keeps the best noisy score.

Caveat: the minimiser is computed numerically (tolerance 1e-10), not exactly; the sensitivity
bound is for the exact minimiser.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import partial

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression

import dpselect
import dpselect.core as dc
from dpselect.mechanisms import make_gaussian
from dpselect.sampling import RandomSource

LAMBDAS = [0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0, 10000.0]
EPSILON, DELTA = 4.0, 1e-6


def documented_ranges() -> tuple[np.ndarray, np.ndarray]:
    """Each feature's min and max as printed in the dataset's documentation (public facts)."""
    rows = [
        line
        for line in load_breast_cancer().DESCR.splitlines()
        if re.search(r"\s[\d.]+\s+[\d.]+\s*$", line)
    ]
    low = np.array([float(r.split()[-2]) for r in rows])
    high = np.array([float(r.split()[-1]) for r in rows])
    return low, high


def features(X: np.ndarray) -> np.ndarray:
    """Row by row: clamp to the documented range, centre, add an intercept; norm <= 1."""
    low, high = documented_ranges()
    centred = (np.clip(X, low, high) - low) / (high - low) - 0.5
    Z = np.hstack([centred, np.full((X.shape[0], 1), 0.5)])
    return Z / (0.5 * math.sqrt(Z.shape[1]))  # every coordinate in [-0.5, 0.5]


def load() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    X, y = load_breast_cancer(return_X_y=True)
    Z = features(X)
    part = np.arange(len(y)) % 3  # a public rule, not a function of the values
    return {name: (Z[part == i], y[part == i]) for i, name in enumerate(("train", "valid", "test"))}


def accuracy(w: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean((X @ w > 0).astype(int) == y))


def train(lam: float, rho: float, source: RandomSource | None = None) -> dc.Measurement:
    """A ``rho``-zCDP run for regularisation ``lam`` releasing (noisy score, noisy weights).

    ``source``: the noise's randomness (default: the OS CSPRNG; a seeded source only in
    tests, where it makes the run reproducible and NOT private)."""
    dim = 31
    half = rho / 2
    sigma_w = (1 / lam) / math.sqrt(2 * half) * (1 + 1e-6)
    sigma_s = 1 / math.sqrt(2 * half) * (1 + 1e-6)
    weights_noise = make_gaussian(
        dc.vector_domain(dc.atom_domain(float, nan=False), size=dim),
        dc.L2Distance(),
        sigma_w,
        source=source,
    )
    score_noise = make_gaussian(dc.atom_domain(int), dc.L1Distance(), sigma_s, source=source)

    def function(data: dict[str, tuple[np.ndarray, np.ndarray]]) -> tuple[int, np.ndarray]:
        X, y = data["train"]
        model = LogisticRegression(C=1 / lam, fit_intercept=False, tol=1e-10, max_iter=10_000)
        w = model.fit(X, y).coef_.ravel()
        noisy_w = np.asarray(weights_noise(w.tolist()), dtype=float)
        Xv, yv = data["valid"]
        correct = int(np.sum((Xv @ noisy_w > 0).astype(int) == yv))
        return int(score_noise(correct)), noisy_w

    def privacy_map(d_in: int) -> float:
        return dc.float_up(
            Fraction(weights_noise.map(d_in / lam)) + Fraction(score_noise.map(d_in))
        )

    return dc.Measurement(
        dc.AnyDomain("train / valid split of the table"),
        dc.SymmetricDistance(),
        dc.ZeroConcentratedDivergence(),
        function,
        privacy_map,
    )


def main(source: RandomSource | None = None) -> None:
    """Tune, compare with composition, print. ``source`` drives every random choice (the
    configurations, the number of runs, all noise); ``None``: the OS CSPRNG."""
    data = load()
    Xt, yt = data["test"]
    run = partial(train, source=source)
    result = dpselect.tune(
        run, LAMBDAS, EPSILON, data=data, delta=DELTA, mean_runs=10, source=source
    )
    print(result)
    print(f"test accuracy of the released model: {accuracy(result.model, Xt, yt):.3f}")

    # Baseline: run every configuration once, paying for all of them by composition.
    rho_each = result.rho_per_run_if_composed
    best_score, best = -math.inf, None
    for lam in LAMBDAS:
        score, w = run(lam, rho_each)(data)
        if score > best_score:
            best_score, best = score, (lam, w)
    assert best is not None
    print(
        f"composition baseline: rho = {rho_each:.4g} per run, {len(LAMBDAS)} runs, best "
        f"Lambda = {best[0]:g}, test accuracy {accuracy(best[1], Xt, yt):.3f}"
    )
    ratio = result.rho_per_run / rho_each
    print(f"per-run budget, random repetition vs composition: {ratio:.2f}x")
    # Non-private reference (not released): the best Lambda on the test part.
    ref = {
        lam: accuracy(
            LogisticRegression(C=1 / lam, fit_intercept=False, max_iter=10_000)
            .fit(*data["train"])
            .coef_.ravel(),
            Xt,
            yt,
        )
        for lam in LAMBDAS
    }
    best_lam = max(ref, key=lambda k: ref[k])
    print(f"non-private reference: best Lambda {best_lam:g}, test accuracy {ref[best_lam]:.3f}")


if __name__ == "__main__":
    main()
