"""The Spark job on small fixtures, checked field by field and against the reference parser."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench import reference_parser
from exporter.kafka_releases.upgrade_target import upgrade_target
from exporter.policy import load_policy
from exporter.request_logs import log_format as lf
from exporter.request_logs.job import InventoryOptions, InventoryTables, build_tables, run_inventory
from exporter.request_logs.tables import CLIENT_KEY
from tests.support import request_log_fixtures as fx
from tests.support.modules import load_script
from tests.support.samples_run import CommandRun
from tests.support.spark_session import SharedSession

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[3]


def spark_clients(tables: InventoryTables) -> list[reference_parser.ClientRow]:
    from bench.spark_clients import clients_as_logged

    rows = clients_as_logged(tables.clients).collect()
    return sorted((reference_parser.ClientRow(*row) for row in rows), key=repr)


@pytest.fixture(scope="module")
def fixture_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fx.write_fixture(tmp_path_factory.mktemp("inventory") / "logs")


@pytest.fixture(scope="module")
def built(spark_sessions: SharedSession, fixture_dir: Path) -> Iterator[InventoryTables]:
    tables = build_tables(spark_sessions.get(), [str(fixture_dir)], "4.0.0", load_policy(None))
    yield tables
    tables.unpersist()


def test_clients_equal_the_reference_parser(built: InventoryTables, fixture_dir: Path) -> None:
    expected = sorted(reference_parser.run([str(fixture_dir)]).clients, key=repr)
    assert spark_clients(built) == expected
    assert any(c.software_name == "apache-kafka-java" and c.client_id == "producer-1" for c in expected)
    # The next release's null bodies (fixture C_TRUNK) are read, not counted as malformed.
    assert [(c.software_name, c.software_version, c.requests) for c in expected if c.client_id == "trunk-app"] == [
        ("apache-kafka-java", "4.4.0", 2)
    ]


def test_malformed_counts_and_bounded_samples(built: InventoryTables, fixture_dir: Path) -> None:
    rows = built.malformed.collect()
    totals = {r.reason: r.lines for r in rows}
    assert totals == dict(reference_parser.run([str(fixture_dir)]).malformed)
    truncated = [r for r in rows if r.reason == lf.REASON_BAD_JSON]
    assert truncated[0].line == fx.TRUNCATED and truncated[0].file.endswith("broker-3/kafka-request.log")
    assert all(len([r for r in rows if r.reason == reason]) <= lf.MALFORMED_SAMPLE_BUCKETS for reason in totals)


def test_api_usage_and_upgrade_impact(built: InventoryTables) -> None:
    usage = {(r.client_id, r.api_name, r.api_version): r.requests for r in built.api_usage.collect()}
    assert usage[("legacy-etl", "Fetch", 3)] == 1
    assert usage[("producer-1", "ApiVersions", 3)] == 1
    impact = built.upgrade_impact.collect()
    api = {
        (r.client_id, r.api_name): (r.reason, r.versions_used, r.min_version_required)
        for r in impact
        if r.kind == "api_version"
    }
    assert api == {
        ("legacy-etl", "Fetch"): ("version_removed", "3", 4),
        ("legacy-etl", "OffsetCommit"): ("version_removed", "1", 2),
    }  # Metadata v1 is still served by 4.0; nothing else is below a 4.0 floor
    policy = {(r.client_id, r.reason) for r in impact if r.kind == "policy"}
    assert ("legacy-etl", "unknown_software") in policy
    assert not any(client == "rdkafka" for client, _ in policy)  # librdkafka 1.9.2 is above the 1.8.2 floor


def test_the_join_judges_every_used_version_as_upgrade_target_blocks(built: InventoryTables) -> None:
    # upgrade_impact runs UpgradeTarget.blocks as a Spark join; the live exporter calls it directly.
    target = upgrade_target("4.0.0")
    judged_by_spark = {
        (*(r[c] for c in CLIENT_KEY), r.api_key, int(version))
        for r in built.upgrade_impact.collect()
        if r.kind == "api_version"
        for version in r.versions_used.split(",")
    }
    used = built.api_usage.collect()
    judged_by_rule = {
        (*(r[c] for c in CLIENT_KEY), r.api_key, r.api_version) for r in used if target.blocks(r.api_key, r.api_version)
    }
    assert judged_by_spark == judged_by_rule
    assert len(judged_by_rule) < len(used)  # some versions pass, so the comparison means something


def test_group_protocols(built: InventoryTables) -> None:
    rows = {r.group_id: r for r in built.group_protocols.collect()}
    assert set(rows) == {"orders", "connect-cluster"}
    orders = rows["orders"]
    assert (orders.client_id, orders.protocol_types, orders.protocol_names, orders.offered_protocols) == (
        "consumer-orders-1",
        "consumer",
        "range",
        "cooperative-sticky,range",
    )
    assert (orders.join_group_versions, orders.sync_group_versions) == ("9", "5")
    connect = rows["connect-cluster"]
    assert (connect.protocol_types, connect.protocol_names, connect.offered_protocols) == (
        "connect",
        "sessioned",
        "compatible,sessioned",
    )


def test_equal_to_the_reference_on_generated_logs(spark, tmp_path: Path) -> None:
    _generated_logs(tmp_path, 3, clients=400)
    reference = reference_parser.run([str(tmp_path)])
    assert reference.lines > 2000 and len(reference.clients) > 300
    tables = build_tables(spark, [str(tmp_path)], "4.0.0", load_policy(None))
    try:
        assert spark_clients(tables) == sorted(reference.clients, key=repr)
    finally:
        tables.unpersist()


def _generated_logs(root: Path, megabytes: float, clients: int) -> Path:
    generator = load_script(REPO / "bench" / "inventory_logs.py", "inventory_logs")
    generator.generate(root, int(megabytes * 1_000_000), clients=clients)
    return root


def test_the_fast_path_reads_lines_as_the_general_path_does(spark, fixture_dir: Path, tmp_path: Path) -> None:
    """The fast-path patterns only decide how fast a line is read: every column of every line, usable or not,
    is what the general path (TEXT_LINE, from_json) gives. Most generated lines must take the fast path."""
    from pyspark.sql import functions as F

    from exporter.request_logs import parse

    generated = _generated_logs(tmp_path / "generated", 1, clients=100)
    lines = parse.read_lines(spark, [str(fixture_dir), str(generated)])
    fast = parse.parse_lines(lines)
    general = parse.parse_lines(lines, fast_path=False)
    assert fast.exceptAll(general).count() == 0
    assert general.exceptAll(fast).count() == 0
    taken = (
        parse._fast_fields(parse.read_lines(spark, [str(generated)]))
        .agg(F.count(F.lit(1)).alias("lines"), F.count("fast").alias("fast"))
        .first()
    )
    assert taken is not None and taken.fast > 0.99 * taken.lines
    # The fixture's escaped SSL principal and its broken lines are what the general path is for.
    slow = parse._fast_fields(parse.read_lines(spark, [str(fixture_dir)])).where(F.col("fast").isNull())
    assert slow.where(F.col("line").contains("Example\\\\, Inc.")).count() > 0


def test_command_on_the_shipped_samples(samples_run: CommandRun) -> None:
    done = samples_run
    assert done.returncode == 0, done.stderr[-3000:]
    assert "0 not parsed" in done.stdout and "1 blocking 4.0.0" in done.stdout
    # Broker 3 (4.1) rejected the legacy client's Produce v2 and said so in server.log; its Metadata v4 on the same
    # connection names the client.
    assert "1 requests rejected (server.log)" in done.stdout
    published = done.output / "current"
    rejection = (published / "rejections.csv").read_text().splitlines()
    assert len(rejection) == 2 and ",Produce,2,UnsupportedVersionException," in rejection[1]
    assert rejection[1].endswith(",connection,legacy-billing,User:ANONYMOUS,unknown,unknown")
    report = (published / "report.html").read_text()
    assert "<svg" in report and "legacy-billing" in report and "<script" not in report
    header = (published / "clients.csv").read_text().splitlines()[0]
    assert header.startswith("client_id,principal,source_host,listener,software_name,software_version")
    assert (published / "upgrade_impact" / "_SUCCESS").exists()
    # The shipped samples are full DEBUG logs, each broker's directory told as such.
    run = json.loads((published / "run.json").read_text())
    assert {entry["kind"] for entry in run["request_logs"]} == {"full_debug"} and len(run["request_logs"]) == 4


def test_bad_target_release_stops_before_spark(tmp_path: Path) -> None:
    from exporter.cli import main

    assert (
        main(["inventory", "--input", str(tmp_path), "--output", str(tmp_path / "o"), "--target-release", "9.9.9"]) == 2
    )


def test_rejections_from_server_log_joined_to_the_request_log(spark, tmp_path: Path) -> None:
    from tests.support import server_log_fixtures as sl

    tables = build_tables(spark, [str(sl.write_rejection_fixture(tmp_path))], "4.0.0", load_policy(None))
    try:
        rows = [row.asDict() for row in tables.rejections.collect()]
    finally:
        tables.unpersist()
    # One row per rejected request (the second ERROR event of each is not counted), oldest first, rolled file too.
    assert [(r["connection"], r["api_name"], r["api_version"], r["exception"]) for r in rows] == [
        (sl.R_ROLLED, "OffsetCommit", 1, "UnsupportedVersionException"),
        (sl.R_CONNECTION, "Fetch", 3, "UnsupportedVersionException"),
        (sl.R_HOST, "OffsetCommit", 1, "UnsupportedVersionException"),
        (sl.R_UNKNOWN, "Vote", 0, "InvalidRequestException"),
    ]
    by_connection = {r["connection"]: r for r in rows}
    exact = by_connection[sl.R_CONNECTION]
    # No node id: the Processor's events carry no [SocketServer ..., nodeId=...] prefix.
    assert str(exact["time"]) == "2026-03-20 10:15:42.123000" and exact["node_id"] is None and exact["api_key"] == 1
    assert exact["broker_file"].endswith("broker-4/server.log") and exact["message"] == sl.FETCH_V3
    assert (exact["matched_by"], exact["client_id"], exact["software_name"], exact["listener"]) == (
        "connection",
        "billing-legacy",
        "unknown",
        "CLIENTS",
    )
    assert exact["source_host"] == "10.20.6.7"
    host = by_connection[sl.R_HOST]
    assert (host["matched_by"], host["client_id"], host["software_name"], host["software_version"]) == (
        "host",
        "inventory-sync",
        "librdkafka",
        "1.9.2",
    )
    assert by_connection[sl.R_ROLLED]["broker_file"].endswith("server.log.2026-03-20-09.gz")
    unknown = by_connection[sl.R_UNKNOWN]
    assert (unknown["matched_by"], unknown["client_id"], unknown["listener"]) == (None, None, None)


def test_rejections_csv_and_report_keep_the_time_order(spark, tmp_path: Path) -> None:
    """The CSV and the report read the table back from its Parquet files, which Spark does not read back in the
    order it wrote them: the rows must still come oldest first, as in the table."""
    from tests.support import server_log_fixtures as sl

    out = tmp_path / "out"
    summary = run_inventory(
        spark, InventoryOptions(inputs=[str(sl.write_rejection_fixture(tmp_path))], output=str(out))
    )
    assert summary.rejections == 4
    with (out / "current" / "rejections.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["connection"] for r in rows] == [sl.R_ROLLED, sl.R_CONNECTION, sl.R_HOST, sl.R_UNKNOWN]
    assert [r["time"] for r in rows] == sorted(r["time"] for r in rows)
    report = (out / "current" / "report.html").read_text(encoding="utf-8")
    positions = [report.index(connection) for connection in (sl.R_ROLLED, sl.R_CONNECTION, sl.R_HOST, sl.R_UNKNOWN)]
    assert positions == sorted(positions)


def test_info_only_logs_still_name_the_blockers(spark) -> None:
    """A 3.9.1 broker at INFO logs only deprecated versions: the clients table is just their users, and
    upgrade_impact finds the same 4.0 blocker as in the full DEBUG log of that broker. The legacy client's Metadata v1
    is not among them: 3.9.1 took Metadata v0-3 off the deprecated list (KAFKA-18663), as 4.0 kept them."""
    info_dir = REPO / "samples" / "request-logs-info-only"
    logged = (info_dir / "broker-2" / "kafka-request.log").read_text(encoding="utf-8").splitlines()
    assert {line.split("] ", 1)[1].split(" ", 1)[0] for line in logged} == {"INFO"}
    info_only = build_tables(spark, [str(info_dir)], "4.0.0", load_policy(None))
    full = build_tables(
        spark, [str(REPO / "samples" / "request-logs" / "double" / "broker-2")], "4.0.0", load_policy(None)
    )
    try:
        assert [(r.client_id, r.requests) for r in info_only.clients.collect()] == [("legacy-billing", 1)]

        def blockers(tables: InventoryTables) -> list[tuple]:
            rows = tables.upgrade_impact.where("kind = 'api_version'").collect()
            return sorted((r.client_id, r.api_name, r.versions_used, r.min_version_required) for r in rows)

        assert blockers(info_only) == blockers(full) == [("legacy-billing", "Produce", "2", 3)]
    finally:
        info_only.unpersist()
        full.unpersist()
