"""The ``dpselect`` command, end to end in a subprocess: outputs, exit codes, the ledger."""

import gzip
import json
from concurrent.futures import ThreadPoolExecutor

import pandas as pd
import pytest

from dpselect.accounting.ledger import Ledger

from .cli_process import run_cli

SITES = ["news", "mail", "search", "video", "maps", "absent"]


def run(*args, cwd=None):
    return run_cli(*args, cwd=cwd, columns=120)


def run_all(commands):
    """Run several commands at once (each is its own process): the suite stays fast."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda c: run(*c), commands))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    weights = [400, 200, 100, 50, 25]
    pairs = zip(SITES[:5], weights, strict=True)
    rows = [(f"u{(i * 7 + j) % 300}", s) for s, w in pairs for i in range(w) for j in range(2)]
    df = pd.DataFrame(rows, columns=["user_id", "site"])
    df.to_parquet(root / "visits.parquet", index=False)
    df.to_csv(root / "visits.csv", index=False)
    (root / "sites.txt").write_text("\n".join(SITES) + "\n")
    (root / "garbage.parquet").write_bytes(b"\x00\x01 this is not parquet" * 20)
    packed = gzip.compress((root / "visits.csv").read_bytes())
    (root / "truncated.csv.gz").write_bytes(packed[: len(packed) // 2])
    flipped = bytearray(packed)
    flipped[len(packed) // 2] ^= 0x10  # DuckDB alone read this one silently (no CRC check)
    (root / "flipped.csv.gz").write_bytes(bytes(flipped))
    return root


@pytest.fixture
def ledger(tmp_path):
    path = tmp_path / "budget.ledger"
    result = run("budget", "init", "--ledger", path, "--epsilon", 1.5, "--delta", 1e-5)
    assert result.returncode == 0, result.stderr
    assert "created ledger" in result.stdout and "epsilon = 1.5" in result.stdout
    return path


def base(files, *extra):
    return ["top-k", files / "visits.parquet", "--column", "site", "--k", 2, "--epsilon", 1,
            "--candidates", files / "sites.txt", *extra]  # fmt: skip


def test_table_output(files):
    result = run(*base(files, "--insecure-seed", 1))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "private top-2" in out and "rank" in out and "candidate" in out
    assert "news" in out and "privacy cost: epsilon = 1, delta = 0" in out
    assert "accuracy:" in out and "mechanism:" in out
    assert "NOT private" in result.stderr  # the insecure seed warns


def test_json_output_schema_and_seed(files):
    a, b, counts = run_all(
        [
            base(files, "--json", "--insecure-seed", 4),
            base(files, "--json", "--insecure-seed", 4),
            base(files, "--json", "--counts", "--privacy-unit", "user_id",
                 "--max-contributions", 2),
        ]
    )  # fmt: skip
    assert a.returncode == b.returncode == counts.returncode == 0, (a.stderr, counts.stderr)
    out = json.loads(a.stdout)
    assert a.stdout == b.stdout  # same seed, same answer
    assert set(out) == {
        "candidates", "indices", "mechanism", "epsilon", "delta", "rho", "accuracy", "counts",
        "ledger", "parameters", "stopped_early", "below_noise", "all_below_noise",
    }  # fmt: skip
    assert isinstance(out["candidates"], list) and len(out["candidates"]) == 2
    assert all(c in SITES for c in out["candidates"])
    assert [SITES[i] for i in out["indices"]] == out["candidates"]
    assert out["epsilon"] == 1.0 and out["delta"] == 0.0 and out["rho"] > 0
    assert out["counts"] is None and out["ledger"] is None and out["stopped_early"] is False
    # the mechanism is chosen from public parameters (k = 2 of 12, one row a person)
    assert out["parameters"]["k"] == 2 and out["parameters"]["mechanism"] == "laplace_histogram"
    with_counts = json.loads(counts.stdout)
    assert len(with_counts["counts"]) == 2 and all(
        isinstance(c, int) for c in with_counts["counts"]
    )
    assert with_counts["parameters"]["privacy_unit"] == "user_id"


def test_mode_counts_table_and_csv(files):
    mode, counted = run_all(
        [
            ["mode", files / "visits.csv", "--column", "site", "--epsilon", 2,
             "--candidates", files / "sites.txt"],
            base(files, "--counts"),
        ]
    )  # fmt: skip
    assert mode.returncode == 0, mode.stderr
    assert "private top-1" in mode.stdout and "news" in mode.stdout
    assert counted.returncode == 0 and "noisy count" in counted.stdout


def test_limited_domain_without_candidates(files):
    result = run("top-k", files / "visits.parquet", "--column", "site", "--k", 2, "--epsilon",
                 2, "--delta", 1e-6, "--mechanism", "gumbel", "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["delta"] == 1e-6 and out["epsilon"] <= 2.0 and out["indices"] is None
    assert set(out["candidates"]) <= set(SITES) and len(out["candidates"]) <= 2
    assert out["parameters"]["k_bar"] == 12


BAD_INPUTS = {
    "missing file": (["--column", "site"], "missing.parquet", "does not exist"),
    "garbage parquet": (["--column", "site"], "garbage.parquet", "cannot read"),
    "truncated gzip": (["--column", "site"], "truncated.csv.gz", "not a complete gzip stream"),
    "corrupt gzip": (["--column", "site"], "flipped.csv.gz", "not a complete gzip stream"),
    "unsupported format": (["--column", "site"], "sites.txt", "unsupported format"),
    "missing column": (["--column", "nope"], None, "'nope' is not a column"),
    "missing unit": (["--column", "site", "--privacy-unit", "who"], None, "--privacy-unit 'who'"),
    "k < 1": (["--column", "site", "--k", 0], None, "k must be at least 1"),
    "eps = 0": (["--column", "site", "--epsilon", 0], None, "epsilon"),
    "eps < 0": (["--column", "site", "--epsilon", -1], None, "epsilon"),
    "no candidates file": (["--column", "site", "--candidates", "none.txt"], None, "none.txt"),
    "no candidates, no delta": (["--column", "site", "--candidates", ""], None, "give delta"),
    "k not an int": (["--column", "site", "--k", "two"], None, "'two' is not a valid integer"),
    "unknown option": (["--column", "site", "--colour", "red"], None, "--colour"),
}


def bad_command(files, ledger, extra, file, cwd):
    args = {"--k": 2, "--epsilon": 1, "--candidates": files / "sites.txt"}
    flags = []
    for key, value in zip(extra[::2], extra[1::2], strict=True):
        if key in args:
            args[key] = value
        else:
            flags += [key, value]
    if args["--candidates"] == "":
        del args["--candidates"]
    elif args["--candidates"] == "none.txt":
        args["--candidates"] = cwd / "none.txt"
    data = files / (file or "visits.parquet")
    options = [str(x) for kv in args.items() for x in kv]
    return ["top-k", data, *options, *flags, "--ledger", ledger]


def test_every_bad_input_one_line_exit_2_nothing_charged(files, ledger, tmp_path):
    names = list(BAD_INPUTS)
    commands = [bad_command(files, ledger, *BAD_INPUTS[n][:2], tmp_path) for n in names]
    for name, result in zip(names, run_all(commands), strict=True):
        match = BAD_INPUTS[name][2]
        assert result.returncode == 2, (name, result.stdout, result.stderr)
        assert result.stdout == "", name
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:"), (name, result.stderr)
        assert "Traceback" not in result.stderr and match in lines[0], (name, lines)
    book = Ledger.open(str(ledger))
    assert book.spent() == (0.0, 0.0) and book.entries() == []


def test_ledger_charge_refusal_and_show(files, ledger):
    first = run(*base(files, "--ledger", ledger))
    assert first.returncode == 0, first.stderr
    assert f"charged to the ledger {ledger}" in first.stdout
    over = run(*base(files, "--ledger", ledger))  # 1 + 1 > 1.5: refused
    assert over.returncode == 2 and over.stdout == ""
    line = over.stderr.strip()
    assert "\n" not in line and line.startswith("error: refused, over budget")
    assert "remaining" in line and "0.5" in line
    show, show_json = run_all(
        [["budget", "show", "--ledger", ledger], ["budget", "show", "--ledger", ledger, "--json"]]
    )
    assert show.returncode == 0 and "remaining: epsilon = 0.5" in show.stdout
    assert "top_k/laplace_histogram" in show.stdout  # the mechanism chosen for k = 2 of 12
    info = json.loads(show_json.stdout)
    assert info["entries"] == 1 and info["spent"]["epsilon"] == 1.0
    assert info["remaining"]["epsilon"] == pytest.approx(0.5)
    assert info["budget"] == {"epsilon": 1.5, "delta": 1e-5}
    assert Ledger.open(str(ledger)).spent() == (1.0, 0.0)


def test_budget_errors(tmp_path, ledger):
    again, bad_eps, missing = run_all(
        [
            ["budget", "init", "--ledger", ledger, "--epsilon", 1],
            ["budget", "init", "--ledger", tmp_path / "new.ledger", "--epsilon", -1],
            ["budget", "show", "--ledger", tmp_path / "missing.ledger"],
        ]
    )
    for result in (again, bad_eps, missing):
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith("error:") and len(result.stderr.strip().splitlines()) == 1
        assert "Traceback" not in result.stderr
    assert Ledger.open(str(ledger)).budget == (1.5, 1e-5)  # not overwritten


def test_plan_weighs_candidates_that_match_one_value(tmp_path, capsys):
    """--plan calibrates the histograms as top_k does: '4' and '04' both match the integer 4
    (one row moves two scores: match_multiplicity 2), read from the type and the list only."""
    import json

    from dpselect.cli.main import main
    from dpselect.recipes.preview import preview_top_k

    path = tmp_path / "d.csv"
    path.write_text("v\n4\n5\n4\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["top-k", str(path), "--column", "v", "--k", "1", "--epsilon", "1",
              "--candidates", "4,04,5", "--schema", "v:BIGINT", "--plan", "--json"])  # fmt: skip
    assert exit_info.value.code == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown == json.loads(
        json.dumps(preview_top_k(1, 3, 1.0, delta=0.0, max_contributions=2).to_dict())
    )
    assert shown != json.loads(
        json.dumps(preview_top_k(1, 3, 1.0, delta=0.0, max_contributions=1).to_dict())
    )


def test_budget_show_never_cuts_a_label(tmp_path):
    """At 80 columns, long mechanism and source labels wrap onto more lines, never end in an
    ellipsis; the time is shown to the second."""
    path = tmp_path / "l.db"
    book = Ledger.create(path, 10.0, 1e-5)
    label = "quantile/by/private_groups/recursive_and_a_very_long_mechanism_label"
    book.charge(0.5, mechanism=label, source="file '/a/rather/long/path/to/some/data.parquet'")
    book.close()
    show = run_cli("budget", "show", "--ledger", path, columns=80)
    assert show.returncode == 0, show.stderr
    assert "…" not in show.stdout, show.stdout
    cells = [line.split("│")[2].strip() for line in show.stdout.splitlines()
             if line.startswith("│")]  # fmt: skip
    assert "".join(cells) == label, show.stdout
    assert "+00:00" not in show.stdout and "UTC" in show.stdout
