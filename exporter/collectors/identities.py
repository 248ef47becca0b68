"""Who is behind the live clients: identity series of the joined pairs, what the series limit left out, and the age
of each cluster's inventory."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import Metric

from exporter.collectors import catalog
from exporter.snapshot import InventoryReading, Snapshot
from exporter.sources.base import SourceName


def identity_families(snapshot: Snapshot) -> Iterator[Metric]:
    info = catalog.IDENTITY_INFO.new()
    seen: set[tuple[str, ...]] = set()
    for pair in snapshot.identities:
        for identity in pair.identities[: pair.exported]:
            labels = (
                pair.cluster,
                pair.software_name,
                pair.software_version,
                identity.client_id or "",
                identity.principal,
                identity.source_host,
                identity.listener,
            )
            # One series per label set: a null and an empty clientId are both "", and the versions folded into
            # `other` can share a client. Prometheus rejects a series repeated within one scrape.
            if labels not in seen:
                seen.add(labels)
                info.add_metric(list(labels), 1)
    dropped = catalog.IDENTITY_SERIES_DROPPED.new()
    for cluster, count in sorted(snapshot.identity_series_dropped.items()):
        dropped.add_metric([cluster], count)
    timestamp = catalog.INVENTORY_TIMESTAMP.new()
    for result in snapshot.results:
        reading = result.kept_reading_of(InventoryReading)
        if result.key.source == SourceName.INVENTORY and reading and reading.newest_line_timestamp is not None:
            timestamp.add_metric([result.key.cluster], reading.newest_line_timestamp)
    yield from (info, dropped, timestamp)
