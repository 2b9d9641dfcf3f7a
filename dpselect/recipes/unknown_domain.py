"""Values from the data: partition selection, and the release of a top-k without candidates.

``partition_selection(data, request)`` answers "which values can I publish at
all": DVGM22's optimal partition selection for one value per person; for more (with a privacy
unit, on an engine that holds persons in the driver) policy set union (Gopi et al. 2020,
Policy Laplace: persons spend their weight on the values that still need it,
:mod:`dpselect.mechanisms.set_union`); thresholding of exact Laplace or Gaussian counts on
request or on an engine that does not (the one with the lower threshold, a public fact). The
mechanism, its calibration, its charge and its stage are planned by
:func:`dpselect.planning.partition_selection_plan.keys_plan`; this module opens the data,
charges the plan once and runs it.

``top_k`` without ``candidates`` is planned by :mod:`dpselect.planning.unknown_domain_plan`
(thresholding then the top k, the limited domain, or policy set union then the top k, chosen
by public facts), made ready by :mod:`dpselect.recipes.unknown_domain_top_k` and released
here: :func:`top_k_unknown_domain` charges the plan once, then runs it
(:func:`run_unknown_domain_plan`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..data.engine import Engine
from ..data.query import Query, UnitRule
from ..mechanisms.partition_selection import ordered_values
from ..planning.partition_selection_plan import KeysPlan, check_keys_engine, keys_plan
from ..planning.partition_selection_request import PartitionSelectionRequest
from ..planning.stage import Stage
from ..planning.top_k_plan import CONFIDENCE
from ..sampling.source import RandomSource, resolve_source
from ._common import open_ledger
from .release import charge_then, open_checked
from .top_k_result import TopKResult
from .unknown_domain_result import KeysResult, Progress, counted_in_words
from .unknown_domain_top_k import UnknownDomainRelease, unknown_domain_release

if TYPE_CHECKING:
    from ..accounting.ledger import Ledger
    from ..planning.top_k_request import TopKRequest
    from .grouping import GroupedResult

__all__ = ["partition_selection", "run_unknown_domain_plan", "top_k_unknown_domain"]


def run_unknown_domain_plan(book: Any, prepared: UnknownDomainRelease) -> TopKResult:
    """Charge ``prepared``'s plan to ``book`` (``None``: no ledger), with its stages, then run
    it.

    Parameters
    ----------
    book : Ledger or None
        The opened ledger (``None``: no ledger).
    prepared : UnknownDomainRelease
        The plan and its release
        (:func:`~dpselect.recipes.unknown_domain_top_k.unknown_domain_release`).

    Returns
    -------
    TopKResult
        The released values (and noisy counts if asked), at the plan's ``(epsilon, delta)``.
    """
    plan = prepared.plan
    return _charge_then_result(book, prepared.pick, plan.spent, plan.mechanism, plan.entry,
                               prepared.accuracy, plan.parameters, prepared.described,
                               plan.stages)  # fmt: skip


def partition_selection(
    data: Any,
    request: PartitionSelectionRequest,
    *,
    ledger: Ledger | str | None = None,
    source: RandomSource | None = None,
    progress: Progress = None,
    schema: Any = None,
) -> KeysResult | GroupedResult:
    """The values a checked :class:`PartitionSelectionRequest` may publish, from ``data``.

    :meth:`dpselect.Session.partition_selection`, :func:`dpselect.partition_selection` and the
    command line build the request
    (:func:`~dpselect.planning.partition_selection_request.partition_selection_request`: every
    public argument checked before anything is opened) and run it here.

    ``mechanism="auto"``: :func:`choose_keys_method` -- DVGM22's optimal partition selection when
    each unit has one value (``values_per_unit = 1``, the optimum for that case); with more,
    policy set union with Laplace noise (Gopi et al. 2020) from ``epsilon >=
    POLICY_MIN_EPSILON`` on an engine that holds persons in the driver, else the optimal rule
    with each unit bounded to one value (``bench/bench_utility.py --set-union`` measured both
    releasing more values than thresholding at the same guarantee). ``"optimal"`` with more
    values per unit keeps one value per unit. ``"laplace"`` / ``"gaussian"``: thresholding
    with ``values_per_unit`` values. ``"policy_laplace"`` / ``"policy_gaussian"`` run
    :mod:`dpselect.mechanisms.set_union` on each unit's values (held in the driver). With
    ``rows_per_value = r > 1`` each unit adds its rows with a value, at most ``r``, to its
    count: thresholding calibrated to L-infinity ``r``, L1 ``c r``, L2 ``r sqrt(c)``, Policy
    Laplace and Policy Gaussian with a budget and per-value caps of ``r``; ``"auto"`` and
    ``"optimal"`` select by units (docs/partition_selection.md, section 6). With ``by``: the
    values publishable in every group, in one query
    (:func:`dpselect.recipes.grouped_keys.grouped_partition_selection`). The released values
    come in a fixed order (sorted), never by count. Charged once, durably, before the data is
    read.

    Parameters
    ----------
    data : Engine, str, path, DataFrame, relation, Series or array
        The private rows: a table already opened (:class:`~dpselect.data.engine.Engine`) or
        anything :func:`~dpselect.data.tables.open_table` takes.
    request : PartitionSelectionRequest
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
    KeysResult or GroupedResult
        The released values, the mechanism, the cost and how likely a value is shown (with
        ``by``: one per group).

    Raises
    ------
    ParameterError, DataError, BudgetExceeded
        Unusable data or too little budget left, before any budget is spent.

    Examples
    --------
    >>> import pandas as pd
    >>> from dpselect.planning.partition_selection_request import partition_selection_request
    >>> from dpselect.sampling import InsecureSeededSource  # reproducible, not private
    >>> rows = pd.DataFrame({"value": ["a"] * 500 + ["b"] * 3})
    >>> request = partition_selection_request("value", 1.0, 1e-6)
    >>> partition_selection(rows, request, source=InsecureSeededSource(1)).values
    ['a']
    """
    if request.by is None:
        return _select_keys(data, request, _KeysInputs(source, progress), ledger, schema)
    from .grouped_keys import grouped_partition_selection

    return grouped_partition_selection(data, request, ledger=ledger, source=source,
                                       progress=progress, schema=schema)  # fmt: skip


def _select_keys(
    data: Any, request: PartitionSelectionRequest, inputs: _KeysInputs, ledger: Any, schema: Any
) -> KeysResult:
    """Open the data (schema only), plan the selection
    (:func:`~dpselect.planning.partition_selection_plan.keys_plan`), charge it once, then
    release the values (:func:`partition_selection`'s body after its checks)."""
    column, privacy_unit = request.column, request.privacy_unit
    table = open_checked(data, column, privacy_unit, schema)
    in_driver = table.capabilities.persons_in_driver  # policy set union holds each person's values
    check_keys_engine(request.mechanism, in_driver)
    book = open_ledger(ledger)
    plan = keys_plan(request, in_driver, inputs.source)
    spent_eps, spent_delta = plan.spent
    parameters = dict(plan.parameters or {})
    accuracy = _keys_accuracy(plan, request.delta)

    def release() -> KeysResult:
        values = _selected_values(table, request, inputs, plan)
        return KeysResult(
            ordered_values(values),
            plan.name,
            float(spent_eps),
            float(spent_delta),
            accuracy,
            None if book is None else book.path,
            parameters,
        )

    refusal = (
        "partition selection costs (epsilon, delta) with delta > 0, which the zCDP ledger "
        f"{getattr(book, 'path', None)} cannot take: use a basic ledger"
    )
    return charge_then(
        book, release, spent_eps, spent_delta, None, "approx", plan.entry,
        parameters, refusal=refusal, privacy_unit=privacy_unit, source=table.description,
        stages=plan.stages,
    )  # fmt: skip


@dataclass(frozen=True)
class _KeysInputs:
    """What a partition selection's release takes beside its request: the randomness and the
    progress callback."""

    source: RandomSource | None
    progress: Progress


def _keys_accuracy(plan: KeysPlan, dlt: float) -> str:
    """The accuracy statement of a partition selection."""
    return (
        f"accuracy: a value {counted_in_words(plan.sure, plan.r_sel)} is "
        f"released with probability at least {CONFIDENCE:.0%}, "
        + (
            "whatever the other values (persons spend their weight on the values that still "
            "need it); "
            if plan.policy is not None
            else "each value independently; "
        )
        + f"a value held by one person only is released with probability at most {dlt:.3g}"
    )


def _selected_values(
    table: Engine, request: PartitionSelectionRequest, inputs: _KeysInputs, plan: KeysPlan
) -> Any:
    """After the charge: read the data (a fresh salt) and run the selection."""
    column, privacy_unit, progress = request.column, request.privacy_unit, inputs.progress
    measurement, c, bound, r_sel = (plan.measurement, request.max_contributions, plan.bound,
                                    plan.r_sel)  # fmt: skip
    salt = resolve_source(inputs.source).bits(63)
    if plan.policy is not None:
        assert privacy_unit is not None  # checked above
        rule = UnitRule(privacy_unit, c, r_sel, salt=salt)
        return measurement(table.person_values(Query(column, rule, progress=progress)))
    rule = UnitRule(privacy_unit, bound, r_sel, salt=salt)
    return measurement(dict(table.counts(Query(column, rule, progress=progress))))


# ------------------------------------------------------------------------------------------
# Top-k without candidates: the release of a plan (unknown_domain_top_k)


def top_k_unknown_domain(
    data: Any,
    request: TopKRequest,
    *,
    ledger: Ledger | str | None = None,
    source: RandomSource | None = None,
    progress: Progress = None,
    schema: Any = None,
) -> TopKResult:
    """The ``candidates=None`` path of :func:`dpselect.recipes.top_k.top_k` (module docstring):
    the plan of :func:`~dpselect.planning.unknown_domain_plan.unknown_domain_plan`, charged,
    then run.

    Parameters
    ----------
    data : str, path, DataFrame, relation or Engine
        The private rows, as for :func:`dpselect.recipes.top_k.top_k`.
    request : TopKRequest
        The top-k's checked arguments, without candidates, at a numeric ``max_contributions``
        (:func:`~dpselect.planning.unknown_domain_plan.unknown_domain_plan`).
    ledger : Ledger, str, path or None
        The budget ledger charged before the data are read (``None``: none).
    source : RandomSource or None
        The randomness (``None``: the private default; a seeded source for tests only).
    progress : callable or None
        ``progress(percent)`` while the data are scanned.
    schema : dict, optional
        Declared column types.

    Returns
    -------
    TopKResult
        The released values, best first (and their noisy counts with ``counts``).
    """
    prepared = unknown_domain_release(data, request, source=source, progress=progress,
                                      schema=schema)  # fmt: skip
    return run_unknown_domain_plan(open_ledger(ledger), prepared)


def _charge_then_result(
    book: Any,
    pick: Callable[[], tuple[list[Any], list[Any] | None]],
    spent: tuple[float, float],
    mechanism: str,
    entry: str,
    accuracy: str,
    parameters: dict[str, Any],
    described: str,
    stages: tuple[Stage, ...],
) -> TopKResult:
    """Charge ``spent`` (approximate DP) as ``entry`` (recording the query's privacy unit and
    ``described``, the data's description; ``stages`` checked against it), then run ``pick``
    (the released values and, if asked, their noisy counts) and wrap them as a
    :class:`TopKResult`."""

    def release() -> TopKResult:
        values, noisy = pick()
        return TopKResult(
            candidates=values,
            indices=None,
            mechanism=mechanism,
            epsilon=spent[0],
            delta=spent[1],
            rho=None,
            accuracy=accuracy,
            counts=noisy,
            ledger=None if book is None else book.path,
            parameters=parameters,
        )

    return charge_then(
        book, release, spent[0], spent[1], None, "approx", entry, parameters,
        privacy_unit=parameters["privacy_unit"], source=described, stages=stages,
    )  # fmt: skip
