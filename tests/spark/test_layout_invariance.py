"""Issue 41 on Spark: every layout of the same rows gives the same release with a fixed seed.

The Parquet layouts of tests/layout_cases.py (row groups of 1, 5 and all rows; rows in order,
shuffled and sorted by ``x`` so that NaN rows fill row groups of their own or sit beside
finite rows whose min/max exclude them; several files; a file written by DuckDB) read by
``spark.read.parquet`` and opened by the Spark engine (its reader,
``nan_safe_frame``), and the same rows as a Spark frame made from pandas: one release each.
"""

from __future__ import annotations

import pytest

from tests.layout_cases import layouts, recipes, release

RECIPES = recipes()
#: NaN beside finite rows whose min/max exclude it, NaN row groups, several files, DuckDB's
#: statistics (every DuckDB layout of tests/data/test_layout_invariance.py: about 3 s a
#: release on Spark local, so three here).
SPARK_LAYOUTS = ["parquet shuffled 5", "parquet by_x 5", "parquet parts"]


@pytest.fixture(scope="module")
def frames(spark, tmp_path_factory):
    written = layouts(tmp_path_factory.mktemp("spark_layouts"))
    out = {"spark pandas": spark.createDataFrame(written["pandas"])}
    for name in SPARK_LAYOUTS:
        path = written[name]
        out[name] = spark.read.parquet(path)
    return out


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_every_spark_layout_gives_the_same_release(frames, name):
    call = RECIPES[name]
    reference = release(call, frames["spark pandas"])
    differ = [layout for layout in SPARK_LAYOUTS if release(call, frames[layout]) != reference]
    assert differ == [], f"{name}: these Spark layouts release otherwise: {differ}"
