"""The rows each unit keeps on Spark (``kept_rows``, ``_kept_rows_of``): the plan on the
cached identities of the distinct numbers equals the rule (:func:`dpselect.data.rules.
kept_rows`) and the DuckDB engine, on data made to break it, and leaves no cache behind.

Adversarial data: duplicate rows of one number in a unit (the kept longs are a list, not a
set), ``max_rows`` 1, 2 and 3, many units, ``-0.0`` beside ``0.0``, infinities, NULL and NaN
numbers and units (dropped), groups (``within``), and numbers sharing a code: the code
function is narrowed to 2 bits (or to one code) on both sides, so most numbers of a unit tie
on the key and only the rank ``t`` within the code orders them.

Each test fails against a broken plan: ``collect_set`` for ``collect_list`` (the equality
tests with ``max_rows`` > 1, duplicates, shared codes, groups, the refusing session), ``max``
for ``min`` (``max_rows`` = 1), the rank ``t`` taken in descending order (shared codes,
groups with shared codes), the identities cached and never dropped (the equality tests and
both cache tests), the identities not cached (the cache tests).
"""

import math

import numpy as np
import pyarrow as pa
import pytest

from dpselect.data import rules
from dpselect.data import values as value_rules
from dpselect.data.engines import spark as spark_engine
from dpselect.data.engines.spark import keys as spark_keys
from dpselect.data.engines.spark import rows as spark_rows
from dpselect.data.query import Query, UnitRule
from dpselect.data.tables import open_table

SALTS = (0, 987654321, 2**63 - 1)
SPECIAL = [0.0, -0.0, 0.0, math.inf, -math.inf, math.nan, None, 1.5, 1.5, -2.25]


def _rows(seed, units=60, n=600):
    """(unit, number) rows: few distinct numbers (many duplicates per unit), every special
    value, some NULL units; unit 0 holds only copies of one number."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        u = int(rng.integers(0, units))
        v = SPECIAL[int(rng.integers(0, len(SPECIAL)))] if rng.random() < 0.3 else None
        if v is None and rng.random() < 0.8:
            v = float(rng.integers(-5, 6)) / 2
        out.append((None if rng.random() < 0.03 else u, v))
    out += [(0, 7.0)] * 5 + [(1, -0.0)] * 3 + [(1, 0.0)] * 2 + [(1, math.nan)] * 4
    return out


def _tables(spark, rows, groups=None):
    """The rows as a pyarrow table and a Spark frame (``u`` long, ``v`` double, ``g``)."""
    from pyspark.sql import types as t

    us = [u for u, _ in rows]
    vs = [v for _, v in rows]
    gs = groups if groups is not None else [0] * len(rows)
    arrow = pa.table(
        {
            "u": pa.array(us, pa.int64()),
            "v": pa.array(vs, pa.float64()),
            "g": pa.array(gs, pa.int64()),
        }
    )
    struct = t.StructType(
        [
            t.StructField(c, k, True)
            for c, k in [("u", t.LongType()), ("v", t.DoubleType()), ("g", t.LongType())]
        ]
    )
    return arrow, spark.createDataFrame(list(zip(us, vs, gs, strict=True)), struct)


def _reference(rows, m, salt, groups=None):
    """The rule per (unit, group): the sorted multiset of every kept number."""
    by: dict[tuple[object, object], list[tuple[str, float]]] = {}
    for j, (u, v) in enumerate(rows):
        if u is None or v is None or math.isnan(v):
            continue
        g = groups[j] if groups is not None else 0
        by.setdefault((g, u), []).append((value_rules.canonical_text(u), v))
    out: dict[object, list[float]] = {}
    for (g, _), items in by.items():
        for kept in rules.kept_rows(salt, items, m).values():
            out.setdefault(g, []).extend(kept)
    return {g: sorted(xs) for g, xs in out.items()}


def _spark_kept(frame, m, salt, within=False):
    """``_kept_rows_of`` on the frame, collected inside the ``with``: {group: sorted numbers}."""
    from pyspark.sql import functions as f

    extra = [f.col("g")] if within else []
    nums = spark_rows._unit_numbers(frame, "v", "DOUBLE", "u", "BIGINT", *extra)
    with spark_rows._kept_rows_of(nums, "BIGINT", m, salt, within=("g",) if within else ()) as k:
        found = k.select(f.col("g") if within else f.lit(0).alias("g"), "x", "w").collect()
    keys = [(g, x) for g, x, _ in found]
    assert len(keys) == len(set(keys)), "one row per (group, number)"
    out: dict[object, list[float]] = {}
    for g, x, w in found:
        assert w >= 1
        out.setdefault(g, []).extend([x] * int(w))
    return {g: sorted(xs) for g, xs in out.items()}


def _narrow_codes(monkeypatch, bits):
    """Both sides' value codes cut to their low ``bits`` bits (0: one code for every number),
    so distinct numbers share codes."""
    mask = (1 << bits) - 1
    original_rule = rules.value_code
    original_spark = spark_keys._value_codes

    def rule(salt, text, tag="v"):
        return original_rule(salt, text, tag) & mask

    def spark_codes(rows, duck_type, salt):
        from pyspark.sql import functions as f

        return original_spark(rows, duck_type, salt).select(
            "v", f.col("c").bitwiseAND(f.lit(mask)).alias("c")
        )

    monkeypatch.setattr(rules, "value_code", rule)
    monkeypatch.setattr(spark_keys, "_value_codes", spark_codes)


def _nothing_cached(spark):
    return bool(spark._jsparkSession.sharedState().cacheManager().isEmpty())


@pytest.mark.parametrize("m", [1, 2, 3])
def test_equal_to_duckdb_and_the_rule(spark, m):
    for seed in range(2):
        rows = _rows(seed)
        arrow, frame = _tables(spark, rows)
        duck = open_table(arrow)
        table = spark_engine.open_spark_table(frame)
        for salt in SALTS:
            expected = _reference(rows, m, salt).get(0, [])
            got = np.sort(
                table.numbers(Query("v", UnitRule(privacy_unit="u", rows_per_unit=m, salt=salt)))
            )
            oracle = np.sort(
                duck.numbers(Query("v", UnitRule(privacy_unit="u", rows_per_unit=m, salt=salt)))
            )
            assert got.tolist() == expected
            assert oracle.tolist() == expected
            assert _spark_kept(frame, m, salt).get(0, []) == expected
        assert _nothing_cached(spark)


def test_duplicate_rows_are_kept_each(spark):
    """Unit 0 holds 5 copies of 7.0 only: it keeps min(5, m) of them (a set would keep 1)."""
    _, frame = _tables(spark, [(0, 7.0)] * 5 + [(1, 2.0), (1, 2.0), (1, 3.0)])
    for m in (1, 2, 3, 6):
        got = _spark_kept(frame, m, 5)[0]
        assert got.count(7.0) == min(5, m)
        assert got == _reference([(0, 7.0)] * 5 + [(1, 2.0), (1, 2.0), (1, 3.0)], m, 5)[0]


@pytest.mark.parametrize("bits", [0, 2])
@pytest.mark.parametrize("m", [1, 2, 3])
def test_numbers_sharing_a_code(spark, monkeypatch, bits, m):
    """Most numbers of a unit tie on the key: the rank ``t`` in the code orders them as the
    numbers (-0.0 is 0.0, negatives before positives, infinities at the ends)."""
    _narrow_codes(monkeypatch, bits)
    rows = _rows(7, units=25, n=400)
    _, frame = _tables(spark, rows)
    table = spark_engine.open_spark_table(frame)
    for salt in SALTS:
        expected = _reference(rows, m, salt)[0]
        got = np.sort(
            table.numbers(Query("v", UnitRule(privacy_unit="u", rows_per_unit=m, salt=salt)))
        )
        assert got.tolist() == expected


@pytest.mark.parametrize("bits", [None, 2])
@pytest.mark.parametrize("m", [1, 3])
def test_within_groups(spark, monkeypatch, bits, m):
    """Each (unit, group) keeps its own rows (the grouped releases' ``within``)."""
    if bits is not None:
        _narrow_codes(monkeypatch, bits)
    rows = _rows(11, units=20, n=500)
    groups = [j % 3 for j in range(len(rows))]
    _, frame = _tables(spark, rows, groups)
    for salt in SALTS[:2]:
        assert _spark_kept(frame, m, salt, within=True) == _reference(rows, m, salt, groups)


def test_the_cache_is_dropped_after_the_block_and_on_an_error(spark):
    _, frame = _tables(spark, _rows(3))
    table = spark_engine.open_spark_table(frame)
    with spark_engine.kept_rows(table, "v", "u", 2, 9) as kept:
        assert not _nothing_cached(spark)
        assert kept.count() > 0
    assert _nothing_cached(spark)
    with (
        pytest.raises(RuntimeError, match="inside"),
        spark_engine.kept_rows(table, "v", "u", 2, 9) as kept,
    ):
        assert not _nothing_cached(spark)
        raise RuntimeError("inside")
    assert _nothing_cached(spark)
    with (
        pytest.raises(RuntimeError, match="inside"),
        spark_rows._number_rows(table, "v", spark_rows._UnitCap("u", 1, 9)),
    ):
        raise RuntimeError("inside")
    assert _nothing_cached(spark)


def test_the_rows_are_joined_with_the_cached_identities(spark):
    _, frame = _tables(spark, _rows(3))
    table = spark_engine.open_spark_table(frame)
    with spark_engine.kept_rows(table, "v", "u", 2, 9) as kept:
        plan = str(kept._jdf.queryExecution().optimizedPlan().toString())
    assert "InMemoryRelation" in plan


def test_a_session_refusing_the_cache_still_works(spark, monkeypatch):
    from pyspark.errors import PySparkException
    from pyspark.sql.classic.dataframe import DataFrame

    rows = _rows(4)
    _, frame = _tables(spark, rows)
    table = spark_engine.open_spark_table(frame)

    def refused(self, *args, **kwargs):
        raise PySparkException("PERSIST is not supported here")

    monkeypatch.setattr(DataFrame, "cache", refused)
    for m in (1, 3):
        got = np.sort(
            table.numbers(Query("v", UnitRule(privacy_unit="u", rows_per_unit=m, salt=17)))
        )
        assert got.tolist() == _reference(rows, m, 17)[0]
        counts = spark_engine.grid_counts(
            table, "v", -3.0, 3.0, 12, spark_rows._UnitCap("u", m, 17)
        )
        assert int(counts.sum()) == len(_reference(rows, m, 17)[0])
    assert _nothing_cached(spark)
