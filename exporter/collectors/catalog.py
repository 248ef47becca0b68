"""Every metric family /metrics exposes, defined once: name, type, help text and label names.

The collectors build their families from these entries; the dashboards, the alert rules and docs/metrics.md's
table are tested against them. CATALOG is in exposition order.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from exporter.sources.base import Reason

CLIENT_MBEAN = (
    "kafka.server:type=socket-server-metrics,clientSoftwareName,clientSoftwareVersion,listener,networkProcessor"
)
# Opt-in label (collection.network_processor_label) of the client families, which otherwise sum over processors.
NETWORK_PROCESSOR = "network_processor"
# The Kafka cluster's name (kafka-observ-lib's label): `cluster` belongs to the scrape in multi-cluster Prometheus
# setups (kubernetes-mixin, Thanos, Mimir), which would rename ours to `exported_cluster`.
KAFKA_CLUSTER = "kafka_cluster"


class Kind(StrEnum):
    GAUGE = "gauge"
    COUNTER = "counter"


@dataclass(frozen=True, slots=True)
class Family:
    name: str  # as prometheus_client takes it: a counter's without the `_total` its samples carry
    kind: Kind
    help: str
    labels: tuple[str, ...] = ()  # every label, in the order values are given; opt-in ones included
    per_processor_opt_in: bool = False  # NETWORK_PROCESSOR is in `labels` only when the setting asks for it

    def label_names(self, network_processor_label: bool) -> list[str]:
        if self.per_processor_opt_in and not network_processor_label:
            return [label for label in self.labels if label != NETWORK_PROCESSOR]
        return list(self.labels)

    @property
    def sample_name(self) -> str:
        """The series name Prometheus stores and PromQL selects."""
        return f"{self.name}_total" if self.kind is Kind.COUNTER else self.name

    def new(self, network_processor_label: bool = False) -> GaugeMetricFamily | CounterMetricFamily:
        """An empty family to add this scrape's samples to."""
        family_type = CounterMetricFamily if self.kind is Kind.COUNTER else GaugeMetricFamily
        return family_type(self.name, self.help, labels=self.label_names(network_processor_label))


_CLIENT = (KAFKA_CLUSTER, "broker", "listener", NETWORK_PROCESSOR, "client_software_name", "client_software_version")
_SOURCE = (KAFKA_CLUSTER, "broker", "source")
_API = (KAFKA_CLUSTER, "broker", "api")
_FEATURE = (KAFKA_CLUSTER, "broker", "feature")

BUILD_INFO = Family(
    "kafka_client_exporter_build_info", Kind.GAUGE, "Version of kafka-client-exporter; always 1.", ("version",)
)

# Clients (KIP-511 gauges as judged and folded, KIP-896 deprecated requests and those blocking the upgrade target,
# full gauge suites).
POLICY_VIOLATION_CONNECTIONS = Family(
    "kafka_client_policy_violation_connections",
    Kind.GAUGE,
    "Open connections of client software that breaks the version policy, by reason (below_minimum, "
    "denied_version, unknown_software, not_allowed); judged on the real version before any folding. "
    "Counts only connections that are clients' for certain: those the brokers' own channels account for (see "
    "kafka_client_inter_broker_connections) or may account for (kafka_client_unverified_connections) are left out. "
    'broker is empty ("") for certain ones the accounting cannot place on one broker. '
    "Only non-zero values are exported.",
    (*_CLIENT, "reason"),
    per_processor_opt_in=True,
)
SERIES_FOLDED = Family(
    "kafka_client_exporter_series_folded",
    Kind.COUNTER,
    'Client software name/version pairs folded into client_software_version="other" because the '
    "cluster has more distinct pairs than collection.max_versions_per_cluster (counted once per cycle).",
    (KAFKA_CLUSTER,),
)
CONNECTIONS = Family(
    "kafka_client_connections",
    Kind.GAUGE,
    f"Open connections per client software name and version (KIP-511), from JMX {CLIENT_MBEAN} "
    "attribute connections (over JMX, or as the brokers' own metrics endpoints export it: source prometheus), "
    "summed over network processors unless network_processor is a label. "
    "Only non-zero values are exported: Kafka keeps zero-valued MBeans, we drop them. "
    "Collected in the background; see kafka_client_exporter_snapshot_timestamp_seconds.",
    _CLIENT,
    per_processor_opt_in=True,
)
DEPRECATED_MBEAN = "kafka.network:type=RequestMetrics,name=DeprecatedRequestsPerSec"
_DEPRECATED = (KAFKA_CLUSTER, "broker", "request", "version", "client_software_name", "client_software_version")
DEPRECATED_REQUESTS = Family(
    "kafka_client_deprecated_requests",
    Kind.COUNTER,
    f"Requests at API versions the broker's release marks deprecated (KIP-896), per client software, from JMX "
    f"{DEPRECATED_MBEAN} attribute Count or its series on the brokers' metrics endpoints (brokers 3.7-3.9 only). "
    "Not all of them fail on 4.x: "
    "kafka_client_upgrade_blocking_requests_total holds those that do.",
    _DEPRECATED,
)
UPGRADE_BLOCKING_REQUESTS = Family(
    "kafka_client_upgrade_blocking_requests",
    Kind.COUNTER,
    f"The kafka_client_deprecated_requests_total series (JMX {DEPRECATED_MBEAN} attribute Count) whose API "
    "version target_release (policy.target_release) no longer serves: these clients fail after that upgrade.",
    (*_DEPRECATED, "target_release"),
)
CLIENT_SUITE_FULL = Family(
    "kafka_client_exporter_client_suite_full",
    Kind.GAUGE,
    "1 when a network processor tracks 100 client name/version keys that all have connections: Kafka "
    "then silently stops tracking new clients there, so the inventory of that processor is incomplete.",
    (KAFKA_CLUSTER, "broker", "listener", NETWORK_PROCESSOR),
)

# The brokers' own connections (exporter/judging/own_connections.py).
OUTBOUND_CONNECTIONS = Family(
    "kafka_broker_outbound_connections",
    Kind.GAUGE,
    "Connections this broker holds open on its own network channels (replica-fetcher, txn-marker-channel, "
    "AddPartitionsManager-channel, raft-channel, heartbeat, ...), from the channel's selector metrics attribute "
    "connection-count (kafka.server:type=<channel>-metrics). destination_broker is the node Kafka names in the "
    "tags (replica fetchers: the leader), empty where it names none. Only non-zero values are exported.",
    (KAFKA_CLUSTER, "broker", "channel", "destination_broker"),
)
INTER_BROKER_CONNECTIONS = Family(
    "kafka_client_inter_broker_connections",
    Kind.GAUGE,
    "Of the kafka_client_connections on this listener under this client software name and version, those the "
    "brokers' own channels hold (counted as unknown where the channel sends no ApiVersions, as replica fetchers "
    "never do, else as apache-kafka-java at the holder's release), as far as the gauges count them. broker is the "
    "destination where "
    'Kafka names it (replica fetchers); empty ("") where it names none, counted per cluster and listener.',
    (KAFKA_CLUSTER, "broker", "listener", "client_software_name", "client_software_version", "channel"),
)
UNVERIFIED_CONNECTIONS = Family(
    "kafka_client_unverified_connections",
    Kind.GAUGE,
    "Connections on this listener under this client software that may be the own channels of brokers whose "
    "channels could not be read this cycle (kafka_client_exporter_broker_channels_read 0), or unknown ones "
    "accepted within ten seconds or since the last cycle that may not have sent ApiVersions yet: neither judged "
    "as a client's (no violation) nor as a broker's. Only non-zero values are exported.",
    (KAFKA_CLUSTER, "listener", "client_software_name", "client_software_version"),
)
BROKER_CHANNELS_READ = Family(
    "kafka_client_exporter_broker_channels_read",
    Kind.GAUGE,
    "1 when this broker's own channels were read this cycle (its JMX with the channels' selector metrics and "
    "app-info, and its listener names from DescribeConfigs), so its connections to other brokers can be told "
    "from clients'; 0 when not.",
    (KAFKA_CLUSTER, "broker"),
)

# Brokers (ApiVersions: KIP-35, KIP-511, KIP-584).
# Who is behind the live clients: the inventory job's clients table joined with the live pairs.
_PAIR = (KAFKA_CLUSTER, "client_software_name", "client_software_version")
_IDENTITY = (*_PAIR, "client_id", "principal", "source_host", "listener")
IDENTITY_INFO = Family(
    "kafka_client_identity_info",
    Kind.GAUGE,
    "Who runs a client software version connected now, from the inventory job's clients table (clientId, "
    "principal, source host and listener seen in the brokers' request logs); always 1. Only for pairs with "
    "connections now (join on kafka_cluster, client_software_name and client_software_version with "
    "kafka_client_connections), the most active first, at most inventory.max_identity_series per cluster.",
    _IDENTITY,
)
UPGRADE_BLOCKER_INFO = Family(
    "kafka_client_upgrade_blocker_info",
    Kind.GAUGE,
    "Who sent a request version that target_release no longer serves, as the inventory job saw it in the "
    "brokers' request logs (its upgrade_impact table); always 1. One series per identity of "
    "kafka_client_identity_info that sent it, for each request version kafka_client_upgrade_blocking_requests_total "
    "counts now: everyone running a version is not everyone sending the request (unknown gathers every client that "
    "names no software).",
    (*_PAIR, "request", "version", "target_release", "client_id", "principal", "source_host", "listener"),
)
IDENTITY_SERIES_DROPPED = Family(
    "kafka_client_exporter_identity_series_dropped",
    Kind.GAUGE,
    "Identities of connected client versions left out of kafka_client_identity_info this cycle by "
    "inventory.max_identity_series (the least active ones); the status page and /api/clients still list them.",
    (KAFKA_CLUSTER,),
)
INVENTORY_TIMESTAMP = Family(
    "kafka_client_exporter_inventory_timestamp_seconds",
    Kind.GAUGE,
    "Unix time of the newest request-log line the cluster's inventory publication covers (the brokers' zone-less "
    "log time read as UTC); the age of who-runs-what. Kept while a newer publication cannot be read.",
    (KAFKA_CLUSTER,),
)

BROKER_RELEASE_INFO = Family(
    "kafka_broker_release_info",
    Kind.GAUGE,
    "Broker facts from ApiVersions; always 1. inferred_release is the oldest Kafka release whose API "
    "specs match the advertised ranges (a lower bound: releases with identical specs cannot be told "
    "apart), or unknown.",
    (KAFKA_CLUSTER, "broker", "host", "inferred_release"),
)
BROKER_MODE_INFO = Family(
    "kafka_broker_mode_info",
    Kind.GAUGE,
    "How the node keeps its metadata, as its JMX says; always 1. mode is zookeeper (a ZooKeeper-mode broker), "
    "migrating (a ZooKeeper-mode broker in the migration to KRaft) or kraft; release is its exact version "
    "(app-info). Not served for a node whose reading says neither (a metrics endpoint).",
    (KAFKA_CLUSTER, "broker", "mode", "release"),
)
API_VERSION_MIN = Family(
    "kafka_broker_api_version_min",
    Kind.GAUGE,
    "Lowest version of each API the broker advertises in ApiVersions (KIP-35/KIP-511).",
    _API,
)
API_VERSION_MAX = Family(
    "kafka_broker_api_version_max",
    Kind.GAUGE,
    "Highest version of each API the broker advertises in ApiVersions (KIP-35/KIP-511).",
    _API,
)
FINALIZED_FEATURE_LEVEL = Family(
    "kafka_broker_finalized_feature_level",
    Kind.GAUGE,
    "Finalized (cluster-wide) max level of each KIP-584 feature, e.g. metadata.version, from ApiVersions "
    "v3+ tagged field FinalizedFeatures.",
    _FEATURE,
)
SUPPORTED_FEATURE_MAX_LEVEL = Family(
    "kafka_broker_supported_feature_max_level",
    Kind.GAUGE,
    "Highest level of each KIP-584 feature this broker supports, from ApiVersions v3+ tagged field SupportedFeatures.",
    _FEATURE,
)

# Client-metrics subscriptions (KIP-714).
SUBSCRIPTIONS = Family(
    "kafka_client_metrics_subscriptions",
    Kind.GAUGE,
    "KIP-714 client-metrics subscriptions in the cluster, listed with ListClientMetricsResources / "
    "ListConfigResources (key 74).",
    (KAFKA_CLUSTER,),
)
SUBSCRIPTION_INFO = Family(
    "kafka_client_metrics_subscription_info",
    Kind.GAUGE,
    "One client-metrics subscription (DescribeConfigs of CLIENT_METRICS); always 1. Its metrics and match "
    "lists are on the landing page and at /api/client-metrics.",
    (KAFKA_CLUSTER, "name", "interval_ms"),
)
API_SUPPORTED = Family(
    "kafka_client_exporter_api_supported",
    Kind.GAUGE,
    "1 when the cluster's brokers serve this API: ListClientMetricsResources is key 74 v0 (3.7+), "
    "ListConfigResources key 74 v1 (4.1+).",
    (KAFKA_CLUSTER, "api"),
)

# The exporter's own health.
UP = Family(
    "kafka_client_exporter_up",
    Kind.GAUGE,
    "1 when the last poll of this broker's source succeeded, else 0.",
    _SOURCE,
)
COLLECT_DURATION = Family(
    "kafka_client_exporter_collect_duration_seconds",
    Kind.GAUGE,
    "Wall time of the last poll of this broker's source.",
    _SOURCE,
)
ERRORS = Family(
    "kafka_client_exporter_errors",
    Kind.COUNTER,
    f"Failed polls by reason ({', '.join(Reason)}).",
    (*_SOURCE, "reason"),
)
LAST_SUCCESS = Family(
    "kafka_client_exporter_last_success_timestamp_seconds",
    Kind.GAUGE,
    "Unix time of the last successful poll of this broker's source.",
    _SOURCE,
)
SNAPSHOT_TIMESTAMP = Family(
    "kafka_client_exporter_snapshot_timestamp_seconds",
    Kind.GAUGE,
    "Unix time the served snapshot was completed; /metrics serves the latest background cycle, so "
    "time() minus this is the age of the data.",
)
CYCLE_DURATION = Family(
    "kafka_client_exporter_cycle_duration_seconds",
    Kind.GAUGE,
    "Wall time of the last complete collection cycle over all clusters and brokers.",
)
COLLECTION_INTERVAL = Family(
    "kafka_client_exporter_collection_interval_seconds",
    Kind.GAUGE,
    "Configured pause between the starts of two collection cycles; a cycle_duration_seconds above it "
    "means collection cannot keep up.",
)
STALE_AFTER = Family(
    "kafka_client_exporter_stale_after_seconds",
    Kind.GAUGE,
    "Configured age of the last completed collection cycle (collection.stale_after_intervals times the "
    "interval) past which the data is stale: /healthz fails and client and broker series are withheld.",
)
SNAPSHOT_STALE = Family(
    "kafka_client_exporter_snapshot_stale",
    Kind.GAUGE,
    "1 when the served snapshot is older than stale_after_seconds: no collection cycle has completed since, "
    "so its client and broker series are withheld and every kafka_client_exporter_up is 0.",
)
CYCLE_FAILURES = Family(
    "kafka_client_exporter_cycle_failures",
    Kind.COUNTER,
    "Collection cycles that raised instead of completing (an exporter bug; the log has the traceback). Such a "
    "cycle publishes no snapshot, so the served one ages.",
)

CATALOG: tuple[Family, ...] = (
    BUILD_INFO,
    POLICY_VIOLATION_CONNECTIONS,
    SERIES_FOLDED,
    CONNECTIONS,
    DEPRECATED_REQUESTS,
    UPGRADE_BLOCKING_REQUESTS,
    CLIENT_SUITE_FULL,
    OUTBOUND_CONNECTIONS,
    INTER_BROKER_CONNECTIONS,
    UNVERIFIED_CONNECTIONS,
    BROKER_CHANNELS_READ,
    IDENTITY_INFO,
    UPGRADE_BLOCKER_INFO,
    IDENTITY_SERIES_DROPPED,
    INVENTORY_TIMESTAMP,
    BROKER_RELEASE_INFO,
    BROKER_MODE_INFO,
    API_VERSION_MIN,
    API_VERSION_MAX,
    FINALIZED_FEATURE_LEVEL,
    SUPPORTED_FEATURE_MAX_LEVEL,
    SUBSCRIPTIONS,
    SUBSCRIPTION_INFO,
    API_SUPPORTED,
    UP,
    COLLECT_DURATION,
    ERRORS,
    LAST_SUCCESS,
    SNAPSHOT_TIMESTAMP,
    CYCLE_DURATION,
    COLLECTION_INTERVAL,
    STALE_AFTER,
    SNAPSHOT_STALE,
    CYCLE_FAILURES,
)
BY_SAMPLE_NAME: dict[str, Family] = {family.sample_name: family for family in CATALOG}
