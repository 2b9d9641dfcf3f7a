"""`top-k --plan` shows the candidate list's notes the release would show (issue 24,
verification 5): a first candidate equal to the column's name (a header line?), numbers
matched as text. Public facts only: the list, the column's name, the schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpselect.cli.main import main


def _run(capsys: pytest.CaptureFixture[str], *args: object) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main([str(a) for a in args])
    captured = capsys.readouterr()
    assert exit_info.value.code == 0, captured.err
    return captured.out


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    data = tmp_path / "flights.csv"
    data.write_text("tailnum,dest\nN1,ATL\nN1,JFK\nN2,ATL\n")
    candidates = tmp_path / "dests.txt"
    candidates.write_text("dest\nATL\nJFK\n")
    return data, candidates


@pytest.mark.parametrize("unit", [[], ["--privacy-unit", "tailnum", "--max-contributions", "2"]])
def test_plan_prints_the_header_note(capsys, files, unit) -> None:
    data, candidates = files
    common = ["top-k", data, "--column", "dest", "--k", "1", "--epsilon", "1",
              "--candidates", candidates, *unit]  # fmt: skip
    shown = _run(capsys, *common, "--plan")
    assert "the first line of" in shown and "'dest', the name of the ranked column" in shown
    as_json = json.loads(_run(capsys, *common, "--plan", "--json"))
    assert "header line" in as_json["candidates_note"]
    released = _run(capsys, *common, "--insecure-seed", "1")  # the release shows it too
    assert "header" in released and "the name of the ranked column" in " ".join(released.split())


def test_plan_without_a_note(capsys, files, tmp_path: Path) -> None:
    data, _ = files
    shown = _run(capsys, "top-k", data, "--column", "dest", "--k", "1", "--epsilon", "1",
                 "--candidates", "ATL,JFK", "--plan", "--json")  # fmt: skip
    assert "candidates_note" not in json.loads(shown)
    numbers = tmp_path / "n.csv"
    numbers.write_text("v\n3\n4\n")
    shown = _run(capsys, "top-k", numbers, "--column", "v", "--k", "1", "--epsilon", "1",
                 "--candidates", "3.0,4.0", "--plan")  # fmt: skip
    assert "text is matched as text" in shown
