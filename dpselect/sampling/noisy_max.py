"""Exact report-noisy-max and one-shot top-k at NumPy speed (seeds 001 and 004).

``noisy_top_k(shifts, scale, k, noise=noise)`` returns the indices of the ``k`` largest ideal
noisy keys ``shifts_i / scale + g(U_i)``, best first, where ``g`` is the noise family's inverse
CDF and ``U_i`` are independent uniforms whose binary digits come from the randomness source.
The result is *exactly* the ideal real-valued ranking, not a float approximation of it:

1. **Float pass** (chunked, vectorised, both cores for the CSPRNG). For each candidate the
   first 64 digits of ``U_i`` are read as a word ``w``; ``j = w >> 12`` locates ``U_i`` in the
   grid interval ``[j, j + 1] * 2^-52``, whose ends are exact floats. The float key ``K_i`` uses
   the upper end. ``K_i + e`` is a rigorous upper bound ``UB_i`` of the ideal key and
   ``q_i + g(j 2^-52) - e`` a rigorous lower bound ``LB_i``, with ``e`` from
   ``docs/exactness.md`` (division and conversion rounding, and log error).
2. **Certification.** A candidate whose ``UB`` is below the ``k``-th largest ``LB`` seen is
   certainly outside the top ``k`` and is dropped. Survivors are ordered by ``K``; a cut
   after position ``r`` is certified when every ``LB`` up to ``r`` exceeds every ``UB`` after
   it.
3. **Exact refinement.** Candidates between two cuts are ordered in arbitrary-precision
   interval arithmetic (python-flint ``arb``) on their lazily sampled uniforms, reading 64 more
   digits whenever two key intervals overlap, until every comparison is decided.

Gumbel noise makes ``noisy_argmax`` the exponential mechanism (seed 001, Theorem 1.1) and
``noisy_top_k`` the one-shot top-k, equal in law to ``k`` rounds of it (seed 004, Theorem 1).
Exponential noise is permute-and-flip in law; Laplace noise is report-noisy-max with Laplace.

Edges: ``scale == 0`` is the exact argmax / top ``k``, ties to the lowest index. A shift of
``+inf`` outranks every finite one and ``-inf`` is outranked by every finite one; within
either infinite class the noise alone decides (the limit of equal huge shifts).
"""

from __future__ import annotations

import functools
import math
import os
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import flint
import numpy as np
import numpy.typing as npt

from ..core.arithmetic import float_up
from ..core.errors import DomainError, ParameterError
from .noise import GRID_BITS, NOISE_ABS_ERROR, NoiseFamily, get_family, grid_lower, grid_upper
from .source import RandomSource, resolve_source
from .uniform import LazyUniform

__all__ = ["CHUNK_SIZE", "noisy_argmax", "noisy_top_k"]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]

#: Candidates per chunk of the float pass (512 KiB of float64 per temporary).
CHUNK_SIZE = 1 << 16
_ACCEPTED_DTYPES = (np.float64, np.float32, np.int64, np.int32)
_WORKERS = max(1, min(2, os.cpu_count() or 1))
#: Relative error of the float score division, with margin (docs/exactness.md).
_Q_REL_ERROR = 2.0**-47


# ----------------------------------------------------------------------------- validation
def _validate_shifts(shifts: Any) -> tuple[npt.NDArray[Any], Any, Any]:
    """The shifts as an array, with their largest and smallest values (one pass each)."""
    arr = np.asarray(shifts)
    if arr.dtype.type not in _ACCEPTED_DTYPES:
        raise ParameterError(
            f"shifts must have dtype float64, float32, int64 or int32, got {arr.dtype}"
        )
    if arr.ndim != 1:
        raise ParameterError(f"shifts must be a 1-d vector, got {arr.ndim} dimensions")
    if arr.size == 0:
        raise ParameterError("shifts must not be empty: there is nothing to select")
    hi, lo = arr.max().item(), arr.min().item()  # max and min propagate NaN
    if arr.dtype.kind == "f" and (math.isnan(hi) or math.isnan(lo)):
        raise DomainError("shifts must not contain NaN (the input domain is non-NaN)")
    return arr, hi, lo


def _validate_scale(scale: Any) -> float | Fraction:
    if isinstance(scale, bool) or not isinstance(scale, (int, float, Fraction, np.floating)):
        raise ParameterError(f"scale must be a number, got {type(scale).__name__}")
    if isinstance(scale, Fraction):
        if scale < 0:
            raise ParameterError(f"scale must be non-negative, got {scale}")
        # the error bounds divide by the scale in floats: it must have a positive float
        if scale > 0 and not (2.0**-1022 <= scale <= Fraction(sys.float_info.max)):
            raise ParameterError(
                "scale must be 0 or within the normal float range [2^-1022, 2^1024), got a "
                f"Fraction near 2^{scale.numerator.bit_length() - scale.denominator.bit_length()}"
            )
        return scale
    value = float(scale)
    if math.isnan(value) or math.isinf(value):
        raise ParameterError(f"scale must be finite, got {value}")
    if value < 0:
        raise ParameterError(f"scale must be non-negative, got {value}")
    return value


def _validate_k(k: Any, n: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise ParameterError(f"k must be an int, got {type(k).__name__}")
    if k < 0:
        raise ParameterError(f"k must be non-negative, got {k}")
    if k > n:
        raise ParameterError(f"k must be at most the number of candidates ({n}), got {k}")
    return int(k)


# ----------------------------------------------------------------------------- public API
def noisy_argmax(
    shifts: Any,
    scale: float | Fraction,
    noise: str | NoiseFamily = "gumbel",
    *,
    source: RandomSource | None = None,
) -> int:
    """The index of the largest ideal noisy key ``shifts_i / scale + noise_i``, exactly.

    ``shifts`` is a non-empty 1-d array of float64, float32, int64 or int32 scores, already
    multiplied by +1 (maximise) or -1 (minimise). ``noise`` is "gumbel" (the exponential
    mechanism, seed 001 Theorem 1.1: P[i] proportional to exp(shift_i / scale)),
    "exponential" (permute-and-flip in law) or "laplace". ``source`` defaults to the CSPRNG.

    Parameters
    ----------
    shifts : array_like
        The scores, a non-empty 1-d array of float64, float32, int64 or int32; no NaN,
        ``inf`` and ``-inf`` allowed (module docstring, "Edges").
    scale : int, float or Fraction
        The noise scale, in the units of ``shifts`` (``2 Delta / epsilon`` for the exponential
        mechanism): finite and ``>= 0`` (NumPy floats are accepted); ``0`` gives the exact
        argmax, ties to the lowest index.
    noise : str or NoiseFamily, default "gumbel"
        The noise family (:func:`~dpselect.sampling.noise.get_family`).
    source : RandomSource or None, default None
        Where the random bits come from; ``None`` means the default private source.

    Returns
    -------
    int
        The index of the winning candidate in ``shifts``.

    Raises
    ------
    ParameterError
        A bad dtype, shape, empty ``shifts``, ``scale``, ``noise`` or ``source``.
    DomainError
        ``shifts`` contains NaN.
    """
    return int(noisy_top_k(shifts, scale, 1, noise=noise, source=source)[0])


def noisy_top_k(
    shifts: Any,
    scale: float | Fraction,
    k: int,
    *,
    noise: str | NoiseFamily = "gumbel",
    source: RandomSource | None = None,
) -> I64:
    """Indices of the ``k`` largest ideal noisy keys, best first, exactly (one shot).

    With Gumbel noise the ranked list has the law of ``k`` rounds of the exponential
    mechanism without replacement (seed 004, Theorem 1). Arguments as in
    :func:`noisy_argmax`; ``0 <= k <= len(shifts)``.

    Parameters
    ----------
    shifts : array_like
        The scores, as for :func:`noisy_argmax`.
    scale : int, float or Fraction
        The noise scale, as for :func:`noisy_argmax` (``0``: the exact top ``k``).
    k : int
        How many indices to return, ``0 <= k <= len(shifts)`` (a NumPy integer is accepted).
    noise : str or NoiseFamily, default "gumbel"
        The noise family (:func:`~dpselect.sampling.noise.get_family`).
    source : RandomSource or None, default None
        Where the random bits come from; ``None`` means the default private source.

    Returns
    -------
    numpy.ndarray of int64
        ``k`` distinct indices into ``shifts``, best first.

    Raises
    ------
    ParameterError
        A bad dtype, shape, empty ``shifts``, ``scale``, ``k``, ``noise`` or ``source``.
    DomainError
        ``shifts`` contains NaN.
    """
    arr, hi, lo = _validate_shifts(shifts)
    scale_v = _validate_scale(scale)
    k = _validate_k(k, arr.shape[0])
    family = get_family(noise)
    src = resolve_source(source)
    if k == 0:
        return np.empty(0, dtype=np.int64)
    if scale_v == 0:
        return _exact_top_k(arr, k)
    if arr.dtype.kind == "f" and (hi == math.inf or lo == -math.inf):
        pos, neg = np.isposinf(arr), np.isneginf(arr)
        return _top_k_by_class(arr, pos, neg, scale_v, k, family, src)
    return _certified_top_k(arr, scale_v, k, family, src, (hi, lo))


# ----------------------------------------------------------------------------- edges
def _exact_top_k(arr: npt.NDArray[Any], k: int) -> I64:
    """Top ``k`` of the shifts themselves (``scale == 0``), ties to the lowest index."""
    n = arr.shape[0]
    ascending_of_reversed = np.argsort(arr[::-1], kind="stable")
    descending = (n - 1 - ascending_of_reversed)[::-1]
    out: I64 = descending[:k].astype(np.int64)
    return out


def _top_k_by_class(
    arr: npt.NDArray[Any],
    pos: npt.NDArray[np.bool_],
    neg: npt.NDArray[np.bool_],
    scale: float | Fraction,
    k: int,
    family: NoiseFamily,
    src: RandomSource,
) -> I64:
    """+inf shifts first, then finite, then -inf; the noise ranks within infinite classes."""
    out: list[I64] = []
    need = k
    for mask, infinite in ((pos, True), (~(pos | neg), False), (neg, True)):
        members = np.flatnonzero(mask)
        if need == 0 or members.size == 0:
            continue
        take = min(need, members.size)
        sub = np.zeros(members.size) if infinite else arr[members]
        out.append(members[_certified_top_k(sub, scale, take, family, src)])
        need -= take
    return np.concatenate(out).astype(np.int64)


# ----------------------------------------------------------------------------- float pass
@dataclass
class _Candidates:
    """Candidates that may still be in the top ``k``, with rigorous key bounds."""

    idx: I64
    word: U64
    key: F64  # float key at the upper end of the 53-bit grid interval
    ub: F64  # rigorous upper bound of the ideal key
    lb: F64  # rigorous lower bound of the ideal key

    @staticmethod
    def empty() -> _Candidates:
        f = np.empty(0, dtype=np.float64)
        return _Candidates(np.empty(0, np.int64), np.empty(0, np.uint64), f, f.copy(), f.copy())

    def take(self, sel: npt.NDArray[Any]) -> _Candidates:
        return _Candidates(self.idx[sel], self.word[sel], self.key[sel], self.ub[sel], self.lb[sel])

    @staticmethod
    def concat(parts: list[_Candidates]) -> _Candidates:
        return _Candidates(
            np.concatenate([p.idx for p in parts]),
            np.concatenate([p.word for p in parts]),
            np.concatenate([p.key for p in parts]),
            np.concatenate([p.ub for p in parts]),
            np.concatenate([p.lb for p in parts]),
        )


def _kth_largest(values: F64, k: int) -> float:
    """The ``k``-th largest value (``-inf`` when there are fewer than ``k``)."""
    if values.shape[0] < k:
        return -math.inf
    return float(np.partition(values, values.shape[0] - k)[values.shape[0] - k])


def _reference(
    shifts: npt.NDArray[Any], scale: float, extremes: tuple[Any, Any] | None = None
) -> tuple[int | float | None, float]:
    """A common value to subtract from every shift, and the bound ``max |q|`` it leaves.

    Subtracting the same value from every shift moves every ideal key by the same amount, so
    the ranking is unchanged; it shrinks the float error bound (proportional to ``max |q|``)
    when the scores are large but close together (int64 near 2^62, floats near 1e15). It is
    used only where it helps and cannot overflow: the range ``max - min`` must fit in int64 or
    in a finite float. ``max |q|`` is returned rounded up from exact arithmetic.
    """
    hi, lo = extremes if extremes is not None else (shifts.max().item(), shifts.min().item())
    plain = max(abs(hi), abs(lo))
    q_plain = float_up(Fraction(plain) / Fraction(scale))
    if q_plain * _Q_REL_ERROR <= NOISE_ABS_ERROR:  # already dominated by the noise term
        return None, q_plain
    spread = Fraction(hi) - Fraction(lo)
    fits = spread < (1 << 63) if shifts.dtype.kind == "i" else float_up(spread) < math.inf
    if not fits:
        return None, q_plain
    return hi, float_up(spread / Fraction(scale))


def _q_values(values: npt.NDArray[Any], scale: float, ref: int | float | None) -> F64:
    """Float ``q = (value - ref) / scale`` (a new array). Every step rounds monotonically, so
    the ``q`` of a block's largest value is the largest ``q`` of the block."""
    with np.errstate(over="ignore", invalid="ignore"):
        if ref is None:
            q: F64 = np.divide(values, scale, dtype=np.float64)
            return q
        # Integers subtract exactly in int64 (the range fits: _reference checks); floats in
        # float64 (float32 converts exactly), one more rounding inside _Q_REL_ERROR's margin.
        # (float32 arithmetic here would round by 2^-24, far outside the error bound.)
        wide = np.int64 if values.dtype.kind == "i" else np.float64
        q = np.subtract(values, ref, dtype=wide).astype(np.float64, copy=False)
        np.divide(q, scale, out=q)
        return q


def _float_chunk(
    values: npt.NDArray[Any],
    idx: I64 | int,
    words: U64,
    scale: float,
    err: float,
    k: int,
    family: NoiseFamily,
    ref: int | float | None = None,
) -> _Candidates:
    """Float keys of some candidates; returns only those that may reach the top ``k``.

    ``values`` are their shifts, ``idx`` their indices (or the index of the first of a
    contiguous range), ``words`` their first 64 digits. Written for speed (about ten passes,
    mostly in place): the keys use the upper end of each word's 52-bit grid interval, so
    ``key + err`` is an upper bound.
    """
    m = words.shape[0]
    with np.errstate(over="ignore", invalid="ignore"):
        q = _q_values(values, scale, ref)
        key = family.add_noise_inplace(q, grid_upper(words))
        if not math.isfinite(err):
            key[np.isnan(key)] = math.inf  # overflowed q: unbounded, left to the exact path
        if m <= k:
            top: npt.NDArray[Any] = np.arange(m)
        elif k == 1:
            top = np.array([int(np.argmax(key))])
        else:
            top = np.argpartition(key, m - k)[m - k :]
        top_lb = family.add_noise_inplace(q[top], grid_lower(words[top])) - err
        threshold = _kth_largest(np.nan_to_num(top_lb, nan=-math.inf), k)
        # key + err >= threshold, without rounding a candidate out:
        keep = np.flatnonzero(key >= math.nextafter(threshold - err, -math.inf))
        lb = family.add_noise_inplace(q[keep], grid_lower(words[keep])) - err
        lb[np.isnan(lb)] = -math.inf
        ub = key[keep] + err
        ub[np.isnan(ub)] = math.inf  # an overflowed q (-inf + inf): unbounded
    where = keep + idx if isinstance(idx, int) else idx[keep]
    return _Candidates(where.astype(np.int64), words[keep], key[keep], ub, lb)


#: Candidates per block of the screen (a power of two) and blocks per group.
SCREEN_BLOCK = 256
_LOG2_BLOCK = SCREEN_BLOCK.bit_length() - 1
_GROUP_BLOCKS = CHUNK_SIZE // SCREEN_BLOCK
#: Vectors at least this long are screened (below, the float pass is cheap anyway). Tests
#: lower it, with ``_GROUP_BLOCKS``, to run the screen on small vectors.
_SCREEN_MIN_N = 4 * CHUNK_SIZE
_GRID = float(1 << GRID_BITS)


def _word_thresholds(q_block_max: F64, t: float, err: float, family: NoiseFamily) -> U64:
    """Per block, a word value ``W`` such that every candidate of the block whose word is
    below ``W`` has an ideal key below ``t`` (``W = 0``: no such promise).

    With ``W = J 2^12`` a word below ``W`` has ``U <= J 2^-52 =: u`` and the candidate's ideal
    key is at most ``q_max + q_err + g(u) <= Q + float_g(u) + err`` (``Q`` the block's float
    maximum; ``err`` covers the error of ``q`` and of ``g``, docs/exactness.md). ``J`` comes
    from an approximate inverse of ``g``, then this bound is checked in float with its
    rounding bounded, and blocks that fail get ``W = 0``.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        target = t - q_block_max - err
        j = np.floor(family.float_g_inverse(target) * _GRID)
        j = np.clip(j, 0.0, _GRID - 1)
        j -= np.floor(j * 2.0**-24) + 1.0  # slack, so that the check below passes
        j = np.maximum(j, 0.0)
        g = family.float_g(j / _GRID)  # exact grid points
        total = q_block_max + g + err
        bound = total + (np.abs(q_block_max) + np.abs(g) + err) * 2.0**-50  # two roundings
        ok = (bound < t) & (j > 0)
        out: U64 = np.where(ok, j, 0.0).astype(np.uint64) << np.uint64(64 - GRID_BITS)
    return out


def _chunk_words(src: RandomSource, n: int) -> Iterator[tuple[int, U64 | None]]:
    for start in range(0, n, CHUNK_SIZE):
        m = min(CHUNK_SIZE, n - start)
        # A thread-safe source is read inside the worker (the cipher and os.urandom release
        # the GIL); a seeded one is read here, in chunk order, so a run is reproducible.
        yield start, (None if src.thread_safe else src.words(m))


def _float_pass(
    shifts: npt.NDArray[Any],
    scale: float,
    k: int,
    family: NoiseFamily,
    src: RandomSource,
    extremes: tuple[Any, Any] | None = None,
) -> _Candidates:
    n = shifts.shape[0]
    ref, q_max = _reference(shifts, scale, extremes)
    err = q_max * _Q_REL_ERROR + NOISE_ABS_ERROR
    if math.isnan(err):
        err = math.inf
    if n >= max(_SCREEN_MIN_N, SCREEN_BLOCK) and math.isfinite(err):
        return _screened_float_pass(shifts, scale, k, family, src, ref, err)

    def work(start: int, words: U64 | None) -> _Candidates:
        if words is None:
            words = src.words(min(CHUNK_SIZE, n - start))
        return _float_chunk(
            shifts[start : start + words.shape[0]], start, words, scale, err, k, family, ref
        )

    pool = _Candidates.empty()

    def merge(part: _Candidates) -> None:
        nonlocal pool
        pool = _Candidates.concat([pool, part])
        threshold = _kth_largest(pool.lb, k)
        pool = pool.take(np.flatnonzero(pool.ub >= threshold))

    if n <= CHUNK_SIZE or _WORKERS == 1:
        for start, words in _chunk_words(src, n):
            merge(work(start, words))
        return pool
    with ThreadPoolExecutor(max_workers=_WORKERS) as executor:
        pending: list[Future[_Candidates]] = []
        for start, words in _chunk_words(src, n):
            pending.append(executor.submit(work, start, words))
            if len(pending) >= 2 * _WORKERS:
                merge(pending.pop(0).result())
        for fut in pending:
            merge(fut.result())
    return pool


def _screened_float_pass(
    shifts: npt.NDArray[Any],
    scale: float,
    k: int,
    family: NoiseFamily,
    src: RandomSource,
    ref: int | float | None,
    err: float,
) -> _Candidates:
    """The float pass with a screen: most candidates are dropped by comparing their word with
    a per-block threshold, without computing their key.

    Blocks of :data:`SCREEN_BLOCK` candidates are visited in decreasing order of their largest
    shift, so the running ``k``-th largest lower bound ``t`` (a certified lower bound of the
    ``k``-th largest ideal key) is high early; a candidate whose key is certainly below ``t``
    (:func:`_word_thresholds`) cannot be in the top ``k``. The survivors go through
    :func:`_float_chunk` as before. Candidate ``i`` always gets word ``i`` of a seeded source
    (read in index order up front), and ``t`` for each group is fixed when the group is
    submitted, so seeded runs are reproducible; a private source gives each group fresh words.
    """
    n = shifts.shape[0]
    nb = n // SCREEN_BLOCK
    body = shifts[: nb * SCREEN_BLOCK].reshape(nb, SCREEN_BLOCK)
    q_block_max = _q_values(body.max(axis=1), scale, ref)
    order = np.argsort(-q_block_max, kind="stable")
    all_words = None if src.thread_safe else src.words(n)
    body_words = None if all_words is None else all_words[: nb * SCREEN_BLOCK].reshape(nb, -1)

    def tail() -> _Candidates:
        start = nb * SCREEN_BLOCK
        words = src.words(n - start) if all_words is None else all_words[start:]
        return _float_chunk(shifts[start:], start, words, scale, err, k, family, ref)

    def group(blocks: I64, t: float) -> _Candidates:
        g = blocks.shape[0]
        if body_words is None:
            words2d = src.words(g * SCREEN_BLOCK).reshape(g, SCREEN_BLOCK)
        else:
            words2d = body_words[blocks]
        if t == -math.inf:
            pos: npt.NDArray[Any] = np.arange(g * SCREEN_BLOCK)
        else:
            limit = _word_thresholds(q_block_max[blocks], t, err, family)
            pos = np.flatnonzero(words2d >= limit[:, None])
        rows = blocks[pos >> _LOG2_BLOCK]
        cols = pos & (SCREEN_BLOCK - 1)
        idx = (rows << _LOG2_BLOCK) + cols
        return _float_chunk(
            body[rows, cols], idx, words2d.reshape(-1)[pos], scale, err, k, family, ref
        )

    pool = _Candidates.empty()
    t = -math.inf

    def merge(part: _Candidates) -> None:
        nonlocal pool, t
        pool = _Candidates.concat([pool, part])
        t = _kth_largest(pool.lb, k)
        pool = pool.take(np.flatnonzero(pool.ub >= t))

    if nb * SCREEN_BLOCK < n:
        merge(tail())
    groups = [order[i : i + _GROUP_BLOCKS] for i in range(0, nb, _GROUP_BLOCKS)]
    merge(group(groups[0], t))  # the best blocks first, alone: ``t`` is high from then on
    if _WORKERS == 1:
        for blocks in groups[1:]:
            merge(group(blocks, t))
        return pool
    with ThreadPoolExecutor(max_workers=_WORKERS) as executor:
        pending: list[Future[_Candidates]] = []
        for blocks in groups[1:]:
            pending.append(executor.submit(group, blocks, t))
            if len(pending) >= 2 * _WORKERS:
                merge(pending.pop(0).result())
        for fut in pending:
            merge(fut.result())
    return pool


# ----------------------------------------------------------------------------- exact path
class _ExactKey:
    """A candidate's ideal key ``q + g(U)`` as an interval that narrows on demand."""

    __slots__ = ("_bounds", "family", "index", "q", "q_bits", "source", "uniform")

    def __init__(
        self,
        index: int,
        shift: Any,
        scale: float | Fraction,
        word: int,
        family: NoiseFamily,
        source: RandomSource,
    ) -> None:
        self.index = index
        self.family = family
        self.source = source
        self.uniform = LazyUniform.from_word(word)
        self.q = (Fraction(shift), Fraction(scale))
        ratio = abs(self.q[0]) / self.q[1]
        self.q_bits = max(0, ratio.numerator.bit_length() - ratio.denominator.bit_length() + 1)
        self._bounds: tuple[Any, Any] | None = None

    def bounds(self) -> tuple[Any, Any]:
        """Arb balls ``(lo, hi)`` enclosing the ideal key's current interval."""
        if self._bounds is None:
            prec = self.uniform.nbits + 64 + self.q_bits
            with flint.ctx.workprec(prec):
                num, den = self.q
                q = flint.arb(
                    flint.fmpq(num.numerator * den.denominator, num.denominator * den.numerator)
                )
                g_lo, g_hi = self.family.arb_interval(self.uniform)
                self._bounds = (q + g_lo, q + g_hi)
        return self._bounds

    def refine(self) -> None:
        self.uniform.refine(self.source)
        self._bounds = None


def _compare_exact(a: _ExactKey, b: _ExactKey) -> int:
    """-1 when ``a``'s ideal key is larger (ranks first), +1 when smaller; never 0."""
    while True:
        a_lo, a_hi = a.bounds()
        b_lo, b_hi = b.bounds()
        if a_lo > b_hi:
            return -1
        if b_lo > a_hi:
            return 1
        # Overlapping intervals: read more digits of both uniforms (probability of another
        # overlap halves with every digit, so this ends with probability 1). The lower index
        # reads first, so a seeded or scripted run does not depend on the sort's call order.
        first, second = (a, b) if a.index < b.index else (b, a)
        first.refine()
        second.refine()


def _certified_top_k(
    shifts: npt.NDArray[Any],
    scale: float | Fraction,
    k: int,
    family: NoiseFamily,
    src: RandomSource,
    extremes: tuple[Any, Any] | None = None,
) -> I64:
    pool = _float_pass(shifts, float(scale), k, family, src, extremes)
    order = np.argsort(-pool.key, kind="stable")
    pool = pool.take(order)
    m = pool.idx.shape[0]
    prefix_min_lb = np.minimum.accumulate(pool.lb)
    suffix_max_ub = np.maximum.accumulate(pool.ub[::-1])[::-1]
    # cut[r]: everything at positions <= r certainly outranks everything after r.
    cut = np.append(prefix_min_lb[:-1] > suffix_max_ub[1:], True)
    result: list[int] = []
    start = 0
    for end in np.flatnonzero(cut):
        block = range(start, int(end) + 1)
        if len(block) == 1:
            result.append(int(pool.idx[start]))
        else:
            keys = [
                _ExactKey(
                    int(pool.idx[p]),
                    shifts[int(pool.idx[p])].item(),
                    scale,
                    int(pool.word[p]),
                    family,
                    src,
                )
                for p in block
            ]
            keys.sort(key=functools.cmp_to_key(_compare_exact))
            result.extend(key.index for key in keys)
        start = int(end) + 1
        if len(result) >= k or start >= m:
            break
    return np.asarray(result[:k], dtype=np.int64)
