"""State segments: what one incremental run read, per file, as Parquet under ``OUT/state/segments/<run>/``.

``groups`` holds ``tables.line_groups`` rows per file and ``rejections`` the ``server_log.parse_rejections`` rows,
each tagged with its file's contribution id instead of its path: the tables name a file where it was last seen,
which changes when it is rotated after it was read. Segments are never rewritten; a contribution that is replaced
or forgotten is dropped from ``state.json``, and its rows are no longer read. When more than ``MAX_SEGMENTS``
segments hold live contributions, a run copies their live rows into its own segment, so that deriving the tables
reads a bounded number of directories.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from exporter.request_logs import log_format as lf
from exporter.request_logs import parse, publication, server_log, tables
from exporter.request_logs.file_state import Contribution, FileToRead, new_contribution
from exporter.request_logs.input_files import InputFile
from exporter.request_logs.local_rows import local_table
from exporter.request_logs.log_kinds import LineLevels
from exporter.request_logs.unreadable import UnreadableFile, skipping_unreadable

GROUPS = "groups"
REJECTIONS = "rejections"
MAX_SEGMENTS = 32

_PATHS_SCHEMA = T.StructType([T.StructField("file", T.StringType()), T.StructField("contribution", T.StringType())])


class LinesNotAttributed(RuntimeError):
    """Planned files that gave no line: each had content when listed, so either the path held another (empty)
    file by the time Spark read it, which log4j's rolling does, or the lines were not matched to their file."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = list(paths)
        super().__init__(f"lines of {', '.join(paths)} were read but not attributed to the file; nothing was kept")


@dataclass
class SegmentWrite:
    #: The planned reads that were done (a file Spark could not read, or that gave no line, is not among them).
    done: list[FileToRead]
    #: What each of ``done`` contributes, in the same order: its line count and log time range.
    contributions: list[Contribution]
    unreadable: list[UnreadableFile]
    #: Planned files that gave no line (``LinesNotAttributed``): the caller tells a rotation from a lost file.
    no_lines: list[FileToRead]


def _segment_dir(output: str, segment: str, table: str) -> str:
    return publication.join(output, publication.SEGMENTS, segment, table)


def _contribution_ids(spark: SparkSession, contributions: Sequence[Contribution], file_column: str) -> DataFrame:
    rows = [(c.path, c.id) for c in contributions]
    return local_table(spark, rows, _PATHS_SCHEMA).withColumnRenamed("file", file_column)


def _event_time() -> Column:
    stamp = F.regexp_extract("event", r"^\[?" + lf.TIMESTAMP_GROUP, 1)
    return F.translate(stamp, lf.TIMESTAMP_SEPARATORS, "").try_cast("long")


def write_segment(spark: SparkSession, output: str, segment: str, reads: Sequence[FileToRead]) -> SegmentWrite:
    """Read the planned files once and store what each contributes under ``segment``; a file Spark fails to read
    is left out (and so not recorded: a later run reads it once it is complete)."""
    by_path = {item.file.path: item for item in reads}

    def attempt(files: list[InputFile]) -> list[Contribution | None]:
        return _write_segment(spark, output, segment, [by_path[f.path] for f in files])

    found, unreadable = skipping_unreadable(
        [item.file for item in reads], attempt, lambda: remove_segment(output, segment)
    )
    left_out = {u.file.path for u in unreadable}
    attempted = [item for item in reads if item.file.path not in left_out]
    done = [(item, c) for item, c in zip(attempted, found, strict=True) if c is not None]
    no_lines = [item for item, c in zip(attempted, found, strict=True) if c is None]
    return SegmentWrite([item for item, _ in done], [c for _, c in done], unreadable, no_lines)


def remove_segment(output: str, segment: str) -> None:
    """What ``write_segment`` stored under ``segment`` (a read that is not kept)."""
    shutil.rmtree(publication.local_path(publication.join(output, publication.SEGMENTS, segment)), True)


def _write_segment(
    spark: SparkSession, output: str, segment: str, reads: Sequence[FileToRead]
) -> list[Contribution | None]:
    """Each planned read's contribution, None for a file that gave no line."""
    planned = [new_contribution(item.file, f"{segment}/{index}", segment) for index, item in enumerate(reads)]
    by_kind = {
        kind: (
            [item.file.read_path for item in reads if item.file.kind == kind],
            [c for c in planned if c.kind == kind],
        )
        for kind in ("request", "server")
    }
    stats: list[tuple[str, int, int | None, int | None]] = []
    levels: dict[str, dict[str, int]] = {}
    sc = spark.sparkContext

    paths, contributions = by_kind["request"]
    if paths:
        sc.setJobDescription(f"pass 1: parse {len(paths)} request log file(s), group per file and connection")
        groups = tables.line_groups(parse.parse_lines(parse.read_lines(spark, paths)), per_file=True)
        tagged = groups.join(F.broadcast(_contribution_ids(spark, contributions, "file")), "file").drop(
            "file", "sample_file"
        )
        tagged.write.mode("errorifexists").parquet(_segment_dir(output, segment, GROUPS))
        stored = spark.read.parquet(_segment_dir(output, segment, GROUPS))
        per_file = stored.groupBy("contribution").agg(
            F.sum("requests").alias("lines"),
            F.min("first_ts").alias("first_ts"),
            F.max("last_ts").alias("last_ts"),
            *tables.line_levels(),
        )
        for r in per_file.collect():
            stats.append((r.contribution, int(r.lines), r.first_ts, r.last_ts))
            levels[r.contribution] = LineLevels.of(r.asDict()).to_json()

    paths, contributions = by_kind["server"]
    if paths:
        sc.setJobDescription(f"server.log: {len(paths)} file(s)")
        events = server_log.read_events(spark, paths).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            ids = F.broadcast(_contribution_ids(spark, contributions, "broker_file"))
            per_file = events.groupBy(F.col("file").alias("broker_file")).agg(
                F.count(F.lit(1)).alias("lines"),
                F.min(_event_time()).alias("first_ts"),
                F.max(_event_time()).alias("last_ts"),
            )
            stats += [
                (r.contribution, int(r.lines), r.first_ts, r.last_ts)
                for r in per_file.join(ids, "broker_file").collect()
            ]
            rejected = server_log.parse_rejections(events).join(ids, "broker_file").drop("broker_file")
            rejected.write.mode("errorifexists").parquet(_segment_dir(output, segment, REJECTIONS))
        finally:
            events.unpersist()

    found = {contribution: (lines, first, last) for contribution, lines, first, last in stats}
    # Every planned file has content (empty ones are not planned), so each must have lines: one without any was
    # not attributed to its file, and recording it as read would lose its lines for good.
    return [
        replace(c, lines=found[c.id][0], first_ts=found[c.id][1], last_ts=found[c.id][2], levels=levels.get(c.id))
        if c.id in found
        else None
        for c in planned
    ]


def _live_rows(
    spark: SparkSession, output: str, contributions: Sequence[Contribution], table: str, file_column: str
) -> DataFrame | None:
    live = [c for c in contributions if not c.forgotten]
    directories = sorted(
        {
            _segment_dir(output, c.segment, table)
            for c in live
            if c.segment is not None and _exists(spark, _segment_dir(output, c.segment, table))
        }
    )
    if not directories:
        return None
    # Segments an older job version wrote have no level column: merged, their rows read it as null.
    return (
        spark.read.option("mergeSchema", "true")
        .parquet(*directories)
        .join(F.broadcast(_contribution_ids(spark, live, file_column)), "contribution")
    )


def _exists(spark: SparkSession, path: str) -> bool:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    return bool(hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).exists(hadoop_path))


def state_groups(spark: SparkSession, output: str, contributions: Sequence[Contribution]) -> DataFrame | None:
    """The ``line_groups`` of every live contribution summed, as one read of all their files would give them
    (malformed samples named by the path where their file was last seen)."""
    rows = _live_rows(spark, output, contributions, GROUPS, "path")
    if rows is None:
        return None
    malformed = F.col("reason").isNotNull() & (F.col("reason") != lf.REASON_FORWARDED)
    named = rows.withColumn("sample_file", F.when(malformed, F.col("path")))
    return tables.merge_groups(named)


def state_rejections(spark: SparkSession, output: str, contributions: Sequence[Contribution]) -> DataFrame | None:
    rows = _live_rows(spark, output, contributions, REJECTIONS, "broker_file")
    if rows is None:
        return None
    return rows.select(*server_log.PARSED_COLUMNS)


def compact(
    spark: SparkSession, output: str, run_id: str, written: set[str], contributions: Sequence[Contribution]
) -> list[Contribution]:
    """When live rows are spread over more than MAX_SEGMENTS segments besides the ones this run ``written``, copy
    them into a segment of this run (``<run_id>-compacted``) and point their contributions there; the old segments
    are then unreferenced."""
    live_segments = {c.segment for c in contributions if not c.forgotten and c.segment not in written}
    if len(live_segments) <= MAX_SEGMENTS:
        return list(contributions)
    moved = [c for c in contributions if not c.forgotten and c.segment not in written]
    target = f"{run_id}-compacted"
    for table, column in ((GROUPS, "path"), (REJECTIONS, "broker_file")):
        rows = _live_rows(spark, output, moved, table, column)
        if rows is not None:
            rows.drop(column).write.mode("errorifexists").parquet(_segment_dir(output, target, table))
    moved_ids = {c.id for c in moved}
    return [replace(c, segment=target) if c.id in moved_ids else c for c in contributions]
