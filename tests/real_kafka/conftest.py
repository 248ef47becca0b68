"""Real Apache Kafka brokers, one per fetched release (3.9.2 and 4.4.0, each a one-node KRaft cluster), started once
per test session (per xdist worker) and shared by the tests, which only read them; and the exporter (``serve``)
watching both, with a one-second cycle.

Each broker: PLAINTEXT, SASL_SSL (SCRAM-SHA-512, a CA of the session's own) and CONTROLLER listeners on 127.0.0.1,
remote JMX with a password, and a request log that log4j rolls at ``REQUEST_LOG_MAX_BYTES`` (read every file of it
with ``RealBrokers.request_log``). Tests use client software names of their own, so they never see each other's
clients; clients that cannot choose theirs (``unknown``, ``apache-kafka-java``) are closed before a test ends.
"""

from __future__ import annotations

import contextlib
import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from harness.exporter_process import cluster_entry, running_exporter, write_config
from harness.ports import free_port
from real_kafka import KRAFT_RELEASES, BrokerTls, JmxAuth, KafkaCluster, KafkaNode, NodeOptions, start_clusters
from tests.support.tls_material import BrokerTlsMaterial
from tests.support.waiting import wait_for

JMX_USER = "monitor"
JMX_PASSWORD = "jmx-Secret-42"
SCRAM_USER = "alice"
SCRAM_PASSWORD = "alice-Secret-7"
#: Node ids that say which broker is which in the exporter's `broker` label.
NODE_IDS = {"3.9.2": 39, "4.4.0": 44}
#: The exporter's collection interval: short, so that "gone within one cycle" is quick to see.
INTERVAL_SECONDS = 1.0
#: Where log4j rolls each broker's kafka-request.log, and how many rolled files it keeps. Large enough that the
#: session's ordinary traffic (heartbeats, a few dozen clients) seldom rolls it under a test that reads the active
#: file alone, small enough that test_real_inventory rolls it on purpose with a second of filler requests.
REQUEST_LOG_MAX_BYTES = 1024 * 1024
REQUEST_LOG_BACKUPS = 10
_REQUEST_LINE = re.compile(r"Completed request:(\{.*\}) \(kafka\.request\.logger\)$")

#: One exposition sample: (name, sorted labels) -> value.
Series = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@dataclass(frozen=True)
class RealBrokers:
    clusters: dict[str, KafkaCluster]
    tls: BrokerTlsMaterial

    def node(self, release: str) -> KafkaNode:
        return self.clusters[release].node(NODE_IDS[release])

    @staticmethod
    def cluster_name(release: str) -> str:
        return f"kafka-{release}"

    def request_log_files(self, release: str) -> list[Path]:
        """The broker's request log files, oldest first: log4j's rolled ``kafka-request.log.N`` (the highest N is
        the oldest, in both log4j 1 and the log4j2 configuration of real_kafka.log4j), then the active file."""
        active = self.node(release).logs.request_log
        rolled = [path for path in active.parent.glob(f"{active.name}.*") if path.suffix[1:].isdigit()]
        return [*sorted(rolled, key=lambda path: -int(path.suffix[1:])), active]

    def request_log(self, release: str) -> list[dict[str, Any]]:
        """Every request the broker logged, as its JSON body (``requestHeader``, ``request``, ``connection``,
        ``principal``, ``listener``, ``clientInformation`` ...), oldest first, across the rolled files. A line
        being written (no end yet) is left out."""
        entries = []
        for path in self.request_log_files(release):
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                match = _REQUEST_LINE.search(line)
                if match is not None:
                    entries.append(json.loads(match.group(1)))
        return entries

    def sasl_ssl_properties(self) -> dict[str, str]:
        """librdkafka's settings (kcat, confluent-kafka) for the SASL_SSL listener."""
        return {
            "security.protocol": "SASL_SSL",
            "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": SCRAM_USER,
            "sasl.password": SCRAM_PASSWORD,
            "ssl.ca.location": str(self.tls.ca_file),
        }

    def java_sasl_ssl_properties(self) -> dict[str, str]:
        """Kafka's Java client's settings (JavaClient.java, LegacyJavaClient.java on 2.8) for the SASL_SSL
        listener: the session's CA as a PEM trust store (2.7+)."""
        return {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required "
                f'username="{SCRAM_USER}" password="{SCRAM_PASSWORD}";'
            ),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.tls.ca_file),
        }


# Per package, not session: the real_kafka modules run one after another on one worker (tests/conftest.py), which
# then goes on to other modules for most of the suite; two idle brokers kept to its end cost a minute of CPU.
@pytest.fixture(scope="package")
def real_brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealBrokers]:
    directory = tmp_path_factory.mktemp("real-kafka")
    (directory / "tls").mkdir()
    tls = BrokerTlsMaterial(directory / "tls")
    clusters = {
        release: KafkaCluster(
            directory / release,
            release,
            first_node_id=NODE_IDS[release],
            options=NodeOptions(
                tls=BrokerTls(tls.broker.cert, tls.broker.key),
                scram_users={SCRAM_USER: SCRAM_PASSWORD},
                jmx_auth=JmxAuth(JMX_USER, JMX_PASSWORD),
                request_log_max_bytes=REQUEST_LOG_MAX_BYTES,
                request_log_backups=REQUEST_LOG_BACKUPS,
                # The identities + INFO log beside the full one (test_real_inventory compares them).
                request_log_copy=True,
            ),
        )
        for release in KRAFT_RELEASES
    }
    start_clusters(*clusters.values())
    try:
        yield RealBrokers(clusters, tls)
    finally:
        for cluster in clusters.values():
            cluster.stop()


def exporter_config(
    path: Path,
    brokers: RealBrokers,
    jmx_password: str = JMX_PASSWORD,
    interval_seconds: float = INTERVAL_SECONDS,
    jmx_timeout_seconds: float | None = None,
) -> Path:
    """Both brokers, each as a cluster of its own, with the JMX user and ``jmx_password``. The interval also bounds
    each source's deadline (the default of both: the interval, at most 10 s)."""
    jmx = {"username": JMX_USER, "password": jmx_password}

    def cluster_of(release: str) -> tuple[str, dict[int, str], str]:
        node = brokers.node(release)
        return brokers.cluster_name(release), {node.node_id: node.jmx_url}, brokers.clusters[release].bootstrap()

    first, *others = KRAFT_RELEASES
    return write_config(
        path,
        *cluster_of(first),
        jmx=jmx,
        more_clusters=[cluster_entry(*cluster_of(release), jmx=jmx) for release in others],
        interval_seconds=interval_seconds,
        jmx_timeout_seconds=jmx_timeout_seconds,  # None: the default, the interval at most 10 s
    )


@pytest.fixture(scope="module")
def exporter(real_brokers: RealBrokers, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of `kafka-client-exporter serve` watching both brokers, once it has completed a cycle. Per
    module: its one-second cycle costs CPU that the rest of a worker's session should not pay."""
    config = exporter_config(tmp_path_factory.mktemp("real-kafka-exporter") / "exporter.yaml", real_brokers)
    with serving(config) as base:
        yield base


@contextlib.contextmanager
def serving(config: Path) -> Iterator[str]:
    """`kafka-client-exporter serve` with ``config`` on a free loopback port: its base URL once /readyz answers."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with running_exporter(config, port) as daemon:

        def ready() -> bool:
            if daemon.poll() is not None:
                raise AssertionError(f"the exporter exited with {daemon.returncode} before it was ready")
            return _ready(base)

        wait_for(ready, timeout=30, what=f"{base}/readyz answering 200")
        yield base


def _ready(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/readyz", timeout=2) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.HTTPError):
        return False


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return str(response.read().decode())


def scrape(base: str) -> Series:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(get(f"{base}/metrics"))
        for sample in family.samples
    }


def samples(series: Series, name: str, **match: str) -> dict[tuple[tuple[str, str], ...], float]:
    """The samples of ``name`` whose labels include ``match``, by their whole label set."""
    return {
        labels: value
        for (sample, labels), value in series.items()
        if sample == name and all(dict(labels).get(key) == want for key, want in match.items())
    }


def api_clients(base: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(get(f"{base}/api/clients"))
    return document
