"""The result of a private top-k (:func:`dpselect.top_k`, values from a candidate list or
from the data, :mod:`dpselect.recipes.unknown_domain`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .result import Result

__all__ = ["ALL_BELOW_NOISE", "TopKResult"]

#: The one line said of a list whose every count is below the noise level.
ALL_BELOW_NOISE = (
    "every count is below the noise: this list is indistinguishable from one drawn from no data"
)


@dataclass(frozen=True)
class TopKResult(Result):
    """A private top-k release: the ranked candidates, what it cost, how accurate it is.

    Attributes
    ----------
    candidates : list
        The released values, best first: entries of the public candidate list, or values
        found in the data (unknown domain). Fewer than ``k`` when values from the data stop
        early (:attr:`stopped_early`).
    indices : list of int or None
        Each released value's position in the public candidate list, in the same order;
        ``None`` when the values came from the data.
    mechanism : str
        The mechanism that ran, cited by name.
    epsilon : float
        The ``epsilon`` of the release's ``(epsilon, delta)`` guarantee, what a basic ledger is
        charged (with ``max_contributions="auto"``, the choice of the bound included; in a
        :class:`~dpselect.recipes.grouping.GroupedResult`, one group's cost).
    delta : float
        The ``delta`` of that guarantee (0 for the pure-DP mechanisms).
    rho : float or None
        The zCDP cost, what a zCDP ledger is charged (public candidates); ``None`` for values
        from the data and for the groups of a grouped release.
    accuracy : str
        The accuracy statement, at 95% confidence: how far each returned value's score may be
        from the true one of its rank, and the noisy counts' half-width when they are released.
    counts : list of int or None
        The noisy counts of the released values, in the same order (unbiased, possibly
        negative); ``None`` unless ``counts=True`` was asked of a mechanism that releases them.
    ledger : str or None
        The path of the ledger charged for this release; ``None`` without a ledger.
    parameters : dict
        The query's public parameters (``k``, ``epsilon``, ``delta``, ``max_contributions``,
        ``mechanism``, ...) and notes: ``count_halfwidth`` (the noise level of
        :attr:`noise_level`), ``candidates_note``, ``max_contributions_choice``.
    """

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
        out["below_noise"] = self.below_noise
        out["all_below_noise"] = self.all_below_noise
        return out

    @property
    def noise_level(self) -> float | None:
        """The half-width ``t`` of the released counts' accuracy statement
        (``parameters["count_halfwidth"]``; 1 where none is stated), or ``None`` without
        counts. Public: a function of the mechanism, its scale and ``k`` or the number of
        candidates."""
        if self.counts is None:
            return None
        return float(self.parameters.get("count_halfwidth") or 1)

    @property
    def below_noise(self) -> list[bool] | None:
        """Per entry, whether its noisy count is at most the noise level ``t``: such a count is
        indistinguishable from zero (the entry may hold no data at all). ``None`` when no
        counts were released (the ranking alone says nothing of the noise).

        The rule reads the released counts and the public ``t`` only, so it is post-processing
        (Dwork and Roth 2014, Proposition 2.1). Its error rates follow from ``t``'s definition
        (every count within ``t`` of its truth with probability at least 95%, noise symmetric):
        an entry whose true count is 0 goes unmarked, or one whose true count exceeds ``2 t``
        is marked, each with probability at most 2.5% over the whole list (half the two-sided
        union bound; docs/mechanisms_topk_counts.md, "Showing noisy counts")."""
        if self.counts is None:
            return None
        t = self.noise_level
        assert t is not None
        return [c <= t for c in self.counts]  # released values only: public

    @property
    def all_below_noise(self) -> bool:
        """Whether counts were released and every one is below the noise level: the whole list
        is indistinguishable from one drawn from no data."""
        marks = self.below_noise
        return bool(marks) and all(marks or [])

    def shown_counts(self) -> list[str] | None:
        """The noisy counts as printed: a count at most the noise level ``t``
        (:attr:`noise_level`) is indistinguishable from zero and shown as ``"< noise"``,
        clamped at 0, never negative; the same entries :attr:`below_noise` marks. ``counts``
        and ``to_dict`` keep the released values (unbiased, possibly negative)."""
        if self.counts is None:
            return None
        marks = self.below_noise or []
        return [
            f"{max(c, 0)} (< noise)" if low else str(c)
            for c, low in zip(self.counts, marks, strict=True)
        ]

    def _rows(self) -> list[dict[str, Any]]:
        rows = [
            {"rank": rank, "candidate": cand}
            for rank, cand in enumerate(self.to_dict()["candidates"], start=1)
        ]
        marks = self.below_noise
        for i, (row, count) in enumerate(zip(rows, self.counts or [], strict=False)):
            row["noisy_count"] = count
            row["below_noise"] = bool(marks[i]) if marks is not None else None
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
        if self.all_below_noise:
            note.append(ALL_BELOW_NOISE)
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
