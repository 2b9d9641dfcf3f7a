"""What the top-k mechanisms for counts share: the result type and the count checks.

:class:`NoisyTopK` (``k`` indices and their noisy counts), the checks of count-vector domains
and metrics, ``k`` and the overflow-free count arithmetic, used by
:mod:`~dpselect.mechanisms.gumbel_counts`, :mod:`~dpselect.mechanisms.oneshot_laplace` and
:mod:`~dpselect.mechanisms.histogram_top_k`. :mod:`dpselect.mechanisms.topk_counts` re-exports
them with the constructors (docs/mechanisms_topk_counts.md).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ..core.domains import IntDomain, VectorDomain
from ..core.errors import DomainError, MetricError, ParameterError
from ..core.metrics import LInfDistance
from .validate import check_int, check_non_nan_vector_domain

__all__ = [
    "NoisyTopK",
    "check_count_metric",
    "check_count_vector_domain",
    "check_k",
    "count_vector",
    "noisy_values",
]

_INT64_MAX = int(np.iinfo(np.int64).max)


class NoisyTopK(NamedTuple):
    """``k`` indices and the noisy count released for each of them.

    The indices are best first for the Gumbel mechanism (its ranking is covered by its proof)
    and sorted by candidate index for the one-shot Laplace set (whose proof covers no order).
    """

    indices: npt.NDArray[np.int64]
    counts: npt.NDArray[Any]  # int64 (object only if a value leaves the int64 range)


def check_count_vector_domain(domain: Any, name: str = "input_domain") -> VectorDomain:
    """A ``vector_domain(atom_domain(int), size=d)``: integer counts, ``d`` fixed and public.

    Parameters
    ----------
    domain : Domain
        The domain to check.
    name : str, default "input_domain"
        The argument's name, quoted in the :class:`DomainError`.

    Returns
    -------
    VectorDomain
        ``domain``, unchanged.
    """
    vector = check_non_nan_vector_domain(domain, name)
    if not isinstance(vector.element_domain, IntDomain):
        raise DomainError(
            f"{name} must hold integer counts (vector_domain(atom_domain(int), size=d)), "
            f"got {domain!r}"
        )
    if vector.size is None:
        raise DomainError(
            f"{name} must fix the number of candidates d (vector_domain(..., size=d)): d is a "
            "public parameter of the mechanism"
        )
    return vector


def check_count_metric(metric: Any, name: str = "input_metric") -> LInfDistance:
    """``LInfDistance(monotonic=...)``: each count moves by at most ``d_in`` between neighbours.

    :class:`~dpselect.core.metrics.RangeDistance` is refused: a range distance bounds the
    *differences* of score changes, not the changes themselves, and the released counts need
    the latter.

    Parameters
    ----------
    metric : Metric
        The metric to check.
    name : str, default "input_metric"
        The argument's name, quoted in the :class:`MetricError`.

    Returns
    -------
    LInfDistance
        ``metric``, unchanged.
    """
    if type(metric) is not LInfDistance:
        raise MetricError(
            f"{name} must be LInfDistance(monotonic=...) (counts move by at most d_in each), "
            f"got {metric!r}"
        )
    return metric


def check_k(k: Any, d: int) -> int:
    """An int ``k`` with ``1 <= k <= d``.

    Parameters
    ----------
    k : int
        The number of indices to release.
    d : int
        The number of candidates.

    Returns
    -------
    int
        ``k`` as a Python ``int``.
    """
    check_int(k, "k", minimum=1)
    if k > d:
        raise ParameterError(f"k must be at most the number of candidates d = {d}, got {k}")
    return int(k)


def count_vector(x: Any) -> npt.NDArray[np.int64]:
    """Counts as an int64 vector, each clamped to +-(2^63 - 1).

    Clamping is monotone and 1-Lipschitz, so sensitivity and monotonicity carry over; it avoids
    an overflow error that would depend on the data (seed 001, postcondition 1).

    Parameters
    ----------
    x : array-like of int
        The counts (any integer dtype, or Python ints).

    Returns
    -------
    ndarray of int64
        The clamped counts.
    """
    arr = np.asarray(x)
    if arr.dtype.kind == "O" or arr.dtype == np.uint64:
        return np.array(
            [min(max(int(v), -_INT64_MAX), _INT64_MAX) for v in arr.ravel()], dtype=np.int64
        )
    # one new array: the cast copies only another dtype, the clip writes the result
    return np.clip(arr.astype(np.int64, copy=False), -_INT64_MAX, _INT64_MAX)


def noisy_values(counts: npt.NDArray[np.int64], noise: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``counts + noise`` without int64 overflow (Python ints where needed).

    Summed as int64 arrays (no Python int per count: 10^7 candidates took 6.7 s that way),
    with an exact overflow check; only when a sum leaves +-(2^63 - 1) are the sums taken again
    as Python ints.

    Parameters
    ----------
    counts : ndarray of int64
        The true counts.
    noise : ndarray of int
        One integer noise value per count.

    Returns
    -------
    ndarray
        ``counts + noise`` in the shape of ``counts``: int64 when every sum fits, else an
        object array of Python ints.
    """
    c, z = np.asarray(counts), np.asarray(noise)
    if c.dtype == np.int64 and z.dtype == np.int64 and c.shape == z.shape:
        # int64 sums, wrapping on overflow; a sum overflowed exactly when both terms have
        # the same sign and the wrapped sum the other one (two's complement). -2^63 is
        # outside +-(2^63 - 1) as well: those sums take the exact path below.
        with np.errstate(over="ignore"):
            wrapped: npt.NDArray[np.int64] = c + z
        overflowed = ((c ^ wrapped) & (z ^ wrapped)) < 0
        if not overflowed.any() and not (wrapped == np.iinfo(np.int64).min).any():
            return wrapped
    total = [int(a) + int(b) for a, b in zip(counts.tolist(), noise.tolist(), strict=True)]
    if all(-_INT64_MAX <= v <= _INT64_MAX for v in total):
        return np.asarray(total, dtype=np.int64).reshape(counts.shape)
    return np.asarray(total, dtype=object).reshape(counts.shape)
