"""Which sources poll a cluster, as its configuration enables them."""

from __future__ import annotations

from exporter.config.settings import ClusterConfig, Settings
from exporter.sources.api_versions import ApiVersionsSource
from exporter.sources.base import Source
from exporter.sources.client_metrics import ClientMetricsSource
from exporter.sources.discovery import DiscoverySource
from exporter.sources.jmx import JavaRuntime, JmxSource
from exporter.sources.kafka_session import KafkaSession
from exporter.sources.prometheus_endpoint import PrometheusEndpointSource


def cluster_sources(cluster: ClusterConfig, settings: Settings) -> list[Source]:
    """The cluster's sources, each after those it runs after; their results come out in this order."""
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
        java = JavaRuntime(settings.java.path, tuple(settings.java.options))
        sources.append(JmxSource(cluster, java, deadline, discovery))
    if cluster.polls_prometheus:
        deadline = settings.collection.jmx_timeout_seconds
        assert deadline is not None  # resolved by CollectionConfig
        sources.append(PrometheusEndpointSource(cluster, deadline, discovery))
    return sources
