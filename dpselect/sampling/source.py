"""Randomness sources: where every random bit of dpselect comes from.

Like NumPy's split between a ``BitGenerator`` and the ``Generator`` that consumes its bits, a
:class:`RandomSource` only produces bits; the samplers in this package turn them into noise.

- :class:`~dpselect.sampling.drbg.ChaCha20Source` (the default, ``"chacha20"``) is a
  ChaCha20 generator with fast key erasure, keyed and reseeded from ``os.urandom``: private,
  at the speed of the cipher (docs/randomness.md).
- :class:`SystemRandomSource` (``"os"``) reads the operating system's CSPRNG
  (``os.urandom``) in large blocks. Small reads are served from a buffer that is discarded in a
  forked child (``os.register_at_fork``), so parent and child never share random bytes.
- :class:`InsecureSeededSource` is reproducible from a seed and **not private**: its type and
  its ``private`` attribute say so. It exists for tests and reproducible demos and is used only
  when passed explicitly as ``source=``. No global random state is read or written anywhere.
- :class:`ScriptedSource` replays given bytes first (to force rare paths in tests), then
  continues from another source. It is not private either.

Words: ``words(n)`` returns ``n`` uint64 values, each the first 64 binary digits of a uniform
number in (0, 1): word ``w`` means the uniform lies in ``[w / 2^64, (w + 1) / 2^64]``.
"""

from __future__ import annotations

import os
import threading
import weakref

import numpy as np

from ..core.errors import ParameterError
from .random_source import U64, RandomSource

__all__ = [
    "SOURCE_NAMES",
    "InsecureSeededSource",
    "RandomSource",
    "ScriptedSource",
    "SystemRandomSource",
    "default_source",
    "resolve_source",
    "source_by_name",
]

_BLOCK = 1 << 16
_live_system_sources: weakref.WeakSet[SystemRandomSource] = weakref.WeakSet()


class SystemRandomSource(RandomSource):
    """The operating system's CSPRNG, buffered in blocks; safe across ``fork``."""

    private = True
    thread_safe = True

    def __init__(self, block_size: int = _BLOCK) -> None:
        if block_size < 64:
            raise ParameterError("block_size must be at least 64 bytes")
        self._block_size = block_size
        self._lock = threading.Lock()
        self._buf = b""
        self._pos = 0
        self._pid = os.getpid()
        _live_system_sources.add(self)

    def _discard(self) -> None:
        self._buf, self._pos, self._pid = b"", 0, os.getpid()

    def read(self, n: int) -> bytes:
        """``n`` bytes of ``os.urandom``, small reads served from the block buffer.

        Parameters
        ----------
        n : int
            The number of bytes, ``>= 0``; reads of at least ``block_size`` bytes go straight
            to ``os.urandom``.

        Returns
        -------
        bytes
            ``n`` random bytes, never shared with a forked child or parent.

        Raises
        ------
        ParameterError
            ``n`` is negative.
        """
        if n < 0:
            raise ParameterError(f"n must be non-negative, got {n}")
        if n >= self._block_size:
            return os.urandom(n)  # large reads go straight to the kernel (GIL released)
        with self._lock:
            if self._pid != os.getpid():  # belt and braces beside the fork hook
                self._discard()
            if self._pos + n > len(self._buf):
                self._buf, self._pos = os.urandom(self._block_size), 0
            out = self._buf[self._pos : self._pos + n]
            self._pos += n
            return out

    def __repr__(self) -> str:
        return "SystemRandomSource()"


def _after_fork_in_child() -> None:
    for src in list(_live_system_sources):
        src._discard()
        src._lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


class InsecureSeededSource(RandomSource):
    """A reproducible stream from ``seed`` (PCG64). NOT PRIVATE: for tests and demos only."""

    private = False
    thread_safe = False

    def __init__(self, seed: int) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ParameterError(f"seed must be a non-negative int, got {seed!r}")
        self.seed = seed
        self._bitgen = np.random.PCG64(seed)

    def read(self, n: int) -> bytes:
        """The next ``n`` bytes of the seeded stream.

        Parameters
        ----------
        n : int
            The number of bytes, ``>= 0``. ``ceil(n / 8)`` words of the stream are used (the
            unused bytes of the last one are dropped).

        Returns
        -------
        bytes
            ``n`` bytes, the same for the same seed and the same calls.

        Raises
        ------
        ParameterError
            ``n`` is negative.
        """
        if n < 0:
            raise ParameterError(f"n must be non-negative, got {n}")
        words = -(-n // 8)
        raw = self._bitgen.random_raw(words).astype("<u8", copy=False)
        return raw.tobytes()[:n]

    def words(self, n: int) -> U64:
        """The next ``n`` 64-bit outputs of the seeded stream (as :meth:`RandomSource.words`).

        Parameters
        ----------
        n : int
            The number of words, ``>= 0``.

        Returns
        -------
        numpy.ndarray of uint64
            ``n`` words, the same values :meth:`read` of ``8 n`` bytes would give.
        """
        return np.asarray(self._bitgen.random_raw(n), dtype=np.uint64)

    def __repr__(self) -> str:
        return f"InsecureSeededSource(seed={self.seed})"


class ScriptedSource(RandomSource):
    """Replays ``script`` byte for byte, then continues from ``then``. NOT PRIVATE."""

    private = False
    thread_safe = False

    def __init__(self, script: bytes, then: RandomSource | None = None) -> None:
        self._script = bytes(script)
        self._pos = 0
        self._then = then if then is not None else InsecureSeededSource(0)

    @classmethod
    def from_words(cls, words: list[int], then: RandomSource | None = None) -> ScriptedSource:
        """A source whose first ``words(len(words))`` call returns ``words``.

        Parameters
        ----------
        words : list of int
            Words in ``[0, 2^64)``, replayed as 8 little-endian bytes each.
        then : RandomSource or None, default None
            The source read after the script; ``None``: ``InsecureSeededSource(0)``.

        Returns
        -------
        ScriptedSource
            The source.
        """
        raw = b"".join(int(w).to_bytes(8, "little") for w in words)
        return cls(raw, then)

    @property
    def consumed(self) -> int:
        """How many scripted bytes have been read."""
        return min(self._pos, len(self._script))

    @property
    def exhausted(self) -> bool:
        """Whether every scripted byte has been read."""
        return self._pos >= len(self._script)

    def read(self, n: int) -> bytes:
        """The next ``n`` scripted bytes, continued from ``then`` once the script runs out.

        Parameters
        ----------
        n : int
            The number of bytes, ``>= 0``.

        Returns
        -------
        bytes
            ``n`` bytes: the unread part of the script first, then bytes of ``then``.

        Raises
        ------
        ParameterError
            ``n`` is negative.
        """
        if n < 0:
            raise ParameterError(f"n must be non-negative, got {n}")
        take = self._script[self._pos : self._pos + n]
        self._pos += len(take)
        if len(take) < n:
            take += self._then.read(n - len(take))
        return take

    def __repr__(self) -> str:
        return f"ScriptedSource({len(self._script)} bytes, then={self._then!r})"


#: Names accepted by :func:`source_by_name` and ``resolve_source``: both private.
SOURCE_NAMES = ("chacha20", "os")
_named: dict[str, RandomSource] = {}
_default_lock = threading.Lock()


def source_by_name(name: str) -> RandomSource:
    """The process-wide private source called ``name``: ``"chacha20"`` (the default,
    :class:`~dpselect.sampling.drbg.ChaCha20Source`) or ``"os"`` (:class:`SystemRandomSource`).

    Parameters
    ----------
    name : str
        One of :data:`SOURCE_NAMES`.

    Returns
    -------
    RandomSource
        The one source of that name in this process, created on first use (private).

    Raises
    ------
    ParameterError
        ``name`` is not one of :data:`SOURCE_NAMES`.
    """
    if name not in SOURCE_NAMES:
        raise ParameterError(f"source name must be one of {list(SOURCE_NAMES)}, got {name!r}")
    with _default_lock:
        src = _named.get(name)
        if src is None:
            if name == "os":
                src = SystemRandomSource()
            else:
                # imports cryptography: only when sampling; drbg imports random_source, not
                # this module (no cycle)
                from .drbg import ChaCha20Source

                src = ChaCha20Source()
            _named[name] = src
        return src


def default_source() -> RandomSource:
    """The process-wide default source: the ChaCha20 generator keyed from the OS (private)."""
    return source_by_name("chacha20")


def resolve_source(source: RandomSource | str | None) -> RandomSource:
    """``source`` itself, the named private source (``"chacha20"``, ``"os"``), or the default
    when ``None``; anything else is refused.

    Parameters
    ----------
    source : RandomSource, str or None
        A source, the name of a private one (:func:`source_by_name`), or ``None`` for
        :func:`default_source`.

    Returns
    -------
    RandomSource
        The source to read from.

    Raises
    ------
    ParameterError
        ``source`` is of another type, or an unknown name.
    """
    if source is None:
        return default_source()
    if isinstance(source, str):
        return source_by_name(source)
    if not isinstance(source, RandomSource):
        raise ParameterError(f"source must be a RandomSource or None, got {type(source).__name__}")
    return source
