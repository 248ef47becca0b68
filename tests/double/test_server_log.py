"""The double's server.log events for a rejected request read back by the inventory's server.log pattern."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from exporter.request_logs.server_log import REJECTION
from kafka_double.cluster import BrokerSpec, DoubleCluster
from kafka_double.mbean_host import MBeanHost
from kafka_double.raw_client import RawConnection
from kafka_double.releases import get_release
from kafka_double.server_log import rejection_events
from kafka_double.wire import REQUEST_CLASSES

CONNECTION = "127.0.0.1:9092-127.0.0.1:51234-1-7"


def _event(lines: list[str]) -> str:
    # What the job reads as one record: a log4j event and its exception line.
    return "\n".join(lines[:2])


def test_4x_removed_version_reads_back_as_unsupported_version() -> None:
    lines = rejection_events(get_release("4.1.0"), 3, CONNECTION, 1, "Fetch", 3, known=False)
    assert len(lines) == 4 and lines[1] == lines[3]  # Kafka logs the exception with both ERROR events
    assert lines[2].endswith(
        f"ERROR [SocketServer listenerType=BROKER, nodeId=3] Exception while processing request "
        f"from {CONNECTION} (kafka.network.Processor)"
    )
    match = re.match(REJECTION, _event(lines))
    assert match is not None
    assert match.group(2, 3, 4, 5, 7, 8, 9) == (
        "BROKER",
        "3",
        CONNECTION,
        "UnsupportedVersionException",
        "1",
        "Fetch",
        "3",
    )
    assert match.group(6) == "Received request for api with key 1 (Fetch) and unsupported version 3"


def test_4x_api_outside_the_brokers_scope_reads_back_as_disabled() -> None:
    lines = rejection_events(get_release("4.0.0"), 1, CONNECTION, 52, "Vote", 0, known=True)
    match = re.match(REJECTION, _event(lines))
    assert match is not None and match.group(5, 6) == (
        "InvalidRequestException",
        "Received request for disabled api with key 52 (Vote) and version 0",
    )


def test_3x_message_is_the_older_form_the_job_does_not_claim_to_read() -> None:
    lines = rejection_events(get_release("3.9.0", "zookeeper"), 2, CONNECTION, 0, "Produce", 13, known=False)
    assert "[SocketServer listenerType=ZK_BROKER, nodeId=2] Closing socket for" in lines[0]
    assert lines[1] == (
        "org.apache.kafka.common.errors.InvalidRequestException: Received request api key PRODUCE with version 13 "
        "which is not enabled"
    )
    assert re.match(REJECTION, _event(lines)) is None


def test_a_41_broker_closes_on_produce_v2_and_logs_it_where_the_inventory_reads_it(
    tmp_path: Path, mbean_host: MBeanHost
) -> None:
    produce = REQUEST_CLASSES[0](version=2, acks=1, timeout_ms=30000, topic_data=[])
    with DoubleCluster([BrokerSpec(1, release="4.1.0")], mbean_host=mbean_host, request_log_dir=tmp_path) as c:
        port = c.broker(1).listener_port("PLAINTEXT")
        with RawConnection(port) as legacy, pytest.raises(ConnectionError):
            legacy.request(produce, client_id="legacy-billing")
    text = (tmp_path / "broker-1" / "server.log").read_text(encoding="utf-8")
    match = re.match(REJECTION, text)
    assert match is not None, text
    assert match.group(5, 6) == (
        "UnsupportedVersionException",
        "Received request for api with key 0 (Produce) and unsupported version 2",
    )
    assert match.group(4).startswith(f"127.0.0.1:{port}-127.0.0.1:")
    assert "legacy-billing" not in (tmp_path / "broker-1" / "kafka-request.log").read_text(encoding="utf-8")
