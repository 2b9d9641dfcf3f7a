"""Many quantiles at once: a hierarchical histogram ("quantile tree") with exact noise.

docs/quantiles.md ("Many quantiles: the tree") has the proofs and the measurements.

**The tree.** ``[lo, hi]`` is cut into ``b^h`` leaves of equal width (``b`` the branching,
``h`` the height: public parameters). Level ``l = 1, ..., h`` has ``b^l`` buckets, each the
union of ``b`` buckets of level ``l + 1``; the root (level 0, the count of all rows) is not
measured. Rows are clamped to the bounds and each goes to one leaf (``np.searchsorted`` on the
leaf edges: a fixed function of the row alone); the counts of every level come from one
``np.bincount`` at the leaves summed upward.

**Noise** (exact). Every count of every level gets an independent discrete Laplace draw of
scale ``h / eps`` (:func:`~dpselect.sampling.discrete.sample_discrete_laplace`, vectorised, the
law exact: Canonne, Kamath, Steinke 2020).

**Privacy** (pure ``eps``-DP under adding or removing one row). Adding or removing a row
changes exactly one count per level, by one: the vector of all counts has L1 sensitivity
``h``. The discrete Laplace mechanism of scale ``h / eps`` on an integer vector of L1
sensitivity ``h`` is ``eps``-DP (CKS 2020, the discrete Laplace; the same argument as Dwork and
Roth 2014, Theorem 3.6: the density ratio is ``exp(|z - z'|_1 / scale) <= e^eps``). The scale is
the exact rational ``h / eps``, so the map is ``d_in * eps`` with no rounding beyond the outward
rounding of the product. Everything after the noise reads the noisy counts only
(post-processing).

**Post-processing.** (1) *Consistency*: the least-squares estimate of all counts given the
noisy ones under the constraint that every bucket equals the sum of its children (Hay,
Rastogi, Miklau, Suciu 2010, Theorem 3; here with the unmeasured root, by the two-pass
weighted form for a tree with independent, equal-variance noise per level). (2) *Descent*:
for each level ``q``, from the root, the children's consistent counts whose absolute value is
at most a threshold ``tau`` (a public multiple of the noise's standard deviation at that
level) are set to zero, on both sides of zero (empty stretches of the bounds cost nothing on
average: the larger noises of either sign are kept and cancel), the first child where the
cumulative share reaches the node's share ``f`` is taken and ``f`` rescaled to it; at the leaf
the value is ``leaf_lo + f width`` (linear interpolation). A node whose children total at
most zero is read as uniform. The values are sorted (increasing levels give increasing
values)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from ..core.domains import kept_numbers
from ..core.errors import ParameterError
from ..core.measurement import Measurement
from ..sampling.discrete import sample_discrete_laplace
from ..sampling.source import RandomSource, resolve_source
from .quantile_continuous import check_bounds
from .quantile_recursive import sorted_levels
from .quantile_score import pure_dp_on_rows, unit_epsilon
from .validate import check_epsilon

__all__ = [
    "TREE_MAX_LEAVES",
    "TreeShape",
    "check_shape",
    "consistent_counts",
    "leaf_index",
    "make_tree_quantiles",
    "noisy_tree_counts",
    "tree_accuracy",
    "tree_counts",
    "tree_descend",
    "tree_leaf_edges",
    "tree_scale",
]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

#: The most leaves a tree may have (memory: a few arrays of this many float64).
TREE_MAX_LEAVES = 1 << 22
#: The largest scale the exact discrete Laplace sampler takes.
_SCALE_MAX = Fraction(1 << 52)


def check_shape(branching: Any, height: Any) -> tuple[int, int]:
    """``(b, h)``: integers with ``b >= 2``, ``h >= 1`` and ``b^h <= TREE_MAX_LEAVES``.

    Parameters
    ----------
    branching : int
        ``b``, the children of each bucket (at least 2).
    height : int
        ``h``, the measured levels (at least 1).

    Returns
    -------
    b, h : int
        The shape as Python ints.
    """
    for name, v, least in (("branching", branching, 2), ("height", height, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < least:
            raise ParameterError(f"{name} must be an integer >= {least}, got {v!r}")
    b, h = int(branching), int(height)
    if b**h > TREE_MAX_LEAVES:
        raise ParameterError(
            f"branching ** height must be at most {TREE_MAX_LEAVES} leaves, got {b}**{h}"
        )
    return b, h


def tree_scale(height: int, epsilon: Any) -> Fraction:
    """The discrete Laplace scale ``h / eps`` (exact) for L1 sensitivity ``h``.

    Parameters
    ----------
    height : int
        ``h``, the measured levels (the L1 sensitivity for one row).
    epsilon : float or Fraction
        The row-level epsilon (``epsilon / max_rows`` for units of ``max_rows`` rows); refused
        when ``h / epsilon > 2^52``.

    Returns
    -------
    Fraction
        The exact scale ``h / epsilon``, in counts.
    """
    eps = Fraction(check_epsilon(epsilon))
    scale = Fraction(height) / eps
    if scale > _SCALE_MAX:
        raise ParameterError(
            f"epsilon must be at least height / 2^52 = {height / 2.0**52:.3g}, got {epsilon}"
        )
    return scale


def tree_leaf_edges(lo: float, hi: float, leaves: int) -> F64:
    """The ``leaves + 1`` leaf edges ``lo + k (hi - lo) / leaves`` (floats, increasing).

    Parameters
    ----------
    lo, hi : float
        The public bounds, ``lo < hi``.
    leaves : int
        The number of leaves, ``b^h``.

    Returns
    -------
    numpy.ndarray of float64
        The edges, from exactly ``lo`` to exactly ``hi``, non-decreasing.
    """
    k = np.arange(leaves + 1, dtype=np.float64)
    edges: F64 = lo + (hi - lo) * (k / leaves)
    edges[0], edges[-1] = lo, hi
    return np.maximum.accumulate(edges)


def leaf_index(x: npt.NDArray[np.float64], edges: npt.NDArray[np.float64], lo: float,
               hi: float) -> npt.NDArray[np.intp]:  # fmt: skip
    """``searchsorted(edges, x, side="right") - 1`` clipped to the leaves, for clamped ``x``:
    the leaf of each row (the last edge at or below it), without a binary search per row.

    The leaf is guessed from ``(x - lo) leaves / (hi - lo)`` and kept where ``edges[g] <= x <
    edges[g + 1]`` (or ``g`` is the last leaf and ``edges[g] <= x``), which makes ``g`` the
    answer whatever the float rounding of the guess (the edges increase); the other rows
    (off by a rounding, or among repeated edges) get the binary search itself.

    Parameters
    ----------
    x : numpy.ndarray of float64
        The rows, already clamped to ``[lo, hi]`` (no NaN).
    edges : numpy.ndarray of float64
        The leaf edges (:func:`tree_leaf_edges`).
    lo, hi : float
        The bounds the edges span.

    Returns
    -------
    numpy.ndarray of intp
        The leaf of each row, in ``0 .. leaves - 1``.
    """
    leaves = edges.shape[0] - 1
    with np.errstate(over="ignore", invalid="ignore"):
        guess = (x - lo) * (leaves / (hi - lo))
    np.floor(guess, out=guess)
    np.clip(guess, 0, leaves - 1, out=guess)  # NaN (inf / inf) stays NaN: checked below
    guess[np.isnan(guess)] = 0
    idx: npt.NDArray[np.intp] = guess.astype(np.intp)
    ok = edges[idx] <= x
    ok &= (x < edges[idx + 1]) | (idx == leaves - 1)
    wrong = np.flatnonzero(~ok)
    fixed = np.searchsorted(edges, x[wrong], side="right") - 1
    idx[wrong] = np.clip(fixed, 0, leaves - 1)
    return idx


#: Rows per chunk of :func:`tree_counts`.
_COUNT_CHUNK = 1 << 16


def tree_counts(values: Any, lo: float, hi: float, branching: int, height: int) -> list[I64]:
    """The exact counts of levels ``1..h`` (``b^l`` each, left to right) of the clamped rows.

    Each row goes to one leaf by a fixed function of the row (the last leaf edge at or below
    it: :func:`leaf_index`), so adding or removing a row changes one count per level by one.

    Parameters
    ----------
    values : array_like of float
        The rows (private; NaN dropped, the rest clamped to ``[lo, hi]``).
    lo, hi : float
        The public bounds.
    branching, height : int
        The tree's shape ``b`` and ``h`` (:func:`check_shape`).

    Returns
    -------
    list of numpy.ndarray of int64
        The exact counts of levels ``1..h`` in order, level ``l`` holding ``b^l`` counts.
    """
    leaves = branching**height
    rows = np.asarray(values, dtype=np.float64).ravel()  # read, never changed
    edges = tree_leaf_edges(lo, hi, leaves)
    level = np.zeros(leaves, dtype=np.int64)
    # in chunks: the few temporaries of a chunk stay in the cache (the counts are the same)
    for start in range(0, rows.shape[0], _COUNT_CHUNK):
        x = rows[start : start + _COUNT_CHUNK]
        if bool(np.isnan(x).any()):
            x = kept_numbers(x)
        x = np.clip(x, lo, hi)
        level += np.bincount(leaf_index(x, edges, lo, hi), minlength=leaves)
    out = [level]
    for _ in range(height - 1):
        level = level.reshape(-1, branching).sum(axis=1)
        out.append(level)
    return out[::-1]


def consistent_counts(noisy: Sequence[npt.NDArray[Any]], branching: int) -> list[F64]:
    """Least-squares consistent counts of levels ``1..h`` from independent noisy counts of
    equal variance (Hay et al. 2010, Theorem 3, with the root unmeasured).

    Bottom-up, ``z`` of a leaf is its noisy count with variance ``1`` (in units of the noise
    variance); an inner node combines its own count (variance 1) and the sum of its children's
    ``z`` (variance ``V_c``) by inverse variances. Top-down, the root is the sum of level 1's
    ``z``; each child gets ``z`` plus ``1 / b`` of its parent's residual (the children of a
    node have equal variances). Output: every level sums exactly to its parent. A function of
    the noisy counts only (post-processing).

    Parameters
    ----------
    noisy : sequence of array_like
        The noisy counts of levels ``1..h`` in order (level ``l``: ``b^l`` counts).
    branching : int
        ``b``, the children of each bucket.

    Returns
    -------
    list of numpy.ndarray of float64
        The consistent counts of levels ``1..h``, in the same layout.
    """
    h = len(noisy)
    z: list[F64] = [np.asarray(c, dtype=np.float64) for c in noisy]
    var = [1.0] * h
    for lev in range(h - 2, -1, -1):
        child_sum = z[lev + 1].reshape(-1, branching).sum(axis=1)
        v_children = branching * var[lev + 1]
        w_self = 1.0 / (1.0 + 1.0 / v_children)  # = v_children / (1 + v_children)
        z[lev] = w_self * z[lev] + (1.0 - w_self) * child_sum
        var[lev] = 1.0 / (1.0 + 1.0 / v_children)
    out: list[F64] = [z[0]]
    for lev in range(1, h):
        parent = out[lev - 1]
        kids = z[lev].reshape(-1, branching)
        resid = parent - kids.sum(axis=1)
        out.append((kids + resid[:, None] / branching).ravel())
    return out


def tree_descend(
    counts: Sequence[F64],
    qs: Sequence[float],
    lo: float,
    hi: float,
    branching: int,
    thresholds: Sequence[float] | None = None,
) -> list[float]:
    """The values for levels ``qs`` read from a tree of (noisy, consistent) counts.

    At each node the children's counts whose absolute value is at most that level's threshold
    (``0`` by default) are taken as zero, on both sides of zero: an empty bucket's count stays
    zero on average (the larger noises of either sign are kept and cancel), so wide empty
    stretches do not pull the descent. The first child where the cumulative share of the
    children's total reaches the node's share ``f`` is entered, with ``f`` rescaled to it; a
    node whose children total at most zero is read as uniform; at the leaf the value is
    interpolated linearly. A function of ``counts`` and public parameters only
    (docs/quantiles.md, "Reading the quantiles").

    Parameters
    ----------
    counts : sequence of numpy.ndarray of float64
        The counts of levels ``1..h`` (:func:`consistent_counts`).
    qs : sequence of float
        The levels in ``[0, 1]``.
    lo, hi : float
        The public bounds the leaves span.
    branching : int
        ``b``, the children of each bucket.
    thresholds : sequence of float, optional
        One threshold per level ``1..h``, in counts (default 0: only counts equal to 0 are
        zero).

    Returns
    -------
    list of float
        One value in ``[lo, hi]`` per level, sorted in increasing order (the order of ``qs``
        when the levels increase).
    """
    h = len(counts)
    leaves = branching**h
    edges = tree_leaf_edges(lo, hi, leaves)
    taus = [0.0] * h if thresholds is None else list(thresholds)
    out = []
    for q in qs:
        f, node = float(q), 0
        for lev in range(h):
            kids = counts[lev][node * branching : (node + 1) * branching]
            c = np.where(np.abs(kids) > taus[lev], kids, 0.0)
            total = float(c.sum())
            if total <= 0.0:  # read as uniform
                k = min(int(f * branching), branching - 1)
                f = f * branching - k
            else:
                cum = np.cumsum(c) / total
                positive = np.flatnonzero(c > 0.0)
                # the first crossing (cum is not monotone where a count is negative); the
                # share 0 enters the first child that holds rows, at its left edge
                hits = np.flatnonzero(cum >= f) if f > 0.0 else positive[:1]
                k = int(hits[0]) if hits.size else int(positive[-1])
                before = float(cum[k - 1]) if k > 0 else 0.0
                share = float(c[k]) / total
                f = 0.0 if f <= 0.0 else min(1.0, max(0.0, (f - before) / share))
            node = node * branching + k
        left, right = float(edges[node]), float(edges[node + 1])
        out.append(float(min(hi, max(lo, left + f * (right - left)))))
    return sorted(out)


def noisy_tree_counts(
    values: Any,
    lo: float,
    hi: float,
    branching: int,
    height: int,
    scale: Fraction,
    source: RandomSource | None = None,
) -> list[I64]:
    """The counts of levels ``1..h`` plus independent exact discrete Laplace noise of
    ``scale``, all drawn in one vectorised call (the mechanism's only random step).

    Parameters
    ----------
    values : array_like of float
        The rows (private; NaN dropped, the rest clamped to ``[lo, hi]``).
    lo, hi : float
        The public bounds.
    branching, height : int
        The tree's shape ``b`` and ``h``.
    scale : Fraction
        The discrete Laplace scale (:func:`tree_scale`).
    source : RandomSource, optional
        The randomness (``None``: the private default; a seeded source for tests only).

    Returns
    -------
    list of numpy.ndarray of int64
        The noisy counts of levels ``1..h`` in order (level ``l``: ``b^l`` counts).
    """
    exact = tree_counts(values, lo, hi, branching, height)
    sizes = [c.shape[0] for c in exact]
    noise = sample_discrete_laplace(scale, sum(sizes), resolve_source(source))
    noisy, start = [], 0
    for c, size in zip(exact, sizes, strict=True):
        noisy.append(c + noise[start : start + size])
        start += size
    return noisy


def make_tree_quantiles(
    bounds: tuple[float, float],
    qs: Sequence[Any],
    epsilon: Any,
    *,
    branching: int = 16,
    height: int = 3,
    threshold: float = 0.0,
    source: RandomSource | None = None,
    max_rows: int = 1,
) -> Measurement:
    """The tree mechanism (module docstring) for increasing levels ``qs`` on ``[lo, hi]``.

    Input: a 1-D array of values (NaN dropped, the rest clamped); output: the ``m`` values,
    increasing. ``threshold``: the descent's cut, in standard deviations of each level's
    consistent count (public). Privacy map ``d_in * eps`` (``SymmetricDistance`` to
    ``MaxDivergence``). ``max_rows = r``: each privacy unit holds at most ``r`` input rows, so
    one unit moves the counts of each tree level by at most ``r`` in L1 (``h r`` in all); the
    noise scale is ``h r / eps`` (``tree_scale`` at ``eps / r``) and ``d_in`` counts units
    (:mod:`.quantile_score`, "Rows per unit").

    Parameters
    ----------
    bounds : pair of float
        The public bounds ``(lo, hi)``: the rows are clamped to them.
    qs : sequence of float or Fraction
        The levels in ``[0, 1]``, strictly increasing.
    epsilon : float or Fraction
        The privacy loss for one privacy unit added or removed (``d_in = 1``).
    branching : int, default 16
        ``b``, the children of each bucket (at least 2).
    height : int, default 3
        ``h``, the measured levels; ``b^h`` leaves, at most ``TREE_MAX_LEAVES``.
    threshold : float, default 0.0
        The descent's cut, a finite number ``>= 0`` of standard deviations.
    source : RandomSource, optional
        The randomness (``None``: the private default; a seeded source for tests only).
    max_rows : int, default 1
        ``r``: the most input rows one privacy unit holds.

    Returns
    -------
    Measurement
        From a 1-D array of numbers to the ``m`` values, increasing; map ``d_in * epsilon``.
    """
    lo, hi = check_bounds(bounds)
    levels = sorted_levels(qs)
    b, h = check_shape(branching, height)
    eps = Fraction(check_epsilon(epsilon))
    scale = tree_scale(h, unit_epsilon(eps, max_rows))
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, (int, float))
        or not (math.isfinite(threshold) and threshold >= 0)
    ):
        raise ParameterError(f"threshold must be a finite number >= 0, got {threshold!r}")
    taus = _thresholds(scale, b, h, float(threshold))
    fs = [float(v) for v in levels]

    def function(values: Any) -> list[float]:
        noisy = noisy_tree_counts(values, lo, hi, b, h, scale, source)
        return tree_descend(consistent_counts(noisy, b), fs, lo, hi, b, taus)

    return pure_dp_on_rows(function, eps)


def _level_variances(branching: int, height: int) -> list[float]:
    """Variance of each level's consistent count, in units of the noise variance (the
    bottom-up variances; the top-down pass only lowers them, so this is an upper value)."""
    var = [1.0] * height
    for lev in range(height - 2, -1, -1):
        v_children = branching * var[lev + 1]
        var[lev] = 1.0 / (1.0 + 1.0 / v_children)
    return var


def _thresholds(scale: Fraction, branching: int, height: int, k: float) -> list[float]:
    """``k`` standard deviations of each level's consistent count (public)."""
    if k == 0:
        return [0.0] * height
    q = math.exp(-1.0 / float(scale))
    noise_var = 2.0 * q / (1.0 - q) ** 2  # the discrete Laplace variance
    return [k * math.sqrt(noise_var * v) for v in _level_variances(branching, height)]


def _consistency_norms(branching: int, height: int) -> list[float]:
    """``a_l``: the L1 norm of a row of the consistency map at level ``l`` (the map is the
    orthogonal projection onto consistent trees, so symmetric: the row of node ``v`` is the
    image of the unit vector at ``v``; every node of a level gives the same norm)."""
    out = []
    for lev in range(height):
        unit = [np.zeros(branching ** (k + 1)) for k in range(height)]
        unit[lev][0] = 1.0
        image = consistent_counts(unit, branching)
        out.append(float(sum(np.abs(level).sum() for level in image)))
    return out


@dataclass(frozen=True)
class TreeShape:
    """A tree's public parameters and its accuracy constant (:func:`tree_accuracy`)."""

    branching: int
    height: int
    leaf_width: float
    noise_bound: int
    rank_error: float


def tree_accuracy(
    bounds: tuple[float, float],
    epsilon: Any,
    confidence: float,
    branching: int,
    height: int,
    threshold: float,
) -> TreeShape:
    """The accuracy theorem's constants (docs/quantiles.md, "the tree"): with probability at
    least ``confidence`` every noisy count is within ``t`` of its true value, and then every
    released value ``v`` for level ``q`` has at most ``q n + E`` rows below ``v - width`` and at
    most ``(1 - q) n + E`` rows above ``v + width`` (``width`` the leaf width, ``n`` the rows),
    with ``E = b sum_l (t a_l + tau_l)`` (``a_l``: :func:`_consistency_norms`, ``tau_l`` the
    descent's thresholds). Rounded up.

    Parameters
    ----------
    bounds : pair of float
        The public bounds ``(lo, hi)``.
    epsilon : float or Fraction
        The row-level epsilon of the noisy counts (``epsilon / max_rows``).
    confidence : float
        The probability ``1 - beta`` in ``[0, 1)`` with which every count is within ``t``.
    branching, height : int
        The tree's shape ``b`` and ``h``.
    threshold : float
        The descent's cut, in standard deviations (as given to :func:`make_tree_quantiles`).

    Returns
    -------
    TreeShape
        ``b``, ``h``, the leaf width (the widest float leaf, in the data's units), the noise
        bound ``t`` (counts) and ``E`` (``rank_error``, rows).
    """
    lo, hi = check_bounds(bounds)
    b, h = check_shape(branching, height)
    scale = tree_scale(h, epsilon)
    beta = 1.0 - float(confidence)
    counts = sum(b**lev for lev in range(1, h + 1))
    q = math.exp(-1.0 / float(scale))
    # P(|X| >= t) = 2 q^t / (1 + q) for the discrete Laplace (t >= 1): union bound over counts.
    t = max(1, math.ceil(float(scale) * math.log(2.0 * counts / ((1.0 + q) * beta)) * (1 + 1e-9)))
    taus = _thresholds(scale, b, h, threshold)
    norms = _consistency_norms(b, h)
    rank = b * sum(t * a + tau for a, tau in zip(norms, taus, strict=True))
    # the widest leaf of the float edges (each at least the exact width's float neighbour)
    width = float(np.diff(tree_leaf_edges(lo, hi, b**h)).max())
    width = max(width, float(np.nextafter(float((Fraction(hi) - Fraction(lo)) / b**h), np.inf)))
    return TreeShape(b, h, width, t, float(np.nextafter(rank * (1 + 1e-9), np.inf)))
