"""The engines of the data layer, each an implementation of :class:`dpselect.data.Engine`:

- :mod:`~dpselect.data.engines.duckdb`: embedded DuckDB (the default and the test oracle);
  the methods of :class:`dpselect.data.tables.Table`;
- :mod:`~dpselect.data.engines.spark`: a PySpark DataFrame (:class:`~.spark.SparkTable`),
  imported only when a Spark frame or ``--engine spark`` is used.

:func:`dpselect.data.tables.open_table` picks the engine from the type of the data.
"""
