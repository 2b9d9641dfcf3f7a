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
from dpselect.planning.contributions import Contributions
from dpselect.planning.price_request import price_request
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes.pricing import best_price as recipe_best_price
from dpselect.recipes.quantiles import quantile as recipe_quantile
from dpselect.sampling import InsecureSeededSource
from tests.session_queries import session_partition_selection, session_top_k

# the epsilons, and both ends of the range a recipe accepts (2^-20 and 2^20)
EPSILONS = [5e-324, 1e-300, 1e-20, 1e-9, 2.0**-20, 1.0, 1e6, 2.0**20, 1e300]
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


def _train(config: int, rho: float) -> Any:
    """A rho-zCDP run for :func:`dpselect.tune`: ``config * x`` plus discrete Gaussian noise
    (the count's sensitivity ``config``)."""
    import math

    import dpselect.core as dc
    from dpselect.mechanisms.gaussian import make_gaussian

    sigma = config / math.sqrt(2 * rho) * (1 + 1e-9)
    noisy = make_gaussian(dc.atom_domain(int), dc.L1Distance(), sigma,
                          source=InsecureSeededSource(config))  # fmt: skip
    return dc.Measurement(
        dc.AnyDomain(), dc.SymmetricDistance(), dc.ZeroConcentratedDivergence(),
        lambda x: (noisy(config * x), f"model-{config}"), lambda d: noisy.map(config * d),
    )  # fmt: skip


def _call(name: str, eps: float, delta: float | None, book: Any, frame: Any = None) -> Any:
    """One call of the matrix (``frame``: the table, default :data:`FRAME`; a Spark frame of
    the same rows for tests/spark/test_plan_before_charge.py)."""
    src = InsecureSeededSource(1)
    common: dict[str, Any] = {"ledger": book, "source": src}
    f = FRAME if frame is None else frame
    if name.startswith("top_k"):
        kw: dict[str, Any] = dict(common)
        if delta is not None:
            kw["delta"] = delta
        if "unit" in name:
            kw["privacy_unit"] = "user"
        if "auto" in name:
            kw["contributions"] = dp.Contributions(values_per_unit="auto")
        if "gumbel" in name:
            kw["mechanism"] = "gumbel"
        if "joint" in name:
            kw["mechanism"] = "joint"
        if "by" in name:
            kw["by"] = "group"
        if "cand" in name or "auto" in name:
            kw["candidates"] = [f"w{i}" for i in range(12)]
        elif delta is None:
            return None  # values from the data need delta > 0
        return session_top_k(f, "word", 3, eps, **kw)
    if name.startswith("partition_selection"):
        kw = dict(common)
        if "unit" in name:
            kw["privacy_unit"] = "user"
        return session_partition_selection(f, "word", eps, 1e-6 if delta is None else delta, **kw)
    if name.startswith("quantile"):
        kw = {}
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
            kw["contributions"] = Contributions(values_per_unit="auto", auto_share=0.5)
        if "recursive" in name:
            kw["mechanism"] = "recursive"
        if "tree" in name:
            kw["mechanism"] = "tree"
        if "by" in name:
            kw["by"] = "group"
        return recipe_quantile(f, quantile_request("value", 0.5, eps, **kw), **common)
    if name == "tune":
        if delta is None:
            return None  # tune is (epsilon, delta)-DP: delta > 0
        return dp.tune(_train, [1, 2, 3], eps, data=100, delta=delta, **common)
    if delta is not None:
        return None  # the pure-DP recipes below take no delta
    if name.startswith("select_hypothesis"):
        values = f["value"].to_numpy()
        predictions = np.array([(values > t).astype(int) for t in (40.0, 50.0, 60.0)])
        unit = {"privacy_unit": f["user"].to_numpy(), "max_rows": 2} if "unit" in name else {}
        return dp.select_hypothesis(None, (values > 50.0).astype(int), predictions, epsilon=eps,
                                    **unit, **common)  # fmt: skip
    if name.startswith("best_price"):
        kw = {}
        if "alpha" in name:
            kw["price_step"] = 0.1
        else:
            kw["prices"] = [0.1, 0.3, 0.5, 0.7, 0.9]
        if "unit" in name:
            bids = Contributions(values_per_unit=2)
            kw.update(column="price", privacy_unit="user", contributions=bids)
            return recipe_best_price(f, price_request(eps, **kw), **common)
        return recipe_best_price(f["price"].to_numpy(), price_request(eps, **kw), **common)
    if name == "select":
        return dp.select(
            [10.0, 40.0, 50.0, 60.0], lambda c, d: -float(np.abs(d - c).sum()) / len(d),
            f["value"].to_numpy(), epsilon=eps, sensitivity=100.0 / len(f), **common,
        )  # fmt: skip
    if name == "choose_bounds":
        return dp.choose_bounds(f, "value", eps, **common)
    if name == "choose_max_contributions":
        return dp.choose_max_contributions(f, "word", "user", epsilon=eps, **common)
    raise AssertionError(name)


RECIPES = [
    "top_k", "top_k_unit", "top_k_unit_auto", "top_k_unit_auto_gumbel", "top_k_cand",
    "top_k_cand_joint",
    "top_k_by", "partition_selection", "partition_selection_unit",
    "quantile", "quantile_unit", "quantile_autobounds", "quantile_autobounds_unit",
    "quantile_autorows", "quantile_cand", "quantile_recursive", "quantile_tree",
    "quantile_by", "best_price", "best_price_alpha", "best_price_unit", "select",
    "choose_bounds", "choose_max_contributions", "select_hypothesis", "select_hypothesis_unit",
    "tune",
]  # fmt: skip

# Every combination of the matrix releases or refuses before the charge (issue 41 part 2):
# the range of epsilon (dpselect/planning/epsilon_range.py), the partition-selection table at
# any large epsilon and tiny delta, the unknown-domain planner's closed forms, and the group
# selection's share checked before the charge. None is left to mark.


def _alarm(signum: int, frame: Any) -> None:
    raise TimeoutError(f"no answer within {SECONDS} s")


def _params() -> list[Any]:
    out = []
    for name in RECIPES:
        for eps in EPSILONS:
            for delta in DELTAS:
                marks = [] if eps == 1.0 else [pytest.mark.slow]
                ident = f"{name}-{eps}-{delta}"
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
