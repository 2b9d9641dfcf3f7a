"""A ledger's budget and what a charge costs against it.

A ledger's budget (:class:`LedgerBudget`) is fixed at creation in one of two accountings:
``"basic"`` counts exact ``(epsilon, delta)`` sums, ``"zcdp"`` counts ``rho``. This module
checks a new budget, prices a charge in the ledger's accounting (the exact
``(epsilon, delta, rho)`` it adds), says whether new totals fit, and words the refusal.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from dpselect.core.arithmetic import (
    Number,
    as_decimal,
    float_down,
    float_up,
    plain_number,
    printed_down,
    sqrt_down,
)
from dpselect.core.errors import ParameterError

from .ledger_records import Accounting, Charged, ChargeKind, Totals
from .params import check_delta, check_loss
from .zcdp import approx_dp_to_zcdp_budget, zcdp_to_approx_dp


@dataclass(frozen=True)
class LedgerBudget:
    """A ledger's accounting and its exact budget (``rho`` is 0 in a basic ledger)."""

    accounting: Accounting
    epsilon: Fraction
    delta: Fraction
    rho: Fraction


def new_budget(epsilon: Number, delta: Number, accounting: Accounting) -> LedgerBudget:
    """The checked budget of a new ledger (:meth:`Ledger.create`).

    Parameters
    ----------
    epsilon, delta : float
        The budget as the user gave it; a float is read as the decimal it prints as.
    accounting : {"basic", "zcdp"}
        How charges add up.

    Returns
    -------
    LedgerBudget
        The exact budget; a zCDP budget holds the largest ``rho`` converting to it.
    """
    # NumPy scalars by the value they hold (np.float32(0.1) is not 0.1).
    epsilon, delta = plain_number(epsilon), plain_number(delta)
    # The budget is the decimal the user typed (1/10 for 0.1), as every charge made
    # through dpselect's recipes is calibrated to at most that decimal (as_decimal).
    # The rules of a query's (epsilon, delta): epsilon > 0, delta in [0, 1) (a budget of
    # epsilon 0 admits no query; delta 1 promises nothing).
    eps = check_loss(epsilon, "epsilon")
    if eps == 0:
        raise ParameterError(f"epsilon must be positive, got {epsilon!r}")
    d = check_loss(delta, "delta")
    if d >= 1:
        raise ParameterError(f"delta must be in [0, 1), got {delta!r}")
    eps = as_decimal(epsilon) if isinstance(epsilon, float) else eps
    d = as_decimal(delta) if isinstance(delta, float) else d
    if accounting not in ("basic", "zcdp"):
        raise ParameterError(f"accounting must be 'basic' or 'zcdp', got {accounting!r}")
    rho = Fraction(0)
    if accounting == "zcdp":
        if d == 0:
            raise ParameterError("a zCDP ledger needs delta > 0 to convert its budget")
        rho = Fraction(approx_dp_to_zcdp_budget(eps, d))
    return LedgerBudget(accounting, eps, d, rho)


def priced(
    budget: LedgerBudget,
    epsilon: Number,
    delta: Number,
    kind: Literal["pure", "bounded_range", "approx"] | None,
) -> tuple[ChargeKind, Charged]:
    """The kind and the exact ``(epsilon, delta, rho)`` an ``(epsilon, delta)`` charge
    counts against ``budget`` (:meth:`Ledger.charge`, :meth:`Ledger.quote`).

    Parameters
    ----------
    budget : LedgerBudget
        The ledger's accounting and budget.
    epsilon, delta : float
        The release's loss, as :meth:`Ledger.charge` takes it.
    kind : {"pure", "bounded_range", "approx"} or None
        The loss's class; ``None``: ``"pure"`` when ``delta == 0``, else ``"approx"``.

    Returns
    -------
    tuple
        The kind and the exact ``(epsilon, delta, rho)`` charged.
    """
    eps = check_loss(epsilon, "epsilon")
    d = check_delta(delta)
    if kind is None:
        kind = "approx" if d > 0 else "pure"
    if kind not in ("pure", "bounded_range", "approx"):
        raise ParameterError(f"kind must be 'pure', 'bounded_range' or 'approx', got {kind!r}")
    if kind != "approx" and d > 0:
        raise ParameterError(f"a {kind!r} charge has delta = 0, got delta={delta!r}")
    if budget.accounting == "basic":
        return kind, (eps, d, Fraction(0))
    if d > 0:
        raise ParameterError(
            "this zCDP ledger cannot take an (epsilon, delta > 0) charge; describe the "
            "mechanism's zCDP loss with charge_zcdp instead"
        )
    return kind, (Fraction(0), Fraction(0), eps * eps / (8 if kind == "bounded_range" else 2))


def priced_zcdp(budget: LedgerBudget, rho: Number, delta: Number | None) -> Charged:
    """The exact ``(epsilon, delta, rho)`` a ``rho``-zCDP charge counts against ``budget``
    (:meth:`Ledger.charge_zcdp`, :meth:`Ledger.quote_zcdp`).

    Parameters
    ----------
    budget : LedgerBudget
        The ledger's accounting and budget.
    rho : float
        The release's zCDP ``rho >= 0``.
    delta : float or None
        The ``delta`` at which a basic ledger converts ``rho`` (required there).

    Returns
    -------
    tuple of Fraction
        The exact ``(epsilon, delta, rho)`` charged.
    """
    r = check_loss(rho, "rho")
    if budget.accounting == "zcdp":
        return Fraction(0), Fraction(0), r
    if delta is None:
        raise ParameterError("a basic ledger converts zCDP charges to (epsilon, delta): pass delta")
    d = check_delta(delta, allow_zero=False)
    return Fraction(zcdp_to_approx_dp(r, d)), d, Fraction(0)


def fits(budget: LedgerBudget, t: Totals) -> bool:
    """Whether the totals ``t`` are within ``budget``.

    Parameters
    ----------
    budget : LedgerBudget
        The ledger's accounting and budget.
    t : Totals
        The totals after a charge.

    Returns
    -------
    bool
        Whether the budget holds them (compared exactly).
    """
    if budget.accounting == "basic":
        return t.epsilon <= budget.epsilon and t.delta <= budget.delta
    return t.rho <= budget.rho


def refusal(budget: LedgerBudget, path: str, t: Totals, charged: Charged) -> str:
    """Why ``charged`` does not fit on top of the totals ``t`` of the ledger at ``path``.

    Parameters
    ----------
    budget : LedgerBudget
        The ledger's accounting and budget.
    path : str
        The ledger's path, named in the message.
    t : Totals
        The totals before the charge.
    charged : tuple of Fraction
        The charge's exact ``(epsilon, delta, rho)``.

    Returns
    -------
    str
        The message of :class:`~dpselect.core.errors.BudgetExceeded`.
    """
    if budget.accounting == "basic":
        return (
            f"charging epsilon={float_up(charged[0]):.6g}, "
            f"delta={float_up(charged[1]):.6g} would exceed the budget "
            f"(epsilon={float(budget.epsilon)!r}, "
            f"delta={float(budget.delta)!r}) of {path!r}: remaining "
            f"epsilon={printed_down(float_down(budget.epsilon - t.epsilon), 6)}, "
            f"delta={printed_down(float_down(budget.delta - t.delta), 6)} (rounded "
            "down: asking for them fits); nothing was charged"
        )
    left = budget.rho - t.rho
    return (
        f"charging rho={float_up(charged[2]):.6g} would exceed the zCDP budget "
        f"rho={float(budget.rho):.6g} of {path!r} (the largest rho whose "
        f"conversion is (epsilon={float(budget.epsilon):g}, "
        f"delta={float(budget.delta):g})-DP); remaining rho={float_down(left):.6g}, "
        f"which fits one pure-DP query up to epsilon={sqrt_down(2 * left):.4g} or one "
        f"exponential-mechanism selection (k = 1) up to epsilon={sqrt_down(8 * left):.4g}"
        " (a one-shot top-k at total epsilon costs epsilon^2/(8k)). Under zCDP "
        "a pure epsilon-DP query costs rho = epsilon^2/2 and an exponential mechanism "
        "(bounded range) epsilon^2/8 (Bun-Steinke 2016; Cesar-Rogers 2021): one large "
        "query costs more than its epsilon suggests, many small ones far less; nothing "
        "was charged"
    )
