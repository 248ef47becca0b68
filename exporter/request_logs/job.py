"""One inventory run: read and parse once, derive every table, write Parquet/CSV and the HTML report."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from exporter.kafka_releases import table
from exporter.kafka_releases.upgrade_target import DEFAULT_TARGET_RELEASE, upgrade_target
from exporter.policy import Policy, load_policy
from exporter.request_logs import output, parse, report, server_log, tables, upgrade
from exporter.request_logs.local_rows import local_table
from exporter.request_logs.progress import ProgressLogger

log = logging.getLogger("exporter.request_logs")

#: Tables written as Parquet; the ones in CSV_TABLES also as one CSV file each.
TABLES = ("clients", "api_usage", "upgrade_impact", "group_protocols", "malformed", "rejections")
CSV_TABLES = TABLES
#: Tables with a meaningful row order (kept in their CSV; the report lists their first rows).
TABLE_ORDER = {"rejections": server_log.REJECTION_ORDER}
REPORT_FILE = "report.html"
REPORT_TOP = 25


@dataclass(frozen=True)
class InventoryOptions:
    inputs: Sequence[str]
    output: str
    target_release: str = DEFAULT_TARGET_RELEASE
    policy_file: Path | None = None
    write_csv: bool = True


@dataclass(frozen=True)
class InventorySummary:
    lines: int
    malformed_lines: int
    clients: int
    blocking_clients: int
    policy_clients: int
    rejections: int  # requests server.log says a broker rejected (removed version or disabled API)
    seconds: float
    outputs: dict[str, str]
    #: Seconds from the start to each milestone: "parsed" (the one pass over the logs), then each table written.
    milestones: dict[str, float]


@dataclass
class InventoryTables:
    """The tables of one run, before writing (tests read them directly)."""

    groups: DataFrame
    usage: DataFrame
    clients: DataFrame
    api_usage: DataFrame
    upgrade_impact: DataFrame
    group_protocols: DataFrame
    malformed: DataFrame
    rejections: DataFrame

    def by_name(self) -> dict[str, DataFrame]:
        return {name: getattr(self, name) for name in TABLES}

    def unpersist(self) -> None:
        self.usage.unpersist()
        self.groups.unpersist()


_API_NAMES_SCHEMA = T.StructType([T.StructField("api_key", T.IntegerType()), T.StructField("api_name", T.StringType())])


def _api_names(spark: SparkSession) -> DataFrame:
    return local_table(spark, sorted(table.api_names().items()), _API_NAMES_SCHEMA)


def build_tables(spark: SparkSession, inputs: Sequence[str], target_release: str, policy: Policy) -> InventoryTables:
    target = upgrade_target(target_release)
    parsed = parse.parse_lines(parse.read_lines(spark, inputs))
    groups = tables.line_groups(parsed).persist(StorageLevel.MEMORY_AND_DISK)
    spark.sparkContext.setJobDescription("pass 1: parse every line, group by connection, client and API")
    groups.count()
    spark.sparkContext.setJobDescription("inventory tables")
    usage = tables.resolved_usage(groups).persist(StorageLevel.MEMORY_AND_DISK)
    clients = tables.clients(usage)
    api_usage = tables.api_usage(usage, _api_names(spark))
    return InventoryTables(
        groups=groups,
        usage=usage,
        clients=clients,
        api_usage=api_usage,
        upgrade_impact=upgrade.upgrade_impact(spark, clients, usage, api_usage, target, policy),
        group_protocols=tables.group_protocols(usage),
        malformed=tables.malformed(groups),
        rejections=server_log.rejections(server_log.parse_rejections(server_log.read_events(spark, inputs)), usage),
    )


def _report_data(built: InventoryTables, target_release: str, totals: dict[str, int]) -> report.ReportData:
    target = upgrade_target(target_release)
    software = (
        built.clients.groupBy("software_name", "software_version")
        .agg(F.count(F.lit(1)).alias("clients"))
        .orderBy(F.desc("clients"), "software_name", "software_version")
        .limit(REPORT_TOP)
        .collect()
    )
    blocked = built.upgrade_impact.where(F.col("kind") == upgrade.KIND_API)
    blockers = (
        blocked.groupBy(*tables.CLIENT_KEY)
        .agg(
            F.sum("requests").alias("requests"),
            F.array_join(
                F.array_sort(
                    F.collect_list(
                        F.format_string("%s v%s; min %s", "api_name", "versions_used", "min_version_required")
                    )
                ),
                " | ",
            ).alias("apis"),
        )
        .orderBy(F.desc("requests"))
        .limit(REPORT_TOP)
        .collect()
    )
    versions = (
        built.api_usage.groupBy("api_key", "api_name", "api_version")
        .agg(F.sum("requests").alias("requests"))
        .orderBy("api_key", "api_version")
        .limit(400)
        .collect()
    )
    policy = (
        built.upgrade_impact.where(F.col("kind") == upgrade.KIND_POLICY)
        .groupBy("reason", "software_name", "software_version")
        .agg(F.count(F.lit(1)).alias("clients"), F.first("detail").alias("detail"))
        .orderBy(F.desc("clients"))
        .limit(REPORT_TOP)
        .collect()
    )
    groups = built.group_protocols.orderBy(F.desc("requests")).limit(REPORT_TOP).collect()
    bad = built.malformed.select("reason", "lines").distinct().orderBy(F.desc("lines")).collect()
    rejected = built.rejections.limit(REPORT_TOP).collect()

    return report.ReportData(
        target_release=target_release,
        lines=totals["lines"],
        malformed_lines=totals["malformed"],
        clients=totals["clients"],
        blocking_clients=totals["blocking"],
        policy_clients=totals["policy"],
        software=[report.Bar(f"{r.software_name} {r.software_version}", r.clients) for r in software],
        blockers=[
            report.Bar(f"{r.client_id} @ {r.source_host} ({r.software_name} {r.software_version})", r.requests, True)
            for r in blockers
        ],
        blocker_rows=[
            (
                str(r.client_id),
                str(r.principal),
                str(r.source_host),
                f"{r.software_name} {r.software_version}",
                r.apis,
                f"{r.requests:,}",
            )
            for r in blockers
        ],
        api_versions=[
            report.Bar(
                f"{r.api_name or r.api_key} v{r.api_version}", r.requests, target.blocks(r.api_key, r.api_version)
            )
            for r in versions
        ],
        policy_rows=[(r.reason, r.software_name, r.software_version, str(r.clients), r.detail) for r in policy],
        group_rows=[
            (r.group_id, str(r.client_id), r.protocol_types, r.protocol_names, r.offered_protocols) for r in groups
        ],
        malformed_rows=[(r.reason, f"{r.lines:,}") for r in bad],
        rejections=totals["rejections"],
        rejection_rows=[
            (
                str(r.time),
                r.broker_file.rsplit("/", 1)[-1],
                str(r.listener),
                str(r.source_host),
                r.connection,
                f"{r.api_name} v{r.api_version}",
                str(r.client_id),
                f"{r.software_name} {r.software_version}" if r.software_name is not None else "None",
                r.message,
            )
            for r in rejected
        ],
    )


def _totals(built: InventoryTables) -> dict[str, int]:
    row = built.groups.agg(
        F.sum("requests").alias("lines"),
        F.sum(F.when(F.col("reason").isNotNull(), F.col("requests"))).alias("malformed"),
    ).first()
    impact = built.upgrade_impact.select("kind", *tables.CLIENT_KEY).distinct()
    kinds = {r.kind: r["count"] for r in impact.groupBy("kind").count().collect()}
    return {
        "lines": int(row.lines or 0) if row else 0,
        "malformed": int(row.malformed or 0) if row else 0,
        "clients": built.clients.count(),
        "blocking": kinds.get(upgrade.KIND_API, 0),
        "policy": kinds.get(upgrade.KIND_POLICY, 0),
        "rejections": built.rejections.count(),
    }


def run_inventory(spark: SparkSession, options: InventoryOptions) -> InventorySummary:
    started = time.monotonic()
    upgrade_target(options.target_release)  # fail on a bad release before reading anything
    policy = load_policy(options.policy_file)
    sc = spark.sparkContext
    outputs: dict[str, str] = {}
    milestones: dict[str, float] = {}
    with ProgressLogger(sc):
        built = build_tables(spark, options.inputs, options.target_release, policy)
        milestones["parsed"] = time.monotonic() - started
        try:
            written: dict[str, DataFrame] = {}
            for name, df in built.by_name().items():
                sc.setJobDescription(f"write {name}")
                outputs[name] = output.write_parquet(df, options.output, name)
                milestones[name] = time.monotonic() - started
                # The CSV and the report read the table just written: computing it again from the groups would
                # repeat its aggregations, and the CSV's single partition would run them in one task.
                written[name] = spark.read.parquet(outputs[name])
                if name in TABLE_ORDER:  # Parquet files are not read back in the order they were written
                    written[name] = written[name].orderBy(*TABLE_ORDER[name])
                if options.write_csv and name in CSV_TABLES:
                    outputs[f"{name}.csv"] = output.write_single_csv(spark, written[name], options.output, name)
                log.info("wrote %s", name)
            sc.setJobDescription("report")
            tables_written = dataclasses.replace(built, **written)
            totals = _totals(tables_written)
            html_text = report.render(_report_data(tables_written, options.target_release, totals))
            outputs["report"] = output.write_text(spark, options.output, REPORT_FILE, html_text)
        finally:
            built.unpersist()
    return InventorySummary(
        lines=totals["lines"],
        malformed_lines=totals["malformed"],
        clients=totals["clients"],
        blocking_clients=totals["blocking"],
        policy_clients=totals["policy"],
        rejections=totals["rejections"],
        seconds=time.monotonic() - started,
        outputs=outputs,
        milestones=milestones,
    )
