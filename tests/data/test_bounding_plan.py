"""The bounding's physical plan (issue 14): the new SQL gives the old SQL's scores.

The rule (which values a user keeps) is fixed by docs/contribution_bounding.md; issue 14 only
changed how DuckDB computes it. tests/data/previous_bounding_sql.py keeps the previous queries
verbatim; here both run on random data with the same salt and must agree exactly, on the
candidate path (``candidate_scores``) and the unknown-domain path (``top_values``), for units
of several types (with NULL, NaN and -0.0), duplicate rows, values outside the candidate list,
and ``max_contributions`` 1 to 5. The Python reference of the rule is checked against the SQL
in tests/data/test_scores.py (``test_sql_equals_the_reference_implementation``).
"""

import numpy as np
import pandas as pd
import pytest

from dpselect.data.query import Query, UnitRule
from dpselect.data.scores import value_code
from dpselect.data.tables import open_table

from .previous_bounding_sql import previous_candidate_scores, previous_top_values
from .test_scores import reference_top_values


def random_rows(seed, unit_kind, n_rows=3000, n_users=300, n_values=40):
    """Users with several rows each (many duplicates), values partly outside the list."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, n_values + 1) ** 1.1
    site = np.array([f"s{i}" for i in range(n_values)], dtype=object)[
        rng.choice(n_values, n_rows, p=weights / weights.sum())
    ]
    site[rng.random(n_rows) < 0.03] = None
    users = rng.integers(0, n_users, n_rows)
    if unit_kind == "int":
        unit = pd.array(users, dtype="Int64")
        unit[rng.random(n_rows) < 0.02] = pd.NA
    elif unit_kind == "str":
        unit = np.array([f"user-{u}" for u in users], dtype=object)
        unit[rng.random(n_rows) < 0.02] = None
    else:  # float: -0.0 and 0.0 are one unit, NaN is missing
        unit = users / 7.0 - 3.0
        unit[users == 21] = -0.0
        unit[rng.random(n_rows) < 0.02] = np.nan
    return pd.DataFrame({"user_id": unit, "site": site})


CANDIDATES = [f"s{i}" for i in range(0, 50, 2)] + ["absent"]  # half the values, one absent


@pytest.mark.parametrize(
    "unit_kind", ["int", pytest.param("str", marks=pytest.mark.slow),
                  pytest.param("float", marks=pytest.mark.slow)]
)  # fmt: skip
def test_new_plan_equals_the_previous_plan(unit_kind):
    table = open_table(random_rows(len(unit_kind), unit_kind))
    for m, salt in ((1, 987654321), (2, 2**63 - 1), (5, 0)):
        new = table.scores(
            Query("site", UnitRule(privacy_unit="user_id", values_per_unit=m, salt=salt)),
            CANDIDATES,
        )
        old = previous_candidate_scores(table, "site", CANDIDATES, "user_id", m, salt)
        assert list(new) == list(old), (m, salt)
        assert new.sum() > 0
        new_top = table.counts(
            Query("site", UnitRule(privacy_unit="user_id", values_per_unit=m, salt=salt + 77)), 1000
        )
        old_top = previous_top_values(table, "site", 1000, "user_id", m, salt + 77)
        assert new_top == old_top, (m, salt)


def test_new_plan_on_a_parquet_file_with_numeric_candidates(tmp_path):
    # A typed file (the bench's shape) and numeric candidates on a text column (match_sql).
    df = random_rows(5, "int")
    df["site"] = df["site"].str.slice(1)  # "0", "1", ...: text holding numbers
    path = tmp_path / "d.parquet"
    df.to_parquet(path)
    table = open_table(path)
    for candidates in ([0, 1, 2, 3, 5, 8, 13], [0.0, 1.5, 2.0, 7.0]):
        for m in (1, 3):
            new = table.scores(
                Query("site", UnitRule(privacy_unit="user_id", values_per_unit=m, salt=4242)),
                candidates,
            )
            old = previous_candidate_scores(table, "site", candidates, "user_id", m, 4242)
            assert list(new) == list(old)


def test_colliding_value_codes_break_ties_by_value():
    # With salt 2, "w16717" and "w58953" have the same 32-bit code, so every user holding both
    # gives them the same key: the rule keeps the smaller value ("w16717"), which the new plan
    # finds through the value's rank packed below the key.
    salt = 2
    assert value_code(salt, "w16717") == value_code(salt, "w58953")
    n = 50
    df = pd.DataFrame(
        {
            "user_id": np.repeat(np.arange(n), 3),
            "site": ["w58953", "w16717", "other"] * n,
        }
    )
    table = open_table(df)
    for m in (1, 2):
        new = dict(
            table.counts(
                Query("site", UnitRule(privacy_unit="user_id", values_per_unit=m, salt=salt)), 10
            )
        )
        assert new == dict(previous_top_values(table, "site", 10, "user_id", m, salt))
        units, sites = df["user_id"].tolist(), df["site"].tolist()
        assert new == dict(reference_top_values(units, sites, m, salt))
        # whenever a user keeps one of the pair and not the other, it is the smaller value
        assert new.get("w16717", 0) >= new.get("w58953", 0)
    assert "w58953" not in dict(
        table.counts(
            Query("site", UnitRule(privacy_unit="user_id", values_per_unit=1, salt=salt)), 10
        )
    )


@pytest.mark.parametrize("m", [1, 2, 3, 8, 9, 20])
def test_keep_smallest_equals_the_rule(m):
    # The NumPy kernel of the m > 1 plan against bounding_key itself, with duplicate rows,
    # one-row users and users with fewer than m distinct values (both of its algorithms).
    from collections import Counter

    from dpselect.data.scores import bounding_key, keep_smallest, unit_seed

    rng = np.random.default_rng(m)
    salt = 31337
    users = [str(u) for u in range(60)]
    lengths = rng.integers(1, 30, len(users))
    ties = rng.integers(0, 25, lengths.sum()).astype(np.uint32)
    seeds = np.array([unit_seed(salt, u) for u in users], dtype=np.uint64)
    got = Counter(keep_smallest(seeds, lengths, ties, ties, m).tolist())
    expected = Counter()
    start = 0
    for u, n in zip(users, lengths, strict=True):
        mine = set(ties[start : start + n].tolist())
        start += n
        expected.update(sorted(mine, key=lambda i: (bounding_key(salt, u, i), i))[:m])
    assert got == expected
    assert len(keep_smallest(seeds[:0], lengths[:0], ties[:0], ties[:0], m)) == 0
