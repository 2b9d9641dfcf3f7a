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
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from .core.arithmetic import float_up
from .core.calibration import binary_search_param
from .core.domains import atom_domain, vector_domain
from .core.errors import ParameterError
from .core.measurement import Measurement
from .core.measures import MaxDivergence, Measure, ZeroConcentratedDivergence
from .core.metrics import LInfDistance
from .data.candidates import load_candidates
from .data.scores import candidate_scores, top_values
from .data.tables import Table, open_table
from .mechanisms.gumbel_counts import make_gumbel_top_k_with_counts
from .mechanisms.limited_domain import limited_domain_threshold, make_limited_domain_top_k
from .mechanisms.report_noisy_max import make_noisy_top_k
from .mechanisms.utility import utility_bound
from .mechanisms.validate import check_delta, check_int, check_user_epsilon
from .recipes._common import open_ledger
from .sampling.source import RandomSource, resolve_source

__all__ = ["MECHANISMS", "TopKResult", "most_common", "top_k"]

Mechanism = Literal["gumbel", "exponential", "laplace"]
MECHANISMS: dict[str, str] = {
    "gumbel": "exponential mechanism (one-shot Gumbel top-k, seeds 001, 004)",
    "exponential": "permute-and-flip (report-noisy-max with exponential noise, k rounds)",
    "laplace": "report-noisy-max with Laplace noise (k rounds)",
}
LIMITED_DOMAIN = "limited-domain top-k, values from the data (Durfee and Rogers 2019)"
#: The confidence of the accuracy statement.
CONFIDENCE = 0.95
Progress = Callable[[float], None] | None


@dataclass(frozen=True)
class TopKResult:
    """A private top-k release: the ranked candidates, what it cost, how accurate it is."""

    candidates: list[Any]
    indices: list[int] | None  # positions in the candidate list (None: limited domain)
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
        return out

    def __str__(self) -> str:
        lines = [
            f"{rank}. {cand}"
            + (f"  (noisy count {self.counts[rank - 1]})" if self.counts is not None else "")
            for rank, cand in enumerate(self.candidates, start=1)
        ]
        cost = f"privacy cost: epsilon = {self.epsilon:.6g}, delta = {self.delta:.3g}"
        if self.rho is not None:
            cost += f", zCDP rho = {self.rho:.6g}"
        note = [self.stopped_early] if self.stopped_early else []
        return "\n".join([*lines, *note, cost, self.accuracy])

    @property
    def stopped_early(self) -> str:
        """A sentence when fewer than ``k`` values came out (limited domain), else ``""``."""
        k = int(self.parameters.get("k", len(self.candidates)))
        if len(self.candidates) >= k:
            return ""
        return (
            f"stopped early: {len(self.candidates)} of {k} values beat the noisy threshold "
            "(the others are too rare to show privately)"
        )


def _check_mechanism(mechanism: Any) -> Mechanism:
    if mechanism not in MECHANISMS:
        raise ParameterError(f"mechanism must be one of {sorted(MECHANISMS)}, got {mechanism!r}")
    return mechanism  # type: ignore[no-any-return]


@dataclass(frozen=True)
class _Plan:
    """A calibrated selection: the measurement, its twin in zCDP, and what to charge."""

    measurement: Measurement
    zcdp_twin: Measurement | None
    scale: float
    count_scale: float | None


def _plan(
    n: int, k: int, epsilon: float, mechanism: Mechanism, counts: bool, source: RandomSource | None
) -> _Plan:
    """Calibrate to ``epsilon`` at ``d_in = 1`` (scores move by 1, monotonic; data.scores)."""
    domain = vector_domain(atom_domain(int), size=n)
    metric = LInfDistance(monotonic=True)

    def selection(measure: Measure, scale: float) -> Measurement:
        return make_noisy_top_k(domain, metric, measure, k, scale, mechanism, source=source)

    def with_counts(measure: Measure, c: float) -> Measurement:
        # half the budget to the ranking, half to the counts (both scales 2k c)
        return make_gumbel_top_k_with_counts(
            domain, metric, k, 2 * k * c, 2 * k * c, "laplace", measure, source
        )

    if counts:
        c = _calibrate(lambda c: with_counts(MaxDivergence(), c), epsilon)
        return _Plan(
            with_counts(MaxDivergence(), c),
            with_counts(ZeroConcentratedDivergence(), c),
            2 * k * c,
            2 * k * c,
        )
    scale = _calibrate(lambda s: selection(MaxDivergence(), s), epsilon)
    return _Plan(
        selection(MaxDivergence(), scale),
        selection(ZeroConcentratedDivergence(), scale),
        scale,
        None,
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


def _accuracy(mechanism: Mechanism, scale: float, n: int) -> str:
    """The utility theorem's statement for the first pick, at confidence 95%."""
    if mechanism == "laplace":
        # Each Laplace(b) noise exceeds b ln(n / beta) with probability at most beta / n.
        loss = 2 * scale * math.log(n / (1 - CONFIDENCE))
        theorem = "Laplace tails and a union bound"
    else:
        # Gumbel report-noisy-max with scale s is the exponential mechanism with
        # eps / (c Delta) = 1 / s (monotonic, Delta = 1); permute-and-flip is never worse
        # (McKenna and Sheldon 2020, Theorem 2).
        bound = utility_bound(
            Fraction(1) / Fraction(scale), 1, n, confidence=CONFIDENCE, monotonic=True
        )
        loss = bound.loss
        theorem = "utility theorem, seed 002"
    return (
        f"accuracy: with probability at least {CONFIDENCE:.0%}, the first candidate's score "
        f"is within {loss:.4g} of the largest score ({theorem})"
    )


def top_k(
    data: Any,
    column: str,
    k: int,
    epsilon: float,
    candidates: Any = None,
    delta: float | None = None,
    privacy_unit: str | None = None,
    max_contributions: int = 1,
    mechanism: Mechanism = "gumbel",
    ledger: Any = None,
    source: RandomSource | None = None,
    counts: bool = False,
    progress: Progress = None,
    k_bar: int | None = None,
    schema: Any = None,
) -> TopKResult:
    """The ``k`` most common values of ``column`` among public ``candidates``, privately.

    ``data``: a path to CSV, Parquet or JSON lines, or a pandas, polars or pyarrow table.
    ``candidates``: a list or a text file (one per line); values absent from the data score 0,
    values outside the list are ignored. ``privacy_unit``: a column identifying people (each
    row is a person without it); each person counts toward at most ``max_contributions``
    candidates. ``epsilon`` is the total pure-DP cost at distance 1 (one person added or
    removed); ``counts=True`` spends half on the ranking and half on noisy counts (exact
    discrete Laplace). ``ledger``: a :class:`Ledger` or its path; the charge is durable before
    anything is computed from the data. ``source`` is for tests and demos only.
    ``schema``: declared column types ``{column: type}`` (CSV and JSON columns are text
    otherwise), applied by ``TRY_CAST``: a value that does not convert is missing.

    Without ``candidates``, ``delta`` is required and the values come from the data through
    the limited-domain mechanism (Durfee and Rogers 2019): it looks at the true top ``k_bar``
    values (default ``k + 10``, :data:`K_BAR_EXTRA`) and at the next score, and releases at
    most ``k`` of them, fewer when a noisy threshold comes first. It costs ``(epsilon,
    delta)``: ``epsilon / k`` per round, pure composition over ``k`` rounds, and ``delta`` for
    the threshold (the chance that a value outside one neighbour's top ``k_bar`` is shown).

    Every error is raised from public facts (parameters, paths, schema) before any budget is
    spent; the private rows never cause an error (empty data: every score is 0).
    """
    k = check_int(k, "k", minimum=1)
    eps = float(check_user_epsilon(epsilon))
    mech = _check_mechanism(mechanism)
    max_contributions = check_int(max_contributions, "max_contributions", minimum=1)
    if privacy_unit is None and max_contributions != 1:
        raise ParameterError("max_contributions applies only with a privacy_unit column")
    if not isinstance(counts, bool):
        raise ParameterError(f"counts must be a bool, got {counts!r}")
    if counts and mech != "gumbel":
        raise ParameterError('counts=True is available with mechanism="gumbel"')
    if candidates is None:
        if delta is None:
            raise ParameterError(
                "without a public candidates list, give delta: the limited-domain mechanism "
                "(Durfee and Rogers 2019) is then used"
            )
        return _limited_domain_top_k(
            data,
            column,
            k,
            eps,
            float(check_delta(delta, allow_zero=False)),
            privacy_unit,
            max_contributions,
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
    if delta is not None:
        check_delta(delta)
    cand_list = load_candidates(candidates)
    if k > len(cand_list):
        raise ParameterError(
            f"k must be at most the number of candidates ({len(cand_list)}), got {k}"
        )
    table = _open(data, column, privacy_unit, schema)
    book = open_ledger(ledger)

    plan = _plan(len(cand_list), k, eps, mech, counts, source)
    spent_eps = float(plan.measurement.map(1))
    rho = float(plan.zcdp_twin.map(1)) if plan.zcdp_twin is not None else None
    parameters = {
        "column": column,
        "k": k,
        "epsilon": eps,
        "n_candidates": len(cand_list),
        "privacy_unit": privacy_unit,
        "max_contributions": max_contributions,
        "mechanism": mech,
        "scale": plan.scale,
        "count_scale": plan.count_scale,
    }
    name = f"top_k/{mech}" + ("+counts" if counts else "")

    def release() -> TopKResult:
        salt = resolve_source(source).bits(63)
        scores = candidate_scores(
            table, column, cand_list, privacy_unit, max_contributions, salt, progress
        )
        out = plan.measurement(scores)
        if counts:
            indices, noisy = out
            released_counts: list[int] | None = [int(c) for c in noisy]
        else:
            indices, released_counts = out, None
        idx = [int(i) for i in np.asarray(indices)]
        return TopKResult(
            candidates=[cand_list[i] for i in idx],
            indices=idx,
            mechanism=MECHANISMS[mech],
            epsilon=spent_eps,
            delta=0.0,
            rho=rho,
            accuracy=_accuracy(mech, plan.scale, len(cand_list)),
            counts=released_counts,
            ledger=None if book is None else book.path,
            parameters=parameters,
        )

    if book is None:
        return release()
    if book.accounting == "zcdp" and rho is not None:
        book.charge_zcdp(rho, mechanism=name, parameters=parameters)
        return release()
    kind: Literal["bounded_range", "pure"] = (
        "bounded_range" if (mech == "gumbel" and not counts) else "pure"
    )
    return book.charge_then(release, spent_eps, 0.0, name, parameters, kind=kind)


def _open(data: Any, column: str, privacy_unit: str | None, schema: Any = None) -> Table:
    """The data as a table with its columns checked (public facts only)."""
    table = open_table(data, schema=schema)
    table.require_column(column)
    if privacy_unit is not None:
        table.require_column(privacy_unit, "privacy_unit")
    return table


#: The default ``k_bar`` of the limited-domain path is ``k + K_BAR_EXTRA``. A larger ``k_bar``
#: lowers the threshold (it sits above the ``(k_bar + 1)``-th score, not the ``(k + 1)``-th),
#: so fewer queries stop early, at no privacy cost while ``k_bar >= max_contributions`` (the
#: threshold's ``ln(min(Delta, k_bar) / delta)`` no longer grows) and at little cost in time.
K_BAR_EXTRA = 10


def _limited_domain_top_k(
    data: Any,
    column: str,
    k: int,
    eps: float,
    delta: float,
    privacy_unit: str | None,
    max_contributions: int,
    mech: Mechanism,
    counts: bool,
    ledger: Any,
    source: RandomSource | None,
    progress: Progress,
    k_bar: int | None,
    *,
    schema: Any = None,
) -> TopKResult:
    """The candidates=None path of :func:`top_k`: DR19's limited-domain top-k on the data."""
    if mech != "gumbel":
        raise ParameterError(
            "without a candidates list the mechanism is the limited-domain top-k (Gumbel): use "
            'mechanism="gumbel"'
        )
    if counts:
        raise ParameterError("counts=True needs a public candidates list")
    k_bar = k + K_BAR_EXTRA if k_bar is None else check_int(k_bar, "k_bar", minimum=k)
    table = _open(data, column, privacy_unit, schema)
    book = open_ledger(ledger)
    if book is not None and book.accounting == "zcdp":
        raise ParameterError(
            f"the limited-domain top-k costs (epsilon, delta) with delta > 0, which the zCDP "
            f"ledger {book.path} cannot take: give a candidates list or use a basic ledger"
        )
    # epsilon / k per round, exact: the map's pure composition k * (epsilon / k) is epsilon.
    per_round = Fraction(eps) / k
    l0 = max_contributions  # each person changes at most this many scores, each by 1
    measurement = make_limited_domain_top_k(
        k, k_bar, per_round, delta, l0_sensitivity=l0, source=source
    )
    spent_eps, spent_delta = (float(x) for x in measurement.map(1))
    threshold = limited_domain_threshold(per_round, delta, k_bar, l0)
    parameters = {
        "column": column,
        "k": k,
        "k_bar": k_bar,
        "epsilon": eps,
        "delta": delta,
        "privacy_unit": privacy_unit,
        "max_contributions": max_contributions,
        "mechanism": "limited_domain",
        "scale": float_up(1 / per_round),
        "threshold": threshold,
    }
    # Gumbel: a value beats another whose noiseless key is g lower with probability
    # 1 / (1 + e^(-g / scale)) (the difference of two Gumbels is logistic), >= 95% when
    # g >= scale ln(19).
    margin = threshold + float(1 / per_round) * math.log(CONFIDENCE / (1 - CONFIDENCE))
    accuracy = (
        f"accuracy: a value whose score exceeds the {_ordinal(k_bar + 1)} largest score by "
        f"at least {margin:.4g} is ranked above the stopping threshold with probability at "
        f"least {CONFIDENCE:.0%} (Gumbel noise, Durfee and Rogers 2019)"
    )

    def release() -> TopKResult:
        salt = resolve_source(source).bits(63)
        top = top_values(table, column, k_bar + 1, privacy_unit, max_contributions, salt, progress)
        released = measurement(dict(top))
        return TopKResult(
            candidates=list(released),
            indices=None,
            mechanism=LIMITED_DOMAIN,
            epsilon=spent_eps,
            delta=spent_delta,
            rho=None,
            accuracy=accuracy,
            counts=None,
            ledger=None if book is None else book.path,
            parameters=parameters,
        )

    if book is None:
        return release()
    return book.charge_then(
        release, spent_eps, spent_delta, "top_k/limited_domain", parameters, kind="approx"
    )


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def most_common(
    data: Any,
    column: str,
    epsilon: float,
    **kwargs: Any,
) -> TopKResult:
    """:func:`top_k` with ``k = 1``: the most common value of ``column``, privately."""
    return top_k(data, column, 1, epsilon, **kwargs)
