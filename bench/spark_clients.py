"""The Spark job's ``clients`` table in the reference parser's form, for the row-by-row comparisons of the
benchmark and the Spark tests (not part of the job: it writes timestamps as timestamps)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from exporter.request_logs import log_format as lf


def clients_as_logged(clients_table: DataFrame) -> DataFrame:
    """The clients table in the reference parser's ClientRow form (timestamps as the log writes them)."""
    return clients_table.select(
        "client_id",
        "principal",
        "source_host",
        "listener",
        "software_name",
        "software_version",
        F.date_format("first_seen", lf.TIMESTAMP_FORMAT).alias("first_seen"),
        F.date_format("last_seen", lf.TIMESTAMP_FORMAT).alias("last_seen"),
        "requests",
        "connections",
    )
