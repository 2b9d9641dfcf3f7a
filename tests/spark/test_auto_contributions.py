"""``max_contributions="auto"`` on Spark (issue 23, part 1): the Spark engine counts each
person's distinct values with the DataFrame API (``groupBy`` + ``countDistinct``), so GEM
chooses from exactly the scores DuckDB gives it, and the same seed chooses the same bound."""

from fractions import Fraction

import numpy as np
import pandas as pd

import dpselect as dp
from dpselect.data.tables import open_table
from dpselect.planning.contribution_choice import DEFAULT_CONTRIBUTIONS
from dpselect.recipes.bounds import (
    choose_max_contributions,
    contribution_counts,
    contribution_scores,
)
from dpselect.sampling.source import InsecureSeededSource
from tests.session_queries import session_top_k

from .helpers import both, random_rows


def test_contribution_counts_and_scores_equal_duckdb(spark):
    for seed in range(4):
        arrow, frame = both(spark, random_rows(300 + seed, n=None if seed else 0))
        for column in ("x", "s", "d"):
            a = contribution_counts(open_table(arrow), column, "user")
            b = contribution_counts(open_table(frame), column, "user")
            assert sorted(a.tolist()) == sorted(b.tolist()), (seed, column)
            cands = list(DEFAULT_CONTRIBUTIONS)
            rel = Fraction(1, 2)
            assert contribution_scores(a, cands, rel) == contribution_scores(b, cands, rel)


def _people(seed: int) -> pd.DataFrame:
    """Persons with 1 to 12 distinct items, some rows repeated, some NULL items and units."""
    rng = np.random.default_rng(seed)  # test data only
    rows = []
    for u in range(120):
        for item in rng.choice(16, size=int(rng.integers(1, 13)), replace=False):
            rows += [(f"u{u}", f"v{item}")] * int(rng.integers(1, 3))
    rows += [(None, "v0"), ("u1", None), (None, None)]
    return pd.DataFrame(rows, columns=["user", "item"])


def test_choose_max_contributions_chooses_as_duckdb(spark):
    pdf = _people(7)
    sdf = spark.createDataFrame(pdf)
    for seed in (1, 2, 3):
        a = choose_max_contributions(
            pdf, "item", "user", epsilon=0.5, source=InsecureSeededSource(seed)
        )
        b = choose_max_contributions(
            sdf, "item", "user", epsilon=0.5, source=InsecureSeededSource(seed)
        )
        assert (a.max_contributions, a.epsilon) == (b.max_contributions, b.epsilon)


def test_top_k_auto_matches_duckdb(spark):
    pdf = _people(11)
    sdf = spark.createDataFrame(pdf)
    cands = [f"v{i}" for i in range(16)]
    for seed in (5, 6):
        kw = {"candidates": cands, "privacy_unit": "user",
              "contributions": dp.Contributions(values_per_unit="auto")}  # fmt: skip
        a = session_top_k(pdf, "item", 3, 2.0, source=InsecureSeededSource(seed), **kw)
        b = session_top_k(sdf, "item", 3, 2.0, source=InsecureSeededSource(seed), **kw)
        assert (a.candidates, a.epsilon, a.delta) == (b.candidates, b.epsilon, b.delta)
        assert a.parameters["max_contributions"] == b.parameters["max_contributions"]
        assert a.parameters["max_contributions"] in DEFAULT_CONTRIBUTIONS


def test_auto_without_candidates_and_by_match_duckdb(spark):
    # max_contributions="auto" without candidates (the unknown-domain top-k) and with by=
    # (one bound for every group, public and private groups): the same seed chooses the same
    # bound and releases the same values on both engines.
    pdf = _people(13)
    pdf["region"] = [f"r{int(u[1:]) % 3}" if isinstance(u, str) else None for u in pdf["user"]]
    sdf = spark.createDataFrame(pdf)
    cases = [
        {},
        {"by": "region", "groups": ["r0", "r1", "r2", "r9"]},
        {"by": "region"},
        {"by": "region", "candidates": [f"v{i}" for i in range(16)]},
    ]
    for kw in cases:
        kw = {"privacy_unit": "user", "delta": 1e-6, **kw,
              "contributions": dp.Contributions(values_per_unit="auto")}  # fmt: skip
        a = session_top_k(pdf, "item", 2, 2.0, source=InsecureSeededSource(8), **kw)
        b = session_top_k(sdf, "item", 2, 2.0, source=InsecureSeededSource(8), **kw)
        assert a.to_dict()["parameters"]["max_contributions"] in DEFAULT_CONTRIBUTIONS, kw
        assert (a.epsilon, a.delta) == (b.epsilon, b.delta), kw
        assert str(a).splitlines()[:-1] == str(b).splitlines()[:-1], kw
