"""One cycle's readings of a cluster as the judging tests build them: a broker's JMX reading from (listener, name,
version, connections) and (channel, destination, connections) tuples, and the cycle's source results with each
broker's ApiVersions facts."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from exporter.snapshot import (
    BrokerFacts,
    ChannelConnections,
    ClientConnections,
    JmxReading,
    SourceKey,
    SourceResult,
)

CLUSTER = "c"
UNKNOWN = ("unknown", "unknown")


def jmx(
    release: str | None,
    clients: Iterable[tuple[str, str, str, int]],
    channels: Iterable[tuple[str, str | None, int]],
    *,
    active_controller: bool | None = None,
    quorum_leader: int | None = None,
) -> JmxReading:
    return JmxReading(
        clients=tuple(ClientConnections(listener, "0", name, version, n) for listener, name, version, n in clients),
        channels=tuple(ChannelConnections(channel, to, n) for channel, to, n in channels),
        channels_read=True,
        release=release,
        active_controller=active_controller,
        quorum_leader=quorum_leader,
    )


def results(brokers: Mapping[str, JmxReading | None], facts_of: Callable[[str], BrokerFacts]) -> list[SourceResult]:
    """The cycle's results: each broker's JMX reading (None: its JMX refused the connection) and its facts."""
    out = []
    for broker, reading in brokers.items():
        key = SourceKey(CLUSTER, broker, "jmx")
        if reading is None:
            out.append(SourceResult(key, False, 1.0, 0.0, error_reason="connection", error_message="refused"))
        else:
            out.append(SourceResult(key, True, 0.1, 0.0, reading=reading))
        out.append(SourceResult(SourceKey(CLUSTER, broker, "api_versions"), True, 0.1, 0.0, reading=facts_of(broker)))
    return out
