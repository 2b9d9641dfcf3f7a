"""What a ledger records and reports: its entries, totals, quotes and per-unit sums.

The records of :class:`~dpselect.accounting.Ledger` (:class:`LedgerEntry`, :class:`Quote`,
:class:`UnitTotal`, :class:`LedgerTotal`), the exact running totals kept in its file, the
privacy unit in words, and the sums a ledger reports over its entries.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from dpselect.core.errors import ParameterError, given

__all__ = [
    "ROWS", "LedgerEntry", "LedgerTotal", "Quote", "UnitTotal", "describe_unit",
]  # fmt: skip

#: The privacy unit of a query that protects rows (one row added or removed), as recorded in
#: a ledger entry and as a ledger's binding; any other unit is the name of a unit column.
ROWS = "rows"

Accounting = Literal["basic", "zcdp"]
ChargeKind = Literal["pure", "bounded_range", "approx", "zcdp"]
Charged = tuple[Fraction, Fraction, Fraction]


def read_fraction(text: str) -> Fraction:
    """An exact amount from its stored text (``"1/10"``)."""
    return Fraction(text)


def fraction_text(value: Fraction) -> str:
    """An exact amount as stored (``"numerator/denominator"``)."""
    return f"{value.numerator}/{value.denominator}"


@dataclass(frozen=True)
class LedgerEntry:
    """One recorded charge: when, what, with which parameters, and its loss.

    ``epsilon``, ``delta`` and ``rho`` are the loss in its native measure (``None`` where it
    does not apply); ``charged_*`` are the exact amounts counted against the budget.
    ``privacy_unit`` is whom the release protects: :data:`ROWS` (one row added or removed), the
    name of a unit column (one person, all their rows), or ``None`` when the charge did not say
    (an entry written before ledgers recorded units, or a direct charge that named none).
    ``source`` is the data's public description (a path, "the pandas table"), never anything
    read from its rows; ``None`` when unknown.
    """

    id: int
    time: str
    mechanism: str
    parameters: Any
    kind: ChargeKind
    epsilon: float | None
    delta: float | None
    rho: float | None
    charged_epsilon: Fraction
    charged_delta: Fraction
    charged_rho: Fraction
    privacy_unit: str | None = None
    source: str | None = None


@dataclass(frozen=True)
class Quote:
    """What a charge would count against a ledger's budget (:meth:`Ledger.quote`), in the
    ledger's own accounting, and whether it fits the budget now; nothing is written.

    Attributes
    ----------
    charged_epsilon, charged_delta, charged_rho : Fraction
        The exact amounts a charge would add (a basic ledger counts ``epsilon`` and ``delta``,
        a zCDP ledger ``rho``).
    fits : bool
        Whether the budget holds them now.
    refusal : str or None
        The message the charge would be refused with (``None`` when it fits).
    """

    charged_epsilon: Fraction
    charged_delta: Fraction
    charged_rho: Fraction
    fits: bool
    refusal: str | None


@dataclass(frozen=True)
class UnitTotal:
    """What a ledger has charged for one privacy unit (``None``: unknown) and from which
    data sources; ``epsilon``, ``delta`` and ``rho`` are the exact sums charged."""

    privacy_unit: str | None
    entries: int
    epsilon: Fraction
    delta: Fraction
    rho: Fraction
    sources: tuple[str, ...]


def describe_unit(unit: str | None) -> str:
    """A privacy unit in words: ``rows``, ``unit column 'user_id'`` or ``an unknown unit``.

    Parameters
    ----------
    unit : str or None
        :data:`ROWS`, a unit column's name, or ``None`` (unknown).

    Returns
    -------
    str
        The unit in words.
    """
    if unit is None:
        return "an unknown unit"
    if unit == ROWS:
        return "rows (one row added or removed)"
    return f"the unit column {unit!r} (one person, all their rows)"


def check_unit(unit: str | None, argument: str = "privacy_unit") -> None:
    """Refuse a privacy unit that is neither ``None`` nor a non-empty string."""
    if unit is not None and (not isinstance(unit, str) or not unit):
        raise ParameterError(f"{argument} must be a column name or {ROWS!r}, got {given(unit)}")


@dataclass(frozen=True)
class LedgerTotal:
    """A total in a chosen measure and the theorem that justifies it.

    ``value`` is ``(epsilon, delta)`` for ``measure="approx"`` and ``rho`` for ``"zcdp"``.
    """

    measure: str
    value: Any
    theorem: str


@dataclass(frozen=True)
class Totals:
    """The exact running totals a ledger file keeps: the sums charged and the entry count."""

    epsilon: Fraction
    delta: Fraction
    rho: Fraction
    entries: int

    def plus(self, charged: Charged) -> Totals:
        """The totals after one more charge of ``charged`` ``(epsilon, delta, rho)``."""
        return Totals(
            self.epsilon + charged[0], self.delta + charged[1], self.rho + charged[2],
            self.entries + 1,
        )  # fmt: skip


def entry_from_row(row: tuple[Any, ...]) -> LedgerEntry:
    """A :class:`LedgerEntry` from a ``ledger_entries`` row (as :meth:`Ledger.entries` selects)."""

    def opt(text: str | None) -> float | None:
        return None if text is None else float(read_fraction(text))

    return LedgerEntry(
        id=int(row[0]),
        time=str(row[1]),
        mechanism=str(row[2]),
        parameters=json.loads(row[3]),
        kind=row[4],
        epsilon=opt(row[5]),
        delta=opt(row[6]),
        rho=opt(row[7]),
        charged_epsilon=read_fraction(row[8]),
        charged_delta=read_fraction(row[9]),
        charged_rho=read_fraction(row[10]),
        privacy_unit=None if row[11] is None else str(row[11]),
        source=None if row[12] is None else str(row[12]),
    )


def unit_totals(entries: list[LedgerEntry]) -> list[UnitTotal]:
    """The entries' charges summed per privacy unit, with the data sources of each (first
    seen first); entries of an unknown unit are summed under ``None``."""
    groups: dict[str | None, list[LedgerEntry]] = {}
    for entry in entries:
        groups.setdefault(entry.privacy_unit, []).append(entry)
    out = []
    for unit, items in groups.items():
        sources = tuple(dict.fromkeys(e.source for e in items if e.source is not None))
        out.append(
            UnitTotal(
                unit,
                len(items),
                sum((e.charged_epsilon for e in items), Fraction(0)),
                sum((e.charged_delta for e in items), Fraction(0)),
                sum((e.charged_rho for e in items), Fraction(0)),
                sources,
            )
        )
    return out


def zcdp_sum(entries: list[LedgerEntry]) -> Fraction:
    """The exact sum of the entries' ``rho`` (pure DP, and an approximate entry with
    ``delta = 0``, as ``eps^2/2``; bounded range as ``eps^2/8``); refused when an entry has
    ``delta > 0``."""
    rho = Fraction(0)
    for entry in entries:
        if entry.kind == "zcdp":
            rho += Fraction(entry.rho or 0.0)
        elif entry.kind == "bounded_range":
            rho += Fraction(entry.epsilon or 0.0) ** 2 / 8
        elif entry.kind == "pure" or not entry.delta:
            # (eps, 0)-DP is pure eps-DP: eps^2 / 2 (Bun-Steinke 2016, Prop. 1.4)
            rho += Fraction(entry.epsilon or 0.0) ** 2 / 2
        else:
            raise ParameterError(
                f"entry {entry.id} is ({entry.epsilon}, {entry.delta})-DP with delta > 0: "
                "it has no zCDP total"
            )
    return rho
