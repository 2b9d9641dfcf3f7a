"""Candidate files as spreadsheets save them (issue 22: silent wrong answers).

A byte-order mark made the first candidate never match; a header line became a candidate
without a word. Both are facts of the public list (and the column's name), never of the rows.
"""

import codecs
import json
import os
import subprocess
import sys

import pandas as pd
import pytest

import dpselect as dp
from dpselect.core.errors import ParameterError
from dpselect.data.candidates import header_note, load_candidates
from dpselect.data.query import Query
from dpselect.data.tables import open_table

AIRPORTS = ["ATL", "ORD", "DFW"]
FLIGHTS = pd.DataFrame({"dest": ["ATL"] * 6 + ["ORD"] * 3 + ["DFW"]})


def _write(path, text, encoding, bom=b""):
    path.write_bytes(bom + text.encode(encoding))
    return path


@pytest.mark.parametrize(
    ("encoding", "bom"),
    [
        ("utf-8", codecs.BOM_UTF8),
        ("utf-16-le", codecs.BOM_UTF16_LE),
        ("utf-16-be", codecs.BOM_UTF16_BE),
        ("utf-32-le", codecs.BOM_UTF32_LE),
        ("utf-32-be", codecs.BOM_UTF32_BE),
    ],
)
def test_a_byte_order_mark_is_dropped_and_decides_the_encoding(tmp_path, encoding, bom):
    path = _write(tmp_path / "c.txt", "ATL\r\nORD\r\nDFW\r\n", encoding, bom)
    values = load_candidates(path)
    assert values == AIRPORTS
    assert list(open_table(FLIGHTS).scores(Query("dest"), values)) == [6, 3, 1]


def test_the_first_candidate_of_an_excel_file_is_ranked(tmp_path):
    path = _write(tmp_path / "c.csv", "ATL\nORD\nDFW\n", "utf-8", codecs.BOM_UTF8)
    seed = dp.sampling.InsecureSeededSource(1)
    result = dp.Session(FLIGHTS, source=seed).top_k("dest", 3, epsilon=1.0, candidates=path)
    assert sorted(result.candidates) == sorted(AIRPORTS) and "\ufeffATL" not in result.candidates


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("ATL\nORD\n".encode("utf-16-le"), "NUL characters"),  # UTF-16 without its mark
        (b"ATL\n\xe9\n", "is not UTF-8 text"),  # Latin-1
        (codecs.BOM_UTF16_LE + b"A\x00\x00\xd8", "is not UTF-16-LE text"),  # lone surrogate
    ],
)
def test_text_that_cannot_be_decoded_is_refused_naming_the_file(tmp_path, content, match):
    path = tmp_path / "bad.txt"
    path.write_bytes(content)
    with pytest.raises(ParameterError, match=match) as raised:
        load_candidates(path)
    assert "bad.txt" in str(raised.value) and "\n" not in str(raised.value)


def test_a_header_line_is_kept_and_noted(tmp_path):
    path = _write(tmp_path / "c.txt", "dest\nATL\nORD\nDFW\n", "utf-8", codecs.BOM_UTF8)
    values = load_candidates(path)
    assert values == ["dest", *AIRPORTS]  # kept: the list is public, the user decides
    note = header_note(values, "dest")
    assert note is not None and "'dest'" in note and "c.txt" in note and "header" in note
    assert header_note(values, "DEST") == note  # column names are case-insensitive
    assert header_note(values, "origin") is None
    assert header_note(["dest", "ATL"], "dest") is not None  # a list too, without the file
    assert header_note(["ATL", "dest"], "dest") is None  # only the first line is a header
    assert header_note([1, 2], "dest") is None

    seed = dp.sampling.InsecureSeededSource
    result = dp.Session(FLIGHTS, source=seed(2)).top_k("dest", 2, epsilon=1.0, candidates=path)
    assert result.parameters["candidates_note"] == note
    assert result.parameters["n_candidates"] == 4
    assert note in str(result) and note in json.dumps(result.to_dict())
    # The note is a fact of the list and the column's name, never of the rows.
    empty = FLIGHTS.iloc[:0]
    again = dp.Session(empty, source=seed(3)).top_k("dest", 2, epsilon=1.0, candidates=path)
    assert again.parameters["candidates_note"] == note
    plain = dp.Session(FLIGHTS, source=seed(2)).top_k("dest", 2, epsilon=1.0, candidates=AIRPORTS)
    assert "candidates_note" not in plain.parameters
    assert "note:" not in str(plain)


def test_a_header_line_with_auto_contributions_is_noted(tmp_path):
    path = _write(tmp_path / "c.txt", "dest\nATL\nORD\nDFW\n", "utf-8")
    frame = FLIGHTS.assign(user=range(len(FLIGHTS)))
    seed = dp.sampling.InsecureSeededSource(4)
    result = dp.Session(
        frame,
        privacy_unit="user",
        contributions=dp.Contributions(values_per_unit="auto"),
        source=seed,
    ).top_k("dest", 2, epsilon=1.0, candidates=path)
    assert "header" in result.parameters["candidates_note"]
    assert result.parameters["max_contributions_choice"]


def _cli(*args):
    env = {k: v for k, v in os.environ.items() if k != "DPSELECT_DEBUG"}
    return subprocess.run(
        [sys.executable, "-m", "dpselect", *map(str, args)],
        capture_output=True,
        text=True,
        env=dict(env, COLUMNS="200"),
        timeout=120,
    )


def test_the_command_notes_a_header_and_refuses_undecodable_files(tmp_path):
    data = tmp_path / "flights.parquet"
    FLIGHTS.to_parquet(data, index=False)
    header = _write(tmp_path / "c.txt", "dest\nATL\nORD\nDFW\n", "utf-8", codecs.BOM_UTF8)
    bad = tmp_path / "u16.txt"
    bad.write_bytes("ATL\nORD\n".encode("utf-16-le"))
    common = ["top-k", data, "--column", "dest", "--k", 2, "--epsilon", 1]
    noted = _cli(*common, "--candidates", header, "--insecure-seed", 5)
    assert noted.returncode == 0, noted.stderr
    assert "note: the first line of" in noted.stdout and "header" in noted.stdout
    refused = _cli(*common, "--candidates", bad)
    assert refused.returncode == 2 and refused.stdout == ""
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "u16.txt" in lines[0]
