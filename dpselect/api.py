"""The main job: private top-k and mode of a column, from any data source (the recipes layer).

``top_k(data, column, k, epsilon, candidates=...)`` scores every public candidate in DuckDB
(:mod:`dpselect.data`), calibrates a selection mechanism to ``epsilon``
(:mod:`dpselect.mechanisms`), charges the ledger durably, and only then samples and returns
the ranked candidates with their privacy cost and an accuracy statement. Nothing here samples
or computes a privacy loss itself: it composes the lower layers.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from .accounting.zcdp import pure_dp_to_zcdp, zcdp_to_approx_dp
from .core.arithmetic import float_down, float_up, plain_number
from .core.calibration import binary_search_param
from .core.domains import atom_domain, vector_domain
from .core.errors import ParameterError
from .core.jsonvalues import json_dict
from .core.measurement import Measurement
from .core.measures import MaxDivergence, Measure, ZeroConcentratedDivergence
from .core.metrics import LInfDistance
from .data.candidates import candidates_note, load_candidates
from .data.column_roles import check_column_role
from .data.engine import Engine
from .data.rules import check_bounded_candidates
from .data.scores import candidate_multiplicity, candidate_scores
from .data.tables import one_column, open_table
from .mechanisms.choice import (
    METHOD_NAMES,
    choose_top_k,
    composed_epsilon,
    gap_needed,
    gaussian_histogram_sigma,
    per_round_epsilon,
)
from .mechanisms.gumbel_counts import make_gumbel_top_k_with_counts
from .mechanisms.histogram_top_k import HistogramNoise, make_noisy_histogram_top_k
from .mechanisms.report_noisy_max import make_noisy_top_k, selection_loss
from .mechanisms.topk_accuracy import count_halfwidth, histogram_halfwidth, selection_alpha
from .mechanisms.validate import check_delta, check_int, check_user_epsilon
from .recipes._common import open_ledger
from .sampling.source import RandomSource, resolve_source

__all__ = [
    "AUTO_FRACTION",
    "CONFIDENCE",
    "MECHANISMS",
    "TopKResult",
    "check_auto_fraction",
    "most_common",
    "top_k",
]

Mechanism = Literal[
    "auto", "gumbel", "exponential", "laplace", "laplace_histogram", "gaussian_histogram"
]
#: The mechanisms ``mechanism=`` accepts, cited by name. "auto" picks one by public facts.
MECHANISMS: dict[str, str] = {
    "auto": "the most accurate for (k, epsilon, delta, candidates, max_contributions)",
    "gumbel": METHOD_NAMES["gumbel"],
    "exponential": METHOD_NAMES["permute_and_flip"],
    "laplace": METHOD_NAMES["laplace"],
    "laplace_histogram": METHOD_NAMES["laplace_histogram"],
    "gaussian_histogram": METHOD_NAMES["gaussian_histogram"],
}
_CHOICE_KEY = {"exponential": "permute_and_flip"}  # api name -> choice module name
_NOISE = {"permute_and_flip": "exponential", "gumbel": "gumbel", "laplace": "laplace"}
GUMBEL_WITH_COUNTS = (
    "exponential mechanism, one-shot Gumbel top-k (Durfee and Rogers 2019), then discrete "
    "Laplace counts (Canonne, Kamath and Steinke 2020)"
)
LIMITED_DOMAIN = "limited-domain top-k, values from the data (Durfee and Rogers 2019)"
#: The confidence of the accuracy statements.
CONFIDENCE = 0.95
Progress = Callable[[float], None] | None


@dataclass(frozen=True)
class TopKResult:
    """A private top-k release: the ranked candidates, what it cost, how accurate it is."""

    candidates: list[Any]
    indices: list[int] | None  # positions in the candidate list (None: values from the data)
    mechanism: str
    epsilon: float
    delta: float
    rho: float | None
    accuracy: str
    counts: list[int] | None = None
    ledger: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (candidates converted with ``str`` when not JSON types)."""
        out = asdict(self)
        out["candidates"] = [
            c if isinstance(c, (int, float, str)) else str(c) for c in self.candidates
        ]
        out["stopped_early"] = bool(self.stopped_early)
        return json_dict(out)

    def shown_counts(self) -> list[str] | None:
        """The noisy counts as printed: a count below the noise level ``t`` (the half-width of
        the accuracy statement, ``parameters["count_halfwidth"]``; 1 where none is stated) is
        indistinguishable from zero and shown as ``"< noise"``, clamped at 0, never negative.
        ``counts`` and ``to_dict`` keep the released values (unbiased, possibly negative).
        A function of the released counts and public parameters only."""
        if self.counts is None:
            return None
        t = self.parameters.get("count_halfwidth") or 1
        return [
            f"{max(c, 0)} (< noise)" if c < t else str(c)  # released values only: public
            for c in self.counts
        ]

    def __str__(self) -> str:
        shown = self.shown_counts()
        lines = [
            f"{rank}. {cand}" + (f"  (noisy count {shown[rank - 1]})" if shown is not None else "")
            for rank, cand in enumerate(self.candidates, start=1)
        ]
        cost = f"privacy cost: epsilon = {self.epsilon:.6g}, delta = {self.delta:.3g}"
        if self.rho is not None:
            cost += f", zCDP rho = {self.rho:.6g}"
        note = [self.stopped_early] if self.stopped_early else []
        for key in ("max_contributions_choice", "candidates_note"):
            if self.parameters.get(key):
                note.append(str(self.parameters[key]))
        return "\n".join([*lines, *note, f"mechanism: {self.mechanism}", cost, self.accuracy])

    @property
    def stopped_early(self) -> str:
        """A sentence when fewer than ``k`` values came out (values from the data), else ``""``."""
        k = int(self.parameters.get("k", len(self.candidates)))
        if len(self.candidates) >= k:
            return ""
        return (
            f"stopped early: {len(self.candidates)} of {k} values beat the noisy threshold "
            "(the others are too rare to show privately)"
        )


def _check_mechanism(mechanism: Any) -> Mechanism:
    if mechanism is None:
        return "auto"
    if mechanism not in MECHANISMS:
        raise ParameterError(f"mechanism must be one of {sorted(MECHANISMS)}, got {mechanism!r}")
    return mechanism  # type: ignore[no-any-return]


@dataclass(frozen=True)
class _Plan:
    """A calibrated top-k: the measurement, what it costs in each accounting, what it claims.

    ``measurement`` maps one person (``d_in = 1``) to its loss in its own measure;
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
        k,
        scale,
        noise,  # type: ignore[arg-type]
        source=source,
    )


#: In a zCDP ledger the pure-only mechanisms (permute-and-flip, Laplace) cost ``eps^2 / 2``,
#: four times the exponential mechanism's ``eps^2 / 8`` (bounded range): "auto" then weighs
#: only the options whose zCDP cost is not inflated.
ZCDP_LEDGER_OPTIONS = ("gumbel", "gaussian_histogram")


def _resolve(
    mech: Mechanism,
    k: int,
    n: int,
    eps: float,
    delta: float,
    c: int,
    counts: bool,
    zcdp_ledger: bool = False,
) -> str:
    """The mechanism to run (choice-module name): ``mech`` itself, or the public choice (a
    function of ``k, n, eps, delta, c``, ``counts`` and the ledger's accounting only)."""
    if mech != "auto":
        key = _CHOICE_KEY.get(mech, mech)
        if key == "gaussian_histogram" and delta == 0:
            raise ParameterError('mechanism="gaussian_histogram" needs delta > 0')
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
    alpha = selection_alpha(noise, scale, k, n, 1 - CONFIDENCE)
    return (
        f"accuracy: with probability at least {CONFIDENCE:.0%}, {_positions(k)} a score at "
        f"least {_largest(k)} minus {alpha:.4g} (scores are counts after contribution "
        "bounding; noise tails and a union bound over the rounds)"
    )


def _below_noise(t: float) -> str:
    """What a noisy count below the noise level means (public: ``t`` is)."""
    return (
        f"; a noisy count below {t:g} is indistinguishable from zero and is shown as "
        "'< noise', never negative"
    )


def _histogram_accuracy(noise: HistogramNoise, scale: float, k: int, n: int) -> str:
    t = histogram_halfwidth(noise, scale, n, 1 - CONFIDENCE)
    return (
        f"accuracy: with probability at least {CONFIDENCE:.0%}, {_positions(k)} a score at "
        f"least {_largest(k)} minus {2 * t}, and every noisy count is within +-{t} of its "
        "value's true count (scores are counts after contribution bounding; noise tails and "
        f"a union bound over the {n} counts){_below_noise(t)}"
    )


def _plan(
    n: int,
    k: int,
    eps: float,
    delta: float,
    mech: Mechanism,
    counts: bool,
    c: int,
    source: RandomSource | None,
    zcdp_ledger: bool = False,
) -> _Plan:
    """Calibrate the chosen mechanism to ``(eps, delta)`` at one person (``d_in = 1``).

    Selection scores move by at most 1 each, all the same way (monotonic; data.scores); each
    person moves at most ``c`` of them (histograms).
    """
    method = _resolve(mech, k, n, eps, delta, c, counts, zcdp_ledger)
    if method == "gumbel_counts":
        return _gumbel_counts_plan(n, k, eps, source)
    if method in ("laplace_histogram", "gaussian_histogram"):
        return _histogram_plan(n, k, eps, delta, method, c, source)
    noise = _NOISE[method]
    kind: Literal["pure", "bounded_range"] = "bounded_range" if noise == "gumbel" else "pure"
    if delta == 0:
        scale = _calibrate(lambda s: _selection(n, k, noise, s, MaxDivergence(), source), eps)
        accounting = "basic composition"
    else:
        eps0, accounting = per_round_epsilon(kind, k, eps, delta)
        scale = float_up(1 / Fraction(eps0))
    measurement = _selection(n, k, noise, scale, MaxDivergence(), source)
    twin = _selection(n, k, noise, scale, ZeroConcentratedDivergence(), source)
    pure = float(measurement.map(1))
    if delta == 0:
        spent_eps, spent_delta, charge_kind = pure, 0.0, kind
    else:
        per_round = selection_loss(1, scale, 1, noise, MaxDivergence())
        spent_eps, accounting = composed_epsilon(kind, k, per_round, delta)
        while spent_eps > eps:  # pragma: no cover - the bisection keeps a margin
            scale = math.nextafter(scale, math.inf)
            per_round = selection_loss(1, scale, 1, noise, MaxDivergence())
            spent_eps, accounting = composed_epsilon(kind, k, per_round, delta)
        measurement = _selection(n, k, noise, scale, MaxDivergence(), source)
        twin = _selection(n, k, noise, scale, ZeroConcentratedDivergence(), source)
        spent_delta, charge_kind = delta, "approx"  # type: ignore[assignment]
        if pure <= spent_eps:  # pragma: no cover - pure composition is never the better one here
            spent_eps, spent_delta, charge_kind = pure, 0.0, kind
    return _Plan(
        measurement,
        method,
        METHOD_NAMES[method],
        scale,
        None,
        spent_eps,
        spent_delta,
        float(twin.map(1)),
        charge_kind,
        accounting,
        _selection_accuracy(noise, scale, k, n),
        False,
        selection_alpha(noise, scale, k, n, 1 - CONFIDENCE),
    )


def _histogram_plan(
    n: int, k: int, eps: float, delta: float, method: str, c: int, source: RandomSource | None
) -> _Plan:
    if method == "laplace_histogram":
        scale = float_up(Fraction(c) / Fraction(eps))
        m = make_noisy_histogram_top_k(n, k, "laplace", scale, c, source=source)
        while float(m.map(1)) > eps:  # pragma: no cover - one ulp
            scale = math.nextafter(scale, math.inf)
            m = make_noisy_histogram_top_k(n, k, "laplace", scale, c, source=source)
        spent = float(m.map(1))
        return _Plan(
            m,
            method,
            METHOD_NAMES[method],
            scale,
            scale,
            spent,
            0.0,
            pure_dp_to_zcdp(spent),
            "pure",
            "Laplace mechanism on counts of L1 sensitivity max_contributions",
            _histogram_accuracy("laplace", scale, k, n),
            True,
            2 * histogram_halfwidth("laplace", scale, n, 1 - CONFIDENCE),
            histogram_halfwidth("laplace", scale, n, 1 - CONFIDENCE),
        )
    sigma = gaussian_histogram_sigma(c, eps, delta)
    m = make_noisy_histogram_top_k(n, k, "gaussian", sigma, c, source=source)
    rho = float(m.map(1))
    spent = zcdp_to_approx_dp(rho, delta)
    while spent > eps:  # pragma: no cover - sigma carries a margin
        sigma = sigma * (1 + 1e-9)
        m = make_noisy_histogram_top_k(n, k, "gaussian", sigma, c, source=source)
        rho = float(m.map(1))
        spent = zcdp_to_approx_dp(rho, delta)
    return _Plan(
        m,
        method,
        METHOD_NAMES[method],
        sigma,
        sigma,
        spent,
        delta,
        rho,
        "approx",
        "zCDP of the Gaussian mechanism (L2 sensitivity sqrt(max_contributions)) and the "
        "Canonne-Kamath-Steinke conversion",
        _histogram_accuracy("gaussian", sigma, k, n),
        True,
        2 * histogram_halfwidth("gaussian", sigma, n, 1 - CONFIDENCE),
        histogram_halfwidth("gaussian", sigma, n, 1 - CONFIDENCE),
    )


def _gumbel_counts_plan(n: int, k: int, eps: float, source: RandomSource | None) -> _Plan:
    domain = vector_domain(atom_domain(int), size=n)
    metric = LInfDistance(monotonic=True)

    def with_counts(measure: Measure, c: float) -> Measurement:
        # half the budget to the ranking, half to the counts (both scales 2k c)
        return make_gumbel_top_k_with_counts(
            domain, metric, k, 2 * k * c, 2 * k * c, "laplace", measure, source
        )

    c = _calibrate(lambda c: with_counts(MaxDivergence(), c), eps)
    m = with_counts(MaxDivergence(), c)
    scale = 2 * k * c
    t = count_halfwidth("laplace", scale, k, (1 - CONFIDENCE) / 2)
    alpha = selection_alpha("gumbel", scale, k, n, (1 - CONFIDENCE) / 2)
    accuracy = (
        f"accuracy: with probability at least {CONFIDENCE:.0%}, {_positions(k)} a score at "
        f"least {_largest(k)} minus {alpha:.4g}, and every noisy count is within +-{t} of its "
        "value's true count (scores are counts after contribution bounding; noise tails and "
        f"union bounds){_below_noise(t)}"
    )
    return _Plan(
        m,
        "gumbel_counts",
        GUMBEL_WITH_COUNTS,
        scale,
        scale,
        float(m.map(1)),
        0.0,
        float(with_counts(ZeroConcentratedDivergence(), c).map(1)),
        "pure",
        "basic composition",
        accuracy,
        True,
        alpha,
        t,
    )


def _calibrate(make: Callable[[float], Measurement], epsilon: float) -> float:
    """The smallest float scale whose pure-DP loss at ``d_in = 1`` is at most ``epsilon``.

    The selection maps are ``float_up(c / scale)`` for a rational ``c`` (report_noisy_max,
    gumbel_counts), so ``scale = float_up(map_at_1 / epsilon)`` is within an ulp or two of the
    answer: it is moved by ulps while the map's own check decides, which replaces a binary
    search of about 200 constructions by a handful. Binary search remains the fallback.
    """
    scale = float_up(Fraction(make(1.0).map(1)) / Fraction(epsilon))
    for _ in range(4):
        if make(scale).check(1, epsilon):
            break
        scale = math.nextafter(scale, math.inf)
    else:  # pragma: no cover - only if a map stops being c / scale
        return float(binary_search_param(make, 1, epsilon))
    for _ in range(4):
        smaller = math.nextafter(scale, 0.0)
        if smaller <= 0 or not make(smaller).check(1, epsilon):
            break
        scale = smaller
    return scale


def top_k(
    data: Any,
    column: str,
    k: int,
    epsilon: float,
    candidates: Any = None,
    delta: float | None = None,
    privacy_unit: str | None = None,
    max_contributions: int | Literal["auto"] = 1,
    mechanism: Mechanism | None = "auto",
    ledger: Any = None,
    source: RandomSource | None = None,
    counts: bool = False,
    progress: Progress = None,
    k_bar: int | None = None,
    schema: Any = None,
    auto_fraction: float | None = None,
) -> TopKResult:
    """The ``k`` most common values of ``column``, privately, at an ``(epsilon, delta)`` target.

    ``data``: a path to CSV, Parquet or JSON lines, or a pandas, polars or pyarrow table.
    ``candidates``: a list or a text file (one per line); values absent from the data score 0,
    values outside the list are ignored. ``privacy_unit``: a column identifying people (each
    row is a person without it); each person counts toward at most ``max_contributions``
    values. ``(epsilon, delta)`` is the total guarantee at distance 1 (one person added or
    removed); ``delta`` defaults to 0 (pure DP).

    ``mechanism="auto"`` (default) runs the most accurate mechanism for the public facts
    ``(k, epsilon, delta, number of candidates, max_contributions)`` by the criterion of
    :mod:`dpselect.mechanisms.choice` (never the data): permute-and-flip, one-shot Gumbel, a
    noisy histogram (Laplace, or Gaussian when ``delta > 0``), each calibrated by the tightest
    valid accounting; the result names the method, the theorem and the scale. Any key of
    :data:`MECHANISMS` fixes the mechanism instead. ``counts=True`` also releases noisy counts
    (free with a histogram; one-shot Gumbel spends half on them).

    Without ``candidates``, ``delta > 0`` is required and the values come from the data: see
    :func:`dpselect.recipes.unknown_domain.top_k_unknown_domain` (partition selection then
    the top ``k``, or the limited-domain mechanism), chosen by public facts.

    ``max_contributions="auto"`` (with ``privacy_unit`` and ``candidates``) chooses the bound
    privately first: ``auto_fraction`` (default :data:`AUTO_FRACTION`) of ``epsilon`` goes to
    the generalized exponential mechanism over the bounds ``1, 2, 4, ..., 256``, the rest to
    the top-k at the chosen bound; one composed charge covers both (docs/private_selection.md,
    "max_contributions='auto'").

    ``ledger``: a :class:`Ledger` or its path; the charge is durable before anything is
    computed from the data, in the ledger's accounting ((epsilon, delta) or zCDP rho).
    ``source`` is for tests and demos only. Every error is raised from public facts before any
    budget is spent; the private rows never cause an error (empty data: every score is 0).

    ``data`` may also be a DuckDB relation, or one column of values: a pandas (or polars)
    Series or a 1-D NumPy array, with ``column=None`` (or the Series' name).
    """
    data, column = one_column(data, column)
    k = check_int(k, "k", minimum=1)
    eps = float(check_user_epsilon(epsilon))
    mech = _check_mechanism(mechanism)
    auto_m = isinstance(max_contributions, str) and max_contributions == "auto"
    if auto_m:
        fraction = check_auto_fraction(auto_fraction)
        if privacy_unit is None:
            raise ParameterError(
                "max_contributions='auto' needs a privacy_unit column (without one each row "
                "is a person and counts once)"
            )
        if candidates is None:
            raise ParameterError(
                "max_contributions='auto' needs a public candidates list (with values from "
                "the data give max_contributions as a number)"
            )
    else:
        if auto_fraction is not None:
            raise ParameterError("auto_fraction applies only with max_contributions='auto'")
        max_contributions = check_int(max_contributions, "max_contributions", minimum=1)
        if privacy_unit is None and max_contributions != 1:
            raise ParameterError("max_contributions applies only with a privacy_unit column")
    if not isinstance(counts, bool):
        raise ParameterError(f"counts must be a bool, got {counts!r}")
    if candidates is None:
        if delta is None or delta == 0:
            raise ParameterError(
                "without a public candidates list, give delta > 0: values that come from the "
                "data can only be shown with a small chance of failure delta"
            )
        from .recipes.unknown_domain import top_k_unknown_domain

        return top_k_unknown_domain(
            data,
            column,
            k,
            eps,
            float(check_delta(delta, allow_zero=False)),
            privacy_unit,
            int(max_contributions),
            mech,
            counts,
            ledger,
            source,
            progress,
            k_bar,
            schema=schema,
        )
    if k_bar is not None:
        raise ParameterError("k_bar applies only without a candidates list (limited domain)")
    dlt = 0.0 if delta is None else float(check_delta(delta))
    cand_list = load_candidates(candidates)
    if privacy_unit is not None:  # the bounding rule's 32-bit codes (public: the list's size)
        check_bounded_candidates(len(cand_list))
    if k > len(cand_list):
        raise ParameterError(
            f"k must be at most the number of candidates ({len(cand_list)}), got {k}"
        )
    table = _open(data, column, privacy_unit, schema)
    book = open_ledger(ledger)

    zcdp_ledger = book is not None and book.accounting == "zcdp"
    note = candidates_note(cand_list, column, table)
    if auto_m:
        assert privacy_unit is not None
        chosen = _top_k_auto_contributions(
            _Query(table, column, k, cand_list, privacy_unit, counts, source, progress),
            eps,
            dlt,
            mech,
            fraction,
            book,
            zcdp_ledger,
        )
        return _with_note(note, chosen)
    m = int(max_contributions)
    # The histograms' L1 sensitivity (selection needs only L-infinity 1): with a privacy unit
    # the bound m; without, one row adds 1 to every candidate its value matches, and two
    # candidates may match one value ("7" and "07" on an integer column): the most that do,
    # a public fact of the list and the column's type, by the engine's own matching (its
    # equality: a collated Spark text column matches "a" and "A" to one value), read from
    # the schema only (data.scores.candidate_multiplicity).
    c = m if privacy_unit is not None else candidate_multiplicity(table, column, cand_list)
    plan = _plan(len(cand_list), k, eps, dlt, mech, counts, c, source, zcdp_ledger)
    parameters = _parameters(column, k, eps, dlt, len(cand_list), privacy_unit, m, mech, plan)
    if c != m:
        parameters["score_l1_sensitivity"] = c
    query = _Query(table, column, k, cand_list, privacy_unit, counts, source, progress)

    def release() -> TopKResult:
        return _release(query, plan, m, book, parameters)

    result = _charge_then(
        book, release, plan.epsilon, plan.delta, plan.rho, plan.kind, f"top_k/{plan.method}",
        parameters,
    )  # fmt: skip
    return _with_note(note, result)


def _with_note(note: str | None, result: TopKResult) -> TopKResult:
    """``result`` with the candidate list's note (public: :func:`header_note`) in its
    parameters as ``candidates_note``, shown with the answer."""
    if note is None:
        return result
    return replace(result, parameters={**result.parameters, "candidates_note": note})


@dataclass(frozen=True)
class _Query:
    """A top-k query's public parts and its opened table."""

    table: Engine
    column: str
    k: int
    candidates: list[Any]
    privacy_unit: str | None
    counts: bool
    source: RandomSource | None
    progress: Progress


def _parameters(
    column: str,
    k: int,
    eps: float,
    dlt: float,
    n: int,
    privacy_unit: str | None,
    m: int,
    mech: Mechanism,
    plan: _Plan,
) -> dict[str, Any]:
    return {
        "column": column,
        "k": k,
        "epsilon": eps,
        "delta": dlt,
        "n_candidates": n,
        "privacy_unit": privacy_unit,
        "max_contributions": m,
        "mechanism": plan.method,
        "chosen_by": "auto" if mech == "auto" else "user",
        "accounting": plan.accounting,
        "scale": plan.scale,
        "count_scale": plan.count_scale,
    }


def _release(
    query: _Query,
    plan: _Plan,
    m: int,
    book: Any,
    parameters: dict[str, Any],
    cost: tuple[float, float, float] | None = None,
) -> TopKResult:
    """Score the candidates with contributions bounded to ``m`` and run ``plan`` (after the
    charge). ``cost``: the ``(epsilon, delta, rho)`` reported instead of the plan's own."""
    salt = resolve_source(query.source).bits(63)
    scores = candidate_scores(
        query.table, query.column, query.candidates, query.privacy_unit, m, salt,
        query.progress,
    )  # fmt: skip
    out = plan.measurement(scores)
    if plan.returns_counts:
        indices, noisy = out
        released_counts: list[int] | None = [int(c) for c in noisy] if query.counts else None
    else:
        indices, released_counts = out, None
    idx = [int(i) for i in np.asarray(indices)]
    eps, delta, rho = cost if cost is not None else (plan.epsilon, plan.delta, plan.rho)
    if released_counts is not None and plan.count_halfwidth is not None:
        parameters = {**parameters, "count_halfwidth": plan.count_halfwidth}
    return TopKResult(
        candidates=[query.candidates[i] for i in idx],
        indices=idx,
        mechanism=plan.name,
        epsilon=eps,
        delta=delta,
        rho=rho,
        accuracy=plan.accuracy,
        counts=released_counts,
        ledger=None if book is None else book.path,
        parameters=parameters,
    )


#: The default share of epsilon spent on choosing ``max_contributions`` or ``bounds`` when
#: they are ``"auto"`` (a public rule; the rest goes to the query).
AUTO_FRACTION = 0.25


def check_auto_fraction(fraction: Any) -> float:
    """``auto_fraction`` in ``(0, 1)`` (``None``: :data:`AUTO_FRACTION`)."""
    if fraction is None:
        return AUTO_FRACTION
    fraction = plain_number(fraction)
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float, Fraction)):
        raise ParameterError(f"auto_fraction must be a number in (0, 1), got {fraction!r}")
    if not 0 < float(fraction) < 1:
        raise ParameterError(f"auto_fraction must be in (0, 1), got {fraction!r}")
    return float(fraction)


def _top_k_auto_contributions(
    query: _Query,
    eps: float,
    dlt: float,
    mech: Mechanism,
    fraction: float,
    book: Any,
    zcdp_ledger: bool,
) -> TopKResult:
    """``max_contributions="auto"``: GEM chooses ``m``, then the top-k runs with it.

    Budget (a public rule): the choice gets ``fraction * epsilon`` (its GEM map at distance 1,
    ``eps_c``), the top-k ``eps_q = epsilon - eps_c`` (rounded down). The top-k's calibration,
    mechanism ("auto": by public facts, one of which is ``m``) and cost depend on ``m``, so a
    plan is made for every candidate bound before anything is charged, and the charge is
    ``eps_c + max_m eps_q(m)`` (each ``<= eps_q``: at most ``epsilon``), ``max_m delta(m)``,
    and in a zCDP ledger ``eps_c^2 / 8 + max_m rho(m)``: adaptive composition of an
    ``eps_c``-DP (bounded range) choice and a query whose parameters depend on it.

    GEM's score for ``m``: ``sum_u min(c_u, m) - margin(m)``, ``c_u`` person ``u``'s distinct
    values of the column and ``margin(m)`` the score margin of the top-k's accuracy statement
    at ``m`` (public). Up to the constant ``sum_u c_u`` this is ``-(contributions dropped +
    margin)``, a bound on how far the released values can trail the unbounded top counts;
    GEM's differences do not see the constant. Sensitivity ``Delta_m = m`` (one person adds
    at most ``m`` kept contributions; the margin is public).
    """
    from .recipes.bounds import (
        DEFAULT_CONTRIBUTIONS,
        choose_max_contributions,
        contribution_choice_cost,
    )

    bounds = list(DEFAULT_CONTRIBUTIONS)
    eps_choice = Fraction(eps) * Fraction(fraction)
    spent_c = contribution_choice_cost(eps_choice, bounds)
    eps_q = float_down(Fraction(eps) - Fraction(spent_c))
    n = len(query.candidates)
    plans = {
        m: _plan(n, query.k, eps_q, dlt, mech, query.counts, m, query.source, zcdp_ledger)
        for m in bounds
    }
    spent_eps = float_up(Fraction(spent_c) + max(Fraction(p.epsilon) for p in plans.values()))
    spent_delta = max(p.delta for p in plans.values())
    rho = float_up(Fraction(spent_c) ** 2 / 8 + max(Fraction(p.rho) for p in plans.values()))
    kind: Literal["pure", "approx"] = "approx" if spent_delta > 0 else "pure"
    margins = {m: Fraction(p.margin) for m, p in plans.items()}
    parameters = {
        "column": query.column,
        "k": query.k,
        "epsilon": eps,
        "delta": dlt,
        "n_candidates": n,
        "privacy_unit": query.privacy_unit,
        "max_contributions": "auto",
        "max_contributions_candidates": bounds,
        "auto_fraction": fraction,
        "choice_epsilon": spent_c,
        "query_epsilon": eps_q,
        "chosen_by": "auto" if mech == "auto" else "user",
    }

    def release() -> TopKResult:
        choice = choose_max_contributions(
            query.table,
            query.column,
            query.privacy_unit,  # type: ignore[arg-type]
            eps_choice,
            candidates=bounds,
            penalty=lambda m: margins[m],
            source=query.source,
        )
        m = choice.max_contributions
        plan = plans[m]
        out = dict(parameters)
        out.update(
            max_contributions=m,
            mechanism=plan.method,
            accounting=plan.accounting,
            scale=plan.scale,
            count_scale=plan.count_scale,
            max_contributions_choice=(
                f"max_contributions = {m}, chosen privately among {len(bounds)} bounds "
                f"(1..{bounds[-1]}) by the generalized exponential mechanism at epsilon = "
                f"{spent_c:.6g}; the top-k then ran at epsilon = {plan.epsilon:.6g}"
            ),
        )
        return _release(query, plan, m, book, out, (spent_eps, spent_delta, rho))

    return _charge_then(
        book, release, spent_eps, spent_delta, rho, kind, "top_k/max_contributions=auto",
        parameters,
    )  # fmt: skip


def _charge_then(
    book: Any,
    release: Callable[[], TopKResult],
    eps: float,
    delta: float,
    rho: float | None,
    kind: Literal["pure", "bounded_range", "approx"],
    name: str,
    parameters: dict[str, Any],
) -> TopKResult:
    """Charge ``book`` in its own accounting (durably), then release."""
    if book is None:
        return release()
    if book.accounting == "zcdp":
        if rho is None:
            raise ParameterError(
                f"this release costs (epsilon, delta) with delta > 0, which the zCDP ledger "
                f"{book.path} cannot take: use a basic ledger, or a mechanism with a zCDP cost"
            )
        book.charge_zcdp(rho, mechanism=name, parameters=parameters)
        return release()
    out: TopKResult = book.charge_then(release, eps, delta, name, parameters, kind=kind)
    return out


def _open(data: Any, column: str, privacy_unit: str | None, schema: Any = None) -> Engine:
    """The data as a table with its columns checked (public facts only)."""
    table = open_table(data, schema=schema)
    check_column_role(table, column, "ranked")
    if privacy_unit is not None:
        check_column_role(table, privacy_unit, "unit", "privacy_unit")
    return table


def most_common(
    data: Any,
    column: str,
    epsilon: float,
    **kwargs: Any,
) -> TopKResult:
    """:func:`top_k` with ``k = 1``: the most common value of ``column``, privately."""
    return top_k(data, column, 1, epsilon, **kwargs)
