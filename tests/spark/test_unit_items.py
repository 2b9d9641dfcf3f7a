"""A unit's items on Spark (``_per_unit_seeds``): a set for the choices of distinct values
and groups, so a unit holds at most its distinct items whatever its rows (docs/spark.md,
"Limit: a privacy unit's rows are gathered in one task"); a list for rows per unit, where
duplicate rows are kept rows each. The seeds beside the items are the rule's
(:func:`dpselect.data.rules.unit_seed`).

Fails against a broken ``_per_unit_seeds``: a list in both cases (the set test: 3001 items
for 4 distinct), a set in both (the rows test: 4 for 3001).
"""

from dpselect.data import rules
from dpselect.data.engines import spark as spark_engine

SALT = 987654321


def _frame(spark):
    # unit 7 holds 3000 rows of 3 distinct positions; unit 8 one row
    rows = [(7, i % 3) for i in range(3000)] + [(8, 5)]
    return spark.createDataFrame(rows, "u long, x long")


def test_items_are_a_set_for_distinct_choices(spark):
    out = spark_engine._per_unit_seeds(_frame(spark), "BIGINT", [SALT], ["x"]).collect()
    items = sorted((r["u"], r["x"]) for r in out)
    assert items == [(7, 0), (7, 1), (7, 2), (8, 5)]
    for r in out:  # the rule's seed of each unit, its two halves
        seed = rules.unit_seed(SALT, str(r["u"]))
        assert (r["_a0"], r["_b0"]) == (seed & 0xFFFFFFFF, seed >> 32)


def test_items_are_every_row_for_rows_per_unit(spark):
    out = spark_engine._per_unit_seeds(
        _frame(spark), "BIGINT", [SALT], ["x"], rows_count=True
    ).collect()
    assert len(out) == 3001
    assert sum(1 for r in out if r["u"] == 7 and r["x"] == 0) == 1000
