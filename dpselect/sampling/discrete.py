"""Exact discrete Laplace, discrete Gaussian and Bernoulli(exp(-x)) samplers, vectorised.

Following Canonne, Kamath and Steinke (2020), "The Discrete Gaussian for Differential
Privacy", every sample here has *exactly* the stated law for rational parameters (an int, a
:class:`~fractions.Fraction`, or a float, which is converted exactly with ``Fraction(float)``):

- :func:`sample_discrete_laplace`: ``P(x) ∝ exp(-|x| / scale)`` on the integers.
- :func:`sample_discrete_gaussian`: ``P(x) ∝ exp(-x^2 / (2 sigma2))`` on the integers.
- :func:`sample_bernoulli_exp`: ``True`` with probability ``exp(-x)``, ``x >= 0``.

A zero ``scale`` or ``sigma2`` is refused (it would mean no noise at all, almost certainly a
bug upstream), and so are values outside ``2^-64 <= scale <= 2^52`` and
``2^-64 <= sigma2 <= 2^100``. The float fast path decides all but a few draws per million up
to a scale (or ``sigma``) of ``2^32``; beyond that more and more draws take the exact path
(about 17 µs each: 5% of them at ``2^36``, most at ``2^40``), which stays correct but slow.
See ``docs/discrete_sampling.md``.

How exactness is obtained ("certified floating point with exact refinement")
-------------------------------------------------------------------------------
Each random decision is a comparison between a *lazily sampled uniform* (a real number in
(0, 1) whose binary digits come from the source, read on demand; see
:class:`~dpselect.sampling.uniform.LazyUniform`) and a fixed real threshold:

*Discrete Laplace.* With ``q = exp(-1/scale)``, ``P(|X| >= k) = 2 q^k / (1 + q)`` for
``k >= 1``, so ``|X| = floor(T(U))`` with the decreasing function
``T(u) = scale * (-ln u) + a``, ``a = scale * ln(2 / (1 + q))`` in (0, 1). The sign is an
independent fair bit (irrelevant when ``|X| = 0``). One 64-bit word gives both: its lowest
bit is the sign and its other 63 bits are the first digits of ``U``. No rejection.

*Bernoulli(exp(-x)).* ``True`` iff ``V < exp(-x)`` for a lazy uniform ``V`` whose first 32
digits are one half of a 64-bit word.

*Discrete Gaussian* (CKS Algorithm 3). With ``t = floor(sigma) + 1``, draw ``Y`` from the
discrete Laplace of scale ``t`` and keep it with probability
``exp(-(|Y| - sigma2 / t)^2 / (2 sigma2))``; kept values are exactly discrete Gaussian. The
rounds are vectorised: each round draws a batch of candidates, and the first ``n`` kept
candidates *in draw order* (whatever their values) are ``n`` independent samples.

Every decision is first attempted in float64, vectorised, with a rigorous error bound: for
the Laplace, ``t`` approximates ``T(U)`` and ``m`` bounds ``|T(U) - t|`` over the whole
interval of the word; for the Bernoulli, a band ``exp(-x_f) (1 -+ band)`` encloses the
threshold, and the word's interval ``[w, w + 1] 2^-32`` is exact in float64. The bounds
cover the width of the word's interval, the rounding of the word to float64, the rounding of
the parameters, a *generous* error for float ``log`` / ``exp`` (relative ``2^-45``, about 256
ulp; good implementations are within 1-4 ulp) and the few float64 roundings of the formula.
Every term is taken at least twice its rigorous size, so that the roundings made while
computing the bound are absorbed. The float path decides only when ``[t - m, t + m]`` lies
inside one integer step (with ``k = floor(t)`` and the exact ``f = t - k``: ``f >= m`` and
``f + m < 1``), or when the uniform's interval lies entirely on one side of the band.

Everything else (about ``2^-40 * scale`` of the Laplace draws, ``2^-31`` of the Bernoulli
trials, and any uniform whose digits read so far are all 0) is decided exactly: python-flint
``arb`` balls evaluate ``T`` at the two ends of the uniform's dyadic interval (``T`` is
monotone) or enclose ``exp(-x)``, and more digits are read (``LazyUniform.refine``) until the
balls decide. A tie would need the uniform to equal a boundary (``2 q^k / (1 + q)`` or
``exp(-x)``), and these are transcendental for rational parameters (Lindemann-Weierstrass),
so refinement ends with probability 1. The decision is therefore always that of the ideal
real-valued uniform: every outcome has its exact, non-zero probability, and no float inverse
CDF decides anything on its own.

Outputs are ``int`` (``size=None``) or ``numpy.int64`` arrays. A value outside the int64 range
(probability below ``exp(-2^10)`` at the largest allowed scale) is not clipped: the array is
then returned with ``dtype=object`` holding Python ints.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from fractions import Fraction
from typing import overload

import numpy as np
import numpy.typing as npt
from flint import arb, ctx, fmpq

from ..core.errors import ParameterError
from .source import RandomSource, resolve_source
from .uniform import LazyUniform

__all__ = [
    "GAUSSIAN_SIGMA2_RANGE",
    "LAPLACE_SCALE_RANGE",
    "sample_bernoulli_exp",
    "sample_discrete_gaussian",
    "sample_discrete_laplace",
]

IntArray = npt.NDArray[np.int64]
Size = int | tuple[int, ...] | None

#: The exact samplers' parameter ranges (discrete Laplace scale, discrete Gaussian sigma^2):
#: public, so that a mechanism checks them at construction, before a recipe charges.
LAPLACE_SCALE_RANGE = (Fraction(1, 1 << 64), Fraction(1 << 52))
GAUSSIAN_SIGMA2_RANGE = (Fraction(1, 1 << 64), Fraction(1 << 100))
_SCALE_MIN, _SCALE_MAX = LAPLACE_SCALE_RANGE
_SIGMA2_MIN, _SIGMA2_MAX = GAUSSIAN_SIGMA2_RANGE
_INT64_MAX = (1 << 63) - 1
_FLOAT_INT_LIMIT = float(1 << 50)  # float values below this are exact integers, with room
_CHUNK = 1 << 15  # elements per vectorised step: the temporaries stay in cache


# --------------------------------------------------------------------------------------------
# argument checking


def _rational(value: object, name: str) -> Fraction:
    """``value`` as an exact Fraction; bools, NaN, infinities and non-numbers are refused."""
    if isinstance(value, bool | np.bool_):
        raise ParameterError(f"{name} must be a number (int, Fraction or float), not a bool")
    if isinstance(value, numbers.Rational):  # int, Fraction, NumPy integers
        return Fraction(int(value.numerator), int(value.denominator))
    if isinstance(value, float | np.floating):
        f = float(value)
        if not math.isfinite(f):
            raise ParameterError(f"{name} must be finite, got {f!r}")
        return Fraction(f)
    raise ParameterError(f"{name} must be an int, Fraction or float, got {type(value).__name__}")


def _bounded(value: object, name: str, low: Fraction, high: Fraction) -> Fraction:
    q = _rational(value, name)
    if q <= 0:
        raise ParameterError(f"{name} must be > 0, got {value!r}")
    if not low <= q <= high:
        raise ParameterError(f"{name} must lie in [2^{_log2(low)}, 2^{_log2(high)}], got {value!r}")
    return q


def _log2(q: Fraction) -> int:
    return q.numerator.bit_length() - q.denominator.bit_length()


def _shape(size: object) -> tuple[int, ...] | None:
    """``None`` (a scalar) or the output shape; anything but non-negative ints is refused."""
    if size is None:
        return None
    dims = size if isinstance(size, tuple) else (size,)
    for d in dims:
        if isinstance(d, bool | np.bool_) or not isinstance(d, int | np.integer):
            raise ParameterError(
                f"size must be None, an int or a tuple of ints, got {type(d).__name__}"
            )
        if d < 0:
            raise ParameterError(f"size must be non-negative, got {size!r}")
    return tuple(int(d) for d in dims)


def _count(shape: tuple[int, ...] | None) -> int:
    return 1 if shape is None else math.prod(shape)


# --------------------------------------------------------------------------------------------
# exact refinement (arb balls), one decision at a time


def _bits(q: Fraction) -> int:
    return max(q.numerator.bit_length(), q.denominator.bit_length())


def _arb(q: Fraction) -> arb:
    return arb(fmpq(q.numerator, q.denominator))


def _dyadic_ends(u: LazyUniform) -> tuple[arb, arb]:
    """The ends of ``u``'s interval as exact arb values (the precision must exceed nbits)."""
    den = 1 << u.nbits
    return arb(fmpq(u.prefix, den)), arb(fmpq(u.prefix + 1, den))


def _laplace_magnitude_exact(scale: Fraction, u: LazyUniform, source: RandomSource) -> int:
    """``floor(T(U))`` with ``T(u) = -scale ln u + scale ln(2 / (1 + exp(-1/scale)))``."""
    while True:
        if u.prefix != 0:  # otherwise T is unbounded on the interval: read more digits
            with ctx.workprec(2 * u.nbits + 64 + _bits(scale)):
                s = _arb(scale)
                a = s * (2 / (1 + (-1 / s).exp())).log()
                lo, hi = _dyadic_ends(u)
                ball = (a - s * hi.log()).union(a - s * lo.log())
                k = ball.floor().unique_fmpz()
            if k is not None:
                return int(k)
        u.refine(source)


def _bernoulli_exp_exact(x: Fraction, u: LazyUniform, source: RandomSource) -> bool:
    """``U < exp(-x)``, reading digits of ``U`` until arb balls decide."""
    if x == 0:
        return True  # U < 1 almost surely
    while True:
        with ctx.workprec(2 * u.nbits + 64 + _bits(x)):
            p = (-_arb(x)).exp()
            lo, hi = _dyadic_ends(u)
            if hi < p:
                return True
            if lo > p:
                return False
        u.refine(source)


# --------------------------------------------------------------------------------------------
# certified float64 paths, vectorised


class _LaplaceLaw:
    """The discrete Laplace of one rational scale: float constants and the exact fallback.

    Each sample reads one 64-bit word: its lowest bit is the sign and its other 63 bits are
    the first digits of ``U``. (32-bit words would be about 20% faster but would leave about
    ``1e-7 * scale`` of the draws to the exact path, whose running time tells that ``|X|`` is
    next to a step: a timing channel we keep near ``2^-40 * scale`` instead.)
    """

    def __init__(self, scale: Fraction) -> None:
        self.scale = scale
        self.scale_f = float(scale)
        self.digits = 63
        with ctx.workprec(128):
            s = _arb(scale)
            a = s * (2 / (1 + (-1 / s).exp())).log()
            self.a_f = float(a.mid())  # a in (0, 1): error <= 2^-52 a + 2^-120
        self.m_over_p = 4.0 * self.scale_f  # the terms of the float path's error bound m
        self.m_const = 2.0**-49 * self.scale_f + 2.0**-47

    def words(self, n: int, source: RandomSource) -> tuple[IntArray, IntArray]:
        """``n`` words split into the sign bits (1 for minus) and the prefixes of ``U``."""
        words = source.words(n)
        return (words & np.uint64(1)).view(np.int64), (words >> np.uint64(1)).view(np.int64)

    def sample(
        self, n: int, source: RandomSource
    ) -> npt.NDArray[np.int64] | npt.NDArray[np.object_]:
        """``n`` exact samples (int64, or object if a value leaves the int64 range)."""
        negative, prefix = self.words(n, source)
        magnitude = np.empty(n, dtype=np.int64)
        undecided: list[npt.NDArray[np.intp]] = []
        for start in range(0, n, _CHUNK):  # cache-sized chunks: about 3x faster than one pass
            stop = min(start + _CHUNK, n)
            magnitude[start:stop], todo = self._float_magnitudes(prefix[start:stop])
            undecided.append(todo + start)
        # (k ^ -b) + b is k for b = 0 and -k for b = 1: no data-dependent branch (np.where is
        # ten times slower on a random mask)
        out: npt.NDArray[np.int64] | npt.NDArray[np.object_]
        out = (magnitude ^ -negative) + negative
        for i in np.concatenate(undecided) if undecided else ():
            value = self._exact(int(prefix[i]), bool(negative[i]), source)
            if abs(value) > _INT64_MAX and out.dtype == np.int64:
                out = out.astype(object)
            out[i] = value
        return out

    def _exact(self, prefix: int, negative: bool, source: RandomSource) -> int:
        k = _laplace_magnitude_exact(self.scale, LazyUniform(prefix, self.digits), source)
        return -k if negative else k

    def _float_magnitudes(self, prefix: IntArray) -> tuple[IntArray, npt.NDArray[np.intp]]:
        """``floor(T(U))`` where certified, and the indices left undecided.

        ``t = a_f - s_f log(u_f)`` with ``u_f = fl(p) 2^-digits``. For every ``U`` of the word's
        interval, ``|T(U) - t| <= R`` with ``R`` the sum of ``s (1/p + 2^-52)`` (the interval
        and the rounding of ``p``), ``2^-45 s |log u_f|`` (float ``log``, assumed), ``2^-53 s
        |log u_f|`` (rounding of ``s``), ``2^-52`` (``a``) and ``2^-53 (s |log u_f| + t)``
        (the two float operations). ``m = 4 s / p_f + 2^-42 t + 2^-49 s + 2^-47`` is above
        ``2 R`` (``t >= s |log u_f|`` because ``a > 0``). With ``k = floor(t)`` and
        ``f = t - k`` (exact in float64), ``f >= m`` and ``fl(f + m) < 1`` give
        ``k <= t - R < T(U) < t + R < k + 1``. A huge or infinite ``t`` (``p = 0``) makes
        ``m >= 1`` or ``f`` NaN: undecided.
        """
        p = prefix.astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            t = self.a_f - self.scale_f * np.log(p * 2.0**-self.digits)
            m = self.m_over_p / p + 2.0**-42 * t + self.m_const
            k = np.floor(t)
            f = t - k
            decided = (f >= m) & (f + m < 1.0)
            magnitude = k.astype(np.int64)  # garbage where undecided; replaced later
        return magnitude, np.flatnonzero(~decided)


def _half_words(source: RandomSource, n: int) -> npt.NDArray[np.uint32]:
    """``n`` random 32-bit words: the first 32 digits of ``n`` uniforms."""
    return source.words((n + 1) // 2).view(np.uint32)[:n]


Floats = npt.NDArray[np.float64] | float


def _bernoulli_exp_float(
    x: Floats, band: Floats, words: npt.NDArray[np.uint32]
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.intp]]:
    """``V < exp(-x)`` where certified (garbage elsewhere), and the indices left undecided.

    ``V`` lies in ``[w 2^-32, (w + 1) 2^-32]`` for its 32-bit word ``w`` (both ends exact in
    float64). The caller guarantees that, whenever ``x <= 700``, the exact threshold lies in
    ``exp(-x) (1 -+ band)`` once float ``exp`` is within ``2^-45`` relative of ``exp(-x)``:
    ``band >= 2^-44 + 2 dx`` with ``|x - x_exact| <= dx / 16`` and ``dx <= 1/8`` (so that
    ``e^{dx/16} - 1 <= dx``); the slack absorbs the roundings of ``e -+ spread``. When
    ``x > 700``, ``x_exact > 699`` and the threshold is below ``2^-1000``: then ``e - spread``
    can never accept and ``e + spread >= 0`` rejects exactly the words ``w >= 1`` (the right
    answer), whatever the accuracy of a subnormal ``exp``. A NaN ``x`` is undecided.
    """
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        e = np.exp(-x)
        spread = e * band
        v_lo = words.astype(np.float64) * 2.0**-32
        accept = v_lo + 2.0**-32 < e - spread
        reject = v_lo > e + spread
    return accept, np.flatnonzero(~(accept | reject))


def _bernoulli_exp_exact_word(x: Fraction, word: int, source: RandomSource) -> bool:
    return _bernoulli_exp_exact(x, LazyUniform(word, 32), source)


# --------------------------------------------------------------------------------------------
# the discrete Gaussian, CKS Algorithm 3 in vectorised rounds


class _GaussianLaw:
    """The discrete Gaussian of one rational ``sigma2``, by rejection from a discrete Laplace."""

    def __init__(self, sigma2: Fraction) -> None:
        self.sigma2 = sigma2
        self.t = math.isqrt(sigma2.numerator // sigma2.denominator) + 1  # floor(sigma) + 1
        self.center = sigma2 / self.t  # Y is kept w.p. exp(-(|Y| - center)^2 / (2 sigma2))
        self.laplace = _LaplaceLaw(Fraction(self.t))
        self.center_f = float(self.center)
        self.k_f = float(1 / (2 * sigma2))
        # Float error of x = (|Y| - c)^2 k with c = sigma2 / t, k = 1 / (2 sigma2), d = |Y| - c:
        # |x - x_exact| <= k 2^-52 (c + |d|) (3 |d| + c) + 2^-51 x (roundings of c, k, |Y| - c
        # and the two products), and k (c + |d|)(c + 3 |d|) <= 8 x (|d| >= c) or 8 k c^2
        # (|d| < c). So dx = 2^-46 (10 x + kappa), kappa >= 8 k c^2, is 16 times the error,
        # and band = 2^-44 + 2 dx is linear in x.
        kappa = 8.01 * self.k_f * self.center_f**2  # = 4 sigma2 / t^2 < 4, with slack
        self.band_const = 2.0**-44 + 2.0**-45 * kappa
        self.band_slope = 10 * 2.0**-45
        assert 2.0**-46 * (10 * 700 + kappa) <= 0.125  # dx <= 1/8 wherever x <= 700
        self.rate = self._acceptance_rate()

    def _acceptance_rate(self) -> float:
        """A float estimate of P(keep), used only to size the batches."""
        if self.t > 1000:
            return 0.76  # the limit for large sigma
        y = np.arange(60 * self.t + 60, dtype=np.float64)
        q = math.exp(-1 / self.t)
        weight = np.where(y == 0, 1.0, 2.0) * (1 - q) / (1 + q) * q**y
        return float(np.sum(weight * np.exp(-((y - self.center_f) ** 2) * self.k_f)))

    def exact_x(self, y: int) -> Fraction:
        return (abs(y) - self.center) ** 2 / (2 * self.sigma2)

    def keep(
        self, y: npt.NDArray[np.int64] | npt.NDArray[np.object_], source: RandomSource
    ) -> npt.NDArray[np.bool_]:
        """One Bernoulli(exp(-x(Y))) per candidate."""
        words = _half_words(source, y.size)
        if y.dtype != np.int64:  # a candidate beyond int64 (never in practice): all exact
            return np.array(
                [
                    _bernoulli_exp_exact_word(self.exact_x(int(v)), int(w), source)
                    for v, w in zip(y, words, strict=True)
                ],
                dtype=bool,
            )
        ay = np.abs(y).astype(np.float64)
        d = ay - self.center_f
        x = d * d * self.k_f
        if ay.size and ay.max() >= _FLOAT_INT_LIMIT:  # |Y| not exact in float64: exact path
            x[ay >= _FLOAT_INT_LIMIT] = np.nan
        band = self.band_const + self.band_slope * x
        decision, undecided = _bernoulli_exp_float(x, band, words)
        for i in undecided:
            decision[i] = _bernoulli_exp_exact_word(self.exact_x(int(y[i])), int(words[i]), source)
        return decision

    def sample(
        self, n: int, source: RandomSource
    ) -> npt.NDArray[np.int64] | npt.NDArray[np.object_]:
        """``n`` exact samples: the first ``n`` kept candidates, in draw order."""
        pieces: list[npt.NDArray[np.int64] | npt.NDArray[np.object_]] = []
        need = n
        while need > 0:
            batch = min(_CHUNK, int(need / self.rate * 1.02) + 64)
            y = self.laplace.sample(batch, source)
            kept = y[self.keep(y, source)][:need]
            pieces.append(kept)
            need -= kept.size
        if not pieces:
            return np.zeros(0, dtype=np.int64)
        if any(p.dtype != np.int64 for p in pieces):
            return np.concatenate([p.astype(object) for p in pieces])
        return np.concatenate(pieces).astype(np.int64, copy=False)


# --------------------------------------------------------------------------------------------
# public API


@overload
def sample_discrete_laplace(
    scale: int | Fraction | float, size: None = None, source: RandomSource | None = None
) -> int: ...
@overload
def sample_discrete_laplace(
    scale: int | Fraction | float, size: int | tuple[int, ...], source: RandomSource | None = None
) -> npt.NDArray[np.int64]: ...
def sample_discrete_laplace(
    scale: int | Fraction | float, size: Size = None, source: RandomSource | None = None
) -> int | npt.NDArray[np.int64]:
    """Exact samples of the discrete Laplace law ``P(x) ∝ exp(-|x| / scale)``, ``x`` in Z.

    Parameters
    ----------
    scale:
        A rational number in ``[2^-64, 2^52]`` (int, Fraction, or float taken exactly).
    size:
        ``None`` for one ``int``; an int or a tuple of ints for an int64 array of that shape.
    source:
        Where the random bits come from; ``None`` means the CSPRNG.

    Returns
    -------
    int or numpy.ndarray of int64
        One sample (``size=None``) or an array of shape ``size`` (``dtype=object`` in the
        negligible case of a value outside int64, module docstring).
    """
    law = _LaplaceLaw(_bounded(scale, "scale", _SCALE_MIN, _SCALE_MAX))
    return _finish(law.sample, _shape(size), resolve_source(source))


@overload
def sample_discrete_gaussian(
    sigma2: int | Fraction | float, size: None = None, source: RandomSource | None = None
) -> int: ...
@overload
def sample_discrete_gaussian(
    sigma2: int | Fraction | float, size: int | tuple[int, ...], source: RandomSource | None = None
) -> npt.NDArray[np.int64]: ...
def sample_discrete_gaussian(
    sigma2: int | Fraction | float, size: Size = None, source: RandomSource | None = None
) -> int | npt.NDArray[np.int64]:
    """Exact samples of the discrete Gaussian ``P(x) ∝ exp(-x^2 / (2 sigma2))``, ``x`` in Z.

    Parameters
    ----------
    sigma2:
        The variance parameter ``sigma^2`` (not ``sigma``): a rational number in
        ``[2^-64, 2^100]`` (int, Fraction, or float taken exactly). The law's variance is
        slightly below ``sigma2``.
    size:
        ``None`` for one ``int``; an int or a tuple of ints for an int64 array of that shape.
    source:
        Where the random bits come from; ``None`` means the CSPRNG.

    Returns
    -------
    int or numpy.ndarray of int64
        One sample (``size=None``) or an array of shape ``size`` (``dtype=object`` in the
        negligible case of a value outside int64, module docstring).
    """
    law = _GaussianLaw(_bounded(sigma2, "sigma2", _SIGMA2_MIN, _SIGMA2_MAX))
    return _finish(law.sample, _shape(size), resolve_source(source))


@overload
def sample_bernoulli_exp(
    x: int | Fraction | float, size: None = None, source: RandomSource | None = None
) -> bool: ...
@overload
def sample_bernoulli_exp(
    x: int | Fraction | float, size: int | tuple[int, ...], source: RandomSource | None = None
) -> npt.NDArray[np.bool_]: ...
def sample_bernoulli_exp(
    x: int | Fraction | float, size: Size = None, source: RandomSource | None = None
) -> bool | npt.NDArray[np.bool_]:
    """Exact Bernoulli trials that are ``True`` with probability ``exp(-x)``.

    Parameters
    ----------
    x:
        A rational number ``>= 0`` (int, Fraction, or float taken exactly).
    size:
        ``None`` for one ``bool``; an int or a tuple of ints for a bool array of that shape.
    source:
        Where the random bits come from; ``None`` means the CSPRNG.

    Returns
    -------
    bool or numpy.ndarray of bool
        One trial (``size=None``) or an array of shape ``size``.
    """
    xq = _rational(x, "x")
    if xq < 0:
        raise ParameterError(f"x must be >= 0, got {x!r}")
    shape = _shape(size)
    src = resolve_source(source)
    n = _count(shape)
    words = _half_words(src, n)
    # Clamped: beyond 700 the float path only uses x > 699, true of every x >= 1000.
    x_f = float(min(xq, Fraction(1000)))
    # |x_f - x| <= 2^-53 x (or x < 2^-1074, absorbed by the 2^-44): dx = 2^-48 x_f is 16x that
    decision, undecided = _bernoulli_exp_float(x_f, 2.0**-44 + 2.0**-47 * x_f, words)
    for i in undecided:
        decision[i] = _bernoulli_exp_exact_word(xq, int(words[i]), src)
    if shape is None:
        return bool(decision[0])
    return decision.reshape(shape)


def _finish(
    sample: Callable[[int, RandomSource], npt.NDArray[np.int64] | npt.NDArray[np.object_]],
    shape: tuple[int, ...] | None,
    source: RandomSource,
) -> int | npt.NDArray[np.int64]:
    values = sample(_count(shape), source)
    if shape is None:
        return int(values[0])
    return values.reshape(shape)  # type: ignore[return-value]  # object only beyond int64
