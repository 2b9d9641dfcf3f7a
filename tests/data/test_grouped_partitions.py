"""Grouped releases bounded in hash parts of the units never change a result.

Each unit keeps its groups by the group salt and, in each kept group, its values by the salt:
both read only that unit's rows, so bounding the units part by part
(:mod:`dpselect.data.unit_partitions`) and adding the parts' counts gives the one-pass result
bit for bit (docs/contribution_bounding.md, "Data larger than memory"). A small memory budget
forces several parts on Parquet files with several groups, units spread over the groups,
NULL and NaN units, ``0.0`` and ``-0.0`` (one unit), and every grouped DuckDB plan with a
privacy unit (one aggregate per unit, sorted lists, cells, numbers; public groups and groups
found in the data) must give the answer of one part.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpselect.data import grouped_sql, unit_partitions
from dpselect.data.discovered_groups import DiscoveredGroups
from dpselect.data.query import PrivateGroups, PublicGroups, Query, UnitRule
from dpselect.data.tables import open_table

GROUPS = ["a", "b", "c", "d", "e"]
VALUES = ["x", "y", "z", "w", "v", "u"]
ROWS = 2400
#: The smallest bytes per row of the grouped plans: a budget of ``rows * SMALLEST / 4``
#: gives every plan at least 4 parts.
SMALLEST = min(
    grouped_sql.GROUPED_MIN_BYTES_PER_ROW,
    grouped_sql.GROUPED_LISTS_BYTES_PER_ROW,
    grouped_sql.GROUPED_CELLS_BYTES_PER_ROW,
    grouped_sql.GROUPED_NUMBERS_BYTES_PER_ROW,
)


def _write(path: Path, units: list[Any], by: list[Any], vals: list[Any], nums: list[Any]) -> str:
    pq.write_table(
        pa.table({
            "user": pa.array(units, pa.float64()),
            "grp": pa.array(by, pa.string()),
            "val": pa.array(vals, pa.string()),
            "num": pa.array(nums, pa.float64()),
        }),
        path,
        row_group_size=500,
    )  # fmt: skip
    return str(path)


def _visits(path: Path, seed: int = 5) -> str:
    """Units (floats: 160 of them, ``0.0`` and ``-0.0`` among them, NaN and NULL rows) each
    spread over several groups, Zipf-like values, numbers with repeats."""
    rng = np.random.default_rng(seed)
    pool = np.round(rng.normal(size=160) * 50, 1)
    pool[:2] = [0.0, -0.0]
    units: list[Any] = pool[rng.integers(0, len(pool), ROWS)].tolist()
    for k in rng.choice(ROWS, 60, replace=False).tolist():
        units[k] = None if k % 2 else math.nan
    units[:6] = [0.0, -0.0, -0.0, 0.0, -0.0, 0.0]
    by = [GROUPS[k] for k in rng.integers(0, len(GROUPS), ROWS)]
    by[::53] = [None] * len(by[::53])
    vals = [VALUES[min(k, len(VALUES) - 1)] for k in (rng.zipf(1.6, ROWS) - 1).tolist()]
    nums = np.round(rng.normal(size=ROWS) * 3).tolist()
    nums[::41] = [None] * len(nums[::41])
    return _write(path, units, by, vals, nums)


def _calls(g: int, m: int, r: int) -> dict[str, Callable[[Any], Any]]:
    """Every grouped method with a privacy unit at the bounds ``(g, m, r)``."""
    values = UnitRule("user", m, r, groups_per_unit=g, salt=11, group_salt=12)
    numbers = UnitRule("user", rows_per_unit=r, groups_per_unit=g, salt=11, group_salt=12)
    listed, found = PublicGroups("grp", GROUPS), PrivateGroups("grp")
    return {
        "candidates": lambda t: t.scores(Query("val", values, listed), [*VALUES[:5], "absent"]),
        "values": lambda t: t.counts(Query("val", values, listed)),
        "values limit 2": lambda t: t.counts(Query("val", values, listed), 2),
        "numbers": lambda t: t.numbers(Query("num", numbers, listed)),
        "found candidates": lambda t: t.scores(Query("val", values, found), VALUES[:5]),
        "found values": lambda t: t.counts(Query("val", values, found)),
        "found values limit 1": lambda t: t.counts(Query("val", values, found), 1),
        "found numbers": lambda t: t.numbers(Query("num", numbers, found)),
    }


def _same(a: Any, b: Any) -> bool:
    """Bit-for-bit equality of two results (arrays, lists of arrays, DiscoveredGroups)."""
    if isinstance(a, DiscoveredGroups):
        return (
            a.groups == b.groups
            and _same(a.persons, b.persons)
            and a.values == b.values
            and _same(a.cells, b.cells)
            and _same(a.numbers, b.numbers)
        )
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if isinstance(a, (list, tuple)) and a and isinstance(a[0], np.ndarray):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _nonempty(a: Any) -> bool:
    if isinstance(a, DiscoveredGroups):
        return int(a.persons.sum()) > 0
    if isinstance(a, tuple):
        return int(a[2].sum()) > 0
    return any(len(x) > 0 for x in a)


def _one_and_several_parts(
    path: str,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    bounds: tuple[int, int, int],
) -> tuple[Any, Any, int]:
    """The call ``name`` with one part (a huge budget), then with at least 4 parts."""
    call = _calls(*bounds)[name]
    numbers = name.endswith("numbers")
    table = open_table(path)
    rows = unit_partitions.source_rows(table.connection, table.parquet_files)
    monkeypatch.setattr(unit_partitions, "MEMORY_BUDGET", 10**15)
    assert grouped_sql.grouped_parts(table, *bounds, numbers=numbers) == 1
    whole = call(table)
    monkeypatch.setattr(unit_partitions, "MEMORY_BUDGET", max(1, rows * SMALLEST // 4))
    parts = grouped_sql.grouped_parts(table, *bounds, numbers=numbers)
    split = call(open_table(path))
    return whole, split, parts


@pytest.fixture(scope="module")
def visits(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _visits(tmp_path_factory.mktemp("grouped_parts") / "visits.parquet")


@pytest.mark.parametrize(
    ("g", "m", "r"), [(1, 1, 1), (3, 1, 1), (1, 2, 1), (2, 2, 3)],
    ids=["one aggregate", "sorted lists", "cells", "cells rows"],
)  # fmt: skip
@pytest.mark.parametrize("name", list(_calls(1, 1, 1)))
def test_several_parts_give_the_one_part_result(visits, monkeypatch, name, g, m, r):
    whole, split, parts = _one_and_several_parts(visits, monkeypatch, name, (g, m, r))
    assert parts >= 4
    assert _nonempty(whole)
    assert _same(split, whole), name


def test_the_per_cell_plan_of_one_value_per_group_splits_too(visits, monkeypatch):
    """Without DuckDB lambdas ``max_groups > 1``, ``m = r = 1`` runs two aggregates."""
    monkeypatch.setattr(grouped_sql, "lambda_syntax", lambda: False)
    for name in _calls(3, 1, 1):
        whole, split, parts = _one_and_several_parts(visits, monkeypatch, name, (3, 1, 1))
        assert parts >= 4
        assert _same(split, whole), name


def test_zero_and_minus_zero_are_one_unit_in_every_part(tmp_path, monkeypatch):
    """One unit written as ``0.0`` and ``-0.0`` in six groups keeps ``max_groups`` of them
    whatever the number of parts (the split hashes the unit as grouped)."""
    units = [0.0, -0.0] * 3 + [1.0, 2.0, None, math.nan]
    by = ["a", "b", "c", "d", "e", "a", "a", "b", "c", "d"]
    path = _write(tmp_path / "zero.parquet", units, by, ["x"] * len(units), [1.0] * len(units))
    for budget in (10**15, len(units) * SMALLEST // 5):  # one part, then at least 5
        monkeypatch.setattr(unit_partitions, "MEMORY_BUDGET", budget)
        table = open_table(path)
        found = table.scores(
            Query(
                "val",
                UnitRule(
                    privacy_unit="user", values_per_unit=1, groups_per_unit=2, salt=3, group_salt=4
                ),
                PublicGroups("grp", GROUPS),
            ),
            ["x"],
        )
        assert int(found[2].sum()) == 2 + 2  # the zero unit keeps 2 groups, 1.0 and 2.0 one each
        assert (
            table.numbers(
                Query(
                    "num",
                    UnitRule(privacy_unit="user", groups_per_unit=2, salt=3, group_salt=4),
                    PrivateGroups("grp"),
                )
            ).persons.sum()
            == 4
        )


unit_pool = st.sampled_from([0.0, -0.0, 1.5, -2.0, 3.0, 7.25, math.nan, None])
row = st.tuples(
    unit_pool,
    st.sampled_from([*GROUPS[:3], None]),
    st.sampled_from(VALUES[:3]),
    st.one_of(st.none(), st.sampled_from([-1.0, 0.0, -0.0, 2.5, math.nan])),
)


@pytest.mark.slow  # 25 examples of every plan: about 7 s; the fixed cases above run by default
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(row, min_size=1, max_size=40),
    st.sampled_from([(1, 1, 1), (2, 1, 1), (2, 2, 2)]),
    st.sampled_from(["candidates", "values limit 2", "numbers", "found values",
                     "found numbers"]),
    st.integers(2, 5),
)  # fmt: skip
def test_any_rows_give_the_one_part_result(rows, bounds, name, parts):
    call = _calls(*bounds)[name]
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder) / "rows.parquet", *map(list, zip(*rows, strict=True)))
        before = unit_partitions.MEMORY_BUDGET
        try:
            unit_partitions.MEMORY_BUDGET = 10**15
            whole = call(open_table(path))
            # at least `parts` parts for every plan
            unit_partitions.MEMORY_BUDGET = max(1, len(rows) * SMALLEST // parts)
            split = call(open_table(path))
        finally:
            unit_partitions.MEMORY_BUDGET = before
    assert _same(split, whole)
