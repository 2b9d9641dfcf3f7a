"""Column types x recipe paths x input kinds: refused before the charge, or released (issue 22).

An error after the ledger is charged that depends on what a row holds is a privacy breach:
one row decides whether the release fails. So every cell here must either raise a
``DPSelectError`` with the ledger untouched (refused from the schema) or release; any other
exception, or a ``DPSelectError`` after the ledger moved, fails. The columns hold ordinary
values and, once each, the type's extremes (NaN, infinities, the largest integers, dates
and timestamps at the ends of their range, 2^62-second durations, extreme intervals). The
default run covers every type on Arrow tables and Parquet files over the main paths; the
whole matrix is ``pytest -m slow``.
"""

from __future__ import annotations

import decimal
import uuid

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import dpselect as dp
from dpselect.accounting import Ledger
from dpselect.core.errors import DataError, DPSelectError
from dpselect.data.column_roles import check_column_role, type_supported
from dpselect.planning.price_request import price_request
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes.pricing import best_price as recipe_best_price
from dpselect.recipes.quantiles import quantile as recipe_quantile
from dpselect.sampling.source import InsecureSeededSource
from tests.session_queries import session_partition_selection, session_top_k

N = 2500  # more than DuckDB's vector (2048 rows): the extremes sit in the second vector
D = decimal.Decimal
I64 = (1 << 63) - 1
NAN, INF = float("nan"), float("inf")

# name -> (Arrow type, ordinary values, extreme values)
CASES = {
    "int64": (pa.int64(), [1, 2, 3], [-(1 << 63), I64]),
    "uint64": (pa.uint64(), [1, 2, 3], [(1 << 64) - 1]),
    "int8": (pa.int8(), [1, 2], [-128, 127]),
    "float64": (
        pa.float64(),
        [0.5, 1.5, 2.0],
        [NAN, INF, -INF, -0.0, 5e-324, 1.7976931348623157e308],
    ),
    "float32": (pa.float32(), [0.5, 1.5], [NAN, INF, -INF, 1e-45, 3.4e38]),
    "float16": (pa.float16(), [0.5, 1.5], [NAN, INF, 65504.0]),
    "decimal38_0": (pa.decimal128(38, 0), [D(1), D(2)], [D(10**37), -D(10**37)]),
    "decimal38_37": (pa.decimal128(38, 37), [D("0.5")], [D("9." + "9" * 37)]),
    "decimal5_2": (pa.decimal128(5, 2), [D("1.25"), D("2.50")], [D("999.99"), D("-999.99")]),
    "decimal256": (pa.decimal256(76, 0), [D(1), D(2)], [D(10**75)]),
    "bool": (pa.bool_(), [True, False], []),
    "string": (pa.string(), ["a", "b", "c"], ["", "\x00", "é" * 1000]),
    "large_string": (pa.large_string(), ["a", "b"], [""]),
    "string_view": (pa.string_view(), ["a", "b"], [""]),
    "dict_string": (pa.dictionary(pa.int32(), pa.string()), ["a", "b"], ["zz"]),
    # text that is not valid UTF-8 (a writer that did not check it): the bytes as stored
    "string_invalid": (pa.string(), [b"a", b"b"], [b"u\xff", b"u\xfe", b"\xed\xa0\x80", b"u?"]),
    "large_string_invalid": (pa.large_string(), [b"a"], [b"\xc3", b"\xff\xfe"]),
    "dict_string_invalid": (pa.dictionary(pa.int32(), pa.string()), [b"a"], [b"\xff"]),
    "binary": (pa.binary(), [b"a", b"b"], [b"\xff\x00", b""]),
    "large_binary": (pa.large_binary(), [b"a"], [b"\xff"]),
    "fixed_binary": (pa.binary(2), [b"ab", b"cd"], [b"\xff\xff"]),
    "date32": (pa.date32(), [0, 1, 19000], [-(1 << 31), (1 << 31) - 1]),
    "date64": (pa.date64(), [0, 86_400_000], [-(1 << 62), 1 << 62]),
    "ts_s": (pa.timestamp("s"), [0, 10**9], [1 << 62, -(1 << 62)]),
    "ts_ms": (pa.timestamp("ms"), [0, 10**12], [1 << 62, -(1 << 62)]),
    "ts_us": (pa.timestamp("us"), [0, 10**15], [1 << 62, -I64, I64]),
    "ts_ns": (pa.timestamp("ns"), [0, 10**18], [I64, -I64]),
    "ts_s_utc": (pa.timestamp("s", tz="UTC"), [0, 10**9], [1 << 62, -(1 << 62)]),
    "ts_ms_paris": (pa.timestamp("ms", tz="Europe/Paris"), [0, 10**12], [1 << 62]),
    "ts_us_paris": (pa.timestamp("us", tz="Europe/Paris"), [0, 10**15], [1 << 62, I64]),
    "ts_ns_offset": (pa.timestamp("ns", tz="+05:30"), [0, 10**18], [I64, -I64]),
    "time32s": (pa.time32("s"), [0, 3600], [86_399, 864_000]),
    "time64ns": (pa.time64("ns"), [0, 10**12], [I64]),
    "dur_s": (pa.duration("s"), [1, 2], [1 << 62, -(1 << 62)]),
    "dur_ns": (pa.duration("ns"), [1, 2], [I64]),
    "interval_mdn": (
        pa.month_day_nano_interval(),
        [(1, 2, 3), (0, 0, 5)],
        [((1 << 31) - 1, (1 << 31) - 1, I64), (-(1 << 31), -(1 << 31), -(1 << 63))],
    ),
    "list_int": (pa.list_(pa.int64()), [[1], [2, 3]], [[]]),
    "struct": (pa.struct([("a", pa.int64())]), [{"a": 1}], [{"a": None}]),
    "map": (pa.map_(pa.string(), pa.int64()), [[("a", 1)]], [[]]),
    "null": (pa.null(), [None], []),
}


def column(name: str) -> pa.Array:
    typ, normal, extreme = CASES[name]
    values = [normal[i % len(normal)] for i in range(N)]
    for j, e in enumerate(extreme):
        values[N // 2 + 7 * j] = e  # once each, in the second vector
    values[100] = None
    if name == "float16":
        mask = np.array([v is None for v in values])
        raw = np.array([0.0 if v is None else v for v in values], dtype=np.float16)
        return pa.array(raw, type=typ, mask=mask)
    if name == "dict_string":
        return pa.array(values, type=pa.string()).dictionary_encode()
    if name.endswith("_invalid"):  # bytes viewed as text, unchecked
        large = typ == pa.large_string()
        raw = pa.array(values, type=pa.large_binary() if large else pa.binary())
        text = raw.view(pa.large_string() if large else pa.string())
        return text.dictionary_encode() if name.startswith("dict") else text
    return pa.array(values, type=typ)


def table(name: str) -> pa.Table:
    units = pa.array(np.arange(N) % 300, type=pa.int64())
    text = pa.array([str(i % 11) for i in range(N)])
    return pa.table({"x": column(name), "u": units, "s": text})


def candidates(t: pa.Table) -> list[str]:
    out: list[str] = []
    for i in range(6):
        try:
            value = t.column("x")[i].as_py()
        except Exception:  # a value Python cannot hold
            continue
        if value is not None and str(value) not in out:
            out.append(str(value))
    return out or ["1"]


#: Every recipe path that reads a column, and the role the fuzzed column ``x`` plays there.
PATHS = {
    "top_k candidates": lambda d, c, **k: session_top_k(d, "x", 1, 1.0, candidates=c, **k),
    "top_k candidates unit": lambda d, c, **k: session_top_k(
        d,
        "x",
        1,
        1.0,
        contributions=dp.Contributions(values_per_unit=2),
        candidates=c,
        privacy_unit="u",
        **k,
    ),
    "top_k candidates, x the unit": lambda d, c, **k: session_top_k(
        d, "s", 1, 1.0, candidates=["1", "2"], privacy_unit="x", **k
    ),
    "top_k candidates, x the unit, m=2": lambda d, c, **k: session_top_k(
        d,
        "s",
        1,
        1.0,
        contributions=dp.Contributions(values_per_unit=2),
        candidates=["1", "2"],
        privacy_unit="x",
        **k,
    ),
    "top_k candidates, x the unit, m=auto": lambda d, c, **k: session_top_k(
        d,
        "s",
        1,
        1.0,
        contributions=dp.Contributions(values_per_unit="auto"),
        candidates=["1", "2"],
        privacy_unit="x",
        **k,
    ),
    "mode": lambda d, c, **k: session_top_k(d, "x", 1, 1.0, candidates=c, **k),
    "top_k": lambda d, c, **k: session_top_k(d, "x", 2, 1.0, delta=1e-6, **k),
    "top_k unit": lambda d, c, **k: session_top_k(
        d,
        "x",
        2,
        1.0,
        contributions=dp.Contributions(values_per_unit=2),
        delta=1e-6,
        privacy_unit="u",
        **k,
    ),
    "top_k, x the unit": lambda d, c, **k: session_top_k(
        d, "s", 2, 1.0, delta=1e-6, privacy_unit="x", **k
    ),
    "partition_selection": lambda d, c, **k: session_partition_selection(d, "x", 1.0, 1e-6, **k),
    "partition_selection unit": lambda d, c, **k: session_partition_selection(
        d, "x", 1.0, 1e-6, contributions=dp.Contributions(values_per_unit=2), privacy_unit="u", **k
    ),
    "partition_selection, x the unit": lambda d, c, **k: session_partition_selection(
        d, "s", 1.0, 1e-6, privacy_unit="x", **k
    ),
    "partition_selection policy, x the unit": lambda d, c, **k: session_partition_selection(
        d,
        "s",
        4.0,
        1e-6,
        contributions=dp.Contributions(values_per_unit=2),
        privacy_unit="x",
        mechanism="policy_laplace",
        **k,
    ),
    "quantile bounds": lambda d, c, **k: recipe_quantile(
        d, quantile_request("x", 0.5, 1.0, bounds=(0, 100)), **k
    ),
    "quantile candidates": lambda d, c, **k: recipe_quantile(
        d, quantile_request("x", 0.5, 1.0, candidates=[0, 1, 2]), **k
    ),
    "quantile bounds=auto": lambda d, c, **k: recipe_quantile(
        d, quantile_request("x", 0.5, 1.0, bounds="auto"), **k
    ),
    "quantiles": lambda d, c, **k: recipe_quantile(
        d, quantile_request("x", [0.25, 0.75], 1.0, bounds=(0, 100)), **k
    ),
    "best_price": lambda d, c, **k: recipe_best_price(d, price_request(1.0, column="x", n=N), **k),
    "choose_bounds": lambda d, c, **k: dp.choose_bounds(d, "x", 1.0, **k),
    "choose_max_contributions, x the unit": lambda d, c, **k: dp.choose_max_contributions(
        d, "s", "x", epsilon=1.0, **k
    ),
    "choose_max_contributions": lambda d, c, **k: dp.choose_max_contributions(
        d, "x", "u", epsilon=1.0, **k
    ),
}
FAST_PATHS = [
    "top_k candidates",
    "top_k candidates, x the unit, m=2",
    "top_k",
    "top_k, x the unit",
    "partition_selection",
    "quantile bounds",
    "best_price",
]
KINDS = ["arrow", "parquet", "pandas", "polars", "csv"]
FAST_TYPES = [
    "uint64", "float64", "float16", "decimal38_0", "decimal256", "bool", "string", "binary",
    "date32", "ts_s", "ts_us", "ts_ns", "ts_s_utc", "ts_us_paris", "ts_ns_offset", "time32s",
    "dur_s", "interval_mdn", "list_int", "null", "string_invalid", "ts_ms",
]  # fmt: skip


def source(kind: str, name: str, tmp_path) -> object:
    """The case as input ``kind``; ``None`` when that kind cannot hold the type at all."""
    t = table(name)
    try:
        if kind == "arrow":
            return t
        if kind == "pandas":
            return t.to_pandas()
        if kind == "polars":
            return pl.from_arrow(t)
        if kind == "parquet":
            path = tmp_path / f"{name}.parquet"
            pq.write_table(t, path)
            return str(path)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        return None
    assert kind == "csv"
    return str(tmp_path / f"{name}.csv")


def csv_case(name: str, tmp_path) -> tuple[str, dict[str, str]] | None:
    """A CSV of the case's text, with the DuckDB type the Arrow table has declared."""
    from dpselect.data.tables import open_table

    try:
        declared = open_table(table(name)).columns["x"]
    except DPSelectError:
        return None
    path = tmp_path / f"{name}.csv"
    t = table(name)
    text = pa.table({"x": [str(v) if v is not None else None for v in _texts(t)],
                     "u": t.column("u"), "s": t.column("s")})  # fmt: skip
    pacsv.write_csv(text, path)
    return str(path), {"x": declared}


def _texts(t: pa.Table) -> list[object]:
    x = t.column("x")
    try:
        return x.cast(pa.string()).to_pylist()
    except Exception:  # no Arrow cast to text (nested, intervals): value by value
        pass
    out: list[object] = []
    for i in range(t.num_rows):
        try:
            out.append(x[i].as_py())
        except Exception:  # out of Python's range
            out.append("9" * 30)
    return out


def run_cell(name: str, kind: str, path: str, tmp_path) -> str:
    """``"refused"`` or ``"released"``; fails on any other outcome."""
    schema = None
    if kind == "csv":
        made = csv_case(name, tmp_path)
        if made is None:
            return "skipped"
        data, schema = made
    else:
        data = source(kind, name, tmp_path)
        if data is None:
            return "skipped"
    book = Ledger.create(tmp_path / f"{uuid.uuid4().hex}.db", 1000.0, 1e-2)
    try:
        kw = {"ledger": book, "source": InsecureSeededSource(1)}
        if schema is not None:
            kw["schema"] = schema
        try:
            PATHS[path](data, candidates(table(name)), **kw)
        except DPSelectError as exc:
            assert book.spent() == (0.0, 0.0), f"{name}/{kind}/{path}: after the charge: {exc}"
            assert "\n" not in str(exc), str(exc)
            return "refused"
        except Exception as exc:
            pytest.fail(f"{name}/{kind}/{path}: {type(exc).__name__}: {str(exc)[:300]} "
                        f"(ledger spent {book.spent()})")  # fmt: skip
        assert book.spent() != (0.0, 0.0)
        return "released"
    finally:
        book.close()


@pytest.mark.parametrize("name", FAST_TYPES)
def test_types_refused_before_the_charge_or_released(name, tmp_path):
    for kind in ("arrow", "parquet"):
        for path in FAST_PATHS:
            run_cell(name, kind, path, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(CASES))
def test_every_type_path_and_input_kind(name, kind, tmp_path):
    for path in PATHS:
        run_cell(name, kind, path, tmp_path)


# ----------------------------------------------------------------------------- the gate
def test_the_gate_names_argument_column_type_and_supported_types():
    t = dp.data.tables.open_table(table("dur_s"))
    with pytest.raises(DataError) as info:
        check_column_role(t, "x", "unit", "privacy_unit")
    text = str(info.value)
    assert text.startswith("privacy_unit 'x'") and "INTERVAL" in text and "VARCHAR" in text
    assert "as a privacy unit" in text and "\n" not in text
    assert check_column_role(t, "s", "ranked") == "VARCHAR"


@pytest.mark.parametrize(
    ("sql_type", "unit", "ranked", "numeric"),
    [
        ("BIGINT", True, True, True),
        ("DECIMAL(38,37)", True, True, True),
        ("DOUBLE", True, True, True),
        ("VARCHAR", True, True, True),
        ("BOOLEAN", True, True, False),
        ("BLOB", True, True, False),
        ("DATE", True, True, False),
        ("TIMESTAMP WITH TIME ZONE", True, True, False),
        ("TIMESTAMP_S", False, False, False),
        ("INTERVAL", False, False, False),
        ("TIME", False, False, False),
        ("TIME WITH TIME ZONE", False, False, False),
        ("BIGINT[]", False, False, False),
        ("STRUCT(a BIGINT)", False, False, False),
    ],
)
def test_the_gate_by_role(sql_type, unit, ranked, numeric):
    assert type_supported(sql_type, "unit") is unit
    assert type_supported(sql_type, "ranked") is ranked
    assert type_supported(sql_type, "numeric") is numeric


def test_a_declared_timestamp_reads_seconds_safely(tmp_path):
    t = table("ts_s")
    result = dp.Session(
        t, schema={"x": "TIMESTAMP"}, source=InsecureSeededSource(3)
    ).partition_selection("x", epsilon=1.0, delta=1e-6)
    assert result is not None


# ----------------------------------------------------------------------------- one NaN
@pytest.fixture
def nan_parquet(tmp_path):
    """Finite doubles and one NaN, in the value and the unit column (Parquet statistics
    never count NaNs, and DuckDB folded isnan() by them)."""
    values = np.arange(N, dtype=float) % 37 + 0.5
    values[N // 2 + 3] = np.nan
    units = np.arange(N, dtype=float) % 300 + 0.25
    units[N // 2 + 5] = np.nan
    path = tmp_path / "nan.parquet"
    pq.write_table(pa.table({"v": values, "u": units, "s": [str(i % 11) for i in range(N)]}), path)
    return str(path)


@pytest.mark.parametrize(
    "call",
    [
        lambda d, **k: session_partition_selection(d, "v", 1.0, 1e-6, **k),
        lambda d, **k: session_top_k(d, "v", 2, 1.0, delta=1e-6, **k),
        lambda d, **k: session_top_k(d, "s", 2, 1.0, delta=1e-6, privacy_unit="u", **k),
        lambda d, **k: session_top_k(d, "s", 1, 1.0, candidates=["1", "2"], privacy_unit="u", **k),
        lambda d, **k: session_partition_selection(d, "s", 1.0, 1e-6, privacy_unit="u", **k),
    ],
    ids=["partition_selection", "top_k", "top_k unit", "top_k candidates unit", "ps unit"],
)
def test_one_nan_never_fails_after_the_charge(nan_parquet, call, tmp_path):
    book = Ledger.create(tmp_path / "l.db", 100.0, 1e-3)
    call(nan_parquet, ledger=book, source=InsecureSeededSource(5))
    assert book.spent() != (0.0, 0.0)


def test_canonical_text_of_nan_and_infinities_from_parquet(nan_parquet):
    import duckdb

    from dpselect.data.scores import canonical_text, canonical_text_sql

    con = duckdb.connect()
    text = canonical_text_sql("u", "DOUBLE")
    rows = con.execute(f"SELECT u, {text} FROM read_parquet('{nan_parquet}')").fetchall()
    assert all(t == canonical_text(u) for u, t in rows)
    assert sum(t == "nan" for _, t in rows) == 1


# ----------------------------------------------------------------------------- parameters
@pytest.mark.parametrize("epsilon", [1e-20, 1e-300, 1e30])
@pytest.mark.parametrize("kw", [{"mechanism": "laplace_histogram"}, {"counts": True}])
def test_an_epsilon_the_samplers_cannot_take_is_refused_before_the_charge(epsilon, kw, tmp_path):
    book = Ledger.create(tmp_path / "l.db", 10.0, 1e-3)
    data = pa.table({"site": ["a", "b", "a"]})
    with pytest.raises(DPSelectError) as info:
        session_top_k(data, "site", 1, epsilon, candidates=["a", "b"], ledger=book, **kw)
    assert book.spent() == (0.0, 0.0)
    assert len(str(info.value)) < 300


@pytest.mark.parametrize("epsilon", [1e-20, 1e-300])
@pytest.mark.parametrize(
    "kw",
    [
        {"delta": 1e-6},  # thresholding: looped without end at 1e-20
        {"delta": 1e-6, "candidates": ["a", "b"], "mechanism": "gaussian_histogram"},
        {"delta": 1e-6, "mechanism": "gaussian"},
    ],
    ids=["threshold", "gaussian_histogram", "gaussian_threshold"],
)
def test_tiny_epsilons_are_refused_or_released_before_any_wait(epsilon, kw, tmp_path):
    """No hang, no raw error (1e-300 gave 'min() arg is an empty sequence' and a division by
    zero): a ParameterError with the ledger unmoved, or a release whose charge is an upper
    bound of the loss."""
    import signal

    def too_long(signum, frame):
        raise TimeoutError(f"epsilon {epsilon}: no answer within 30 s (a loop without end?)")

    book = Ledger.create(tmp_path / "l.db", 10.0, 1e-3)
    data = pa.table({"site": ["a", "b", "a"]})
    previous = signal.signal(signal.SIGALRM, too_long)
    signal.alarm(30)
    try:
        if kw.get("mechanism") == "gaussian":
            args = {k: v for k, v in kw.items() if k != "delta"}
            call = lambda: session_partition_selection(  # noqa: E731
                data, "site", epsilon, kw["delta"], ledger=book, **args
            )
        else:
            call = lambda: session_top_k(data, "site", 1, epsilon, ledger=book, **kw)  # noqa: E731
        try:
            call()
        except DPSelectError as exc:
            assert book.spent() == (0.0, 0.0)
            assert "\n" not in str(exc) and len(str(exc)) < 300
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_a_polars_type_arrow_cannot_hold_is_a_one_line_data_error():
    """polars' Int128 has no Arrow form: refused when the frame is opened (its schema, before
    any charge) as a DataError naming the table, not pyarrow's own ArrowInvalid."""
    from dpselect.core.errors import DataError
    from dpselect.data.tables import open_table

    frame = pl.DataFrame({"uid": pl.Series([1, 2], dtype=pl.Int128), "v": ["x", "y"]})
    with pytest.raises(DataError, match="cannot read the polars table") as info:
        open_table(frame)
    assert "\n" not in str(info.value)
