"""The road to 4.0 (issue 46): a real 3.9.2 ZooKeeper-mode cluster migrated to KRaft step by step
(real_kafka/migration.py), with a 0.10.1.1 producer that never names itself and named kcat clients connected
throughout, and the exporter watching every step, checked against the kernel's table of established connections by
the process that holds each (real_kafka.connections).

Two brokers beside a ZooKeeper of 3.9.2's own, then KRaft controller 3000 in migration mode (the exporter's
configuration then lists it, as an operator adds the nodes they start), each broker rolled into migration mode, the
metadata copied, each broker rolled to KRaft, the controller finalized. At each step, once the kernel's table has
settled:

- each node's mode is served as it is (`kafka_broker_mode_info`: zookeeper, migrating, kraft), and said so on the
  status page, and every listed node is up;
- every named client's connections (the kcat clients', the exporter's own) are served per broker as the kernel holds
  them: what the brokers count is what `kafka_client_connections` says, whatever the verdicts;
- no false alarm: `unknown_software` violations on a broker never exceed the 0.10.1.1 producer's connections there,
  and nothing is hidden: they and the unknown connections in doubt cover all of the producer's;
- exactly the producer's connections violate, per broker, wherever nothing is in doubt: before the migration, and
  once no broker is in ZooKeeper mode. While brokers run in ZooKeeper mode beside the KRaft controller, the
  controller's connection to each of them (UpdateMetadata, LeaderAndIsr), which Kafka counts in no MBean, is in
  doubt instead, and the status page names the controller as the reason.
- no false alert: a real Prometheus with the shipped rules (1 s scrapes and evaluations) has, once it has seen the
  step, only the alerts the step explains active (EXPLAINED), and over each test its ALERTS series hold nothing else.

Failures on the way, as production has them: broker 1 is killed (SIGKILL, no controlled shutdown) right after it
entered migration mode, and the KRaft controller is killed as it begins copying the metadata from ZooKeeper (the
moment its migration driver enters ZK_MIGRATION; the copy of this small cluster takes about 0.2 s, so the journal
says whether the kill came before the copy's end); each is kept down until the exporter serves it as down (its JMX
`up` 0, none of its connections served: nothing stale), then started again, and the step is checked again once it
is back. The migration then goes on to the end.

Once migrated, the inventory job reads every node's request log (written in ZooKeeper mode, in migration mode and in
KRaft mode, the kind broker-config/ ships): each kcat client, which logged lines in ZooKeeper mode and again in KRaft
mode, is named exactly once, as it named itself.

Then the upgrade the migration was for: the 0.10.1.1 producer's Produce v2 is served as what blocks 4.0 (the status
page's upgrade blockers name it, on the brokers that counted it), the operator retires it, and every node is rolled to
4.4.0 (the controller first, then each broker, each back in sync before the
next) and the features finalized; after each node, every node is up in KRaft mode with nothing violating, and at the
end the status page says 4.4.0 for every node. Had the operator not retired it, the producer would have failed: one
started again is refused by the 4.4.0 brokers (their server.log's UnsupportedVersionException, its own failed send).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import datetime
import math
import os
import re
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import KafkaError

from exporter import __version__ as EXPORTER_VERSION
from exporter.request_logs.log_kinds import LogKind
from harness.clients import RealClient
from harness.exporter_process import REPO_ROOT, running_exporter, write_config
from harness.ports import free_port
from harness.prometheus_process import running_prometheus
from real_kafka import JmxAuth, KafkaCluster, NodeOptions
from real_kafka.broker import KafkaNode
from real_kafka.connections import Listener, count_connections
from real_kafka.migration import MIGRATED, Migration
from real_kafka.rolling_upgrade import Finalized, NodeBack, RollingUpgrade, wait_in_sync
from tests.support.inventory_command import run_inventory
from tests.support.own_connections import (
    KCAT_CLIENTS,
    REFUSED_PRODUCE,
    SERVER_DISCONNECTED,
    UNKNOWN_PAIR,
    Served,
    fetch,
    legacy_producer,
    prometheus_alerts,
    prometheus_query,
    scrape,
    start_kcat_clients,
    until,
)
from tests.support.status_page import tables_of
from tests.support.waiting import eventually

# A story of real clusters, its set-up included: the suite's 300 s per test is too short on a loaded machine.
pytestmark = [pytest.mark.slow, pytest.mark.real_kafka, pytest.mark.timeout(900)]

RELEASE = "3.9.2"
CLUSTER = "migrating"
JMX = JmxAuth("monitor", "migration-Secret-46")
INTERVAL = 1.0
TOPIC = "demo"
CONTROLLER = 3000
PLAINTEXT = "PLAINTEXT"
UPGRADE_TO = "4.4.0"
BLOCKING = "kafka_client_upgrade_blocking_requests_total"
RULES = REPO_ROOT / "alerts" / "kafka-client-exporter.rules.yaml"
#: The alerts this story may raise, and why; any other, at any moment, is a false alert. None of them fires within the
#: story (their `for` is 5 minutes or more), they go pending: the 0.10.1.1 producer names no software (on the brokers
#: whose connections it holds, never on the controller) and sends Produce v2, which 4.0 no longer serves; a node
#: killed or rolled is down for a while, as is the exporter while an operator restarts it with a new configuration;
#: the roll to 4.4.0 mixes releases; on a loaded machine a cycle outlasts the story's one-second interval (true, and
#: pending only: seen in a suite run at 01631f5).
EXPLAINED = {
    "KafkaClientUnknownSoftware",
    "KafkaClientDeprecatedRequests",
    "KafkaClientExporterBrokerDown",
    "KafkaClientExporterDown",
    "KafkaBrokerReleaseSkew",
    "KafkaClientExporterCollectSlow",
}
#: The 0.10.1.1 producer's requests as the 3.9 brokers' KIP-896 meter counts them: 4.0 no longer serves Produce v2.
PRODUCE_V2 = {
    "request": "Produce",
    "version": "2",
    "client_software_name": "unknown",
    "client_software_version": "unknown",
    "target_release": "4.0.0",
}


@dataclass
class Story:
    directory: Path
    cluster: KafkaCluster
    migration: Migration
    clients: list[RealClient]
    legacy: RealClient
    running: contextlib.ExitStack
    exporter: subprocess.Popen[bytes] | None = None
    #: The exporter's port, kept across its restarts as an operator's Service keeps it: Prometheus scrapes it.
    port: int = field(default_factory=free_port)
    base: str = ""
    prometheus: str = ""
    journal: list[str] = field(default_factory=list)

    def start_exporter(self, nodes: dict[int, str], name: str) -> None:
        """(Re)start the exporter watching ``nodes`` (id -> JMX URL), as an operator edits its configuration."""
        if self.exporter is not None:
            self.exporter.terminate()
            self.exporter.wait(30)
        config = write_config(
            self.directory / f"exporter-{name}.yaml",
            CLUSTER,
            nodes,
            self.cluster.bootstrap(),
            jmx={"username": JMX.username, "password": JMX.password},
            interval_seconds=INTERVAL,
        )
        log = self.running.enter_context((self.directory / f"exporter-{name}.log").open("wb"))
        self.exporter = self.running.enter_context(
            running_exporter(config, self.port, stdout=log, stderr=subprocess.STDOUT)
        )
        self.base = f"http://127.0.0.1:{self.port}"

    def held(self) -> Counter[tuple[str, str]] | None:
        """(owner, broker) -> established connections to the brokers' PLAINTEXT listeners, from the kernel; None while
        the kernel's table moves (a connection no known process holds)."""
        listeners = {
            node.ports.plaintext: Listener(node.node_id, PLAINTEXT)
            for node in self.cluster.nodes.values()
            if node.ports.plaintext is not None
        }
        owners = {self.legacy.pid: LEGACY_OWNER}
        for client in self.clients:
            owners[client.pid] = f"client {client.expected.software_name}"
        for node in [*self.cluster.nodes.values(), *self.migration.controllers.values()]:
            if node.pid is not None:
                owners[node.pid] = f"node {node.node_id}"
        if self.exporter is not None:
            owners[self.exporter.pid] = EXPORTER_OWNER
        owners[os.getpid()] = "the test"
        found = count_connections(listeners, owners)
        if sum(found.unowned.values()):
            return None
        return Counter({(owner, str(listener.broker)): n for (owner, listener), n in found.counts.items()})


LEGACY_OWNER = "legacy"
EXPORTER_OWNER = f"kafka-client-exporter {EXPORTER_VERSION}"
#: The named clients whose every connection the exporter must serve as the kernel holds it: (owner in
#: ``Story.held``, the software name and version the broker records).
NAMED = (
    *((f"client {name}", name, version) for name, version, _ in KCAT_CLIENTS),
    (EXPORTER_OWNER, "kafka-client-exporter", EXPORTER_VERSION),
)


def of_owner(held: Counter[tuple[str, str]], owner: str) -> Counter[str]:
    """Broker -> ``owner``'s connections in ``held``."""
    return Counter({broker: n for (who, broker), n in held.items() if who == owner})


def served(story: Story) -> Served:
    return scrape(story.base, CLUSTER)


def modes(view: Served) -> dict[str, str]:
    return {labels["broker"]: labels["mode"] for labels, _ in view.of("kafka_broker_mode_info")}


def check(story: Story, step: str, want_modes: dict[str, str], *, exact: bool, timeout: float = 90.0) -> None:
    """Until the exporter serves the step as the kernel shows it (see the module's docstring), for three cycles in a
    row with the kernel's table unchanged."""
    agreed: list[Counter[str]] = []
    # Before the producer is retired, its connections must show in the kernel's table (one that does not is moving).
    holding = story.legacy.returncode is None

    def problems() -> list[str]:
        before = story.held()
        view = served(story)
        kernel = story.held()
        found: list[str] = []
        after = of_owner(kernel, LEGACY_OWNER) if kernel is not None else Counter[str]()
        if kernel is None or before != kernel or (holding and not after):
            agreed.clear()
            return [f"the kernel's table moving: {before} then {kernel}"]
        # What the brokers count is served as they count it: every named client's connections, per broker.
        raw = view.raw()
        for owner, name, version in NAMED:
            shown = Counter(
                {b: n for (b, listener, *pair), n in raw.items() if (listener, *pair) == (PLAINTEXT, name, version)}
            )
            if shown != of_owner(kernel, owner):
                found.append(f"{name} {version}: served {dict(shown)}, the kernel {dict(of_owner(kernel, owner))}")
        if modes(view) != want_modes:
            found.append(f"modes {modes(view)}, want {want_modes}")
        up = {labels["broker"]: v for labels, v in view.of("kafka_client_exporter_up", source="jmx")}
        if set(up.values()) != {1.0}:
            found.append(f"jmx up: {up}")
        violating = Counter({b: n for (b, listener, *_), n in view.violations("unknown_software").items() if b})
        unplaced = sum(n for (b, *_), n in view.violations("unknown_software").items() if not b)
        in_doubt = view.unverified()[(PLAINTEXT, *UNKNOWN_PAIR)]
        for broker, n in violating.items():
            if n > after[broker]:
                found.append(f"broker {broker}: {n} violating, the 0.10.1.1 producer holds {after[broker]}")
        if sum(violating.values()) + unplaced + in_doubt < sum(after.values()):
            found.append(f"hidden: violating {dict(violating)} + {unplaced} + in doubt {in_doubt} < held {dict(after)}")
        if exact and (violating != after or unplaced or in_doubt):
            found.append(f"violating {dict(violating)} (+{unplaced} unplaced, {in_doubt} in doubt), held {dict(after)}")
        if found:
            agreed.clear()
        else:
            agreed.append(after)
        return found if found else ([] if len(agreed) >= 3 else ["agreed for fewer than three scrapes"])

    began = time.monotonic()
    until(problems, timeout, f"the exporter at step {step}", poll=INTERVAL)
    # The status page says each node's mode as the series do (they come from one snapshot; modes change at steps).
    rows = tables_of(fetch(f"{story.base}/"))[f"brokers-{CLUSTER}"]
    assert {row["broker"]: row["mode"] for row in rows} == want_modes, (step, rows)
    # Once Prometheus has scraped this state and evaluated the rules over it: only the alerts it explains.
    until(lambda: unexplained_alerts(story, agreed[-1]), 30, f"the alerts at step {step}", poll=INTERVAL)
    story.journal.append(f"{step}: agreed in {time.monotonic() - began:.1f} s; producer holds {dict(agreed[-1])}")


def unexplained_alerts(story: Story, producer: Counter[str]) -> list[str]:
    """The alerts active now that the cluster's state does not explain, with every node and the exporter up and the
    0.10.1.1 producer holding ``producer`` (broker -> connections)."""
    found = []
    for alert in prometheus_alerts(story.prometheus):
        labels, name = alert["labels"], alert["labels"]["alertname"]
        if name not in EXPLAINED:
            found.append(f"{name} {alert['state']}: {labels}")
        elif name == "KafkaClientUnknownSoftware" and not producer[labels["broker"]]:
            # broker "": a connection certainly a client's that cannot be placed, while the producer holds any.
            if labels["broker"] or not sum(producer.values()):
                found.append(f"{name} on broker {labels['broker']!r}, where the producer holds {dict(producer)}")
        elif name in ("KafkaClientExporterBrokerDown", "KafkaClientExporterDown"):
            found.append(f"{name} {labels} with every node and the exporter up")
    return found


def alerts_since(story: Story, began: float) -> list[str]:
    """What Prometheus's ALERTS series held since ``began`` (time.time()) that the story does not explain: an alert
    outside EXPLAINED, unknown software on the controller (no client connects there), or an alert firing whose
    cause, held for its `for`, would be a fault (a node or the exporter down that long, a client alert)."""
    window = f"{math.ceil(time.time() - began) + 1}s"
    found = []
    # The story's own Prometheus: every ALERTS series is this story's (most alerts carry no job label).
    held = f"count by (alertname, broker, alertstate) (count_over_time(ALERTS[{window}]))"
    for series in prometheus_query(story.prometheus, held):
        labels = series["metric"]
        name, state = labels["alertname"], labels["alertstate"]
        if name not in EXPLAINED:
            found.append(f"{name} {state}: {labels}")
        elif name == "KafkaClientUnknownSoftware" and labels.get("broker") == str(CONTROLLER):
            found.append(f"{name} {state} on the controller")
        elif state == "firing" and name != "KafkaClientDeprecatedRequests":
            found.append(f"{name} firing: {labels}")
    return found


def exporter_pace(story: Story, began: float) -> str:
    """How the exporter kept up since ``began``, as Prometheus saw it: the context of an alert on its own health."""
    window = f"{math.ceil(time.time() - began) + 1}s"
    seen = {
        "longest cycle (s)": f"max_over_time(kafka_client_exporter_cycle_duration_seconds[{window}])",
        "scrapes serving stale data": f"sum_over_time(kafka_client_exporter_snapshot_stale[{window}])",
    }
    return "; ".join(
        f"{what}: {[series['value'][1] for series in prometheus_query(story.prometheus, query)]}"
        for what, query in seen.items()
    )


def served_down(story: Story, node_id: int) -> None:
    """Until the exporter serves ``node_id`` as down: its JMX ``up`` 0 and none of its connections (nothing stale)."""

    def problems() -> list[str]:
        view = served(story)
        up = view.jmx_up().get(str(node_id))
        stale = sum(value for labels, value in view.of("kafka_client_connections") if labels["broker"] == str(node_id))
        return [f"node {node_id}: jmx up {up}, {stale} connections served"] if up != 0.0 or stale else []

    began = time.monotonic()
    until(problems, 60, f"node {node_id} served as down", poll=INTERVAL)
    story.journal.append(f"node {node_id} killed: served as down in {time.monotonic() - began:.1f} s")


#: The timestamp that starts each line of a broker's logs (log4j's ISO8601 layout, local time).
LOG_TIME = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")


def request_logged(node: KafkaNode, client_id: str) -> list[float]:
    """When ``node``'s request logs (rolled files too) have a line of ``client_id``, in seconds since the epoch."""
    found = []
    for path in node.logs.directory.glob("kafka-request.log*"):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if f'"clientId":"{client_id}"' in line and (stamp := LOG_TIME.match(line)):
                found.append(datetime.datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp())
    return found


def wait_registration_expired(story: Story, node_id: int, timeout: float = 90.0) -> None:
    """Until the cluster's metadata no longer lists the crashed broker ``node_id``: ZooKeeper has expired its session
    (zookeeper.session.timeout.ms, 18 s by default) and deleted its registration. A ZooKeeper-mode broker started
    before that exits at once with NodeExistsException (KafkaZkClient.registerBroker, KafkaZkClient.scala:2251 in
    3.9.2), as an operator's first restart after a crash does."""

    def others() -> set[int] | None:
        try:
            admin = KafkaAdminClient(
                bootstrap_servers=story.cluster.bootstrap(), client_id="migration-setup", request_timeout_ms=10000
            )
            try:
                listed = {broker["broker_id"] for broker in admin.describe_cluster()["brokers"]}
            finally:
                admin.close()
        except KafkaError:
            return None
        return None if node_id in listed else listed

    began = time.monotonic()
    eventually(others, timeout, f"broker {node_id}'s registration expired", poll=INTERVAL)
    story.journal.append(f"broker {node_id}'s registration expired {time.monotonic() - began:.1f} s after it was down")


#: What the migration driver of the active KRaft controller logs as it begins copying ZooKeeper's metadata.
COPY_BEGINS = "transitioning from BECOME_CONTROLLER to ZK_MIGRATION state"


def kill_controller_as_the_copy_begins(story: Story, given_up: threading.Event, timeout: float = 300.0) -> None:
    """Watch the controller's log from now on; kill it the moment it begins the copy, keep it down until the exporter
    says so, then start it again (run on a thread while the last broker rolls into migration mode)."""
    controller = story.migration.controllers[CONTROLLER]
    log = controller.logs.server_log
    offset = log.stat().st_size
    logged = ""
    deadline = time.monotonic() + timeout
    while COPY_BEGINS not in logged:
        if given_up.is_set():  # the story failed meanwhile
            return
        assert time.monotonic() < deadline, f"the controller did not begin the copy within {timeout:.0f} s"
        time.sleep(0.02)
        with log.open("rb") as file:
            file.seek(offset)
            chunk = file.read()
        offset += len(chunk)
        logged += chunk.decode(errors="replace")
    controller.kill()
    with log.open("rb") as file:
        file.seek(offset)
        logged += file.read().decode(errors="replace")
    when = "after the copy's end" if MIGRATED in logged else "during the copy"
    story.journal.append(f"controller {CONTROLLER} killed {when}")
    served_down(story, CONTROLLER)
    controller.launch()
    controller.wait_ready()


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Story]:
    directory = tmp_path_factory.mktemp("migration")
    # The request log production can afford (broker-config/): a line per connection and the deprecated requests.
    controllers = NodeOptions(jmx_auth=JMX, request_log=LogKind.IDENTITIES_AND_INFO)
    options = dataclasses.replace(controllers, extra_properties={"inter.broker.protocol.version": "3.9"})
    cluster = KafkaCluster(directory / "kafka", RELEASE, nodes=2, options=options, zookeeper=True)
    migration = Migration(cluster, directory / "kafka", controller_ids=(CONTROLLER,), options=controllers)
    with contextlib.ExitStack() as running:
        # The controller stops last: the brokers' controlled shutdown asks it.
        running.callback(migration.stop)
        cluster.start()
        running.callback(cluster.stop)
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap(), client_id="migration-setup")
        try:
            admin.create_topics([NewTopic(TOPIC, 2, 2)])
        finally:
            admin.close()
        wait_in_sync(cluster.bootstrap(), 60)
        clients = list(start_kcat_clients(cluster.bootstrap(), running).values())
        legacy = legacy_producer(cluster.bootstrap(), TOPIC)
        running.callback(legacy.close)
        for client in [*clients, legacy]:
            client.wait_ready(60)
        story = Story(directory, cluster, migration, clients, legacy, running)
        story.start_exporter({node.node_id: node.jmx_url for node in cluster.nodes.values()}, "zookeeper")
        story.prometheus = running.enter_context(
            running_prometheus(directory / "prometheus", story.port, RULES, interval="1s")
        )
        try:
            yield story
        finally:
            print("\n" + "\n".join(story.journal))


def test_the_migration_step_by_step(story: Story) -> None:
    began = time.time()
    brokers = [str(node_id) for node_id in story.cluster.nodes]
    check(story, "zookeeper", dict.fromkeys(brokers, "zookeeper"), exact=True)
    steps = story.migration.steps()
    started = next(steps)
    assert started.name == "controllers_started"
    nodes = {node.node_id: node.jmx_url for node in story.cluster.nodes.values()}
    story.start_exporter({**nodes, CONTROLLER: story.migration.controllers[CONTROLLER].jmx_url}, "migration")
    want = {**dict.fromkeys(brokers, "zookeeper"), str(CONTROLLER): "kraft"}
    check(story, "controller started", want, exact=True)
    # Per broker: until when its request log was written in ZooKeeper mode, and from when in KRaft mode.
    zookeeper_until: dict[int, float] = {}
    kraft_since: dict[int, float] = {}
    crashing = ThreadPoolExecutor(1, thread_name_prefix="kill-controller")
    given_up = threading.Event()
    story.running.callback(crashing.shutdown)
    story.running.callback(given_up.set)
    controller_crash = None
    for step in steps:
        story.journal.append(f"{step.name} {step.node_id or ''} in {step.seconds:.1f} s")
        if step.name == "broker_migrating":
            assert step.node_id is not None
            zookeeper_until[step.node_id] = story.cluster.nodes[step.node_id].launched_at
            want[str(step.node_id)] = "migrating"
            # The KRaft controller sends to ZooKeeper-mode brokers only once the metadata is copied.
            check(story, f"broker {step.node_id} migrating", want, exact=False)
            if step.node_id == int(brokers[0]):
                broker = story.cluster.nodes[step.node_id]
                broker.kill()
                served_down(story, step.node_id)
                wait_registration_expired(story, step.node_id)
                broker.launch()
                broker.wait_ready()
                wait_in_sync(story.cluster.bootstrap(), 120)
                check(story, f"broker {step.node_id} back in migration mode after a crash", want, exact=False)
            if step.node_id == int(brokers[-2]):
                # The next roll is the last: the copy begins once that broker has registered with the quorum.
                controller_crash = crashing.submit(kill_controller_as_the_copy_begins, story, given_up)
            elif step.node_id == int(brokers[-1]):
                assert controller_crash is not None
                controller_crash.result(timeout=300)
                check(story, f"controller {CONTROLLER} back after a crash", want, exact=False)
        elif step.name == "metadata_migrated":
            check(story, "metadata migrated (dual-write)", want, exact=False)
        elif step.name == "broker_kraft":
            assert step.node_id is not None
            kraft_since[step.node_id] = story.cluster.nodes[step.node_id].launched_at
            want[str(step.node_id)] = "kraft"
            still_zookeeper = any(mode == "migrating" for mode in want.values())
            check(story, f"broker {step.node_id} in KRaft mode", want, exact=not still_zookeeper)
        elif step.name == "finalized":
            check(story, "controller finalized", want, exact=True)
    # The status page says each node's mode and exact release, as the series do.
    rows = tables_of(fetch(f"{story.base}/"))[f"brokers-{CLUSTER}"]
    assert {(row["broker"], row["mode"], row["exact-release"]) for row in rows} == {
        (broker, "kraft", RELEASE) for broker in [*brokers, str(CONTROLLER)]
    }
    # The request logs of both modes (ZooKeeper's, migrating, KRaft's) read as one: every client named once, as it
    # named itself, though each reconnected at every roll.
    output = story.directory / "inventory"
    logs = str(story.directory / "kafka" / "node-*" / "logs")
    done = run_inventory("--input", logs, "--output", str(output), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    with (output / "current" / "clients.csv").open(encoding="utf-8", newline="") as table:
        named = [(row["client_id"], row["software_name"], row["software_version"]) for row in csv.DictReader(table)]
    for name, version, client_id in KCAT_CLIENTS:
        assert [row for row in named if row[0] == client_id] == [(client_id, name, version)], named
        logged = {node_id: request_logged(node, client_id) for node_id, node in story.cluster.nodes.items()}
        assert any(t < zookeeper_until[n] for n, times in logged.items() for t in times), (client_id, "ZooKeeper")
        assert any(t > kraft_since[n] for n, times in logged.items() for t in times), (client_id, "KRaft")
    # Between the steps too, through the crashes and every roll: no alert the story does not explain.
    assert alerts_since(story, began) == [], exporter_pace(story, began)
    # Nor a warning from the JMX bridge's JVM: its own lines, a reconnection's after each crash included, are routine.
    log = (story.directory / "exporter-migration.log").read_text(encoding="utf-8", errors="replace")
    assert [line for line in log.splitlines() if 'msg="JMX bridge: ' in line] == []


def test_then_the_blocker_is_retired_and_every_node_rolled_to_4_4(story: Story) -> None:
    began = time.time()
    brokers = [str(node_id) for node_id in story.cluster.nodes]
    want = dict.fromkeys([*brokers, str(CONTROLLER)], "kraft")

    def blocking() -> dict[str, float] | None:
        counts = {labels["broker"]: value for labels, value in served(story).of(BLOCKING, **PRODUCE_V2)}
        return counts if counts and all(counts.values()) else None

    counts = eventually(blocking, 60, "the 0.10.1.1 producer's Produce v2 served as blocking 4.0")
    story.journal.append(f"before the upgrade: Produce v2 counted as blocking 4.0 by broker {counts}")

    def blocker_row() -> dict[str, str] | None:
        rows = tables_of(fetch(f"{story.base}/")).get(f"blockers-{CLUSTER}", [])
        return next((r for r in rows if r["request"] == "Produce v2" and r["software"] == "unknown"), None)

    # The status page names it as what blocks the upgrade, on the brokers that counted it.
    row = eventually(blocker_row, 30, "the status page's upgrade blockers naming Produce v2 of unknown software")
    assert row["target"] == PRODUCE_V2["target_release"] and set(row["brokers"].split(", ")) == set(counts), row
    # The operator retires what blocks the upgrade, then rolls.
    story.legacy.close()
    nodes = [story.migration.controllers[CONTROLLER], *story.cluster.nodes.values()]
    finalized: dict[str, int] = {}
    for event in RollingUpgrade(nodes, story.cluster.bootstrap(), UPGRADE_TO).steps():
        if isinstance(event, NodeBack):
            story.journal.append(f"node {event.node_id} back on {event.release} in {event.restart_seconds:.1f} s")
            check(story, f"node {event.node_id} on {UPGRADE_TO}", want, exact=True)
        elif isinstance(event, Finalized):
            story.journal.append(f"finalized {event.upgraded}")
            finalized = event.upgraded
            check(story, f"{UPGRADE_TO} finalized", want, exact=True)
    assert not served(story).of(BLOCKING, **PRODUCE_V2)  # the 3.9 brokers' meters went with them

    def levels() -> dict[str, float] | None:
        found = {
            labels["broker"]: value
            for labels, value in served(story).of("kafka_broker_finalized_feature_level", feature="metadata.version")
        }
        return found if found and set(found.values()) == {finalized["metadata.version"]} else None

    eventually(levels, 15, f"metadata.version {finalized.get('metadata.version')} served for every broker")
    rows = tables_of(fetch(f"{story.base}/"))[f"brokers-{CLUSTER}"]
    assert {(row["broker"], row["mode"], row["exact-release"]) for row in rows} == {
        (broker, "kraft", UPGRADE_TO) for broker in [*brokers, str(CONTROLLER)]
    }
    # Had the operator not retired it: the same producer, started again, is refused by 4.4.0 at its first send.
    logs = {node.node_id: node.logs.server_log for node in story.cluster.nodes.values()}
    offsets = {node_id: log.stat().st_size for node_id, log in logs.items()}

    def refusals() -> dict[int, int] | None:
        found = {}
        for node_id, log in logs.items():
            with log.open("rb") as file:
                file.seek(offsets[node_id])
                found[node_id] = file.read().decode(errors="replace").count(REFUSED_PRODUCE)
        return found if sum(found.values()) and SERVER_DISCONNECTED in late.stderr_tail(5) else None

    with legacy_producer(story.cluster.bootstrap(), TOPIC) as late:
        refused = eventually(refusals, 60, "the 0.10.1.1 producer refused by 4.4.0", context=late.stderr_tail)
    story.journal.append(f"after the upgrade: a 0.10.1.1 producer refused, server.log refusals by broker {refused}")
    assert alerts_since(story, began) == [], exporter_pace(story, began)
