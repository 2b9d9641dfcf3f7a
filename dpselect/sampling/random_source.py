"""The interface every randomness source implements (:class:`RandomSource`).

Its own module so that the sources defined elsewhere (:mod:`dpselect.sampling.drbg`) and the
named-source registry in :mod:`dpselect.sampling.source`, which creates them, import it without
importing each other. :mod:`dpselect.sampling.source` re-exports it.

Words: ``words(n)`` returns ``n`` uint64 values, each the first 64 binary digits of a uniform
number in (0, 1): word ``w`` means the uniform lies in ``[w / 2^64, (w + 1) / 2^64]``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np
import numpy.typing as npt

__all__ = ["U64", "RandomSource"]

U64 = npt.NDArray[np.uint64]


class RandomSource(ABC):
    """A stream of independent, uniformly random bytes."""

    #: ``True`` only for sources whose output an adversary cannot predict.
    private: ClassVar[bool] = False
    #: ``True`` when ``words`` may be called from several threads at once with no change in
    #: meaning (the stream order does not matter). Seeded sources are sequential.
    thread_safe: ClassVar[bool] = False

    @abstractmethod
    def read(self, n: int) -> bytes:
        """``n`` random bytes.

        Parameters
        ----------
        n : int
            The number of bytes, ``>= 0``.

        Returns
        -------
        bytes
            ``n`` independent, uniformly random bytes.
        """

    def words(self, n: int) -> U64:
        """``n`` random 64-bit words (little-endian), as a NumPy array.

        Parameters
        ----------
        n : int
            The number of words, ``>= 0`` (``8 n`` bytes are read).

        Returns
        -------
        numpy.ndarray of uint64
            ``n`` words, each the first 64 binary digits of a uniform in (0, 1).
        """
        return np.frombuffer(self.read(8 * n), dtype="<u8").astype(np.uint64, copy=False)

    def bits(self, k: int) -> int:
        """A uniformly random integer in ``[0, 2^k)``.

        Parameters
        ----------
        k : int
            The number of random bits; ``k <= 0`` reads nothing and gives 0.

        Returns
        -------
        int
            The top ``k`` bits of ``ceil(k / 8)`` bytes read (little-endian).
        """
        if k <= 0:
            return 0
        nbytes = (k + 7) // 8
        value = int.from_bytes(self.read(nbytes), "little")
        return value >> (8 * nbytes - k)
