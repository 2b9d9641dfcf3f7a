"""The ChaCha20 generator: cipher test vectors, the construction, fork/thread safety, fair bits."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from scipy import stats

from dpselect.core.errors import ParameterError
from dpselect.sampling import drbg
from dpselect.sampling.drbg import ChaCha20Source, chacha20_keystream
from tests.gof import ALPHA

# RFC 8439, Section 2.3.2 (block function test vector): key 00:01:...:1f, nonce
# 00:00:00:09:00:00:00:4a:00:00:00:00, block counter 1; the serialized block.
RFC8439_232 = bytes.fromhex(
    "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
    "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e"
)
# RFC 8439, Appendix A.1, test vector #1: all-zero key and nonce, block counter 0.
RFC8439_A1_1 = bytes.fromhex(
    "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
    "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586"
)
# RFC 8439, Appendix A.1, test vector #2: all-zero key and nonce, block counter 1.
RFC8439_A1_2 = bytes.fromhex(
    "9f07e7be5551387a98ba977c732d080dcb0f29a048e3656912c6533e32ee7aed"
    "29b721769ce64e43d57133b074d839d531ed1f28510afb45ace10a1f4b794d6f"
)


def test_keystream_matches_rfc8439_vectors():
    key = bytes(range(32))
    nonce = bytes.fromhex("000000090000004a00000000")
    assert chacha20_keystream(key, 64, counter=1, nonce=nonce) == RFC8439_232
    assert chacha20_keystream(bytes(32), 64) == RFC8439_A1_1
    assert chacha20_keystream(bytes(32), 64, counter=1) == RFC8439_A1_2
    # one call over two blocks is the two blocks in order (the counter advances)
    assert chacha20_keystream(bytes(32), 128) == RFC8439_A1_1 + RFC8439_A1_2
    big = chacha20_keystream(bytes(32), (1 << 20) + 64)  # beyond the cached zero buffer
    assert big[:64] == RFC8439_A1_1 and len(big) == (1 << 20) + 64
    with pytest.raises(ParameterError, match="32 bytes"):
        chacha20_keystream(bytes(16), 64)


def _fresh(key: bytes) -> ChaCha20Source:
    src = ChaCha20Source()
    src._key = key
    return src


def test_construction_is_fast_key_erasure():
    """Each request: B = ChaCha20(K); K := B[:32]; output = keystream of the key B[32:64]."""
    k0 = bytes(range(32))
    src = _fresh(k0)
    block = chacha20_keystream(k0, 64)
    assert src.read(1000) == chacha20_keystream(block[32:], 1000)
    assert src._key == block[:32]  # the old key is gone (forward secrecy)
    block2 = chacha20_keystream(block[:32], 64)
    # a small read fills the buffer with one request of BUFFER_BYTES
    buffer = chacha20_keystream(block2[32:], drbg.BUFFER_BYTES)
    assert src.read(16) == buffer[:16]
    assert src.read(8) == buffer[16:24]
    assert src._key == block2[:32]
    assert src.words(3).tolist() == np.frombuffer(buffer[24:48], "<u8").tolist()


def test_reseed_after_the_byte_budget_mixes_in_os_bytes(monkeypatch):
    k0 = bytes(32)
    src = _fresh(k0)
    monkeypatch.setattr(drbg, "RESEED_BYTES", 1000)
    fresh = bytes(range(100, 132))
    calls: list[int] = []

    def fake_urandom(n: int) -> bytes:
        calls.append(n)
        return fresh[:n]

    src.read(2000)  # now past the budget
    assert calls == []
    state = src._key
    monkeypatch.setattr(os, "urandom", fake_urandom)
    out = src.read(500)
    monkeypatch.undo()
    assert calls == [32]
    reseeded = bytes(a ^ b for a, b in zip(chacha20_keystream(state, 32), fresh, strict=True))
    block = chacha20_keystream(reseeded, 64)
    assert out == chacha20_keystream(block[32:], 500)


def test_outputs_never_repeat_across_requests_and_instances():
    a, b = ChaCha20Source(), ChaCha20Source()
    seen = {a.read(32) for _ in range(500)} | {b.read(32) for _ in range(500)}
    seen |= {a.read(1024)[:32] for _ in range(100)}
    assert len(seen) == 1100


def _read_in_child(src: ChaCha20Source, n: int) -> bytes:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: read from the inherited source and report
        os.close(r)
        os.write(w, src.read(n))
        os._exit(0)
    os.close(w)
    child = b""
    while len(child) < n:
        chunk = os.read(r, n - len(child))
        if not chunk:
            break
        child += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return child


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.parametrize("reseed", [True, False])
def test_forked_child_gets_its_own_stream(monkeypatch, reseed):
    """With the fork reseed the streams differ; without it (the broken variant) they coincide,
    which shows the check can fail."""
    monkeypatch.setattr(drbg, "_RESEED_ON_FORK", reseed)
    src = ChaCha20Source()
    src.read(8)  # fill the small-read buffer
    for n in (64, 1000):  # a buffered read, then a read from the key state
        child = _read_in_child(src, n)
        parent = src.read(n)
        assert len(child) == n
        assert (child != parent) is reseed


def test_threads_get_distinct_bytes():
    src = ChaCha20Source()
    out: list[bytes] = []
    lock = threading.Lock()

    def reader() -> None:
        for i in range(300):
            chunk = src.read(16) if i % 3 else src.read(5000)[:16]
            with lock:
                out.append(chunk)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(out) == 1200 and len(set(out)) == 1200


def _byte_chi2_pvalue(data: bytes) -> float:
    counts = np.bincount(np.frombuffer(data, np.uint8), minlength=256)
    return float(stats.chisquare(counts).pvalue)


def _bit_pvalues(words: np.ndarray) -> list[float]:
    bits = np.unpackbits(words.view(np.uint8)).reshape(words.size, 64)
    ones = bits.sum(axis=0)
    return [float(stats.binomtest(int(c), words.size).pvalue) for c in ones]


def test_fair_bits_and_bytes():
    """Byte values uniform (chi-square, 255 df) and every bit position of a word fair
    (binomial, Bonferroni over 64 positions), each at false-failure rate 1e-6."""
    src = ChaCha20Source()
    data = src.read(1 << 20) + b"".join(src.read(64) for _ in range(4096))
    assert _byte_chi2_pvalue(data) > ALPHA
    assert min(_bit_pvalues(src.words(1 << 16))) > ALPHA / 64
    # broken variants are caught: one byte in 256 stuck at zero; one bit set 52% of the time
    broken = bytearray(data)
    broken[::256] = bytes(len(broken[::256]))
    assert _byte_chi2_pvalue(bytes(broken)) < ALPHA
    words = src.words(1 << 16).copy()
    rng = np.random.default_rng(0)
    words[rng.random(words.size) < 0.04] |= np.uint64(1)  # P[bit 0 = 1] = 0.52
    assert min(_bit_pvalues(words)) < ALPHA / 64


def test_errors_and_labels():
    src = ChaCha20Source()
    assert src.private and src.thread_safe and "ChaCha20" in repr(src)
    with pytest.raises(ParameterError, match="non-negative"):
        src.read(-1)
    assert src.read(0) == b""
    assert len(src.read(300)) == 300 and len(src.read(200)) == 200
