"""Wire-level behaviour of the double over raw sockets, encoded/decoded with kafka-python's classes
(docs/kafka-facts/protocol.md). The JMX side is the session's MBean host."""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator

import pytest
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse

from harness.raw_client import RawConnection
from kafka_double import BrokerSpec, DoubleCluster
from kafka_double.mbean_host import MBeanHost
from tests.support.waiting import wait_for

# docs/kafka-facts/protocol.md#example-frames: ApiVersions v3, client "probe", kafka-client-exporter 0.1.0, corr. id 1.
HEX_FRAME = "0000002d0012000300000001000570726f626500166b61666b612d636c69656e742d6578706f7274657206302e312e3000"
# docs/kafka-facts/protocol.md#example-frames: fallback reply of a broker whose ApiVersions max is 3.
FALLBACK_MAX3 = bytes.fromhex("0000001000000001002300000001001200000003")

Conn = RawConnection


@pytest.fixture
def make_cluster(mbean_host: MBeanHost) -> Iterator[Callable[..., tuple[DoubleCluster, MBeanHost]]]:
    clusters: list[DoubleCluster] = []

    def make(*releases: str) -> tuple[DoubleCluster, MBeanHost]:
        specs = [BrokerSpec(i + 1, release=r) for i, r in enumerate(releases or ("4.1.0",))]
        c = DoubleCluster(specs, mbean_host=mbean_host)
        c.start()
        clusters.append(c)
        return c, mbean_host

    yield make
    for c in clusters:
        c.stop()


def port(c: DoubleCluster, broker: int = 1, listener: str = "PLAINTEXT") -> int:
    return c.broker(broker).listener_port(listener)


def test_hex_frame_from_reference_gets_a_v3_reply(make_cluster) -> None:
    c, _ = make_cluster("3.8.0")
    conn = Conn(port(c))
    conn.send(bytes.fromhex(HEX_FRAME))
    reply = conn.recv_frame()
    # ApiVersions response header is v0: size, correlation id, then the body starts with ErrorCode.
    assert reply[4:8] == b"\x00\x00\x00\x01" and reply[8:10] == b"\x00\x00"
    resp = ApiVersionsResponse.decode(reply, version=3, header=True, framed=True)
    keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert keys[18] == (0, 3) and keys[3] == (0, 12)
    assert [f.name for f in resp.supported_features] == ["metadata.version"]
    wait_for(lambda: c.registry_view(1).get(("PLAINTEXT", 0, "kafka-client-exporter", "0.1.0")) == 1)
    conn.close()


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_api_versions_each_version(make_cluster, version: int) -> None:
    c, _ = make_cluster("4.1.0")
    conn = Conn(port(c))
    kw = {"client_software_name": "my-app", "client_software_version": "1.0"} if version >= 3 else {}
    reply = conn.request(ApiVersionsRequest(version=version, **kw), correlation_id=7)
    resp = ApiVersionsResponse.decode(reply, version=version, header=True, framed=True)
    assert resp.header.correlation_id == 7 and resp.error_code == 0
    keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert keys[18] == (0, 4) and keys[0] == (0, 13) and 71 not in keys
    if version >= 3:
        feats = {f.name for f in resp.supported_features}
        # KAFKA-17492: v3 omits features with MinVersion 0, v4 lists them.
        assert ("kraft.version" in feats) == (version >= 4)
    expected = ("my-app", "1.0") if version >= 3 else ("unknown", "unknown")
    wait_for(lambda: c.registry_view(1).get(("PLAINTEXT", 0, *expected)) == 1)
    conn.close()


def test_unknown_version_falls_back_to_v0_with_own_range(make_cluster) -> None:
    c, _ = make_cluster("3.8.0", "2.3.0")
    conn = Conn(port(c))
    req = ApiVersionsRequest(version=4, client_software_name="my-app", client_software_version="1.0")
    assert conn.request(req, correlation_id=1) == FALLBACK_MAX3
    # The connection was re-registered as unknown (body parsed as empty v0).
    assert c.registry_view(1)[("PLAINTEXT", 0, "unknown", "unknown")] == 1
    # Before 2.4.0 the fallback carries an empty ApiKeys array.
    old = Conn(port(c, 2))
    reply = old.request(ApiVersionsRequest(version=3, client_software_name="a", client_software_version="1"))
    assert reply == bytes.fromhex("0000000a00000001002300000000")
    conn.close()
    old.close()


def test_invalid_software_name_is_rejected_and_not_registered(make_cluster) -> None:
    c, _ = make_cluster("4.1.0")
    conn = Conn(port(c))
    req = ApiVersionsRequest(version=3, client_software_name="my_client", client_software_version="1.0")
    reply = conn.request(req)
    # INVALID_REQUEST in the request's own version (kafka-python's decode would force v0 on errors).
    resp = ApiMessage.decode.__func__(ApiVersionsResponse, reply[8:], version=3)
    assert resp.error_code == 42 and resp.api_keys == []
    assert c.registry_view(1) == {("PLAINTEXT", 0, "unknown", "unknown"): 1}
    conn.close()


@pytest.mark.parametrize(
    ("release", "api_versions_max", "metadata_max"),
    [("2.4.0", 3, 9), ("3.6.0", 3, 12), ("3.9.0", 4, 12), ("4.1.0", 4, 13), ("4.3.1", 4, 13)],
)
def test_advertised_maxima_and_metadata_at_max(make_cluster, release, api_versions_max, metadata_max) -> None:
    c, _ = make_cluster(release, release)
    conn = Conn(port(c))
    resp = ApiVersionsResponse.decode(conn.request(ApiVersionsRequest(version=0)), version=0, header=True, framed=True)
    keys = {k.api_key: k.max_version for k in resp.api_keys}
    assert keys[18] == api_versions_max and keys[3] == metadata_max
    reply = conn.request(MetadataRequest(version=metadata_max, topics=None), correlation_id=2)
    md = MetadataResponse.decode(reply, version=metadata_max, header=True, framed=True)
    assert {(b.node_id, b.port) for b in md.brokers} == {(1, port(c, 1)), (2, port(c, 2))}
    assert md.cluster_id == c.cluster_id
    (topic,) = md.topics
    assert topic.name == "demo" and len(topic.partitions) == 3
    assert {p.leader_id for p in topic.partitions} == {1, 2}
    conn.close()


def test_metadata_reports_the_listener_it_came_in_on(make_cluster) -> None:
    c, _ = make_cluster("4.1.0", "4.1.0")
    conn = Conn(port(c, 1, "INTERNAL"))
    md = MetadataResponse.decode(
        conn.request(MetadataRequest(version=12, topics=[])), version=12, header=True, framed=True
    )
    assert {b.port for b in md.brokers} == {port(c, 1, "INTERNAL"), port(c, 2, "INTERNAL")}
    # Processor ids continue across listeners: INTERNAL's first processor is 3.
    assert ("INTERNAL", 3, "unknown", "unknown") in c.registry_view(1)
    conn.close()


def test_unadvertised_api_closes_the_connection(make_cluster) -> None:
    c, _ = make_cluster("4.1.0")
    conn = Conn(port(c))
    # LeaderAndIsr (key 4) is gone in 4.x: a raw header for it makes the broker drop the connection.
    conn.send(struct.pack(">ihhih", 10, 4, 5, 1, 0))
    with pytest.raises(ConnectionError):
        conn.recv_frame()
    wait_for(lambda: c.registry_view(1)[("PLAINTEXT", 0, "unknown", "unknown")] == 0)


def test_round_robin_over_processors(make_cluster) -> None:
    c, _ = make_cluster("4.1.0")
    conns = [Conn(port(c)) for _ in range(4)]
    wait_for(lambda: sum(c.registry_view(1).values()) == 4)
    assert {k[1]: v for k, v in c.registry_view(1).items()} == {0: 2, 1: 1, 2: 1}
    for conn in conns:
        conn.close()


def test_deprecated_request_marks_meter_on_3_8(make_cluster) -> None:
    c, host = make_cluster("3.8.0")
    conn = Conn(port(c))
    conn.request(ApiVersionsRequest(version=3, client_software_name="my-app", client_software_version="1.0"))
    conn.request(MetadataRequest(version=1, topics=[]), correlation_id=2)
    conn.request(MetadataRequest(version=1, topics=[]), correlation_id=3)
    conn.request(MetadataRequest(version=9, topics=[]), correlation_id=4)  # not deprecated
    name = (
        "kafka.network:type=RequestMetrics,name=DeprecatedRequestsPerSec,request=Metadata,version=1,"
        "clientSoftwareName=my-app,clientSoftwareVersion=1.0"
    )
    meters = [(n, attribute, value) for n, attribute, value in host.dump(1) if "DeprecatedRequestsPerSec" in n]
    assert meters == [(name, "Count", 2)]
    conn.close()
