"""The brokers' own connections told apart from the clients' in one cycle's gauges (docs/own-connections.md;
docs/kafka-facts/brokers-own-connections.md).

Every broker's gauges count the connections other brokers open to it (replica fetchers, transaction markers, ...)
like any client's. Each broker also says, in its own selector metrics, how many connections each of its channels
holds; the channel's kind says under which software name and version the destination counts them, and the broker's
DescribeConfigs which listener they land on. The account matches the two, never guessing:

- a channel whose destination Kafka names (replica fetchers, the ZooKeeper-mode controller's channels:
  `broker-id`) is matched per broker and listener, and so is one that goes to the active controller (forwarding,
  heartbeats, AlterPartition ...) when the readings agree on which node that is (the ZooKeeper-mode controller's
  ActiveControllerCount, the KRaft quorum's leader);
- one whose destination it does not name is matched per cluster and listener. Its NetworkClient holds at most one
  connection per node, so a broker can hold at most one per such channel and holder: whatever exceeds that on a
  broker is a client's for certain, the rest of the cluster's excess is certain but placed on no broker;
- a broker whose channels could not be matched (its JMX failed, an endpoint without these metrics, no release or
  listener names) may hold connections to every broker: for the `unknown` software, which its replica fetchers
  always are, what it could hold is "in doubt" (neither a violation nor hidden: served as such) -- what its JMX
  says it holds when only the listener is missing, else one connection per replica fetcher thread (DescribeConfigs)
  and marker-like channel per destination, and no bound when neither is known.

Raw counts are untouched: `kafka_client_connections` stays what each broker counts.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from exporter.kafka_releases.broker_channels import BY_NAME, CHANNELS, UNKNOWN_SOFTWARE, Towards
from exporter.policy.versions import parse_version
from exporter.snapshot import (
    BrokerFacts,
    BrokerListenerOwn,
    ChannelShare,
    JmxReading,
    ListenerOwn,
    SourceResult,
)
from exporter.sources.base import GAUGE_SOURCES, SourceName

# (listener, software name, software version)
Landing = tuple[str, str, str]


@dataclass
class _Landing:
    """What lands on one listener under one software name/version: the gauges' counts and the channels' shares."""

    raw: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # per broker read
    exact: dict[str, list[ChannelShare]] = field(default_factory=lambda: defaultdict(list))  # per destination
    # Placed on the active controller by inference, not by a tag: what its gauges do not hold of them (an idle channel
    # still connected to a former controller) stays the cluster's, unplaced.
    to_controller: dict[str, list[ChannelShare]] = field(default_factory=lambda: defaultdict(list))
    unnamed: list[ChannelShare] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ClusterAccount:
    by_broker: tuple[BrokerListenerOwn, ...]
    by_listener: tuple[ListenerOwn, ...]
    channels_read: Mapping[str, bool]  # per broker polled for gauges: whether its own channels could be matched

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
    #: A dedicated KRaft controller's listener, which its channels land on, where no DescribeConfigs says it (see
    #: _dedicated_controller_listener).
    controller_listener: str | None = None

    @property
    def read(self) -> bool:
        """Whether its channels can be matched: read, with the release and listeners that say where they land (a
        broker that holds none, like the broker double, needs neither)."""
        reading = self.reading
        if reading is None or not reading.channels_read:
            return False
        holds_none = not any(channel.connections for channel in reading.channels)
        listeners = self.controller_listener is not None or (
            self.facts is not None and self.facts.listeners is not None
        )
        return holds_none or (reading.release is not None and listeners)


def _dedicated_controller_listener(reading: JmxReading | None, brokers_say: set[str]) -> str | None:
    """Where a dedicated KRaft controller's channels land, which DescribeConfigs cannot say (the exporter's Kafka
    protocol side reaches brokers only): a node whose JMX shows the controller registration channel (KIP-919, on
    controllers only, from 3.7) and no heartbeat channel (every KRaft broker's), only channels towards the
    controllers, and client gauges on one listener alone. Kafka requires a controller-only node's listeners to be
    exactly its controller.listener.names (KafkaConfig), so that listener is the first of them, where its channels
    land; the brokers' own controller listener (`brokers_say`, from their DescribeConfigs) must be the same. None
    otherwise: the node stays unread."""
    if reading is None or not reading.channels_read or reading.release is None:
        return None
    held = {channel.channel for channel in reading.channels}
    if "registration" not in held or "heartbeat" in held:
        return None
    if any(BY_NAME[channel].towards is not Towards.CONTROLLER for channel in held):
        return None
    listeners = {client.listener for client in reading.clients}
    if len(listeners) != 1 or brokers_say - listeners:
        return None
    return listeners.pop()


@dataclass(frozen=True, slots=True)
class _Doubt:
    """How many `unknown` connections an unread broker's channels can hold towards one broker: `default`, or
    `per_destination` where its replica fetchers were read; None: no bound is known. `to_controller` more towards
    the active controller (`controller`; any broker when it is not known): a ZooKeeper-mode broker's
    controlled-shutdown channel."""

    default: int | None
    per_destination: Mapping[str, int]
    to_controller: int = 0
    controller: str | None = None

    def towards(self, broker: str) -> int | None:
        cap = self.per_destination.get(broker, self.default)
        if cap is None:
            return None
        return cap + (self.to_controller if self.controller in (None, broker) else 0)


def _listener(holder: _Holder, towards: Towards) -> str | None:
    """The listener of the destination a holder's channel lands on (see Towards)."""
    if holder.controller_listener is not None:
        return holder.controller_listener if towards is Towards.CONTROLLER else None
    assert holder.facts is not None and holder.facts.listeners is not None
    listeners = holder.facts.listeners
    if towards is Towards.INTER_BROKER:
        return listeners.inter_broker
    if towards is Towards.CONTROLLER and listeners.controller is not None:
        return listeners.controller
    # A ZooKeeper-mode holder: its controller is a broker, reached on the control-plane or inter-broker listener.
    return listeners.control_plane or listeners.inter_broker


def active_controller(readings: Mapping[str, JmxReading | None]) -> str | None:
    """The node the cluster's controller-bound channels go to, when the readings agree on one: the KRaft quorum's
    leader as every node that knows one says it, else the one broker that says it is the ZooKeeper-mode
    controller, else, when none says so, the one holder of the ZooKeeper-mode controller's channels. None when they
    disagree (an election between two reads) or say nothing."""
    leaders = {r.quorum_leader for r in readings.values() if r is not None and r.quorum_leader is not None}
    if leaders:
        return str(leaders.pop()) if len(leaders) == 1 else None
    active = [broker for broker, r in readings.items() if r is not None and r.active_controller]
    if active:
        return active[0] if len(active) == 1 else None
    # A ZooKeeper-mode controller in its own controlled shutdown no longer answers ActiveControllerCount (seen on
    # 3.9.2: the query returns nothing while its shutdown waits on the controller, itself) but still holds its channel
    # to every broker: then the one holder of those channels.
    holders = [
        broker
        for broker, r in readings.items()
        if r is not None and any(c.channel == "controller-channel" and c.connections for c in r.channels)
    ]
    return holders[0] if len(holders) == 1 else None


def _unnamed_unknown_channels(release: str | None) -> int:
    """Inter-broker channels without a named destination that are counted as `unknown` in `release` (in any
    release, when it is not known): each holds at most one connection per broker (those to the active controller
    are reckoned apart, see _Doubt)."""
    return sum(
        1
        for channel in CHANNELS
        if channel.destination_tag is None
        and not channel.to_active_controller
        and channel.towards is Towards.INTER_BROKER
        and (release is None or (channel.exists_in(release) and channel.appears_as(release) == UNKNOWN_SOFTWARE))
    )


def _may_be_zookeeper_mode(release: str | None, facts: BrokerFacts | None) -> bool:
    """Whether a broker may run in ZooKeeper mode, be its controller and hold the controller's channel to every
    broker: a release before 4.0 (or one not known) without a KRaft controller listener (a KRaft node, or a
    ZooKeeper-mode broker in migration, whose controller is then the KRaft quorum's)."""
    if facts is not None and facts.listeners is not None and facts.listeners.controller is not None:
        return False
    parsed = parse_version(release) if release is not None else None
    return parsed is None or parsed.release[0] < 4


def _doubt(holder: _Holder, controller: str | None, broker: str, outside: Mapping[str, int] | None) -> _Doubt:
    """What an unread broker may put on other brokers' gauges as `unknown`. When its JMX answered but its release or
    listeners are not known: what it was read to hold, per destination where the channel names it, one connection
    per other channel that may be counted as `unknown` (towards the controller only, for those that go to it). Else
    one connection per replica fetcher thread (from DescribeConfigs), per marker-like channel and, when it may be
    the ZooKeeper-mode controller (`controller`: the active one, when known), its channel to each broker, and a
    ZooKeeper-mode broker's controlled-shutdown connection to the controller. Without either, a node that is no
    broker of the cluster (`outside`, see _not_brokers) what a KRaft controller may hold towards brokers; else no
    bound."""
    facts, reading = holder.facts, holder.reading
    release = reading.release if reading is not None else None
    if release is None and facts is not None and facts.inferred_release != "unknown":
        release = facts.inferred_release
    if reading is not None and reading.channels_read:
        # A controller-only KRaft node holds no channel to brokers at all: what it was read to hold says so.
        named: dict[str, int] = defaultdict(int)
        everywhere = to_controller = 0
        for channel in reading.channels:
            spec = BY_NAME[channel.channel]
            if release is not None and spec.appears_as(release) != UNKNOWN_SOFTWARE:
                continue
            if channel.destination_broker is not None:
                named[channel.destination_broker] += channel.connections
            elif spec.to_active_controller:
                to_controller += 1
            else:
                everywhere += 1
        return _Doubt(everywhere, {to: n + everywhere for to, n in named.items()}, to_controller, controller)
    if facts is None or facts.listeners is None:
        return _Doubt(None, {}) if outside is None else _Doubt(0, outside)
    unnamed = _unnamed_unknown_channels(release)
    zookeeper_mode = _may_be_zookeeper_mode(release, facts)
    controls = 1 if zookeeper_mode and controller in (None, broker) else 0
    return _Doubt(facts.listeners.replica_fetchers + unnamed + controls, {}, 1 if zookeeper_mode else 0, controller)


def _apportion(total: int, shares: list[ChannelShare]) -> tuple[ChannelShare, ...]:
    """`total` connections spread over `shares` in order, each up to its own count (counted, never invented)."""
    out = []
    for share in sorted(shares, key=lambda s: (s.channel, s.holder)):
        take = min(total, share.connections)
        total -= take
        if take:
            out.append(ChannelShare(share.channel, share.holder, take))
    return tuple(out)


def _certain(
    residual: Mapping[str, int], per_broker_unnamed: int, doubt: Mapping[str, int | None], left: int
) -> dict[str, int]:
    """Per broker, the connections no channel can be: its residual beyond what the unnamed channels and the unread
    brokers (`doubt`, per broker; None: unbounded) could put there. Never more than the cluster's residual
    (`left`), which brokers read at slightly different moments can make smaller than the sum."""
    certain = {}
    for broker, n in residual.items():
        cap = doubt.get(broker, 0)
        certain[broker] = 0 if cap is None else max(0, n - per_broker_unnamed - cap)
    excess = sum(certain.values()) - left
    for broker in sorted(certain, reverse=True):
        if excess <= 0:
            break
        cut = min(excess, certain[broker])
        certain[broker] -= cut
        excess -= cut
    return certain


def _doubt_by_broker(residual: Mapping[str, int], doubts: list[_Doubt]) -> dict[str, int | None]:
    """Per broker with a residual, how many `unknown` connections the unread brokers could hold towards it."""
    out: dict[str, int | None] = {}
    for broker in residual:
        caps = [doubt.towards(broker) for doubt in doubts]
        out[broker] = None if None in caps else sum(cap or 0 for cap in caps)
    return out


def _uncounted(
    readings: Mapping[str, JmxReading | None], facts: Mapping[str, BrokerFacts]
) -> tuple[dict[tuple[str, str], int], tuple[str, ...]]:
    """During the ZooKeeper-to-KRaft migration, the active KRaft controller holds a connection to each
    ZooKeeper-mode broker (UpdateMetadata, LeaderAndIsr, StopReplica), counted as `unknown` on the broker's
    inter-broker listener, and Kafka counts it in no connection-count (its channel manager's Metrics has no
    reporter); its QueueSize gauges name the brokers. (listener, broker) -> how many such connections may be there,
    and the controllers that may hold them: never counted as the brokers' own, never as a client's for certain."""
    uncounted: dict[tuple[str, str], int] = defaultdict(int)
    holders = []
    for holder, reading in readings.items():
        if reading is None or not reading.active_controller or reading.quorum_leader is None:
            continue
        for broker in reading.propagating_to:
            listeners = facts[broker].listeners if broker in facts else None
            if listeners is not None:
                uncounted[(listeners.inter_broker, broker)] += 1
                holders.append(holder)
    return uncounted, tuple(sorted(set(holders)))


def _not_brokers(readings: Mapping[str, JmxReading | None], discovered: set[str] | None) -> dict[str, dict[str, int]]:
    """The nodes polled for gauges that are no brokers of the cluster: its metadata, read this cycle
    (`discovered`: the brokers polled for ApiVersions, which discovery keeps for ten minutes after they leave the
    metadata; None when discovery did not answer), never listed them. Such a node is a dedicated KRaft controller
    listed with the brokers (or one that stopped long ago): its channels go to the controllers, none to a broker's
    listener but, in the ZooKeeper-to-KRaft migration, its connection to each ZooKeeper-mode broker (as its JMX
    says: JmxReading.metadata_mode). Node -> the `unknown` connections it may hold towards each broker."""
    if discovered is None:
        return {}
    zookeeper_mode = {
        broker: 1
        for broker, reading in readings.items()
        if broker in discovered and reading is not None and reading.metadata_mode in ("zookeeper", "migrating")
    }
    return {node: zookeeper_mode for node in readings if node not in discovered}


def _in_doubt_because(
    unread: tuple[str, ...],
    doubts: Mapping[str, _Doubt],
    residual: Mapping[str, int],
    doubt: Mapping[str, int | None],
    maybe_elsewhere: int,
    readings: Mapping[str, JmxReading | None],
) -> tuple[str, ...]:
    """The unread nodes a landing's doubt comes from: for `unknown` (`doubt` not empty), those whose channels may
    hold connections on one of its brokers; nodes whose gauges were not read, when channels without a destination
    may have gone to them (`maybe_elsewhere`). Every unread node when neither says (never an empty reason)."""
    because = {
        node
        for node in unread
        if (doubt and any(doubts[node].towards(broker) != 0 for broker in residual))
        or (maybe_elsewhere and readings.get(node) is None)
    }
    return tuple(node for node in unread if node in because) or unread


def account_cluster(cluster: str, results: Iterable[SourceResult]) -> ClusterAccount:
    """Match one cluster's gauges against its brokers' own channels (see the module's docstring)."""
    readings: dict[str, JmxReading | None] = {}
    facts: dict[str, BrokerFacts] = {}
    discovered: set[str] = set()
    discovery_answered = False
    for result in results:
        if result.key.cluster != cluster:
            continue
        if result.key.source == SourceName.DISCOVERY:
            discovery_answered = result.ok
        elif result.key.source == SourceName.API_VERSIONS:
            discovered.add(result.key.broker)
        if result.key.source in GAUGE_SOURCES:
            readings[result.key.broker] = result.reading_of(JmxReading)
        elif (broker_facts := result.reading_of(BrokerFacts)) is not None:
            facts[result.key.broker] = broker_facts
    brokers_say = {f.listeners.controller for f in facts.values() if f.listeners and f.listeners.controller}
    holders = {}
    for broker in sorted({*readings, *facts}):
        broker_facts, reading = facts.get(broker), readings.get(broker)
        described = broker_facts is not None and broker_facts.listeners is not None
        alone = None if described else _dedicated_controller_listener(reading, brokers_say)
        holders[broker] = _Holder(reading, broker_facts, alone)
    landings: dict[Landing, _Landing] = defaultdict(_Landing)
    for broker, reading in readings.items():
        for client in reading.clients if reading is not None else ():
            if client.connections > 0:
                landings[(client.listener, client.software_name, client.software_version)].raw[broker] += (
                    client.connections
                )
    unread = tuple(broker for broker, holder in holders.items() if not holder.read)
    controller = active_controller(readings)
    for broker, holder in holders.items():
        if not holder.read:
            continue
        assert holder.reading is not None
        release = holder.reading.release
        if release is None:  # it holds nothing (see _Holder.read)
            continue
        for channel in holder.reading.channels:
            spec = BY_NAME[channel.channel]
            listener = _listener(holder, spec.towards)
            if listener is None:
                continue
            landing = landings[(listener, *spec.appears_as(release))]
            destination = channel.destination_broker
            connections = channel.connections
            if destination is None and controller is not None and controller != broker and spec.quorum:
                # One to the leader, placed; any other (to another voter) stays unplaced.
                landing.to_controller[controller].append(ChannelShare(channel.channel, broker, 1))
                connections -= 1
            share = ChannelShare(channel.channel, broker, connections)
            if destination is not None:
                landing.exact[destination].append(share)
            elif spec.to_active_controller and controller is not None:
                landing.to_controller[controller].append(share)
            elif connections:
                landing.unnamed.append(share)
    outside = _not_brokers(readings, discovered if discovery_answered else None)
    doubts = [_doubt(holders[broker], controller, broker, outside.get(broker)) for broker in unread]
    uncounted, uncounted_from = _uncounted(readings, facts)
    gauges_unread = sum(1 for reading in readings.values() if reading is None)
    # Per unread node, whether its channels may hold `unknown` connections on some broker: the status page names
    # those, and the nodes whose gauges were not read, as the reason for a doubt, not every node unread.
    doubting = {broker: doubt for broker, doubt in zip(unread, doubts, strict=True)}
    by_broker: list[BrokerListenerOwn] = []
    by_listener: list[ListenerOwn] = []
    for (listener, name, version), landing in sorted(landings.items()):
        residual: dict[str, int] = {}
        exact_own: list[ChannelShare] = []
        broker_rows: list[tuple[str, int, tuple[ChannelShare, ...]]] = []  # (broker, raw, exact own)
        inferred_own: dict[str, tuple[ChannelShare, ...]] = {}  # placed on the controller its gauges hold
        for broker, raw in sorted(landing.raw.items()):
            own = _apportion(raw, landing.exact.get(broker, []))
            left = raw - sum(share.connections for share in own)
            inferred_own[broker] = _apportion(left, landing.to_controller.get(broker, []))
            own += inferred_own[broker]
            exact_own += own
            residual[broker] = raw - sum(share.connections for share in own)
            broker_rows.append((broker, raw, own))
        # The controller-bound connections its gauges do not hold may be on a former controller: the cluster's.
        for broker, shares in landing.to_controller.items():
            taken: Counter[tuple[str, str]] = Counter()
            for on_it in inferred_own.get(broker, ()):
                taken[(on_it.channel, on_it.holder)] += on_it.connections
            for share in shares:
                rest = share.connections - taken.pop((share.channel, share.holder), 0)
                if rest > 0:
                    landing.unnamed.append(ChannelShare(share.channel, share.holder, rest))
        unnamed_total = sum(share.connections for share in landing.unnamed)
        # At most one connection per holder and channel reaches one broker.
        per_broker_unnamed = min(unnamed_total, sum(1 for share in landing.unnamed if share.connections > 0))
        left = sum(residual.values())
        # Unnamed channels may also go to brokers whose gauges were not read: only what cannot have gone there is
        # surely on the gauges read; the rest may be a channel's or a client's.
        surely_here = max(0, unnamed_total - gauges_unread * per_broker_unnamed)
        unnamed_own = _apportion(min(left, surely_here), landing.unnamed)
        surely_own = sum(share.connections for share in unnamed_own)
        maybe_elsewhere = min(left, unnamed_total) - surely_own
        left -= surely_own
        doubt = _doubt_by_broker(residual, doubts) if (name, version) == UNKNOWN_SOFTWARE else {}
        migration = {broker: uncounted.get((listener, broker), 0) for broker in doubt}  # empty but for `unknown`
        doubt = {broker: None if cap is None else cap + migration[broker] for broker, cap in doubt.items()}
        certain = _certain(residual, per_broker_unnamed, doubt, left)
        for broker, raw, own in broker_rows:
            if own or certain[broker] != raw:
                by_broker.append(BrokerListenerOwn(cluster, broker, listener, name, version, raw, own, certain[broker]))
        placed = sum(certain.values())
        caps = list(doubt.values())
        could_be_own = sum(cap or 0 for cap in caps) + maybe_elsewhere
        definite = placed if None in caps else max(placed, left - could_be_own)
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
                    _in_doubt_because(unread, doubting, residual, doubt, maybe_elsewhere, readings) if in_doubt else (),
                    uncounted_from if in_doubt and any(migration.values()) else (),
                )
            )
    # Only brokers whose gauges are polled: a cluster polled over the Kafka protocol alone has none to judge.
    channels_read = {broker: holder.read for broker, holder in holders.items() if broker in readings}
    return ClusterAccount(tuple(by_broker), tuple(by_listener), channels_read)


def account(clusters: Iterable[str], results: Iterable[SourceResult]) -> Mapping[str, ClusterAccount]:
    """Every cluster's account of this cycle."""
    results = tuple(results)
    return {cluster: account_cluster(cluster, results) for cluster in clusters}
