"""Private groups on DuckDB (:mod:`dpselect.data.discovered_groups`): every group of ``by``
found in the data, its persons and its scores from one scan.

Checked against a pure-Python reference built only from :mod:`dpselect.data.rules`
(:func:`~dpselect.data.rules.kept_found_groups`, then the ungrouped rule in each kept group)
on random data, with and without a unit, for every plan (``max_groups``, ``m``, ``r``); one
unit added moves the persons of at most ``max_groups`` groups by 1; the group's key reads only
the group's value (the same unit keeps the same groups whatever other groups exist).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpselect.data.query import PrivateGroups, Query, UnitRule
from dpselect.data.rules import bounding_key, kept_found_groups, value_code
from dpselect.data.tables import open_table
from dpselect.data.values import canonical_text

CANDIDATES = ["x", "y", "z", "w"]


def _kept(
    rows: list[tuple[Any, Any, Any]], unit: bool, g: int, group_salt: int
) -> dict[Any, list[tuple[Any, Any]]]:
    """``{unit text (or row number): [(group, item)]}`` after the found-group rule."""
    per_unit: dict[Any, list[tuple[Any, Any]]] = {}
    for k, (u, b, item) in enumerate(rows):
        per_unit.setdefault(canonical_text(u) if unit else ("row", k), []).append((b, item))
    if not unit:
        return per_unit
    out = {}
    for text, items in per_unit.items():
        kept = set(kept_found_groups(group_salt, text, [b for b, _ in items], g))
        out[text] = [(b, item) for b, item in items if b in kept]
    return out


def reference(
    rows: list[tuple[Any, Any, Any]],
    unit: bool,
    candidates: list[Any] | None,
    g: int = 1,
    m: int = 1,
    r: int = 1,
    salt: int = 0,
    group_salt: int = 0,
) -> tuple[dict[Any, int], dict[Any, Counter[Any]]]:
    """``({group: persons}, {group: Counter(item: score)})``; items are candidate positions
    (candidates) or values."""
    if candidates is None:
        cells = [(u, b, v) for u, b, v in rows if v is not None and b is not None]
    else:
        cells = [
            (u, b, i)
            for u, b, v in rows
            if b is not None
            for i, c in enumerate(candidates)
            if v == c
        ]
    if unit:
        cells = [c for c in cells if c[0] is not None]
    persons: Counter[Any] = Counter()
    scores: dict[Any, Counter[Any]] = {}
    for text, items in _kept(cells, unit, g, group_salt).items():
        for b in {b for b, _ in items}:
            rows_of = Counter(i for h, i in items if h == b)
            persons[b] += 1 if unit else sum(rows_of.values())
            here = scores.setdefault(b, Counter())
            if not unit:
                here.update(rows_of)
                continue

            def key(i: Any, text: str = text) -> tuple[int, Any]:
                code = i if candidates is not None else value_code(salt, canonical_text(i))
                return bounding_key(salt, text, code), i

            for i in sorted(rows_of, key=key)[:m]:
                here[i] += min(rows_of[i], r)
    return dict(persons), scores


rows_strategy = st.lists(
    st.tuples(
        st.one_of(st.none(), st.integers(0, 6)),
        st.sampled_from(["a", "b", "c", "é", None]),
        st.sampled_from([*CANDIDATES[:3], "v", None]),
    ),
    max_size=60,
)
bounds = st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3))
salts = st.tuples(st.integers(0, 2**63 - 1), st.integers(0, 2**63 - 1))


def frame(rows: list[tuple[Any, Any, Any]]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "u": pd.array([r[0] for r in rows], dtype="Int64"),
            "b": pd.array([r[1] for r in rows], dtype=object),
            "v": pd.array([r[2] for r in rows], dtype=object),
        }
    )


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows_strategy, st.booleans(), bounds, salts, st.one_of(st.none(), st.integers(0, 2)))
def test_values_equal_the_reference(rows, unit, gmr, salt_pair, limit):
    g, m, r = gmr if unit else (1, 1, 1)
    salt, group_salt = salt_pair
    found = open_table(frame(rows)).counts(
        Query(
            "v",
            UnitRule(
                privacy_unit="u" if unit else None,
                values_per_unit=m,
                rows_per_value=r,
                groups_per_unit=g,
                salt=salt,
                group_salt=group_salt,
            ),
            PrivateGroups("b"),
        ),
        limit,
    )
    persons, scores = reference(rows, unit, None, g, m, r, salt, group_salt)
    assert found.groups == sorted(persons)
    assert found.counts() == sorted(persons.items())
    assert found.persons.dtype == np.int64
    assert found.values is not None
    for b, got in zip(found.groups, found.values, strict=True):
        ranked = sorted(scores[b].items(), key=lambda kv: (-kv[1], kv[0]))
        assert got == (ranked if limit is None else ranked[:limit])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows_strategy, st.booleans(), bounds, salts)
def test_candidates_equal_the_reference(rows, unit, gmr, salt_pair):
    g, m, r = gmr if unit else (1, 1, 1)
    salt, group_salt = salt_pair
    found = open_table(frame(rows)).scores(
        Query(
            "v",
            UnitRule(
                privacy_unit="u" if unit else None,
                values_per_unit=m,
                rows_per_value=r,
                groups_per_unit=g,
                salt=salt,
                group_salt=group_salt,
            ),
            PrivateGroups("b"),
        ),
        CANDIDATES,
    )
    persons, scores = reference(rows, unit, CANDIDATES, g, m, r, salt, group_salt)
    assert found.counts() == sorted(persons.items())
    assert found.cells is not None
    gi, ci, n = found.cells
    assert list(zip(gi, ci, strict=True)) == sorted(zip(gi, ci, strict=True))
    got = {(found.groups[a], int(b)): int(c) for a, b, c in zip(gi, ci, n, strict=True)}
    expected = {(b, i): k for b, c in scores.items() for i, k in c.items() if k}
    assert got == expected


@pytest.mark.parametrize("gmr", [(1, 1, 1), (2, 1, 1), (2, 2, 2)])
def test_one_unit_moves_at_most_max_groups_persons_by_one(gmr):
    rng = np.random.default_rng(5)
    n = 2000
    rows = [
        (int(u), f"g{int(b)}", f"v{int(v)}")
        for u, b, v in zip(
            rng.integers(0, 200, n), rng.integers(0, 12, n), rng.integers(0, 30, n), strict=True
        )
    ]
    extra = [(999, f"g{j}", f"v{j}") for j in range(12)]
    g, m, r = gmr
    before = open_table(frame(rows)).counts(
        Query(
            "v",
            UnitRule(
                privacy_unit="u",
                values_per_unit=m,
                rows_per_value=r,
                groups_per_unit=g,
                salt=11,
                group_salt=12,
            ),
            PrivateGroups("b"),
        )
    )
    after = open_table(frame(rows + extra)).counts(
        Query(
            "v",
            UnitRule(
                privacy_unit="u",
                values_per_unit=m,
                rows_per_value=r,
                groups_per_unit=g,
                salt=11,
                group_salt=12,
            ),
            PrivateGroups("b"),
        )
    )
    a, b = dict(before.counts()), dict(after.counts())
    moved = {k: b.get(k, 0) - a.get(k, 0) for k in set(a) | set(b)}
    assert all(d in (0, 1) for d in moved.values())
    assert sum(moved.values()) == g  # the added unit keeps exactly g of its 12 groups


def test_a_groups_key_reads_only_its_value():
    """The unit's kept group is the same whatever other groups the data holds (no rank of the
    group among the data's groups enters the key)."""
    rows = [(1, "b", "x"), (1, "c", "x"), (1, "d", "y")]
    others = [(2, f"a{j}", "x") for j in range(50)]
    for salt in range(20):
        alone = open_table(frame(rows)).counts(
            Query(
                "v",
                UnitRule(
                    privacy_unit="u", values_per_unit=1, groups_per_unit=1, salt=0, group_salt=salt
                ),
                PrivateGroups("b"),
            )
        )
        crowd = open_table(frame(rows + others)).counts(
            Query(
                "v",
                UnitRule(
                    privacy_unit="u", values_per_unit=1, groups_per_unit=1, salt=0, group_salt=salt
                ),
                PrivateGroups("b"),
            )
        )
        kept_alone = [b for b in alone.groups]
        kept_crowd = [b for b, p in crowd.counts() if b in ("b", "c", "d")]
        assert kept_alone == kept_crowd


def test_empty_data_finds_no_group():
    empty = frame([])
    for unit in (None, "u"):
        found = open_table(empty).counts(
            Query("v", UnitRule(privacy_unit=unit), PrivateGroups("b")), 3
        )
        assert found.groups == [] and found.values == [] and len(found.persons) == 0
        cells = open_table(empty).scores(
            Query("v", UnitRule(privacy_unit=unit), PrivateGroups("b")), CANDIDATES
        )
        assert cells.groups == [] and cells.cells is not None and len(cells.cells[0]) == 0


def test_number_groups_minus_zero_is_zero_and_missing_is_no_group():
    """pandas' NaN is read as a missing value: its rows fall in no group; -0.0 is 0.0."""
    df = pd.DataFrame(
        {"u": [1, 2, 3, 4, 5], "b": [1.5, math.nan, math.nan, -0.0, 0.0], "v": ["x"] * 5}
    )
    found = open_table(df).counts(
        Query(
            "v",
            UnitRule(privacy_unit="u", values_per_unit=1, groups_per_unit=1, salt=3, group_salt=4),
            PrivateGroups("b"),
        )
    )
    assert found.counts() == [(0.0, 2), (1.5, 1)]


number_rows = st.lists(
    st.tuples(
        st.one_of(st.none(), st.integers(0, 6)),
        st.sampled_from(["a", "b", "c", None]),
        st.one_of(st.none(), st.sampled_from([0.0, -0.0, 1.5, 2.0, -3.0, math.nan, 7.25])),
    ),
    max_size=60,
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(number_rows, st.booleans(), bounds, salts)
def test_numbers_equal_the_reference(rows, unit, gmr, salt_pair):
    from dpselect.data.rules import kept_rows

    g, _, max_rows = gmr if unit else (1, 1, 1)
    salt, group_salt = salt_pair
    df = pd.DataFrame(
        {
            "u": pd.array([r[0] for r in rows], dtype="Int64"),
            "b": pd.array([r[1] for r in rows], dtype=object),
            "x": np.array([np.nan if r[2] is None else r[2] for r in rows], dtype=np.float64),
        }
    )
    found = open_table(df).numbers(
        Query(
            "x",
            UnitRule(
                privacy_unit="u" if unit else None,
                rows_per_unit=max_rows,
                groups_per_unit=g,
                salt=salt,
                group_salt=group_salt,
            ),
            PrivateGroups("b"),
        )
    )
    cells = [
        (u, b, float(x) + 0.0)
        for u, b, x in rows
        if b is not None and x is not None and not math.isnan(x) and not (unit and u is None)
    ]
    persons: Counter[Any] = Counter()
    numbers: dict[Any, list[float]] = {}
    for text, items in _kept(cells, unit, g, group_salt).items():
        for b in {b for b, _ in items}:
            here = [x for h, x in items if h == b]
            persons[b] += 1 if unit else len(here)
            kept = here if not unit else kept_rows(salt, [(text, x) for x in here], max_rows)[text]
            numbers.setdefault(b, []).extend(kept)
    assert found.counts() == sorted(persons.items())
    assert found.numbers is not None
    for b, got in zip(found.groups, found.numbers, strict=True):
        assert got.dtype == np.float64 and got.tolist() == sorted(numbers[b])
