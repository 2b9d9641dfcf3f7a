"""The privacy-unit key is injective: two distinct raw units are never read as one (issue 22).

Each test gives every distinct raw unit value one row holding the value ``x`` and asks for the
bounded score of ``x`` with ``max_contributions = 1``: it is the number of distinct keys, so
it equals the number of distinct raw values exactly when no two of them share a key. Before the
fix, int ``1`` and str ``"1"``, two strings with different lone surrogates, and two Parquet
texts whose invalid bytes differ were one unit each.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import uuid
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpselect.core.errors import DataError
from dpselect.data.query import Query, UnitRule
from dpselect.data.tables import open_table
from dpselect.data.unit_keys import object_unit_key

SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _units_of_x(data: object, m: int = 1, salt: int = 7) -> int:
    return int(
        open_table(data).scores(
            Query("v", UnitRule(privacy_unit="uid", values_per_unit=m, salt=salt)), ["x"]
        )[0]
    )


# --- Python objects (pandas object columns) -------------------------------------------

_scalars = st.one_of(
    st.text(alphabet=st.characters(codec=None, min_codepoint=0), max_size=6),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=False).map(lambda f: f + 0.0),  # -0.0 is 0.0, one unit
    st.booleans(),
    st.binary(max_size=6),
)
_objects = st.one_of(_scalars, st.tuples(_scalars, _scalars))


def _identity(value: object) -> object:
    """What makes two objects one unit: equal value of the same type (recursively)."""
    if isinstance(value, tuple):
        return ("tuple", tuple(_identity(v) for v in value))
    return (type(value).__name__, value)


@SETTINGS
@given(st.lists(_objects, min_size=1, max_size=12))
def test_object_column_units_never_merge(values: list[object]) -> None:
    distinct = {_identity(v): v for v in values}
    frame = pd.DataFrame(
        {"uid": pd.Series(list(distinct.values()), dtype=object), "v": ["x"] * len(distinct)}
    )
    assert _units_of_x(frame) == len(distinct)
    try:
        categorical = frame.assign(uid=frame["uid"].astype("category"))
    except UnicodeEncodeError:  # pandas >= 3 keeps categories as Arrow strings: no lone
        return  # surrogate ('\ud800') can be one, so there is no categorical column to read
    # pandas itself makes equal values one category (0 and 0.0, 1 and True): the categorical
    # holds one value for them, so its units are its distinct codes
    codes = categorical["uid"].cat.codes
    categories = categorical["uid"].cat.categories
    if any(isinstance(c, str) and not c.isascii() and _lone_surrogate(c) for c in categories):
        # the categories are the column's dtype (public): DuckDB cannot convert a lone
        # surrogate, and opening the table says so, before any query
        with pytest.raises(DataError, match="surrogate"):
            _units_of_x(categorical)
        return
    if not _duckdb_scans(categorical):
        # two categories with one text (False and 'False'): DuckDB's ENUM of the categories'
        # text cannot hold both, and opening the table says so from the dtype (public), before
        # any query; no two units are ever merged
        with pytest.raises(DataError, match="duplicate"):
            _units_of_x(categorical)
        return
    assert _units_of_x(categorical) == codes[codes >= 0].nunique()


def _duckdb_scans(frame: pd.DataFrame) -> bool:
    """Whether DuckDB itself registers ``frame`` (its categories as an ENUM)."""
    connection = duckdb.connect()
    try:
        connection.register("f", frame)
    except duckdb.Error:
        return False
    finally:
        connection.close()
    return True


def _lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def test_object_keys_distinguish_the_audits_merges() -> None:
    merged = [
        (1, "1"),
        (1.0, "1.0"),
        (True, "True"),
        (("a", 1), "('a', 1)"),
        ("a\udc80", "a\udc81"),
        ("a\udc80", "a?"),
        (b"a", "a"),
        (1, 1.0),
        (1, True),
        (decimal.Decimal("1"), 1),
        (dt.date(2020, 1, 1), "2020-01-01"),
        (uuid.UUID(int=1), str(uuid.UUID(int=1))),
    ]
    for a, b in merged:
        assert object_unit_key(a) != object_unit_key(b), (a, b)
        frame = pd.DataFrame({"uid": pd.Series([a, b], dtype=object), "v": ["x", "x"]})
        assert _units_of_x(frame) == 2, (a, b)


def test_object_keys_of_equal_values_agree() -> None:
    assert object_unit_key(0.0) == object_unit_key(-0.0)
    assert object_unit_key(decimal.Decimal("1.0")) == object_unit_key(decimal.Decimal("1"))
    assert object_unit_key(np.int64(3)) == object_unit_key(3)
    assert object_unit_key("é") == "é".encode()  # valid text keeps its bytes (and its seed)
    for missing in (None, math.nan, pd.NA, pd.NaT, np.datetime64("NaT")):
        assert object_unit_key(missing) is None
    assert object_unit_key(object()) is None  # no injective encoding: no unit, never merged


def test_the_audits_neighbouring_case_is_monotone() -> None:
    """D = {1 -> x, "1" -> y, "p0" -> y}, D' = D without the int-1 row: over many salts, every
    score moves down by at most 1 (one person removed, m = 1). Before the fix the merged unit
    "1" kept x in D and y in D' for some salts: x fell and y rose."""
    d = pd.DataFrame({"uid": pd.Series([1, "1", "p0"], dtype=object), "v": ["x", "y", "y"]})
    d_prime = d.iloc[1:].reset_index(drop=True)
    for salt in range(40):
        before = open_table(d).scores(
            Query("v", UnitRule(privacy_unit="uid", values_per_unit=1, salt=salt)), ["x", "y"]
        )
        after = open_table(d_prime).scores(
            Query("v", UnitRule(privacy_unit="uid", values_per_unit=1, salt=salt)), ["x", "y"]
        )
        change = before - after
        assert change.min() >= 0 and change.sum() <= 1, (salt, before, after)


# --- Bytes: Arrow, Parquet, CSV ---------------------------------------------------------

_raw = st.lists(st.binary(min_size=0, max_size=5), min_size=1, max_size=12, unique=True)


def _text_array(raw: list[bytes], kind: str) -> pa.Array:
    binary = pa.array(raw, type=pa.binary())
    if kind == "binary":
        return binary
    if kind == "large_string":
        return pa.array(raw, type=pa.large_binary()).view(pa.large_string())
    text = binary.view(pa.string())  # unchecked: the bytes as a file may hold them
    if kind == "dictionary":
        return pa.DictionaryArray.from_arrays(pa.array(range(len(raw)), pa.int32()), text)
    return text


@SETTINGS
@given(_raw, st.sampled_from(["string", "large_string", "binary", "dictionary"]))
def test_arrow_units_are_their_bytes(raw: list[bytes], kind: str) -> None:
    table = pa.table({"uid": _text_array(raw, kind), "v": ["x"] * len(raw)})
    assert _units_of_x(table) == len(raw)
    assert _units_of_x(table, m=2) == len(raw)


@SETTINGS
@given(_raw)
def test_parquet_text_units_are_their_bytes(tmp_path_factory: pytest.TempPathFactory,
                                            raw: list[bytes]) -> None:  # fmt: skip
    path = tmp_path_factory.mktemp("units") / "u.parquet"
    table = pa.table({"uid": _text_array(raw, "string"), "v": ["x"] * len(raw)})
    pq.write_table(table, path)
    assert _units_of_x(str(path)) == len(raw)  # the SQL plan (m = 1)
    assert _units_of_x(str(path), m=2) == len(raw)  # the dictionary plan


def test_parquet_invalid_utf8_units_keep_valid_seeds(tmp_path: Path) -> None:
    """Valid text has the seed of its text whichever way it is read: the scores of a Parquet
    file equal those of the same rows from pandas (valid text) and, with invalid bytes, those
    of the same rows as an Arrow table (both by raw bytes)."""
    rng = np.random.default_rng(3)
    users = [f"user{i}" for i in range(40)]
    rows = [(users[rng.integers(40)], f"s{rng.integers(6)}") for _ in range(400)]
    frame = pd.DataFrame(rows, columns=["uid", "v"])
    path = tmp_path / "valid.parquet"
    frame.to_parquet(path)
    cands = [f"s{j}" for j in range(6)]
    for m in (1, 3):
        a = open_table(str(path)).scores(
            Query("v", UnitRule(privacy_unit="uid", values_per_unit=m, salt=11)), cands
        )
        b = open_table(frame).scores(
            Query("v", UnitRule(privacy_unit="uid", values_per_unit=m, salt=11)), cands
        )
        assert a.tolist() == b.tolist()
    raw = [u.encode() + (b"\xff" if i % 3 == 0 else b"") for i, u in enumerate(users)]
    table = pa.table(
        {
            "uid": pa.array([raw[int(u[4:])] for u, _ in rows], pa.binary()).view(pa.string()),
            "v": [v for _, v in rows],
        }
    )
    pq.write_table(table, tmp_path / "invalid.parquet")
    for m in (1, 3):
        a = open_table(str(tmp_path / "invalid.parquet")).scores(
            Query("v", UnitRule(privacy_unit="uid", values_per_unit=m, salt=11)), cands
        )
        b = open_table(table).scores(
            Query("v", UnitRule(privacy_unit="uid", values_per_unit=m, salt=11)), cands
        )
        assert a.tolist() == b.tolist()


def test_parquet_text_units_read_values_natively_with_the_same_counts(tmp_path: Path) -> None:
    """A text unit of Parquet files is read through pyarrow (raw bytes) while the distinct
    values come from DuckDB's own reader (value_rows) and the joins run as written
    (unit_join_order): the counts without candidates equal those of the same rows as an
    Arrow table, invalid UTF-8 in the unit and in the ranked column included."""
    from dpselect.data.join_order import is_text_source
    from dpselect.data.unit_keys import ParquetUnits, unit_join_order, value_rows

    rng = np.random.default_rng(5)
    units = [f"user{i}".encode() + (b"\xff" if i % 4 == 0 else b"") for i in range(60)]
    values = [f"s{j}".encode() + (b"\xfe" if j % 3 == 0 else b"") for j in range(9)]
    picks = [(units[rng.integers(60)], values[rng.integers(9)]) for _ in range(700)]
    table = pa.table(
        {
            "uid": pa.array([u for u, _ in picks], pa.binary()).view(pa.string()),
            "v": pa.array([v for _, v in picks], pa.binary()).view(pa.string()),
        }
    )
    path = tmp_path / "t.parquet"
    pq.write_table(table, path)
    parquet = open_table(str(path))
    assert value_rows(parquet) == "data"  # no text unit asked for yet
    for m in (1, 3):
        rule = UnitRule(privacy_unit="uid", values_per_unit=m, salt=17)
        found = parquet.counts(Query("v", rule), 20)
        assert value_rows(parquet) == ParquetUnits.NATIVE_VIEW
        assert found == open_table(table).counts(Query("v", rule), 20)
        assert sum(n for _, n in found) > 0
    assert not is_text_source(parquet)
    with unit_join_order(parquet, "RAW UNIT KEY"):
        held = parquet.connection.execute("SELECT current_setting('disabled_optimizers')")
        assert "join_order" in str(held.fetchall()[0][0])
    assert "join_order" not in str(
        parquet.connection.execute("SELECT current_setting('disabled_optimizers')").fetchall()
    )


_csv_text = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters=',"\r\n\x00\x01'),
    min_size=1,
    max_size=6,
)


@SETTINGS
@given(st.lists(_csv_text, min_size=1, max_size=12, unique=True))
def test_csv_text_units_never_merge(tmp_path_factory: pytest.TempPathFactory,
                                    texts: list[str]) -> None:  # fmt: skip
    path = tmp_path_factory.mktemp("units") / "u.csv"
    path.write_text("uid,v\n" + "".join(f"{t},x\n" for t in texts), encoding="utf-8")
    assert _units_of_x(str(path)) == len(texts)


def test_string_python_and_pyarrow_columns(tmp_path: Path) -> None:
    values = ["a", "a?", "b\u00e9", "1"]
    for dtype in ("string[python]", "string[pyarrow]", "str"):
        frame = pd.DataFrame({"uid": pd.Series(values, dtype=dtype), "v": ["x"] * 4})
        assert _units_of_x(frame) == 4, dtype
    surrogates = pd.Series(["a\udc80", "a\udc81", "a?"], dtype=object).astype("string[python]")
    frame = pd.DataFrame({"uid": surrogates, "v": ["x"] * 3})
    assert _units_of_x(frame) == 3


def test_json_units_are_keyed_by_json_value(tmp_path: Path) -> None:
    """JSON lines read a key's value as text, so the number 1 and the string "1" were one
    unit; they are keyed by their JSON value now (a string by its text, so its seed is the
    one a CSV of the same text gives)."""
    import json

    values = [1, "1", 1.5, "1.5", True, "true", None, [1], "[1]", {"a": 1}, '{"a":1}', "é"]
    path = tmp_path / "u.jsonl"
    path.write_text("".join(json.dumps({"uid": v, "v": "x"}) + "\n" for v in values))
    assert _units_of_x(str(path)) == len(values) - 1  # null is no unit
    rng = np.random.default_rng(5)
    rows = [(f"user{rng.integers(30)}", f"s{rng.integers(5)}") for _ in range(300)]
    (tmp_path / "u2.jsonl").write_text(
        "".join(json.dumps({"uid": u, "v": v}) + "\n" for u, v in rows)
    )
    (tmp_path / "u2.csv").write_text("uid,v\n" + "".join(f"{u},{v}\n" for u, v in rows))
    cands = [f"s{j}" for j in range(5)]
    for m in (1, 2):
        a = open_table(str(tmp_path / "u2.jsonl")).scores(
            Query("v", UnitRule(privacy_unit="uid", values_per_unit=m, salt=8)), cands
        )
        b = open_table(str(tmp_path / "u2.csv")).scores(
            Query("v", UnitRule(privacy_unit="uid", values_per_unit=m, salt=8)), cands
        )
        assert a.tolist() == b.tolist()


def test_keys_joined_by_position_stay_with_their_rows(tmp_path: Path) -> None:
    """The keys of an object column are a table of their own joined by position: on 300,000
    rows (many DuckDB vectors, both threads) the scores equal those of the same units read as
    text from a CSV (the int unit's rows all hold one value, so its seed does not matter)."""
    rng = np.random.default_rng(0)
    n = 300_000
    uid = pd.Series([f"u{i}" for i in rng.integers(0, 30_000, n)], dtype=object)
    v = pd.Series([f"s{i}" for i in rng.integers(0, 20, n)], dtype=object)
    uid[::1000], v[::1000] = 7, "s0"  # mixed types: the object key path
    frame = pd.DataFrame({"uid": uid, "v": v})
    frame.assign(uid=uid.map(lambda x: x if isinstance(x, str) else "int 7")).to_csv(
        tmp_path / "same.csv", index=False
    )
    cands = [f"s{i}" for i in range(20)]
    got = open_table(frame).scores(
        Query("v", UnitRule(privacy_unit="uid", values_per_unit=2, salt=3)), cands
    )
    want = open_table(str(tmp_path / "same.csv")).scores(
        Query("v", UnitRule(privacy_unit="uid", values_per_unit=2, salt=3)), cands
    )
    assert got.tolist() == want.tolist()


def test_nan_units_are_no_units_in_every_plan(tmp_path: Path) -> None:
    """A NaN unit is missing. DuckDB folded the per-row isnan filter to false from the Parquet
    statistics (which never count NaN): all NaN rows were one unit in the m = 1 plan."""

    n = 5000
    u = np.arange(n, dtype=float)
    u[::2] = np.nan
    table = pa.table({"u": u, "v": ["x"] * n})
    pq.write_table(table, tmp_path / "nan.parquet")
    for data in (str(tmp_path / "nan.parquet"), table):
        for m in (1, 2):
            t = open_table(data)
            assert t.scores(
                Query("v", UnitRule(privacy_unit="u", values_per_unit=m, salt=1)), ["x"]
            ).tolist() == [n // 2]

            assert open_table(data).counts(
                Query("v", UnitRule(privacy_unit="u", values_per_unit=m, salt=1)), 5
            ) == [("x", n // 2)]
        assert (
            len(
                open_table(data).person_values(
                    Query("v", UnitRule(privacy_unit="u", values_per_unit=1, salt=1))
                )
            )
            == n // 2
        )


def test_columns_whose_names_read_alike_key_their_own_values() -> None:
    """A pandas frame with the columns 1 and "1" (DuckDB reads them as "1" and "1_1"): each
    unit column is keyed from its own values, found by position."""
    frame = pd.DataFrame(
        [[1, "a", "x"], [1, "b", "y"], [2, "b", "x"]], columns=pd.Index([1, "1", "v"], dtype=object)
    )
    table = open_table(frame)
    assert list(table.columns) == ["1", "1_1", "v"]
    assert table.scores(
        Query("v", UnitRule(privacy_unit="1", values_per_unit=2, salt=1)), ["x", "y"]
    ).tolist() == [2, 1]
    assert open_table(frame).scores(
        Query("v", UnitRule(privacy_unit="1_1", values_per_unit=2, salt=1)), ["x", "y"]
    ).tolist() == [
        2,
        1,
    ]
