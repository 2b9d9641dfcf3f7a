"""Score vectors from data: contribution bounding, empty and null data, every input kind."""

import json

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from dpselect.core.errors import DataError, ParameterError
from dpselect.data.candidates import load_candidates
from dpselect.data.query import Query, UnitRule
from dpselect.data.tables import open_table
from tests.engine_rules import unit_rule

CANDIDATES = [f"s{i}" for i in range(8)]  # s6, s7: never in the data below


def random_visits(seed, n_users=40, n_rows=600):
    """Users visiting values s0..s5 and x0..x2 (outside the candidate list), some nulls."""
    rng = np.random.default_rng(seed)
    values = np.array([f"s{i}" for i in range(6)] + ["x0", "x1", "x2"], dtype=object)
    site = values[rng.integers(0, len(values), n_rows)]
    site[rng.random(n_rows) < 0.05] = None
    return pd.DataFrame({"user_id": rng.integers(0, n_users, n_rows), "site": site})


def scores(df, *args, **kwargs):
    return open_table(df).scores(Query("site", unit_rule(*args, **kwargs)), CANDIDATES)


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
        assert list(table.scores(Query("site"), CANDIDATES)) == list(expected), kind
        got = table.scores(
            Query("site", UnitRule(privacy_unit="user_id", values_per_unit=2, salt=99)), CANDIDATES
        )
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
        got = table.scores(Query("site", unit_rule(*args)), CANDIDATES)
        assert got.dtype == np.int64 and list(got) == [0] * len(CANDIDATES)
    assert table.counts(Query("site"), 3) == []
    assert (
        table.counts(Query("site", UnitRule(privacy_unit="user_id", values_per_unit=1, salt=5)), 3)
        == []
    )


def test_empty_files_without_rows(tmp_path):
    (tmp_path / "e.jsonl").write_text("")
    (tmp_path / "e.csv").write_text("user_id,site\n")
    for name in ("e.jsonl", "e.csv"):
        got = open_table(tmp_path / name).scores(
            Query("site", UnitRule(privacy_unit="user_id", values_per_unit=1, salt=3)), CANDIDATES
        )
        assert list(got) == [0] * len(CANDIDATES)


def test_csv_types_never_come_from_the_rows(tmp_path):
    # A numeric-looking column stays text, so "07" never matches 7 whatever the other rows
    # hold: the matching (and so the sensitivity) cannot change between neighbours.
    for rows in ("7\n7\n", "7\n7\nabc\n"):
        path = tmp_path / "t.csv"
        path.write_text("v\n" + rows)
        table = open_table(path)
        assert table.columns == {"v": "VARCHAR"}
        assert list(table.scores(Query("v"), ["07", "7", 7])) == [0, 2, 2]


def test_malformed_csv_rows_and_json_lines_are_skipped_not_raised(tmp_path):
    csv = tmp_path / "bad.csv"
    csv.write_text('site,user_id\ns1,1\ns2,2,extra\n"s3,x",3\ns1\n')
    assert list(open_table(csv).scores(Query("site"), ["s1", "s2", "s3,x"])) == [1, 0, 1]
    jsonl = tmp_path / "bad.jsonl"
    jsonl.write_text('{"site": "s1"}\nnot json\n{"site": 5}\n{"other": 1}\n')
    assert list(open_table(jsonl).scores(Query("site"), ["s1", "5", 5])) == [1, 1, 1]


def test_numeric_columns_cast_candidates(tmp_path):
    df = pd.DataFrame({"v": [1, 2, 2, 3, None]})
    table = open_table(df)
    assert list(table.scores(Query("v"), [2, 3, "2", "x", 9])) == [2, 1, 2, 0, 0]


def test_top_values(tmp_path):
    df = pd.DataFrame({"u": [1, 1, 2, 3, 3, 3], "v": ["a", "b", "a", "c", "c", "a"]})
    table = open_table(df)
    assert table.counts(Query("v"), 2) == [("a", 3), ("c", 2)]
    assert table.counts(Query("v", UnitRule(privacy_unit="u", values_per_unit=5, salt=1)), 5) == [
        ("a", 3),
        ("b", 1),
        ("c", 1),
    ]
    bounded = table.counts(Query("v", UnitRule(privacy_unit="u", values_per_unit=1, salt=1)), 5)
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
        open_table(pd.DataFrame({"a": [1]})).scores(Query("b"), [1])
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
    assert list(table.scores(Query("v"), [1, 1.5, "a", True])) == [1, 1, 1, 0]


@pytest.mark.parametrize("arrow", [True, False])
@pytest.mark.parametrize("with_progress", [True, False])
def test_candidate_paths_and_progress_agree(monkeypatch, arrow, with_progress):
    import dpselect.data.matching as matching_module

    df = random_visits(21)
    expected = [scores(df), scores(df, "user_id", 2, 5)]
    if not arrow:  # no pyarrow: the list goes as a query parameter
        monkeypatch.setattr(matching_module, "as_arrow", lambda values: None)
    from dpselect.data.engines import duckdb_progress

    monkeypatch.setattr(duckdb_progress, "REPORT_AFTER_SECONDS", 0.0)  # every query reports
    seen = []
    progress = seen.append if with_progress else None
    table = open_table(df)
    got = [
        table.scores(Query("site", progress=progress), CANDIDATES),
        table.scores(
            Query(
                "site",
                UnitRule(privacy_unit="user_id", values_per_unit=2, salt=5),
                progress=progress,
            ),
            CANDIDATES,
        ),
    ]
    assert [list(g) for g in got] == [list(e) for e in expected]
    if with_progress:
        assert seen and seen[-1] == 100.0 and all(0 <= p <= 100 for p in seen)


# --- the bounding rule: reference implementation, units by value, uniformity ------------------

from collections import Counter  # noqa: E402

from dpselect.data.scores import (  # noqa: E402
    bounding_key,
    canonical_text,
    canonical_text_sql,
    fmix32,
    salt_text,
    value_code,
)


def reference_bounded_scores(units, sites, candidates, m, salt):
    """Straightforward Python: each user keeps the m smallest (key, position) of their
    distinct candidate positions; units grouped by value (-0.0 is 0.0; None, NaN missing)."""
    position = {c: i for i, c in enumerate(candidates)}
    per_user = {}
    for u, s in zip(units, sites, strict=True):
        if u is None or s is None or s not in position:
            continue
        if isinstance(u, float):
            if np.isnan(u):
                continue
            u = u + 0.0
        per_user.setdefault(u, set()).add(position[s])
    scores = np.zeros(len(candidates), dtype=np.int64)
    for u, positions in per_user.items():
        text = canonical_text(u)
        kept = sorted(positions, key=lambda i: (bounding_key(salt, text, i), i))[:m]
        scores[kept] += 1
    return scores


def reference_top_values(units, values, m, salt):
    per_user = {}
    for u, v in zip(units, values, strict=True):
        if u is None or v is None:
            continue
        per_user.setdefault(u, set()).add(v)
    counts = Counter()
    for u, vs in per_user.items():
        text = canonical_text(u)
        key = {v: bounding_key(salt, text, value_code(salt, canonical_text(v))) for v in vs}
        counts.update(sorted(vs, key=lambda v: (key[v], v))[:m])
    return counts


@pytest.mark.parametrize("unit_kind", ["int", "str", "float"])
@pytest.mark.parametrize("m", [1, 2, 3])
def test_sql_equals_the_reference_implementation(unit_kind, m):
    rng = np.random.default_rng(100 + m)
    for salt in (0, 1, 2**63 - 1):
        df = random_visits(int(rng.integers(1 << 30)), n_users=60, n_rows=500)
        if unit_kind == "str":
            df["user_id"] = "user-" + df["user_id"].astype(str)
        elif unit_kind == "float":
            df["user_id"] = df["user_id"] / 7 - 3.0
        units = df["user_id"].tolist()
        sites = [None if pd.isna(s) else s for s in df["site"]]
        expected = reference_bounded_scores(units, sites, CANDIDATES, m, salt)
        assert list(scores(df, "user_id", m, salt)) == list(expected)
        got = dict(
            open_table(df).counts(
                Query("site", UnitRule(privacy_unit="user_id", values_per_unit=m, salt=salt)), 100
            )
        )
        assert got == dict(reference_top_values(units, sites, m, salt))


def test_float_units_are_grouped_by_value_not_by_text():
    # 0.0 and -0.0 are one person: they keep max_contributions values in all (issue 15, 6);
    # NaN and None units are missing (their rows count for nobody).
    df = pd.DataFrame(
        {
            "user_id": [0.0, -0.0, -0.0, 0.0, np.nan, np.nan, 1.5],
            "site": ["s0", "s1", "s2", "s3", "s4", "s5", "s0"],
        }
    )
    for m in (1, 2):
        got = scores(df, "user_id", m, 5)
        assert got.sum() == m + 1  # the unit 0.0 keeps m values, the unit 1.5 keeps one
        assert got[4] == got[5] == 0
        bounded = open_table(df).counts(
            Query("site", UnitRule(privacy_unit="user_id", values_per_unit=m, salt=5)), 10
        )
        assert sum(n for _, n in bounded) == m + 1


def test_units_of_every_type_are_grouped_by_value():
    import datetime as dt
    import decimal

    day = dt.date(2024, 1, 2)
    moment = dt.datetime(2024, 1, 2, 3, 4, 5, 6)
    cases = {
        "int": [7, 7, 8],
        "str": ["a", "a", "b"],
        "decimal": [decimal.Decimal("1.50"), decimal.Decimal("1.5"), decimal.Decimal("2")],
        "date": [day, day, dt.date(2024, 1, 3)],
        "timestamp": [moment, moment, moment + dt.timedelta(microseconds=1)],
        "bool": [True, True, False],
    }
    for kind, units in cases.items():
        table = pa.table({"user_id": units, "site": ["s0", "s1", "s2"]})
        got = open_table(table).scores(
            Query("site", UnitRule(privacy_unit="user_id", values_per_unit=1, salt=3)), CANDIDATES
        )
        assert got.sum() == 2, kind  # the first two rows are one unit
        expected = reference_bounded_scores(units, ["s0", "s1", "s2"], CANDIDATES, 1, 3)
        assert list(got) == list(expected), kind


def test_canonical_text_in_sql_equals_the_python_reference():
    import datetime as dt
    import decimal
    import struct

    import duckdb

    rng = np.random.default_rng(5)
    doubles = [0.0, -0.0, 1.0, -1.5, 0.1, 1e308, -1e-308, 5e-324, 2.0**53 + 2, 1 / 3]
    doubles += [float("inf"), -float("inf"), float("nan")]
    doubles += [struct.unpack("<d", struct.pack("<Q", int(b)))[0]
                for b in rng.integers(0, 2**63, 3000, dtype=np.uint64) * 2]  # fmt: skip
    connection = duckdb.connect()
    connection.execute("CREATE TABLE t (x DOUBLE)")
    connection.executemany("INSERT INTO t VALUES (?)", [[x] for x in doubles])
    rows = connection.execute(f"SELECT x, {canonical_text_sql('x', 'DOUBLE')} FROM t").fetchall()
    assert all(text == canonical_text(x) for x, text in rows)
    assert canonical_text(-0.0) == canonical_text(0.0) == "0"
    assert canonical_text(0.5) == "4503599627370496p-53"
    for sql_type, value in [
        ("BIGINT", -5),
        ("HUGEINT", 2**100),
        ("BOOLEAN", True),
        ("DATE", dt.date(2024, 1, 2)),
        ("TIMESTAMP", dt.datetime(2024, 1, 1, 0, 0, 1, 500)),
        ("DECIMAL(10,2)", decimal.Decimal("-0.50")),
        ("VARCHAR", "é\x1f"),
        ("BLOB", b"\x00a"),
    ]:
        text, back = connection.execute(
            f"SELECT {canonical_text_sql('x', sql_type)}, x FROM (SELECT CAST(? AS {sql_type}) x)",
            [value],
        ).fetchone()
        assert text == canonical_text(back), sql_type
    with pytest.raises(ValueError, match="dialect"):
        canonical_text_sql("x", "DOUBLE", "oracle")


def test_the_rule_has_known_answers():
    # Fixed vectors for other engines (the Spark port) to reproduce bit for bit.
    assert salt_text(-1) == str(2**64 - 1)
    assert fmix32(0) == 0 and fmix32(1) == 0x514E28B7
    assert bounding_key(0, "u1", 0) == 2855222281
    assert value_code(7, "s3") == 1906130689


# chi-square critical values at 1e-6 (scipy.stats.chi2.isf(1e-6, df)): df 2 and 5
CHI2_1E6 = {2: 27.631, 5: 35.888}


def chi_square(counts, n):
    counts = np.asarray(counts, dtype=float)
    expected = n / len(counts)
    return float(((counts - expected) ** 2 / expected).sum())


def kept_pair_counts(rank_of, n_salts):
    """How often each pair of {0, 1, 2} is kept (m = 2) over salts; rank_of(salt) -> keys."""
    counts = Counter()
    for salt in range(n_salts):
        keys = rank_of(salt)
        counts[tuple(sorted(sorted(range(3), key=lambda i: (keys[i], i))[:2]))] += 1
    return [counts[p] for p in [(0, 1), (0, 2), (1, 2)]]


@pytest.mark.parametrize("positions", [(0, 1, 2), (5, 6, 1 << 20)])
def test_kept_values_are_uniform_across_salts(positions):
    n = 6000  # a factor-2 bias on one pair gives a chi-square near 1000 (critical value 27.6)
    counts = kept_pair_counts(lambda s: [bounding_key(s, "u", i) for i in positions], n)
    assert chi_square(counts, n) < CHI2_1E6[2]


def test_kept_values_are_uniform_across_users_in_one_query():
    # One salt, many users with the same three values: which pair each keeps is uniform.
    n = 6000
    counts = Counter()
    for u in range(n):
        keys = [bounding_key(12345, str(u), i) for i in range(3)]
        counts[tuple(sorted(sorted(range(3), key=lambda i: keys[i])[:2]))] += 1
    assert chi_square([counts[p] for p in [(0, 1), (0, 2), (1, 2)]], n) < CHI2_1E6[2]
    # and the full order (6 permutations, 5 degrees of freedom)
    orders = Counter(
        tuple(np.argsort([bounding_key(777, str(u), i) for i in range(3)])) for u in range(n)
    )
    assert len(orders) == 6 and chi_square(list(orders.values()), n) < CHI2_1E6[5]


def test_sql_kept_values_are_uniform_in_one_query():
    # Through DuckDB: 6000 users with the same three candidates, max_contributions 1.
    n = 6000
    df = pd.DataFrame({"user_id": np.repeat(np.arange(n), 3), "site": ["s0", "s1", "s2"] * n})
    got = open_table(df).scores(
        Query("site", UnitRule(privacy_unit="user_id", values_per_unit=1, salt=99)),
        ["s0", "s1", "s2"],
    )
    assert got.sum() == n and chi_square(got, n) < CHI2_1E6[2]


def test_the_old_rule_fails_the_uniformity_test():
    # The broken variant (DuckDB's hash(salt, u, i), issue 15 item 8) is caught by the test.
    import duckdb

    n = 6000
    rows = duckdb.sql(
        "SELECT s, i, hash(CAST(s AS UBIGINT), 'u', i) AS h "
        f"FROM range({n}) t(s), (SELECT unnest([0, 1, 2]) AS i) ORDER BY s, i"
    ).fetchall()
    keys = {}
    for s, i, h in rows:
        keys.setdefault(s, [0, 0, 0])[i] = h
    counts = kept_pair_counts(lambda s: keys[s], n)
    assert chi_square(counts, n) > CHI2_1E6[2]


# --- numeric candidates on text columns (issue 10, item 1) ---------------------------------


def test_numeric_candidates_match_text_columns_by_value(tmp_path):
    path = tmp_path / "cars.csv"
    path.write_text("user_id,cyl\n1,4\n2,4.0\n3, 6 \n4,8\n5,abc\n6,4.5\n7,\n1,6\n")
    table = open_table(path)
    assert table.columns["cyl"] == "VARCHAR"
    assert list(table.scores(Query("cyl"), [4.0, 6.0, 8.0])) == [2, 2, 1]
    assert list(table.scores(Query("cyl"), [4, 6, 8])) == [2, 2, 1]  # "4.5" is no int
    assert list(table.scores(Query("cyl"), [4, 4.5])) == [2, 1]  # int and float: DOUBLE
    assert list(table.scores(Query("cyl"), ["4", "4.0"])) == [1, 1]  # text: as text
    bounded = table.scores(
        Query("cyl", UnitRule(privacy_unit="user_id", values_per_unit=1, salt=3)), [4.0, 6.0, 8.0]
    )
    assert bounded.sum() == 4 and bounded[2] == 1  # user 1 keeps one of 4 and 6
    # the same list on Parquet (a numeric column) gives the same scores
    pq_path = tmp_path / "cars.parquet"
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"cyl": [4.0, 4.0, 6.0, 8.0, None, 4.5, None, 6.0]}), pq_path)
    assert list(open_table(pq_path).scores(Query("cyl"), [4.0, 6.0, 8.0])) == [2, 2, 1]


def test_numeric_candidates_on_json_text_and_top_values_unchanged(tmp_path):
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text('{"v": "4"}\n{"v": 4}\n{"v": "x"}\n')
    assert list(open_table(jsonl).scores(Query("v"), [4.0, 5.0])) == [2, 0]
