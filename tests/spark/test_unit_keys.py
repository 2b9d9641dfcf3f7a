"""Spark reads a text unit by its bytes, as DuckDB now does: the same scores on Parquet text
units that are not valid UTF-8 (issue 22), and no two units merged."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from dpselect.data.query import Query, UnitRule
from dpselect.data.tables import open_table


def _file(tmp_path: Path) -> tuple[str, list[str]]:
    raw = [b"u\xff", b"u\xfe", b"u?", b"u", b"\xed\xa0\x80", b"ok"]
    uid, v = [], []
    for i, unit in enumerate(raw):
        for j in range(i % 3 + 1):
            uid.append(unit)
            v.append(f"s{(i + j) % 4}")
    path = tmp_path / "units.parquet"
    table = pa.table({"uid": pa.array(uid, pa.binary()).view(pa.string()), "v": v})
    pq.write_table(table, path)
    return str(path), [f"s{j}" for j in range(4)]


def test_invalid_utf8_text_units_are_distinct_and_equal_in_both_engines(spark, tmp_path):
    path, cands = _file(tmp_path)
    frame = spark.read.parquet(path)
    for m in (1, 2, 3):
        duck = open_table(path).scores(
            Query("v", UnitRule(privacy_unit="uid", values_per_unit=m, salt=9)), cands
        )
        sp = open_table(frame).scores(
            Query("v", UnitRule(privacy_unit="uid", values_per_unit=m, salt=9)), cands
        )
        assert duck.tolist() == sp.tolist(), m
    everyone = open_table(path).scores(
        Query("v", UnitRule(privacy_unit="uid", values_per_unit=3, salt=9)), cands
    )
    assert int(everyone.sum()) == sum(i % 3 + 1 for i in range(6))  # no unit merged
    duck_top = open_table(path).counts(
        Query("v", UnitRule(privacy_unit="uid", values_per_unit=2, salt=9)), 10
    )
    spark_top = open_table(frame).counts(
        Query("v", UnitRule(privacy_unit="uid", values_per_unit=2, salt=9)), 10
    )
    assert duck_top == spark_top


def test_csv_lines_that_are_not_utf8_are_no_rows_in_both_engines(spark, tmp_path):
    """Spark's CSV decoder read b"u\\xff" and b"u\\xfe" both as "u\\ufffd" (one unit); DuckDB drops
    such a line. Spark now drops it too, and valid multi-byte text is unchanged."""
    from dpselect.data.engines.spark import read_files

    path = tmp_path / "units.csv"
    path.write_bytes(
        b'uid,v\nu\xff,x\nu\xfe,y\nu?,y\nok,x\n\xc3\xa9t\xc3\xa9,"x"\nlast,\xe2\x82\xac\n'
        b"u\xef\xbf\xbd,y\n"
    )
    frame = read_files(spark, str(path))
    assert sorted(frame.columns) == ["uid", "v"]
    rows = sorted((r.uid, r.v) for r in frame.collect())
    assert rows == sorted([("u?", "y"), ("ok", "x"), ("été", "x"), ("last", "€"),
                           ("u\ufffd", "y")])  # fmt: skip
    cands = ["x", "y", "€"]
    for m in (1, 2):
        duck = open_table(str(path)).scores(
            Query("v", UnitRule(privacy_unit="uid", values_per_unit=m, salt=4)), cands
        )
        sp = open_table(frame).scores(
            Query("v", UnitRule(privacy_unit="uid", values_per_unit=m, salt=4)), cands
        )
        assert duck.tolist() == sp.tolist() == [2, 2, 1]


def test_collated_text_units_are_compared_by_their_bytes(spark):
    """Under UTF8_LCASE, 'a' and 'A' were one group in Spark: one unit for two people."""
    from pyspark.sql import functions as f

    text = spark.createDataFrame([("a", "x"), ("A", "x"), ("b", "y")], "uid string, v string")
    collated = text.select(f.col("uid").cast("string collate UTF8_LCASE").alias("uid"), "v")
    table = open_table(collated)
    assert table.scores(
        Query("v", UnitRule(privacy_unit="uid", values_per_unit=1, salt=3)), ["x", "y"]
    ).tolist() == [2, 1]
