"""Generic private selection: the exponential mechanism for any score (seeds 002, 003).

``select(candidates, score, data, epsilon, sensitivity)`` picks a candidate with probability
proportional to ``exp(eps score(data, c) / (2 Delta))`` (``exp(eps s / Delta)`` with
``monotonic=True``), exactly (:func:`make_exponential_mechanism`, Gumbel engine).

**The caller's obligations**, which no code can check:

- ``sensitivity`` bounds ``|score(x, c) - score(x', c)|`` for every candidate ``c`` and
  every pair of datasets differing by one record (added or removed), or, with
  ``privacy_unit="user_id"``, by all the records of one unit (the name is what the ledger
  records; the bound is the caller's);
- ``monotonic=True`` only when, between any such pair, every score moves in the same
  direction (for example counts);
- **the candidate set must not depend on the data** (seeds 002 and 003: "the set of possible
  outputs should not be specific to the particular dataset! Otherwise we violate DP";
  "example of violation: possible prices for items based on actual bids"). Take candidates
  from public knowledge (a domain, a grid, a catalogue), never from the rows.

A score that is NaN or not a number counts as the worst score (weight 0, for ``optimize="max"``
and ``"min"`` alike) rather than raising, so that no error depends on the data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

from ..core.arithmetic import printed_up
from ..core.errors import ParameterError
from ..core.measurement import Measurement
from ..mechanisms.exponential import make_exponential_mechanism
from ..mechanisms.utility import utility_bound
from ..mechanisms.validate import check_optimize, check_scale, check_user_epsilon
from ..planning.epsilon_range import check_epsilon_range
from ..planning.selection_stage import exponential_stage
from ..sampling.source import RandomSource
from ._common import CONFIDENCE, check_confidence, jsonable, open_ledger
from .release import charge_then, check_unit_label
from .result import Result

__all__ = ["SelectionResult", "select"]


@dataclass(frozen=True)
class SelectionResult(Result):
    """A privately selected candidate, its cost and the utility theorem's statement.

    Attributes
    ----------
    candidate : object
        The selected candidate, one of ``candidates``.
    index : int
        Its position in ``candidates``.
    epsilon : float
        The pure-DP cost (``delta = 0``), for one record (or one ``privacy_unit``) added or
        removed.
    n_candidates : int
        The number of public candidates.
    sensitivity : float
        ``Delta``, the bound on how much one record (or unit) changes any score, as given.
    monotonic : bool
        Whether the monotonic form ``exp(eps s / Delta)`` was used (else
        ``exp(eps s / (2 Delta))``).
    accuracy : str
        The utility theorem's statement: with probability at least ``confidence``, how far the
        selected candidate's score may be from the best (largest, or smallest with
        ``optimize="min"``) score.
    ledger : str or None
        The path of the ledger charged for this release; ``None`` without a ledger.
    parameters : dict
        The public parameters (``epsilon``, ``sensitivity``, ``monotonic``, ``n_candidates``,
        ``optimize``, and ``privacy_unit`` when given).
    """

    candidate: Any
    index: int
    epsilon: float
    n_candidates: int
    sensitivity: float
    monotonic: bool
    accuracy: str
    ledger: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)

    def _dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (the candidate converted with ``str`` when needed)."""
        return {
            "candidate": jsonable(self.candidate),
            "index": self.index,
            "epsilon": self.epsilon,
            "n_candidates": self.n_candidates,
            "sensitivity": self.sensitivity,
            "monotonic": self.monotonic,
            "accuracy": self.accuracy,
            "ledger": self.ledger,
            "parameters": self.parameters,
        }

    def _text(self) -> str:
        form = "monotonic, exp(eps s / Delta)" if self.monotonic else "exp(eps s / (2 Delta))"
        return "\n".join(
            [
                f"selected: {self.candidate}",
                f"mechanism: exponential mechanism over {self.n_candidates} public candidates "
                f"({form}, Delta = {self.sensitivity:g})",
                f"privacy cost: epsilon = {self.epsilon:.6g}, delta = 0",
                self.accuracy,
            ]
        )


def select(
    candidates: Sequence[Any],
    score: Callable[[Any, Any], float],
    data: Any,
    *,
    epsilon: float,
    sensitivity: float,
    monotonic: bool = False,
    optimize: Literal["max", "min"] = "max",
    confidence: float = CONFIDENCE,
    ledger: Any = None,
    source: RandomSource | None = None,
    privacy_unit: str | None = None,
) -> SelectionResult:
    """Select one of ``candidates`` privately, by the exponential mechanism on ``score``.

    Parameters
    ----------
    candidates : sequence
        The public candidates: a list that must not depend on ``data`` (module docstring for
        the caller's obligations).
    score : callable
        ``score(data, candidate) -> float``, with sensitivity ``sensitivity``; called only
        once the ledger is charged.
    data : object
        The private data, passed to ``score``.
    epsilon : float
        The privacy cost: pure DP for one record (or unit) added or removed.
    sensitivity : float
        How much one person changes any score.
    monotonic : bool, default False
        True when every score moves in the same direction between neighbours.
    optimize : {"max", "min"}, default "max"
        Select a high or a low score.
    confidence, ledger, source
        The accuracy statement's confidence, the budget ledger and the randomness (tests
        only).
    privacy_unit : str, optional
        Whom ``sensitivity`` protects, as the ledger records it (a unit's name, for example
        ``"user_id"``); default: one record (row) of ``data`` added or removed. A label only:
        the library cannot check a callable, so ``sensitivity`` must bound how much all the
        records of one such unit, added or removed together, change any score (a person with
        up to ``m`` records and a count score: ``m``). A ledger bound to another unit refuses
        the query before anything is charged.

    Returns
    -------
    SelectionResult
        The selected candidate, its cost and the utility theorem's statement.

    Raises
    ------
    ParameterError, BudgetExceeded, LedgerError
        Invalid parameters, budget left, or a ledger bound to another unit, before any budget
        is spent.

    Privacy
    -------
    The exponential mechanism is ``epsilon``-DP for neighbours whose scores differ by at most
    ``sensitivity`` (seed 002, exponential mechanism theorem; monotonic form, seed 001, Section
    3.1). Which neighbours those are is the caller's statement, recorded as ``privacy_unit``:
    where one unit's effect on a score cannot be bounded (a score that is not a sum of
    per-unit terms each capped, an unbounded count per person), no ``sensitivity`` is valid
    and this recipe gives no guarantee for that unit.

    Examples
    --------
    >>> import dpselect as dp
    >>> from dpselect.sampling import InsecureSeededSource  # reproducible, not private
    >>> result = dp.select(["a", "b", "c"], lambda data, c: data.count(c), list("aaaab"),
    ...                    epsilon=1.0, sensitivity=1, monotonic=True,
    ...                    source=InsecureSeededSource(1))
    >>> result.candidate
    'a'
    """
    plan = _plan_selection(
        candidates, score, epsilon, sensitivity, confidence, optimize, monotonic, source,
        privacy_unit,
    )  # fmt: skip
    book = open_ledger(ledger)
    parameters = plan.parameters(monotonic, optimize, privacy_unit)

    def release() -> SelectionResult:
        index = int(plan.mechanism(data))
        return SelectionResult(
            candidate=plan.candidates[index], index=index, epsilon=float(plan.epsilon),
            n_candidates=len(plan.candidates), sensitivity=float(plan.sensitivity),
            monotonic=monotonic, accuracy=plan.accuracy,
            ledger=None if book is None else book.path, parameters=parameters,
        )  # fmt: skip

    # The scores' sensitivity is for the caller's unit (rows by default); ``data`` is whatever
    # ``score`` reads: no description.
    stage = exponential_stage("select", plan.epsilon, plan.sensitivity, monotonic=monotonic,
                              n_candidates=len(plan.candidates))  # fmt: skip
    return charge_then(
        book, release, float(plan.epsilon), 0.0, None, "bounded_range", "select", parameters,
        privacy_unit=privacy_unit, source=None, stages=(stage,),
    )  # fmt: skip


@dataclass(frozen=True)
class _SelectionPlan:
    """A selection planned from public facts: its budget, candidates, mechanism, accuracy."""

    epsilon: Fraction
    sensitivity: Any
    candidates: list[Any]
    mechanism: Measurement
    accuracy: str

    def parameters(
        self, monotonic: bool, optimize: str, privacy_unit: str | None
    ) -> dict[str, Any]:
        """The public parameters the ledger and the result record."""
        return {
            "epsilon": float(self.epsilon), "sensitivity": float(self.sensitivity),
            "monotonic": monotonic, "n_candidates": len(self.candidates), "optimize": optimize,
            **({} if privacy_unit is None else {"privacy_unit": privacy_unit}),
        }  # fmt: skip


def _plan_selection(
    candidates: Any,
    score: Any,
    epsilon: float,
    sensitivity: float,
    confidence: float,
    optimize: Literal["max", "min"],
    monotonic: bool,
    source: RandomSource | None,
    privacy_unit: Any,
) -> _SelectionPlan:
    """Check the public parameters in order, then build the mechanism and its accuracy
    statement (nothing read, nothing charged)."""
    eps = Fraction(check_user_epsilon(epsilon))
    check_epsilon_range(eps)
    delta = check_scale(sensitivity, "sensitivity", allow_zero=False)
    conf = check_confidence(confidence)
    check_optimize(optimize)
    cands = _checked_candidates(candidates, score, privacy_unit)
    mechanism = make_exponential_mechanism(
        list(range(len(cands))), lambda x, i: score(x, cands[i]), delta, epsilon=eps,
        monotonic=monotonic, optimize=optimize, source=source,
    )  # fmt: skip
    accuracy = _accuracy(eps, delta, len(cands), conf, monotonic, optimize)
    return _SelectionPlan(eps, delta, cands, mechanism, accuracy)


def _checked_candidates(candidates: Any, score: Any, privacy_unit: Any) -> list[Any]:
    """The public candidates as a list, the unit label and ``score`` checked, in this order."""
    if isinstance(candidates, (str, bytes)) or not isinstance(candidates, Sequence):
        raise ParameterError("candidates must be a list or tuple of public values")
    cands = list(candidates)
    check_unit_label(privacy_unit)
    if not callable(score):
        raise ParameterError("score must be a callable score(data, candidate) -> number")
    return cands


def _accuracy(
    eps: Fraction, delta: Any, n: int, conf: float, monotonic: bool, optimize: str
) -> str:
    """The utility theorem's statement for ``n`` candidates (public parameters only)."""
    bound = utility_bound(eps, delta, n, confidence=conf, monotonic=monotonic)
    direction = "largest" if optimize == "max" else "smallest"
    return (
        f"accuracy: with probability at least {conf:.0%}, the selected candidate's score is "
        f"within {printed_up(bound.loss)} of the {direction} score (utility theorem, seed 002)"
    )
