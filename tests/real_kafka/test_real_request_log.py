"""What the real brokers (3.9.2 and 4.4.0, the session's, see conftest.py) write in their request logs for what the
inventory and the tests' request-log fixtures rely on: an ApiVersions line carries the connection's client
information from before the name it registers (docs/kafka-facts/request-log.md#client-information-lag), the next
line the registered one; connection ids gain the processor id in 4.x (#connection-ids); 3.9 marks deprecated
versions (#deprecated-versions-in-the-log); and the two ApiVersions errors are logged with the bodies the fixture of
the Spark job's tests holds (#rejected-apiversions-lines)."""

from __future__ import annotations

import json
import struct
import uuid
from typing import Any

import pytest
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.protocol.producer import ProduceRequest

from harness.raw_client import RawConnection
from real_kafka import KRAFT_RELEASES
from tests.real_kafka.conftest import RealBrokers
from tests.support import request_log_fixtures as fx
from tests.support.waiting import wait_for

#: The names the inventory reads of every line.
READ = {"requestHeader", "request", "response", "connection", "securityProtocol", "principal", "listener"}


def port_of(brokers: RealBrokers, release: str) -> int:
    return int(brokers.node(release).bootstrap().rsplit(":", 1)[1])


def fixture_bodies(lines: list[str]) -> list[dict[str, Any]]:
    return [
        json.loads(line.split("Completed request:", 1)[1].rsplit(" (kafka.request.logger)", 1)[0]) for line in lines
    ]


def logged(brokers: RealBrokers, release: str, client_id: str, count: int) -> list[dict[str, Any]]:
    """The broker's lines of requests from ``client_id``, once there are ``count`` of them."""

    def lines() -> list[dict[str, Any]]:
        return [body for body in brokers.request_log(release) if body["requestHeader"].get("clientId") == client_id]

    wait_for(lambda: len(lines()) >= count, timeout=30, what=f"{count} lines of {client_id} in {release}'s request log")
    return lines()


@pytest.mark.parametrize("release", KRAFT_RELEASES)
def test_a_connections_lines_as_the_broker_writes_them(real_brokers: RealBrokers, release: str) -> None:
    port = port_of(real_brokers, release)
    client_id = f"request-log-lines-{uuid.uuid4().hex[:8]}"
    # Produce v2 is deprecated on 3.9 (KIP-896) and no longer served by 4.x; Metadata v12 is neither.
    second_request: ApiMessage = (
        ProduceRequest(version=2, acks=1, timeout_ms=1000, topic_data=[])
        if release.startswith("3.")
        else MetadataRequest(version=12, topics=[])
    )
    with RawConnection(port) as conn:
        hello = ApiVersionsRequest(version=3, client_software_name="request-log-lines", client_software_version="1.0")
        conn.request(hello, correlation_id=1, client_id=client_id)
        conn.request(second_request, correlation_id=2, client_id=client_id)
    first, second = logged(real_brokers, release, client_id, 2)
    assert READ | {"clientInformation"} <= first.keys()
    assert first["requestHeader"] == {
        "requestApiKey": 18,
        "requestApiVersion": 3,
        "correlationId": 1,
        "clientId": client_id,
        "requestApiKeyName": "API_VERSIONS",
    }
    assert first["request"] == {"clientSoftwareName": "request-log-lines", "clientSoftwareVersion": "1.0"}
    assert first["clientInformation"] == {"softwareName": "unknown", "softwareVersion": "unknown"}
    assert second["clientInformation"] == {"softwareName": "request-log-lines", "softwareVersion": "1.0"}
    assert second["requestHeader"].get("requestApiVersionDeprecated") is (True if release.startswith("3.") else None)
    # local-remote-index up to 3.9, local-remote-processor-index from 4.0.
    assert first["connection"].startswith(f"127.0.0.1:{port}-127.0.0.1:")
    assert first["connection"].count("-") == (2 if release.startswith("3.") else 3)
    assert (first["principal"], first["listener"], first["securityProtocol"]) == (
        "User:ANONYMOUS",
        "PLAINTEXT",
        "PLAINTEXT",
    )


def test_rejected_api_versions_lines_hold_the_bodies_of_the_fixture(real_brokers: RealBrokers) -> None:
    """INVALID_REQUEST (42) and UNSUPPORTED_VERSION (35) as 3.9.2 logs them: the fixture's 3.x lines (the Spark job's
    tests read them) hold the same request, response and header version."""
    port = port_of(real_brokers, "3.9.2")
    suffix = uuid.uuid4().hex[:8]
    rejected, too_new = f"rejected-{suffix}", f"too-new-{suffix}"
    with RawConnection(port) as conn:
        bad = ApiVersionsRequest(version=3, client_software_name="-bad-", client_software_version="1")
        conn.request(bad, correlation_id=3, client_id=rejected)
    with RawConnection(port) as conn:
        # ApiVersions v5 (above 3.9's v4): header v2, then a body the broker never parses.
        client_id = too_new.encode()
        body = struct.pack(">hhih", 18, 5, 3, len(client_id)) + client_id + b"\x00" + b"\x05java\x044.4\x00"
        conn.send(struct.pack(">i", len(body)) + body)
        conn.recv_frame()
    fixture = {
        body["requestHeader"]["clientId"]: body
        for body in fixture_bodies(fx.JSON_LINES)
        if body["requestHeader"].get("clientId") in ("rejected", "too-new")
    }
    for client, kind in ((rejected, "rejected"), (too_new, "too-new")):
        [line] = logged(real_brokers, "3.9.2", client, 1)
        for key in ("request", "response"):
            assert line[key] == fixture[kind][key], (kind, key)
        assert line["requestHeader"]["requestApiVersion"] == fixture[kind]["requestHeader"]["requestApiVersion"]
        assert line["clientInformation"] == {"softwareName": "unknown", "softwareVersion": "unknown"}
