"""End-to-end: the double with its real JMX endpoints (MBeanHost JVM) and real Kafka clients."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from jmxquery import JMXConnection, JMXQuery

from harness.clients import ClientKind, expected_identity, missing_reason, start_client
from kafka_double import BrokerSpec, DoubleCluster, ListenerSpec
from kafka_double.mbean_host import MBeanHost
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def jvm() -> Iterator[MBeanHost]:
    host = MBeanHost()
    host.start()
    yield host
    host.close()


@pytest.fixture
def make_cluster(jvm: MBeanHost) -> Iterator[Callable[..., DoubleCluster]]:
    clusters: list[DoubleCluster] = []
    next_id = iter(range(1, 10_000))  # broker ids must stay unique within the shared JVM

    def make(release: str = "4.1.0", brokers: int = 2) -> DoubleCluster:
        specs = [BrokerSpec(next(next_id), release=release) for _ in range(brokers)]
        c = DoubleCluster(specs, mbean_host=jvm)
        c.start()
        clusters.append(c)
        return c

    yield make
    for c in clusters:
        c.stop()


def client_beans(url: str) -> dict[str, int]:
    """Every KIP-511 `connections` MBean on a JMX endpoint, by object name."""
    rows = JMXConnection(url).query([JMXQuery("kafka.server:type=socket-server-metrics,*", attribute="connections")])
    return {r.mBeanName: int(r.value) for r in rows if "clientSoftwareName=" in r.mBeanName}


def _skip_if_missing(kind: ClientKind) -> None:
    reason = missing_reason(kind)
    if reason is not None:
        pytest.skip(reason)


def test_kcat_registered_on_listener_and_lingers_at_zero(make_cluster) -> None:
    _skip_if_missing(ClientKind.KCAT)
    c = make_cluster("4.1.0", brokers=1)
    b = c.broker(c.brokers[0].broker_id)
    with start_client(
        ClientKind.KCAT, c.bootstrap("INTERNAL"), software_name="my-app", software_version="1.2.3"
    ) as client:
        client.wait_ready()
        wait_for(
            lambda: any(k[2] == "my-app" and v >= 1 for k, v in c.registry_view(b.broker_id).items()),
            what="kcat registered",
        )
        live = {k: v for k, v in c.registry_view(b.broker_id).items() if k[2] == "my-app"}
        # INTERNAL is the second listener: its processors are 3 and 4 (one counter per broker).
        assert all(k[0] == "INTERNAL" and k[1] in (3, 4) and k[3] == "1.2.3" for k in live)
        c.sync()
        beans = client_beans(b.jmx_url)
        for (listener, proc, name, version), count in live.items():
            bean = (
                f"kafka.server:type=socket-server-metrics,clientSoftwareName={name},"
                f"clientSoftwareVersion={version},listener={listener},networkProcessor={proc}"
            )
            assert beans[bean] == count
    wait_for(
        lambda: all(v == 0 for k, v in c.registry_view(b.broker_id).items() if k[2] == "my-app"),
        what="kcat connections closed",
    )
    c.sync()
    lingering = {n: v for n, v in client_beans(b.jmx_url).items() if "clientSoftwareName=my-app" in n}
    assert lingering and set(lingering.values()) == {0}


@pytest.mark.parametrize(
    "kind", [ClientKind.KAFKA_PYTHON, ClientKind.CONFLUENT, ClientKind.AIOKAFKA, ClientKind.KAFKAJS]
)
def test_real_clients_register_their_identity(make_cluster, kind: ClientKind) -> None:
    _skip_if_missing(kind)
    c = make_cluster("4.1.0", brokers=2)
    expected = expected_identity(kind)
    with start_client(kind, c.bootstrap()) as client:
        client.wait_ready()

        def registered() -> bool:
            return any(
                k[2:] == (expected.software_name, expected.software_version) and v >= 1
                for b in c.brokers
                for k, v in c.registry_view(b.broker_id).items()
            )

        wait_for(registered, what=f"{kind.value} registered as {expected}")
        if expected.software_name == "unknown":
            # aiokafka (ApiVersions v0) and kafkajs (v2) never name themselves.
            assert all(k[2] == "unknown" for b in c.brokers for k in c.registry_view(b.broker_id))


def test_release_2_4_publishes_no_client_mbeans(make_cluster) -> None:
    _skip_if_missing(ClientKind.KCAT)
    c = make_cluster("2.4.0", brokers=1)
    b = c.brokers[0]
    with start_client(ClientKind.KCAT, c.bootstrap(), software_name="my-app") as client:
        client.wait_ready()
        c.sync()
        assert c.registry_view(b.broker_id) == {}
        rows = JMXConnection(b.jmx_url).query([JMXQuery("kafka.server:type=socket-server-metrics,*")])
        names = {r.mBeanName for r in rows}
        assert names and not any("clientSoftwareName=" in n or "cipher=" in n for n in names)
        counts = [r.value for r in rows if r.attribute == "connection-count"]
        assert sum(float(v) for v in counts) >= 1


def test_kill_and_restart_same_ports(make_cluster) -> None:
    c = make_cluster("4.1.0", brokers=2)
    b = c.brokers[0]
    ports = (b.listener_port("PLAINTEXT"), b.jmx_port)
    b.kill()
    with pytest.raises(Exception):  # noqa: B017 - the jar reports a refused connection in several ways
        client_beans(b.jmx_url)
    b.restart()
    assert (b.listener_port("PLAINTEXT"), b.jmx_port) == ports
    c.sync()
    assert client_beans(b.jmx_url) == {}


def test_listener_spec_defaults() -> None:
    spec = BrokerSpec(1)
    assert [(x.name, x.network_processors) for x in spec.listeners] == [("PLAINTEXT", 3), ("INTERNAL", 2)]
    assert ListenerSpec().security_protocol == "PLAINTEXT"
