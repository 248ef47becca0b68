"""Immutable results of one collection cycle: what sources produce and collectors render.

Nothing here knows about Prometheus or about how a value was fetched.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple, TypeVar

from exporter.kafka_releases.table import ApiRange
from exporter.request_logs.log_kinds import LogKind


def _frozen(mapping: Mapping) -> Mapping:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True, slots=True)
class ClientConnections:
    """One KIP-511 gauge: connections of one client software/version on one listener and processor."""

    listener: str
    network_processor: str
    software_name: str
    software_version: str
    connections: int


@dataclass(frozen=True, slots=True)
class DeprecatedRequests:
    """KIP-896 DeprecatedRequestsPerSec meter count for one request version and client software."""

    request: str
    version: str
    software_name: str
    software_version: str
    count: int


@dataclass(frozen=True, slots=True)
class ProcessorSuite:
    """How full one network processor's client gauge suite is (Kafka tracks at most 100 keys)."""

    listener: str
    network_processor: str
    keys: int
    live_keys: int

    @property
    def full(self) -> bool:
        # A processor drops new (name, version) keys only when none of its keys can be evicted,
        # i.e. when every one of them still has connections (docs/kafka-facts/jmx-mbeans.md#gauge-suite-eviction).
        return self.live_keys >= SUITE_MAX_ENTRIES


SUITE_MAX_ENTRIES = 100


@dataclass(frozen=True, slots=True)
class ChannelConnections:
    """Connections one broker holds open on one of its own network channels (docs/kafka-facts/
    brokers-own-connections.md): Kafka's metric group without "-metrics" (``replica-fetcher``,
    ``txn-marker-channel`` ...) and, where Kafka names it in the tags, the node they go to."""

    channel: str
    destination_broker: str | None
    connections: int


#: ZkMigrationState's value on a ZooKeeper-mode broker (ZkMigrationState.ZK in Kafka's metadata module).
ZK_MIGRATION_STATE_ZK = 4


@dataclass(frozen=True, slots=True)
class JmxReading:
    clients: tuple[ClientConnections, ...] = ()
    deprecated_requests: tuple[DeprecatedRequests, ...] = ()
    suites: tuple[ProcessorSuite, ...] = ()
    # The broker's own outbound channels, and whether this way of reading can see them at all (a metrics endpoint
    # whose rules drop them cannot: then nothing the broker holds can be told apart from a client).
    channels: tuple[ChannelConnections, ...] = ()
    channels_read: bool = False
    release: str | None = None  # the broker's exact version (app-info), which names its channels' software version
    # Which node is the cluster's active controller, as this node says: whether it is the ZooKeeper-mode controller
    # (kafka.controller ActiveControllerCount; on KRaft controllers too) and the KRaft quorum's leader it knows of
    # (raft-metrics current-leader). None: not said (no such MBean, or no leader known).
    active_controller: bool | None = None
    quorum_leader: int | None = None
    # The ZooKeeper-to-KRaft migration (KIP-866) as this node says it: kafka.controller ZkMigrationState (0 none,
    # 1 migration, 2 pre-migration, 3 post-migration, 4 a ZooKeeper-mode broker's own), and, on a KRaft controller,
    # the brokers its migration channel manager sends to (ControllerChannelManager QueueSize per broker-id): the
    # ZooKeeper-mode brokers, whose connections from it Kafka counts nowhere.
    migration_state: int | None = None
    propagating_to: tuple[str, ...] = ()

    @property
    def metadata_mode(self) -> str | None:
        """How the node keeps its metadata, from what its JMX says (docs/own-connections.md): `zookeeper` (a
        ZooKeeper-mode broker: a KafkaController and no KRaft client), `migrating` (a ZooKeeper-mode broker with a
        KRaft client, in the migration), `kraft`; None when the reading says neither (a metrics endpoint)."""
        if self.quorum_leader is None:
            # A migrating broker whose KRaft client knows no leader yet reads as ZooKeeper mode for that cycle.
            return "zookeeper" if self.active_controller is not None else None
        return "migrating" if self.migration_state == ZK_MIGRATION_STATE_ZK else "kraft"


@dataclass(frozen=True, slots=True)
class FeatureRange:
    """A KIP-584 feature: supported [min, max] versions, or finalized [min, max] levels."""

    name: str
    min_version: int
    max_version: int


@dataclass(frozen=True, slots=True)
class BrokerListeners:
    """The listener names a broker's own channels use, and its replica fetcher threads, as DescribeConfigs says."""

    inter_broker: str
    controller: str | None
    replica_fetchers: int
    # ZooKeeper mode: where the controller's channels land (control.plane.listener.name, KIP-291), when one is set.
    control_plane: str | None = None


@dataclass(frozen=True, slots=True)
class BrokerFacts:
    """What one broker's ApiVersions response says about it (KIP-35, KIP-511, KIP-584)."""

    host: str
    request_version: int  # the ApiVersions version finally answered
    versions_tried: tuple[int, ...]  # the KIP-511 fallback path, e.g. (4, 0, 2) on a 2.3 broker
    apis: tuple[ApiRange, ...]
    supported_features: tuple[FeatureRange, ...]
    finalized_features: tuple[FeatureRange, ...]
    finalized_features_epoch: int
    inferred_release: str
    # Where the broker's own channels connect, from DescribeConfigs of the broker (None: not read, e.g. no ACL):
    # the inter-broker listener (replica fetchers, transaction markers), the controller listener, and how many
    # replica fetcher threads it runs (at most one connection each per leader).
    listeners: BrokerListeners | None = None

    def api(self, api_key: int) -> ApiRange | None:
        return next((a for a in self.apis if a.api_key == api_key), None)


@dataclass(frozen=True, slots=True)
class Subscription:
    """A KIP-714 client-metrics subscription (ConfigResource type CLIENT_METRICS)."""

    name: str
    interval_ms: int
    metrics: tuple[str, ...]
    match: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ClientMetricsReading:
    # Which key-74 variants the chosen broker serves: v0 (ListClientMetricsResources, 3.7+) and
    # v1 (ListConfigResources, 4.1+); ``api_used`` is None when neither is served.
    list_v0_supported: bool
    list_v1_supported: bool
    api_used: str | None
    subscriptions: tuple[Subscription, ...] = ()


@dataclass(frozen=True, slots=True)
class JudgedClient:
    """Connections of one client software/version on one broker, listener and processor, with the policy's
    verdict on the real version; ``software_version`` is ``other`` when the cardinality cap folded it."""

    cluster: str
    broker: str
    listener: str
    network_processor: str
    software_name: str
    software_version: str
    real_software_version: str
    connections: int
    violation: str | None = None  # below_minimum | denied_version | unknown_software | not_allowed
    violation_detail: str | None = None
    unparseable: bool = False  # a version rule applies but the version did not parse (never guessed)
    # Of `connections`, those that are clients' for certain: the brokers' own channels (or those of a broker whose
    # channels could not be read) cannot account for them. What a violation counts; None: all of them.
    clients_certain: int | None = None

    @property
    def violating(self) -> int:
        """The connections that break the policy: the certain clients' ones, when there is a violation."""
        if self.violation is None:
            return 0
        return self.connections if self.clients_certain is None else self.clients_certain


@dataclass(frozen=True, slots=True)
class ChannelShare:
    """Connections of one broker's own channel (`holder` holds them) that a gauge counts."""

    channel: str
    holder: str
    connections: int


@dataclass(frozen=True, slots=True)
class BrokerListenerOwn:
    """On one broker and listener, under one client software name/version: the connections of the brokers' own
    channels that name this broker as their destination (replica fetchers), and how many of the gauge's
    connections no broker's channel can be (`clients_certain`, what the policy judges)."""

    cluster: str
    broker: str
    listener: str
    software_name: str
    software_version: str
    connections: int  # what the broker's gauges count
    own: tuple[ChannelShare, ...]
    clients_certain: int


@dataclass(frozen=True, slots=True)
class ListenerOwn:
    """On one listener of a cluster, under one client software name/version, summed over the brokers read: the
    connections of the brokers' own channels placed on a broker (`own_placed`, see BrokerListenerOwn) and, per
    channel and holder, those of channels whose destination Kafka does not name (`own_unplaced`), as far as the
    gauges count them; the clients' connections that are certain but cannot be placed on one broker
    (`unattributed`); those that may as well be the brokers' own as clients' (`in_doubt`): channels of brokers whose
    own channels could not be read (those brokers in `unread`), or channels without a named destination that may have
    gone to brokers whose gauges were not read, or clients' connections too new to have named themselves
    (`not_named_yet`)."""

    cluster: str
    listener: str
    software_name: str
    software_version: str
    connections: int
    own_placed: int
    own_unplaced: tuple[ChannelShare, ...]
    unattributed: int
    in_doubt: int
    unread: tuple[str, ...]
    # The KRaft controllers whose migration connections to ZooKeeper-mode brokers, counted by no MBean, may be among
    # those in doubt.
    uncounted_from: tuple[str, ...] = ()
    # Of those in doubt, the `unknown` connections too new to be judged: they may not have sent their ApiVersions yet
    # (judging/not_named_yet.py); judged once they were there for ten seconds and a cycle.
    not_named_yet: int = 0

    @property
    def own_total(self) -> int:
        return self.own_placed + sum(share.connections for share in self.own_unplaced)


@dataclass(frozen=True, slots=True)
class BlockingRequests:
    """A DeprecatedRequestsPerSec count of one broker whose request version ``target_release`` no longer serves."""

    cluster: str
    broker: str
    request: str
    version: str
    software_name: str
    software_version: str
    count: int
    target_release: str


class ClientIdentity(NamedTuple):
    """Who runs one client software version, per the inventory job's ``clients`` table: one clientId, principal,
    source host and listener, over the log time the job covered."""

    client_id: str | None  # None: the client sent none (null), as the job's table says; "" is an empty one
    principal: str
    source_host: str
    listener: str
    software_name: str
    software_version: str
    first_seen: str  # the brokers' log time, zone-less, as the job writes it
    last_seen: str
    requests: int
    connections: int

    @property
    def key(self) -> IdentityKey:
        """What tells it apart in the inventory's other tables (upgrade_impact's senders)."""
        return (self.client_id, self.principal, self.source_host, self.listener)


#: What tells identities apart in the inventory's tables: clientId, principal, source host, listener.
IdentityKey = tuple[str | None, str, str, str]


@dataclass(frozen=True, slots=True)
class InventoryReading:
    """The inventory job's latest publication for one cluster."""

    directory: str
    run_id: str
    finished: str  # when the job's run ended (ISO 8601, UTC)
    log_first: str | None  # the oldest and newest log line the publication covers (brokers' log time)
    log_last: str | None
    newest_line_timestamp: float | None  # log_last as Unix time, its zone-less time read as UTC
    # Per (software name, software version), the most active identities first; at most `max_loaded` overall.
    # Out of repr: asyncio formats a finished task's result (100,000 identities made a 60 MB string and 1.5 s).
    identities: Mapping[tuple[str, str], tuple[ClientIdentity, ...]] = field(repr=False)
    # Per pair, how many identities the table has (those beyond the loaded ones included).
    identity_counts: Mapping[tuple[str, str], int] = field(repr=False)
    rows: int  # rows of the clients table
    not_loaded: int  # rows past the load limit (inventory.max_loaded_identities), the least active ones
    # Who the job saw sending each request version its target release no longer serves (its upgrade_impact table):
    # (software name, version, request, request version) -> (clientId, principal, source host, listener) of each.
    # A pair's identities are everyone running that software; only these sent the blocking request.
    blocking_senders: Mapping[tuple[str, str, str, str], frozenset[IdentityKey]] = field(
        default_factory=dict, repr=False
    )
    #: Per directory of request logs the run read (one broker's, as a rule), the kind of log it is: what "who" can
    #: say depends on it (log_kinds.CANNOT_TELL).
    request_logs: tuple[tuple[str, LogKind], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "identities", _frozen(self.identities))
        object.__setattr__(self, "identity_counts", _frozen(self.identity_counts))
        object.__setattr__(self, "blocking_senders", _frozen(self.blocking_senders))


@dataclass(frozen=True, slots=True)
class LivePairIdentities:
    """Who is behind one client software version connected to a cluster now, per the cluster's inventory."""

    cluster: str
    software_name: str
    software_version: str  # as kafka_client_connections labels it ("other" when the cap folded it)
    real_software_version: str
    connections: int  # live, over every broker of the cluster
    identities: tuple[ClientIdentity, ...]  # the loaded ones, most active first
    identities_total: int  # in the inventory, loaded or not; 0: the pair is not in it
    exported: int  # the first `exported` identities are kafka_client_identity_info series (max_identity_series)


# What one poll of one source can produce.
Reading = JmxReading | BrokerFacts | ClientMetricsReading | InventoryReading
ReadingT = TypeVar("ReadingT", JmxReading, BrokerFacts, ClientMetricsReading, InventoryReading)

# Cluster-level sources (metadata discovery, client-metrics subscriptions) are reported under this pseudo broker.
CLUSTER_BROKER = "bootstrap"
# The client_software_version of name/version pairs folded by the per-cluster cardinality cap.
FOLDED_VERSION = "other"


@dataclass(frozen=True, slots=True, order=True)
class SourceKey:
    cluster: str
    broker: str
    source: str


@dataclass(frozen=True, slots=True)
class SourceResult:
    """The outcome of polling one source of one broker in one cycle."""

    key: SourceKey
    ok: bool
    duration_seconds: float
    finished_at: float
    error_reason: str | None = None
    error_message: str | None = None
    # What the source read; None when the poll failed, unless the source hands over its last good reading.
    reading: Reading | None = None

    def reading_of(self, kind: type[ReadingT]) -> ReadingT | None:
        """The reading when this poll succeeded and produced a `kind`; None otherwise."""
        return self.reading if self.ok and isinstance(self.reading, kind) else None

    def kept_reading_of(self, kind: type[ReadingT]) -> ReadingT | None:
        """The reading of `kind` even of a failed poll: a source that keeps its last good data (the inventory)
        hands it over with its error, so `up` says 0 while the data stays, marked by its age."""
        return self.reading if isinstance(self.reading, kind) else None


def inventories(results: Iterable[SourceResult]) -> dict[str, InventoryReading]:
    """Each cluster's inventory: this cycle's, or the last good one its source kept through a failure."""
    return {
        result.key.cluster: reading
        for result in results
        if (reading := result.kept_reading_of(InventoryReading)) is not None
    }


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything /metrics shows, as of the end of one cycle."""

    sequence: int
    taken_at: float
    cycle_duration_seconds: float
    results: tuple[SourceResult, ...]
    # Counters and timestamps carry over between cycles; copied here so a snapshot is self-contained.
    errors_total: Mapping[tuple[SourceKey, str], int] = field(default_factory=dict)
    last_success: Mapping[SourceKey, float] = field(default_factory=dict)
    clusters: tuple[str, ...] = ()
    interval_seconds: float = 0.0  # the configured collection interval, to judge cycle_duration_seconds by
    clients: tuple[JudgedClient, ...] = ()
    folded_total: Mapping[str, int] = field(default_factory=dict)
    # The deprecated requests of this cycle's JMX readings that the configured target release rejects.
    blocking_requests: tuple[BlockingRequests, ...] = ()
    # The configured age past which this snapshot is stale (0: not configured), and whether it is served as
    # stale: then its results are failed polls and its client rows are gone (exporter/freshness.py).
    stale_after_seconds: float = 0.0
    stale: bool = False
    # Live pairs joined with the inventory of clusters that have one, and per cluster the identities left out of
    # the series by inventory.max_identity_series this cycle.
    identities: tuple[LivePairIdentities, ...] = ()
    identity_series_dropped: Mapping[str, int] = field(default_factory=dict)
    # The brokers' own connections, told apart from the clients' (exporter/judging/own_connections.py).
    own_by_broker: tuple[BrokerListenerOwn, ...] = ()
    own_by_listener: tuple[ListenerOwn, ...] = ()
    # (cluster, broker) -> whether its own channels were read this cycle (what the account could match).
    broker_channels_read: Mapping[tuple[str, str], bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "errors_total", _frozen(self.errors_total))
        object.__setattr__(self, "last_success", _frozen(self.last_success))
        object.__setattr__(self, "folded_total", _frozen(self.folded_total))
        object.__setattr__(self, "identity_series_dropped", _frozen(self.identity_series_dropped))
        object.__setattr__(self, "broker_channels_read", _frozen(self.broker_channels_read))

    def readings(self, kind: type[ReadingT]) -> Iterator[tuple[SourceKey, ReadingT]]:
        """Every successful poll's reading of `kind`, with the poll's key, in result order."""
        for result in self.results:
            reading = result.reading_of(kind)
            if reading is not None:
                yield result.key, reading

    def client_metrics_by_cluster(self) -> dict[str, ClientMetricsReading]:
        """Each cluster's client-metrics reading of this cycle (clusters whose poll failed are absent)."""
        return {key.cluster: reading for key, reading in self.readings(ClientMetricsReading)}
