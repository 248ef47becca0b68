"""The demo's scenario on Apache Kafka's own brokers (what `scripts/demo.sh` runs; ``--double`` runs the broker
double's, kafka_double/demo_scenario.py), shared with the test that checks every dashboard panel and the alerts
against it: one KRaft cluster in the middle of a rolling upgrade from 3.9.2 to 4.4.0, with every kind of client the
product judges.

- Nodes (all on 127.0.0.1): node 1, Kafka 3.9.2, controller and broker (the quorum's only voter); nodes 2 and 3,
  Kafka 4.4.0, brokers. Every node's storage is formatted by 3.9.2's tool, as when the cluster was created
  (metadata.version 3.9-IV0); nodes 2 and 3 then start under 4.4.0 over it, as a rolling upgrade restarts each
  node under the new release. The mix is legal because metadata.version stays 3.9-IV0 until the upgrade is
  finalized (``kafka-features.sh upgrade --release 4.4``). Remote JMX with a password on each node, the request log
  at DEBUG in its own file (each release's own log4j format), as real_kafka sets them up.
- Topic ``demo``, which every producer of kafka_double.clients writes to, with its one replica on node 1: the
  legacy client's Produce v2 goes to the one broker that still serves it.
- A client-metrics subscription made with the Admin API (IncrementalAlterConfigs on a CLIENT_METRICS resource, from
  kafka-python's admin client), as ``kafka-client-metrics.sh --alter`` makes one.
- Real clients: kcat announcing chosen identities, among them librdkafka 1.6.0 (below the shipped 1.8.2 floor) and
  2.0.2 (denied by the demo's policy), confluent-kafka, kafka-python, Kafka's Java clients 4.3.0 and 3.9.0, aiokafka
  and kafkajs (which a real broker records as ``unknown``).
- The legacy client: Kafka's own Java producer of 0.10.2.2 on node 1 (ApiVersions v0, so ``unknown``; Produce v2
  every two seconds, which 3.9 counts as deprecated and 4.0 no longer serves).
- The inventory job run once over the brokers' own request logs, Prometheus with the shipped rules, and one client
  (kafka-clients 2.8.2) that first connects once the job has run, so that its version is live but not in the
  inventory until the job's next run.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType

from demo.common import (
    CLUSTER,
    LEGACY_CLIENT_ID,
    POLICY,
    RULES,
    SUBSCRIPTION,
    FirstSeries,
    InventoryJob,
    LateClient,
    RunningDemo,
    installed,
    interruptible,
    wait_exporter_ready,
)
from kafka_double.clients import KCAT_TOPIC, ClientKind, ClientMix, ClientSpec, start_client
from kafka_double.exporter_process import running_exporter, write_config
from kafka_double.ports import free_ports
from kafka_double.prometheus_process import running_prometheus
from real_kafka.broker import ClusterLayout, KafkaNode, NodeOptions, StartTiming
from real_kafka.cluster import new_cluster_id
from real_kafka.config import NodePorts, NodeRoles
from real_kafka.jmx import JmxAuth

__all__ = ["LATE_CLIENT", "LEGACY_CLIENT", "NODES", "NodePlan", "UpgradingCluster", "running_real_demo"]

#: The release the cluster was created with: it formats every node's storage, so metadata.version is its own.
CREATED_WITH = "3.9.2"
METADATA_VERSION = "3.9-IV0"


@dataclass(frozen=True)
class NodePlan:
    node_id: int
    release: str
    #: A controller too (the quorum's only voter); every node is a broker.
    controller: bool


NODES = (NodePlan(1, "3.9.2", controller=True), NodePlan(2, "4.4.0", False), NodePlan(3, "4.4.0", False))
#: The node still on 3.9: the only one that serves the legacy client's Produce v2.
LEGACY_NODE = 1
#: kcat's topic is the Java clients' default one too (JavaClient.java, LegacyJavaClient.java).
TOPIC = KCAT_TOPIC
JMX_USER = "monitor"
CLIENTS: list[ClientSpec] = [
    (ClientKind.KCAT, "billing-service", "1.4.2", "billing-ledger"),
    (ClientKind.KCAT, "legacy-etl", "0.9.0-SNAPSHOT", "etl-nightly"),
    # What an old librdkafka sends (KIP-511 since librdkafka 1.4): below the shipped floor 1.8.2.
    (ClientKind.KCAT, "librdkafka", "1.6.0", "orders-ingest"),
    # Denied by demo_policy.yaml.
    (ClientKind.KCAT, "librdkafka", "2.0.2", "payments-audit"),
    (ClientKind.KCAT, "inventory-sync", "3.2.0", "inventory-sync"),
    ClientKind.CONFLUENT,
    ClientKind.KAFKA_PYTHON,
    ClientKind.AIOKAFKA,
    ClientKind.KAFKAJS,
    ClientKind.JAVA,
    ClientKind.JAVA_3_9,
]
LEGACY_CLIENT = ClientKind.JAVA_0_10_2
#: An application still on kafka-clients 2.8 (within the policy) deployed after the inventory job's run.
LATE_CLIENT = ClientKind.JAVA_2_8
LATE_CLIENT_ID = "nightly-reconciliation"


class UpgradingCluster:
    """The nodes of NODES, each under ``directory/node-<id>`` with free ports on 127.0.0.1; started in steps
    (``begin_format``, ``finish_format``, ``launch``, ``wait_ready``) so that every process is recorded before
    anything waits on it, and ``stop`` (by pid) stops whatever has started."""

    def __init__(self, directory: Path, options: NodeOptions) -> None:
        self.directory = directory
        roles = {plan.node_id: NodeRoles(broker=True, controller=plan.controller) for plan in NODES}
        ports = {}
        for plan in NODES:
            plaintext, controller, jmx, jmx_rmi = free_ports(4)
            ports[plan.node_id] = NodePorts(
                plaintext=plaintext,
                sasl_ssl=None,
                controller=controller if plan.controller else None,
                jmx=jmx,
                jmx_rmi=jmx_rmi,
            )
        voters = {node_id: port.controller for node_id, port in ports.items() if port.controller is not None}
        layout = ClusterLayout(new_cluster_id(), voters, brokers=len(NODES))
        self.layout = layout

        def node(plan: NodePlan, release: str) -> KafkaNode:
            path = directory / f"node-{plan.node_id}"
            return KafkaNode(path, release, plan.node_id, roles[plan.node_id], ports[plan.node_id], layout, options)

        # The same directory and configuration twice where the releases differ: formatted by CREATED_WITH, run
        # by the node's own release, as a rolling upgrade runs the new release over the old storage.
        self._formatters = [node(plan, CREATED_WITH) for plan in NODES]
        self.nodes = {
            plan.node_id: formatter if plan.release == CREATED_WITH else node(plan, plan.release)
            for plan, formatter in zip(NODES, self._formatters, strict=True)
        }
        self._formatting: list[subprocess.Popen[bytes]] = []
        self._started_formatting = 0.0
        self.format_seconds = 0.0
        self.timings: dict[int, StartTiming] = {}

    def node(self, node_id: int) -> KafkaNode:
        return self.nodes[node_id]

    def bootstrap(self) -> str:
        return ",".join(node.bootstrap() for node in self.nodes.values())

    def begin_format(self) -> None:
        """Start formatting every node's storage at once (a JVM each); ``finish_format`` waits."""
        self._started_formatting = time.monotonic()
        for formatter in self._formatters:
            self._formatting.append(formatter.begin_format())

    def finish_format(self) -> None:
        for formatter, process in zip(self._formatters, self._formatting, strict=True):
            formatter.finish_format(process)
        self.format_seconds = time.monotonic() - self._started_formatting

    def launch(self) -> None:
        for node in self.nodes.values():
            node.launch()

    def wait_ready(self, timeout: float = 120.0) -> dict[int, StartTiming]:
        # One after the other is as quick as in parallel: they were all launched at once.
        self.timings = {node_id: node.wait_ready(timeout) for node_id, node in self.nodes.items()}
        return self.timings

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM to the brokers, then to the controller once they are gone: a broker's controlled shutdown asks the
        controller, which must still be there. SIGKILL to any still running after ``timeout`` seconds."""
        for process in self._formatting:
            if process.poll() is None:
                process.kill()
                process.wait()
        brokers_only = [node for node in self.nodes.values() if not node.roles.controller]
        controllers = [node for node in self.nodes.values() if node.roles.controller]
        for group in (brokers_only, controllers):
            for node in group:
                node.terminate()
            deadline = time.monotonic() + timeout
            for node in group:
                node.wait_stopped(max(0.0, deadline - time.monotonic()))

    def describe(self) -> list[str]:
        """The summary's lines: which brokers are real, their releases, roles, addresses and pids."""
        lines = [
            f"demo: Apache Kafka's own brokers, one KRaft cluster (id {self.layout.cluster_id}) in the middle of a "
            f"rolling upgrade: storage formatted by {CREATED_WITH} (metadata.version {METADATA_VERSION}, kept until "
            f"the upgrade is finalized), {self.format_seconds:.1f} s",
        ]
        for node in self.nodes.values():
            roles = "controller and broker" if node.roles.controller else "broker"
            listeners = f"PLAINTEXT {node.bootstrap()}"
            if node.ports.controller is not None:
                listeners += f", CONTROLLER 127.0.0.1:{node.ports.controller}"
            timing = self.timings.get(node.node_id)
            ready = f", ready {timing.wall_seconds:.1f} s after launch" if timing else ""
            lines.append(
                f"demo:   broker {node.node_id}: Apache Kafka {node.release}, {roles}; {listeners}; JMX "
                f"{node.jmx_url} (user {JMX_USER}); pid {node.pid}{ready}; logs in {node.logs.directory}"
            )
        return lines


def create_topic_and_subscription(bootstrap: str) -> None:
    """TOPIC on LEGACY_NODE only, and SUBSCRIPTION, through the Admin API (CreateTopics, IncrementalAlterConfigs)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="demo-setup")
    try:
        admin.create_topics({TOPIC: {"assignments": {0: [LEGACY_NODE]}}}, wait_for_metadata=True)
        resource = ConfigResource(ConfigResourceType.CLIENT_METRICS, SUBSCRIPTION.name, SUBSCRIPTION.configs())
        # raise_on_unknown would first describe the subscription, which does not exist yet.
        result = admin.alter_configs([resource], raise_on_unknown=False, incremental=True)
        outcome = result.get("client_metrics", {}).get(SUBSCRIPTION.name)
        if outcome != "OK":
            raise RuntimeError(f"the client-metrics subscription {SUBSCRIPTION.name} was refused: {outcome!r}")
    finally:
        admin.close()


def _private_file(path: Path, text: str) -> Path:
    path.unlink(missing_ok=True)
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as file:
        file.write(text)
    return path


@contextlib.contextmanager
def running_real_demo(
    data_dir: Path,
    port: int,
    *,
    inventory: bool = True,
    prometheus: bool = True,
    prometheus_port: int | None = None,
    interval_seconds: int = 5,
    say: Callable[[str], None] = print,
    stop: threading.Event | None = None,
    started_at: float | None = None,
) -> Iterator[RunningDemo]:
    """Everything above running, on loopback, its files under ``data_dir`` (the cluster and the inventory new at
    each run); stopped in reverse order on exit, the brokers last and by pid. ``stop`` set during start-up (the
    signal handler) raises demo.common.Interrupted after stopping what had started. ``started_at`` (a time.time())
    is when the command began, for the first live series' clock."""
    started_at = time.time() if started_at is None else started_at
    data_dir = data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    # A new cluster each time: the last run's storage has another cluster id, and an incremental inventory would
    # keep what the last run's (now deleted) logs said.
    for previous in ("kafka", "inventory"):
        shutil.rmtree(data_dir / previous, ignore_errors=True)
    jmx = JmxAuth(JMX_USER, secrets.token_urlsafe(16))
    password_file = _private_file(data_dir / "jmx-password", jmx.password)
    cluster = UpgradingCluster(data_dir / "kafka", NodeOptions(jmx_auth=jmx))
    releases = ", ".join(f"{plan.release}{' (controller)' if plan.controller else ''}" for plan in NODES)
    say(f"demo: starting Apache Kafka's own brokers: {releases}, one KRaft cluster, under {cluster.directory} ...")
    with contextlib.ExitStack() as running:
        running.callback(cluster.stop)
        cluster.begin_format()
        interruptible(cluster.finish_format, stop)
        cluster.launch()
        slowest = max(timing.wall_seconds for timing in interruptible(cluster.wait_ready, stop).values())
        say(
            f"demo: brokers ready {time.time() - started_at:.1f} s after the command (formatting "
            f"{cluster.format_seconds:.1f} s, then launch to ready {slowest:.1f} s)"
        )
        job = None
        if inventory:
            job = InventoryJob(data_dir / "kafka", data_dir / "inventory", data_dir / "inventory-job.log", say)
        config = write_config(
            data_dir / "exporter.yaml",
            CLUSTER,
            {node_id: node.jmx_url for node_id, node in cluster.nodes.items()},
            cluster.bootstrap(),
            inventory=job.output if job else None,
            policy_file=POLICY,
            jmx={"username": JMX_USER, "password_file": str(password_file)},
            interval_seconds=interval_seconds,
            jmx_timeout_seconds=min(5, interval_seconds),
        )
        # The exporter first: the brokers' own connections are live series already, while the clients start. In its
        # own session, so that a terminal's Ctrl-C reaches the demo only, which stops it in turn.
        exporter = running.enter_context(running_exporter(config, port, start_new_session=True))
        exporter_url = f"http://127.0.0.1:{port}"
        first_series = FirstSeries(f"{exporter_url}/metrics", started_at, say)
        running.callback(first_series.stop)
        first_series.start()
        interruptible(lambda: create_topic_and_subscription(cluster.bootstrap()), stop)
        clients = ClientMix(cluster.bootstrap(), installed(CLIENTS, say))
        running.callback(clients.close)
        clients.start()
        legacy = None
        if installed([LEGACY_CLIENT], say):
            legacy = start_client(LEGACY_CLIENT, cluster.node(LEGACY_NODE).bootstrap(), client_id=LEGACY_CLIENT_ID)
            running.callback(legacy.close)
        say(f"demo: connecting {len(clients) + (legacy is not None)} clients ...")

        def clients_ready() -> None:
            clients.wait_ready(90)
            if legacy is not None:
                legacy.wait_ready(60)

        interruptible(clients_ready, stop)
        if job is not None:
            running.callback(job.stop)
            job.start(after_seconds=3)
        late = None
        if installed([LATE_CLIENT], say):
            late = LateClient(LATE_CLIENT, cluster.bootstrap(), LATE_CLIENT_ID, job, say)
            running.callback(late.stop)
            late.start()
        interruptible(lambda: wait_exporter_ready(f"{exporter_url}/readyz", exporter), stop)
        prometheus_url = None
        if prometheus:
            prometheus_url = running.enter_context(
                running_prometheus(
                    data_dir / "prometheus", port, RULES, interval=f"{interval_seconds}s", port=prometheus_port
                )
            )
        yield RunningDemo(True, cluster.describe(), exporter, exporter_url, prometheus_url, job, first_series, late)
        say("demo: stopping Prometheus, the exporter, the clients and the brokers ...")
