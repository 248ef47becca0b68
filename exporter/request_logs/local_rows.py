"""Small tables made on the driver (API names, served ranges, policy verdicts), built inside the JVM.

PySpark's ``createDataFrame`` turns a Python list into an RDD that Python workers must unpickle: the one thing
that would start Python processes in a job that otherwise runs on JVM functions only. Here the rows become
one JSON text literal that Spark parses and ``inline``s itself: a single literal, because building one
expression per cell over the Py4J gateway cost seconds for the 180-odd API names alone, and so did analysing a
plan that held them all.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T


def local_table(spark: SparkSession, rows: Iterable[Sequence[object]], schema: T.StructType) -> DataFrame:
    """``rows`` (tuples in ``schema``'s field order) as a DataFrame with that schema's names and types; every
    column is nullable (parsed JSON is)."""
    names = schema.fieldNames()
    records = []
    for row in rows:
        if len(row) != len(names):
            raise ValueError(f"row {row!r} has {len(row)} values; the schema has {len(names)} fields")
        records.append(dict(zip(names, row, strict=True)))
    parsed = F.from_json(F.lit(json.dumps(records)), T.ArrayType(schema), {"mode": "FAILFAST"})
    return spark.range(1).select(F.inline(parsed))
