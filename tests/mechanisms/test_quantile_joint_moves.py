"""The joint mechanism's row moves, read 5 bits a row and 12 rows a word: the same law.

Each row's move ``t`` must be uniform on ``0..31`` and independent of the other rows' moves, as
when every row read a word of its own (the privacy argument couples the common rows' moves of
two neighbouring datasets: it needs the moves i.i.d. uniform, nothing else). Chi-square tests at
a false-failure rate of 1e-6 (tests/gof.py) on the moves of single rows, of neighbouring rows in
one word, and of rows across two words.
"""

from __future__ import annotations

import numpy as np

from dpselect.mechanisms import quantile_joint as qj
from dpselect.sampling.source import InsecureSeededSource
from tests.gof import assert_fits, chi2_statistic, chi2_threshold

G = qj.JOINT_SUBPOINTS
BITS = G.bit_length() - 1


def _moves(words):
    return (np.asarray(words, dtype=np.uint64) >> np.uint64(64 - BITS)).astype(np.int64)


def _pair_counts(t, first):
    """Counts of ``(t[i], t[i + 1])`` over the rows ``i`` in ``first``."""
    return np.bincount(t[first] * G + t[first + 1], minlength=G * G)


def test_words_hold_only_the_moves_and_are_reproducible():
    a = qj.joint_move_words(InsecureSeededSource(3), 1000)
    b = qj.joint_move_words(InsecureSeededSource(3), 1000)
    assert a.dtype == np.uint64 and a.shape == (1000,)
    assert np.array_equal(a, b)
    assert not np.any(a & np.uint64((1 << (64 - BITS)) - 1))  # only the top bits are set
    # the first row of each word is its top 5 bits, the second the next 5
    raw = InsecureSeededSource(3).words(1)[0]
    assert _moves(a[:2]).tolist() == [int(raw) >> 59, (int(raw) >> 54) & 31]


def _check(t):
    per = qj.MOVES_PER_WORD
    n = t.shape[0]
    assert_fits(np.bincount(t, minlength=G), np.full(G, 1 / G))
    i = np.arange(n - 1)
    inside = i[(i % per) != per - 1]  # rows i, i + 1 from the same word
    across = i[(i % per) == per - 1]  # the last row of a word and the first of the next
    uniform_pairs = np.full(G * G, 1 / G**2)
    assert_fits(_pair_counts(t, inside), uniform_pairs)
    assert_fits(_pair_counts(t, across), uniform_pairs)


def test_moves_are_uniform_and_independent():
    """600,000 rows: single moves (32 cells), pairs in a word and across words (1,024 cells,
    about 550,000 and 50,000 pairs): a factor-2 bias on one cell or a shared bit between
    neighbours is far beyond the thresholds."""
    _check(_moves(qj.joint_move_words(InsecureSeededSource(8), 600_000)))


def test_overlapping_fields_fail():
    """The same checks fail when neighbouring rows share one bit (fields 4 bits apart)."""
    raw = InsecureSeededSource(9).words(50_000)
    fields = np.arange(qj.MOVES_PER_WORD, dtype=np.uint64) * np.uint64(BITS - 1)
    top = np.uint64(((1 << BITS) - 1) << (64 - BITS))
    words = (np.left_shift(raw[:, None], fields[None, :]) & top).reshape(-1)
    t = _moves(words)
    i = np.arange(t.shape[0] - 1)
    inside = i[(i % qj.MOVES_PER_WORD) != qj.MOVES_PER_WORD - 1]
    stat, df = chi2_statistic(_pair_counts(t, inside), np.full(G * G, 1 / G**2))
    assert stat > chi2_threshold(df)


def test_moved_intervals_in_chunks_match_the_reference(monkeypatch):
    """The rows are moved and counted chunk by chunk: every chunk size gives the reference's
    intervals and counts bit for bit."""
    from tests.mechanisms import joint_reference as ref

    rng = np.random.default_rng(13)
    x = np.concatenate([rng.normal(50, 30, 3000), [0.0, 100.0, -5.0, 105.0]])
    words = rng.integers(0, 2**64, x.shape[0], dtype=np.uint64)
    want = ref.joint_moved_intervals(x, 0.0, 100.0, 0.05, words)
    for chunk in (1, 7, 1000, 1 << 16):
        monkeypatch.setattr(qj, "_MOVE_CHUNK", chunk)
        got = qj.joint_moved_intervals(x, 0.0, 100.0, 0.05, words)
        assert np.array_equal(got[0].view(np.int64), want[0].view(np.int64)), chunk
        assert np.array_equal(got[1], want[1]) and got[2] == want[2], chunk
