"""Writing the tables: Parquet directories, single-file CSVs and the HTML report, on any Hadoop file system."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession

#: RFC 4180 as every CSV reader expects it: a quote inside a field doubled (Spark's default escapes it with a
#: backslash, which Python's csv module, spreadsheets and most readers take for a different value, shifting the
#: columns), a field holding the delimiter, a quote, CR or LF quoted, and leading or trailing spaces kept (Spark
#: trims them by default). UTF-8, LF line ends. A value starting with = + - @ is written as it is: it is data.
RFC4180 = {
    "header": "true",
    "escape": '"',
    "ignoreLeadingWhiteSpace": "false",
    "ignoreTrailingWhiteSpace": "false",
    "encoding": "UTF-8",
}


def _hadoop(spark: SparkSession, path: str) -> tuple[Any, Any]:
    jvm = spark.sparkContext._jvm  # the Hadoop FileSystem API is only reachable through the JVM gateway
    assert jvm is not None
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    fs = hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return fs, hadoop_path


def join_path(directory: str, name: str) -> str:
    return directory.rstrip("/") + "/" + name


def write_parquet(df: DataFrame, directory: str, name: str) -> str:
    path = join_path(directory, name)
    df.write.mode("overwrite").parquet(path)
    return path


def write_single_csv(spark: SparkSession, df: DataFrame, directory: str, name: str, key: Sequence[str]) -> str:
    """``<directory>/<name>.csv`` as one file with a header, rows sorted by ``key`` and then by every other column,
    so the same rows always give the same bytes (Spark writes a directory of parts; merge via one partition and
    move the part file)."""
    staging = join_path(directory, f"_{name}.csv.tmp")
    target = join_path(directory, f"{name}.csv")
    order = [*key, *(c for c in df.columns if c not in key)]
    df.repartition(1).sortWithinPartitions(*order).write.mode("overwrite").options(**RFC4180).csv(staging)
    fs, staging_path = _hadoop(spark, staging)
    parts = [s.getPath() for s in fs.listStatus(staging_path) if s.getPath().getName().startswith("part-")]
    _fs, target_path = _hadoop(spark, target)
    fs.delete(target_path, False)
    if len(parts) != 1:
        raise RuntimeError(f"expected one CSV part file under {staging}, found {len(parts)}")
    fs.rename(parts[0], target_path)
    fs.delete(staging_path, True)
    return target


def write_text(spark: SparkSession, directory: str, name: str, text: str) -> str:
    path = join_path(directory, name)
    fs, hadoop_path = _hadoop(spark, path)
    stream = fs.create(hadoop_path, True)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()
    return path
