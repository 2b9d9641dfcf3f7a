"""Issue 41, part 2: every recipe plans before it charges.

A matrix of public recipes (auto options, ``by=``, a privacy unit) x epsilons x deltas: each
call releases, or refuses with a dpselect error before the ledger moves, within seconds; and
every combination releases at epsilon 1.
"""

from __future__ import annotations

import os
import signal
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpselect as dp
from dpselect.core.errors import DPSelectError
from dpselect.sampling import InsecureSeededSource

EPSILONS = [5e-324, 1e-300, 1e-20, 1e-9, 1.0, 1e6, 1e300]
DELTAS = [None, 1e-300, 1e-6]
SECONDS = int(os.environ.get("DPSELECT_PLAN_SECONDS", "20"))


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 300
    return pd.DataFrame(
        {
            "user": [f"u{i % 60}" for i in range(n)],
            "group": [f"g{i % 3}" for i in range(n)],
            "word": [f"w{int(v)}" for v in rng.zipf(1.6, n) % 12],
            "value": rng.normal(50.0, 10.0, n).round(2),
            "price": rng.uniform(0.0, 1.0, n).round(3),
        }
    )


FRAME = _frame()


def _call(name: str, eps: float, delta: float | None, book: Any) -> Any:
    src = InsecureSeededSource(1)
    common: dict[str, Any] = {"ledger": book, "source": src}
    f = FRAME
    if name.startswith("top_k"):
        kw: dict[str, Any] = dict(common)
        if delta is not None:
            kw["delta"] = delta
        if "unit" in name:
            kw["privacy_unit"] = "user"
        if "auto" in name:
            kw["max_contributions"] = "auto"
        if "gumbel" in name:
            kw["mechanism"] = "gumbel"
        if "by" in name:
            kw["by"] = "group"
        if "cand" in name or "auto" in name:
            kw["candidates"] = [f"w{i}" for i in range(12)]
        elif delta is None:
            return None  # values from the data need delta > 0
        return dp.top_k(f, "word", 3, eps, **kw)
    if name.startswith("partition_selection"):
        kw = dict(common)
        if "unit" in name:
            kw["privacy_unit"] = "user"
        return dp.partition_selection(f, "word", eps, 1e-6 if delta is None else delta, **kw)
    if name.startswith("quantile"):
        kw = dict(common)
        if ("by" in name) == (delta is None):
            return None  # delta applies to quantile only (and always) with by, private groups
        if delta is not None:
            kw["delta"] = delta
        kw["bounds"] = (0.0, 100.0)
        if "autobounds" in name:
            kw["bounds"] = "auto"
        if "cand" in name:
            kw.pop("bounds")
            kw["candidates"] = list(range(0, 101, 5))
        if "unit" in name:
            kw["privacy_unit"] = "user"
        if "autorows" in name:
            kw["privacy_unit"] = "user"
            kw["max_rows"] = "auto"
            kw["auto_fraction"] = 0.5
        if "recursive" in name:
            kw["mechanism"] = "recursive"
        if "tree" in name:
            kw["mechanism"] = "tree"
        if "by" in name:
            kw["by"] = "group"
        return dp.quantile(f, "value", 0.5, eps, **kw)
    if delta is not None:
        return None  # the pure-DP recipes below take no delta
    if name.startswith("best_price"):
        kw = dict(common)
        if "alpha" in name:
            kw["alpha"] = 0.1
        else:
            kw["prices"] = [0.1, 0.3, 0.5, 0.7, 0.9]
        if "unit" in name:
            kw.update(column="price", privacy_unit="user", max_rows=2)
            return dp.best_price(f, eps, **kw)
        return dp.best_price(f["price"].to_numpy(), eps, **kw)
    if name == "select":
        return dp.select(
            [10.0, 40.0, 50.0, 60.0], lambda c, d: -float(np.abs(d - c).sum()) / len(d),
            f["value"].to_numpy(), eps, sensitivity=100.0 / len(f), **common,
        )  # fmt: skip
    if name == "choose_bounds":
        return dp.choose_bounds(f, "value", eps, **common)
    if name == "choose_max_contributions":
        return dp.choose_max_contributions(f, "word", "user", eps, **common)
    raise AssertionError(name)


RECIPES = [
    "top_k", "top_k_unit", "top_k_unit_auto", "top_k_unit_auto_gumbel", "top_k_cand",
    "top_k_by", "partition_selection", "partition_selection_unit",
    "quantile", "quantile_unit", "quantile_autobounds", "quantile_autobounds_unit",
    "quantile_autorows", "quantile_cand", "quantile_recursive", "quantile_tree",
    "quantile_by", "best_price", "best_price_alpha", "best_price_unit", "select",
    "choose_bounds", "choose_max_contributions",
]  # fmt: skip

# Combinations still failing (issue 41 part 2, to fix): name -> reason.
HANG = "the optimal partition-selection table loops (delta 1e-300) past the time limit"
KNOWN: dict[tuple[str, float, float | None], str] = {
    (name, 1.0, 1e-300): HANG
    for name in ("top_k_by", "partition_selection", "partition_selection_unit", "quantile_by")
}

RAW = "a raw Python error (OverflowError, ZeroDivisionError) instead of a dpselect refusal"
CHARGED = "refused after the ledger was charged"
SLOW = "no answer within the time limit (a hang, or slow planning at an extreme epsilon)"
# Found by the slow run (DPSELECT_PLAN_SECONDS=4) on 2026-12-06; to fix (issue 41 part 2).
FOUND: dict[str, str] = {
    "top_k-5e-324-1e-300": RAW,
    "top_k-5e-324-1e-06": RAW,
    "top_k-1e-09-1e-300": SLOW,
    "top_k_unit-5e-324-1e-300": RAW,
    "top_k_unit-5e-324-1e-06": RAW,
    "top_k_unit-1e-09-1e-300": SLOW,
    "top_k_unit_auto-5e-324-None": RAW,
    "top_k_unit_auto-5e-324-1e-300": RAW,
    "top_k_unit_auto-5e-324-1e-06": RAW,
    "top_k_unit_auto-1e-300-1e-300": SLOW,
    "top_k_unit_auto-1e-300-1e-06": SLOW,
    "top_k_unit_auto-1e-20-1e-06": SLOW,
    "top_k_unit_auto-1e+300-1e-300": RAW,
    "top_k_unit_auto-1e+300-1e-06": RAW,
    "top_k_unit_auto_gumbel-5e-324-None": RAW,
    "top_k_unit_auto_gumbel-5e-324-1e-300": RAW,
    "top_k_unit_auto_gumbel-5e-324-1e-06": RAW,
    "top_k_unit_auto_gumbel-1e-300-None": RAW,
    "top_k_unit_auto_gumbel-1e-300-1e-300": SLOW,
    "top_k_unit_auto_gumbel-1e-300-1e-06": SLOW,
    "top_k_unit_auto_gumbel-1e-20-1e-06": SLOW,
    "top_k_unit_auto_gumbel-1e+300-None": RAW,
    "top_k_unit_auto_gumbel-1e+300-1e-300": RAW,
    "top_k_unit_auto_gumbel-1e+300-1e-06": RAW,
    "top_k_cand-5e-324-None": RAW,
    "top_k_cand-5e-324-1e-300": SLOW,
    "top_k_cand-5e-324-1e-06": SLOW,
    "top_k_cand-1e-300-1e-300": SLOW,
    "top_k_cand-1e-300-1e-06": SLOW,
    "top_k_cand-1e-20-1e-06": SLOW,
    "top_k_cand-1e+300-1e-300": RAW,
    "top_k_cand-1e+300-1e-06": RAW,
    "top_k_by-1000000.0-1e-300": SLOW,
    "top_k_by-1000000.0-1e-06": SLOW,
    "partition_selection-1000000.0-None": SLOW,
    "partition_selection-1000000.0-1e-300": SLOW,
    "partition_selection-1000000.0-1e-06": SLOW,
    "partition_selection-1e+300-None": SLOW,
    "partition_selection-1e+300-1e-300": SLOW,
    "partition_selection-1e+300-1e-06": SLOW,
    "partition_selection_unit-1000000.0-None": SLOW,
    "partition_selection_unit-1000000.0-1e-300": SLOW,
    "partition_selection_unit-1000000.0-1e-06": SLOW,
    "partition_selection_unit-1e+300-None": SLOW,
    "partition_selection_unit-1e+300-1e-300": SLOW,
    "partition_selection_unit-1e+300-1e-06": SLOW,
    "quantile_autobounds-5e-324-None": RAW,
    "quantile_autobounds-1e-300-None": CHARGED,
    "quantile_autobounds-1e-20-None": CHARGED,
    "quantile_autobounds_unit-5e-324-None": RAW,
    "quantile_autobounds_unit-1e-300-None": CHARGED,
    "quantile_autobounds_unit-1e-20-None": CHARGED,
    "quantile_autorows-5e-324-None": RAW,
    "quantile_autorows-1e-300-None": RAW,
    "quantile_autorows-1e-20-None": CHARGED,
    "quantile_autorows-1e-09-None": CHARGED,
    "quantile_cand-5e-324-None": RAW,
    "quantile_recursive-5e-324-None": CHARGED,
    "quantile_recursive-1e-300-None": CHARGED,
    "quantile_recursive-1e-20-None": CHARGED,
    "quantile_tree-1e+300-None": CHARGED,
    "quantile_by-1000000.0-1e-300": SLOW,
    "quantile_by-1000000.0-1e-06": SLOW,
    "quantile_by-1e+300-1e-300": SLOW,
    "quantile_by-1e+300-1e-06": SLOW,
    "best_price-5e-324-None": CHARGED,
    "best_price_alpha-5e-324-None": CHARGED,
    "best_price_unit-5e-324-None": CHARGED,
    "select-5e-324-None": CHARGED,
    "choose_bounds-5e-324-None": RAW,
    "choose_max_contributions-5e-324-None": RAW,
    "choose_max_contributions-1e-300-None": RAW,
}


def _alarm(signum: int, frame: Any) -> None:
    raise TimeoutError(f"no answer within {SECONDS} s")


def _params() -> list[Any]:
    out = []
    for name in RECIPES:
        for eps in EPSILONS:
            for delta in DELTAS:
                marks = []
                ident = f"{name}-{eps}-{delta}"
                reason = KNOWN.get((name, eps, delta)) or FOUND.get(ident)
                if reason is not None:
                    # a time-out at 4 s may answer within 20 s: not strict
                    strict = reason != SLOW
                    marks.append(pytest.mark.xfail(strict=strict, reason=reason))
                if eps != 1.0 or reason is not None:
                    marks.append(pytest.mark.slow)
                out.append(pytest.param(name, eps, delta, marks=marks, id=ident))
    return out


@pytest.mark.parametrize(("name", "eps", "delta"), _params())
def test_release_or_refuse_before_charge(tmp_path: Any, name: str, eps: float, delta: Any) -> None:
    book = dp.Ledger.create(tmp_path / "l.db", 1e308, 0.5)
    before = book.spent()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(SECONDS)
    try:
        result = _call(name, eps, delta, book)
    except DPSelectError:
        assert book.spent() == before, "refused after the ledger was charged"
        if eps == 1.0:
            raise
        return
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    if result is not None:
        assert book.spent() != before
