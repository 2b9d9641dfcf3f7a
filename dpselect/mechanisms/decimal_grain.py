"""The decimal grain of a column, found privately: the grid its values were recorded on.

A column of floats often holds values recorded on a decimal grid: prices in whole dollars,
temperatures to a tenth of a degree. The joint quantile mechanism handles such ties best with
half the grid's spacing as its resolution (docs/quantiles.md, "The joint mechanism's default
resolution"); a typed column (integers, ``DECIMAL(p, s)``) states its grid in the schema, a
float column does not. This module estimates it from the rows with a noisy histogram.

**The grain of a row.** For public candidate exponents ``k_1 < ... < k_K`` (:func:`grain_exponents`:
at most five powers of ten around the public default step, from the bounds and epsilon only),
row ``x`` is *on the grid* ``10^k`` when ``x`` is the float nearest a multiple of ``10^k``
(:func:`on_grid`: ``rint(x 10^-k) / 10^-k == x`` for ``k < 0``, ``rint(x / 10^k) 10^k == x``
for ``k >= 0``: the float a decimal text with that many digits parses to). Its *grain* is
the number ``g`` of leading candidates it is on: on ``10^{k_1}, ..., 10^{k_g}`` and not on
``10^{k_{g+1}}`` (``g = 0``: on none; a NaN row has grain 0). A fixed function of the row
alone.

**The histogram** counts the rows of each grain ``0..K`` and adds discrete Laplace noise of
scale ``r / eps`` to each count (:func:`make_grain_histogram`). *Privacy*: each row falls in
exactly one bin, so adding or removing one row changes the count vector by 1 in L1, and one
privacy unit that keeps at most ``r`` rows by at most ``r``; the Laplace mechanism of scale ``r
/ eps`` is then ``eps``-DP per unit (seed 002, the Laplace mechanism's theorem; exact on the
integers: :func:`dpselect.mechanisms.laplace.make_laplace`, the geometric mechanism of Ghosh,
Roughgarden and Sundararajan 2009). The sum of the noisy bins is a noisy row count.

**The step** (:func:`recorded_exponent`, post-processing of the noisy counts): the coarsest
candidate ``10^{k_i}`` such that the noisy number of rows off it (grains below ``i``) is at
most ``GRAIN_TOLERANCE`` of the noisy total; ``None`` when there is none. On recorded data the
rows off the recording grid are 0 and the rows off the next coarser grid are about 9 in 10 of
them (a uniform last digit), so the test separates the two with room for the noise; on
continuous data every row is off every grid, and a false grid needs the noise of up to five
bins to hide nine tenths of the rows.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from ..core.arithmetic import float_up
from ..core.domains import atom_domain, vector_domain
from ..core.errors import ParameterError
from ..core.halves import in_halves
from ..core.measurement import Measurement
from ..core.metrics import L1Distance
from ..sampling.source import RandomSource
from .laplace import make_laplace
from .quantile_score import pure_dp_on_rows, unit_epsilon
from .validate import check_epsilon

__all__ = [
    "GRAIN_CHUNK",
    "GRAIN_SPAN",
    "GRAIN_TOLERANCE",
    "grain_counts",
    "grain_exponents",
    "make_grain_histogram",
    "on_grid",
    "recorded_exponent",
]

#: The candidates reach this many powers of ten either side of the public default step.
GRAIN_SPAN = 2
#: A grid is the recording grid when at most this share of the (noisy) rows lies off it.
GRAIN_TOLERANCE = Fraction(1, 10)
#: Rows :func:`grain_counts` takes through every grid at once (512 KiB of floats: the cache).
GRAIN_CHUNK = 1 << 16
#: The finest spacing a candidate may have, as a share of ``hi - lo``: twice the least
#: resolution (``(hi - lo) / 10^6``), so that half the step is never raised.
_FINEST = Fraction(2, 10**6)

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


def grain_exponents(lo: float, hi: float, public_step: Fraction) -> list[int]:
    """The candidate exponents ``k`` (increasing): ``10^k`` within ``GRAIN_SPAN`` powers of
    ten of ``public_step`` (the decimal step of the public default resolution), at least ``2
    (hi - lo) / 10^6`` and at most ``(hi - lo) / 2`` (the steps the joint mechanism's
    :func:`~dpselect.mechanisms.quantile_joint_parameters.recorded_resolution` takes as they are).
    Public: the bounds and the public step only.

    Parameters
    ----------
    lo, hi : float
        The column's public bounds, ``lo < hi``.
    public_step : Fraction
        The public default step, ``> 0``: the candidates centre on its power of ten.

    Returns
    -------
    list of int
        The candidate exponents, increasing (at most ``2 GRAIN_SPAN + 1``; possibly none).
    """
    width = Fraction(hi) - Fraction(lo)
    if width <= 0 or public_step <= 0:
        raise ParameterError(f"bounds must satisfy lo < hi, got ({lo}, {hi})")
    centre = _exponent(public_step)
    out = []
    for k in range(centre - GRAIN_SPAN, centre + GRAIN_SPAN + 1):
        step = Fraction(10) ** k
        if width * _FINEST <= step and 2 * step <= width and abs(k) <= 22:
            out.append(k)
    return out


def _exponent(step: Fraction) -> int:
    """``floor(log10(step))``, exactly."""
    k = math.floor(math.log10(step.numerator) - math.log10(step.denominator))
    while Fraction(10) ** (k + 1) <= step:
        k += 1
    while Fraction(10) ** k > step:
        k -= 1
    return k


def _rounded(x: F64, k: int, out: F64) -> F64:
    """``x`` rounded to the nearest multiple of ``10^k`` (``|k| <= 22``), into ``out``: the
    product or division by the exact float ``10^|k|``, ``rint``, then back (``k = 0``:
    ``rint`` alone, the same floats)."""
    with np.errstate(invalid="ignore", over="ignore"):
        if k == 0:  # the division and product by 1.0 change no float: rint alone
            np.rint(x, out=out)
        elif k < 0:
            p = float(10 ** (-k))
            np.multiply(x, p, out=out)
            np.rint(out, out=out)
            out /= p
        else:
            q = float(10**k)
            np.divide(x, q, out=out)
            np.rint(out, out=out)
            out *= q
    return out


def _check_exponent(k: int) -> None:
    if abs(k) > 22:
        raise ParameterError(f"the grid exponent must lie in [-22, 22], got {k}")


def on_grid(x: F64, k: int) -> npt.NDArray[np.bool_]:
    """Whether each ``x`` is the float nearest a multiple of ``10^k`` (``|k| <= 22``: the
    power is an exact float, so the division or product by it is correctly rounded and a
    decimal with ``-k`` digits comes back as the float it parses to). NaN and infinities:
    ``False`` (an infinity passes the comparison, so finiteness is tested too). The same
    passes for every row, whatever the values.

    Parameters
    ----------
    x : ndarray of float64
        The values (anything :func:`numpy.asarray` reads as floats).
    k : int
        The grid's exponent: the grid is ``10^k``, ``|k| <= 22``.

    Returns
    -------
    ndarray of bool
        For each value, whether it lies on the grid; the shape of ``x``.
    """
    _check_exponent(k)
    x = np.asarray(x, dtype=np.float64)
    out: npt.NDArray[np.bool_] = np.equal(_rounded(x, k, np.empty_like(x)), x)
    out &= np.isfinite(x)
    return out


def grain_counts(values: Any, exponents: list[int]) -> I64:
    """The number of rows of each grain ``0..K`` (module docstring), ``K = len(exponents)``:
    a fixed function of each row alone, the same as counting ``on_grid`` grid by grid. NaN
    and infinities lie on no grid (grain 0): they are read as ``0.0`` and masked out. Every
    row passes every grid in the same NumPy calls, whatever the values (no branch and no
    early exit on what the rows hold, so neighbouring datasets run the same code path:
    seed 001's postcondition). The rows go through in pieces of :data:`GRAIN_CHUNK` (the
    number of pieces is the row count's, never the values'), each through every grid while
    it is in the cache, in four buffers reused from piece to piece, and from ``4
    GRAIN_CHUNK`` rows on the two halves of the rows on two threads
    (:func:`dpselect.core.halves.in_halves`), their counts added: the same counts. On 10^6
    rows, 2.4 ms against 6.6 ms in whole-column passes on one thread (3.9 ms in pieces on
    one thread; docs/performance.md).

    Parameters
    ----------
    values : array-like of float
        The rows (flattened and read as float64).
    exponents : list of int
        The candidate exponents ``k_1 < ... < k_K`` (:func:`grain_exponents`), each
        ``|k| <= 22``.

    Returns
    -------
    ndarray of int64
        ``K + 1`` counts: entry ``g`` is the number of rows of grain ``g``.
    """
    for k in exponents:
        _check_exponent(k)
    x = np.asarray(values, dtype=np.float64).ravel()
    halves = in_halves(lambda at: _grain_counts_of(x[at], exponents), x.shape[0], 4 * GRAIN_CHUNK)
    counts: I64 = np.sum(halves, axis=0)
    return counts


def _grain_counts_of(x: F64, exponents: list[int]) -> I64:
    """:func:`grain_counts` of the rows ``x`` on this thread."""
    n = x.shape[0]
    size = max(1, min(n, GRAIN_CHUNK))
    finite, scratch = np.empty(size), np.empty(size)
    alive, on = np.empty(size, dtype=np.bool_), np.empty(size, dtype=np.bool_)
    counts = np.zeros(len(exponents) + 1, dtype=np.int64)
    for first in range(0, n, size):
        piece = x[first : first + size]
        m = piece.shape[0]
        live, fin, tmp, hit = alive[:m], finite[:m], scratch[:m], on[:m]
        np.isfinite(piece, out=live)  # on every grid so far
        np.copyto(fin, piece)
        np.copyto(fin, 0.0, where=~live)
        before = int(np.count_nonzero(live))
        counts[0] += m - before  # NaN and infinities
        for g, k in enumerate(exponents):
            np.equal(_rounded(fin, k, tmp), fin, out=hit)
            live &= hit
            now = int(np.count_nonzero(live))
            counts[g] += before - now  # on the first g grids, not on this one
            before = now
        counts[len(exponents)] += before
    return counts


def make_grain_histogram(
    exponents: list[int],
    epsilon: Any,
    *,
    source: RandomSource | None = None,
    max_rows: int = 1,
) -> Measurement:
    """The noisy grain histogram of the rows (module docstring): rows (a 1-D array; each row's
    own value, not clamped) to ``K + 1`` noisy integer counts, discrete Laplace of scale
    ``max_rows / epsilon`` each.

    Privacy map (``SymmetricDistance`` to ``MaxDivergence``): ``d_in * epsilon``, ``d_in``
    counting units of at most ``max_rows`` rows (rows when ``max_rows = 1``). Proof: one unit
    moves the count vector by at most ``max_rows`` in L1 (each row is in one bin), and the
    discrete Laplace mechanism of scale ``max_rows / epsilon`` is ``epsilon``-DP at that
    sensitivity (seed 002; :func:`~dpselect.mechanisms.laplace.make_laplace`'s map, checked
    here to be at most ``epsilon``); group privacy for ``d_in`` units.

    Parameters
    ----------
    exponents : list of int
        The candidate exponents (:func:`grain_exponents`; public).
    epsilon : float
        The histogram's ``epsilon > 0`` per privacy unit.
    source : RandomSource or None, default None
        Where the noise's random bits come from; ``None`` is the CSPRNG.
    max_rows : int, default 1
        ``r``: the most rows one privacy unit keeps.

    Returns
    -------
    Measurement
        From a 1-D array of rows (``SymmetricDistance``) to the list of ``K + 1`` noisy counts
        (``MaxDivergence``).
    """
    eps = Fraction(check_epsilon(epsilon))
    per_row = unit_epsilon(eps, max_rows)  # eps / r
    scale = 1 / per_row
    noise = make_laplace(vector_domain(atom_domain(int)), L1Distance(), scale, source=source)
    if Fraction(noise.map(max_rows)) > Fraction(float_up(eps)):
        raise AssertionError("the grain histogram's noise is below its epsilon")  # never
    ks = list(exponents)

    def function(values: Any) -> list[int]:
        return [int(v) for v in noise([int(c) for c in grain_counts(values, ks)])]

    return pure_dp_on_rows(function, eps)


def recorded_exponent(noisy: list[int], exponents: list[int]) -> int | None:
    """The exponent ``k`` of the recording grid ``10^k`` read from the noisy grain histogram
    (post-processing): the coarsest candidate ``k_i`` whose noisy off-grid rows (grains
    ``0..i-1``) are at most ``GRAIN_TOLERANCE`` of the noisy total, if the total is positive;
    else ``None``.

    Parameters
    ----------
    noisy : list of int
        The noisy grain histogram, ``len(exponents) + 1`` counts (:func:`make_grain_histogram`).
    exponents : list of int
        The candidate exponents it was built with, increasing.

    Returns
    -------
    int or None
        The exponent ``k`` of the recording grid ``10^k``, or ``None`` when no candidate
        passes or the noisy total is not positive.
    """
    if len(noisy) != len(exponents) + 1:
        raise ParameterError("noisy must hold one count per grain (len(exponents) + 1)")
    total = sum(noisy)
    if total <= 0:
        return None
    for i in range(len(exponents), 0, -1):
        if sum(noisy[:i]) <= GRAIN_TOLERANCE * total:
            return exponents[i - 1]
    return None
