"""Exact selection laws, computed independently of the samplers under test."""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import integrate


def softmax(shifts, scale):
    z = np.asarray(shifts, dtype=float) / scale
    z = z - z.max()
    p = np.exp(z)
    return p / p.sum()


def plackett_luce(shifts, scale, k):
    """P(ranked tuple) of k rounds of the exponential mechanism (seed 004, eq. 1)."""
    w = softmax(shifts, scale)
    outcomes, probs = [], []
    for tup in itertools.permutations(range(len(w)), k):
        p, rest = 1.0, 1.0
        for i in tup:
            p *= w[i] / rest
            rest -= w[i]
        outcomes.append(tup)
        probs.append(p)
    return outcomes, np.asarray(probs)


def noisy_max_law(shifts, scale, cdf, pdf, lo, hi):
    """P(argmax_i shifts_i / scale + X_i = i) for i.i.d. X with the given cdf/pdf (quadrature)."""
    q = np.asarray(shifts, dtype=float) / scale
    probs = []
    for i in range(len(q)):

        def integrand(x, i=i):
            val = pdf(x - q[i])
            for j in range(len(q)):
                if j != i:
                    val *= cdf(x - q[j])
            return val

        points = sorted(set(q.tolist()))
        val, _ = integrate.quad(
            integrand,
            lo + q.min(),
            hi + q.max(),
            points=points,
            limit=500,
            epsabs=1e-13,
            epsrel=1e-11,
        )
        probs.append(val)
    return np.asarray(probs)


def exponential_law(shifts, scale):
    """Report-noisy-max with Exp(1) noise on shifts/scale: permute-and-flip in law."""
    return noisy_max_law(
        shifts,
        scale,
        lambda x: -math.expm1(-x) if x > 0 else 0.0,
        lambda x: math.exp(-x) if x >= 0 else 0.0,
        0.0,
        60.0,
    )


def laplace_law(shifts, scale):
    def cdf(x):
        return 0.5 * math.exp(x) if x < 0 else 1.0 - 0.5 * math.exp(-x)

    return noisy_max_law(shifts, scale, cdf, lambda x: 0.5 * math.exp(-abs(x)), -60.0, 60.0)


def permute_and_flip_law(shifts, scale):
    """Permute-and-flip (McKenna and Sheldon 2020) by enumerating permutations (small n)."""
    q = np.asarray(shifts, dtype=float) / scale
    best = q.max()
    accept = np.exp(q - best)
    n = len(q)
    probs = np.zeros(n)
    perms = list(itertools.permutations(range(n)))
    for perm in perms:
        reach = 1.0
        for i in perm:
            probs[i] += reach * accept[i] / len(perms)
            reach *= 1.0 - accept[i]
    return probs
