"""Strict JSON (RFC 8259) for every ``to_dict`` and every ``--json`` output.

Python's ``json.dumps`` writes ``NaN`` and ``Infinity`` by default, which strict parsers
(JavaScript's ``JSON.parse``, Go, jq, most databases) reject. dpselect maps every
non-finite number to ``null`` ("no value": a quantity that does not apply or was not
measured) and writes with ``allow_nan=False``, so that a stray NaN fails loudly in tests
instead of reaching a user's parser. Light: no NumPy import (NumPy scalars are recognised
through the :mod:`numbers` ABCs they register with).
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

__all__ = ["json_dict", "json_ready", "strict_dumps"]


def json_ready(value: Any) -> Any:
    """``value`` with every number a JSON number and every non-finite one ``None``.

    Parameters
    ----------
    value : object
        Nested dicts, lists and tuples of numbers, strings, booleans and ``None`` (NumPy
        scalars and :class:`~fractions.Fraction` included).

    Returns
    -------
    object
        The same structure, lists for tuples, ``int`` for integers, a finite ``float`` or
        ``None`` for every other real number; other values unchanged.
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, Mapping):
        return {key: json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(item) for item in value]
    if type(value).__name__ == "bool_":  # numpy.bool_ is not a numbers.Integral
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, (numbers.Real, Fraction)):
        number = float(value)
        return number if math.isfinite(number) else None
    return value


def json_dict(value: Mapping[str, Any]) -> dict[str, Any]:
    """A result's dictionary as :func:`json_ready` makes it (what every ``to_dict`` returns).

    Parameters
    ----------
    value : Mapping
        The result's fields by name.

    Returns
    -------
    dict
        A new dict of the same keys, each value passed through :func:`json_ready`.
    """
    return {key: json_ready(item) for key, item in value.items()}


def strict_dumps(value: Any) -> str:
    """``value`` as strict JSON text (:func:`json_ready`, sorted keys, ``allow_nan=False``).

    Parameters
    ----------
    value : object
        As for :func:`json_ready`; mapping keys must be strings (or sortable JSON keys).

    Returns
    -------
    str
        One line of JSON text with sorted keys; never ``NaN`` or ``Infinity``.

    Raises
    ------
    TypeError
        A value has no JSON form, or the keys of a mapping cannot be sorted.
    """
    return json.dumps(json_ready(value), sort_keys=True, allow_nan=False)
