"""Rows per value (``max_rows_per_value=r``): each unit keeps the same ``m`` values as with
``r = 1`` and adds ``min(its rows with the value, r)`` to each kept value's score.

Checked against a Python reference of the rule on every plan (the SQL plan, the lists plan,
the Parquet dictionary plan, the unknown-domain path) and input kind (CSV, Parquet, pandas,
Arrow); ``r = 1`` is today's scores bit for bit; adding one unit with many rows moves the
scores within L-inf ``r``, L1 ``m r``, L0 ``m``; errors are public.
"""

from collections import Counter

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpselect.core.errors import ParameterError
from dpselect.data import dictionary_scores
from dpselect.data.query import Query, UnitRule
from dpselect.data.rules import (
    bounding_key,
    fmix32,
    keep_smallest,
    keep_smallest_counted,
    value_code,
)
from dpselect.data.tables import open_table
from dpselect.data.values import canonical_text

CANDIDATES = [f"s{i}" for i in range(8)]


def reference_scores(units, sites, candidates, m, r, salt):
    """Python: each unit keeps its m distinct candidates of smallest (key, position) and adds
    min(rows, r) to each."""
    position = {c: i for i, c in enumerate(candidates)}
    rows: dict[object, Counter] = {}
    for u, s in zip(units, sites, strict=True):
        if u is None or s is None or s not in position:
            continue
        rows.setdefault(u, Counter())[position[s]] += 1
    out = np.zeros(len(candidates), dtype=np.int64)
    for u, per_position in rows.items():
        text = canonical_text(u)
        kept = sorted(per_position, key=lambda i: (bounding_key(salt, text, i), i))[:m]
        for i in kept:
            out[i] += min(per_position[i], r)
    return out


def reference_top_values(units, values, m, r, salt):
    rows: dict[object, Counter] = {}
    for u, v in zip(units, values, strict=True):
        if u is None or v is None:
            continue
        rows.setdefault(u, Counter())[v] += 1
    counts: Counter = Counter()
    for u, per_value in rows.items():
        text = canonical_text(u)
        key = {v: bounding_key(salt, text, value_code(salt, canonical_text(v))) for v in per_value}
        for v in sorted(per_value, key=lambda v: (key[v], v))[:m]:
            counts[v] += min(per_value[v], r)
    return counts


def heavy_visits(seed, n_users=30, n_rows=900, unit_kind="int"):
    """Units with many rows each (Zipf-like), values s0..s5 and x0 (outside), some nulls."""
    rng = np.random.default_rng(seed)
    values = np.array([f"s{i}" for i in range(6)] + ["x0"], dtype=object)
    weights = 1 / np.arange(1, len(values) + 1)
    site = values[rng.choice(len(values), n_rows, p=weights / weights.sum())]
    site[rng.random(n_rows) < 0.03] = None
    users = rng.zipf(1.5, n_rows) % n_users
    df = pd.DataFrame({"user_id": users, "site": site})
    if unit_kind == "str":
        df["user_id"] = "u" + df["user_id"].astype(str)
    return df


def _lists(df):
    return df["user_id"].tolist(), [None if pd.isna(s) else s for s in df["site"]]


def write(df, tmp_path, kind, row_group_size=None):
    if kind == "csv":
        path = tmp_path / "d.csv"
        df.to_csv(path, index=False)
        return path
    if kind == "parquet":
        path = tmp_path / "d.parquet"
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path,
                       row_group_size=row_group_size)  # fmt: skip
        return path
    if kind == "pandas":
        return df
    if kind == "arrow":
        return pa.Table.from_pandas(df, preserve_index=False)
    raise AssertionError(kind)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**30),
    m=st.integers(1, 10),
    r=st.integers(1, 40),
    salt=st.sampled_from([0, 1, 2**63 - 1, 987654321]),
    unit_kind=st.sampled_from(["int", "str"]),
)
def test_sql_plans_equal_the_reference(seed, m, r, salt, unit_kind):
    df = heavy_visits(seed, unit_kind=unit_kind)
    units, sites = _lists(df)
    table = open_table(df)
    got = table.scores(
        Query(
            "site", UnitRule(privacy_unit="user_id", values_per_unit=m, rows_per_value=r, salt=salt)
        ),
        CANDIDATES,
    )
    assert list(got) == list(reference_scores(units, sites, CANDIDATES, m, r, salt))
    tops = dict(
        table.counts(
            Query(
                "site",
                UnitRule(privacy_unit="user_id", values_per_unit=m, rows_per_value=r, salt=salt),
            ),
            100,
        )
    )
    assert tops == dict(reference_top_values(units, sites, m, r, salt))
    assert (
        dict(
            table.counts(
                Query(
                    "site",
                    UnitRule(
                        privacy_unit="user_id", values_per_unit=m, rows_per_value=r, salt=salt
                    ),
                )
            )
        )
        == tops
    )


@pytest.mark.parametrize("kind", ["csv", "parquet", "pandas", "arrow"])
@pytest.mark.parametrize(("m", "r"), [(1, 1), (1, 5), (3, 2), (4, 50), (9, 7)])
def test_every_input_kind_and_plan_equals_the_reference(tmp_path, kind, m, r):
    df = heavy_visits(7 + m + r, n_rows=1500, unit_kind="str" if m % 2 else "int")
    units, sites = _lists(df)
    salt = 4242 + r
    table = open_table(write(df, tmp_path, kind, row_group_size=400))
    if kind == "parquet":  # the dictionary plan is the one chosen
        files = dictionary_scores.dictionary_files(
            table, "site", table.columns["site"], "user_id", table.columns["user_id"]
        )
        assert files is not None
    expected = reference_scores(units, sites, CANDIDATES, m, r, salt)
    got = table.scores(
        Query(
            "site", UnitRule(privacy_unit="user_id", values_per_unit=m, rows_per_value=r, salt=salt)
        ),
        CANDIDATES,
    )
    assert list(got) == list(expected)
    tops = dict(
        table.counts(
            Query(
                "site",
                UnitRule(privacy_unit="user_id", values_per_unit=m, rows_per_value=r, salt=salt),
            ),
            100,
        )
    )
    assert tops == dict(reference_top_values(units, sites, m, r, salt))


def test_dictionary_plan_equals_the_sql_plan_with_numeric_candidates(tmp_path):
    rng = np.random.default_rng(5)
    n = 3000
    df = pd.DataFrame(
        {
            "user_id": rng.integers(0, 40, n),
            "site": rng.choice(["1", "2", "2.0", "3", "x", None], n).astype(object),
        }
    )
    path = write(df, tmp_path, "parquet", row_group_size=700)
    fast = open_table(path)
    slow = open_table(path)
    slow.parquet_files = None
    for candidates in ([1, 2, 3, 4], [2.0, 2, "x"]):
        for m, r in ((1, 3), (2, 9)):
            want = slow.scores(
                Query(
                    "site",
                    UnitRule(privacy_unit="user_id", values_per_unit=m, rows_per_value=r, salt=77),
                ),
                candidates,
            )
            got = fast.scores(
                Query(
                    "site",
                    UnitRule(privacy_unit="user_id", values_per_unit=m, rows_per_value=r, salt=77),
                ),
                candidates,
            )
            assert list(got) == list(want) and want.sum() > 0


@pytest.mark.parametrize("m", [1, 2, 4])
def test_r_one_is_todays_scores_bit_for_bit(tmp_path, m):
    df = heavy_visits(3 + m, n_rows=2000)
    for kind in ("csv", "parquet", "pandas"):
        table = open_table(write(df, tmp_path, kind, row_group_size=500))
        for salt in (0, 31337):
            today = table.scores(
                Query("site", UnitRule(privacy_unit="user_id", values_per_unit=m, salt=salt)),
                CANDIDATES,
            )
            same = table.scores(
                Query(
                    "site",
                    UnitRule(
                        privacy_unit="user_id", values_per_unit=m, rows_per_value=1, salt=salt
                    ),
                ),
                CANDIDATES,
            )
            assert list(today) == list(same)
            assert table.counts(
                Query("site", UnitRule(privacy_unit="user_id", values_per_unit=m, salt=salt)), 50
            ) == table.counts(
                Query(
                    "site",
                    UnitRule(
                        privacy_unit="user_id", values_per_unit=m, rows_per_value=1, salt=salt
                    ),
                ),
                50,
            )


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize(("m", "r"), [(1, 10), (2, 3), (4, 50)])
def test_one_heavy_unit_moves_scores_within_the_sensitivities(seed, m, r):
    df = heavy_visits(seed)
    salt = 1000 + seed
    rng = np.random.default_rng(seed)
    new = pd.DataFrame(
        {
            "user_id": np.full(5000, 10**6),
            "site": rng.choice([*CANDIDATES, "x0"], 5000).astype(object),
        }
    )
    after_df = pd.concat([df, new], ignore_index=True)
    before = open_table(df).scores(
        Query(
            "site", UnitRule(privacy_unit="user_id", values_per_unit=m, rows_per_value=r, salt=salt)
        ),
        CANDIDATES,
    )
    after = open_table(after_df).scores(
        Query(
            "site", UnitRule(privacy_unit="user_id", values_per_unit=m, rows_per_value=r, salt=salt)
        ),
        CANDIDATES,
    )
    diff = after - before
    assert np.all(diff >= 0) and diff.max() <= r  # L-inf r, monotone
    assert np.count_nonzero(diff) <= m  # L0 m
    assert diff.sum() <= m * r  # L1 m r
    assert diff.sum() == m * r  # the unit holds every candidate many times: exactly that
    tb = dict(
        open_table(df).counts(
            Query(
                "site",
                UnitRule(privacy_unit="user_id", values_per_unit=m, rows_per_value=r, salt=salt),
            ),
            100,
        )
    )
    ta = dict(
        open_table(after_df).counts(
            Query(
                "site",
                UnitRule(privacy_unit="user_id", values_per_unit=m, rows_per_value=r, salt=salt),
            ),
            100,
        )
    )
    moved = {v: ta.get(v, 0) - tb.get(v, 0) for v in set(ta) | set(tb)}
    assert all(0 <= d <= r for d in moved.values())
    assert sum(1 for d in moved.values() if d) <= m and sum(moved.values()) <= m * r


def test_keep_smallest_counted_keeps_the_same_values():
    rng = np.random.default_rng(9)
    for m in (1, 3, 8, 9, 12):
        lengths = rng.integers(1, 40, 200)
        ties = rng.integers(0, 15, lengths.sum()).astype(np.uint32)
        seeds = rng.integers(0, 2**63, 200).astype(np.uint64)
        plain = keep_smallest(seeds, lengths, ties, ties, m)
        kept, rows = keep_smallest_counted(seeds, lengths, ties, ties, m, 4)
        assert sorted(plain.tolist()) == sorted(kept.tolist())
        # rows: the copies of each kept (user, tie), capped at 4 (brute force)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        want = Counter()
        for j, (s, n) in enumerate(zip(starts, lengths, strict=True)):
            mine = Counter(ties[s : s + n].tolist())
            seed = int(seeds[j])
            a, b = seed & 0xFFFFFFFF, seed >> 32
            key = {t: fmix32(fmix32(t ^ a) ^ b) for t in mine}
            for t in sorted(mine, key=lambda t: (key[t], t))[:m]:
                want[t] += min(mine[t], 4)
        got = Counter()
        for t, w in zip(kept.tolist(), rows.tolist(), strict=True):
            got[t] += w
        assert got == want


def test_public_errors():
    df = heavy_visits(1)
    table = open_table(df)
    with pytest.raises(ParameterError, match="max_rows_per_value applies only with a privacy"):
        table.scores(
            Query("site", UnitRule(values_per_unit=1, rows_per_value=3, salt=0)), CANDIDATES
        )
    with pytest.raises(
        ParameterError, match=r"UnitRule\(rows_per_value=\.\.\.\) must be an integer at least 1"
    ):
        table.scores(
            Query(
                "site",
                UnitRule(privacy_unit="user_id", values_per_unit=1, rows_per_value=0, salt=0),
            ),
            CANDIDATES,
        )
    with pytest.raises(
        ParameterError, match=r"UnitRule\(rows_per_value=\.\.\.\) must be an integer at least 1"
    ):
        table.counts(
            Query(
                "site",
                UnitRule(privacy_unit="user_id", values_per_unit=1, rows_per_value=2.5, salt=0),
            ),
            5,
        )
