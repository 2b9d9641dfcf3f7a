"""The engine interface (issue 23, part 1): both engines implement every method of
:class:`dpselect.data.Engine`, and no recipe asks which engine it holds."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpselect
from dpselect.core.errors import ParameterError
from dpselect.data import Engine
from dpselect.data.engines.duckdb import DuckDBEngine
from dpselect.data.engines.group_dispatch import GroupDispatch
from dpselect.data.engines.spark import SparkTable
from dpselect.data.engines.spark.table import SparkConnectTable
from dpselect.data.query import Query, UnitRule
from dpselect.data.tables import Table, open_table

PACKAGE = Path(dpselect.__file__).parent
RECIPE_FILES = sorted((PACKAGE / "recipes").rglob("*.py"))


def _protocol_members() -> set[str]:
    return {
        name
        for klass in Engine.__mro__
        if klass is not object and klass.__module__ == "dpselect.data.engine"
        for name in [*vars(klass), *getattr(klass, "__annotations__", {})]
        if not name.startswith("_")
    }


def test_both_engines_have_every_member_of_the_protocol():
    members = _protocol_members()
    assert {"scores", "counts", "numbers", "quantile_values", "multiplicity"} <= members
    assert {"buyers_at", "unit_sizes", "require_column", "unit_column", "capabilities"} <= members
    attributes = {"name", "description", "columns", "arrow_types", "capabilities"}
    assert len(members - attributes) <= 12  # a narrow contract: at most 12 methods (issue 42)
    spark_fields = set(SparkTable.__dataclass_fields__)
    table_fields = set(Table.__dataclass_fields__)
    for name in members:
        assert hasattr(Table, name) or name in table_fields, f"DuckDB table lacks {name}"
        assert hasattr(SparkTable, name) or name in spark_fields, f"SparkTable lacks {name}"
    assert issubclass(Table, DuckDBEngine)


def _dispatches_on_groups(tree: ast.AST) -> list[int]:
    """Lines of ``@overload`` and of ``isinstance(..., PublicGroups | PrivateGroups)``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            names = [d.id for d in node.decorator_list if isinstance(d, ast.Name)]
            found += [node.lineno] * names.count("overload")
        call = isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        if call and node.func.id == "isinstance" and len(node.args) == 2:
            kinds = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
            if kinds & {"PublicGroups", "PrivateGroups"}:
                found.append(node.lineno)
    return found


def test_the_dispatch_on_groups_is_written_once():
    members = {"scores", "counts", "numbers", "multiplicity"}
    for klass in (DuckDBEngine, SparkTable, SparkConnectTable):
        assert issubclass(klass, GroupDispatch)
        assert members.isdisjoint(vars(klass)), klass.__name__
    engines = PACKAGE / "data" / "engines"
    for path in [engines / "duckdb.py", *sorted((engines / "spark").glob("*.py"))]:
        lines = _dispatches_on_groups(ast.parse(path.read_text(encoding="utf-8")))
        assert lines == [], f"{path.name} dispatches on the kind of groups at {lines}"
    dispatch = (engines / "group_dispatch.py").read_text(encoding="utf-8")
    assert len(_dispatches_on_groups(ast.parse(dispatch))) == 9 + 1 + 3 * 2  # overloads, checks


def test_an_opened_table_is_an_engine():
    table = open_table(pd.DataFrame({"u": [1, 1, 2], "v": ["a", "b", "a"]}))
    assert isinstance(table, Engine) and table.name == "duckdb"
    assert list(
        table.scores(
            Query("v", UnitRule(privacy_unit="u", values_per_unit=1, salt=3)), ["a", "b", "c"]
        )
    ) in ([1, 1, 0], [2, 0, 0])
    assert sorted(table.unit_sizes(Query("v", UnitRule(privacy_unit="u")), "values")) == [1, 2]
    assert list(table.buyers_at(Query("u"), [0.5, 1.0, 1.5, 3.0])) == [3, 3, 1, 0]
    assert table.grid_width((0.0, 1.0), 0.1) is None


def _engine_questions(tree: ast.AST) -> list[int]:
    """Lines of ``getattr(<...table>, ...)`` and ``<...>.engine ==`` / ``!=``."""
    found = []
    for node in ast.walk(tree):
        call = isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        if call and node.func.id == "getattr" and node.args:
            target = node.args[0]
            name = target.id if isinstance(target, ast.Name) else (
                target.attr if isinstance(target, ast.Attribute) else ""
            )  # fmt: skip
            if name == "table" or name.endswith("_table"):
                found.append(node.lineno)
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                if isinstance(side, ast.Attribute) and side.attr == "engine":
                    found.append(node.lineno)
    return found


def test_no_recipe_asks_which_engine_it_holds():
    assert RECIPE_FILES and all(p.is_file() for p in RECIPE_FILES)
    bad = {}
    for path in RECIPE_FILES:
        text = path.read_text(encoding="utf-8")
        lines = _engine_questions(ast.parse(text))
        if "getattr(table" in text or ".engine ==" in text or lines:
            bad[str(path.relative_to(PACKAGE))] = lines
    assert bad == {}


def test_the_check_finds_what_it_looks_for():
    source = "x = getattr(table, 'histogram_values', None)\ny = query.table.engine == 'spark'\n"
    assert _engine_questions(ast.parse(source)) == [1, 2]
    assert _engine_questions(ast.parse("z = getattr(query.table, 'engine', 'duckdb')")) == [1]


def test_an_object_answering_every_attribute_is_not_an_opened_table():
    # A Spark Connect DataFrame answers every attribute name with a Column: the Engine
    # protocol check alone would take it for an opened table (the recipes then failed on
    # their first call to it, after the ledger check).
    import pandas as pd

    from dpselect.data.engine import Engine, is_opened_table
    from dpselect.data.tables import open_table

    class AnswersEverything:
        def __getattr__(self, name):
            return object()

    fake = AnswersEverything()
    assert isinstance(fake, Engine)  # why the protocol alone is not enough
    assert not is_opened_table(fake)
    assert is_opened_table(open_table(pd.DataFrame({"x": [1]})))


@pytest.mark.parametrize(
    ("field", "value"),
    [("values_per_unit", 0), ("values_per_unit", 1.5), ("rows_per_value", True),
     ("rows_per_unit", -1), ("groups_per_unit", "2"), ("salt", -1), ("group_salt", 0.5),
     ("privacy_unit", "")],
)  # fmt: skip
def test_a_unit_rule_refuses_a_field_it_cannot_apply(field: str, value: object) -> None:
    kw: dict[str, object] = {"privacy_unit": "u", field: value}
    with pytest.raises(ParameterError, match=rf"UnitRule\({field}=\.\.\.\) must be"):
        UnitRule(**kw)  # type: ignore[arg-type]
    assert UnitRule("u", np.int64(3), salt=2**63 - 1).values_per_unit == 3
