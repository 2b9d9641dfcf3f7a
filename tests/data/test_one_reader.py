"""Issue 41: a Parquet read and a number filter are each written in one place.

Every DuckDB read of Parquet goes through :func:`dpselect.data.tables.parquet_sql` (NaN-safe:
``can_have_nan = true``), every Spark read of Parquet through
:func:`dpselect.data.engines.spark.reader.read_files` (and every Spark frame through
:func:`dpselect.data.engines.spark.reader.nan_safe_frame`), and every test of NaN lives in
:mod:`dpselect.data.values` (``number_kept_sql``, ``read_value_sql``), for values already read in
:func:`dpselect.core.domains.kept_numbers`. The scan below reads
the package's source: a read or a NaN test written anywhere else fails it, and
:func:`test_the_scan_finds_a_stray_reader` shows that it does on a package made to break the
rule.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import dpselect

PACKAGE = Path(dpselect.__file__).parent

#: (pattern, the only (module, function) allowed to hold it; None: only the module).
RULES: list[tuple[str, re.Pattern[str], tuple[str, str | None]]] = [
    ("a DuckDB Parquet read", re.compile(r"read_parquet\s*\(|parquet_scan\s*\("),
     ("data/tables.py", "parquet_sql")),
    ("a Spark Parquet read", re.compile(r"\.parquet\s*\(|format\(\s*['\"]parquet"),
     ("data/engines/spark/reader.py", "read_files")),
    ("a NaN test", re.compile(r"(?<![\w.])isnan\s*\(|\bf\.isnan\b|functions\.isnan\b|"
                              r"'-?nan'"),
     ("data/values.py", None)),
    ("a NumPy number filter", re.compile(r"~\s*np\.isnan\s*\("),
     ("core/domains.py", "holds_number")),
]  # fmt: skip


def _owner(tree: ast.AST, line: int) -> str | None:
    """The innermost function holding ``line``."""
    best: tuple[int, str] | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            end = node.end_lineno or node.lineno
            if node.lineno <= line <= end and (best is None or node.lineno > best[0]):
                best = (node.lineno, node.name)
    return None if best is None else best[1]


def stray_readers(root: Path) -> list[str]:
    """Every place under ``root`` that breaks :data:`RULES` (code, not comments)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        module = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        for number, line in enumerate(text.splitlines(), 1):
            code = line.split("#", 1)[0]
            for what, pattern, (home, function) in RULES:
                if not pattern.search(code):
                    continue
                if module == home and (function is None or _owner(tree, number) == function):
                    continue
                found.append(f"{module}:{number}: {what} outside {home}: {line.strip()}")
    return found


def test_parquet_reads_and_nan_tests_are_written_once():
    assert stray_readers(PACKAGE) == []


def test_the_readers_are_nan_safe():
    from dpselect.data.engines.spark import table
    from dpselect.data.tables import parquet_sql

    assert "can_have_nan = true" in parquet_sql("x.parquet")
    opened = ast.parse(Path(table.__file__).read_text(encoding="utf-8"))
    calls = [
        node.func.id
        for node in ast.walk(opened)
        if isinstance(node, ast.FunctionDef) and node.name == "open_spark_table"
        for node in ast.walk(node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    ]
    assert "nan_safe_frame" in calls


def test_the_scan_finds_a_stray_reader(tmp_path):
    # the broken variant: a package that reads Parquet and tests NaN outside the one place
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "tables.py").write_text(
        "def parquet_sql(p):\n    return f\"read_parquet('{p}', can_have_nan = true)\"\n"
        "def elsewhere(p):\n    return f\"SELECT * FROM read_parquet('{p}')\"\n"
    )
    (tmp_path / "recipe.py").write_text(
        "import numpy as np\n"
        "def f(x):\n    return np.isnan(x)  # NumPy on public numbers: allowed\n"
        "def g():\n    return 'SELECT count(*) FROM data WHERE NOT isnan(x)'\n"
        "def h(frame):\n    return frame.spark.read.parquet('p')\n"
        "def k(v):\n    return v[~np.isnan(v)]\n"
    )
    found = stray_readers(tmp_path)
    assert len(found) == 4, found
    assert any("recipe.py:9: a NumPy number filter" in f for f in found)
    assert any("tables.py:4" in f for f in found)
    assert any("recipe.py:5: a NaN test" in f for f in found)
    assert any("recipe.py:7: a Spark Parquet read" in f for f in found)
