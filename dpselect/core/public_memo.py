"""Answers of functions of public parameters, kept between releases.

A release rebuilds the same public constants many times (the joint quantile mechanism's plans,
its accuracy statements, the sorted levels): :func:`kept` keeps a function's answers for the
argument lists seen last, keyed by :func:`public_key`, which tells apart exactly what the
function could tell apart (each number with its type, floats by their bits). Only public
parameters are ever keys: a key never holds data, and a function whose arguments have no key
(arrays, frames) is simply called.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from fractions import Fraction
from typing import Any, ParamSpec, TypeVar

import numpy as np

__all__ = ["Keyed", "forget_kept", "kept", "public_key"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


class Keyed:
    """Arguments held under a key of their public values (:func:`public_key`): what
    ``functools.lru_cache`` hashes and compares in their place."""

    __slots__ = ("args", "key")

    def __init__(self, key: tuple[Any, ...], args: tuple[Any, ...]) -> None:
        self.key, self.args = key, args

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Keyed) and self.key == other.key


def public_key(value: Any) -> Any:
    """A hashable key that equals another's only for the same public parameters: each number
    with its type (``1``, ``1.0`` and ``True`` apart), floats by their bits (``-0.0`` apart
    from ``0.0``), Fractions by numerator and denominator (cheaper to hash than the
    Fraction), sequences item by item; ``None`` for anything else (not kept).

    Parameters
    ----------
    value : object
        A public parameter: ``None``, a ``bool``, ``int``, ``str``, ``float`` (or
        ``numpy.float64``), ``Fraction``, or a ``tuple`` or ``list`` of these (nested).

    Returns
    -------
    tuple or None
        The key (the exact type comes first, so a tuple and a list differ), or ``None`` when
        ``value`` or any item in it has no key (for example an array or a NumPy integer).
    """
    kind = type(value)
    if kind is Fraction:
        return (kind, value.numerator, value.denominator)
    if kind is float or kind is np.float64:
        return (kind, float(value).hex())
    if kind is int or kind is bool or kind is str or value is None:
        return (kind, value)
    if kind is tuple or kind is list:
        items = []
        for item in value:
            if type(item) is Fraction:  # the levels: no call a level
                items.append((Fraction, item.numerator, item.denominator))
                continue
            k = public_key(item)
            if k is None:
                return None
            items.append(k)
        return (kind, tuple(items))
    return None


#: The ``cache_clear`` of every :func:`kept` function (:func:`forget_kept`).
_KEPT: list[Callable[[], None]] = []


def forget_kept() -> None:
    """Drop every answer :func:`kept` holds: for code that changes what a kept function
    computes (a test that patches the mechanism's constants), before and after the change."""
    for clear in _KEPT:
        clear()


def kept(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """``function`` of public parameters, its answers kept for the 256 argument lists seen
    last (:func:`public_key`: the same answer for the same parameters; keyword arguments, or
    arguments without a key, are not kept). A list answer is copied on the way out, so that a
    caller that changes it changes no kept answer. Errors are raised as by ``function``
    (never kept).

    Parameters
    ----------
    function : callable
        A pure function of public parameters (its answer depends on its arguments only).

    Returns
    -------
    callable
        A wrapper with ``function``'s signature and metadata (:func:`functools.wraps`).
    """

    @functools.lru_cache(maxsize=256)
    def call(keyed: Keyed) -> _R:
        return function(*keyed.args)  # type: ignore[call-arg]

    _KEPT.append(call.cache_clear)

    @functools.wraps(function)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        key = None if kwargs else public_key(args)
        if key is None:
            return function(*args, **kwargs)
        out = call(Keyed(key, args))
        return list(out) if isinstance(out, list) else out  # type: ignore[return-value]

    return wrapper
