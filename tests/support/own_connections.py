"""What the real-cluster stories of the brokers' own connections share (tests/e2e/test_own_connections_real.py,
test_migration.py): the exporter's /metrics for one cluster, a wait that says what it saw on the way, and the
0.10.1.1 producer, a client that never names itself."""

from __future__ import annotations

import contextlib
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from harness.clients import (
    JAVA_CLIENT_OPTIONS,
    LEGACY_JAVA_CLIENT_SOURCE,
    LEGACY_JAVA_RELEASES,
    LEGACY_PRODUCE_INTERVAL,
    UNKNOWN,
    ClientKind,
    RealClient,
    start_client,
)
from harness.java_program import java_program_args
from harness.kafka_jars import legacy_clients_classpath

UNKNOWN_PAIR = (UNKNOWN.software_name, UNKNOWN.software_version)
#: What a 4.0+ broker's server.log says when it refuses a 0.10 producer's Produce v2, and what the producer then says
#: (a producer that had sent before, of its next send; a new one, of its first, as its bootstrap failing).
REFUSED_PRODUCE = "UnsupportedVersionException: Received request for api with key 0 (Produce) and unsupported version 2"
SERVER_DISCONNECTED = "org.apache.kafka.common.errors.NetworkException: The server disconnected"
CLIENT_REFUSED = f"produce failed: {SERVER_DISCONNECTED}"


def legacy_producer(bootstrap: str, topic: str) -> RealClient:
    """Kafka's Java producer 0.10.1.1 (LegacyJavaClient.java) producing to ``topic``: start_client's command with the
    topic chosen, a bootstrap deadline long enough that it never gives up, and one Metadata request a second at
    most while the topic is missing."""
    release = LEGACY_JAVA_RELEASES[ClientKind.JAVA_0_10_1]
    program = java_program_args(LEGACY_JAVA_CLIENT_SOURCE, legacy_clients_classpath(release))
    argv = ["java", *JAVA_CLIENT_OPTIONS, *program, bootstrap, "--topic", topic, "--timeout", "3600"]
    argv += ["--interval", str(LEGACY_PRODUCE_INTERVAL), "--client-id", "legacy-0.10.1"]
    argv += ["--property", "retry.backoff.ms=1000"]
    return RealClient(ClientKind.JAVA_0_10_1, argv, UNKNOWN)


@dataclass(frozen=True)
class Served:
    """One /metrics page of the exporter, for one cluster."""

    samples: list[tuple[str, dict[str, str], float]]
    cycle_started: float = 0.0
    #: How long the cycle behind this page took: on a loaded machine, longer than the interval.
    cycle_seconds: float = 0.0

    def of(self, name: str, **match: str) -> list[tuple[dict[str, str], float]]:
        return [
            (labels, value)
            for sample, labels, value in self.samples
            if sample == name and all(labels.get(key) == want for key, want in match.items())
        ]

    def raw(self) -> Counter[tuple[str, str, str, str]]:
        """(broker, listener, name, version) -> kafka_client_connections."""
        return self.count(
            "kafka_client_connections", "broker", "listener", "client_software_name", "client_software_version"
        )

    def inter_broker(self) -> Counter[tuple[str, str, str, str, str]]:
        """(broker or "", listener, name, version, channel) -> kafka_client_inter_broker_connections."""
        return self.count(
            "kafka_client_inter_broker_connections",
            "broker",
            "listener",
            "client_software_name",
            "client_software_version",
            "channel",
        )

    def outbound(self) -> Counter[tuple[str, str, str]]:
        """(holder, channel, destination or "") -> kafka_broker_outbound_connections."""
        return self.count("kafka_broker_outbound_connections", "broker", "channel", "destination_broker")

    def violations(self, reason: str) -> Counter[tuple[str, str, str, str]]:
        """(broker or "", listener, name, version) -> kafka_client_policy_violation_connections{reason}."""
        return self.count(
            "kafka_client_policy_violation_connections",
            "broker",
            "listener",
            "client_software_name",
            "client_software_version",
            reason=reason,
        )

    def unverified(self) -> Counter[tuple[str, str, str]]:
        """(listener, name, version) -> kafka_client_unverified_connections."""
        return self.count(
            "kafka_client_unverified_connections", "listener", "client_software_name", "client_software_version"
        )

    def jmx_up(self) -> dict[str, float]:
        """broker -> kafka_client_exporter_up{source="jmx"}."""
        return {labels["broker"]: value for labels, value in self.of("kafka_client_exporter_up", source="jmx")}

    def channels_read(self) -> dict[str, float]:
        return {labels["broker"]: value for labels, value in self.of("kafka_client_exporter_broker_channels_read")}

    def count(self, name: str, *keys: str, **match: str) -> Counter[Any]:
        counts: Counter[Any] = Counter()
        for labels, value in self.of(name, **match):
            counts[tuple(labels[key] for key in keys)] += int(value)
        return +counts


def fetch(url: str, timeout: float = 10.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return str(response.read().decode())


def prometheus_query(prometheus: str, promql: str) -> list[dict[str, Any]]:
    """An instant query's result from the Prometheus at base URL ``prometheus``."""
    text = fetch(f"{prometheus}/api/v1/query?{urllib.parse.urlencode({'query': promql})}")
    result: list[dict[str, Any]] = json.loads(text)["data"]["result"]
    return result


def prometheus_alerts(prometheus: str) -> list[dict[str, Any]]:
    """The alerts active (pending or firing) in the Prometheus at base URL ``prometheus``."""
    alerts: list[dict[str, Any]] = json.loads(fetch(f"{prometheus}/api/v1/alerts"))["data"]["alerts"]
    return alerts


def scrape(base: str, cluster: str) -> Served:
    samples = [
        (sample.name, dict(sample.labels), sample.value)
        for family in text_string_to_metric_families(fetch(f"{base}/metrics"))
        for sample in family.samples
    ]
    single = {name: value for name, labels, value in samples if not labels}
    if "kafka_client_exporter_cycle_duration_seconds" not in single:
        # An OSError, as a server not listening yet is: the waits ask again (before, a chapter run alone failed here).
        raise ConnectionError(f"{base}: the exporter has published no cycle yet")
    duration = single["kafka_client_exporter_cycle_duration_seconds"]
    started = single["kafka_client_exporter_snapshot_timestamp_seconds"] - duration
    mine = [(name, labels, value) for name, labels, value in samples if labels.get("kafka_cluster") == cluster]
    return Served(mine, started, duration)


def until(check: Callable[[], list[str]], timeout: float, what: str, poll: float = 0.25) -> None:
    """Until ``check()`` finds no problem; in the failure, the last problems it found and, before them, the other
    problems seen on the way (a wait that ends on a bad cycle would hide why the earlier ones did not match)."""
    deadline = time.monotonic() + timeout
    problems: list[str] = ["not checked yet"]
    seen: dict[str, int] = {}
    while True:
        try:
            problems = check()
        except (OSError, urllib.error.HTTPError, KeyError) as exc:
            problems = [repr(exc)]
        if not problems:
            return
        for problem in problems:
            seen[problem] = seen.get(problem, 0) + 1
        if time.monotonic() > deadline:
            earlier = [f"{n}x {problem}" for problem, n in seen.items() if problem not in problems]
            pytest.fail(
                f"{what}: not within {timeout:.0f} s:\n  "
                + "\n  ".join(problems)[:6000]
                + ("\nseen on the way:\n  " + "\n  ".join(earlier)[:6000] if earlier else "")
            )
        time.sleep(poll)


#: Clients that name themselves, as the stories connect them: kcat with a chosen (software name, version) and client
#: id.
KCAT_CLIENTS = (("orders-app", "2.3.0", "orders"), ("billing", "1.4.2", "billing"))


def start_kcat_clients(bootstrap: str, running: contextlib.ExitStack) -> dict[str, RealClient]:
    """The KCAT_CLIENTS, started against ``bootstrap`` and closed when ``running`` ends; client id -> client (each to
    be waited for with ``wait_ready``)."""
    clients = {}
    for name, version, client_id in KCAT_CLIENTS:
        client = start_client(
            ClientKind.KCAT, bootstrap, software_name=name, software_version=version, client_id=client_id
        )
        running.callback(client.close)
        clients[client_id] = client
    return clients
