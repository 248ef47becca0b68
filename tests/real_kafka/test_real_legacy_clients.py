"""Upgrade blockers as real brokers show them (see conftest.py for the shared 3.9.2 and 4.4.0 brokers).

Before the upgrade: kafka-clients 0.10.2.2 asks ApiVersions v0 (so the broker records `unknown`) and produces with
Produce v2 every two seconds. A 3.9.2 broker serves it and counts it in its DeprecatedRequestsPerSec meter
(KIP-896); the exporter turns that into kafka_client_deprecated_requests_total, and into
kafka_client_upgrade_blocking_requests_total because 4.0 no longer serves Produce v2: the status page lists the
blocker and the shipped KafkaClientDeprecatedRequests alert, evaluated by a real Prometheus, goes pending.

After the upgrade: a 4.4.0 broker serves the 0.10 clients' Metadata v2 (4.0 kept Metadata v0-v3) and closes the
connection on their Produce v2, which never reaches its request log and no meter counts (4.x deprecates nothing);
the clients fail with a NetworkException. Only server.log says it, and the inventory job reads those lines into its
`rejections` table, naming the client.
"""

from __future__ import annotations

import csv
import json
import re
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from harness.clients import UNKNOWN, ClientError, ClientKind, start_client
from harness.prometheus_process import running_prometheus
from tests.real_kafka.conftest import RealBrokers, get, samples, scrape
from tests.support.inventory_command import run_inventory
from tests.support.status_page import tables_of
from tests.support.waiting import eventually

pytestmark = [pytest.mark.real_kafka, pytest.mark.slow]

RULES = Path(__file__).resolve().parents[2] / "alerts" / "kafka-client-exporter.rules.yaml"
TARGET_RELEASE = "4.0.0"  # the policy's default target_release
#: One "Closing socket" event of server.log with its exception line, as 4.x's SocketServer Processor logs it.
REJECTION = re.compile(
    r"^\[[^\]]+\] ERROR Closing socket for (\S+) because of error \(kafka\.network\.Processor\)\n"
    r"org\.apache\.kafka\.common\.errors\.UnsupportedVersionException: "
    r"Received request for api with key 0 \(Produce\) and unsupported version 2$",
    re.MULTILINE,
)


def counter(base: str, name: str, **labels: str) -> dict[tuple[tuple[str, str], ...], float]:
    return samples(scrape(base), name, **labels)


def prometheus(base: str, path: str, **params: str) -> Any:
    with urllib.request.urlopen(f"{base}{path}?{urllib.parse.urlencode(params)}", timeout=10) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    return body["data"]


def test_produce_v2_on_3_9_is_a_blocker_on_metrics_the_status_page_and_the_shipped_alert(
    real_brokers: RealBrokers, exporter: str, tmp_path: Path
) -> None:
    release, cluster = "3.9.2", real_brokers.cluster_name("3.9.2")
    node = real_brokers.node(release)
    broker = str(node.node_id)
    produce = {
        "kafka_cluster": cluster,
        "broker": broker,
        "request": "Produce",
        "version": "2",
        "client_software_name": UNKNOWN.software_name,
        "client_software_version": UNKNOWN.software_version,
    }
    with start_client(ClientKind.JAVA_0_10_2, node.bootstrap(), client_id="legacy-blocker-0.10.2") as legacy:
        legacy.wait_ready(timeout=60)
        assert legacy.expected == UNKNOWN

        # The broker's meter, read over JMX: it counts every Produce v2 the client sends, every two seconds.
        def produce_v2_counts() -> tuple[float, float] | None:
            deprecated = counter(exporter, "kafka_client_deprecated_requests_total", **produce)
            blocking = counter(
                exporter, "kafka_client_upgrade_blocking_requests_total", target_release=TARGET_RELEASE, **produce
            )
            if len(deprecated) == 1 and len(blocking) == 1:
                return next(iter(deprecated.values())), next(iter(blocking.values()))
            return None

        first = eventually(produce_v2_counts, 60, "Produce v2 counted on /metrics")  # a JVM client start, busy machine
        eventually(
            lambda: (now := produce_v2_counts()) is not None and now[0] > first[0] and now[1] > first[1],
            20,
            "the Produce v2 counts growing while the client produces",
        )
        # Its Metadata v2 is served by 4.0 too: 3.9.0 marked Metadata v0-3 deprecated (and Produce v0-6), 3.9.2 marks
        # only what 4.0 removed (Produce v0-2), so the broker counts nothing else of this client.
        assert not counter(exporter, "kafka_client_deprecated_requests_total", **{**produce, "request": "Metadata"})
        assert not counter(
            exporter, "kafka_client_upgrade_blocking_requests_total", kafka_cluster=cluster, request="Metadata"
        )

        # The page of a later cycle: one whose JMX read did not finish in time (a one-second cycle, three busy
        # workers) has no counts to show, and says so; the next one does.
        def produce_v2_rows() -> list[dict[str, str]]:
            rows = tables_of(get(f"{exporter}/")).get(f"blockers-{cluster}", [])
            return [row for row in rows if row["request"] == "Produce v2" and row["software"] == UNKNOWN.software_name]

        [row] = eventually(produce_v2_rows, 30, "the Produce v2 row of the page's blockers table")
        assert (row["version"], row["target"], row["brokers"]) == (UNKNOWN.software_version, TARGET_RELEASE, broker)
        assert int(row["requests"]) >= 1
        # Without an inventory the page cannot say who runs it, and says so.
        assert row["run-by"] == "no inventory"

        # The shipped rule, evaluated by Prometheus over what it scraped from the exporter: pending (for: 5m).
        exporter_port = urllib.parse.urlsplit(exporter).port
        assert exporter_port is not None
        with running_prometheus(tmp_path / "prometheus", exporter_port, RULES, interval="1s") as base:

            def our_alert() -> list[dict[str, Any]]:
                return [
                    alert
                    for alert in prometheus(base, "/api/v1/alerts")["alerts"]
                    if alert["labels"]["alertname"] == "KafkaClientDeprecatedRequests"
                    and alert["labels"].get("kafka_cluster") == cluster
                    and alert["labels"].get("request") == "Produce"
                    and alert["labels"].get("version") == "2"
                ]

            [alert] = eventually(our_alert, 30, "KafkaClientDeprecatedRequests for Produce v2 on kafka-3.9.2")
    assert alert["state"] in ("pending", "firing")
    labels = alert["labels"]
    assert (labels["client_software_name"], labels["client_software_version"]) == ("unknown", "unknown")
    assert labels["target_release"] == TARGET_RELEASE
    assert "unknown unknown sent Produce v2 to cluster kafka-3.9.2" in alert["annotations"]["description"]


def test_4_4_refuses_the_0_10_producers_and_the_inventory_reads_the_refusals(
    real_brokers: RealBrokers, exporter: str, tmp_path: Path
) -> None:
    release, cluster = "4.4.0", real_brokers.cluster_name("4.4.0")
    node = real_brokers.node(release)
    server_log = node.logs.server_log
    offset = server_log.stat().st_size
    ids = {ClientKind.JAVA_0_10_2: "legacy-refused-0.10.2", ClientKind.JAVA_0_10_1: "legacy-refused-0.10.1"}
    clients = {kind: start_client(kind, node.bootstrap(), client_id=ids[kind], bootstrap_timeout=10) for kind in ids}
    for kind, client in clients.items():
        with client, pytest.raises(ClientError, match="exited with code 1") as failure:
            client.wait_ready(timeout=60)
        # The broker answered Metadata v2 and then closed the connection on Produce v2: the client's send fails.
        assert "NetworkException: The server disconnected before a response was received" in str(failure.value), kind

    def refused() -> list[str]:
        with server_log.open("rb") as log:
            log.seek(offset)
            return REJECTION.findall(log.read().decode("utf-8", errors="replace"))

    # One refusal per client (0.10.2 after its ApiVersions v0 on that connection, 0.10.1 as its first request).
    connections = eventually(
        lambda: found if len(found := refused()) >= 2 else None, 10, "two Produce v2 refusals in server.log"
    )
    # No meter on 4.x: the refused requests are nowhere on /metrics.
    assert not counter(exporter, "kafka_client_deprecated_requests_total", kafka_cluster=cluster)
    assert not counter(exporter, "kafka_client_upgrade_blocking_requests_total", kafka_cluster=cluster)

    output = tmp_path / "inventory"
    done = run_inventory("--input", str(node.logs.directory), "--output", str(output), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    with (output / "current" / "rejections.csv").open(encoding="utf-8", newline="") as table:
        rows = {row["connection"]: row for row in csv.DictReader(table) if row["connection"] in connections}
    assert rows.keys() == set(connections), "a refusal of server.log missing from the rejections table"
    for row in rows.values():
        assert (row["api_key"], row["api_name"], row["api_version"]) == ("0", "Produce", "2")
        assert (row["exception"], row["listener"], row["source_host"]) == (
            "UnsupportedVersionException",
            "PLAINTEXT",
            "127.0.0.1",
        )
        assert row["broker_file"].endswith(f"node-{node.node_id}/logs/server.log")
    by_client = {row["client_id"]: row for row in rows.values() if row["matched_by"] == "connection"}
    # 0.10.2 sent ApiVersions v0 first on the refused connection: the request log names it by that connection.
    newer = by_client[ids[ClientKind.JAVA_0_10_2]]
    assert (newer["principal"], newer["software_name"], newer["software_version"]) == (
        "User:ANONYMOUS",
        "unknown",
        "unknown",
    )
    # 0.10.1 asks nothing first: its refused Produce v2 is usually the connection's first request, so only its host
    # is known, with every clientId seen from it. On a busy machine its first Metadata answer may name no leader yet,
    # and the refresh goes over the leader's connection before the Produce: then the broker logged a line of that
    # connection and the refusal is named by it. Which one happened is read from the broker's own request log.
    [older] = [row for row in rows.values() if row["connection"] != newer["connection"]]
    logged = f'"connection":"{older["connection"]}"'
    request_logs = sorted(node.logs.directory.glob("kafka-request.log*"))
    if any(logged in path.read_text(encoding="utf-8", errors="replace") for path in request_logs):
        assert (older["matched_by"], older["client_id"]) == ("connection", ids[ClientKind.JAVA_0_10_1])
    else:
        assert older["matched_by"] == "host", older
        assert ids[ClientKind.JAVA_0_10_1] in older["client_id"].split(",")
