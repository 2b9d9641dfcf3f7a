"""The main job: private top-k and mode of a column, from any data source (a recipe).

``top_k(data, request)`` (a :class:`~dpselect.planning.top_k_request.TopKRequest`: the column,
``k``, ``epsilon``, the candidates, ...) asks the planner for the mechanism calibrated to
``epsilon`` (:mod:`dpselect.planning.top_k_candidates_plan`), charges the ledger durably, and
only then scores every public candidate on the data's engine (:mod:`dpselect.data`), samples
and returns the ranked candidates with their privacy cost and an accuracy statement. Nothing
here samples, splits a budget, picks a mechanism or computes a privacy loss itself: it composes
the lower layers. Each query is a short sequence: its public parameters checked (before any
charge, into one :class:`~dpselect.planning.top_k_request.TopKRequest`), the table opened
(schema only), the plan (the mechanism, its scale, the budget's shares, the stages), the
charge, then the release.

``data``: a path to CSV, Parquet or JSON lines, or a pandas, polars or pyarrow table.
``candidates``: a list or a text file (one per line); values absent from the data score 0,
values outside the list are ignored. ``privacy_unit``: a column identifying people (each
row is a person without it); each person counts toward at most ``m`` values
(``Contributions(values_per_unit=m)``), once each, or with ``rows_per_value=r`` with their
rows, at most ``r`` per value (a score then counts rows, not persons: "the top destinations
by flights"; every mechanism is calibrated to L-infinity ``r``, L1 ``m r``, L2 ``r sqrt(m)``,
docs/contribution_bounding.md). ``(epsilon, delta)`` is the total guarantee at distance 1
(one person added or removed); ``delta`` defaults to 0 (pure DP).

``mechanism="auto"`` (default) runs the most accurate mechanism for the public facts
``(k, epsilon, delta, number of candidates, values per unit)`` by the criterion of
:mod:`dpselect.mechanisms.choice` (never the data): permute-and-flip, one-shot Gumbel, a
noisy histogram (Laplace, or Gaussian when ``delta > 0``), each calibrated by the tightest
valid accounting; then, at ``delta = 0`` with a basic ledger and no counts, the joint
exponential mechanism (Gillenwater et al. 2022) if its 95% bound on the ranked error is
the lower (:func:`dpselect.planning.top_k_plan.plan_top_k`: where a unit holds many
values and ``k`` is large); the result names the method, the theorem and the scale. Any key of
:data:`MECHANISMS` fixes the mechanism instead. ``counts=True`` also releases noisy counts
(free with a histogram; one-shot Gumbel spends half on them).

Without ``candidates``, ``delta > 0`` is required and the values come from the data: see
:func:`dpselect.recipes.unknown_domain.top_k_unknown_domain` (partition selection then
the top ``k``, or the limited-domain mechanism), chosen by public facts.

``Contributions(values_per_unit="auto")`` (with ``privacy_unit`` and ``candidates``) chooses
the bound privately first: ``auto_share`` (default :data:`AUTO_FRACTION`) of ``epsilon`` goes to
the generalized exponential mechanism over the bounds ``1, 2, 4, ..., 256``, the rest to
the top-k at the chosen bound; one composed charge covers both (docs/private_selection.md,
"values_per_unit='auto'").

``ledger``: a :class:`Ledger` or its path; the charge is durable before anything is
computed from the data, in the ledger's accounting ((epsilon, delta) or zCDP rho).
``source`` is for tests and demos only. Every error is raised from public facts before any
budget is spent; the private rows never cause an error (empty data: every score is 0).

``data`` may also be a table already opened (a session's), a DuckDB relation, or one column
of values: a pandas (or polars) Series or a 1-D NumPy array (the request's column its name,
:func:`dpselect.top_k` with ``column=None``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from ..core.errors import ParameterError
from ..data.candidates import candidates_note
from ..data.engine import Engine
from ..data.query import Query, UnitRule
from ..planning.contributions import check_auto_fraction
from ..planning.top_k_candidates_plan import (
    AutoBoundTopKPlan,
    CandidatesTopKPlan,
    plan_top_k_candidates,
)
from ..planning.top_k_mechanisms import MECHANISMS, Mechanism
from ..planning.top_k_plan import CONFIDENCE
from ..planning.top_k_plan import TopKPlan as _Plan
from ..planning.top_k_request import TopKRequest
from ..sampling.source import RandomSource, resolve_source
from ._common import AUTO_FRACTION
from .release import charge_then as _charge_then
from .release import open_checked as _open
from .release import open_ledger
from .top_k_result import TopKResult

if TYPE_CHECKING:
    from ..accounting.ledger import Ledger
    from .grouping import GroupedResult

__all__ = [
    "AUTO_FRACTION",
    "CONFIDENCE",
    "MECHANISMS",
    "Mechanism",
    "TopKResult",
    "check_auto_fraction",
    "most_common",
    "top_k",
]

LIMITED_DOMAIN = "limited-domain top-k, values from the data (Durfee and Rogers 2019)"
Progress = Callable[[float], None] | None


def top_k(
    data: Any,
    request: TopKRequest,
    *,
    ledger: Ledger | str | None = None,
    source: RandomSource | None = None,
    progress: Progress = None,
    schema: Any = None,
) -> TopKResult | GroupedResult:
    """The top-k a checked :class:`TopKRequest` describes, released from ``data``.

    :meth:`dpselect.Session.top_k`, :func:`dpselect.top_k` and the command line build the
    request (:func:`~dpselect.planning.top_k_request.top_k_request`: every public argument
    checked before anything is opened) and run it here. How ``mechanism="auto"`` chooses,
    the path without candidates and ``values_per_unit="auto"``: the module docstring.

    Parameters
    ----------
    data : Engine, str, path, DataFrame, relation, Series or array
        The private rows: a table already opened (:class:`~dpselect.data.engine.Engine`) or
        anything :func:`~dpselect.data.tables.open_table` takes.
    request : TopKRequest
        The query's checked public arguments.
    ledger : Ledger or str, optional
        The budget ledger (or its path) charged before any row is read.
    source : RandomSource, optional
        The randomness (a seeded source is for tests and demos only, not private).
    progress : callable, optional
        Called with the percentage done while the query runs.
    schema : dict, optional
        Declared column types (``{column: type}``) for text files.

    Returns
    -------
    TopKResult or GroupedResult
        The ranked values, the mechanism, the privacy cost and the accuracy statement (with
        ``by``: one per group).

    Raises
    ------
    ParameterError, DataError, BudgetExceeded
        Unusable data or too little budget left, before any charge.

    Examples
    --------
    >>> import pandas as pd
    >>> from dpselect import Contributions
    >>> from dpselect.planning.top_k_request import top_k_request
    >>> from dpselect.sampling import InsecureSeededSource  # reproducible, not private
    >>> visits = pd.DataFrame({"user": [1, 1, 2, 2, 3, 4, 5, 5, 6, 7],
    ...                        "site": list("aabcaabaca")})
    >>> request = top_k_request("site", 2, 1.0, candidates=["a", "b", "c"],
    ...                         privacy_unit="user", contributions=Contributions())
    >>> result = top_k(visits, request, source=InsecureSeededSource(1))
    >>> result.candidates
    ['a', 'c']
    >>> result.epsilon
    1.0
    """
    inputs = _Inputs(data, ledger, source, progress, schema)
    if request.by is not None:
        from .grouped import grouped_top_k

        return grouped_top_k(inputs.data, request, ledger=inputs.ledger, source=inputs.source,
                             progress=inputs.progress, schema=inputs.schema)  # fmt: skip
    if request.candidates is None:
        return _top_k_unknown_domain(request, inputs)
    return _top_k_candidates(request, inputs)


@dataclass(frozen=True)
class _Inputs:
    """What :func:`top_k` passes on beside its checked :class:`TopKRequest`: the data, the
    ledger, the randomness, the progress callback and the declared column types."""

    data: Any
    ledger: Any
    source: RandomSource | None
    progress: Progress
    schema: Any


def _top_k_unknown_domain(request: TopKRequest, inputs: _Inputs) -> TopKResult:
    """``candidates=None``: the values come from the data (``delta > 0``); the bound given or
    chosen privately (:mod:`dpselect.recipes.unknown_domain_auto`)."""
    i = inputs
    if request.max_contributions is None:
        from .unknown_domain_auto import top_k_unknown_domain_auto_contributions as run
    else:
        from .unknown_domain import top_k_unknown_domain as run
    return run(i.data, request, ledger=i.ledger, source=i.source, progress=i.progress,
               schema=i.schema)  # fmt: skip


def _top_k_candidates(request: TopKRequest, inputs: _Inputs) -> TopKResult:
    """Over the public candidates: open the data (schema) and the ledger, ask the planner
    (:func:`~dpselect.planning.top_k_candidates_plan.plan_top_k_candidates`), then charge and
    release at the given bound or with the bound chosen privately."""
    a, i = request, inputs
    assert a.candidates is not None
    table = _open(i.data, a.column, a.privacy_unit, i.schema)
    book = open_ledger(i.ledger)
    note = candidates_note(a.candidates, a.column, table)
    # without a unit, how many candidates one row's value matches, by the engine's own
    # matching (its equality: a collated text column matches "a" and "A" to one value), read
    # from the schema only (Engine.multiplicity)
    multiplicity = (
        None if a.privacy_unit is not None else table.multiplicity(a.column, a.candidates)
    )
    plan = plan_top_k_candidates(a, len(a.candidates), multiplicity,
                                 accounting=None if book is None else book.accounting,
                                 source=i.source)  # fmt: skip
    query = _Query(table, a.column, a.k, a.candidates, a.privacy_unit, a.counts, i.source,
                   i.progress, a.rows_per_value)  # fmt: skip
    if isinstance(plan, AutoBoundTopKPlan):
        return _with_note(note, _top_k_auto_contributions(query, plan, book))
    return _with_note(note, _top_k_at(query, plan, book))


def _top_k_at(query: _Query, plan: CandidatesTopKPlan, book: Any) -> TopKResult:
    """The top-k over the candidates at the given bound: charge the plan, then release."""
    parameters = dict(plan.parameters)

    def release() -> TopKResult:
        return _release(query, plan.top_k, plan.max_contributions, book, parameters)

    eps, delta, rho, kind = plan.charge
    return _charge_then(book, release, eps, delta, rho, kind, plan.name, parameters,
                        privacy_unit=query.privacy_unit, source=query.table.description,
                        stages=plan.stages)  # fmt: skip


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
    #: ``max_rows_per_value``: a person's rows counted per value, at most this many
    rows_per_value: int = 1


def _release(
    query: _Query,
    plan: _Plan,
    m: int,
    book: Any,
    parameters: dict[str, Any],
    cost: tuple[float, float, float] | None = None,
    scores: npt.NDArray[np.int64] | None = None,
) -> TopKResult:
    """Score the candidates with contributions bounded to ``m`` and run ``plan`` (after the
    charge). ``cost``: the ``(epsilon, delta, rho)`` reported instead of the plan's own.
    ``scores``: the candidates' scores at ``m``, already computed (no salt is drawn)."""
    if scores is None:
        salt = resolve_source(query.source).bits(63)
        rule = UnitRule(query.privacy_unit, m, query.rows_per_value, salt=salt)
        scores = query.table.scores(Query(query.column, rule, progress=query.progress),
                                    query.candidates)  # fmt: skip
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


#: The GEM criterion of ``max_contributions="auto"`` with ``max_rows_per_value = r > 1``:
#: ``"kept_rows"`` (the candidates' kept rows at each bound, sensitivity ``m r``) or
#: ``"values"`` (each person's distinct values, sensitivity ``m``, the margin in units of
#: ``r``). Measured (``bench/bench_rows_auto.py``, docs/private_selection.md): "kept_rows".
ROWS_CRITERION: Literal["kept_rows", "values"] = "kept_rows"


def _top_k_auto_contributions(query: _Query, plan: AutoBoundTopKPlan,
                              book: Any) -> TopKResult:  # fmt: skip
    """``max_contributions="auto"``: charge the plan, then GEM chooses ``m`` and the top-k
    runs with it.

    The budget split, the top-k planned at every bound and the composed charge: the planner's
    (:func:`~dpselect.planning.top_k_candidates_plan.plan_top_k_candidates`); GEM's choice
    spends ``eps_c``, the plan's ``spent_c``.

    GEM's score for ``m`` (``r = 1``): ``sum_u min(c_u, m) - margin(m)``, ``c_u`` person
    ``u``'s distinct values of the column and ``margin(m)`` the score margin of the top-k's
    accuracy statement at ``m`` (public). Up to the constant ``sum_u c_u`` this is
    ``-(contributions dropped + margin)``, a bound on how far the released values can trail
    the unbounded top counts; GEM's differences do not see the constant. Sensitivity
    ``Delta_m = m`` (one person adds at most ``m`` kept contributions; the margin is public).

    Privacy
    -------
    With ``r = plan.rows_cap > 1`` (``max_rows_per_value``) every plan is made at ``r`` (scales
    and margins in rows) and GEM's score for ``m`` is ``R(m) - margin_r(m)``, ``R(m)`` the sum of
    the candidates' scores at bound ``m`` for one salt drawn after the charge: the rows each
    person keeps, at most ``r`` per value on at most ``m`` values. For a fixed salt one person
    added or removed changes the score vector at ``m`` by one summand with at most ``m``
    non-zero entries, each in ``[1, r]`` (docs/contribution_bounding.md, "Rows per value"),
    so ``R(m)`` moves by at most ``Delta_m = m r`` and GEM (seed 002, the exponential
    mechanism's proof; docs/private_selection.md, "Generalized exponential mechanism") is
    ``eps_c``-DP whatever the sensitivities. The top-k then runs on the scores at the chosen
    ``m`` for the same salt: given the salt (drawn independently of the data) the pair is the
    adaptive composition above, and a mixture over a data-independent salt of mechanisms with
    one guarantee has that guarantee. Why kept rows and not each person's distinct values
    (sensitivity ``m``, ``ROWS_CRITERION = "values"``): measured on flights-like data where
    planes hold many rows (``bench/bench_rows_auto.py``), the two chose bounds whose top 10
    was equally precise within the 95% intervals at ``r`` = 10 and 50 (NYC flights: 0.795
    against 0.785, 0.900 against 0.905); the kept rows are what the top-k ranks (rows, on the
    candidates only, where distinct values count values off the list too) and need only the
    scores every engine computes (docs/private_selection.md, "Rows per value").
    """
    parameters = dict(plan.parameters)

    def release() -> TopKResult:
        return _auto_release(query, plan, book, parameters)

    eps, delta, rho, kind = plan.charge
    return _charge_then(book, release, eps, delta, rho, kind, plan.name, parameters,
                        privacy_unit=query.privacy_unit, source=query.table.description,
                        stages=plan.stages)  # fmt: skip


def _auto_release(query: _Query, auto: AutoBoundTopKPlan, book: Any,
                  parameters: dict[str, Any]) -> TopKResult:  # fmt: skip
    """After the charge: GEM chooses ``m`` (persons' distinct values, or at ``r > 1`` the
    kept rows: :func:`_choose_rows_bound`), then the top-k runs at ``m``."""
    from .bounds import choose_max_contributions

    cost = (auto.epsilon, auto.delta, auto.rho)
    margins = auto.margins
    if auto.rows_cap > 1:
        m, scores = _choose_rows_bound(query, auto.bounds, margins, auto.eps_choice,
                                       auto.rows_cap)  # fmt: skip
        return _release(query, auto.plans[m], m, book, auto.chosen_parameters(parameters, m),
                        cost, scores)  # fmt: skip
    choice = choose_max_contributions(
        query.table,
        query.column,
        query.privacy_unit,  # type: ignore[arg-type]
        epsilon=auto.eps_choice,
        candidates=auto.bounds,
        penalty=lambda m: margins[m],
        source=query.source,
    )
    m = choice.max_contributions
    return _release(query, auto.plans[m], m, book, auto.chosen_parameters(parameters, m),
                    cost)  # fmt: skip


def _choose_rows_bound(
    query: _Query,
    bounds: list[int],
    margins: dict[int, Fraction],
    eps_choice: Fraction,
    r: int,
) -> tuple[int, npt.NDArray[np.int64]]:
    """GEM's choice of ``m`` at ``max_rows_per_value = r`` (after the charge), and the
    candidates' scores at the chosen ``m`` when they were computed for the choice
    (:func:`_top_k_auto_contributions`, "Privacy"; :data:`ROWS_CRITERION`)."""
    from ..planning.contribution_choice import bound_choice
    from .bounds import contribution_scores

    salt = resolve_source(query.source).bits(63)
    if ROWS_CRITERION == "values":  # each person's distinct values, the margin in units of r
        counts = query.table.unit_sizes(Query(query.column, UnitRule(query.privacy_unit)), "values")
        penalties = [margins[m] / r for m in bounds]
        family = dict(zip(bounds, contribution_scores(counts, bounds, None, penalties),
                          strict=True))  # fmt: skip
        vectors: dict[int, npt.NDArray[np.int64]] = {}
        sensitivities = [Fraction(m) for m in bounds]
    else:
        vectors = {
            m: query.table.scores(Query(query.column, UnitRule(query.privacy_unit, m, r, salt=salt),
                                        progress=_share(query.progress, i, bounds)),
                                  query.candidates)
            for i, m in enumerate(bounds)
        }  # fmt: skip
        family = {m: Fraction(int(vectors[m].sum())) - margins[m] for m in bounds}
        sensitivities = [Fraction(m * r) for m in bounds]
    gem = bound_choice(bounds, sensitivities, eps_choice, query.source)
    m = int(gem(family))
    if m in vectors:
        return m, vectors[m]
    rule = UnitRule(query.privacy_unit, m, r, salt=salt)
    return m, query.table.scores(
        Query(query.column, rule, progress=query.progress), query.candidates
    )


def _share(progress: Progress, i: int, bounds: list[int]) -> Progress:
    """The progress callback of the ``i``-th of ``len(bounds)`` scoring passes (its percent
    mapped into the pass's share of the whole), or ``None``."""
    if progress is None:
        return None
    report = progress
    return lambda p: report((100.0 * i + min(max(p, 0.0), 100.0)) / len(bounds))


def most_common(
    data: Any,
    request: TopKRequest,
    *,
    ledger: Ledger | str | None = None,
    source: RandomSource | None = None,
    progress: Progress = None,
    schema: Any = None,
) -> TopKResult | GroupedResult:
    """:func:`top_k` of a request made with ``k = 1``: the most common value, privately.

    Parameters
    ----------
    data : Engine, str, path, DataFrame, relation, Series or array
        The private rows, as for :func:`top_k`.
    request : TopKRequest
        The query's checked public arguments (``k = 1``).
    ledger, source, progress, schema
        As :func:`top_k`.

    Returns
    -------
    TopKResult or GroupedResult
        One value (``result.candidates[0]``), its cost and accuracy.

    Raises
    ------
    ParameterError, DataError, BudgetExceeded
        A request with ``k`` other than 1, or as :func:`top_k`, before any budget is spent.
    """
    if request.k != 1:
        raise ParameterError(
            f"most_common releases one value: a request with k = 1, got {request.k}"
        )
    return top_k(data, request, ledger=ledger, source=source, progress=progress, schema=schema)
