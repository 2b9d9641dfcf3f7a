"""Exact samplers for coins and for the random numbers of runs of private selection.

- :func:`sample_bernoulli`: ``True`` with probability ``p`` for a rational ``p`` (a float is
  taken exactly), by comparing a lazily read uniform ``U`` with ``p`` 64 binary digits at a
  time: ``U < p`` is decided at the first differing digit block. No float comparison, so
  the probability is exactly ``p`` (a float ``u < p`` with ``u`` on a grid would round it).
- :func:`sample_geometric`: the number of trials up to and including the first success of
  independent ``Bernoulli(p)`` trials, ``P(T = t) = p (1 - p)^(t-1)``, ``t >= 1``.
- :func:`sample_poisson` and :func:`sample_truncated_negative_binomial`: by inversion of the
  cumulative distribution function, exactly: a lazy uniform ``U`` and the partial sums
  ``C_k = P(K <= k)`` as python-flint ``arb`` balls; ``K`` is the first ``k`` with
  ``U < C_k``, decided when ``U``'s dyadic interval lies on one side of the ball, reading
  more digits of ``U`` and raising the working precision otherwise (as in
  ``docs/exactness.md``). The released ``K`` has exactly the target law.

The truncated negative binomial ``D_{eta, gamma}`` is Papernot and Steinke (2022), Definition
1: ``P(K = k) = (1 - gamma)^k / (gamma^(-eta) - 1) * prod_{l=0}^{k-1} (l + eta) / (l + 1)`` for
``k >= 1`` (``eta > 0``), and for ``eta = 0`` the logarithmic law
``P(K = k) = (1 - gamma)^k / (k ln(1 / gamma))``; ``eta = 1`` is the geometric law.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

from flint import arb, ctx, fmpq

from ..core.errors import ParameterError
from .source import RandomSource, resolve_source
from .uniform import LazyUniform

__all__ = [
    "sample_bernoulli",
    "sample_geometric",
    "sample_poisson",
    "sample_truncated_negative_binomial",
    "truncated_negative_binomial_mean",
]

_BLOCK = 64
#: The largest mean accepted for the inversion samplers (the walk over k is linear in K).
MAX_MEAN = Fraction(10**5)


def _probability(p: Any, name: str, *, allow_zero: bool, allow_one: bool) -> Fraction:
    if isinstance(p, bool) or not isinstance(p, (int, float, Fraction)):
        raise ParameterError(f"{name} must be a number, got {type(p).__name__}")
    if isinstance(p, float) and p != p:
        raise ParameterError(f"{name} must not be NaN")
    q = Fraction(p)
    low_ok = q > 0 or (allow_zero and q == 0)
    high_ok = q < 1 or (allow_one and q == 1)
    if not (low_ok and high_ok):
        lo = "[0" if allow_zero else "(0"
        hi = "1]" if allow_one else "1)"
        raise ParameterError(f"{name} must lie in {lo}, {hi}, got {p!r}")
    return q


def sample_bernoulli(p: Any, source: RandomSource | None = None) -> bool:
    """``True`` with probability exactly ``p`` (a rational in ``[0, 1]``; floats exactly).

    ``U < p`` for a uniform ``U`` read 64 digits at a time: with ``P = floor(p 2^64)`` and the
    next block ``u`` of ``U``, ``u < P`` means ``U < p`` and ``u > P`` means ``U > p``; on
    equality the comparison moves to the next block with ``p <- p 2^64 - P``. Each block
    decides with probability ``1 - 2^-64``.

    Parameters
    ----------
    p : int, float or Fraction
        The probability, in ``[0, 1]`` (a float taken exactly; NaN refused). ``0`` and ``1``
        read no random bits.
    source : RandomSource or None, default None
        Where the random bits come from; ``None`` means the default private source.

    Returns
    -------
    bool
        ``True`` with probability ``p``.

    Raises
    ------
    ParameterError
        ``p`` is not a number in ``[0, 1]``.
    """
    q = _probability(p, "p", allow_zero=True, allow_one=True)
    if q == 0:
        return False
    if q == 1:
        return True
    src = resolve_source(source)
    num, den = q.numerator, q.denominator
    while True:
        scaled = num << _BLOCK
        block, num = divmod(scaled, den)
        u = src.bits(_BLOCK)
        if u != block:
            return u < block
        if num == 0:  # U's digits equal p's finite expansion so far: U >= p from here on
            return False


def sample_geometric(p: Any, source: RandomSource | None = None) -> int:
    """Trials up to the first success of ``Bernoulli(p)``, ``p`` in ``(0, 1]``: ``t >= 1``.

    Parameters
    ----------
    p : int, float or Fraction
        The success probability, in ``(0, 1]`` (a float taken exactly). The expected number
        of trials is ``1 / p``.
    source : RandomSource or None, default None
        Where the random bits come from; ``None`` means the default private source.

    Returns
    -------
    int
        ``t >= 1``, with ``P(t) = p (1 - p)^(t - 1)``.

    Raises
    ------
    ParameterError
        ``p`` is not a number in ``(0, 1]``.
    """
    q = _probability(p, "p", allow_zero=False, allow_one=True)
    src = resolve_source(source)
    t = 1
    while not sample_bernoulli(q, src):
        t += 1
    return t


# ------------------------------------------------------------------------------ inversion
def _sample_by_inversion(
    first: int, make_terms: Callable[[], Callable[[int], arb]], source: RandomSource
) -> int:
    """The first ``k >= first`` with ``U < P(K <= k)``, exactly (module docstring).

    ``make_terms()`` returns ``pmf(k)`` evaluated at the current ``ctx.prec``; it is rebuilt
    when the precision is raised.
    """
    u = LazyUniform.sample(source)
    prec = 128
    while True:
        with ctx.workprec(prec):
            pmf = make_terms()
            lo = arb(fmpq(u.prefix, 1 << u.nbits))
            hi = arb(fmpq(u.prefix + 1, 1 << u.nbits))
            cumulative = arb(0)
            k = first
            undecided = False
            while True:
                cumulative += pmf(k)
                if hi <= cumulative:  # U < C_k, and U >= C_{k-1} was decided before
                    return k
                if lo >= cumulative:  # U >= C_k: go on
                    k += 1
                    continue
                undecided = True
                break
        if undecided:
            u.refine(source)
            if u.nbits > prec // 2:
                prec *= 2


def _rational(x: Any, name: str) -> Fraction:
    if isinstance(x, bool) or not isinstance(x, (int, float, Fraction)):
        raise ParameterError(f"{name} must be a number, got {type(x).__name__}")
    if isinstance(x, float) and not (x == x and abs(x) != float("inf")):
        raise ParameterError(f"{name} must be finite, got {x!r}")
    return Fraction(x)


def _ball(q: Fraction) -> arb:
    return arb(fmpq(q.numerator, q.denominator))


def sample_poisson(mean: Any, source: RandomSource | None = None) -> int:
    """``K ~ Poisson(mean)``, ``P(K = k) = e^-mean mean^k / k!``, ``k >= 0``, exactly.

    ``mean`` is a rational in ``(0, 10^5]`` (a float taken exactly).

    Parameters
    ----------
    mean : int, float or Fraction
        The mean, in ``(0, 10^5]`` (:data:`MAX_MEAN`); a finite float is taken exactly.
    source : RandomSource or None, default None
        Where the random bits come from; ``None`` means the default private source.

    Returns
    -------
    int
        ``K >= 0``.

    Raises
    ------
    ParameterError
        ``mean`` is not a finite number in ``(0, 10^5]``.
    """
    mu = _rational(mean, "mean")
    if not 0 < mu <= MAX_MEAN:
        raise ParameterError(f"mean must lie in (0, {MAX_MEAN}], got {mean!r}")
    src = resolve_source(source)

    def make_terms() -> Callable[[int], arb]:
        m = _ball(mu)
        term = (-m).exp()

        def pmf(k: int) -> arb:  # called for k = 0, 1, 2, ... in turn
            nonlocal term
            if k > 0:
                term = term * m / k
            return term

        return pmf

    return _sample_by_inversion(0, make_terms, src)


def _tnb_parameters(eta: Any, gamma: Any) -> tuple[Fraction, Fraction]:
    e = _rational(eta, "eta")
    if e < 0:
        raise ParameterError(f"eta must be >= 0 (0: logarithmic, 1: geometric), got {eta!r}")
    g = _probability(gamma, "gamma", allow_zero=False, allow_one=False)
    return e, g


def truncated_negative_binomial_mean(eta: Any, gamma: Any) -> arb:
    """``E[K]`` for ``D_{eta, gamma}`` as an ``arb`` ball (Papernot and Steinke 2022, Sec. 2):
    ``eta (1 - gamma) / (gamma (1 - gamma^eta))`` for ``eta > 0``,
    ``(1/gamma - 1) / ln(1/gamma)`` for ``eta = 0``.

    Parameters
    ----------
    eta : int, float or Fraction
        The shape, ``>= 0`` (0: logarithmic law, 1: geometric law); floats exactly.
    gamma : int, float or Fraction
        The parameter in ``(0, 1)``; floats exactly.

    Returns
    -------
    flint.arb
        A ball containing the mean, at the current ``ctx`` precision.

    Raises
    ------
    ParameterError
        ``eta < 0``, ``gamma`` outside ``(0, 1)``, or either is not a finite number.
    """
    e, g = _tnb_parameters(eta, gamma)
    ge, ee = _ball(g), _ball(e)
    if e == 0:
        return (1 / ge - 1) / (1 / ge).log()
    return ee * (1 - ge) / (ge * (1 - (ee * ge.log()).exp()))


def sample_truncated_negative_binomial(
    eta: Any, gamma: Any, source: RandomSource | None = None
) -> int:
    """``K ~ D_{eta, gamma}`` (module docstring), ``k >= 1``, exactly.

    ``eta >= 0`` and ``gamma`` in ``(0, 1)`` are rationals (floats taken exactly); the mean
    must be at most ``10^5``.

    Parameters
    ----------
    eta : int, float or Fraction
        The shape, ``>= 0`` (0: logarithmic law, 1: geometric law).
    gamma : int, float or Fraction
        The parameter in ``(0, 1)``; a smaller ``gamma`` means a larger mean (more runs).
    source : RandomSource or None, default None
        Where the random bits come from; ``None`` means the default private source.

    Returns
    -------
    int
        ``K >= 1``, with law ``D_{eta, gamma}``.

    Raises
    ------
    ParameterError
        Parameters out of range, or a mean not certainly below ``10^5``
        (:func:`truncated_negative_binomial_mean` at 128 bits).
    """
    e, g = _tnb_parameters(eta, gamma)
    with ctx.workprec(128):
        mean = truncated_negative_binomial_mean(e, g)
        if not mean < _ball(MAX_MEAN):
            raise ParameterError(
                f"the mean number of runs must be at most {MAX_MEAN}, "
                f"got about {float(mean.mid()):.3g}"
            )
    src = resolve_source(source)

    def make_terms() -> Callable[[int], arb]:
        ge, ee = _ball(g), _ball(e)
        keep = 1 - ge
        if e == 0:
            norm = (1 / ge).log()

            def logarithmic(k: int) -> arb:
                return keep**k / (k * norm)

            return logarithmic
        norm = (-(ee * ge.log())).exp() - 1  # gamma^(-eta) - 1 > 0
        prod = arb(1)

        def pmf(k: int) -> arb:  # called for k = 1, 2, ... in turn
            nonlocal prod
            prod = prod * (ee + (k - 1)) / k
            return keep**k * prod / norm

        return pmf

    return _sample_by_inversion(1, make_terms, src)
