"""``max_contributions="auto"`` and ``bounds="auto"`` (issue 16, part 2): a private choice,
then the query with it, one composed ledger entry charged before anything is read; refusals
before the charge; the CLI end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpselect as dp
import dpselect.core as dc
from dpselect.accounting.ledger import Ledger
from dpselect.planning.contribution_choice import contribution_choice_cost
from dpselect.planning.contributions import Contributions
from dpselect.planning.quantile_request import quantile_request
from dpselect.planning.value_bounds import bound_bins
from dpselect.recipes import bounds as bounds_module
from dpselect.recipes import choose_bounds, choose_max_contributions, quantile
from dpselect.recipes.quantile_auto_bounds import auto_bound_levels
from dpselect.recipes.top_k import AUTO_FRACTION
from dpselect.sampling import InsecureSeededSource
from tests.session_queries import session_top_k

CANDS = [f"v{i}" for i in range(12)]


def frame(n_light: int = 150, n_heavy: int = 4, seed: int = 1) -> pd.DataFrame:
    """Users with 3 items each, a few with 10; item v0 most common, then v1, ..."""
    rng = np.random.default_rng(seed)  # test data only
    p = np.arange(12, 0, -1, dtype=float)
    p /= p.sum()
    rows = []
    for u in range(n_light + n_heavy):
        n = 3 if u < n_light else 10
        rows += [(f"u{u}", f"v{i}") for i in rng.choice(12, size=n, replace=False, p=p)]
    return pd.DataFrame(rows, columns=["user", "item"])


def test_top_k_auto_one_composed_entry_and_the_chosen_bound_is_used(tmp_path):
    data = frame()
    book = Ledger.create(tmp_path / "l.db", 10.0)
    r = dp.Session(
        data,
        privacy_unit="user",
        contributions=dp.Contributions(values_per_unit="auto"),
        ledger=book,
        source=InsecureSeededSource(5),
    ).top_k("item", 3, epsilon=2.0, candidates=CANDS)
    entries = book.entries()
    assert len(entries) == 1 and entries[0].mechanism == "top_k/max_contributions=auto"
    choice, query = r.parameters["choice_epsilon"], r.parameters["query_epsilon"]
    assert choice <= 2.0 * AUTO_FRACTION and Fraction(choice) + Fraction(query) <= 2
    assert entries[0].epsilon == r.epsilon <= 2.0 and r.epsilon >= 1.999
    m = r.parameters["max_contributions"]
    assert m in r.parameters["max_contributions_candidates"]
    assert f"max_contributions = {m}" in str(r)
    # The same seed replays the same choice: the query ran with the bound GEM released.
    margins = _margins(len(CANDS), 3, query)
    again = choose_max_contributions(
        data, "item", "user", epsilon=Fraction(2.0) * Fraction(AUTO_FRACTION),
        candidates=r.parameters["max_contributions_candidates"],
        penalty=lambda L: margins[L], source=InsecureSeededSource(5),
    )  # fmt: skip
    assert again.max_contributions == m


def _margins(n: int, k: int, eps_q: float) -> dict[int, Fraction]:
    from dpselect.planning.contribution_choice import DEFAULT_CONTRIBUTIONS
    from dpselect.planning.top_k_plan import plan_top_k as _plan

    return {
        L: Fraction(_plan(n, k, eps_q, 0.0, "auto", False, L, None).margin)
        for L in DEFAULT_CONTRIBUTIONS
    }


def test_top_k_auto_margins_follow_the_mechanism():
    # GEM's penalty is the accuracy margin of the top-k at each bound (public): constant for a
    # selection mechanism (L-infinity sensitivity 1 whatever m), growing like m for the
    # Laplace histogram (L1 sensitivity m).
    from dpselect.planning.top_k_plan import plan_top_k as _plan

    gumbel = {m: _plan(12, 2, 6.0, 0.0, "gumbel", False, m, None).margin for m in (1, 16, 256)}
    hist = {
        m: _plan(12, 2, 6.0, 0.0, "laplace_histogram", False, m, None).margin for m in (1, 16, 256)
    }
    assert len(set(gumbel.values())) == 1
    assert hist[1] < hist[16] < hist[256] and hist[256] >= 200 * hist[1]
    # 3 items per person: with the histogram, GEM (eps_c = 10) picks 4 most often.
    data = frame(n_light=300, n_heavy=0)
    auto = dp.Contributions(values_per_unit="auto")
    picks = [
        dp.Session(data, privacy_unit="user", contributions=auto, source=InsecureSeededSource(i))
        .top_k("item", 2, epsilon=40.0, candidates=CANDS, mechanism="laplace_histogram")
        .parameters["max_contributions"]
        for i in range(5)
    ]
    assert max(set(picks), key=picks.count) == 4, picks


def test_top_k_auto_zcdp_ledger_charges_the_composed_rho(tmp_path):
    book = Ledger.create(tmp_path / "z.db", 4.0, 1e-6, accounting="zcdp")
    r = dp.Session(
        frame(),
        privacy_unit="user",
        contributions=dp.Contributions(values_per_unit="auto"),
        ledger=book,
        source=InsecureSeededSource(2),
    ).top_k("item", 2, epsilon=1.0, candidates=CANDS)
    (entry,) = book.entries()
    choice = Fraction(r.parameters["choice_epsilon"])
    assert entry.kind == "zcdp" and entry.rho == r.rho
    assert float(choice**2 / 8) < r.rho <= float(choice**2 / 8 + Fraction(0.75) ** 2 / 8) + 1e-12


def test_most_common_auto_with_delta(tmp_path):
    book = Ledger.create(tmp_path / "l.db", 10.0, 1e-5)

    r = dp.Session(
        frame(),
        privacy_unit="user",
        contributions=dp.Contributions(values_per_unit="auto", auto_share=0.5),
        ledger=book,
        source=InsecureSeededSource(1),
    ).most_common("item", epsilon=1.0, delta=1e-6, candidates=CANDS, mechanism="gumbel")
    assert len(r.candidates) == 1 and r.parameters["auto_fraction"] == 0.5
    assert book.spent()[0] <= 1.0 and book.spent()[1] <= 1e-6


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"values_per_unit": "auto", "privacy_unit": None}, "privacy_unit"),
        ({"values_per_unit": "auto", "candidates": None}, "delta"),
        ({"values_per_unit": "auto", "auto_share": 1.0}, "auto_share"),
        ({"values_per_unit": "auto", "auto_share": "x"}, "auto_share"),
        ({"values_per_unit": 2, "auto_share": 0.5}, "auto_share"),
        ({"values_per_unit": "Auto"}, "values_per_unit"),
        ({"values_per_unit": "auto", "epsilon": 20.0}, "budget"),
    ],
)
def test_top_k_auto_refusals_charge_nothing(tmp_path, kwargs, match):
    book = Ledger.create(tmp_path / "l.db", 10.0, 1e-5)
    args = {"candidates": CANDS, "privacy_unit": "user", "epsilon": 1.0, **kwargs}
    fields = {name: args.pop(name) for name in ("values_per_unit", "auto_share") if name in args}
    eps = args.pop("epsilon")
    with pytest.raises(dc.DPSelectError, match=match):
        bounds = dp.Contributions(**fields)
        session_top_k(frame(20, 0), "item", 2, eps, ledger=book, contributions=bounds, **args)
    assert len(book) == 0


def test_gem_with_a_public_penalty_neighbours_exact():
    """Every dataset of 3 people with 1..4 values and each neighbour (one person added with
    1..6 values): with a public penalty (as the top-k margins) GEM's exact output laws differ
    by at most epsilon; a penalty computed from the data (4 n L, n the number of people)
    breaks the sensitivity Delta_L = L and exceeds it."""
    import itertools

    from dpselect.mechanisms.generalized_exponential import GRID_BITS, gem_shifts, gem_threshold
    from dpselect.recipes.bounds import contribution_scores

    eps, cands = Fraction(1), [1, 2, 4]
    deltas = [Fraction(L) for L in cands]
    t = gem_threshold(3, 0.05, eps)
    scale = Fraction(dc.float_up(2 * (1 + Fraction(1, 1 << GRID_BITS)) / eps))

    def law(counts, penalties):
        z = gem_shifts(contribution_scores(counts, cands, None, penalties), deltas, t)
        z = np.asarray([int(v) for v in z], dtype=float) / (float(scale) * (1 << GRID_BITS))
        w = np.exp(z - z.max())
        return w / w.sum()

    def worst(penalty):
        out = 0.0
        for base in itertools.product(range(1, 5), repeat=3):
            p = law(list(base), penalty(list(base)))
            for extra in range(1, 7):
                q = law([*base, extra], penalty([*base, extra]))
                out = max(out, float(np.max(np.abs(np.log(p) - np.log(q)))))
        return out

    public = worst(lambda c: [Fraction(0), Fraction(3), Fraction(40)])
    assert 0.1 < public <= 1.0 + 1e-9
    assert worst(lambda c: [Fraction(4 * len(c) * L) for L in cands]) > 1.1


def test_choose_max_contributions_penalty_is_checked_before_the_charge(tmp_path):
    book = Ledger.create(tmp_path / "l.db", 10.0)
    for bad in (3, lambda L: float("nan"), lambda L: "x"):
        with pytest.raises(dc.ParameterError, match="penalty"):
            choose_max_contributions(
                frame(20, 0), "item", "user", epsilon=1.0, penalty=bad, ledger=book
            )
    assert len(book) == 0
    assert contribution_choice_cost(0.5) <= 0.5


# ----------------------------------------------------------------------------- bounds="auto"
def normal_frame(n: int = 6000) -> pd.DataFrame:
    return pd.DataFrame({"x": np.random.default_rng(4).normal(100, 10, n)})  # test data


def test_quantile_auto_bounds_one_entry(tmp_path):
    book = Ledger.create(tmp_path / "l.db", 10.0)
    r = quantile(
        normal_frame(),
        quantile_request("x", 0.5, 1.0, bounds="auto"),
        ledger=book,
        source=InsecureSeededSource(3),
    )
    (entry,) = book.entries()
    assert entry.mechanism == "quantile/bounds=auto" and entry.epsilon == r.epsilon
    assert 0.999 <= r.epsilon <= 1.0
    assert r.parameters["bounds"] == [0.0, 128.0] and 95 < r.values[0] < 105
    assert any(line.startswith("bounds: [0, 128]") for line in r.notes)
    assert entry.kind == "pure"  # the bounds' histogram adds Laplace noise
    assert Fraction(r.parameters["choice_epsilon"]) + Fraction(r.parameters["query_epsilon"]) <= 1


def test_auto_bound_levels_cover_the_requested_levels():
    assert auto_bound_levels([Fraction(1, 2)]) == (0.05, 0.95)
    assert auto_bound_levels([Fraction(1, 20), Fraction(19, 20)]) == (0.05, 0.95)
    assert auto_bound_levels([Fraction(1, 100), Fraction(1, 2)]) == (0.01, 0.95)
    assert auto_bound_levels([Fraction(1)]) == (0.05, 0.99)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"bounds": "auto", "candidates": [1, 2]}, "candidates"),
        ({"bounds": "auto", "resolution": 0.1}, "resolution"),
        ({"bounds": "auto", "auto_share": 0.0}, "auto_share"),
        ({"bounds": (0, 1), "auto_share": 0.5}, "auto_share"),
        ({"bounds": "automatic"}, "bounds"),
        ({"bounds": "auto", "mechanism": "recursive", "q": 0.5, "column": "nope"}, "nope"),
        ({"bounds": "auto", "epsilon": 20.0}, "budget"),
    ],
)
def test_quantile_auto_refusals_charge_nothing(tmp_path, kwargs, match):
    book = Ledger.create(tmp_path / "l.db", 10.0)
    args = {"column": "x", "q": 0.5, "epsilon": 1.0, **kwargs}
    with pytest.raises(dc.DPSelectError, match=match):
        if "auto_share" in args:
            args["contributions"] = Contributions(auto_share=args.pop("auto_share"))
        request = quantile_request(args.pop("column"), args.pop("q"), args.pop("epsilon"), **args)
        quantile(normal_frame(50), request, ledger=book)
    assert len(book) == 0


def test_choose_bounds_swapped_bins_give_their_hull(monkeypatch):
    # Noise may put the low level's bin above the high level's: [16, 32) then [8, 16). The
    # bounds are the hull [8, 32], never the empty [16, 16] (which the quantile would refuse
    # after the charge, depending on the rows).
    bins = bound_bins()
    picks = iter([bins.index((16.0, 32.0)), bins.index((8.0, 16.0))])

    class Fixed:
        def __call__(self, scores):
            return next(picks)

        def map(self, d_in):
            return 0.5

    monkeypatch.setattr(bounds_module, "_bin_mechanisms", lambda *a: [Fixed(), Fixed()])
    r = choose_bounds(normal_frame(10), "x", 1.0, method="levels")
    assert (r.lower, r.upper) == (8.0, 32.0)


# ----------------------------------------------------------------------------- the CLI
@pytest.fixture
def cli(capsys):
    """``dpselect ARGS`` in this process (``main``, as the ``dpselect`` script runs it)."""
    from dpselect.cli.main import main

    def run(*args):
        capsys.readouterr()
        with pytest.raises(SystemExit) as stop:
            main([str(a) for a in args])
        captured = capsys.readouterr()
        return stop.value.code, captured.out, captured.err

    return run


def test_python_m_dpselect_takes_bounds_auto(tmp_path):
    path = tmp_path / "d.csv"
    normal_frame(3000).to_csv(path, index=False)
    proc = subprocess.run(
        [sys.executable, "-m", "dpselect", "quantile", str(path), "--column", "x", "--q",
         "0.5", "--epsilon", "2", "--bounds", "auto", "--json", "--insecure-seed", "1"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["parameters"]["bounds"] == [0.0, 128.0]


def test_cli_top_k_and_quantile_auto_end_to_end(tmp_path, cli):
    path = tmp_path / "d.csv"
    data = frame()
    data["x"] = np.random.default_rng(2).normal(100, 10, len(data)).round(3)  # test data
    data.to_csv(path, index=False)
    ledger = tmp_path / "l.db"
    assert cli("budget", "init", "--ledger", ledger, "--epsilon", 5)[0] == 0
    code, out, err = cli(
        "top-k", path, "--column", "item", "--k", 2, "--epsilon", 1, "--privacy-unit", "user",
        "--max-contributions", "auto", "--candidates", ",".join(CANDS), "--ledger", ledger,
        "--insecure-seed", 4,
    )  # fmt: skip
    assert code == 0, err
    assert "max_contributions = " in out and "chosen privately" in out
    code, out, err = cli(
        "mode", path, "--column", "item", "--epsilon", 1, "--privacy-unit", "user",
        "--max-contributions", "auto", "--auto-fraction", 0.5, "--candidates", ",".join(CANDS),
        "--ledger", ledger, "--json", "--insecure-seed", 4,
    )  # fmt: skip
    assert code == 0, err
    result = json.loads(out)
    assert isinstance(result["parameters"]["max_contributions"], int)
    assert result["parameters"]["choice_epsilon"] <= 0.5 and result["epsilon"] <= 1.0
    code, out, err = cli(
        "quantile", path, "--column", "x", "--q", 0.5, "--epsilon", 1, "--bounds", "auto",
        "--schema", "x:DOUBLE", "--ledger", ledger, "--insecure-seed", 4,
    )  # fmt: skip
    assert code == 0, err
    assert "bounds: [" in out and "chosen privately" in out
    book = Ledger.open(ledger)
    entries = book.entries()
    assert [e.mechanism for e in entries] == [
        "top_k/max_contributions=auto",
        "top_k/max_contributions=auto",
        "quantile/bounds=auto",
    ]
    assert all(e.epsilon <= 1.0 for e in entries) and book.spent()[0] <= 3.0


@pytest.mark.parametrize(
    "args, match",
    [
        (["top-k", "--k", 2, "--max-contributions", "auto", "--candidates", "v0,v1"],
         "--privacy-unit"),
        (["top-k", "--k", 2, "--max-contributions", "auto", "--privacy-unit", "user"],
         "delta"),
        (["top-k", "--k", 2, "--max-contributions", "auto", "--privacy-unit", "user",
          "--candidates", "v0,v1", "--plan"], "--plan"),
        (["top-k", "--k", 2, "--max-contributions", "lots", "--privacy-unit", "user",
          "--candidates", "v0,v1"], "max-contributions"),
        (["top-k", "--k", 2, "--max-contributions", 2, "--auto-fraction", 0.5,
          "--privacy-unit", "user", "--candidates", "v0,v1"], "auto-fraction"),
        (["top-k", "--k", 2, "--max-contributions", "auto", "--auto-fraction", 2,
          "--privacy-unit", "user", "--candidates", "v0,v1"], "--auto-fraction must be"),
        (["quantile", "--q", 0.5, "--bounds", "auto", "--candidates", "1,2"], "candidates"),
        (["quantile", "--q", 0.5, "--bounds", "auto", "--resolution", 0.1], "resolution"),
        (["quantile", "--q", 0.5, "--bounds", 0, 1, "--auto-fraction", 0.5], "auto-fraction"),
        (["quantile", "--q", 0.5, "--bounds", "auto", "--epsilon", 50], "budget"),
        (["quantile", "--q", 0.75, "--q", 0.25, "--bounds", 0, 1],
         "--q: levels must be strictly increasing (each once, in order), got [0.75, 0.25]: the "
         "default method (auto"),
        (["quantile", "--q", 0.5, "--q", 0.5, "--bounds", 0, 1, "--mechanism", "tree"],
         "--mechanism tree answers several levels together"),
    ],
)  # fmt: skip
def test_cli_auto_refusals_one_line_exit_2_nothing_charged(tmp_path, cli, args, match):
    path = tmp_path / "d.csv"
    pd.DataFrame({"user": ["a", "b"], "item": ["v0", "v1"], "x": [1.0, 2.0]}).to_csv(
        path, index=False
    )
    ledger = tmp_path / "l.db"
    Ledger.create(ledger, 10.0).close()
    column = "x" if args[0] == "quantile" else "item"
    rest = list(args[1:])
    if "--epsilon" not in rest:
        rest += ["--epsilon", 1]
    code, _out, err = cli(args[0], path, "--column", column, *rest, "--ledger", ledger)
    assert code == 2 and len(err.strip().splitlines()) == 1 and match in err, err
    assert len(Ledger.open(ledger)) == 0


def test_messages_quote_what_was_typed_briefly():
    """A column object where a name is expected is named by its type and name, not printed;
    unsorted levels name q and the methods that need order, not one method never chosen."""
    data = pd.DataFrame({"item": ["v0", "v1"] * 200, "user": range(400), "x": 1.0})
    for kw in ({"privacy_unit": data["user"]}, {"by": data["item"]}):
        with pytest.raises(dc.DPSelectError) as err:
            dp.top_k(data, "item", 1, epsilon=1.0, candidates=["v0"], **kw)
        text = str(err.value)
        assert "\n" not in text and len(text) < 120, text
        assert "a pandas Series named" in text and "Length" not in text, text
    with pytest.raises(dc.ParameterError, match=r"q must be strictly increasing.*'split'"):
        quantile(data, quantile_request("x", [0.75, 0.25], 1.0, bounds=(0, 2)))
    r = quantile(
        data,
        quantile_request("x", [0.75, 0.25], 1.0, bounds=(0, 2), mechanism="split"),
        source=InsecureSeededSource(1),
    )
    assert len(r.values) == 2
