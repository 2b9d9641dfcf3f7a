"""One local Spark session for the whole test run (skipped, with the reason, without Spark).

Settings from the GUIDE: ``local[1]``, one shuffle partition, adaptive execution off, the
serial GC and the C1 compiler only (start about 8 s on 2 cores).
"""

import warnings

import pytest

warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")

TEST_CONF = {
    "spark.sql.shuffle.partitions": "1",
    "spark.sql.adaptive.enabled": "false",
    "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
    "spark.sql.session.timeZone": "UTC",
}


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark", reason="pyspark is not installed: pip install 'dpselect[spark]'")
    from dpselect.core.errors import DataError
    from dpselect.data.engines.spark import spark_session

    try:
        session = spark_session("local[1]", **TEST_CONF)
    except DataError as exc:  # no JVM
        pytest.skip(f"no Spark session: {exc}")
    session.sparkContext.setLogLevel("ERROR")
    yield session
