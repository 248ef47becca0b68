"""collection.jmx_transport picks the transport every cluster's JMX source shares."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from exporter.config.settings import Settings
from exporter.sources.cluster_sources import JmxTransports, cluster_sources, jmx_transport
from exporter.sources.jmx import JmxSource, PerCallTransport
from exporter.sources.jmx_bridge import JmxBridge

CLUSTERS = [
    {"name": "a", "brokers": [{"id": 1, "jmx_url": "service:jmx:rmi:///jndi/rmi://a:9999/jmxrmi"}]},
    {"name": "b", "brokers": [{"id": 1, "jmx_url": "service:jmx:rmi:///jndi/rmi://b:9999/jmxrmi"}]},
]


@pytest.mark.parametrize(
    ("transport", "kind", "uses_slots"), [(None, JmxBridge, False), ("per_call", PerCallTransport, True)]
)
def test_the_setting_picks_the_transport_and_whether_reads_take_slots(
    transport: str | None, kind: type, uses_slots: bool
) -> None:
    collection = {"max_concurrency": 3} | ({"jmx_transport": transport} if transport else {})
    settings = Settings(clusters=CLUSTERS, collection=collection)
    shared = jmx_transport(settings)
    try:
        assert isinstance(shared, kind)
        sources = [s for c in settings.clusters for s in cluster_sources(c, settings, shared)]
        assert [type(s) for s in sources] == [JmxSource, JmxSource]
        assert [s.uses_slots for s in sources] == [uses_slots, uses_slots]
        if isinstance(shared, JmxBridge):
            assert shared.command()[-2] == "3"  # the bridge's worker threads follow max_concurrency
    finally:
        shared.close()


def test_an_unknown_transport_is_refused_naming_the_choices() -> None:
    with pytest.raises(ValidationError) as excinfo:
        Settings(clusters=CLUSTERS, collection={"jmx_transport": "jolokia"})
    message = str(excinfo.value)
    assert "jmx_transport" in message and "'bridge' or 'per_call'" in message and "jolokia" in message


def test_one_bridge_per_distinct_tls_configuration(tmp_path: Path) -> None:
    ca, other = tmp_path / "ca.pem", tmp_path / "other.pem"
    ca.write_text("ca")
    other.write_text("other")

    def cluster(name: str, tls: dict | None) -> dict:
        jmx = {"tls": tls} if tls is not None else {}
        return {
            "name": name,
            "jmx": jmx,
            "brokers": [{"id": 1, "jmx_url": f"service:jmx:rmi:///jndi/rmi://{name}:1/x"}],
        }

    settings = Settings(
        clusters=[
            cluster("plain-a", None),
            cluster("plain-b", None),
            cluster("tls-a", {"ca_file": str(ca)}),
            cluster("tls-b", {"ca_file": str(ca)}),
            cluster("unchecked", {"ca_file": str(ca), "check_hostname": False}),
            cluster("other-ca", {"ca_file": str(other)}),
        ]
    )
    transports = JmxTransports(settings)
    try:
        by_cluster = {c.name: transports.for_cluster(c) for c in settings.clusters}
        assert by_cluster["plain-a"] is by_cluster["plain-b"]
        assert by_cluster["tls-a"] is by_cluster["tls-b"]
        distinct = {id(by_cluster[name]) for name in ("plain-a", "tls-a", "unchecked", "other-ca")}
        assert len(distinct) == 4
        commands = {name: by_cluster[name].command() for name in by_cluster}  # type: ignore[attr-defined]
        assert commands["plain-a"][-3] == "JmxBridge"  # no TLS arguments
        assert commands["tls-a"][-2:] == [f"ca_file={ca}", "check_hostname=true"]
        assert commands["unchecked"][-1] == "check_hostname=false"
    finally:
        transports.close()


def test_store_passwords_reach_the_bridge_as_files_not_on_its_command_line(tmp_path: Path) -> None:
    store, password = tmp_path / "trust.p12", tmp_path / "password"
    store.write_bytes(b"store")
    password.write_text("store-Secret-9\n")
    tls = {"trust_store": str(store), "trust_store_password_file": str(password), "trust_store_type": "JKS"}
    url = "service:jmx:rmi:///jndi/rmi://a:9999/jmxrmi"
    settings = Settings(clusters=[{"name": "a", "jmx": {"tls": tls}, "brokers": [{"id": 1, "jmx_url": url}]}])
    transports = JmxTransports(settings)
    try:
        command = transports.for_cluster(settings.clusters[0]).command()  # type: ignore[attr-defined]
    finally:
        transports.close()
    assert command[-4:] == [
        f"trust_store={store}",
        f"trust_store_password_file={password}",
        "trust_store_type=JKS",
        "check_hostname=true",
    ]
    assert not any("store-Secret-9" in part for part in command)
