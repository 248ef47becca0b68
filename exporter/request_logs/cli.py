"""``kafka-client-exporter inventory`` (also ``python -m exporter.request_logs`` and ``spark-submit``)."""

from __future__ import annotations

import argparse
import logging
import sys
from datetime import datetime
from pathlib import Path

from exporter.kafka_releases.table import UnknownReleaseError
from exporter.kafka_releases.upgrade_target import DEFAULT_TARGET_RELEASE, check_target_release

EXIT_FAILED = 1
EXIT_USAGE = 2
log = logging.getLogger("exporter.request_logs")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input",
        dest="inputs",
        nargs="+",
        action="extend",
        required=True,
        metavar="PATH",
        help="kafka-request.log* files (plain or .gz), directories (searched recursively) or globs; any Hadoop "
        "file system URI works; repeatable",
    )
    parser.add_argument(
        "--output",
        required=True,
        metavar="DIR",
        help="output directory: each run's tables go to DIR/runs/<id>/, published all at once in "
        "DIR/publication.json and DIR/current",
    )
    parser.add_argument(
        "--incremental",
        action="store_true",
        help="read only the log files that are new or grew since the last --incremental run on the same --output "
        "(state kept under it); the tables still cover every file those runs read, deleted ones included",
    )
    parser.add_argument(
        "--forget-before",
        type=_forget_before,
        default=None,
        metavar="DATE",
        help="with --incremental: drop what files whose newest line is older than DATE (YYYY-MM-DD or "
        "YYYY-MM-DDTHH:MM, the brokers' log time) contributed",
    )
    parser.add_argument(
        "--target-release",
        default=DEFAULT_TARGET_RELEASE,
        help=f"Kafka release to check the fleet against (default {DEFAULT_TARGET_RELEASE})",
    )
    parser.add_argument(
        "--policy",
        type=Path,
        default=None,
        metavar="FILE",
        help="version policy file (the exporter's format; default: the shipped policy)",
    )
    parser.add_argument("--master", default=None, help="Spark master URL (default local[*], or spark-submit's)")
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra Spark configuration, e.g. spark.driver.memory=2g; repeatable",
    )
    parser.add_argument("--no-csv", action="store_true", help="write Parquet only")
    parser.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"], default="INFO")


def _forget_before(value: str) -> int:
    """The date as a line_groups time (yyyyMMddHHmmssSSS)."""
    for pattern in ("%Y-%m-%d", "%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"):
        try:
            moment = datetime.strptime(value, pattern)
        except ValueError:
            continue
        return int(moment.strftime("%Y%m%d%H%M%S")) * 1000
    raise argparse.ArgumentTypeError(f"{value!r} is not a date; expected YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS]")


def _spark_conf(pairs: list[str]) -> dict[str, str]:
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--conf {pair!r}: expected KEY=VALUE, e.g. spark.driver.memory=2g")
        conf[key.strip()] = value
    return conf


def _check_target_release(release: str) -> None:
    try:
        check_target_release(release)
    except UnknownReleaseError as exc:
        raise ValueError(f"--target-release: {exc}") from exc


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    # py4j logs every gateway connection at INFO: noise after the run's own last line.
    logging.getLogger("py4j").setLevel(max(logging.WARNING, logging.getLogger().level))
    # Validate everything cheap before a JVM starts.
    from exporter.policy import PolicyError, load_policy

    try:
        conf = _spark_conf(args.conf)
        _check_target_release(args.target_release)
        load_policy(args.policy)
    except (ValueError, PolicyError) as exc:
        print(f"kafka-client-exporter inventory: {exc}", file=sys.stderr)
        return EXIT_USAGE

    # pyspark is the optional 'inventory' extra: the daemon's commands must not need it.
    from pyspark.errors import AnalysisException

    from exporter.request_logs.input_files import InputError
    from exporter.request_logs.job import InventoryOptions, check_options, run_inventory
    from exporter.request_logs.publication import PublicationError
    from exporter.request_logs.session import build_session

    options = InventoryOptions(
        inputs=args.inputs,
        output=args.output,
        target_release=args.target_release,
        policy_file=args.policy,
        write_csv=not args.no_csv,
        incremental=args.incremental,
        forget_before=args.forget_before,
    )
    try:
        check_options(options)
    except PublicationError as exc:
        print(f"kafka-client-exporter inventory: {exc}", file=sys.stderr)
        return EXIT_USAGE
    spark = build_session(args.master, conf)
    try:
        summary = run_inventory(spark, options)
    except (InputError, PublicationError) as exc:
        # Nothing was published: the last publication and its state are as they were.
        print(f"kafka-client-exporter inventory: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except AnalysisException as exc:
        # Missing input paths and the like: Spark's first message line says which.
        print(f"kafka-client-exporter inventory: {str(exc).splitlines()[0]}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        spark.stop()
    print(
        f"{summary.lines:,} lines ({summary.malformed_lines:,} not parsed), {summary.clients:,} clients, "
        f"{summary.blocking_clients:,} blocking {args.target_release}, {summary.policy_clients:,} below the "
        f"version policy, {summary.rejections:,} requests rejected (server.log); {summary.seconds:.1f} s"
    )
    files = ", ".join(f"{count} {what.replace('_', ' ')}" for what, count in summary.files.items())
    first, last = summary.time_range
    print(f"files: {files}; log lines from {first} to {last}")
    print(f"{'nothing new: the publication stays' if summary.unchanged else 'published'}: {summary.run_dir}")
    for name, path in summary.outputs.items():
        print(f"  {name}: {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="kafka-client-exporter inventory",
        description="Fleet inventory from Kafka broker request logs, on Spark.",
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))
