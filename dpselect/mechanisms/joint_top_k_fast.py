"""The fast law of the error level of the joint exponential mechanism for top-k.

The cumulative weights of the levels in float64 with certified error bounds, after the
pruning of Wu and Zhang 2024 (module docstring of :mod:`dpselect.mechanisms.joint_top_k`, step
2, "The fast law"): it decides the level of most draws; when its bounds do not, the exact law
(:mod:`dpselect.mechanisms.joint_top_k_levels`) does, with the same uniform.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from ..sampling.uniform import LazyUniform
from .joint_top_k_levels import _LN2, _reach
from .joint_top_k_profile import _Profile

#: Grid points for the fast law's search of the mode (only the window's width depends on it).
_FAST_GRID = 256
#: The unit roundoff of float64.
_U = 2.0**-53
#: Bound on the error of one float64 ``log``, ``exp`` or ``expm1``, in units of ``_U`` times the
#: result (libm and NumPy's SIMD loops are within 4 ulp; docs/mechanisms.md takes 16).
_ULPS = 16.0


def _block_logs(profile: _Profile, blocks: npt.NDArray[np.int64], n: npt.NDArray[np.int64]) -> Any:
    """``log`` of each block's factor ``perm(n - first + 1, length)``, in float64, and a bound
    on the absolute error of each (arrays)."""
    first = np.asarray(profile.first, dtype=np.int64)[blocks]
    length = np.asarray(profile.length, dtype=np.int64)[blocks]
    base = (n - first + 1).astype(np.float64)  # exact: below 2^53 (n <= d)
    out = np.log(base)
    for b in np.unique(blocks[length > 1]).tolist():
        rows = blocks == b
        acc = out[rows].copy()
        for t in range(1, profile.length[b]):
            acc += np.log(base[rows] - t)
        out[rows] = acc
    # each log within _ULPS ulp (2 _ULPS _U relative) of a value in [0, log d], the sum of
    # `length` terms
    log_d = math.log(max(profile.d, 2)) * (1 + 1e-12)
    err = (length * (2 * _ULPS + 2 * length) * log_d) * _U
    return out, err


@dataclass
class _FastLaw:
    """The level's law in float64 with certified bounds (see :func:`_fast_law`)."""

    levels: npt.NDArray[np.int64]  # breakpoints b_0 < b_1 < ..., where N changes
    low: npt.NDArray[np.float64]  # lower bounds of C(b_j) (scaled)
    high: npt.NDArray[np.float64]  # upper bounds of C(b_j) (scaled)
    below: float  # upper bound of C(b_0 - 1) (scaled)
    z_low: float
    z_high: float
    log_scale: float  # every bound above is a multiple of exp(-log_scale)

    def level(self, u: LazyUniform) -> int | None:
        """The level inversion with ``U`` picks, or ``None`` when the bounds do not decide."""
        scale = 2.0**-u.nbits
        ulo = u.prefix * scale * (1 - 4 * _U)  # exact products up to rounding, widened
        uhi = (u.prefix + 1) * scale * (1 + 4 * _U)
        tlo, thi = ulo * self.z_low * (1 - 4 * _U), uhi * self.z_high * (1 + 4 * _U)
        j = int(np.searchsorted(self.low, thi, side="right"))  # first j with low[j] > thi
        if j >= self.levels.shape[0]:
            return None  # U Z may be in the mass above the levels computed
        previous = self.below if j == 0 else float(self.high[j - 1])
        if previous > tlo:
            return None  # not separated: the exact path decides
        return int(self.levels[j])


@dataclass(frozen=True)
class _FastWindow:
    """The window ``[lo, hi]`` of levels of the fast law, around the mode."""

    lo: int
    hi: int
    log_total: float  # >= log(d! / (d - k)!)
    upper: bool  # whether levels above hi (or pruned candidates) carry mass


def _fast_window(profile: _Profile, scale: Fraction, bits: int) -> _FastWindow | None:
    """The window outside which the levels weigh at most about ``2^-bits`` of ``Z``: the mode
    by a grid search, ``lo`` below it by bisection, ``hi`` above it from ``d!/(d-k)!``.
    ``None`` when no level is counted right (the floor above every top count)."""
    s = float(scale)
    top_level = profile.max_level
    # levels up to cap are counted right: every threshold top[b] - E is at or above the floor
    cap = top_level if profile.floor is None else profile.top[-1] - profile.floor
    if cap < 0:
        return None
    reach = _reach(profile.d, profile.k, scale, bits)
    search = min(cap, math.floor(reach))
    if search + 1 <= _FAST_GRID:
        grid = np.arange(search + 1, dtype=np.int64)
    else:  # Python ints: search * g may not fit in int64
        points = {search * g // (_FAST_GRID - 1) for g in range(_FAST_GRID)}
        grid = np.asarray(sorted(points), np.int64)
    scores = profile.log_counts(grid) - grid / s
    best = int(np.argmax(scores))
    mode, log_z = int(grid[best]), float(scores[best]) - 1e-6  # Z >= N(mode) w(mode)
    cut = log_z - bits * _LN2
    a, b = 0, mode  # lo: the largest level <= mode with log N(lo - 1) <= cut
    while a < b:
        mid = (a + b + 1) // 2
        if profile.log_counts(np.asarray([mid - 1], dtype=np.int64))[0] <= cut:
            a = mid
        else:
            b = mid - 1
    lo = a
    log_total = float(
        np.log(np.arange(profile.d - profile.k + 1, profile.d + 1, dtype=np.float64)).sum()
    )
    log_total += 1e-9 * profile.k  # >= log(d! / (d - k)!)
    hi = math.ceil(s * (log_total - log_z + bits * _LN2))
    hi = max(mode, min(hi, cap))
    upper = not (profile.complete and hi >= top_level)
    return _FastWindow(lo, hi, log_total, upper)


@dataclass(frozen=True)
class _LogCounts:
    """``log N`` in float64 at ``lo`` and at the levels in ``(lo, hi]`` where ``N`` changes,
    with a bound on the absolute error of each."""

    levels: npt.NDArray[np.int64]  # lo, then the breakpoints b_1 < b_2 < ...
    log_n: npt.NDArray[np.float64]
    err_log: float


def _window_log_counts(profile: _Profile, lo: int, hi: int) -> _LogCounts:
    """``log N`` over the window: ``log N(lo)``, then a cumulative sum of the changes of
    ``log`` of one block's factor per event (all ``>= 0``, so the error is at most ``gamma_n
    (|log N(lo)| + sum of changes)`` plus the errors of the logs)."""
    # the events (b, v) with level top[b] - v in (lo, hi], per block by increasing level
    top = np.asarray(profile.top, dtype=np.int64)
    nd = profile.n_distinct
    j0 = np.searchsorted(profile.asc, top - hi, side="left")
    j1 = np.searchsorted(profile.asc, top - lo, side="left")
    cnt = (j1 - j0).astype(np.int64)
    q = top.shape[0]
    blocks = np.repeat(np.arange(q, dtype=np.int64), cnt)
    starts = np.concatenate(([0], np.cumsum(cnt)[:-1]))
    within = np.arange(blocks.shape[0], dtype=np.int64) - np.repeat(starts, cnt)
    j = np.repeat(j1 - 1, cnt) - within
    ev_levels = top[blocks] - profile.asc[j]
    ev_n = profile.cum[nd - 1 - j]
    at_lo = profile.at_least(top - lo)
    base_logs, base_err = _block_logs(profile, np.arange(q, dtype=np.int64), at_lo)
    ev_logs, ev_err = _block_logs(profile, blocks, ev_n)
    previous = np.empty_like(ev_logs)
    if ev_logs.shape[0]:
        previous[1:] = ev_logs[:-1]
        first_of_block = starts[cnt > 0]
        previous[first_of_block] = base_logs[cnt > 0]
    changes = ev_logs - previous
    order = np.argsort(ev_levels, kind="stable")
    ev_levels, changes = ev_levels[order], changes[order]
    log_n_lo = float(base_logs.sum())
    log_n = log_n_lo + np.cumsum(changes)
    last = np.ones(ev_levels.shape[0], dtype=bool)
    last[:-1] = ev_levels[1:] != ev_levels[:-1]
    levels = np.concatenate(([lo], ev_levels[last]))
    log_n = np.concatenate(([log_n_lo], log_n[last]))
    n_terms = ev_levels.shape[0] + q + 2
    err_log = (
        (n_terms + 2) * _U * (abs(log_n_lo) + float(np.abs(changes).sum()))
        + float(base_err.sum())
        + 2 * float(ev_err.sum())
    )
    return _LogCounts(levels, log_n, err_log)


def _fast_law(profile: _Profile, scale: Fraction, bits: int, slack: float = 1.0) -> _FastLaw | None:
    """The cumulative weights ``C(E) = sum_{E' <= E} m(E') exp(-E' / scale)`` at the levels
    where ``N`` changes, in float64 with rigorous error bounds, over a window ``[lo, hi]`` of
    levels outside which the mass is at most about ``2^-bits`` of ``Z`` (counted in the bounds).

    Summation by parts makes every term positive (no cancellation of ``N(E) - N(E - 1)``):
    with ``w(E) = exp(-E / scale)`` and ``N_i`` the value of ``N`` on ``[b_i, b_{i+1})``,
    ``C(b_j) = delta + N_j w(b_j) + sum_{i<j} N_i (w(b_i) - w(b_{i+1}))`` where ``|delta| <=
    N(lo - 1)``. ``log N`` is a cumulative sum of the changes of ``log`` of one factor per
    event (all ``>= 0``), so its error is at most ``gamma_n (|log N(lo)| + sum of changes)``
    plus the errors of the logs. This is the pruning of Wu and Zhang ("Faster Differentially
    Private Top-k Selection: A Joint Exponential Mechanism with Pruning", NeurIPS 2024): the
    candidates far below share one count per distinct value and the levels far from the mode
    are one bounded group, never enumerated; here the group's mass is kept as an interval, and
    a draw that falls where it matters goes to the exact path. ``None`` when the window is empty.
    """
    window = _fast_window(profile, scale, bits)
    if window is None:
        return None
    s = float(scale)
    lo, hi, log_total, upper = window.lo, window.hi, window.log_total, window.upper
    counts = _window_log_counts(profile, lo, hi)
    levels, log_n, err_log = counts.levels, counts.log_n, counts.err_log
    # scaled weights: exp(log N_j - b_j / s - M)
    exponent = log_n - levels / s
    m = float(exponent.max())
    heads = np.exp(exponent - m)
    gaps = -np.expm1(-np.diff(levels) / s)
    steps = heads[:-1] * gaps
    c = heads.copy()
    c[1:] += np.cumsum(steps)
    magnitude = float(np.abs(levels).max()) / s + float(np.abs(log_n).max()) + abs(m)
    tau = (
        slack
        * 2
        * (math.expm1(err_log) + 2 * _ULPS * _U * (magnitude + levels.shape[0] + 8) + 1e-15)
    )
    if lo > 0:
        log_below = float(profile.log_counts(np.asarray([lo - 1], dtype=np.int64))[0])
        below = math.exp(log_below + err_log + 1e-9 - m)  # N(lo - 1), scaled
    else:
        below = 0.0
    above = math.exp(log_total - (hi + 1) / s - m) * (1 + tau + 1e-9) if upper else 0.0
    # exp may underflow (to 0 or a subnormal): at most 2^-1022 per term, Z >= 1 here
    floor_error = (levels.shape[0] + 2) * 2.0**-1000
    low = c * (1 - tau) - below - floor_error
    high = c * (1 + tau) + below + floor_error
    return _FastLaw(levels, low, high, below, float(low[-1]), float(high[-1]) + above, m)
