"""``max_rows_per_value``: Spark gives DuckDB's scores and counts for the same salt
(candidates and the unknown-domain path, ``m`` 1 and 3, ``r`` 1, 2 and 25)."""

import numpy as np
import pytest

import dpselect as dp
from dpselect.core.errors import ParameterError
from dpselect.data.query import Query, UnitRule
from dpselect.data.tables import open_table
from tests.engine_rules import unit_rule
from tests.session_queries import session_top_k

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
@pytest.mark.parametrize("arrays", [True, False], ids=["unit arrays", "no arrays"])
def test_scores_and_counts_equal_duckdbs(datasets, m, r, arrays, monkeypatch):
    from dpselect.data.engines.spark import bounding

    if not arrays:  # the candidate plan without a set per unit (forced: few candidates here)
        monkeypatch.setattr(bounding, "ARRAY_CANDIDATES", 0)
    for seed, (arrow, frame) in enumerate(datasets):
        kw = {"privacy_unit": "user", "max_contributions": m, "salt": 77 + seed,
              "max_rows_per_value": r}  # fmt: skip
        for column, cands in (("x", list(range(45))), ("s", [str(i) for i in range(45)])):
            want = open_table(arrow).scores(Query(column, unit_rule(**kw)), cands)
            got = open_table(frame).scores(Query(column, unit_rule(**kw)), cands)
            np.testing.assert_array_equal(got, want, err_msg=f"{column} m={m} r={r}")
            assert seed == 2 or want.sum() > 0
            top_want = open_table(arrow).counts(Query(column, unit_rule(**kw)), 12)
            assert open_table(frame).counts(Query(column, unit_rule(**kw)), 12) == top_want
        query = Query("s", unit_rule(**kw))
        assert dict(open_table(frame).counts(query)) == dict(open_table(arrow).counts(query))


def test_without_a_unit_r_is_refused(datasets):
    _, frame = datasets[0]
    with pytest.raises(ParameterError, match="max_rows_per_value applies only"):
        open_table(frame).scores(Query("x", UnitRule(rows_per_value=2)), [1, 2])


def test_top_k_and_partition_selection_match_duckdb(spark):
    import pandas as pd

    from dpselect.sampling.source import InsecureSeededSource

    sites = ["news", "mail", "search", "video", "maps"]
    rows = [(i % 13, sites[min(4, int(i**0.5) % 7)]) for i in range(700)]
    pdf = pd.DataFrame(rows, columns=["user_id", "site"])
    sdf = spark.createDataFrame(pdf)
    kw = {"privacy_unit": "user_id", "counts": True,
          "contributions": dp.Contributions(values_per_unit=2, rows_per_value=9)}  # fmt: skip
    a = session_top_k(pdf, "site", 3, 1.0, candidates=sites, source=InsecureSeededSource(5), **kw)
    b = session_top_k(sdf, "site", 3, 1.0, candidates=sites, source=InsecureSeededSource(5), **kw)
    assert (a.candidates, a.counts, a.parameters) == (b.candidates, b.counts, b.parameters)
    a = session_top_k(pdf, "site", 2, 2.0, delta=1e-6, source=InsecureSeededSource(6), **kw)
    b = session_top_k(sdf, "site", 2, 2.0, delta=1e-6, source=InsecureSeededSource(6), **kw)
    assert (a.candidates, a.counts) == (b.candidates, b.counts)
    a = dp.Session(
        pdf,
        privacy_unit="user_id",
        contributions=dp.Contributions(values_per_unit=2, rows_per_value=9),
        source=InsecureSeededSource(7),
    ).partition_selection("site", epsilon=1.0, delta=1e-6)
    b = dp.Session(
        sdf,
        privacy_unit="user_id",
        contributions=dp.Contributions(values_per_unit=2, rows_per_value=9),
        source=InsecureSeededSource(7),
    ).partition_selection("site", epsilon=1.0, delta=1e-6)
    assert a.values == b.values


def test_top_k_auto_contributions_at_r_equal_duckdbs(datasets):
    """``max_contributions="auto"`` with ``max_rows_per_value``: GEM reads the candidates' kept
    rows (the engine's scores), so Spark chooses the same bound and releases the same values
    as DuckDB for the same seed."""
    from dpselect.sampling import InsecureSeededSource

    arrow, frame = datasets[0]
    cands = [str(i) for i in range(45)]
    kw = {"candidates": cands, "privacy_unit": "user",
          "contributions": dp.Contributions(values_per_unit="auto", rows_per_value=4)}  # fmt: skip
    runs = [session_top_k(data, "s", 3, 1.0, source=InsecureSeededSource(12), **kw)
            for data in (arrow, frame)]  # fmt: skip
    assert runs[0].candidates == runs[1].candidates
    assert runs[0].parameters["max_contributions"] == runs[1].parameters["max_contributions"]


def test_person_values_with_rows_refused_on_spark(datasets):
    _, frame = datasets[0]
    with pytest.raises(ParameterError, match="DuckDB"):
        open_table(frame).person_values(
            Query(
                Query(
                    "s", UnitRule(privacy_unit="user", values_per_unit=2, rows_per_value=3, salt=1)
                )
            )
        )
