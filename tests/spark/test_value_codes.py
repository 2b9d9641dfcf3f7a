"""The unknown-domain counts code each distinct value once and join the codes back
(``_value_codes``): the kept values stay DuckDB's, for the values whose equality and text
are delicate (``-0.0`` and ``0.0``, NaN, the infinities, text that differs only in its bytes),
with several rows per unit and per (unit, value)."""

import math

import numpy as np
import pytest

from dpselect.data import scores
from dpselect.data.tables import open_table

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
            expected = scores.top_values(open_table(arrow), column, 1000, **kw)
            got = scores.top_values(open_table(frame), column, 1000, **kw)
            # NaN != NaN: compare the values by their text
            assert [(repr(v), n) for v, n in got] == [(repr(v), n) for v, n in expected], (
                column, m, r,
            )  # fmt: skip
