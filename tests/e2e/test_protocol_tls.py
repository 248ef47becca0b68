"""The exporter's Kafka-protocol side (discovery, ApiVersions, client-metrics) over TLS against the double's SSL,
SASL_SSL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) and mutual-TLS listeners; a wrong CA, an expired broker certificate,
a wrong SASL password and a missing client certificate are each reported for their cluster (log, `up`,
`errors_total`) while a healthy cluster in the same exporter keeps being read; and over JMX the exporter sees its
own TLS connection, cipher gauge included."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jmxquery import JMXConnection, JMXQuery

from exporter.collection import CollectionLoop
from exporter.config.settings import Settings
from exporter.snapshot import JmxReading, Snapshot
from kafka_double.cluster import BrokerSpec, DoubleCluster, ListenerSpec
from kafka_double.mbean_host import MBeanHost
from kafka_double.registry import SOCKET_SERVER
from kafka_double.specs import ListenerTls
from tests.support.exposition import series_of
from tests.support.tls_material import BrokerTlsMaterial
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow

USER, PASSWORD = "exporter", "exporter-Tls-pw-7"
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
EXPORTER = ("kafka-client-exporter", "0.1.0")


@pytest.fixture(scope="module")
def material(tmp_path_factory: pytest.TempPathFactory) -> BrokerTlsMaterial:
    return BrokerTlsMaterial(tmp_path_factory.mktemp("protocol-tls"))


def listeners(m: BrokerTlsMaterial) -> list[ListenerSpec]:
    good = ListenerTls(m.broker.cert, m.broker.key)
    return [
        ListenerSpec("PLAINTEXT", "PLAINTEXT", 0, 1),
        ListenerSpec("SSL", "SSL", 0, 1, tls=good),
        ListenerSpec("MTLS", "SSL", 0, 1, tls=ListenerTls(m.broker.cert, m.broker.key, m.ca_file)),
        ListenerSpec("SASL_SSL", "SASL_SSL", 0, 1, sasl_mechanisms=MECHANISMS, tls=good),
        ListenerSpec("EXPIRED", "SSL", 0, 1, tls=ListenerTls(m.expired_broker.cert, m.expired_broker.key)),
    ]


@pytest.fixture(scope="module")
def double(material: BrokerTlsMaterial, mbean_host: MBeanHost) -> Iterator[DoubleCluster]:
    specs = [BrokerSpec(1, listeners=listeners(material)), BrokerSpec(2, listeners=listeners(material))]
    with DoubleCluster(specs, mbean_host=mbean_host, sasl_users={USER: PASSWORD}) as cluster:
        yield cluster


def cluster(
    double: DoubleCluster, name: str, listener: str, protocol: str, tls: dict[str, Any], **sasl: str
) -> dict[str, Any]:
    security: dict[str, Any] = {"protocol": protocol, "tls": tls}
    if sasl:
        security["sasl"] = {"username": USER, "password": PASSWORD} | sasl
    return {"name": name, "bootstrap_servers": double.bootstrap(listener).split(","), "security": security}


def collect(clusters: list[dict[str, Any]]) -> Snapshot:
    loop = CollectionLoop(Settings(clusters=clusters, collection={"interval_seconds": 6}))
    try:
        return asyncio.run(loop.run_cycle())
    finally:
        loop.close()


def up(series: dict, cluster_name: str) -> dict[tuple[str, str], float]:
    """(source, broker) -> kafka_client_exporter_up of one cluster."""
    return {
        (labels["source"], labels["broker"]): value
        for (name, raw), value in series.items()
        if name == "kafka_client_exporter_up"
        for labels in [dict(raw)]
        if labels["kafka_cluster"] == cluster_name
    }


def test_protocol_sources_over_ssl_mtls_and_sasl_ssl(double: DoubleCluster, material: BrokerTlsMaterial) -> None:
    ca = {"ca_file": str(material.ca_file)}
    client_cert = ca | {"cert_file": str(material.client.cert), "key_file": str(material.client.key)}
    clusters = [
        cluster(double, "ssl", "SSL", "SSL", ca),
        cluster(double, "mtls", "MTLS", "SSL", client_cert),
        *(
            cluster(double, mechanism.lower(), "SASL_SSL", "SASL_SSL", ca, mechanism=mechanism)
            for mechanism in MECHANISMS
        ),
    ]
    snapshot = collect(clusters)
    assert all(r.ok for r in snapshot.results), [(r.key, r.error_message) for r in snapshot.results]
    series = series_of(snapshot)
    for name in ("ssl", "mtls", "plain", "scram-sha-256", "scram-sha-512"):
        assert up(series, name) == {
            ("discovery", "bootstrap"): 1,
            ("api_versions", "1"): 1,
            ("api_versions", "2"): 1,
            ("client_metrics", "bootstrap"): 1,
        }, name
        for broker in ("1", "2"):
            release = (
                "kafka_broker_release_info",
                (("broker", broker), ("host", "127.0.0.1"), ("inferred_release", "4.1.0"), ("kafka_cluster", name)),
            )
            assert series[release] == 1
    double.sync()
    for listener in ("SSL", "MTLS", "SASL_SSL"):
        # The exporter announced itself on each listener (KIP-511 over TLS) ...
        assert any(key[0] == listener and key[2:] == EXPORTER for key in double.registry_view(1)), listener
        # ... and each handshake was counted under a TLS 1.3 cipher, as a 4.x broker does.
        assert cipher_protocols(double, listener) == {"TLSv1.3"}, listener


def cipher_protocols(double: DoubleCluster, listener: str) -> set[str]:
    host = double._jmx
    assert host is not None
    return {
        name.split(",protocol=", 1)[1].split(",", 1)[0]
        for name, attribute, _value in host.dump(1)
        if attribute == "connections"
        and name.startswith(f"{SOCKET_SERVER},cipher=")
        and f",listener={listener}," in name
    }


def test_wrong_ca_expired_certificate_and_wrong_password_are_reported_per_cluster(
    double: DoubleCluster, material: BrokerTlsMaterial, caplog: pytest.LogCaptureFixture
) -> None:
    ca = {"ca_file": str(material.ca_file)}
    bad_password = {"mechanism": "SCRAM-SHA-512", "password": "not-" + PASSWORD}
    clusters = [
        cluster(double, "healthy", "SSL", "SSL", ca),
        cluster(double, "wrong-ca", "SSL", "SSL", {"ca_file": str(material.foreign_ca_file)}),
        cluster(double, "expired", "EXPIRED", "SSL", ca),
        cluster(double, "wrong-password", "SASL_SSL", "SASL_SSL", ca, **bad_password),
        cluster(double, "no-client-cert", "MTLS", "SSL", ca),
    ]
    caplog.set_level(logging.ERROR, logger="kafka")
    with caplog.at_level(logging.WARNING, logger="exporter"):
        snapshot = collect(clusters)
    series = series_of(snapshot)
    assert set(up(series, "healthy").values()) == {1}
    expected = {
        "wrong-ca": ("SSL", "tls", "certificate verify failed: unable to get local issuer certificate"),
        "expired": ("EXPIRED", "tls", "certificate verify failed: certificate has expired"),
        "wrong-password": ("SASL_SSL", "authentication", "Authentication failed during authentication"),
        # The broker's alert after a TLS 1.3 handshake, read by the first request.
        "no-client-cert": ("MTLS", "tls", "the broker refused the client certificate"),
    }
    for name, (listener, reason, what) in expected.items():
        [result] = [r for r in snapshot.results if r.key.cluster == name]  # nothing else runs without discovery
        assert (result.key.source, result.error_reason) == ("discovery", reason), result.error_message
        # The bootstrap address tried (kafka-python picks one of the cluster's two at random).
        message = result.error_message or ""
        [bootstrap] = [
            f"bootstrap 127.0.0.1:{port}: "
            for port in (double.broker(1).listener_port(listener), double.broker(2).listener_port(listener))
            if message.startswith(f"bootstrap 127.0.0.1:{port}: ")
        ]
        assert what in message
        assert up(series, name) == {("discovery", "bootstrap"): 0}
        errors = (
            "kafka_client_exporter_errors_total",
            (("broker", "bootstrap"), ("kafka_cluster", name), ("reason", reason), ("source", "discovery")),
        )
        assert series[errors] == 1
        # The operator's log line names the cluster, the bootstrap address and what failed.
        assert f"{name}/bootstrap (discovery): {bootstrap}" in caplog.text
    assert "TLS handshake failed" in snapshot_message(snapshot, "expired")
    assert PASSWORD not in caplog.text


def snapshot_message(snapshot: Snapshot, cluster_name: str) -> str:
    return next(r.error_message or "" for r in snapshot.results if r.key.cluster == cluster_name)


def test_over_jmx_the_exporters_own_tls_connection_and_its_cipher_are_visible(
    material: BrokerTlsMaterial, mbean_host: MBeanHost
) -> None:
    tls = ListenerTls(material.broker.cert, material.broker.key)
    spec = BrokerSpec(7, listeners=[ListenerSpec("SSL", "SSL", 0, 1, tls=tls)])
    with DoubleCluster([spec], mbean_host=mbean_host) as double:
        config = cluster(double, "jmx-tls", "SSL", "SSL", {"ca_file": str(material.ca_file)})
        config["brokers"] = [{"id": 7, "jmx_url": double.broker(7).jmx_url}]
        loop = CollectionLoop(Settings(clusters=[config], collection={"interval_seconds": 6}))

        def settled() -> bool:
            # Every open connection has announced itself (none left under unknown/unknown).
            view = double.registry_view(7)
            return view.get(("SSL", 0, *EXPORTER), 0) >= 1 and view.get(("SSL", 0, "unknown", "unknown")) == 0

        async def two_cycles() -> Snapshot:
            # The first cycle opens the exporter's TLS connections, which it keeps; the second reads them over JMX.
            await loop.run_cycle()
            await asyncio.to_thread(wait_for, settled)
            return await loop.run_cycle()

        try:
            snapshot = asyncio.run(two_cycles())
            double.sync()
            live = double.registry_view(7)[("SSL", 0, *EXPORTER)]
            rows = JMXConnection(double.broker(7).jmx_url).query(
                [JMXQuery(f"{SOCKET_SERVER},cipher=*,*", attribute="connections")]
            )
        finally:
            loop.close()
    [jmx] = [r for r in snapshot.results if r.key.source == "jmx"]
    assert jmx.ok, jmx.error_message
    reading = jmx.reading
    assert isinstance(reading, JmxReading)
    # Only client gauges are taken (the per-cipher gauge shares the `connections` attribute): the exporter's
    # connections, and the unknown/unknown key every connection starts under, lingering at 0.
    assert {(c.listener, c.software_name, c.software_version, c.connections) for c in reading.clients} == {
        ("SSL", *EXPORTER, live),
        ("SSL", "unknown", "unknown", 0),
    }
    # The per-cipher gauge counts the same connections under the suite and protocol their handshakes negotiated.
    assert {r.mBeanName: int(r.value) for r in rows} == {
        f"{SOCKET_SERVER},cipher=TLS_AES_256_GCM_SHA384,protocol=TLSv1.3,listener=SSL,networkProcessor=0": live
    }


def test_collect_once_reads_tls_clusters_from_a_config_file(
    double: DoubleCluster, material: BrokerTlsMaterial, tmp_path: Path
) -> None:
    """As an operator runs it: TLS and SASL settings from YAML (password from a file), one bad cluster among good."""
    password_file = tmp_path / "sasl-password"
    password_file.write_text(PASSWORD + "\n")
    ca = {"ca_file": str(material.ca_file)}
    mtls = ca | {"cert_file": str(material.client.cert), "key_file": str(material.client.key)}
    sasl = {"mechanism": "SCRAM-SHA-256", "username": USER, "password_file": str(password_file)}
    clusters = [
        {
            "name": "mtls",
            "bootstrap_servers": double.bootstrap("MTLS").split(","),
            "security": {"protocol": "SSL", "tls": mtls},
        },
        {
            "name": "scram",
            "bootstrap_servers": double.bootstrap("SASL_SSL").split(","),
            "security": {"protocol": "SASL_SSL", "tls": ca, "sasl": sasl},
        },
        cluster(double, "wrong-ca", "SSL", "SSL", {"ca_file": str(material.foreign_ca_file)}),
    ]
    config = tmp_path / "exporter.yaml"
    config.write_text(json.dumps({"clusters": clusters, "collection": {"interval_seconds": 6}}))  # JSON is YAML
    run = subprocess.run(
        [sys.executable, "-m", "exporter", "collect-once", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    for name in ("mtls", "scram"):
        for broker in ("1", "2"):
            assert (
                f'kafka_client_exporter_up{{broker="{broker}",kafka_cluster="{name}",source="api_versions"}} 1.0'
                in run.stdout
            )
    assert 'kafka_client_exporter_up{broker="bootstrap",kafka_cluster="wrong-ca",source="discovery"} 0.0' in run.stdout
    labels = 'broker="bootstrap",kafka_cluster="wrong-ca",reason="tls",source="discovery"'
    errors = f"kafka_client_exporter_errors_total{{{labels}}}"
    assert f"{errors} 1.0" in run.stdout
    assert "wrong-ca/bootstrap (discovery): bootstrap 127.0.0.1:" in run.stderr
    assert "TLS handshake failed" in run.stderr and PASSWORD not in run.stderr + run.stdout
