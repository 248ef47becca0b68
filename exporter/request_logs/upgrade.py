"""``upgrade_impact``: who blocks the upgrade to a target release, and who is below the version policy.

API part: a client blocks the target when it uses an API version below the minimum the target still serves,
or an API the target does not serve at all: ``UpgradeTarget.blocks`` (``kafka_releases.upgrade_target``), the rule
the exporter's live ``kafka_client_upgrade_blocking_requests_total`` judges by. Here it runs as a join with the
target's ``served`` table, so the two must say the same; tests/e2e/request_logs checks every used version.

Policy part: the version policy (``exporter.policy``, same files as the exporter) is evaluated once per
DISTINCT (software name, version) pair - a small set - and joined back to the clients.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from exporter.kafka_releases.upgrade_target import ZOOKEEPER_MODE_BROKER_APIS, UpgradeTarget
from exporter.policy import Policy
from exporter.request_logs.layout import KIND_API_VERSION, UPGRADE_IMPACT_COLUMNS
from exporter.request_logs.local_rows import local_table
from exporter.request_logs.tables import CLIENT_KEY

KIND_API = KIND_API_VERSION
KIND_POLICY = "policy"
REASON_VERSION_REMOVED = "version_removed"
REASON_API_REMOVED = "api_removed"
MAX_SOFTWARE_PAIRS = 100_000

# The table's columns and the kind the exporter reads back are the published layout's (layout.py).
IMPACT_COLUMNS = list(UPGRADE_IMPACT_COLUMNS)

_RANGE_SCHEMA = T.StructType(
    [
        T.StructField("api_key", T.IntegerType()),
        T.StructField("target_api_name", T.StringType()),
        T.StructField("min_version_required", T.IntegerType()),
    ]
)
_VIOLATION_SCHEMA = T.StructType(
    [
        T.StructField("software_name", T.StringType()),
        T.StructField("software_version", T.StringType()),
        T.StructField("reason", T.StringType()),
        T.StructField("detail", T.StringType()),
    ]
)


def api_impact(spark: SparkSession, api_usage: DataFrame, target: UpgradeTarget) -> DataFrame:
    served = [(r.api_key, r.name, r.min_version) for r in target.served.values()]
    table = local_table(spark, served, _RANGE_SCHEMA)
    # UpgradeTarget.blocks as a join: no served range (left join misses) or a version below its minimum.
    removed_api = F.col("min_version_required").isNull()
    blocked = (
        api_usage.where(~F.col("api_key").isin(*sorted(ZOOKEEPER_MODE_BROKER_APIS)))
        .join(F.broadcast(table), "api_key", "left")
        .where(removed_api | (F.col("api_version") < F.col("min_version_required")))
        .withColumn("reason", F.when(removed_api, REASON_API_REMOVED).otherwise(REASON_VERSION_REMOVED))
    )
    grouped = blocked.groupBy(*CLIENT_KEY, "reason", "api_key").agg(
        F.coalesce(F.first("target_api_name", ignorenulls=True), F.first("api_name", ignorenulls=True)).alias(
            "api_name"
        ),
        F.array_join(F.array_sort(F.collect_set("api_version")), ",").alias("versions_used"),
        F.first("min_version_required", ignorenulls=True).alias("min_version_required"),
        F.sum("requests").alias("requests"),
    )
    detail = F.when(
        F.col("reason") == REASON_API_REMOVED,
        F.format_string(f"Kafka {target.release} does not serve API key %d (%s) at all", "api_key", "api_name"),
    ).otherwise(
        F.format_string(
            f"uses %s v%s; Kafka {target.release} serves v%d and later",
            "api_name",
            "versions_used",
            "min_version_required",
        )
    )
    return grouped.withColumns({"kind": F.lit(KIND_API), "detail": detail}).select(*IMPACT_COLUMNS)


class TooManySoftwareVersionsError(RuntimeError):
    pass


def policy_impact(spark: SparkSession, clients: DataFrame, usage: DataFrame, policy: Policy) -> DataFrame:
    # The distinct software name/version pairs of a fleet are hundreds, not millions; the cap keeps the driver
    # safe from logs whose names are garbage. Read from the (persisted) usage the clients table is built from.
    pairs = usage.select("software_name", "software_version").distinct().limit(MAX_SOFTWARE_PAIRS + 1).collect()
    if len(pairs) > MAX_SOFTWARE_PAIRS:
        raise TooManySoftwareVersionsError(
            f"more than {MAX_SOFTWARE_PAIRS} distinct client software name/version pairs: the policy is evaluated "
            "per pair on the driver; check the input for corrupted clientInformation values"
        )
    violations = []
    for row in pairs:
        violation = policy.evaluate(row.software_name, row.software_version)
        if violation is not None:
            violations.append((row.software_name, row.software_version, violation.reason, violation.detail))
    table = local_table(spark, violations, _VIOLATION_SCHEMA)
    no_api = {
        "kind": F.lit(KIND_POLICY),
        "api_key": F.lit(None).cast(T.IntegerType()),
        "api_name": F.lit(None).cast(T.StringType()),
        "versions_used": F.lit(None).cast(T.StringType()),
        "min_version_required": F.lit(None).cast(T.IntegerType()),
    }
    joined = clients.join(F.broadcast(table), ["software_name", "software_version"])
    return joined.withColumns(no_api).select(*IMPACT_COLUMNS)


def upgrade_impact(
    spark: SparkSession,
    clients: DataFrame,
    usage: DataFrame,
    api_usage: DataFrame,
    target: UpgradeTarget,
    policy: Policy,
) -> DataFrame:
    return api_impact(spark, api_usage, target).unionByName(policy_impact(spark, clients, usage, policy))
