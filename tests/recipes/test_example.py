"""The private hyper-parameter example runs as written."""

import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_private_hyperparameter_example_runs(capsys):
    runpy.run_path(str(ROOT / "examples" / "private_hyperparameter.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "selected hypothesis:" in out and "<- chosen privately" in out


def test_tune_logistic_regression_example_runs(capsys):
    """Seeded through an explicit source (the configurations, the number of runs and every
    noise draw): the output is reproducible, and the run time does not depend on an
    unseeded draw of the number of runs (logarithmic law, a heavy tail)."""
    import pytest

    from dpselect.sampling import InsecureSeededSource

    pytest.importorskip("sklearn")
    example = runpy.run_path(
        str(ROOT / "examples" / "tune_logistic_regression.py"), run_name="example"
    )
    outputs = []
    for _ in range(2):
        example["main"](source=InsecureSeededSource(3))
        outputs.append(capsys.readouterr().out)
    out = outputs[0]
    assert "best configuration:" in out and "composition baseline" in out
    assert "random repetition vs composition" in out
    assert outputs[0] == outputs[1]
