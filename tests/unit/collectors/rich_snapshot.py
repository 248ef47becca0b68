"""One snapshot that fills every metric family: judged clients (violations, a folded pair, a label value that
needs escaping), deprecated requests (one that 4.0 still serves, one that blocks it), a full network processor,
the brokers' own channels (a replica fetcher placed on its broker, markers per cluster, one connection of an unnamed
client that no broker can be named for, one in doubt while broker 2's channels are unread),
broker facts with features, client-metrics subscriptions on one cluster and none on an older one, a failed poll
with its error count, and an inventory whose identities meet the series limit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.judging.identities import join_identities
from exporter.judging.upgrade import UpgradeJudge
from exporter.snapshot import (
    CLUSTER_BROKER,
    FOLDED_VERSION,
    ApiRange,
    BrokerFacts,
    BrokerListenerOwn,
    ChannelConnections,
    ChannelShare,
    ClientConnections,
    ClientIdentity,
    ClientMetricsReading,
    DeprecatedRequests,
    FeatureRange,
    IdentityKey,
    InventoryReading,
    JmxReading,
    JudgedClient,
    ListenerOwn,
    ProcessorSuite,
    Snapshot,
    SourceKey,
    SourceResult,
    Subscription,
)

PROD_1_JMX = SourceKey("prod", "1", "jmx")
PROD_1_API = SourceKey("prod", "1", "api_versions")
PROD_2_JMX = SourceKey("prod", "2", "jmx")
PROD_METRICS = SourceKey("prod", CLUSTER_BROKER, "client_metrics")
OLD_METRICS = SourceKey("old", CLUSTER_BROKER, "client_metrics")
PROD_INVENTORY = SourceKey("prod", CLUSTER_BROKER, "inventory")
ODD_NAME = 'odd "client"\\\nname'


def judged(broker: str, processor: str, name: str, version: str, connections: int, **kw: Any) -> JudgedClient:
    return JudgedClient(
        cluster="prod",
        broker=broker,
        listener="PLAINTEXT",
        network_processor=processor,
        software_name=name,
        software_version=kw.pop("shown_version", version),
        real_software_version=version,
        connections=connections,
        **kw,
    )


def identity(client_id: str | None, name: str, version: str, requests: int, host: str = "10.0.0.1") -> ClientIdentity:
    return ClientIdentity(
        client_id,
        "User:CN=app",
        host,
        "PLAINTEXT",
        name,
        version,
        "2026-01-01T10:00:00.000",
        "2026-01-01T11:00:00.000",
        requests,
        1,
    )


def inventory(
    *identities: ClientIdentity,
    blocking_senders: Mapping[tuple[str, str, str, str], frozenset[IdentityKey]] | None = None,
) -> InventoryReading:
    per_pair: dict[tuple[str, str], tuple[ClientIdentity, ...]] = {}
    for one in sorted(identities, key=lambda i: -i.requests):
        pair = (one.software_name, one.software_version)
        per_pair[pair] = (*per_pair.get(pair, ()), one)
    return InventoryReading(
        directory="/srv/inventory",
        run_id="20260101T120000Z-abcdef",
        finished="2026-01-01T12:00:00+00:00",
        log_first="2026-01-01 10:00:00.000",
        log_last="2026-01-01 11:00:00.000",
        newest_line_timestamp=1767265200.0,
        identities=per_pair,
        identity_counts={pair: len(found) for pair, found in per_pair.items()},
        rows=len(identities),
        not_loaded=0,
        blocking_senders=blocking_senders or {},
    )


def rich_snapshot() -> Snapshot:
    jmx = JmxReading(
        clients=(
            ClientConnections("PLAINTEXT", "0", "apache-kafka-java", "3.7.0", 2),
            ClientConnections("PLAINTEXT", "1", "apache-kafka-java", "3.7.0", 3),
        ),
        deprecated_requests=(
            DeprecatedRequests("Metadata", "2", "librdkafka", "1.5.0", 42),
            DeprecatedRequests("Produce", "1", "unknown", "unknown", 7),
        ),
        suites=(ProcessorSuite("PLAINTEXT", "0", 100, 100), ProcessorSuite("PLAINTEXT", "1", 12, 3)),
        channels=(ChannelConnections("replica-fetcher", "3", 2), ChannelConnections("txn-marker-channel", None, 1)),
        channels_read=True,
        release="3.9.2",
        # A KRaft node that knows the quorum's leader.
        quorum_leader=3000,
    )
    facts = BrokerFacts(
        host="broker-1.prod:9092",
        request_version=4,
        versions_tried=(4,),
        apis=(ApiRange(0, "Produce", 3, 12), ApiRange(18, "ApiVersions", 0, 4)),
        supported_features=(FeatureRange("metadata.version", 1, 27), FeatureRange("kraft.version", 0, 1)),
        finalized_features=(FeatureRange("metadata.version", 27, 27),),
        finalized_features_epoch=5,
        inferred_release="4.0",
    )
    metrics = ClientMetricsReading(
        list_v0_supported=True,
        list_v1_supported=False,
        api_used="ListClientMetricsResources",
        subscriptions=(
            Subscription("basic", 60000, ("org.apache.kafka.producer.",), ("client_software_name=.*",)),
            Subscription("fine", 5000, (), ()),
        ),
    )
    results = (
        SourceResult(PROD_1_JMX, True, 0.25, 1000.5, reading=jmx),
        SourceResult(PROD_1_API, True, 0.05, 1000.25, reading=facts),
        SourceResult(PROD_2_JMX, False, 2.0, 1001.0, error_reason="timeout", error_message="no answer in 2 s"),
        SourceResult(PROD_METRICS, True, 0.125, 1000.75, reading=metrics),
        SourceResult(OLD_METRICS, True, 0.5, 1000.0, reading=ClientMetricsReading(False, False, None)),
        SourceResult(
            PROD_INVENTORY,
            True,
            0.01,
            1000.0,
            reading=inventory(
                identity('billing "ledger",v2', "librdkafka", "1.5.0", 900, host="2001:db8::7"),
                identity("orders", "apache-kafka-java", "3.7.0", 50),
                identity("gone", "apache-kafka-java", "2.0.0", 5000),  # in the logs, not connected now
                # Two clients that name no software; only the first sent the Produce v1 the broker's meter counts,
                # which 4.0 no longer serves.
                identity("legacy-billing", "unknown", "unknown", 950, host="10.0.0.9"),
                identity("kafkajs-app", "unknown", "unknown", 920, host="10.0.0.8"),
                blocking_senders={
                    ("unknown", "unknown", "Produce", "1"): frozenset(
                        {("legacy-billing", "User:CN=app", "10.0.0.9", "PLAINTEXT")}
                    )
                },
            ),
        ),
    )
    clients = (
        judged("1", "0", "apache-kafka-java", "3.7.0", 2),
        judged("1", "1", "apache-kafka-java", "3.7.0", 3),
        judged("1", "0", "librdkafka", "1.5.0", 4, violation="below_minimum", violation_detail="below 1.8.2"),
        judged("1", "1", "librdkafka", "1.5.0", 1, violation="below_minimum", violation_detail="below 1.8.2"),
        judged("1", "1", ODD_NAME, "9.9", 6, shown_version=FOLDED_VERSION, violation="unknown_software"),
        # Two replica fetchers of broker 3 and one marker connection of broker 1 itself: no client is certain here.
        judged("1", "0", "unknown", "unknown", 3, violation="unknown_software", clients_certain=0),
    )
    own_fetchers = BrokerListenerOwn(
        "prod", "1", "PLAINTEXT", "unknown", "unknown", 3, (ChannelShare("replica-fetcher", "3", 2),), 0
    )
    # Across the cluster's listener: the marker and, beyond what broker 2 could hold, one unnamed client's connection
    # that could be on any broker; one more may be broker 2's.
    own_unknown = ListenerOwn(
        "prod", "PLAINTEXT", "unknown", "unknown", 5, 2, (ChannelShare("txn-marker-channel", "1", 1),), 1, 1, ("2",)
    )
    # A limit of three series: the most active identities are exported, the other counted.
    identities, dropped = join_identities(results, clients, {"prod": 3})
    return Snapshot(
        sequence=7,
        taken_at=1001.5,
        cycle_duration_seconds=1.25,
        results=results,
        errors_total={(PROD_2_JMX, "timeout"): 3, (PROD_1_API, "connection"): 1},
        last_success={PROD_1_JMX: 1000.5, PROD_1_API: 1000.25, PROD_2_JMX: 900.0, PROD_METRICS: 1000.75},
        clusters=("old", "prod"),
        interval_seconds=30.0,
        clients=clients,
        folded_total={"prod": 2},
        blocking_requests=UpgradeJudge("4.0.0").judge(results),
        stale_after_seconds=90.0,
        identities=identities,
        identity_series_dropped=dropped,
        own_by_broker=(own_fetchers,),
        own_by_listener=(own_unknown,),
        broker_channels_read={("prod", "1"): True, ("prod", "2"): False},
    )
