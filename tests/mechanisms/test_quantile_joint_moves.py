"""The joint mechanism's row moves, read ``log2(G)`` bits a row (``G = JOINT_SUBPOINTS = 16``: 4
bits, 16 rows a word; ``JOINT_FINE_SUBPOINTS = 32``: 5 bits, 12 rows): the same law as a word a
row.

Each row's move ``t`` must be uniform on ``0..G-1`` and independent of the other rows' moves, as
when every row read a word of its own (the privacy argument couples the common rows' moves of
two neighbouring datasets: it needs the moves i.i.d. uniform, nothing else). Chi-square tests at
a false-failure rate of 1e-6 (tests/gof.py) on the moves of single rows, of neighbouring rows in
one word, and of rows across two words.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpselect.mechanisms import quantile_joint_moves as qjm
from dpselect.sampling.source import InsecureSeededSource
from tests.gof import assert_fits, chi2_statistic, chi2_threshold

G = qjm.JOINT_SUBPOINTS
BITS = G.bit_length() - 1


def _moves(words, g=G):
    bits = g.bit_length() - 1
    return (np.asarray(words, dtype=np.uint64) >> np.uint64(64 - bits)).astype(np.int64)


def _pair_counts(t, first, g=G):
    """Counts of ``(t[i], t[i + 1])`` over the rows ``i`` in ``first``."""
    return np.bincount(t[first] * g + t[first + 1], minlength=g * g)


def test_subpoints_follow_the_per_row_epsilon():
    assert qjm.MOVES_PER_WORD == 64 // BITS == 16 and G == 16
    assert qjm.joint_subpoints(None) == qjm.joint_subpoints(1) == qjm.joint_subpoints(2) == G
    assert qjm.joint_subpoints(2.0001) == qjm.joint_subpoints(50) == qjm.JOINT_FINE_SUBPOINTS == 32


def test_words_hold_only_the_moves_and_are_reproducible():
    a = qjm.joint_move_words(InsecureSeededSource(3), 1000)
    b = qjm.joint_move_words(InsecureSeededSource(3), 1000)
    assert a.dtype == np.uint64 and a.shape == (1000,)
    assert np.array_equal(a, b)
    assert not np.any(a & np.uint64((1 << (64 - BITS)) - 1))  # only the top bits are set
    # the first row of each word is its top log2(G) bits, the second the next ones
    raw = int(InsecureSeededSource(3).words(1)[0])
    assert _moves(a[:2]).tolist() == [raw >> (64 - BITS), (raw >> (64 - 2 * BITS)) & (G - 1)]


def _check(t, g=G):
    per = 64 // (g.bit_length() - 1)
    n = t.shape[0]
    assert_fits(np.bincount(t, minlength=g), np.full(g, 1 / g))
    i = np.arange(n - 1)
    inside = i[(i % per) != per - 1]  # rows i, i + 1 from the same word
    across = i[(i % per) == per - 1]  # the last row of a word and the first of the next
    uniform_pairs = np.full(g * g, 1 / g**2)
    assert_fits(_pair_counts(t, inside, g), uniform_pairs)
    assert_fits(_pair_counts(t, across, g), uniform_pairs)


@pytest.mark.parametrize("g", [G, qjm.JOINT_FINE_SUBPOINTS])
def test_moves_are_uniform_and_independent(g):
    """600,000 rows: single moves (``G`` cells), pairs in a word and across words (``G^2``
    cells; ``G = 16``: 256 cells, about 560,000 and 37,500 pairs; ``G = 32``: 1,024 cells,
    about 550,000 and 50,000 pairs): a factor-2 bias on one cell or a shared bit between
    neighbours is far beyond the thresholds (``test_overlapping_fields_fail``,
    ``test_a_biased_move_fails``)."""
    words = qjm.joint_move_words(InsecureSeededSource(8), 600_000, g)
    assert not np.any(words & np.uint64((1 << (64 - (g.bit_length() - 1))) - 1))
    _check(_moves(words, g), g)


def test_overlapping_fields_fail():
    """The same checks fail when neighbouring rows share one bit (fields ``log2(G) - 1`` bits
    apart)."""
    raw = InsecureSeededSource(9).words(50_000)
    fields = np.arange(qjm.MOVES_PER_WORD, dtype=np.uint64) * np.uint64(BITS - 1)
    top = np.uint64(((1 << BITS) - 1) << (64 - BITS))
    words = (np.left_shift(raw[:, None], fields[None, :]) & top).reshape(-1)
    t = _moves(words)
    i = np.arange(t.shape[0] - 1)
    inside = i[(i % qjm.MOVES_PER_WORD) != qjm.MOVES_PER_WORD - 1]
    stat, df = chi2_statistic(_pair_counts(t, inside), np.full(G * G, 1 / G**2))
    assert stat > chi2_threshold(df)


def test_a_biased_move_fails():
    """The single-move check of ``_check`` fails when one move is twice as likely as the others
    (600,000 rows, as in ``test_moves_are_uniform_and_independent``)."""
    t = _moves(qjm.joint_move_words(InsecureSeededSource(8), 600_000))
    rng = np.random.default_rng(1)
    # a factor-2 bug: move 0 twice as likely as each other move (probability 2 / (G + 1))
    redo = (t != 0) & (rng.random(t.shape[0]) < 1 / (G + 1))
    t[redo] = 0
    stat, df = chi2_statistic(np.bincount(t, minlength=G), np.full(G, 1 / G))
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
        monkeypatch.setattr(qjm, "_MOVE_CHUNK", chunk)
        got = qjm.joint_moved_intervals(x, 0.0, 100.0, 0.05, words)
        assert np.array_equal(got[0].view(np.int64), want[0].view(np.int64)), chunk
        assert np.array_equal(got[1], want[1]) and got[2] == want[2], chunk
