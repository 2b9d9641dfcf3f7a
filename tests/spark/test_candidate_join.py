"""A long public candidate list is joined without a broadcast.

Beyond ``MAX_BROADCAST_CANDIDATES`` the candidate frame carries a sort-merge hint, decided
from the list's length (public) alone: the broadcast of 1.5 million candidates ran a 512 MB
driver out of memory, the sort-merge join of 10^7 candidates runs in Spark's default 1 GB
driver (bench/bench_spark_candidates.py). The scores stay those of DuckDB.
"""

from __future__ import annotations

import numpy as np

from dpselect.data.engines.spark import matching as spark_matching
from dpselect.data.query import Query, UnitRule
from dpselect.data.tables import open_table

from .helpers import both, random_rows


def test_a_long_list_is_joined_by_sort_merge_with_the_same_scores(spark, monkeypatch):
    arrow, frame = both(spark, random_rows(5, n=400))
    cands = list(range(45))
    broadcast = open_table(frame).scores(
        Query("x", UnitRule(privacy_unit="user", values_per_unit=2)), cands
    )
    monkeypatch.setattr(spark_matching, "MAX_BROADCAST_CANDIDATES", 10)
    monkeypatch.setattr(spark_matching, "CANDIDATES_PER_ROW", 7)  # several rows of candidates
    table = open_table(frame)
    _, joined = spark_matching._matching(table, "x", cands)
    assert "shuffle_merge" in joined._jdf.queryExecution().logical().toString().lower()
    merged = table.scores(Query("x", UnitRule(privacy_unit="user", values_per_unit=2)), cands)
    reference = open_table(arrow).scores(
        Query("x", UnitRule(privacy_unit="user", values_per_unit=2)), cands
    )
    np.testing.assert_array_equal(merged, broadcast)
    np.testing.assert_array_equal(merged, reference)


def _executed_plans(monkeypatch):
    """The executed plans of the score queries run while the list is open (the frames given
    to ``_fetch_pairs``, captured before they run)."""
    from dpselect.data.engines.spark import scores as spark_scores

    plans = []
    fetch = spark_scores._fetch_pairs

    def capture(frame):
        plans.append(frame._jdf.queryExecution().executedPlan().toString())
        return fetch(frame)

    monkeypatch.setattr(spark_scores, "_fetch_pairs", capture)
    return plans


def test_a_list_above_the_limit_is_joined_not_broadcast_in_the_executed_plan(spark, monkeypatch):
    """The physical plan of the score query (with and without a privacy unit) joins a list
    above ``MAX_BROADCAST_CANDIDATES`` by a sort-merge join and broadcasts nothing, though
    the rows are small enough for Spark to broadcast on its own; the scores are DuckDB's.
    A list at the limit is broadcast."""
    arrow, frame = both(spark, random_rows(7, n=300))
    cands = [str(v) for v in range(40)] + ["absent", "7.0"]
    queries = [
        Query("s", UnitRule(privacy_unit="user", values_per_unit=2)),
        Query("s"),
    ]
    monkeypatch.setattr(spark_matching, "MAX_BROADCAST_CANDIDATES", len(cands) - 1)
    monkeypatch.setattr(spark_matching, "CANDIDATES_PER_ROW", 8)
    plans = _executed_plans(monkeypatch)
    for query in queries:
        joined = open_table(frame).scores(query, cands)
        np.testing.assert_array_equal(joined, open_table(arrow).scores(query, cands))
    assert len(plans) == len(queries)
    for plan in plans:
        assert "SortMergeJoin" in plan
        assert "Broadcast" not in plan
    monkeypatch.setattr(spark_matching, "MAX_BROADCAST_CANDIDATES", len(cands))
    plans.clear()
    open_table(frame).scores(queries[0], cands)
    assert "BroadcastHashJoin" in plans[0]


def test_beyond_the_array_plan_the_rows_join_the_candidates_once(spark, monkeypatch):
    """With more candidates than ``ARRAY_CANDIDATES`` the seeds' units come from the rows
    before the join: one join of the candidates in the executed plan (the seeds' units once
    repeated the whole sort-merge join), and the scores stay DuckDB's, with several values
    and rows per value per unit."""
    from dpselect.data.engines.spark import bounding as spark_bounding

    arrow, frame = both(spark, random_rows(11, n=400))
    cands = [str(v) for v in range(40)] + ["absent"]
    monkeypatch.setattr(spark_bounding, "ARRAY_CANDIDATES", 5)
    monkeypatch.setattr(spark_matching, "MAX_BROADCAST_CANDIDATES", 10)
    monkeypatch.setattr(spark_matching, "CANDIDATES_PER_ROW", 8)
    plans = _executed_plans(monkeypatch)
    for m, r in [(1, 1), (2, 1), (3, 2)]:
        query = Query("s", UnitRule(privacy_unit="user", values_per_unit=m, rows_per_value=r))
        scores = open_table(frame).scores(query, cands)
        np.testing.assert_array_equal(scores, open_table(arrow).scores(query, cands))
    assert len(plans) == 3
    for plan in plans:
        assert plan.count("SortMergeJoin") == 1, plan
