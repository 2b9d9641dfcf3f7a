"""The Spark settings dpselect's queries run with: set only while the query runs, only where
the session leaves them unset, restored after it (on errors too), skipped where refused."""

import pandas as pd
import pytest

from dpselect.data.engines import spark as spark_engine
from dpselect.data.engines.spark_session import QUERY_SETTINGS, query_settings

KEY = next(iter(QUERY_SETTINGS))


class FakeConf:
    """A session's ``conf``: explicit settings only (``get`` gives the default otherwise)."""

    def __init__(self, settings=None, refused=()):
        self.settings = dict(settings or {})
        self.refused = set(refused)

    def get(self, key, default=None):
        return self.settings.get(key, default)

    def set(self, key, value):
        if key in self.refused:
            raise RuntimeError(f"[CANNOT_MODIFY_CONFIG] {key}")
        self.settings[key] = value

    def unset(self, key):
        self.settings.pop(key, None)


class FakeSession:
    def __init__(self, conf):
        self.conf = conf


def test_set_during_the_block_and_unset_after():
    conf = FakeConf()
    with query_settings(FakeSession(conf), {"a": "1", "b": "2"}):
        assert conf.settings == {"a": "1", "b": "2"}
    assert conf.settings == {}


def test_the_owners_setting_is_kept():
    conf = FakeConf({"a": "owner"})
    with query_settings(FakeSession(conf), {"a": "1", "b": "2"}):
        assert conf.settings == {"a": "owner", "b": "2"}
    assert conf.settings == {"a": "owner"}


def test_a_refused_setting_is_skipped_and_the_query_runs():
    conf = FakeConf(refused={"a"})
    with query_settings(FakeSession(conf), {"a": "1", "b": "2"}):
        assert conf.settings == {"b": "2"}
    assert conf.settings == {}


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_restored_when_the_query_fails(error):
    conf = FakeConf({"a": "owner"})
    with pytest.raises(error), query_settings(FakeSession(conf), {"a": "1", "b": "2"}):
        raise error("the query failed")
    assert conf.settings == {"a": "owner"}


class SettingsSeen:
    """A frame whose ``collect`` reports the setting the query runs with."""

    def __init__(self, spark):
        self.sparkSession = spark

    def collect(self):
        return [self.sparkSession.conf.get(KEY, None)]


def test_spark_queries_run_with_the_settings_and_restore_the_session(spark):
    assert spark.conf.get(KEY, None) is None
    assert spark_engine._collect(SettingsSeen(spark)) == [QUERY_SETTINGS[KEY]]
    assert spark.conf.get(KEY, None) is None
    spark.conf.set(KEY, "2MB")  # the owner's own setting wins and stays
    try:
        assert spark_engine._collect(SettingsSeen(spark)) == ["2MB"]
        assert spark.conf.get(KEY, None) == "2MB"
    finally:
        spark.conf.unset(KEY)


def test_a_bounded_query_leaves_the_session_as_it_was(spark):
    rows = pd.DataFrame({"u": [1, 1, 1, 2, 2, 3], "item": ["a", "b", "c", "a", "c", "b"]})
    table = spark_engine.open_spark_table(spark.createDataFrame(rows))
    before = {k: spark.conf.get(k, None) for k in QUERY_SETTINGS}
    scores = spark_engine.candidate_scores(table, "item", ["a", "b", "c"], "u", 3, salt=7)
    assert list(scores) == [2, 2, 2]
    found = spark_engine.top_values(table, "item", 10, "u", 3, salt=7)
    assert sorted(found) == [("a", 2), ("b", 2), ("c", 2)]
    assert {k: spark.conf.get(k, None) for k in QUERY_SETTINGS} == before
