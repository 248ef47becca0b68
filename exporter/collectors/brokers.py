"""Broker families from ApiVersions: facts, advertised API version ranges, KIP-584 feature levels; and each node's
metadata mode, from its JMX."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import Metric

from exporter.collectors import catalog
from exporter.snapshot import ApiRange, BrokerFacts, FeatureRange, JmxReading, Snapshot


def broker_families(snapshot: Snapshot) -> Iterator[Metric]:
    """Each broker's release and metadata mode."""
    info = catalog.BROKER_RELEASE_INFO.new()
    for polled, facts in snapshot.readings(BrokerFacts):
        info.add_metric([polled.cluster, polled.broker, facts.host, facts.inferred_release], 1)
    mode = catalog.BROKER_MODE_INFO.new()
    for polled, reading in snapshot.readings(JmxReading):
        if reading.metadata_mode is not None:
            mode.add_metric([polled.cluster, polled.broker, reading.metadata_mode, reading.release or "unknown"], 1)
    yield from (info, mode)


AdvertisedKey = tuple[tuple[str, str, tuple[ApiRange, ...], tuple[FeatureRange, ...], tuple[FeatureRange, ...]], ...]


def advertised_key(snapshot: Snapshot) -> AdvertisedKey:
    """All that ``advertised_families`` renders: the same key, the same families."""
    return tuple(
        (polled.cluster, polled.broker, facts.apis, facts.finalized_features, facts.supported_features)
        for polled, facts in snapshot.readings(BrokerFacts)
    )


def advertised_families(key: AdvertisedKey) -> Iterator[Metric]:
    """What each broker advertises: its API version ranges and KIP-584 feature levels. Three quarters of the
    samples of a real cluster's exposition (77 APIs per 4.4 broker, twice), and they change only when a broker
    restarts or its features are finalized: the exposition renders them again only then (exporter/web)."""
    api_min = catalog.API_VERSION_MIN.new()
    api_max = catalog.API_VERSION_MAX.new()
    finalized = catalog.FINALIZED_FEATURE_LEVEL.new()
    supported = catalog.SUPPORTED_FEATURE_MAX_LEVEL.new()
    for cluster, broker, apis, finalized_features, supported_features in key:
        for api in apis:
            api_min.add_metric([cluster, broker, api.name], api.min_version)
            api_max.add_metric([cluster, broker, api.name], api.max_version)
        for feature in finalized_features:
            finalized.add_metric([cluster, broker, feature.name], feature.max_version)
        for feature in supported_features:
            supported.add_metric([cluster, broker, feature.name], feature.max_version)
    yield from (api_min, api_max, finalized, supported)
