"""One inventory run: read and parse once, derive every table, write Parquet/CSV and the HTML report."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from exporter import __version__
from exporter.kafka_releases import table
from exporter.kafka_releases.upgrade_target import DEFAULT_TARGET_RELEASE, upgrade_target
from exporter.policy import Policy, default_policy_text, load_policy
from exporter.request_logs import (
    file_state,
    log_kinds,
    output,
    parse,
    publication,
    report,
    segments,
    server_log,
    tables,
    upgrade,
)
from exporter.request_logs import log_format as lf
from exporter.request_logs.input_files import InputError, InputFile, list_input_files, moved_since_listed
from exporter.request_logs.local_rows import local_table
from exporter.request_logs.progress import ProgressLogger
from exporter.request_logs.unreadable import UnreadableFile, corrupt_heads, skipping_unreadable

log = logging.getLogger("exporter.request_logs")

#: Tables written as Parquet; the ones in CSV_TABLES also as one CSV file each.
TABLES = ("clients", "api_usage", "upgrade_impact", "group_protocols", "malformed", "rejections")
CSV_TABLES = TABLES
#: Tables with a meaningful row order (the report lists their first rows).
TABLE_ORDER = {"rejections": server_log.REJECTION_ORDER}
#: Each CSV's rows sorted by these columns (then by the rest), so that two runs over the same logs write the same
#: bytes whatever the master and the partitioning.
TABLE_KEYS: dict[str, Sequence[str]] = {
    "clients": tables.CLIENT_KEY,
    "api_usage": [*tables.CLIENT_KEY, "api_key", "api_version"],
    "upgrade_impact": [*tables.CLIENT_KEY, "kind", "reason", "api_key"],
    "group_protocols": ["group_id", "client_id"],
    "malformed": ["reason", "file", "line"],
    "rejections": server_log.REJECTION_ORDER,
}
REPORT_FILE = "report.html"
REPORT_TOP = 25


@dataclass(frozen=True)
class InventoryOptions:
    inputs: Sequence[str]
    output: str
    target_release: str = DEFAULT_TARGET_RELEASE
    policy_file: Path | None = None
    write_csv: bool = True
    #: Read only what is new since the last run on the same output (per-file state under it).
    incremental: bool = False
    #: With ``incremental``: drop what files whose newest line is older than this contributed (yyyyMMddHHmmssSSS).
    forget_before: int | None = None


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
    #: Where the published tables are (OUT/runs/<id>).
    run_dir: str
    #: How many input files were listed, read, re-read and skipped (run.json's "files").
    files: dict[str, int]
    #: Oldest and newest log line the tables cover.
    time_range: tuple[str | None, str | None]
    #: An incremental run that found nothing new: the publication (run_dir) was left as it was.
    unchanged: bool = False


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


def derive_tables(
    spark: SparkSession,
    groups: DataFrame,
    rejected: DataFrame,
    target_release: str,
    policy: Policy,
    unreadable: Sequence[UnreadableFile] = (),
) -> InventoryTables:
    """Every table from the line groups (persisted by the caller), the parsed server.log rejections and the files
    this run could not read (each a ``malformed`` row of its own)."""
    target = upgrade_target(target_release)
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
        malformed=tables.malformed(groups).unionByName(_unreadable_rows(spark, unreadable)),
        rejections=server_log.rejections(rejected, usage),
    )


_MALFORMED_SCHEMA = T.StructType(
    [
        T.StructField("reason", T.StringType()),
        T.StructField("lines", T.LongType()),
        T.StructField("file", T.StringType()),
        T.StructField("line", T.StringType()),
    ]
)


def _unreadable_rows(spark: SparkSession, unreadable: Sequence[UnreadableFile]) -> DataFrame:
    """No line of the file was counted (``lines`` 0); ``line`` says why it was skipped."""
    rows = [(lf.REASON_UNREADABLE_FILE, 0, u.file.path, u.why[: lf.MALFORMED_SAMPLE_CHARS]) for u in unreadable]
    return local_table(spark, rows, _MALFORMED_SCHEMA)


def _persisted(df: DataFrame, description: str) -> DataFrame:
    """``df`` cached and computed now; nothing left cached when that fails."""
    df = df.persist(StorageLevel.MEMORY_AND_DISK)
    df.sparkSession.sparkContext.setJobDescription(description)
    try:
        df.count()
    except Exception:
        df.unpersist()
        raise
    return df


def _read_files(spark: SparkSession, files: Sequence[InputFile]) -> tuple[DataFrame, DataFrame]:
    """The line groups and the rejections of one full read of ``files``, both computed (a file Spark cannot read
    fails it here, before any table is written)."""
    request_paths = [f.read_path for f in files if f.kind == "request"]
    server_paths = [f.read_path for f in files if f.kind == "server"]
    lines = parse.read_lines(spark, request_paths) if request_paths else parse.no_lines(spark)
    # Per file, so that each broker's log kind can be told (a file's groups summed by the tables as any others).
    groups = _persisted(
        tables.line_groups(parse.parse_lines(lines), per_file=True),
        "pass 1: parse every line, group by file, connection, client and API",
    )
    events = server_log.read_events(spark, server_paths) if server_paths else server_log.no_events(spark)
    try:
        rejected = _persisted(server_log.parse_rejections(events), "server.log: rejections")
    except Exception:
        groups.unpersist()
        raise
    return groups, rejected


def build_tables(spark: SparkSession, inputs: Sequence[str], target_release: str, policy: Policy) -> InventoryTables:
    """The tables of a full run over every log file under ``inputs``."""
    sources = _full_sources(spark, list_input_files(spark, inputs))
    return derive_tables(spark, sources.groups, sources.rejected, target_release, policy, sources.unreadable)


def _report_data(
    built: InventoryTables,
    target_release: str,
    totals: dict[str, int],
    request_logs: Sequence[log_kinds.DirectoryKind],
) -> report.ReportData:
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
        request_log_rows=[
            (
                kind.directory,
                log_kinds.TITLES[kind.kind],
                str(kind.files),
                f"{kind.levels.identity_debug:,}",
                f"{kind.levels.other_debug:,}",
                f"{kind.levels.info:,}",
                "; ".join(log_kinds.CANNOT_TELL[kind.kind]) or "nothing left out",
            )
            for kind in request_logs
        ],
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


def _totals(built: InventoryTables) -> tuple[dict[str, int], tuple[int | None, int | None], list[str]]:
    """Lines, malformed lines, lines of brokers before 1.0, the blocking and policy clients and every written table's
    rows; the oldest and newest log line; and the files holding lines of brokers before 1.0. On a run over a few files
    each Spark job costs more than its data: the groups are aggregated once, and the row counts come from the Parquet
    footers."""
    older = F.col("reason") == lf.REASON_OLDER_FORM
    row = built.groups.agg(
        F.sum("requests").alias("lines"),
        F.sum(F.when(F.col("reason").isNotNull() & (F.col("reason") != lf.REASON_FORWARDED), F.col("requests"))).alias(
            "malformed"
        ),
        F.min("first_ts").alias("first"),
        F.max("last_ts").alias("last"),
        F.sum(F.when(older, F.col("requests"))).alias("older_form"),
        F.array_sort(F.collect_set(F.when(older, F.col("sample_file")))).alias("older_files"),
    ).first()
    impact = built.upgrade_impact.select("kind", *tables.CLIENT_KEY).distinct()
    kinds = {r.kind: r["count"] for r in impact.groupBy("kind").count().collect()}
    rows = {f"rows_{name}": df.count() for name, df in built.by_name().items()}
    totals = {
        "lines": int(row.lines or 0) if row else 0,
        "malformed": int(row.malformed or 0) if row else 0,
        "older_form": int(row.older_form or 0) if row else 0,
        "clients": rows["rows_clients"],
        "blocking": kinds.get(upgrade.KIND_API, 0),
        "policy": kinds.get(upgrade.KIND_POLICY, 0),
        "rejections": rows["rows_rejections"],
        **rows,
    }
    return totals, ((row.first, row.last) if row else (None, None)), list(row.older_files) if row else []


def _write_outputs(
    spark: SparkSession,
    built: InventoryTables,
    run_dir: str,
    options: InventoryOptions,
    started: float,
    request_logs: Sequence[log_kinds.DirectoryKind],
) -> tuple[dict[str, str], dict[str, float], dict[str, int], tuple[int | None, int | None]]:
    """The tables written (Parquet, CSV, report): where, when each was done, the totals and the log time range."""
    sc = spark.sparkContext
    outputs: dict[str, str] = {}
    milestones: dict[str, float] = {}
    written: dict[str, DataFrame] = {}
    for name, df in built.by_name().items():
        sc.setJobDescription(f"write {name}")
        outputs[name] = output.write_parquet(df, run_dir, name)
        milestones[name] = time.monotonic() - started
        # The CSV and the report read the table just written: computing it again from the groups would
        # repeat its aggregations, and the CSV's single partition would run them in one task.
        written[name] = spark.read.parquet(outputs[name])
        if name in TABLE_ORDER:  # Parquet files are not read back in the order they were written
            written[name] = written[name].orderBy(*TABLE_ORDER[name])
        if options.write_csv and name in CSV_TABLES:
            outputs[f"{name}.csv"] = output.write_single_csv(spark, written[name], run_dir, name, TABLE_KEYS[name])
        log.info("wrote %s", name)
    sc.setJobDescription("report")
    tables_written = dataclasses.replace(built, **written)
    totals, time_range, older_files = _totals(tables_written)
    if older_files:
        log.warning(
            "%s: %s request line(s) written by %s (before 1.0), whose form this job does not read (it reads the text "
            "form of Kafka 1.0 to 2.7 and the JSON form of 2.8 and later); counted as malformed",
            ", ".join(older_files),
            f"{totals['older_form']:,}",
            lf.OLDER_FORM_RELEASES,
        )
    html_text = report.render(_report_data(tables_written, options.target_release, totals, request_logs))
    outputs["report"] = output.write_text(spark, run_dir, REPORT_FILE, html_text)
    return outputs, milestones, totals, time_range


def check_options(options: InventoryOptions) -> None:
    """What can be refused before Spark starts."""
    if options.incremental and not publication.is_local(options.output):
        raise publication.PublicationError(
            f"--incremental needs a local or mounted --output directory (its state and lock live on the local file "
            f"system); {options.output} is not one"
        )
    if options.forget_before is not None and not options.incremental:
        raise publication.PublicationError("--forget-before applies to the history of --incremental runs only")


def _check_output(options: InventoryOptions, published: dict[str, Any] | None) -> None:
    """Refuse to mix a full run's output with an incremental one, or to extend another job version's state."""
    check_options(options)
    where = options.output
    if published is None:
        return
    if options.incremental and not published.get("incremental"):
        raise publication.PublicationError(
            f"{where} holds a full run's tables (no state to extend): give --incremental a new --output directory, "
            "or move this one away and run --incremental to rebuild from the logs still present"
        )
    if not options.incremental and published.get("incremental"):
        raise publication.PublicationError(
            f"{where} holds the state of incremental runs (history of files that may be gone): run with "
            "--incremental, or give a full run another --output"
        )
    if options.incremental and published.get("format") != publication.FORMAT:
        raise publication.PublicationError(
            f"{where} was written by job version {published.get('job_version')} (state format "
            f"{published.get('format')}); this job ({__version__}) reads state format {publication.FORMAT}: move "
            "it away and run --incremental to rebuild from the logs still present (history of deleted files is lost)"
        )


def _known_contributions(output: str, published: dict[str, Any] | None) -> list[file_state.Contribution]:
    if published is None:
        return []
    manifest = publication.read_run_json(output, published["run_dir"], publication.STATE_MANIFEST)
    if manifest is None:
        raise publication.PublicationError(
            f"{publication.join(output, published['run_dir'], publication.STATE_MANIFEST)} is missing: the state of "
            "this output is damaged; move it away and run --incremental to rebuild from the logs still present"
        )
    try:
        return [file_state.Contribution.from_json(item) for item in manifest["contributions"]]
    except (KeyError, TypeError) as exc:
        path = publication.join(output, published["run_dir"], publication.STATE_MANIFEST)
        raise publication.PublicationError(f"{path}: not a state manifest of this job ({exc!r})") from exc


def _kept(output: str, published: dict[str, Any] | None) -> tuple[set[str], set[str]]:
    """Runs and segments the published run and the one before it still need (readers may be on either)."""
    runs: set[str] = set()
    segments: set[str] = set()
    if not publication.is_local(output):
        return runs, segments
    for run_id in (published or {}).get("run_id"), (published or {}).get("previous_run_id"):
        if not run_id:
            continue
        runs.add(run_id)
        manifest = publication.read_run_json(output, f"{publication.RUNS}/{run_id}", publication.STATE_MANIFEST)
        for item in (manifest or {}).get("contributions", []):
            if item.get("segment"):
                segments.add(item["segment"])
    return runs, segments


def _ts_text(value: int | None) -> str | None:
    """yyyyMMddHHmmssSSS as the broker wrote it (a zone-less wall-clock time)."""
    if value is None:
        return None
    digits = f"{value:017d}"
    return f"{digits[0:4]}-{digits[4:6]}-{digits[6:8]} {digits[8:10]}:{digits[10:12]}:{digits[12:14]}.{digits[14:]}"


@dataclass
class _Sources:
    """What the tables are derived from in this run, and what the run's metadata says of its input files."""

    groups: DataFrame  # persisted
    rejected: DataFrame
    files: dict[str, int]
    unreadable: list[UnreadableFile]
    contributions: list[file_state.Contribution] | None = None
    #: Per directory of request log files, which kind of log they are (run.json's "request_logs").
    request_logs: list[log_kinds.DirectoryKind] = dataclasses.field(default_factory=list)


def _full_sources(spark: SparkSession, files: Sequence[InputFile]) -> _Sources:
    readable, corrupt = corrupt_heads(files)
    (groups, rejected), failed = skipping_unreadable(readable, lambda f: _read_files(spark, f), lambda: None)
    unreadable = corrupt + failed
    counts = {"listed": len(files), "read": len(files) - len(unreadable), "skipped_unreadable": len(unreadable)}
    spark.sparkContext.setJobDescription("request logs: which kind each file is")
    per_file = {
        r.file: log_kinds.LineLevels.of(r.asDict()) for r in groups.groupBy("file").agg(*tables.line_levels()).collect()
    }
    left_out = {u.file.path for u in unreadable}
    read = [f.path for f in files if f.kind == "request" and f.path not in left_out]
    kinds = log_kinds.by_directory((path, per_file.get(path, log_kinds.LineLevels())) for path in read)
    return _Sources(groups, rejected, counts, unreadable, request_logs=kinds)


def _renamed(files: Sequence[InputFile]) -> str:
    """Log rotation renamed ``files`` between the listing and the read (input_files.moved_since_listed)."""
    them = "it" if len(files) == 1 else "them"
    return f"{', '.join(f.path for f in files)}: renamed while this run read {them} (log rotation)"


#: Listings and reads an incremental run makes of files that keep rotating under it before it leaves them to the
#: next run.
READ_ATTEMPTS = 3


def _incremental_sources(
    spark: SparkSession,
    options: InventoryOptions,
    run_id: str,
    files: Sequence[InputFile],
    known: list[file_state.Contribution],
) -> _Sources:
    """Read what is new since ``known`` into state segments of this run. A read whose path log4j renamed under it
    is dropped and its file listed and read again, up to READ_ATTEMPTS times; the others stand and are part of the
    state each next attempt plans from, so an attempt reads only what moved or grew since the one before. A file
    still moving after that is left out, as if it had appeared after the listing: what earlier runs read of it
    stays, and the next run reads it."""
    state = list(known)
    #: This run's reads that stood, by contribution id: which contributions of earlier runs each one replaces.
    replaces_earlier: dict[str, set[str]] = {}
    written_segments: set[str] = set()
    moved: list[InputFile] = []
    for attempt in range(1, READ_ATTEMPTS + 1):
        if attempt > 1:
            files = list_input_files(spark, options.inputs)
        readable, corrupt = corrupt_heads(files)
        plan = file_state.plan_reads(readable, state)
        for item in plan.to_read:
            if item.reason in file_state.SUSPICIOUS:
                log.warning(
                    "%s: its content %s since it was read (%s); reading it again whole and replacing what it "
                    "contributed",
                    item.file.path,
                    "shrank" if item.reason == "shrank" else "changed",
                    ", ".join(c.path for c in item.replaces),
                )
        for duplicate, chosen in plan.duplicates:
            log.info("%s: same content as %s, read once", duplicate.path, chosen.path)
        segment = run_id if attempt == 1 else f"{run_id}-{attempt}"
        written = segments.write_segment(spark, options.output, segment, plan.to_read)
        written_segments.add(segment)
        moved = moved_since_listed(spark, [item.file for item in written.done + written.no_lines])
        moved_paths = {f.path for f in moved}
        # log4j renames the active file and opens an empty one under its name: read in that instant, the path
        # gave no line. That is a rotation like any other; a file that gave none and did not move lost its lines.
        lost = [item.file.path for item in written.no_lines if item.file.path not in moved_paths]
        if lost:
            segments.remove_segment(options.output, segment)
            raise segments.LinesNotAttributed(lost)
        # A read that is dropped, or a file that could not be read, replaces nothing: what it contributed stays.
        stood = [
            (item, c)
            for item, c in zip(written.done, written.contributions, strict=True)
            if item.file.path not in moved_paths
        ]
        if not stood:
            segments.remove_segment(options.output, segment)
            written_segments.discard(segment)
        replaced = {r.id for item, _ in stood for r in item.replaces}
        for item, contribution in stood:
            # A read of this run replaced by a later attempt's passes on what it replaced of the earlier runs'.
            replaces_earlier[contribution.id] = set().union(
                *(replaces_earlier.get(r.id, {r.id}) for r in item.replaces)
            )
        for superseded in replaced & set(replaces_earlier) - {c.id for _, c in stood}:
            del replaces_earlier[superseded]
        unchanged = {c.id: c for c in plan.unchanged}
        state = [unchanged.get(c.id, c) for c in state if c.id not in replaced] + [c for _, c in stood]
        if not moved:
            break
        if attempt < READ_ATTEMPTS:
            log.warning("%s: what was read there is not the file listed; listing and reading again", _renamed(moved))
        else:
            log.warning(
                "%s, %d times in a row: left for the next run (what earlier runs read of them stays)",
                _renamed(moved),
                READ_ATTEMPTS,
            )
    forgotten = 0
    if options.forget_before is not None:
        state, forgotten = file_state.forget(state, options.forget_before)
    state = segments.compact(spark, options.output, run_id, written_segments, state)
    present = {c.id for c in plan.unchanged} | set(replaces_earlier)
    files_summary = {
        "listed": len(files),
        "read": len(replaces_earlier),
        "read_new": sum(1 for earlier in replaces_earlier.values() if not earlier),
        "reread": sum(1 for earlier in replaces_earlier.values() if earlier),
        "skipped_unreadable": len(corrupt) + len(written.unreadable),
        "skipped_unchanged": sum(1 for c in plan.unchanged if c.id not in replaces_earlier),
        "skipped_duplicate": len(plan.duplicates),
        "skipped_empty": len(plan.empty),
        "skipped_renamed_while_read": len(moved),
        "history_only": sum(1 for c in state if c.id not in present and not c.forgotten),
        "forgotten_now": forgotten,
    }
    groups = segments.state_groups(spark, options.output, state)
    if groups is None:
        groups = tables.line_groups(parse.parse_lines(parse.no_lines(spark)))
    groups = _persisted(groups, "state: sum the groups of every file read so far")
    rejected = segments.state_rejections(spark, options.output, state)
    if rejected is None:
        rejected = server_log.parse_rejections(server_log.no_events(spark))
    kinds = log_kinds.by_directory(
        (c.path, log_kinds.LineLevels.from_json(c.levels)) for c in state if c.kind == "request" and not c.forgotten
    )
    return _Sources(groups, rejected, files_summary, corrupt + written.unreadable, state, kinds)


def _policy_digest(policy_file: Path | None) -> str:
    """What the policy judged by: the shipped default and the user's file over it."""
    digest = hashlib.sha256(default_policy_text().encode())
    if policy_file is not None:
        digest.update(b"\0" + policy_file.read_bytes())
    return digest.hexdigest()


def nothing_new(
    options: InventoryOptions,
    published: dict[str, Any] | None,
    files: Sequence[InputFile],
    known: list[file_state.Contribution],
    policy_digest: str,
) -> dict[str, int] | None:
    """The files summary when an incremental run would write exactly the published tables again: no file to read,
    none renamed, unreadable or to forget, and the same job, target release and policy. None otherwise."""
    if published is None or options.forget_before is not None:
        return None
    same_judgement = (
        published.get("job_version") == __version__
        and published.get("target_release") == options.target_release
        and published.get("policy_sha256") == policy_digest
        and not published.get("unreadable")
    )
    readable, corrupt = corrupt_heads(files)
    plan = file_state.plan_reads(readable, known)
    unchanged = {c.id: c for c in plan.unchanged}
    if not same_judgement or corrupt or plan.to_read or any(unchanged.get(c.id, c) != c for c in known):
        return None
    present = set(unchanged)
    return {
        "listed": len(files),
        "read": 0,
        "read_new": 0,
        "reread": 0,
        "skipped_unreadable": 0,
        "skipped_unchanged": len(plan.unchanged),
        "skipped_duplicate": len(plan.duplicates),
        "skipped_empty": len(plan.empty),
        "skipped_renamed_while_read": 0,
        "history_only": sum(1 for c in known if c.id not in present and not c.forgotten),
        "forgotten_now": 0,
    }


def _unchanged_summary(
    options: InventoryOptions, published: dict[str, Any], files: dict[str, int], started: float
) -> InventorySummary:
    rows = published.get("rows", {})
    time_range = published.get("log_time_range") or {}
    log.info(
        "nothing new since run %s (files: %s): the publication stays as it is",
        published["run_id"],
        ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in files.items()),
    )
    return InventorySummary(
        lines=published.get("lines", 0),
        malformed_lines=published.get("malformed_lines", 0),
        clients=rows.get("clients", 0),
        blocking_clients=published.get("blocking_clients", 0),
        policy_clients=published.get("policy_clients", 0),
        rejections=rows.get("rejections", 0),
        seconds=time.monotonic() - started,
        outputs={},
        milestones={},
        run_dir=publication.join(options.output, published["run_dir"]),
        files=files,
        time_range=(time_range.get("first"), time_range.get("last")),
        unchanged=True,
    )


def run_inventory(spark: SparkSession, options: InventoryOptions) -> InventorySummary:
    started = time.monotonic()
    started_at = publication.now_iso()
    upgrade_target(options.target_release)  # fail on a bad release before reading anything
    policy = load_policy(options.policy_file)
    run_id = publication.new_run_id()
    run_dir = publication.join(options.output, publication.RUNS, run_id)
    with publication.output_lock(options.output), ProgressLogger(spark.sparkContext):
        published = publication.read_publication(options.output)
        _check_output(options, published)
        keep_runs, keep_segments = _kept(options.output, published)
        for removed in publication.remove_unpublished(options.output, keep_runs, keep_segments):
            log.info("removed %s (not published: an earlier run failed, or it is older than the last two)", removed)
        policy_digest = _policy_digest(options.policy_file)
        known = _known_contributions(options.output, published) if options.incremental else []
        files = list_input_files(spark, options.inputs)  # an unreadable input stops the run here
        if not files:
            raise InputError(f"no {lf.FILE_GLOB} or {server_log.FILE_GLOB} under {', '.join(options.inputs)}")
        if not options.incremental:
            # A full run keeps no state: a file rotated under it only leaves this run's tables short of it.
            sources = _full_sources(spark, files)
        else:
            unchanged = nothing_new(options, published, files, known, policy_digest)
            if unchanged is not None and published is not None:
                # The tables would be the published ones again: deriving them costs more than all the rest.
                return _unchanged_summary(options, published, unchanged, started)
            sources = _incremental_sources(spark, options, run_id, files, known)
        if len(sources.unreadable) == sources.files["listed"]:
            sources.groups.unpersist()
            raise InputError(
                f"none of the {sources.files['listed']} log file(s) under {', '.join(options.inputs)} could be read: "
                + "; ".join(f"{u.file.path}: {u.why}" for u in sources.unreadable)
            )
        milestones = {"parsed": time.monotonic() - started}
        built = derive_tables(
            spark, sources.groups, sources.rejected, options.target_release, policy, sources.unreadable
        )
        try:
            outputs, table_milestones, totals, (first_ts, last_ts) = _write_outputs(
                spark, built, run_dir, options, started, sources.request_logs
            )
        finally:
            built.unpersist()
        milestones.update(table_milestones)
        if sources.contributions is not None:
            manifest = {"format": publication.FORMAT, "contributions": [c.to_json() for c in sources.contributions]}
            publication.write_json(spark, publication.join(run_dir, publication.STATE_MANIFEST), manifest)
        metadata = {
            "started": started_at,
            "finished": publication.now_iso(),
            "incremental": options.incremental,
            "inputs": list(options.inputs),
            "target_release": options.target_release,
            "policy_sha256": policy_digest,
            "forget_before": _ts_text(options.forget_before),
            "previous_run_id": (published or {}).get("run_id"),
            "files": sources.files,
            "unreadable": [{"path": u.file.path, "why": u.why} for u in sources.unreadable],
            "log_time_range": {"first": _ts_text(first_ts), "last": _ts_text(last_ts)},
            "lines": totals["lines"],
            "malformed_lines": totals["malformed"],
            "rows": {name: totals[f"rows_{name}"] for name in TABLES},
            "blocking_clients": totals["blocking"],
            "policy_clients": totals["policy"],
            "request_logs": [kind.to_json() for kind in sources.request_logs],
        }
        publication.publish(spark, options.output, run_id, metadata)
        keep_runs, keep_segments = _kept(options.output, {**metadata, "run_id": run_id})
        publication.remove_unpublished(options.output, keep_runs, keep_segments)
    log.info(
        "files: %s; the tables cover log lines from %s to %s",
        ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in sources.files.items()),
        _ts_text(first_ts),
        _ts_text(last_ts),
    )
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
        run_dir=run_dir,
        files=sources.files,
        time_range=(_ts_text(first_ts), _ts_text(last_ts)),
    )
