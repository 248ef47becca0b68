"""What the modules of tests/real_kafka that need more than the shared brokers (conftest.py) share: a one-node
cluster of their own with the options the shared ones lack, Kafka's Admin API through kafka-python, and the
exporter's ``collect-once`` over a configuration of any shape.

A module's own broker is module-scoped and stopped at the module's end: with the two shared brokers that makes three
Kafka JVMs at most, and modules run one after the other on one worker.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kafka.admin import KafkaAdminClient
from prometheus_client.parser import text_string_to_metric_families

from harness.exporter_process import checkout_env
from real_kafka import KafkaCluster, KafkaNode, NodeOptions
from tests.real_kafka.conftest import Series

__all__ = [
    "AUTHORIZER",
    "CollectOnce",
    "admin_client",
    "cluster_with_jmx",
    "collect_once",
    "own_node",
    "parse_series",
]

#: KRaft's own authorizer, and the principal every PLAINTEXT connection gets (the readiness probe, the broker's
#: own connections to itself and to its controller, which share the PLAINTEXT and CONTROLLER listeners) as a super
#: user, so that only the SASL_SSL users are subject to ACLs.
AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
}


@contextlib.contextmanager
def own_node(directory: Path, release: str, node_id: int, options: NodeOptions) -> Iterator[KafkaNode]:
    """One combined KRaft node of ``release`` with ``options``, started, and stopped by its pid on exit."""
    cluster = KafkaCluster(directory, release, first_node_id=node_id, options=options)
    with cluster:
        yield cluster.node(node_id)


@contextlib.contextmanager
def admin_client(bootstrap: str, **config: Any) -> Iterator[KafkaAdminClient]:
    """kafka-python's Admin client; over PLAINTEXT it is ANONYMOUS, a super user where AUTHORIZER is set."""
    admin = KafkaAdminClient(
        bootstrap_servers=bootstrap, client_id="real-kafka-tests-admin", request_timeout_ms=15000, **config
    )
    try:
        yield admin
    finally:
        admin.close()


def cluster_with_jmx(name: str, node: KafkaNode, jmx: Mapping[str, object], **entry: object) -> dict[str, object]:
    """An exporter config cluster reading ``node``'s JMX (``jmx``: the cluster's jmx section), plus ``entry``."""
    return {"name": name, "brokers": [{"id": node.node_id, "jmx_url": node.jmx_url}], "jmx": dict(jmx), **entry}


@dataclass(frozen=True)
class CollectOnce:
    """One ``collect-once`` run: its exit code, the exposition it printed and its log lines."""

    returncode: int
    series: Series
    stdout: str
    stderr: str

    def value(self, sample: str, /, **labels: str) -> float | None:
        """The value of the one sample named ``sample`` with exactly ``labels``, None when there is none."""
        return self.series.get((sample, tuple(sorted(labels.items()))))


def parse_series(text: str) -> Series:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def collect_once(
    directory: Path, clusters: Sequence[Mapping[str, object]], timeout: float = 90.0, **collection: object
) -> CollectOnce:
    """Write a configuration of ``clusters`` (and ``collection`` settings) under ``directory`` and run one cycle of
    this checkout's exporter over it."""
    config = directory / "exporter.yaml"
    config.write_text(yaml.safe_dump({"collection": dict(collection), "clusters": [dict(c) for c in clusters]}))
    run = subprocess.run(
        [sys.executable, "-m", "exporter", "collect-once", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=checkout_env(),
        check=False,
    )
    return CollectOnce(run.returncode, parse_series(run.stdout), run.stdout, run.stderr)
