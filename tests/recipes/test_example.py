"""The private hyper-parameter example runs as written."""

import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_private_hyperparameter_example_runs(capsys):
    runpy.run_path(str(ROOT / "examples" / "private_hyperparameter.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "selected hypothesis:" in out and "<- chosen privately" in out


def test_tune_logistic_regression_example_runs(capsys):
    import pytest

    pytest.importorskip("sklearn")
    runpy.run_path(str(ROOT / "examples" / "tune_logistic_regression.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "best configuration:" in out and "composition baseline" in out
    assert "random repetition vs composition" in out
