"""Private groups on Spark (:mod:`dpselect.data.discovered_groups`): every group of ``by``
found in the data, its persons and its scores, equal to DuckDB (the oracle) for the same
rows and salts: text, integer, float (NaN and -0.0 groups) and date group columns, with and
without a unit, every plan; and the grouped recipes with private groups release the same
answers on both engines.
"""

import numpy as np
import pyarrow as pa
import pytest

import dpselect as dp
from dpselect.data.query import PrivateGroups, Query
from dpselect.data.tables import open_table
from dpselect.data.values import canonical_text
from dpselect.planning.contributions import Contributions
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes.quantiles import quantile as recipe_quantile
from tests.engine_rules import unit_rule
from tests.session_queries import session_partition_selection, session_top_k

from .test_grouped import SALTS, TYPES, grouped_rows, spark_frame


@pytest.fixture(scope="module")
def data(spark):
    rows = grouped_rows(2027, 400)
    return (
        rows,
        open_table(spark_frame(spark, rows)),
        open_table(pa.Table.from_pylist(rows), schema=TYPES),
    )


def _groups(found):
    return [canonical_text(g) for g in found.groups]


CASES = [
    # column, candidates, by, unit, max_groups, max_contributions, max_rows_per_value
    ("x", [0, 1, 2, 3, 5, 8, 100], "grp", "user", 1, 1, 1),
    ("s", ["1", "2", "3", "0", "7"], "gi", "su", 2, 2, 3),
    ("dt", None, "grp", "fu", 2, 1, 1),
    ("s", ["1", "2", "3", "0", "7", "11"], "d", "user", 1, 1, 1),
    ("x", [0, 1, 2, 3, 4, 6], "dt", "user", 3, 3, 2),
    ("d", [0.0, 0.25, 0.5, 1.0], "grp", None, 1, 1, 1),
    ("s", None, "d", None, 1, 1, 1),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-by-{c[2]}-{c[3]}-{c[4]}{c[5]}{c[6]}")
def test_duckdb_and_spark_find_the_same_groups(data, case):
    _, spark, duck = data
    column, cands, by, unit, g, m, r = case
    args = dict(privacy_unit=unit, max_groups=g, max_contributions=m, max_rows_per_value=r,
                **SALTS)  # fmt: skip
    a = spark.counts(Query(column, unit_rule(**args), PrivateGroups(by)), 3)
    b = duck.counts(Query(column, unit_rule(**args), PrivateGroups(by)), 3)
    assert _groups(a) == _groups(b) and len(a.groups) > 0
    assert a.persons.tolist() == b.persons.tolist()
    assert a.values is not None and b.values is not None
    texts = [[(canonical_text(v), n) for v, n in group] for group in a.values]
    assert texts == [[(canonical_text(v), n) for v, n in group] for group in b.values]
    if cands is not None:
        a = spark.scores(Query(column, unit_rule(**args), PrivateGroups(by)), cands)
        b = duck.scores(Query(column, unit_rule(**args), PrivateGroups(by)), cands)
        assert _groups(a) == _groups(b) and len(a.groups) > 0
        assert a.persons.tolist() == b.persons.tolist()
        assert a.cells is not None and b.cells is not None
        for x, y in zip(a.cells, b.cells, strict=True):
            assert x.dtype == np.int64 and x.tolist() == y.tolist()


def test_private_group_recipes_run_on_spark_as_on_duckdb(data):
    from dpselect.sampling import InsecureSeededSource

    rows, spark, _ = data
    runs = []
    for src, kw in ((spark.frame, {}), (pa.Table.from_pylist(rows), {"schema": TYPES})):
        top = session_top_k(
            src,
            "x",
            2,
            4.0,
            contributions=dp.Contributions(groups_per_unit=2),
            delta=1e-3,
            candidates=[0, 1, 2, 3],
            by="grp",
            privacy_unit="user",
            source=InsecureSeededSource(1),
            **kw,
        )
        values = session_top_k(
            src,
            "s",
            2,
            4.0,
            delta=1e-3,
            by="grp",
            privacy_unit="user",
            source=InsecureSeededSource(4),
            **kw,
        )
        keys = session_partition_selection(
            src, "x", 4.0, 1e-3, by="grp", source=InsecureSeededSource(2), **kw
        )
        q = recipe_quantile(
            src,
            quantile_request(
                "d",
                0.5,
                4.0,
                bounds=(0, 4),
                privacy_unit="user",
                by="grp",
                delta=1e-3,
                contributions=Contributions(values_per_unit=2),
            ),
            source=InsecureSeededSource(3),
            **kw,
        )
        runs.append((q.groups, [r.values for r in q.releases]))
        runs.append((top.groups, [r.candidates for r in top.releases], values.groups,
                     [r.candidates for r in values.releases], keys.groups,
                     [r.values for r in keys.releases]))  # fmt: skip
    assert runs[0] == runs[2] and runs[1] == runs[3]
    assert len(runs[0][0]) > 0 and len(runs[1][0]) > 0


NUMBER_CASES = [
    # column, by, unit, max_groups, max_rows
    ("d", "grp", "user", 1, 1),
    ("x", "gi", "su", 2, 3),
    ("d", "dt", "fu", 3, 2),
    ("x", "d", None, 1, 1),
]


@pytest.mark.parametrize("case", NUMBER_CASES, ids=lambda c: f"{c[0]}-by-{c[1]}-{c[2]}")
def test_duckdb_and_spark_find_the_same_numbers(data, case):
    _, spark, duck = data
    column, by, unit, g, r = case
    args = dict(privacy_unit=unit, max_groups=g, max_rows=r, **SALTS)  # fmt: skip
    a = spark.numbers(Query(column, unit_rule(**args), PrivateGroups(by)))
    b = duck.numbers(Query(column, unit_rule(**args), PrivateGroups(by)))
    assert _groups(a) == _groups(b) and len(a.groups) > 0
    assert a.persons.tolist() == b.persons.tolist()
    assert a.numbers is not None and b.numbers is not None
    assert [x.tolist() for x in a.numbers] == [x.tolist() for x in b.numbers]


# Two group values whose 32-bit codes collide for SALTS["group_salt"] (found by a birthday
# search over "g0", "g1", ...): one unit's keys of the two groups are then equal, and the rule
# keeps the group of smaller value ("g113910" < "g31898" byte by byte).
COLLIDING = ("g113910", "g31898")


def test_equal_group_keys_are_broken_by_the_order_of_the_values(spark):
    from dpselect.data.rules import value_code

    low, high = COLLIDING
    codes = {value_code(SALTS["group_salt"], g, "g") for g in COLLIDING}
    assert len(codes) == 1 and low < high

    def row(user, s, grp, d):
        return {**dict.fromkeys(TYPES), "user": user, "s": s, "grp": grp, "d": d, "x": 1}

    one = [row(1, "a", high, 1.0), row(1, "b", low, 2.0), row(1, "c", high, 3.0)]
    others = [row(2, "a", high, 4.0), row(3, "b", low, 5.0), row(3, "a", "h", 6.0),
              row(3, "c", high, 7.0), row(4, "c", "h", 8.0)]  # fmt: skip
    args = dict(privacy_unit="user", max_groups=1, max_contributions=1, **SALTS)  # fmt: skip
    alone = open_table(spark_frame(spark, one))
    assert alone.counts(Query("s", unit_rule(**args), PrivateGroups("grp")), 3).groups == [low]
    assert alone.scores(
        Query("s", unit_rule(**args), PrivateGroups("grp")), ["a", "b", "c"]
    ).groups == [low]
    numbers = {k: v for k, v in args.items() if k != "max_contributions"}
    assert alone.numbers(
        Query("d", unit_rule(max_rows=1, **numbers), PrivateGroups("grp"))
    ).groups == [low]
    rows = one + others
    spark_table = open_table(spark_frame(spark, rows))
    duck = open_table(pa.Table.from_pylist(rows), schema=TYPES)
    for method, call in (
        ("values", lambda t: t.counts(Query("s", unit_rule(**args), PrivateGroups("grp")), 3)),
        (
            "cells",
            lambda t: t.scores(
                Query("s", unit_rule(**args), PrivateGroups("grp")), ["a", "b", "c"]
            ),
        ),
        (
            "numbers",
            lambda t: t.numbers(Query("d", unit_rule(max_rows=2, **numbers), PrivateGroups("grp"))),
        ),
    ):
        a, b = call(spark_table), call(duck)
        assert a.groups == b.groups and a.persons.tolist() == b.persons.tolist(), method
        assert str(a.values) == str(b.values) and str(a.cells) == str(b.cells), method
        assert str(a.numbers) == str(b.numbers), method
