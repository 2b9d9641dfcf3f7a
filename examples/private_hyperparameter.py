"""Choosing a hyper-parameter privately on a held-out split (seed 003, private PAC learning).

Run: ``python examples/private_hyperparameter.py``.

A ridge classifier is trained for several regularisation strengths on a training split. The
choice among them is made on a **held-out split of private records** with
:func:`dpselect.recipes.select_hypothesis`: the exponential mechanism with score minus the
number of held-out mistakes (sensitivity 1, monotonic), so the chosen strength is
``epsilon``-DP for the held-out people. The trained models are the public hypothesis class
here: they depend on the training split only (protect that split separately if it is private
too, for example with a DP training algorithm). The held-out data are never printed; the
selected model is scored on a fresh synthetic test set to show the choice is a good one.

No model is perfect here (the labels are noisy), so Theorem 6's realizable sample size does
not apply; the statement that does is the selection's "accuracy" line: with probability 95%
the chosen model makes at most a few more held-out mistakes than the best candidate.
"""

from __future__ import annotations

import numpy as np

from dpselect.recipes import select_hypothesis

LAMBDAS = [0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0]
DIM = 60


def synthetic(n: int, rng: np.random.Generator, w_true: np.ndarray) -> tuple[np.ndarray, ...]:
    """Gaussian features, labels from a noisy linear rule (synthetic data only)."""
    X = rng.standard_normal((n, DIM))
    y = (X @ w_true + 1.5 * rng.standard_normal(n) > 0).astype(np.int64)
    return X, y


def ridge(X: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
    """Ridge regression on labels -1/+1: the weights of a linear classifier."""
    return np.linalg.solve(X.T @ X + lam * np.eye(X.shape[1]), X.T @ (2 * y - 1))


def classifier(w: np.ndarray):
    """h(X) = 1 when X w > 0: applied row by row, as select_hypothesis requires."""
    return lambda X: (np.asarray(X) @ w > 0).astype(np.int64)


def main() -> None:
    rng = np.random.default_rng(7)  # synthetic data only, not the mechanism's noise
    w_true = rng.standard_normal(DIM) * (rng.random(DIM) < 0.2)  # a sparse true rule
    X_train, y_train = synthetic(80, rng, w_true)  # few examples: regularisation matters
    X_held, y_held = synthetic(3000, rng, w_true)  # the private held-out split
    X_test, y_test = synthetic(20000, rng, w_true)  # fresh data, to judge the choice

    models = {lam: classifier(ridge(X_train, y_train, lam)) for lam in LAMBDAS}
    result = select_hypothesis(X_held, y_held, models, epsilon=1.0, target_error=0.05)
    print(result)
    print()
    print("test error of every candidate on fresh synthetic data (for illustration):")
    for lam, h in models.items():
        error = float(np.mean(h(X_test) != y_test))
        mark = "  <- chosen privately" if lam == result.name else ""
        print(f"  lambda = {lam:>8g}: {error:.3f}{mark}")


if __name__ == "__main__":
    main()
