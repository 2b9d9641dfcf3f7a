"""Private groups on Spark (:mod:`dpselect.data.discovered_groups`): every value of ``by`` found
in the data is a group (:func:`_found_groups`), each unit keeps ``max_groups`` of them, and each
group comes back with its persons and its value counts, candidate scores or kept numbers
(:func:`discovered_value_counts`, :func:`discovered_candidate_scores`,
:func:`discovered_values`), in the order of the groups' values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ....core.errors import ParameterError
from ...discovered_groups import DiscoveredGroups, discovered_from_rows
from ...query import PrivateGroups, Query
from ...rules import check_bounded_candidates
from ..spark_session import import_pyspark as _import_pyspark
from .columns import _as_double, _capped_rows, _expr_on, _normalised, _number_kept, _unit_rows
from .grouped import _check_query, _grouped_kept, _kept_groups
from .keys import _canonical_text_sql_template, _hex_le, _packed, _salted, _value_codes
from .matching import _matching
from .progress import collect
from .rows import _kept_rows_of, _unit_numbers

if TYPE_CHECKING:
    from .table import SparkTable

__all__ = [
    "discovered_candidate_scores",
    "discovered_value_counts",
    "discovered_values",
]


# ----------------------------------------------------------------------------- found groups
# Private groups (dpselect.data.discovered_groups): every non-NULL value of ``by`` is a group,
# coded as a value with the group salt and the tag "g" (one md5 per distinct group); each unit
# keeps the max_groups groups of smallest (key of the code, rank in Spark's order of values),
# as DuckDB's plan does; the persons of a group (the units keeping it) come with its scores
# from the same aggregation, and the results are sorted by the group's value at the end.


def _found_groups(table: SparkTable, by: str, group_salt: int) -> tuple[Any, Any]:
    """(``by`` as grouped, the distinct groups ``(gv, g, gt, gk)``: value, identity,
    tie-break, code).

    The rule breaks ties of the group key by the groups' rank in the order of their values
    (:func:`dpselect.data.rules.kept_found_groups`). For one unit the key is a bijection of
    the code ``gk`` (:func:`~dpselect.data.rules.bounding_key`), so two groups tie only when
    their codes are equal, and ordering by (key, rank) is ordering by (key, ``gt``) with
    ``gt`` the group's rank among the groups *of its code* (a window partitioned by the code:
    0 for almost every group). No window over all groups (which Spark runs on one partition);
    ``g = _packed(gk, gt)`` identifies the group (a bijection of ``(gk, gt)``), and the
    results are put in the order of the values by Spark's sort (:func:`_found_result`).
    """
    sql = _import_pyspark()
    f = sql.functions
    by_type = table.require_column(by, "by")
    by_col = _normalised(f.col(by), by_type)
    g_text = _expr_on("gv", _canonical_text_sql_template(by_type))
    distinct = table.frame.where(f.col(by).isNotNull()).select(by_col.alias("gv")).distinct()
    coded = distinct.select("gv", _hex_le(f.md5(_salted(group_salt, "g", g_text)), 0).alias("gk"))
    in_code = sql.Window.partitionBy("gk").orderBy(f.col("gv").asc())
    ranked = coded.select("gv", "gk", (f.row_number().over(in_code) - f.lit(1)).alias("gt"))
    return by_col, ranked.select("gv", _packed(f.col("gk"), f.col("gt")).alias("g"), "gt", "gk")


def _found_result(
    scores: Any, pf: str, item: str, limit: int | None, ranked: Any
) -> list[tuple[int, Any, Any, int, int]]:
    """``(identity, group, item, n, persons)`` rows of the found groups, in Spark's order of
    the groups' values, then in item order (value mode: count descending then value, at most
    ``limit`` per group), sorted by Spark. ``scores``: the columns ``g`` (the identity of
    :func:`_found_groups`), ``item``, ``n`` and ``pf``, whose sum over a group is its persons
    (a window over the one aggregation, not a second one)."""
    sql = _import_pyspark()
    f = sql.functions
    persons = f.sum(pf).over(sql.Window.partitionBy("g")).cast("long")
    with_p = scores.select("g", item, "n", persons.alias("p"))
    joined = with_p.join(ranked.select("g", "gv"), on="g")
    if item == "v":
        window = sql.Window.partitionBy("g").orderBy(f.col("n").desc(), f.col("v").asc())
        joined = joined.select("*", f.row_number().over(window).alias("_r"))
        cut = 1 if limit == 0 else limit
        if cut is not None:
            joined = joined.where(f.col("_r") <= f.lit(int(min(cut, 2**31 - 1))))
        rows = collect(joined.orderBy("gv", "_r").select("g", "gv", "v", "n", "p"))
        return [(int(g), gv, v, int(n), int(p)) for g, gv, v, n, p in rows]
    rows = collect(joined.orderBy("gv", "i").select("g", "gv", "i", "n", "p"))
    return [(int(g), gv, int(i), int(n), int(p)) for g, gv, i, n, p in rows]


def discovered_value_counts(
    table: SparkTable, query: Query[PrivateGroups], limit: int | None = None
) -> DiscoveredGroups:
    """Every group of ``by`` found in the data with its persons and its values' bounded
    counts (at most ``limit`` per group), from one aggregation per unit: the rule of
    :func:`dpselect.data.discovered_scores.duckdb_discovered_value_counts`.

    Privacy
    -------
    One unit adds 1 to the persons of at most ``max_groups`` groups and changes, in each,
    at most ``max_contributions`` counts by at most ``max_rows_per_value``
    (:mod:`dpselect.data.discovered_groups`).
    """
    sql = _import_pyspark()
    f = sql.functions
    column, by, rule = query.column, query.groups.by, query.rule
    privacy_unit, salt, group_salt = rule.privacy_unit, rule.salt, rule.group_salt
    duck_type, unit_type, r = _check_query(table, query, [])
    if limit is not None and (
        isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 0
    ):
        raise ParameterError(f"limit must be None or an integer >= 0, got {limit!r}")
    by_col, ranked = _found_groups(table, by, group_salt)
    frame = table.frame
    value = _normalised(f.col(column), duck_type)
    present = f.col(column).isNotNull()
    if privacy_unit is None or unit_type is None:
        rows = frame.where(present).select(value.alias("v"), by_col.alias("gv"))
        matched = rows.join(ranked, on="gv")
        scores = matched.groupBy("g", "v").agg(f.count(f.lit(1)).alias("n"))
        scores = scores.select("g", "v", "n", f.col("n").alias("pf"))
    else:
        unit, valid = _unit_rows(frame, privacy_unit, unit_type)
        rows = frame.where(present & valid).select(
            unit.alias("u"), value.alias("v"), by_col.alias("gv")
        )
        matched = rows.join(ranked, on="gv").select("u", f.col("gt").alias("g"), "gk", "v")
        pairs = matched.groupBy("u", "g", "gk", "v").agg(_capped_rows(r)) if r > 1 else matched
        carried = ["w"] if r > 1 else []
        codes = _value_codes(matched, duck_type, salt)  # one md5 per distinct value
        coded = pairs.join(codes, on="v").select(
            "u", "g", "gk", f.col("v").alias("x"), *carried, "c"
        )
        kept = _grouped_kept(
            coded, unit_type, coded=True, weighted=r > 1, salt=salt, group_salt=group_salt,
            max_groups=int(rule.groups_per_unit), m=int(rule.values_per_unit), group_code=True,
        )  # fmt: skip
        total = f.sum("w").cast("long") if r > 1 else f.count(f.lit(1))
        scores = kept.groupBy("g", f.col("x").alias("v")).agg(
            total.alias("n"), f.sum("f").cast("long").alias("pf")
        )
    found = _found_result(scores, "pf", "v", limit, ranked)
    return discovered_from_rows(found, "values", limit != 0)


def discovered_candidate_scores(
    table: SparkTable, query: Query[PrivateGroups], candidates: Sequence[Any]
) -> DiscoveredGroups:
    """Every group of ``by`` found among the rows matching a candidate, with its persons and
    its nonzero candidate scores: the rule of
    :func:`dpselect.data.discovered_scores.duckdb_discovered_candidate_scores`.

    Privacy
    -------
    As :func:`discovered_value_counts`.
    """
    sql = _import_pyspark()
    f = sql.functions
    column, by, rule = query.column, query.groups.by, query.rule
    privacy_unit, salt, group_salt = rule.privacy_unit, rule.salt, rule.group_salt
    _, unit_type, r = _check_query(table, query, [])
    if unit_type is not None:
        check_bounded_candidates(len(candidates))
    empty = np.zeros(0, dtype=np.int64)
    nothing = DiscoveredGroups([], empty, cells=(empty, empty.copy(), empty.copy()))
    if len(candidates) == 0:
        return nothing
    col, cands = _matching(table, column, candidates)
    if cands is None:
        return nothing
    by_col, ranked = _found_groups(table, by, group_salt)
    frame = table.frame
    if privacy_unit is None or unit_type is None:
        counted = frame.select(col.alias("v"), by_col.alias("gv")).groupBy("v", "gv").count()
        matched = counted.join(cands, on="v").join(ranked, on="gv")
        scores = matched.groupBy("g", "i").agg(f.sum("count").cast("long").alias("n"))
        scores = scores.select("g", "i", "n", f.col("n").alias("pf"))
    else:
        unit, valid = _unit_rows(frame, privacy_unit, unit_type)
        rows = frame.where(valid).select(unit.alias("u"), col.alias("v"), by_col.alias("gv"))
        matched = rows.join(cands, on="v").join(ranked, on="gv")
        pairs = matched.select("u", f.col("gt").alias("g"), "gk", f.col("i").alias("x"))
        if r > 1:
            pairs = pairs.groupBy("u", "g", "gk", "x").agg(_capped_rows(r))
        kept = _grouped_kept(
            pairs, unit_type, coded=False, weighted=r > 1, salt=salt, group_salt=group_salt,
            max_groups=int(rule.groups_per_unit), m=int(rule.values_per_unit), group_code=True,
        )  # fmt: skip
        total = f.sum("w").cast("long") if r > 1 else f.count(f.lit(1))
        scores = kept.groupBy("g", f.col("x").alias("i")).agg(
            total.alias("n"), f.sum("f").cast("long").alias("pf")
        )
    found = _found_result(scores, "pf", "i", None, ranked)
    return discovered_from_rows(found, "cells")


def discovered_values(table: SparkTable, query: Query[PrivateGroups]) -> DiscoveredGroups:
    """Every group of ``by`` found among the rows holding a number, with its persons and its
    kept numbers (sorted): the rule of
    :func:`dpselect.data.discovered_scores.duckdb_discovered_values`.

    Privacy
    -------
    One unit adds 1 to the persons of at most ``max_groups`` groups and adds or removes at
    most ``max_rows`` rows in each of them.
    """
    sql = _import_pyspark()
    f = sql.functions
    column, by, rule = query.column, query.groups.by, query.rule
    privacy_unit, salt, group_salt = rule.privacy_unit, rule.salt, rule.group_salt
    duck_type, unit_type, _ = _check_query(table, query, [], numbers=True)
    by_col, ranked = _found_groups(table, by, group_salt)
    frame = table.frame
    if privacy_unit is None or unit_type is None:
        number = _as_double(f.col(column), duck_type) + f.lit(0.0)
        rows = frame.select(number.alias("x"), by_col.alias("gv"))
        rows = rows.where(_number_kept("x"))
        matched = rows.join(ranked, on="gv")
        counted = matched.groupBy("g", "x").agg(f.count(f.lit(1)).alias("w"))
        total = f.sum("w").over(sql.Window.partitionBy("g")).cast("long")
        counted = counted.select("g", "x", "w", total.alias("p"))
        return discovered_from_rows(_found_numbers(counted, ranked), "numbers")
    nums = _unit_numbers(frame, column, duck_type, privacy_unit, unit_type,
                         by_col.alias("gv"))  # fmt: skip
    matched = nums.join(ranked, on="gv").select("u", "g", "gt", "gk", "v")
    chosen = _kept_groups(matched.select("u", f.col("gt").alias("g"), "gk"), unit_type,
                          group_salt, int(rule.groups_per_unit), group_code=True)  # fmt: skip
    people = chosen.groupBy("g").agg(f.count(f.lit(1)).cast("long").alias("p"))
    in_kept = matched.select("u", "g", "v").join(chosen, on=["u", "g"], how="left_semi")
    rows_cap = int(rule.rows_per_unit)
    with _kept_rows_of(in_kept, unit_type, rows_cap, salt, within=("g",)) as kept:
        counted = kept.select("g", "x", f.col("w").cast("long").alias("w")).join(people, on="g")
        found = _found_numbers(counted, ranked)
    return discovered_from_rows(found, "numbers")


def _found_numbers(counted: Any, ranked: Any) -> list[tuple[int, Any, float, int, int]]:
    """``counted`` (``g``, ``x``, ``w``, ``p``) with each group's value ``gv``, collected in
    the order of ``(gv, x)``: the rows of :func:`discovered_values`."""
    rows_back = counted.join(ranked.select("g", "gv"), on="g").orderBy("gv", "x")
    return [(int(g), gv, float(x), int(w), int(p)) for g, gv, x, w, p in
            collect(rows_back.select("g", "gv", "x", "w", "p"))]  # fmt: skip
