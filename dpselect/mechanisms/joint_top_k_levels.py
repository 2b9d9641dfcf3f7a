"""The exact law of the error level of the joint exponential mechanism for top-k.

Step 2 of the module docstring of :mod:`dpselect.mechanisms.joint_top_k`: the level ``E`` is
drawn with probability ``m(E) exp(-E / scale) / Z`` by inversion with a lazily read uniform
and python-flint ``arb`` balls at increasing precision, over a window of levels first (the
mass left out bounded exactly and carried as an interval in ``Z``), every level when a draw
needs it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from flint import arb, ctx, fmpq, fmpz_poly

from ..sampling.source import RandomSource
from ..sampling.uniform import LazyUniform
from .joint_top_k_profile import _Profile, _values

#: Grid points for the float search of the heaviest level.
_GRID = 1024
#: Chunks bounding the mass above the window.
_CHUNKS = 128
_LN2 = math.log(2.0)


def _exp_ball(level: int, scale: Fraction) -> arb:
    """``exp(-level / scale)`` as a ball at the current precision."""
    return (-arb(fmpq(level * scale.denominator, scale.numerator))).exp()


def _total(levels: list[tuple[int, int]], scale: Fraction) -> arb:
    """``sum m(E) exp(-E / scale)`` over ``(E, m)`` as a ball at the current precision: one
    polynomial with the integer coefficients ``m`` evaluated at ``exp(-1 / scale)`` (in C)
    when the levels are dense, else term by term."""
    if not levels:
        return arb(0)
    low = min(level for level, _ in levels)
    high = max(level for level, _ in levels)
    if high - low > 8 * len(levels) + 64:
        return sum((_exp_ball(level, scale) * m for level, m in levels), arb(0))
    coefficients = [0] * (high - low + 1)
    for level, m in levels:
        coefficients[level - low] = m
    value: arb = fmpz_poly(coefficients)(_exp_ball(1, scale))
    return _exp_ball(low, scale) * value


def _reach(d: int, k: int, scale: Fraction, bits: int) -> float:
    """A level beyond which the levels weigh at most about ``2^-bits`` of ``Z`` in all:
    ``scale (log N_total + bits ln 2 + 2)`` (``Z >= N(0) >= 1``)."""
    log_total = math.lgamma(d + 1) - math.lgamma(d - k + 1)
    return float(scale) * (log_total + bits * _LN2 + 2.0)


@dataclass
class _Window:
    levels: list[tuple[int, int]]  # (E, m(E)), in walk order
    lower_tail: int  # bound on the mass below the window (weights <= 1)
    upper: list[tuple[int, int]]  # (count, level): sequences above it, of weight <= e^(-l/s)
    balls: dict[int, tuple[list[arb], arb]] = field(default_factory=dict)  # by precision

    def weights(self, scale: Fraction) -> tuple[list[arb], arb]:
        """``Z`` (with the left-out mass as an interval) and the weights of the levels
        computed so far, as balls at the current precision (cached; :meth:`weight` adds)."""
        prec = ctx.prec
        if prec not in self.balls:
            z = _total(self.levels, scale)
            if self.has_tail:
                tail = arb(self.lower_tail) + sum(
                    (_exp_ball(level, scale) * count for count, level in self.upper), arb(0)
                )
                top = tail.upper()
                z = z + arb(top / 2, top / 2)  # [0, top], widened
            self.balls[prec] = ([], z)
        return self.balls[prec]

    @property
    def has_tail(self) -> bool:
        """Whether levels were left out."""
        return self.lower_tail > 0 or bool(self.upper)

    def weight(self, idx: int, scale: Fraction) -> arb:
        """The weight of level ``idx`` of the walk, at the current precision (cached)."""
        done, _ = self.weights(scale)
        while len(done) <= idx:
            level, m = self.levels[len(done)]
            done.append(_exp_ball(level, scale) * m)
        return done[idx]


def _window(profile: _Profile, scale: Fraction, bits: int | None) -> _Window:
    """The levels to compute first, with exact bounds on the rest (module docstring)."""
    total = math.perm(profile.d, profile.k)
    top_level = profile.max_level
    if bits is None:
        levels = profile.level_counts(0, top_level)
        return _Window(_heaviest_first(levels, scale), 0, [])
    s = float(scale)
    reach = _reach(profile.d, profile.k, scale, bits)
    search = top_level if not reach < top_level else math.floor(reach)
    if search + 1 <= _GRID:
        grid = list(range(search + 1))
    else:
        grid = sorted({search * g // (_GRID - 1) for g in range(_GRID)})
    scores = profile.log_counts(_values(grid, profile.asc.dtype)) - np.asarray(
        [g / s for g in grid]
    )
    best = int(np.argmax(scores))
    mode, log_z = grid[best], float(scores[best])  # Z >= N(mode) exp(-mode / scale)
    cut = log_z - bits * _LN2
    # lo: the largest level <= mode with log N(lo - 1) <= cut.
    a, b = 0, mode  # invariant: a satisfies, levels above b do not
    while a < b:
        mid = (a + b + 1) // 2
        if profile.log_counts(_values([mid - 1], profile.asc.dtype))[0] <= cut:
            a = mid
        else:
            b = mid - 1
    lo = a
    # hi: chunks (g_j, g_j+1] above the mode weigh at most (N(g_j+1) - N(g_j))
    # exp(-(g_j + 1) / scale); hi is the first boundary whose chunks above sum below the cut.
    bounds = sorted({mode + (search - mode) * j // _CHUNKS for j in range(_CHUNKS + 1)})
    logs = profile.log_counts(_values(bounds, profile.asc.dtype))
    terms = [logs[j + 1] - (bounds[j] + 1) / s for j in range(len(bounds) - 1)]
    beyond = search < top_level or not profile.complete
    if beyond:  # everything above the search range, each of weight <= exp(-(search+1)/scale)
        log_total = math.lgamma(profile.d + 1) - math.lgamma(profile.d - profile.k + 1)
        terms.append(log_total - (search + 1) / s)
    else:
        terms.append(-math.inf)
    start, acc = len(bounds) - 1, terms[-1]
    while start > 0:
        grown = float(np.logaddexp(acc, terms[start - 1]))
        if grown > cut:
            break
        start, acc = start - 1, grown
    hi = bounds[start]
    exact = [profile.count(g) for g in bounds[start:]]
    upper = [(exact[j + 1] - exact[j], bounds[start + j] + 1) for j in range(len(exact) - 1)]
    if beyond:
        upper.append((total - exact[-1], search + 1))
    levels = profile.level_counts(lo, hi)
    lower = profile.count(lo - 1) if lo > 0 else 0
    return _Window(_heaviest_first(levels, scale), lower, [cu for cu in upper if cu[0] > 0])


def _heaviest_first(levels: list[tuple[int, int]], scale: Fraction) -> list[tuple[int, int]]:
    """The levels in decreasing weight, roughly (``log2 m - E / (scale ln 2)``): the order of
    the walk, which does not change the law."""
    per_bit = float(scale) * _LN2
    return sorted(levels, key=lambda em: em[0] / per_bit - em[1].bit_length())


def _walk(window: _Window, scale: Fraction, u: LazyUniform, source: RandomSource) -> int | None:
    """The index in ``window.levels`` that inversion with ``U`` picks, or ``None`` when the
    mass left out of the window could change it."""
    has_tail = window.has_tail
    prec = 128
    while True:
        with ctx.workprec(max(prec, u.nbits + 32)):
            _, z = window.weights(scale)
            lo = arb(fmpq(u.prefix, 1 << u.nbits)) * z
            hi = arb(fmpq(u.prefix + 1, 1 << u.nbits)) * z
            cumulative = arb(0)
            undecided = False
            for idx in range(len(window.levels)):
                cumulative += window.weight(idx, scale)
                if hi.upper() < cumulative.lower():  # U Z < C_idx
                    return idx
                if lo.lower() >= cumulative.upper():  # U Z >= C_idx
                    continue
                undecided = True
                break
            if not undecided:
                if has_tail:
                    return None  # U Z beyond every level of the window
                undecided = True  # only rounding: refine
        if has_tail:
            return None
        u.refine(source)
        if u.nbits > prec // 2:
            prec *= 2


def _merge(first: _Window, full: _Window) -> _Window:
    """Every level: the window's in their order, then the others (by estimate)."""
    seen = {level for level, _ in first.levels}
    rest = [em for em in full.levels if em[0] not in seen]
    return _Window(first.levels + rest, 0, [])
