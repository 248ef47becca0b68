"""The request log as docs/brokers.md recommends running it, on a real broker: the filtered appender of broker-config/
deployed once, the request logger kept at INFO (it costs nothing: bench/bench_request_log_modes.py), and switched to
DEBUG at run time for an audit window with broker-loggers, as ``kafka-configs.sh`` does, no restart.

Clients connected while the logger was at INFO sent their ApiVersions then, unlogged. The window still names each
of them: every client refreshes its metadata (five minutes by default; a second here), and the filtered log keeps
Metadata lines, which carry the software the broker registered for the connection.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaAdminClient

from exporter.request_logs.log_kinds import LogKind
from harness.clients import ClientKind, RealClient, start_client
from real_kafka import KafkaCluster, NodeOptions
from real_kafka.broker_loggers import set_logger_level
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.real_kafka]

RELEASE = "4.4.0"
_LINE = re.compile(r"^\[[^\]]+\] (\w+) Completed request:(\{.*\}) \(kafka\.request\.logger\)$")
#: (kind, clientId, the setting that makes it refresh its metadata every second)
CLIENTS = [
    (ClientKind.KCAT, "audit-kcat", {"topic.metadata.refresh.interval.ms": "1000"}),
    (ClientKind.CONFLUENT, "audit-confluent", {"topic.metadata.refresh.interval.ms": "1000"}),
    (ClientKind.JAVA, "audit-java", {"metadata.max.age.ms": "1000"}),
]


def logged(path: Path) -> list[tuple[str, dict]]:
    """(level, request line as JSON) of every request line in the node's request log files."""
    lines = []
    for file in sorted(path.parent.glob(path.name + "*")):
        for text in file.read_text(encoding="utf-8", errors="replace").splitlines():
            found = _LINE.match(text)
            if found:
                lines.append((found.group(1), json.loads(found.group(2))))
    return lines


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    directory = tmp_path_factory.mktemp("audit-window")
    with KafkaCluster(directory, RELEASE, options=NodeOptions(request_log=LogKind.IDENTITIES_AND_INFO)) as running:
        yield running


def test_a_debug_window_switched_at_run_time_names_the_clients_connected_before_it(cluster: KafkaCluster) -> None:
    [node] = cluster.nodes.values()
    admin = KafkaAdminClient(bootstrap_servers=node.bootstrap(), client_id="audit-window-admin")
    clients: list[RealClient] = []
    try:
        assert set_logger_level(admin, node.node_id, "INFO") == "INFO"
        for kind, client_id, properties in CLIENTS:
            clients.append(start_client(kind, node.bootstrap(), client_id=client_id, properties=properties))
        for client in clients:
            client.wait_ready(timeout=60)
        ids = {client_id for _, client_id, _ in CLIENTS}
        # At INFO nothing of theirs is logged: 4.4.0 deprecates no version they use.
        assert not [
            entry for _, entry in logged(node.logs.request_log) if entry["requestHeader"].get("clientId") in ids
        ]

        assert set_logger_level(admin, node.node_id, "DEBUG") == "DEBUG"

        def named() -> dict[str, set[tuple[str, str, str]]]:
            seen: dict[str, set[tuple[str, str, str]]] = {}
            for level, entry in logged(node.logs.request_log):
                client_id = entry["requestHeader"].get("clientId")
                if client_id in ids:
                    information = entry["clientInformation"]
                    seen.setdefault(client_id, set()).add(
                        (level, entry["requestHeader"]["requestApiKeyName"], information["softwareName"])
                    )
            return seen

        wait_for(lambda: set(named()) == ids, 30, "a Metadata line of every client in the DEBUG window")
        seen = named()
        for (_, client_id, _), client in zip(CLIENTS, clients, strict=True):
            # Their Metadata requests pass the filters (they connected before the window, so they sent ApiVersions
            # unlogged), and each names the software the broker registered when they connected.
            assert ("DEBUG", "METADATA", client.expected.software_name) in seen[client_id], (client_id, seen)
            assert {api for _, api, _ in seen[client_id]} <= {"METADATA", "API_VERSIONS"}, (client_id, seen)

        # The window closes the same way; the appender and its filters were never touched.
        assert set_logger_level(admin, node.node_id, "INFO") == "INFO"
    finally:
        for client in clients:
            client.close()
        admin.close()
