"""An oracle independent of the release CSV: Kafka's own kafka-clients jar computes the ApiVersions entries a broker
of its release advertises (tests/support/ApiVersionsOracle.java), and the double's brokers must send the same ranges
on the wire, while the exporter's release inference must name the release from Kafka's own answer; and the double
refuses exactly the software names and versions Kafka's ApiVersionsRequest.isValid() refuses (KIP-511's pattern,
docs/kafka-facts/protocol.md#software-name-pattern; kafka-clients judges them in tests/support/RequestLogOracle.java).

The double's ranges and the exporter's inference both come from exporter/kafka_releases/api_versions_by_release.csv;
comparing one with the other proves nothing about Kafka (issue 15 calls it circular). This test does not read it."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator

import pytest
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from exporter.kafka_releases.inference import infer_release
from harness.raw_client import RawConnection
from kafka_double import BrokerSpec, DoubleCluster
from kafka_double.mbean_host import MBeanHost
from kafka_double.releases import KRAFT, ZOOKEEPER
from tests.support.kafka_oracles import API_VERSIONS_ORACLE, REQUEST_LOG_ORACLE, run_oracle

pytestmark = pytest.mark.slow

Ranges = dict[int, tuple[int, int]]
INVALID_REQUEST = 42
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

# (kafka-clients jar, ListenerType of the broker's client listener, the double's release and mode). 3.9's ApiKeys
# distinguishes ZK_BROKER from BROKER; 4.x has no ZK_BROKER (ZooKeeper mode was removed).
CASES = [
    ("4.3.0", "BROKER", "4.3.0", KRAFT),
    ("3.9.0", "BROKER", "3.9.0", KRAFT),
    ("3.9.0", "ZK_BROKER", "3.9.0", ZOOKEEPER),
]


@functools.cache
def oracle(kafka_clients: str, listener_type: str) -> Ranges:
    answer = json.loads(run_oracle(API_VERSIONS_ORACLE, kafka_clients, listener_type))
    assert (answer["kafka_clients"], answer["listener"]) == (kafka_clients, listener_type)
    return {a["api_key"]: (a["min_version"], a["max_version"]) for a in answer["api_keys"]}


def advertised_on_the_wire(port: int) -> Ranges:
    request = ApiVersionsRequest(version=3, client_software_name="oracle", client_software_version="1.0")
    with RawConnection(port) as conn:
        response = ApiVersionsResponse.decode(conn.request(request), version=3, header=True, framed=True)
    assert response.error_code == 0
    return {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}


@pytest.fixture(scope="module")
def double(mbean_host: MBeanHost) -> Iterator[DoubleCluster]:
    specs = [BrokerSpec(i, release=release, metadata_mode=mode) for i, (_, _, release, mode) in enumerate(CASES)]
    with DoubleCluster(specs, mbean_host=mbean_host) as cluster:
        yield cluster


@pytest.mark.parametrize("case", range(len(CASES)), ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_the_double_advertises_what_kafka_clients_computes(double: DoubleCluster, case: int) -> None:
    kafka_clients, listener_type, _, _ = CASES[case]
    expected = oracle(kafka_clients, listener_type)
    got = advertised_on_the_wire(double.broker(case).listener_port("PLAINTEXT"))
    assert {k: got.get(k) for k in expected if got.get(k) != expected[k]} == {}
    assert got.keys() - expected.keys() == set()


@pytest.mark.parametrize("case", range(len(CASES)), ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_the_exporter_infers_the_release_from_kafkas_own_answer(case: int) -> None:
    kafka_clients, listener_type, _, _ = CASES[case]
    assert infer_release(oracle(kafka_clients, listener_type)) == kafka_clients


def test_the_zookeeper_and_kraft_oracles_differ_where_the_specs_scope_them() -> None:
    # A guard that the oracle really follows the listener type: 3.9's ZK broker serves LeaderAndIsr, not key 74.
    zk, kraft = oracle("3.9.0", "ZK_BROKER"), oracle("3.9.0", "BROKER")
    assert 4 in zk and 4 not in kraft
    assert 74 in kraft and 74 not in zk


@pytest.mark.parametrize("case", range(2), ids=[CASES[c][0] for c in range(2)])
def test_the_double_refuses_the_software_names_kafka_refuses(double: DoubleCluster, case: int) -> None:
    kafka_clients = CASES[case][0]
    requests = [
        ApiVersionsRequest(version=3, client_software_name=name, client_software_version=version)
        for name, version in KIP_511_CASES
    ]
    frames = []
    for request in requests:
        request.with_header(correlation_id=1, client_id="kip-511")
        frames.append(f"{bytes(request.encode(header=True)).hex()}\t0\t-\n")
    stdout = run_oracle(REQUEST_LOG_ORACLE, kafka_clients, stdin="".join(frames), jackson=True)
    valid = [json.loads(line)["valid"] for line in stdout.splitlines()]
    assert len(valid) == len(KIP_511_CASES) and any(valid) and not all(valid)
    refused = []
    for name, version in KIP_511_CASES:
        request = ApiVersionsRequest(version=3, client_software_name=name, client_software_version=version)
        with RawConnection(double.broker(case).listener_port("PLAINTEXT")) as conn:
            frame = conn.request(request)
        # Size, correlation id (response header v0, as every ApiVersions response has), then the error code.
        refused.append(int.from_bytes(frame[8:10], "big", signed=True) == INVALID_REQUEST)
    assert refused == [not ok for ok in valid], list(zip(KIP_511_CASES, valid, refused, strict=True))
