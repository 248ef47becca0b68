"""Kafka's own code as the oracle of the synthetic sample lines: samples/request-logs/synthetic holds a Java 3.9
consumer's JoinGroup and SyncGroup (JSON form; KIP-559's group protocols) that no broker of the tests serves, so they
were rendered once from kafka-python messages with no connection behind them (samples/request-logs/README.md). For
each, kafka-clients 3.9.0 parses the bytes of those messages and writes them with its generated JsonConverters, as
the broker's RequestConvertToJson does (tests/support/RequestLogOracle.java): the committed line must hold the same
``requestHeader``, ``request`` and ``response``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.consumer import JoinGroupRequest, JoinGroupResponse, SyncGroupRequest, SyncGroupResponse

from tests.support.kafka_oracles import REQUEST_LOG_ORACLE, run_oracle

pytestmark = pytest.mark.slow

SAMPLE = (
    Path(__file__).resolve().parents[3] / "samples" / "request-logs" / "synthetic" / "broker-9" / "kafka-request.log"
)
COMPARED = ("requestHeader", "request", "response")
GROUP, CLIENT_ID, MEMBER = "orders-svc", "consumer-orders-svc-1", "consumer-orders-svc-1-m1"


def logged_json(line: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(line.split("Completed request:", 1)[1].rsplit(" (kafka.request.logger)", 1)[0])
    return body


def consumer_group_requests() -> list[tuple[int, ApiMessage, ApiMessage]]:
    """(correlation id, request, response) of the Java 3.9 consumer joining group orders-svc (range and
    cooperative-sticky offered, range chosen): JoinGroup v9 and SyncGroup v5, as the sample's lines were made."""
    join = JoinGroupRequest(
        version=9,
        group_id=GROUP,
        session_timeout_ms=45000,
        rebalance_timeout_ms=300000,
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[
            JoinGroupRequest.JoinGroupRequestProtocol(version=9, name=name, metadata=b"")
            for name in ("range", "cooperative-sticky")
        ],
        reason=None,
    )
    joined = JoinGroupResponse(
        version=9,
        throttle_time_ms=0,
        error_code=0,
        generation_id=1,
        protocol_type="consumer",
        protocol_name="range",
        leader=MEMBER,
        skip_assignment=False,
        member_id=MEMBER,
        members=[],
    )
    sync = SyncGroupRequest(
        version=5,
        group_id=GROUP,
        generation_id=1,
        member_id=MEMBER,
        group_instance_id=None,
        protocol_type="consumer",
        protocol_name="range",
        assignments=[],
    )
    synced = SyncGroupResponse(
        version=5, throttle_time_ms=0, error_code=0, protocol_type="consumer", protocol_name="range", assignment=b""
    )
    return [(10, join, joined), (11, sync, synced)]


def test_the_synthetic_json_lines_are_what_kafka_would_log() -> None:
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    committed = {
        body["requestHeader"]["correlationId"]: body
        for body in (logged_json(line) for line in lines if "Completed request:{" in line)  # the 2.6 ones are text
        if body["requestHeader"]["clientId"] == CLIENT_ID
    }
    stdin = []
    requests = consumer_group_requests()
    for correlation, request, response in requests:
        request.with_header(correlation_id=correlation, client_id=CLIENT_ID)
        stdin.append(
            f"{bytes(request.encode(header=True)).hex()}\t{response.version}\t{bytes(response.encode()).hex()}"
        )
    answers = [
        json.loads(line)
        for line in run_oracle(REQUEST_LOG_ORACLE, "3.9.0", stdin="\n".join(stdin) + "\n", jackson=True).splitlines()
    ]
    assert len(answers) == len(requests) == len(committed) == 2
    for (correlation, request, _), kafka in zip(requests, answers, strict=True):
        line = committed[correlation]
        assert {field: line[field] for field in COMPARED} == kafka, type(request).__name__
