"""How one release's budget divides among its stages: the one place a budget is split.

A release may run in stages: a private choice of a contribution bound (or of value bounds),
a private selection of groups, then the mechanism in each group. Each stage is charged to
the same privacy unit, so by simple adaptive composition (seed 002, "Theorem (Simple adaptive
composition)") the release costs the sum of its stages' costs. The functions here divide a
total ``(epsilon, delta)`` exactly (:class:`fractions.Fraction`) and round every share a
mechanism is calibrated to *down*, so the stages never spend more than the total; the total
the ledger is charged is rounded *up* by the caller (:func:`dpselect.core.arithmetic.float_up`).

Recipes never multiply a budget themselves: they ask for a :class:`Split` here, so every
division of a budget is written once and can be printed before anything is charged
(:class:`~dpselect.planning.plan.Plan`).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..core.arithmetic import float_down
from ..core.errors import ParameterError

__all__ = ["Split", "divide", "first_share", "remainder"]


@dataclass(frozen=True)
class Split:
    """A budget divided between a first stage and the rest, exactly.

    Attributes
    ----------
    epsilon, delta : Fraction
        The total the stages share.
    first_epsilon, first_delta : Fraction
        The first stage's share (a private choice, a selection of groups).
    rest_epsilon, rest_delta : Fraction
        What remains for the later stages: ``total - first``, never negative.
    """

    epsilon: Fraction
    delta: Fraction
    first_epsilon: Fraction
    first_delta: Fraction
    rest_epsilon: Fraction
    rest_delta: Fraction

    def __post_init__(self) -> None:
        # the invariant every caller relies on: the shares never exceed the total
        if not (self.first_epsilon >= 0 and self.rest_epsilon >= 0
                and self.first_epsilon + self.rest_epsilon <= self.epsilon):  # fmt: skip
            raise ValueError("a split's epsilon shares must be non-negative and within the total")
        if not (self.first_delta >= 0 and self.rest_delta >= 0
                and self.first_delta + self.rest_delta <= self.delta):  # fmt: skip
            raise ValueError("a split's delta shares must be non-negative and within the total")


def _fraction(value: float | Fraction, argument: str) -> Fraction:
    q = Fraction(value)
    if q < 0:
        raise ParameterError(f"{argument} must be at least 0, got {float(q)!r}")
    return q


def first_share(
    epsilon: float | Fraction,
    fraction: float | Fraction,
    *,
    delta: float | Fraction = 0,
    delta_fraction: float | Fraction = 0,
) -> Split:
    """Give ``fraction`` of ``epsilon`` (and ``delta_fraction`` of ``delta``) to a first stage.

    Parameters
    ----------
    epsilon : float or Fraction
        The release's total epsilon.
    fraction : float or Fraction
        The first stage's share of epsilon, in ``[0, 1]`` (a public rule: an automatic choice's
        ``auto_share``, a group selection's share).
    delta : float or Fraction, optional
        The release's total delta (default 0).
    delta_fraction : float or Fraction, optional
        The first stage's share of delta, in ``[0, 1]`` (default 0).

    Returns
    -------
    Split
        The exact shares; the rest is ``total - first``.

    Raises
    ------
    ParameterError
        When a share is outside ``[0, 1]`` or a total is negative (public parameters).
    """
    e, d = _fraction(epsilon, "epsilon"), _fraction(delta, "delta")
    f, fd = _fraction(fraction, "fraction"), _fraction(delta_fraction, "delta_fraction")
    if f > 1 or fd > 1:
        raise ParameterError(f"a budget share must be in [0, 1], got {float(max(f, fd))!r}")
    return Split(e, d, e * f, d * fd, e - e * f, d - d * fd)


def remainder(total: float | Fraction, spent: float | Fraction) -> float:
    """What a later stage may be calibrated to once an earlier stage has ``spent``.

    Parameters
    ----------
    total : float or Fraction
        The release's total.
    spent : float or Fraction
        What the earlier stage costs (its privacy map's value, rounded up).

    Returns
    -------
    float
        ``total - spent`` rounded down (0 when nothing remains), so the two stages together
        never exceed ``total``.
    """
    rest = Fraction(total) - Fraction(spent)
    return float_down(rest) if rest > 0 else 0.0


def divide(share: float | Fraction, times: int) -> float:
    """Each of ``times`` stages' share of ``share``, rounded down.

    Parameters
    ----------
    share : float or Fraction
        The budget the stages divide (each person is in at most ``times`` of them, so by
        basic composition their costs add up to at most ``times`` one stage's).
    times : int
        How many stages one person can reach (at least 1): groups per unit.

    Returns
    -------
    float
        ``share / times`` rounded down: ``times`` such stages never exceed ``share``.
    """
    if int(times) < 1:
        raise ParameterError(f"times must be at least 1, got {times!r}")
    return float_down(Fraction(share) / int(times))
