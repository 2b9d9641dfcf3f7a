"""``max_rows_per_value``: Spark gives DuckDB's scores and counts for the same salt
(candidates and the unknown-domain path, ``m`` 1 and 3, ``r`` 1, 2 and 25)."""

import numpy as np
import pytest

from dpselect.core.errors import ParameterError
from dpselect.data import scores
from dpselect.data.partitions import value_counts
from dpselect.data.tables import open_table

from .helpers import both, random_rows


@pytest.fixture(scope="module")
def datasets(spark):
    # few users, many rows each: the caps bind
    out = []
    for seed in range(2):
        rows = random_rows(50 + seed, n=400)
        out.append(both(spark, [(None if u is None else u % 9, x, s, d) for u, x, s, d in rows]))
    out.append(both(spark, []))
    return out


@pytest.mark.parametrize(("m", "r"), [(1, 2), (3, 25), (3, 1)])
def test_scores_and_counts_equal_duckdbs(datasets, m, r):
    for seed, (arrow, frame) in enumerate(datasets):
        kw = {"privacy_unit": "user", "max_contributions": m, "salt": 77 + seed,
              "max_rows_per_value": r}  # fmt: skip
        for column, cands in (("x", list(range(45))), ("s", [str(i) for i in range(45)])):
            want = scores.candidate_scores(open_table(arrow), column, cands, **kw)
            got = scores.candidate_scores(open_table(frame), column, cands, **kw)
            np.testing.assert_array_equal(got, want, err_msg=f"{column} m={m} r={r}")
            assert seed == 2 or want.sum() > 0
            top_want = scores.top_values(open_table(arrow), column, 12, **kw)
            assert scores.top_values(open_table(frame), column, 12, **kw) == top_want
        assert value_counts(open_table(frame), "s", **kw) == value_counts(open_table(arrow), "s",
                                                                           **kw)  # fmt: skip


def test_without_a_unit_r_is_refused(datasets):
    _, frame = datasets[0]
    with pytest.raises(ParameterError, match="max_rows_per_value applies only"):
        scores.candidate_scores(open_table(frame), "x", [1, 2], max_rows_per_value=2)
