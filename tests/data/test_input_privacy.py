"""Neighbouring datasets at the input: one adversarial row moves only its own contribution.

For every input kind, one row (malformed or not) is inserted at the start, the middle and the
end of an honest dataset; every candidate score may move by at most that row's contribution
(without a privacy unit: one score by 1; with one, a new user: at most ``max_contributions``
scores, each by 1, all the same way), and nothing may raise (issue 15; proof in
docs/data_input.md). A hypothesis fuzz test does the same with random row bytes.
"""

import gzip
import json

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpselect.data.query import Query, UnitRule
from dpselect.data.tables import open_table

CANDIDATES = ["a", "b", "c", "5"]
MAX_CONTRIBUTIONS = 2
BIG = "x" * 3_000_000  # a 3 MB value / line


def honest(n=60):
    """``n`` users, one row each, sites a/b/c in turn."""
    return [(f"u{i}", "abc"[i % 3]) for i in range(n)]


def all_scores(data, schema=None, without_candidates=False):
    table = open_table(data, schema=schema)
    plain = table.scores(Query("site"), CANDIDATES)
    bounded = table.scores(
        Query("site", UnitRule(privacy_unit="user_id", values_per_unit=MAX_CONTRIBUTIONS, salt=77)),
        CANDIDATES,
    )
    if without_candidates:  # the path without candidates must not raise either
        table.counts(Query("site"), 3)
        table.counts(Query("site", UnitRule(privacy_unit="user_id", values_per_unit=1, salt=5)), 3)
    return plain, bounded


def assert_neighbours(before, after):
    """``after`` differs from ``before`` by at most one row's (one new user's) contribution."""
    plain = after[0] - before[0]
    assert np.all(np.abs(plain) <= 1) and np.abs(plain).sum() <= 1, plain
    bounded = after[1] - before[1]
    assert np.all((bounded == 0) | (bounded == 1)), bounded  # a new user only adds
    assert bounded.sum() <= MAX_CONTRIBUTIONS, bounded


POSITIONS = ["start", "middle", "end"]
# The whole matrix at the start and the end runs with ``pytest -m slow``; the default run has
# it in the middle, and a few rows of each kind at the start and the end (test_edges).
MATRIX_POSITIONS = [
    pytest.param("start", marks=pytest.mark.slow),
    "middle",
    pytest.param("end", marks=pytest.mark.slow),
]


def insert(lines, row, position):
    index = {"start": 0, "middle": len(lines) // 2, "end": len(lines)}[position]
    return [*lines[:index], row, *lines[index:]]


# -- text files: rows as raw bytes lines ----------------------------------------------------

CSV_ROWS = {
    "unclosed quote": b'mallory,"a',
    "unclosed quote, user": b'"mallory,a',
    "a doubled quote": b'mallory,"a""',
    "only a doubled quote": b'"a""',
    "wrong field count": b"mallory,a,extra",
    "one field": b"mallory",
    "bad utf-8": b"mallory,\xff\xfea",
    "truncated utf-8": b"mallory,a\xc3",
    "nul": b"mallory,a\x00",
    "3 MB line": b"mallory," + BIG.encode(),
    "crlf": b"mallory,a\r",
    "lone cr inside": b"mallory,a\rmallory2,b",
    "quoted comma": b'mallory,"a,b"',
    "quoted newline start": b'mallory,"a',
    "stray quote": b'mallory,a"b',
    "delimiter 0x01": b"mallory,a\x01,b",
    "empty": b"",
    "honest": b"mallory,a",
    "quoted honest": b'"mallory","5"',
    "bom": b"\xef\xbb\xbfmallory,a",
}


def csv_bytes(rows, delimiter=b","):
    header = b"user_id" + delimiter + b"site"
    lines = [u.encode() + delimiter + s.encode() for u, s in honest()]
    return header, lines


def write_text(tmp_path, name, header, lines, gz=False):
    body = b"\n".join(([header] if header is not None else []) + lines) + b"\n"
    path = tmp_path / name
    path.write_bytes(gzip.compress(body) if gz else body)
    return path


@pytest.mark.parametrize("position", MATRIX_POSITIONS)
@pytest.mark.parametrize("kind", ["csv", "tsv", "csv.gz"])
def test_csv_one_adversarial_row(tmp_path, kind, position):
    delimiter = b"\t" if kind == "tsv" else b","
    header, lines = csv_bytes(honest(), delimiter)
    before = all_scores(write_text(tmp_path, f"before.{kind}", header, lines, kind.endswith("gz")))
    assert list(before[0]) == [20, 20, 20, 0]
    for name, row in CSV_ROWS.items():
        row = row.replace(b",", delimiter)
        data = insert(lines, row, position)
        path = write_text(tmp_path, f"after.{kind}", header, data, kind.endswith("gz"))
        after = all_scores(path)  # never raises
        if name != "lone cr inside":  # two lines: two rows (docs/data_input.md)
            assert_neighbours(before, after)
        else:
            assert list(after[0] - before[0]) == [1, 1, 0, 0]


def test_csv_rows_that_parse_count_as_written(tmp_path):
    header, lines = csv_bytes(honest())
    before = all_scores(write_text(tmp_path, "b.csv", header, lines))[0]
    expect = {"crlf": "a", "honest": "a", "quoted honest": "5", "nul": None, "bom": "a"}
    for name, site in expect.items():
        data = insert(lines, CSV_ROWS[name], "middle")
        after = all_scores(write_text(tmp_path, "a.csv", header, data))[0]
        moved = {CANDIDATES[i] for i in np.flatnonzero(after - before)}
        assert moved == ({site} if site else set()), name


def test_issue_15_numbers_one_unclosed_quote_halfway(tmp_path):
    """20,000 users alternating a/b; one ``mallory,"a`` row halfway: was [5000, 5000]."""
    lines = [f"u{i},{'ab'[i % 2]}".encode() for i in range(20_000)]
    header = b"user,site"
    clean = open_table(write_text(tmp_path, "c.csv", header, lines))
    assert list(clean.scores(Query("site"), ["a", "b"])) == [10_000, 10_000]
    for position in POSITIONS:
        bad = write_text(
            tmp_path, f"{position}.csv", header, insert(lines, b'mallory,"a', position)
        )
        assert list(open_table(bad).scores(Query("site"), ["a", "b"])) == [10_000, 10_000]


def test_first_lines_that_used_to_fail_the_sniffer(tmp_path):
    for first in [b'mallory,"a', b"mallory,a\r", b'mallory,"a""', b"mallory," + BIG.encode()]:
        header, lines = csv_bytes(honest())
        path = write_text(tmp_path, "f.csv", header, [first, *lines])
        assert list(open_table(path).scores(Query("site"), ["a", "b", "c"])) in (
            [20, 20, 20],
            [21, 20, 20],
        )


JSON_ROWS = {
    "unclosed": b'{"user_id": "mallory", "site": "a"',
    "unclosed string": b'{"user_id": "mallory", "site": "a}',
    "not json": b"not json",
    "array": b'["mallory", "a"]',
    "nested list": b'{"user_id": "mallory", "site": ["a"]}',
    "nested object": b'{"user_id": "mallory", "site": {"a": 1}}',
    "number": b'{"user_id": "mallory", "site": 5}',
    "bool user": b'{"user_id": true, "site": "b"}',
    "nested user": b'{"user_id": ["m"], "site": "b"}',
    "bad utf-8": b'{"user_id": "mallory", "site": "\xff"}',
    "nul": b'{"user_id": "mallory", "site": "a\x00"}',
    "escaped nul": b'{"user_id": "mallory", "site": "a\\u0000"}',
    "3 MB": b'{"user_id": "mallory", "site": "' + BIG.encode() + b'"}',
    "crlf": b'{"user_id": "mallory", "site": "a"}\r',
    "trailing junk": b'{"user_id": "mallory", "site": "a"}}',
    "two records": b'{"user_id": "m1", "site": "a"}, {"user_id": "m2", "site": "b"}',
    "deep": b"[" * 100_000,
    "duplicate keys": b'{"user_id": "mallory", "site": "a", "site": "b"}',
    "empty": b"",
    "honest": b'{"user_id": "mallory", "site": "a"}',
}


def json_lines():
    return [json.dumps({"user_id": u, "site": s}).encode() for u, s in honest()]


def as_array(lines):
    """One record per line, ``[`` on the first and ``]`` on the last."""
    out = [line + b"," for line in lines[:-1]] + [lines[-1] + b"]"]
    out[0] = b"[" + out[0]
    return out


@pytest.mark.parametrize("position", MATRIX_POSITIONS)
@pytest.mark.parametrize("kind", ["jsonl", "json", "jsonl.gz"])
def test_json_one_adversarial_record(tmp_path, kind, position):
    lines = json_lines()
    layout = as_array if kind == "json" else (lambda x: x)
    gz = kind.endswith("gz")
    before = all_scores(write_text(tmp_path, f"b.{kind}", None, layout(lines), gz))
    assert list(before[0]) == [20, 20, 20, 0]
    for _name, row in JSON_ROWS.items():
        record = row + b"," if kind == "json" and position != "end" else row
        data = insert(layout(lines), record, position)
        after = all_scores(write_text(tmp_path, f"a.{kind}", None, data, gz))
        assert_neighbours(before, after)


def test_json_array_layouts(tmp_path):
    records = [{"user_id": u, "site": s} for u, s in honest(6)]
    layouts = {
        "brackets on their own lines": "[\n" + ",\n".join(map(json.dumps, records)) + "\n]\n",
        "first and last lines": "[" + ",\n".join(map(json.dumps, records)) + "]",
        "json lines in a .json": "\n".join(map(json.dumps, records)),
    }
    for name, text in layouts.items():
        (tmp_path / "x.json").write_text(text)
        got = open_table(tmp_path / "x.json").scores(Query("site"), ["a", "b", "c"])
        assert list(got) == [2, 2, 2], name
    # one line holding several records is not a row (documented): nothing is read from it
    (tmp_path / "x.json").write_text(json.dumps(records))
    assert list(open_table(tmp_path / "x.json").scores(Query("site"), ["a"])) == [0]


# -- typed sources: one row with adversarial values ----------------------------------------

TYPED_VALUES = {
    "quote": '"a',
    "nul": "a\x00",
    "3 MB": BIG,
    "empty": "",
    "null": None,
    "crlf": "a\r\n",
    "honest": "a",
    "number text": "5",
}


def frame(rows):
    return pd.DataFrame({"user_id": [u for u, _ in rows], "site": [s for _, s in rows]})


def typed_source(rows, kind, tmp_path):
    df = frame(rows)
    if kind == "pandas":
        return df
    table = pa.Table.from_pandas(df, preserve_index=False)
    if kind == "pyarrow":
        return table
    if kind == "polars":
        return pl.from_arrow(table)
    path = tmp_path / "d.parquet"
    pq.write_table(table, path)
    return path


@pytest.mark.parametrize("position", MATRIX_POSITIONS)
@pytest.mark.parametrize("kind", ["parquet", "pandas", "polars", "pyarrow"])
def test_typed_sources_one_adversarial_row(tmp_path, kind, position):
    rows = honest()
    before = all_scores(typed_source(rows, kind, tmp_path))
    for value in TYPED_VALUES.values():
        data = insert(rows, ("mallory", value), position)
        assert_neighbours(before, all_scores(typed_source(data, kind, tmp_path)))


@pytest.mark.parametrize("position", MATRIX_POSITIONS)
def test_pandas_object_column_with_values_of_other_types(position):
    rows = honest()
    before = all_scores(frame(rows))
    for value in [5, 5.0, True, ["a"], {"a": 1}, b"\xff", float("nan"), object()]:
        df = frame(insert(rows, ("mallory", value), position))
        assert_neighbours(before, all_scores(df))


def test_wrong_type_under_a_declared_schema(tmp_path):
    header = b"user_id,site,n"
    lines = [f"u{i},{'abc'[i % 3]},{i % 4}".encode() for i in range(30)]
    schema = {"n": "BIGINT"}
    table = open_table(write_text(tmp_path, "s.csv", header, lines), schema=schema)
    before = table.scores(Query("n"), [0, 1, 2, 3])
    assert list(before) == [8, 8, 7, 7]
    for row in [b"mallory,a,notanumber", b"mallory,a,1.5e400", b'mallory,a,"2"', b"mallory,a,"]:
        path = write_text(tmp_path, "s2.csv", header, insert(lines, row, "middle"))
        after = open_table(path, schema=schema).scores(Query("n"), [0, 1, 2, 3])
        diff = after - before
        assert np.abs(diff).sum() <= 1, (row, diff)


EDGE_ROWS = {
    "csv": [CSV_ROWS["unclosed quote"], CSV_ROWS["bad utf-8"], CSV_ROWS["wrong field count"]],
    "json": [JSON_ROWS["unclosed string"], JSON_ROWS["nested list"], JSON_ROWS["bad utf-8"]],
}


@pytest.mark.parametrize("position", ["start", "end"])
def test_edges(tmp_path, position):
    """A few rows of each text kind at the start and the end, the path without candidates."""
    header, lines = csv_bytes(honest())
    before = all_scores(write_text(tmp_path, "b.csv", header, lines), without_candidates=True)
    for row in EDGE_ROWS["csv"]:
        path = write_text(tmp_path, "a.csv", header, insert(lines, row, position))
        assert_neighbours(before, all_scores(path, without_candidates=True))
    for kind, layout in [("jsonl", list), ("json", as_array)]:
        records = layout(json_lines())
        before = all_scores(
            write_text(tmp_path, f"b.{kind}", None, records), without_candidates=True
        )
        for row in EDGE_ROWS["json"]:
            path = write_text(tmp_path, f"a.{kind}", None, insert(records, row, position))
            assert_neighbours(before, all_scores(path, without_candidates=True))


# -- fuzz ------------------------------------------------------------------------------------

ALPHABET = [b"a", b"b", b"5", b",", b"\t", b'"', b"\r", b"\n", b"\x00", b"\x01", b"\xff",
            b"\xc3", b"\xc3\xa9", b"{", b"}", b"[", b"]", b":", b" ", b"mallory", b'"site"',
            b'"user_id"', b"\\"]  # fmt: skip
FUZZ_BEFORE: dict[str, tuple] = {}


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    row=st.lists(st.sampled_from(ALPHABET), max_size=24).map(b"".join),
    kind=st.sampled_from(["csv", "jsonl", "json"]),
    where=st.integers(0, 60),
)
def test_fuzz_random_row_bytes(tmp_path, row, kind, where):
    """A random row (possibly several lines: then the bound is per line) inserted anywhere."""
    if kind == "csv":
        header, lines = csv_bytes(honest())
    else:
        header, lines = None, (as_array if kind == "json" else list)(json_lines())
    key = kind
    if key not in FUZZ_BEFORE:
        FUZZ_BEFORE[key] = all_scores(write_text(tmp_path, f"b.{kind}", header, lines))
    before = FUZZ_BEFORE[key]
    after = all_scores(
        write_text(tmp_path, f"f.{kind}", header, [*lines[:where], row, *lines[where:]])
    )
    pieces = max(1, len([p for p in row.replace(b"\r", b"\n").split(b"\n") if p]))
    plain = after[0] - before[0]
    assert np.abs(plain).sum() <= pieces  # one line: at most one score by one
    bounded = after[1] - before[1]
    assert np.all(bounded >= 0) and np.all(bounded <= pieces)
    if pieces == 1:
        assert_neighbours(before, after)


@pytest.mark.slow
def test_issue_15_numbers_at_100k(tmp_path):
    lines = [f"u{i},{'ab'[i % 2]}".encode() for i in range(100_000)]
    bad = write_text(tmp_path, "big.csv", b"user,site", insert(lines, b'mallory,"a', "middle"))
    assert list(open_table(bad).scores(Query("site"), ["a", "b"])) == [50_000, 50_000]
