"""The tree's leaf of each row without a binary search: the same as ``np.searchsorted``."""

from __future__ import annotations

import numpy as np

from dpselect.mechanisms.quantile_tree import leaf_index, tree_leaf_edges


def _searchsorted_leaves(x, edges):
    idx = np.searchsorted(edges, x, side="right") - 1
    return np.clip(idx, 0, edges.shape[0] - 2)


def test_leaf_index_is_the_binary_search():
    rng = np.random.default_rng(31)
    bounds = [(0.0, 100.0), (-3.5, 7.25), (1e16, 1e16 + 64.0), (-1e300, 1e300), (0.0, 5e-324 * 64),
              (1.0, 1.0 + 2**-40)]  # fmt: skip
    for lo, hi in bounds:
        for leaves in (2, 64, 4096):
            edges = tree_leaf_edges(lo, hi, leaves)
            inner = lo + (hi - lo) * rng.random(20000) if np.isfinite(hi - lo) else (
                rng.uniform(-1, 1, 20000) * 1e300)  # fmt: skip
            x = np.clip(
                np.concatenate(
                    [
                        inner,
                        edges,
                        np.nextafter(edges, -np.inf),
                        np.nextafter(edges, np.inf),
                        [lo, hi],
                    ]
                ),
                lo,
                hi,
            )
            got = leaf_index(x, edges, lo, hi)
            assert np.array_equal(got, _searchsorted_leaves(x, edges)), (lo, hi, leaves)


def test_counts_in_chunks_are_the_counts_of_all_rows(monkeypatch):
    """``tree_counts`` counts chunk by chunk: any chunk size gives the counts of one pass
    (NaN dropped, rows clamped, the leaf of each row by ``searchsorted``)."""
    from dpselect.mechanisms import quantile_tree as qt

    rng = np.random.default_rng(12)
    x = np.concatenate([rng.normal(50, 40, 5000), [np.nan] * 7, [0.0, 100.0, -1e300, 1e300]])
    rng.shuffle(x)
    clean = np.clip(x[~np.isnan(x)], 0.0, 100.0)
    edges = qt.tree_leaf_edges(0.0, 100.0, 64)
    leaf = np.clip(np.searchsorted(edges, clean, side="right") - 1, 0, 63)
    want = np.bincount(leaf, minlength=64)
    for chunk in (1, 7, 64, 1 << 16):
        monkeypatch.setattr(qt, "_COUNT_CHUNK", chunk)
        counts = qt.tree_counts(x, 0.0, 100.0, 8, 2)
        assert np.array_equal(counts[1], want), chunk
        assert np.array_equal(counts[0], want.reshape(8, 8).sum(axis=1)), chunk
