"""Broker families from ApiVersions: facts, advertised API version ranges, KIP-584 feature levels; and each node's
metadata mode, from its JMX."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import Metric

from exporter.collectors import catalog
from exporter.snapshot import BrokerFacts, JmxReading, Snapshot


def broker_families(snapshot: Snapshot) -> Iterator[Metric]:
    info = catalog.BROKER_RELEASE_INFO.new()
    api_min = catalog.API_VERSION_MIN.new()
    api_max = catalog.API_VERSION_MAX.new()
    finalized = catalog.FINALIZED_FEATURE_LEVEL.new()
    supported = catalog.SUPPORTED_FEATURE_MAX_LEVEL.new()
    for polled, facts in snapshot.readings(BrokerFacts):
        cluster, broker = polled.cluster, polled.broker
        info.add_metric([cluster, broker, facts.host, facts.inferred_release], 1)
        for api in facts.apis:
            api_min.add_metric([cluster, broker, api.name], api.min_version)
            api_max.add_metric([cluster, broker, api.name], api.max_version)
        for feature in facts.finalized_features:
            finalized.add_metric([cluster, broker, feature.name], feature.max_version)
        for feature in facts.supported_features:
            supported.add_metric([cluster, broker, feature.name], feature.max_version)
    mode = catalog.BROKER_MODE_INFO.new()
    for polled, reading in snapshot.readings(JmxReading):
        if reading.metadata_mode is not None:
            mode.add_metric([polled.cluster, polled.broker, reading.metadata_mode, reading.release or "unknown"], 1)
    yield from (info, mode, api_min, api_max, finalized, supported)
