"""kafka_client_identity_info has one series per label set, whatever the inventory holds: versions folded into
`other` that share a client, and a null beside an empty clientId, each give one series, never a repeated one that
Prometheus would reject."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from exporter.judging.identities import join_identities
from exporter.snapshot import FOLDED_VERSION, Snapshot, SourceResult
from exporter.web.exposition import render_snapshot
from tests.unit.collectors.rich_snapshot import PROD_INVENTORY, identity, inventory, judged


def identity_series(snapshot: Snapshot) -> list[dict[str, str]]:
    body = render_snapshot(snapshot, openmetrics=False).decode()
    return [
        sample.labels
        for family in text_string_to_metric_families(body)
        for sample in family.samples
        if sample.name == "kafka_client_identity_info"
    ]


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
    snapshot = Snapshot(
        sequence=1,
        taken_at=1001.0,
        cycle_duration_seconds=0.1,
        results=tuple(results),
        clusters=("prod",),
        clients=tuple(clients),
        identities=identities,
    )
    series = [(s["client_software_version"], s["client_id"]) for s in identity_series(snapshot)]
    assert sorted(series) == [(FOLDED_VERSION, "audit"), (FOLDED_VERSION, "etl"), ("unknown", "")]
