"""KIP-714 client-metrics families: subscriptions per cluster and which key-74 variant the brokers serve."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import Metric

from exporter.collectors import catalog
from exporter.snapshot import ClientMetricsReading, Snapshot


def client_metrics_families(snapshot: Snapshot) -> Iterator[Metric]:
    count = catalog.SUBSCRIPTIONS.new()
    subscription = catalog.SUBSCRIPTION_INFO.new()
    supported = catalog.API_SUPPORTED.new()
    for polled, reading in snapshot.readings(ClientMetricsReading):
        cluster = polled.cluster
        supported.add_metric([cluster, "ListClientMetricsResources"], int(reading.list_v0_supported))
        supported.add_metric([cluster, "ListConfigResources"], int(reading.list_v1_supported))
        if reading.api_used is None:
            continue  # a broker older than 3.7 has no subscriptions to count
        count.add_metric([cluster], len(reading.subscriptions))
        for sub in reading.subscriptions:
            subscription.add_metric([cluster, sub.name, str(sub.interval_ms)], 1)
    yield from (count, subscription, supported)
