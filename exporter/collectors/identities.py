"""Who is behind the live clients: identity series of the joined pairs, which of them sent a request version that
blocks the upgrade, what the series limit left out, and the age of each cluster's inventory."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import Metric

from exporter.collectors import catalog
from exporter.snapshot import InventoryReading, Snapshot, inventories
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
    blockers = _blocker_family(snapshot)
    dropped = catalog.IDENTITY_SERIES_DROPPED.new()
    for cluster, count in sorted(snapshot.identity_series_dropped.items()):
        dropped.add_metric([cluster], count)
    timestamp = catalog.INVENTORY_TIMESTAMP.new()
    for result in snapshot.results:
        reading = result.kept_reading_of(InventoryReading)
        if result.key.source == SourceName.INVENTORY and reading and reading.newest_line_timestamp is not None:
            timestamp.add_metric([result.key.cluster], reading.newest_line_timestamp)
    yield from (info, blockers, dropped, timestamp)


def _blocker_family(snapshot: Snapshot) -> Metric:
    """Of each live pair's exported identities (so no more series than kafka_client_identity_info has), those the
    inventory saw sending a request version that a broker counts as blocking the upgrade now."""
    family = catalog.UPGRADE_BLOCKER_INFO.new()
    senders = {cluster: reading.blocking_senders for cluster, reading in inventories(snapshot.results).items()}
    counted = {
        (b.cluster, b.software_name, b.software_version, b.request, b.version, b.target_release)
        for b in snapshot.blocking_requests
        if b.count > 0
    }
    pairs = {(pair.cluster, pair.software_name, pair.real_software_version): pair for pair in snapshot.identities}
    seen: set[tuple[str, ...]] = set()
    for cluster, name, version, request, request_version, target in sorted(counted):
        sent = senders.get(cluster, {}).get((name, version, request, request_version))
        pair = pairs.get((cluster, name, version))
        if not sent or pair is None:
            continue
        for identity in pair.identities[: pair.exported]:
            if identity.key not in sent:
                continue
            labels = (
                cluster,
                name,
                version,
                request,
                request_version,
                target,
                identity.client_id or "",
                identity.principal,
                identity.source_host,
                identity.listener,
            )
            if labels not in seen:  # a null and an empty clientId are both ""
                seen.add(labels)
                family.add_metric(list(labels), 1)
    return family
