"""The Examples section of every task-tier function runs as a doctest (issue 23)."""

from __future__ import annotations

import doctest
import inspect

import pytest

import dpselect

TASK_FUNCTIONS = sorted(n for n in dpselect.__all__ if inspect.isfunction(getattr(dpselect, n)))


@pytest.mark.parametrize("name", TASK_FUNCTIONS)
def test_numpydoc_sections_and_example_runs(name):
    pytest.importorskip("pandas")
    fn = getattr(dpselect, name)
    doc = inspect.getdoc(fn) or ""
    for section in ("Parameters", "Returns", "Raises", "Examples"):
        assert f"{section}\n{'-' * len(section)}" in doc, (name, section)
    if name == "plot_preview":
        pytest.importorskip("matplotlib")
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = finder.find(fn, name, globs={})
    assert tests and tests[0].examples, name
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"
