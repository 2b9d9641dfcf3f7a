"""The exponential mechanism for a quantile over public candidates (docs/quantiles.md).

Score ``-s(x, c)``, the rank excess of :mod:`.quantile_score` (0 at a classical quantile, ties
included), sensitivity ``Delta = max(a, b - a)``, not monotonic: ``P[c] ∝ exp(-eps s(x, c) /
(2 Delta))`` through the exact Gumbel engine with scale ``2 Delta / eps`` as an exact
fraction (seed 001, Theorem 1.1). Privacy map ``d_in * eps`` (seed 002, the exponential
mechanism's theorem). All scores come from one sort of the data (``np.searchsorted``).

Accuracy (seed 003, Theorem 3): with probability at least ``1 - beta`` the chosen candidate's
rank excess is at most the best candidate's plus ``(2 Delta / eps)(ln m + ln(1 / beta))``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from ..core.arithmetic import float_up
from ..core.errors import ParameterError
from ..core.measurement import Measurement
from ..sampling.noisy_max import noisy_argmax
from ..sampling.source import RandomSource
from .quantile_score import (
    candidate_rank_counts,
    pure_dp_on_rows,
    quantile_fraction,
    rank_excess,
    rank_excess_of_candidates,
    score_sensitivity,
    unit_epsilon,
)
from .validate import check_epsilon

__all__ = ["candidate_accuracy", "make_candidate_quantile", "make_candidate_quantiles"]


def make_candidate_quantile(
    candidates: Sequence[float],
    q: Any,
    epsilon: Any,
    *,
    source: RandomSource | None = None,
    max_rows: int = 1,
) -> Measurement:
    """The exponential mechanism over public ``candidates`` with the rank-excess score.

    Input: a 1-D array of values (NaN dropped); output: one of the candidates. Privacy map
    (``SymmetricDistance`` to ``MaxDivergence``): ``d_in * eps``. ``max_rows = r``: each
    privacy unit holds at most ``r`` input rows, the score's sensitivity per unit is ``r
    Delta`` and the scale ``2 r Delta / eps``; ``d_in`` counts units
    (:mod:`.quantile_score`, "Rows per unit").

    Parameters
    ----------
    candidates : sequence of float
        The public candidate values (at least one), in any order; the output is one of them.
    q : float or Fraction
        The quantile level in ``[0, 1]``, read as ``a / b`` (:func:`quantile_fraction`).
    epsilon : float or Fraction
        The privacy loss for one privacy unit added or removed (``d_in = 1``).
    source : RandomSource, optional
        The randomness (``None``: the private default; a seeded source for tests only).
    max_rows : int, default 1
        ``r``: the most input rows one privacy unit holds.

    Returns
    -------
    Measurement
        From a 1-D array of numbers to the chosen candidate (a float); map ``d_in * epsilon``.
    """
    level = quantile_fraction(q)
    eps = Fraction(check_epsilon(epsilon))
    row_eps = unit_epsilon(eps, max_rows)
    cands = np.asarray([float(c) for c in candidates], dtype=np.float64)
    if cands.shape[0] == 0:
        raise ParameterError("candidates must not be empty")
    scale = 2 * score_sensitivity(level) / row_eps

    def function(values: Any) -> float:
        excess = rank_excess_of_candidates(values, cands, level)
        return float(cands[noisy_argmax(-excess, scale, "gumbel", source=source)])

    return pure_dp_on_rows(function, eps)


def make_candidate_quantiles(
    candidates: Sequence[float],
    qs: Sequence[Any],
    epsilon_each: Any,
    *,
    source: RandomSource | None = None,
    max_rows: int = 1,
) -> Measurement:
    """:func:`make_candidate_quantile` for each level of ``qs`` at ``epsilon_each``, from one
    sort of the data: output the ``m`` chosen candidates in the order of ``qs``.

    The rows' counts below and above each candidate (:func:`candidate_rank_counts`) do not
    depend on the level, so they are computed once; each level then draws exactly as
    :func:`make_candidate_quantile` does, in turn, from the same source (the same outputs for
    the same seeded source as the ``m`` mechanisms run one after the other).

    Privacy map (``SymmetricDistance`` to ``MaxDivergence``): ``d_in * m * epsilon_each``,
    rounded up: the basic composition of ``m`` mechanisms that are each ``epsilon_each``-DP
    (Dwork and Roth 2014, Theorem 3.16; seed 002, simple composition), each run on the same
    rows (group privacy for ``d_in > 1``, as in :func:`make_candidate_quantile`).

    Parameters
    ----------
    candidates : sequence of float
        The public candidate values (at least one), shared by every level.
    qs : sequence of float or Fraction
        The levels in ``[0, 1]`` (at least one), in any order; repeats allowed.
    epsilon_each : float or Fraction
        The privacy loss of each level's draw for one privacy unit; the whole costs ``m`` times
        it.
    source : RandomSource, optional
        The randomness (``None``: the private default; a seeded source for tests only).
    max_rows : int, default 1
        ``r``: the most input rows one privacy unit holds.

    Returns
    -------
    Measurement
        From a 1-D array of numbers to the list of ``m`` chosen candidates (floats), in the order
        of ``qs``; map ``d_in * m * epsilon_each``.
    """
    levels = [quantile_fraction(q) for q in qs]
    if not levels:
        raise ParameterError("qs must not be empty")
    each = Fraction(check_epsilon(epsilon_each))
    row_eps = unit_epsilon(each, max_rows)
    cands = np.asarray([float(c) for c in candidates], dtype=np.float64)
    if cands.shape[0] == 0:
        raise ParameterError("candidates must not be empty")
    scales = [2 * score_sensitivity(level) / row_eps for level in levels]

    def function(values: Any) -> list[float]:
        below, above, n = candidate_rank_counts(values, cands)
        out = []
        for level, scale in zip(levels, scales, strict=True):
            excess = rank_excess(below, above, n, level)
            out.append(float(cands[noisy_argmax(-excess, scale, "gumbel", source=source)]))
        return out

    return pure_dp_on_rows(function, each * len(levels))


def candidate_accuracy(q: Any, epsilon: Any, m: int, confidence: float) -> float:
    """``margin`` in rows: the chosen candidate's excess ``max(0, #below - q n, #above - (1 -
    q) n)`` is within ``margin`` of the best candidate's with probability ``>= confidence``.

    Parameters
    ----------
    q : float or Fraction
        The quantile level in ``[0, 1]`` (:func:`quantile_fraction`).
    epsilon : float or Fraction
        The row-level epsilon of the draw (``epsilon / max_rows`` of a mechanism built with
        ``max_rows``; for several levels, one level's share).
    m : int
        The number of candidates (at least 1).
    confidence : float
        The probability in ``[0, 1)`` with which the bound holds (``1 - beta``).

    Returns
    -------
    float
        ``margin``, in rows, rounded up: ``(2 Delta / (epsilon b)) (ln m + ln(1 / (1 -
        confidence)))``.
    """
    level = quantile_fraction(q)
    eps = Fraction(check_epsilon(epsilon))
    t = (math.log(m) - math.log1p(-confidence)) * (1 + 2**-40)
    bound = Fraction(2 * score_sensitivity(level)) / eps * Fraction(t) / level.denominator
    return float_up(bound * (1 + Fraction(1, 2**40)))
