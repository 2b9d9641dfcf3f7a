"""Score vectors from data: contribution bounding, empty and null data, every input kind."""

import json

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from dpselect.core.errors import DataError, ParameterError
from dpselect.data.candidates import load_candidates
from dpselect.data.scores import candidate_scores, top_values
from dpselect.data.tables import open_table

CANDIDATES = [f"s{i}" for i in range(8)]  # s6, s7: never in the data below


def random_visits(seed, n_users=40, n_rows=600):
    """Users visiting values s0..s5 and x0..x2 (outside the candidate list), some nulls."""
    rng = np.random.default_rng(seed)
    values = np.array([f"s{i}" for i in range(6)] + ["x0", "x1", "x2"], dtype=object)
    site = values[rng.integers(0, len(values), n_rows)]
    site[rng.random(n_rows) < 0.05] = None
    return pd.DataFrame({"user_id": rng.integers(0, n_users, n_rows), "site": site})


def scores(df, *args, **kwargs):
    return candidate_scores(open_table(df), "site", CANDIDATES, *args, **kwargs)


def with_heavy_user(df, seed, n_rows=10_000):
    """``df`` plus one new user with ``n_rows`` rows over every value (and nulls)."""
    rng = np.random.default_rng(seed + 1000)
    values = np.array([*CANDIDATES, "x0", None], dtype=object)
    new = pd.DataFrame(
        {"user_id": np.full(n_rows, 10**6), "site": values[rng.integers(0, len(values), n_rows)]}
    )
    return pd.concat([df, new], ignore_index=True)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("max_contributions", [1, 2, 3])
def test_one_heavy_user_moves_at_most_max_contributions_scores_by_one(seed, max_contributions):
    df = random_visits(seed)
    salt = 12345 + seed
    before = scores(df, "user_id", max_contributions, salt)
    after = scores(with_heavy_user(df, seed), "user_id", max_contributions, salt)
    diff = after - before
    assert np.all((diff == 0) | (diff == 1))  # each score by at most 1, all upward
    assert diff.sum() == max_contributions  # the new user has every candidate: exactly m kept
    # and removing the user is the same comparison read backwards


@pytest.mark.parametrize("seed", range(4))
def test_bounded_scores_against_brute_force(seed):
    df = random_visits(seed)
    pairs = df.dropna().drop_duplicates()
    pairs = pairs[pairs["site"].isin(CANDIDATES)]
    distinct_users = np.array([(pairs["site"] == c).sum() for c in CANDIDATES])
    # a large bound keeps everything: the number of distinct users of each candidate
    assert list(scores(df, "user_id", 100, 7)) == list(distinct_users)
    for m in (1, 2):
        got = scores(df, "user_id", m, 7)
        assert np.all(got <= distinct_users)
        per_user = pairs.groupby("user_id")["site"].nunique()
        assert got.sum() == np.minimum(per_user, m).sum()  # each user keeps min(m, theirs)


def test_the_kept_values_depend_on_the_salt_not_on_other_users():
    df = random_visits(3)
    a = scores(df, "user_id", 1, 1)
    b = scores(df, "user_id", 1, 2)
    assert a.sum() == b.sum() and not np.array_equal(a, b)
    alone = df[df["user_id"] == df["user_id"].iloc[0]]
    others = df[df["user_id"] != df["user_id"].iloc[0]]
    # a user's kept candidate is the same alone as among the others: scores add up
    assert np.array_equal(scores(alone, "user_id", 1, 9) + scores(others, "user_id", 1, 9),
                          scores(df, "user_id", 1, 9))  # fmt: skip


@pytest.mark.parametrize("seed", range(3))
def test_without_privacy_unit_one_row_moves_one_score_by_one(seed):
    df = random_visits(seed)
    before = scores(df)
    for value, changed in [("s2", 2), ("s7", 7), ("x1", None), (None, None)]:
        row = pd.DataFrame({"user_id": [0], "site": [value]})
        diff = scores(pd.concat([df, row], ignore_index=True)) - before
        expected = np.zeros(len(CANDIDATES), dtype=np.int64)
        if changed is not None:
            expected[changed] = 1
        assert list(diff) == list(expected)
    counts = df["site"].value_counts()
    assert list(before) == [int(counts.get(c, 0)) for c in CANDIDATES]


def write(df, tmp_path, kind):
    """``df`` as the input kind ``kind``: a path or an in-memory table."""
    if kind == "csv":
        path = tmp_path / "d.csv"
        df.to_csv(path, index=False)
        return path
    if kind == "parquet":
        path = tmp_path / "d.parquet"
        pa_table = pa.Table.from_pandas(df, preserve_index=False)
        import pyarrow.parquet as pq

        pq.write_table(pa_table, path)
        return path
    if kind == "jsonl":
        path = tmp_path / "d.jsonl"
        records = df.astype(object).where(df.notna(), None).to_dict("records")
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        return path
    if kind == "pandas":
        return df
    if kind == "polars":
        return pl.from_pandas(df)
    if kind == "pyarrow":
        return pa.Table.from_pandas(df, preserve_index=False)
    raise AssertionError(kind)


KINDS = ["csv", "parquet", "jsonl", "pandas", "polars", "pyarrow"]


def test_every_input_kind_gives_the_same_scores(tmp_path):
    df = random_visits(11)
    expected = scores(df)
    expected_bounded = scores(df, "user_id", 2, 99)
    for kind in KINDS:
        table = open_table(write(df, tmp_path, kind))
        assert list(candidate_scores(table, "site", CANDIDATES)) == list(expected), kind
        got = candidate_scores(table, "site", CANDIDATES, "user_id", 2, 99)
        assert list(got) == list(expected_bounded), kind


def empty_and_null_frames():
    empty = pd.DataFrame(
        {"user_id": pd.Series([], dtype="int64"), "site": pd.Series([], dtype=object)}
    )
    nulls = pd.DataFrame({"user_id": [1, 2, 3], "site": [None, None, None]})
    return {"empty": empty, "nulls": nulls}


@pytest.mark.parametrize("case", ["empty", "nulls"])
@pytest.mark.parametrize("kind", KINDS)
def test_empty_data_and_null_column_score_zero(tmp_path, case, kind):
    data = write(empty_and_null_frames()[case], tmp_path, kind)
    table = open_table(data)
    for args in [(), ("user_id", 2, 5)]:
        got = candidate_scores(table, "site", CANDIDATES, *args)
        assert got.dtype == np.int64 and list(got) == [0] * len(CANDIDATES)
    assert top_values(table, "site", 3) == []
    assert top_values(table, "site", 3, "user_id", 1, 5) == []


def test_empty_files_without_rows(tmp_path):
    (tmp_path / "e.jsonl").write_text("")
    (tmp_path / "e.csv").write_text("user_id,site\n")
    for name in ("e.jsonl", "e.csv"):
        got = candidate_scores(open_table(tmp_path / name), "site", CANDIDATES, "user_id", 1, 3)
        assert list(got) == [0] * len(CANDIDATES)


def test_csv_types_never_come_from_the_rows(tmp_path):
    # A numeric-looking column stays text, so "07" never matches 7 whatever the other rows
    # hold: the matching (and so the sensitivity) cannot change between neighbours.
    for rows in ("7\n7\n", "7\n7\nabc\n"):
        path = tmp_path / "t.csv"
        path.write_text("v\n" + rows)
        table = open_table(path)
        assert table.columns == {"v": "VARCHAR"}
        assert list(candidate_scores(table, "v", ["07", "7", 7])) == [0, 2, 2]


def test_malformed_csv_rows_and_json_lines_are_skipped_not_raised(tmp_path):
    csv = tmp_path / "bad.csv"
    csv.write_text('site,user_id\ns1,1\ns2,2,extra\n"s3,x",3\ns1\n')
    assert list(candidate_scores(open_table(csv), "site", ["s1", "s2", "s3,x"])) == [1, 0, 1]
    jsonl = tmp_path / "bad.jsonl"
    jsonl.write_text('{"site": "s1"}\nnot json\n{"site": 5}\n{"other": 1}\n')
    assert list(candidate_scores(open_table(jsonl), "site", ["s1", "5", 5])) == [1, 1, 1]


def test_numeric_columns_cast_candidates(tmp_path):
    df = pd.DataFrame({"v": [1, 2, 2, 3, None]})
    table = open_table(df)
    assert list(candidate_scores(table, "v", [2, 3, "2", "x", 9])) == [2, 1, 2, 0, 0]


def test_top_values(tmp_path):
    df = pd.DataFrame({"u": [1, 1, 2, 3, 3, 3], "v": ["a", "b", "a", "c", "c", "a"]})
    table = open_table(df)
    assert top_values(table, "v", 2) == [("a", 3), ("c", 2)]
    assert top_values(table, "v", 5, "u", 5, 1) == [("a", 3), ("b", 1), ("c", 1)]
    bounded = top_values(table, "v", 5, "u", 1, 1)
    assert sum(n for _, n in bounded) == 3  # one value per user


def test_public_errors(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        open_table(tmp_path / "missing.parquet")
    (tmp_path / "garbage.parquet").write_bytes(b"not a parquet file at all" * 10)
    with pytest.raises(DataError, match="cannot read"):
        open_table(tmp_path / "garbage.parquet")
    with pytest.raises(DataError, match="unsupported format"):
        open_table(tmp_path / "x.xlsx") if (tmp_path / "x.xlsx").touch() is None else None
    with pytest.raises(DataError, match="not a column"):
        candidate_scores(open_table(pd.DataFrame({"a": [1]})), "b", [1])
    with pytest.raises(DataError, match="data must be"):
        open_table(42)
    with pytest.raises(ParameterError, match="does not exist"):
        load_candidates(tmp_path / "none.txt")
    for bad, match in [([], "empty"), (["a", None], "None"), (["a", "a"], "distinct")]:
        with pytest.raises(ParameterError, match=match):
            load_candidates(bad)


def test_candidates_from_file_and_mixed_types(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text(" a \n\nb\n")
    assert load_candidates(path) == ["a", "b"]
    assert load_candidates([1, 1.5, "1"]) == [1, 1.5, "1"]  # distinct by repr when mixed
    table = open_table(pd.DataFrame({"v": ["1", "1.5", "a"]}))
    assert list(candidate_scores(table, "v", [1, 1.5, "a", True])) == [1, 1, 1, 0]


@pytest.mark.parametrize("arrow", [True, False])
@pytest.mark.parametrize("with_progress", [True, False])
def test_candidate_paths_and_progress_agree(monkeypatch, arrow, with_progress):
    import dpselect.data.scores as scores_module

    df = random_visits(21)
    expected = [scores(df), scores(df, "user_id", 2, 5)]
    if not arrow:  # no pyarrow: the list goes as a query parameter
        monkeypatch.setattr(scores_module, "as_arrow", lambda values: None)
    seen = []
    progress = seen.append if with_progress else None
    table = open_table(df)
    got = [
        candidate_scores(table, "site", CANDIDATES, progress=progress),
        candidate_scores(table, "site", CANDIDATES, "user_id", 2, 5, progress=progress),
    ]
    assert [list(g) for g in got] == [list(e) for e in expected]
    if with_progress:
        assert seen and seen[-1] == 100.0 and all(0 <= p <= 100 for p in seen)
