"""The road to 4.0 (issue 46): a real 3.9.2 ZooKeeper-mode cluster migrated to KRaft step by step
(real_kafka/migration.py), with a 0.10.1.1 producer that never names itself and named kcat clients connected
throughout, and the exporter watching every step, checked against the kernel's table of established connections by
the process that holds each (real_kafka.connections).

Two brokers beside a ZooKeeper of 3.9.2's own, then KRaft controller 3000 in migration mode (the exporter's
configuration then lists it, as an operator adds the nodes they start), each broker rolled into migration mode, the
metadata copied, each broker rolled to KRaft, the controller finalized. At each step, once the kernel's table has
settled:

- each node's mode is served as it is (`kafka_broker_mode_info`: zookeeper, migrating, kraft) and every listed node
  is up;
- no false alarm: `unknown_software` violations on a broker never exceed the 0.10.1.1 producer's connections there,
  and nothing is hidden: they and the unknown connections in doubt cover all of the producer's;
- exactly the producer's connections violate, per broker, wherever nothing is in doubt: before the migration, and
  once no broker is in ZooKeeper mode. While brokers run in ZooKeeper mode beside the KRaft controller, the
  controller's connection to each of them (UpdateMetadata, LeaderAndIsr), which Kafka counts in no MBean, is in
  doubt instead, and the status page names the controller as the reason.

Then the upgrade the migration was for: the 0.10.1.1 producer's Produce v2 is served as what blocks 4.0, the operator
retires it, and every node is rolled to 4.4.0 (the controller first, then each broker, each back in sync before the
next) and the features finalized; after each node, every node is up in KRaft mode with nothing violating, and at the
end the status page says 4.4.0 for every node.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from exporter import __version__ as EXPORTER_VERSION
from harness.clients import RealClient
from harness.exporter_process import running_exporter, write_config
from harness.ports import free_port
from real_kafka import JmxAuth, KafkaCluster, NodeOptions
from real_kafka.connections import Listener, count_connections
from real_kafka.migration import Migration
from real_kafka.rolling_upgrade import Finalized, NodeBack, RollingUpgrade, wait_in_sync
from tests.support.own_connections import (
    UNKNOWN_PAIR,
    Served,
    fetch,
    legacy_producer,
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
    base: str = ""
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
        port = free_port()
        log = self.running.enter_context((self.directory / f"exporter-{name}.log").open("wb"))
        self.exporter = self.running.enter_context(running_exporter(config, port, stdout=log, stderr=subprocess.STDOUT))
        self.base = f"http://127.0.0.1:{port}"

    def legacy_held(self) -> Counter[str] | None:
        """Broker -> the 0.10.1.1 producer's established connections to its PLAINTEXT listener, from the kernel; None
        while the kernel's table moves (a connection no known process holds)."""
        listeners = {
            node.ports.plaintext: Listener(node.node_id, PLAINTEXT)
            for node in self.cluster.nodes.values()
            if node.ports.plaintext is not None
        }
        owners = {self.legacy.pid: "legacy"}
        for client in self.clients:
            owners[client.pid] = f"client {client.expected.software_name}"
        for node in [*self.cluster.nodes.values(), *self.migration.controllers.values()]:
            if node.pid is not None:
                owners[node.pid] = f"node {node.node_id}"
        if self.exporter is not None:
            owners[self.exporter.pid] = f"kafka-client-exporter {EXPORTER_VERSION}"
        owners[os.getpid()] = "the test"
        found = count_connections(listeners, owners)
        if sum(found.unowned.values()):
            return None
        return Counter({str(listener.broker): n for (owner, listener), n in found.counts.items() if owner == "legacy"})


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
        before = story.legacy_held()
        view = served(story)
        after = story.legacy_held()
        found: list[str] = []
        if before is None or after is None or before != after or (holding and not after):
            agreed.clear()
            return [f"the kernel's table moving: {before} then {after}"]
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
    story.journal.append(f"{step}: agreed in {time.monotonic() - began:.1f} s; producer holds {dict(agreed[-1])}")


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Story]:
    directory = tmp_path_factory.mktemp("migration")
    options = NodeOptions(jmx_auth=JMX, extra_properties={"inter.broker.protocol.version": "3.9"})
    cluster = KafkaCluster(directory / "kafka", RELEASE, nodes=2, options=options, zookeeper=True)
    migration = Migration(cluster, directory / "kafka", controller_ids=(CONTROLLER,), options=NodeOptions(jmx_auth=JMX))
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
        try:
            yield story
        finally:
            print("\n" + "\n".join(story.journal))


def test_the_migration_step_by_step(story: Story) -> None:
    brokers = [str(node_id) for node_id in story.cluster.nodes]
    check(story, "zookeeper", dict.fromkeys(brokers, "zookeeper"), exact=True)
    steps = story.migration.steps()
    started = next(steps)
    assert started.name == "controllers_started"
    nodes = {node.node_id: node.jmx_url for node in story.cluster.nodes.values()}
    story.start_exporter({**nodes, CONTROLLER: story.migration.controllers[CONTROLLER].jmx_url}, "migration")
    want = {**dict.fromkeys(brokers, "zookeeper"), str(CONTROLLER): "kraft"}
    check(story, "controller started", want, exact=True)
    for step in steps:
        story.journal.append(f"{step.name} {step.node_id or ''} in {step.seconds:.1f} s")
        if step.name == "broker_migrating":
            want[str(step.node_id)] = "migrating"
            # The KRaft controller sends to ZooKeeper-mode brokers only once the metadata is copied.
            check(story, f"broker {step.node_id} migrating", want, exact=False)
        elif step.name == "metadata_migrated":
            check(story, "metadata migrated (dual-write)", want, exact=False)
        elif step.name == "broker_kraft":
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


def test_then_the_blocker_is_retired_and_every_node_rolled_to_4_4(story: Story) -> None:
    brokers = [str(node_id) for node_id in story.cluster.nodes]
    want = dict.fromkeys([*brokers, str(CONTROLLER)], "kraft")

    def blocking() -> dict[str, float] | None:
        counts = {labels["broker"]: value for labels, value in served(story).of(BLOCKING, **PRODUCE_V2)}
        return counts if counts and all(counts.values()) else None

    counts = eventually(blocking, 60, "the 0.10.1.1 producer's Produce v2 served as blocking 4.0")
    story.journal.append(f"before the upgrade: Produce v2 counted as blocking 4.0 by broker {counts}")
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
