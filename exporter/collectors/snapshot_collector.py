"""The one collector /metrics registers: one Snapshot in, every family group out, in a fixed order."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from exporter.collectors.brokers import advertised_families, advertised_key, broker_families
from exporter.collectors.client_metrics import client_metrics_families
from exporter.collectors.clients import client_families
from exporter.collectors.health import build_info, health_families
from exporter.collectors.identities import identity_families
from exporter.collectors.own_connections import own_connection_families
from exporter.snapshot import Snapshot


@dataclass(frozen=True)
class KeptGroup:
    """Families built from ``key`` alone: the same key always builds the same families, so a renderer may keep
    their text while the key does not change."""

    build: Callable[[Any], Iterable[Metric]]
    key: Hashable

    def families(self) -> Iterable[Metric]:
        return self.build(self.key)


#: Consecutive families of the exposition: built afresh for each render, or kept.
FamilyGroup = Callable[[], Iterable[Metric]] | KeptGroup


class SnapshotCollector(Collector):
    """Renders exactly one snapshot; build a new one per snapshot so no label set outlives its source."""

    def __init__(self, snapshot: Snapshot | None, network_processor_label: bool = False) -> None:
        self._snapshot = snapshot
        self._per_processor = network_processor_label

    def groups(self) -> list[FamilyGroup]:
        """The families in their order, in groups."""
        snapshot = self._snapshot
        if snapshot is None:
            return [lambda: [build_info()]]

        def first() -> Iterator[Metric]:
            yield build_info()
            yield from client_families(snapshot, self._per_processor)
            yield from own_connection_families(snapshot)
            yield from identity_families(snapshot)
            yield from broker_families(snapshot)

        def last() -> Iterator[Metric]:
            yield from client_metrics_families(snapshot)
            yield from health_families(snapshot)

        return [first, KeptGroup(advertised_families, advertised_key(snapshot)), last]

    def collect(self) -> Iterator[Metric]:
        for group in self.groups():
            yield from group.families() if isinstance(group, KeptGroup) else group()
