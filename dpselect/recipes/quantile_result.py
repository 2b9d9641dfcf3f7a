"""What a private quantile release returns: :class:`QuantileResult`; and the result restated
with a private choice (of the bounds, of ``max_rows``) paid from the release's budget
(:func:`with_private_choice`; the budget divides in
:func:`~dpselect.planning.private_choice.choice_budget`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..planning.private_choice import ChoiceBudget
from ._common import jsonable
from .result import Result

__all__ = ["QuantileResult", "with_private_choice"]


# ----------------------------------------------------------------------------- the result
@dataclass(frozen=True)
class QuantileResult(Result):
    """Private quantiles: the values released, what they cost, how accurate they are.

    Attributes
    ----------
    q : list of float
        The levels asked for, in the order given.
    values : list of float
        The released value of each level, in the order of ``q`` (on the column type's grid
        for an integer or decimal column).
    method : str
        The mechanism that ran, in words (with its bounds or candidates).
    epsilon : float
        The total privacy cost charged (at distance 1: one unit added or removed).
    epsilon_each : float
        The epsilon of one mechanism run (the whole epsilon, less the share of a noisy row
        count, for the one-draw methods; ``epsilon / m`` for a split).
    budget_split : str
        How epsilon was shared between the stages, in words.
    accuracy : list of str
        The accuracy statements (one per level, or one for all levels), each the conclusion
        of a theorem in docs/quantiles.md at the stated confidence.
    levels : list of str
        The levels as exact fractions (``"1/2"``), as the mechanisms used them.
    rounding_loss : float or None
        The part of epsilon that pays for float log-weights (``None``: none, for the tree and
        the exact candidate mechanism).
    resolution : float or None
        The public resolution ``w`` of the continuous mechanisms (``None`` for candidates
        and the tree).
    notes : list of str
        Notes on the input and the rules that applied (the privacy unit's row bound, the
        noisy row count and the method it picked).
    ledger : str or None
        The path of the ledger charged (``None``: no ledger).
    parameters : dict
        The public parameters of the release as recorded in the ledger, and what a stage
        released (the noisy row count, the grain histogram).
    derivation : list of str
        The accuracy theorem evaluated in numbers, with its constants (in ``to_dict`` and
        ``--json``, not in ``str``).
    """

    q: list[float]
    values: list[float]
    method: str
    epsilon: float
    epsilon_each: float
    budget_split: str
    accuracy: list[str]
    levels: list[str]
    rounding_loss: float | None = None
    resolution: float | None = None
    notes: list[str] = field(default_factory=list)
    ledger: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    #: the theorem behind an accuracy line evaluated in numbers, with its constants (shown by
    #: ``to_dict`` and ``--json``, not by ``str``)
    derivation: list[str] = field(default_factory=list)

    def _dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (with ``rounding_loss``, the part of epsilon that pays for
        float log-weights, and ``derivation``)."""
        out = asdict(self)
        out["values"] = [jsonable(v) for v in self.values]
        return out

    def _rows(self) -> list[dict[str, Any]]:
        values = self.to_dict()["values"]
        return [{"q": q, "value": v} for q, v in zip(self.q, values, strict=True)]

    def _text(self) -> str:
        lines = [f"q = {q:g}: {v:.10g}" for q, v in zip(self.q, self.values, strict=True)]
        lines.append(f"mechanism: {self.method}")
        # rounding_loss (the share of epsilon that pays for float log-weights) is left to
        # to_dict: it is inside epsilon and changes nothing a reader can use
        lines.append(f"privacy cost: epsilon = {self.epsilon:.6g} ({self.budget_split})")
        lines.extend(self.accuracy)
        lines.extend(self.notes)
        return "\n".join(lines)


def with_private_choice(
    result: QuantileResult,
    chosen: str,
    line: str,
    budget: ChoiceBudget,
    book: Any,
    parameters: dict[str, Any],
) -> QuantileResult:
    """``result`` of the quantiles run after a private choice paid from the same budget: the
    total cost, the split, the choice's line first.

    Parameters
    ----------
    result : QuantileResult
        The quantiles' own result (at ``budget.query``).
    chosen : str
        What was chosen, in words (``"the bounds"``, ``"max_rows"``).
    line : str
        The note on the choice, shown first.
    budget : ChoiceBudget
        How the release's epsilon was divided.
    book : Ledger or None
        The ledger charged.
    parameters : dict
        The release's public parameters, added to the quantiles'.

    Returns
    -------
    QuantileResult
        ``result`` with the total cost, the split and the choice's note.
    """
    spent_c, eps_q = budget.spent, budget.query
    return replace(
        result,
        epsilon=budget.total,
        budget_split=(
            f"{spent_c:.6g} to choose {chosen} + {eps_q:.6g} to the quantiles "
            f"({result.budget_split})"
        ),
        notes=[line, *result.notes],
        ledger=None if book is None else book.path,
        parameters={**result.parameters, **parameters},
    )
