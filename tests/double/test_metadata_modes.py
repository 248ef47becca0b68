"""ZooKeeper-mode and KRaft-mode brokers (2.8-3.9), chosen per broker with ``BrokerSpec.metadata_mode``.

The facts checked here are read from Kafka's message specs (the "listeners" field of
clients/src/main/resources/common/message/*.json) and its server code, cited per test."""

from __future__ import annotations

import struct

import pytest
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from exporter.kafka_releases import table
from exporter.kafka_releases.inference import UNKNOWN, infer_release
from harness.raw_client import RawConnection
from kafka_double import BrokerSpec, DoubleCluster
from kafka_double.mbean_host import MBeanHost
from kafka_double.releases import KRAFT, ZOOKEEPER, get_release, known_releases

# ZooKeeper-only broker APIs of 3.9 (listeners ["zkBroker"] or ["zkBroker", "controller"], commit cc53a632edcf):
# LeaderAndIsr/StopReplica/UpdateMetadata/ControlledShutdown (LeaderAndIsrRequest.json:19 ...), AlterPartition,
# Envelope (EnvelopeRequest.json:19), AllocateProducerIds (AllocateProducerIdsRequest.json:19).
ZK_ONLY_3_9 = {4, 5, 6, 7, 56, 58, 67}
DESCRIBE_QUORUM = 55  # ["broker", "controller"] (DescribeQuorumRequest.json:19): KRaft brokers forward it
LIST_CLIENT_METRICS_RESOURCES = 74  # ["broker"] (ListClientMetricsResourcesRequest.json:19), from 3.7.0
INIT_PRODUCER_ID = 22  # 2.8.0 InitProducerIdRequest.json:19: ["zkBroker"] (KRaft 2.8 was early access)

# One release of each family whose broker APIs differ (listener scopes or KIP-714).
FAMILIES = ["2.8.0", "3.0.0", "3.3.0", "3.6.0", "3.7.0", "3.9.0"]


@pytest.mark.parametrize("release", FAMILIES)
def test_zookeeper_brokers_serve_zookeeper_apis_and_no_kraft_ones(release: str) -> None:
    zk = get_release(release, ZOOKEEPER)
    assert zk.metadata_mode == ZOOKEEPER
    assert {4, 5, 6, 7} <= zk.apis.keys()  # inter-broker APIs every ZooKeeper broker listener serves
    assert DESCRIBE_QUORUM not in zk.apis and LIST_CLIENT_METRICS_RESOURCES not in zk.apis
    assert zk.features() == []


@pytest.mark.parametrize("release", FAMILIES)
def test_kraft_brokers_serve_kraft_apis_and_no_zookeeper_ones(release: str) -> None:
    kraft = get_release(release, KRAFT)
    assert not {4, 5, 6, 7} & kraft.apis.keys()
    assert DESCRIBE_QUORUM in kraft.apis
    assert (LIST_CLIENT_METRICS_RESOURCES in kraft.apis) == (kraft.key >= (3, 7, 0))


def test_3_9_modes_differ_exactly_by_the_listener_scoped_apis() -> None:
    zk, kraft = get_release("3.9.0", ZOOKEEPER), get_release("3.9.0", KRAFT)
    assert zk.apis.keys() - kraft.apis.keys() == ZK_ONLY_3_9
    # Telemetry (71/72) is hidden without a receiver; share-group APIs 76-79/83-87 are unstable v0 only, hidden.
    assert kraft.apis.keys() - zk.apis.keys() == {55, 64, 74, 75, 80, 81}
    shared = zk.apis.keys() & kraft.apis.keys()
    assert all(zk.apis[k] == kraft.apis[k] for k in shared)


def test_kraft_2_8_lacks_the_transaction_apis_only_zookeeper_brokers_had() -> None:
    assert INIT_PRODUCER_ID in get_release("2.8.0", ZOOKEEPER).apis
    assert INIT_PRODUCER_ID not in get_release("2.8.0", KRAFT).apis


@pytest.mark.parametrize(
    ("release", "mode"),
    [
        ("2.0.0", ZOOKEEPER),
        ("2.7.0", ZOOKEEPER),
        ("3.2.0", ZOOKEEPER),
        ("3.3.0", KRAFT),
        ("3.9.0", KRAFT),
        ("4.0.0", KRAFT),
    ],
)
def test_default_mode(release: str, mode: str) -> None:
    assert get_release(release).metadata_mode == mode
    assert get_release(release) == get_release(release, mode)


@pytest.mark.parametrize(
    ("release", "mode", "message"),
    [
        ("4.0.0", ZOOKEEPER, "Kafka 4.0.0 has no ZooKeeper mode"),
        ("4.3.1", ZOOKEEPER, "Kafka 4.3.1 has no ZooKeeper mode"),
        ("2.7.0", KRAFT, "Kafka 2.7.0 has no KRaft mode"),
        ("3.9.0", "zk", "metadata_mode 'zk' is not one of zookeeper, kraft"),
    ],
)
def test_a_mode_the_release_lacks_is_refused_naming_the_broker(release: str, mode: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"broker 7: {message}"):
        DoubleCluster([BrokerSpec(7, release=release, metadata_mode=mode)])


def _api_versions(conn: RawConnection, version: int) -> ApiVersionsResponse:
    request = ApiVersionsRequest(version=version, client_software_name="probe", client_software_version="1.0")
    return ApiVersionsResponse.decode(conn.request(request), version=version, header=True, framed=True)


def test_both_modes_on_the_wire(mbean_host: MBeanHost) -> None:
    specs = [BrokerSpec(1, release="3.9.0", metadata_mode=ZOOKEEPER), BrokerSpec(2, release="3.9.0")]
    with DoubleCluster(specs, mbean_host=mbean_host) as double:
        zk_conn = RawConnection(double.broker(1).listener_port("PLAINTEXT"))
        kraft_conn = RawConnection(double.broker(2).listener_port("PLAINTEXT"))
        try:
            zk, kraft = _api_versions(zk_conn, 3), _api_versions(kraft_conn, 3)
            # A key outside the listener's scope fails header parsing and the connection is closed
            # (3.9 core/src/main/scala/kafka/network/SocketServer.scala:1119-1125): key 74 v0 on the ZooKeeper broker.
            zk_conn.send(struct.pack(">ihhih", 10, LIST_CLIENT_METRICS_RESOURCES, 0, 2, 0))
            with pytest.raises(ConnectionError):
                zk_conn.recv_frame()
        finally:
            zk_conn.close()
            kraft_conn.close()
    assert {k.api_key for k in zk.api_keys} >= ZK_ONLY_3_9
    assert LIST_CLIENT_METRICS_RESOURCES not in {k.api_key for k in zk.api_keys}
    assert LIST_CLIENT_METRICS_RESOURCES in {k.api_key for k in kraft.api_keys}
    # ZooKeeper mode: no supported or finalized feature (KafkaServer.brokerFeatures is empty), but the /feature
    # znode's epoch; KRaft: metadata.version (kraft.version has MinVersion 0, hidden from v3 by KAFKA-17492).
    assert (zk.supported_features, zk.finalized_features, zk.finalized_features_epoch) == ([], [], 0)
    assert [f.name for f in kraft.supported_features] == ["metadata.version"]
    assert "metadata.version" in {f.name for f in kraft.finalized_features}


def _advertisement(release: str, mode: str) -> dict[int, tuple[int, int]]:
    return {a.api_key: (a.min_version, a.max_version) for a in get_release(release, mode).advertised()}


def _modes(release: str) -> list[str]:
    key = get_release(release).key
    return [m for m, ok in ((ZOOKEEPER, key < (4, 0, 0)), (KRAFT, key >= (2, 8, 0))) if ok]


@pytest.mark.parametrize("release", known_releases())
def test_the_exporter_infers_the_release_of_either_mode(release: str) -> None:
    """Inference requires only the APIs both broker kinds serve, so it works against real brokers of both modes.
    It reports the oldest release advertising the same ranges in that mode: a KRaft 3.4.0 broker is
    indistinguishable from a KRaft 3.3.0 one (3.4.0 changed only ZooKeeper and controller APIs)."""
    for mode in _modes(release):
        advertised = _advertisement(release, mode)
        inferred = infer_release(advertised)
        assert inferred != UNKNOWN, (release, mode)
        assert _advertisement(inferred, mode) == advertised, (release, mode, inferred)
        assert table.release_key(inferred) <= table.release_key(release)


def test_kraft_3_4_reads_as_3_3() -> None:
    assert infer_release(_advertisement("3.4.0", KRAFT)) == "3.3.0"
    assert infer_release(_advertisement("3.4.0", ZOOKEEPER)) == "3.4.0"
