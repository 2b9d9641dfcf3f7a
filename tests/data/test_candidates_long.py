"""Long text candidate lists are checked in Arrow: a repeated value and None are refused by
name exactly as for a short list, without a Python set of the strings."""

from __future__ import annotations

import pytest

from dpselect.core.errors import ParameterError
from dpselect.data import candidates as candidates_module
from dpselect.data.candidates import ARROW_MIN_CANDIDATES, load_candidates

N = ARROW_MIN_CANDIDATES * 3


def _names(n):
    return [f"v{i:06d}" for i in range(n)]


def test_a_long_distinct_list_is_kept_in_order_with_its_arrow_array():
    names = _names(N)[::-1]
    loaded = load_candidates(names)
    assert list(loaded) == names
    assert loaded.arrow is not None
    assert loaded.arrow.to_pylist() == names


@pytest.mark.parametrize("where", [(0, 1), (0, N - 1), (N // 2, N // 2 + 1), (5, N - 7)])
@pytest.mark.parametrize("piece", [N, 7])
def test_a_repeat_anywhere_is_refused_naming_the_argument(where, piece, monkeypatch):
    """Found across the sorted slices too (a slice of 7 neighbours)."""
    monkeypatch.setattr(candidates_module, "_REPEAT_SLICE", piece)
    names = _names(N)
    names[where[1]] = names[where[0]]
    with pytest.raises(ParameterError, match="prices must be distinct values"):
        load_candidates(names, "prices")


def test_none_in_a_long_list_is_refused():
    names = _names(N)
    names[N // 3] = None
    with pytest.raises(ParameterError, match="candidates must not contain None"):
        load_candidates(names)


def test_strings_equal_only_as_unicode_are_distinct():
    """Arrow compares UTF-8 bytes, Python compares code points: the same answer (composed and
    decomposed accents stay two candidates, as in a set)."""
    names = [*_names(N), "\u00e9", "e\u0301"]
    assert len(load_candidates(names)) == N + 2
