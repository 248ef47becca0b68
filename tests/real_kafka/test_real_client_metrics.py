"""KIP-714 client-metrics subscriptions on real brokers (issue 31, part 3), made, changed and deleted with Kafka's
Admin API (IncrementalAlterConfigs on a CLIENT_METRICS resource, as kafka-client-metrics.sh does), and what the
exporter shows of them: on 3.9.2 listed with ListClientMetricsResources (key 74 v0), on 4.4.0 with
ListConfigResources (key 74 v1, KIP-1142), each described with DescribeConfigs.

The shared brokers serve every module: the subscriptions carry names of this module's own, and each test deletes
what it made, failed or not.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType

from real_kafka import KRAFT_RELEASES
from tests.real_kafka.conftest import RealBrokers, get, samples, scrape
from tests.real_kafka.own_brokers import admin_client
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.real_kafka, pytest.mark.slow]

#: What each release's brokers serve of key 74, as /metrics says it: {api: supported}.
KEY_74 = {
    "3.9.2": {"ListClientMetricsResources": 1.0, "ListConfigResources": 0.0},
    "4.4.0": {"ListClientMetricsResources": 1.0, "ListConfigResources": 1.0},
}
#: The variant the exporter lists subscriptions with (the newest the brokers serve).
LISTED_WITH = {"3.9.2": "ListClientMetricsResources", "4.4.0": "ListConfigResources"}
SUBSCRIPTION_KEYS = ("metrics", "interval.ms", "match")


def _set(admin: Any, name: str, configs: Mapping[str, str]) -> None:
    resource = ConfigResource(
        ConfigResourceType.CLIENT_METRICS, name, {key: (AlterConfigOp.SET, value) for key, value in configs.items()}
    )
    _check(admin.alter_configs([resource], raise_on_unknown=False, incremental=True))


def _delete(admin: Any, name: str) -> None:
    # kafka-client-metrics.sh --delete: every key of the resource removed, which removes the subscription.
    resource = ConfigResource(
        ConfigResourceType.CLIENT_METRICS, name, {key: (AlterConfigOp.DELETE, None) for key in SUBSCRIPTION_KEYS}
    )
    _check(admin.alter_configs([resource], raise_on_unknown=False, incremental=True))


def _check(result: Mapping[str, Mapping[str, str]]) -> None:
    """kafka-python returns each resource's outcome ('OK' or the error) instead of raising it."""
    outcomes = {name: outcome for by_name in result.values() for name, outcome in by_name.items()}
    assert outcomes and set(outcomes.values()) == {"OK"}, outcomes


@contextlib.contextmanager
def subscription(brokers: RealBrokers, release: str, name: str, configs: Mapping[str, str]) -> Iterator[Any]:
    """``name`` defined on ``release``'s broker for the block, deleted after it; yields the Admin client."""
    with admin_client(brokers.clusters[release].bootstrap()) as admin:
        _set(admin, name, configs)
        try:
            yield admin
        finally:
            _delete(admin, name)


def subscriptions_shown(base: str, cluster: str) -> dict[str, str]:
    """/metrics' kafka_client_metrics_subscription_info of ``cluster``: {name: interval_ms}."""
    info = samples(scrape(base), "kafka_client_metrics_subscription_info", kafka_cluster=cluster)
    return {dict(labels)["name"]: dict(labels)["interval_ms"] for labels in info}


def api_document(base: str, cluster: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(get(f"{base}/api/client-metrics"))[cluster]
    return document


@pytest.mark.parametrize("release", KRAFT_RELEASES)
def test_a_subscription_made_with_the_admin_api_is_listed_described_changed_and_gone(
    real_brokers: RealBrokers, exporter: str, release: str
) -> None:
    cluster = real_brokers.cluster_name(release)
    name = f"kce-real-cm-{release}"
    metrics = "org.apache.kafka.producer.,org.apache.kafka.consumer.coordinator.rebalance"
    match = "client_software_name=kcat.*,client_id=billing-.*"
    with subscription(
        real_brokers, release, name, {"metrics": metrics, "interval.ms": "30000", "match": match}
    ) as admin:
        wait_for(
            lambda: subscriptions_shown(exporter, cluster).get(name) == "30000",
            timeout=60,  # a wait for what must appear: it ends on the condition
            what=f"{name} (interval 30000) in /metrics of {cluster}",
        )
        series = scrape(exporter)
        supported = samples(series, "kafka_client_exporter_api_supported", kafka_cluster=cluster)
        assert {dict(labels)["api"]: value for labels, value in supported.items()} == KEY_74[release]
        [count] = samples(series, "kafka_client_metrics_subscriptions", kafka_cluster=cluster).values()
        assert count >= 1
        document = api_document(exporter, cluster)
        assert document["api"] == LISTED_WITH[release]
        [shown] = [s for s in document["subscriptions"] if s["name"] == name]
        assert shown == {
            "name": name,
            "interval_ms": 30000,
            "metrics": metrics.split(","),
            "match": match.split(","),
        }
        page = get(f"{exporter}/")
        assert f"Client-metrics subscriptions (via {LISTED_WITH[release]})" in page
        assert name in page

        _set(admin, name, {"interval.ms": "45000"})
        wait_for(
            lambda: subscriptions_shown(exporter, cluster).get(name) == "45000",
            timeout=60,  # a wait for what must appear: it ends on the condition
            what=f"{name}'s new interval in /metrics of {cluster}",
        )
        # An incremental change keeps the other keys.
        [shown] = [s for s in api_document(exporter, cluster)["subscriptions"] if s["name"] == name]
        assert (shown["metrics"], shown["match"]) == (metrics.split(","), match.split(","))
    wait_for(
        lambda: name not in subscriptions_shown(exporter, cluster),
        timeout=15,
        what=f"{name} gone from /metrics of {cluster} after its deletion",
    )
    assert name not in {s["name"] for s in api_document(exporter, cluster)["subscriptions"]}


def test_a_subscription_on_one_cluster_is_not_shown_on_the_other(real_brokers: RealBrokers, exporter: str) -> None:
    first, second = KRAFT_RELEASES
    name = "kce-real-cm-only-on-one"
    with subscription(real_brokers, first, name, {"metrics": "*", "interval.ms": "60000"}):
        wait_for(
            lambda: name in subscriptions_shown(exporter, real_brokers.cluster_name(first)),
            timeout=60,  # a wait for what must appear: it ends on the condition
            what=f"{name} on {first}",
        )
        assert name not in subscriptions_shown(exporter, real_brokers.cluster_name(second))
        # No match list: every client; the exporter shows an empty list, not a missing one.
        [shown] = [
            s for s in api_document(exporter, real_brokers.cluster_name(first))["subscriptions"] if s["name"] == name
        ]
        assert (shown["metrics"], shown["match"], shown["interval_ms"]) == (["*"], [], 60000)
