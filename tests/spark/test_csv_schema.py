"""Issue 44: ``--engine spark`` with a CSV and ``--schema``.

Spark reads a CSV's declared columns by the same rule as DuckDB
(:func:`dpselect.data.text_casts.declared_text_sql`): the tricky texts of
tests/data/test_text_casts.py and random ones read to the same values, bit for bit, in both
engines; the command line then releases the same answer from either engine, and a declared
type the rule does not read on Spark is refused in one line before anything is charged.
"""

from __future__ import annotations

import json
import random

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install 'dpselect[spark]'")

from dpselect.accounting.ledger import Ledger
from dpselect.core.errors import DataError, ParameterError
from dpselect.data.engines.spark import read_files
from dpselect.data.tables import Table, open_table
from dpselect.data.text_casts import SPARK_TEXT_TYPES, declared_text_value
from tests.cli_process import run_cli
from tests.data.test_text_casts import EXPECTED, TYPES, same, write_tricky_csv


def _values(table, columns):
    """The rows of a DuckDB table or of the Spark frame :func:`read_files` reads, by ``n``.

    The frame as read (the rule's values, ``-0.0`` included): the Spark table then reads
    every float as ``x + 0.0`` (``nan_safe_frame``), as every plan of both engines groups
    floats anyway."""
    if not isinstance(table, Table):
        return [tuple(r) for r in table.select("n", *columns).orderBy("n").collect()]
    return table.query(f"SELECT n, {', '.join(columns)} FROM data ORDER BY n")


def test_the_tricky_csv_reads_the_same_in_both_engines(spark, tmp_path):
    path = str(write_tricky_csv(tmp_path / "tricky.csv"))
    schema = {"n": "BIGINT", "s": "VARCHAR", **TYPES}
    duck = open_table(path, schema=schema)
    frame = read_files(spark, path, schema)
    opened = open_table(frame, schema=schema)  # the schema's check passes: the types match
    assert {c: opened.columns[c] for c in schema} == schema
    columns = ["s", *TYPES]
    expected, got = _values(duck, columns), _values(frame, columns)
    assert [r[0] for r in got] == [r[0] for r in expected] == list(range(len(EXPECTED)))
    for d_row, s_row in zip(expected, got, strict=True):
        if d_row[1] == "":  # a quoted empty field: DuckDB's text '' and Spark's CSV reader's
            d_row, s_row = d_row[2:], s_row[2:]  # NULL differ (not a declared type's rule)
        assert all(same(a, b) for a, b in zip(d_row, s_row, strict=True)), (d_row, s_row)
    for row in expected:  # and the values are the rule's, written out in test_text_casts
        assert all(same(a, b) for a, b in zip(row[2:], EXPECTED[row[1]], strict=True)), row


def test_random_text_reads_the_same_in_both_engines(spark, tmp_path):
    rng = random.Random(44)
    alphabet = list("0123456789+-.eE \tinfINFtyYsSrRuUaAlLoO_x:é")
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8))) for _ in range(600)]
    texts += [f"{rng.randint(1, 10 ** rng.randint(1, 25))}e{rng.randint(-340, 310)}"
              for _ in range(300)]  # fmt: skip
    texts += [f"{rng.randint(0, 2100):04d}-{rng.randint(0, 13):02d}-{rng.randint(0, 31):02d}"
              for _ in range(100)]  # fmt: skip
    kinds = dict(zip([f"c{i}" for i in range(len(SPARK_TEXT_TYPES))], SPARK_TEXT_TYPES,
                     strict=True))  # fmt: skip
    path = tmp_path / "random.csv"
    lines = ["n," + ",".join(kinds)]
    lines += [f"{n}," + ",".join([text] * len(kinds)) for n, text in enumerate(texts)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    schema = {"n": "BIGINT", **kinds}
    duck = _values(open_table(str(path), schema=schema), list(kinds))
    sparked = _values(read_files(spark, str(path), schema), list(kinds))
    assert len(duck) == len(sparked) == len(texts)
    for (n, *d_values), (m, *s_values) in zip(duck, sparked, strict=True):
        assert n == m
        reference = [declared_text_value(texts[n], kind) for kind in kinds.values()]
        for kind, d, s, r in zip(kinds.values(), d_values, s_values, reference, strict=True):
            assert same(d, s) and same(d, r), (texts[n], kind, d, s, r)


def test_a_declared_type_spark_does_not_read_from_text_is_refused(spark, tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("p,u\n2.50,1\n")
    with pytest.raises(ParameterError, match=r"'p' as DECIMAL\(10,2\).*BIGINT"):
        read_files(spark, str(path), {"p": "DECIMAL(10,2)"})
    with pytest.raises(ParameterError, match="'u' as HUGEINT"):
        read_files(spark, str(path), {"u": "HUGEINT"})
    # Parquet keeps its own types (checked when the table opens); JSON stays refused
    (tmp_path / "j.jsonl").write_text('{"u": 1}\n')
    with pytest.raises(DataError, match="unsupported format for Spark"):
        read_files(spark, str(tmp_path / "j.jsonl"), {"u": "BIGINT"})
    # a user's own Spark frame is checked, not converted (its text has no public rule here)
    frame = spark.createDataFrame([("1",)], "u string")
    with pytest.raises(ParameterError, match="cast the column in Spark"):
        open_table(frame, schema={"u": "BIGINT"})


def test_a_declared_column_is_known_on_spark_as_on_duckdb(spark, tmp_path):
    path = tmp_path / "k.csv"
    path.write_text("u,v\n1,a\n")
    for table in (
        open_table(str(path), schema={"v": "VARCHAR"}),
        open_table(read_files(spark, str(path), {"v": "VARCHAR"}), schema={"v": "VARCHAR"}),
    ):
        assert table.column_type_known("v") and not table.column_type_known("u")


@pytest.mark.parametrize(
    "name", ["quantile unit max_rows=1", "top_k numbers unit", "partition_selection numbers"]
)
def test_the_layout_csv_releases_what_its_frame_releases(spark, tmp_path, name):
    # tests/layout_cases.py on Spark: its CSV (NaN written 'nan', the infinities 'inf' and
    # '-inf') read with its schema releases what the same rows as a Spark frame release
    from tests.layout_cases import layouts, recipes, release

    written = layouts(tmp_path)
    path, schema = written["csv"]
    call = recipes()[name]
    reference = release(call, spark.createDataFrame(written["pandas"]))
    assert release(call, (read_files(spark, path, schema), schema)) == reference


@pytest.fixture(scope="module")
def units_csv(tmp_path_factory):
    """People ``u`` written in many ways (``' 7'``, ``'007'``, ``'+7'``: one person), some
    only by TRY_CAST (``'2.5'``, ``'1_000'``: none under the rule), visiting ``a`` or ``b``."""
    rng = random.Random(3)
    spellings = ["{}", " {}", "{} ", "00{}", "+{}", "{}.5", "1_{}"]
    lines = ["u,v"]
    for _ in range(400):
        unit = rng.randint(1, 60)
        lines.append(f"{rng.choice(spellings).format(unit)},{rng.choice('aab')}")
    path = tmp_path_factory.mktemp("csv_schema") / "units.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def _top_k(path, *extra):
    return run_cli(
        "top-k", path, "--column", "v", "--k", 1, "--epsilon", 1, "--candidates", "a,b",
        "--schema", "u:BIGINT", "--privacy-unit", "u", "--max-contributions", 2, "--counts",
        "--insecure-seed", 3, "--json", *extra, timeout=600,
    )  # fmt: skip


def test_cli_engine_spark_with_a_schema_equals_duckdb(units_csv):
    duck = _top_k(units_csv, "--engine", "duckdb")
    sparked = _top_k(units_csv, "--engine", "spark", "--spark-master", "local[1]")
    assert duck.returncode == 0, duck.stderr
    assert sparked.returncode == 0, sparked.stderr
    d, s = json.loads(duck.stdout), json.loads(sparked.stdout)
    assert (s["candidates"], s["counts"]) == (d["candidates"], d["counts"])


def test_cli_engine_spark_refuses_an_unsupported_declared_type(tmp_path):
    path = tmp_path / "prices.csv"
    path.write_text("u,v,p\n1,a,2.50\n2,b,3.00\n")
    ledger = tmp_path / "budget.ledger"
    made = run_cli("budget", "init", "--ledger", ledger, "--epsilon", 5)
    assert made.returncode == 0, made.stderr
    out = run_cli(
        "top-k", path, "--column", "v", "--k", 1, "--epsilon", 1, "--candidates", "a,b",
        "--schema", "u:BIGINT,p:DECIMAL(10,2)", "--privacy-unit", "u", "--engine", "spark",
        "--ledger", ledger, "--insecure-seed", 3, timeout=300,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and "'p' as DECIMAL(10,2)" in errors[0], out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""
    book = Ledger.open(str(ledger))
    try:
        assert book.entries() == [] and book.spent() == (0.0, 0.0)
    finally:
        book.close()
