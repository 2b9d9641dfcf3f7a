"""A fast cryptographically secure generator: ChaCha20 with fast key erasure, keyed by the OS.

:class:`ChaCha20Source` is the default randomness source of dpselect. It produces bytes at the
speed of the cipher (OpenSSL's ChaCha20 through the ``cryptography`` package, about 1.7 GB/s
per core here) instead of the speed of the kernel's ``getrandom`` (about 0.2 GB/s here), with
the security of the OS generator it is keyed from. The construction (docs/randomness.md):

- **State**: one 256-bit ChaCha20 key ``K``, drawn from ``os.urandom(32)``.
- **Fast key erasure** (Bernstein 2017, "Fast-key-erasure random-number generators"): every
  request first computes one ChaCha20 block ``B = ChaCha20(K, nonce 0, counter 0)`` (64
  bytes), replaces the state key by ``B[0:32]`` and uses ``B[32:64]`` as the one-time key of the
  request, whose bytes are the keystream of that one-time key (nonce 0, counter from 0). The
  old ``K`` is overwritten, so a later compromise of the state reveals nothing about earlier
  output (forward secrecy), and no key is ever used for two requests: the same stream is never
  produced twice.
- **Reseed**: after :data:`RESEED_BYTES` bytes, and in a forked child before its first byte,
  the state key becomes ``B[0:32] XOR os.urandom(32)``: uniformly random and unknown to anyone
  who does not know the fresh OS bytes, even an adversary who knew the previous state.
- **Fork safety**: ``os.register_at_fork`` reseeds every live source in the child (and drops
  its buffer); a PID check before every request does the same should the hook not run (for
  example after a raw ``os.fork`` in C code). Parent and child never share a key.
- **Thread safety**: the key update is done under a lock; the keystream of a large request is
  computed outside the lock from its own one-time key, so threads run in parallel (OpenSSL
  releases the GIL) and never share a key.
- Small requests (at most :data:`SMALL_READ` bytes) are served from a buffer of
  :data:`BUFFER_BYTES` bytes, itself one request of the construction; it is dropped on fork.

Security: if ChaCha20 is a pseudorandom function of its key, every output byte is
indistinguishable from uniform to anyone without the OS seed (Bernstein 2017, Section 2; the
same argument as NIST SP 800-90A's CTR_DRBG, whose update also derives the next key from the
cipher's own output). The known-answer tests check the keystream against RFC 8439.
"""

from __future__ import annotations

import os
import threading
import weakref

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

from ..core.errors import ParameterError
from .random_source import RandomSource

__all__ = ["BUFFER_BYTES", "RESEED_BYTES", "SMALL_READ", "ChaCha20Source", "chacha20_keystream"]

#: Bytes produced between two reseeds from ``os.urandom`` (1 GiB).
RESEED_BYTES = 1 << 30
#: Requests of at most this many bytes are served from the buffer.
SMALL_READ = 256
#: Size of the buffer that serves small requests.
BUFFER_BYTES = 4096
#: Largest keystream made from one one-time key (OpenSSL's 32-bit block counter allows 256 GiB).
_MAX_PIECE = 1 << 30
_ZEROS = bytes(1 << 20)
_NONCE_ZERO = bytes(12)
#: Tests set this to ``False`` to show that the fork test fails without the reseed.
_RESEED_ON_FORK = True


def chacha20_keystream(key: bytes, n: int, counter: int = 0, nonce: bytes = _NONCE_ZERO) -> bytes:
    """``n`` bytes of the RFC 8439 ChaCha20 keystream of ``key`` (32 bytes) and ``nonce`` (12
    bytes), starting at block ``counter`` (OpenSSL via ``cryptography``).

    Parameters
    ----------
    key : bytes
        The 256-bit key (32 bytes).
    n : int
        The number of keystream bytes, ``>= 0``.
    counter : int, default 0
        The first 64-byte block's counter, in ``[0, 2^32)``.
    nonce : bytes, default 12 zero bytes
        The 96-bit nonce (12 bytes).

    Returns
    -------
    bytes
        The ``n`` keystream bytes (the encryption of ``n`` zero bytes).

    Raises
    ------
    ParameterError
        ``key`` is not 32 bytes or ``nonce`` not 12 bytes.
    """
    if len(key) != 32 or len(nonce) != 12:
        raise ParameterError("key must be 32 bytes and nonce 12 bytes")
    full_nonce = counter.to_bytes(4, "little") + nonce
    enc = Cipher(algorithms.ChaCha20(key, full_nonce), mode=None).encryptor()
    if n <= len(_ZEROS):
        return enc.update(memoryview(_ZEROS)[:n])
    return enc.update(bytes(n))


_live_sources: weakref.WeakSet[ChaCha20Source] = weakref.WeakSet()


class ChaCha20Source(RandomSource):
    """ChaCha20 keystream with fast key erasure, keyed and reseeded from ``os.urandom``.

    Private (``private = True``) and thread-safe; safe across ``fork``. See the module
    docstring and docs/randomness.md for the construction and why it is secure.
    """

    private = True
    thread_safe = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key = os.urandom(32)
        self._pid = os.getpid()
        self._since_reseed = 0
        self._buf = b""
        self._pos = 0
        _live_sources.add(self)

    # -- the construction ----------------------------------------------------------------
    def _reseed_locked(self) -> None:
        """State key := (first half of the next block) XOR fresh OS bytes; drop the buffer."""
        block = chacha20_keystream(self._key, 32)
        fresh = os.urandom(32)
        self._key = bytes(a ^ b for a, b in zip(block, fresh, strict=True))
        self._since_reseed = 0
        self._buf, self._pos = b"", 0
        self._pid = os.getpid()

    def _one_time_key_locked(self, nbytes: int) -> bytes:
        """Rotate the state key (fast key erasure) and return a key for ``nbytes`` of output."""
        if _RESEED_ON_FORK and self._pid != os.getpid():
            self._reseed_locked()
        if self._since_reseed >= RESEED_BYTES:
            self._reseed_locked()
        block = chacha20_keystream(self._key, 64)
        self._key = block[:32]
        self._since_reseed += nbytes + 64
        return block[32:]

    def _after_fork_in_child(self) -> None:
        self._lock = threading.Lock()
        self._reseed_locked()

    # -- RandomSource ---------------------------------------------------------------------
    def read(self, n: int) -> bytes:
        """``n`` bytes of the generator, each request under a fresh one-time key.

        Parameters
        ----------
        n : int
            The number of bytes, ``>= 0``; at most :data:`SMALL_READ` bytes come from the
            buffer, larger reads from their own one-time keys (1 GiB per key).

        Returns
        -------
        bytes
            ``n`` random bytes.

        Raises
        ------
        ParameterError
            ``n`` is negative.
        """
        if n < 0:
            raise ParameterError(f"n must be non-negative, got {n}")
        if n <= SMALL_READ:
            with self._lock:
                if (_RESEED_ON_FORK and self._pid != os.getpid()) or self._pos + n > len(self._buf):
                    key = self._one_time_key_locked(BUFFER_BYTES)
                    self._buf, self._pos = chacha20_keystream(key, BUFFER_BYTES), 0
                out = self._buf[self._pos : self._pos + n]
                self._pos += n
                return out
        pieces = []
        for start in range(0, n, _MAX_PIECE):
            m = min(_MAX_PIECE, n - start)
            with self._lock:
                key = self._one_time_key_locked(m)
            pieces.append(chacha20_keystream(key, m))  # outside the lock: threads in parallel
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def __repr__(self) -> str:
        return "ChaCha20Source()"


def _after_fork_in_child() -> None:
    if not _RESEED_ON_FORK:
        return
    for src in list(_live_sources):
        src._after_fork_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)
