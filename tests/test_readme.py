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
    assert any("examples/select_best.py" in line for line in lines)
    assert any("pytest" in line for line in lines)


def test_main_example_runs(capsys):
    runpy.run_path(str(ROOT / "examples" / "select_best.py"), run_name="__main__")
    assert "most common diagnosis" in capsys.readouterr().out
