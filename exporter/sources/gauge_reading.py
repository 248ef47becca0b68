"""What every gauge source (JMX, a broker's metrics endpoint) does with the client gauges it read: one reading
whose processor suites count every key, zero-valued ones included, so saturation is judged the same way
whichever way the gauges were read (docs/kafka-facts/jmx-mbeans.md#gauge-suite-eviction)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from exporter.snapshot import ChannelConnections, ClientConnections, DeprecatedRequests, JmxReading, ProcessorSuite


def gauge_reading(
    clients: Iterable[ClientConnections],
    deprecated: Iterable[DeprecatedRequests] = (),
    channels: Iterable[ChannelConnections] = (),
    *,
    channels_read: bool,
    release: str | None = None,
    active_controller: bool | None = None,
    quorum_leader: int | None = None,
    migration_state: int | None = None,
    propagating_to: Iterable[str] = (),
) -> JmxReading:
    """The reading of one broker's client gauges (zero-valued ones included: judging drops them, the suites
    count them), deprecated-request counts and, when the source could read them (`channels_read`), the broker's
    own channels, its exact release and what it says of the active controller. `channels` come one per MBean or
    series, so a leader's replica fetcher threads apart: they are summed per channel and destination, and those
    holding no connection left out."""
    clients = tuple(clients)
    held: dict[tuple[str, str | None], int] = defaultdict(int)
    for channel in channels:
        held[(channel.channel, channel.destination_broker)] += channel.connections
    own = tuple(ChannelConnections(c, to, n) for (c, to), n in sorted(held.items(), key=str) if n > 0)
    suite_keys: dict[tuple[str, str], list[int]] = defaultdict(list)
    for client in clients:
        suite_keys[(client.listener, client.network_processor)].append(client.connections)
    suites = tuple(
        ProcessorSuite(listener, processor, keys=len(counts), live_keys=sum(1 for c in counts if c > 0))
        for (listener, processor), counts in sorted(suite_keys.items())
    )
    return JmxReading(
        clients=clients,
        deprecated_requests=tuple(deprecated),
        suites=suites,
        channels=own,
        channels_read=channels_read,
        release=release,
        active_controller=active_controller,
        quorum_leader=quorum_leader,
        migration_state=migration_state,
        propagating_to=tuple(sorted(set(propagating_to))),
    )
