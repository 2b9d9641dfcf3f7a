"""The README's tour and the main-job example run as written."""

import re
import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_tour_runs():
    code = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert code, "the README has a python tour"
    exec(compile(code[0], "README.md", "exec"), {})


def test_readme_starts_with_the_two_commands():
    lines = (ROOT / "README.md").read_text().splitlines()[:8]
    assert any("dpselect top-k examples/visits.parquet" in line for line in lines)
    assert any("pytest" in line for line in lines)


def test_main_example_runs(capsys):
    runpy.run_path(str(ROOT / "examples" / "select_best.py"), run_name="__main__")
    assert "most common diagnosis" in capsys.readouterr().out


def test_readme_first_command_runs():
    import shlex
    import subprocess
    import sys

    readme = (ROOT / "README.md").read_text().splitlines()
    line = next(text for text in readme if "dpselect top-k" in text)
    args = shlex.split(line.split("&&", 1)[1])
    assert args[0] == "dpselect"
    out = subprocess.run(
        [sys.executable, "-m", "dpselect", *args[1:]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "privacy cost" in out.stdout


def test_ci_runs_the_readme_first_command_on_the_base_install():
    """.ci/run extracts the README's first command (issue 22) and runs it before any extra."""
    import subprocess

    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    extract = next(line for line in ci if line.startswith('first="$('))
    shown = subprocess.run(
        ["bash", "-c", f'{extract}\nprintf %s "$first"'],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    block = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)[0]
    assert shown == block.splitlines()[0]
    assert shown.startswith("pip install -e . && dpselect top-k")
    runs = next(i for i, line in enumerate(ci) if line.startswith('eval "$first"'))
    extras = [i for i, line in enumerate(ci) if "pip install -e '.[" in line]
    assert extras and runs < min(extras)
