"""Random datasets given to both engines: a pyarrow table for DuckDB, a frame for Spark."""

import numpy as np
import pyarrow as pa

ARROW = {"long": pa.int64(), "string": pa.string(), "double": pa.float64()}


def random_rows(seed, n=None, nulls=0.1):
    """Rows (user, x, s, d): user id (long, some null), an int value, the same as text, a
    double; about ``nulls`` of each column NULL."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 300)) if n is None else n
    users = rng.integers(0, max(1, n // 4 + 1), n)
    values = rng.zipf(1.6, n) % 40

    def maybe(v):
        return None if rng.random() < nulls else v

    return [
        (maybe(int(u)), maybe(int(x)), maybe(str(int(x))), maybe(float(x) / 4))
        for u, x in zip(users, values, strict=True)
    ]


SCHEMA = [("user", "long"), ("x", "long"), ("s", "string"), ("d", "double")]


def both(spark, rows, schema=SCHEMA):
    """The same rows as a pyarrow table (DuckDB) and a Spark frame, with the same types."""
    from pyspark.sql import types as t

    spark_types = {"long": t.LongType(), "string": t.StringType(), "double": t.DoubleType()}
    columns = list(zip(*rows, strict=True)) if rows else [[] for _ in schema]
    pairs = zip(schema, columns, strict=True)
    table = pa.table({name: pa.array(list(col), type=ARROW[kind]) for (name, kind), col in pairs})
    struct = t.StructType([t.StructField(name, spark_types[kind], True) for name, kind in schema])
    return table, spark.createDataFrame(rows, struct)
