"""Policy-based differentially private set union (Gopi, Gulhane, Kulkarni, Shen, Shokouhi and
Yekhanin 2020, "Differentially private set union", ICML; GGKSSY20).

The input is one list of values per person (each at most ``c = max_contributions`` distinct
values, already bounded by the data layer), in an order fixed by a per-person key (the data
layer sorts persons by a keyed hash of the person and a fresh salt, so adding a person never
changes the relative order of the others). Persons are processed one by one; each spends a
budget of norm 1 raising the weights of its values toward a cutoff ``Gamma``, values at
``Gamma`` take nothing more. Then every value with a positive weight ``h`` is released
independently when ``h + Z >= rho`` (``Z`` Laplace of scale ``b``, or Gaussian of deviation
``sigma``): only the set of values is output. Weights far above ``rho`` are wasted budget in
plain thresholding; the policy moves a person's budget to the values that still need it.

**Rows per value** (``max_rows_per_value = r``): a person's list holds each of their values
once per row; the person spends a budget of ``r`` (not 1) and adds at most ``w_v = min(rows
of v, r)`` to value ``v``. Policy Laplace water-fills over the *rooms* ``min(Gamma - h_v,
w_v)`` instead of the gaps ``Gamma - h_v``; the l1 update stays monotone and l1-contractive
(``docs/partition_selection.md``, section 6, the proof of Lemmas 1-2 with rooms, which shrink
as weights grow just as gaps do). Policy Gaussian adds the Euclidean projection of the gaps
on ``K = {0 <= d <= w, ||d||_2 <= r}``, a closed convex set: Lemma 2's proof holds for the
projection on any closed convex set that keeps a zero gap at zero (firm non-expansiveness,
and a value clipped under ``h'`` has ``P_K(y')_v = 0``), and Lemma 1 holds because the
projection is ``min(w_v, y_v / (1 + lam))`` with ``lam`` growing with the gaps (same
section). So neighbours' final weights satisfy ``h <= h'``, ``||h' - h|| <= r`` (l1, or l2
plus the floors' slack) and a new value has weight at most ``r``: the maps below with 1
replaced by ``r``.

Two policies (GGKSSY20, Section 5; Policy Laplace and Policy Gaussian):

- ``"laplace"``: *l1 descent* -- all of the person's values below ``Gamma`` rise together
  (water-filling), values that reach ``Gamma`` stop, until the budget 1 is spent or all reached
  ``Gamma``;
- ``"gaussian"``: *l2 descent* -- the gap vector ``y = (Gamma - h)^+`` on the person's values
  is added whole when ``||y||_2 <= 1``, else ``y / ||y||_2``.

**Exact arithmetic.** Weights are integers in units of ``1 / UNITS`` (``UNITS = 2^32`` for
l1, ``2^128`` for l2), so the per-person updates are exact integer computations (no float
rounding can break the proof's inequalities). l1: the water level is found exactly and the
left-over units go one each to the values in a fixed value order. l2: the increment is
``floor(UNITS y_u / ||y||)`` computed with integer square roots.

**The two properties the proof needs** (``docs/partition_selection.md``, section 5, proves
them): for any two weight vectors ``h <= h'`` (coordinatewise) and any person's values ``W``,
the update ``F_W`` is *monotone* (``F_W(h) <= F_W(h')``) and *contractive*: l1 --
``||F_W(h') - F_W(h)||_1 <= ||h' - h||_1`` exactly; l2 -- ``||F_W(h') - F_W(h)||_2 <= ||h' -
h||_2 + sqrt(c) / UNITS`` (the floor). One person's own update has norm at most 1. Hence
(GGKSSY20, Theorem 5.3 for l1- and l2-contractive policies; our proof covers the integer
versions) the final weights of neighbours satisfy ``h <= h'`` and ``||h' - h||_1 <= 1`` (l1),
``||h' - h||_2 <= 1 + n sqrt(c) / 2^128 <= Delta_2 = 1 + sqrt(c) 2^-65`` (l2, ``n < 2^63``
persons), whatever the position of the added person.

**Maps** (``p(w) = P(Z >= rho - w)``, ``g(w) = -ln(1 - p(w))``, both convex on ``[0, rho]``):

- Laplace: ``(1/b + c g(0), p(1) + (c - 1) p(0))`` provided ``g(1) - g(0) <= 1/b`` and
  ``rho >= 1``; with rows, ``(r/b + c g(0), p(r) + (c - 1) p(0))`` provided ``g(r) - g(0) <=
  r/b`` and ``rho >= r``;
- Gaussian: ``(eps_1 + c g(0) + sqrt(c) (g(D) - g(0)), delta_1 + c p(0) + sqrt(c) (p(D) -
  p(0)))``, ``D = Delta_2`` (with rows: ``r + sqrt(c) 2^-65``), ``eps_1`` the CKS conversion
  of ``rho_z = D^2 / (2 sigma^2)`` at ``delta_1``, provided ``rho >= D``.

The release trials are exact: ``p(h)`` is evaluated in ``arb`` balls and compared with a
lazily read uniform until decided (as for DVGM22's optimal partition selection).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from flint import arb, ctx

from ..accounting.zcdp import zcdp_to_approx_dp
from ..core.arithmetic import float_up
from ..core.domains import Domain
from ..core.errors import DomainError, ParameterError, PrivacyMapError
from ..core.intervals import arb_of, upper_float
from ..core.measurement import Measurement
from ..core.measures import Approximate, MaxDivergence
from ..core.metrics import SymmetricDistance
from ..sampling.source import RandomSource, resolve_source
from ..sampling.uniform import bernoulli_from_balls
from .partition_selection import ordered_values
from .validate import check_delta, check_epsilon, check_int

__all__ = [
    "L1_UNITS",
    "L2_UNITS",
    "SetUnionPlan",
    "l1_update",
    "l2_update",
    "make_policy_set_union",
    "policy_weights",
    "set_union_plan",
]

SetUnionNoise = Literal["laplace", "gaussian"]

#: Weight units of the l1 policy: a person's budget is L1_UNITS units.
L1_UNITS = 1 << 32
#: Weight units of the l2 policy.
L2_UNITS = 1 << 128
#: Persons are fewer than 2^63 (rows are counted in 64-bit integers).
MAX_PERSONS_LOG2 = 63
#: The default ``cutoff_scales`` of ``Gamma = rho + cutoff_scales * scale`` (GGKSSY20 use a few
#: noise scales).
DEFAULT_CUTOFF_SCALES = 3.0


# ------------------------------------------------------------------------------------------
# The per-person updates (integers: weights in units)


def l1_update(
    weights: dict[Hashable, int],
    values: Sequence[Hashable],
    cutoff: int,
    budget: int,
    caps: dict[Hashable, int] | None = None,
) -> None:
    """Water-filling of ``budget`` units over ``values`` below ``cutoff``, in place.

    After ``L`` full rounds (each value below the cutoff gets one unit per round while its
    gap lasts) the ``r`` left-over units go one each to the values that can still take one,
    in :func:`ordered_values` order. Spends exactly ``min(budget, total gap)``. ``caps``: the
    most units this person may add to each value (rows per value); the gap of a value is
    then its room ``min(cutoff - weight, cap)``.

    Parameters
    ----------
    weights : dict
        The weights so far, in units (a missing value has 0); updated in place.
    values : sequence
        The person's distinct values.
    cutoff : int
        ``Gamma``, in units.
    budget : int
        The person's budget, in units (``r`` times the policy's units).
    caps : dict or None, default None
        The most units the person may add to each value (``min(rows, r)`` units); ``None``: no
        cap.
    """
    gaps = {v: cutoff - weights.get(v, 0) for v in values}
    if caps is not None:
        gaps = {v: min(g, caps[v]) for v, g in gaps.items()}
    open_ = [v for v in ordered_values(gaps) if gaps[v] > 0]
    if not open_:
        return
    total = sum(gaps[v] for v in open_)
    if total <= budget:
        for v in open_:
            weights[v] = weights.get(v, 0) + gaps[v]
        return
    # the level L: the largest integer with f(L) = sum(min(gap, L)) <= budget; on [g_(i-1),
    # g_(i)] (gaps sorted), f(L) = (sum of the i smallest gaps) + (m - i) L
    sorted_gaps = sorted(gaps[v] for v in open_)
    m, prefix, level = len(sorted_gaps), 0, 0
    for i, g in enumerate(sorted_gaps):
        if prefix + (m - i) * g > budget:
            level = (budget - prefix) // (m - i)
            break
        prefix += g
    used = sum(min(gaps[v], level) for v in open_)
    left = budget - used
    for v in open_:
        add = min(gaps[v], level)
        if left > 0 and gaps[v] > level:
            add += 1
            left -= 1
        weights[v] = weights.get(v, 0) + add


def l2_update(
    weights: dict[Hashable, int],
    values: Sequence[Hashable],
    cutoff: int,
    budget: int,
    caps: dict[Hashable, int] | None = None,
) -> None:
    """Add ``y`` (``||y||_2 <= budget``) or ``floor(budget y_u / ||y||_2)`` to each value, in
    place, ``y`` the gaps to ``cutoff``; integer square roots, no rounding up.

    ``caps`` (rows per value): add the floor of the Euclidean projection ``P_K(y)`` of the
    gaps on ``K = {d : 0 <= d_v <= caps[v], ||d||_2 <= budget}``, which is
    ``min(caps[v], y_v / (1 + lam))`` with the least ``lam >= 0`` that fits the ball (the
    KKT conditions of the projection); without caps ``K`` is the ball's non-negative part and
    this is the update above. Exact: the capped set is found by integer comparisons (values
    in decreasing order of ``y_v / caps[v]``), a free value gets ``isqrt(floor(A y_v^2 /
    S))`` with ``A = budget^2 - sum of the squared caps of the capped values`` and ``S`` the
    free values' ``sum y^2``.

    Parameters
    ----------
    weights : dict
        The weights so far, in units (a missing value has 0); updated in place.
    values : sequence
        The person's distinct values.
    cutoff : int
        ``Gamma``, in units.
    budget : int
        The person's budget, in units (``r`` times the policy's units).
    caps : dict or None, default None
        The most units the person may add to each value (``min(rows, r)`` units); ``None``: no
        cap.
    """
    gaps = {v: cutoff - weights.get(v, 0) for v in values}
    open_ = [v for v in ordered_values(gaps) if gaps[v] > 0]
    if not open_:
        return
    b2 = budget * budget
    if caps is None:
        s = sum(gaps[v] ** 2 for v in open_)
        if s <= b2:
            for v in open_:
                weights[v] = cutoff
            return
        for v in open_:
            # floor(budget * g / sqrt(s)) = isqrt(floor(budget^2 g^2 / s))
            weights[v] = weights.get(v, 0) + math.isqrt((b2 * gaps[v] ** 2) // s)
        return
    clipped = {v: min(gaps[v], caps[v]) for v in open_}
    if sum(x * x for x in clipped.values()) <= b2:  # lam = 0: the box alone
        for v in open_:
            weights[v] = weights.get(v, 0) + clipped[v]
        return
    ratio = sorted(open_, key=lambda v: Fraction(gaps[v], caps[v]), reverse=True)
    capped_sq, free_sq = 0, sum(gaps[v] ** 2 for v in ratio)
    for j in range(len(ratio) + 1):
        a = b2 - capped_sq
        if a <= 0:  # pragma: no cover - a valid split comes first (module docstring)
            break
        last_ok = j == 0 or gaps[ratio[j - 1]] ** 2 * a >= caps[ratio[j - 1]] ** 2 * free_sq
        next_ok = j == len(ratio) or gaps[ratio[j]] ** 2 * a < caps[ratio[j]] ** 2 * free_sq
        if last_ok and next_ok and free_sq > 0:
            for k, v in enumerate(ratio):
                add = caps[v] if k < j else math.isqrt((a * gaps[v] ** 2) // free_sq)
                weights[v] = weights.get(v, 0) + add
            return
        if j < len(ratio):
            capped_sq += caps[ratio[j]] ** 2
            free_sq -= gaps[ratio[j]] ** 2
    raise AssertionError("no capped set fits the projection")  # pragma: no cover


def policy_weights(
    persons: Sequence[Sequence[Hashable]],
    noise: SetUnionNoise,
    cutoff: int,
    max_rows_per_value: int = 1,
) -> dict[Hashable, int]:
    """The final weights (units) after every person's update, in the given order.

    ``max_rows_per_value = r > 1``: a value repeated ``n`` times in a person's list is ``n``
    rows; the person spends a budget of ``r`` (l1 or l2 norm) and adds at most ``min(n, r)``
    to it (module docstring).

    Parameters
    ----------
    persons : sequence of sequences
        Each person's values (a value once per row), in processing order.
    noise : {"laplace", "gaussian"}
        The l1 update (Policy Laplace) or, for any other value, the l2 update (Policy
        Gaussian).
    cutoff : int
        ``Gamma``, in units (:attr:`SetUnionPlan.cutoff_units`).
    max_rows_per_value : int, default 1
        ``r``: the person's budget and the most they add to one value.

    Returns
    -------
    dict
        The weight, in units, of every value the updates touched.
    """
    weights: dict[Hashable, int] = {}
    r = int(max_rows_per_value)
    if r > 1:
        units, update = (L1_UNITS, l1_update) if noise == "laplace" else (L2_UNITS, l2_update)
        for values in persons:
            rows = Counter(values)
            caps = {v: min(n, r) * units for v, n in rows.items()}
            update(weights, list(rows), cutoff, r * units, caps)
        return weights
    if noise == "laplace":
        for values in persons:
            l1_update(weights, list(dict.fromkeys(values)), cutoff, L1_UNITS)
    else:
        for values in persons:
            l2_update(weights, list(dict.fromkeys(values)), cutoff, L2_UNITS)
    return weights


# ------------------------------------------------------------------------------------------
# Calibration


@dataclass(frozen=True)
class SetUnionPlan:
    """A calibrated policy set union: the noise, ``rho``, ``Gamma`` and the guarantee."""

    noise: SetUnionNoise
    scale: float  # b (Laplace) or sigma (Gaussian)
    rho: float
    gamma: float
    max_contributions: int
    epsilon: float
    delta: float
    #: ``r``: a person adds at most ``r`` to a value and spends ``r`` (Policy Laplace)
    max_rows_per_value: int = 1

    @property
    def units(self) -> int:
        """Weight units per 1."""
        return L1_UNITS if self.noise == "laplace" else L2_UNITS

    @property
    def cutoff_units(self) -> int:
        """``Gamma`` in units (rounded up)."""
        return math.ceil(Fraction(self.gamma) * self.units)


def _tail(noise: SetUnionNoise, scale: arb, x: arb) -> arb:
    """``P(Z >= x)``: Laplace of scale ``scale`` or Gaussian of deviation ``scale``."""
    if noise == "laplace":
        if x >= 0:
            return (-x / scale).exp() / 2
        if x < 0:
            return 1 - (x / scale).exp() / 2
        # x straddles 0: the union of both formulas' balls
        return arb.union((-x / scale).exp() / 2, 1 - (x / scale).exp() / 2)
    return (x / (scale * arb(2).sqrt())).erfc() / 2


def _delta2(c: int, r: int = 1) -> Fraction:
    """The l2 sensitivity of the final weights: ``r + n sqrt(c) / 2^128``, ``n < 2^63``
    (``r``: the budget, ``max_rows_per_value``)."""
    root_c = math.isqrt(c) + (0 if math.isqrt(c) ** 2 == c else 1)  # ceil(sqrt(c))
    return r + Fraction(root_c << MAX_PERSONS_LOG2, L2_UNITS)


def _map_values(
    noise: SetUnionNoise,
    scale: float,
    rho: float,
    c: int,
    delta_1: float = 0.0,
    max_rows_per_value: int = 1,
) -> tuple[float, float] | None:
    """The map at one person (module docstring), rounded up; ``None`` when its conditions
    fail (``rho`` too small). ``max_rows_per_value = r``: the new values' weights
    are at most ``r`` and the distance at most ``r`` (``docs/partition_selection.md``,
    section 6)."""
    old = ctx.prec
    ctx.prec = 200
    try:
        s, r = arb_of(scale), arb_of(rho)
        rows = max_rows_per_value
        d = arb_of(_delta2(c, rows)) if noise == "gaussian" else arb(rows)
        if not r.lower() >= d.upper():
            return None

        def p(w: arb) -> arb:
            return _tail(noise, s, r - w)

        def g(w: arb) -> arb:
            return -(1 - p(w)).log()

        p0, pd, g0, gd = p(arb(0)), p(d), g(arb(0)), g(d)
        if noise == "laplace":  # d = r: the distance and the largest new weight
            if not (gd - g0).upper() <= (d / s).lower():
                return None
            eps = d / s + c * g0
            dlt = pd + (c - 1) * p0
            return upper_float(eps), upper_float(dlt)
        rho_z = Fraction(_delta2(c, rows)) ** 2 / (2 * Fraction(scale) ** 2)
        eps_1 = zcdp_to_approx_dp(rho_z, delta_1)
        rc = arb(c).sqrt()
        eps = arb_of(eps_1) + c * g0 + rc * (gd - g0)
        dlt = arb_of(delta_1) + c * p0 + rc * (pd - p0)
        return upper_float(eps), upper_float(dlt)
    finally:
        ctx.prec = old


def _least_rho(bound: Callable[[float], float], target: float, lo: float) -> float:
    """The least ``rho >= lo`` (to 1e-9 relative) with ``bound(rho) <= target``, ``bound``
    nonincreasing."""
    hi = max(lo, 1.0) * 2
    while bound(hi) > target:
        hi *= 2
    low = lo
    while hi - low > 1e-9 * hi:
        mid = (low + hi) / 2
        if bound(mid) <= target:
            hi = mid
        else:
            low = mid
    return hi


@dataclass(frozen=True)
class _Calibration:
    """One calibration of :func:`set_union_plan`: for a scale, the least ``rho`` whose
    certified map fits ``(eps, dlt)``; ``d1`` is the conversion's share of ``delta`` (Gaussian),
    ``d_new`` the new values' share, ``lo_d`` the least ``rho``."""

    noise: SetUnionNoise
    c: int
    rows: int
    eps: float
    dlt: float
    d1: float
    d_new: float
    lo_d: float
    cutoff_scales: float

    def float_delta(self, scale: float, rho: float) -> float:
        """A float estimate of the map's delta at ``(scale, rho)`` (the aim of the search)."""
        c, rows, lo_d = self.c, self.rows, self.lo_d
        if self.noise == "laplace":
            return 0.5 * math.exp(-(rho - rows) / scale) + (c - 1) * 0.5 * math.exp(-rho / scale)

        def q(w: float) -> float:
            return 0.5 * math.erfc((rho - w) / (scale * math.sqrt(2)))

        return c * q(0) + math.sqrt(c) * (q(lo_d) - q(0))

    def attempt(self, scale: float) -> SetUnionPlan | None:
        """The plan at ``scale`` with the least certified ``rho``, or ``None`` when its epsilon
        exceeds the target."""
        rho = _least_rho(lambda r: self.float_delta(scale, r), self.d_new * (1 - 1e-6), self.lo_d)
        for _ in range(60):
            got = _map_values(self.noise, scale, rho, self.c, self.d1, self.rows)
            if got is not None and got[1] <= self.dlt:
                if got[0] > self.eps:
                    return None
                gamma = rho + self.cutoff_scales * scale
                return SetUnionPlan(
                    self.noise, scale, rho, gamma, self.c, got[0], got[1], self.rows
                )
            rho *= 1 + 1e-6
        return None  # pragma: no cover - the float aim is within 1e-6 of the certified rho


def set_union_plan(
    noise: SetUnionNoise,
    epsilon: float,
    delta: float,
    max_contributions: int,
    cutoff_scales: float = DEFAULT_CUTOFF_SCALES,
    *,
    max_rows_per_value: int = 1,
) -> SetUnionPlan:
    """Calibrate Policy Laplace / Policy Gaussian to ``(epsilon, delta)`` at one person.

    Laplace: ``b`` the smallest (bisection) such that, with ``rho`` the least with the map's
    delta at most ``delta``, the map's epsilon is at most ``epsilon``. Gaussian: half of
    ``delta`` to the CKS conversion, half to the new values; ``sigma`` the smallest such that
    the map's epsilon fits. ``Gamma = rho + cutoff_scales * scale`` (a public tuning constant). The
    returned plan's map is certified in ``arb``. ``max_rows_per_value = r`` (Laplace and
    Gaussian; ``docs/partition_selection.md``, section 6): budget and caps ``r``, the map at
    ``r`` (about ``r`` times the scale and ``rho`` of ``r = 1``).

    Parameters
    ----------
    noise : {"laplace", "gaussian"}
        Policy Laplace or Policy Gaussian.
    epsilon : float
        The target epsilon at one person, ``> 0``.
    delta : float
        The target delta at one person, in ``(0, 1)``.
    max_contributions : int
        ``c``: how many distinct values one person holds, at least 1.
    cutoff_scales : float, default DEFAULT_CUTOFF_SCALES
        ``Gamma = rho + cutoff_scales * scale``, ``cutoff_scales >= 0`` finite (utility only).
    max_rows_per_value : int, default 1
        ``r``: the budget and the per-value cap of one person, at least 1.

    Returns
    -------
    SetUnionPlan
        The noise scale, ``rho``, ``Gamma`` and the certified ``(epsilon, delta)``.
    """
    c = check_int(max_contributions, "max_contributions", minimum=1)
    rows = check_int(max_rows_per_value, "max_rows_per_value", minimum=1)
    eps = float(check_epsilon(epsilon))
    dlt = float(check_delta(delta, allow_zero=False))
    if not (
        isinstance(cutoff_scales, (int, float))
        and math.isfinite(cutoff_scales)
        and cutoff_scales >= 0
    ):
        raise ParameterError(f"cutoff_scales must be a finite number >= 0, got {cutoff_scales!r}")
    if noise not in ("laplace", "gaussian"):
        raise ParameterError(f"noise must be 'laplace' or 'gaussian', got {noise!r}")
    d1 = dlt / 2 if noise == "gaussian" else 0.0
    d_new = dlt - d1
    lo_d = float(_delta2(c, rows)) if noise == "gaussian" else float(rows)
    calibration = _Calibration(noise, c, rows, eps, dlt, d1, d_new, lo_d, cutoff_scales)
    attempt = calibration.attempt

    lo_s, hi_s = 1e-4 * rows, 1e7 * rows
    for _ in range(200):
        mid = math.sqrt(lo_s * hi_s)
        if attempt(mid) is not None:
            hi_s = mid
        else:
            lo_s = mid
        if hi_s / lo_s < 1 + 1e-7:
            break
    plan = attempt(hi_s)
    if plan is None:  # pragma: no cover - hi_s always passed
        raise ParameterError("cannot calibrate policy set union to this (epsilon, delta)")
    return plan


# ------------------------------------------------------------------------------------------
# The measurement


@dataclass(frozen=True)
class PersonValuesDomain(Domain):
    """Sequences (one per person, in processing order) of sequences of hashable values, each
    with at most ``max_contributions`` distinct values."""

    max_contributions: int

    def member(self, x: Any) -> bool:
        if isinstance(x, (str, bytes)) or not isinstance(x, Sequence):
            return False
        for values in x:
            if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
                return False
            if not all(isinstance(v, Hashable) for v in values):
                return False
            if len(set(values)) > self.max_contributions:
                return False
        return True

    def __repr__(self) -> str:
        return f"PersonValuesDomain(max_contributions={self.max_contributions})"


def _release(noise: SetUnionNoise, plan: SetUnionPlan, h_units: int, source: RandomSource) -> bool:
    """An exact Bernoulli(``P(h + Z >= rho)``) trial, ``h = h_units / units``."""

    def probability(prec: int) -> Any:
        old = ctx.prec
        ctx.prec = prec
        try:
            h = arb(h_units) / arb(plan.units)
            return _tail(noise, arb_of(plan.scale), arb_of(plan.rho) - h)
        finally:
            ctx.prec = old

    return bernoulli_from_balls(probability, source)


def make_policy_set_union(plan: SetUnionPlan, *, source: RandomSource | None = None) -> Measurement:
    """Policy Laplace / Policy Gaussian set union by ``plan`` (:func:`set_union_plan`).

    Input: one sequence of values per person, in an order fixed by a per-person key (so that a
    person added or removed leaves the others' relative order unchanged), each with at most
    ``plan.max_contributions`` distinct values (a value repeated once per row: with
    ``plan.max_rows_per_value = r > 1`` the person adds at most ``min(rows, r)`` to it;
    ``r = 1``: repeats are ignored). Output: the released values in
    :func:`ordered_values` order. Map to ``Approximate(MaxDivergence())`` at one person:
    ``(plan.epsilon, plan.delta)`` (module docstring; proof in ``docs/partition_selection.md``,
    section 5; GGKSSY20 Theorem 5.3); ``d_in > 1`` raises :class:`PrivacyMapError`.

    Parameters
    ----------
    plan : SetUnionPlan
        The calibration (:func:`set_union_plan`).
    source : RandomSource or None, default None
        Where the trials' random bits come from; ``None`` is the CSPRNG.

    Returns
    -------
    Measurement
        From the persons' value lists (``SymmetricDistance``) to the list of released values
        (``Approximate(MaxDivergence())``).
    """
    domain = PersonValuesDomain(plan.max_contributions)
    cutoff = plan.cutoff_units

    def function(persons: Sequence[Sequence[Hashable]]) -> list[Any]:
        if not domain.member(persons):
            raise DomainError(
                "the input must be a sequence (one per person) of sequences of hashable values, "
                f"each with at most {plan.max_contributions} distinct values"
            )
        src = resolve_source(source)
        weights = policy_weights(persons, plan.noise, cutoff, plan.max_rows_per_value)
        return [v for v in ordered_values(weights) if _release(plan.noise, plan, weights[v], src)]

    def privacy_map(d_in: Any) -> tuple[float, float]:
        if d_in == 0:
            return (0.0, 0.0)
        if d_in > 1:
            raise PrivacyMapError(f"policy set union is proven for one person, got d_in = {d_in}")
        return (float_up(Fraction(plan.epsilon)), float_up(Fraction(plan.delta)))

    return Measurement(
        input_domain=domain,
        input_metric=SymmetricDistance(),
        output_measure=Approximate(MaxDivergence()),
        function=function,
        privacy_map=privacy_map,
    )


# ------------------------------------------------------------------------------------------
# The accuracy statement


def held_weight_lower_bound(plan: SetUnionPlan, holders: int) -> float:
    """A lower bound on the final weight of a value that ``holders`` persons kept, whatever
    the other values and the order.

    l1: each holder finds the value at ``Gamma`` or raises it by at least ``floor(UNITS / c)``
    units (the water level is at least ``floor(budget / open values)``), so the weight is at
    least ``min(Gamma, holders floor(UNITS / c) / UNITS)``. With ``r = max_rows_per_value >
    1``, ``holders`` counts the value's kept rows (at most ``r`` per person): a holder with
    ``w <= r`` rows adds at least ``min(w UNITS, floor(r UNITS / c)) >= w floor(r UNITS / c)
    / r`` units or fills the value, so the weight is at least ``min(Gamma, rows floor(r
    UNITS / c) / (r UNITS))`` (``r = 1``: the bound above). l2: a holder either fills the value
    to ``Gamma`` or multiplies its gap by at most ``r = 1 - 1 / (sqrt(c) Gamma)`` and adds
    at most one unit (``||y|| <= sqrt(c) Gamma``), so the weight is at least ``Gamma (1 -
    r^holders) - holders / UNITS``. l2 at ``r > 1`` (the projection on the capped ball of
    radius ``r``, ``l2_update``): a holder fills the value, adds its cap (at least 1: one
    row), or adds ``y_v / (1 + lam) >= y_v r / ||y|| >= y_v r / (sqrt(c) Gamma)``, so with
    ``y_v <= Gamma`` its gap is multiplied by at most ``q = 1 - min(1, r / sqrt(c)) /
    Gamma``; ``holders`` counts rows, so at least ``ceil(rows / r)`` persons hold the value
    and the weight is at least ``Gamma (1 - q^persons) - persons / UNITS``. Floats with a
    relative margin of 1e-12 downward.
    """
    c, gamma, rows = plan.max_contributions, plan.gamma, plan.max_rows_per_value
    if plan.noise == "laplace":
        per = (rows * L1_UNITS // c) / (rows * L1_UNITS)
        return min(gamma, holders * per) * (1 - 1e-12)
    persons = -(-holders // rows)  # rows: at most r per person
    q = 1 - min(1.0, rows / math.sqrt(c)) / (gamma + 1e-9)
    return max(0.0, gamma * (1 - q**persons) * (1 - 1e-12) - persons / L2_UNITS)


def release_probability_lower_bound(plan: SetUnionPlan, weight: float) -> float:
    """``P(weight + Z >= rho)`` (floats, for the statement only), with a 1e-12 margin down."""
    x = plan.rho - weight
    if plan.noise == "laplace":
        p = 0.5 * math.exp(-x / plan.scale) if x >= 0 else 1 - 0.5 * math.exp(x / plan.scale)
    else:
        p = 0.5 * math.erfc(x / (plan.scale * math.sqrt(2)))
    return p - 1e-12


def policy_sure_count(plan: SetUnionPlan, confidence: float = 0.95) -> int:
    """The least number of holders (rows, ``max_rows_per_value > 1``) whose value is released
    with probability at least ``confidence`` by :func:`held_weight_lower_bound` (``Gamma >=
    rho`` plus the noise's ``confidence`` quantile is needed: refused otherwise)."""
    if release_probability_lower_bound(plan, plan.gamma) < confidence:
        raise ParameterError(
            f"Gamma = {plan.gamma:.4g} is too low for a {confidence:.0%} statement: raise "
            "cutoff_scales"
        )
    n = 1
    while release_probability_lower_bound(plan, held_weight_lower_bound(plan, n)) < confidence:
        n += 1
    return n
