"""The ``prometheus`` source against Prometheus' jmx_exporter javaagent (1.0.1) inside a real 3.9.2 broker, with the
two published rule files its presets claim to follow (issue 31, part 3): Strimzi's kafka-metrics.yaml and Confluent's
jmx-monitoring-stacks kafka_broker.yml (copies in jmx_exporter_rules/, each naming its commit). A client with a
chosen identity, and a legacy one whose deprecated requests the 3.9 broker meters, must read the same through the
agent as through JMX.

One broker of the module's own: the agent reloads its rules file when the file changes, so the second rule set is
written over the first instead of starting another JVM. 3.9.2, because only 3.7-3.9 brokers meter deprecated
requests (KIP-896).
"""

from __future__ import annotations

import shutil
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka.protocol.admin import DescribeConfigsRequest
from kafka.protocol.metadata import ApiVersionsRequest
from prometheus_client.parser import text_string_to_metric_families

from harness.clients import ClientKind, RealClient, start_client
from harness.raw_client import RawConnection
from real_kafka import JmxAuth, KafkaNode, NodeOptions
from tests.real_kafka.conftest import RealBrokers
from tests.real_kafka.own_brokers import CollectOnce, collect_once, own_node
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.real_kafka, pytest.mark.slow]

RELEASE = "3.9.2"
NODE_ID = 392
RULES = Path(__file__).resolve().parent / "jmx_exporter_rules"
#: preset -> (rule file, the client gauge's sample name and its software-name label as the rules serve them)
PRESETS = {
    "strimzi": (
        RULES / "strimzi-kafka-metrics.yaml",
        "kafka_server_socket_server_metrics_connections_software",
        "clientSoftwareName",
    ),
    "confluent": (
        RULES / "confluent-kafka_broker.yml",
        "kafka_server_socketservermetrics_connections",
        "client_software_name",
    ),
}
JMX_USER, JMX_PASSWORD = "kce-agent-monitor", "kce-Agent-9"
PROBE_NAME, PROBE_VERSION = "agent-probe", "2.7.1-rc3"
LEGACY_NAME, LEGACY_VERSION = "legacy-raw", "0.10.2"
#: DescribeConfigs v0 is deprecated on 3.9.2 (its spec's deprecatedVersions; 4.0 removed it). Metadata v0 is not:
#: 3.9.2's specs already follow 4.0, which kept Metadata v0-v3.
DEPRECATED_REQUESTS = 3


@dataclass(frozen=True)
class Agent:
    node: KafkaNode
    rules: Path  # the file the javaagent was started with; rewritten to switch rule sets
    directory: Path


@pytest.fixture(scope="module")
def agent(real_brokers: RealBrokers, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Agent]:
    # real_brokers: the shared brokers start first, so that this module's is the third JVM, not one of the first.
    directory = tmp_path_factory.mktemp("real-kafka-agent")
    rules = directory / "rules.yaml"
    shutil.copyfile(PRESETS["strimzi"][0], rules)
    options = NodeOptions(jmx_auth=JmxAuth(JMX_USER, JMX_PASSWORD), jmx_exporter_rules=rules)
    with own_node(directory / "broker", RELEASE, NODE_ID, options) as node:
        yield Agent(node, rules, directory)


@pytest.fixture(scope="module")
def clients(agent: Agent) -> Iterator[RealClient]:
    """kcat with a chosen identity, and a raw connection that announces itself and sends DescribeConfigs v0, both
    open."""
    kcat = start_client(
        ClientKind.KCAT, agent.node.bootstrap(), software_name=PROBE_NAME, software_version=PROBE_VERSION
    )
    assert agent.node.ports.plaintext is not None
    with kcat, RawConnection(agent.node.ports.plaintext) as legacy:
        kcat.wait_ready()
        hello = ApiVersionsRequest(version=3, client_software_name=LEGACY_NAME, client_software_version=LEGACY_VERSION)
        legacy.request(hello, correlation_id=1, client_id=LEGACY_NAME)
        for correlation_id in range(2, 2 + DEPRECATED_REQUESTS):
            request = DescribeConfigsRequest(version=0, resources=[])
            legacy.request(request, correlation_id=correlation_id, client_id=LEGACY_NAME)
        yield kcat


def served(agent: Agent) -> str:
    # The agent matches every MBean of the broker against the preset's rules on each scrape: seconds of CPU, and more
    # than ten seconds of wall time on two cores shared with three other workers' brokers and JVMs.
    with urllib.request.urlopen(agent.node.metrics_url, timeout=60) as response:
        return str(response.read().decode())


def use_rules(agent: Agent, preset: str) -> float:
    """Make the agent serve ``preset``'s rules, and wait until it does; how long its scrape that did took (s)."""
    source, sample, _ = PRESETS[preset]
    if agent.rules.read_bytes() != source.read_bytes():
        shutil.copyfile(source, agent.rules)
    took = 0.0

    # The agent compares the file's modification time with its last load at every scrape; a scrape of a loaded
    # machine's broker may time out (the agent reads every MBean): not yet, asked again.
    def serving() -> bool:
        nonlocal took
        began = time.monotonic()
        try:
            found = f"\n{sample}{{" in served(agent)
        except OSError:
            return False
        took = time.monotonic() - began
        return found

    wait_for(serving, timeout=90, what=f"{sample} served by the agent", interval=0.5)
    return took


@pytest.fixture(scope="module")
def runs(agent: Agent, clients: RealClient) -> Iterator[dict[str, CollectOnce]]:
    """One cycle per preset, made by the first test that asks for it: an exporter start costs seconds of CPU."""
    yield {}


def collected(agent: Agent, preset: str, runs: dict[str, CollectOnce]) -> CollectOnce:
    if preset not in runs:
        scrape_seconds = use_rules(agent, preset)
        runs[preset] = _collect(agent, preset, scrape_seconds)
    return runs[preset]


def _collect(agent: Agent, preset: str, scrape_seconds: float) -> CollectOnce:
    """One cycle reading the broker twice: through the agent with ``preset``, and over JMX. ``scrape_seconds``: how
    long the agent's last scrape took."""
    node = agent.node
    clusters = [
        {
            "name": "via-agent",
            "prometheus": {"preset": preset},
            "brokers": [{"id": NODE_ID, "metrics_url": node.metrics_url}],
        },
        {
            "name": "via-jmx",
            "brokers": [{"id": NODE_ID, "jmx_url": node.jmx_url}],
            "jmx": {"username": JMX_USER, "password": JMX_PASSWORD},
        },
    ]
    # The agent renders every MBean of the broker through the rules at each scrape: seconds of CPU, many more on a
    # busy machine; the deadline is the exporter's per-broker one, which a slow scrape must not lose to. 25 s was
    # once too short (a CI run on a loaded machine, Confluent's rules): four times the scrape just seen, at least.
    deadline = max(25.0, 4 * scrape_seconds)
    return collect_once(
        agent.directory, clusters, timeout=deadline + 65, interval_seconds=deadline + 5, jmx_timeout_seconds=deadline
    )


def by_cluster(run: CollectOnce, sample: str, cluster: str, **match: str) -> dict[tuple[tuple[str, str], ...], float]:
    """``sample``'s series of ``cluster`` matching ``match``, by their labels less kafka_cluster."""
    out = {}
    for (name, labels), value in run.series.items():
        found = dict(labels)
        if name == sample and found.get("kafka_cluster") == cluster and match.items() <= found.items():
            out[tuple((key, value) for key, value in labels if key != "kafka_cluster")] = value
    return out


@pytest.mark.parametrize("preset", list(PRESETS))
def test_a_client_reads_the_same_through_the_agent_as_through_jmx(
    agent: Agent, runs: dict[str, CollectOnce], preset: str
) -> None:
    run = collected(agent, preset, runs)
    _, sample, name_label = PRESETS[preset]
    exposed = [
        s.labels
        for family in text_string_to_metric_families(served(agent))
        for s in family.samples
        if s.name == sample and s.labels.get(name_label) == PROBE_NAME
    ]
    assert exposed, f"the agent serves no {sample} for {PROBE_NAME}"

    broker = str(NODE_ID)
    assert run.value("kafka_client_exporter_up", broker=broker, kafka_cluster="via-agent", source="prometheus") == 1
    assert run.value("kafka_client_exporter_up", broker=broker, kafka_cluster="via-jmx", source="jmx") == 1
    through_agent = by_cluster(run, "kafka_client_connections", "via-agent", client_software_name=PROBE_NAME)
    assert through_agent == by_cluster(run, "kafka_client_connections", "via-jmx", client_software_name=PROBE_NAME)
    [(labels, connections)] = through_agent.items()
    assert {key: dict(labels)[key] for key in ("broker", "listener", "client_software_version")} == {
        "broker": str(NODE_ID),
        "listener": "PLAINTEXT",
        "client_software_version": PROBE_VERSION,
    }
    assert connections >= 1
    # Every client the broker has, the broker's own and the exporter's included, reads the same both ways.
    assert by_cluster(run, "kafka_client_connections", "via-agent") == by_cluster(
        run, "kafka_client_connections", "via-jmx"
    )


@pytest.mark.parametrize("preset", list(PRESETS))
def test_deprecated_requests_read_the_same_through_the_agent_as_through_jmx(
    agent: Agent, runs: dict[str, CollectOnce], preset: str
) -> None:
    run = collected(agent, preset, runs)
    sample = "kafka_client_deprecated_requests_total"
    through_agent = by_cluster(run, sample, "via-agent", client_software_name=LEGACY_NAME)
    assert through_agent == by_cluster(run, sample, "via-jmx", client_software_name=LEGACY_NAME), run.stdout
    [(labels, count)] = through_agent.items()
    assert {key: dict(labels)[key] for key in ("request", "version", "client_software_version")} == {
        "request": "DescribeConfigs",
        "version": "0",
        "client_software_version": LEGACY_VERSION,
    }
    assert count == DEPRECATED_REQUESTS
