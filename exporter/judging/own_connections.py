"""The brokers' own connections told apart from the clients' in one cycle's gauges (README: "The brokers' own
connections"; docs/kafka-facts/brokers-own-connections.md).

Every broker's gauges count the connections other brokers open to it (replica fetchers, transaction markers, ...)
like any client's. Each broker also says, in its own selector metrics, how many connections each of its channels
holds; the channel's kind says under which software name and version the destination counts them, and the broker's
DescribeConfigs which listener they land on. The account matches the two, never guessing:

- a channel whose destination Kafka names (replica fetchers: `broker-id`) is matched per broker and listener;
- one whose destination it does not name is matched per cluster and listener. Its NetworkClient holds at most one
  connection per node, so a broker can hold at most one per such channel and holder: whatever exceeds that on a
  broker is a client's for certain, the rest of the cluster's excess is certain but placed on no broker;
- a broker whose channels could not be read (its JMX failed, an endpoint without these metrics, no DescribeConfigs)
  may hold connections to every broker: for the `unknown` software, which its replica fetchers always are, what
  it could hold is "in doubt" (neither a violation nor hidden: served as such), up to one connection per replica
  fetcher thread and marker-like channel per destination; unbounded when its fetcher count is not known either.

Raw counts are untouched: `kafka_client_connections` stays what each broker counts.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from exporter.kafka_releases.broker_channels import BY_NAME, CHANNELS, UNKNOWN_SOFTWARE, Towards
from exporter.snapshot import (
    BrokerFacts,
    BrokerListenerOwn,
    ChannelShare,
    JmxReading,
    ListenerOwn,
    SourceResult,
)

# (listener, software name, software version)
Landing = tuple[str, str, str]
_JMX_SOURCES = ("jmx", "prometheus")


@dataclass
class _Landing:
    """What lands on one listener under one software name/version: the gauges' counts and the channels' shares."""

    raw: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # per broker read
    exact: dict[str, list[ChannelShare]] = field(default_factory=lambda: defaultdict(list))  # per destination
    unnamed: list[ChannelShare] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ClusterAccount:
    by_broker: tuple[BrokerListenerOwn, ...]
    by_listener: tuple[ListenerOwn, ...]
    channels_read: Mapping[str, bool]  # per broker known this cycle: whether its own channels could be matched

    def clients_certain(self) -> dict[tuple[str, str, str, str], int]:
        """(broker, listener, name, version) -> the connections that are clients' for certain, where that is not
        every connection the gauges count."""
        return {
            (own.broker, own.listener, own.software_name, own.software_version): own.clients_certain
            for own in self.by_broker
            if own.clients_certain != own.connections
        }


@dataclass(frozen=True, slots=True)
class _Holder:
    """A broker as the holder of channels: what it reported, or why not."""

    reading: JmxReading | None
    facts: BrokerFacts | None

    @property
    def read(self) -> bool:
        return (
            self.reading is not None
            and self.reading.channels_read
            and self.reading.release is not None
            and self.facts is not None
            and self.facts.listeners is not None
        )


def _listener(holder: _Holder, towards: Towards) -> str | None:
    assert holder.facts is not None and holder.facts.listeners is not None
    listeners = holder.facts.listeners
    return listeners.inter_broker if towards is Towards.INTER_BROKER else listeners.controller


def _doubt_per_destination(holder: _Holder) -> int | None:
    """How many `unknown` connections an unread broker's channels can hold towards one other broker: one per
    replica fetcher thread, plus one per channel that sends no ApiVersions in the broker's release (when that is
    not known: in any release). None when its replica fetcher count is not known."""
    facts = holder.facts
    if facts is None or facts.listeners is None:
        return None
    release = holder.reading.release if holder.reading is not None else None
    release = release or (facts.inferred_release if facts.inferred_release != "unknown" else None)
    unnamed = sum(
        1
        for channel in CHANNELS
        if channel.destination_tag is None
        and channel.towards is Towards.INTER_BROKER
        and (release is None or channel.appears_as(release) == UNKNOWN_SOFTWARE)
    )
    return facts.listeners.replica_fetchers + unnamed


def _apportion(total: int, shares: list[ChannelShare]) -> tuple[ChannelShare, ...]:
    """`total` connections spread over `shares` in order, each up to its own count (counted, never invented)."""
    out = []
    for share in sorted(shares, key=lambda s: (s.channel, s.holder)):
        take = min(total, share.connections)
        total -= take
        if take:
            out.append(ChannelShare(share.channel, share.holder, take))
    return tuple(out)


def _certain(residual: Mapping[str, int], per_broker_unnamed: int, doubt: int | None, left: int) -> dict[str, int]:
    """Per broker, the connections no channel can be: its residual beyond what the unnamed channels and the unread
    brokers could put there. Never more than the cluster's residual (`left`), which brokers read at slightly
    different moments can make smaller than the sum."""
    certain = {broker: 0 if doubt is None else max(0, n - per_broker_unnamed - doubt) for broker, n in residual.items()}
    excess = sum(certain.values()) - left
    for broker in sorted(certain, reverse=True):
        if excess <= 0:
            break
        cut = min(excess, certain[broker])
        certain[broker] -= cut
        excess -= cut
    return certain


def account_cluster(cluster: str, results: Iterable[SourceResult]) -> ClusterAccount:
    """Match one cluster's gauges against its brokers' own channels (see the module's docstring)."""
    readings: dict[str, JmxReading | None] = {}
    facts: dict[str, BrokerFacts] = {}
    for result in results:
        if result.key.cluster != cluster:
            continue
        if result.key.source in _JMX_SOURCES:
            readings[result.key.broker] = result.reading_of(JmxReading)
        elif (broker_facts := result.reading_of(BrokerFacts)) is not None:
            facts[result.key.broker] = broker_facts
    holders = {broker: _Holder(readings.get(broker), facts.get(broker)) for broker in sorted({*readings, *facts})}
    landings: dict[Landing, _Landing] = defaultdict(_Landing)
    for broker, reading in readings.items():
        for client in reading.clients if reading is not None else ():
            if client.connections > 0:
                landings[(client.listener, client.software_name, client.software_version)].raw[broker] += (
                    client.connections
                )
    unread = tuple(broker for broker, holder in holders.items() if not holder.read)
    for broker, holder in holders.items():
        if not holder.read:
            continue
        assert holder.reading is not None and holder.reading.release is not None
        for channel in holder.reading.channels:
            spec = BY_NAME[channel.channel]
            listener = _listener(holder, spec.towards)
            if listener is None:
                continue
            landing = landings[(listener, *spec.appears_as(holder.reading.release))]
            share = ChannelShare(channel.channel, broker, channel.connections)
            if channel.destination_broker is not None:
                landing.exact[channel.destination_broker].append(share)
            else:
                landing.unnamed.append(share)
    doubt = [_doubt_per_destination(holders[broker]) for broker in unread]
    doubt_cap: int | None = None if any(d is None for d in doubt) else sum(d for d in doubt if d is not None)
    by_broker: list[BrokerListenerOwn] = []
    by_listener: list[ListenerOwn] = []
    for (listener, name, version), landing in sorted(landings.items()):
        residual: dict[str, int] = {}
        exact_own: list[ChannelShare] = []
        broker_rows: list[tuple[str, int, tuple[ChannelShare, ...]]] = []  # (broker, raw, exact own)
        for broker, raw in sorted(landing.raw.items()):
            own = _apportion(raw, landing.exact.get(broker, []))
            exact_own += own
            residual[broker] = raw - sum(share.connections for share in own)
            broker_rows.append((broker, raw, own))
        unnamed_total = sum(share.connections for share in landing.unnamed)
        # At most one connection per holder and channel reaches one broker.
        per_broker_unnamed = min(unnamed_total, sum(1 for share in landing.unnamed if share.connections > 0))
        left = sum(residual.values())
        unnamed_own = _apportion(left, landing.unnamed)
        left -= sum(share.connections for share in unnamed_own)
        in_doubt_cap: int | None = doubt_cap if (name, version) == UNKNOWN_SOFTWARE and unread else 0
        certain = _certain(residual, per_broker_unnamed, in_doubt_cap, left)
        for broker, raw, own in broker_rows:
            if own or certain[broker] != raw:
                by_broker.append(BrokerListenerOwn(cluster, broker, listener, name, version, raw, own, certain[broker]))
        placed = sum(certain.values())
        definite = placed if in_doubt_cap is None else max(placed, left - in_doubt_cap * len(broker_rows))
        unattributed, in_doubt = definite - placed, left - definite
        if exact_own or unnamed_own or unattributed or in_doubt:
            by_listener.append(
                ListenerOwn(
                    cluster,
                    listener,
                    name,
                    version,
                    sum(landing.raw.values()),
                    sum(share.connections for share in exact_own),
                    unnamed_own,
                    unattributed,
                    in_doubt,
                    unread if in_doubt else (),
                )
            )
    return ClusterAccount(
        tuple(by_broker), tuple(by_listener), {broker: holder.read for broker, holder in holders.items()}
    )


def account(clusters: Iterable[str], results: Iterable[SourceResult]) -> Mapping[str, ClusterAccount]:
    """Every cluster's account of this cycle."""
    results = tuple(results)
    return {cluster: account_cluster(cluster, results) for cluster in clusters}
