"""Privacy audit (2026-11-22): one regression test per bug found, failing before its fix.

Each test checks a sensitivity, a map or a charge against what the data can actually do
between neighbours (one row or one person added or removed).
"""

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpselect as dp
from dpselect.data.matching import match_multiplicity
from dpselect.data.query import Query, UnitRule
from dpselect.data.tables import open_table
from dpselect.sampling.source import InsecureSeededSource

# ----------------------------------------------------------------------------------------
# Rows are people, two candidates that match one value: one row moves both scores, so the
# histograms' L1 (and L2^2) sensitivity is 2, not max_contributions = 1.

MERGING = [
    # (column values, their dtype, candidates): 4 and 4.0 both match the text "4";
    # "7" and "07" both cast to the integer 7
    (["4", "x"], "str", [4, 4.0, 5]),
    ([7, 3], "int64", ["7", "07", "3"]),
]


@pytest.mark.parametrize(("rows", "dtype", "cands"), MERGING)
def test_histogram_noise_covers_candidates_that_match_one_value(rows, dtype, cands):
    data = pd.DataFrame({"v": pd.Series(rows, dtype=dtype)})
    neighbour = data.iloc[1:]  # the first row removed
    diff = open_table(data).scores(Query("v"), cands) - open_table(neighbour).scores(
        Query("v"), cands
    )
    l1 = int(np.abs(diff).sum())
    assert l1 == 2
    assert match_multiplicity(open_table(data).require_column("v"), cands) == 2
    lap = dp.Session(data, source=InsecureSeededSource(1)).top_k(
        "v", 2, epsilon=1.0, candidates=cands, mechanism="laplace_histogram", counts=True
    )
    # discrete Laplace of scale b on counts of L1 sensitivity l1: the loss is l1 / b
    assert Fraction(l1) / Fraction(lap.parameters["count_scale"]) <= Fraction(lap.epsilon)
    gauss = dp.Session(data, source=InsecureSeededSource(1)).top_k(
        "v",
        2,
        epsilon=1.0,
        delta=1e-6,
        candidates=cands,
        mechanism="gaussian_histogram",
        counts=True,
    )
    sigma = Fraction(gauss.parameters["count_scale"])
    assert Fraction(int((diff * diff).sum())) / (2 * sigma * sigma) <= Fraction(gauss.rho)


def test_match_multiplicity_is_one_for_distinct_matches():
    assert match_multiplicity("VARCHAR", ["a", "b", "a "]) == 1
    assert match_multiplicity("VARCHAR", [4, 5]) == 1
    assert match_multiplicity("BIGINT", ["x", "y"]) == 1  # nothing converts: nothing matches
    assert match_multiplicity("DOUBLE", ["1", "1.0", "1e0", "2"]) == 3


# ----------------------------------------------------------------------------------------
# Parquet text that is not valid UTF-8: DuckDB's reader raised "Invalid string encoding ...
# value "\xFF\xFE" is not valid UTF8!" in the score query, after the charge: one row decided
# whether the release failed, and the message printed its bytes. Now each such value is read
# with every invalid byte as "?" (a rule row by row), by both plans.


def _parquet_with_invalid_utf8(path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    raw = [b"a", b"\xff\xfe", b"b", b"a", b"x\xc3", b"??", b"a"]
    text = pa.array(raw, pa.binary()).view(pa.string())  # no validation: as a writer may
    pq.write_table(pa.table({"s": text, "u": [1, 2, 3, 4, 5, 6, 1]}), path)
    replaced = ["a", "??", "b", "a", "x?", "??", "a"]  # DuckDB's utf8_validation='replace'
    return pd.DataFrame({"s": replaced, "u": [1, 2, 3, 4, 5, 6, 1]})


def test_parquet_text_that_is_not_utf8_is_read_row_by_row(tmp_path):

    path = str(tmp_path / "bad.parquet")
    same = _parquet_with_invalid_utf8(path)
    table, frame = open_table(path), open_table(same)
    for cands in (["a", "??", "x?", "b"], ["a", "??", 4]):  # the lookup and the SQL matcher
        for unit, m in ((None, 1), ("u", 1), ("u", 2), ("u", 3)):
            got = table.scores(
                Query("s", UnitRule(privacy_unit=unit, values_per_unit=m, salt=5)), cands
            )
            np.testing.assert_array_equal(
                got,
                frame.scores(
                    Query("s", UnitRule(privacy_unit=unit, values_per_unit=m, salt=5)), cands
                ),
            )
    src = InsecureSeededSource(3)
    dp.Session(path, source=src).top_k("s", 1, epsilon=1.0, candidates=["a", "b"])
    dp.Session(path, source=src).top_k("s", 1, epsilon=1.0, delta=1e-6)
    dp.Session(
        path, privacy_unit="u", contributions=dp.Contributions(values_per_unit=10), source=src
    ).top_k("s", 1, epsilon=1.0, delta=1e-6)
    dp.Session(
        path, privacy_unit="u", contributions=dp.Contributions(values_per_unit=2), source=src
    ).partition_selection("s", epsilon=1.0, delta=1e-6)


# ----------------------------------------------------------------------------------------
# A pandas object column holding a str that is not encodable as UTF-8 (a lone surrogate, as
# os.fsdecode or errors="surrogateescape" make): DuckDB's conversion raised in the score
# query, after the charge. Now each such character is read as "?", value by value.


class _SurrogateText:
    def __str__(self):
        return "o\udc80"


class _NoText:
    def __str__(self):
        raise RuntimeError("no text")


def test_pandas_text_that_is_not_utf8_is_read_row_by_row():

    odd = ["\ud800x", "a\udcff", _SurrogateText(), _NoText(), "a", None, 3, "a"]
    units = pd.Series([1, 2, "\udc00", 4, 5, 6, 7, 1], dtype=object)
    data = pd.DataFrame({"s": pd.Series(odd, dtype=object), "u": units})
    same = pd.DataFrame({"s": ["?x", "a?", "o?", None, "a", None, "3", "a"], "u": list("12?45671")})
    cands = ["a", "?x", "a?", "o?", "3", "x"]
    for unit, m in ((None, 1), ("u", 1), ("u", 2)):
        got = open_table(data).scores(
            Query("s", UnitRule(privacy_unit=unit, values_per_unit=m, salt=5)), cands
        )
        want = open_table(same).scores(
            Query("s", UnitRule(privacy_unit=unit, values_per_unit=m, salt=5)), cands
        )
        np.testing.assert_array_equal(got, want)
    src = InsecureSeededSource(3)
    dp.Session(data, source=src).top_k("s", 1, epsilon=1.0, candidates=["a", "b"])
    dp.Session(
        data, privacy_unit="u", contributions=dp.Contributions(values_per_unit=2), source=src
    ).partition_selection("s", epsilon=1.0, delta=1e-6)
    # pandas' string dtype with Python storage holds such a str too
    text = pd.DataFrame({"s": pd.Series(["\ud800x", "a", None], dtype="string[python]")})
    got = open_table(text).scores(Query("s"), cands)
    np.testing.assert_array_equal(got, open_table(same.iloc[[0, 4, 5]]).scores(Query("s"), cands))


def test_match_multiplicity_of_long_lists():
    # 1024 candidates and more go to DuckDB as an Arrow table (the path of long lists)
    many = [f"s{i}" for i in range(3000)]
    assert match_multiplicity("VARCHAR", many) == 1
    assert match_multiplicity("BIGINT", [*many, "7", "07"]) == 2
    assert match_multiplicity("DOUBLE", [float(i) for i in range(3000)]) == 1
    data = pd.DataFrame({"v": [7, 7, 3]})
    got = dp.Session(data, source=InsecureSeededSource(1)).top_k(
        "v",
        2,
        epsilon=1.0,
        candidates=[str(i) for i in range(2000)] + ["07"],
        mechanism="laplace_histogram",
    )
    assert got.parameters["score_l1_sensitivity"] == 2
