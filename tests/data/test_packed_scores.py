"""The packed plan (dpselect/data/packed_scores.py) keeps exactly the SQL plan's pairs.

Both plans compute the rule of docs/contribution_bounding.md; here they run on random data
with the same salt and must give the same scores, for units of every type the engine
accepts (integers up to the int64 and uint64 limits, text with the raw-byte keys of
dpselect/data/unit_keys.py, floats with NaN and -0.0, booleans, dates, timestamps,
decimals, blobs, mixed Python objects), duplicate rows, units with fewer than ``m``
values, values matching two candidates (``4`` and ``4.0`` on a text column), and several
passes and ranges of unit codes. The Python reference of the rule
(tests/data/test_scores.py) is checked too.
"""

import contextlib
import datetime as dt
import decimal

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpselect.data import packed_scores
from dpselect.data.query import Query, UnitRule
from dpselect.data.rules import bounding_key, fmix32, unit_seed
from dpselect.data.scores import duckdb_candidate_scores
from dpselect.data.tables import open_table

from .test_scores import reference_bounded_scores

SITES = ["a", "b", "c", "d", "e", "4", "4.0", " 7 "]

#: A few distinct values of each unit type (drawn with repeats, so units hold several rows).
UNIT_POOLS = {
    "int64": [0, 1, -1, 2**63 - 1, -(2**63), 12345678901234, 7, 8],
    "uint64": [0, 1, 2**64 - 1, 2**63, 5],
    "text": ["", "u", "U", "ü", "user-1", "user-10", "a\x1fb", "😀"],
    "float": [0.0, -0.0, 1.5, -1.5, float("inf"), float("-inf"), float("nan"), 1e-300],
    "bool": [True, False],
    "date": [dt.date(2020, 1, 1), dt.date(1970, 1, 1), dt.date(1, 1, 1)],
    "timestamp": [dt.datetime(2020, 1, 1, 12), dt.datetime(1969, 12, 31, 23, 59, 59, 999)],
    "decimal": [decimal.Decimal("1.50"), decimal.Decimal("-2.25"), decimal.Decimal("0.00")],
    "blob": [b"", b"\x00", b"\xff\xfe", b"abc"],
    "object": [1, 1.0, "1", True, None, ("a", 1), b"1", 2],
    "bad_utf8": [b"\xff", b"\xfe", b"ok", b"o\xffk"],
}
ARROW_TYPES = {
    "int64": pa.int64(),
    "uint64": pa.uint64(),
    "text": pa.string(),
    "float": pa.float64(),
    "bool": pa.bool_(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us"),
    "decimal": pa.decimal128(10, 2),
    "blob": pa.binary(),
}


def unit_frame(kind, units, sites):
    """A table of ``units`` (of the kind) and ``sites`` as DuckDB will read it."""
    if kind == "object":
        return pd.DataFrame({"user_id": pd.Series(units, dtype=object), "site": sites})
    if kind == "bad_utf8":  # text that is not valid UTF-8: keyed by its raw bytes
        raw = pa.array(units, pa.binary()).view(pa.string())
        return pa.table({"user_id": raw, "site": pa.array(sites, pa.string())})
    return pa.table(
        {"user_id": pa.array(units, ARROW_TYPES[kind]), "site": pa.array(sites, pa.string())}
    )


@st.composite
def bounded_data(draw):
    kind = draw(st.sampled_from(sorted(UNIT_POOLS)))
    pool = UNIT_POOLS[kind]
    n = draw(st.integers(0, 60))
    units = draw(st.lists(st.sampled_from([*pool, None]), min_size=n, max_size=n))
    sites = draw(st.lists(st.sampled_from([*SITES, None]), min_size=n, max_size=n))
    candidates = draw(
        st.one_of(
            st.lists(st.sampled_from([*SITES, "absent"]), min_size=1, unique=True),
            st.just([4, 4.0, 7, 1]),  # numbers on a text column: "4" and "4.0" match two
        )
    )
    m = draw(st.integers(1, 4))
    salt = draw(st.integers(0, 2**64 - 1))
    return kind, units, sites, candidates, m, salt


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bounded_data())
def test_packed_plan_equals_the_sql_plan(data):
    kind, units, sites, candidates, m, salt = data
    table = open_table(unit_frame(kind, units, sites))
    packed = packed_scores.packed_candidate_scores(table, "site", candidates, "user_id", m, salt)
    sql = duckdb_candidate_scores(table, "site", candidates, "user_id", m, salt)
    assert list(packed) == list(sql)
    assert packed.dtype == np.int64 and len(packed) == len(candidates)
    if kind in ("int64", "text", "float") and all(isinstance(c, str) for c in candidates):
        expected = reference_bounded_scores(units, sites, candidates, m, salt)
        assert list(packed) == list(expected)


@pytest.mark.parametrize("m", [1, 2, 5])
def test_several_passes_and_ranges_of_unit_codes(monkeypatch, m):
    # Passes of 7 unit codes, ranges of a few codes each, batches of 64 words (folded on
    # both threads, m = 1): the seams change nothing.
    rng = np.random.default_rng(m)
    df = pd.DataFrame(
        {
            "user_id": rng.integers(-50, 50, 2000) * 10**15,
            "site": np.array(SITES, dtype=object)[rng.integers(0, len(SITES), 2000)],
        }
    )
    table = open_table(df)
    expected = duckdb_candidate_scores(table, "site", SITES, "user_id", m, 99)
    for passes_of, batch_rows in ((7, 1 << 20), (1 << 32, 1 << 20), (7, 64), (1 << 32, 64)):
        monkeypatch.setattr(packed_scores, "_CODES_PER_PASS", passes_of)
        monkeypatch.setattr(packed_scores, "_BATCH_ROWS", batch_rows)
        got = packed_scores.packed_candidate_scores(table, "site", SITES, "user_id", m, 99)
        assert list(got) == list(expected)
        assert got.sum() > 0


def test_the_engine_chooses_the_packed_plan_by_public_facts(tmp_path, monkeypatch):
    # Integer units, m = 1 and 3, on a frame and on Parquet text: the packed plan, with the
    # SQL plan's scores. A Parquet text unit keeps the dictionary plan (its raw bytes).
    rng = np.random.default_rng(5)
    df = pd.DataFrame(
        {
            "user_id": rng.integers(0, 300, 3000),
            "site": np.array(SITES, dtype=object)[rng.integers(0, len(SITES), 3000)],
        }
    )
    path = tmp_path / "d.parquet"
    df.to_parquet(path)
    calls = []
    real = packed_scores.packed_candidate_scores

    def spy(*args, **kwargs):
        calls.append(args[1:5])
        return real(*args, **kwargs)

    monkeypatch.setattr(packed_scores, "packed_candidate_scores", spy)
    for source in (df, path):
        table = open_table(source)
        for m in (1, 3):
            got = table.scores(
                Query("site", UnitRule(privacy_unit="user_id", values_per_unit=m, salt=7)), SITES
            )
            assert list(got) == list(duckdb_candidate_scores(table, "site", SITES, "user_id", m, 7))
    assert len(calls) == 4
    df["user_id"] = "user-" + df["user_id"].astype(str)
    df.to_parquet(path)
    open_table(path).scores(
        Query("site", UnitRule(privacy_unit="user_id", values_per_unit=3, salt=7)), SITES
    )
    assert len(calls) == 4  # the dictionary plan
    open_table(path).scores(
        Query(
            "site", UnitRule(privacy_unit="user_id", values_per_unit=3, rows_per_value=2, salt=7)
        ),
        SITES,
    )
    assert len(calls) == 4


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=50))
def test_invert_fmix32_inverts_fmix32(words):
    x = np.array([fmix32(w) for w in words], dtype=np.uint32)
    packed_scores.invert_fmix32(x)
    assert x.tolist() == words


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.text(max_size=5), st.integers(0, 2**32 - 1)), min_size=1, max_size=20),
    st.integers(0, 2**64 - 1),
)
def test_positions_of_keys_inverts_bounding_key(pairs, salt):
    keys = np.array([bounding_key(salt, u, c) for u, c in pairs], dtype=np.uint32)
    seeds = np.array([unit_seed(salt, u) for u, _ in pairs], dtype=np.uint64)
    assert packed_scores.positions_of_keys(keys, seeds).tolist() == [c for _, c in pairs]


@pytest.mark.parametrize("m", [1, 2, 3, 9])
def test_kept_positions_keeps_the_m_smallest_distinct_keys(m):
    # Duplicate words (rows of one value), units with fewer than m values, one-word units.
    rng = np.random.default_rng(m)
    salt, n_units = 4242, 50
    seeds = np.array([unit_seed(salt, str(k)) for k in range(n_units)], dtype=np.uint64)
    units = rng.integers(0, n_units, 600)
    units[:3] = [0, 0, 1]  # unit 0 twice the same value below
    codes = rng.integers(0, 12, 600)
    codes[:2] = 5
    pairs = zip(units, codes, strict=True)
    keyed = np.array(
        [(int(k) << 32) | bounding_key(salt, str(k), int(c)) for k, c in pairs], dtype=np.uint64
    )
    got = sorted(packed_scores.kept_positions(keyed, seeds, m).tolist())
    expected = []
    for k in range(n_units):
        mine = {int(c) for u, c in zip(units, codes, strict=True) if u == k}
        expected += sorted(mine, key=lambda c: bounding_key(salt, str(k), c))[:m]
    assert got == sorted(expected)
    assert len(packed_scores.kept_positions(keyed[:0], seeds, m)) == 0


@pytest.mark.parametrize("setting", [True, False])
def test_the_insertion_order_setting_is_restored(setting):
    # The words stream unordered; the connection's own setting comes back afterwards.
    df = pd.DataFrame({"user_id": [1, 1, 2, 3], "site": ["a", "b", "a", "c"]})
    table = open_table(df)
    table.connection.execute(f"SET SESSION preserve_insertion_order = {str(setting).lower()}")
    got = packed_scores.packed_candidate_scores(table, "site", SITES, "user_id", 1, 3)
    assert got.sum() == 3
    found = table.connection.execute("SELECT current_setting('preserve_insertion_order')")
    assert found.fetchall()[0][0] == setting


def test_the_insertion_order_setting_stays_in_the_session():
    # Another cursor of the same database never sees the order switched off, during the
    # stream (read from a batch callback) nor after.
    df = pd.DataFrame({"user_id": [1, 1, 2, 3], "site": ["a", "b", "a", "c"]})
    table = open_table(df)
    table.connection.execute("SET GLOBAL preserve_insertion_order = true")  # the default
    other = table.connection.cursor()
    seen = []
    real = packed_scores._unordered

    @contextlib.contextmanager
    def watched(connection):
        with real(connection):
            query = "SELECT current_setting('preserve_insertion_order')"
            seen.append((connection.execute(query).fetchall()[0][0],
                         other.execute(query).fetchall()[0][0]))  # fmt: skip
            yield

    packed_scores._unordered = watched
    try:
        got = packed_scores.packed_candidate_scores(table, "site", SITES, "user_id", 1, 3)
    finally:
        packed_scores._unordered = real
    assert got.sum() == 3
    assert seen == [(False, True)]
    query = "SELECT current_setting('preserve_insertion_order')"
    assert other.execute(query).fetchall()[0][0] is True
