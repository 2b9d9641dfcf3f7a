"""The rule "each unit keeps at most r rows of a numeric column" (quantiles and pricing).

DuckDB's plan (:func:`dpselect.data.engines.duckdb.kept_rows_sql`) against the Python
reference (:func:`dpselect.data.rules.kept_rows`) on random data; every input kind of
``open_table`` keeps the same rows; a unit's kept rows depend on its own rows only.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpselect.data import rules
from dpselect.data import values as value_rules
from dpselect.data.query import Query, UnitRule
from dpselect.data.tables import open_table


def _reference(units, values, salt, r):
    """The kept multiset (sorted) by the Python reference; rows without unit or number skipped."""
    rows = []
    for u, x in zip(units, values, strict=True):
        if u is None or x is None or (isinstance(x, float) and math.isnan(x)):
            continue
        rows.append((value_rules.canonical_text(u), float(x)))
    kept = rules.kept_rows(salt, rows, r)
    return np.sort(np.array([x for xs in kept.values() for x in xs], dtype=np.float64))


def _engine(data, salt, r, **kw):
    table = open_table(data, **kw)
    return np.sort(
        table.numbers(Query("x", UnitRule(privacy_unit="u", rows_per_unit=r, salt=salt)))
    )


values_st = st.one_of(
    st.none(),
    st.sampled_from([0.0, -0.0, 1.0, 2.5, -3.0, float("nan"), 1e300, 7.0]),
    st.integers(-5, 5).map(float),
)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 6)), values_st), max_size=60),
    salt=st.integers(0, 2**63 - 1),
    r=st.integers(1, 6),
)
def test_duckdb_equals_the_python_reference(rows, salt, r):
    units = [u for u, _ in rows]
    values = [x for _, x in rows]
    frame = pd.DataFrame(
        {"u": pd.array(units, dtype="Int64"), "x": pd.array(values, dtype="float64")}
    )
    got = _engine(frame, salt, r)
    assert np.array_equal(got, _reference(units, values, salt, r))


@settings(max_examples=30, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.sampled_from(["a", "b", "é", "", "a b"]), st.integers(0, 9)), max_size=40
    ),
    salt=st.integers(0, 2**63 - 1),
    r=st.integers(1, 4),
)
def test_text_units_equal_the_reference(rows, salt, r):
    units = [u for u, _ in rows]
    values = [float(x) for _, x in rows]
    table = pa.table({"u": pa.array(units, pa.string()), "x": pa.array(values, pa.float64())})
    assert np.array_equal(_engine(table, salt, r), _reference(units, values, salt, r))


def _flights(seed=3, units=40):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 60, units)
    u = np.repeat(np.arange(units), sizes)
    x = np.round(rng.normal(10, 5, len(u)), 1)
    return pd.DataFrame({"u": u, "x": x})


def test_every_input_kind_keeps_the_same_rows(tmp_path):
    frame = _flights()
    csv = tmp_path / "f.csv"
    frame.to_csv(csv, index=False)
    parquet = tmp_path / "f.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), parquet)
    expected = _reference(frame.u.tolist(), frame.x.tolist(), 99, 3)
    kinds = {
        "pandas": (frame, {}),
        "arrow": (pa.Table.from_pandas(frame, preserve_index=False), {}),
        "parquet": (str(parquet), {}),
        "csv": (str(csv), {"schema": {"x": "DOUBLE"}}),
        "csv-text": (str(csv), {}),  # untyped text: read as numbers row by row
    }
    for name, (data, kw) in kinds.items():
        assert np.array_equal(_engine(data, 99, 3, **kw), expected), name


def test_a_units_rows_depend_on_its_own_rows_only():
    frame = _flights()
    big = pd.DataFrame({"u": [999] * 500, "x": np.linspace(-50, 50, 500)})
    with_unit = pd.concat([frame, big], ignore_index=True)
    for r in (1, 4):
        before = _engine(frame, 5, r)
        after = _engine(with_unit, 5, r)
        # the neighbour adds exactly the new unit's r kept rows, nothing else changes
        added = _reference([999] * 500, big.x.tolist(), 5, r)
        assert np.array_equal(np.sort(np.concatenate([before, added])), after)


def test_row_counts_and_buyers():
    frame = _flights()
    table = open_table(frame)
    counts = np.sort(table.unit_sizes(Query("x", UnitRule(privacy_unit="u")), "rows"))
    assert np.array_equal(counts, np.sort(frame.groupby("u").size().to_numpy()))
    kept = _engine(frame, 7, 2)
    prices = [0.0, 5.0, 10.0, 30.0]
    got = table.buyers_at(Query("x", UnitRule(privacy_unit="u", rows_per_unit=2, salt=7)), prices)
    assert got.tolist() == [int(np.sum(kept >= p)) for p in prices]
    # without a unit: every row, as before
    assert table.buyers_at(Query("x"), prices).tolist() == [
        int(np.sum(frame.x >= p)) for p in prices
    ]


def test_quantile_values_with_a_unit_are_the_kept_rows():
    frame = _flights()
    table = open_table(frame)
    got = table.quantile_values(
        Query("x", UnitRule(privacy_unit="u", rows_per_unit=3, salt=1)),
        candidates=None,
        bounds=(0.0, 20.0),
        resolution=None,
    )
    assert np.array_equal(np.sort(got), _engine(frame, 1, 3))
    assert len(got) == int(np.minimum(frame.groupby("u").size(), 3).sum())


@pytest.mark.parametrize("salt", [0, 1, 2**63 - 1])
def test_row_key_is_the_unknown_domain_key(salt):
    key = rules.row_key(salt, "7", -0.0)
    assert key == rules.bounding_key(salt, "7", rules.value_code(salt, "0"))
