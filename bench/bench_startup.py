"""Start-up time of the ``dpselect`` command and library, against ``python -c pass``.

Run: ``python bench/bench_startup.py [--repeats 7]``. Each row is the median wall time of
``repeats`` fresh subprocesses (the same interpreter as this script, run from the repository
root so that this checkout is imported); the ratio column divides by the median of
``python -c pass`` timed in the same run, and the last column subtracts it. The small top-k
reads a 1,000-row CSV written to a temporary directory, with a public candidate list.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _time(cmd: list[str], repeats: int, env: dict[str, str]) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    py = sys.executable
    cli = [py, "-m", "dpselect"]
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "small.csv"
        data.write_text("colour\n" + "".join(f"c{i % 7}\n" for i in range(1000)))
        cands = Path(tmp) / "candidates.txt"
        cands.write_text("".join(f"c{i}\n" for i in range(7)))
        top_k = [*cli, "top-k", str(data), "--column", "colour", "--k", "3", "--epsilon", "1"]
        rows = {
            "python -c pass": [py, "-c", "pass"],
            "python -c 'import dpselect'": [py, "-c", "import dpselect"],
            "dpselect --version": [*cli, "--version"],
            "dpselect --help": [*cli, "--help"],
            "dpselect top-k --help": [*cli, "top-k", "--help"],
            "dpselect top-k (1,000-row CSV, 7 candidates)": [*top_k, "--candidates", str(cands)],
        }
        medians = {}
        print(f"median of {args.repeats} fresh processes; {os.cpu_count()} cores")
        print(f"{'command':46} {'median s':>9} {'ratio':>7} {'minus baseline':>15}")
        for name, cmd in rows.items():
            medians[name] = _time(cmd, args.repeats, env)
            base = medians["python -c pass"]
            print(
                f"{name:46} {medians[name]:9.3f} {medians[name] / base:6.1f}x "
                f"{medians[name] - base:14.3f}"
            )


if __name__ == "__main__":
    main()
