"""Which sources poll a cluster, as its configuration enables them."""

from __future__ import annotations

from exporter.config.settings import ClusterConfig, Settings
from exporter.sources.api_versions import ApiVersionsSource
from exporter.sources.base import Source
from exporter.sources.client_metrics import ClientMetricsSource
from exporter.sources.discovery import DiscoverySource
from exporter.sources.inventory import InventorySource
from exporter.sources.jmx import JavaRuntime, JmxSource, JmxTransport, PerCallTransport
from exporter.sources.jmx_bridge import BridgeTls, JmxBridge
from exporter.sources.kafka_session import KafkaSession
from exporter.sources.prometheus_endpoint import PrometheusEndpointSource

# A broker no longer asked for this long has its kept JMX connection closed (it left the cluster or the config).
_IDLE_INTERVALS = 3
_MIN_IDLE_SECONDS = 60.0


def jmx_transport(settings: Settings, tls: BridgeTls | None = None) -> JmxTransport:
    """One JMX transport: the per-call jar, or a bridge whose JVM speaks `tls` (Settings refuses TLS with
    per_call). Its owner closes it."""
    java = JavaRuntime(settings.java.path, tuple(settings.java.options))
    collection = settings.collection
    if collection.jmx_transport == "per_call":
        return PerCallTransport(java)
    assert collection.jmx_timeout_seconds is not None  # resolved by CollectionConfig
    idle = max(_MIN_IDLE_SECONDS, _IDLE_INTERVALS * collection.interval_seconds)
    return JmxBridge(java, collection.max_concurrency, collection.jmx_timeout_seconds, idle, tls)


def bridge_tls(cluster: ClusterConfig) -> BridgeTls | None:
    tls = cluster.jmx.tls if cluster.jmx is not None else None
    if tls is None:
        return None
    return BridgeTls(
        ca_file=tls.ca_file,
        trust_store=tls.trust_store,
        trust_store_password_file=tls.trust_store_password_file,
        trust_store_type=tls.trust_store_type,
        cert_file=tls.cert_file,
        key_file=tls.key_file,
        key_store=tls.key_store,
        key_store_password_file=tls.key_store_password_file,
        key_store_type=tls.key_store_type,
        check_hostname=tls.check_hostname,
    )


class JmxTransports:
    """The exporter's JMX transports: one per distinct JMX TLS configuration, because a bridge JVM's TLS is its
    default SSL context (the brokers' RMI stubs take that). Clusters without TLS share one; created on first ask."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._by_tls: dict[BridgeTls | None, JmxTransport] = {}

    def for_cluster(self, cluster: ClusterConfig) -> JmxTransport:
        tls = bridge_tls(cluster)
        if tls not in self._by_tls:
            self._by_tls[tls] = jmx_transport(self._settings, tls)
        return self._by_tls[tls]

    def close(self) -> None:
        for transport in self._by_tls.values():
            transport.close()


def cluster_sources(cluster: ClusterConfig, settings: Settings, jmx: JmxTransport) -> list[Source]:
    """The cluster's sources, each after those it runs after; their results come out in this order. `jmx` is the
    cluster's JMX transport (see `JmxTransports.for_cluster`)."""
    sources: list[Source] = []
    discovery: DiscoverySource | None = None
    if cluster.polls_protocol:
        timeout = settings.collection.protocol_timeout_seconds
        assert timeout is not None  # resolved by CollectionConfig
        session = KafkaSession(cluster, timeout)
        discovery = DiscoverySource(cluster.name, session)
        sources += [discovery, ApiVersionsSource(discovery, session), ClientMetricsSource(cluster.name, session)]
    if cluster.polls_jmx:
        deadline = settings.collection.jmx_timeout_seconds
        assert deadline is not None  # resolved by CollectionConfig
        sources.append(JmxSource(cluster, jmx, deadline, discovery))
    if cluster.polls_prometheus:
        deadline = settings.collection.jmx_timeout_seconds
        assert deadline is not None  # resolved by CollectionConfig
        sources.append(PrometheusEndpointSource(cluster, deadline, discovery))
    if cluster.inventory is not None:
        sources.append(InventorySource(cluster.name, cluster.inventory))
    return sources
