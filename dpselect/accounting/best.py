"""``best_epsilon``: the smallest total epsilon among the composition theorems that apply.

Mechanisms are described by :class:`MechanismLoss` values, one per mechanism run:

==================  =================================  ==========================================
kind                parameters                         meaning
==================  =================================  ==========================================
``"pure"``          ``epsilon``                        ``epsilon``-DP (Laplace, permute-and-flip,
                                                       Laplace noisy max)
``"bounded_range"`` ``epsilon``                        ``epsilon``-bounded range, hence
                                                       ``epsilon``-DP (exponential mechanism,
                                                       Gumbel noisy max / top-k)
``"zcdp"``          ``rho``                            ``rho``-zCDP (Gaussian: see
                                                       :meth:`MechanismLoss.gaussian`)
``"approx"``        ``epsilon``, ``delta``             ``(epsilon, delta)``-DP
==================  =================================  ==========================================

Theorems tried (each only where its hypotheses hold):

- basic composition (adaptive; seed 002),
- advanced composition (Dwork, Rothblum, Vadhan 2010) when all mechanisms have the same
  ``(epsilon, delta)``,
- optimal homogeneous composition (Kairouz, Oh, Viswanath 2015, Theorem 3.3), same condition,
- the heterogeneous bound (Kairouz, Oh, Viswanath 2015, Theorem 3.5),
- zCDP composition and the Canonne-Kamath-Steinke conversion (no ``"approx"`` mechanism with
  ``delta > 0``),
- Renyi-DP composition with exact per-class curves and the same conversion (same condition),
- optimal non-adaptive bounded-range composition (Dong, Durfee, Rogers 2020, Theorem 3), only
  with ``adaptive=False`` and all mechanisms ``"bounded_range"`` with one epsilon.

All are valid for adaptively chosen mechanisms (with their parameters fixed in advance) except
the last. Every candidate is rounded up, so the minimum is a valid bound.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

from dpselect.core.arithmetic import Number
from dpselect.core.errors import ParameterError

from .composition import advanced_composition, basic_composition
from .optimal import (
    bounded_range_composition,
    kov_heterogeneous_composition,
    optimal_homogeneous_composition,
)
from .params import check_delta, check_loss
from .renyi import (
    RenyiCurve,
    bounded_range_rdp,
    compose_rdp,
    pure_dp_rdp,
    rdp_to_approx_dp,
    zcdp_rdp,
)
from .zcdp import zcdp_to_approx_dp

__all__ = ["THEOREMS", "CompositionResult", "MechanismLoss", "best_epsilon"]

MechanismKind = Literal["pure", "bounded_range", "zcdp", "approx"]

BASIC = "basic composition"
ADVANCED = "advanced composition (Dwork-Rothblum-Vadhan 2010)"
KOV_HOMOGENEOUS = "optimal homogeneous composition (Kairouz-Oh-Viswanath 2015, Thm 3.3)"
KOV_HETEROGENEOUS = "heterogeneous composition (Kairouz-Oh-Viswanath 2015, Thm 3.5)"
ZCDP = "zCDP composition + CKS conversion (Bun-Steinke 2016; Canonne-Kamath-Steinke 2020)"
RENYI = "Renyi DP composition + CKS conversion (Mironov 2017; Canonne-Kamath-Steinke 2020)"
BOUNDED_RANGE = "optimal non-adaptive bounded-range composition (Dong-Durfee-Rogers 2020, Thm 3)"

#: The names :func:`best_epsilon` may report, simplest first (the order breaks ties).
THEOREMS = (BASIC, ADVANCED, KOV_HOMOGENEOUS, KOV_HETEROGENEOUS, ZCDP, RENYI, BOUNDED_RANGE)


@dataclass(frozen=True)
class MechanismLoss:
    """The privacy loss of one mechanism run, in its native form (see the module table)."""

    kind: MechanismKind
    epsilon: float = 0.0
    delta: float = 0.0
    rho: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in ("pure", "bounded_range", "zcdp", "approx"):
            raise ParameterError(
                f"kind must be 'pure', 'bounded_range', 'zcdp' or 'approx', got {self.kind!r}"
            )
        check_loss(self.epsilon, "epsilon")
        check_delta(self.delta)
        check_loss(self.rho, "rho")
        if self.kind == "zcdp" and (self.epsilon or self.delta):
            raise ParameterError("a 'zcdp' loss is described by rho only")
        if self.kind != "zcdp" and self.rho:
            raise ParameterError(f"a {self.kind!r} loss has no rho")
        if self.kind in ("pure", "bounded_range") and self.delta:
            raise ParameterError(f"a {self.kind!r} loss has no delta")

    @classmethod
    def pure(cls, epsilon: float) -> MechanismLoss:
        """An ``epsilon``-DP mechanism.

        Parameters
        ----------
        epsilon : float
            The mechanism's ``epsilon >= 0``.

        Returns
        -------
        MechanismLoss
            A loss of kind ``"pure"``.
        """
        return cls("pure", epsilon=epsilon)

    @classmethod
    def bounded_range(cls, epsilon: float) -> MechanismLoss:
        """An ``epsilon``-bounded-range mechanism (exponential mechanism, Gumbel noisy max).

        Parameters
        ----------
        epsilon : float
            The bounded-range parameter ``epsilon >= 0`` (for the exponential mechanism at Gumbel
            scale ``s`` and range distance ``d``: ``d / s``).

        Returns
        -------
        MechanismLoss
            A loss of kind ``"bounded_range"``.
        """
        return cls("bounded_range", epsilon=epsilon)

    @classmethod
    def zcdp(cls, rho: float) -> MechanismLoss:
        """A ``rho``-zCDP mechanism.

        Parameters
        ----------
        rho : float
            The mechanism's zCDP ``rho >= 0``.

        Returns
        -------
        MechanismLoss
            A loss of kind ``"zcdp"``.
        """
        return cls("zcdp", rho=rho)

    @classmethod
    def gaussian(cls, sensitivity: float, sigma: float) -> MechanismLoss:
        """The Gaussian mechanism: ``Delta^2 / (2 sigma^2)``-zCDP, rounded up.

        Parameters
        ----------
        sensitivity : float
            The query's L2 sensitivity ``Delta >= 0``.
        sigma : float
            The noise's standard deviation, ``> 0``.

        Returns
        -------
        MechanismLoss
            A loss of kind ``"zcdp"`` with ``rho = Delta^2 / (2 sigma^2)``.
        """
        from .zcdp import gaussian_zcdp

        return cls("zcdp", rho=gaussian_zcdp(sensitivity, sigma))

    @classmethod
    def approx(cls, epsilon: float, delta: float) -> MechanismLoss:
        """An ``(epsilon, delta)``-DP mechanism.

        Parameters
        ----------
        epsilon : float
            The mechanism's ``epsilon >= 0``.
        delta : float
            The mechanism's ``delta``, in ``[0, 1]``.

        Returns
        -------
        MechanismLoss
            A loss of kind ``"approx"``.
        """
        return cls("approx", epsilon=epsilon, delta=delta)

    @property
    def approx_pair(self) -> tuple[float, float]:
        """``(epsilon, delta)`` implied by this loss (not defined for ``"zcdp"``)."""
        if self.kind == "zcdp":
            raise ParameterError("a zCDP loss has no single (epsilon, delta) pair")
        return self.epsilon, self.delta

    @property
    def zcdp_rho(self) -> Fraction:
        """The exact ``rho`` of zCDP implied by this loss (not defined for ``delta > 0``)."""
        e = Fraction(self.epsilon)
        if self.kind == "zcdp":
            return Fraction(self.rho)
        if self.kind == "bounded_range":
            return e * e / 8
        if self.delta:
            raise ParameterError("an (epsilon, delta) loss with delta > 0 has no zCDP rho")
        return e * e / 2

    def renyi_curve(self) -> RenyiCurve:
        """This loss as a Renyi-DP curve (exact worst case of its class)."""
        if self.kind == "zcdp":
            return zcdp_rdp(self.rho)
        if self.kind == "bounded_range":
            return bounded_range_rdp(self.epsilon)
        if self.delta:
            raise ParameterError("an (epsilon, delta) loss with delta > 0 has no Renyi curve")
        return pure_dp_rdp(self.epsilon)


@dataclass(frozen=True)
class CompositionResult:
    """The winning bound: ``(epsilon, delta)``-DP by ``theorem``; ``candidates`` holds the
    epsilon of every theorem that applied."""

    epsilon: float
    delta: float
    theorem: str
    candidates: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class _Batch:
    """The mechanisms to compose and what the theorems ask of them: the total ``delta``,
    their ``(epsilon, delta)`` pairs (``None`` when one is a zCDP loss), whether they are all
    alike, whether one has ``delta > 0``, and whether they are chosen adaptively."""

    mechs: list[MechanismLoss]
    d: Fraction
    pairs: list[tuple[float, float]] | None
    homogeneous: bool
    has_delta: bool
    adaptive: bool

    @property
    def k(self) -> int:
        """How many mechanisms are composed."""
        return len(self.mechs)


Route = Callable[[_Batch], "tuple[float, float] | None"]


def _basic(b: _Batch) -> tuple[float, float] | None:
    """Basic composition, when the deltas sum to at most the total."""
    if b.pairs is None or sum(Fraction(p[1]) for p in b.pairs) > b.d:
        return None
    return basic_composition(b.pairs)


def _advanced(b: _Batch) -> tuple[float, float] | None:
    """Advanced composition of identical mechanisms, with the delta left over as slack."""
    if not b.homogeneous or b.pairs is None:
        return None
    slack = b.d - b.k * Fraction(b.pairs[0][1])
    if slack <= 0:
        return None
    return advanced_composition(b.pairs[0][0], b.k, slack, delta=b.pairs[0][1])


def _kov_homogeneous(b: _Batch) -> tuple[float, float] | None:
    """The optimal composition of identical mechanisms (KOV Thm 3.3)."""
    if not b.homogeneous or b.pairs is None or b.d == 0:
        return None
    try:
        eps = optimal_homogeneous_composition(b.pairs[0][0], b.k, b.d, delta=b.pairs[0][1])
    except ParameterError:
        return None
    return eps, float(b.d)


def _kov_heterogeneous(b: _Batch) -> tuple[float, float] | None:
    """KOV Thm 3.5 for different mechanisms, with the delta left over as slack."""
    if b.pairs is None:
        return None
    survive = Fraction(1)
    for _, di in b.pairs:
        survive *= 1 - Fraction(di)
    if survive == 0:
        return None
    slack = 1 - (1 - b.d) / survive
    if slack <= 0:
        return None
    return kov_heterogeneous_composition(b.pairs, slack)


def _zcdp_route(b: _Batch) -> tuple[float, float] | None:
    """The sum of the zCDP ``rho`` converted at the total delta (no ``delta > 0`` loss)."""
    if b.has_delta or b.d == 0:
        return None
    rho = sum((m.zcdp_rho for m in b.mechs), Fraction(0))
    return zcdp_to_approx_dp(rho, b.d), float(b.d)


def _renyi_route(b: _Batch) -> tuple[float, float] | None:
    """The composed Renyi curves converted at the total delta (no ``delta > 0`` loss)."""
    if b.has_delta or b.d == 0:
        return None
    cache: dict[MechanismLoss, RenyiCurve] = {}
    curves = [cache.setdefault(m, m.renyi_curve()) for m in b.mechs]
    eps, _ = rdp_to_approx_dp(compose_rdp(curves), b.d)
    return eps, float(b.d)


def _bounded_range_route(b: _Batch) -> tuple[float, float] | None:
    """The optimal non-adaptive composition of identical bounded-range mechanisms (DDR)."""
    if b.adaptive or b.d == 0 or not all(m.kind == "bounded_range" for m in b.mechs):
        return None
    if len({m.epsilon for m in b.mechs}) != 1:
        return None
    return bounded_range_composition(b.mechs[0].epsilon, b.k, b.d), float(b.d)


#: The theorems in the order they are tried (ties go to the earlier one in :data:`THEOREMS`).
_ROUTES: tuple[tuple[str, Route], ...] = (
    (BASIC, _basic),
    (ADVANCED, _advanced),
    (KOV_HOMOGENEOUS, _kov_homogeneous),
    (KOV_HETEROGENEOUS, _kov_heterogeneous),
    (ZCDP, _zcdp_route),
    (RENYI, _renyi_route),
    (BOUNDED_RANGE, _bounded_range_route),
)


def best_epsilon(
    mechanisms: Iterable[MechanismLoss], delta: Number, *, adaptive: bool = True
) -> CompositionResult:
    """The smallest total epsilon at total ``delta`` among the theorems that apply.

    ``adaptive=True`` (default) admits only theorems valid when each mechanism is chosen after
    seeing earlier outputs (its privacy parameter fixed in advance). With ``adaptive=False``
    the optimal non-adaptive bounded-range composition is tried as well.

    Parameters
    ----------
    mechanisms : iterable of MechanismLoss
        One loss per mechanism run (a mechanism run twice appears twice); none gives
        ``(0, 0)`` by basic composition.
    delta : float
        The total ``delta`` allowed, in ``[0, 1]``. Basic composition needs the mechanisms'
        deltas to sum to at most this; the zCDP and Renyi routes need ``delta > 0``.
    adaptive : bool, default True
        ``True``: only theorems valid for adaptively chosen mechanisms. ``False`` (the
        mechanisms are fixed in advance) also tries the non-adaptive bounded-range theorem.

    Returns
    -------
    CompositionResult
        The least epsilon (rounded up), the delta it holds at (the sum of the mechanisms'
        deltas for basic composition, else ``delta``), the theorem's name (one of
        :data:`THEOREMS`) and, in ``candidates``, the epsilon of every theorem that applied.
    """
    mechs = list(mechanisms)
    for i, m in enumerate(mechs):
        if not isinstance(m, MechanismLoss):
            raise ParameterError(f"mechanisms[{i}] must be a MechanismLoss, got {m!r}")
    d = check_delta(delta)
    if not mechs:
        return CompositionResult(0.0, 0.0, BASIC, {BASIC: 0.0})
    has_zcdp = any(m.kind == "zcdp" for m in mechs)
    has_delta = any(m.delta > 0 for m in mechs)
    pairs = None if has_zcdp else [m.approx_pair for m in mechs]
    homogeneous = pairs is not None and len(set(pairs)) == 1
    batch = _Batch(mechs, d, pairs, homogeneous, has_delta, adaptive)
    found: dict[str, tuple[float, float]] = {}
    for name, route in _ROUTES:
        result = route(batch)
        if result is not None:
            found[name] = result
    if not found:
        raise ParameterError(
            "no composition theorem applies: zCDP losses need delta > 0 and cannot be mixed "
            "with (epsilon, delta > 0) losses; the total of the mechanisms' deltas must not "
            "exceed delta"
        )
    winner = min(found, key=lambda name: (found[name][0], THEOREMS.index(name)))
    eps, used_delta = found[winner]
    return CompositionResult(eps, used_delta, winner, {n: v[0] for n, v in found.items()})
