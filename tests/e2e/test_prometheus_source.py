"""The prometheus source against the double's per-broker endpoints: for every published rule set, the same series
as the JMX source reads from the same brokers; auth, HTTPS and a dead broker."""

from __future__ import annotations

import itertools
import ssl
from pathlib import Path

import pytest
import trustme
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest

from exporter.config.settings import Settings
from harness.raw_client import RawConnection
from kafka_double.cluster import BrokerSpec, DoubleCluster, ListenerSpec, MetricsEndpointConfig
from kafka_double.mbean_host import MBeanHost
from kafka_double.metrics_endpoint import PRESETS
from tests.e2e.test_end_to_end import collect
from tests.support.waiting import SURE_CYCLE

pytestmark = pytest.mark.slow

LISTENERS = [ListenerSpec("PLAINTEXT", network_processors=3), ListenerSpec("INTERNAL", network_processors=2)]
BROKER_IDS = itertools.count(41)  # unique within the shared JVM
# Series of ours that come from the client gauges and the deprecated-request meter.
GAUGE_FAMILIES = {
    "kafka_client_connections",
    "kafka_client_policy_violation_connections",
    "kafka_client_deprecated_requests_total",
    "kafka_client_upgrade_blocking_requests_total",
    "kafka_client_exporter_client_suite_full",
}


def double(mbean_host: MBeanHost, endpoint: MetricsEndpointConfig) -> DoubleCluster:
    brokers = [BrokerSpec(id=next(BROKER_IDS), release="3.9.0", listeners=LISTENERS) for _ in range(2)]
    return DoubleCluster(brokers, mbean_host=mbean_host, metrics_endpoint=endpoint)


def hello(port: int, name: str, version: str) -> RawConnection:
    connection = RawConnection(port)
    connection.request(ApiVersionsRequest(version=3, client_software_name=name, client_software_version=version))
    return connection


def by_family(series: dict, cluster: str) -> dict[tuple[str, tuple], float]:
    """The gauge-derived series of `cluster`, without the kafka_cluster label."""
    return {
        (name, tuple(kv for kv in labels if kv[0] != "kafka_cluster")): value
        for (name, labels), value in series.items()
        if name in GAUGE_FAMILIES and ("kafka_cluster", cluster) in labels
    }


@pytest.mark.parametrize("preset", PRESETS)
def test_each_rule_set_gives_the_series_jmx_gives(mbean_host: MBeanHost, preset: str) -> None:
    with double(mbean_host, MetricsEndpointConfig(preset)) as cluster:
        first, second = cluster.brokers
        connections = [hello(first.listener_port("PLAINTEXT"), "app-a", "1.0") for _ in range(4)]
        connections += [hello(second.listener_port("INTERNAL"), "app-b", "2.0.1") for _ in range(2)]
        gone = hello(first.listener_port("PLAINTEXT"), "gone-app", "0.1")
        gone.close()  # its gauge lingers at zero on the endpoint and over JMX
        legacy = hello(second.listener_port("PLAINTEXT"), "legacy-app", "0.8.2")
        for correlation_id in (2, 3):
            legacy.request(MetadataRequest(version=1, topics=[]), correlation_id=correlation_id)
        connections.append(legacy)
        cluster.sync()
        settings = Settings(
            clusters=[
                {"name": "viajmx", "brokers": [{"id": b.broker_id, "jmx_url": b.jmx_url} for b in cluster.brokers]},
                {
                    "name": "viaprom",
                    "prometheus": {"preset": preset},
                    "brokers": [{"id": b.broker_id, "metrics_url": b.metrics_url} for b in cluster.brokers],
                },
            ],
            # One cycle: the interval only bounds the deadline, which a new JMX bridge's start and handshake beside
            # three busy workers once passed at 5 s. What is compared is what each path reads.
            collection={"interval_seconds": 60, "jmx_timeout_seconds": 45, "network_processor_label": True},
        )
        snapshot, series = collect(settings)
        for connection in connections:
            connection.close()

    assert all(r.ok for r in snapshot.results), [r.error_message for r in snapshot.results if not r.ok]
    assert {r.key.source for r in snapshot.results if r.key.cluster == "viaprom"} == {"prometheus"}
    via_jmx, via_prometheus = by_family(series, "viajmx"), by_family(series, "viaprom")
    assert via_prometheus == via_jmx
    clients = {dict(labels)["client_software_name"] for name, labels in via_jmx if name == "kafka_client_connections"}
    assert {"app-a", "app-b", "legacy-app"} <= clients and "gone-app" not in clients
    deprecated = {
        (dict(labels)["request"], dict(labels)["version"], value)
        for (name, labels), value in via_prometheus.items()
        if name == "kafka_client_deprecated_requests_total"
    }
    assert ("Metadata", "1", 2) in deprecated


def test_https_basic_auth_wrong_password_and_a_dead_broker(mbean_host: MBeanHost, tmp_path: Path) -> None:
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    endpoint = MetricsEndpointConfig("confluent", basic_auth=("scraper", "s3cret-Pass"), ssl_context=server_context)

    def cluster_config(name: str, password: str, brokers: list) -> dict:
        auth = {"username": "scraper", "password": password}
        tls = {"ca_file": str(ca_file)}
        return {"name": name, "prometheus": {"preset": "confluent", "tls": tls, "basic_auth": auth}, "brokers": brokers}

    with double(mbean_host, endpoint) as cluster:
        first, second = cluster.brokers
        assert first.metrics_url.startswith("https://")
        client = hello(first.listener_port("PLAINTEXT"), "app-a", "1.0")
        cluster.sync()
        second.kill()
        brokers = [{"id": b.broker_id, "metrics_url": b.metrics_url} for b in cluster.brokers]
        settings = Settings(
            clusters=[cluster_config("good", "s3cret-Pass", brokers), cluster_config("wrong", "nope-Pass", brokers)],
            collection=SURE_CYCLE,
        )
        snapshot, series = collect(settings)
        client.close()

    outcome = {(r.key.cluster, r.key.broker): (r.ok, r.error_reason) for r in snapshot.results}
    first_id, second_id = str(first.broker_id), str(second.broker_id)
    assert outcome == {
        ("good", first_id): (True, None),
        ("good", second_id): (False, "connection"),
        ("wrong", first_id): (False, "authentication"),
        ("wrong", second_id): (False, "connection"),
    }
    connected = {
        dict(labels)["kafka_cluster"] for (name, labels), _ in series.items() if name == "kafka_client_connections"
    }
    assert connected == {"good"}
    assert not any("nope-Pass" in (r.error_message or "") for r in snapshot.results)


def test_endpoints_of_discovered_brokers(mbean_host: MBeanHost) -> None:
    # The double puts every broker on 127.0.0.1, so one broker keeps "endpoint at host:prometheus.port" unambiguous.
    spec = BrokerSpec(id=next(BROKER_IDS), release="4.1.0", listeners=LISTENERS)
    with DoubleCluster([spec], mbean_host=mbean_host, metrics_endpoint=MetricsEndpointConfig("strimzi")) as cluster:
        broker = cluster.brokers[0]
        client = hello(broker.listener_port("PLAINTEXT"), "app-a", "1.0")
        cluster.sync()
        settings = Settings(
            clusters=[
                {
                    "name": "found",
                    "bootstrap_servers": cluster.bootstrap().split(","),
                    "prometheus": {"preset": "strimzi", "port": broker.spec.metrics_port},
                }
            ],
            collection=SURE_CYCLE,
        )
        snapshot, series = collect(settings)
        client.close()

    assert {(r.key.broker, r.key.source): r.ok for r in snapshot.results} == {
        ("bootstrap", "discovery"): True,
        ("bootstrap", "client_metrics"): True,
        (str(spec.id), "api_versions"): True,
        (str(spec.id), "prometheus"): True,
    }
    names = {dict(labels)["client_software_name"] for (name, labels) in series if name == "kafka_client_connections"}
    assert "app-a" in names
