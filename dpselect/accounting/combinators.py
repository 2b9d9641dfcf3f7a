"""Composition combinators on :class:`~dpselect.core.Measurement`.

- :func:`make_composition`: run several measurements on the same data (non-adaptive); the
  privacy map adds their losses exactly and rounds up once (basic composition for
  ``MaxDivergence`` and ``Approximate``; Bun and Steinke 2016, Lemma 2.3, for zCDP; Mironov 2017,
  Proposition 1, for Renyi curves).
- :func:`make_adaptive_composition`: a measurement whose output is a *compositor*, a queryable
  that accepts up to ``len(d_mids)`` measurements one at a time, each chosen after seeing the
  previous answers, the ``i``-th with loss at most ``d_mids[i]``; its privacy loss is
  ``sum(d_mids)`` (adaptive composition with losses fixed in advance; seed 002).
- :func:`make_privacy_filter`: a measurement whose output is a *privacy filter*: it accepts any
  sequence of adaptively chosen measurements, with adaptively chosen losses, as long as the
  running total stays within ``d_out``, and refuses (raising :class:`BudgetExceeded`, charging
  nothing) a query that would exceed it. Valid for pure and approximate DP with basic
  composition (Rogers, Roth, Ullman, Vadhan 2016) and for zCDP (Feldman and Zrnic 2021, Renyi
  filters at every order; Whitehouse, Ramdas, Rogers, Wu 2023). Its ``spent`` property is the
  odometer reading.

Totals are kept as exact :class:`~fractions.Fraction` sums, so a run of floating-point losses
can never round its way past a budget.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from dpselect.core.arithmetic import float_down, float_up
from dpselect.core.domains import Domain
from dpselect.core.errors import BudgetExceeded, ChainError, MeasureError, PrivacyMapError
from dpselect.core.measurement import Measurement
from dpselect.core.measures import (
    Approximate,
    MaxDivergence,
    Measure,
    RenyiDivergence,
    ZeroConcentratedDivergence,
)
from dpselect.core.metrics import Metric

from .renyi import RenyiCurve, compose_rdp

__all__ = [
    "AdaptiveCompositor",
    "PrivacyFilter",
    "make_adaptive_composition",
    "make_composition",
    "make_privacy_filter",
]

_SCALAR = (MaxDivergence, ZeroConcentratedDivergence)


# --- exact loss arithmetic per measure -------------------------------------------------------


def _exact_scalar(x: Any, name: str) -> Fraction | float:
    if isinstance(x, bool) or not isinstance(x, (int, float, Fraction)):
        raise MeasureError(f"{name} must be a number, got {type(x).__name__}")
    if isinstance(x, float):
        if math.isnan(x):
            raise MeasureError(f"{name} must not be NaN")
        if math.isinf(x):
            if x < 0:
                raise MeasureError(f"{name} must be non-negative")
            return x
    q = Fraction(x)
    if q < 0:
        raise MeasureError(f"{name} must be non-negative, got {x!r}")
    return q


def _exact(measure: Measure, loss: Any, name: str) -> tuple[Fraction | float, ...]:
    """A loss as a tuple of exact parts (``inf`` kept as a float)."""
    if isinstance(measure, Approximate):
        if not (isinstance(loss, tuple) and len(loss) == 2):
            raise MeasureError(f"{name} under Approximate must be an (epsilon, delta) tuple")
        eps, delta = _exact_scalar(loss[0], name), _exact_scalar(loss[1], name)
        if delta > 1:
            raise MeasureError(f"{name}: delta must be at most 1")
        return eps, delta
    if isinstance(measure, _SCALAR):
        return (_exact_scalar(loss, name),)
    raise MeasureError(f"{type(measure).__name__} is not supported here")


def _add(a: tuple[Fraction | float, ...], b: tuple[Fraction | float, ...]) -> tuple[Any, ...]:
    return tuple(
        math.inf if isinstance(x, float) or isinstance(y, float) else x + y
        for x, y in zip(a, b, strict=True)
    )


def _to_output(measure: Measure, parts: tuple[Any, ...]) -> Any:
    def up(x: Fraction | float) -> float:
        return x if isinstance(x, float) else float_up(x)

    if isinstance(measure, Approximate):
        eps, delta = parts
        return up(eps), up(min(delta, Fraction(1)) if not isinstance(delta, float) else 1.0)
    return up(parts[0])


def _fits(parts: tuple[Any, ...], budget: tuple[Any, ...]) -> bool:
    return all(p <= b for p, b in zip(parts, budget, strict=True))


def _zero(measure: Measure) -> tuple[Fraction, ...]:
    return (Fraction(0), Fraction(0)) if isinstance(measure, Approximate) else (Fraction(0),)


# --- non-adaptive composition ----------------------------------------------------------------


def _common_input(
    measurements: Sequence[Measurement],
) -> tuple[Domain, Metric, Measure]:
    if not measurements:
        raise ChainError("composition needs at least one measurement")
    for i, m in enumerate(measurements):
        if not isinstance(m, Measurement):
            raise ChainError(f"measurements[{i}] must be a Measurement, got {m!r}")
    first = measurements[0]
    for i, m in enumerate(measurements[1:], start=1):
        if m.input_domain != first.input_domain:
            raise ChainError(
                f"measurements[{i}] has input_domain {m.input_domain!r}, "
                f"expected {first.input_domain!r}"
            )
        if m.input_metric != first.input_metric:
            raise ChainError(
                f"measurements[{i}] has input_metric {m.input_metric!r}, "
                f"expected {first.input_metric!r}"
            )
        if m.output_measure != first.output_measure:
            raise MeasureError(
                f"measurements[{i}] has output_measure {m.output_measure!r}, expected "
                f"{first.output_measure!r}; convert first (e.g. pure DP to zCDP)"
            )
    return first.input_domain, first.input_metric, first.output_measure


def make_composition(measurements: Sequence[Measurement]) -> Measurement:
    """Run ``measurements`` on the same input and release the list of their outputs.

    All must share the input domain, input metric and output measure (``MaxDivergence``,
    ``ZeroConcentratedDivergence``, ``Approximate`` or ``RenyiDivergence``). The privacy map is
    the exact sum of the members' losses, rounded up once.

    Parameters
    ----------
    measurements : sequence of Measurement
        At least one; all with the same input domain, input metric and output measure.

    Returns
    -------
    Measurement
        Its function returns the list of the members' outputs, in order; its map at ``d_in``
        is the sum of the members' maps at ``d_in`` (under ``Approximate``, ``delta`` capped at
        1; under ``RenyiDivergence``, the curves added by
        :func:`~dpselect.accounting.compose_rdp`).
    """
    ms = list(measurements)
    domain, metric, measure = _common_input(ms)
    if not isinstance(measure, (*_SCALAR, Approximate, RenyiDivergence)):
        raise MeasureError(f"cannot compose measurements with {measure!r}")

    def function(x: Any) -> list[Any]:
        return [m(x) for m in ms]

    def privacy_map(d_in: Any) -> Any:
        if isinstance(measure, RenyiDivergence):
            curves: list[RenyiCurve] = [m.map(d_in) for m in ms]
            return compose_rdp(curves)
        total: tuple[Any, ...] = _zero(measure)
        for i, m in enumerate(ms):
            total = _add(total, _exact(measure, m.map(d_in), f"measurements[{i}] loss"))
        return _to_output(measure, total)

    return Measurement(domain, metric, measure, function, privacy_map)


# --- interactive compositors -----------------------------------------------------------------


class _Interactive:
    """Shared machinery: the data, the promised input distance, the exact spent total."""

    def __init__(self, data: Any, domain: Domain, metric: Metric, measure: Measure, d_in: Any):
        self._data = data
        self._domain = domain
        self._metric = metric
        self._measure = measure
        self._d_in = d_in
        self._spent: tuple[Any, ...] = _zero(measure)
        self._lock = threading.Lock()
        self._answered = 0

    def _loss_of(self, query: Any) -> tuple[Any, ...]:
        if not isinstance(query, Measurement):
            raise ChainError(f"a query must be a Measurement, got {type(query).__name__}")
        if query.input_domain != self._domain or query.input_metric != self._metric:
            raise ChainError("the query's input domain or metric differs from the compositor's")
        if query.output_measure != self._measure:
            raise MeasureError(
                f"the query's output measure {query.output_measure!r} differs from "
                f"{self._measure!r}"
            )
        return _exact(self._measure, query.map(self._d_in), "the query's privacy loss")

    @property
    def spent(self) -> Any:
        """The privacy spent so far, in the output measure (rounded up): the odometer."""
        return _to_output(self._measure, self._spent)

    @property
    def answered(self) -> int:
        """How many queries were answered."""
        return self._answered


class AdaptiveCompositor(_Interactive):
    """Answers up to ``len(d_mids)`` adaptively chosen queries, the ``i``-th within
    ``d_mids[i]``. Call it with a :class:`Measurement` to get that measurement's answer."""

    def __init__(
        self,
        data: Any,
        domain: Domain,
        metric: Metric,
        measure: Measure,
        d_in: Any,
        d_mids: Sequence[tuple[Any, ...]],
    ):
        super().__init__(data, domain, metric, measure, d_in)
        self._d_mids = list(d_mids)

    def __call__(self, query: Measurement) -> Any:
        with self._lock:
            if self._answered >= len(self._d_mids):
                raise BudgetExceeded(
                    f"all {len(self._d_mids)} queries of this adaptive composition are used"
                )
            loss = self._loss_of(query)
            allowed = self._d_mids[self._answered]
            if not _fits(loss, allowed):
                raise BudgetExceeded(
                    f"query {self._answered} costs {_to_output(self._measure, loss)!r}, more "
                    f"than its allotted {_to_output(self._measure, allowed)!r}; nothing charged"
                )
            self._spent = _add(self._spent, allowed)
            self._answered += 1
        return query(self._data)


class PrivacyFilter(_Interactive):
    """Answers adaptively chosen queries while their exact total stays within the budget;
    refuses (raising :class:`BudgetExceeded`, charging nothing) a query that would exceed it."""

    def __init__(
        self,
        data: Any,
        domain: Domain,
        metric: Metric,
        measure: Measure,
        d_in: Any,
        budget: tuple[Any, ...],
    ):
        super().__init__(data, domain, metric, measure, d_in)
        self._budget = budget

    @property
    def remaining(self) -> Any:
        """What is left of the budget, rounded down."""
        parts = tuple(
            math.inf if isinstance(b, float) else float_down(b - s)
            for b, s in zip(self._budget, self._spent, strict=True)
        )
        return parts if isinstance(self._measure, Approximate) else parts[0]

    def __call__(self, query: Measurement) -> Any:
        with self._lock:
            loss = self._loss_of(query)
            after = _add(self._spent, loss)
            if not _fits(after, self._budget):
                raise BudgetExceeded(
                    f"the query costs {_to_output(self._measure, loss)!r} but only "
                    f"{self.remaining!r} of the budget "
                    f"{_to_output(self._measure, self._budget)!r} remains; nothing charged"
                )
            self._spent = after
            self._answered += 1
        return query(self._data)


def _check_d_in(metric: Metric, d_in: Any) -> None:
    metric.validate(d_in)


def _bounded_map(measure: Measure, d_in: Any, d_out: Any) -> Any:
    def privacy_map(d_in_p: Any) -> Any:
        if d_in_p > d_in:
            raise PrivacyMapError(f"this compositor was built for d_in <= {d_in!r}; got {d_in_p!r}")
        return d_out

    return privacy_map


def make_adaptive_composition(
    input_domain: Domain,
    input_metric: Metric,
    output_measure: Measure,
    *,
    d_in: Any,
    d_mids: Sequence[Any],
) -> Measurement:
    """A measurement releasing an :class:`AdaptiveCompositor` over its input.

    The compositor answers up to ``len(d_mids)`` queries (measurements chosen one at a time,
    possibly depending on earlier answers); the ``i``-th must have loss at most ``d_mids[i]``
    at ``d_in``. The privacy map is ``sum(d_mids)`` (rounded up) for any distance up to
    ``d_in``. Supported measures: ``MaxDivergence``, ``ZeroConcentratedDivergence``,
    ``Approximate``.

    Parameters
    ----------
    input_domain : Domain
        The data's domain; every query must have this input domain.
    input_metric : Metric
        The data's metric; every query must have it too. It validates ``d_in``.
    output_measure : Measure
        ``MaxDivergence()``, ``ZeroConcentratedDivergence()`` or ``Approximate(...)``; every
        query must have this output measure.
    d_in : number
        The input distance the guarantee is for: each query's loss is read from its map at
        ``d_in``.
    d_mids : sequence
        The loss allowed to each query in turn, in ``output_measure`` (``(epsilon, delta)``
        tuples under ``Approximate``); not empty. Each answered query is charged its full
        ``d_mids[i]``.

    Returns
    -------
    Measurement
        Its function returns an :class:`AdaptiveCompositor` over the data; its map is
        ``sum(d_mids)`` (rounded up) at any distance up to ``d_in`` and raises
        :class:`PrivacyMapError` above it.
    """
    if not isinstance(output_measure, (*_SCALAR, Approximate)):
        raise MeasureError(f"adaptive composition does not support {output_measure!r}")
    _check_d_in(input_metric, d_in)
    mids = [_exact(output_measure, d, f"d_mids[{i}]") for i, d in enumerate(d_mids)]
    if not mids:
        raise MeasureError("d_mids must not be empty")
    total: tuple[Any, ...] = _zero(output_measure)
    for m in mids:
        total = _add(total, m)
    d_out = _to_output(output_measure, total)

    def function(data: Any) -> AdaptiveCompositor:
        return AdaptiveCompositor(data, input_domain, input_metric, output_measure, d_in, mids)

    return Measurement(
        input_domain,
        input_metric,
        output_measure,
        function,
        _bounded_map(output_measure, d_in, d_out),
    )


def make_privacy_filter(
    input_domain: Domain,
    input_metric: Metric,
    output_measure: Measure,
    *,
    d_in: Any,
    d_out: Any,
) -> Measurement:
    """A measurement releasing a :class:`PrivacyFilter` with budget ``d_out`` at ``d_in``.

    The filter accepts measurements one by one, each with a loss chosen adaptively, and
    refuses with :class:`BudgetExceeded` (charging nothing) any query whose loss would take the
    exact running total above ``d_out``. The privacy map is ``d_out`` for any distance up to
    ``d_in``. Supported measures: ``MaxDivergence``, ``ZeroConcentratedDivergence``,
    ``Approximate`` (basic composition).

    Parameters
    ----------
    input_domain : Domain
        The data's domain; every query must have this input domain.
    input_metric : Metric
        The data's metric; every query must have it too. It validates ``d_in``.
    output_measure : Measure
        ``MaxDivergence()``, ``ZeroConcentratedDivergence()`` or ``Approximate(...)``; every
        query must have this output measure.
    d_in : number
        The input distance the guarantee is for: each query's loss is read from its map at
        ``d_in``.
    d_out : number or (epsilon, delta) tuple
        The budget, in ``output_measure``.

    Returns
    -------
    Measurement
        Its function returns a :class:`PrivacyFilter` over the data; its map is ``d_out`` at
        any distance up to ``d_in`` and raises :class:`PrivacyMapError` above it.
    """
    if not isinstance(output_measure, (*_SCALAR, Approximate)):
        raise MeasureError(f"a privacy filter does not support {output_measure!r}")
    _check_d_in(input_metric, d_in)
    budget = _exact(output_measure, d_out, "d_out")

    def function(data: Any) -> PrivacyFilter:
        return PrivacyFilter(data, input_domain, input_metric, output_measure, d_in, budget)

    return Measurement(
        input_domain,
        input_metric,
        output_measure,
        function,
        _bounded_map(output_measure, d_in, d_out),
    )
