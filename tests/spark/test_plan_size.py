"""The plans of the bounding queries stay linear in the steps of the keyed hash.

The key and its inverse are built one projection per arithmetic step; spelt as one nested
expression, every step uses its input twice and the expression doubles at each of the ten
steps. A column typed nullable and joined on gets an inferred ``IS NOT NULL`` filter that
Spark pushes below those projections, spelling the column out as one expression again (44,000
characters for the identities of ``top_values``, evaluated per kept row): the digest bytes
are typed not nullable (``_hex_le``) so that no such filter is inferred. Each query's
optimised plan is read as Spark runs it (classic sessions; the same plan on Connect).
"""

import pandas as pd
import pytest

from dpselect.data.engines import spark as spark_engine
from dpselect.data.query import PrivateGroups, PublicGroups, Query, UnitRule

#: The most shifts one line of a plan may hold: a step of the key or of its inverse spells
#: a handful (``x ^ (x >> 13) ^ (x >> 26)``); the ten steps spelt as one nested expression
#: spell hundreds. (Lines are not limited by length: the canonical text of a double is one
#: SQL expression of about 12,000 characters, computed once per distinct value.)
MAX_SHIFTS_PER_LINE = 16


@pytest.fixture
def plans(spark, monkeypatch):
    """The optimised plans of every query collected while the test runs."""
    from pyspark.sql.classic.dataframe import DataFrame

    seen = []
    for name in ("collect", "toArrow"):
        run = getattr(DataFrame, name)

        def recorded(self, *args, _run=run, **kwargs):
            seen.append(str(self._jdf.queryExecution().optimizedPlan().toString()))
            return _run(self, *args, **kwargs)

        monkeypatch.setattr(DataFrame, name, recorded)
    return seen


@pytest.fixture
def table(spark):
    rows = pd.DataFrame(
        {
            "u": [1, 1, 1, 1, 2, 2, 3, 3, 3],
            "g": ["p", "p", "q", "q", "p", "q", "q", "q", "p"],
            "item": ["a", "b", "c", "d", "a", "c", "b", "d", "a"],
            "y": [0.5, 1.5, 2.5, 3.5, 0.5, 2.5, 1.5, 3.5, 0.5],
        }
    )
    return spark_engine.open_spark_table(spark.createDataFrame(rows))


QUERIES = {
    "top_values": lambda t: t.counts(
        Query("item", UnitRule(privacy_unit="u", values_per_unit=2, salt=7)), 10
    ),
    "candidate_scores": lambda t: t.scores(
        Query("item", UnitRule(privacy_unit="u", values_per_unit=2, salt=7)), ["a", "b", "c"]
    ),
    "candidate_scores r=2": lambda t: t.scores(
        Query("item", UnitRule(privacy_unit="u", values_per_unit=2, rows_per_value=2, salt=7)),
        ["a", "b"],
    ),
    "top_values r=2": lambda t: t.counts(
        Query("item", UnitRule(privacy_unit="u", values_per_unit=2, rows_per_value=2, salt=7)), 10
    ),
    "grouped_value_counts": lambda t: t.counts(
        Query(
            "item",
            UnitRule(privacy_unit="u", values_per_unit=2, groups_per_unit=1, salt=7, group_salt=9),
            PublicGroups("g", ["p", "q"]),
        )
    ),
    "grouped_candidate_scores": lambda t: t.scores(
        Query(
            "item",
            UnitRule(privacy_unit="u", values_per_unit=2, groups_per_unit=2, salt=7, group_salt=9),
            PublicGroups("g", ["p", "q"]),
        ),
        ["a", "b"],
    ),
    "discovered_value_counts": lambda t: t.counts(
        Query(
            "item",
            UnitRule(privacy_unit="u", values_per_unit=2, groups_per_unit=1, salt=7, group_salt=9),
            PrivateGroups("g"),
        )
    ),
    "grouped_values": lambda t: t.numbers(
        Query(
            "y",
            UnitRule(privacy_unit="u", rows_per_unit=2, groups_per_unit=1, salt=7, group_salt=9),
            PublicGroups("g", ["p", "q"]),
        )
    ),
}


@pytest.mark.parametrize("name", list(QUERIES))
def test_no_plan_line_spells_more_than_a_few_steps(table, plans, name):
    QUERIES[name](table)
    assert plans, "the query ran no collect"
    most = max(line.count("shiftright(") for plan in plans for line in plan.splitlines())
    assert most <= MAX_SHIFTS_PER_LINE, f"{name}: a plan line with {most} shifts"
