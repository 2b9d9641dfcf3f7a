"""Randomness sources and lazy uniforms: privacy labels, reproducibility, fork safety."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from scipy import stats

from dpselect.core.errors import ParameterError
from dpselect.sampling.drbg import ChaCha20Source
from dpselect.sampling.source import (
    InsecureSeededSource,
    RandomSource,
    ScriptedSource,
    SystemRandomSource,
    default_source,
    resolve_source,
    source_by_name,
)
from dpselect.sampling.uniform import LazyUniform
from tests.gof import ALPHA


def test_default_is_the_private_csprng():
    src = resolve_source(None)
    assert isinstance(src, ChaCha20Source) and src is default_source()
    assert src.private and src.thread_safe
    assert resolve_source("chacha20") is src
    os_src = resolve_source("os")
    assert isinstance(os_src, SystemRandomSource) and os_src is source_by_name("os")
    assert os_src.private and os_src.thread_safe
    assert not InsecureSeededSource(1).private
    assert not ScriptedSource(b"").private
    assert "Insecure" in type(InsecureSeededSource(1)).__name__


def test_seeded_source_is_reproducible_and_independent_of_global_state():
    np.random.seed(123)  # the global NumPy state must not matter
    a = InsecureSeededSource(5).words(10)
    np.random.seed(456)
    b = InsecureSeededSource(5).words(10)
    assert a.tolist() == b.tolist()
    assert InsecureSeededSource(6).words(10).tolist() != a.tolist()
    assert len(InsecureSeededSource(5).read(13)) == 13


def test_scripted_source_replays_then_continues():
    src = ScriptedSource.from_words([7, 2**64 - 1], then=InsecureSeededSource(1))
    assert src.words(2).tolist() == [7, 2**64 - 1]
    assert src.exhausted and src.consumed == 16
    assert src.words(1).tolist() == InsecureSeededSource(1).words(1).tolist()


def test_bits_range_and_uniformity():
    src = InsecureSeededSource(3)
    values = [src.bits(3) for _ in range(8000)]
    assert min(values) == 0 and max(values) == 7
    counts = np.bincount(values, minlength=8)
    assert stats.chisquare(counts).pvalue > ALPHA
    assert src.bits(0) == 0
    assert 0 <= src.bits(100) < 2**100


def test_system_words_are_uniform_bits():
    words = SystemRandomSource().words(20_000)
    bits = np.unpackbits(words.view(np.uint8))
    # each bit position is fair: a binomial test on the total at false-failure rate 1e-6
    assert stats.binomtest(int(bits.sum()), bits.size).pvalue > ALPHA


def test_small_reads_are_buffered_and_distinct_across_threads():
    src = SystemRandomSource(block_size=4096)
    out: list[bytes] = []
    lock = threading.Lock()

    def reader() -> None:
        for _ in range(200):
            chunk = src.read(16)
            with lock:
                out.append(chunk)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(out) == 800 and len(set(out)) == 800  # no byte range handed out twice


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_does_not_reuse_the_parents_buffer():
    src = SystemRandomSource(block_size=4096)
    src.read(8)  # fill the buffer: 4088 bytes remain buffered in the parent
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: read from the inherited source and report
        os.close(r)
        os.write(w, src.read(64))
        os._exit(0)
    os.close(w)
    child = b""
    while len(child) < 64:
        chunk = os.read(r, 64 - len(child))
        if not chunk:
            break
        child += chunk
    os.close(r)
    os.waitpid(pid, 0)
    parent = src.read(64)
    assert len(child) == 64
    assert child != parent  # without the fork hook both would be the same buffered bytes


def test_source_errors():
    with pytest.raises(ParameterError, match="seed"):
        InsecureSeededSource(-1)
    with pytest.raises(ParameterError, match="seed"):
        InsecureSeededSource(1.5)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="non-negative"):
        SystemRandomSource().read(-1)
    with pytest.raises(ParameterError, match="block_size"):
        SystemRandomSource(block_size=8)
    with pytest.raises(ParameterError, match="RandomSource"):
        resolve_source(np.random.default_rng(0))  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="source name"):
        resolve_source("urandom")
    assert issubclass(SystemRandomSource, RandomSource)


def test_lazy_uniform_refines_and_knows_its_ends():
    u = LazyUniform.from_word(0)
    assert u.at_zero and not u.at_one and u.nbits == 64
    u.refine(ScriptedSource.from_words([5]))
    assert (u.prefix, u.nbits) == (5, 128) and not u.at_zero
    top = LazyUniform.from_word(2**64 - 1)
    assert top.at_one
    top.refine(ScriptedSource.from_words([2**64 - 1]))
    assert top.at_one and top.nbits == 128
    top.refine(ScriptedSource.from_words([0]))
    assert not top.at_one
    fresh = LazyUniform.sample(InsecureSeededSource(2), nbits=10)
    assert 0 <= fresh.prefix < 2**10 and fresh.nbits == 10


def test_scripted_source_refuses_a_negative_read() -> None:
    from dpselect.core.errors import ParameterError
    from dpselect.sampling.source import ScriptedSource

    source = ScriptedSource(bytes(6))
    with pytest.raises(ParameterError, match="non-negative"):
        source.read(-1)
    assert source.read(6) == bytes(6)  # nothing was consumed
