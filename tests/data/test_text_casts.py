"""Issue 44: the rule that reads a CSV or JSON column's text as its declared type.

Both engines read the same file to the same values (tests/spark/test_csv_schema.py compares
them), so the rule is written once (:func:`dpselect.data.text_casts.declared_text_sql`) and is
stricter than DuckDB's ``TRY_CAST``, whose lenient readings (``'1_000'`` and ``'0x10'`` as
numbers, ``'2.5'`` rounded to the integer 3) Spark does not share. Here on DuckDB only (the
base install), through real files read by :func:`dpselect.data.tables.open_table`, with the
expected values written out by hand.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import random
import struct
from decimal import Decimal

import duckdb
import pytest

import dpselect as dp
from dpselect.data.tables import open_table
from dpselect.data.text_casts import (
    SPARK_TEXT_TYPES,
    TEXT_RULE_TYPES,
    declared_text_sql,
    declared_text_value,
    has_text_rule,
)

INF = math.inf
#: The declared columns of the CSV below: each holds the row's text.
TYPES = {"i": "BIGINT", "t": "TINYINT", "d": "DOUBLE", "f": "FLOAT", "b": "BOOLEAN", "day": "DATE"}
#: text -> (BIGINT, TINYINT, DOUBLE, FLOAT, BOOLEAN, DATE), by the rule (docs/data_input.md,
#: "Declared types for text columns"). FLOAT values are the float32 nearest to the text.
EXPECTED: dict[str, tuple[object, ...]] = {
    "1_000": (None, None, None, None, None, None),  # TRY_CAST: 1000
    "0x10": (None, None, None, None, None, None),  # TRY_CAST: 16
    "2.5": (None, None, 2.5, 2.5, None, None),  # TRY_CAST to BIGINT: 3
    " 7 ": (7, 7, 7.0, 7.0, None, None),
    "\t7\t": (7, 7, 7.0, 7.0, None, None),
    "+5": (5, 5, 5.0, 5.0, None, None),
    "-0": (0, 0, -0.0, -0.0, None, None),
    "007": (7, 7, 7.0, 7.0, None, None),
    "1": (1, 1, 1.0, 1.0, True, None),
    "0": (0, 0, 0.0, 0.0, False, None),
    "128": (128, None, 128.0, 128.0, None, None),  # beyond TINYINT
    "-128": (-128, -128, -128.0, -128.0, None, None),
    "9223372036854775807": (2**63 - 1, None, 2.0**63, 2.0**63, None, None),
    "9223372036854775808": (None, None, 2.0**63, 2.0**63, None, None),  # beyond BIGINT
    # halfway between two doubles: to the even one
    "9007199254740993": (9007199254740993, None, 2.0**53, 2.0**53, None, None),
    "0.1": (None, None, 0.1, 0.10000000149011612, None, None),
    "1e400": (None, None, None, None, None, None),  # too large: missing
    "-1e400": (None, None, None, None, None, None),
    "1e39": (None, None, 1e39, None, None, None),  # too large for FLOAT only
    "1e-400": (None, None, 0.0, 0.0, None, None),  # rounds to zero
    "nan": (None, None, None, None, None, None),
    "NaN": (None, None, None, None, None, None),
    "inf": (None, None, INF, INF, None, None),
    "-Infinity": (None, None, -INF, -INF, None, None),
    "+INF": (None, None, INF, INF, None, None),
    "infinite": (None, None, None, None, None, None),
    ".5": (None, None, 0.5, 0.5, None, None),
    "5.": (None, None, 5.0, 5.0, None, None),
    "1e5": (None, None, 100000.0, 100000.0, None, None),  # TRY_CAST to BIGINT: 100000
    "-2.5E-3": (None, None, -0.0025, -0.0024999999441206455, None, None),
    "1.5d": (None, None, None, None, None, None),  # Java's parseDouble: 1.5
    "0x1p3": (None, None, None, None, None, None),  # Java's parseDouble: 8.0
    "1 000": (None, None, None, None, None, None),
    "TRUE": (None, None, None, None, True, None),
    "yes": (None, None, None, None, True, None),
    "Y": (None, None, None, None, True, None),
    "No": (None, None, None, None, False, None),
    "f": (None, None, None, None, False, None),
    "ja": (None, None, None, None, None, None),
    "2021-02-28": (None, None, None, None, None, dt.date(2021, 2, 28)),
    "2021-02-30": (None, None, None, None, None, None),  # no such day
    " 2024-02-29 ": (None, None, None, None, None, dt.date(2024, 2, 29)),
    "0001-01-01": (None, None, None, None, None, dt.date(1, 1, 1)),
    "0000-01-01": (None, None, None, None, None, None),  # no year 0000
    "2021-2-28": (None, None, None, None, None, None),
    "2021-02-28T00:00": (None, None, None, None, None, None),
    "": (None, None, None, None, None, None),  # a quoted empty field: the empty text
    "é": (None, None, None, None, None, None),
    "\uff17": (None, None, None, None, None, None),  # a fullwidth 7 (Python's int() reads it)
    "\u0130NF": (None, None, None, None, None, None),  # DuckDB lowers it to 'inf'
}


def _csv_field(text: str) -> str:
    return '"' + text.replace('"', '""') + '"' if text == "" or "," in text else text


def write_tricky_csv(path):
    """The CSV of :data:`EXPECTED`: a row number, the text as text (``s``), and the text in
    every declared column of :data:`TYPES`."""
    lines = ["n,s," + ",".join(TYPES)]
    for n, text in enumerate(EXPECTED):
        field = _csv_field(text)
        lines.append(f"{n},{field}," + ",".join([field] * len(TYPES)))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def same(a: object, b: object) -> bool:
    """Equal values of equal types; floats bit for bit (so ``-0.0`` is not ``0.0``)."""
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    return type(a) is type(b) and a == b


def test_a_csv_is_read_by_the_rule(tmp_path):
    path = write_tricky_csv(tmp_path / "tricky.csv")
    table = open_table(path, schema={"n": "BIGINT", "s": "VARCHAR", **TYPES})
    assert {c: table.columns[c] for c in TYPES} == TYPES  # the declared types, public
    rows = table.query(f"SELECT n, s, {', '.join(TYPES)} FROM data ORDER BY n")
    assert [r[1] for r in rows] == list(EXPECTED)  # every line is a row, its text as it is
    for row in rows:
        text, got = row[1], row[2:]
        want = EXPECTED[text]
        assert all(same(g, w) for g, w in zip(got, want, strict=True)), (text, got, want)


def test_the_python_reference_says_the_same():
    for text, want in EXPECTED.items():
        got = tuple(declared_text_value(text, kind) for kind in TYPES.values())
        assert all(same(g, w) for g, w in zip(got, want, strict=True)), (text, got, want)
    assert declared_text_value(" 7 ", "VARCHAR") == " 7 "  # text as it is, not trimmed
    assert declared_text_value(None, "BIGINT") is None


def test_unsigned_and_huge_integers_follow_the_rule(tmp_path):
    path = tmp_path / "u.csv"
    path.write_text("a,b,c\n-0,-1,170141183460469231731687303715884105727\n255,256,"
                    "170141183460469231731687303715884105728\n+7,1e2,-1\n")  # fmt: skip
    schema = {"a": "UTINYINT", "b": "UTINYINT", "c": "HUGEINT"}
    rows = open_table(path, schema=schema).query("SELECT a, b, c FROM data")
    assert rows == [(0, None, 2**127 - 1), (255, None, None), (7, None, -1)]


def test_other_declared_types_keep_try_cast(tmp_path):
    # DECIMAL, TIMESTAMP, ...: not the rule's (DuckDB's TRY_CAST; Spark refuses them on CSV)
    path = tmp_path / "p.csv"
    path.write_text("p,ts\n2.5,2021-02-28 10:00:00\nx,no\n")
    rows = open_table(path, schema={"p": "DECIMAL(10,2)", "ts": "TIMESTAMP"}).query(
        "SELECT p, ts FROM data"
    )
    assert rows == [(Decimal("2.50"), dt.datetime(2021, 2, 28, 10)), (None, None)]
    assert not has_text_rule("DECIMAL(10,2)") and not has_text_rule("TIMESTAMP")
    assert set(SPARK_TEXT_TYPES) <= set(TEXT_RULE_TYPES)
    assert not has_text_rule("HUGEINT", "spark") and has_text_rule("HUGEINT")


def test_json_text_is_read_by_the_same_rule(tmp_path):
    path = tmp_path / "j.jsonl"
    records = [
        {"n": 2.5, "x": "1e400", "b": "yes", "day": "2021-02-30"},
        {"n": "7", "x": 1e5, "b": True, "day": "2021-02-28"},
        {"n": " 007 ", "x": "-inf", "b": 0, "day": 20210228},
        {"n": 1000, "x": "nan", "b": "maybe"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    schema = {"n": "BIGINT", "x": "DOUBLE", "b": "BOOLEAN", "day": "DATE"}
    rows = open_table(path, schema=schema).query("SELECT n, x, b, day FROM data")
    assert rows == [
        (None, None, True, None),
        (7, 100000.0, True, dt.date(2021, 2, 28)),
        (7, -INF, False, None),
        (1000, None, None, None),
    ]


def test_a_recipe_counts_what_the_rule_reads(tmp_path):
    from dpselect.sampling.source import InsecureSeededSource

    path = tmp_path / "r.csv"
    # one person per row: 1 written four ways is one unit under the rule ('1.0' and '1_0'
    # are no unit: their rows count for nothing)
    path.write_text("u,v\n1,a\n 1,a\n001,a\n+1,b\n1.0,b\n1_0,b\n2,b\n")
    result = dp.Session(
        path,
        privacy_unit="u",
        contributions=dp.Contributions(values_per_unit=2),
        schema={"u": "BIGINT"},
        source=InsecureSeededSource(3),
    ).top_k("v", 1, epsilon=50.0, candidates=["a", "b"], counts=True)
    # unit 1: a (3 rows) and b (1 row), unit 2: b; each unit counts once per value
    assert result.candidates == ["b"]  # scores a 1, b 2 (TRY_CAST: a 1, b 3)
    table = open_table(path, schema={"u": "BIGINT"})
    assert table.query("SELECT u, count(*) FROM data GROUP BY u ORDER BY u") == [
        (1, 4), (2, 1), (None, 2)]  # fmt: skip


def _random_texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    alphabet = list("0123456789+-.eE \tinfINFtyYsSrRuUaAlLoO_x:é")
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8))) for _ in range(n)]
    texts += [f"{rng.randint(0, 9999):04d}-{rng.randint(0, 13):02d}-{rng.randint(0, 32):02d}"
              for _ in range(n // 10)]  # fmt: skip
    texts += [f"{rng.randint(1, 10 ** rng.randint(1, 25))}e{rng.randint(-340, 310)}"
              for _ in range(n // 2)]  # fmt: skip
    return texts


@pytest.mark.parametrize("kind", TEXT_RULE_TYPES)
def test_duckdb_equals_the_python_reference_on_random_text(kind):
    texts = _random_texts(44, 2000)
    with duckdb.connect() as con:
        got = con.execute(
            f"SELECT s, {declared_text_sql('s', kind)} FROM (SELECT unnest($1) AS s)", [texts]
        ).fetchall()
    differ = [(s, x) for s, x in got if not same(x, declared_text_value(s, kind))]
    assert differ == []


def test_the_rule_never_raises_and_never_gives_nan():
    texts = [*EXPECTED, *_random_texts(7, 500), "nan", "-nan", "NAN"]
    with duckdb.connect() as con:
        for kind in TEXT_RULE_TYPES:
            rows = con.execute(
                f"SELECT {declared_text_sql('s', kind)} FROM (SELECT unnest($1) AS s)", [texts]
            ).fetchall()
            assert not any(isinstance(x, float) and math.isnan(x) for (x,) in rows), kind


def test_the_spark_spelling_is_refused_outside_its_types():
    with pytest.raises(ValueError, match="does not read"):
        declared_text_sql("s", "HUGEINT", "spark")
    with pytest.raises(ValueError, match="dialect"):
        declared_text_sql("s", "BIGINT", "sqlite")
    assert declared_text_sql("s", "VARCHAR", "spark") == "s"
