"""Metrics: how far apart two inputs are (seeds 000, 001, 002).

Dataset metrics (:class:`SymmetricDistance`, :class:`ChangeOneDistance`) count records added,
removed or changed. Score-vector metrics (:class:`LInfDistance`, :class:`L1Distance`,
:class:`L2Distance`) measure how far a vector of scores moves between neighbouring datasets.

:class:`LInfDistance` carries seed 001's ``monotonic`` flag. The exponential mechanism's proof
needs the *range distance* ``max_{i,j} |(x_i - x'_i) - (x_j - x'_j)|`` (seed 001, eq. 6): it is
at most ``d_in`` when every score moves in the same direction (monotonic), and at most
``2 d_in`` otherwise. :meth:`LInfDistance.range_distance` performs that conversion, rounding up.
Seed 000 calls the range metric ``InfDifferenceDistance``; both seed names map onto
:class:`RangeDistance`, whose distances already are range distances.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from .arithmetic import Number
from .errors import MetricError

__all__ = [
    "ChangeOneDistance",
    "InfDifferenceDistance",
    "L1Distance",
    "L2Distance",
    "LInfDistance",
    "Metric",
    "RangeDistance",
    "SymmetricDistance",
]


def _check_distance(d_in: Number, name: str = "d_in") -> None:
    if isinstance(d_in, bool) or not isinstance(d_in, (int, float, Fraction)):
        raise MetricError(f"{name} must be a number, got {type(d_in).__name__}")
    if isinstance(d_in, float) and math.isnan(d_in):
        raise MetricError(f"{name} must not be NaN")
    if d_in < 0:
        raise MetricError(f"{name} must be non-negative, got {d_in!r}")


class Metric:
    """A distance between inputs. Subclasses are frozen dataclasses compared by value."""

    def validate(self, d_in: Number) -> None:
        """Raise :class:`MetricError` unless ``d_in`` is a non-negative number.

        Parameters
        ----------
        d_in : int, float or Fraction
            An input distance: not a bool, not NaN, ``>= 0`` (``inf`` is accepted).
        """
        _check_distance(d_in)


@dataclass(frozen=True)
class SymmetricDistance(Metric):
    """Size of the symmetric difference of two datasets (add/remove neighbours, d = 1)."""

    def validate(self, d_in: Number) -> None:
        """Raise :class:`MetricError` unless ``d_in`` is a non-negative ``int``.

        Parameters
        ----------
        d_in : int
            The number of records added or removed (a Python ``int``, not a bool).
        """
        _check_distance(d_in)
        if not isinstance(d_in, int):
            raise MetricError(f"d_in under SymmetricDistance must be an int, got {d_in!r}")


@dataclass(frozen=True)
class ChangeOneDistance(Metric):
    """Number of records changed between two datasets of equal size (change-one, d = 1)."""

    def validate(self, d_in: Number) -> None:
        """Raise :class:`MetricError` unless ``d_in`` is a non-negative ``int``.

        Parameters
        ----------
        d_in : int
            The number of records changed (a Python ``int``, not a bool).
        """
        _check_distance(d_in)
        if not isinstance(d_in, int):
            raise MetricError(f"d_in under ChangeOneDistance must be an int, got {d_in!r}")


@dataclass(frozen=True)
class L1Distance(Metric):
    """Sum of absolute differences of two vectors (the Laplace mechanism's sensitivity)."""


@dataclass(frozen=True)
class L2Distance(Metric):
    """Euclidean distance of two vectors (the Gaussian mechanism's sensitivity)."""


@dataclass(frozen=True)
class LInfDistance(Metric):
    """Largest absolute difference of two score vectors, with seed 001's monotonic flag.

    ``monotonic=True`` promises that between neighbours every score moves in the same
    direction, so the range distance equals the L-infinity distance.
    """

    monotonic: bool = False

    def range_distance(self, d_in: Number) -> Number:
        """Bound on the range distance of two vectors ``d_in``-close in this metric.

        ``d_in`` when monotonic, else ``2 * d_in`` (seed 001, Section 1.1), computed exactly for
        ints and Fractions and rounded up for floats (doubling a float is exact or overflows
        to ``inf``, which is an upper bound).

        Parameters
        ----------
        d_in : int, float or Fraction
            The L-infinity distance of the two score vectors, ``>= 0`` (validated).

        Returns
        -------
        int, float or Fraction
            ``d_in`` (monotonic) or ``2 * d_in``, of the type of ``d_in``.

        Raises
        ------
        MetricError
            ``d_in`` is not a non-negative number.
        """
        self.validate(d_in)
        if self.monotonic:
            return d_in
        return 2 * d_in


@dataclass(frozen=True)
class RangeDistance(LInfDistance):
    """Seed 001's RangeDistance (seed 000: InfDifferenceDistance).

    A distance here already bounds ``max_{i,j} |(x_i - x'_i) - (x_j - x'_j)|``, so
    :meth:`range_distance` is the identity.
    """

    monotonic: bool = True

    def __post_init__(self) -> None:
        if not self.monotonic:
            raise MetricError("RangeDistance distances are range distances: monotonic is True")

    def __repr__(self) -> str:
        return "RangeDistance()"


InfDifferenceDistance = RangeDistance
