"""The ``dpselect`` command run as a subprocess, as a user runs it (shared by the CLI tests)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any


def run_cli(
    *args: Any, stdin: str | None = None, cwd: Any = None, timeout: float = 120, columns: int = 200
) -> subprocess.CompletedProcess[str]:
    """``python -m dpselect ARGS`` with its output captured (no debug tracebacks, a fixed
    terminal width so that tables do not wrap)."""
    env = {k: v for k, v in os.environ.items() if k != "DPSELECT_DEBUG"}
    env["COLUMNS"] = str(columns)
    return subprocess.run(
        [sys.executable, "-m", "dpselect", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        input=stdin,
        cwd=cwd,
        timeout=timeout,
    )
