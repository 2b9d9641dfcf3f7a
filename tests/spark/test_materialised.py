"""The distinct values of the unknown-domain plan are computed (cached) before the rows are
planned, and the session is left as it was: no cached data, the one setting restored.

Spark plans a join of the rows with an aggregate of them as a sort-merge join (the
aggregate's size is estimated from its input); computed first, the values carry their real
size and Spark broadcasts them when they are few (docs/spark.md, "Contribution bounding").
"""

import threading
import time
import types

import pandas as pd
import pytest

from dpselect.data.engines import spark as spark_engine
from dpselect.data.engines.spark import cache as spark_cache
from dpselect.data.query import Query, UnitRule

KEY = spark_cache._CACHED_PARTITIONING


@pytest.fixture
def table(spark):
    rows = pd.DataFrame({"u": [1, 1, 1, 2, 2, 3, 3, 3], "item": list("abcacbda")})
    return spark_engine.open_spark_table(spark.createDataFrame(rows))


def _nothing_cached(spark):
    return bool(spark._jsparkSession.sharedState().cacheManager().isEmpty())


@pytest.fixture
def plans(monkeypatch):
    """The optimised plans of every query collected while the test runs (classic)."""
    from pyspark.sql.classic.dataframe import DataFrame

    seen = []
    run = DataFrame.collect

    def recorded(self, *args, **kwargs):
        seen.append(str(self._jdf.queryExecution().optimizedPlan().toString()))
        return run(self, *args, **kwargs)

    monkeypatch.setattr(DataFrame, "collect", recorded)
    return seen


@pytest.mark.parametrize("before", [None, "false", "true"])
def test_top_values_leaves_no_cache_and_restores_the_setting(spark, table, before):
    if before is None:
        spark.conf.unset(KEY)
    else:
        spark.conf.set(KEY, before)
    try:
        assert table.counts(
            Query("item", UnitRule(privacy_unit="u", values_per_unit=2, salt=7)), 10
        ) == spark_engine.top_values(table, "item", 10, "u", 2, 7)
        assert _nothing_cached(spark)
        assert spark.conf.get(KEY, None) == before
    finally:
        spark.conf.unset(KEY)


def test_the_rows_are_joined_with_the_cached_values(table, plans):
    table.counts(Query("item", UnitRule(privacy_unit="u", values_per_unit=2, salt=7)), 10)
    assert any("InMemoryRelation" in plan for plan in plans)


def test_an_error_inside_drops_the_cache_and_restores_the_setting(spark):
    spark.conf.set(KEY, "false")
    try:
        small = spark.range(5).withColumnRenamed("id", "v")
        with (
            pytest.raises(RuntimeError, match="inside"),
            spark_cache._materialised(small) as cached,
        ):
            assert cached.count() == 5
            assert not _nothing_cached(spark)
            assert spark.conf.get(KEY) == "false"
            raise RuntimeError("inside")
        assert _nothing_cached(spark)
        assert spark.conf.get(KEY) == "false"
    finally:
        spark.conf.unset(KEY)


def test_a_session_refusing_the_cache_gets_the_plan_without_it(spark, table, monkeypatch):
    from pyspark.errors import PySparkException
    from pyspark.sql.classic.dataframe import DataFrame

    expected = spark_engine.top_values(table, "item", 10, "u", 2, 7)

    def refused(self, *args, **kwargs):
        raise PySparkException("PERSIST is not supported here")

    monkeypatch.setattr(DataFrame, "cache", refused)
    assert spark_engine.top_values(table, "item", 10, "u", 2, 7) == expected
    assert _nothing_cached(spark)
    assert spark.conf.get(KEY, None) is None


def test_a_session_refusing_the_setting_still_caches(spark, table, monkeypatch):
    from pyspark.errors import PySparkException
    from pyspark.sql.conf import RuntimeConfig

    expected = spark_engine.top_values(table, "item", 10, "u", 2, 7)
    allowed = RuntimeConfig.set

    def refusing(self, key, value):
        if key == KEY:
            raise PySparkException(f"Cannot modify the value of {key}")
        return allowed(self, key, value)

    monkeypatch.setattr(RuntimeConfig, "set", refusing)
    assert spark_engine.top_values(table, "item", 10, "u", 2, 7) == expected
    assert _nothing_cached(spark)
    assert spark.conf.get(KEY, None) is None


class _SlowConf:
    """A session's conf whose ``set`` waits, so two threads' saves and restores overlap."""

    def __init__(self, conf):
        self.conf = conf

    def get(self, key, default=None):
        return self.conf.get(key, default)

    def set(self, key, value):
        self.conf.set(key, value)
        time.sleep(0.2)

    def unset(self, key):
        self.conf.unset(key)


@pytest.mark.parametrize("before", [None, "false"])
def test_two_threads_restore_the_setting(spark, monkeypatch, before):
    """Thread A saves ``before`` and sets ``true``; without the lock thread B saves A's
    ``true`` meanwhile and puts it back after A restored ``before`` (a variant without the
    lock fails: ``'true' == 'false'``)."""
    slow = types.SimpleNamespace(conf=_SlowConf(spark.conf))
    monkeypatch.setattr(spark_cache, "_spark", lambda frame: slow)
    if before is None:
        spark.conf.unset(KEY)
    else:
        spark.conf.set(KEY, before)
    try:
        small = spark.range(5).withColumnRenamed("id", "v")
        counts = []
        errors = []

        def query():
            try:
                with spark_cache._materialised(small) as cached:
                    counts.append(cached.count())
            except BaseException as error:  # reported below, from the test's thread
                errors.append(error)

        threads = [threading.Thread(target=query) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors
        assert counts == [5, 5]
        assert spark.conf.get(KEY, None) == before
        assert _nothing_cached(spark)
    finally:
        spark.conf.unset(KEY)
