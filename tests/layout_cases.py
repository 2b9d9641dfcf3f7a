"""One table written in many layouts, and the recipes that read numbers or filter rows.

Shared by tests/data/test_layout_invariance.py (DuckDB over Parquet, CSV, Arrow and pandas)
and tests/spark/test_layout_invariance.py (Spark frames). A row's fate may depend only on the
row and its own unit's rows (docs/contribution_bounding.md, "What a row's fate may depend
on"): with a fixed seed, every layout of the same rows gives the same release.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import dpselect as dp
from dpselect.planning.contributions import Contributions
from dpselect.planning.price_request import price_request
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes.pricing import best_price as recipe_best_price
from dpselect.recipes.quantiles import quantile as recipe_quantile
from tests.session_queries import session_partition_selection, session_top_k

ROWS = 240


def table_columns() -> dict[str, Any]:
    """The rows: units ``u`` (several rows each), groups ``g``, a float ``x`` with NaN, -NaN,
    +-inf, and a float ``k`` of few values with NaN (a ranked number column)."""
    rng = np.random.default_rng(20261206)
    x = np.round(rng.normal(10.0, 3.0, ROWS), 3)
    x[::13] = np.nan
    x[7::29] = -np.nan  # the sign bit set: still NaN
    x[3] = np.inf
    x[4] = -np.inf
    k = rng.integers(0, 5, ROWS).astype(np.float64)
    k[::11] = np.nan
    g = rng.choice(np.array(["a", "b", "c"]), ROWS)
    g[rng.random(ROWS) < 0.05] = "d"
    x[g == "d"] = np.nan  # a group whose rows are all NaN: no rows, never released
    return {"u": rng.integers(0, 70, ROWS), "g": g, "x": x, "k": k}


def _arrow(order: np.ndarray) -> Any:
    import pyarrow as pa

    cols = table_columns()
    return pa.table({name: np.asarray(col)[order] for name, col in cols.items()})


def layouts(tmp: Path) -> dict[str, Any]:
    """The same rows as pandas and Arrow frames, CSV, and Parquet files of many layouts:
    row-group sizes 1, 5 and all rows, rows in order, reversed, shuffled and sorted by ``x``
    (NaN rows together, in row groups of their own or beside finite rows whose min/max
    exclude them), several files, and a file written by DuckDB (whose statistics may hold
    NaN)."""
    import duckdb
    import pyarrow.parquet as pq

    ident = np.arange(ROWS)
    shuffled = np.random.default_rng(1).permutation(ROWS)
    by_x = np.argsort(table_columns()["x"], kind="stable")  # NaN rows last, together
    out: dict[str, Any] = {"pandas": _arrow(ident).to_pandas(), "arrow": _arrow(shuffled)}
    for name, order in (("order", ident), ("reversed", ident[::-1]), ("shuffled", shuffled),
                        ("by_x", by_x)):  # fmt: skip
        for size in (1, 5, ROWS):
            path = tmp / f"{name}_{size}.parquet"
            pq.write_table(_arrow(order), path, row_group_size=size)
            out[f"parquet {name} {size}"] = str(path)
    parts = tmp / "parts"
    parts.mkdir()
    for i, chunk in enumerate(np.array_split(shuffled, 3)):
        pq.write_table(_arrow(chunk), parts / f"part{i}.parquet", row_group_size=4)
    out["parquet parts"] = str(parts / "*.parquet")
    written = tmp / "duckdb.parquet"
    with duckdb.connect() as con:
        con.register("t", _arrow(by_x))
        con.execute(f"COPY t TO '{written}' (FORMAT parquet, ROW_GROUP_SIZE 4)")
    out["parquet duckdb"] = str(written)
    csv = tmp / "rows.csv"
    _arrow(ident).to_pandas().to_csv(csv, index=False, na_rep="nan")
    out["csv"] = (str(csv), {"u": "BIGINT", "x": "DOUBLE", "k": "DOUBLE"})
    return out


def _args(data: Any) -> tuple[Any, dict[str, Any]]:
    if isinstance(data, tuple):  # CSV: text unless declared
        return data[0], {"schema": data[1]}
    return data, {}


def recipes() -> dict[str, Callable[[Any, Any], Any]]:
    """Every recipe that reads numbers or filters rows, as ``call(data, source) -> result``."""

    def q(**kw: Any) -> Callable[[Any, Any], Any]:
        def call(data: Any, source: Any) -> Any:
            d, extra = _args(data)
            request = quantile_request("x", [0.25, 0.5, 0.75], 1.0, **kw)
            return recipe_quantile(d, request, source=source, **extra)

        return call

    def price(**kw: Any) -> Callable[[Any, Any], Any]:
        def call(data: Any, source: Any) -> Any:
            d, extra = _args(data)
            request = price_request(1.0, column="x", prices=[5, 8, 10, 12, 15], max_price=20,
                                    **kw)  # fmt: skip
            return recipe_best_price(d, request, source=source, **extra)

        return call

    def top(**kw: Any) -> Callable[[Any, Any], Any]:
        def call(data: Any, source: Any) -> Any:
            d, extra = _args(data)
            return session_top_k(d, "k", 2, 1.0, source=source, counts=True, **extra, **kw)

        return call

    def parts(**kw: Any) -> Callable[[Any, Any], Any]:
        def call(data: Any, source: Any) -> Any:
            d, extra = _args(data)
            return session_partition_selection(
                d,
                "k",
                1.0,
                1e-6,
                contributions=dp.Contributions(values_per_unit=2),
                privacy_unit="u",
                source=source,
                **extra,
                **kw,
            )

        return call

    def bounds(**kw: Any) -> Callable[[Any, Any], Any]:
        def call(data: Any, source: Any) -> Any:
            d, extra = _args(data)
            return dp.choose_bounds(d, "x", 1.0, source=source, **extra, **kw)

        return call

    unit = {"privacy_unit": "u"}
    return {
        "quantile": q(bounds=(0, 20)),
        "quantile tree": q(bounds=(0, 20), mechanism="tree"),
        "quantile joint": q(bounds=(0, 20), mechanism="joint"),
        "quantile unit max_rows=1": q(
            bounds=(0, 20), contributions=Contributions(values_per_unit=1), **unit
        ),
        "quantile unit max_rows=auto": q(
            bounds=(0, 20), contributions=Contributions(values_per_unit="auto"), **unit
        ),
        "quantile auto bounds": q(bounds="auto"),
        "quantile by public groups": q(bounds=(0, 20), by="g", groups=["a", "b", "c", "d"]),
        "quantile by public groups, unit": q(
            bounds=(0, 20),
            by="g",
            groups=["a", "b", "c", "d"],
            contributions=Contributions(values_per_unit=1),
            **unit,
        ),
        "quantile by private groups": q(bounds=(0, 20), by="g", delta=1e-6),
        "quantile by private groups, unit": q(
            bounds=(0, 20),
            by="g",
            delta=1e-6,
            contributions=Contributions(values_per_unit=2),
            **unit,
        ),
        "choose_bounds": bounds(),
        "choose_bounds unit": bounds(max_rows=2, **unit),
        "best_price": price(),
        "best_price unit": price(contributions=Contributions(values_per_unit=2), **unit),
        "top_k numbers": top(candidates=[0.0, 1.0, 2.0, 3.0, 4.0, float("nan")]),
        "top_k numbers unit": top(
            candidates=[0.0, 1.0, 2.0, 3.0, 4.0],
            contributions=dp.Contributions(values_per_unit=2),
            **unit,
        ),
        "top_k numbers unknown domain": top(delta=1e-6, **unit),
        "top_k by private groups": top(by="g", delta=1e-6, candidates=[0.0, 1.0, 2.0, 3.0]),
        "top_k by private groups, unit": top(
            by="g",
            delta=1e-6,
            candidates=[0.0, 1.0, 2.0, 3.0],
            contributions=dp.Contributions(values_per_unit=2),
            **unit,
        ),
        "partition_selection numbers": parts(),
        "partition_selection numbers by group": parts(by="g", groups=["a", "b", "c", "d"]),
    }


def release(call: Callable[[Any, Any], Any], data: Any) -> Any:
    """The release as a plain value (``to_dict()``), with a fixed seed (not private)."""
    from dpselect.sampling.source import InsecureSeededSource

    result = call(data, InsecureSeededSource(41))
    if not hasattr(result, "to_dict"):
        return result
    out = result.to_dict()
    # the row rules name the format's own rules (a CSV line that does not parse): public
    # facts of the layout, not part of the release
    out.get("parameters", {}).pop("row_rules", None)
    return out
