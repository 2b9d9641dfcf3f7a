"""Privacy audit of what depends on private rows after the charge (2026-11-26, h3).

One regression test per bug found, each failing before its fix; the last part records what
was checked and found sound (adversarial rows through the public API: no exception, no
warning, the same output shape for a dataset and its neighbour with one such row added).

Unit keys must be injective: two distinct raw unit values read as one person let one of them
move a score down and another up when it leaves (tests/data/test_unit_keys.py explains the
mechanics). Each test below gives every distinct unit one row holding ``x`` and asks for the
bounded score of ``x`` with ``max_contributions = 1``: the number of distinct keys.
"""

from __future__ import annotations

import decimal

import pandas as pd

from dpselect.data.scores import candidate_scores
from dpselect.data.tables import open_table
from dpselect.data.unit_keys import object_unit_key

D = decimal.Decimal


def _units_of_x(data: object) -> int:
    return int(candidate_scores(open_table(data), "v", ["x"], "uid", 1, salt=7)[0])


def _object_units(values: list[object]) -> int:
    frame = pd.DataFrame({"uid": pd.Series(values, dtype=object), "v": ["x"] * len(values)})
    return _units_of_x(frame)


# ----------------------------------------------------------------------------------------
# A pandas object column of Decimals (what pyarrow's to_pandas makes of a decimal128(38, s)
# column, e.g. 38-digit ids): the key was ``format(value.normalize(), "f")``, and normalize()
# rounds to the context's 28 digits, so ids that differ after the 28th digit were one unit.


def test_decimal_object_units_keep_every_digit():
    ids = [D("12345678901234567890123456789012345678"), D("12345678901234567890123456789012345679"),
           D("1.0000000000000000000000000000001"), D("1.0000000000000000000000000000002"),
           D("1"), D("1E+40"), D("10000000000000000000000000000000000000001")]  # fmt: skip
    assert len({object_unit_key(v) for v in ids}) == len(ids)
    assert _object_units(ids) == len(ids)
    # equal values stay one unit, whatever their exponent or the sign of zero
    assert object_unit_key(D("1.50")) == object_unit_key(D("15E-1"))
    assert object_unit_key(D("-0.00")) == object_unit_key(D("0"))
    assert object_unit_key(D("Infinity")) != object_unit_key(D("-Infinity"))
    assert object_unit_key(D("NaN")) is None and object_unit_key(D("sNaN")) is None
