"""The alert path as users run it: the exporter watching the broker double, Prometheus 3.x evaluating the shipped
rules (their for and keep_firing_for shortened through alerts/config.yaml), Alertmanager with the shipped example
configuration (alerts/alertmanager.example.yaml; its group timings shortened, its Slack and PagerDuty endpoints and
a plain webhook on a local receiver), and that receiver.

- The below-minimum, denied-version, unknown-software and upgrade-blocker alerts arrive once each, one notification
  per cluster and alert, routed by severity, with their labels, and the Slack message naming the clients (clientId,
  principal, host: from the inventory) and linking the runbook.
- The exporter stops: KafkaClientExporterDown arrives for the cluster; the client alerts, which keep firing
  (keep_firing_for) rather than resolve, are inhibited.
- The exporter is back: KafkaClientExporterDown's resolution arrives; the client alerts go on firing, with neither a
  resolution nor a second notification; the old clients leave and their resolutions arrive.
"""

from __future__ import annotations

import contextlib
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from alerts.render import every, merge, write_rules
from demo.common import LEGACY_CLIENT_ID, POLICY
from harness.alertmanager_process import (
    AlertReceiver,
    Notification,
    alert_groups,
    example_config,
    local_receivers,
    running_alertmanager,
    with_timings,
)
from harness.clients import ClientKind, RealClient, start_client
from harness.exporter_process import running_exporter, write_config
from harness.legacy_client import LegacyClient
from harness.ports import free_port
from harness.prometheus_process import running_prometheus
from kafka_double.cluster import BrokerSpec, DoubleCluster
from tests.support.inventory_publication import publish
from tests.support.waiting import eventually

pytestmark = pytest.mark.slow

CLUSTER = "alert-path"
RUNBOOK = "https://github.com/kafka-client-exporter/kafka-client-exporter/blob/main/alerts/runbook.md#"
#: Seconds where operators wait minutes. keep_firing_for must outlast the exporter's outage here (its alert's way to
#: Alertmanager, then the exporter's restart and a scrape), as it outlasts an ordinary outage with the defaults.
THRESHOLDS = merge(
    every("for", "1s"),
    every("keepFiringFor", "20s"),
    {"KafkaClientDeprecatedRequests": {"window": "20s"}},
)
TIMINGS = {"group_wait": "1s", "group_interval": "2s", "repeat_interval": "1h"}
CLIENT_ALERTS = (
    "KafkaClientBelowMinimumVersion",
    "KafkaClientDeniedVersion",
    "KafkaClientUnknownSoftware",
    "KafkaClientDeprecatedRequests",
)


@dataclass(frozen=True)
class Identity:
    """A row of the inventory's clients table, as the exporter names it in the alerts."""

    client_id: str
    principal: str
    host: str
    software: tuple[str, str]

    @property
    def named(self) -> str:
        return f"{self.client_id} ({self.principal}) on {self.host}"

    def row(self) -> list[str]:
        stamp = "2026-01-01T10:00:00.000"
        return [self.client_id, self.principal, self.host, "PLAINTEXT", *self.software, stamp, stamp, "10", "1"]


BELOW_MINIMUM = Identity("orders-ingest", "User:CN=orders", "10.1.0.5", ("librdkafka", "1.6.0"))
DENIED = Identity("payments-audit", "User:CN=payments", "10.1.0.6", ("librdkafka", "2.0.2"))
LEGACY = Identity(LEGACY_CLIENT_ID, "User:ANONYMOUS", "10.1.0.7", ("unknown", "unknown"))
#: What each alert's notification must carry: its receiver (by severity), labels, and who it names.
EXPECTED: dict[str, tuple[str, dict[str, str], Identity]] = {
    "KafkaClientBelowMinimumVersion": (
        "kafka-clients-tickets",
        {"severity": "warning", "client_software_name": "librdkafka", "client_software_version": "1.6.0"},
        BELOW_MINIMUM,
    ),
    "KafkaClientDeniedVersion": (
        "kafka-clients-tickets",
        {"severity": "warning", "client_software_name": "librdkafka", "client_software_version": "2.0.2"},
        DENIED,
    ),
    "KafkaClientUnknownSoftware": (
        "kafka-clients-info",
        {"severity": "info", "broker": "1", "listener": "PLAINTEXT"},
        LEGACY,
    ),
    "KafkaClientDeprecatedRequests": (
        "kafka-clients-tickets",
        {"severity": "warning", "request": "Produce", "version": "2", "client_software_name": "unknown"},
        LEGACY,
    ),
}


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return str(response.read().decode())


def webhooks(receiver: AlertReceiver, alertname: str, status: str | None = None) -> list[Notification]:
    return [
        n
        for n in receiver.notifications("webhook")
        if n.group_labels.get("alertname") == alertname and (status is None or n.status == status)
    ]


def slack_messages(receiver: AlertReceiver, alertname: str) -> list[Notification]:
    return [n for n in receiver.notifications("slack") if f"] {alertname} on Kafka cluster {CLUSTER}" in n.slack_title]


def exporter_ready(url: str) -> bool:
    """The exporter serves the four violations and who runs them: Prometheus' first scrape sees all of them."""
    samples = [
        (sample.name, sample.labels)
        for family in text_string_to_metric_families(get(f"{url}/metrics"))
        for sample in family.samples
    ]
    reasons = {labels.get("reason") for name, labels in samples if name == "kafka_client_policy_violation_connections"}
    blocking = {labels["request"] for name, labels in samples if name == "kafka_client_upgrade_blocking_requests_total"}
    named = {labels["client_id"] for name, labels in samples if name == "kafka_client_identity_info"}
    return (
        reasons >= {"below_minimum", "denied_version", "unknown_software"}
        and "Produce" in blocking
        and named >= {identity.client_id for identity in (BELOW_MINIMUM, DENIED, LEGACY)}
    )


@contextlib.contextmanager
def old_clients(bootstrap: str) -> Iterator[list[RealClient]]:
    clients = [
        start_client(
            ClientKind.KCAT,
            bootstrap,
            software_name=identity.software[0],
            software_version=identity.software[1],
            client_id=identity.client_id,
        )
        for identity in (BELOW_MINIMUM, DENIED)
    ]
    with contextlib.ExitStack() as stack:
        for client in clients:
            stack.enter_context(client)
        for client in clients:
            client.wait_ready()
        yield clients


def test_the_alerts_reach_the_receiver_grouped_named_inhibited_and_resolved(tmp_path: Path) -> None:
    inventory = tmp_path / "inventory"
    # Read as fresh (KafkaClientInventoryStale stays quiet): the newest log line is now.
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.000")
    publish(
        inventory,
        "r1",
        [identity.row() for identity in (BELOW_MINIMUM, DENIED, LEGACY)],
        log_time_range={"first": now, "last": now},
    )
    rules = write_rules(tmp_path / "rules.yaml", THRESHOLDS)
    started = time.monotonic()
    with (
        DoubleCluster([BrokerSpec(id=1, release="3.9.0")]) as double,
        AlertReceiver() as receiver,
        contextlib.ExitStack() as running,
    ):
        config = write_config(
            tmp_path / "exporter.yaml",
            CLUSTER,
            {1: double.broker(1).jmx_url},
            double.bootstrap(),
            inventory=inventory,
            policy_file=POLICY,
            interval_seconds=1,
            jmx_timeout_seconds=1,
        )
        port = free_port()
        exporter_url = f"http://127.0.0.1:{port}"
        clients = running.enter_context(old_clients(double.bootstrap()))
        running.enter_context(LegacyClient(double.broker(1).listener_port("PLAINTEXT"), LEGACY_CLIENT_ID))
        exporter = running.enter_context(contextlib.ExitStack())
        exporter.enter_context(running_exporter(config, port))
        eventually(
            lambda: exporter_ready(exporter_url), 60, "the exporter serving the four violations and their clients"
        )
        alertmanager = running.enter_context(
            running_alertmanager(
                tmp_path / "alertmanager", with_timings(local_receivers(example_config(), receiver.url), **TIMINGS)
            )
        )
        running.enter_context(
            running_prometheus(tmp_path / "prometheus", port, rules, alertmanager=alertmanager.removeprefix("http://"))
        )

        # 1. One notification per cluster and alert, on the receiver of its severity.
        receiver.wait_for(
            lambda _: all(webhooks(receiver, name) and slack_messages(receiver, name) for name in CLIENT_ALERTS),
            90,
            "a notification of each client alert on the webhook and on Slack",
        )
        for name, (receiver_name, labels, identity) in EXPECTED.items():
            [hook] = webhooks(receiver, name)
            assert (hook.receiver, hook.status, hook.group_labels) == (
                receiver_name,
                "firing",
                {"alertname": name, "kafka_cluster": CLUSTER},
            )
            [alert] = [a for a in hook.body["alerts"] if a["labels"].get("request", "Produce") == "Produce"]
            assert alert["labels"].items() >= {**labels, "kafka_cluster": CLUSTER}.items(), name
            assert identity.named in alert["annotations"]["description"], name
            assert alert["annotations"]["runbook_url"] == RUNBOOK + name.lower()
            [slack] = slack_messages(receiver, name)
            assert slack.receiver == receiver_name
            assert slack.slack_title.startswith("[FIRING:")
            assert slack.body["attachments"][0]["title_link"] == RUNBOOK + name.lower()
            assert identity.named in slack.slack_text and f"Runbook: {RUNBOOK}{name.lower()}" in slack.slack_text
        assert not receiver.notifications("pagerduty"), "nothing here is critical"

        # 2. The exporter stops: its own alert arrives, and the client alerts are inhibited.
        exporter.close()
        [down] = receiver.wait_for(
            lambda _: webhooks(receiver, "KafkaClientExporterDown", "firing"), 30, "KafkaClientExporterDown"
        )
        assert down.group_labels == {"alertname": "KafkaClientExporterDown", "kafka_cluster": CLUSTER}
        assert down.receiver == "kafka-clients-tickets"

        def client_alert_states() -> dict[str, tuple[str, bool]]:
            """Alertmanager's state of each client alert, and whether an alert inhibits it."""
            return {
                alert["labels"]["alertname"]: (alert["status"]["state"], bool(alert["status"]["inhibitedBy"]))
                for group in alert_groups(alertmanager)
                for alert in group["alerts"]
                if alert["labels"]["alertname"] in CLIENT_ALERTS
            }

        eventually(
            lambda: client_alert_states() == dict.fromkeys(CLIENT_ALERTS, ("suppressed", True)),
            10,
            "every client alert inhibited in Alertmanager",
        )

        # 3. The exporter is back: the outage's resolution arrives, the client alerts go on, notified once only.
        exporter.enter_context(running_exporter(config, port))
        receiver.wait_for(
            lambda _: webhooks(receiver, "KafkaClientExporterDown", "resolved"),
            60,
            "KafkaClientExporterDown resolved",
        )
        eventually(
            lambda: client_alert_states() == dict.fromkeys(CLIENT_ALERTS, ("active", False)),
            30,
            "the client alerts active again in Alertmanager",
        )
        for client in clients:
            client.close()
        receiver.wait_for(
            lambda _: all(
                webhooks(receiver, name, "resolved")
                and [n for n in slack_messages(receiver, name) if n.status == "resolved"]
                for name in ("KafkaClientBelowMinimumVersion", "KafkaClientDeniedVersion")
            ),
            60,
            "the resolutions of the old librdkafka clients, once they left (and keep_firing_for ran out)",
        )
        for name in ("KafkaClientUnknownSoftware", "KafkaClientDeprecatedRequests"):
            assert not webhooks(receiver, name, "resolved"), f"{name} resolved although its client never left"
        for name in CLIENT_ALERTS:
            sent = [(n.status, round(n.received_at - started, 1)) for n in receiver.notifications("webhook")]
            assert len(webhooks(receiver, name, "firing")) == 1, f"{name} notified more than once: {sent}"
        for name in ("KafkaClientBelowMinimumVersion", "KafkaClientDeniedVersion"):
            [resolved] = [n for n in slack_messages(receiver, name) if n.status == "resolved"]
            assert resolved.slack_title.startswith("[RESOLVED]") and "Resolved: " in resolved.slack_text
        print(f"alert path: {time.monotonic() - started:.1f} s, {len(receiver.notifications())} messages")
