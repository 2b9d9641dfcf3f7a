"""The result of a private top-k (:func:`dpselect.top_k`, values from a candidate list or
from the data, :mod:`dpselect.recipes.unknown_domain`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .result import Result

__all__ = ["TopKResult"]


@dataclass(frozen=True)
class TopKResult(Result):
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

    def _dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (candidates converted with ``str`` when not JSON types)."""
        out = asdict(self)
        out["candidates"] = [
            c if isinstance(c, (int, float, str)) else str(c) for c in self.candidates
        ]
        out["stopped_early"] = bool(self.stopped_early)
        return out

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

    def _rows(self) -> list[dict[str, Any]]:
        rows = [
            {"rank": rank, "candidate": cand}
            for rank, cand in enumerate(self.to_dict()["candidates"], start=1)
        ]
        for row, count in zip(rows, self.counts or [], strict=False):
            row["noisy_count"] = count
        return rows

    def _text(self) -> str:
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
