"""The joint exponential mechanism for top-k (Gillenwater et al. 2022), sampled exactly.

Gillenwater, Joseph, Munoz Medina and Ribero Diaz, "A Joint Exponential Mechanism for
Differentially Private Top-k", ICML 2022 (PMLR 162:7570-7582). Input: integer counts ``c``,
one per public candidate (length ``d``), and ``k <= d``. With ``c_(1) >= c_(2) >= ...`` the
counts in decreasing order, an ordered sequence ``s = (s_1, ..., s_k)`` of distinct indices has
the error ``E(s) = max_i (c_(i) - c_{s_i})``, an integer ``>= 0``. The mechanism releases ``s``
with probability proportional to ``exp(-E(s) / scale)``, in one draw over all ``d!/(d-k)!``
sequences (the paper samples with ``scale = 2 Delta / epsilon``).

Exact sampling, in three steps (docs/mechanisms.md, "Joint exponential top-k"):

1. **Counting.** ``n_i(E) = #{j : c_j >= c_(i) - E}``; the sets are nested in ``i``, so the
   number of sequences with error ``<= E`` is ``N(E) = prod_i (n_i(E) - (i - 1))`` and
   ``m(E) = N(E) - N(E - 1)`` sequences have error exactly ``E`` (Python ints). Positions
   with equal counts form blocks sharing one ``n``; ``N`` changes only at the levels
   ``E = c_(i) - v`` (``v`` a distinct count), visited in increasing order: a level's
   changes of factors as two small products, then one exact multiplication and division of
   ``N`` (``O(k D)`` steps for ``D`` distinct counts).
2. **The level.** ``E`` is drawn with probability ``m(E) exp(-E / scale) / Z`` by inversion
   with a lazily read uniform ``U`` and python-flint ``arb`` balls at increasing precision. The
   levels are visited in decreasing weight (a float estimate: the order does not change the
   law). ``Z`` is one polynomial with the integer coefficients ``m(E)`` evaluated at
   ``exp(-1 / scale)``; the weights of the levels the walk visits are computed as it goes.
   For speed, only a window ``[E_lo, E_hi]`` of levels is computed at first: the levels
   outside it weigh about ``2^-80`` of ``Z`` at most, by exact bounds (``N(E_lo - 1)`` below;
   above, chunks ``(g, g']`` of ``N(g') - N(g)`` sequences of weight at most
   ``exp(-(g + 1) / scale)``, and ``N_total - N(g)`` beyond the last), carried as an interval
   in ``Z``; should ``U`` fall where that interval matters, every level is computed and the
   walk resumes with the same ``U`` and the same order, so the released level is the ideal
   one.
   **The fast law** (int64 counts, ``k d`` above :data:`_SMALL`), after the pruning of Wu
   and Zhang ("Faster Differentially Private Top-k Selection: A Joint Exponential Mechanism
   with Pruning", NeurIPS 2024): the candidates whose count is below ``c_(k)`` minus the
   reach (where every sequence using one weighs about ``2^-80`` of ``Z`` at most) are not in
   the profile, the counts below ``c_(k)`` share one table slot per distinct value, and the
   levels outside a window ``[lo, hi]`` around the mode are one group. Inside the window the
   cumulative weights ``C(E)`` at the levels where ``N`` changes are computed in float64 from
   ``log N`` (summation by parts: positive terms only) with a rigorous error bound, and the
   group's mass enters as an interval (``N(lo - 1)`` below, ``d!/(d-k)! exp(-(hi+1)/scale)``
   above). The level is the one inversion with ``U`` picks, in increasing ``E``, when the
   bounds decide; otherwise (about once in 10^4 draws, or whenever ``U`` lands where the
   pruned mass matters) every level is counted exactly and the ``arb`` walk above runs with
   the same ``U`` in the same order, so the released level is the ideal one.
3. **The sequence.** Given ``E``, the first position ``i*`` whose error equals ``E`` is drawn
   with probability proportional to ``prod_{i<i*}(|S_i(<E)| - (i-1)) |T_{i*}(E)|
   prod_{i>i*}(|S_i(<=E)| - (i-1))`` (``S_i(<=E) = {j : c_(i) - c_j <= E}``, ``S_i(<E)``
   strict, ``T_i(E) = {j : c_(i) - c_j = E}``), then each position uniformly among its set
   minus the earlier picks, every draw by :func:`~dpselect.sampling.uniform.uniform_index`.

Privacy (the paper's argument): under ``LInfDistance(monotonic=True)`` every count moves by at
most ``d_in`` in one direction, so ``c_(i)`` and ``c_{s_i}`` both move within ``[0, d_in]``
(or ``[-d_in, 0]``) and ``E(s)`` moves by at most ``Delta_u = d_in``; otherwise by ``Delta_u =
2 d_in``. The mechanism is the exponential mechanism on the utility ``-E``: pure
``epsilon = 2 Delta_u / scale``, and ``epsilon``-bounded range, hence ``epsilon^2 / 8``-zCDP
(Durfee and Rogers 2019; Cesar and Rogers 2021; seed 004). Both are rounded up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt

from ..core.arithmetic import float_up
from ..core.domains import IntDomain, VectorDomain
from ..core.errors import DomainError, MeasureError, MetricError, ParameterError
from ..core.measurement import Measurement
from ..core.measures import MaxDivergence, Measure, ZeroConcentratedDivergence
from ..core.metrics import LInfDistance
from ..sampling.source import RandomSource, resolve_source
from ..sampling.uniform import LazyUniform
from .joint_top_k_fast import _fast_law, _FastLaw
from .joint_top_k_levels import _merge, _reach, _walk, _Window, _window
from .joint_top_k_profile import _normalised, _Profile, _profile
from .joint_top_k_sequence import (
    _descending,
    _first_position_weights,
    _items_by_profile,
    _position_sets,
    _sample_ranks,
)
from .report_noisy_max import check_selection_measure
from .validate import check_int, check_scale

__all__ = ["joint_top_k_loss", "make_joint_top_k"]

#: Bits by which the levels left out of the first window are bounded below ``Z``.
WINDOW_BITS = 80


def joint_top_k_loss(d_range: Any, scale: Any, measure: Measure) -> float:
    """The privacy loss of the joint exponential mechanism at range distance ``d_range``.

    ``Delta_u = d_range`` (``d_in`` when monotonic, else ``2 d_in``), ``epsilon = 2 Delta_u /
    scale``; ``rho = epsilon^2 / 8`` (bounded range). Exact rationals, rounded up once.

    Parameters
    ----------
    d_range : int, float or Fraction
        The sensitivity of the utility ``-E(s)``, ``>= 0`` (``inf`` allowed).
    scale : int, float or Fraction
        The sampling scale, ``> 0``.
    measure : Measure
        ``MaxDivergence()`` or ``ZeroConcentratedDivergence()``.

    Returns
    -------
    float
        ``epsilon`` or ``rho``, rounded up (0 at ``d_range = 0``).

    Raises
    ------
    MeasureError
        Any other measure.
    """
    if d_range == 0:
        return 0.0
    if isinstance(d_range, float) and math.isinf(d_range):
        return math.inf
    epsilon = 2 * Fraction(d_range) / Fraction(scale)
    if isinstance(measure, MaxDivergence):
        return float_up(epsilon)
    if isinstance(measure, ZeroConcentratedDivergence):
        return float_up(epsilon * epsilon / 8)
    raise MeasureError(
        f"output_measure must be MaxDivergence() or ZeroConcentratedDivergence(), got {measure!r}"
    )


#: Inputs with ``k d`` at most this are handled without a window (few levels in all).
_SMALL = 64


class _Prepared:
    """The exact law on one count vector: prepared once, then any number of draws.

    ``bits=None`` computes every level at once; otherwise a window of levels first
    (module docstring), every level only when a draw needs it (then cached). ``fast``: the
    float64 law with certified bounds (int64 counts; :func:`_fast_law`) decides the level,
    the exact ``arb`` walk over every level (increasing ``E``, the same ``U``) when it does
    not; ``fast=False`` runs the exact window walk. ``slack`` widens the fast law's bounds
    (tests: ``1e300`` sends every draw to the exact path).
    """

    def __init__(
        self,
        values: npt.NDArray[Any],
        k: int,
        scale: Fraction,
        bits: int | None = WINDOW_BITS,
        small: int = _SMALL,
        fast: bool = True,
        slack: float = 1.0,
    ) -> None:
        self.values, self.k, self.scale, self.bits = values, k, scale, bits
        d = int(values.shape[0])
        self.order: npt.NDArray[np.int64] | None = None
        if k * d <= small:
            bits = None
        floor = kth = None
        if bits is not None and values.dtype.kind != "O":
            reach = _reach(d, k, scale, bits)
            kth = int(np.partition(values, d - k)[d - k])
            if reach < kth:
                floor = kth - math.floor(reach)
        self.profile = _profile(values, k, floor, kth)
        self.law: _FastLaw | None = None
        if fast and bits is not None and values.dtype.kind != "O":
            self.law = _fast_law(self.profile, scale, bits, slack)
        self._window = None if self.law is not None else _window(self.profile, scale, bits)
        self.full: tuple[_Profile, _Window] | None = None
        self.ascending: tuple[_Profile, _Window] | None = None
        self.sets: dict[int, tuple[list[int], list[int], list[int]]] = {}

    @property
    def window(self) -> _Window:
        """The exact window of levels (computed on first use when the fast law is used)."""
        if self._window is None:
            self._window = _window(self.profile, self.scale, self.bits)
        return self._window

    def _every_level_ascending(self) -> tuple[_Profile, _Window]:
        """Every level exactly, by increasing ``E``: the order of the fast law's inversion."""
        if self.ascending is None:
            profile = self.profile
            if not profile.complete:
                profile = _profile(self.values, self.k, None)
            levels = profile.level_counts(0, profile.max_level)
            self.ascending = (profile, _Window(levels, 0, []))
        return self.ascending

    def _everything(self) -> tuple[_Profile, _Window]:
        if self.full is None:
            profile = self.profile
            if not profile.complete:
                profile = _profile(self.values, self.k, None)
            self.full = (profile, _merge(self.window, _window(profile, self.scale, None)))
        return self.full

    def draw(self, source: RandomSource) -> npt.NDArray[np.int64]:
        """One release: the level by inversion, then the sequence."""
        u = LazyUniform.sample(source)
        profile = self.profile
        found = None if self.law is None else self.law.level(u)
        if found is not None:
            level = found
        elif self.law is not None:  # the float bounds did not decide: exactly, same U and order
            profile, window = self._every_level_ascending()
            idx = _walk(window, self.scale, u, source)
            if idx is None:  # pragma: no cover - a window with no tail always decides
                raise AssertionError("the inversion over every level did not decide")
            level = window.levels[idx][0]
        else:
            window = self.window
            idx = _walk(window, self.scale, u, source)
            if idx is None:  # the levels outside the window matter: all of them, same U
                profile, window = self._everything()
                idx = _walk(window, self.scale, u, source)
                if idx is None:  # pragma: no cover - a window with no tail always decides
                    raise AssertionError("the inversion over every level did not decide")
            level = window.levels[idx][0]
        if level not in self.sets:
            n_lt, n_le = _position_sets(profile, level)
            self.sets[level] = (n_lt, n_le, _first_position_weights(n_lt, n_le))
        ranks = _sample_ranks(self.sets[level], source)
        if self.values.shape[0] <= _SMALL:  # small: one sort, kept for later draws
            if self.order is None:
                self.order = _descending(self.values)
            return self.order[ranks]
        return _items_by_profile(self.values, ranks, profile)


# --------------------------------------------------------------------------- constructor
@dataclass(frozen=True)
class _JointParameters:
    """The checked arguments of :func:`make_joint_top_k`."""

    domain: VectorDomain
    metric: LInfDistance
    measure: Measure
    k: int
    scale: Fraction

    def release(self, x: Any, source: RandomSource | None) -> npt.NDArray[np.int64]:
        """One release on the counts ``x`` (refused when shorter than ``k``)."""
        size = len(x)
        if size < self.k:
            raise ParameterError(
                f"k must be at most the number of candidates ({size}), got {self.k}"
            )
        values = _normalised(x)
        return _Prepared(values, self.k, self.scale).draw(resolve_source(source))

    def loss(self, d_in: Any) -> float:
        """The privacy map: :func:`joint_top_k_loss` at the metric's range distance."""
        return joint_top_k_loss(self.metric.range_distance(d_in), self.scale, self.measure)


def _check_domain(domain: Any) -> VectorDomain:
    if not isinstance(domain, VectorDomain) or not isinstance(domain.element_domain, IntDomain):
        raise DomainError(
            "input_domain must be vector_domain(atom_domain(int)): the counts must be "
            f"integers for the exact law, got {domain!r}"
        )
    return domain


def _joint_parameters(
    input_domain: Any, input_metric: Any, output_measure: Any, k: Any, scale: Any
) -> _JointParameters:
    """The arguments of :func:`make_joint_top_k`, checked in order (domain, metric, measure,
    ``k``, ``k`` against the domain's size, scale)."""
    domain = _check_domain(input_domain)
    if not isinstance(input_metric, LInfDistance):
        raise MetricError(f"input_metric must be LInfDistance(monotonic=...), got {input_metric!r}")
    metric = input_metric
    measure = check_selection_measure(output_measure)
    k = check_int(k, "k", minimum=1)
    if domain.size is not None and k > domain.size:
        raise ParameterError(f"k must be at most the number of candidates ({domain.size}), got {k}")
    exact_scale = Fraction(check_scale(scale, "scale", allow_zero=False))
    return _JointParameters(domain, metric, measure, k, exact_scale)


def make_joint_top_k(
    input_domain: VectorDomain,
    input_metric: LInfDistance,
    output_measure: Measure,
    *,
    k: int,
    scale: float | int | Fraction,
    source: RandomSource | None = None,
) -> Measurement:
    """The joint exponential mechanism for top-k (Gillenwater et al. 2022), exactly.

    Releases an ordered sequence ``s`` of ``k`` distinct indices with probability
    proportional to ``exp(-E(s) / scale)``, ``E(s) = max_i (c_(i) - c_{s_i})`` with ``c_(1) >=
    c_(2) >= ...`` the counts in decreasing order (the paper's calibration: ``scale = 2 Delta
    / epsilon``), sampled exactly (module docstring). Privacy: ``E(s)`` has sensitivity
    ``Delta_u = d_in`` under a monotonic metric, else ``2 d_in``; the release is ``epsilon = 2
    Delta_u / scale``-DP and ``epsilon``-bounded range, so ``epsilon^2 / 8``-zCDP (Durfee and
    Rogers 2019; Cesar and Rogers 2021). Both rounded up.

    Parameters
    ----------
    input_domain : VectorDomain
        ``vector_domain(atom_domain(int))``: one integer count per public candidate (floats
        are refused: the levels must be integers for the exact law).
    input_metric : LInfDistance
        ``LInfDistance(monotonic=...)``: each count moves by at most ``d_in`` (monotonic: all
        in the same direction). ``RangeDistance()`` is read as monotonic (``E`` does not
        change when every count moves by the same amount).
    output_measure : Measure
        ``MaxDivergence()`` or ``ZeroConcentratedDivergence()``.
    k : int
        The length of the released sequence, ``>= 1`` and at most the number of candidates
        (checked against each input's length, a public fact, when the domain has no size).
    scale : int, float or Fraction
        The sampling scale, ``> 0`` and finite (a float is taken exactly).
    source : RandomSource or None, default None
        Where the random bits come from; ``None`` is the CSPRNG.

    Returns
    -------
    Measurement
        From integer count vectors to an int64 array of ``k`` distinct indices (position
        ``i`` estimates the ``i``-th largest count).

    Raises
    ------
    ParameterError
        ``k`` not an int in ``[1, size]``, or ``scale`` not a finite positive number; at call
        time, an input shorter than ``k``.
    DomainError
        ``input_domain`` is not a vector domain of int atoms.
    MetricError
        ``input_metric`` is not an ``LInfDistance``.
    MeasureError
        ``output_measure`` is neither ``MaxDivergence()`` nor ``ZeroConcentratedDivergence()``.

    Examples
    --------
    >>> from dpselect.core import LInfDistance, MaxDivergence, atom_domain, vector_domain
    >>> from dpselect.mechanisms import make_joint_top_k
    >>> from dpselect.sampling import InsecureSeededSource
    >>> m = make_joint_top_k(
    ...     vector_domain(atom_domain(int)), LInfDistance(monotonic=True), MaxDivergence(),
    ...     k=2, scale=2.0, source=InsecureSeededSource(0),  # seeded: not private
    ... )
    >>> m.map(1)  # 2 * 1 / 2
    1.0
    >>> sorted(m([50, 3, 40, 1]).tolist())  # the two large counts, but for odds of ~1e-7
    [0, 2]
    """
    p = _joint_parameters(input_domain, input_metric, output_measure, k, scale)
    return Measurement(p.domain, p.metric, p.measure, partial(p.release, source=source), p.loss)
