"""Private hypothesis selection and PAC learning (seed 003, "Private PAC learning", Theorem 6).

Given labelled examples ``(X_i, y_i)`` and a finite **public** hypothesis class ``C`` (callables
``h(X) -> labels``, a mapping of names to them, or a matrix of predictions precomputed per
hypothesis), select a hypothesis that misclassifies few examples, privately.

**Score.** ``s((X, y), h) = -|{i : h(X_i) != y_i}|``, minus the number of mistakes (the seed
divides by ``n``; counting is the same mechanism with ``Delta = 1`` instead of ``1/n``, and
does not need ``n``, which is private under adding or removing an example). Adding or removing
one example changes each count by at most one, all in the same direction: sensitivity 1,
**monotonic**, so the exponential mechanism uses ``exp(eps s)`` and is ``eps``-DP for one
example added or removed. Seed 003 changes one example (``(X_i, y_i)`` replaced arbitrarily),
which is two add/remove steps: ``2 eps`` here. Each prediction ``h(X)_i`` must depend on
``X_i`` alone (a hypothesis applied row by row); hypotheses trained on the same private data
are not covered.

**Guarantee (Theorem 6 with constants).** Suppose the examples are drawn i.i.d. from a
distribution ``D`` and labelled by some ``c* in C`` (the realizable case, as in the seed).
With ``beta = 1 - confidence`` split in halves:

- selection (utility theorem, monotonic): with probability ``>= 1 - beta/2`` the selected
  ``h`` makes at most ``(1/eps)(ln |C| + ln(2/beta))`` mistakes, since ``c*`` makes none;
  that is at most ``target_error n / 2`` once ``n >= 2 (ln |C| + ln(2/beta)) / (target_error eps)``;
- generalisation (Hoeffding and a union bound over ``C``): with probability ``>= 1 - beta/2``
  every ``h`` has ``err_D(h) <= err_S(h) + target_error / 2`` once ``n >= 2 ln(2|C|/beta) /
  target_error^2``.

So ``n >= 2 ln(2|C|/beta) / target_error^2 + 2 (ln |C| + ln(2/beta)) / (target_error eps)``
examples give ``err_D(h) <= target_error`` with probability at least ``confidence``: the
seed's ``Omega(log|C| / alpha^2 + log|C| / (alpha eps))`` with ``alpha = target_error``.
:func:`pac_sample_size` computes it (the sum, which is at least the maximum of the two
conditions, as in the seed's statement).

**A person may contribute several examples** (``privacy_unit``, ``max_rows = r``). The unit of
privacy is then the person: neighbouring datasets differ by *all* the examples of one unit.
Each unit keeps at most ``r`` of its examples by the salted keyed rule of
:mod:`dpselect.data.kept_examples` (the rule of :mod:`dpselect.data.rules`, keyed by the unit
and the example's encoding; units keyed injectively by
:func:`~dpselect.data.unit_keys.object_unit_key`), and the mistakes are counted on the kept
examples only. An example's encoding is its *mistake vector* (which hypotheses misclassify
it): a function of the example alone (the hypotheses are public and applied row by row), and
the only part of an example the scores read; two examples tie in the rule only when their
vectors are equal, and then they add the same to every score.

*Privacy (sensitivity ``r``, monotonic).* Fix the salt (drawn from the randomness source after
the charge, independently of the data). By the rule, the multiset of mistake vectors a unit
keeps is a function of the salt, that unit's key and that unit's own examples, and holds at
most ``r`` vectors. ``mistakes_h = sum over units u of sum over u's kept vectors v of v_h``:
adding or removing one unit (all its examples) adds or removes one summand, which moves every
count by between 0 and ``r``, all in the same direction. So the exponential mechanism with
``Delta = r``, monotonic, ``P[h] ∝ exp(-eps mistakes_h / r)``, is ``eps``-DP for one unit
added or removed, for every salt, hence for the salt drawn (a mixture of ``eps``-DP laws).
Injective unit keys are needed: two people read as one unit could keep different examples
when one of them leaves (a score falls, another rises).

*Guarantee (Theorem 6 restated for units).* Suppose the units are i.i.d. (each an id, distinct
from the others', with a bag of any number of examples, from any law), and some ``c*`` in
``C`` labels every example
correctly. Let ``M_u(h)`` be the mistakes of ``h`` on unit ``u``'s kept examples (at most
``r``), and ``err_r(h) = E[M_u(h)] / r`` (for the salt drawn). Then ``n`` counts **units**,
and the same ``n`` as above suffices: ``n >= 2 ln(2|C|/beta) / target_error^2 + 2 (ln |C| +
ln(2/beta)) / (target_error eps)`` units give ``err_r(h) <= target_error`` with probability at least
``confidence``. Proof: ``c*`` makes no mistake on any kept example, so (utility theorem,
monotonic, ``Delta = r``) with probability ``>= 1 - beta/2`` the selected ``h`` makes at most
``(r/eps)(ln |C| + ln(2/beta))`` mistakes, i.e. ``(1/n) sum_u M_u(h) / r <= (ln |C| +
ln(2/beta)) / (n eps) <= target_error / 2``; given the salt, the ``M_u(h) / r`` are i.i.d. in
``[0, 1]`` across units (a unit's kept examples depend on that unit alone), so Hoeffding and
a union bound over ``C`` give ``err_r(h) <= (1/n) sum_u M_u(h) / r + target_error / 2`` for every
``h`` with probability ``>= 1 - beta/2`` once ``n >= 2 ln(2|C|/beta) / target_error^2``. Counting
kept examples instead of units would be wrong: the examples of one unit are not independent.
Two cases read plainly: with units holding at most ``r`` examples nothing is dropped and
``err_r(h)`` is the expected mistakes on a unit's examples over ``r``, whatever the salt; with
``r = 1`` and one example per unit it is seed 003's ``err_D(h)``.

*Where the sensitivity cannot be bounded per unit*: hypotheses that are not applied row by row
(a prediction for example ``i`` that depends on other examples), or a class chosen from the
data, void the argument (as without a unit). A prediction matrix must have one column per
example in the order of ``y`` and ``privacy_unit``; extra predictions belong to no example and
are ignored with a unit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from ..core.errors import ParameterError
from ..core.measurement import Measurement
from ..data.kept_examples import example_unit_keys, kept_examples
from ..mechanisms.exponential import make_exponential_mechanism
from ..mechanisms.utility import utility_bound
from ..mechanisms.validate import check_epsilon, check_int, check_user_epsilon
from ..planning.epsilon_range import check_epsilon_range
from ..planning.selection_stage import exponential_stage
from ..sampling.source import RandomSource, resolve_source
from ._common import (
    CONFIDENCE,
    check_confidence,
    jsonable,
    open_ledger,
    precompose,
    to_float,
)
from .hypothesis_units import as_rows, check_units, unit_ids
from .release import charge_then
from .result import Result

__all__ = [
    "HypothesisResult",
    "bounded_mistakes",
    "make_hypothesis_selection",
    "mistakes",
    "pac_sample_size",
    "select_hypothesis",
    "threshold_hypotheses",
]

Hypothesis = Callable[[Any], Any]


def threshold_hypotheses(thresholds: Sequence[float]) -> dict[float, Hypothesis]:
    """The threshold class ``h_t(x) = 1 if x >= t else 0`` on 1-D data, one per threshold.

    Parameters
    ----------
    thresholds : sequence of float
        The public thresholds ``t``.

    Returns
    -------
    dict of float to callable
        ``{t: h_t}``, each ``h_t`` mapping a 1-D array (or list) of values to an int64 array of
        labels; a value that is not a number predicts 0.
    """

    def make(t: float) -> Hypothesis:
        def h(x: Any) -> npt.NDArray[np.int64]:
            # row by row: a value that is not a number predicts 0 (never raises)
            if isinstance(x, np.ndarray) and x.dtype.kind in "biuf":
                floats = x.astype(np.float64).ravel()
            else:
                values = x.ravel().tolist() if isinstance(x, np.ndarray) else list(x)
                floats = np.fromiter((to_float(v) for v in values), np.float64, len(values))
            return (floats >= t).astype(np.int64)

        return h

    return {float(t): make(float(t)) for t in thresholds}


def pac_sample_size(
    n_hypotheses: int,
    target_error: float,
    epsilon: float,
    *,
    confidence: float = CONFIDENCE,
    monotonic: bool = True,
) -> int:
    """Examples enough for error ``<= target_error`` at ``confidence`` (Theorem 6, module
    docstring).

    ``2 ln(2|C|/beta) / target_error^2 + 2 c (ln |C| + ln(2/beta)) / (target_error eps)``
    rounded up, with
    ``beta = 1 - confidence`` and ``c = 1`` (monotonic, add/remove privacy, as
    :func:`select_hypothesis`) or ``c = 2`` (the seed's change-one form).

    Parameters
    ----------
    n_hypotheses : int
        ``|C|``, the size of the public hypothesis class (at least 1).
    target_error : float
        The target error, in ``(0, 1)``.
    epsilon : float
        The selection's epsilon, for one example (or unit) added or removed.
    confidence : float, default 0.95
        The probability ``1 - beta`` with which the error is at most ``target_error``.
    monotonic : bool, default True
        ``True``: the add/remove form of :func:`select_hypothesis` (``c = 1``); ``False``: the
        seed's change-one form (``c = 2``).

    Returns
    -------
    int
        The number of examples (or units) enough, rounded up.
    """
    size = check_int(n_hypotheses, "n_hypotheses", minimum=1)
    a = float(check_epsilon(target_error, "target_error"))
    if a >= 1:
        raise ParameterError(f"target_error must be in (0, 1), got {target_error}")
    eps = float(check_epsilon(epsilon))
    beta = 1 - check_confidence(confidence)
    c = 1 if monotonic else 2
    generalisation = 2 * math.log(2 * size / beta) / a**2
    selection = 2 * c * (math.log(size) + math.log(2 / beta)) / (a * eps)
    # A relative margin covers the float rounding of the logs and divisions.
    return math.ceil((generalisation + selection) * (1 + 1e-12))


def _named(hypotheses: Any) -> tuple[list[Any], list[Any]]:
    """``(names, hypotheses)``: callables or rows of a prediction matrix."""
    if isinstance(hypotheses, Mapping):
        names, items = list(hypotheses.keys()), list(hypotheses.values())
    elif isinstance(hypotheses, np.ndarray):
        if hypotheses.ndim != 2:
            raise ParameterError(
                "a prediction matrix must be 2-D: one row of predictions per hypothesis"
            )
        names, items = list(range(hypotheses.shape[0])), list(hypotheses)
    elif isinstance(hypotheses, Sequence) and not isinstance(hypotheses, (str, bytes)):
        names, items = list(range(len(hypotheses))), list(hypotheses)
    else:
        raise ParameterError(
            "hypotheses must be a list or mapping of callables h(X) -> labels, or a 2-D "
            f"array of predictions, got {type(hypotheses).__name__}"
        )
    if not items:
        raise ParameterError("hypotheses must not be empty")
    if isinstance(hypotheses, Mapping) or not isinstance(hypotheses, np.ndarray):
        for name, h in zip(names, items, strict=True):
            if not callable(h) and not isinstance(h, (np.ndarray, Sequence)):
                raise ParameterError(
                    f"hypothesis {name!r} must be a callable h(X) -> labels or predictions"
                )
    return names, items


def _differs(a: Any, b: Any) -> bool:
    """Whether a prediction misses its label; a comparison that fails counts as a mistake."""
    try:
        return not bool(a == b)
    except Exception:  # e.g. arrays of several values, or a user __eq__ that raises
        return True


def mistakes(X: Any, y: Any, hypotheses: Sequence[Any]) -> list[int]:
    """``|{i : h(X_i) != y_i}|`` for each hypothesis (a callable or its predictions).

    Row by row, never raising on the rows: a label or prediction of any
    type is compared with ``==`` on its own, and a comparison that fails is a mistake. If a
    hypothesis gives a number of predictions different from the number of labels (it is not
    applied row by row, against the caller's obligation), every unmatched label or
    prediction counts as a mistake; no error depends on the data.

    Parameters
    ----------
    X : object
        The examples, passed whole to each callable hypothesis.
    y : array_like
        The labels, one per example.
    hypotheses : sequence
        Callables ``h(X) -> labels`` or their precomputed predictions (one per example).

    Returns
    -------
    list of int
        The mistakes of each hypothesis, in order (unmatched labels or predictions included).
    """
    labels = as_rows(y)
    out = []
    for h in hypotheses:
        predictions = as_rows(h(X) if callable(h) else h)
        common = min(len(predictions), len(labels))
        wrong = sum(
            _differs(p, t) for p, t in zip(predictions[:common], labels[:common], strict=True)
        )
        out.append(wrong + abs(len(predictions) - len(labels)))
    return out


def _exact_kind(values: Any) -> str | None:
    """A kind of NumPy array within which ``==`` is Python's on every element (``"signed"``:
    booleans and signed integers; ``"unsigned"``; ``"float"``), else None. Signed and
    unsigned are kept apart: NumPy before 2.0 compares them as floats."""
    if not isinstance(values, np.ndarray):
        return None
    return {"b": "signed", "i": "signed", "u": "unsigned", "f": "float"}.get(values.dtype.kind)


def _wrong(predictions: Any, labels: list[Any], label_array: Any) -> npt.NDArray[np.uint8]:
    """1 where a prediction misses its label (as :func:`mistakes` compares), 1 for a missing
    prediction; an extra prediction belongs to no example. Arrays of the same exact kind
    (:func:`_exact_kind`) are compared in NumPy, where ``==`` is Python's element by
    element; anything else row by row. Never raises on the rows."""
    n = len(labels)
    wrong = np.ones(n, dtype=np.uint8)
    kind = _exact_kind(label_array)
    if kind is not None and _exact_kind(predictions) == kind:
        flat = predictions.ravel()
        common = min(flat.shape[0], n)
        wrong[:common] = flat[:common] != label_array[:common]
        return wrong
    rows = as_rows(predictions)
    common = min(len(rows), n)
    wrong[:common] = np.fromiter(
        (_differs(p, t) for p, t in zip(rows[:common], labels[:common], strict=True)),
        dtype=np.uint8,
        count=common,
    )
    return wrong


def _mistake_bits(X: Any, y: Any, labels: list[Any], hypotheses: Sequence[Any]) -> Any:
    """Which hypotheses misclassify each example, packed: bit ``h`` (``np.packbits`` order) of
    column ``i`` is 1 when hypothesis ``h`` misses label ``i`` (``labels = as_rows(y)``;
    :func:`_wrong`). Never raises on the rows."""
    label_array = y.ravel() if isinstance(y, np.ndarray) else None
    packed = np.zeros(((len(hypotheses) + 7) // 8, len(labels)), dtype=np.uint8)
    for j, h in enumerate(hypotheses):
        wrong = _wrong(h(X) if callable(h) else h, labels, label_array)
        packed[j >> 3] |= wrong << np.uint8(7 - (j & 7))
    return packed


def bounded_mistakes(
    X: Any,
    labels: Any,
    unit_keys: Sequence[bytes | None],
    hypotheses: Sequence[Any],
    max_rows: int,
    salt: int,
) -> list[int]:
    """Each hypothesis's mistakes on the examples their units keep (module docstring).

    ``unit_keys`` (parallel to ``labels``): :func:`~dpselect.data.kept_examples.
    example_unit_keys` of the unit ids; each unit keeps at most ``max_rows`` examples by
    :func:`~dpselect.data.kept_examples.kept_examples`, an example encoded by its mistake
    vector. Adding or removing one unit moves every count by at most ``max_rows``, all in the
    same direction. Never raises on the rows.

    Parameters
    ----------
    X : object
        The examples, passed whole to each callable hypothesis.
    labels : array_like
        The labels ``y``, one per example.
    unit_keys : sequence of bytes or None
        Each example's unit key (``None``: no unit, the example is kept by none).
    hypotheses : sequence
        Callables ``h(X) -> labels`` or their precomputed predictions.
    max_rows : int
        ``r >= 1``, the most examples a unit keeps.
    salt : int
        The keyed rule's salt, drawn independently of the data.

    Returns
    -------
    list of int
        Each hypothesis's mistakes on the kept examples, in order.
    """
    rows = as_rows(labels)
    packed = _mistake_bits(X, labels, rows, hypotheses)
    encodings = [column.tobytes() for column in packed.T]
    # One unit key per label: a label without one (a shorter list) has no unit.
    keys = list(unit_keys)[: len(rows)]
    keys += [None] * (len(rows) - len(keys))
    kept = kept_examples(keys, encodings, max_rows, salt)
    totals = np.zeros(len(hypotheses), dtype=np.int64)
    for start in range(0, len(kept), 1 << 16):  # unpacked in chunks: C bytes per example
        bits = np.unpackbits(packed[:, kept[start : start + (1 << 16)]], axis=0)
        totals += bits[: len(hypotheses)].sum(axis=1, dtype=np.int64)
    return [int(t) for t in totals]


def make_hypothesis_selection(
    hypotheses: Sequence[Any],
    epsilon: Any,
    *,
    source: RandomSource | None = None,
    max_rows: int | None = None,
) -> Measurement:
    """The exponential mechanism over ``hypotheses`` with score ``-mistakes`` (monotonic).

    Input: a pair ``(X, y)``; output: the index of the selected hypothesis. Privacy map
    (``SymmetricDistance``, examples added or removed): ``d_in / scale <= d_in eps``.

    With ``max_rows = r`` (an int), the input is a triple ``(X, y, units)``, ``units`` the
    unit id of each example (parallel to ``y``): each call draws a 63-bit salt from ``source``,
    each unit keeps at most ``r`` examples (:func:`bounded_mistakes`), and the mechanism's
    sensitivity is ``r`` (module docstring, "Privacy"), so the map is the same, ``d_in eps``,
    with ``d_in`` counting units added or removed.

    Parameters
    ----------
    hypotheses : sequence
        The public class: callables ``h(X) -> labels`` or their precomputed predictions.
    epsilon : float or Fraction
        The privacy loss for one example (or one unit) added or removed.
    source : RandomSource, optional
        The randomness (``None``: the private default; a seeded source for tests only).
    max_rows : int, optional
        ``r``, the most examples one unit keeps; given, the input carries the unit ids
        (``None``: one example per unit).

    Returns
    -------
    Measurement
        From ``(X, y)`` (or ``(X, y, units)``) to the index of the selected hypothesis; map
        ``d_in * epsilon`` at most.

    Privacy
    -------
    Without a unit: one example moves every mistake count by at most 1, in the same direction
    (sensitivity 1, monotonic; seed 003, "Private PAC learning"). With ``max_rows = r``: one
    unit moves every count of its kept examples by at most ``r``, in the same direction, for
    every salt (module docstring). The exponential mechanism's map (seed 002; seed 001,
    Section 3.1, monotonic form) is ``d_in Delta / scale`` with ``scale = Delta / eps`` rounded
    up: at most ``d_in eps``.
    """
    items = list(hypotheses)
    r = None if max_rows is None else check_int(max_rows, "max_rows", minimum=1)
    mech = make_exponential_mechanism(
        list(range(len(items))),
        lambda counts, i: -counts[i],
        1 if r is None else r,
        epsilon=epsilon,
        monotonic=True,
        source=source,
    )
    if r is None:
        return precompose(mech, lambda data: mistakes(data[0], data[1], items))
    bound = r

    def scores(data: Any) -> list[int]:
        X, y, units = data
        salt = resolve_source(source).bits(63)
        keys = example_unit_keys(as_rows(units))
        return bounded_mistakes(X, y, keys, items, bound, salt)

    return precompose(mech, scores)


@dataclass(frozen=True)
class HypothesisResult(Result):
    """The selected hypothesis, its cost, and the guarantees that come with it.

    Attributes
    ----------
    name : object
        The selected hypothesis' name: its key when the hypotheses were a mapping, else its
        position.
    index : int
        The selected hypothesis' position among the hypotheses, in the order given.
    epsilon : float
        The pure-DP cost (``delta = 0``), for one example (or, with ``privacy_unit``, one
        unit) added or removed.
    n_hypotheses : int
        ``|C|``, the number of public hypotheses.
    accuracy : str
        The utility theorem's statement: with probability at least ``confidence``, at most how
        many more mistakes than the best hypothesis (on the kept examples, with a unit).
    target_error : float
        The target error of the sample-size guarantee, as given.
    sample_size : int
        The number of examples (units, with ``privacy_unit``) the guarantee needs for error at
        most ``target_error``: computed from public parameters, not the size of the data.
    guarantee : str
        The sample-size guarantee (seed 003, Theorem 6), as a sentence.
    hypothesis : object
        The selected hypothesis itself (a callable, or a row of predictions); left out of
        :meth:`to_dict`, ``repr`` and comparisons.
    ledger : str or None
        The path of the ledger charged for this release; ``None`` without a ledger.
    parameters : dict
        The public parameters (``epsilon``, ``n_hypotheses``, ``target_error``, and ``privacy_unit``
        and ``max_rows`` with a unit).
    """

    name: Any
    index: int
    epsilon: float
    n_hypotheses: int
    accuracy: str
    target_error: float
    sample_size: int
    guarantee: str
    hypothesis: Any = field(default=None, repr=False, compare=False)
    ledger: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)

    def _dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (the hypothesis object itself is left out)."""
        return {
            "name": jsonable(self.name),
            "index": self.index,
            "epsilon": self.epsilon,
            "n_hypotheses": self.n_hypotheses,
            "accuracy": self.accuracy,
            "target_error": self.target_error,
            "sample_size": self.sample_size,
            "guarantee": self.guarantee,
            "ledger": self.ledger,
            "parameters": self.parameters,
        }

    def _unit_text(self) -> str:
        unit = self.parameters.get("privacy_unit")
        if unit is None:
            return ""
        r = self.parameters.get("max_rows")
        return f"; privacy unit {unit}, at most {r} examples each, sensitivity {r}"

    def _text(self) -> str:
        return "\n".join(
            [
                f"selected hypothesis: {self.name}",
                f"mechanism: exponential mechanism over {self.n_hypotheses} public hypotheses "
                f"(score = minus the mistakes, monotonic{self._unit_text()})",
                f"privacy cost: epsilon = {self.epsilon:.6g}, delta = 0",
                self.accuracy,
                self.guarantee,
            ]
        )


@dataclass(frozen=True)
class _Selection:
    """The public facts of one hypothesis selection, checked before any charge."""

    epsilon: Fraction
    confidence: float
    names: list[Any]
    items: list[Any]
    max_rows: int
    label: str | None  # the unit the ledger records; None: one example is its own unit

    @property
    def unit_rows(self) -> int | None:
        """The mechanism's ``max_rows``: ``r`` with a unit, ``None`` without one."""
        return None if self.label is None else self.max_rows

    def parameters(self, target_error: float) -> dict[str, Any]:
        """The public parameters the ledger and the result record."""
        parameters: dict[str, Any] = {
            "epsilon": float(self.epsilon),
            "n_hypotheses": len(self.items),
            "target_error": float(target_error),
        }
        if self.label is not None:
            parameters.update(privacy_unit=self.label, max_rows=self.max_rows)
        return parameters


def _check_selection(
    X: Any,
    y: Any,
    hypotheses: Any,
    epsilon: float,
    confidence: float,
    privacy_unit: Any,
    max_rows: int,
    unit_name: str | None,
) -> _Selection:
    """Check the parameters, the hypotheses and the unit, in this order (public facts only)."""
    eps = Fraction(check_user_epsilon(epsilon))
    check_epsilon_range(eps)
    conf = check_confidence(confidence)
    names, items = _named(hypotheses)
    r = check_int(max_rows, "max_rows", minimum=1)
    label: str | None = None
    if privacy_unit is None:
        if r != 1:
            raise ParameterError("max_rows applies only with a privacy_unit")
        if unit_name is not None:
            raise ParameterError("unit_name applies only with a privacy_unit")
    else:
        label, _ = check_units(X, y, privacy_unit, unit_name)
    return _Selection(eps, conf, names, items, r, label)


@dataclass(frozen=True)
class _Statements:
    """What a selection guarantees, from public parameters: the sample size and two sentences."""

    sample_size: int
    accuracy: str
    guarantee: str


def _statements(chosen: _Selection, target_error: float) -> _Statements:
    """The utility theorem's and Theorem 6's statements (for examples, or for units)."""
    eps, conf, r, n = chosen.epsilon, chosen.confidence, chosen.max_rows, len(chosen.items)
    size = pac_sample_size(n, target_error, float(eps), confidence=conf)
    bound = utility_bound(eps, r, n, confidence=conf, monotonic=True)
    if chosen.label is None:
        accuracy = (
            f"accuracy: with probability at least {conf:.0%}, the selected hypothesis makes at "
            f"most {bound.loss:.4g} more mistakes than the best one (utility theorem, seed 003)"
        )
        guarantee = (
            f"guarantee (seed 003, Theorem 6): if the examples are i.i.d. and some hypothesis "
            f"labels them all correctly, n >= {size} examples give error <= "
            f"{float(target_error):g} "
            f"with probability at least {conf:.0%} (|C| = {n}, eps = {float(eps):g})"
        )
    else:
        accuracy = (
            f"accuracy: with probability at least {conf:.0%}, the selected hypothesis makes at "
            f"most {bound.loss:.4g} more mistakes than the best one on the kept examples (at "
            f"most {r} per unit; utility theorem, seed 003, Delta = {r})"
        )
        guarantee = (
            f"guarantee (seed 003, Theorem 6 for units): if the units are i.i.d. and some "
            f"hypothesis labels every example correctly, n >= {size} units give at most "
            f"{float(target_error):g} r expected mistakes on one unit's kept examples (r = {r}) "
            "with "
            f"probability at least {conf:.0%} (|C| = {n}, eps = {float(eps):g})"
        )
    return _Statements(size, accuracy, guarantee)


def select_hypothesis(
    X: Any,
    y: Any,
    hypotheses: Any,
    *,
    epsilon: float,
    target_error: float = 0.1,
    confidence: float = CONFIDENCE,
    ledger: Any = None,
    source: RandomSource | None = None,
    privacy_unit: Any = None,
    max_rows: int = 1,
    unit_name: str | None = None,
) -> HypothesisResult:
    """The hypothesis with (nearly) the fewest mistakes on ``(X, y)``, privately (seed 003).

    Parameters
    ----------
    X, y : array-like
        The private examples and their labels.
    hypotheses : dict, list or 2-D array
        The public class, which must not depend on ``(X, y)``: callables ``h(X) -> labels``
        applied row by row (a dict names them), or one row of predictions per hypothesis (for
        example sklearn models' predictions computed beforehand).
    epsilon : float
        Pure DP for one example (with ``privacy_unit``, one unit: all its examples) added or
        removed; the ledger is charged before the hypotheses are evaluated.
    target_error : float, default 0.1
        The error the sample-size guarantee is stated for (Theorem 6, module docstring).
    confidence, ledger, source
        The guarantee's confidence, the budget ledger and the randomness (tests only).
    privacy_unit : str or array-like, optional
        Who is protected when a person may contribute several examples: an array of unit ids
        parallel to ``y`` (a list, NumPy array, pandas or polars Series, pyarrow array), or the
        name of a column of ``X`` when ``X`` is a pandas, polars or pyarrow table. Units are
        keyed injectively (``1``, ``1.0``, ``True`` and ``"1"`` are four units; a missing id
        is no unit and its examples count for nobody). Default: each example is its own unit.
    max_rows : int, default 1
        With ``privacy_unit``, the most examples a unit keeps (``r``), chosen by the salted
        keyed rule of :mod:`dpselect.data.kept_examples`; the mechanism's sensitivity is then
        ``r`` (module docstring, "Privacy").
    unit_name : str, optional
        The unit's name in the ledger for an array of unit ids (default: the Series' name, else
        ``"privacy_unit array"``); a column's name is its own.

    Returns
    -------
    HypothesisResult
        The selected hypothesis, its cost, the utility theorem's statement and the PAC
        guarantee.

    Raises
    ------
    ParameterError, DataError, BudgetExceeded, LedgerError
        Invalid parameters, a missing unit column, budget left, or a ledger bound to another
        unit, before any budget is spent.

    Privacy
    -------
    Without a unit: sensitivity 1, monotonic, for one example added or removed (seed 003,
    "Private PAC learning"). With ``privacy_unit`` and ``max_rows = r``: sensitivity ``r``,
    monotonic, for one unit added or removed, proved in the module docstring; the sample-size
    guarantee then counts units (Theorem 6 restated there). The hypotheses must be applied row
    by row; where they are not, no sensitivity holds, with or without a unit.

    Examples
    --------
    >>> import numpy as np
    >>> import dpselect as dp
    >>> from dpselect.sampling import InsecureSeededSource  # reproducible, not private
    >>> X = np.arange(20)
    >>> y = (X >= 10).astype(int)
    >>> rules = {"x >= 5": lambda x: x >= 5, "x >= 10": lambda x: x >= 10}
    >>> dp.select_hypothesis(X, y, rules, epsilon=2.0, source=InsecureSeededSource(1)).name
    'x >= 10'
    >>> X, y = np.arange(200) % 20, (np.arange(200) % 20 >= 10).astype(int)
    >>> people = np.arange(200) // 4  # 50 people, four examples each, two kept
    >>> result = dp.select_hypothesis(X, y, rules, epsilon=2.0, privacy_unit=people,
    ...                               max_rows=2, source=InsecureSeededSource(1))
    >>> result.name, result.parameters["max_rows"]
    ('x >= 10', 2)
    """
    chosen = _check_selection(
        X, y, hypotheses, epsilon, confidence, privacy_unit, max_rows, unit_name
    )
    statements = _statements(chosen, target_error)
    mechanism = make_hypothesis_selection(
        chosen.items, chosen.epsilon, source=source, max_rows=chosen.unit_rows
    )
    book = open_ledger(ledger)
    parameters = chosen.parameters(target_error)

    def release() -> HypothesisResult:
        data = (X, y) if chosen.label is None else (X, y, unit_ids(X, privacy_unit))
        index = int(mechanism(data))
        return HypothesisResult(
            name=chosen.names[index], index=index, epsilon=float(chosen.epsilon),
            n_hypotheses=len(chosen.items), accuracy=statements.accuracy,
            target_error=float(target_error), sample_size=statements.sample_size,
            guarantee=statements.guarantee, hypothesis=chosen.items[index],
            ledger=None if book is None else book.path, parameters=parameters,
        )  # fmt: skip

    # One example (or unit) added or removed; the examples are arrays: no description.
    stage = exponential_stage("select hypothesis", chosen.epsilon, chosen.unit_rows or 1,
                              monotonic=True, n_candidates=len(chosen.items))  # fmt: skip
    return charge_then(
        book, release, float(chosen.epsilon), 0.0, None, "bounded_range", "select_hypothesis",
        parameters, privacy_unit=chosen.label, source=None, stages=(stage,),
    )  # fmt: skip
