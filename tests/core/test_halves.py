"""Work in two halves on two threads (dpselect/core/halves.py), and the joint quantile
mechanism's passes in halves: the same floats as in one pass."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from dpselect.core.halves import in_halves
from dpselect.mechanisms import quantile_joint as qj
from dpselect.mechanisms import quantile_joint_moves as qjm
from dpselect.mechanisms import quantile_joint_sums as qjs
from dpselect.sampling import InsecureSeededSource


def test_the_halves_cover_the_range_in_order_on_two_threads_at_once():
    both = threading.Barrier(2, timeout=10)  # one half alone would wait here and fail
    seen: list[tuple[slice, int]] = []

    def work(at: slice) -> tuple[int, int]:
        seen.append((at, threading.get_ident()))
        both.wait()
        return at.start, at.stop

    assert in_halves(work, 9, 2) == [(0, 4), (4, 9)]
    assert len({ident for _, ident in seen}) == 2
    # below the least size: one call, on this thread
    assert in_halves(lambda at: (at.start, at.stop, threading.get_ident()), 9, 10) == [
        (0, 9, threading.get_ident())
    ]
    assert in_halves(lambda at: (at.start, at.stop), 1, 0) == [(0, 1)]


@pytest.mark.parametrize("failing", [0, 1])
def test_an_error_in_either_half_is_raised_after_both_end(failing):
    ended: list[int] = []

    def work(at: slice) -> None:
        half = 0 if at.start == 0 else 1
        try:
            if half == failing:
                raise ValueError(f"half {half}")
        finally:
            ended.append(half)

    with pytest.raises(ValueError, match=f"half {failing}"):
        in_halves(work, 10, 2)
    assert sorted(ended) == [0, 1]


def _releases(values, levels, bounds, seeds):
    return [
        qj.make_joint_quantiles(bounds, levels, 1.0, source=InsecureSeededSource(s))(values)
        for s in seeds
    ]


@pytest.mark.parametrize("levels", [[0.1, 0.5, 0.9], [i / 10 for i in range(1, 10)], [0.25, 0.5]])
def test_the_joint_mechanism_in_halves_releases_the_same_values(monkeypatch, levels):
    # the dynamic program's passes (the range sums' doubling, the parts, the transitions'
    # sums, the repeats' sums) in two halves on two threads, and in one pass: the same
    # floats, so the same draws from the same seeded source
    rng = np.random.default_rng(3)
    for values, bounds in ((rng.normal(50, 10, 4000), (0, 100)),
                           (np.round(rng.lognormal(3, 1, 3000), 1), (0, 500))):  # fmt: skip
        for module in (qj, qjs):  # the passes (quantile_joint) and the range sums' doubling
            monkeypatch.setattr(module, "HALVES_INTERVALS", 10**9)
        one_pass = _releases(values, levels, bounds, range(4))
        for module in (qj, qjs):
            monkeypatch.setattr(module, "HALVES_INTERVALS", 1)
        assert _releases(values, levels, bounds, range(4)) == one_pass


def test_the_moved_rows_counted_in_halves_are_the_same_intervals(monkeypatch):
    # pieces of 16 rows: the two halves of 5000 rows run on two threads; one piece of 2^20
    # rows: one pass on this thread; the same intervals and counts
    rng = np.random.default_rng(5)
    values = np.concatenate([rng.normal(50, 10, 4000), np.full(1000, 50.0)])
    words = qjm.joint_move_words(InsecureSeededSource(2), values.shape[0], 16)
    got = []
    for chunk in (16, 1 << 20):
        monkeypatch.setattr(qjm, "_MOVE_CHUNK", chunk)
        got.append(qjm.joint_moved_intervals(values, 0.0, 100.0, 0.5, words, 16))
    (edges, counts, n), (edges1, counts1, n1) = got
    assert n == n1 == 5000 and np.array_equal(edges, edges1) and np.array_equal(counts, counts1)


def test_a_forked_child_runs_halves_on_a_pool_of_its_own():
    # the parent's pool is made, then a child is forked: its halves must run (the parent's
    # worker threads are not in the child; a pool that kept them would wait forever)
    import os
    import subprocess
    import sys
    import textwrap

    if not hasattr(os, "fork"):
        pytest.skip("no fork here")
    code = textwrap.dedent("""
        import os, sys
        from dpselect.core.halves import in_halves
        assert in_halves(lambda at: at.stop - at.start, 10, 2) == [5, 5]
        pid = os.fork()
        if pid == 0:
            os._exit(0 if in_halves(lambda at: at.stop - at.start, 10, 2) == [5, 5] else 3)
        _, status = os.waitpid(pid, 0)
        sys.exit(os.waitstatus_to_exitcode(status))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr.decode()[-2000:]


def test_one_core_runs_one_pass(monkeypatch):
    from dpselect.core import halves

    monkeypatch.setattr(halves, "_CORES", 1)
    assert in_halves(lambda at: (at.start, at.stop, threading.get_ident()), 9, 2) == [
        (0, 9, threading.get_ident())
    ]
