"""Candidate files with odd encodings (issue 41 audit): read as documented or refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpselect.core.errors import ParameterError
from dpselect.data.candidates import _read_lines

_GOOD = {
    "utf-8": "a\nb\né\n".encode(),
    "utf-8 bom": b"\xef\xbb\xbf" + "a\nb\né\n".encode(),
    "utf-16 le bom": "\ufeffa\nb\né\n".encode("utf-16-le"),
    "utf-16 be bom": "\ufeffa\nb\né\n".encode("utf-16-be"),
    "crlf": "a\r\nb\r\né\r\n".encode(),
    "no trailing newline": "a\nb\né".encode(),
}


@pytest.mark.parametrize("case", sorted(_GOOD))
def test_odd_encodings_read_as_documented(tmp_path: Path, case: str) -> None:
    path = tmp_path / "c.txt"
    path.write_bytes(_GOOD[case])
    assert _read_lines(path, "--candidates") == ["a", "b", "é"]


@pytest.mark.parametrize(
    ("raw", "says"),
    [(b"a\ncaf\xe9\n", "not UTF-8"), (b"a\0\nb\n", "NUL"), ("ab".encode("utf-16-le"), "NUL")],
)
def test_undecodable_files_refused_naming_the_flag(tmp_path: Path, raw: bytes, says: str) -> None:
    path = tmp_path / "c.txt"
    path.write_bytes(raw)
    with pytest.raises(ParameterError, match="--candidates") as info:
        _read_lines(path, "--candidates")
    assert says in str(info.value) and "\n" not in str(info.value)


def test_empty_file_has_no_lines(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    path.write_bytes(b"")
    assert _read_lines(path, "--candidates") == []
