"""The Parquet dictionary plan (dpselect.data.dictionary_scores) gives the SQL plan's scores.

Same salt, same data, same rule: the scores must be identical, on random files with units of
several types (NULL, NaN, -0.0), NULL values, values outside the candidate list, several row
groups and files (different dictionaries), numeric candidates on a text column (a value
matching two candidates), duplicate candidates and large_string columns; and the plan must be
chosen from public facts only.
"""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpselect.data import dictionary_scores
from dpselect.data.query import Query, UnitRule
from dpselect.data.tables import open_table

from .test_bounding_plan import random_rows


def _both(path):
    """The table with the dictionary plan, and the same table forced to the SQL plan."""
    fast = open_table(path)
    slow = open_table(path)
    slow.parquet_files = None
    return fast, slow


def _write(df, path, row_group_size, large=False):
    table = pa.Table.from_pandas(df, preserve_index=False)
    if large:
        table = table.cast(pa.schema([(f.name, pa.large_string() if f.type == pa.string()
                                       else f.type) for f in table.schema]))  # fmt: skip
    pq.write_table(table, path, row_group_size=row_group_size)


@pytest.mark.parametrize("unit_kind", ["int", "str", "float"])
def test_dictionary_plan_equals_the_sql_plan(tmp_path, unit_kind):
    df = random_rows(11 + len(unit_kind), unit_kind, n_rows=2500)
    path = tmp_path / "d.parquet"
    _write(df, path, row_group_size=700, large=unit_kind == "str")
    fast, slow = _both(path)
    assert dictionary_scores.dictionary_files(
        fast, "site", fast.columns["site"], "user_id", fast.columns["user_id"]
    ) == [str(path)]
    candidates = [f"s{i}" for i in range(0, 50, 2)] + ["absent"]
    files = [str(path)]
    for m, salt in ((1, 987654321), (3, 2**63 - 1), (9, 0)):
        # m = 1 is called directly: candidate_scores keeps the SQL plan for it
        got = dictionary_scores.dictionary_candidate_scores(
            fast, files, "site", candidates, "user_id", fast.columns["user_id"], m, salt
        )
        want = slow.scores(
            Query("site", UnitRule(privacy_unit="user_id", values_per_unit=m, salt=salt)),
            candidates,
        )
        assert list(got) == list(want) and want.sum() > 0, (m, salt)
        assert list(
            fast.scores(
                Query("site", UnitRule(privacy_unit="user_id", values_per_unit=m, salt=salt)),
                candidates,
            )
        ) == list(want)


def test_numeric_and_duplicate_candidates_and_several_files(tmp_path):
    rng = np.random.default_rng(3)
    for part in range(3):
        df = random_rows(40 + part, "int", n_rows=1500)
        texts = df["site"].str.slice(1)  # "0", "1", ... numbers as text
        texts[rng.random(len(df)) < 0.1] = " 4.0 "  # matches 4 and 4.0 by value
        df["site"] = texts
        _write(df, tmp_path / f"p{part}.parquet", row_group_size=400)
    fast, slow = _both(str(tmp_path / "*.parquet"))
    assert len(fast.parquet_files) == 3
    for candidates in ([0, 1, 2, 3, 4, 5, 8, 13], [0.0, 1.5, 2.0, 4, 4.0, 7.0],
                       ["1", "2", "2", "4", "x"]):  # fmt: skip
        for m in (2, 4):
            got = fast.scores(
                Query("site", UnitRule(privacy_unit="user_id", values_per_unit=m, salt=4242)),
                candidates,
            )
            want = slow.scores(
                Query("site", UnitRule(privacy_unit="user_id", values_per_unit=m, salt=4242)),
                candidates,
            )
            assert list(got) == list(want), (candidates, m)
            assert want.sum() > 0


def test_the_plan_is_chosen_by_public_facts(tmp_path):
    df = random_rows(7, "int", n_rows=300)
    path = tmp_path / "d.parquet"
    _write(df, path, row_group_size=100)
    table = open_table(path)
    choose = dictionary_scores.dictionary_files
    assert choose(table, "site", "VARCHAR", "user_id", "BIGINT") == [str(path)]
    assert choose(table, "site", "VARCHAR", "site", "VARCHAR") is None  # same column
    assert choose(open_table(path, schema={"site": "VARCHAR"}), "site", "VARCHAR", "user_id",
                  "BIGINT") is None  # a declared schema: the SQL plan  # fmt: skip
    assert choose(open_table(df), "site", "VARCHAR", "user_id", "BIGINT") is None  # a frame
    df["when"] = np.datetime64("2020-01-01")
    _write(df, path, row_group_size=100)
    table = open_table(path)
    assert choose(table, "site", "VARCHAR", "when", table.columns["when"]) is None
    # an empty file: both plans give zeros
    empty = tmp_path / "e.parquet"
    _write(df.iloc[:0], empty, row_group_size=100)
    fast, _ = _both(empty)
    assert list(
        fast.scores(
            Query("site", UnitRule(privacy_unit="user_id", values_per_unit=2, salt=1)), ["s1"]
        )
    ) == [0]


def test_dictionary_plan_reports_progress_while_it_reads(tmp_path, monkeypatch):
    """The dictionary plan streams the rows through Python, where DuckDB's progress stays at
    0%: it reports the rows read over the files' row counts instead, batch by batch."""
    monkeypatch.setattr(dictionary_scores, "_BATCH_ROWS", 500)
    df = random_rows(5, "str", n_rows=2500)
    path = tmp_path / "d.parquet"
    _write(df, path, row_group_size=700)
    fast, slow = _both(path)
    seen: list[float] = []
    candidates = [f"s{i}" for i in range(0, 50, 2)]
    got = dictionary_scores.dictionary_candidate_scores(
        fast, [str(path)], "site", candidates, "user_id", fast.columns["user_id"], 3, 7,
        progress=seen.append,
    )  # fmt: skip
    assert list(got) == list(
        slow.scores(
            Query("site", UnitRule(privacy_unit="user_id", values_per_unit=3, salt=7)), candidates
        )
    )
    inside = [p for p in seen if 0 < p < 100]
    assert len(inside) >= 4 and inside == sorted(inside) and max(seen) <= 99, seen
