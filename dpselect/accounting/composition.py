"""Basic and advanced composition of (epsilon, delta)-DP mechanisms (seed 002).

- :func:`basic_composition`: ``(sum eps_i, sum delta_i)``, valid for adaptively chosen
  mechanisms (Dwork, McSherry, Nissim, Smith 2006; Dwork and Roth 2014, Theorem 3.16; seed 002,
  "simple adaptive composition"), and for adaptively chosen *parameters* too (a privacy filter,
  Rogers, Roth, Ullman, Vadhan 2016, Theorem 3.6).
- :func:`advanced_composition`: Dwork, Rothblum, Vadhan 2010 (Dwork and Roth 2014,
  Theorem 3.20): ``k`` adaptively chosen ``(eps, delta)``-DP mechanisms are
  ``(sqrt(2k ln(1/delta')) eps + k eps (e^eps - 1), k delta + delta')``-DP.
- :func:`advanced_composition_corollary`: the per-query ``eps = eps' / (2 sqrt(2k ln(1/delta')))``
  that suffices for a total ``eps' < 1`` (Dwork and Roth 2014, Corollary 3.21; seed 002).
- :func:`advanced_composition_inverse`: the largest per-query ``eps`` whose advanced-composition
  total is at most a target, solved numerically; never smaller than the corollary's.

Every result is rounded toward a larger privacy loss (a smaller per-query budget).
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction

from flint import arb

from dpselect.core.arithmetic import Number, float_down, float_up
from dpselect.core.errors import ParameterError

from ..core.intervals import arb_of, certainly_at_most, evaluate, lower_float, upper_float
from ._search import largest_passing
from .params import check_count, check_delta, check_loss

__all__ = [
    "advanced_composition",
    "advanced_composition_corollary",
    "advanced_composition_inverse",
    "basic_composition",
]


def basic_composition(losses: Iterable[tuple[Number, Number]]) -> tuple[float, float]:
    """Basic composition: ``(sum of epsilons, sum of deltas)``, each rounded up.

    ``losses`` is an iterable of ``(epsilon_i, delta_i)`` pairs. Valid for adaptively chosen
    mechanisms and parameters (seed 002; Rogers et al. 2016). ``delta`` is capped at 1. The sums
    are exact (:class:`~fractions.Fraction`) before the single upward rounding.

    Parameters
    ----------
    losses : iterable of (epsilon, delta) tuples
        Each mechanism's loss: ``epsilon_i >= 0`` and ``delta_i`` in ``[0, 1]``.

    Returns
    -------
    tuple of (float, float)
        ``(sum epsilon_i, min(1, sum delta_i))``, each rounded up.
    """
    eps_total, delta_total = Fraction(0), Fraction(0)
    for i, loss in enumerate(losses):
        if not (isinstance(loss, tuple) and len(loss) == 2):
            raise ParameterError(f"losses[{i}] must be an (epsilon, delta) tuple, got {loss!r}")
        eps_total += check_loss(loss[0], f"losses[{i}] epsilon")
        delta_total += check_delta(loss[1], f"losses[{i}] delta")
    return float_up(eps_total), float_up(min(delta_total, Fraction(1)))


def _advanced_epsilon(eps: Fraction, k: int, delta_prime: Fraction) -> arb:
    e = arb_of(eps)
    log_term = (arb(1) / arb_of(delta_prime)).log()
    return (arb(2 * k) * log_term).sqrt() * e + arb(k) * e * e.expm1()


def advanced_composition(
    epsilon: Number, k: int, delta_prime: Number, *, delta: Number = 0.0
) -> tuple[float, float]:
    """Advanced composition (Dwork, Rothblum, Vadhan 2010; Dwork and Roth 2014, Thm 3.20).

    ``k`` adaptively chosen ``(epsilon, delta)``-DP mechanisms are together
    ``(sqrt(2k ln(1/delta')) epsilon + k epsilon (e^epsilon - 1), k delta + delta')``-DP for any
    ``delta' in (0, 1]``. Returns that pair, each rounded up. The formula is not capped at the
    basic bound ``k epsilon``; :func:`~dpselect.accounting.best_epsilon` takes the minimum.

    Parameters
    ----------
    epsilon : float
        Every mechanism's ``epsilon >= 0``.
    k : int
        The number of mechanisms, at least 1.
    delta_prime : float
        The slack ``delta'`` in ``(0, 1]``: smaller gives a larger total epsilon.
    delta : float, default 0.0
        Every mechanism's ``delta``, in ``[0, 1]``.

    Returns
    -------
    tuple of (float, float)
        The total ``(epsilon, delta)``: the formula above and ``min(1, k delta + delta')``.
    """
    eps = check_loss(epsilon, "epsilon")
    k = check_count(k)
    dp = check_delta(delta_prime, "delta_prime", allow_zero=False)
    d = check_delta(delta)
    eps_out = evaluate(lambda: _advanced_epsilon(eps, k, dp))
    return upper_float(eps_out), float_up(min(k * d + dp, Fraction(1)))


def advanced_composition_corollary(target_epsilon: Number, k: int, delta_prime: Number) -> float:
    """Per-query epsilon ``eps' / (2 sqrt(2k ln(1/delta')))`` (Dwork and Roth 2014, Cor. 3.21).

    Valid for a target ``0 < eps' < 1`` (seed 002's corollary): ``k`` mechanisms at this
    epsilon are ``(eps', k delta + delta')``-DP. Rounded *down* (a smaller per-query budget).

    Parameters
    ----------
    target_epsilon : float
        The total ``eps'`` wanted, in ``(0, 1)``.
    k : int
        The number of mechanisms (queries), at least 1.
    delta_prime : float
        The slack ``delta'``, in ``(0, 1)``.

    Returns
    -------
    float
        The per-query epsilon, rounded down.
    """
    target = check_loss(target_epsilon, "target_epsilon")
    if not 0 < target < 1:
        raise ParameterError(f"target_epsilon must be in (0, 1), got {target_epsilon!r}")
    k = check_count(k)
    dp = check_delta(delta_prime, "delta_prime", allow_zero=False, allow_one=False)

    def formula() -> arb:
        log_term = (arb(1) / arb_of(dp)).log()
        return arb_of(target) / (arb(2) * (arb(2 * k) * log_term).sqrt())

    return lower_float(evaluate(formula))


def advanced_composition_inverse(target_epsilon: Number, k: int, delta_prime: Number) -> float:
    """The largest per-query epsilon whose advanced-composition total is ``<= target_epsilon``.

    Solves ``sqrt(2k ln(1/delta')) eps + k eps (e^eps - 1) <= target`` over floats with a
    certified check, so the returned epsilon always meets the target. It is at least the
    corollary's value (the corollary is a closed-form under-approximation of this root).

    Parameters
    ----------
    target_epsilon : float
        The total epsilon allowed, ``>= 0`` (0 gives 0).
    k : int
        The number of mechanisms, at least 1.
    delta_prime : float
        The slack ``delta'``, in ``(0, 1]``; the total delta is ``k delta + delta'`` for
        per-query ``delta``.

    Returns
    -------
    float
        The per-query epsilon (a float whose total is certified ``<= target_epsilon``).
    """
    target = check_loss(target_epsilon, "target_epsilon")
    k = check_count(k)
    dp = check_delta(delta_prime, "delta_prime", allow_zero=False)
    if target == 0:
        return 0.0

    def passes(eps: float) -> bool:
        e = Fraction(eps)
        return certainly_at_most(lambda: _advanced_epsilon(e, k, dp), target)

    start = max(float_down(target / k), 5e-324)
    return largest_passing(passes, start)
