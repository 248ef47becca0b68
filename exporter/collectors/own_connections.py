"""The brokers' own connections: what each broker's channels hold, which of the gauges' connections they account for,
those in doubt, and whether each broker's channels could be read."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from prometheus_client.core import Metric

from exporter.collectors import catalog
from exporter.snapshot import JmxReading, Snapshot

# The `broker` / `destination_broker` value where Kafka names no node: counted per cluster and listener.
NO_BROKER = ""


def shown_versions(snapshot: Snapshot) -> dict[tuple[str, str, str], str]:
    """(cluster, name, real version) -> the version label kafka_client_connections shows it under ("other" when the
    cardinality cap folded the pair)."""
    return {
        (row.cluster, row.software_name, row.real_software_version): row.software_version for row in snapshot.clients
    }


def own_connection_families(snapshot: Snapshot) -> Iterator[Metric]:
    outbound = catalog.OUTBOUND_CONNECTIONS.new()
    for polled, reading in snapshot.readings(JmxReading):
        for channel in reading.channels:
            outbound.add_metric(
                [polled.cluster, polled.broker, channel.channel, channel.destination_broker or NO_BROKER],
                channel.connections,
            )

    # Labelled as kafka_client_connections labels the pair, so that the two subtract.
    shown = shown_versions(snapshot)
    inter_broker = catalog.INTER_BROKER_CONNECTIONS.new()
    counted: dict[tuple[str, ...], int] = defaultdict(int)
    for at_broker in snapshot.own_by_broker:
        version = shown.get((at_broker.cluster, at_broker.software_name, at_broker.software_version))
        for share in at_broker.own:
            where = (at_broker.cluster, at_broker.broker, at_broker.listener, at_broker.software_name)
            counted[(*where, version or at_broker.software_version, share.channel)] += share.connections
    unverified = catalog.UNVERIFIED_CONNECTIONS.new()
    for on_listener in snapshot.own_by_listener:
        version = shown.get((on_listener.cluster, on_listener.software_name, on_listener.software_version))
        pair = (on_listener.software_name, version or on_listener.software_version)
        for share in on_listener.own_unplaced:
            counted[(on_listener.cluster, NO_BROKER, on_listener.listener, *pair, share.channel)] += share.connections
        if on_listener.in_doubt:
            unverified.add_metric([on_listener.cluster, on_listener.listener, *pair], on_listener.in_doubt)
    for labels, total in sorted(counted.items()):
        inter_broker.add_metric(list(labels), total)

    channels_read = catalog.BROKER_CHANNELS_READ.new()
    for (cluster, broker), read in sorted(snapshot.broker_channels_read.items()):
        channels_read.add_metric([cluster, broker], int(read))
    yield from (outbound, inter_broker, unverified, channels_read)
