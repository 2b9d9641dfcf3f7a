"""The Spark engine's one reader: files read into a Spark frame (:func:`read_files`, the only
Spark read of Parquet in dpselect, tests/data/test_one_reader.py), a CSV's declared types checked
from public facts before Spark starts (:func:`check_text_schema`), and every frame the engine
opens read NaN-safe (:func:`nan_safe_frame`) with collated text read by its bytes
(:func:`_binary_text`). Also :func:`is_spark_frame`, which recognises a frame (classic or Spark
Connect) by its class's module, without importing pyspark.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ....core.errors import DataError, ParameterError
from ...text_casts import SPARK_TEXT_TYPES, declared_text_sql
from ...values import read_value_sql
from ..spark_session import import_pyspark as _import_pyspark
from .columns import _spark_quote

__all__ = [
    "check_text_schema",
    "is_spark_frame",
    "nan_safe_frame",
    "read_files",
]


# ----------------------------------------------------------------------------- recognising
def is_spark_frame(obj: Any) -> bool:
    """Whether ``obj`` is a PySpark DataFrame (classic or Spark Connect), without importing it."""
    module = type(obj).__module__
    return module.split(".")[0] == "pyspark" and type(obj).__name__ == "DataFrame"


#: Readers by suffix: Spark's reader and its options (CSV and JSON: every column text).
_SPARK_READERS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".tsv": "csv",
}
# JSON lines are not read by the Spark engine: Spark finds a JSON file's columns by scanning
# its rows, so one person's record could add a column (and change an error into a result).
# DuckDB's reader (the default engine) takes the columns from the query instead.


def _reader_kind(path: str) -> tuple[str, str]:
    """Spark's reader of ``path`` and the path's suffix, from the path alone (a directory:
    Parquet); :class:`DataError` for a missing file or a format Spark does not read."""
    p = Path(path)
    suffix = p.suffix.lower()
    if p.is_dir():
        suffix = ".parquet"
    elif not any(ch in path for ch in "*?[") and not p.exists():
        raise DataError(f"data file {path!r} does not exist")
    kind = _SPARK_READERS.get(suffix)
    if kind is None:
        raise DataError(
            f"data path {path!r} has an unsupported format for Spark "
            f"(use {', '.join(sorted(_SPARK_READERS))}, or a directory of Parquet parts)"
        )
    return kind, suffix


def check_text_schema(path: str, schema: Any) -> dict[str, str]:
    """The declared ``schema`` (:func:`dpselect.data.schema.parse_schema`) for reading
    ``path`` with Spark, checked from public facts only (the path's suffix, the schema),
    before Spark starts and before anything is charged.

    A CSV or TSV file's columns are text, read as the declared types by the rule both engines
    share (:func:`dpselect.data.rules.declared_text_sql`): a type the rule does not convert
    on Spark (:data:`dpselect.data.rules.SPARK_TEXT_TYPES`; e.g. ``DECIMAL(10,2)``,
    ``TIMESTAMP``, ``HUGEINT``) is refused, naming the column. Parquet's types are its own
    (checked against the schema when the table opens, :func:`open_spark_table`).

    Parameters
    ----------
    path : str
        The file, glob or directory to read.
    schema : dict, str or None
        The declared types.

    Returns
    -------
    dict of str to str
        The schema as ``{column: DuckDB type}``.

    Raises
    ------
    DataError
        The path does not exist or has a format Spark does not read.
    ParameterError
        A malformed schema, or a declared type that Spark does not read from CSV text.
    """
    from ...schema import parse_schema

    declared = parse_schema(schema)
    kind, _ = _reader_kind(path)
    if kind == "csv":
        for column, duck_type in declared.items():
            if duck_type.upper() not in SPARK_TEXT_TYPES:
                raise ParameterError(
                    f"schema declares {column!r} as {duck_type}, which the Spark engine does "
                    f"not read from CSV text (it reads {', '.join(SPARK_TEXT_TYPES)}; "
                    "docs/data_input.md, 'Declared types for text columns'): declare one of "
                    "those, or use --engine duckdb"
                )
    return declared


def read_files(spark: Any, path: str, schema: Any = None) -> Any:
    """A Spark frame over a file, a glob of files or a directory of Parquet parts.

    The schema is public: Parquet's own; CSV's header with every column text (no inference),
    each column declared in ``schema`` read as its type by the rule both engines share
    (:func:`dpselect.data.rules.declared_text_sql`; :func:`check_text_schema` refuses a type
    the rule does not read on Spark), so that DuckDB and Spark read the same file to the same
    values; JSON is refused (its columns would come from the rows). The format comes from the
    suffix (a directory: Parquet).

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        The session that reads the files.
    path : str
        A file, a glob of files or a directory of Parquet parts.
    schema : dict, str or None
        Declared types (:func:`dpselect.data.schema.parse_schema`). A Parquet frame is
        returned as it is (its types are checked against the schema when the table opens);
        a declared column absent from a CSV header is left to that check too.

    Returns
    -------
    pyspark.sql.DataFrame
        The frame (not yet read: Spark reads the files when a query runs).

    Raises
    ------
    DataError
        A missing path, an unsupported format, a header that is not UTF-8, or Spark cannot
        read the path (public facts).
    ParameterError
        A declared type Spark does not read from CSV text.
    """
    declared = check_text_schema(path, schema)
    kind, suffix = _reader_kind(path)
    reader = spark.read
    try:
        if kind == "parquet":
            return reader.parquet(path)
        if kind == "csv":
            frame = (
                reader.option("header", True)
                .option("inferSchema", False)
                .option("sep", "\t" if suffix == ".tsv" else ",")
                .option("mode", "DROPMALFORMED")
                .option("encoding", "ISO-8859-1")
                .csv(path)
            )
            return _declared_text(_utf8_rows(frame, path), declared)
        raise AssertionError(kind)  # pragma: no cover - the table above has no other kind
    except Exception as exc:  # an AnalysisException from a public fact (path, format)
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"cannot read {path!r} with Spark: {first}") from None


def _declared_text(frame: Any, declared: dict[str, str]) -> Any:
    """``frame`` (a CSV's text columns) with each declared column read as its type by the
    rule of :func:`dpselect.data.rules.declared_text_sql` (Spark SQL, with ``try_cast``: no
    value raises, ANSI mode or not); other columns as they are. From the schema alone."""
    ruled = {c: t for c, t in declared.items() if c in frame.columns and t.upper() != "VARCHAR"}
    if not ruled:
        return frame
    f = _import_pyspark().functions
    projected = [
        f.expr(declared_text_sql(_spark_quote(c), ruled[c], "spark")).alias(c)
        if c in ruled
        else f.col(_spark_quote(c))
        for c in frame.columns
    ]
    return frame.select(*projected)


def _utf8_rows(frame: Any, path: str) -> Any:
    """A CSV frame read as ISO-8859-1 (one character per byte: the bytes kept exactly) back as
    UTF-8 text, with DuckDB's rule for a line that is not UTF-8: no row.

    Spark's UTF-8 decoder replaces each invalid sequence by U+FFFD, so ``u\\xff`` and
    ``u\\xfe`` would be one privacy unit and the engines would disagree (DuckDB drops such a
    line, :mod:`dpselect.data.text_lines`). A CSV delimiter, quote or line break is ASCII, and
    no byte of a multi-byte UTF-8 sequence is, so reading the bytes as ISO-8859-1 splits the
    lines and fields exactly as UTF-8 would. Each field is then its bytes again
    (``encode(.., 'ISO-8859-1')`` cast to text, which Spark does not check), and a row with a
    field that is not valid UTF-8 is dropped: a rule of that row alone. The header (public)
    names the columns in UTF-8; a header that is not UTF-8 is refused.
    """
    sql = _import_pyspark()
    f = sql.functions
    names = []
    for name in frame.columns:
        try:
            names.append(name.encode("latin-1").decode("utf-8"))
        except UnicodeError:
            raise DataError(f"the header line of {path!r} is not UTF-8 text") from None
    raw = [f.encode(f.col(_spark_quote(c)), "ISO-8859-1") for c in frame.columns]
    if hasattr(f, "is_valid_utf8"):  # Spark 4
        valid = [f.is_valid_utf8(r.cast("string")) for r in raw]
    else:  # Spark 3.5: its decode replaces invalid bytes, so a valid field round-trips
        valid = [f.encode(f.decode(r, "UTF-8"), "UTF-8") == r for r in raw]
    rows = frame
    for r, ok in zip(raw, valid, strict=True):
        rows = rows.where(r.isNull() | ok)  # filtered before the projection renames the columns
    return rows.select(*[r.cast("string").alias(n) for r, n in zip(raw, names, strict=True)])


def nan_safe_frame(frame: Any) -> Any:
    """``frame`` with every floating column read as ``x + 0.0`` (a computed column): the
    Spark engine's NaN-safe reader, applied to every frame it opens (files and users' frames).

    Spark pushes a comparison on a column it reads from Parquet (``x > 5``, ``x = c``) down
    to the files, where a row group whose min/max (which never count NaN) rule the comparison
    out is skipped whole: a NaN row in it, which Spark's comparison keeps (NaN is the largest
    double), was then dropped or kept by the other rows of its row group (measured: ``x > 5``
    kept 3 of 4 rows). No reader option turns this off per read; a computed column is never
    pushed down, so every row is judged on its own (docs/contribution_bounding.md, "What a
    row's fate may depend on"). A NaN is read as NULL, a missing value, as every DuckDB input
    reads it (:func:`dpselect.data.rules.read_value_sql`); ``-0.0`` becomes ``0.0``, as every
    plan groups floats anyway.
    Decided from the schema alone; the projection costs nothing measurable."""
    sql = _import_pyspark()
    f = sql.functions
    changed, projected = False, []
    for fld in frame.schema.fields:
        col = f.col(_spark_quote(fld.name))
        if fld.dataType.typeName() in ("double", "float"):
            changed = True
            shifted = f"({_spark_quote(fld.name)} + CAST(0.0 AS {fld.dataType.simpleString()}))"
            col = f.expr(read_value_sql(shifted, "DOUBLE"))  # NaN read as NULL, as DuckDB
        projected.append(col.alias(fld.name))
    return frame.select(*projected) if changed else frame


def _binary_text(frame: Any) -> Any:
    """``frame`` with every text column that has a collation (Spark 4: ``UTF8_LCASE``,
    ``UNICODE_CI``, ...) or a ``char(n)`` / ``varchar(n)`` type read as plain ``string``,
    compared by its bytes as in DuckDB.

    A collation's equality merges distinct texts (``'a'`` and ``'A'``): as a privacy unit,
    two people would be one key; as a ranked value, the label Spark releases for the group is
    whichever spelling it met first (another row's); and the engines would disagree. Decided
    from the schema alone; frames without such columns are returned as they are."""
    sql = _import_pyspark()
    f = sql.functions
    changed, projected = False, []
    for fld in frame.schema.fields:
        kind = fld.dataType.simpleString()
        col = f.col(_spark_quote(fld.name))
        if fld.dataType.typeName() in ("string", "char", "varchar") and kind != "string":
            changed = True
            col = col.cast("string")
        projected.append(col.alias(fld.name))
    return frame.select(*projected) if changed else frame
