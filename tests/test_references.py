"""docs/references.md is the bibliography: what the code and the docs cite has an entry there.

Three checks, each over the modules (``dpselect/**/*.py``: docstrings, comments and messages)
and the documentation (``README.md``, ``docs/*.md`` except the bibliography itself):

- every seed number (``seed 001``, ``seeds 002, 003``) names a seed with its own entry;
- every abbreviation the code uses for a work (``GJK21``, ``KOV``, ``CKS``, ...) is in the
  bibliography, and the list of those abbreviations here is complete;
- every author-year citation (``Durfee and Rogers 2019``, ``Hay et al. 2010``,
  ``Qiao, Su and Zhang (2021)``) has an entry holding both its surname and its year.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REFERENCES = ROOT / "docs" / "references.md"
SOURCES = [
    *sorted((ROOT / "dpselect").rglob("*.py")),
    ROOT / "README.md",
    *sorted(path for path in (ROOT / "docs").glob("*.md") if path != REFERENCES),
]

#: "seed 001", "Seed 004", "seeds 001, 002", "seeds 002 and 003".
SEED = re.compile(r"\b[Ss]eeds? (\d{3}(?:(?:, | and )\d{3})*)\b")

#: The abbreviations the code and docs use for cited works.
ABBREVIATIONS = (
    "BS16",  # Bun and Steinke 2016
    "CKS",  # Canonne, Kamath and Steinke 2020
    "DDR20",  # Dong, Durfee and Rogers 2020
    "DR19",  # Durfee and Rogers 2019
    "DVGM22",  # Desfontaines, Voss, Gipson and Mandayam 2022
    "GGKSSY20",  # Gopi, Gulhane, Kulkarni, Shen, Shokouhi and Yekhanin 2020
    "GJK21",  # Gillenwater, Joseph and Kulesza 2021
    "GRS",  # Ghosh, Roughgarden and Sundararajan 2009
    "JointExp",  # GJK21's algorithm
    "KOV",  # Kairouz, Oh and Viswanath 2015
    "KSS",  # Kaplan, Schnapp and Stemmer 2022
    "LT19",  # Liu and Talwar 2019
    "PS22",  # Papernot and Steinke 2022
    "QSZ21",  # Qiao, Su and Zhang 2021
    "RS16",  # Raskhodnikova and Smith 2016
)
#: Author initials and a two-digit year, as in ``GJK21``; ``INT96`` is a Parquet type.
ABBREVIATION = re.compile(r"\b[A-Z]{2,}(?:[0-2]\d|[7-9]\d)\b")
NOT_ABBREVIATIONS = {"INT96"}

#: ``Surname [et al.][,] [and Surname ]year``, the year optionally in parentheses; the
#: captured surname is the first of a pair, else the one just before the year.
CITATION = re.compile(
    r"\b((?:Mc)?[A-Z][a-z]+)(?:'s)?(?: et al\.)?,? (?:and (?:Mc)?[A-Z][a-z]+(?:'s)? )?"
    r"\(?((?:19|20)\d\d)\)?(?![\d-])"
)
#: Capitalised words before a number that are not surnames ("Laplace 2000 against 1000").
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December")  # fmt: skip
IGNORE = {"Laplace", *MONTHS}


def _text(path: Path) -> str:
    return re.sub(r"\s+", " ", path.read_text(encoding="utf-8"))


def _sources() -> dict[str, str]:
    return {str(path.relative_to(ROOT)): _text(path) for path in SOURCES}


def _entries() -> list[str]:
    """The bibliography's entries: each list item with its indented continuation lines."""
    entries: list[list[str]] = []
    in_item = False
    for line in REFERENCES.read_text(encoding="utf-8").splitlines():
        if line.startswith("- "):
            entries.append([line[2:]])
            in_item = True
        elif in_item and line.startswith("  "):
            entries[-1].append(line.strip())
        else:
            in_item = False
    return [" ".join(entry) for entry in entries]


def _found(pattern: re.Pattern[str]) -> dict[tuple[str, ...], set[str]]:
    """Each match's groups, with the files they occur in."""
    found: dict[tuple[str, ...], set[str]] = {}
    for name, text in _sources().items():
        for match in pattern.finditer(text):
            found.setdefault(match.groups() or (match.group(0),), set()).add(name)
    return found


def test_the_bibliography_has_entries_and_no_bare_fences():
    entries = _entries()
    assert len(entries) >= 40, len(entries)
    fences = [line for line in REFERENCES.read_text().splitlines() if line.startswith("```")]
    assert not fences, "docs/references.md uses no code fences (the docs test runs each one)"


def test_every_cited_seed_has_an_entry():
    cited: dict[str, set[str]] = {}
    for (numbers,), where in _found(SEED).items():
        for number in re.findall(r"\d{3}", numbers):
            cited.setdefault(number, set()).update(where)
    assert len(cited) >= 5, f"the seed finder found only {sorted(cited)}"
    listed = {m.group(1) for e in _entries() if (m := re.match(r"\*\*seed (\d{3})\*\*", e))}
    missing = {number: sorted(where) for number, where in cited.items() if number not in listed}
    assert not missing, f"seeds cited but not in docs/references.md: {missing}"


@pytest.mark.parametrize("abbreviation", ABBREVIATIONS)
def test_every_abbreviation_has_an_entry(abbreviation):
    word = re.compile(rf"\b{abbreviation}\b")
    assert any(word.search(text) for text in _sources().values()), (
        f"{abbreviation} is no longer used: remove it from ABBREVIATIONS"
    )
    assert any(word.search(entry) for entry in _entries()), (
        f"{abbreviation} is cited but has no entry in docs/references.md"
    )


def test_the_abbreviation_list_is_complete():
    used = {token for (token,) in _found(ABBREVIATION)} - NOT_ABBREVIATIONS
    assert used, "the abbreviation finder found nothing"
    assert used <= set(ABBREVIATIONS), (
        f"new abbreviations {sorted(used - set(ABBREVIATIONS))}: add an entry to "
        "docs/references.md and the name to ABBREVIATIONS (or to NOT_ABBREVIATIONS)"
    )


def test_every_author_year_citation_has_an_entry():
    found = {key: where for key, where in _found(CITATION).items() if key[0] not in IGNORE}
    assert len(found) >= 40, f"the citation finder found only {sorted(found)}"
    entries = _entries()
    missing = {
        f"{surname} {year}": sorted(where)
        for (surname, year), where in sorted(found.items())
        if not any(
            re.search(rf"\b{surname}\b", entry) and re.search(rf"\b{year}\b", entry)
            for entry in entries
        )
    }
    assert not missing, f"citations without an entry (surname and year) in references.md: {missing}"
