"""Grouped releases on DuckDB (:mod:`dpselect.data.grouped_scores`): each unit keeps at most
``max_groups`` groups by the keyed rule of ``group_salt``, then in each kept group the rule
of the ungrouped method keyed by ``salt`` (docs/contribution_bounding.md, "Groups per unit").

Checked against a pure-Python reference built only from :mod:`dpselect.data.rules` on random
data (every plan: candidates with ``m``, ``r`` 1 and more, values, numbers; with and without
a unit), every input kind alike, each group equal to the ungrouped method on that group's
kept rows, one unit added moving at most ``max_groups`` groups, errors from public facts,
empty data and groups, NULL and NaN units, a value matching two groups.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpselect.core.errors import DataError, ParameterError
from dpselect.data import Engine, grouped_sql
from dpselect.data.query import PublicGroups, Query, UnitRule
from dpselect.data.rules import bounding_key, kept_groups, kept_rows, value_code
from dpselect.data.tables import open_table
from dpselect.data.values import canonical_text

GROUPS = ["a", "b", "c", "d"]
CANDIDATES = ["x", "y", "z", "w"]

# ----------------------------------------------------------------------------------------
# The reference: the whole grouped rule from dpselect.data.rules alone.
# Rows are (unit, by, value) with Python values; a unit of None (or NaN) is no unit.
# ----------------------------------------------------------------------------------------


def _no_unit(u: Any) -> bool:
    return u is None or (isinstance(u, float) and math.isnan(u))


def _unit_text(u: Any) -> str:
    return canonical_text(float(u) + 0.0 if isinstance(u, float) else u)


def _group_positions(b: Any, groups: list[Any]) -> list[int]:
    return [j for j, g in enumerate(groups) if b is not None and b == g]


def _kept_cells(
    cells: list[tuple[Any, int, Any]], unit: bool, max_groups: int, group_salt: int
) -> dict[Any, list[tuple[int, Any]]]:
    """``{unit text (or row number): [(group, item), ...]}`` after the group rule: each unit's
    rows in the groups it keeps (``cells``: one (unit, group, item) per row and group)."""
    per_unit: dict[Any, list[tuple[int, Any]]] = {}
    for k, (u, g, item) in enumerate(cells):
        if not unit:
            per_unit[("row", k)] = [(g, item)]
            continue
        per_unit.setdefault(_unit_text(u), []).append((g, item))
    if not unit:
        return per_unit
    out = {}
    for text, items in per_unit.items():
        kept = set(kept_groups(group_salt, text, [g for g, _ in items], max_groups))
        out[text] = [(g, item) for g, item in items if g in kept]
    return out


def reference_candidates(
    rows: list[tuple[Any, Any, Any]],
    candidates: list[Any],
    groups: list[Any],
    unit: bool,
    max_groups: int = 1,
    m: int = 1,
    r: int = 1,
    salt: int = 0,
    group_salt: int = 0,
) -> dict[tuple[int, int], int]:
    """``{(group, candidate position): score}``, nonzero scores only."""
    cells = [
        (u, g, i)
        for u, b, v in rows
        if not (unit and _no_unit(u))
        for g in _group_positions(b, groups)
        for i, c in enumerate(candidates)
        if v is not None and v == c
    ]
    scores: Counter[tuple[int, int]] = Counter()
    for text, items in _kept_cells(cells, unit, max_groups, group_salt).items():
        for g in {g for g, _ in items}:
            rows_of = Counter(i for h, i in items if h == g)
            if not unit:
                for i, n in rows_of.items():
                    scores[(g, i)] += n
                continue
            for i in sorted(rows_of, key=lambda i: bounding_key(salt, text, i))[:m]:
                scores[(g, i)] += min(rows_of[i], r)
    return dict(scores)


def reference_values(
    rows: list[tuple[Any, Any, Any]],
    groups: list[Any],
    unit: bool,
    limit: int | None = None,
    max_groups: int = 1,
    m: int = 1,
    r: int = 1,
    salt: int = 0,
    group_salt: int = 0,
) -> list[list[tuple[Any, int]]]:
    """Each group's ``[(value, count)]``, largest first, ties by value, at most ``limit``."""
    cells = [
        (u, g, v)
        for u, b, v in rows
        if not (unit and _no_unit(u)) and v is not None
        for g in _group_positions(b, groups)
    ]
    counts: list[Counter[Any]] = [Counter() for _ in groups]
    for text, items in _kept_cells(cells, unit, max_groups, group_salt).items():
        for g in {g for g, _ in items}:
            rows_of = Counter(v for h, v in items if h == g)
            if not unit:
                counts[g].update(rows_of)
                continue

            def key(v: Any, text: str = text) -> tuple[int, Any]:
                return (bounding_key(salt, text, value_code(salt, canonical_text(v))), v)

            for v in sorted(rows_of, key=key)[:m]:
                counts[g][v] += min(rows_of[v], r)
    out = []
    for c in counts:
        ranked = sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))
        out.append(ranked if limit is None else ranked[:limit])
    return out


def reference_numbers(
    rows: list[tuple[Any, Any, Any]],
    groups: list[Any],
    unit: bool,
    max_groups: int = 1,
    max_rows: int = 1,
    salt: int = 0,
    group_salt: int = 0,
) -> list[list[float]]:
    """Each group's kept numbers, sorted."""
    cells = [
        (u, g, float(v) + 0.0)
        for u, b, v in rows
        if not (unit and _no_unit(u)) and v is not None and not math.isnan(v)
        for g in _group_positions(b, groups)
    ]
    out: list[list[float]] = [[] for _ in groups]
    for text, items in _kept_cells(cells, unit, max_groups, group_salt).items():
        for g in {g for g, _ in items}:
            here = [x for h, x in items if h == g]
            if not unit:
                out[g].extend(here)
                continue
            out[g].extend(kept_rows(salt, [(text, x) for x in here], max_rows)[text])
    return [sorted(x) for x in out]


def as_cells(found: tuple[np.ndarray, np.ndarray, np.ndarray]) -> dict[tuple[int, int], int]:
    g, i, n = found
    assert list(zip(g, i, strict=True)) == sorted(zip(g, i, strict=True))  # sorted by (g, i)
    assert all(n > 0) and all(a.dtype == np.int64 for a in found)
    return {(int(a), int(b)): int(c) for a, b, c in zip(g, i, n, strict=True)}


# ----------------------------------------------------------------------------------------
# Random data
# ----------------------------------------------------------------------------------------

row_strategy = st.tuples(
    st.one_of(st.none(), st.integers(0, 5)),
    st.sampled_from([*GROUPS[:3], "e", None]),  # "d" listed but absent, "e" not listed
    st.sampled_from([*CANDIDATES[:3], "v", None]),
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


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(row_strategy, max_size=60), st.booleans(), bounds, salts)
def test_candidates_equal_the_reference(rows, unit, gmr, salt_pair):
    g, m, r = gmr if unit else (1, 1, 1)
    salt, group_salt = salt_pair
    table = open_table(frame(rows))
    found = table.scores(
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
            PublicGroups("b", GROUPS),
        ),
        CANDIDATES,
    )
    expected = reference_candidates(rows, CANDIDATES, GROUPS, unit, g, m, r, salt, group_salt)
    assert as_cells(found) == expected


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(row_strategy, max_size=60), st.booleans(), bounds, salts,
    st.one_of(st.none(), st.integers(1, 3)),
)  # fmt: skip
def test_values_equal_the_reference(rows, unit, gmr, salt_pair, limit):
    g, m, r = gmr if unit else (1, 1, 1)
    salt, group_salt = salt_pair
    table = open_table(frame(rows))
    found = table.counts(
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
            PublicGroups("b", GROUPS),
        ),
        limit,
    )
    assert found == reference_values(rows, GROUPS, unit, limit, g, m, r, salt, group_salt)


number_rows = st.tuples(
    st.one_of(st.none(), st.integers(0, 5)),
    st.sampled_from([*GROUPS[:3], "e", None]),
    st.one_of(st.none(), st.sampled_from([0.0, -0.0, 1.5, 2.0, -3.0, math.nan, 7.25])),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(number_rows, max_size=60), st.booleans(), bounds, salts)
def test_numbers_equal_the_reference(rows, unit, gmr, salt_pair):
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
            PublicGroups("b", GROUPS),
        )
    )
    assert len(found) == len(GROUPS) and all(a.dtype == np.float64 for a in found)
    expected = reference_numbers(rows, GROUPS, unit, g, max_rows, salt, group_salt)
    assert [sorted(a.tolist()) for a in found] == expected


# ----------------------------------------------------------------------------------------
# Larger data: every input kind, and each group equal to the ungrouped method
# ----------------------------------------------------------------------------------------


def visits(seed: int = 3, n: int = 3000, units: int = 120) -> list[tuple[Any, Any, Any]]:
    """Units with many rows in several groups (Zipf-like), values partly outside the list."""
    rng = np.random.default_rng(seed)
    groups = np.array([*GROUPS, "e", None], dtype=object)
    values = np.array([*CANDIDATES, "q", "r", None], dtype=object)
    u = rng.zipf(1.4, n) % units
    b = groups[rng.choice(len(groups), n, p=[0.4, 0.25, 0.15, 0.1, 0.05, 0.05])]
    v = values[rng.choice(len(values), n, p=[0.3, 0.2, 0.15, 0.1, 0.1, 0.1, 0.05])]
    rows = [(int(a), c, d) for a, c, d in zip(u, b, v, strict=True)]
    return [(None if k % 97 == 0 else a, c, d) for k, (a, c, d) in enumerate(rows)]


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    rows = visits()
    df = frame(rows)
    path = tmp_path_factory.mktemp("grouped")
    arrow = pa.Table.from_pandas(df, preserve_index=False)
    pq.write_table(arrow, path / "visits.parquet")
    df.to_csv(path / "visits.csv", index=False)
    return {
        "rows": rows,
        "pandas": df,
        "arrow": arrow,
        "parquet": str(path / "visits.parquet"),
        "csv": str(path / "visits.csv"),
    }


KINDS = ["pandas", "arrow", "parquet", "csv"]


@pytest.mark.parametrize(("g", "m", "r"), [(1, 1, 1), (2, 1, 1), (1, 3, 1), (3, 2, 4)])
def test_every_input_kind_gives_the_reference(sources, g, m, r):
    rows = sources["rows"]
    expected_c = reference_candidates(rows, CANDIDATES, GROUPS, True, g, m, r, 11, 12)
    expected_v = reference_values(rows, GROUPS, True, 3, g, m, r, 11, 12)
    for kind in KINDS:
        table = open_table(sources[kind])
        found = table.scores(
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
                PublicGroups("b", GROUPS),
            ),
            CANDIDATES,
        )
        assert as_cells(found) == expected_c, kind
        got = table.counts(
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
                PublicGroups("b", GROUPS),
            ),
            3,
        )
        assert got == expected_v, kind


@pytest.mark.parametrize("lists", [True, False])
def test_both_plans_of_one_value_per_group(sources, monkeypatch, lists):
    """``max_groups > 1`` with ``m = r = 1``: the sorted-lists plan (DuckDB with lambdas) and
    the two-aggregate plan (older DuckDB) both give the reference."""
    monkeypatch.setattr(grouped_sql, "lambda_syntax", lambda: lists)
    rows = sources["rows"]
    table = open_table(sources["parquet"])
    for g in (2, 3, 5):
        found = table.scores(
            Query(
                "v",
                UnitRule(
                    privacy_unit="u", values_per_unit=1, groups_per_unit=g, salt=2, group_salt=9
                ),
                PublicGroups("b", GROUPS),
            ),
            CANDIDATES,
        )
        assert as_cells(found) == reference_candidates(rows, CANDIDATES, GROUPS, True, g, 1, 1,
                                                       2, 9)  # fmt: skip
        got = table.counts(
            Query(
                "v",
                UnitRule(
                    privacy_unit="u", values_per_unit=1, groups_per_unit=g, salt=2, group_salt=9
                ),
                PublicGroups("b", GROUPS),
            ),
            2,
        )
        assert got == reference_values(rows, GROUPS, True, 2, g, 1, 1, 2, 9)


def kept_frame(rows: list[tuple[Any, Any, Any]], g: int, group_salt: int) -> list[pd.DataFrame]:
    """Each group's rows that their unit keeps (rows of no unit or no listed group dropped;
    the group rule from :func:`kept_groups` over the rows that the release may count)."""
    per_unit: dict[str, list[int]] = {}
    for u, b, v in rows:
        if u is not None and v is not None and b in GROUPS:
            per_unit.setdefault(_unit_text(u), []).append(GROUPS.index(b))
    kept = {t: set(kept_groups(group_salt, t, ps, g)) for t, ps in per_unit.items()}
    out = []
    for j, name in enumerate(GROUPS):
        keep = [
            (u, b, v) for u, b, v in rows
            if u is not None and v is not None and b == name and j in kept[_unit_text(u)]
        ]  # fmt: skip
        out.append(frame(keep))
    return out


@pytest.mark.parametrize(("g", "m", "r"), [(1, 1, 1), (2, 2, 1), (2, 1, 3)])
def test_each_group_is_the_ungrouped_method_on_its_kept_rows(sources, g, m, r):
    """The per-group rule is the existing ungrouped one (same ``salt``): filter the rows of
    each group its units keep and run candidate_scores / top_values on them. Rows whose value
    is NULL are dropped first (value mode); for candidates the group rule also reads only rows
    whose value is a candidate, so the candidate check uses the rows with a candidate."""
    rows = sources["rows"]
    table = open_table(sources["pandas"])
    salt, group_salt = 5, 6
    counts = table.counts(
        Query(
            "v",
            UnitRule(
                privacy_unit="u",
                values_per_unit=m,
                rows_per_value=r,
                groups_per_unit=g,
                salt=salt,
                group_salt=group_salt,
            ),
            PublicGroups("b", GROUPS),
        )
    )
    for j, part in enumerate(kept_frame(rows, g, group_salt)):
        alone = open_table(part).counts(
            Query("v", UnitRule(privacy_unit="u", values_per_unit=m, rows_per_value=r, salt=salt)),
            10**6,
        )
        assert counts[j] == alone
    with_candidate = [(u, b, v) for u, b, v in rows if v in CANDIDATES]
    rule = UnitRule("u", m, r, groups_per_unit=g, salt=salt, group_salt=group_salt)
    cells = as_cells(table.scores(Query("v", rule, PublicGroups("b", GROUPS)), CANDIDATES))
    for j, part in enumerate(kept_frame(with_candidate, g, group_salt)):
        alone = open_table(part).scores(
            Query("v", UnitRule(privacy_unit="u", values_per_unit=m, rows_per_value=r, salt=salt)),
            CANDIDATES,
        )
        assert [cells.get((j, i), 0) for i in range(len(CANDIDATES))] == list(alone)


def test_each_group_of_numbers_is_column_values_on_its_kept_rows():
    rng = np.random.default_rng(8)
    n = 2000
    df = pd.DataFrame(
        {
            "u": rng.integers(0, 60, n),
            "b": np.array(GROUPS, dtype=object)[rng.integers(0, 4, n)],
            "x": rng.choice([0.5, 1.0, 2.0, -1.0, np.nan, 3.5, 8.0], n),
        }
    )
    found = open_table(df).numbers(
        Query(
            "x",
            UnitRule(privacy_unit="u", rows_per_unit=3, groups_per_unit=2, salt=4, group_salt=9),
            PublicGroups("b", GROUPS),
        )
    )
    rows = df[~df["x"].isna()]
    positions: dict[str, list[int]] = {}
    for u, b in zip(rows["u"], rows["b"], strict=True):
        positions.setdefault(canonical_text(int(u)), []).append(GROUPS.index(b))
    kept = {t: set(kept_groups(9, t, p, 2)) for t, p in positions.items()}
    for j, name in enumerate(GROUPS):
        mine_units = np.array([j in kept[canonical_text(int(u))] for u in rows["u"]])
        mine = rows[(rows["b"] == name) & mine_units]
        alone = open_table(mine).numbers(
            Query("x", UnitRule(privacy_unit="u", rows_per_unit=3, salt=4))
        )
        assert sorted(found[j].tolist()) == sorted(alone.tolist())


# ----------------------------------------------------------------------------------------
# Neighbours: one unit added changes at most max_groups groups
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("g", [1, 2, 3])
def test_one_unit_changes_at_most_max_groups_groups(sources, g):
    rows = sources["rows"]
    heavy = [(10**6, GROUPS[k % 4], CANDIDATES[k % 3]) for k in range(500)]
    before = open_table(frame(rows))
    after = open_table(frame(rows + heavy))
    for salt in range(5):
        rule = UnitRule("u", values_per_unit=2, rows_per_value=7, groups_per_unit=g, salt=salt,
                        group_salt=salt + 100)  # fmt: skip
        query = Query("v", rule, PublicGroups("b", GROUPS))
        old, new = before.counts(query), after.counts(query)
        changed = [j for j in range(len(GROUPS)) if old[j] != new[j]]
        assert 1 <= len(changed) <= g
        for j in changed:  # within a group: at most m = 2 counts, each up by at most r = 7
            diff = Counter(dict(new[j]))
            diff.subtract(Counter(dict(old[j])))
            moved = {v: d for v, d in diff.items() if d != 0}
            assert len(moved) <= 2 and all(0 < d <= 7 for d in moved.values())


# ----------------------------------------------------------------------------------------
# Edge cases and errors
# ----------------------------------------------------------------------------------------


def test_the_table_is_an_engine_with_the_grouped_methods():
    table = open_table(frame([(1, "a", "x")]))
    assert isinstance(table, Engine)
    for name in ("scores", "counts", "numbers", "multiplicity"):  # groups: in the query
        assert callable(getattr(table, name))
    assert table.multiplicity(PublicGroups("b", GROUPS)) == 1


def test_empty_data_and_empty_groups():
    empty = open_table(frame([]))
    for unit in (None, "u"):
        g, i, n = empty.scores(
            Query("v", UnitRule(privacy_unit=unit), PublicGroups("b", GROUPS)), CANDIDATES
        )
        assert len(g) == len(i) == len(n) == 0
        assert empty.counts(
            Query("v", UnitRule(privacy_unit=unit), PublicGroups("b", GROUPS)), 5
        ) == [[], [], [], []]
    table = open_table(frame(visits(n=200)))
    assert table.counts(Query("v", UnitRule(privacy_unit="u"), PublicGroups("b", [])), 5) == []
    empty = table.scores(Query("v", UnitRule(privacy_unit="u"), PublicGroups("b", [])), CANDIDATES)
    assert [len(x) for x in empty] == [0, 0, 0]
    assert table.numbers(Query("u", UnitRule(privacy_unit="u"), PublicGroups("b", []))) == []
    assert table.multiplicity(PublicGroups("b", [])) == 1
    found = table.counts(Query("v", UnitRule(privacy_unit="u"), PublicGroups("b", ["zz", "a"])))
    assert found[0] == [] and found[1] != []
    numbers = open_table(pd.DataFrame({"u": [1], "b": ["a"], "x": [np.nan]}))
    assert [
        len(a)
        for a in numbers.numbers(Query("x", UnitRule(privacy_unit="u"), PublicGroups("b", ["a"])))
    ] == [0]


def test_null_and_nan_units_count_for_nobody():
    df = pd.DataFrame(
        {
            "u": [1.0, np.nan, np.nan, -0.0, 0.0, None],
            "b": ["a", "a", "b", "b", "a", "a"],
            "v": ["x", "y", "y", "z", "x", "y"],
        }
    )
    table = open_table(df)
    rows = list(zip(df["u"], df["b"], df["v"], strict=True))
    for salt in range(4):
        found = table.scores(
            Query(
                "v",
                UnitRule(
                    privacy_unit="u", values_per_unit=1, groups_per_unit=1, salt=salt, group_salt=3
                ),
                PublicGroups("b", GROUPS),
            ),
            CANDIDATES,
        )
        assert as_cells(found) == reference_candidates(
            rows, CANDIDATES, GROUPS, True, 1, 1, 1, salt, 3
        )
        # -0.0 and 0.0 are one unit: it keeps one group, so x or z (never both in a and b)
        counts = table.counts(
            Query(
                "v",
                UnitRule(
                    privacy_unit="u", values_per_unit=1, groups_per_unit=1, salt=salt, group_salt=3
                ),
                PublicGroups("b", GROUPS),
            )
        )
        assert sum(n for c in counts for _, n in c) == 2
        assert all(v != "y" for c in counts for v, _ in c)


def test_a_value_matching_two_groups_counts_in_both_without_a_unit():
    df = pd.DataFrame({"u": [1, 1, 2], "b": [7, 7, 8], "v": ["x", "y", "x"]})
    table = open_table(df)
    groups = ["7", "07", 8]
    assert table.multiplicity(PublicGroups("b", ["7", "07"])) == 2
    assert table.multiplicity(PublicGroups("b", ["7", "8"])) == 1
    found = as_cells(table.scores(Query("v", groups=PublicGroups("b", groups)), CANDIDATES))
    assert found == {(0, 0): 1, (0, 1): 1, (1, 0): 1, (1, 1): 1, (2, 0): 1}
    # with a unit and max_groups = 1, unit 1 keeps one of the two positions
    for salt in range(6):
        kept = as_cells(
            table.scores(
                Query(
                    "v",
                    UnitRule(
                        privacy_unit="u",
                        values_per_unit=2,
                        groups_per_unit=1,
                        salt=0,
                        group_salt=salt,
                    ),
                    PublicGroups("b", groups),
                ),
                CANDIDATES,
            )
        )
        ones = kept_groups(salt, "1", [0, 1], 1)
        assert {g for g, _ in kept} == {ones[0], 2}
    # a text column with number groups: "4" and "4.0" match 4 (and 4.0)
    text = open_table(pd.DataFrame({"b": ["4", "4.0", " 4 ", "5"], "v": ["x"] * 4}))
    assert text.multiplicity(PublicGroups("b", [4, 4.0])) == 2
    assert as_cells(text.scores(Query("v", groups=PublicGroups("b", [4, 4.5])), CANDIDATES)) == {
        (0, 0): 3
    }


def test_errors_come_from_public_facts():
    table = open_table(pa.table({"u": [1, 2], "b": ["a", "b"], "v": ["x", "y"], "l": [[1], [2]]}))
    with pytest.raises(DataError, match="by 'nope' is not a column"):
        table.counts(Query("v", UnitRule(privacy_unit="u"), PublicGroups("nope", GROUPS)), 3)
    with pytest.raises(DataError, match=r"by 'l' .* nested type"):
        table.scores(Query("v", UnitRule(privacy_unit="u"), PublicGroups("l", GROUPS)), CANDIDATES)
    with pytest.raises(DataError, match="privacy_unit 'w' is not a column"):
        table.numbers(Query("u", UnitRule(privacy_unit="w"), PublicGroups("b", GROUPS)))
    with pytest.raises(
        ParameterError, match=r"UnitRule\(groups_per_unit=\.\.\.\) must be an integer at least 1"
    ):
        table.counts(
            Query("v", UnitRule(privacy_unit="u", groups_per_unit=0), PublicGroups("b", GROUPS)), 3
        )
    with pytest.raises(
        ParameterError, match=r"UnitRule\(groups_per_unit=\.\.\.\) must be an integer at least 1"
    ):
        table.numbers(
            Query("u", UnitRule(privacy_unit="u", groups_per_unit=True), PublicGroups("b", GROUPS))
        )
    with pytest.raises(ParameterError, match="max_groups applies only with a privacy_unit"):
        table.scores(Query("v", UnitRule(groups_per_unit=2), PublicGroups("b", GROUPS)), CANDIDATES)
    with pytest.raises(ParameterError, match="max_contributions applies only with"):
        table.counts(
            Query("v", UnitRule(values_per_unit=2, groups_per_unit=1), PublicGroups("b", GROUPS)), 3
        )
    with pytest.raises(ParameterError, match="max_rows_per_value applies only with"):
        table.counts(Query("v", UnitRule(rows_per_value=2), PublicGroups("b", GROUPS)), 3)
    with pytest.raises(ParameterError, match="max_rows applies only with"):
        table.numbers(Query("u", UnitRule(rows_per_unit=2), PublicGroups("b", GROUPS)))
    with pytest.raises(ParameterError, match="limit must be an integer"):
        table.counts(Query("v", UnitRule(privacy_unit="u"), PublicGroups("b", GROUPS)), -1)
    with pytest.raises(ParameterError, match="groups must be a list"):
        table.counts(Query("v", UnitRule(privacy_unit="u"), PublicGroups("b", "abc")), 3)
    as_list = table.counts(Query("v", UnitRule(privacy_unit="u"), PublicGroups("b", ["a", "b"])), 3)
    assert (
        table.counts(
            Query("v", UnitRule(privacy_unit="u"), PublicGroups("b", np.array(["a", "b"]))), 3
        )
        == as_list
    )


# ----------------------------------------------------------------------------------------
# Uniformity: the kept group and the kept value are uniform across units (one query)
# ----------------------------------------------------------------------------------------

#: scipy.stats.chi2.isf(1e-6, 3): the test's false-failure rate is 1e-6.
CHI2_3_AT_1E6 = 30.66


@pytest.mark.parametrize("plan", ["one aggregate", "per cell"])
def test_the_kept_group_and_value_are_uniform_across_units(plan):
    """6000 units, each with rows (a, x), (b, x), (c, x), (c, y): with ``max_groups = 1`` and
    ``m = 1`` a unit keeps a, b or c with probability 1/3 each and, in c, x or y with 1/2
    each, so the cells (a, x), (b, x), (c, x), (c, y) hold 1/3, 1/3, 1/6, 1/6 of the units
    (a multinomial: chi-square with 3 degrees of freedom, false-failure rate 1e-6). A rule
    that favours one group or value by a factor 2 moves some cell by 1/6 of 6000 = 1000 units,
    far beyond the critical value. ``r = 2`` takes the per-cell plan (the same choice)."""
    n = 6000
    units = np.repeat(np.arange(n), 4)
    df = pd.DataFrame(
        {"u": units, "b": np.tile(["a", "b", "c", "c"], n), "v": np.tile(["x", "x", "x", "y"], n)}
    )
    r = 1 if plan == "one aggregate" else 2
    rule = UnitRule("u", 1, r, groups_per_unit=1, salt=17, group_salt=23)
    query = Query("v", rule, PublicGroups("b", ["a", "b", "c"]))
    cells = as_cells(open_table(df).scores(query, ["x", "y"]))
    observed = np.array([cells.get(k, 0) for k in [(0, 0), (1, 0), (2, 0), (2, 1)]])
    assert observed.sum() == n
    expected = n * np.array([1 / 3, 1 / 3, 1 / 6, 1 / 6])
    chi2 = float(((observed - expected) ** 2 / expected).sum())
    assert chi2 < CHI2_3_AT_1E6, (observed, chi2)


def test_text_units_of_parquet_are_keyed_by_their_bytes(tmp_path):
    """A text unit of a Parquet file is read by its raw bytes (Table.unit_column): the seeds
    of both rules are those of the unit's text, as the reference hashes it."""
    rows = [(None if u is None else f"p{u}", b, v) for u, b, v in visits(seed=5, n=800)]
    df = pd.DataFrame(
        {k: pd.array([row[j] for row in rows], dtype=object) for j, k in enumerate("ubv")}
    )
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "t.parquet")
    table = open_table(str(tmp_path / "t.parquet"))
    for g, m, r in [(1, 1, 1), (2, 1, 1), (2, 2, 3)]:
        found = table.scores(
            Query(
                "v",
                UnitRule(
                    privacy_unit="u",
                    values_per_unit=m,
                    rows_per_value=r,
                    groups_per_unit=g,
                    salt=3,
                    group_salt=4,
                ),
                PublicGroups("b", GROUPS),
            ),
            CANDIDATES,
        )
        assert as_cells(found) == reference_candidates(rows, CANDIDATES, GROUPS, True, g, m, r,
                                                       3, 4)  # fmt: skip
        got = table.counts(
            Query(
                "v",
                UnitRule(
                    privacy_unit="u",
                    values_per_unit=m,
                    rows_per_value=r,
                    groups_per_unit=g,
                    salt=3,
                    group_salt=4,
                ),
                PublicGroups("b", GROUPS),
            )
        )
        assert got == reference_values(rows, GROUPS, True, None, g, m, r, 3, 4)
