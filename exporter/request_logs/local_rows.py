"""Small tables made on the driver (API names, served ranges, policy verdicts), built inside the JVM.

PySpark's ``createDataFrame`` turns a Python list into an RDD that Python workers must unpickle: the one thing
that would start Python processes in a job that otherwise runs on JVM functions only. Here the rows become
literals of one ``inline`` projection instead, which Spark evaluates itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T


def local_table(spark: SparkSession, rows: Iterable[Sequence[object]], schema: T.StructType) -> DataFrame:
    """``rows`` (tuples in ``schema``'s field order) as a DataFrame with that schema's names and types."""
    fields = schema.fields
    structs = []
    for row in rows:
        if len(row) != len(fields):
            raise ValueError(f"row {row!r} has {len(row)} values; the schema has {len(fields)} fields")
        values = zip(row, fields, strict=True)
        structs.append(F.struct(*[F.lit(value).cast(f.dataType).alias(f.name) for value, f in values]))
    return spark.range(1).select(F.inline(F.array(*structs).cast(T.ArrayType(schema))))
