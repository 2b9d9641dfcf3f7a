"""Contribution bounds chosen privately from the data (issue 16, part 2).

- :func:`choose_max_contributions`: the bound ``L`` on the number of distinct values a person
  contributes (``max_contributions`` of :func:`dpselect.top_k`), chosen among public
  candidates ``L_1 < ... < L_k`` by the generalized exponential mechanism (Raskhodnikova and
  Smith 2016; :func:`~dpselect.mechanisms.generalized_exponential.
  make_generalized_exponential_mechanism`). Score of ``L``: the contributions kept,
  ``sum_u min(c_u, L)`` (``c_u`` person ``u``'s number of distinct non-null values), minus the
  public noise penalty ``L / release_epsilon`` (the Laplace scale of a count or sum with
  contribution bound ``L`` at the later release's epsilon): a utility proxy that is large when
  few contributions are dropped and the bound is small. Adding or removing one person changes
  ``sum_u min(c_u, L)`` by at most ``L``: per-candidate sensitivities ``Delta_L = L``, exactly
  GEM's setting. ``epsilon``-DP (the map of GEM at distance 1).
- ``choose_bounds`` (data-chosen clamping bounds for quantiles) is **not** provided: two
  private quantiles over a wide public grid (``0, +-2^j``) tie among every candidate below
  (above) all the data, so the exponential mechanism picks among them uniformly and a bound
  like ``-2^40`` is as likely as the one next to the data. A mechanism that prefers the
  candidate nearest the data (for example a noisy threshold on log-scale bin counts) is
  needed; see ``docs/private_selection.md``.

It charges the ledger before reading the data and reports what it chose and its cost.
``docs/private_selection.md`` has the maps and proofs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ..core.errors import ParameterError
from ..data.tables import open_table
from ..mechanisms.generalized_exponential import make_generalized_exponential_mechanism
from ..mechanisms.validate import check_epsilon
from ..sampling.source import RandomSource
from ._common import charge_then_release, open_ledger

__all__ = [
    "ContributionChoice",
    "choose_max_contributions",
    "contribution_counts",
    "contribution_scores",
]

#: Default candidates for the contribution bound: 1, 2, 4, ..., 256.
DEFAULT_CONTRIBUTIONS = tuple(1 << j for j in range(9))


@dataclass(frozen=True)
class ContributionChoice:
    """The chosen contribution bound and its cost."""

    max_contributions: int
    epsilon: float
    n_candidates: int
    ledger: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return (
            f"max_contributions: {self.max_contributions} (chosen privately among "
            f"{self.n_candidates} candidates, generalized exponential mechanism; "
            f"epsilon = {self.epsilon:.6g}, delta = 0)"
        )


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def contribution_counts(table: Any, column: str, privacy_unit: str) -> np.ndarray[Any, Any]:
    """``c_u``: each person's number of distinct non-null values of ``column`` (one row per
    person with a non-null unit). A person's count reads only their rows."""
    sql = (
        f"SELECT count(DISTINCT {_quote(column)}) AS c FROM data "
        f"WHERE {_quote(privacy_unit)} IS NOT NULL GROUP BY {_quote(privacy_unit)}"
    )
    raw = table.connection.execute(sql).fetchnumpy()["c"]
    return np.asarray(raw, dtype=np.int64)


def contribution_scores(
    counts: Any, candidates: list[int], release_epsilon: Fraction
) -> list[Fraction]:
    """``sum_u min(c_u, L) - L / release_epsilon`` for each candidate ``L`` (exact)."""
    c = np.asarray(counts, dtype=np.int64)
    return [
        Fraction(int(np.minimum(c, L).sum())) - Fraction(L) / release_epsilon for L in candidates
    ]


def _contribution_candidates(candidates: Any) -> list[int]:
    if candidates is None:
        return list(DEFAULT_CONTRIBUTIONS)
    if isinstance(candidates, (str, bytes)) or not hasattr(candidates, "__iter__"):
        raise ParameterError("candidates must be a list of positive integers")
    out = []
    for v in candidates:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ParameterError(f"candidates must be positive integers, got {v!r}")
        out.append(int(v))
    if not out or len(set(out)) != len(out):
        raise ParameterError("candidates must be a non-empty list of distinct integers")
    return sorted(out)


def choose_max_contributions(
    data: Any,
    column: str,
    privacy_unit: str,
    epsilon: float,
    *,
    candidates: Any = None,
    release_epsilon: float | None = None,
    beta: float = 0.05,
    ledger: Any = None,
    source: RandomSource | None = None,
) -> ContributionChoice:
    """A contribution bound for ``column`` per ``privacy_unit``, chosen privately (module doc).

    ``epsilon``: the choice's pure-DP cost (one person added or removed). ``release_epsilon``
    (default ``epsilon``): the epsilon of the later release whose noise the penalty models.
    """
    eps = Fraction(check_epsilon(epsilon))
    rel = eps if release_epsilon is None else Fraction(check_epsilon(release_epsilon))
    cands = _contribution_candidates(candidates)
    table = open_table(data)
    table.require_column(column)
    table.require_column(privacy_unit, "privacy_unit")
    mech = make_generalized_exponential_mechanism(
        cands,
        lambda scores, L: scores[L],
        [Fraction(L) for L in cands],
        eps,
        beta=beta,
        source=source,
    )
    spent = float(mech.map(1))
    book = open_ledger(ledger)
    parameters = {
        "column": column,
        "privacy_unit": privacy_unit,
        "epsilon": float(eps),
        "release_epsilon": float(rel),
        "candidates": cands,
    }

    def release() -> ContributionChoice:
        counts = contribution_counts(table, column, privacy_unit)
        scores = dict(zip(cands, contribution_scores(counts, cands, rel), strict=True))
        chosen = mech(scores)
        return ContributionChoice(
            max_contributions=int(chosen),
            epsilon=spent,
            n_candidates=len(cands),
            ledger=None if book is None else book.path,
            parameters=parameters,
        )

    return charge_then_release(book, release, spent, "choose_max_contributions", parameters)
