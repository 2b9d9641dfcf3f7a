"""Contribution bounding of distinct values on Spark: the values each unit keeps, the ``m`` of
smallest key (:func:`_kept_per_user`, on candidate positions or coded values;
:func:`_kept_ids_per_user`, on the identities of the unknown-domain path), and the choice of the
``m`` smallest per group that every per-unit choice uses (:func:`_smallest_per_group`: a
``min``, a sorted set when a public number bounds a unit's items, :data:`ARRAY_CANDIDATES`,
otherwise a window that never holds a unit's rows in one array).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..spark_session import import_pyspark as _import_pyspark
from .keys import (
    _codes_of_keys,
    _fmix32_steps,
    _packed,
    _per_unit_seeds,
    _unit_item_seeds,
    _unpacked,
)

__all__ = [
    "ARRAY_CANDIDATES",
]


#: With at most this many public candidates a unit holds at most this many distinct items,
#: and the candidate plan gathers them in one array per unit (:func:`_kept_per_user`): at
#: most a few MB per unit in a task, whatever the rows.
ARRAY_CANDIDATES = 100_000


def _kept_per_user(
    rows: Any,
    unit_type: str,
    salt: int,
    m: int,
    coded: bool = False,
    weighted: bool = False,
    candidates: int | None = None,
    units: Any = None,
) -> Any:
    """The values each user keeps (column ``x``, one row per kept (user, value)).

    ``weighted``: ``rows`` are distinct (user, value) pairs with a column ``w`` (the user's
    rows with the value, capped: ``max_rows_per_value``), carried to the output beside
    ``x``; the choice is the same (it reads distinct values only).

    ``rows``: columns ``u`` (the unit as grouped) and ``x`` (a candidate position, its own
    code; or with ``coded``, any value, and its code in column ``c``, the value itself carried
    through the choice: the unknown-domain path chooses on longs instead,
    :func:`_kept_ids_per_user`). The rule of
    :func:`dpselect.data.scores.bounding_key`: each user keeps the ``m`` distinct values of
    smallest ``(key, x)``, ``key = fmix32(fmix32(code xor a) xor b)``, ``(a, b)`` the seed of
    the user.

    The plan: each user's seed (an md5) computed once per user, not per row; the key in
    plain column arithmetic (code-generated), one projection per step
    (:func:`_fmix32_steps`); then the ``m`` smallest per user. With ``candidates`` (the
    public list's length) at most :data:`ARRAY_CANDIDATES`, a user holds at most that many
    distinct items, and one ``groupBy(u)`` collects them as a set: the seed from it, the
    items exploded again (still partitioned by user), and the ``m`` smallest from a sorted
    set per user (:func:`_unit_item_seeds`; 1.2-1.8x faster than the plan for any number of
    items, docs/performance.md, "Memory per unit"). Otherwise no array at all: the seeds
    joined back (:func:`_per_unit_seeds`) and a window (:func:`_smallest_per_group`).
    The same kept values either way.

    ``units``: a frame whose column ``u`` holds every unit of ``rows`` (and maybe more), the
    seeds' units in the plan without arrays (:func:`_per_unit_seeds`); ``None``: ``rows``.
    """
    sql = _import_pyspark()
    f = sql.functions
    fields = ["x", *(["c"] if coded else []), *(["w"] if weighted else [])]
    few = candidates is not None and candidates <= ARRAY_CANDIDATES
    if few:
        seeded = _unit_item_seeds(rows, unit_type, [salt], fields)
    else:
        seeded = _per_unit_seeds(rows, unit_type, [salt], fields, units=units)

    def smallest(packed: Any, m: int) -> Any:
        return _smallest_per_group(packed, ["u"], m, in_array=few).select("p")

    code = "c" if coded else "x"  # without a code column, the candidate position itself
    carried = ["w"] if weighted else []
    a, b = f.col("_a0"), f.col("_b0")
    start = seeded.select("u", "x", *carried, b.alias("_b"), f.col(code).bitwiseXOR(a).alias("_x"))
    keyed = _fmix32_steps(start, ["u", "x", *carried])
    if weighted:  # (p, w) ordered by p: p is distinct per user (distinct pairs)
        if coded:
            p = f.struct(f.struct(f.col("k"), f.col("x")).alias("p"), f.col("w"))
            ranked = keyed.select("u", p.alias("p"))
            kept = smallest(ranked, m)
            return kept.select(f.col("p.p.x").alias("x"), f.col("p.w").alias("w"))
        p = f.struct(_packed(f.col("k"), f.col("x")).alias("p"), f.col("w"))
        kept = smallest(keyed.select("u", p.alias("p")), m)
        return kept.select(_unpacked(f.col("p.p")).alias("x"), f.col("p.w").alias("w"))
    if not coded:
        ranked = keyed.select("u", _packed(f.col("k"), f.col("x")).alias("p"))
        return smallest(ranked, m).select(_unpacked(f.col("p")).alias("x"))
    # (key, value): the value breaks ties of the 32-bit codes, in Spark's order
    ranked = keyed.select("u", f.struct(f.col("k"), f.col("x")).alias("p"))
    return smallest(ranked, m).select(f.col("p.x").alias("x"))


def _kept_ids_per_user(rows: Any, unit_type: str, salt: int, m: int, weighted: bool) -> Any:
    """The values each user keeps, as their identities ``x`` of :func:`_value_ids` (one row
    per kept (user, value); with ``weighted`` the column ``w`` of the distinct (user, value)
    rows carried): the rule of :func:`_kept_per_user` with ``coded=True``.

    ``rows``: columns ``u``, ``x`` (``_packed(c, t)``: the code ``c`` and the tie-break
    ``t``) and with ``weighted`` ``w``. Each user's seed comes from one ``groupBy(u)``
    (:func:`_per_unit_seeds`); the key ``k`` of the code in column arithmetic; the user keeps
    the ``m`` smallest ``_packed(k, t)`` (longs: a code-generated ``min`` for ``m = 1``, a
    sorted set of longs otherwise), grouped by the unit and its seed halves (the rows are
    partitioned by unit already: no shuffle), and the kept codes are read back from the keys
    with the seed (:func:`_codes_of_keys`, the inverse of the key for a fixed unit).
    """
    sql = _import_pyspark()
    f = sql.functions
    carried = ["w"] if weighted else []
    seeded = _per_unit_seeds(rows, unit_type, [salt], ["x", *carried])
    code = f.shiftright(f.col("x"), 32) + f.lit(1 << 31)
    start = seeded.select(
        "u", "_a0", "_b0", _unpacked(f.col("x")).alias("t"), *carried,
        f.col("_b0").alias("_b"), code.bitwiseXOR(f.col("_a0")).alias("_x"),
    )  # fmt: skip
    keyed = _fmix32_steps(start, ["u", "_a0", "_b0", "t", *carried])
    p = _packed(f.col("k"), f.col("t"))
    item = f.struct(p.alias("p"), f.col("w")) if weighted else p
    ranked = keyed.select("u", "_a0", "_b0", item.alias("p"))
    kept = _smallest_per_group(ranked, ["u", "_a0", "_b0"], m)
    packed = f.col("p.p") if weighted else f.col("p")
    split = kept.select(
        "_a0", "_b0", *([f.col("p.w").alias("w")] if weighted else []),
        (f.shiftright(packed, 32) + f.lit(1 << 31)).alias("k"), _unpacked(packed).alias("t"),
    )  # fmt: skip
    codes = _codes_of_keys(split, ["t", *carried], "k", "_a0", "_b0", "c")
    return codes.select(_packed(f.col("c"), f.col("t")).alias("x"), *carried)


def _smallest_per_group(
    ranked: Any, by: Sequence[str], m: int, every_row: bool = False, in_array: bool = False
) -> Any:
    """``ranked`` (columns ``by`` and ``p``, a sortable column) -> the ``m`` smallest ``p`` of
    each ``by``, as rows ``(*by, p)``: distinct ``p`` (equal ``p`` are one item: the choice of
    distinct values and groups), or with ``every_row`` the first ``m`` rows in the order of
    ``p`` (equal ``p`` are rows each: the rule of rows per unit). All of them for groups with
    at most ``m``.

    ``in_array`` (distinct only, where a public number bounds a group's items:
    :data:`ARRAY_CANDIDATES`): the sorted set of the group's ``p``, sliced.

    ``m = 1``: a ``min`` per group (a code-generated hash aggregation). Otherwise a window
    per group ordered by ``p`` (``dense_rank``, then the distinct rows; ``row_number`` for
    ``every_row``) filtered to the first ``m``, which Spark runs as a sort with a group limit
    (``WindowGroupLimit``): a group's rows are sorted and streamed, spilled to disk when they
    are many, never held in one array (a sorted ``collect_set``/``collect_list`` ran a JVM of
    1 GB out of memory on one unit of 10^7 rows). When ``ranked`` is partitioned by a
    subset of ``by`` (the unit, after :func:`_per_unit_seeds`), no shuffle.

    The kept ``p`` pass through a one-element ``explode``: it ends the lineage Spark's
    dynamic partition pruning follows from a later join key back through the projections of
    the key (:func:`_fmix32_steps`), where it inlined every step and grew the expression
    exponentially (the optimizer ran out of memory before the query ran).
    """
    sql = _import_pyspark()
    f = sql.functions
    if m == 1:
        kept = ranked.groupBy(*by).agg(f.min("p").alias("p"))
    elif in_array and not every_row:
        smallest = f.slice(f.sort_array(f.collect_set("p")), 1, int(m))
        kept = ranked.groupBy(*by).agg(smallest.alias("ps")).select(*by, f.explode("ps").alias("p"))
    else:
        order = sql.Window.partitionBy(*by).orderBy(f.col("p").asc())
        rank = (f.row_number() if every_row else f.dense_rank()).over(order)
        kept = ranked.select(*by, "p", rank.alias("_r")).where(f.col("_r") <= f.lit(int(m)))
        kept = kept.select(*by, "p")
        if not every_row:
            kept = kept.distinct()
    return kept.select(*by, f.explode(f.array("p")).alias("p"))
