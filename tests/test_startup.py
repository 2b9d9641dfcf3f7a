"""Start-up stays light: what ``import dpselect`` and ``import dpselect.cli`` load (issue 14).

No timing here (bench/bench_startup.py measures); these check which modules a fresh
interpreter has loaded, and that the lazy package still exposes every public name.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("matplotlib", "flint", "duckdb", "numpy", "rich", "pandas", "scipy", "pyarrow")


def _loaded_after(code: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True, env=env
    )
    return {name.split(".")[0] for name in json.loads(out.stdout.splitlines()[-1])}


@pytest.mark.parametrize("code", ["import dpselect", "import dpselect.cli"])
def test_import_loads_no_heavy_module(code):
    loaded = _loaded_after(code)
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_the_probe_sees_heavy_modules():
    """The check can fail: the same probe sees NumPy and python-flint after a real use."""
    loaded = _loaded_after("import dpselect; dpselect.Session")
    assert {"numpy", "flint", "duckdb"} <= loaded


def test_lazy_package_exposes_every_public_name():
    import dpselect
    import dpselect.core
    import dpselect.mechanisms
    import dpselect.recipes

    names = dpselect.__all__
    assert len(names) <= 40  # issue 23: the task tier at the top
    for name in names:
        assert getattr(dpselect, name) is not None, name
    for name in ("Ledger", "TopKResult", "top_k", "most_common"):
        assert name in names
    for name in ("sampling", "data", "core", "mechanisms", "accounting", "recipes"):
        assert getattr(dpselect, name) is not None and name in dir(dpselect)
    assert set(names) <= set(dir(dpselect))
    namespace: dict[str, object] = {}
    exec("from dpselect import *", namespace)
    assert set(names) <= set(namespace)
    with pytest.raises(AttributeError):
        dpselect.no_such_name  # noqa: B018
    with pytest.raises(ImportError):
        exec("from dpselect import no_such_name", {})


def test_core_errors_import_alone_and_core_names_resolve():
    loaded = _loaded_after("from dpselect.core.errors import DPSelectError; import dpselect.core")
    assert "numpy" not in loaded and "flint" not in loaded
    import dpselect.core as core

    for name in core.__all__:
        assert getattr(core, name) is not None
    assert set(core.__all__) <= set(dir(core))


def test_cli_mechanism_names_match_the_api():
    from dpselect.cli.options import MECHANISM_NAMES
    from dpselect.recipes.top_k import MECHANISMS

    assert list(MECHANISM_NAMES) == sorted(MECHANISMS)


def test_version_and_help_run():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for args in (["--version"], ["--help"]):
        out = subprocess.run(
            [sys.executable, "-m", "dpselect", *args],
            check=True,
            capture_output=True,
            text=True,
            env=env,
        )
        assert "dpselect" in out.stdout
