"""Every public result class documents each of its dataclass fields in a numpydoc
``Attributes`` section: an entry ``name : type`` at the section's indentation."""

from __future__ import annotations

import dataclasses
import inspect
import re

import pytest

from dpselect.recipes.bounds import BoundsChoice, ContributionChoice
from dpselect.recipes.grouping import GroupedResult
from dpselect.recipes.hypothesis import HypothesisResult
from dpselect.recipes.preview import PreviewResult, TopKPreview
from dpselect.recipes.pricing import PriceResult
from dpselect.recipes.quantile_result import QuantileResult
from dpselect.recipes.result import Result
from dpselect.recipes.select import SelectionResult
from dpselect.recipes.top_k_result import TopKResult
from dpselect.recipes.tune import TuneResult
from dpselect.recipes.unknown_domain_result import KeysResult

HEADER = "Attributes\n----------"
#: A numpydoc section header: a title line, then a line of dashes as long as it.
SECTION = re.compile(r"^(\S.*)\n(-+)$", re.MULTILINE)
ENTRY = re.compile(r"^(\w+) : \S")

CLASSES = [
    BoundsChoice,
    ContributionChoice,
    GroupedResult,
    HypothesisResult,
    KeysResult,
    PreviewResult,
    PriceResult,
    SelectionResult,
    TopKPreview,
    TopKResult,
    TuneResult,
    QuantileResult,
]


def attribute_entries(doc: str) -> list[str]:
    """The names of the entries of ``doc``'s Attributes section (``[]`` without one): the
    lines ``name : type`` at the section's indentation, up to the next section."""
    start = doc.find(HEADER)
    if start < 0:
        return []
    body = doc[start + len(HEADER) :]
    following = [m for m in SECTION.finditer(body) if len(m.group(2)) == len(m.group(1))]
    if following:
        body = body[: following[0].start()]
    lines = body.splitlines()
    indents = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
    if not indents:
        return []
    level = min(indents)
    return [
        m.group(1)
        for line in lines
        if line.strip() and len(line) - len(line.lstrip()) == level
        for m in [ENTRY.match(line[level:])]
        if m
    ]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_every_field_has_an_attributes_entry(cls):
    assert issubclass(cls, Result) and dataclasses.is_dataclass(cls)
    doc = inspect.getdoc(cls) or ""
    entries = attribute_entries(doc)
    fields = [f.name for f in dataclasses.fields(cls)]
    missing = [name for name in fields if name not in entries]
    assert not missing, f"{cls.__name__}: no Attributes entry for {missing}"


def test_the_parser_reads_entries_and_stops_at_the_next_section():
    doc = (
        "Summary.\n\nAttributes\n----------\nvalues : list\n    The values.\n"
        "    ignored : not an entry (indented)\nledger : str or None\n    A path.\n\n"
        "Methods\n-------\nto_dict : method\n    Not an attribute."
    )
    assert attribute_entries(doc) == ["values", "ledger"]
    assert attribute_entries("No section here.") == []
