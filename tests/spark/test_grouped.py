"""Grouped releases on Spark: the rule of docs/contribution_bounding.md ("Groups per unit").

The Spark methods against a pure-Python reference built only from dpselect.data.rules
(tests/spark/grouped_reference.py) on random rows (text, integer, float and date columns;
NULL, NaN and -0.0 units; a group list that one value matches twice), each group equal to
SparkTable's own ungrouped method over that group's kept rows, empty data, and errors raised
from public facts before any Spark job.
"""

import datetime as dt
import math

import numpy as np
import pytest

import dpselect as dp
from dpselect.core.errors import DataError, ParameterError
from dpselect.data.query import PublicGroups, Query, UnitRule
from dpselect.data.tables import open_table
from dpselect.data.values import canonical_text
from dpselect.planning.contributions import Contributions
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes.quantiles import quantile as recipe_quantile
from tests.engine_rules import unit_rule
from tests.session_queries import session_partition_selection, session_top_k

from . import grouped_reference as ref

TYPES = {
    "user": "BIGINT",
    "fu": "DOUBLE",
    "su": "VARCHAR",
    "x": "BIGINT",
    "s": "VARCHAR",
    "d": "DOUBLE",
    "dt": "DATE",
    "grp": "VARCHAR",
    "gi": "BIGINT",
}
DAY0 = dt.date(2024, 2, 27)
TEXT_GROUPS = ["a", "b", "é", "zz"]  # "zz" is in no row; "c" is in no group
INT_GROUPS = [0, 1, 2, 3, 9]
NUMBER_GROUPS = [1, 1.0, 3]  # on the text column s: "1" is in groups 0 and 1
SALTS = {"salt": 987654321, "group_salt": 2**63 - 5}


def grouped_rows(seed, n):
    """``n`` random rows of the columns of :data:`TYPES`, about 8% of each column NULL."""
    rng = np.random.default_rng(seed)
    users = rng.integers(0, n // 6 + 1, n)
    values = rng.zipf(1.6, n) % 12

    def maybe(v):
        return None if rng.random() < 0.08 else v

    rows = []
    for u, v in zip(users.tolist(), values.tolist(), strict=True):
        fu = [float(u % 9) / 2, -0.0, math.nan][int(rng.choice(3, p=[0.8, 0.1, 0.1]))]
        d = [v / 4, -0.0, math.nan][int(rng.choice(3, p=[0.8, 0.1, 0.1]))]
        rows.append(
            {
                "user": maybe(u),
                "fu": maybe(fu),
                "su": maybe(f"p{u % 7}é"),
                "x": maybe(v),
                "s": maybe(str(v)),
                "d": maybe(d),
                "dt": maybe(DAY0 + dt.timedelta(days=v)),
                "grp": maybe(str(rng.choice(["a", "b", "c", "é"]))),
                "gi": maybe(int(rng.integers(0, 5))),
            }
        )
    return rows


def spark_frame(spark, rows):
    from pyspark.sql import types as t

    kinds = {
        "BIGINT": t.LongType(),
        "DOUBLE": t.DoubleType(),
        "VARCHAR": t.StringType(),
        "DATE": t.DateType(),
    }
    schema = t.StructType([t.StructField(c, kinds[k], True) for c, k in TYPES.items()])
    return spark.createDataFrame([tuple(r[c] for c in TYPES) for r in rows], schema)


@pytest.fixture(scope="module")
def data(spark):
    rows = grouped_rows(2026, 400)
    return rows, open_table(spark_frame(spark, rows))


def _texts(groups):
    """Value lists compared by canonical text (NaN equals NaN, 0.0 and -0.0 are one value)."""
    return [[(canonical_text(v), n) for v, n in group] for group in groups]


# ----------------------------------------------------------------------------- candidates
DATES = [DAY0 + dt.timedelta(days=k) for k in (0, 1, 2, 4, 30)]
CANDIDATE_CASES = [
    # column, candidates, by, groups, unit, max_groups, max_contributions, max_rows_per_value
    ("x", [0, 1, 2, 3, 5, 8, 100], "grp", TEXT_GROUPS, "user", 1, 1, 1),
    ("s", ["1", "2", "3", "0", "7"], "gi", INT_GROUPS, "su", 2, 2, 3),
    ("dt", DATES, "grp", TEXT_GROUPS, "fu", 2, 1, 1),
    ("s", ["1", "2", "3", "0", "7", "11"], "grp", TEXT_GROUPS, "fu", 1, 1, 1),
    ("x", [0, 1, 2, 3, 4, 6], "gi", INT_GROUPS, "user", 3, 3, 2),
    ("d", [0.0, 0.25, 0.5, 1.0], "s", NUMBER_GROUPS, None, 1, 1, 1),
]


@pytest.mark.parametrize("case", CANDIDATE_CASES, ids=lambda c: f"{c[0]}-by-{c[2]}-{c[4]}")
def test_candidate_scores_equal_the_reference(data, case):
    rows, table = data
    column, cands, by, groups, unit, g_max, m, r = case
    args = dict(privacy_unit=unit, max_groups=g_max, max_contributions=m,
                max_rows_per_value=r, **SALTS)  # fmt: skip
    got = table.scores(Query(column, unit_rule(**args), PublicGroups(by, groups)), cands)
    expected = ref.candidate_scores(rows, TYPES, column, cands, by, groups, **args)
    assert all(a.dtype == np.int64 for a in got)
    for a, b in zip(got, expected, strict=True):
        assert a.tolist() == b.tolist()
    assert len(got[0]) > 0


# ----------------------------------------------------------------------------- values
VALUE_CASES = [
    # column, by, groups, limit, unit, max_groups, max_contributions, max_rows_per_value
    ("s", "grp", TEXT_GROUPS, None, "user", 1, 1, 1),
    ("d", "gi", INT_GROUPS, 3, "su", 2, 2, 2),
    ("dt", "grp", TEXT_GROUPS, 2, "fu", 1, 2, 1),
    ("x", "s", NUMBER_GROUPS, None, None, 1, 1, 1),
    ("d", "grp", TEXT_GROUPS, None, "user", 2, 1, 3),
]


@pytest.mark.parametrize("case", VALUE_CASES, ids=lambda c: f"{c[0]}-by-{c[1]}-{c[4]}")
def test_value_counts_equal_the_reference(data, case):
    rows, table = data
    column, by, groups, limit, unit, g_max, m, r = case
    args = dict(privacy_unit=unit, max_groups=g_max, max_contributions=m,
                max_rows_per_value=r, **SALTS)  # fmt: skip
    got = table.counts(Query(column, unit_rule(**args), PublicGroups(by, groups)), limit)
    expected = ref.value_counts(rows, TYPES, column, by, groups, limit=limit, **args)
    assert len(got) == len(groups)
    assert _texts(got) == _texts(expected)
    assert [type(v) for g in got for v, _ in g] == [type(v) for g in expected for v, _ in g]
    assert sum(map(len, got)) > 0


# ----------------------------------------------------------------------------- numbers
NUMBER_CASES = [
    # column, by, groups, unit, max_groups, max_rows
    ("d", "grp", TEXT_GROUPS, "user", 1, 1),
    ("x", "gi", INT_GROUPS, "su", 2, 3),
    ("s", "grp", TEXT_GROUPS, "fu", 3, 2),
    ("d", "s", NUMBER_GROUPS, None, 1, 1),
]


@pytest.mark.parametrize("case", NUMBER_CASES, ids=lambda c: f"{c[0]}-by-{c[1]}-{c[3]}")
def test_values_equal_the_reference(data, case):
    rows, table = data
    column, by, groups, unit, g_max, max_rows = case
    args = dict(privacy_unit=unit, max_groups=g_max, max_rows=max_rows, **SALTS)
    got = table.numbers(Query(column, unit_rule(**args), PublicGroups(by, groups)))
    expected = ref.values(rows, TYPES, column, by, groups, **args)
    assert len(got) == len(groups)
    for a, b in zip(got, expected, strict=True):
        assert a.dtype == np.float64
        assert np.sort(a).tolist() == b.tolist()


# ----------------------------------------------------------------------------- per group
def test_each_group_is_the_ungrouped_method_on_its_kept_rows(spark, data):
    """Group g's grouped answer is SparkTable's ungrouped method, with the same salt, over
    the rows of g whose unit kept g (the group rule from dpselect.data.rules.kept_groups)."""
    rows, table = data
    unit, g_max = "su", 2
    cands = ["1", "2", "3", "0", "7"]
    values = unit_rule(unit, 2, max_rows_per_value=2, max_groups=g_max, **SALTS)
    rows_rule = unit_rule(unit, max_rows=2, max_groups=g_max, **SALTS)
    listed = PublicGroups("gi", INT_GROUPS)
    scores = table.scores(Query("s", values, listed), cands)
    counts = table.counts(Query("d", values, listed))
    numbers = table.numbers(Query("x", rows_rule, listed))
    checks = {
        "s": lambda row: row["s"] in cands,
        "d": lambda row: row["d"] is not None,
        "x": lambda row: row["x"] is not None,
    }
    for g in range(3):
        kept = {
            column: open_table(spark_frame(spark, [rows[j] for j in ref.kept_row_indices(
                rows, TYPES, "gi", INT_GROUPS, g, unit, g_max, SALTS["group_salt"], keep)]))
            for column, keep in checks.items()
        }  # fmt: skip
        alone = kept["s"].scores(
            Query(
                "s",
                UnitRule(
                    privacy_unit=unit, values_per_unit=2, rows_per_value=2, salt=SALTS["salt"]
                ),
            ),
            cands,
        )
        mine = np.zeros(len(cands), dtype=np.int64)
        mine[scores[1][scores[0] == g]] = scores[2][scores[0] == g]
        assert mine.tolist() == alone.tolist()
        top = kept["d"].counts(
            Query(
                "d",
                UnitRule(
                    privacy_unit=unit, values_per_unit=2, rows_per_value=2, salt=SALTS["salt"]
                ),
            ),
            10**6,
        )
        assert _texts([counts[g]]) == _texts([top])
        values = kept["x"].numbers(
            Query("x", UnitRule(privacy_unit=unit, rows_per_unit=2, salt=SALTS["salt"]))
        )
        assert np.sort(numbers[g]).tolist() == np.sort(values).tolist()


# ----------------------------------------------------------------------------- edge cases
def test_empty_data_and_groups_nothing_matches(spark, data):
    _, table = data
    empty = open_table(spark_frame(spark, []))
    for t, groups in ((empty, TEXT_GROUPS), (table, ["c-no-such"]), (table, [])):
        listed = PublicGroups("grp", groups)
        g, i, n = t.scores(Query("x", UnitRule("user", salt=3), listed), [1, 2])
        assert (g.tolist(), i.tolist(), n.tolist()) == ([], [], [])
        assert t.counts(Query("x", UnitRule("user"), listed), 5) == [[] for _ in groups]
        got = t.numbers(Query("d", UnitRule("user", rows_per_unit=2), listed))
        assert [a.tolist() for a in got] == [[] for _ in groups]
    # groups that do not convert to the by column's type match nothing (no rows read)
    g, _, _ = table.scores(Query("x", groups=PublicGroups("gi", ["not a number"])), [1])
    assert g.tolist() == []


def test_group_multiplicity(data):
    _, table = data
    assert table.multiplicity(PublicGroups("grp", TEXT_GROUPS)) == 1
    assert table.multiplicity(PublicGroups("s", NUMBER_GROUPS)) == 2  # "1" matches 1 and 1.0
    assert table.multiplicity(PublicGroups("gi", [1, 1.0, 2])) == 2
    assert table.multiplicity(PublicGroups("gi", [])) == 1


def test_errors_come_from_public_facts_before_any_job(spark):
    """A frame whose rows raise when read: every refusal happens before a Spark job."""
    from pyspark.sql import functions as f

    poisoned = spark.range(3).select(
        f.col("id").alias("user"),
        f.when(f.col("id") >= 0, f.raise_error(f.lit("a row was read"))).otherwise("v").alias("s"),
        f.col("id").alias("g"),
        f.array(f.col("id")).alias("arr"),
    )
    table = open_table(poisoned)
    g0 = PublicGroups("g", [0])
    calls = [
        (ParameterError, "max_groups",
         lambda: table.scores(Query("s", UnitRule(groups_per_unit=2), g0), ["v"])),
        (ParameterError, "max_contributions",
         lambda: table.counts(Query("s", UnitRule(values_per_unit=3), g0))),
        (ParameterError, "max_rows_per_value",
         lambda: table.counts(Query("s", UnitRule(rows_per_value=2), g0))),
        (ParameterError, "max_rows",
         lambda: table.numbers(Query("s", UnitRule(rows_per_unit=2), g0))),
        (ParameterError, r"UnitRule\(groups_per_unit=\.\.\.\)",
         lambda: table.numbers(Query("s", UnitRule("user", groups_per_unit=0), g0))),
        (ParameterError, "limit", lambda: table.counts(Query("s", groups=g0), -1)),
        (DataError, "by",
         lambda: table.scores(Query("s", groups=PublicGroups("nope", [0])), ["v"])),
        (DataError, "by", lambda: table.numbers(Query("s", groups=PublicGroups("arr", [0])))),
        (DataError, "privacy_unit", lambda: table.counts(Query("s", UnitRule("nope"), g0))),
        (DataError, "by", lambda: table.multiplicity(PublicGroups("nope", [0]))),
    ]  # fmt: skip
    for error, word, call in calls:
        with pytest.raises(error, match=word):
            call()


# ----------------------------------------------------------------------------- DuckDB == Spark
@pytest.mark.parametrize("case", CANDIDATE_CASES, ids=lambda c: f"{c[0]}-by-{c[2]}-{c[4]}")
def test_duckdb_and_spark_give_the_same_grouped_answers(data, case):
    """The same rows through both engines (DuckDB the oracle): candidate scores, value counts
    and, for the numeric columns, the kept numbers of every group, for the same salts."""
    import pyarrow as pa

    rows, table = data
    column, cands, by, groups, unit, g_max, m, r = case
    frame = pa.Table.from_pylist(rows)
    duck = open_table(frame, schema=TYPES)
    args = dict(privacy_unit=unit, max_groups=g_max, max_contributions=m,
                max_rows_per_value=r, **SALTS)  # fmt: skip
    for a, b in zip(table.scores(Query(column, unit_rule(**args), PublicGroups(by, groups)), cands),
                    duck.scores(Query(column, unit_rule(**args), PublicGroups(by, groups)), cands),
                    strict=True):  # fmt: skip
        assert a.tolist() == b.tolist()
    spark_counts = table.counts(Query(column, unit_rule(**args), PublicGroups(by, groups)), 5)
    duck_counts = duck.counts(Query(column, unit_rule(**args), PublicGroups(by, groups)), 5)
    assert _texts(spark_counts) == _texts(duck_counts)
    if column in ("x", "d") and unit is not None:
        kw = dict(privacy_unit=unit, max_groups=g_max, max_rows=r, **SALTS)  # fmt: skip
        query = Query(column, unit_rule(**kw), PublicGroups(by, groups))
        for a, b in zip(table.numbers(query), duck.numbers(query), strict=True):
            assert sorted(a.tolist()) == sorted(b.tolist())


def test_the_grouped_recipes_run_on_spark_as_on_duckdb(data):
    """top_k, partition_selection and quantile with by on a Spark frame: the same released
    answers as DuckDB for the same seeded source (the engines' inputs are equal)."""
    import pyarrow as pa

    from dpselect.sampling import InsecureSeededSource

    rows, table = data
    frame = table.frame
    duck = pa.Table.from_pylist(rows)
    runs = []
    for src, kw in ((frame, {}), (duck, {"schema": TYPES})):
        top = session_top_k(
            src,
            "x",
            2,
            1.0,
            contributions=dp.Contributions(groups_per_unit=2),
            candidates=[0, 1, 2, 3],
            by="grp",
            groups=TEXT_GROUPS,
            privacy_unit="user",
            source=InsecureSeededSource(1),
            **kw,
        )
        keys = session_partition_selection(
            src, "x", 1.0, 1e-3, by="grp", groups=TEXT_GROUPS, source=InsecureSeededSource(2), **kw
        )
        q = recipe_quantile(
            src,
            quantile_request(
                "d",
                0.5,
                1.0,
                bounds=(0, 4),
                privacy_unit="user",
                by="gi",
                groups=INT_GROUPS,
                contributions=Contributions(values_per_unit=2),
            ),
            source=InsecureSeededSource(3),
            **kw,
        )
        runs.append(([r.candidates for r in top.releases], [r.values for r in keys.releases],
                     [r.values for r in q.releases]))  # fmt: skip
    assert runs[0] == runs[1]
