"""Which top-k mechanism to run for an ``(epsilon, delta)`` target: a function of public facts.

:func:`choose_top_k` lists every top-k mechanism the library can calibrate to the target, each
with the noise scale its tightest valid accounting buys, and picks the one with the smallest
*gap needed*: the smallest margin ``g`` such that, on the reference instance where ``k``
leaders score ``g`` above ``n - k`` tied others, the mechanism returns exactly the ``k`` leaders
with probability at least :data:`TARGET`. The instance, ``k``, ``n``, ``epsilon``, ``delta``
and ``max_contributions`` are public; no data is read, so the choice costs no privacy.

Options (``c`` = ``max_contributions``: a person changes at most ``c`` counts, each by 1, all in
the same direction):

=====================  ======================================================================
``permute_and_flip``   ``k`` rounds of report-noisy-max with exponential noise (permute-and-
                       flip in law: McKenna and Sheldon 2020; Ding et al. 2021), each round
                       ``eps0``-DP. ``delta = 0``: ``eps0 = epsilon / k``. ``delta > 0``: the
                       largest ``eps0`` whose ``k``-fold adaptive composition is within the
                       target by :func:`~dpselect.accounting.best_epsilon` (optimal homogeneous
                       composition, Kairouz-Oh-Viswanath 2015; Renyi; zCDP).
``gumbel``             one-shot Gumbel top-k (Durfee and Rogers 2019): ``k`` peeling
                       exponential mechanisms, each ``eps0``-bounded-range. ``delta > 0``:
                       Renyi composition of bounded-range curves, zCDP ``eps0^2/8`` per round,
                       KOV (adaptive); for ``k = 1`` also the optimal bounded-range profile
                       (Dong, Durfee and Rogers 2020, Thm 3: one mechanism is non-adaptive).
``laplace_histogram``  discrete Laplace of scale ``c / epsilon`` on every count, the ``k``
                       largest noisy counts (post-processing): ``epsilon``-DP because the
                       counts' L1 sensitivity is ``c`` (Ghosh-Roughgarden-Sundararajan 2009;
                       Canonne-Kamath-Steinke 2020).
``gaussian_histogram`` (``delta > 0``) discrete Gaussian on every count, ``rho = c / (2
                       sigma^2)``-zCDP (L2 sensitivity ``sqrt(c)``; CKS 2020 Thm 14), with
                       ``rho`` the largest budget whose CKS conversion meets the target.
=====================  ======================================================================

Permute-and-flip and the exponential mechanism have the same accuracy bound, but permute-and-
flip is never worse at equal epsilon (McKenna and Sheldon 2020, Thm 2); at ``delta = 0`` the
two have the same ``eps0`` and the criterion picks permute-and-flip, at ``delta > 0`` the
exponential mechanism's bounded-range accounting buys a larger ``eps0`` and the criterion
weighs that against permute-and-flip's advantage. The histograms win when ``c`` is small
against ``k``: one person moves ``c`` counts, not all ``k`` rounds.

With ``max_rows_per_value = r`` (a person adds up to ``r`` rows to each of their ``c``
values: L-infinity ``r``, L1 ``c r``, L2 ``r sqrt(c)``) every option's noise scale is ``r``
times its ``r = 1`` scale (selection: range distance ``r``; Laplace: L1 ``c r``; Gaussian:
L2 ``r sqrt(c)``), so every gap is ``r`` times its ``r = 1`` gap and the choice does not
depend on ``r``: :func:`choose_top_k` takes it only to report the scales and gaps.

The criterion's probabilities are computed numerically for the continuous noise laws (a
quadrature on a fixed grid): they rank mechanisms, they are not privacy statements.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from ..accounting import (
    MechanismLoss,
    approx_dp_to_zcdp_budget,
    best_epsilon,
    optimal_homogeneous_composition,
)
from ..accounting.best import KOV_HOMOGENEOUS
from ..core.arithmetic import float_up
from ..core.errors import ParameterError

__all__ = [
    "METHOD_NAMES",
    "TARGET",
    "TopKOption",
    "choose_top_k",
    "composed_epsilon",
    "gap_needed",
    "gaussian_histogram_sigma",
    "per_round_epsilon",
]

#: The probability of returning exactly the true top k that the criterion asks for.
TARGET = 0.9

METHOD_NAMES: dict[str, str] = {
    "permute_and_flip": "permute-and-flip (McKenna and Sheldon 2020), peeled k times",
    "gumbel": "exponential mechanism, one-shot Gumbel top-k (Durfee and Rogers 2019)",
    "laplace": "report-noisy-max with Laplace noise, peeled k times (Dwork and Roth 2014)",
    "laplace_histogram": (
        "noisy histogram: discrete Laplace counts, the k largest (Canonne, Kamath and Steinke 2020)"
    ),
    "gaussian_histogram": (
        "noisy histogram: discrete Gaussian counts, the k largest (Canonne, Kamath and "
        "Steinke 2020)"
    ),
    "joint": (
        "joint exponential mechanism over ordered k-sequences (Gillenwater et al. 2022), "
        "sampled exactly"
    ),
}

_F = npt.NDArray[np.float64]


@dataclass(frozen=True)
class TopKOption:
    """One calibrated top-k mechanism: its noise, its cost, and the criterion's gap.

    ``scale``: the Gumbel / exponential scale per round (``1 / eps0``), the Laplace scale
    ``b`` of each count, or the Gaussian ``sigma``. ``epsilon, delta``: the guarantee the
    calibration proves (at most the target). ``accounting``: the theorem that bought it.
    ``gap``: the criterion (smaller is better), in score units.
    """

    mechanism: str
    scale: float
    epsilon: float
    delta: float
    accounting: str
    gap: float

    @property
    def name(self) -> str:
        """The method, cited by name."""
        return METHOD_NAMES[self.mechanism]


# ------------------------------------------------------------------------------------------
# Calibration


@functools.lru_cache(maxsize=256)
def per_round_epsilon(kind: str, k: int, epsilon: float, delta: float) -> tuple[float, str]:
    """The largest per-round epsilon (to 1e-4 relative) of ``k`` rounds of ``kind``
    (``"pure"`` or ``"bounded_range"``) within ``(epsilon, delta)``, and the winning theorem.

    ``delta = 0``: ``epsilon / k`` rounded down (basic composition). Otherwise a bisection on
    :func:`~dpselect.accounting.best_epsilon` (adaptive theorems only when ``k > 1``): every
    returned value is one whose composition was checked to fit.

    Parameters
    ----------
    kind : {"pure", "bounded_range"}
        The class of each round: ``"pure"`` (permute-and-flip, Laplace report-noisy-max) or
        ``"bounded_range"`` (the exponential mechanism, one-shot Gumbel).
    k : int
        The number of rounds, at least 1.
    epsilon, delta : float
        The total target; ``delta = 0`` means basic composition.

    Returns
    -------
    tuple of (float, str)
        The per-round epsilon and the name of the theorem whose total was checked to fit.
    """
    if delta == 0:
        eps0 = float(Fraction(epsilon) / k)
        if Fraction(eps0) * k > Fraction(epsilon):
            eps0 = math.nextafter(eps0, 0.0)
        return eps0, "basic composition"

    # Pure rounds: the optimal adaptive composition of eps0-DP mechanisms (KOV 2015, Thm
    # 3.3), which no other theorem beats for them. Bounded range: every adaptive theorem.
    def total(e0: float) -> tuple[float, str]:
        return composed_epsilon(kind, k, e0, delta)

    # Bracket: basic composition and the zCDP route both fit, so the larger of their eps0.
    rho = Fraction(approx_dp_to_zcdp_budget(epsilon, delta))
    zcdp_eps0 = math.sqrt(float(rho * (8 if kind == "bounded_range" else 2) / k)) * (1 - 1e-9)
    lo = max(math.nextafter(float(Fraction(epsilon) / k), 0.0), zcdp_eps0)
    if total(lo)[0] > epsilon:
        lo = math.nextafter(float(Fraction(epsilon) / k), 0.0)
    f_lo = total(lo)[0] - epsilon
    hi = lo * 1.25
    f_hi = total(hi)[0] - epsilon
    while f_hi <= 0:
        lo, f_lo, hi = hi, f_hi, hi * 1.25
        f_hi = total(hi)[0] - epsilon
    # Illinois regula falsi on the smooth composed epsilon: a handful of certified evaluations
    side = 0
    while hi - lo > 1e-4 * lo:
        x = lo + (hi - lo) * (-f_lo) / (f_hi - f_lo)
        x = min(max(x, lo + (hi - lo) * 1e-3), hi - (hi - lo) * 1e-3)
        fx = total(x)[0] - epsilon
        if fx <= 0:
            lo, f_lo = x, fx
            if side == -1:
                f_hi /= 2
            side = -1
        else:
            hi, f_hi = x, fx
            if side == 1:
                f_lo /= 2
            side = 1
    return lo, total(lo)[1]


def composed_epsilon(kind: str, k: int, per_round: float, delta: float) -> tuple[float, str]:
    """The certified total epsilon at ``delta > 0`` of ``k`` rounds of ``kind`` at
    ``per_round``, and its theorem (the same theorems :func:`per_round_epsilon` inverts).

    Parameters
    ----------
    kind : {"pure", "bounded_range"}
        ``"pure"``: optimal homogeneous composition (KOV 2015, Thm 3.3); any other value is
        read as ``"bounded_range"``: :func:`~dpselect.accounting.best_epsilon` (adaptive
        theorems only when ``k > 1``).
    k : int
        The number of rounds, at least 1.
    per_round : float
        Each round's epsilon, ``>= 0``.
    delta : float
        The total delta, in ``(0, 1)``.

    Returns
    -------
    tuple of (float, str)
        The total epsilon (rounded up) and the theorem's name.
    """
    if kind == "pure":
        return optimal_homogeneous_composition(per_round, k, delta), KOV_HOMOGENEOUS
    r = best_epsilon([MechanismLoss.bounded_range(per_round)] * k, delta, adaptive=k > 1)
    return r.epsilon, r.theorem


def gaussian_histogram_sigma(
    c: int, epsilon: float, delta: float, max_rows_per_value: int = 1
) -> float:
    """The smallest sigma (rounded up) with ``c r^2 / (2 sigma^2)`` within the zCDP budget
    (``r = max_rows_per_value``: the counts' L2 sensitivity is ``r sqrt(c)``).

    Parameters
    ----------
    c : int
        ``max_contributions``: how many counts one person changes.
    epsilon, delta : float
        The target, ``delta`` in ``(0, 1)``; its zCDP budget is
        :func:`~dpselect.accounting.approx_dp_to_zcdp_budget`.
    max_rows_per_value : int, default 1
        ``r``: how much one person moves each of their counts.

    Returns
    -------
    float
        ``sigma``, the discrete Gaussian's parameter (``sigma^2`` its variance parameter).
    """
    rho = Fraction(approx_dp_to_zcdp_budget(epsilon, delta))
    if rho == 0:  # below the smallest float: no sigma the exact sampler can take
        raise ParameterError(
            f"epsilon {float(epsilon):.6g} is too small for Gaussian counts at delta "
            f"{float(delta):.6g} (its zCDP budget is below the smallest float)"
        )
    r2 = Fraction(int(max_rows_per_value)) ** 2
    return float_up(
        Fraction(math.sqrt(float(Fraction(c) * r2 / (2 * rho)))) * (1 + Fraction(1, 10**12))
    )


# ------------------------------------------------------------------------------------------
# The criterion: the reference instance, k leaders g above n - k tied others

_STEP = 1 / 128  # grid step in units of the noise scale
_SPAN = 60.0


def _log_prob_gumbel(a: float, k: int, m: int) -> float:
    """log P(k peeling rounds of the exponential mechanism return the leaders), gap a/scale."""
    j = np.arange(1, k + 1, dtype=np.float64)
    return float(np.sum(-np.log1p(m * np.exp(-a) / j)))


@functools.lru_cache(maxsize=64)
def _exp_grid(k: int) -> tuple[_F, _F]:
    x = np.arange(0.0, _SPAN, _STEP) + _STEP / 2  # midpoint rule
    # log density of the max of j Exp(1), for j = 1..k (rows), on the grid
    j = np.arange(1, k + 1, dtype=np.float64)[:, None]
    with np.errstate(divide="ignore"):
        log1m = np.maximum(np.log(-np.expm1(-x)), -1e5)  # finite: 0 * log1m must be 0
    logdens = np.log(j) - x[None, :] + (j - 1) * log1m[None, :]
    return x, logdens


def _log_prob_pf(a: float, k: int, m: int) -> float:
    """log P(k peeling rounds of permute-and-flip return the leaders): exponential noise."""
    x, logdens = _exp_grid(k)
    log_cdf_others = m * np.log1p(-np.exp(-(a + x)))
    p = np.sum(np.exp(logdens + log_cdf_others[None, :]), axis=1) * _STEP
    return float(np.sum(np.log(np.clip(p, 1e-300, 1.0))))


def _laplace_logcdf(z: _F) -> _F:
    out = np.where(z < 0, z - math.log(2), 0.0)
    pos = z >= 0
    out[pos] = np.log1p(-0.5 * np.exp(-z[pos]))
    return out


def _gauss_logcdf(z: _F) -> _F:
    erfc = np.vectorize(math.erfc, otypes=[np.float64])
    with np.errstate(divide="ignore"):
        out: _F = np.maximum(np.log(0.5 * erfc(-z / math.sqrt(2))), -1e5)
    return out


@functools.lru_cache(maxsize=16)
def _histogram_grid(noise: str) -> tuple[_F, _F, _F]:
    y = np.arange(-_SPAN, _SPAN, _STEP) + _STEP / 2  # midpoint rule
    if noise == "laplace":
        logf = -np.abs(y) - math.log(2)
        logcdf = _laplace_logcdf(y)
        logsf = _laplace_logcdf(-y)
    else:
        logf = -(y * y) / 2 - 0.5 * math.log(2 * math.pi)
        logcdf = _gauss_logcdf(y)
        logsf = _gauss_logcdf(-y)
    return y, logf, np.stack([logcdf, logsf])


def _log_prob_histogram(a: float, k: int, m: int, noise: str) -> float:
    """log P(the k leaders' noisy counts all beat the m others'), gap a/scale."""
    y, logf, both = _histogram_grid(noise)
    logsf = both[1]
    logcdf_shift = _laplace_logcdf(y + a) if noise == "laplace" else _gauss_logcdf(y + a)
    terms = math.log(k) + logf + (k - 1) * logsf + m * logcdf_shift
    return float(math.log(max(np.sum(np.exp(terms)) * _STEP, 1e-300)))


def gap_needed(mechanism: str, k: int, n: int, scale: float, target: float = TARGET) -> float:
    """The criterion: the smallest gap (score units, to 1/128 of ``scale``) at which
    ``mechanism`` returns the ``k`` leaders of the reference instance with probability
    ``target``; 0 when ``k >= n``.

    Parameters
    ----------
    mechanism : str
        ``"gumbel"``, ``"permute_and_flip"``, ``"laplace_histogram"`` or
        ``"gaussian_histogram"``; any other name is computed as ``"gaussian_histogram"``.
    k : int
        The number of leaders the mechanism must return.
    n : int
        The number of candidates (the reference instance has ``n - k`` tied others).
    scale : float
        The mechanism's noise scale in score units: the Gumbel or exponential scale per round,
        the Laplace ``b`` or the Gaussian ``sigma``.
    target : float, default TARGET
        The probability of returning exactly the leaders, in ``(0, 1)``.

    Returns
    -------
    float
        The gap in score units (``inf`` if beyond ``10^6`` scales).
    """
    m = n - k
    if m <= 0:
        return 0.0
    if mechanism == "gumbel":

        def logp(a: float) -> float:
            return _log_prob_gumbel(a, k, m)
    elif mechanism == "permute_and_flip":

        def logp(a: float) -> float:
            return _log_prob_pf(a, k, m)
    else:
        noise = "laplace" if mechanism == "laplace_histogram" else "gaussian"

        def logp(a: float) -> float:
            return _log_prob_histogram(a, k, m, noise)

    goal = math.log(target)
    lo, hi = 0.0, 1.0
    while logp(hi) < goal:
        lo, hi = hi, hi * 2
        if hi > 1e6:  # pragma: no cover - never for sane parameters
            return math.inf
    while hi - lo > _STEP:
        mid = (lo + hi) / 2
        if logp(mid) >= goal:
            hi = mid
        else:
            lo = mid
    return hi * scale


# ------------------------------------------------------------------------------------------
# The choice


def _options(k: int, n: int, epsilon: float, delta: float, c: int) -> list[TopKOption]:
    out: list[TopKOption] = []
    for mech, kind in (("permute_and_flip", "pure"), ("gumbel", "bounded_range")):
        eps0, theorem = per_round_epsilon(kind, k, epsilon, delta)
        scale = float_up(1 / Fraction(eps0))
        spent = epsilon if delta else float_up(k / Fraction(scale))
        out.append(TopKOption(mech, scale, spent, delta, theorem, gap_needed(mech, k, n, scale)))
    b = float_up(Fraction(c) / Fraction(epsilon))
    out.append(
        TopKOption(
            "laplace_histogram",
            b,
            float_up(c / Fraction(b)),
            0.0,
            "Laplace mechanism, L1 sensitivity max_contributions",
            gap_needed("laplace_histogram", k, n, b),
        )
    )
    if delta > 0:
        sigma = gaussian_histogram_sigma(c, epsilon, delta)
        out.append(
            TopKOption(
                "gaussian_histogram",
                sigma,
                epsilon,
                delta,
                "zCDP (Gaussian, L2 sensitivity sqrt(max_contributions)) + CKS conversion",
                gap_needed("gaussian_histogram", k, n, sigma),
            )
        )
    return out


@functools.lru_cache(maxsize=256)
def _choose(
    k: int, n: int, epsilon: float, delta: float, c: int
) -> tuple[TopKOption, tuple[TopKOption, ...]]:
    options = _options(k, n, epsilon, delta, c)
    order = list(METHOD_NAMES)
    # Equal gaps (every gap is 0 when k >= n: any mechanism returns the k leaders as a set)
    # go to the smallest noise on a score, which decides the order of the released list; a
    # histogram also draws its noise once where a peeled mechanism draws it k times over the
    # remaining candidates (k * n exact draws: minutes at k = n = 10^5).
    best = min(options, key=lambda o: (o.gap, o.scale, order.index(o.mechanism)))
    return best, tuple(options)


def choose_top_k(
    k: int,
    n: int,
    epsilon: float,
    delta: float = 0.0,
    max_contributions: int = 1,
    max_rows_per_value: int = 1,
) -> tuple[TopKOption, tuple[TopKOption, ...]]:
    """The chosen mechanism and every option considered (module docstring).

    A pure function of its arguments, all public: the same arguments give the same choice
    (cached). Equal gaps go to the smallest noise scale on a score (when ``k >= n`` every gap
    is 0 and the scale alone decides the released order), then to the option listed first
    in :data:`METHOD_NAMES`. ``max_rows_per_value = r``: the choice at ``r = 1``, each
    option's scale and gap multiplied by ``r`` (module docstring: every scale is ``r`` times
    its ``r = 1`` value).

    Parameters
    ----------
    k : int
        How many values are released, at least 1.
    n : int
        The number of public candidates.
    epsilon, delta : float
        The target guarantee at one person (``delta = 0``: pure DP; the Gaussian histogram is
        considered only for ``delta > 0``).
    max_contributions : int, default 1
        ``c``: how many counts one person changes.
    max_rows_per_value : int, default 1
        ``r``: how much one person moves each of their counts (scales the reported scales and
        gaps only).

    Returns
    -------
    tuple of (TopKOption, tuple of TopKOption)
        The chosen option, and every option considered: permute-and-flip, Gumbel, the Laplace
        histogram and, for ``delta > 0``, the Gaussian histogram.
    """
    best, options = _choose(int(k), int(n), float(epsilon), float(delta), int(max_contributions))
    r = int(max_rows_per_value)
    if r == 1:
        return best, options
    scaled = tuple(
        dataclasses.replace(
            o,
            scale=float_up(r * Fraction(o.scale)),
            gap=r * o.gap,
            accounting=o.accounting.replace(
                "L1 sensitivity max_contributions", "L1 sensitivity max_contributions x r"
            ).replace("L2 sensitivity sqrt(", "L2 sensitivity r x sqrt("),
        )
        for o in options
    )
    return scaled[options.index(best)], scaled
