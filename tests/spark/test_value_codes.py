"""The unknown-domain counts code each distinct value once and join the codes back
(``_value_codes``): the kept values stay DuckDB's, for the values whose equality and text
are delicate (``-0.0`` and ``0.0``, NaN, the infinities, text that differs only in its bytes),
with several rows per unit and per (unit, value)."""

import math

import numpy as np
import pytest

from dpselect.data.query import Query
from dpselect.data.tables import open_table
from tests.engine_rules import unit_rule

from .helpers import both

FLOATS = [0.0, -0.0, math.nan, math.inf, -math.inf, 0.25, 1e300, -2.5, 5e-324]
TEXTS = ["a", "A", "é", "e\u0301", "", " a", "a ", "\x00", "ß", "ss"]


def _rows(seed, n=400):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        user = int(rng.integers(0, 40))
        x = int(rng.integers(0, 9))
        d = FLOATS[int(rng.integers(0, len(FLOATS)))]
        s = TEXTS[int(rng.integers(0, len(TEXTS)))]
        out.append((user, x, s, d))
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_top_values_with_coded_values_equal_duckdb(spark, seed):
    arrow, frame = both(spark, _rows(seed))
    for column in ("d", "s"):
        for m, r in ((1, 1), (2, 1), (3, 2)):
            kw = {"privacy_unit": "user", "max_contributions": m, "salt": 77 + seed,
                  "max_rows_per_value": r}  # fmt: skip
            expected = open_table(arrow).counts(Query(column, unit_rule(**kw)), 1000)
            got = open_table(frame).counts(Query(column, unit_rule(**kw)), 1000)
            # NaN != NaN: compare the values by their text
            assert [(repr(v), n) for v, n in got] == [(repr(v), n) for v, n in expected], (
                column, m, r,
            )  # fmt: skip


# Two values whose 32-bit codes collide for the salt below (a birthday search over "v0",
# "v1", ...): one unit's keys of the two are then equal, and the rule keeps the smaller value
# ("v11993" < "v14855"), which the Spark plan decides by the value's rank among the values of
# its code (``_value_ids``).
COLLIDING = ("v11993", "v14855")
COLLIDING_SALT = 987654321


def test_equal_value_keys_are_broken_by_the_order_of_the_values(spark):
    from dpselect.data.rules import value_code

    low, high = COLLIDING
    assert len({value_code(COLLIDING_SALT, v, "v") for v in COLLIDING}) == 1 and low < high
    _, alone = both(spark, [(1, 0, high, 0.0), (1, 0, low, 0.0), (1, 0, high, 0.0)])
    kw = {"privacy_unit": "user", "max_contributions": 1, "salt": COLLIDING_SALT}
    assert open_table(alone).counts(Query("s", unit_rule(**kw)), 10) == [(low, 1)]
    rows = [(1, 0, high, 0.0), (1, 0, low, 0.0), (2, 0, high, 0.0), (2, 0, "w", 0.0),
            (3, 0, low, 0.0), (3, 0, high, 0.0), (3, 0, low, 0.0), (3, 0, "w", 0.0)]  # fmt: skip
    arrow, frame = both(spark, rows)
    for m, r in ((1, 1), (2, 1), (1, 2), (2, 2)):
        kw = {**kw, "max_contributions": m, "max_rows_per_value": r}
        expected = open_table(arrow).counts(Query("s", unit_rule(**kw)), 10)
        assert open_table(frame).counts(Query("s", unit_rule(**kw)), 10) == expected, (m, r)
