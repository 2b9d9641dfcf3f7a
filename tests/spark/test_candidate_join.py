"""A long public candidate list is joined without a broadcast (issue 41 part 2).

The broadcast of 1.5 million candidates ran a 512 MB driver out of memory after the charge
(measured: 10^6 candidates in rows of 2^20 failed, in rows of 2^16 passed; 1.5 and 3 million
with the sort-merge join passed, 670 MB peak RSS of the Python process). Beyond
``MAX_BROADCAST_CANDIDATES`` the candidate frame carries a sort-merge hint, decided from the
list's length (public) alone; the scores stay those of DuckDB.
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
