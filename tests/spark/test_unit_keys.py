"""Spark reads a text unit by its bytes, as DuckDB now does: the same scores on Parquet text
units that are not valid UTF-8 (issue 22), and no two units merged."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from dpselect.data import scores
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
        duck = scores.candidate_scores(open_table(path), "v", cands, "uid", m, salt=9)
        sp = scores.candidate_scores(open_table(frame), "v", cands, "uid", m, salt=9)
        assert duck.tolist() == sp.tolist(), m
    everyone = scores.candidate_scores(open_table(path), "v", cands, "uid", 3, salt=9)
    assert int(everyone.sum()) == sum(i % 3 + 1 for i in range(6))  # no unit merged
    duck_top = scores.top_values(open_table(path), "v", 10, "uid", 2, salt=9)
    spark_top = scores.top_values(open_table(frame), "v", 10, "uid", 2, salt=9)
    assert duck_top == spark_top
