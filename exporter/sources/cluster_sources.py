"""Which sources poll a cluster, as its configuration enables them."""

from __future__ import annotations

from exporter.config.settings import ClusterConfig, Settings
from exporter.sources.api_versions import ApiVersionsSource
from exporter.sources.base import Source
from exporter.sources.client_metrics import ClientMetricsSource
from exporter.sources.discovery import DiscoverySource
from exporter.sources.jmx import JavaRuntime, JmxSource, JmxTransport, PerCallTransport
from exporter.sources.jmx_bridge import JmxBridge
from exporter.sources.kafka_session import KafkaSession
from exporter.sources.prometheus_endpoint import PrometheusEndpointSource

# A broker no longer asked for this long has its kept JMX connection closed (it left the cluster or the config).
_IDLE_INTERVALS = 3
_MIN_IDLE_SECONDS = 60.0


def jmx_transport(settings: Settings) -> JmxTransport:
    """The exporter's one JMX transport, shared by every cluster's JMX source; its owner closes it.
    A JMX TLS configuration needs its own JVM options (trust and key stores), so once clusters can have one, each
    distinct configuration gets its own JmxBridge and this becomes a lookup by the cluster's configuration."""
    java = JavaRuntime(settings.java.path, tuple(settings.java.options))
    collection = settings.collection
    if collection.jmx_transport == "per_call":
        return PerCallTransport(java)
    assert collection.jmx_timeout_seconds is not None  # resolved by CollectionConfig
    idle = max(_MIN_IDLE_SECONDS, _IDLE_INTERVALS * collection.interval_seconds)
    return JmxBridge(java, collection.max_concurrency, collection.jmx_timeout_seconds, idle)


def cluster_sources(cluster: ClusterConfig, settings: Settings, jmx: JmxTransport) -> list[Source]:
    """The cluster's sources, each after those it runs after; their results come out in this order. `jmx` is the
    exporter's JMX transport (see `jmx_transport`)."""
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
    return sources
