"""Privacy measures: the form of a privacy loss ``d_out`` (seeds 001, 002, 004).

- :class:`MaxDivergence`: pure ``epsilon``-DP (seed 001's output measure).
- :class:`ZeroConcentratedDivergence`: ``rho``-zCDP (seed 004, Bun and Steinke 2016).
- :class:`RenyiDivergence`: a Renyi-DP curve ``alpha -> epsilon(alpha)`` (Mironov 2017).
- :class:`Approximate`: ``(epsilon, delta)`` built on :class:`MaxDivergence`.

Each measure says how to compare a computed loss with a target: ``compare(loss, target)`` is
``True`` when ``loss`` is no larger than ``target``, the test behind ``check``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .errors import MeasureError

__all__ = [
    "Approximate",
    "MaxDivergence",
    "Measure",
    "RenyiDivergence",
    "ZeroConcentratedDivergence",
]


def _scalar(x: Any, name: str) -> float | Fraction | int:
    if isinstance(x, bool) or not isinstance(x, (int, float, Fraction)):
        raise MeasureError(f"{name} must be a number, got {type(x).__name__}")
    if isinstance(x, float) and math.isnan(x):
        raise MeasureError(f"{name} must not be NaN")
    if x < 0:
        raise MeasureError(f"{name} must be non-negative, got {x!r}")
    return x


class Measure:
    """A privacy measure. Subclasses are frozen dataclasses compared by value."""

    def compare(self, loss: Any, target: Any) -> bool:  # pragma: no cover - abstract
        """Whether the privacy ``loss`` is no larger than ``target``.

        Parameters
        ----------
        loss : object
            A computed privacy loss (a map's value) in this measure's form.
        target : object
            The privacy target ``d_out``, in the same form.

        Returns
        -------
        bool
            ``True`` when ``loss`` is within ``target``.

        Raises
        ------
        MeasureError
            ``loss`` or ``target`` is not of the measure's form.
        """
        raise NotImplementedError


@dataclass(frozen=True)
class MaxDivergence(Measure):
    """Pure differential privacy: ``d_out`` is ``epsilon >= 0``."""

    def compare(self, loss: Any, target: Any) -> bool:
        """Whether the ``epsilon`` of ``loss`` is at most that of ``target``.

        Parameters
        ----------
        loss, target : int, float or Fraction
            The computed ``epsilon`` and the target ``epsilon``: non-negative, not NaN
            (``inf`` allowed); anything else raises :class:`MeasureError`.

        Returns
        -------
        bool
            ``loss <= target``.
        """
        return bool(_scalar(loss, "privacy loss") <= _scalar(target, "d_out"))


@dataclass(frozen=True)
class ZeroConcentratedDivergence(Measure):
    """Zero-concentrated DP: ``d_out`` is ``rho >= 0``."""

    def compare(self, loss: Any, target: Any) -> bool:
        """Whether the ``rho`` of ``loss`` is at most that of ``target``.

        Parameters
        ----------
        loss, target : int, float or Fraction
            The computed ``rho`` and the target ``rho``: non-negative, not NaN (``inf``
            allowed); anything else raises :class:`MeasureError`.

        Returns
        -------
        bool
            ``loss <= target``.
        """
        return bool(_scalar(loss, "privacy loss") <= _scalar(target, "d_out"))


@dataclass(frozen=True)
class RenyiDivergence(Measure):
    """Renyi DP: the loss is a curve ``alpha -> epsilon``; a target is ``(alpha, epsilon)``."""

    def compare(self, loss: Any, target: Any) -> bool:
        """Whether the curve ``loss`` is within ``epsilon`` at the target's order ``alpha``.

        Parameters
        ----------
        loss : callable
            The computed curve ``alpha -> epsilon(alpha)``; its value at ``alpha`` must be a
            non-negative number.
        target : tuple
            ``(alpha, epsilon)``: an order ``alpha > 1`` and a non-negative ``epsilon``.

        Returns
        -------
        bool
            ``loss(alpha) <= epsilon``.

        Raises
        ------
        MeasureError
            ``loss`` is not callable, ``target`` is not a pair, or ``alpha <= 1``.
        """
        if not callable(loss):
            raise MeasureError("a Renyi privacy loss must be a curve alpha -> epsilon")
        if not (isinstance(target, tuple) and len(target) == 2):
            raise MeasureError("d_out under RenyiDivergence must be an (alpha, epsilon) tuple")
        alpha, eps = target
        if not alpha > 1:
            raise MeasureError(f"alpha must be > 1, got {alpha!r}")
        curve: Callable[[Any], Any] = loss
        return bool(_scalar(curve(alpha), "privacy loss") <= _scalar(eps, "epsilon"))


@dataclass(frozen=True)
class Approximate(Measure):
    """``(epsilon, delta)``-DP over an inner measure (here :class:`MaxDivergence`)."""

    inner: Measure = MaxDivergence()

    def __post_init__(self) -> None:
        if not isinstance(self.inner, MaxDivergence):
            raise MeasureError("Approximate is defined over MaxDivergence only")

    def compare(self, loss: Any, target: Any) -> bool:
        """Whether ``loss`` is within ``target`` in both ``epsilon`` and ``delta``.

        Parameters
        ----------
        loss, target : tuple
            ``(epsilon, delta)`` pairs, the computed loss and the target: ``epsilon`` as for
            :class:`MaxDivergence`, ``delta`` a number in ``[0, 1]``.

        Returns
        -------
        bool
            ``True`` when both the ``epsilon`` and the ``delta`` of ``loss`` are at most
            those of ``target``.

        Raises
        ------
        MeasureError
            A value is not an ``(epsilon, delta)`` pair, or a number is out of range.
        """
        for name, value in (("privacy loss", loss), ("d_out", target)):
            if not (isinstance(value, tuple) and len(value) == 2):
                raise MeasureError(f"{name} under Approximate must be an (epsilon, delta) tuple")
        eps, delta = loss
        t_eps, t_delta = target
        if _scalar(t_delta, "delta") > 1 or _scalar(delta, "delta") > 1:
            raise MeasureError("delta must be at most 1")
        return self.inner.compare(eps, t_eps) and bool(delta <= t_delta)
