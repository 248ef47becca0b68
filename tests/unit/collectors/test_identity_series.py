"""kafka_client_identity_info has one series per label set, whatever the inventory holds: versions folded into
`other` that share a client, and a null beside an empty clientId, each give one series, never a repeated one that
Prometheus would reject. kafka_client_upgrade_blocker_info names, of those identities, only the ones the inventory saw
sending a request version that a broker counts as blocking now."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from exporter.judging.identities import join_identities
from exporter.snapshot import (
    FOLDED_VERSION,
    BlockingRequests,
    JudgedClient,
    LivePairIdentities,
    Snapshot,
    SourceResult,
)
from exporter.web.exposition import render_snapshot
from tests.unit.collectors.rich_snapshot import PROD_INVENTORY, identity, inventory, judged


def identity_series(snapshot: Snapshot, name: str = "kafka_client_identity_info") -> list[dict[str, str]]:
    body = render_snapshot(snapshot, openmetrics=False).decode()
    return [
        sample.labels
        for family in text_string_to_metric_families(body)
        for sample in family.samples
        if sample.name == name
    ]


def one_cycle(
    results: list[SourceResult],
    clients: list[JudgedClient],
    identities: tuple[LivePairIdentities, ...],
    blocking_requests: tuple[BlockingRequests, ...] = (),
) -> Snapshot:
    return Snapshot(
        sequence=1,
        taken_at=1001.0,
        cycle_duration_seconds=0.1,
        results=tuple(results),
        clusters=("prod",),
        clients=tuple(clients),
        identities=identities,
        blocking_requests=blocking_requests,
    )


def test_shared_clients_of_folded_versions_and_null_or_empty_client_ids_give_one_series_each() -> None:
    reading = inventory(
        identity("etl", "librdkafka", "2.0.0", 90),
        identity("etl", "librdkafka", "2.0.1", 80),  # the same client on another version: both fold into `other`
        identity("", "kafkajs", "unknown", 70),
        identity(None, "kafkajs", "unknown", 60),  # no clientId at all
        identity("audit", "librdkafka", "2.0.1", 50),
    )
    results = [SourceResult(PROD_INVENTORY, True, 0.01, 1000.0, reading=reading)]
    clients = [
        judged("1", "0", "librdkafka", "2.0.0", 1, shown_version=FOLDED_VERSION),
        judged("1", "0", "librdkafka", "2.0.1", 1, shown_version=FOLDED_VERSION),
        judged("1", "0", "kafkajs", "unknown", 2),
    ]
    identities, dropped = join_identities(results, clients, {"prod": 100})
    assert dropped == {"prod": 0} and sum(pair.exported for pair in identities) == 5
    snapshot = one_cycle(results, clients, identities)
    series = [(s["client_software_version"], s["client_id"]) for s in identity_series(snapshot)]
    assert sorted(series) == [(FOLDED_VERSION, "audit"), (FOLDED_VERSION, "etl"), ("unknown", "")]


def test_blockers_are_the_identities_seen_sending_what_a_broker_counts_now() -> None:
    def key(client_id: str, host: str) -> tuple[str, str, str, str]:
        return (client_id, "User:CN=app", host, "PLAINTEXT")

    reading = inventory(
        identity("legacy", "unknown", "unknown", 90, host="10.0.0.1"),
        identity("kafkajs", "unknown", "unknown", 80, host="10.0.0.2"),  # names no software, sent nothing old
        identity("older", "unknown", "unknown", 70, host="10.0.0.3"),  # sent Produce v2, beyond the series limit
        identity("fetcher", "unknown", "unknown", 85, host="10.0.0.4"),  # sent Fetch v3, which no broker counts now
        blocking_senders={
            ("unknown", "unknown", "Produce", "2"): frozenset({key("legacy", "10.0.0.1"), key("older", "10.0.0.3")}),
            ("unknown", "unknown", "Fetch", "3"): frozenset({key("fetcher", "10.0.0.4")}),
        },
    )
    results = [SourceResult(PROD_INVENTORY, True, 0.01, 1000.0, reading=reading)]
    clients = [judged("1", "0", "unknown", "unknown", 4)]
    identities, dropped = join_identities(results, clients, {"prod": 3})
    assert dropped == {"prod": 1}
    counted = BlockingRequests("prod", "1", "Produce", "2", "unknown", "unknown", 12, "4.0.0")
    counted_too = BlockingRequests("prod", "2", "Produce", "2", "unknown", "unknown", 3, "4.0.0")
    snapshot = one_cycle(results, clients, identities, blocking_requests=(counted, counted_too))
    blockers = identity_series(snapshot, "kafka_client_upgrade_blocker_info")
    assert [(s["client_id"], s["request"], s["version"], s["target_release"]) for s in blockers] == [
        ("legacy", "Produce", "2", "4.0.0")
    ]
    assert {s["client_id"] for s in identity_series(snapshot)} == {"legacy", "fetcher", "kafkajs"}
