"""Planning a top-k over public candidates: which mechanism, at which scale, at what cost.

:func:`plan_top_k` turns the public facts of a query (``n`` candidates, ``k``, the target
``(epsilon, delta)``, the mechanism asked for or ``"auto"``, whether counts are released, the
L1 sensitivity ``c`` of the histograms) into a :class:`TopKPlan`: the calibrated
:class:`~dpselect.core.measurement.Measurement` (map at one person), its cost in
each accounting (``epsilon, delta`` for a basic ledger, ``rho`` for a zCDP ledger) and its
accuracy statement. :func:`resolve_top_k_method` is the public choice ("auto": by
:mod:`dpselect.mechanisms.choice`), :func:`calibrate_scale` the smallest scale meeting a pure
epsilon. Nothing here reads data or samples: :func:`dpselect.top_k` and the recipes charge a
ledger with a plan's cost and only then run its measurement.

``max_rows_per_value = r`` (a person adds at most ``r`` rows to each of at most ``c`` scores:
L-infinity ``r``, L1 ``c r``, L2 ``r sqrt(c)``; docs/contribution_bounding.md): the selections
are calibrated at range distance ``r`` (their maps at ``d_in = r``, seed 001, Sec. 1.1), the
histograms at L1 ``c r`` / L2 ``r sqrt(c)`` (:func:`make_noisy_histogram_top_k`), Gumbel with
counts at L-infinity ``r`` for both its rankings and its counts. Every scale is then ``r``
times its ``r = 1`` value, and so is every accuracy figure; the mechanism ``"auto"`` picks is
the same as at ``r = 1`` (:mod:`dpselect.mechanisms.choice`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from ..accounting.zcdp import pure_dp_to_zcdp, zcdp_to_approx_dp
from ..core.arithmetic import float_up, printed_up
from ..core.calibration import binary_search_param
from ..core.domains import atom_domain, vector_domain
from ..core.errors import ParameterError
from ..core.measurement import Measurement
from ..core.measures import MaxDivergence, Measure, ZeroConcentratedDivergence
from ..core.metrics import LInfDistance
from ..mechanisms.choice import (
    METHOD_NAMES,
    choose_top_k,
    composed_epsilon,
    gap_needed,
    gaussian_histogram_sigma,
    per_round_epsilon,
)
from ..mechanisms.gumbel_counts import make_gumbel_top_k_with_counts
from ..mechanisms.histogram_top_k import HistogramNoise, make_noisy_histogram_top_k
from ..mechanisms.report_noisy_max import make_noisy_top_k, selection_loss
from ..mechanisms.topk_accuracy import count_halfwidth, histogram_halfwidth, selection_margin
from ..sampling.source import RandomSource

__all__ = [
    "CONFIDENCE",
    "GUMBEL_WITH_COUNTS",
    "ZCDP_LEDGER_OPTIONS",
    "TopKPlan",
    "calibrate_scale",
    "joint_may_compete",
    "plan_gumbel_counts",
    "plan_histogram_top_k",
    "plan_joint_top_k",
    "plan_top_k",
    "resolve_top_k_method",
]

#: The confidence of the accuracy statements.
CONFIDENCE = 0.95
_NOISE = {"permute_and_flip": "exponential", "gumbel": "gumbel", "laplace": "laplace"}
GUMBEL_WITH_COUNTS = (
    "exponential mechanism, one-shot Gumbel top-k (Durfee and Rogers 2019), then discrete "
    "Laplace counts (Canonne, Kamath and Steinke 2020)"
)


@dataclass(frozen=True)
class TopKPlan:
    """A calibrated top-k: the measurement, what it costs in each accounting, what it claims.

    ``measurement`` maps one person to its loss in its own measure (``d_in = 1`` for the
    histograms, whose metric counts persons; ``d_in = r = max_rows_per_value`` for the
    selections and Gumbel with counts, whose metric is the scores' L-infinity distance);
    ``epsilon, delta`` is the guarantee a basic ledger is charged (``kind``), ``rho`` what a
    zCDP ledger is charged.
    """

    measurement: Measurement
    method: str  # choice-module name (or "gumbel_counts")
    name: str  # the method cited by name
    scale: float
    count_scale: float | None
    epsilon: float
    delta: float
    rho: float
    kind: Literal["pure", "bounded_range", "approx"]
    accounting: str
    accuracy: str
    returns_counts: bool
    #: the score margin of the accuracy statement (counts; at CONFIDENCE): public
    margin: float = 0.0
    #: the half-width ``t`` of the noisy counts' statement (mechanisms that release counts)
    count_halfwidth: float | None = None


def _selection(
    n: int, k: int, noise: str, scale: float, measure: Measure, source: RandomSource | None
) -> Measurement:
    domain = vector_domain(atom_domain(int), size=n)
    return make_noisy_top_k(
        domain,
        LInfDistance(monotonic=True),
        measure,
        k=k,
        scale=scale,
        noise=noise,  # type: ignore[arg-type]
        source=source,
    )


#: In a zCDP ledger the pure-only mechanisms (permute-and-flip, Laplace) cost ``eps^2 / 2``,
#: four times the exponential mechanism's ``eps^2 / 8`` (bounded range): "auto" then weighs
#: only the options whose zCDP cost is not inflated.
ZCDP_LEDGER_OPTIONS = ("gumbel", "gaussian_histogram")


def resolve_top_k_method(
    mech: str,
    k: int,
    n: int,
    eps: float,
    delta: float,
    c: int,
    counts: bool,
    zcdp_ledger: bool = False,
) -> str:
    """The mechanism to run (choice-module name): ``mech`` itself, or the public choice (a
    function of ``k, n, eps, delta, c``, ``counts`` and the ledger's accounting only).

    Parameters
    ----------
    mech : str
        ``"auto"`` or a mechanism of ``dpselect.recipes``' ``MECHANISMS``.
    k : int
        How many values are released.
    n : int
        The number of candidates.
    eps, delta : float
        The target at one person.
    c : int
        ``max_contributions``.
    counts : bool
        Whether noisy counts are released too.
    zcdp_ledger : bool, default False
        Whether a zCDP ledger is charged (``"auto"`` then weighs only
        :data:`ZCDP_LEDGER_OPTIONS`).

    Returns
    -------
    str
        A choice-module name, or ``"gumbel_counts"``.
    """
    if mech != "auto":
        key = mech
        if key == "gaussian_histogram" and delta == 0:
            raise ParameterError('mechanism="gaussian_histogram" needs delta > 0')
        if counts and key == "joint":
            raise ParameterError(
                'counts=True is available with mechanism="gumbel" or a histogram mechanism'
            )
        if counts and key in _NOISE:
            if key != "gumbel":
                raise ParameterError(
                    'counts=True is available with mechanism="gumbel" or a histogram mechanism'
                )
            return "gumbel_counts"
        return key
    best, options = choose_top_k(k, n, eps, delta, c)
    if zcdp_ledger:
        options = tuple(o for o in options if o.mechanism in ZCDP_LEDGER_OPTIONS)
        best = min(options, key=lambda o: o.gap)
    if not counts or best.mechanism.endswith("_histogram"):
        return best.mechanism
    # counts wanted: a histogram releases them free, Gumbel + counts pays half for them.
    histograms = [o for o in options if o.mechanism.endswith("_histogram")]
    if not histograms:
        return "gumbel_counts"
    hist = min(histograms, key=lambda o: o.gap)
    gumbel_gap = gap_needed("gumbel", k, n, float_up(Fraction(2 * k) / Fraction(eps)))
    return hist.mechanism if hist.gap <= gumbel_gap else "gumbel_counts"


def _positions(k: int) -> str:
    return (
        "the value returned has" if k == 1 else f"for every i = 1..{k}, the i-th value returned has"
    )


def _largest(k: int) -> str:
    return "the largest score" if k == 1 else "the i-th largest score"


def _selection_accuracy(noise: str, scale: float, k: int, n: int) -> str:
    margin = selection_margin(noise, scale, k, n, 1 - CONFIDENCE)
    return (
        f"accuracy: with probability at least {CONFIDENCE:.0%}, {_positions(k)} a score at "
        f"least {_largest(k)} minus {printed_up(margin)} (scores are counts after contribution "
        "bounding; noise tails and a union bound over the rounds)"
    )


def _below_noise(t: float) -> str:
    """What a noisy count below the noise level means (public: ``t`` is)."""
    return (
        f"; a noisy count of at most {t:g} is indistinguishable from zero and is shown as "
        "'< noise' (below_noise), never negative"
    )


def _histogram_accuracy(noise: HistogramNoise, scale: float, k: int, n: int) -> str:
    t = histogram_halfwidth(noise, scale, n, 1 - CONFIDENCE)
    return (
        f"accuracy: with probability at least {CONFIDENCE:.0%}, {_positions(k)} a score at "
        f"least {_largest(k)} minus {2 * t}, and every noisy count is within +-{t} of its "
        "value's true count (scores are counts after contribution bounding; noise tails and "
        f"a union bound over the {n} counts){_below_noise(t)}"
    )


def plan_top_k(
    n: int,
    k: int,
    eps: float,
    delta: float,
    mech: str,
    counts: bool,
    c: int,
    source: RandomSource | None,
    zcdp_ledger: bool = False,
    max_rows_per_value: int = 1,
) -> TopKPlan:
    """Calibrate the chosen mechanism to ``(eps, delta)`` at one person.

    ``mech="auto"``: the criterion's pick (:func:`resolve_top_k_method`), or the joint
    exponential mechanism (Gillenwater, Joseph, Munoz Medina and Ribero Diaz, ICML 2022) when
    :func:`joint_may_compete` and its 95% bound on the ranked error ``E = max_i (c_(i) -
    c_{s_i})`` (its accuracy line's margin: the utility theorem) is below the margin of the
    pick's own accuracy line; the plan's accuracy line then states both numbers. Public facts
    only: ``n, k, eps, c, r``.

    Selection scores move by at most ``r = max_rows_per_value`` each, all the same way
    (monotonic; data.scores): the selection maps are taken at ``d_in = r``. Each person moves
    at most ``c`` of them (histograms: L1 ``c r``, L2 ``r sqrt(c)``). ``r = 1`` is the plan
    of one count per person and value.

    Parameters
    ----------
    n : int
        The number of candidates.
    k : int
        How many values are released.
    eps, delta : float
        The target at one person (``delta = 0``: pure DP).
    mech : str
        ``"auto"`` or a mechanism name (:func:`resolve_top_k_method`).
    counts : bool
        Whether noisy counts are released too.
    c : int
        ``max_contributions``: how many scores one person moves.
    source : RandomSource or None
        Where the measurement's random bits come from; ``None`` is the CSPRNG.
    zcdp_ledger : bool, default False
        Whether a zCDP ledger is charged (:func:`resolve_top_k_method`).
    max_rows_per_value : int, default 1
        ``r``: how much one person moves each score.

    Returns
    -------
    TopKPlan
        The calibrated measurement, its cost and its accuracy statement.
    """
    r = int(max_rows_per_value)
    method = resolve_top_k_method(mech, k, n, eps, delta, c, counts, zcdp_ledger)
    if method == "joint":
        return plan_joint_top_k(n, k, eps, source, max_rows_per_value=r)
    plan = _plan_top_k(n, k, eps, delta, method, c, source, r)
    if mech == "auto" and joint_may_compete(k, n, delta, counts, zcdp_ledger):
        joint = plan_joint_top_k(n, k, eps, source, max_rows_per_value=r)
        if joint.margin < plan.margin:
            return dataclasses.replace(joint, accuracy=joint.accuracy + _joint_chosen(plan, joint))
    return plan


def joint_may_compete(k: int, n: int, delta: float, counts: bool, zcdp_ledger: bool) -> bool:
    """Whether ``mechanism="auto"`` weighs the joint exponential mechanism: a pure-DP target
    (``delta = 0``) charged to a basic ledger, no counts released, ``2 <= k < n``. (In a zCDP
    ledger it would cost ``epsilon^2 / 8`` for the whole list where one-shot Gumbel costs
    ``epsilon^2 / (8 k)``; with ``delta > 0`` the others' budgets are not the joint's.)"""
    return delta == 0 and not counts and not zcdp_ledger and 2 <= k < n


def _joint_chosen(other: TopKPlan, joint: TopKPlan) -> str:
    """The comparison "auto" made, as the plan states it (public numbers only)."""
    return (
        f"; mechanism 'auto' chose it because this bound on the ranked error E = max_i (i-th "
        f"largest score - score of the i-th value returned), {printed_up(joint.margin)}, is "
        f"below the {printed_up(other.margin)} that {other.method} states at the same guarantee"
    )


def _plan_top_k(
    n: int,
    k: int,
    eps: float,
    delta: float,
    method: str,
    c: int,
    source: RandomSource | None,
    r: int,
) -> TopKPlan:
    """The plan of one resolved mechanism other than the joint one."""
    if method == "gumbel_counts":
        return plan_gumbel_counts(n, k, eps, source, max_rows_per_value=r)
    if method in ("laplace_histogram", "gaussian_histogram"):
        return plan_histogram_top_k(n, k, eps, delta, method, c, source, max_rows_per_value=r)
    noise = _NOISE[method]
    kind: Literal["pure", "bounded_range"] = "bounded_range" if noise == "gumbel" else "pure"
    if delta == 0:
        scale = calibrate_scale(
            lambda s: _selection(n, k, noise, s, MaxDivergence(), source), eps, d_in=r
        )
        accounting = "basic composition"
    else:
        eps0, accounting = per_round_epsilon(kind, k, eps, delta)
        scale = float_up(r / Fraction(eps0))
    measurement = _selection(n, k, noise, scale, MaxDivergence(), source)
    twin = _selection(n, k, noise, scale, ZeroConcentratedDivergence(), source)
    pure = float(measurement.map(r))
    if delta == 0:
        spent_eps, spent_delta, charge_kind = pure, 0.0, kind
    else:
        per_round = selection_loss(r, scale, 1, noise, MaxDivergence())
        spent_eps, accounting = composed_epsilon(kind, k, per_round, delta)
        while spent_eps > eps:  # pragma: no cover - the bisection keeps a margin
            scale = math.nextafter(scale, math.inf)
            per_round = selection_loss(r, scale, 1, noise, MaxDivergence())
            spent_eps, accounting = composed_epsilon(kind, k, per_round, delta)
        measurement = _selection(n, k, noise, scale, MaxDivergence(), source)
        twin = _selection(n, k, noise, scale, ZeroConcentratedDivergence(), source)
        spent_delta, charge_kind = delta, "approx"  # type: ignore[assignment]
        if pure <= spent_eps:  # pragma: no cover - pure composition is never the better one here
            spent_eps, spent_delta, charge_kind = pure, 0.0, kind
    return TopKPlan(
        measurement,
        method,
        METHOD_NAMES[method],
        scale,
        None,
        spent_eps,
        spent_delta,
        float(twin.map(r)),
        charge_kind,
        accounting,
        _selection_accuracy(noise, scale, k, n),
        False,
        selection_margin(noise, scale, k, n, 1 - CONFIDENCE),
    )


def plan_joint_top_k(
    n: int, k: int, eps: float, source: RandomSource | None, max_rows_per_value: int = 1
) -> TopKPlan:
    """The joint exponential mechanism (:func:`~dpselect.mechanisms.make_joint_top_k`,
    Gillenwater et al. 2022) calibrated to a pure ``eps`` at one person.

    One person moves every score by at most ``r = max_rows_per_value``, all the same way: the
    error ``E(s)`` of every sequence moves by at most ``r`` (whatever ``max_contributions``), so
    the map at ``d_in = r`` is ``2 r / scale`` and ``scale = 2 r / eps`` (rounded so the map
    holds). The whole list is one exponential mechanism: ``eps``-DP and ``eps``-bounded-range
    (``eps^2 / 8``-zCDP), with no split across the ``k`` positions. Its statement: with
    probability at least ``1 - beta``, ``E(s) <= scale (ln(n! / (n - k)!) + ln(1 / beta))``
    (the exponential mechanism's utility theorem, seed 002, over the ``n! / (n - k)!``
    sequences): every ``i``-th value returned has a score at least the ``i``-th largest
    minus that margin.

    Parameters
    ----------
    n : int
        The number of candidates.
    k : int
        How many values are released.
    eps : float
        The pure epsilon at one person.
    source : RandomSource or None
        Where the measurement's random bits come from; ``None`` is the CSPRNG.
    max_rows_per_value : int, default 1
        ``r``: how much one person moves each score.

    Returns
    -------
    TopKPlan
        The calibrated measurement, its cost and its accuracy statement.
    """
    from ..mechanisms.joint_top_k import make_joint_top_k

    r = int(max_rows_per_value)

    def make(scale: float, measure: Measure | None = None) -> Measurement:
        domain = vector_domain(atom_domain(int), size=n)
        return make_joint_top_k(domain, LInfDistance(monotonic=True), measure or MaxDivergence(),
                                k=k, scale=scale, source=source)  # fmt: skip

    scale = calibrate_scale(make, eps, d_in=r)
    measurement = make(scale)
    log_sequences = math.lgamma(n + 1) - math.lgamma(n - k + 1)
    margin = float_up(
        Fraction(scale) * Fraction(log_sequences + math.log(1 / (1 - CONFIDENCE)))
        * (1 + Fraction(1, 2**40))
    )  # fmt: skip
    accuracy = (
        f"accuracy: with probability at least {CONFIDENCE:.0%}, {_positions(k)} a score at "
        f"least {_largest(k)} minus {printed_up(margin)} (scores are counts after contribution "
        "bounding; the joint exponential mechanism's utility theorem over the "
        f"{n}!/({n}-{k})! ordered sequences)"
    )
    return TopKPlan(
        measurement,
        "joint",
        METHOD_NAMES["joint"],
        scale,
        None,
        float(measurement.map(r)),
        0.0,
        float(make(scale, ZeroConcentratedDivergence()).map(r)),
        "bounded_range",
        "one exponential mechanism over the whole list (no composition)",
        accuracy,
        False,
        margin,
    )


def plan_histogram_top_k(
    n: int,
    k: int,
    eps: float,
    delta: float,
    method: str,
    c: int,
    source: RandomSource | None,
    max_rows_per_value: int = 1,
) -> TopKPlan:
    """A noisy-histogram top-k calibrated to counts of L1 sensitivity ``c r`` (Laplace) or L2
    sensitivity ``r sqrt(c)`` (Gaussian), ``r = max_rows_per_value``.

    Parameters
    ----------
    n : int
        The number of candidates.
    k : int
        How many values are released.
    eps, delta : float
        The target at one person; ``delta`` (in ``(0, 1)``) is used by the Gaussian
        histogram only.
    method : {"laplace_histogram", "gaussian_histogram"}
        The histogram's noise (any other value: Gaussian, which needs ``delta > 0``).
    c : int
        ``max_contributions``: how many counts one person moves.
    source : RandomSource or None
        Where the noise's random bits come from; ``None`` is the CSPRNG.
    max_rows_per_value : int, default 1
        ``r``: how much one person moves each count.

    Returns
    -------
    TopKPlan
        The calibrated measurement, its cost and its accuracy statement.
    """
    r = int(max_rows_per_value)
    if method == "laplace_histogram":
        return _laplace_histogram_plan(n, k, eps, method, c, source, r)
    return _gaussian_histogram_plan(n, k, eps, delta, method, c, source, r)


def _laplace_histogram_plan(
    n: int, k: int, eps: float, method: str, c: int, source: RandomSource | None, r: int
) -> TopKPlan:
    """The Laplace histogram of :func:`plan_histogram_top_k`: ``b = c r / eps``, rounded up
    (then up by one ulp while the map exceeds ``eps``)."""
    rows_note = " x max_rows_per_value" if r > 1 else ""
    scale = float_up(Fraction(c * r) / Fraction(eps))
    m = make_noisy_histogram_top_k(
        n, k, "laplace", scale=scale, max_contributions=c, source=source, max_rows_per_value=r
    )
    while float(m.map(1)) > eps:  # pragma: no cover - one ulp
        scale = math.nextafter(scale, math.inf)
        m = make_noisy_histogram_top_k(
            n, k, "laplace", scale=scale, max_contributions=c, source=source, max_rows_per_value=r
        )
    spent = float(m.map(1))
    return TopKPlan(
        m,
        method,
        METHOD_NAMES[method],
        scale,
        scale,
        spent,
        0.0,
        pure_dp_to_zcdp(spent),
        "pure",
        f"Laplace mechanism on counts of L1 sensitivity max_contributions{rows_note}",
        _histogram_accuracy("laplace", scale, k, n),
        True,
        2 * histogram_halfwidth("laplace", scale, n, 1 - CONFIDENCE),
        histogram_halfwidth("laplace", scale, n, 1 - CONFIDENCE),
    )


def _gaussian_histogram_plan(
    n: int,
    k: int,
    eps: float,
    delta: float,
    method: str,
    c: int,
    source: RandomSource | None,
    r: int,
) -> TopKPlan:
    """The Gaussian histogram of :func:`plan_histogram_top_k`: ``sigma`` for
    ``(eps, delta)`` through zCDP (widened while the conversion exceeds ``eps``)."""
    sigma = gaussian_histogram_sigma(c, eps, delta, r)
    m = make_noisy_histogram_top_k(
        n, k, "gaussian", scale=sigma, max_contributions=c, source=source, max_rows_per_value=r
    )
    rho = float(m.map(1))
    spent = zcdp_to_approx_dp(rho, delta)
    while spent > eps:  # pragma: no cover - sigma carries a margin
        sigma = sigma * (1 + 1e-9)
        m = make_noisy_histogram_top_k(
            n, k, "gaussian", scale=sigma, max_contributions=c, source=source, max_rows_per_value=r
        )
        rho = float(m.map(1))
        spent = zcdp_to_approx_dp(rho, delta)
    return TopKPlan(
        m,
        method,
        METHOD_NAMES[method],
        sigma,
        sigma,
        spent,
        delta,
        rho,
        "approx",
        "zCDP of the Gaussian mechanism (L2 sensitivity "
        + ("max_rows_per_value x " if r > 1 else "")
        + "sqrt(max_contributions)) and the Canonne-Kamath-Steinke conversion",
        _histogram_accuracy("gaussian", sigma, k, n),
        True,
        2 * histogram_halfwidth("gaussian", sigma, n, 1 - CONFIDENCE),
        histogram_halfwidth("gaussian", sigma, n, 1 - CONFIDENCE),
    )


def plan_gumbel_counts(
    n: int, k: int, eps: float, source: RandomSource | None, max_rows_per_value: int = 1
) -> TopKPlan:
    """One-shot Gumbel with Laplace counts, calibrated at L-infinity distance
    ``r = max_rows_per_value`` (its map's ``d_in``: the ranking's range distance and each
    count's shift).

    Parameters
    ----------
    n : int
        The number of candidates.
    k : int
        How many values are released.
    eps : float
        The target epsilon at one person (pure DP), half for the ranking, half for the counts.
    source : RandomSource or None
        Where the noise's random bits come from; ``None`` is the CSPRNG.
    max_rows_per_value : int, default 1
        ``r``: how much one person moves each count.

    Returns
    -------
    TopKPlan
        The calibrated measurement, its cost and its accuracy statement.
    """
    r = int(max_rows_per_value)
    domain = vector_domain(atom_domain(int), size=n)
    metric = LInfDistance(monotonic=True)

    def with_counts(measure: Measure, c: float) -> Measurement:
        # half the budget to the ranking, half to the counts (both scales 2k c)
        return make_gumbel_top_k_with_counts(
            domain,
            metric,
            k,
            scale=2 * k * c,
            count_scale=2 * k * c,
            count_noise="laplace",
            output_measure=measure,
            source=source,
        )

    c = calibrate_scale(lambda c: with_counts(MaxDivergence(), c), eps, d_in=r)
    m = with_counts(MaxDivergence(), c)
    scale = 2 * k * c
    t = count_halfwidth("laplace", scale, k, (1 - CONFIDENCE) / 2)
    margin = selection_margin("gumbel", scale, k, n, (1 - CONFIDENCE) / 2)
    accuracy = (
        f"accuracy: with probability at least {CONFIDENCE:.0%}, {_positions(k)} a score at "
        f"least {_largest(k)} minus {printed_up(margin)}, and every noisy count is "
        f"within +-{t} of its "
        "value's true count (scores are counts after contribution bounding; noise tails and "
        f"union bounds){_below_noise(t)}"
    )
    return TopKPlan(
        m,
        "gumbel_counts",
        GUMBEL_WITH_COUNTS,
        scale,
        scale,
        float(m.map(r)),
        0.0,
        float(with_counts(ZeroConcentratedDivergence(), c).map(r)),
        "pure",
        "basic composition",
        accuracy,
        True,
        margin,
        t,
    )


def calibrate_scale(make: Callable[[float], Measurement], epsilon: float, d_in: int = 1) -> float:
    """The smallest float scale whose pure-DP loss at ``d_in`` (default 1) is at most
    ``epsilon``.

    The selection maps are ``float_up(c / scale)`` for a rational ``c`` (report_noisy_max,
    gumbel_counts), so ``scale = float_up(map_at_1 / epsilon)`` is within an ulp or two of the
    answer: it is moved by ulps while the map's own check decides, which replaces a binary
    search of about 200 constructions by a handful. Binary search remains the fallback.

    Parameters
    ----------
    make : callable (float) -> Measurement
        Builds the ``MaxDivergence`` measurement at a scale.
    epsilon : float
        The loss allowed at ``d_in``.
    d_in : int, default 1
        The input distance at which the loss is checked.

    Returns
    -------
    float
        The scale.
    """
    scale = float_up(Fraction(make(1.0).map(d_in)) / Fraction(epsilon))
    for _ in range(4):
        if make(scale).check(d_in, epsilon):
            break
        scale = math.nextafter(scale, math.inf)
    else:  # pragma: no cover - only if a map stops being c / scale
        return float(binary_search_param(make, d_in, epsilon))
    for _ in range(4):
        smaller = math.nextafter(scale, 0.0)
        if smaller <= 0 or not make(smaller).check(d_in, epsilon):
            break
        scale = smaller
    return scale
