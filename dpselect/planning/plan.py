"""A release's plan: what it will cost and how it will run, shown before anything is paid.

Every recipe reaches its one charge (:func:`dpselect.recipes.release.charge_then`) with the
whole release decided from public facts only (the arguments, the schema, the candidate list,
the ledger): the guarantee, the kind of loss, the mechanism, its scale or threshold and every
share of the budget. A :class:`Plan` holds that decision; :func:`dpselect.explain` returns it
instead of charging, so a user sees the mechanism and every share before paying
(docs/session.md, "Explain before paying").
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from ..core.arithmetic import float_up
from ..core.jsonvalues import json_dict
from .contributions import contributions_line
from .stage import Stage, stages_lines

__all__ = ["Plan"]

#: Words a public parameter's name holds when it is a share of the budget or what a share
#: buys (a scale, a threshold): printed first, under "budget".
_SHARE_WORDS = ("epsilon", "delta", "rho", "fraction", "share", "scale", "threshold", "gamma")


@dataclass(frozen=True)
class Plan:
    """What one release will cost and how it will run, decided before its charge from public
    facts only; nothing has been read from the rows and nothing has been charged.

    The same query, run, charges exactly :attr:`epsilon`, :attr:`delta` (or :attr:`rho`) as
    :attr:`kind`, with these :attr:`parameters` (its ledger entry's), unless the ledger has
    changed in between: only the charge itself decides whether the budget holds it.

    Attributes
    ----------
    query : str
        The release's name, as its ledger entry names it (``"top_k/permute_and_flip"``).
    epsilon, delta : float
        The release's ``(epsilon, delta)`` guarantee for one privacy unit added or removed
        (rounded outward, as charged).
    kind : {"pure", "bounded_range", "approx"}
        The class of the loss: a zCDP ledger charges ``epsilon^2 / 8`` for a bounded-range
        release (an exponential mechanism, seed 004), ``epsilon^2 / 2`` for pure DP.
    rho : float or None
        The release's own zCDP cost where it has one (a Gaussian mechanism), else ``None``.
    parameters : dict
        The public parameters the release is made at: the mechanism, its scale or threshold,
        the share of each stage, the contribution bounds (the ledger entry's parameters).
    privacy_unit : str or None
        Whom the release protects: a unit column, or ``None`` for one row.
    source : str or None
        The data's public description (a path, "the pandas table").
    row_rules : tuple of str
        The rules that can drop rows of this input (:mod:`dpselect.data.row_rules`).
    ledger : str or None
        The ledger the release would be charged to (its path), or ``None``.
    charged : tuple of Fraction or None
        What the ledger would count, exactly: ``(epsilon, delta, rho)`` in its accounting.
    fits : bool or None
        Whether the ledger's budget holds the charge now (``None`` without a ledger).
    refusal : str or None
        The message the charge would be refused with now, when it does not fit.
    accounting : {"basic", "zcdp"} or None
        The ledger's accounting, in which :attr:`charged` counts (``None`` without a ledger).
    stages : tuple of Stage
        Every stage the release runs, in order: its mechanism, its share of the budget, its
        scale or threshold, its memory (:class:`~dpselect.planning.stage.Stage`); checked to
        cost no more than the charge before it is made.
    """

    query: str
    epsilon: float
    delta: float
    kind: Literal["pure", "bounded_range", "approx"]
    rho: float | None
    parameters: dict[str, Any]
    privacy_unit: str | None
    source: str | None
    row_rules: tuple[str, ...] = ()
    ledger: str | None = None
    charged: tuple[Fraction, Fraction, Fraction] | None = None
    fits: bool | None = None
    refusal: str | None = None
    accounting: str | None = None
    stages: tuple[Stage, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The plan as strict JSON values (``--explain --json``).

        Returns
        -------
        dict
            Every attribute; the ledger's charge as floats rounded up.
        """
        charged = None
        if self.charged is not None:
            charged = dict(zip(("epsilon", "delta", "rho"), map(float_up, self.charged),
                               strict=True))  # fmt: skip
        out = {
            "plan": self.query,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "kind": self.kind,
            "rho": self.rho,
            "parameters": self.parameters,
            "privacy_unit": self.privacy_unit,
            "source": self.source,
            "row_rules": list(self.row_rules),
            "ledger": self.ledger,
            "ledger_charge": charged,
            "fits": self.fits,
            "refusal": self.refusal,
            "accounting": self.accounting,
            "stages": [stage.to_dict() for stage in self.stages],
        }
        return json_dict(out)

    def explain(self) -> str:
        """The plan as text: the guarantee, whom it protects, the mechanism and every share,
        the ledger's charge; the same as ``str(plan)`` and the CLI's ``--explain``.

        Returns
        -------
        str
            Several lines, the first naming the release.
        """
        on = f" on {self.source}" if self.source else ""
        lines = [f"plan: {self.query}{on} (nothing read from the rows, nothing charged)"]
        kind = {
            "pure": "pure DP",
            "bounded_range": "pure DP, bounded range (an exponential mechanism: "
            "epsilon^2/8-zCDP, seed 004)",
            "approx": "approximate DP",
        }[self.kind]
        cost = f"epsilon = {self.epsilon:.6g}, delta = {self.delta:.6g}"
        if self.rho is not None:
            cost += f"; rho = {self.rho:.6g} in a zCDP ledger"
        lines.append(f"  guarantee: {cost}; {kind}")
        unit = "one row" if self.privacy_unit is None else f"one unit of {self.privacy_unit!r}"
        lines.append(f"  protects: {unit} added or removed")
        bounds = contributions_line(self.parameters)
        if bounds:
            lines.append(f"  {bounds}")
        params = {k: v for k, v in self.parameters.items() if k != "privacy_unit"}
        mechanism = params.pop("mechanism", None) or params.pop("method", None)
        if mechanism is not None:
            lines.append(f"  mechanism: {mechanism}")
        shares = {k: v for k, v in params.items() if any(w in k for w in _SHARE_WORDS)}
        if shares:
            lines.append("  budget: " + ", ".join(f"{k} = {_shown(v)}" for k, v in shares.items()))
        rest = {k: v for k, v in params.items() if k not in shares}
        if rest:
            lines.append(
                "  parameters: " + ", ".join(f"{k} = {_shown(v)}" for k, v in rest.items())
            )
        lines.extend(stages_lines(self.stages))
        lines.append(self._ledger_line())
        lines.extend(f"  rows read: {rule}" for rule in self.row_rules)
        return "\n".join(lines)

    def _ledger_line(self) -> str:
        if self.ledger is None:
            return "  ledger: none (nothing would be recorded)"
        assert self.charged is not None
        if self.accounting == "zcdp":
            charge = f"rho {float_up(self.charged[2]):.6g}"
        else:
            charge = (
                f"epsilon {float_up(self.charged[0]):.6g}, delta {float_up(self.charged[1]):.6g}"
            )
        verdict = "fits the budget now" if self.fits else f"does not fit: {self.refusal}"
        return f"  ledger: {self.ledger} would be charged {charge}; {verdict}"

    def __str__(self) -> str:
        return self.explain()


def _shown(value: Any) -> str:
    """A parameter's value as printed: floats to 6 significant digits, short lists whole."""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list) and len(value) > 8:
        head = ", ".join(_shown(v) for v in value[:8])
        return f"[{head}, ... ({len(value)} in all)]"
    if isinstance(value, list):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return repr(value) if isinstance(value, str) else str(value)
