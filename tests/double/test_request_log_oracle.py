"""Kafka's own code as the oracle of the double's request log: for every request real clients (and a legacy client,
and the exporter's own client-metrics calls) make to a 4.3 and a 3.9 broker of the double, kafka-clients of that
release parses the bytes that crossed the wire and writes them with its generated JsonConverters, as the broker's
RequestConvertToJson does (tests/support/RequestLogOracle.java). The double's line must hold the same
``requestHeader``, ``request`` and ``response``.

The double renders those objects from kafka-python's message classes (kafka_double/request_log.py); the Spark job
and its samples read them, so a field Kafka would name or omit differently would go unnoticed without this test.
Only releases whose kafka-clients is at hand can be checked: the jar's own ranges decide how a version is parsed
(an ApiVersions v4 to a 2.8 broker falls back to v0 there, not in 3.9.0's jar)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.admin import DescribeConfigsRequest, ListConfigResourcesRequest
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.producer import ProduceRequest

from kafka_double import BrokerSpec, DoubleCluster
from kafka_double.client_metrics import Subscription
from kafka_double.clients import ClientMix, available_kinds
from kafka_double.kafka_jars import KAFKA_CLIENTS_VERSIONS
from kafka_double.mbean_host import MBeanHost
from kafka_double.raw_client import RawConnection
from kafka_double.releases import get_release
from kafka_double.request_log import CompletedRequest, RequestLog
from tests.support.kafka_oracles import REQUEST_LOG_ORACLE, run_oracle
from tests.support.modules import load_script

pytestmark = pytest.mark.slow

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "request-logs"
COMPARED = ("requestHeader", "request", "response")
API_VERSIONS = 18
CLIENT_METRICS = 16  # ConfigResource.Type
INVALID_REQUEST = 42
UNSUPPORTED_VERSION = 35
# Software names and versions around KIP-511's pattern; Kafka's ApiVersionsRequest.isValid() judges them.
KIP_511_CASES = [
    ("a", "1"),
    ("A9.z-x", "1.0.0-SNAPSHOT"),
    ("-bad", "1"),
    ("bad-", "1"),
    ("my_client", "1"),
    ("my client", "1"),
    ("client", "1.0+build"),
    ("client", ""),
    ("", "1"),
    ("clïent", "1"),
    ("x" * 300, "1"),
]


def logged_json(line: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(line.split("Completed request:", 1)[1].rsplit(" (kafka.request.logger)", 1)[0])
    return body


def oracle(kafka_clients: str, completed: list[CompletedRequest]) -> list[dict[str, Any]]:
    """Kafka's JSON for each request, from the bytes the double read and the response it encoded."""
    lines = []
    for c in completed:
        assert c.frame.raw, "the double keeps every frame it reads off a connection"
        response = "-" if c.response is None else bytes(c.response.encode()).hex()
        version = 0 if c.response is None else c.response.version
        lines.append(f"{c.frame.raw.hex()}\t{version}\t{response}")
    stdout = run_oracle(REQUEST_LOG_ORACLE, kafka_clients, stdin="\n".join(lines) + "\n", jackson=True)
    answers = [json.loads(line) for line in stdout.splitlines()]
    assert len(answers) == len(completed)
    return answers


def legacy_and_exporter_requests(port: int, release: str) -> None:
    """What no client library installed here sends: deprecated versions (3.9), an ApiVersions above the broker's
    range, names around KIP-511's pattern, and the exporter's client-metrics calls."""
    with RawConnection(port) as conn:
        conn.request(ApiVersionsRequest(version=0), client_id="legacy-billing")
        conn.request(MetadataRequest(version=1, topics=None), client_id="legacy-billing")
        if release.startswith("3."):
            produce = ProduceRequest(version=2, acks=1, timeout_ms=30000, topic_data=[])
            conn.request(produce, client_id="legacy-billing")
        conn.request(FindCoordinatorRequest(version=1, key="orders", key_type=0), client_id="legacy-billing")
    own = get_release(release).api(API_VERSIONS)
    assert own is not None
    with RawConnection(port) as conn:
        # One above the broker's range: answered as an empty v0 request with UNSUPPORTED_VERSION.
        future = ApiVersionsRequest(version=3, client_software_name="probe", client_software_version="1")
        conn.send(_framed(future, api_version=own.max_version + 1))
        conn.recv_frame()
    for name, version in KIP_511_CASES:
        with RawConnection(port) as conn:
            conn.request(ApiVersionsRequest(version=3, client_software_name=name, client_software_version=version))
    with RawConnection(port) as conn:
        conn.request(
            ApiVersionsRequest(
                version=3, client_software_name="kafka-client-exporter", client_software_version="0.1.0"
            ),
            client_id="kafka-client-exporter",
        )
        conn.request(ListConfigResourcesRequest(version=0), client_id="kafka-client-exporter")
        if release.startswith("4."):
            listed = ListConfigResourcesRequest(version=1, resource_types=[CLIENT_METRICS])
            conn.request(listed, client_id="kafka-client-exporter")
        describe = DescribeConfigsRequest(
            version=4,
            resources=[
                DescribeConfigsRequest.DescribeConfigsResource(
                    resource_type=CLIENT_METRICS, resource_name="cpu", configuration_keys=["metrics", "interval.ms"]
                )
            ],
            include_synonyms=False,
            include_documentation=False,
        )
        conn.request(describe, client_id="kafka-client-exporter")


def _framed(message: ApiVersionsRequest, api_version: int) -> bytes:
    """The request with another version in its header, as a client newer than the broker sends it."""
    message.with_header(correlation_id=7, client_id="future-client")
    frame = bytearray(message.encode(header=True, framed=True))
    frame[6:8] = api_version.to_bytes(2, "big")
    return bytes(frame)


Logged = tuple[str, list[tuple[dict[str, Any], CompletedRequest]]]


@pytest.fixture(scope="module", params=["4.3.0", "3.9.0"])
def logged(request: pytest.FixtureRequest, mbean_host: MBeanHost, tmp_path_factory: pytest.TempPathFactory) -> Logged:
    """Each line the double logged for one broker of that release, with what it logged it from."""
    release: str = request.param
    logs = tmp_path_factory.mktemp(f"request-logs-{release}")
    completed: list[CompletedRequest] = []
    write = RequestLog.write

    def keep(log: RequestLog, c: CompletedRequest) -> None:
        completed.append(c)
        write(log, c)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RequestLog, "write", keep)
        with DoubleCluster([BrokerSpec(1, release=release)], mbean_host=mbean_host, request_log_dir=logs) as double:
            subscription = Subscription("cpu", metrics=("org.apache.kafka.producer.",), interval_ms=1000)
            double.configs.put_subscription(subscription)
            with ClientMix(double.bootstrap(), available_kinds()):
                pass  # every client bootstrapped (READY), then closed
            legacy_and_exporter_requests(double.broker(1).listener_port("PLAINTEXT"), release)
            double.sync()
    lines = (logs / "broker-1" / "kafka-request.log").read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(completed)
    return release, list(zip(map(logged_json, lines), completed, strict=True))


def test_the_double_logs_what_kafkas_json_converters_write(logged: Logged) -> None:
    release, lines = logged
    answers = oracle(release, [c for _, c in lines])
    differences = []
    for (body, _), kafka in zip(lines, answers, strict=True):
        header = body["requestHeader"]
        what = f"{header['requestApiKeyName']} v{header['requestApiVersion']} from {body['clientInformation']}"
        if "error" in kafka:
            differences.append(f"{what}: kafka-clients {release} cannot read it: {kafka['error']}")
            continue
        if "valid" in kafka and (body["response"]["errorCode"] == INVALID_REQUEST) == kafka["valid"]:
            name, code = body["request"].get("clientSoftwareName"), body["response"]["errorCode"]
            differences.append(f"{what}: {name!r} is valid to Kafka: {kafka['valid']}; the double answered {code}")
        differences += [
            f"{what}: {field}\n  double: {json.dumps(body[field])}\n  kafka:  {json.dumps(kafka[field])}"
            for field in COMPARED
            if body[field] != kafka[field]
        ]
    assert not differences, "\n".join(differences)


def test_the_oracle_saw_every_kind_of_request_the_double_answers(logged: Logged) -> None:
    """Without this a double that logged nothing would pass the comparison."""
    release, lines = logged
    # ApiVersions, Metadata, Produce, InitProducerId, FindCoordinator, DescribeCluster, DescribeConfigs, key 74
    apis = {body["requestHeader"]["requestApiKey"] for body, _ in lines}
    assert apis >= {18, 3, 0, 22, 10, 60, 32, 74}
    errors = {body["response"].get("errorCode") for body, _ in lines if body["requestHeader"]["requestApiKey"] == 18}
    assert {0, INVALID_REQUEST, UNSUPPORTED_VERSION} <= errors
    assert any(body["requestHeader"].get("requestApiVersionDeprecated") for body, _ in lines) == (release == "3.9.0")
    assert {body["clientInformation"]["softwareName"] for body, _ in lines} >= {"apache-kafka-java", "unknown"}


def test_the_synthetic_sample_lines_are_what_kafka_would_log() -> None:
    """samples/request-logs/synthetic is rendered from kafka-python messages with no connection behind them; its
    JSON-form lines must hold what kafka-clients of their release writes for those messages' bytes."""
    generator = load_script(SAMPLES / "generate.py", "generate_samples")
    sample = (SAMPLES / "synthetic" / "broker-9" / "kafka-request.log").read_text(encoding="utf-8").splitlines()
    json_form = [logged_json(line) for line in sample if "Completed request:{" in line]  # 2.6's are text
    committed = {body["requestHeader"]["correlationId"]: body for body in json_form}
    checked = 0
    for release in KAFKA_CLIENTS_VERSIONS:
        completed = []
        for logged_by, c in generator.synthetic_group_requests():
            if logged_by != release:
                continue
            c.request.with_header(correlation_id=c.frame.correlation_id, client_id=c.frame.client_id)
            raw = bytes(c.request.encode(header=True))
            completed.append(dataclasses.replace(c, frame=dataclasses.replace(c.frame, raw=raw)))
        for c, kafka in zip(completed, oracle(release, completed) if completed else [], strict=True):
            line = committed[c.frame.correlation_id]
            assert {field: line[field] for field in COMPARED} == kafka, f"{c.api_name} v{c.frame.api_version}"
            checked += 1
    assert checked >= 2  # the 3.9 consumer's JoinGroup and SyncGroup
