"""Calibration: find the parameter that meets a privacy target exactly.

:func:`binary_search` finds the boundary of a monotone predicate over ints or floats. Floats are
searched over their ordered bit patterns, so the answer is the exact float next to the boundary
on the passing side: it always passes the predicate, and its neighbour toward the boundary fails.
:func:`binary_search_param` uses it to find, for example, the smallest ``scale`` (or largest
``epsilon``) whose measurement passes ``check(d_in, d_out)``.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import Any, TypeVar

from .errors import CalibrationError, DPSelectError

__all__ = ["binary_search", "binary_search_param"]

_SIGN = 1 << 63

Searched = TypeVar("Searched", int, float)
"""The type searched: ``int`` or ``float``."""


def _float_key(x: float) -> int:
    bits: int = struct.unpack("<q", struct.pack("<d", x))[0]
    return bits if bits >= 0 else -(bits & (_SIGN - 1))


def _key_float(k: int) -> float:
    bits = k if k >= 0 else ((-k) | _SIGN) - (1 << 64)
    value: float = struct.unpack("<d", struct.pack("<q", bits))[0]
    return value


def _safe(predicate: Callable[[Any], bool], x: Any) -> bool:
    try:
        return bool(predicate(x))
    except DPSelectError:
        return False


def _default_probes(T: type) -> list[Any]:
    if T is int:
        return [0] + [1 << e for e in range(0, 63)]
    return [0.0] + [math.ldexp(1.0, e) for e in range(-80, 81)]


def binary_search(
    predicate: Callable[[Searched], bool],
    bounds: tuple[Searched, Searched] | None = None,
    T: type[Searched] | None = None,
) -> Searched:
    """The passing value nearest the boundary of a monotone ``predicate``.

    ``predicate`` must be monotone over ``bounds`` (passing on one side of a boundary,
    failing on the other; either side may pass). A predicate that raises a dpselect error
    counts as failing. Without ``bounds``, powers of two from 2^-80 to 2^80 (or 0 to 2^62 for
    ints) are probed for a change of outcome. Raises :class:`CalibrationError` when the
    predicate passes nowhere or everywhere in the range.

    Parameters
    ----------
    predicate : callable
        ``predicate(value) -> bool``, monotone in ``value``.
    bounds : tuple or None, default None
        ``(lower, upper)``, ``lower <= upper``, not NaN: the closed range searched; the
        predicate must pass at exactly one end. ``None``: found by probing powers of two.
    T : type or None, default None
        ``int`` or ``float`` (not a NumPy type): the type searched. ``None``: the type of
        ``bounds[0]``, or ``float`` without bounds.

    Returns
    -------
    int or float
        The passing value next to the boundary: its neighbour (the next int, or the adjacent
        float) toward the failing end fails.

    Raises
    ------
    CalibrationError
        Bad ``T`` or ``bounds``, or no change of outcome in the range.
    """
    kind: type = T if T is not None else type(bounds[0]) if bounds is not None else float
    if kind not in (int, float):
        raise CalibrationError(f"T must be int or float, got {kind!r}")
    if bounds is None:
        probes = _default_probes(kind)
        outcomes = [_safe(predicate, p) for p in probes]
        flips = [i for i in range(len(probes) - 1) if outcomes[i] != outcomes[i + 1]]
        if not flips:
            raise CalibrationError(
                "no parameter between the probed bounds changes the outcome of the check; "
                "pass bounds explicitly"
            )
        bounds = (probes[flips[0]], probes[flips[0] + 1])
    lo: Any
    hi: Any
    lo, hi = bounds
    if kind is float:
        lo, hi = float(lo), float(hi)
        if math.isnan(lo) or math.isnan(hi):
            raise CalibrationError("bounds must not be NaN")
    if not lo <= hi:
        raise CalibrationError(f"bounds must satisfy lower <= upper, got {bounds!r}")
    pass_lo, pass_hi = _safe(predicate, lo), _safe(predicate, hi)
    if pass_lo and pass_hi:
        raise CalibrationError(f"the predicate passes at both bounds {bounds!r}: no boundary")
    if not pass_lo and not pass_hi:
        raise CalibrationError(f"the predicate fails at both bounds {bounds!r}")
    to_key: Callable[[Any], int] = _float_key if kind is float else int
    from_key: Callable[[int], Any] = _key_float if kind is float else int
    k_lo, k_hi = to_key(lo), to_key(hi)
    # Invariant: outcome(k_lo) == pass_lo, outcome(k_hi) == pass_hi, they differ.
    while k_hi - k_lo > 1:
        mid = (k_lo + k_hi) // 2
        if _safe(predicate, from_key(mid)) == pass_lo:
            k_lo = mid
        else:
            k_hi = mid
    found: Searched = from_key(k_lo if pass_lo else k_hi)
    return found


def binary_search_param(
    make_chain: Callable[[Searched], Any],
    d_in: Any,
    d_out: Any,
    *,
    bounds: tuple[Searched, Searched] | None = None,
    T: type[Searched] | None = None,
) -> Searched:
    """The parameter nearest the boundary for which ``make_chain(p).check(d_in, d_out)`` holds.

    For a scale this is the smallest passing scale; for an epsilon parameter, the largest.
    The returned value is verified once more before it is returned.

    Parameters
    ----------
    make_chain : callable
        ``make_chain(param)`` builds a Transformation or Measurement with parameter ``param``;
        its ``check`` must be monotone in ``param``.
    d_in : int, float or Fraction
        The input distance (for example 1 neighbouring record).
    d_out : object
        The privacy target, in the form of the measurement's output measure.
    bounds : tuple or None, default None
        The range of ``param`` searched, as for :func:`binary_search`.
    T : type or None, default None
        ``int`` or ``float``, as for :func:`binary_search`.

    Returns
    -------
    int or float
        The passing parameter nearest the boundary.

    Raises
    ------
    CalibrationError
        As for :func:`binary_search`.
    """

    def predicate(param: Any) -> bool:
        return bool(make_chain(param).check(d_in, d_out))

    param = binary_search(predicate, bounds=bounds, T=T)
    if not predicate(param):  # pragma: no cover - guarded by the invariant above
        raise CalibrationError("calibrated parameter does not pass its check")
    return param
