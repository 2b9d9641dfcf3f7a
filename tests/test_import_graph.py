"""The import graph of dpselect has no cycle and points downward only (issue 23, part 2).

Every module under ``dpselect/`` is parsed with ``ast``; every import counts, at any depth
(inside functions too: a lazy import hides a cycle, it does not remove it). Imports under ``if
TYPE_CHECKING:`` count for the layers and for private names (a type hint naming a higher layer
or another module's private name is still a dependency on it), not for cycles: they never run,
so they cannot make one module's import wait for another's, and counting them would make every
annotation naming a module above (``table: Table`` in the SQL builders that
:class:`~dpselect.data.tables.Table` calls) a cycle. Relative imports are resolved against the
importing module. An import names the module it loads: ``from dpselect.core import errors`` is
an edge to ``dpselect.core.errors`` when that is a module, ``from dpselect.core import
Measurement`` an edge to ``dpselect.core``. The implicit import of parent packages is not an
edge (every submodule would close a cycle with its package's ``__init__``).

Three rules, from docs/architecture.md and the guide's "Architecture":

- no cycle between modules (imports that run: not those under ``TYPE_CHECKING``);
- no upward import between layers (``LAYER`` below; a package's ``__init__`` belongs to its
  package's layer, ``dpselect/__init__.py`` and ``__main__`` to the top, with the CLI);
- no private name imported across packages: ``from x import _name`` only from a module of the
  importer's own package (a package's helpers, split over its modules, stay private to it:
  ``dpselect.data.engines.spark``), and a module whose path has a component starting with
  ``_`` (``dpselect.accounting._interval``) only by a module in the same package as that
  private module.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dpselect"

#: Layer of each first-level part of dpselect; a module may import its own layer or lower ones.
LAYER = {
    "core": 0,
    "sampling": 1,
    "accounting": 2,
    "mechanisms": 2,
    "data": 3,
    "planning": 4,  # what a release will do (Contributions, Plan, explain), below the recipes
    "recipes": 5,
    "cli": 6,
    "session": 6,  # the front door: a Session runs the recipes
    "shorthands": 6,  # the one-call shorthands: one query, the recipe's release
    "__init__": 6,  # the package's face (``dpselect.__version__``, lazy re-exports)
    "__main__": 6,
}

#: Known violations left to another part of issue 23; these lists must only shrink (the test
#: fails on an entry that no longer occurs, so a fix removes its line). Entries are
#: (importer, imported) for upward imports, (importer, private name) for private names, the
#: modules of a cycle for cycles.
ALLOWED_UPWARD: set[tuple[str, str]] = set()
ALLOWED_PRIVATE: set[tuple[str, str]] = set()
ALLOWED_CYCLES: set[frozenset[str]] = set()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _is_type_checking(test: ast.expr) -> bool:
    """Whether an ``if`` tests ``TYPE_CHECKING`` (or ``typing.TYPE_CHECKING``)."""
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _type_only_lines(tree: ast.Module) -> set[int]:
    """The lines of the statements in the body of every ``if TYPE_CHECKING:``."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for statement in node.body:
                for inner in ast.walk(statement):
                    if hasattr(inner, "lineno"):
                        lines.add(inner.lineno)
    return lines


def _imports(
    name: str, path: Path, modules: dict[str, Path], run_time_only: bool = False
) -> list[tuple[str, tuple[str, ...], int]]:
    """(imported dpselect module, imported names, line) for every import of ``name``;
    ``run_time_only``: without the imports under ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if _is_package(path) else name.rpartition(".")[0]
    skip = _type_only_lines(tree) if run_time_only else set()
    found: list[tuple[str, tuple[str, ...], int]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and node.lineno in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "dpselect":
                    found.append((alias.name, (), node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != "dpselect":
                continue
            plain = []
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in modules:
                    found.append((sub, (), node.lineno))
                else:
                    plain.append(alias.name)
            if plain or not node.names:
                found.append((target, tuple(plain), node.lineno))
    return found


def _graph(run_time_only: bool = False) -> dict[str, list[tuple[str, tuple[str, ...], int]]]:
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        edges = []
        for target, names, line in _imports(name, path, modules, run_time_only):
            while target not in modules:  # ``import dpselect.x.y`` of an attribute
                target = target.rpartition(".")[0]
            if target != name:
                edges.append((target, names, line))
        graph[name] = edges
    return graph


def _layer(module: str) -> int:
    parts = module.split(".")
    return LAYER[parts[1] if len(parts) > 1 else "__init__"]


def _private_module(module: str) -> str | None:
    """The package owning ``module`` if a component of its path is private, else None."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
            return ".".join(parts[:i])
    return None


def _cycles(graph: dict[str, list[tuple[str, tuple[str, ...], int]]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w, _, _ in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def upward_imports() -> set[tuple[str, str]]:
    graph = _graph()
    return {
        (module, target)
        for module, edges in graph.items()
        for target, _, _ in edges
        if _layer(target) > _layer(module)
    }


def private_imports() -> set[tuple[str, str]]:
    graph = _graph()
    found = set()
    for module, edges in graph.items():
        for target, names, _ in edges:
            owner = _private_module(target)
            if owner is not None and not (module == owner or module.startswith(owner + ".")):
                found.add((module, target))
            found |= {
                (module, f"{target}.{name}")
                for name in names
                if name.startswith("_")
                and not (name.startswith("__") and name.endswith("__"))
                and not _same_package(module, target)
            }
    return found


def _same_package(importer: str, target: str) -> bool:
    """Whether ``importer`` and the module ``target`` are modules of one package (siblings): a
    private name may be imported between them."""
    return importer.rpartition(".")[0] == target.rpartition(".")[0]


def cycles() -> set[frozenset[str]]:
    return {frozenset(component) for component in _cycles(_graph(run_time_only=True))}


def test_graph_sees_relative_imports_and_imports_inside_functions():
    graph = _graph()
    api = {target for target, _, _ in graph["dpselect.recipes.top_k"]}
    assert "dpselect.recipes.unknown_domain" in api  # ``from .unknown_domain ...`` inside top_k
    assert "dpselect.planning.top_k_plan" in api
    source = {target for target, _, _ in graph["dpselect.sampling.source"]}
    assert "dpselect.sampling.drbg" in source  # inside source_by_name


def test_type_checking_imports_count_for_layers_not_for_cycles():
    scores = {target for target, _, _ in _graph()["dpselect.data.scores"]}
    assert "dpselect.data.tables" in scores  # ``if TYPE_CHECKING: from .tables import Table``
    run_time = {target for target, _, _ in _graph(run_time_only=True)["dpselect.data.scores"]}
    assert "dpselect.data.tables" not in run_time
    assert "dpselect.data.rules" in run_time


def test_private_names_stay_in_their_package():
    graph = _graph()
    spark = {
        (target, name)
        for target, names, _ in graph["dpselect.data.engines.spark.scores"]
        for name in names
    }
    assert ("dpselect.data.engines.spark.keys", "_value_ids") in spark  # a sibling: allowed
    assert _same_package("dpselect.data.engines.spark.scores", "dpselect.data.engines.spark.keys")
    assert not _same_package("dpselect.data.tables", "dpselect.data.engines.spark.keys")
    assert not _same_package("dpselect.data.engines.spark", "dpselect.data.engines.spark.keys")


def test_no_cycle():
    found = cycles()
    assert not found - ALLOWED_CYCLES, sorted(sorted(c) for c in found - ALLOWED_CYCLES)
    assert not ALLOWED_CYCLES - found, (
        f"fixed, remove from ALLOWED_CYCLES: {ALLOWED_CYCLES - found}"
    )


def test_no_upward_import():
    found = upward_imports()
    assert not found - ALLOWED_UPWARD, sorted(found - ALLOWED_UPWARD)
    assert not ALLOWED_UPWARD - found, (
        f"fixed, remove from ALLOWED_UPWARD: {ALLOWED_UPWARD - found}"
    )


def test_no_private_import_across_modules():
    found = private_imports()
    assert not found - ALLOWED_PRIVATE, sorted(found - ALLOWED_PRIVATE)
    assert not ALLOWED_PRIVATE - found, (
        f"fixed, remove from ALLOWED_PRIVATE: {ALLOWED_PRIVATE - found}"
    )
