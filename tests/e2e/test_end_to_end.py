"""The exporter against the broker double, with real Kafka clients connected."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator

import pytest
from jmxquery import JMXConnection, JMXQuery
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.protocol.producer import ProduceRequest
from prometheus_client.parser import text_string_to_metric_families

from exporter.collection import CollectionLoop
from exporter.config.settings import Settings
from exporter.snapshot import Snapshot
from exporter.sources.object_name import parse_object_name
from exporter.web.exposition import render_snapshot
from harness.clients import ClientKind, start_client
from harness.ports import free_port
from harness.raw_client import RawConnection
from kafka_double.cluster import BrokerSpec, DoubleCluster, ListenerSpec
from kafka_double.mbean_host import MBeanHost
from tests.support.event_loop_stalls import cycle_and_stall
from tests.support.waiting import SURE_CYCLE

pytestmark = pytest.mark.slow

LISTENERS = [ListenerSpec("PLAINTEXT", network_processors=3), ListenerSpec("INTERNAL", network_processors=2)]
JMX_PASSWORD = "jmx-Secret-42"


@pytest.fixture(scope="module")
def cluster(mbean_host: MBeanHost) -> Iterator[DoubleCluster]:
    brokers = [
        BrokerSpec(id=1, release="4.1.0", listeners=LISTENERS),
        BrokerSpec(id=2, release="3.9.0", listeners=LISTENERS),
    ]
    with DoubleCluster(brokers, mbean_host=mbean_host) as double:
        yield double


def settings_for(double: DoubleCluster, broker_ids: list[int], name: str = "e2e", **collection: object) -> Settings:
    brokers = [{"id": i, "jmx_url": double.broker(i).jmx_url} for i in broker_ids]
    return Settings(
        clusters=[{"name": name, "bootstrap_servers": double.bootstrap().split(","), "brokers": brokers}],
        collection={**SURE_CYCLE, **collection},
    )


def collect(settings: Settings) -> tuple[Snapshot, dict]:
    loop = CollectionLoop(settings)
    snapshot = asyncio.run(loop.run_cycle())
    loop.close()
    body = render_snapshot(snapshot, False, settings.collection.network_processor_label).decode()
    series = {}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            series[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return snapshot, series


def client_series(series: dict, **match: str) -> dict[tuple[str, str, str, str], float]:
    out = {}
    for (name, labels), value in series.items():
        labels = dict(labels)
        if name == "kafka_client_connections" and all(labels.get(k) == v for k, v in match.items()):
            out[
                (
                    labels["broker"],
                    labels["listener"],
                    labels["client_software_name"],
                    labels["client_software_version"],
                )
            ] = value
    return out


def test_kafkas_own_java_clients_appear_at_their_release(cluster: DoubleCluster) -> None:
    """Kafka's Java Admin + Producer from kafka-clients 4.3.0 and 3.9.0, each in its own JVM, on both listeners."""
    settings = settings_for(cluster, [1, 2])
    with (
        start_client(ClientKind.JAVA, cluster.bootstrap("PLAINTEXT"), client_id="java-43") as java_43,
        start_client(ClientKind.JAVA_3_9, cluster.bootstrap("INTERNAL"), client_id="java-39") as java_39,
    ):
        java_43.wait_ready()
        java_39.wait_ready()
        cluster.sync()
        _, series = collect(settings)
        seen = client_series(series, client_software_name="apache-kafka-java")
        assert {(listener, version) for (_, listener, _, version) in seen} == {
            ("PLAINTEXT", "4.3.0"),
            ("INTERNAL", "3.9.0"),
        }
        # Admin and Producer each keep a bootstrap and a node connection: more than one per client.
        assert sum(seen.values()) >= 4
    cluster.sync()
    _, series = collect(settings)
    assert client_series(series, client_software_name="apache-kafka-java") == {}


def test_listeners_and_processors_are_summed(cluster: DoubleCluster) -> None:
    settings = settings_for(cluster, [1, 2])
    per_processor = settings_for(cluster, [1, 2], network_processor_label=True)
    clients = [
        start_client(
            ClientKind.KCAT, cluster.bootstrap(listener), software_name="summing-check", software_version="2.0.0"
        )
        for listener in ("PLAINTEXT", "PLAINTEXT", "PLAINTEXT", "INTERNAL", "INTERNAL")
    ]
    try:
        for client in clients:
            client.wait_ready()
        cluster.sync()
        snapshot, summed = collect(settings)
        _, split = collect(per_processor)
        # Kafka's Selector publishes processor-level socket-server-metrics (connection-count, rates, ...) and the
        # TLS-cipher suite under the same type, and Kafka's Metrics its own count: all of it is on the broker's
        # JMX port, and the exporter reads the KIP-511 gauges among them without an error.
        rows = JMXConnection(cluster.broker(1).jmx_url).query([JMXQuery("kafka.server:*")])
        attributes = {(parse_object_name(r.mBeanName).keys, r.attribute) for r in rows}
        assert (frozenset({"type", "listener", "networkProcessor"}), "connection-count") in attributes
        assert (frozenset({"type"}), "count") in attributes
        assert [r.error_message for r in snapshot.results if not r.ok] == []
        expected: dict[tuple[str, str], int] = {}
        for broker in (1, 2):
            for (listener, _processor, name, _version), count in cluster.registry_view(broker).items():
                if name == "summing-check" and count:
                    expected[(str(broker), listener)] = expected.get((str(broker), listener), 0) + count
    finally:
        for client in clients:
            client.close()
    got = {
        (b, listener): v
        for (b, listener, _, _), v in client_series(summed, client_software_name="summing-check").items()
    }
    assert got == expected
    assert {listener for (_, listener) in got} == {"PLAINTEXT", "INTERNAL"}
    processors = {
        dict(k[1])["network_processor"]
        for k in split
        if k[0] == "kafka_client_connections" and ("client_software_name", "summing-check") in k[1]
    }
    assert len(processors) >= 2, "connections should spread over several network processors"
    assert sum(
        v
        for (n, labels), v in split.items()
        if n == "kafka_client_connections" and ("client_software_name", "summing-check") in labels
    ) == sum(expected.values())


def test_broker_2_4_has_no_client_series_and_no_error(mbean_host: MBeanHost) -> None:
    old = DoubleCluster([BrokerSpec(id=7, release="2.4.0", listeners=LISTENERS)], mbean_host=mbean_host)
    with old, start_client(ClientKind.KAFKA_PYTHON, old.bootstrap()) as client:
        client.wait_ready()
        old.sync()
        snapshot, series = collect(settings_for(old, [7], name="old"))
    assert {(r.key.source, r.ok) for r in snapshot.results} == {
        ("discovery", True),
        ("api_versions", True),
        ("client_metrics", True),
        ("jmx", True),
    }
    assert client_series(series) == {}
    assert not [k for k in series if k[0] == "kafka_client_exporter_errors_total"]
    # No key 74 before 3.7: reported as unsupported, not as an error.
    for api in ("ListClientMetricsResources", "ListConfigResources"):
        assert series[("kafka_client_exporter_api_supported", (("api", api), ("kafka_cluster", "old")))] == 0


def test_killed_broker_is_down_and_others_unaffected(mbean_host: MBeanHost) -> None:
    brokers = [BrokerSpec(id=i, listeners=LISTENERS) for i in (11, 12, 13)]
    with DoubleCluster(brokers, mbean_host=mbean_host) as double:
        settings = settings_for(double, [11, 12, 13], name="kill")
        with start_client(ClientKind.CONFLUENT, double.bootstrap()) as client:
            client.wait_ready()
            double.sync()
            loop = CollectionLoop(settings)
            first = asyncio.run(loop.run_cycle())
            assert all(r.ok for r in first.results)
            double.broker(12).kill()
            second = asyncio.run(loop.run_cycle())
            loop.close()
    for source in ("jmx", "api_versions"):
        up = {r.key.broker: r.ok for r in second.results if r.key.source == source}
        assert up == {"11": True, "12": False, "13": True}, source
    failed = next(r for r in second.results if r.key.broker == "12" and r.key.source == "jmx")
    assert failed.error_reason == "connection"
    assert second.errors_total[(failed.key, "connection")] == 1
    assert second.last_success[failed.key] == first.last_success[failed.key]


def test_silent_jmx_port_does_not_stall_the_cycle(cluster: DoubleCluster, silent_port: int) -> None:
    deadline = 3.0
    settings = Settings(
        clusters=[
            {
                "name": "hang",
                "brokers": [
                    {"id": 1, "jmx_url": cluster.broker(1).jmx_url},
                    {"id": 99, "jmx_url": f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{silent_port}/jmxrmi"},
                ],
            }
        ],
        collection={"interval_seconds": 10, "jmx_timeout_seconds": deadline},
    )
    loop = CollectionLoop(settings)

    def reasons(snapshot: Snapshot) -> dict[str, str | None]:
        return {r.key.broker: r.error_reason for r in snapshot.results}

    async def until_broker_1_is_read() -> list[tuple[Snapshot, float, float]]:
        # The first cycle starts the bridge's JVM, which its deadline does not count, and makes its first JMX
        # connection (RMI's and JNDI's classes loaded then): beside two busy loops and the suite (load 12 to 15)
        # broker 1's read missed the deadline too, and the exporter said so. So the silent port is judged in a cycle
        # after the first that read broker 1, as an exporter that has run a while meets one.
        cycles: list[tuple[Snapshot, float, float]] = []
        give_up = time.monotonic() + 120
        while len(cycles) < 2 or reasons(cycles[-1][0])["1"] is not None:
            assert time.monotonic() < give_up, f"broker 1 unread for 120 s: {reasons(cycles[-1][0])}"
            started = time.monotonic()
            snapshot, stall = await cycle_and_stall(loop)
            cycles.append((snapshot, time.monotonic() - started, stall))
        return cycles

    try:
        cycles = asyncio.run(until_broker_1_is_read())
    finally:
        loop.close()
    assert [reasons(snapshot)["99"] for snapshot, _, _ in cycles] == ["timeout"] * len(cycles)
    snapshot, seconds, stall = cycles[-1]
    assert reasons(snapshot) == {"1": None, "99": "timeout"}
    # The silent port's deadline, no more: beyond it only the event loop's own lateness, measured in the cycle.
    assert seconds < 1.5 * deadline + stall, (seconds, stall)


def test_wrong_jmx_password_is_clear_and_never_leaks(mbean_host: MBeanHost, caplog: pytest.LogCaptureFixture) -> None:
    spec = BrokerSpec(id=21, listeners=LISTENERS, jmx_user="monitor", jmx_password=JMX_PASSWORD)
    with DoubleCluster([spec], mbean_host=mbean_host) as double:
        url = double.broker(21).jmx_url
        good = Settings(
            clusters=[
                {
                    "name": "auth",
                    "jmx": {"username": "monitor", "password": JMX_PASSWORD},
                    "brokers": [{"id": 21, "jmx_url": url}],
                }
            ]
        )
        wrong_password = "not-" + JMX_PASSWORD
        bad = Settings(
            clusters=[
                {
                    "name": "auth",
                    "jmx": {"username": "monitor", "password": wrong_password},
                    "brokers": [{"id": 21, "jmx_url": url}],
                }
            ]
        )
        with caplog.at_level(logging.DEBUG):
            good_snapshot, _ = collect(good)
            bad_snapshot, series = collect(bad)
    assert good_snapshot.results[0].ok
    result = bad_snapshot.results[0]
    assert result.error_reason == "authentication"
    assert "JMX authentication failed" in (result.error_message or "")
    assert "monitor" in (result.error_message or "")
    body = repr(series)
    for secret in (JMX_PASSWORD, wrong_password):
        assert secret not in body
        assert secret not in caplog.text
        assert secret not in (result.error_message or "")
    assert (
        series[
            (
                "kafka_client_exporter_errors_total",
                (("broker", "21"), ("kafka_cluster", "auth"), ("reason", "authentication"), ("source", "jmx")),
            )
        ]
        == 1
    )


def test_brokers_discovered_from_metadata(mbean_host: MBeanHost) -> None:
    # The double puts every broker on 127.0.0.1, so one broker keeps "JMX at host:jmx.port" unambiguous.
    single = DoubleCluster([BrokerSpec(id=5, listeners=LISTENERS)], mbean_host=mbean_host)
    with (
        single,
        start_client(ClientKind.KCAT, single.bootstrap(), software_name="found-me", software_version="1.0.0") as client,
    ):
        client.wait_ready()
        single.sync()
        settings = Settings(
            clusters=[
                {
                    "name": "disc",
                    "bootstrap_servers": single.bootstrap().split(","),
                    "jmx": {"port": single.broker(5).jmx_port},
                }
            ],
            collection={"protocol_timeout_seconds": 5},
        )
        snapshot, series = collect(settings)
    assert {(r.key.broker, r.key.source): r.ok for r in snapshot.results} == {
        ("bootstrap", "discovery"): True,
        ("5", "api_versions"): True,
        ("bootstrap", "client_metrics"): True,
        ("5", "jmx"): True,
    }
    assert set(client_series(series, client_software_name="found-me")) == {("5", "PLAINTEXT", "found-me", "1.0.0")}


def test_failed_discovery_is_reported_not_fatal() -> None:
    settings = Settings(
        clusters=[{"name": "gone", "bootstrap_servers": [f"127.0.0.1:{free_port()}"], "jmx": {"port": 9999}}],
        collection={"protocol_timeout_seconds": 2},
    )
    started = time.monotonic()
    snapshot, series = collect(settings)
    assert time.monotonic() - started < 6
    [result] = snapshot.results
    assert (result.key.source, result.ok, result.error_reason) == ("discovery", False, "connection")
    assert (
        series[
            ("kafka_client_exporter_up", (("broker", "bootstrap"), ("kafka_cluster", "gone"), ("source", "discovery")))
        ]
        == 0
    )


def test_deprecated_requests_are_counted_and_only_those_4_0_rejects_block(cluster: DoubleCluster) -> None:
    """A legacy client on the 3.9.0 broker sends Metadata v1 and Produce v5 (deprecated in 3.7-3.9, served by 4.0)
    and Produce v2 (rejected by 4.0): all three are in the raw KIP-896 family, only Produce v2 blocks 4.0.0."""
    with RawConnection(cluster.broker(2).listener_port("PLAINTEXT")) as legacy:
        legacy.request(
            ApiVersionsRequest(version=3, client_software_name="legacy-app", client_software_version="0.8.2")
        )
        for correlation_id in (2, 3):
            legacy.request(MetadataRequest(version=1, topics=[]), correlation_id=correlation_id)
        legacy.request(ProduceRequest(version=5, acks=1, timeout_ms=1000, topic_data=[]), correlation_id=4)
        legacy.request(ProduceRequest(version=2, acks=1, timeout_ms=1000, topic_data=[]), correlation_id=5)
        cluster.sync()
        _, series = collect(settings_for(cluster, [1, 2]))

    def legacy_series(family: str) -> dict[tuple[str, str], tuple[float, dict[str, str]]]:
        out = {}
        for (name, labels), value in series.items():
            found = dict(labels)
            if name == family and found["client_software_name"] == "legacy-app":
                out[(found.pop("request"), found.pop("version"))] = (value, found)
        return out

    identity = {"broker": "2", "client_software_name": "legacy-app", "client_software_version": "0.8.2"}
    identity |= {"kafka_cluster": "e2e"}
    assert legacy_series("kafka_client_deprecated_requests_total") == {
        ("Metadata", "1"): (2, identity),
        ("Produce", "5"): (1, identity),
        ("Produce", "2"): (1, identity),
    }
    assert legacy_series("kafka_client_upgrade_blocking_requests_total") == {
        ("Produce", "2"): (1, identity | {"target_release": "4.0.0"})
    }
