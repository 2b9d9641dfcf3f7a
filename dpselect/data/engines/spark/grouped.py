"""Grouped releases on Spark over a public list of groups: the scores, value counts and kept
numbers of every group from one scan (:func:`grouped_candidate_scores`,
:func:`grouped_value_counts`, :func:`grouped_values`), each unit keeping ``max_groups`` groups
by the group rule (:func:`_grouped_kept`, :func:`_kept_groups`), every rule checked from public
facts first (:func:`_check`); and :func:`group_multiplicity`, the most groups one value
matches. The rule, the plan and the privacy argument are in the comment below.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ....core.errors import ParameterError
from ...query import PublicGroups, Query
from ...rules import check_bounded_candidates, check_rows_per_value
from ..spark_session import import_pyspark as _import_pyspark
from .bounding import _smallest_per_group
from .columns import _as_double, _capped_rows, _fetch_longs, _normalised, _number_kept, _unit_rows
from .keys import (
    _codes_of_keys,
    _fmix32_steps,
    _packed,
    _per_unit_seeds,
    _unpacked,
    _value_codes,
    _with_seeds,
)
from .matching import _matching, match_multiplicity
from .progress import collect
from .rows import _kept_rows_of, _unit_numbers

if TYPE_CHECKING:
    from .table import SparkTable

__all__ = [
    "MAX_GROUPS",
    "group_multiplicity",
    "grouped_candidate_scores",
    "grouped_value_counts",
    "grouped_values",
]


# ----------------------------------------------------------------------------- grouped releases
# The four grouped methods of the Engine protocol (SparkTable delegates to the functions below).
# The rule is docs/contribution_bounding.md, "Groups per unit" (Python reference:
# dpselect.data.rules.kept_groups):
#
# 1. A row belongs to every listed group its ``by`` value matches, matched exactly as
#    candidates are matched on ``column`` (_matching: candidates cast in the driver by
#    DuckDB's TRY_CAST, numbers on text by value). Rows matching no group, no candidate
#    (candidate mode), holding a NULL value (value mode) or no number (numbers), or with a
#    NULL or NaN unit are dropped before any bounding.
# 2. With a privacy unit, the unit keeps the ``max_groups`` distinct group positions of
#    smallest bounding_key(group_salt, T(u), position); its rows in other groups are dropped;
#    in each kept group its rows are bounded by the ungrouped rule keyed by ``salt``.
#
# The plan (candidates and values): the rows joined with the broadcast group list (and the
# candidates), one groupBy(u) computing both seeds once per unit (_per_unit_seeds), the two
# keys in column arithmetic, then the choice per unit with no further shuffle (the rows stay
# partitioned by unit). For max_groups = max_contributions = 1 one aggregate per unit picks
# both: the minimum of (group key, value key) is the kept value of the kept group. Only the
# per-group results come back to the driver.
#
# Privacy (what the grouped recipes cite): a unit's kept groups and, in each, its kept values
# (or rows) are functions of that unit's rows and the salts only, so adding or removing one
# unit changes the data of at most ``max_groups`` groups, in each as the ungrouped method's
# sensitivity states (L-inf r, L1 m r, L0 m); without a unit one row touches at most
# group_multiplicity groups.

#: Group positions are 32-bit codes of the group rule: at most this many groups.
MAX_GROUPS = (1 << 32) - 1

_Int64s = npt.NDArray[np.int64]


# ----------------------------------------------------------------------------- checks
def _positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < 1:
        raise ParameterError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def _check(
    table: SparkTable,
    column: str,
    by: str,
    groups: Sequence[Any],
    privacy_unit: str | None,
    bounds: dict[str, Any],
) -> tuple[str, str | None]:
    """The column's type and the unit's type (or ``None``), every rule checked from public
    facts (the schema and the parameters) before any Spark job.

    ``bounds``: the per-unit bounds by argument name (``max_groups`` and
    ``max_contributions`` or ``max_rows``); each is an integer ``>= 1``, and without a
    privacy unit each must be 1 (each row is its own unit: it counts once in every group it
    matches), as :func:`dpselect.data.rules.check_rows_per_value` words it.
    """
    duck_type = table.require_column(column)
    table.require_column(by, "by")
    unit_type = None
    if privacy_unit is not None:
        unit_type = table.require_column(privacy_unit, "privacy_unit")
    for name, value in bounds.items():
        if _positive(value, name) != 1 and privacy_unit is None:
            raise ParameterError(
                f"{name} applies only with a privacy_unit column (without one each row is its "
                "own unit and counts once in every group it matches), got "
                f"{name}={int(value)}"
            )
    if len(groups) > MAX_GROUPS:
        raise ParameterError(
            f"groups: at most {MAX_GROUPS} (2^32 - 1) groups (the group rule codes a group by "
            f"its 32-bit position), got {len(groups)}"
        )
    return duck_type, unit_type


def _check_query(
    table: SparkTable, query: Query[Any], groups: Sequence[Any], numbers: bool = False
) -> tuple[str, str | None, int]:
    """:func:`_check` of a grouped query (public groups, or found in the data: ``groups``
    empty), and the rows per value: the bounds ``groups_per_unit`` and ``values_per_unit``
    after ``rows_per_value`` (:func:`dpselect.data.rules.check_rows_per_value`), or with
    ``numbers`` ``groups_per_unit`` and ``rows_per_unit`` (rows per value: 1)."""
    rule, r = query.rule, 1
    if numbers:
        bounds = {"max_groups": rule.groups_per_unit, "max_rows": rule.rows_per_unit}
    else:
        r = check_rows_per_value(rule.rows_per_value, rule.privacy_unit)
        bounds = {"max_groups": rule.groups_per_unit, "max_contributions": rule.values_per_unit}
    duck_type, unit_type = _check(
        table, query.column, query.groups.by, groups, rule.privacy_unit, bounds
    )
    return duck_type, unit_type, r


def _group_frame(table: SparkTable, by: str, groups: Sequence[Any]) -> tuple[Any, Any]:
    """(the ``by`` column as matched, the groups as a broadcast frame ``(gv, g)``, or
    ``None`` when no group converts): matched as candidates are (:func:`_matching`)."""
    sql = _import_pyspark()
    f = sql.functions
    col, frame = _matching(table, by, groups)
    if frame is None:
        return col, None
    return col, frame.select(f.col("v").alias("gv"), f.col("i").alias("g"))


# ----------------------------------------------------------------------------- the choice
def _grouped_kept(
    rows: Any,
    unit_type: str,
    *,
    coded: bool,
    weighted: bool,
    salt: int,
    group_salt: int,
    max_groups: int,
    m: int,
    group_code: bool = False,
) -> Any:
    """The kept ``(g, x[, w], f)`` of every unit: one row per kept (unit, group, value),
    ``f`` 1 on the first kept value of each kept (unit, group) and 0 on the others (the sum
    of ``f`` over a group is the units keeping it).

    ``group_code``: ``rows`` also has ``gk``, the group's code the group key is computed from
    (groups found in the data, :func:`_found_groups`); ``g`` is then the group's tie-break
    among the groups of its code, and the output ``g`` is the group's identity
    ``_packed(gk, g)``.

    ``rows``: columns ``u``, ``g`` (a group position), ``x`` (a candidate position, its own
    code; or with ``coded`` any value with its code in ``c``) and with ``weighted`` the
    capped rows ``w`` of a distinct (u, g, x). The group key ``kg`` is
    :func:`~dpselect.data.rules.bounding_key` of (``group_salt``, unit, ``g``), the value key
    ``k`` that of (``salt``, unit, code): the seeds of both salts come from one ``groupBy(u)``
    (:func:`_per_unit_seeds`).

    The unit keeps the ``max_groups`` groups of smallest ``pg = (kg, g)`` packed (a bijection
    of ``g`` per unit: no ties), and in each the ``m`` values of smallest ``pv`` (``(k, x)``
    packed, or the struct ``(k, x)``: the value breaks code collisions in Spark's order, as the
    ungrouped plan). ``max_groups = m = 1``: one ``min((pg, pv))`` per unit (with candidates
    and one row per candidate, the minimum of one long: :func:`_smallest_pair`). Otherwise one
    aggregate per (unit, group) (the ``m`` smallest ``pv``) and one per unit (the
    ``max_groups`` smallest ``pg``); both reuse the partitioning by unit.
    """
    sql = _import_pyspark()
    f = sql.functions
    carried = ["w"] if weighted else []
    # the group and the value's code travel as one long (a plain array per unit when that is
    # all there is): gc = (g - 2^31) 2^32 + code, code the position itself without ``coded``
    code = f.col("c") if coded else f.col("x")
    gk = ["gk"] if group_code else []
    packed = rows.select("u", _packed(f.col("g"), code).alias("gc"),
                         *(["x"] if coded else []), *gk, *carried)  # fmt: skip
    fields = ["gc", *(["x"] if coded else []), *gk, *carried]
    seeded = _per_unit_seeds(packed, unit_type, [group_salt, salt], fields)
    g = f.shiftright(f.col("gc"), 32) + f.lit(1 << 31)
    c = _unpacked(f.col("gc"))
    keyed_on = f.col("gk") if group_code else g
    # the group key: fmix32(fmix32(g xor a) xor b) with the seed of group_salt
    start = seeded.select(
        "u", g.alias("g"), (f.col("x") if coded else c).alias("x"), c.alias("c"), *carried,
        *gk, "_a1", "_b1", f.col("_b0").alias("_b"),
        keyed_on.bitwiseXOR(f.col("_a0")).alias("_x"),
    )  # fmt: skip
    grouped = _fmix32_steps(start, ["u", "g", "x", "c", *carried, *gk, "_a1", "_b1"])
    start = grouped.select(
        "u", "g", "x", *carried, *gk, f.col("k").alias("kg"),
        f.col("_b1").alias("_b"), f.col("c").bitwiseXOR(f.col("_a1")).alias("_x"),
    )  # fmt: skip
    keyed = _fmix32_steps(start, ["u", "g", "x", *carried, *gk, "kg"])
    pg = _packed(f.col("kg"), f.col("g"))
    if group_code:  # ordered by (key, tie-break), unique per unit; the identity rides along
        pg = f.struct(pg.alias("o"), _packed(f.col("gk"), f.col("g")).alias("id"))
    pv = f.struct(f.col("k"), f.col("x")) if coded else _packed(f.col("k"), f.col("x"))
    item = f.struct(pv.alias("p"), f.col("w")) if weighted else pv
    if max_groups == 1 and m == 1 and not coded and not weighted and not group_code:
        return _smallest_pair(keyed, unit_type, salt, group_salt).withColumn("f", f.lit(1))
    ranked = keyed.select("u", pg.alias("pg"), item.alias("v"))
    kept = _kept_ranked(ranked, max_groups, m)
    p = f.col("v.p") if weighted else f.col("v")
    x = p.getField("x") if coded else _unpacked(p)
    weight = [f.col("v.w").alias("w")] if weighted else []
    group = f.col("pg.id") if group_code else _unpacked(f.col("pg"))
    return kept.select(group.alias("g"), x.alias("x"), *weight, "f")


def _kept_ranked(ranked: Any, max_groups: int, m: int) -> Any:
    """``ranked`` (columns ``u``, ``pg``: a group's order in the unit, ``v``: a value's order)
    -> the kept ``(pg, v, f)``: each unit's ``max_groups`` smallest ``pg`` and in each its
    ``m`` smallest ``v``, ``f`` 1 on the first kept value of each kept (unit, group).
    ``max_groups = m = 1``: one ``min((pg, v))`` per unit; otherwise two windows."""
    sql = _import_pyspark()
    f = sql.functions
    if max_groups == 1 and m == 1:
        best = ranked.groupBy("u").agg(f.min(f.struct(f.col("pg"), f.col("v"))).alias("b"))
        return best.select(f.col("b.pg").alias("pg"), f.col("b.v").alias("v"), f.lit(1).alias("f"))
    # the groups' ranks in the unit and the values' in each group: two windows
    window = sql.Window
    in_unit = f.dense_rank().over(window.partitionBy("u").orderBy(f.col("pg").asc()))
    in_group = f.dense_rank().over(window.partitionBy("u", "pg").orderBy(f.col("v").asc()))
    both = ranked.select("u", "pg", "v", in_unit.alias("_rg"), in_group.alias("_rv"))
    chosen = both.where((f.col("_rg") <= f.lit(max_groups)) & (f.col("_rv") <= f.lit(m)))
    first = (f.col("_rv") == f.lit(1)).cast("long").alias("f")
    kept = chosen.select("u", "pg", "v", first).distinct()  # per unit: u stays
    # a one-element explode ends the lineage of pg and v (see _smallest_per_group)
    row = f.explode(f.array(f.struct("pg", "v", "f"))).alias("b")
    return kept.select(row).select("b.pg", "b.v", "b.f")


def _smallest_pair(keyed: Any, unit_type: str, salt: int, group_salt: int) -> Any:
    """``max_groups = max_contributions = 1`` with candidates, one row per candidate:
    each unit's kept ``(g, x)`` from one ``min`` of a long per unit (a code-generated hash
    aggregate, not a sort).

    ``keyed``: columns ``u``, ``kg`` (the group key) and ``k`` (the value key), 32-bit each.
    ``p = (kg - 2^31) 2^32 + k`` orders as ``(kg, k)``, and for a fixed unit ``kg`` is a
    bijection of the group position and ``k`` of the candidate position
    (:func:`dpselect.data.rules.bounding_key`), so the smallest ``p`` is the smallest value key
    in the group of smallest group key: the rule's choice. The positions are read back from
    the two keys by inverting the keys (:func:`_codes_of_keys`), with the unit's seeds computed
    again (one md5 per unit and salt).
    """
    sql = _import_pyspark()
    f = sql.functions
    both = keyed.select("u", _packed(f.col("kg"), f.col("k")).alias("p"))
    best = both.groupBy("u").agg(f.min("p").alias("p"))
    seeded = _with_seeds(best, unit_type, [group_salt, salt], ["p"])
    split = seeded.select(
        (f.shiftright(f.col("p"), 32) + f.lit(1 << 31)).alias("kg"),
        _unpacked(f.col("p")).alias("k"),
        "_a0", "_b0", "_a1", "_b1",
    )  # fmt: skip
    groups = _codes_of_keys(split, ["k", "_a1", "_b1"], "kg", "_a0", "_b0", "g")
    return _codes_of_keys(groups, ["g"], "k", "_a1", "_b1", "x")


def _kept_groups(
    ug: Any, unit_type: str, group_salt: int, max_groups: int, group_code: bool = False
) -> Any:
    """``ug`` (columns ``u``, ``g``; repeats allowed) -> the kept ``(u, g)``: each unit's
    ``max_groups`` positions of smallest :func:`~dpselect.data.rules.bounding_key`
    ``(group_salt, unit, g)`` (:func:`dpselect.data.rules.kept_groups`). ``group_code``:
    ``ug`` also has ``gk``, the code the key is computed from (groups found in the data,
    :func:`_found_groups`; ``g`` the tie-break among the groups of one code, in the order of
    their values: :func:`dpselect.data.rules.kept_found_groups`), and the output ``g`` is the
    group's identity ``_packed(gk, g)``."""
    sql = _import_pyspark()
    f = sql.functions
    gk = ["gk"] if group_code else []
    seeded = _per_unit_seeds(ug, unit_type, [group_salt], ["g", *gk])
    key_of = f.col("gk" if group_code else "g")
    start = seeded.select("u", "g", *gk, f.col("_b0").alias("_b"),
                          key_of.bitwiseXOR(f.col("_a0")).alias("_x"))  # fmt: skip
    keyed = _fmix32_steps(start, ["u", "g", *gk])
    p = _packed(f.col("k"), f.col("g"))
    if group_code:  # ordered by (key, tie-break), unique per unit; the identity rides along
        p = f.struct(p.alias("o"), _packed(f.col("gk"), f.col("g")).alias("id"))
    kept = _smallest_per_group(keyed.select("u", p.alias("p")), ["u"], max_groups)
    group = f.col("p.id") if group_code else _unpacked(f.col("p"))
    return kept.select("u", group.alias("g"))


# ----------------------------------------------------------------------------- the methods
def grouped_candidate_scores(
    table: SparkTable, query: Query[PublicGroups], candidates: Sequence[Any]
) -> tuple[_Int64s, _Int64s, _Int64s]:
    """The nonzero scores of every (group, candidate) pair as ``(g, i, n)``, sorted by
    ``(g, i)``: in each group the scores of
    :func:`~dpselect.data.engines.spark.candidate_scores` over that group's kept rows.

    Privacy
    -------
    With a privacy unit, one unit changes the scores of at most ``max_groups`` groups, each
    by at most ``max_rows_per_value`` at ``max_contributions`` candidates (the kept groups and
    values read only that unit's rows and the salts: docs/contribution_bounding.md, "Groups
    per unit" and "Sensitivity"). Without one, a row adds 1 to every (group, candidate) pair
    it matches: at most :func:`group_multiplicity` groups times the candidate multiplicity.
    """
    sql = _import_pyspark()
    f = sql.functions
    column, by, groups, rule = query.column, query.groups.by, query.groups.groups, query.rule
    privacy_unit, salt, group_salt = rule.privacy_unit, rule.salt, rule.group_salt
    _, unit_type, r = _check_query(table, query, groups)
    if unit_type is not None:
        check_bounded_candidates(len(candidates))
    empty = np.zeros(0, dtype=np.int64)
    if len(groups) == 0 or len(candidates) == 0:
        return empty, empty.copy(), empty.copy()
    col, cands = _matching(table, column, candidates)
    by_col, group_frame = _group_frame(table, by, groups)
    if cands is None or group_frame is None:
        return empty, empty.copy(), empty.copy()
    frame = table.frame
    if privacy_unit is None or unit_type is None:
        counted = frame.select(col.alias("v"), by_col.alias("gv")).groupBy("v", "gv").count()
        matched = counted.join(cands, on="v").join(group_frame, on="gv")
        scores = matched.groupBy("g", "i").agg(f.sum("count").cast("long").alias("n"))
    else:
        unit, valid = _unit_rows(frame, privacy_unit, unit_type)
        rows = frame.where(valid).select(unit.alias("u"), col.alias("v"), by_col.alias("gv"))
        matched = rows.join(cands, on="v").join(group_frame, on="gv")
        pairs = matched.select("u", "g", f.col("i").alias("x"))
        if r > 1:
            pairs = pairs.groupBy("u", "g", "x").agg(_capped_rows(r))
        kept = _grouped_kept(
            pairs, unit_type, coded=False, weighted=r > 1, salt=salt, group_salt=group_salt,
            max_groups=int(rule.groups_per_unit), m=int(rule.values_per_unit),
        )  # fmt: skip
        total = f.sum("w").cast("long") if r > 1 else f.count(f.lit(1))
        scores = kept.groupBy("g", f.col("x").alias("i")).agg(total.alias("n"))
    g, i, n = _fetch_longs(scores.select("g", "i", "n"), 3)
    order = np.lexsort((i, g))
    return g[order], i[order], n[order]


def grouped_value_counts(
    table: SparkTable, query: Query[PublicGroups], limit: int | None = None
) -> list[list[tuple[Any, int]]]:
    """For each group (list order), its values with their bounded counts, largest first, ties
    by value, at most ``limit`` (``None``: all): :func:`~dpselect.data.engines.spark.top_values`
    over each group's kept rows. The per-group limit is a window over the aggregated
    ``(group, value, count)`` rows (ordered by count, then value: unique within a group).

    Privacy
    -------
    As :func:`grouped_candidate_scores` with every non-NULL value a candidate: one unit
    changes at most ``max_groups`` groups, in each at most ``max_contributions`` counts by at
    most ``max_rows_per_value`` (docs/contribution_bounding.md, "Groups per unit").
    """
    sql = _import_pyspark()
    f = sql.functions
    column, by, groups, rule = query.column, query.groups.by, query.groups.groups, query.rule
    privacy_unit, salt, group_salt = rule.privacy_unit, rule.salt, rule.group_salt
    duck_type, unit_type, r = _check_query(table, query, groups)
    if limit is not None and (
        isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 0
    ):
        raise ParameterError(f"limit must be None or an integer >= 0, got {limit!r}")
    out: list[list[tuple[Any, int]]] = [[] for _ in groups]
    if len(groups) == 0 or limit == 0:
        return out
    by_col, group_frame = _group_frame(table, by, groups)
    if group_frame is None:
        return out
    frame = table.frame
    value = _normalised(f.col(column), duck_type)
    present = f.col(column).isNotNull()
    if privacy_unit is None or unit_type is None:
        rows = frame.where(present).select(value.alias("v"), by_col.alias("gv"))
        matched = rows.join(group_frame, on="gv")
        counted = matched.groupBy("g", "v").agg(f.count(f.lit(1)).alias("n"))
    else:
        unit, valid = _unit_rows(frame, privacy_unit, unit_type)
        rows = frame.where(present & valid).select(
            unit.alias("u"), value.alias("v"), by_col.alias("gv")
        )
        matched = rows.join(group_frame, on="gv").select("u", "g", "v")
        # r = 1: no DISTINCT (u, g, v) first: the choice is the same over duplicate rows (a
        # minimum, or a set), and it would shuffle the rows once more (10^6 rows, 10^5 units:
        # 5.7 s against 11.6 s with the DISTINCT, local[2])
        pairs = matched.groupBy("u", "g", "v").agg(_capped_rows(r)) if r > 1 else matched
        carried = ["w"] if r > 1 else []
        codes = _value_codes(matched, duck_type, salt)  # one md5 per distinct value
        coded = pairs.join(codes, on="v").select("u", "g", f.col("v").alias("x"), *carried, "c")
        kept = _grouped_kept(
            coded, unit_type, coded=True, weighted=r > 1, salt=salt, group_salt=group_salt,
            max_groups=int(rule.groups_per_unit), m=int(rule.values_per_unit),
        )  # fmt: skip
        total = f.sum("w").cast("long") if r > 1 else f.count(f.lit(1))
        counted = kept.groupBy("g", f.col("x").alias("v")).agg(total.alias("n"))
    # each group's rank of (count desc, value): Spark's order of values, then no global sort
    window = sql.Window.partitionBy("g").orderBy(f.col("n").desc(), f.col("v").asc())
    ranked = counted.select("g", "v", "n", f.row_number().over(window).alias("_r"))
    if limit is not None:
        ranked = ranked.where(f.col("_r") <= f.lit(int(min(limit, 2**31 - 1))))
    found = sorted((int(g), int(rank), v, int(n)) for g, v, n, rank in collect(ranked))
    for g, _, v, n in found:
        out[g].append((v, n))
    return out


def grouped_values(table: SparkTable, query: Query[PublicGroups]) -> list[npt.NDArray[np.float64]]:
    """For each group (list order), the numbers of ``column`` its kept rows hold (a multiset,
    in no particular order), read as :meth:`SparkTable.numbers` reads them (a double
    plus ``0.0``; NULL, NaN and text that is no number dropped). With ``privacy_unit`` each
    unit keeps ``max_groups`` groups (:func:`_kept_groups`), then at most ``max_rows`` rows in
    each (:func:`~dpselect.data.engines.spark._kept_rows_of`, the rule of
    :func:`dpselect.data.rules.kept_rows` per (unit, group)). Only one ``(group, number,
    rows)`` per distinct number of a group comes back to the driver.

    Privacy
    -------
    One unit adds or removes at most ``max_rows`` rows in each of at most ``max_groups``
    groups (its kept groups and rows read only its rows and the salts;
    docs/contribution_bounding.md, "Rows per unit" and "Groups per unit"); without a unit a
    row is in at most :func:`group_multiplicity` groups.
    """
    sql = _import_pyspark()
    f = sql.functions
    column, by, groups, rule = query.column, query.groups.by, query.groups.groups, query.rule
    privacy_unit, salt, group_salt = rule.privacy_unit, rule.salt, rule.group_salt
    duck_type, unit_type, _ = _check_query(table, query, groups, numbers=True)
    out: list[npt.NDArray[np.float64]] = [np.zeros(0, dtype=np.float64) for _ in groups]
    if len(groups) == 0:
        return out
    by_col, group_frame = _group_frame(table, by, groups)
    if group_frame is None:
        return out
    frame = table.frame
    if privacy_unit is None or unit_type is None:
        number = _as_double(f.col(column), duck_type) + f.lit(0.0)
        rows = frame.select(number.alias("x"), by_col.alias("gv"))
        rows = rows.where(_number_kept("x"))
        matched = rows.join(group_frame, on="gv")
        counted = matched.groupBy("g", "x").agg(f.count(f.lit(1)).alias("w"))
        collected = collect(counted)
    else:
        nums = _unit_numbers(frame, column, duck_type, privacy_unit, unit_type,
                             by_col.alias("gv"))  # fmt: skip
        matched = nums.join(group_frame, on="gv").select("u", "g", "v")
        chosen = _kept_groups(
            matched.select("u", "g"), unit_type, group_salt, int(rule.groups_per_unit)
        )
        in_kept = matched.join(chosen, on=["u", "g"], how="left_semi")
        rows_cap = int(rule.rows_per_unit)
        with _kept_rows_of(in_kept, unit_type, rows_cap, salt, within=("g",)) as kept:
            collected = collect(kept.select("g", "x", f.col("w").cast("long").alias("w")))
    found: dict[int, list[tuple[float, int]]] = {}
    for g, x, w in collected:
        found.setdefault(int(g), []).append((float(x), int(w)))
    for g, items in found.items():
        values = np.asarray([x for x, _ in items], dtype=np.float64)
        out[g] = np.repeat(values, np.asarray([w for _, w in items], dtype=np.int64))
    return out


def group_multiplicity(table: SparkTable, by: str, groups: Sequence[Any]) -> int:
    """The most groups of the list one value of ``by`` matches (at least 1; an empty list:
    1), by Spark's matching of the grouped methods
    (:func:`~dpselect.data.engines.spark.match_multiplicity` of the group list on ``by``):
    from the schema and the list only, no row read.

    Privacy
    -------
    Without a privacy unit one row is in every group its value matches, so it changes the
    data of at most this many groups: the number the grouped recipes compose over.
    """
    table.require_column(by, "by")
    if len(groups) > MAX_GROUPS:
        raise ParameterError(f"groups: at most {MAX_GROUPS} (2^32 - 1) groups, got {len(groups)}")
    if len(groups) == 0:
        return 1
    return match_multiplicity(table, by, groups)
