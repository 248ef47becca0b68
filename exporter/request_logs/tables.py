"""The inventory tables, built from ONE aggregation over the parsed lines (``line_groups``).

``line_groups`` is the only pass over the raw data: lines are grouped by connection, clientId, principal,
listener, API, version and software (plus the group fields of JoinGroup/SyncGroup, and reason/line for lines
that did not parse). It is small (distinct connections x APIs), so it is persisted and every table below is
derived from it without reading the logs again.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from exporter.request_logs import layout
from exporter.request_logs import log_format as lf
from exporter.request_logs.log_kinds import IDENTITY_API_KEYS

CLIENT_KEY = list(layout.CLIENT_KEY)
_USAGE_KEY = ["connection", "client_id", "principal", "listener", "api_key", "api_version"]
_GROUP_FIELDS = ["group_id", "protocol_type", "protocol_name", "offered_protocols"]


def _timestamp(column: str) -> Column:
    """A ``line_groups`` time (yyyyMMddHHmmssSSS as a number) as a zone-less timestamp: log timestamps are the
    broker's local wall clock without a zone. Null for a day that does not exist (Feb 30 passes the pattern)."""
    value = F.col(column)

    def part(scale: int, modulo: int = 100) -> Column:
        return F.pmod(F.floor(value / scale), F.lit(modulo)).cast("int")

    seconds = (F.pmod(value, F.lit(100_000)) / 1000).cast("decimal(8,3)")
    return F.try_make_timestamp_ntz(
        F.floor(value / 10**13).cast("int"), part(10**11), part(10**9), part(10**7), part(10**5), seconds
    )


#: The key of ``line_groups`` (``file`` comes first when grouped per file). The level is the same on every line of
#: an API version (INFO when deprecated, DEBUG otherwise), so it does not make the groups more numerous.
GROUP_KEY = ["reason", "sample_file", "sample_line", *_USAGE_KEY, *_GROUP_FIELDS, "software", "level"]


def line_groups(parsed: DataFrame, per_file: bool = False) -> DataFrame:
    """Every aggregated value is a number, so Spark aggregates in a hash map as the rows stream by (a string
    min/max would make it sort the whole input first). The software of a line is part of the key: it is the
    same on nearly every line of a connection. A line that did not parse is its own group (with its reason,
    file and first characters), so only unusual input makes this table grow with the data. ``per_file`` keeps
    each file's groups apart: an incremental run stores them per file and sums them with ``merge_groups``."""
    time = F.translate("ts", lf.TIMESTAMP_SEPARATORS, "").try_cast("long")
    return parsed.groupBy(*(["file"] if per_file else []), *GROUP_KEY).agg(
        F.count(F.lit(1)).alias("requests"),
        F.min(time).alias("first_ts"),
        F.max(time).alias("last_ts"),
    )


def line_levels() -> list[Column]:
    """Aggregates of ``line_groups`` rows (a file's, a directory's) that tell which kind of request log they come
    from (``log_kinds.LineLevels``)."""
    level, identity = F.col("level"), F.col("api_key").isin(*IDENTITY_API_KEYS)
    usable = F.col("reason").isNull() | (F.col("reason") == lf.REASON_FORWARDED)

    def lines(condition: Column, name: str) -> Column:
        return F.coalesce(F.sum(F.when(usable & condition, F.col("requests"))), F.lit(0)).alias(name)

    return [
        lines((level == "DEBUG") & identity, "identity_debug"),
        lines((level == "DEBUG") & ~identity, "other_debug"),
        lines(level == "INFO", "info"),
    ]


def merge_groups(groups: DataFrame) -> DataFrame:
    """Groups of several files (or several reads) summed into the groups of one read of them all."""
    return groups.groupBy(*GROUP_KEY).agg(
        F.sum("requests").alias("requests"), F.min("first_ts").alias("first_ts"), F.max("last_ts").alias("last_ts")
    )


def resolved_usage(groups: DataFrame) -> DataFrame:
    """Usable groups with each connection's software (the best seen on the connection) and source host."""
    usable = groups.where(F.col("reason").isNull())
    # A window over the connection's groups, not a join with a per-connection aggregate: one shuffle, not three.
    best = F.max("software").over(Window.partitionBy("connection"))
    return usable.select("*", best.alias("connection_software")).select(
        *_USAGE_KEY,
        *_GROUP_FIELDS,
        "requests",
        "first_ts",
        "last_ts",
        F.nullif(F.regexp_extract("connection", lf.CONNECTION, 1), F.lit("")).alias("source_host"),
        F.col("connection_software.name").alias("software_name"),
        F.col("connection_software.version").alias("software_version"),
    )


def _per_connection(usage: DataFrame, key: list[str]) -> DataFrame:
    """``key`` + connection -> requests, first_ts, last_ts: counting these rows per ``key`` counts distinct
    connections with plain sums (a count_distinct beside other aggregates costs an expand of every row)."""
    return usage.groupBy(*key, "connection").agg(
        F.sum("requests").alias("requests"), F.min("first_ts").alias("first_ts"), F.max("last_ts").alias("last_ts")
    )


def clients(usage: DataFrame) -> DataFrame:
    return (
        _per_connection(usage, CLIENT_KEY)
        .groupBy(*CLIENT_KEY)
        .agg(
            F.min("first_ts").alias("first_seen"),
            F.max("last_ts").alias("last_seen"),
            F.sum("requests").alias("requests"),
            F.count(F.lit(1)).alias("connections"),
        )
        .select(
            *CLIENT_KEY,
            _timestamp("first_seen").alias("first_seen"),
            _timestamp("last_seen").alias("last_seen"),
            "requests",
            "connections",
        )
    )


def api_usage(usage: DataFrame, api_names: DataFrame) -> DataFrame:
    """Per client, API and version: requests, connections, first/last seen; ``api_names`` maps key -> name."""
    key = [*CLIENT_KEY, "api_key", "api_version"]
    return (
        _per_connection(usage, key)
        .groupBy(*key)
        .agg(
            F.sum("requests").alias("requests"),
            F.count(F.lit(1)).alias("connections"),
            F.min("first_ts").alias("first_seen"),
            F.max("last_ts").alias("last_seen"),
        )
        .join(F.broadcast(api_names), "api_key", "left")
        .select(
            *CLIENT_KEY,
            "api_key",
            "api_name",
            "api_version",
            "requests",
            "connections",
            _timestamp("first_seen").alias("first_seen"),
            _timestamp("last_seen").alias("last_seen"),
        )
    )


def _sorted_set(column: str) -> Column:
    return F.array_join(F.array_sort(F.collect_set(column)), ",")


def _versions(api_key: int) -> Column:
    return F.array_join(F.array_sort(F.collect_set(F.when(F.col("api_key") == api_key, F.col("api_version")))), ",")


def group_protocols(usage: DataFrame) -> DataFrame:
    """KIP-559: per consumer group and clientId, the protocol type and name seen in JoinGroup/SyncGroup."""
    return (
        usage.where(F.col("api_key").isin(*lf.GROUP_KEYS) & F.col("group_id").isNotNull())
        .groupBy("group_id", "client_id")
        .agg(
            _sorted_set("protocol_type").alias("protocol_types"),
            _sorted_set("protocol_name").alias("protocol_names"),
            F.array_join(
                F.array_sort(F.array_distinct(F.flatten(F.collect_set(F.split("offered_protocols", ","))))), ","
            ).alias("offered_protocols"),
            _versions(lf.JOIN_GROUP_KEY).alias("join_group_versions"),
            _versions(lf.SYNC_GROUP_KEY).alias("sync_group_versions"),
            _sorted_set("principal").alias("principals"),
            F.array_join(F.array_sort(F.collect_set(F.concat_ws("/", "software_name", "software_version"))), ",").alias(
                "software"
            ),
            F.sum("requests").alias("requests"),
            F.min("first_ts").alias("first_seen"),
            F.max("last_ts").alias("last_seen"),
        )
        .select(
            "*",
            _timestamp("first_seen").alias("first_seen_ts"),
            _timestamp("last_seen").alias("last_seen_ts"),
        )
        .drop("first_seen", "last_seen")
        .withColumnsRenamed({"first_seen_ts": "first_seen", "last_seen_ts": "last_seen"})
    )


def malformed(groups: DataFrame) -> DataFrame:
    """Per reason, its total and at most MALFORMED_SAMPLE_BUCKETS sample lines (one per hash bucket)."""
    bad = groups.where(F.col("reason").isNotNull() & (F.col("reason") != lf.REASON_FORWARDED))
    totals = bad.groupBy("reason").agg(F.sum("requests").alias("lines"))
    bucket = F.pmod(F.xxhash64("sample_line"), F.lit(lf.MALFORMED_SAMPLE_BUCKETS))
    samples = bad.groupBy("reason", bucket.alias("bucket")).agg(
        F.min(F.struct("sample_line", "sample_file")).alias("sample")
    )
    return samples.join(totals, "reason").select(
        "reason", "lines", F.col("sample.sample_file").alias("file"), F.col("sample.sample_line").alias("line")
    )
