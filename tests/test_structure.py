"""The package keeps its shape: small modules, short functions, recipes that run a plan.

- no module of ``dpselect/`` over :data:`MAX_MODULE_LINES` lines;
- no function (or method) over :data:`MAX_FUNCTION_LINES` lines, from its ``def`` to its last
  line, docstring included;
- at most :data:`MAX_LONG_FUNCTIONS` functions over :data:`LONG_FUNCTION_LINES` lines;
- no recipe splits a budget or picks a mechanism: it asks its planner.

A module or function that grows past these is split by concept (docs/architecture.md).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "dpselect"

MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 120
LONG_FUNCTION_LINES = 80
MAX_LONG_FUNCTIONS = 10


def _modules() -> list[Path]:
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 100  # the walk found the package
    return modules


def _functions() -> list[tuple[int, str]]:
    found = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                found.append((lines, f"{path.relative_to(PACKAGE.parent)}:{node.name}"))
    return sorted(found, reverse=True)


def test_no_module_is_over_the_limit() -> None:
    long = [(path.read_text(encoding="utf-8").count("\n"), str(path.relative_to(PACKAGE.parent)))
            for path in _modules()]  # fmt: skip
    over = [entry for entry in long if entry[0] > MAX_MODULE_LINES]
    assert not over, f"modules over {MAX_MODULE_LINES} lines: {over}"


def test_no_function_is_over_the_limit() -> None:
    over = [entry for entry in _functions() if entry[0] > MAX_FUNCTION_LINES]
    assert not over, f"functions over {MAX_FUNCTION_LINES} lines: {over}"


def test_few_functions_are_long() -> None:
    long = [entry for entry in _functions() if entry[0] > LONG_FUNCTION_LINES]
    assert len(long) <= MAX_LONG_FUNCTIONS, (
        f"{len(long)} functions over {LONG_FUNCTION_LINES} lines (at most {MAX_LONG_FUNCTIONS}): "
        f"{long}"
    )


#: What a recipe may say of its input's kind: a DuckDB relation is a kind of data (like a
#: pandas frame), not the engine that runs the query.
_DATA_KINDS = ("DuckDB relation",)


def test_no_recipe_names_an_engine() -> None:
    """Recipes ask the engine's declared capabilities, never its kind: no file under
    ``dpselect/recipes/`` names DuckDB or Spark in code, messages or prose (a path such as
    ``docs/spark.md`` aside)."""
    found = []
    for path in sorted((PACKAGE / "recipes").rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            text = line.replace("docs/spark.md", "")
            for kind in _DATA_KINDS:
                text = text.replace(kind, "")
            lowered = text.lower()
            if "duckdb" in lowered or "spark" in lowered:
                found.append(f"{path.name}:{number}: {line.strip()}")
    assert not found, found


def test_code_and_docs_carry_no_history() -> None:
    """The package and docs/ describe the library as it is: no project issue numbers (a
    third party's, such as "DuckDB issue 25521", is a reference)."""
    import re

    pattern = re.compile(r"(?<!DuckDB )\bissues? \d+", re.IGNORECASE)
    docs = PACKAGE.parent / "docs"
    paths = [*_modules(), *sorted(docs.rglob("*.md")), PACKAGE.parent / "README.md"]
    found = [
        f"{path.name}:{number}"
        for path in paths
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert not found, found


#: What splits a budget or picks and calibrates a mechanism for a release: the planning
#: layer's alone (``dpselect/planning/``). A recipe that imports one of these plans inline.
_PLANNING_ONLY = frozenset({
    "first_share", "remainder", "divide", "split_budget", "group_budget", "group_selection",
    "choose_top_k", "resolve_top_k_method", "plan_top_k", "plan_joint_top_k",
    "threshold_plan", "limited_domain_threshold", "policy_top_k_plan", "set_union_plan",
    "choose_unknown_domain", "choose_keys_method", "choose_quantile_method", "use_policy_top_k",
})  # fmt: skip

#: ``preview.py`` releases nothing and charges nothing: it lays out the options each planner
#: weighs (the exact laws of every mechanism a query could run), so it reads the choices.
_SHOWS_THE_CHOICES = frozenset({"preview.py"})


def test_no_recipe_splits_a_budget_or_picks_a_mechanism() -> None:
    """Recipes ask their planner (``dpselect/planning/``) and run the plan: no module under
    ``dpselect/recipes/`` imports the budget's split or a mechanism's choice or calibration,
    at its top or inside a function."""
    found = []
    for path in sorted((PACKAGE / "recipes").rglob("*.py")):
        if path.name in _SHOWS_THE_CHOICES:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if (node.module or "").endswith("planning.budget"):
                found.append(f"{path.name}:{node.lineno}: {node.module}")
            found.extend(f"{path.name}:{node.lineno}: {alias.name}" for alias in node.names
                         if alias.name in _PLANNING_ONLY)  # fmt: skip
    assert not found, found
