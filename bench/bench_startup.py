"""Start-up time of the ``dpselect`` command and library, against ``python -c pass``.

Run: ``python bench/bench_startup.py [--repeats 7]``. Each row is the median wall time of
``repeats`` fresh subprocesses (the same interpreter as this script, run from the repository
root so that this checkout is imported); the ratio column divides by the median of
``python -c pass`` timed in the same run, the next column subtracts it, and the last is the
child's CPU time (user + system), which a loaded shared machine inflates less than wall time.
The small top-k reads a 1,000-row CSV written to a temporary directory, with a public
candidate list. Byte code is cached (in a temporary ``PYTHONPYCACHEPREFIX``, even when
``PYTHONDONTWRITEBYTECODE`` is set) and each command runs once untimed first, as an installed
package would start.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _time(cmd: list[str], repeats: int, env: dict[str, str], root: Path) -> tuple[float, float]:
    """Median wall time and median CPU time (user + system) of the child, in seconds."""
    walls, cpus = [], []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, cwd=root, env=env, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--root", type=Path, default=ROOT, help="checkout to import (e.g. an older version)"
    )
    args = parser.parse_args()
    root = args.root.resolve()
    py = sys.executable
    cli = [py, "-m", "dpselect"]
    with tempfile.TemporaryDirectory() as tmp:
        # Byte code cached as an installed package has it (outside the checkout), warmed up
        # by one untimed run of each command.
        env = dict(os.environ, PYTHONPATH=str(root), PYTHONPYCACHEPREFIX=str(Path(tmp) / "pyc"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
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
        print(f"median of {args.repeats} fresh processes; {os.cpu_count()} cores")
        print(f"{'command':46} {'wall s':>7} {'ratio':>6} {'minus base':>10} {'cpu s':>6}")
        base = 0.0
        for name, cmd in rows.items():
            _time(cmd, 1, env, root)  # warm-up: byte code, file cache
            wall, cpu = _time(cmd, args.repeats, env, root)
            base = base or wall
            print(f"{name:46} {wall:7.3f} {wall / base:5.1f}x {wall - base:10.3f} {cpu:6.3f}")


if __name__ == "__main__":
    main()
