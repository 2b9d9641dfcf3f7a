"""Privacy audit of what depends on private rows after the charge (2026-11-26, h3).

One regression test per bug found, each failing before its fix; the last part records what
was checked and found sound (adversarial rows through the public API: no exception, no
warning, the same output shape for a dataset and its neighbour with one such row added).

Unit keys must be injective: two distinct raw unit values read as one person let one of them
move a score down and another up when it leaves (tests/data/test_unit_keys.py explains the
mechanics). Each test below gives every distinct unit one row holding ``x`` and asks for the
bounded score of ``x`` with ``max_contributions = 1``: the number of distinct keys.
"""

from __future__ import annotations

import decimal

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import dpselect as dp
from dpselect.data.query import Query, UnitRule
from dpselect.data.tables import open_table
from dpselect.data.unit_keys import object_unit_key
from dpselect.planning.contributions import Contributions
from dpselect.planning.price_request import price_request
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes.pricing import best_price as recipe_best_price
from dpselect.recipes.quantiles import quantile as recipe_quantile
from tests.session_queries import session_top_k

D = decimal.Decimal


def _units_of_x(data: object) -> int:
    return int(
        open_table(data).scores(
            Query("v", UnitRule(privacy_unit="uid", values_per_unit=1, salt=7)), ["x"]
        )[0]
    )


def _object_units(values: list[object]) -> int:
    frame = pd.DataFrame({"uid": pd.Series(values, dtype=object), "v": ["x"] * len(values)})
    return _units_of_x(frame)


# ----------------------------------------------------------------------------------------
# A pandas object column of Decimals (what pyarrow's to_pandas makes of a decimal128(38, s)
# column, e.g. 38-digit ids): the key was ``format(value.normalize(), "f")``, and normalize()
# rounds to the context's 28 digits, so ids that differ after the 28th digit were one unit.


def test_decimal_object_units_keep_every_digit():
    ids = [D("12345678901234567890123456789012345678"), D("12345678901234567890123456789012345679"),
           D("1.0000000000000000000000000000001"), D("1.0000000000000000000000000000002"),
           D("1"), D("1E+40"), D("10000000000000000000000000000000000000001")]  # fmt: skip
    assert len({object_unit_key(v) for v in ids}) == len(ids)
    assert _object_units(ids) == len(ids)
    # equal values stay one unit, whatever their exponent or the sign of zero
    assert object_unit_key(D("1.50")) == object_unit_key(D("15E-1"))
    assert object_unit_key(D("-0.00")) == object_unit_key(D("0"))
    assert object_unit_key(D("Infinity")) != object_unit_key(D("-Infinity"))
    assert object_unit_key(D("NaN")) is None and object_unit_key(D("sNaN")) is None


# ----------------------------------------------------------------------------------------
# NumPy datetimes in units that are multiples (``datetime64[3M]``, ``[2D]``): the key held the
# count and the base unit, not the multiple, so 1970-04 (one unit of 3 months) and 1970-02
# (one month) were one unit. An int whose str() is not its digits (an int subclass, an
# ``(int, Enum)`` member) was keyed by that str(): ``str()`` of mixed types is not injective.
# And ``np.timedelta64`` (an ``np.integer`` subclass) never reached its own branch: with a unit
# it was no unit at all, and a generic one was keyed as the int it holds.


class _SameText(int):
    def __str__(self) -> str:
        return "same"


def test_numpy_time_multiples_and_int_subclasses_are_distinct_units():
    import numpy as np

    groups = [
        [np.datetime64(1, "3M"), np.datetime64(1, "M")],  # 1970-04, 1970-02
        [np.datetime64(1, "2D"), np.datetime64(1, "D")],  # 1970-01-03, 1970-01-02
        [np.timedelta64(1, "10s"), np.timedelta64(1, "s"), np.timedelta64(3, "ms")],
        [np.timedelta64(5), 5],  # a generic duration is not the int 5
        [_SameText(1), _SameText(2), 3],
    ]
    for values in groups:
        keys = [object_unit_key(v) for v in values]
        assert None not in keys and len(set(keys)) == len(values), (values, keys)
        assert _object_units(values) == len(values), values
    # equal values of one type are one unit; the int subclass keys as the int it holds
    assert object_unit_key(np.datetime64(2, "D")) == object_unit_key(np.datetime64(2, "D"))
    assert object_unit_key(_SameText(3)) == object_unit_key(3)


# ----------------------------------------------------------------------------------------
# A NumPy long double (80-bit on x86) was keyed as float(value): 1 + 2^-60 and 1 were one
# unit, and every value beyond float64's range was the unit ``inf``.


def test_long_double_units_keep_their_precision():
    import numpy as np
    import pytest

    wide = np.longdouble
    if np.finfo(wide).nmant <= 52:
        pytest.skip("long double is float64 on this platform: nothing is lost")
    values = [wide(1), wide(1) + wide(2) ** -60, wide(10) ** 400, wide(10) ** 401, wide("inf")]
    keys = [object_unit_key(v) for v in values]
    assert None not in keys and len(set(keys)) == len(values), keys
    assert _object_units(values) == len(values)
    # a long double float64 holds exactly keys as that float
    assert object_unit_key(wide(1.5)) == object_unit_key(1.5)
    assert object_unit_key(wide("nan")) is None


# ----------------------------------------------------------------------------------------
# Parquet columns DuckDB reads lossily: a decimal of more than 38 digits is read as DOUBLE
# (10^60 and 10^60 + 1 one value), an INT96 timestamp (nanoseconds) as TIMESTAMP
# (microseconds). As a privacy unit two people were one; now refused from the files' footers,
# before any charge. As a ranked value or a number the rounding is harmless (each row still
# counts toward one value) and they are read as before.


def _lossy_parquet_files(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    wide = pa.table({"uid": pa.array([D(10**60), D(10**60 + 1)], pa.decimal256(76, 0)),
                     "v": ["x", "x"], "n": [1.0, 2.0]})  # fmt: skip
    pq.write_table(wide, tmp_path / "wide.parquet")
    nanos = pa.table({"uid": pa.array([1, 2], pa.timestamp("ns")), "v": ["x", "x"],
                      "n": [1.0, 2.0]})  # fmt: skip
    pq.write_table(nanos, tmp_path / "int96.parquet", use_deprecated_int96_timestamps=True)
    fine = pa.table({"uid": pa.array([D(10**36), D(10**36 + 1)], pa.decimal128(38, 0)),
                     "v": ["x", "x"], "n": [1.0, 2.0]})  # fmt: skip
    pq.write_table(fine, tmp_path / "fine.parquet")
    pq.write_table(nanos, tmp_path / "nanos.parquet")  # INT64 nanoseconds: exact
    return [tmp_path / "wide.parquet", tmp_path / "int96.parquet"], [
        tmp_path / "fine.parquet",
        tmp_path / "nanos.parquet",
    ]


def test_parquet_units_read_lossily_are_refused_before_the_charge(tmp_path):
    import pytest

    from dpselect.accounting import Ledger
    from dpselect.core.errors import DataError
    from dpselect.sampling.source import InsecureSeededSource

    lossy, exact = _lossy_parquet_files(tmp_path)
    for path in exact:  # 38 digits, nanosecond timestamps: two units
        assert _units_of_x(str(path)) == 2
    book = Ledger.create(tmp_path / "book.db", 10.0, 1e-3)
    calls = [
        lambda p, **k: session_top_k(p, "v", 1, 1.0, candidates=["x"], privacy_unit="uid", **k),
        lambda p, **k: recipe_quantile(
            p, quantile_request("n", 0.5, 1.0, bounds=(0, 3), privacy_unit="uid"), **k
        ),
        lambda p, **k: recipe_best_price(
            p, price_request(1.0, prices=[1, 2], max_price=2, column="n", privacy_unit="uid"), **k
        ),
    ]
    for path in lossy:
        for call in calls:
            with pytest.raises(DataError, match="privacy_unit 'uid'") as info:
                call(str(path), ledger=book, source=InsecureSeededSource(1))
            assert "\n" not in str(info.value)
        with pytest.raises(DataError):
            _units_of_x(str(path))
        # ranked or numeric, the same columns are read as before (DOUBLE, TIMESTAMP)
        dp.Session(str(path), ledger=book, source=InsecureSeededSource(1)).top_k(
            "uid", 1, epsilon=1.0, candidates=[1.0]
        )
    assert book.spent()[0] == 2.0  # only the two ranked releases were charged
    book.close()


# ----------------------------------------------------------------------------------------
# A pandas datetime64[ns, tz] column is read by DuckDB as TIMESTAMP WITH TIME ZONE, in
# microseconds: two ids 1 ns apart were one unit (the Arrow, polars and Parquet forms are
# TIMESTAMPTZ_NS and refused by the gate). Now refused as a unit from the dtype, before any
# charge; as a ranked value it is read as before.


def test_pandas_zoned_nanosecond_units_are_refused_before_the_charge(tmp_path):
    import pytest

    import dpselect as dp
    from dpselect.accounting import Ledger
    from dpselect.core.errors import DataError
    from dpselect.sampling.source import InsecureSeededSource

    stamps = pd.Series(pd.to_datetime([1, 2], unit="ns", utc=True))
    frame = pd.DataFrame({"uid": stamps, "v": ["x", "x"], "n": [1.0, 2.0]})
    naive = frame.assign(uid=stamps.dt.tz_localize(None))  # TIMESTAMP_NS: exact, two units
    assert _units_of_x(naive) == 2
    micros = frame.assign(uid=stamps.astype("datetime64[us, UTC]") + pd.to_timedelta([0, 1], "us"))
    assert _units_of_x(micros) == 2  # zoned microseconds: exact, accepted
    book = Ledger.create(tmp_path / "book.db", 10.0, 1e-3)
    src = InsecureSeededSource(1)
    with pytest.raises(DataError, match="privacy_unit 'uid'") as info:
        dp.Session(frame, privacy_unit="uid", ledger=book, source=src).top_k(
            "v", 1, epsilon=1.0, candidates=["x"]
        )
    assert "\n" not in str(info.value)
    with pytest.raises(DataError, match="privacy_unit 'uid'"):
        dp.quantile(frame, "n", 0.5, epsilon=1.0, bounds=(0, 3), privacy_unit="uid", ledger=book)
    assert book.spent() == (0.0, 0.0)
    dp.Session(frame, ledger=book, source=src).top_k(
        "uid", 1, epsilon=1.0, candidates=[stamps[0]]
    )  # ranked
    dp.Session(micros, privacy_unit="uid", ledger=book, source=src).top_k(
        "v", 1, epsilon=1.0, candidates=["x"]
    )
    assert book.spent()[0] == 2.0
    book.close()


# ----------------------------------------------------------------------------------------
# An Arrow date64 column (a pyarrow table's, a pandas ArrowDtype's) holds milliseconds, which
# DuckDB reads as a DATE: values of one day that are not whole days (the Arrow format asks for
# whole days but does not enforce it) were one unit. Now refused as a unit from the schema,
# before any charge; as a ranked value it is read as before.


def test_arrow_date64_units_are_refused_before_the_charge(tmp_path):
    import pyarrow as pa
    import pytest

    import dpselect as dp
    from dpselect.accounting import Ledger
    from dpselect.core.errors import DataError
    from dpselect.sampling.source import InsecureSeededSource

    days = pa.array([0, 1, 86_400_000], type=pa.int64()).cast(pa.date64())  # 2 days, 3 ids
    arrow = pa.table({"uid": days, "v": ["x"] * 3, "n": [1.0, 2.0, 3.0]})
    pandas = pd.DataFrame(
        {"uid": pd.array(days, dtype=pd.ArrowDtype(pa.date64())), "v": ["x"] * 3, "n": [1.0] * 3}
    )
    whole = arrow.set_column(0, "uid", pa.array([0, 1, 2], type=pa.date32()))  # exact days
    assert _units_of_x(whole) == 3
    book = Ledger.create(tmp_path / "book.db", 10.0, 1e-3)
    src = InsecureSeededSource(1)
    for frame in (arrow, pandas):
        with pytest.raises(DataError, match=r"privacy_unit 'uid'.*date64") as info:
            dp.Session(frame, privacy_unit="uid", ledger=book, source=src).top_k(
                "v", 1, epsilon=1.0, candidates=["x"]
            )
        assert "\n" not in str(info.value)
        with pytest.raises(DataError, match="privacy_unit 'uid'"):
            dp.quantile(
                frame, "n", 0.5, epsilon=1.0, bounds=(0, 3), privacy_unit="uid", ledger=book
            )
    assert book.spent() == (0.0, 0.0)
    dp.Session(arrow, ledger=book, source=src).top_k(
        "uid", 1, epsilon=1.0, candidates=[days[0].as_py()]
    )
    dp.Session(whole, privacy_unit="uid", ledger=book, source=src).top_k(
        "v", 1, epsilon=1.0, candidates=["x"]
    )
    assert book.spent()[0] == 2.0
    book.close()


# ----------------------------------------------------------------------------------------
# What was checked and found sound, kept as a property test: one adversarial row added to a
# pandas frame (NaN, the infinities, -0.0, 1e308, 5e-324, NULL, int64 extremes, long text,
# NUL, values of another type in an object column, in any column) changes neither whether a
# recipe releases, nor whether it warns, nor the shape of what it returns (same seed). The
# audit's wider sweep ran the same check on every input kind (pyarrow, polars, Parquet, CSV
# with and without a schema, JSON lines), more recipes (max_contributions and max_rows
# "auto", bounds "auto", no candidates, private groups, partition selection), the CLI, and
# empty, all-NULL, one-row and one-unit-of-5000-rows data: nothing failed.

_ODD = [float("nan"), float("inf"), -float("inf"), -0.0, 1e308, -1.7976931348623157e308,
        5e-324, None, 2**63 - 1, -(2**63), "", "a" * 20_000, "a\x00", "5", 5, True,
        b"\xff", ("a", 1)]  # fmt: skip
_COLUMNS = ["u", "s", "x", "g"]


def _base_rows(n: int = 40) -> list[dict[str, object]]:
    return [{"u": i % 13, "s": "abc"[i % 3], "x": float(i % 20), "g": "gh"[i % 2]}
            for i in range(n)]  # fmt: skip


def _recipes():
    import dpselect as dp

    cands = ["a", "b", "c", "zz"]
    rules = {"a": lambda x: ["a"] * len(x), "b": lambda x: ["b"] * len(x)}
    return {
        "top_k": lambda d, **k: session_top_k(
            d, "s", 2, 1.0, candidates=cands, counts=True, mechanism="laplace_histogram", **k
        ),
        "top_k unit": lambda d, **k: session_top_k(
            d,
            "s",
            2,
            1.0,
            contributions=dp.Contributions(values_per_unit=2, rows_per_value=2),
            candidates=cands,
            privacy_unit="u",
            **k,
        ),
        "top_k by": lambda d, **k: session_top_k(
            d, "s", 1, 1.0, candidates=cands, by="g", groups=["g", "h", "q"], **k
        ),
        "quantile tree": lambda d, **k: recipe_quantile(
            d, quantile_request("x", [0.25, 0.5], 1.0, bounds=(0, 20), mechanism="tree"), **k
        ),
        "quantile joint unit": lambda d, **k: recipe_quantile(
            d,
            quantile_request(
                "x",
                [0.25, 0.75],
                1.0,
                bounds=(0, 20),
                mechanism="joint",
                privacy_unit="u",
                contributions=Contributions(values_per_unit=2),
            ),
            **k,
        ),
        "quantile split": lambda d, **k: recipe_quantile(
            d, quantile_request("x", [0.5, 0.9], 1.0, bounds=(0, 20), mechanism="split"), **k
        ),
        "quantile candidates": lambda d, **k: recipe_quantile(
            d, quantile_request("x", 0.5, 1.0, candidates=[0, 5, 10, 15]), **k
        ),
        "select_hypothesis unit": lambda d, **k: dp.select_hypothesis(
            d["x"].to_numpy(),
            d["s"].to_numpy(),
            rules,
            epsilon=1.0,
            privacy_unit=d["u"],
            max_rows=2,
            **k,
        ),
        "best_price unit": lambda d, **k: recipe_best_price(
            d,
            price_request(
                1.0,
                prices=[1, 5, 10],
                max_price=20,
                column="x",
                privacy_unit="u",
                contributions=Contributions(values_per_unit=2),
            ),
            **k,
        ),
    }


def _shape(value: object) -> object:
    if isinstance(value, dict):
        return {key: _shape(v) for key, v in sorted(value.items())}
    if isinstance(value, list):
        return [len(value), [_shape(v) for v in value]]
    return type(value).__name__


def _outcome(recipe, data) -> object:
    """The shape of the result, or the refusal's class (a refusal from the schema, which the
    neighbours share); any other exception or any warning fails the test."""
    import warnings

    from dpselect.core.errors import DPSelectError
    from dpselect.sampling.source import InsecureSeededSource

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            result = recipe(data, source=InsecureSeededSource(5))
        except DPSelectError as exc:
            return ("refused", type(exc).__name__)
        str(result)
        return _shape(result.to_dict())


def _frame(rows: list[dict[str, object]], layout: str) -> pd.DataFrame:
    """``object``: every column of dtype object; ``typed``: ``x`` float64, the rest object
    (the dtypes are the schema: public, the same for a dataset and its neighbour)."""
    columns = {c: pd.Series([r[c] for r in rows], dtype=object) for c in _COLUMNS}
    if layout == "typed":
        columns["x"] = columns["x"].astype("float64")
    return pd.DataFrame(columns)


_BASE_OUTCOMES: dict[tuple[str, str], object] = {}


@settings(max_examples=40, deadline=None)
@given(
    column=st.sampled_from(_COLUMNS),
    value=st.sampled_from(_ODD),
    where=st.integers(0, 40),
    name=st.sampled_from(sorted(_recipes())),
    layout=st.sampled_from(["object", "typed"]),
)
def test_one_adversarial_row_changes_no_outcome_shape(column, value, where, name, layout):
    if layout == "typed" and column == "x" and not isinstance(value, (float, int, type(None))):
        layout = "object"  # a float64 column holds numbers only
    recipe = _recipes()[name]
    if (name, layout) not in _BASE_OUTCOMES:
        _BASE_OUTCOMES[name, layout] = _outcome(recipe, _frame(_base_rows(), layout))
    rows = _base_rows()
    rows.insert(where, {**rows[0], column: value})
    got = _outcome(recipe, _frame(rows, layout))
    assert got == _BASE_OUTCOMES[name, layout], (name, layout, column, value)


# ----------------------------------------------------------------------------------------
# select_hypothesis with privacy_unit an array of unit ids: a polars Series of Datetime("ns"),
# Duration("ns") or Time, and an Arrow (or pandas ArrowDtype) time64("ns"), became Python
# datetimes, timedeltas and times in microseconds, so ids 1 ns apart were one unit.


def test_hypothesis_unit_arrays_of_nanoseconds_stay_distinct():
    import numpy as np
    import polars as pl
    import pyarrow as pa

    import dpselect as dp
    from dpselect.data.kept_examples import example_unit_keys
    from dpselect.recipes.hypothesis_units import _python_values
    from dpselect.sampling.source import InsecureSeededSource

    ns = [1, 2, 1001]
    arrays = [
        pl.Series(ns, dtype=pl.Datetime("ns")),
        pl.Series(ns, dtype=pl.Datetime("ns", "UTC")),
        pl.Series(ns, dtype=pl.Duration("ns")),
        pl.Series(ns, dtype=pl.Time),
        pa.array(ns, pa.time64("ns")),
        pa.chunked_array(
            [pa.array(ns[:1], pa.timestamp("ns")), pa.array(ns[1:], pa.timestamp("ns"))]
        ),
        pd.Series(pa.array(ns, pa.time64("ns")), dtype=pd.ArrowDtype(pa.time64("ns"))),
    ]
    for units in arrays:
        keys = example_unit_keys(_python_values(units))
        assert None not in keys and len(set(keys)) == 3, (units, keys)
    # through the recipe: three units, one example each, r = 1: every mistake counts
    X, y = np.zeros(3), np.ones(3, dtype=int)
    rules = {"wrong": lambda x: np.zeros(len(x), dtype=int), "right": lambda x: np.ones(len(x))}
    from dpselect.recipes.hypothesis import bounded_mistakes

    for units in arrays:
        keys = example_unit_keys(_python_values(units))
        assert bounded_mistakes(X, y, keys, list(rules.values()), 1, salt=3) == [3, 0]
        dp.select_hypothesis(
            X, y, rules, epsilon=1.0, privacy_unit=units, source=InsecureSeededSource(1)
        )
