"""``below_noise``: the entries whose released count cannot be told from zero, marked the same
way in ``str()``, ``to_dict()`` / ``--json``, ``to_frame()`` and the CLI table, and its two
error rates checked by simulation (docs/mechanisms_topk_counts.md, "Showing noisy counts").

The rates: with probability at least 97.5%, no entry whose true count is 0 goes unmarked, and
no entry whose true count exceeds ``2 t`` is marked. Each simulation counts the releases that
break the statement and checks the count against the binomial ``(1 - 1e-6)`` quantile at
2.5%; ``test_the_rate_check_fails_on_a_halved_noise_level`` runs the same check on a rule with
``t`` halved (a factor-2 bug) and shows it fails.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
from scipy import stats

import dpselect as dp
from dpselect.sampling import InsecureSeededSource
from tests.gof import ALPHA
from tests.session_queries import session_top_k

CANDIDATES = [f"c{i}" for i in range(20)]
STATED = 0.025  # each direction, over the whole list
TRIALS = 200


def _release(data: pd.DataFrame, mechanism: str, seed: int, **kw):
    delta = 1e-6 if mechanism == "gaussian_histogram" else 0.0
    return session_top_k(
        data,
        "v",
        5,
        1.0,
        candidates=CANDIDATES,
        mechanism=mechanism,
        counts=True,
        delta=delta,
        source=InsecureSeededSource(seed),
        **kw,
    )


def _no_data() -> pd.DataFrame:
    return pd.DataFrame({"v": pd.Series(["other"] * 3, dtype=object)})


def _five_candidates(times: int) -> pd.DataFrame:
    """The first five candidates with ``times`` rows each, the others none: the list holds
    them (no selection bias lifts their counts)."""
    return pd.DataFrame({"v": [c for c in CANDIDATES[:5] for _ in range(times)]})


def test_every_form_marks_the_same_entries():
    marked = 0
    for seed in range(6):
        data = pd.DataFrame({"v": ["c0"] * 60 + ["c1"] * 25 + ["c2"] * 3})
        r = _release(data, "laplace_histogram", seed)
        marks = r.below_noise
        assert marks is not None and len(marks) == len(r.candidates) == 5
        t = r.noise_level
        assert marks == [c <= t for c in r.counts]
        d = json.loads(json.dumps(r.to_dict()))
        assert d["below_noise"] == marks and d["all_below_noise"] == all(marks)
        assert list(r.to_frame()["below_noise"]) == marks
        shown = r.shown_counts()
        assert [s.endswith("(< noise)") for s in shown] == marks
        assert marks[0] is False  # 60 rows: far above a noise level of 6
        marked += sum(marks)
    assert marked > 0


def test_a_ranking_without_counts_marks_nothing():
    r = dp.Session(_no_data(), source=InsecureSeededSource(1)).top_k(
        "v", 3, epsilon=1.0, candidates=CANDIDATES
    )
    assert r.counts is None and r.below_noise is None and not r.all_below_noise
    assert r.to_dict()["below_noise"] is None and "below_noise" not in r.to_frame()


def test_a_list_of_pure_noise_says_so_in_one_line():
    r = _release(_no_data(), "laplace_histogram", 3)
    assert r.all_below_noise
    assert str(r).count("indistinguishable from one drawn from no data") == 1


def test_grouped_rows_and_a_group_of_pure_noise():
    data = pd.DataFrame({"g": ["a"] * 80 + ["b"] * 2, "v": ["c0"] * 80 + ["c1"] * 2})
    r = dp.Session(data, source=InsecureSeededSource(4)).top_k(
        "v",
        3,
        epsilon=2.0,
        candidates=CANDIDATES,
        mechanism="laplace_histogram",
        by="g",
        groups=["a", "b", "z"],
        counts=True,
    )
    rows = r.to_frame()
    assert "below_noise" in rows
    for group, release in zip(r.groups, r.releases, strict=True):
        assert list(rows[rows["group"] == group]["below_noise"]) == release.below_noise
    assert not r.releases[0].all_below_noise and r.releases[2].all_below_noise
    lines = r.lines()
    z_lines = [line for line in lines[1:] if line[0] == "z"]
    assert len(z_lines) == 1 and "below the noise" in z_lines[0][2], lines
    assert len([line for line in lines[1:] if line[0] == "a"]) == 3
    noisy = sum(rel.all_below_noise for rel in r.releases)
    assert any(s.startswith(f"{noisy} groups: every count below the noise") for s in r.summary())
    d = json.loads(json.dumps(r.to_dict()))
    assert [x["below_noise"] for x in d["releases"]] == [x.below_noise for x in r.releases]
    assert all("below_noise" in row for row in d["rows"])


def test_cli_json_carries_the_marks(tmp_path):
    path = tmp_path / "v.csv"
    path.write_text("v\n" + "c0\n" * 50 + "c1\n")
    cmd = [sys.executable, "-m", "dpselect", "top-k", str(path), "--column", "v", "--k", "3",
           "--epsilon", "1", "--candidates", "c0,c1,c2,c3", "--counts", "--json",
           "--insecure-seed", "2"]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    d = json.loads(out)
    assert len(d["below_noise"]) == 3 and d["below_noise"][0] is False
    assert d["below_noise"] == [c <= d["parameters"]["count_halfwidth"] for c in d["counts"]]


def _limit(trials: int) -> int:
    """The most failures a rule with rate ``STATED`` shows in ``trials`` runs, at 1e-6."""
    return int(stats.binom.isf(ALPHA, trials, STATED))


def _failures(mechanism: str, truth: int, factor: float = 1.0) -> tuple[int, int]:
    """Releases that break the statement: on no data, an unmarked entry (true count 0); with
    five candidates at ``2 t + 1`` rows, a marked entry among them. ``factor`` scales the
    rule's ``t`` (1: the library's rule)."""
    t = _release(_no_data(), mechanism, 0).noise_level
    assert t is not None
    data = _no_data() if truth == 0 else _five_candidates(int(2 * t) + 1)
    real = set(CANDIDATES[:5])
    bad = 0
    for seed in range(1, TRIALS + 1):
        r = _release(data, mechanism, seed)
        marks = r.below_noise if factor == 1.0 else [c <= factor * t for c in r.counts]
        assert marks is not None
        if truth == 0:
            bad += not all(marks)
        else:
            bad += any(m for m, c in zip(marks, r.candidates, strict=True) if c in real)
    return bad, t


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", ["laplace_histogram", "gaussian_histogram", "gumbel"])
@pytest.mark.parametrize("truth", [0, 1], ids=["no data", "above 2t"])
def test_the_stated_rates_hold(mechanism, truth):
    bad, _ = _failures(mechanism, truth)
    assert bad <= _limit(TRIALS), (mechanism, truth, bad)


@pytest.mark.slow
def test_the_rate_check_fails_on_a_halved_noise_level():
    bad, _ = _failures("laplace_histogram", 0, factor=0.5)
    assert bad > _limit(TRIALS), bad
    bad, _ = _failures("laplace_histogram", 1, factor=2.0)
    assert bad > _limit(TRIALS), bad
