"""The packed (key, position) long of the Spark bounding plan, and the candidate-count guard.

The Spark plan orders a user's candidates by one long ``(key - 2^31) * 2^32 + position``: it
must order as ``(key, position)`` and give the position back for every 32-bit key and every
position below 2^32 (the old ``key * 2^31 + position`` broke from position 2^31 on).
"""

import numpy as np
import pandas as pd
import pytest

import dpselect as dp
from dpselect.accounting.ledger import Ledger
from dpselect.core.errors import ParameterError
from dpselect.data import rules
from dpselect.data.engines.spark import keys as spark_keys
from dpselect.sampling.source import InsecureSeededSource

EDGES = [0, 1, (1 << 31) - 1, 1 << 31, (1 << 31) + 5, (1 << 32) - 2, (1 << 32) - 1]


def test_packed_orders_as_key_then_position_and_unpacks(spark):
    from pyspark.sql import functions as f

    pairs = [(k, x) for k in EDGES for x in EDGES]
    frame = spark.createDataFrame(pd.DataFrame(pairs, columns=["k", "x"]).astype("int64"))
    packed = spark_keys._packed(f.col("k"), f.col("x"))
    rows = frame.select("k", "x", packed.alias("p")).collect()
    rows = [(r[0], r[1], r[2]) for r in rows]
    by_p = sorted(rows, key=lambda r: r[2])
    assert [(k, x) for k, x, _ in by_p] == sorted(pairs)  # orders as (key, position)
    assert len({p for _, _, p in rows}) == len(pairs)  # distinct
    back = frame.select("x", spark_keys._unpacked(packed).alias("y")).collect()
    assert all(r[0] == r[1] for r in back)
    # and the old packing really broke there (so this test can fail)
    small = frame.where(f.col("k") < (1 << 31))  # the old packing overflows beyond
    old_rows = small.select("k", "x", (f.col("k") * f.lit(1 << 31) + f.col("x"))).collect()
    keys = [(r[0], r[1]) for r in sorted(old_rows, key=lambda r: r[2])]
    assert keys != sorted(keys)


def test_too_many_candidates_raise_before_the_charge(tmp_path, monkeypatch):
    path = str(tmp_path / "budget.ledger")
    Ledger.create(path, 2.0, 1e-5)
    monkeypatch.setattr(rules, "MAX_BOUNDED_CANDIDATES", 3)
    data = pd.DataFrame({"user_id": [1, 2, 3], "site": ["a", "b", "c"]})
    with pytest.raises(ParameterError, match=r"candidates: at most 3 .*privacy_unit.*32-bit"):
        dp.Session(data, privacy_unit="user_id", ledger=path, source=InsecureSeededSource(1)).top_k(
            "site", 1, epsilon=1.0, candidates=["a", "b", "c", "d"]
        )
    assert Ledger.open(path).spent() == (0.0, 0.0)
    # without a privacy unit positions are not packed: no limit
    out = dp.Session(data, source=InsecureSeededSource(1)).top_k(
        "site", 1, epsilon=1.0, candidates=["a", "b", "c", "d"]
    )
    assert len(out.candidates) == 1 and np.isfinite(out.epsilon)
