"""The public checks of a quantile's arguments that need no table: the levels, ``epsilon``,
the confidence, the bounds or candidates, the resolution and the method, in the order each
route of a quantile makes them (:func:`check_release_arguments`,
:func:`check_release_arguments` with ``choose_rows=True`` where the rows per unit are chosen
privately, :func:`check_auto_bounds_arguments`, :func:`check_grouped_arguments`).

:func:`~dpselect.planning.quantile_request.quantile_request` runs them before anything is
opened; the recipes of :mod:`dpselect.recipes` run them again on the request they are given
(the same checks of the same values: the same result) and then check what needs the table's
schema (the column's type, the unit column, the groups).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..core.errors import ParameterError
from ..data.candidates import load_candidates
from ..mechanisms.quantile_continuous import check_bounds, check_resolution
from ..mechanisms.quantile_joint_parameters import MAX_JOINT_LEVELS
from ..mechanisms.quantile_recursive import recursive_depth
from ..mechanisms.quantile_score import quantile_fraction
from ..mechanisms.validate import check_confidence, check_int, check_user_epsilon
from .contributions import check_auto_fraction
from .epsilon_range import check_epsilon_range

__all__ = [
    "JOINT_AUTO_MAX_LEVELS",
    "ReleaseArguments",
    "check_auto_bounds_arguments",
    "check_grouped_arguments",
    "check_release_arguments",
    "choose_quantile_method",
    "numeric_candidates",
    "quantile_levels",
]

#: ``mechanism="auto"`` uses the joint mechanism for 2 to this many levels (docs/quantiles.md).
JOINT_AUTO_MAX_LEVELS = 20
_METHODS = ("auto", "split", "recursive", "joint", "tree")
_AUTO_RESOLUTION = (
    "resolution applies to fixed bounds; with bounds='auto' the default (hi - lo) / 10^6 of "
    "the chosen bounds is used"
)


def numeric_candidates(candidates: Any) -> list[float]:
    """Public candidate values: finite, distinct numbers (a list or a text file of them).

    Parameters
    ----------
    candidates : list or path
        The candidates as given.

    Returns
    -------
    list of float
        The candidates, in the order given.
    """
    values = load_candidates(candidates)
    out: list[float] = []
    for v in values:
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise ParameterError(f"candidates must be numbers, got {v!r}") from None
        if not math.isfinite(f):
            raise ParameterError(f"candidates must be finite numbers, got {v!r}")
        out.append(f)
    if len(set(out)) != len(out):
        raise ParameterError("candidates must be distinct numbers")
    return out


def quantile_levels(q: Any) -> tuple[list[float], list[Fraction]]:
    """The levels as given (floats) and as the mechanisms use them (exact fractions).

    Parameters
    ----------
    q : float or list of float
        One level in ``[0, 1]`` or a non-empty list of them.

    Returns
    -------
    given, levels : list
        The floats and the fractions, in the order given.
    """
    qs: list[Any] = list(q) if isinstance(q, (list, tuple)) else [q]
    if not qs:
        raise ParameterError("q must be a number in [0, 1] or a non-empty list of them")
    levels = [quantile_fraction(v) for v in qs]
    return [float(v) for v in qs], levels


def choose_quantile_method(method: str, m: int, bounds: bool) -> str:
    """The method of ``m`` levels from public facts (docs/quantiles.md, "Choosing the
    method"): ``"count"`` is the auto rule's noisy row count, which picks the tree or the joint
    mechanism.

    Parameters
    ----------
    method : str
        ``"auto"``, ``"split"``, ``"recursive"``, ``"joint"`` or ``"tree"``.
    m : int
        The number of levels.
    bounds : bool
        Whether the query has bounds (not candidates).

    Returns
    -------
    str
        ``method``, or for ``"auto"`` the method it picks.
    """
    if method not in _METHODS:
        raise ParameterError(
            f"mechanism must be one of {', '.join(repr(x) for x in _METHODS)}, got {method!r}"
        )
    if method in ("recursive", "joint", "tree") and not bounds:
        raise ParameterError(f"mechanism={method!r} needs bounds (not candidates)")
    if method == "joint" and m > MAX_JOINT_LEVELS:
        raise ParameterError(f"mechanism='joint' takes at most {MAX_JOINT_LEVELS} levels, got {m}")
    if method != "auto":
        return method
    if not bounds or m == 1:
        return "split"
    if m <= JOINT_AUTO_MAX_LEVELS:
        return "count"  # a paid noisy row count picks the tree or the joint mechanism
    return "recursive" if recursive_depth(m) < m else "split"


@dataclass(frozen=True)
class ReleaseArguments:
    """A release's arguments with public bounds or candidates, checked.

    Attributes
    ----------
    eps : Fraction
        The total epsilon.
    given, levels : list
        The levels as given and as fractions.
    conf : float
        The confidence.
    cands : list of float or None
        The candidates (``None``: bounds).
    lo_hi : (float, float) or None
        The bounds (``None``: candidates).
    w : float or None
        The checked resolution (``None`` for candidates).
    chosen : str
        The method (:func:`choose_quantile_method`).
    """

    eps: Fraction
    given: list[float]
    levels: list[Fraction]
    conf: float
    cands: list[float] | None
    lo_hi: tuple[float, float] | None
    w: float | None
    chosen: str


def check_auto_bounds_arguments(
    q: Any,
    epsilon: Any,
    candidates: Any,
    *,
    confidence: Any,
    resolution: Any,
    mechanism: Any,
    auto_fraction: Any,
) -> tuple[Fraction, float, list[float], list[Fraction], str]:
    """A release with ``bounds="auto"``: ``epsilon``, the choice's share, no candidates and no
    resolution, the levels, the confidence, the method (the rows per unit are checked between
    the confidence and the method, by the caller).

    Parameters
    ----------
    q, epsilon, candidates, confidence, resolution, mechanism
        As :func:`~dpselect.planning.quantile_request.quantile_request` takes them.
    auto_fraction : float or None
        The share of ``epsilon`` for the bounds' choice.

    Returns
    -------
    tuple
        ``(eps, fraction, given, levels, chosen)``.
    """
    eps = Fraction(check_user_epsilon(epsilon))
    check_epsilon_range(eps)
    fraction = check_auto_fraction(auto_fraction)
    if candidates is not None:
        raise ParameterError(
            "bounds='auto' chooses bounds for the continuous mechanism: do not give candidates"
        )
    if resolution is not None:
        raise ParameterError(_AUTO_RESOLUTION)
    given, levels = quantile_levels(q)
    check_confidence(confidence)
    chosen = choose_quantile_method(mechanism, len(levels), True)
    return eps, fraction, given, levels, chosen


def check_release_arguments(
    q: Any,
    epsilon: Any,
    bounds: Any,
    candidates: Any,
    *,
    confidence: Any,
    resolution: Any,
    mechanism: Any,
    auto_fraction: Any = None,
    choose_rows: bool = False,
) -> ReleaseArguments:
    """A release with public bounds ``(lo, hi)`` or candidates: ``epsilon``, the levels, the
    confidence, exactly one of the bounds and the candidates, each checked, the resolution
    (bounds only), the method; with ``choose_rows`` (the rows per unit chosen privately) the
    choice's share after ``epsilon``, and the bounds may be ``"auto"`` (then no resolution).

    Parameters
    ----------
    q, epsilon, bounds, candidates, confidence, resolution, mechanism
        As :func:`~dpselect.planning.quantile_request.quantile_request` takes them.
    auto_fraction : float or None, optional
        With ``choose_rows``: the share of ``epsilon`` for the choice.
    choose_rows : bool, default False
        Whether the rows per unit are chosen privately first.

    Returns
    -------
    ReleaseArguments
        The checked values (with ``choose_rows``: ``lo_hi`` ``None`` for ``bounds="auto"``,
        ``w`` ``None``).
    """
    eps = Fraction(check_user_epsilon(epsilon))
    check_epsilon_range(eps)
    if choose_rows:
        check_auto_fraction(auto_fraction)
    given, levels = quantile_levels(q)
    conf = check_confidence(confidence)
    if (bounds is None) == (candidates is None):
        raise ParameterError(
            "give exactly one of bounds=(lo, hi) or 'auto' (continuous mechanism) and "
            "candidates (a public list of numbers)"
            if choose_rows
            else "give exactly one of bounds=(lo, hi) (continuous mechanism) and candidates "
            "(a public list of numbers)"
        )
    cands = numeric_candidates(candidates) if candidates is not None else None
    lo_hi = None
    if choose_rows and isinstance(bounds, str):
        if bounds != "auto":
            raise ParameterError(f"bounds must be a pair (lo, hi) or 'auto', got {bounds!r}")
        if resolution is not None:
            raise ParameterError(_AUTO_RESOLUTION)
    elif bounds is not None:
        lo_hi = check_bounds(bounds)
    if not choose_rows and resolution is not None and lo_hi is None:
        raise ParameterError("resolution applies to bounds (the continuous mechanism) only")
    w = check_resolution(resolution, *lo_hi) if lo_hi is not None else None
    chosen = choose_quantile_method(mechanism, len(levels), bounds is not None)
    if choose_rows:
        return ReleaseArguments(eps, given, levels, conf, cands, lo_hi, None, chosen)
    if chosen == "tree" and resolution is not None:
        raise ParameterError("resolution does not apply to mechanism='tree' (its leaves are fixed)")
    return ReleaseArguments(eps, given, levels, conf, cands, lo_hi, w, chosen)


def check_grouped_arguments(
    epsilon: Any, bounds: Any, privacy_unit: str | None, rows: Any
) -> tuple[float, int]:
    """A grouped release's checks before its table: ``bounds="auto"`` refused (each group runs
    on its own rows), ``epsilon``, the rows per unit in a group (a number, only with a unit).

    Parameters
    ----------
    epsilon, bounds, privacy_unit
        As :func:`~dpselect.planning.quantile_request.quantile_request` takes them.
    rows : int
        The rows a unit keeps in each of its groups.

    Returns
    -------
    tuple
        ``(epsilon, rows)``, checked.
    """
    if isinstance(bounds, str) and bounds == "auto":
        raise ParameterError(
            "bounds='auto' is not available with by: give bounds=(lo, hi) or candidates"
        )
    eps = float(check_user_epsilon(epsilon))
    check_epsilon_range(eps)
    if privacy_unit is None and rows != 1:
        raise ParameterError("max_rows applies only with a privacy_unit column")
    return eps, check_int(rows, "max_rows", minimum=1)
