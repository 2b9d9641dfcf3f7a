"""The match multiplicity on Spark: the most candidates one value matches, by Spark's matching.

Without a privacy unit one row adds 1 to every candidate its value matches, so the noisy
histograms' L1 sensitivity is the most candidates one value can match (``c``). DuckDB's rule
(``matching.match_multiplicity``) groups the candidates with DuckDB's casts and equality; the
Spark engine matches rows with Spark's equality. Here, for a battery of column types and
candidate lists, Spark's own matching (``spark_engine``'s match expression and candidate
frame, the score query's join) runs over probe rows built from the candidate list itself (no
data rows: the values that can match anything are the candidates' own values, and for text
columns their spellings) and counts the candidates each probe matches.

Found (issue 22, part 5): the candidates are cast by DuckDB in both engines, so the numeric,
boolean, date and decimal spellings (``'7'``, ``'07'``, ``'7.0'``, ``' 7'``; ``'true'``,
``'t'``, ``'1'``; ``'2020-01-01'``, ``'2020-1-1'``) merge identically, and Spark's join
normalises ``-0.0`` and NaN as DuckDB's grouping does. They differed on *collated* Spark text
columns (Spark 4: ``string collate UTF8_LCASE``, ``UNICODE_CI_AI``, ``UTF8_BINARY_RTRIM``,
...), whose equality merged distinct candidates (``'a'`` and ``'A'``) that DuckDB's rule kept
apart: ``c`` was 1 where one row moved 2 or more scores. Such columns are now read as plain
text (``open_spark_table``: compared by their bytes, as in DuckDB), and the Spark count is
computed by Spark's own matching in any case (``candidate_multiplicity``).
"""

from fractions import Fraction

import numpy as np
import pytest

import dpselect as dp
from dpselect.core.errors import DataError
from dpselect.data import matching
from dpselect.data.engines import spark as spark_engine
from dpselect.data.engines.spark import columns as spark_columns
from dpselect.data.engines.spark import matching as spark_matching
from dpselect.data.query import Query
from dpselect.data.tables import open_table
from dpselect.sampling.source import InsecureSeededSource

NAN = float("nan")
# (Spark type of the column, candidates, Spark's multiplicity, DuckDB's rule's)
BATTERY = [
    ("bigint", ["7", "07", "7.0", " 7", 7, "+7", "8", "x"], 6, 6),
    ("int", ["7", "07", "1e1", "10", "300"], 2, 2),
    ("smallint", ["1", "01", "70000"], 2, 2),
    ("tinyint", ["1", "01", "300", "-1"], 2, 2),
    ("double", ["1", "1.0", "1e0", " 1", "2", 0.0, -0.0, "-0", NAN, "nan", "NaN", "inf"], 4, 4),
    ("double", [1.0, 2.0, 3.5], 1, 1),
    ("float", ["0.1", 0.1, "0.10000000149011612", "1e-50", "0", "-0"], 3, 3),
    ("decimal(5,2)", ["1.005", "1.01", "1.0", "1", "01.00", "999.999"], 3, 3),
    ("boolean", ["true", "t", "1", "TRUE", "yes", "false", "0", "f", "no"], 5, 5),
    ("date", ["2020-01-01", "2020-01-01T00:00", "2020-1-1", " 2020-01-01", "2020-01-02"], 4, 4),
    ("date", ["2020-01-01 00:00:00", "2020-01-01", "2021-02-30"], 2, 2),
    ("string", ["a", "A", "a ", " a", "é", "e"], 1, 1),
    ("string", [4, 4.0, 5], 2, 2),
    ("string", [7, 8, 9], 1, 1),
    ("string", [4, "4", "x"], 2, 2),
    # collated text is read as plain text (open_spark_table): compared by its bytes, as DuckDB
    ("string collate UTF8_LCASE", ["a", "A", "b", "B", "c"], 1, 1),
    ("string collate UNICODE_CI", ["Straße", "STRASSE", "strasse", "x"], 1, 1),
    ("string collate UNICODE_CI_AI", ["e", "é", "É", "E", "x"], 1, 1),
    ("string collate UTF8_BINARY_RTRIM", ["a", "a ", "a  ", " a"], 1, 1),
    ("string collate UNICODE", ["a", "A", "a "], 1, 1),
    ("string collate UTF8_LCASE", [4, 4.0, 5], 2, 2),  # numbers: the text read as a number
    ("string collate UTF8_LCASE", ["a", 1, "A"], 1, 1),  # mixed: compared as text
]


def _frame(spark, dtype, values):
    """A one-column frame ``x`` of Spark type ``dtype`` holding ``values`` (parsed as text)."""
    from pyspark.sql import functions as f

    text = spark.createDataFrame([(None if v is None else str(v),) for v in values], "x string")
    return text.select(f.col("x").cast(dtype).alias("x"))


def _spelt(value):
    """Texts a row of a text column can hold that read as ``value``."""
    if isinstance(value, float):
        return [repr(value), str(value), format(value, "f") if np.isfinite(value) else repr(value)]
    return [str(value)]


def spark_matches_per_value(table, cands):
    """The most candidates one probe value of column ``x`` matches, by the Spark score path's
    own matching: its match expression (``_numeric_match``), its candidates (cast by DuckDB,
    ``typed_candidates``) in its candidate frame (``_candidate_frame``), and its join on ``v``.

    The probes are the typed candidates themselves as values of the column's type (a value
    that matches a candidate equals it, so these are all the values that match anything;
    equality is an equivalence in each type and collation), and, on a text column, the
    candidates' spellings as text (numbers on a text column are matched as the text read as a
    number)."""
    from pyspark.sql import functions as f
    from pyspark.sql import types as t

    frame = table.frame
    spark = spark_columns._spark(frame)
    duck_type = table.require_column("x")
    dtype = frame.schema["x"].dataType
    col, match_type = spark_matching._numeric_match(f.col("x"), duck_type, cands)
    typed = spark_engine.typed_candidates(cands, match_type)
    if typed.num_rows == 0:
        return 0
    v_type = dtype
    if match_type != duck_type:
        v_type = t.DoubleType() if match_type == "DOUBLE" else t.LongType()
    candidates = spark_matching._candidate_frame(spark, typed, v_type)
    probes = []
    if match_type == duck_type:  # the typed candidates as the column's values
        probes.append(spark_matching._candidate_frame(spark, typed, dtype).toDF("x", "probe"))
    if duck_type == "VARCHAR":  # the candidates' spellings as the column's text
        texts = sorted({s for c in cands for s in _spelt(c)})
        text_probes = _frame(spark, dtype.simpleString(), texts)
        probes.append(text_probes.select("x", (f.monotonically_increasing_id() + 10**9)
                                         .alias("probe")))  # fmt: skip
    rows = probes[0]
    for more in probes[1:]:
        rows = rows.unionByName(more)
    per_probe = rows.select(col.alias("v"), "probe").join(candidates, on="v").groupBy("probe")
    top = per_probe.count().agg(f.max("count")).first()[0]
    return int(top or 0)


@pytest.mark.parametrize(("dtype", "cands", "on_spark", "on_duckdb"), BATTERY)
def test_spark_matching_multiplicity(spark, dtype, cands, on_spark, on_duckdb):
    table = open_table(_frame(spark, dtype, []))
    duck_type = table.require_column("x")
    assert max(1, spark_matches_per_value(table, cands)) == on_spark
    assert matching.match_multiplicity(duck_type, cands) == on_duckdb
    # what the recipes calibrate the histograms with: Spark's own count on a Spark table
    assert table.multiplicity("x", cands) == on_spark


def test_timestamps_are_refused_from_the_schema(spark):
    table = open_table(_frame(spark, "timestamp", []))
    with pytest.raises(DataError, match="timestamp"):
        table.require_column("x")


def test_spark_histograms_are_calibrated_to_spark_matching(spark):
    """4 and 4.0 are two candidates that one row "4" of a text column matches: the histograms'
    L1 sensitivity is 2 on Spark, and so is their noise. (Collated columns, where Spark's
    equality merged 'a' and 'A', are compared by their bytes: multiplicity 1, and the scores of
    one row of 'a' move one count.)"""
    lcase = "string collate UTF8_LCASE"
    merged = _frame(spark, lcase, ["a", "b"])
    assert open_table(merged).multiplicity("x", ["a", "A", "b"]) == 1
    assert open_table(merged).scores(Query("x"), ["a", "A", "b"]).tolist() == [1, 0, 1]
    dtype, cands = "string", [4, 4.0, 5]
    data, neighbour = _frame(spark, dtype, ["4", "5", "5"]), _frame(spark, dtype, ["5", "5"])
    diff = open_table(data).scores(Query("x"), cands) - open_table(neighbour).scores(
        Query("x"), cands
    )
    l1 = int(np.abs(diff).sum())
    assert l1 == 2
    lap = dp.Session(data, source=InsecureSeededSource(1)).top_k(
        "x", 2, epsilon=1.0, candidates=cands, mechanism="laplace_histogram", counts=True
    )
    assert lap.parameters["score_l1_sensitivity"] == 2
    # discrete Laplace of scale b on counts of L1 sensitivity l1: the loss is l1 / b
    assert Fraction(l1) / Fraction(lap.parameters["count_scale"]) <= Fraction(lap.epsilon)
    gauss = dp.Session(data, source=InsecureSeededSource(1)).top_k(
        "x",
        2,
        epsilon=1.0,
        delta=1e-6,
        candidates=cands,
        mechanism="gaussian_histogram",
        counts=True,
    )
    sigma = Fraction(gauss.parameters["count_scale"])
    assert Fraction(int((diff * diff).sum())) / (2 * sigma * sigma) <= Fraction(gauss.rho)


def test_the_multiplicity_reads_no_row(spark):
    """A frame whose every row raises when read: the multiplicity still comes (schema and
    candidates only), while the score query, which reads the rows, raises."""
    from pyspark.sql import functions as f

    poisoned = spark.range(3).select(
        f.raise_error(f.lit("a row was read")).cast("string").alias("x")
    )
    table = open_table(poisoned)
    assert table.multiplicity("x", [4, 4.0, 5]) == 2
    with pytest.raises(Exception, match="a row was read"):
        table.scores(Query("x"), [4, 4.0, 5])
