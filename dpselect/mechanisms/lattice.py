"""The power-of-two lattice on which the Laplace and Gaussian mechanisms release values.

Values are never released through a float inverse CDF (Mironov 2012: such outputs are porous).
Instead a value ``x`` is moved to the lattice ``2^k Z``, integer noise is added there by the
exact discrete samplers (``dpselect.sampling.discrete``), and the lattice point is converted
back to a float. Every step after the noise is post-processing of an exactly sampled lattice
point, so the float conversion cannot weaken the guarantee.

Granularity rule (public, from the scale only):

- **int data**: the integer lattice, ``k = 0``. Inputs already lie on it: no rounding, no
  change of sensitivity.
- **float data**: ``k = floor(log2(scale)) - 30``, the largest power of two with
  ``2^k <= scale * 2^-30``. The noise parameter on the lattice is ``scale / 2^k`` in
  ``[2^30, 2^31)``, where the samplers' float fast path decides almost every draw.

Rounding a float to the nearest lattice point (ties to even) moves it by at most ``2^k / 2``,
so by the triangle inequality two inputs ``x, x'`` of dimension ``d`` satisfy

- ``|| r(x) - r(x') ||_1 <= || x - x' ||_1 + d 2^k``,
- ``|| r(x) - r(x') ||_2 <= || x - x' ||_2 + sqrt(d) 2^k``,

which is the sensitivity the privacy maps use (:func:`rounded_sensitivity`). Because
``2^k <= scale 2^-30``, the added loss is at most ``d 2^-30`` in epsilon for the Laplace
mechanism. A sensitivity of 0 stays 0 (equal inputs round to equal points).

Before rounding, float values are clamped to the domain's bounds (if any) and then to the
finite float range: ``+-inf`` (members of an unbounded float domain) become ``+-max float``.
Clamping to an interval is 1-Lipschitz in every coordinate, so it never increases an L1 or L2
distance: it costs no privacy and lets every member of the domain be released without an
error. Values too large for int64 arithmetic on the lattice take an exact Python-int path.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from ..core.arithmetic import sqrt_up
from ..core.domains import AtomDomain, FloatDomain, IntDomain, NaNFloatDomain, VectorDomain
from ..core.errors import DomainError, MetricError, ParameterError
from ..core.metrics import L1Distance, L2Distance, Metric

__all__ = [
    "GRANULARITY_BITS",
    "Lattice",
    "NoisePlan",
    "check_noise_metric",
    "granularity_exponent",
    "plan_noise",
    "rounded_sensitivity",
]

#: ``2^k <= scale * 2^-GRANULARITY_BITS`` for float data.
GRANULARITY_BITS = 30
_K_MIN = -1074  # 2^-1074 is the smallest positive float: the lattice must be representable
_INT_SAFE = float(1 << 62)  # |lattice index| below this: int64 sums with the noise cannot wrap
_I64_MAX = (1 << 63) - 1
_EXACT_INT = 1 << 53  # integers below this in magnitude are exact as float64
_FLOAT_MAX = sys.float_info.max

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64] | npt.NDArray[np.object_]


def _floor_log2(q: Fraction) -> int:
    """``floor(log2(q))`` for ``q > 0``, exactly."""
    e = q.numerator.bit_length() - q.denominator.bit_length()
    # 2^(e-1) < q < 2^(e+1): settle the one remaining step exactly.
    return e if q >= Fraction(2) ** e else e - 1


def granularity_exponent(scale: Fraction) -> int:
    """``k`` with ``2^k`` the largest power of two ``<= scale * 2^-30`` (float data).

    Raises :class:`ParameterError` when ``2^k`` would be below the smallest float
    (``scale < 2^-1044``).

    Parameters
    ----------
    scale : Fraction
        The noise scale (Laplace ``b`` or Gaussian ``sigma``), ``> 0``.

    Returns
    -------
    int
        The lattice exponent ``k = floor(log2(scale)) - 30``.
    """
    k = _floor_log2(scale) - GRANULARITY_BITS
    if k < _K_MIN:
        raise ParameterError(
            f"scale must be at least 2^{_K_MIN + GRANULARITY_BITS} for float data "
            f"(the lattice 2^k must be a float), got {float(scale)!r}"
        )
    return k


def rounded_sensitivity(d_in: Fraction, k: int | None, dimension: int, norm: int) -> Fraction:
    """A bound on the L1 (``norm=1``) or L2 (``norm=2``) distance after lattice rounding.

    ``k is None`` means no rounding (int data). ``d_in == 0`` stays 0. The L2 slack uses an
    upper bound of ``sqrt(dimension)``, so the result is never below the true bound.

    Parameters
    ----------
    d_in : Fraction
        The distance before rounding, ``>= 0``, in data units.
    k : int or None
        The lattice exponent; ``None`` for int data (no rounding).
    dimension : int
        The number of coordinates ``d``.
    norm : {1, 2}
        The norm of ``d_in`` and of the result.

    Returns
    -------
    Fraction
        ``d_in + d 2^k`` (L1) or ``d_in + sqrt(d) 2^k`` (L2); ``d_in`` when ``k`` is ``None`` or
        ``d_in == 0``.
    """
    if d_in == 0 or k is None:
        return d_in
    step = Fraction(2) ** k
    if norm == 1:
        return d_in + dimension * step
    root = math.isqrt(dimension)
    sqrt_d = Fraction(root) if root * root == dimension else Fraction(sqrt_up(dimension))
    return d_in + sqrt_d * step


def _atom_of(domain: Any, name: str = "input_domain") -> tuple[AtomDomain, int | None, bool]:
    """The atom domain, the fixed size (``None`` for a scalar or an unsized vector) and
    whether the domain is a vector domain; refuses NaN-admitting and non-numeric domains."""
    if isinstance(domain, VectorDomain):
        atom, size, is_vector = domain.element_domain, domain.size, True
    elif isinstance(domain, AtomDomain):
        atom, size, is_vector = domain, None, False
    else:
        raise DomainError(f"{name} must be an atom_domain or a vector_domain, got {domain!r}")
    if isinstance(atom, NaNFloatDomain):
        raise DomainError(f"{name} must be non-nan: use atom_domain(float, nan=False)")
    if not isinstance(atom, (IntDomain, FloatDomain)):
        raise DomainError(f"{name} must hold int or float atoms, got {atom!r}")
    return atom, size, is_vector


@dataclass(frozen=True)
class Lattice:
    """Moves data to the lattice ``2^k Z`` and lattice points back to the data's type.

    ``k is None`` is the integer lattice for int data (no rounding); otherwise data are
    floats rounded to multiples of ``2^k``. ``bounds`` are the domain's bounds: data are
    clamped to them first (the same fixed interval on every path, so that the whole map from
    data to lattice is one deterministic, coordinate-wise 1-Lipschitz-then-round function).
    """

    k: int | None
    bounds: tuple[Any, Any] | None = None

    @property
    def integer_data(self) -> bool:
        return self.k is None

    def _float_bounds(self) -> tuple[float, float]:
        lo, hi = self.bounds if self.bounds is not None else (-math.inf, math.inf)
        return max(float(lo), -_FLOAT_MAX), min(float(hi), _FLOAT_MAX)

    def _int_bounds(self) -> tuple[int | None, int | None]:
        if self.bounds is None:
            return None, None
        lo, hi = self.bounds
        lo_i = None if lo == -math.inf else math.ceil(lo)
        hi_i = None if hi == math.inf else math.floor(hi)
        return lo_i, hi_i

    # ---------------------------------------------------------------- data -> lattice
    def to_lattice(self, values: Any, size: int | None) -> Ints:
        """Lattice indices of ``values`` (a 1-D array-like of length ``size`` if given).

        Parameters
        ----------
        values : array-like
            The data: integers for the integer lattice, numbers (no NaN) otherwise.
        size : int or None
            The length ``values`` must have; ``None``: any length.

        Returns
        -------
        ndarray of int64 or object
            The lattice indices: the values clamped to the bounds and, for float data, divided
            by ``2^k`` and rounded to the nearest integer (ties to even); an object array of
            Python ints when they exceed the int64-safe range.
        """
        if self.k is None:
            return self._ints(values, size)
        return self._floats(values, size, self.k)

    def _ints(self, values: Any, size: int | None) -> Ints:
        arr = _as_vector(values, size)
        lo, hi = self._int_bounds()
        bounds_fit = all(b is None or -_I64_MAX <= b <= _I64_MAX for b in (lo, hi))
        if arr.dtype.kind in "iu" and _fits_int64(arr) and bounds_fit:
            out = arr.astype(np.int64)
            if lo is not None or hi is not None:
                out = np.clip(out, lo, hi)
            if _fits_int64(out, 1 << 62):
                return out
            return _objects([int(v) for v in out])
        if arr.dtype.kind not in "iuO":
            raise DomainError(f"data must be integers for an int domain, got dtype {arr.dtype}")
        ints = []
        for v in arr:
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise DomainError("data must be integers for an int domain")
            n = int(v)
            n = n if lo is None else max(n, lo)
            ints.append(n if hi is None else min(n, hi))
        return _objects(ints)

    def _floats(self, values: Any, size: int | None, k: int) -> Ints:
        arr = _as_vector(values, size)
        lo, hi = self._float_bounds()
        if arr.dtype.kind == "f" or (arr.dtype.kind in "iu" and _fits_int64(arr, 1 << 53)):
            x = arr.astype(np.float64)  # exact: widening, or integers below 2^53
            if np.isnan(x).any():
                raise DomainError("data are outside input_domain: NaN in a non-nan float domain")
            x = np.clip(x, lo, hi)  # also +-inf -> +-max float: a contraction
            with np.errstate(over="ignore", under="ignore"):
                t = np.ldexp(x, -k)  # exact, or overflowing (handled below), or far below 1/2
            if not x.size or float(np.abs(t).max()) < _INT_SAFE:
                return np.rint(t).astype(np.int64)  # nearest integer, ties to even: exact
            arr = x
        if arr.dtype.kind not in "iufO":
            raise DomainError(f"data must be numbers for a float domain, got dtype {arr.dtype}")
        step = Fraction(2) ** k
        return _objects([round(self._clamped_value(v, lo, hi) / step) for v in arr])

    @staticmethod
    def _clamped_value(v: Any, lo: float, hi: float) -> Fraction:
        """A member of a float domain as an exact rational, clamped like the fast path."""
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.number)):
            raise DomainError(f"data must be numbers for a float domain, got {type(v).__name__}")
        if isinstance(v, (float, np.floating)) and math.isnan(float(v)):
            raise DomainError("data are outside input_domain: NaN in a non-nan float domain")
        if v < lo:
            return Fraction(lo)
        if v > hi:
            return Fraction(hi)
        return Fraction(float(v)) if isinstance(v, (float, np.floating)) else Fraction(int(v))

    # ---------------------------------------------------------------- lattice -> data
    def from_lattice(self, z: Ints) -> npt.NDArray[Any]:
        """Data-typed values of lattice points ``z`` (post-processing of the exact sample).

        Parameters
        ----------
        z : ndarray of int64 or object
            Lattice indices (the noisy ones).

        Returns
        -------
        ndarray
            ``z`` itself for int data; for float data, the floats nearest ``z 2^k`` (``+-inf``
            beyond the float range).
        """
        if self.k is None:
            return z
        if z.dtype == object:
            return np.array([_lattice_float(int(v), self.k) for v in z], dtype=np.float64)
        with np.errstate(over="ignore", under="ignore"):
            return np.ldexp(z.astype(np.float64), self.k)


def add_noise(z: Ints, noise: Ints) -> Ints:
    """``z + noise`` exactly (int64 when it cannot wrap, Python ints otherwise)."""
    if z.dtype != object and noise.dtype != object and _fits_int64(noise, 1 << 62):
        return z + noise  # both below 2^62 in absolute value: no wrap-around
    return _objects([int(a) + int(b) for a, b in zip(z, noise, strict=True)])


def _fits_int64(arr: npt.NDArray[Any], limit: int = 1 << 63) -> bool:
    """Whether every element of an integer array has absolute value below ``limit``."""
    if not arr.size:
        return True
    return -limit < int(arr.min()) and int(arr.max()) < limit


def _objects(values: list[Any]) -> npt.NDArray[np.object_]:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _as_vector(values: Any, size: int | None) -> npt.NDArray[Any]:
    """``values`` as a 1-D array. A sequence holding an integer of magnitude ``>= 2^53``
    becomes an object array, so that NumPy never rounds it to a float on the way."""
    if isinstance(values, (str, bytes)):
        raise DomainError("data must be a number or a 1-D sequence of numbers")
    try:
        if isinstance(values, np.ndarray):
            arr = values
        else:
            items = list(values)
            big = any(isinstance(v, (int, np.integer)) and abs(int(v)) >= _EXACT_INT for v in items)
            arr = _objects(items) if big else np.asarray(items)
    except (TypeError, ValueError, OverflowError) as exc:
        raise DomainError(f"data cannot be read as a vector: {exc}") from None
    if arr.ndim != 1:
        raise DomainError(f"data must be one-dimensional, got shape {arr.shape}")
    if size is not None and arr.shape[0] != size:
        raise DomainError(f"data must have the domain's size {size}, got {arr.shape[0]}")
    return arr


def _lattice_float(n: int, k: int) -> float:
    """The float nearest ``n 2^k`` (+-inf beyond the float range)."""
    try:
        return float(Fraction(n) * Fraction(2) ** k)
    except OverflowError:
        return math.copysign(math.inf, n)


@dataclass(frozen=True)
class NoisePlan:
    """What a noise-adding mechanism needs to know about its input domain.

    ``dimension`` is the number of coordinates (1 for a scalar; the domain's size for a
    vector; ``None`` for an unsized vector of ints, where no rounding happens).
    """

    lattice: Lattice
    is_vector: bool
    size: int | None
    dimension: int | None

    @property
    def k(self) -> int | None:
        return self.lattice.k

    def sensitivity(self, d_in: Fraction, norm: int) -> Fraction:
        """Bound on the lattice distance of inputs ``d_in`` apart (:func:`rounded_sensitivity`).

        Parameters
        ----------
        d_in : Fraction
            The distance of two inputs in the input metric (L1 or L2).
        norm : {1, 2}
            The norm of ``d_in`` and of the result.

        Returns
        -------
        Fraction
            The distance after rounding, in data units (``d_in`` itself for int data).
        """
        if self.k is None:
            return d_in
        assert self.dimension is not None  # guaranteed by plan_noise for float data
        return rounded_sensitivity(d_in, self.k, self.dimension, norm)

    def release(self, sample: Callable[[int], Ints]) -> Callable[[Any], Any]:
        """The mechanism's function: data -> lattice -> ``+ sample(n)`` -> data type.

        ``sample(n)`` returns ``n`` exact integer noise values.

        Parameters
        ----------
        sample : callable (int) -> ndarray of int
            ``sample(n)``: ``n`` exact integer noise values, in lattice units.

        Returns
        -------
        callable
            The mechanism's function: a scalar or a vector of the domain to its noisy value of the
            same shape and type (int or float; an ndarray for vectors).
        """

        def function(data: Any) -> Any:
            values = data if self.is_vector else [data]
            z = self.lattice.to_lattice(values, self.size if self.is_vector else 1)
            out = self.lattice.from_lattice(add_noise(z, sample(len(z))))
            if self.is_vector:
                return out
            return int(out[0]) if self.lattice.integer_data else float(out[0])

        return function


def plan_noise(input_domain: Any, scale: Fraction) -> NoisePlan:
    """Choose the lattice for ``input_domain`` and a noise ``scale`` (see the module notes).

    Refuses (:class:`DomainError`) NaN-admitting or non-numeric domains and float vector
    domains without a size (the rounding slack ``d 2^k`` needs ``d``).

    Parameters
    ----------
    input_domain : Domain
        An ``atom_domain`` or ``vector_domain`` of int or non-NaN float atoms (float vectors
        with a size).
    scale : Fraction
        The noise scale, ``> 0``: it sets ``k`` for float data.

    Returns
    -------
    NoisePlan
        The lattice (``k = None`` for int data), the shape and the dimension.
    """
    atom, size, is_vector = _atom_of(input_domain)
    if isinstance(atom, IntDomain):
        return NoisePlan(Lattice(None, atom.bounds), is_vector, size, size if is_vector else 1)
    if is_vector and size is None:
        raise DomainError(
            "input_domain must have a known size for float vectors: rounding to the lattice "
            "adds up to size * 2^k to the sensitivity, so size must be public"
        )
    k = granularity_exponent(scale)
    return NoisePlan(Lattice(k, atom.bounds), is_vector, size, size if is_vector else 1)


def check_noise_metric(input_domain: Any, input_metric: Any, vector_metric: type[Metric]) -> Metric:
    """``input_metric`` if it fits: ``vector_metric`` for vectors; for a scalar either
    ``L1Distance`` or ``L2Distance`` (both are ``|x - x'|`` for one number).

    Parameters
    ----------
    input_domain : Domain
        The mechanism's input domain (an atom or a vector domain).
    input_metric : Metric
        The metric to check.
    vector_metric : type of Metric
        The metric class vectors need (``L1Distance`` for Laplace, ``L2Distance`` for
        Gaussian).

    Returns
    -------
    Metric
        ``input_metric``, unchanged.
    """
    is_vector = isinstance(input_domain, VectorDomain)
    allowed: tuple[type[Metric], ...] = (vector_metric,) if is_vector else (L1Distance, L2Distance)
    if type(input_metric) not in allowed:
        names = " or ".join(f"{m.__name__}()" for m in allowed)
        kind = "vector" if is_vector else "scalar"
        raise MetricError(f"input_metric must be {names} for a {kind} domain, got {input_metric!r}")
    metric: Metric = input_metric
    return metric
