"""Domains: the sets of values a transformation or measurement accepts (seeds 000, 001).

``atom_domain(int)`` and ``atom_domain(float, nan=...)`` describe single values,
``vector_domain(atom, size=None)`` describes vectors of them. A float domain that admits NaN is
a distinct type (:class:`NaNFloatDomain`) from one that does not (:class:`FloatDomain`): the
mechanisms of seed 001 require a non-NaN domain and refuse the NaN-admitting type at
construction ("input domain must be non-nan", seed 001, Function, line 7).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .errors import DomainError

__all__ = [
    "AnyDomain",
    "AtomDomain",
    "Domain",
    "FloatDomain",
    "IntDomain",
    "NaNFloatDomain",
    "VectorDomain",
    "atom_domain",
    "holds_number",
    "kept_numbers",
    "vector_domain",
]

_INT_KINDS = "iu"
_FLOAT_KINDS = "f"


class Domain:
    """A set of values, with a membership test."""

    def member(self, x: Any) -> bool:  # pragma: no cover - abstract
        """Whether ``x`` belongs to this domain.

        Parameters
        ----------
        x : object
            The value to test (a single value or a whole dataset, by the domain).

        Returns
        -------
        bool
            ``True`` when ``x`` is a member; never raises for a non-member.
        """
        raise NotImplementedError


@dataclass(frozen=True)
class AnyDomain(Domain):
    """Every value: the domain of datasets handled by a user's own score function.

    ``description`` documents what the caller promises (for example "rows of a CSV file").
    """

    description: str = "any value"

    def member(self, x: Any) -> bool:
        """Whether ``x`` belongs to the domain: always.

        Parameters
        ----------
        x : object
            Any value (not inspected).

        Returns
        -------
        bool
            ``True``.
        """
        return True


@dataclass(frozen=True)
class AtomDomain(Domain):
    """Single numbers of one kind, optionally within closed ``bounds``."""

    bounds: tuple[float, float] | tuple[int, int] | None = None

    carrier: type = object
    nan: bool = False

    def _kind_ok(self, x: Any) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def member(self, x: Any) -> bool:
        """Whether ``x`` is one number of this domain's kind, within ``bounds``.

        Parameters
        ----------
        x : object
            A scalar: a Python or NumPy integer (``IntDomain``), or a Python or NumPy float or
            integer (float domains). Bools are never members.

        Returns
        -------
        bool
            ``False`` for another kind, for NaN unless ``nan``, and for a value (infinities
            included) outside the closed ``bounds``.
        """
        if not self._kind_ok(x):
            return False
        if isinstance(x, (float, np.floating)) and math.isnan(float(x)):
            return self.nan
        if self.bounds is not None:
            lo, hi = self.bounds
            return bool(lo <= x <= hi)
        return True

    def member_array(self, arr: np.ndarray[Any, Any]) -> bool:
        """Vectorised membership of every element of a NumPy array.

        Parameters
        ----------
        arr : numpy.ndarray
            The values, of any shape. Its dtype must pass :meth:`dtype_ok`: unlike
            :meth:`member`, an integer array is never a member of a float domain.

        Returns
        -------
        bool
            ``True`` when every element is a member: no NaN unless ``nan``, and every other
            element (infinities included) within ``bounds``. An empty array of a right dtype is
            a member.
        """
        if not self.dtype_ok(arr.dtype):
            return False
        if arr.dtype.kind in _FLOAT_KINDS and not self.nan and bool(np.isnan(arr).any()):
            return False
        if self.bounds is not None and arr.size:
            finite = kept_numbers(arr) if arr.dtype.kind in _FLOAT_KINDS else arr
            lo, hi = self.bounds
            if finite.size and (finite.min() < lo or finite.max() > hi):
                return False
        return True

    def dtype_ok(self, dtype: np.dtype[Any]) -> bool:  # pragma: no cover - abstract
        """Whether arrays of ``dtype`` hold values of this domain's kind.

        Parameters
        ----------
        dtype : numpy.dtype
            The dtype of an array.

        Returns
        -------
        bool
            ``True`` when the dtype's kind fits the domain (bounds and NaN are not checked).
        """
        raise NotImplementedError


@dataclass(frozen=True)
class IntDomain(AtomDomain):
    """Integers (Python ``int`` or NumPy integer types)."""

    carrier: type = int

    def _kind_ok(self, x: Any) -> bool:
        return isinstance(x, (int, np.integer)) and not isinstance(x, bool)

    def dtype_ok(self, dtype: np.dtype[Any]) -> bool:
        """Whether arrays of ``dtype`` hold integers (signed or unsigned, not bool).

        Parameters
        ----------
        dtype : numpy.dtype
            The dtype of an array.

        Returns
        -------
        bool
            ``True`` for the kinds ``"i"`` and ``"u"``.
        """
        return dtype.kind in _INT_KINDS

    def __repr__(self) -> str:
        return f"atom_domain(int, bounds={self.bounds!r})"


@dataclass(frozen=True)
class FloatDomain(AtomDomain):
    """Floats that are never NaN (infinities allowed unless bounds exclude them)."""

    carrier: type = float

    def _kind_ok(self, x: Any) -> bool:
        return isinstance(x, (float, np.floating, int, np.integer)) and not isinstance(x, bool)

    def dtype_ok(self, dtype: np.dtype[Any]) -> bool:
        """Whether arrays of ``dtype`` hold floats (integer dtypes do not pass).

        Parameters
        ----------
        dtype : numpy.dtype
            The dtype of an array.

        Returns
        -------
        bool
            ``True`` for the kind ``"f"`` (float16 to longdouble).
        """
        return dtype.kind in _FLOAT_KINDS

    def __repr__(self) -> str:
        return f"atom_domain(float, nan=False, bounds={self.bounds!r})"


@dataclass(frozen=True)
class NaNFloatDomain(FloatDomain):
    """Floats including NaN. A distinct type: seed 001's mechanisms refuse it."""

    nan: bool = True

    def __repr__(self) -> str:
        return f"atom_domain(float, nan=True, bounds={self.bounds!r})"


def atom_domain(
    T: type = float,
    nan: bool | None = None,
    bounds: tuple[Any, Any] | None = None,
) -> AtomDomain:
    """The domain of single values of type ``T`` (``int`` or ``float``).

    ``nan`` applies to floats only and defaults to ``False`` (NaN is not a member).
    ``bounds=(lo, hi)`` restricts members to the closed interval.

    Parameters
    ----------
    T : type, default float
        ``int`` or ``float``; a NumPy integer or floating type stands for them.
    nan : bool or None, default None
        Whether NaN is a member (floats only: ``True`` with ``int`` raises); ``None`` means
        ``False``.
    bounds : tuple of two numbers or None, default None
        Closed ``(lower, upper)`` bounds with ``lower <= upper``, never NaN (infinities are
        allowed); ``None``: no bounds.

    Returns
    -------
    AtomDomain
        An :class:`IntDomain`, a :class:`FloatDomain` or, for ``nan=True``, a
        :class:`NaNFloatDomain`.

    Raises
    ------
    DomainError
        Malformed or NaN bounds, ``lower > upper``, ``nan=True`` with ``int``, or another
        ``T``.
    """
    if bounds is not None:
        if not (isinstance(bounds, tuple) and len(bounds) == 2):
            raise DomainError("bounds must be a (lower, upper) tuple")
        lo, hi = bounds
        if any(isinstance(b, float) and math.isnan(b) for b in bounds):
            raise DomainError("bounds must not be NaN")
        if not lo <= hi:
            raise DomainError(f"bounds must satisfy lower <= upper, got {bounds!r}")
    if T is int or (isinstance(T, type) and issubclass(T, np.integer)):
        if nan:
            raise DomainError("nan=True applies to float domains only; T is int")
        return IntDomain(bounds=bounds)
    if T is float or (isinstance(T, type) and issubclass(T, np.floating)):
        if nan:
            return NaNFloatDomain(bounds=bounds)
        return FloatDomain(bounds=bounds)
    raise DomainError(f"T must be int or float, got {T!r}")


@dataclass(frozen=True)
class VectorDomain(Domain):
    """Vectors whose elements belong to ``element_domain``, of length ``size`` if given."""

    element_domain: AtomDomain
    size: int | None = None

    def member(self, x: Any) -> bool:
        """Whether ``x`` is a vector of ``element_domain`` values, of length ``size`` if set.

        Parameters
        ----------
        x : object
            A 1-d NumPy array (checked with :meth:`AtomDomain.member_array`) or a sequence
            other than ``str`` and ``bytes`` (checked element by element).

        Returns
        -------
        bool
            ``True`` when ``x`` has the right length and every element is a member.
        """
        if isinstance(x, np.ndarray):
            if x.ndim != 1:
                return False
            if self.size is not None and x.shape[0] != self.size:
                return False
            return self.element_domain.member_array(x)
        if isinstance(x, (str, bytes)) or not isinstance(x, Sequence):
            return False
        if self.size is not None and len(x) != self.size:
            return False
        return all(self.element_domain.member(v) for v in x)

    def __repr__(self) -> str:
        return f"vector_domain({self.element_domain!r}, size={self.size!r})"


def vector_domain(atom: AtomDomain, size: int | None = None) -> VectorDomain:
    """The domain of vectors of ``atom`` values, of fixed length ``size`` when given.

    Parameters
    ----------
    atom : AtomDomain
        The domain of each element (from :func:`atom_domain`).
    size : int or None, default None
        The length every member has (a non-negative int); ``None``: any length.

    Returns
    -------
    VectorDomain
        The domain.

    Raises
    ------
    DomainError
        ``atom`` is not an atom domain, or ``size`` is not a non-negative int or ``None``.
    """
    if not isinstance(atom, AtomDomain):
        raise DomainError(f"atom must be an atom domain, got {atom!r}")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 0):
        raise DomainError(f"size must be a non-negative int or None, got {size!r}")
    return VectorDomain(atom, size)


def holds_number(values: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
    """Which rows of ``values`` hold a number (:func:`kept_numbers`), row by row.

    Parameters
    ----------
    values : numpy.ndarray of float64
        Values already read, one per row (a 1-d array).

    Returns
    -------
    numpy.ndarray of bool
        Of the shape of ``values``: ``True`` where the value is not NaN (infinities are
        numbers).
    """
    out: npt.NDArray[np.bool_] = ~np.isnan(values)
    return out


def kept_numbers(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The rows of ``values`` that hold a number, in their order (a new array).

    The one definition of a number for values already read, as
    :func:`dpselect.data.values.number_kept_sql` is for queries: NaN (either sign) is not a
    number; the infinities are (clamped where bounds apply). Row by row: a row's fate
    depends on that row alone (docs/contribution_bounding.md, "What a row's fate may depend
    on").

    Parameters
    ----------
    values : numpy.ndarray of float64
        Values already read, one per row (a 1-d array).

    Returns
    -------
    numpy.ndarray of float64
        A new 1-d array of the values that are not NaN, infinities included, in row order.
    """
    out: npt.NDArray[np.float64] = values[holds_number(values)]
    return out
