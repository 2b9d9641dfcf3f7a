"""Lazily sampled uniforms: real numbers in (0, 1) whose binary digits are read on demand.

A :class:`LazyUniform` knows the first ``nbits`` digits of ``U`` as the integer ``prefix``, so
``U`` lies in ``[prefix / 2^nbits, (prefix + 1) / 2^nbits]`` (an interval of probability
zero at its ends). :meth:`LazyUniform.refine` reads more digits from the source, halving the
interval per bit. A decision that depends on ``U`` (which side of a threshold, which of two
noisy keys is larger) reads digits until the interval decides it: it is then exactly the
decision an ideal real-valued uniform would make. This is seed 001's partially sampled random
number, made generic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .source import RandomSource

__all__ = ["REFINE_BITS", "LazyUniform", "bernoulli_from_balls", "uniform_index"]

#: Digits read per refinement step.
REFINE_BITS = 64


@dataclass
class LazyUniform:
    """A uniform in (0, 1) known to ``nbits`` binary digits: ``prefix`` / 2^nbits."""

    prefix: int
    nbits: int

    @classmethod
    def from_word(cls, word: int) -> LazyUniform:
        """A uniform whose first 64 digits are the bits of ``word``.

        Parameters
        ----------
        word : int
            A 64-bit word in ``[0, 2^64)`` (a NumPy ``uint64`` is accepted).

        Returns
        -------
        LazyUniform
            ``LazyUniform(word, 64)``.
        """
        return cls(int(word), 64)

    @classmethod
    def sample(cls, source: RandomSource, nbits: int = 64) -> LazyUniform:
        """A fresh uniform with its first ``nbits`` digits read from ``source``.

        Parameters
        ----------
        source : RandomSource
            Where the digits come from (not ``None``).
        nbits : int, default 64
            The number of digits read now.

        Returns
        -------
        LazyUniform
            The uniform, known to ``nbits`` digits.
        """
        return cls(source.bits(nbits), nbits)

    def refine(self, source: RandomSource, k: int = REFINE_BITS) -> None:
        """Read ``k`` more digits.

        Parameters
        ----------
        source : RandomSource
            Where the digits come from (not ``None``).
        k : int, default REFINE_BITS
            The number of digits read (64); the interval shrinks by ``2^k``.
        """
        self.prefix = (self.prefix << k) | source.bits(k)
        self.nbits += k

    @property
    def at_zero(self) -> bool:
        """Whether the interval still touches 0."""
        return self.prefix == 0

    @property
    def at_one(self) -> bool:
        """Whether the interval still touches 1."""
        return self.prefix == (1 << self.nbits) - 1


def uniform_index(n: int, source: RandomSource) -> int:
    """Uniform on ``{0, ..., n-1}``, exactly (rejection on ``ceil(log2 n)`` random bits).

    Parameters
    ----------
    n : int
        The number of outcomes, ``>= 1``.
    source : RandomSource
        Where the random bits come from (not ``None``).

    Returns
    -------
    int
        An index in ``[0, n)``, each with probability ``1 / n``.

    Raises
    ------
    ValueError
        ``n < 1``.
    """
    if n < 1:
        raise ValueError("uniform_index needs n >= 1")
    bits = max(1, (n - 1).bit_length())
    while True:
        i = source.bits(bits)
        if i < n:
            return i


def bernoulli_from_balls(probability: Callable[[int], Any], source: RandomSource) -> bool:
    """An exact Bernoulli(``p``) trial, ``p`` known only as arb balls.

    ``probability(prec)`` returns a python-flint ``arb`` ball that contains ``p`` when computed
    at ``prec`` bits. A lazy uniform ``U`` is compared with the ball: ``U < p`` is decided as
    soon as ``U``'s interval lies on one side of the ball; otherwise ``U`` reads more digits,
    or the ball is recomputed at twice the precision when it is wider than ``U``'s interval.
    ``P(U < p) = p`` exactly; the loop ends with probability 1.

    Parameters
    ----------
    probability : callable
        ``probability(prec) -> arb``, called with ``prec`` = 128, 256, ... bits as needed
        (possibly several times at one precision); ``p`` must lie in ``[0, 1]``.
    source : RandomSource
        Where the random bits come from (not ``None``).

    Returns
    -------
    bool
        ``True`` with probability ``p``.
    """
    from flint import arb, ctx

    u = LazyUniform.sample(source)
    prec = 128
    while True:
        p = probability(prec)
        old = ctx.prec
        ctx.prec = max(old, u.nbits + 16)  # U's end points exactly
        try:
            scale = arb(2) ** (-u.nbits)
            u_lo, u_hi = arb(u.prefix) * scale, arb(u.prefix + 1) * scale
            if u_hi <= p.lower():
                return True
            if u_lo >= p.upper():
                return False
        finally:
            ctx.prec = old
        if p.rad() * (1 << min(u.nbits, 4096)) > 1:  # the ball is wider than U's interval
            prec *= 2
        else:
            u.refine(source)
