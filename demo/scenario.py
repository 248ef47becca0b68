"""The demo's scenario on Apache Kafka's own brokers (what `scripts/demo.sh` runs), shared with the test that checks
every dashboard panel and the alerts against it: one KRaft cluster in the middle of a rolling upgrade from 3.9.2 to
4.4.0, with every kind of client the product judges.

- Nodes (all on 127.0.0.1): node 3000, Kafka 3.9.2, a dedicated controller (``process.roles=controller``, the
  quorum's only voter), as production KRaft clusters run them; node 1, Kafka 3.9.2, and nodes 2 and 3, Kafka 4.4.0,
  brokers only. Every node's storage is formatted by 3.9.2's tool, as when the cluster was created
  (metadata.version 3.9-IV0); nodes 2 and 3 then start under 4.4.0 over it, as a rolling upgrade restarts each
  node under the new release. The mix is legal because metadata.version stays 3.9-IV0 until the upgrade is
  finalized (``kafka-features.sh upgrade --release 4.4``). The exporter lists every node with its JMX URL, the
  controller too, as an operator lists them: the controller's own channels and its CONTROLLER listener are read and
  judged like the brokers'. Remote JMX with a password on each node, the request log in its own file (each
  release's own log4j format) as broker-config/ ships it: one line per connection (its ApiVersions request) and the
  requests in deprecated versions, what production can afford.
- Topic ``demo``, which every producer of harness.clients writes to, with its one replica on node 1: the
  legacy client's Produce v2 goes to the one broker that still serves it. Topic ``demo-replicated``, three partitions
  on every node: the brokers' replica fetchers, which send no ApiVersions, connect to each other as they do in any
  replicated cluster, and the exporter shows them as the brokers' own connections, not as unnamed clients.
- A client-metrics subscription made with the Admin API (IncrementalAlterConfigs on a CLIENT_METRICS resource, from
  kafka-python's admin client), as ``kafka-client-metrics.sh --alter`` makes one.
- Real clients: kcat announcing chosen identities, among them librdkafka 1.6.0 (below the shipped 1.8.2 floor) and
  2.0.2 (denied by the demo's policy), confluent-kafka, kafka-python, Kafka's Java clients 4.3.0 and 3.9.0, aiokafka
  and kafkajs (which a real broker records as ``unknown``).
- The legacy client: Kafka's own Java producer of 0.10.2.2 on node 1 (ApiVersions v0, so ``unknown``; Produce v2
  every two seconds, which 3.9 counts as deprecated and 4.0 no longer serves).
- The inventory job run once over the brokers' own request logs, Prometheus with the shipped rules (their waits
  shortened) and Alertmanager with the example configuration, whose messages the demo prints, and one client
  (kafka-clients 2.8.2) that first connects once the job has run, so that its version is live but not in the
  inventory until the job's next run.

With ``rolling_upgrade`` (``scripts/demo.sh --rolling-upgrade``) the cluster is the one before the upgrade instead:
three combined controller+broker nodes, all on 3.9.2, topic ``demo`` replicated on all three (three partitions, so
the legacy producer writes to every broker), and the same clients. Once the inventory job has named who runs what,
real_kafka.rolling_upgrade rolls it to 4.4.0 in front of the newcomer, one node at a time (controlled shutdown, 4.4.0
over the same storage, every partition in sync, next node), finalizes the features with ``kafka-features upgrade
--release-version 4.4``, and runs the inventory job again, whose rejections table then names the refused producer.
The demo says at each step which node is restarting and where to look; the cluster then runs on 4.4.0 until Ctrl-C.
The controller gives leadership back to a restarted node after ten seconds (``leader.imbalance.check.interval
.seconds``, 300 by default), so connections visibly move back.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType

from demo.common import (
    CLUSTER,
    DEMO_FOR,
    DEMO_TIMINGS,
    JMX_USER,
    KCAT_IDENTITIES,
    LEGACY_CLIENT_ID,
    POLICY,
    SUBSCRIPTION,
    DemoExporter,
    FirstSeries,
    Interrupted,
    InventoryJob,
    LateClient,
    RunningDemo,
    installed,
    interruptible,
    node_line,
    running_alerting,
    say_line,
    wait_exporter_ready,
)
from demo.migration import DemoMigration, MigratingCluster
from demo.roll import CREATED_WITH, UPGRADE_TO, DemoRoll, brokers_log_dirs
from demo.tools import ALERTING_BUILDS, wait_for_builds
from exporter.request_logs.log_kinds import LogKind
from harness.clients import KCAT_TOPIC, ClientKind, ClientMix, ClientSpec, start_client
from harness.exporter_process import write_config
from harness.ports import free_ports
from real_kafka.broker import ClusterLayout, KafkaNode, NodeOptions, StartTiming
from real_kafka.cluster import new_cluster_id
from real_kafka.config import NodePorts, NodeRoles
from real_kafka.jmx import JmxAuth

__all__ = [
    "CONTROLLERS",
    "LATE_CLIENT",
    "LEGACY_CLIENT",
    "NODES",
    "ROLLING_NODES",
    "DemoRoll",
    "NodePlan",
    "UpgradingCluster",
    "running_demo",
]

METADATA_VERSION = "3.9-IV0"


@dataclass(frozen=True)
class NodePlan:
    node_id: int
    release: str
    #: A controller (a voter of the quorum).
    controller: bool
    #: A broker; a controller that is no broker is a dedicated one (``process.roles=controller``).
    broker: bool = True


#: The mid-upgrade cluster's brokers.
NODES = (NodePlan(1, "3.9.2", controller=False), NodePlan(2, "4.4.0", False), NodePlan(3, "4.4.0", False))
#: Its dedicated controller, numbered apart from the brokers as in a cluster migrated from ZooKeeper.
CONTROLLERS = (NodePlan(3000, CREATED_WITH, controller=True, broker=False),)
#: --rolling-upgrade: the cluster before the upgrade, three voters so that the quorum keeps its majority while one
#: node is down.
ROLLING_NODES = tuple(NodePlan(node_id, "3.9.2", controller=True) for node_id in (1, 2, 3))
#: Kafka's automatic leader rebalance, every 10 s instead of 300: leadership (and the producers with it) goes back
#: to a restarted node while the newcomer watches.
ROLLING_PROPERTIES = {"leader.imbalance.check.interval.seconds": "10"}
#: The node still on 3.9: the only one that serves the legacy client's Produce v2.
LEGACY_NODE = 1
#: kcat's topic is the Java clients' default one too (JavaClient.java, LegacyJavaClient.java).
TOPIC = KCAT_TOPIC
CLIENTS: list[ClientSpec] = [
    *KCAT_IDENTITIES,
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


def logged_client_ids(logs: Path, wanted: set[str]) -> set[str]:
    """Which of ``wanted`` the request logs under ``logs`` (every node's, rolled files included) hold a line of."""
    found = set()
    for path in logs.glob("**/kafka-request.log*"):
        with contextlib.suppress(OSError):  # rolled away meanwhile
            text = path.read_text(encoding="utf-8", errors="replace")
            found |= {client_id for client_id in wanted if f'"clientId":"{client_id}"' in text}
    return found


class UpgradingCluster:
    """The nodes of NODES, each under ``directory/node-<id>`` with free ports on 127.0.0.1; started in steps
    (``begin_format``, ``finish_format``, ``launch``, ``wait_ready``) so that every process is recorded before
    anything waits on it, and ``stop`` (by pid) stops whatever has started."""

    def __init__(
        self, directory: Path, options: NodeOptions, plans: tuple[NodePlan, ...] = (*NODES, *CONTROLLERS)
    ) -> None:
        self.directory = directory
        self.plans = plans
        roles = {plan.node_id: NodeRoles(broker=plan.broker, controller=plan.controller) for plan in plans}
        ports = {}
        for plan in plans:
            plaintext, controller, jmx, jmx_rmi = free_ports(4)
            ports[plan.node_id] = NodePorts(
                plaintext=plaintext if plan.broker else None,
                sasl_ssl=None,
                controller=controller if plan.controller else None,
                jmx=jmx,
                jmx_rmi=jmx_rmi,
            )
        voters = {node_id: port.controller for node_id, port in ports.items() if port.controller is not None}
        layout = ClusterLayout(new_cluster_id(), voters, brokers=sum(plan.broker for plan in plans))
        self.layout = layout

        def node(plan: NodePlan, release: str) -> KafkaNode:
            path = directory / f"node-{plan.node_id}"
            return KafkaNode(path, release, plan.node_id, roles[plan.node_id], ports[plan.node_id], layout, options)

        # The same directory and configuration twice where the releases differ: formatted by CREATED_WITH, run
        # by the node's own release, as a rolling upgrade runs the new release over the old storage.
        self._formatters = [node(plan, CREATED_WITH) for plan in plans]
        self.nodes = {
            plan.node_id: formatter if plan.release == CREATED_WITH else node(plan, plan.release)
            for plan, formatter in zip(plans, self._formatters, strict=True)
        }
        self._formatting: list[subprocess.Popen[bytes] | None] = []
        self._started_formatting = 0.0
        self.format_seconds = 0.0
        self.timings: dict[int, StartTiming] = {}

    def node(self, node_id: int) -> KafkaNode:
        return self.nodes[node_id]

    def bootstrap(self) -> str:
        return ",".join(node.bootstrap() for node in self.nodes.values() if node.roles.broker)

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
        """SIGTERM to the brokers, then to the controllers once they are gone: a broker's controlled shutdown asks
        the controller, which must still be there. SIGKILL to any still running after ``timeout`` seconds."""
        for process in self._formatting:
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()
        # Combined nodes are controllers too: they go last with the dedicated ones.
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
        if all(plan.release == CREATED_WITH for plan in self.plans):
            state = f"on {CREATED_WITH}, about to be rolled to {UPGRADE_TO} in front of you"
        else:
            state = "in the middle of a rolling upgrade"
        lines = [
            f"demo: Apache Kafka's own brokers, one KRaft cluster (id {self.layout.cluster_id}) {state}: storage "
            f"formatted by {CREATED_WITH} (metadata.version {METADATA_VERSION}, kept until the upgrade is finalized), "
            f"{self.format_seconds:.1f} s",
        ]
        for node in self.nodes.values():
            roles = {(True, True): "controller and broker", (True, False): "broker"}.get(
                (node.roles.broker, node.roles.controller), "dedicated controller (the quorum's only voter)"
            )
            lines.append(node_line(node, roles, self.timings.get(node.node_id)))
        return lines


#: TOPIC's one replica on the node still on 3.9 (the mid-upgrade cluster), or on every node with a partition led by
#: each (--rolling-upgrade: the legacy producer meets every broker, before and after its restart).
MID_UPGRADE_TOPIC: dict[str, object] = {"assignments": {0: [LEGACY_NODE]}}
ROLLING_TOPIC: dict[str, object] = {"num_partitions": 3, "replication_factor": 3}
#: A topic on every node, so that the brokers fetch from each other (replica fetchers) as in any replicated cluster.
REPLICATED_TOPIC = ("demo-replicated", {"num_partitions": 3, "replication_factor": 3})


def create_topics(bootstrap: str, topic: dict[str, object] = MID_UPGRADE_TOPIC) -> None:
    """TOPIC laid out as ``topic`` says and REPLICATED_TOPIC, through the Admin API (CreateTopics)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="demo-setup")
    try:
        admin.create_topics({TOPIC: topic, REPLICATED_TOPIC[0]: REPLICATED_TOPIC[1]}, wait_for_metadata=True)
    finally:
        admin.close()


def create_subscription(bootstrap: str) -> None:
    """SUBSCRIPTION, through the Admin API (IncrementalAlterConfigs of a CLIENT_METRICS resource, which KRaft clusters
    only serve)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="demo-setup")
    try:
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
def running_demo(
    data_dir: Path,
    port: int,
    *,
    inventory: bool = True,
    prometheus: bool = True,
    prometheus_port: int | None = None,
    alertmanager_port: int | None = None,
    alert_wait: str = DEMO_FOR,
    alert_timings: Mapping[str, str] = DEMO_TIMINGS,
    interval_seconds: int = 5,
    say: Callable[[str], None] = say_line,
    stop: threading.Event | None = None,
    started_at: float | None = None,
    rolling_upgrade: bool = False,
    migration: bool = False,
) -> Iterator[RunningDemo]:
    """Everything above running, on loopback, its files under ``data_dir`` (the cluster and the inventory new at
    each run); stopped in reverse order on exit, the brokers last and by pid. ``stop`` set during start-up (the
    signal handler) raises demo.common.Interrupted after stopping what had started. ``started_at`` (a time.time())
    is when the command began, for the first live series' clock. ``rolling_upgrade``: the 3.9.2 cluster, rolled to
    4.4.0 while the demo runs (DemoRoll); ``migration``: a 3.9.2 ZooKeeper-mode cluster, migrated to KRaft and then
    rolled to 4.4.0 while the demo runs (demo.migration)."""
    if rolling_upgrade and migration:
        raise ValueError("the rolling upgrade and the migration are two scenarios: choose one")
    started_at = time.time() if started_at is None else started_at
    data_dir = data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    # A new cluster each time: the last run's storage has another cluster id, and an incremental inventory would
    # keep what the last run's (now deleted) logs said.
    for previous in ("kafka", "inventory"):
        shutil.rmtree(data_dir / previous, ignore_errors=True)
    jmx = JmxAuth(JMX_USER, secrets.token_urlsafe(16))
    password_file = _private_file(data_dir / "jmx-password", jmx.password)
    # The request log production can afford (broker-config/): what the newcomer sees is what it tells.
    request_log = LogKind.IDENTITIES_AND_INFO
    # The stories that restart nodes in front of the newcomer: every node holds a partition of the legacy producer's
    # topic and the brokers' own replica fetchers run everywhere.
    restarting = rolling_upgrade or migration
    cluster: UpgradingCluster | MigratingCluster
    if restarting:
        options = NodeOptions(jmx_auth=jmx, extra_properties=ROLLING_PROPERTIES, request_log=request_log)
    else:
        options = NodeOptions(jmx_auth=jmx, request_log=request_log)
    if migration:
        cluster = MigratingCluster(data_dir / "kafka", options)
        layout = f"{CREATED_WITH} x 3 in ZooKeeper mode beside a ZooKeeper of {CREATED_WITH}'s own"
    else:
        plans = ROLLING_NODES if rolling_upgrade else (*NODES, *CONTROLLERS)
        cluster = UpgradingCluster(data_dir / "kafka", options, plans)
        layout = (
            ", ".join(
                f"{plan.release}"
                f"{'' if not plan.controller else ' (controller)' if plan.broker else ' (dedicated controller)'}"
                for plan in plans
            )
            + ", one KRaft cluster"
        )
    say(f"demo: starting Apache Kafka's own brokers: {layout}, under {cluster.directory} ...")
    say(
        "demo: each broker's request log is the one broker-config/ ships: a line per connection (its ApiVersions "
        "request: clientId, principal, host, software) and the requests in deprecated versions"
    )
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
            job = InventoryJob(brokers_log_dirs(data_dir), data_dir / "inventory", data_dir / "inventory-job.log", say)

        def exporter_config(nodes: Mapping[int, str]) -> Path:
            return write_config(
                data_dir / "exporter.yaml",
                CLUSTER,
                dict(nodes),
                cluster.bootstrap(),
                inventory=job.output if job else None,
                policy_file=POLICY,
                jmx={"username": JMX_USER, "password_file": str(password_file)},
                interval_seconds=interval_seconds,
                jmx_timeout_seconds=min(5, interval_seconds),
            )

        # The exporter first: the brokers' own connections are live series already, while the clients start.
        exporter = DemoExporter(port)
        running.callback(exporter.stop)
        exporter.start(exporter_config({node_id: node.jmx_url for node_id, node in cluster.nodes.items()}))
        exporter_url = exporter.url
        first_series = FirstSeries(f"{exporter_url}/metrics", started_at, say)
        running.callback(first_series.stop)
        first_series.start()
        topic = ROLLING_TOPIC if restarting else MID_UPGRADE_TOPIC
        interruptible(lambda: create_topics(cluster.bootstrap(), topic), stop)
        if not migration:  # made once the migration is done: ZooKeeper mode serves no client-metrics subscription
            interruptible(lambda: create_subscription(cluster.bootstrap()), stop)
        started = installed(CLIENTS, say)
        clients = ClientMix(cluster.bootstrap(), started)
        running.callback(clients.close)
        clients.start()
        legacy = None
        if installed([LEGACY_CLIENT], say):
            # Mid-upgrade, only node 1 serves its Produce v2; in the rolling demo every node does until its restart.
            legacy_bootstrap = cluster.bootstrap() if restarting else cluster.node(LEGACY_NODE).bootstrap()
            legacy = start_client(LEGACY_CLIENT, legacy_bootstrap, client_id=LEGACY_CLIENT_ID)
            running.callback(legacy.close)
        say(f"demo: connecting {len(clients) + (legacy is not None)} clients ...")

        def clients_ready() -> None:
            clients.wait_ready(90)
            if legacy is not None:
                legacy.wait_ready(60)

        interruptible(clients_ready, stop)
        if job is not None:
            running.callback(job.stop)
            # The story's client ids (the kcat identities' and the legacy producer's) are in the logs it reads.
            named = {spec[3] for spec in started if isinstance(spec, tuple) and len(spec) > 3}
            named |= {LEGACY_CLIENT_ID} if legacy is not None else set()
            job.start(ready=lambda: named <= logged_client_ids(data_dir / "kafka", named))
        late = None
        # The rolling demo's and the migration's story is the roll: no client arrives late.
        if not restarting and installed([LATE_CLIENT], say):
            late = LateClient(LATE_CLIENT, cluster.bootstrap(), LATE_CLIENT_ID, job, say)
            running.callback(late.stop)
            late.start()
        interruptible(lambda: wait_exporter_ready(f"{exporter_url}/readyz", exporter), stop)
        alerting = None
        meanwhile = f"demo: the exporter is live: its status page at {exporter_url}/, series at {exporter_url}/metrics"
        if prometheus and (problems := wait_for_builds(ALERTING_BUILDS, say, stop, meanwhile)):
            for problem in problems:
                say(f"demo: {problem}: the demo goes on without Prometheus and Alertmanager")
            prometheus = False
        if stop is not None and stop.is_set():
            raise Interrupted
        if prometheus:
            alerting = running.enter_context(
                running_alerting(
                    data_dir,
                    port,
                    interval_seconds,
                    prometheus_port=prometheus_port,
                    alertmanager_port=alertmanager_port,
                    wait=alert_wait,
                    timings=alert_timings,
                    # A rolling upgrade mixes releases on purpose: the skew alert keeps its 12 hours there.
                    skew=not restarting,
                    say=say,
                )
            )
        prometheus_url = alerting.prometheus_url if alerting else None
        notes = []
        if restarting:
            roll: DemoRoll
            if isinstance(cluster, MigratingCluster):
                bootstrap = cluster.bootstrap()
                roll = DemoMigration(
                    cluster,
                    exporter,
                    exporter_config,
                    lambda: create_subscription(bootstrap),
                    job,
                    data_dir,
                    interval_seconds,
                    say,
                    stop,
                )
                story = f"the migration to KRaft, then the rolling upgrade to {UPGRADE_TO},"
            else:
                roll = DemoRoll(cluster, job, data_dir, interval_seconds, say, stop)
                story = f"the rolling upgrade to {UPGRADE_TO}"
            running.callback(roll.stop)
            roll.start()
            when = "once the inventory job has named who runs what (about a minute)" if job else "in a few cycles"
            notes.append(
                f"demo: {story} starts {when}; each step is printed here: which node is restarting, how long it "
                "took, and what the status page, Prometheus and the dashboards show"
            )
        yield RunningDemo(
            cluster.describe(),
            exporter,
            exporter_url,
            prometheus_url,
            job,
            first_series,
            late,
            notes=notes,
            alerting=alerting,
        )
        say("demo: stopping Alertmanager, Prometheus, the exporter, the clients and the brokers ...")
