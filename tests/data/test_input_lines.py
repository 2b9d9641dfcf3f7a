"""The line rule and the CSV dialect in DuckDB agree with their Python model on random bytes.

docs/data_input.md proves privacy for the model (each line is a row or nothing, by a function
of that line alone); these tests check that what DuckDB computes is that model, on files of
random bytes rich in the characters that matter (quotes, delimiters, CR, LF, NUL, 0x01,
invalid UTF-8), whole files at once so that every line sits among arbitrary neighbours.
"""

import gzip
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpselect.core.errors import DataError, ParameterError
from dpselect.data.query import Query, UnitRule
from dpselect.data.schema import parse_schema, parse_schema_spec
from dpselect.data.tables import open_table
from dpselect.data.text_lines import split_csv_line

PIECES = [b"a", b"b", b"5", b",", b"\t", b'"', b'""', b"\r", b"\n", b"\r\n", b"\x00", b"\x01",
          b"\xff", b"\xc3", b"\xc3\xa9", b" ", b"x" * 40]  # fmt: skip


def model_rows(body: bytes, delimiter: str, n: int) -> list[tuple]:
    """The rows the line rule and the fixed dialect give (text_lines' docstring)."""
    rows = []
    for segment in re.split(rb"[\r\n]", body):
        kept = segment.split(b"\x01")[0]
        if not kept:
            continue
        try:
            line = kept.decode("utf-8")
        except UnicodeDecodeError:
            continue
        fields = split_csv_line(line, delimiter, n)
        if fields is not None:
            rows.append(tuple(fields))
    return rows


def duckdb_rows(path, columns) -> list[tuple]:
    table = open_table(path)
    cols = ", ".join(f'"{c}"' for c in columns)
    return table.query(f"SELECT {cols} FROM data")


def key(row):
    return tuple((v is None, v or "") for v in row)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    body=st.lists(st.sampled_from(PIECES), max_size=80).map(b"".join),
    kind=st.sampled_from(["csv", "tsv", "csv.gz"]),
    end=st.sampled_from([b"\n", b"\r\n", b"\r"]),
)
def test_csv_rows_are_the_model_rows(tmp_path, body, kind, end):
    delimiter = "\t" if kind == "tsv" else ","
    header = delimiter.join(["a", "b"]).encode() + end
    path = tmp_path / f"f.{kind}"
    raw = header + body
    path.write_bytes(gzip.compress(raw) if kind.endswith(".gz") else raw)
    expected = model_rows(body, delimiter, 2)
    assert sorted(duckdb_rows(path, ["a", "b"]), key=key) == sorted(expected, key=key)


def test_long_lines(tmp_path):
    from dpselect.data.text_lines import MAX_LINE_BYTES

    body = b"\n".join([b"u1,a", b"u2," + b"y" * (MAX_LINE_BYTES - 10), b"u3,b",
                       b"u4," + b"z" * (MAX_LINE_BYTES + 10), b"u5,c"])  # fmt: skip
    (tmp_path / "l.csv").write_bytes(b"u,s\n" + body)
    got = sorted(r[0] for r in duckdb_rows(tmp_path / "l.csv", ["u", "s"]))
    assert got == ["u1", "u2", "u3", "u5"]  # the line over the limit gives no row, alone


def test_header_rules(tmp_path):
    path = tmp_path / "h.csv"
    path.write_bytes(b'\xef\xbb\xbf,"a ""q""",b\r\n1,2,3\n')
    table = open_table(path)
    assert list(table.columns) == ["column0", 'a "q"', "b"]
    assert table.query("SELECT * FROM data") == [("1", "2", "3")]
    for bad, match in [(b"", "no header"), (b"a,a\n", "twice"), (b'a,"b\n', "does not parse"),
                       (b"\xff,b\n", "not UTF-8")]:  # fmt: skip
        path.write_bytes(bad)
        with pytest.raises(DataError, match=match):
            open_table(path)


def test_quoting_and_nulls(tmp_path):
    path = tmp_path / "q.csv"
    path.write_bytes(b'a,b\n"",\n"x,y","say ""hi"""\n,"z"\n')
    assert sorted(duckdb_rows(path, ["a", "b"]), key=key) == sorted(
        [("", None), ("x,y", 'say "hi"'), (None, "z")], key=key
    )


def test_schema_declares_types_by_try_cast(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("n,x,d,flag\n1,1.5,2024-01-02,true\nabc,NaN,notadate,maybe\n07,,,\n")
    table = open_table(path, schema={"n": int, "x": "double", "d": "DATE", "flag": bool})
    assert table.columns == {"n": "BIGINT", "x": "DOUBLE", "d": "DATE", "flag": "BOOLEAN"}
    rows = table.query("SELECT n, d, flag FROM data ORDER BY n NULLS LAST")
    assert [r[0] for r in rows] == [1, 7, None]
    assert all(table.column_type_known(c) for c in ["n", "x", "d", "flag"])
    plain = open_table(path, schema={"n": "BIGINT"})
    assert plain.column_type_known("n") and not plain.column_type_known("x")
    assert plain.columns["x"] == "VARCHAR"


def test_schema_on_json_and_typed_sources(tmp_path):
    import pandas as pd

    path = tmp_path / "j.jsonl"
    path.write_text('{"n": 5, "s": "a"}\n{"n": "x"}\n{"n": 5.0}\n')
    table = open_table(path, schema={"n": "BIGINT"})
    assert table.column_type_known("n") and not table.column_type_known("s")
    # The text rule for declared types (docs/data_input.md, "Declared types for text
    # columns"): an integer is written as one, so "5.0" is missing, as is "x". DuckDB's
    # TRY_CAST read it as 5, a conversion Spark's casts do not share (issue 44).
    assert sorted(table.query("SELECT n FROM data"), key=str) == [(5,), (None,), (None,)]
    df = pd.DataFrame({"n": ["1", "x", "3"], "m": [1, 2, 3]})
    typed = open_table(df, schema={"n": int, "m": str})
    assert typed.columns == {"n": "BIGINT", "m": "VARCHAR"}
    assert typed.query("SELECT n FROM data") == [(1,), (None,), (3,)]
    assert open_table(df).column_type_known("n")  # a frame's dtype is public


def test_schema_errors_are_public_and_early(tmp_path):
    path = tmp_path / "e.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(DataError, match="'zz', which is not a column"):
        open_table(path, schema={"zz": int})
    for bad, match in [({"a": "NOTATYPE"}, "unknown type"), ({"a": "INTEGER[]"}, "nested"),
                       ({"a": list}, "Python type"), ({"a": 3}, "type name"),
                       (["a"], "dict")]:  # fmt: skip
        with pytest.raises(ParameterError, match=match):
            open_table(path, schema=bad)
    assert parse_schema_spec("a:BIGINT, p:DECIMAL(10,2),c:d:VARCHAR") == {
        "a": "BIGINT", "p": "DECIMAL(10,2)", "c:d": "VARCHAR"}  # fmt: skip
    for bad in ["a", "a:", ":INT", "a:INT,a:INT", "a:INT,,b:INT"]:
        with pytest.raises(ParameterError, match="--schema"):
            parse_schema_spec(bad)
    assert parse_schema(None) == {} and parse_schema("a:int") == {"a": "INTEGER"}


def test_nested_columns_refused_before_any_query(tmp_path):
    import pyarrow as pa

    table = open_table(pa.table({"u": [1, 2], "v": [["x"], []], "s": [{"a": 1}, {"a": 2}]}))
    for column in ["v", "s"]:
        with pytest.raises(DataError, match=rf"'{column}' .*nested type"):
            table.require_column(column)
        with pytest.raises(DataError, match="nested"):
            table.counts(Query(column), 3)
        with pytest.raises(DataError, match=r"privacy_unit .*nested"):
            table.scores(Query("u", UnitRule(privacy_unit=column)), [1])


def test_paths_gz_globs_and_directories(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "sub").mkdir()
    pq.write_table(pa.table({"s": ["a", "b"]}), tmp_path / "d" / "1.parquet")
    pq.write_table(pa.table({"s": ["a"], "t": [1]}), tmp_path / "d" / "sub" / "2.parquet")
    assert list(open_table(tmp_path / "d").scores(Query("s"), ["a", "b"])) == [2, 1]
    glob = str(tmp_path / "d" / "*.parquet")
    assert list(open_table(glob).scores(Query("s"), ["a", "b"])) == [1, 1]
    (tmp_path / "x.tsv.gz").write_bytes(gzip.compress(b"s\tt\na\t1\n"))
    (tmp_path / "x.jsonl.gz").write_bytes(gzip.compress(b'{"s": "a"}\n'))
    for name in ["x.tsv.gz", "x.jsonl.gz"]:
        assert list(open_table(tmp_path / name).scores(Query("s"), ["a"])) == [1]
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match=r"no \.parquet"):
        open_table(tmp_path / "empty")
    with pytest.raises(DataError, match="matches no file"):
        open_table(str(tmp_path / "none" / "*.parquet"))
    with pytest.raises(DataError, match="only Parquet"):
        open_table(str(tmp_path / "*.csv"))
    (tmp_path / "x.parquet.gz").write_bytes(b"")
    with pytest.raises(DataError, match="unsupported format"):
        open_table(tmp_path / "x.parquet.gz")
