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
  that is at most ``alpha n / 2`` once ``n >= 2 (ln |C| + ln(2/beta)) / (alpha eps)``;
- generalisation (Hoeffding and a union bound over ``C``): with probability ``>= 1 - beta/2``
  every ``h`` has ``err_D(h) <= err_S(h) + alpha / 2`` once ``n >= 2 ln(2|C|/beta) /
  alpha^2``.

So ``n >= 2 ln(2|C|/beta) / alpha^2 + 2 (ln |C| + ln(2/beta)) / (alpha eps)`` examples give
``err_D(h) <= alpha`` with probability at least ``confidence``: the seed's ``Omega(log|C| /
alpha^2 + log|C| / (alpha eps))``. :func:`pac_sample_size` computes it (the sum, which is at
least the maximum of the two conditions, as in the seed's statement).
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
from ..mechanisms.exponential import make_exponential_mechanism
from ..mechanisms.utility import utility_bound
from ..mechanisms.validate import check_epsilon, check_int, check_user_epsilon
from ..sampling.source import RandomSource
from ._common import (
    CONFIDENCE,
    check_confidence,
    jsonable,
    open_ledger,
    precompose,
    to_float,
)
from .release import charge_then_release
from .result import Result

__all__ = [
    "HypothesisResult",
    "make_hypothesis_selection",
    "mistakes",
    "pac_sample_size",
    "select_hypothesis",
    "threshold_hypotheses",
]

Hypothesis = Callable[[Any], Any]


def threshold_hypotheses(thresholds: Sequence[float]) -> dict[float, Hypothesis]:
    """The threshold class ``h_t(x) = 1 if x >= t else 0`` on 1-D data, one per threshold."""

    def make(t: float) -> Hypothesis:
        def h(x: Any) -> npt.NDArray[np.int64]:
            # row by row: a value that is not a number predicts 0 (never raises; issue 15)
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
    alpha: float,
    epsilon: float,
    confidence: float = CONFIDENCE,
    monotonic: bool = True,
) -> int:
    """Examples enough for error ``<= alpha`` at ``confidence`` (Theorem 6, module docstring).

    ``2 ln(2|C|/beta) / alpha^2 + 2 c (ln |C| + ln(2/beta)) / (alpha eps)`` rounded up, with
    ``beta = 1 - confidence`` and ``c = 1`` (monotonic, add/remove privacy, as
    :func:`select_hypothesis`) or ``c = 2`` (the seed's change-one form).
    """
    size = check_int(n_hypotheses, "n_hypotheses", minimum=1)
    a = float(check_epsilon(alpha, "alpha"))
    if a >= 1:
        raise ParameterError(f"alpha must be in (0, 1), got {alpha}")
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


def _rows(values: Any) -> list[Any]:
    """``values`` as a flat list of rows, whatever their types (never raises on the rows).

    ``np.asarray`` of a ragged or mixed list raises depending on the rows (issue 15, item 7);
    a list of the elements does not. A numpy array is flattened (as before); any other
    iterable is taken element by element.
    """
    if isinstance(values, np.ndarray):
        rows: list[Any] = values.ravel().tolist()
        return rows
    if isinstance(values, (str, bytes)):
        return [values]
    try:
        return list(values)
    except TypeError:
        return [values]


def _differs(a: Any, b: Any) -> bool:
    """Whether a prediction misses its label; a comparison that fails counts as a mistake."""
    try:
        return not bool(a == b)
    except Exception:  # e.g. arrays of several values, or a user __eq__ that raises
        return True


def mistakes(X: Any, y: Any, hypotheses: Sequence[Any]) -> list[int]:
    """``|{i : h(X_i) != y_i}|`` for each hypothesis (a callable or its predictions).

    Row by row, never raising on the rows (issue 15, item 7): a label or prediction of any
    type is compared with ``==`` on its own, and a comparison that fails is a mistake. If a
    hypothesis gives a number of predictions different from the number of labels (it is not
    applied row by row, against the caller's obligation), every unmatched label or
    prediction counts as a mistake; no error depends on the data.
    """
    labels = _rows(y)
    out = []
    for h in hypotheses:
        predictions = _rows(h(X) if callable(h) else h)
        common = min(len(predictions), len(labels))
        wrong = sum(
            _differs(p, t) for p, t in zip(predictions[:common], labels[:common], strict=True)
        )
        out.append(wrong + abs(len(predictions) - len(labels)))
    return out


def make_hypothesis_selection(
    hypotheses: Sequence[Any], epsilon: Any, *, source: RandomSource | None = None
) -> Measurement:
    """The exponential mechanism over ``hypotheses`` with score ``-mistakes`` (monotonic).

    Input: a pair ``(X, y)``; output: the index of the selected hypothesis. Privacy map
    (``SymmetricDistance``, examples added or removed): ``d_in / scale <= d_in eps``.
    """
    items = list(hypotheses)
    mech = make_exponential_mechanism(
        list(range(len(items))),
        lambda counts, i: -counts[i],
        1,
        epsilon=epsilon,
        monotonic=True,
        source=source,
    )
    return precompose(mech, lambda data: mistakes(data[0], data[1], items))


@dataclass(frozen=True)
class HypothesisResult(Result):
    """The selected hypothesis, its cost, and the guarantees that come with it."""

    name: Any
    index: int
    epsilon: float
    n_hypotheses: int
    accuracy: str
    alpha: float
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
            "alpha": self.alpha,
            "sample_size": self.sample_size,
            "guarantee": self.guarantee,
            "ledger": self.ledger,
            "parameters": self.parameters,
        }

    def _text(self) -> str:
        return "\n".join(
            [
                f"selected hypothesis: {self.name}",
                f"mechanism: exponential mechanism over {self.n_hypotheses} public hypotheses "
                "(score = minus the mistakes, monotonic)",
                f"privacy cost: epsilon = {self.epsilon:.6g}, delta = 0",
                self.accuracy,
                self.guarantee,
            ]
        )


def select_hypothesis(
    X: Any,
    y: Any,
    hypotheses: Any,
    epsilon: float,
    alpha: float = 0.1,
    confidence: float = CONFIDENCE,
    ledger: Any = None,
    source: RandomSource | None = None,
) -> HypothesisResult:
    """The hypothesis with (nearly) the fewest mistakes on ``(X, y)``, privately (seed 003).

    ``hypotheses``: a list or a mapping ``name -> h`` of callables ``h(X) -> labels`` applied
    row by row, or a 2-D array of predictions (one row per hypothesis, for example sklearn
    models' predictions computed beforehand); the class must not depend on ``(X, y)``.
    ``epsilon``: pure DP for one example added or removed; the ledger is charged before the
    hypotheses are evaluated. ``alpha`` is the target error of the reported sample-size
    guarantee (Theorem 6, module docstring). ``source`` is for tests and demos only.

    Parameters
    ----------
    X, y : array-like
        The private examples and their labels.
    hypotheses : dict or list
        The public hypotheses (callables ``h(x) -> label``), a dict names them.
    epsilon : float
        The privacy cost.
    alpha : float, default 0.1
        The target excess error of the PAC guarantee.
    confidence, ledger, source
        The guarantee's confidence, the budget ledger and the randomness (tests only).

    Returns
    -------
    HypothesisResult
        The selected hypothesis, its cost, the utility theorem's statement and the PAC
        guarantee.

    Raises
    ------
    ParameterError, BudgetExceeded
        Invalid parameters or budget left, before any budget is spent.

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
    """
    eps = Fraction(check_user_epsilon(epsilon))
    conf = check_confidence(confidence)
    names, items = _named(hypotheses)
    size = pac_sample_size(len(items), alpha, float(eps), conf)
    bound = utility_bound(eps, 1, len(items), confidence=conf, monotonic=True)
    accuracy = (
        f"accuracy: with probability at least {conf:.0%}, the selected hypothesis makes at "
        f"most {bound.loss:.4g} more mistakes than the best one (utility theorem, seed 003)"
    )
    guarantee = (
        f"guarantee (seed 003, Theorem 6): if the examples are i.i.d. and some hypothesis "
        f"labels them all correctly, n >= {size} examples give error <= {float(alpha):g} with "
        f"probability at least {conf:.0%} (|C| = {len(items)}, eps = {float(eps):g})"
    )
    mechanism = make_hypothesis_selection(items, eps, source=source)
    book = open_ledger(ledger)
    parameters = {"epsilon": float(eps), "n_hypotheses": len(items), "alpha": float(alpha)}

    def release() -> HypothesisResult:
        index = int(mechanism((X, y)))
        return HypothesisResult(
            name=names[index],
            index=index,
            epsilon=float(eps),
            n_hypotheses=len(items),
            accuracy=accuracy,
            alpha=float(alpha),
            sample_size=size,
            guarantee=guarantee,
            hypothesis=items[index],
            ledger=None if book is None else book.path,
            parameters=parameters,
        )

    # One example (row) added or removed; the examples are arrays: no description.
    return charge_then_release(
        book, release, float(eps), "select_hypothesis", parameters, privacy_unit=None, source=None
    )
