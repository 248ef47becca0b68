"""The one collector /metrics registers: one Snapshot in, every family group out, in a fixed order."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from exporter.collectors.brokers import broker_families
from exporter.collectors.client_metrics import client_metrics_families
from exporter.collectors.clients import client_families
from exporter.collectors.health import build_info, health_families
from exporter.collectors.identities import identity_families
from exporter.collectors.own_connections import own_connection_families
from exporter.snapshot import Snapshot


class SnapshotCollector(Collector):
    """Renders exactly one snapshot; build a new one per snapshot so no label set outlives its source."""

    def __init__(self, snapshot: Snapshot | None, network_processor_label: bool = False) -> None:
        self._snapshot = snapshot
        self._per_processor = network_processor_label

    def collect(self) -> Iterator[Metric]:
        yield build_info()
        if self._snapshot is None:
            return
        yield from client_families(self._snapshot, self._per_processor)
        yield from own_connection_families(self._snapshot)
        yield from identity_families(self._snapshot)
        yield from broker_families(self._snapshot)
        yield from client_metrics_families(self._snapshot)
        yield from health_families(self._snapshot)
