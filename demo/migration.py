"""``scripts/demo.sh --migration``: the road to 4.0 in front of the newcomer. A 3.9.2 cluster in ZooKeeper mode (three
brokers beside a ZooKeeper of 3.9.2's own) with the demo's clients, migrated to KRaft as Kafka's migration guide
has operators do it (real_kafka.migration: a dedicated KRaft controller in migration mode, each broker rolled into
migration mode, the metadata copied, each broker rolled to KRaft, the controller finalized), then rolled to 4.4.0
(demo.roll). The exporter is restarted with the controller in its configuration once the controller runs, as an
operator adds the nodes they start; each step says what changed and where to look.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from demo.common import DemoExporter, InventoryJob, node_line, wait_exporter_ready
from demo.roll import CREATED_WITH, DemoRoll
from real_kafka.broker import KafkaNode, NodeOptions, StartTiming
from real_kafka.cluster import KafkaCluster
from real_kafka.migration import Migration, MigrationStep

__all__ = ["CONTROLLER_ID", "DemoMigration", "MigratingCluster"]

BROKERS = 3
#: The migration's KRaft controller, numbered apart from the brokers as an operator numbers new controllers.
CONTROLLER_ID = 3000
#: A migration needs the brokers on the 3.9 protocol (inter.broker.protocol.version), as the guide's first step says.
MIGRATION_PROPERTIES = {"inter.broker.protocol.version": "3.9"}


class MigratingCluster:
    """The ZooKeeper-mode cluster and its migration, started in the demo's steps (``begin_format`` starts ZooKeeper and
    writes the brokers' configurations, ``finish_format`` waits for ZooKeeper, ``launch``, ``wait_ready``) so that
    every process is recorded before anything waits on it; ``stop`` (by pid) stops the brokers, then the controller,
    then ZooKeeper."""

    def __init__(self, directory: Path, options: NodeOptions) -> None:
        self.directory = directory
        brokers = dataclasses.replace(options, extra_properties={**options.extra_properties, **MIGRATION_PROPERTIES})
        self.zookeeper_mode = KafkaCluster(directory, CREATED_WITH, nodes=BROKERS, options=brokers, zookeeper=True)
        self.migration = Migration(self.zookeeper_mode, directory, controller_ids=(CONTROLLER_ID,), options=options)
        self.format_seconds = 0.0
        self.timings: dict[int, StartTiming] = {}
        self._began = 0.0

    @property
    def nodes(self) -> dict[int, KafkaNode]:
        """The nodes that run: the brokers, and the controller first once the migration has started it (the roll's
        order: controllers before brokers)."""
        started = {node_id: node for node_id, node in self.migration.controllers.items() if node.pid is not None}
        return {**started, **self.zookeeper_mode.nodes}

    def node(self, node_id: int) -> KafkaNode:
        return self.nodes[node_id]

    def bootstrap(self) -> str:
        return self.zookeeper_mode.bootstrap()

    def begin_format(self) -> None:
        self._began = time.monotonic()
        self.zookeeper_mode.launch_zookeeper()
        for broker in self.zookeeper_mode.nodes.values():
            broker.begin_format()  # a ZooKeeper-mode broker only writes its configuration

    def finish_format(self) -> None:
        assert self.zookeeper_mode.zookeeper is not None
        self.zookeeper_mode.zookeeper.wait_ready()
        self.format_seconds = time.monotonic() - self._began

    def launch(self) -> None:
        for broker in self.zookeeper_mode.nodes.values():
            broker.launch()

    def wait_ready(self, timeout: float = 120.0) -> dict[int, StartTiming]:
        self.timings = {node_id: node.wait_ready(timeout) for node_id, node in self.zookeeper_mode.nodes.items()}
        return self.timings

    def stop(self, timeout: float = 30.0) -> None:
        # The brokers first (their controlled shutdown asks the controller, KRaft's or ZooKeeper's), then the KRaft
        # controller, as the migration test stops them.
        self.zookeeper_mode.stop(timeout)
        self.migration.stop()

    def describe(self) -> list[str]:
        zookeeper = self.zookeeper_mode.zookeeper
        assert zookeeper is not None
        lines = [
            f"demo: Apache Kafka's own brokers, one ZooKeeper-mode cluster on {CREATED_WITH}, to be migrated to KRaft "
            f"and then rolled to 4.4.0 in front of you; ZooKeeper {zookeeper.connect} ({CREATED_WITH}'s own jars, pid "
            f"{zookeeper.pid}), up in {self.format_seconds:.1f} s",
        ]
        for node in self.zookeeper_mode.nodes.values():
            lines.append(node_line(node, "broker in ZooKeeper mode", self.timings.get(node.node_id)))
        lines.append(
            f"demo:   controller {CONTROLLER_ID}: Apache Kafka {CREATED_WITH}, dedicated KRaft controller, started by "
            "the migration"
        )
        return lines


class DemoMigration(DemoRoll):
    """The migration, then DemoRoll's roll to 4.4.0 and its second inventory run, on DemoRoll's thread: it starts
    once the inventory job has named who runs what, says each step and holds each state for a few cycles.
    ``exporter_config`` writes the exporter's configuration for the nodes it is given (id -> JMX URL);
    ``after_migration`` runs once the controller is finalized (the client-metrics subscription, KRaft-only)."""

    story = "the migration (or the roll after it)"

    def __init__(
        self,
        cluster: MigratingCluster,
        exporter: DemoExporter,
        exporter_config: Callable[[Mapping[int, str]], Path],
        after_migration: Callable[[], None],
        first_job: InventoryJob | None,
        data_dir: Path,
        interval_seconds: float,
        say: Callable[[str], None],
        stop: threading.Event | None,
    ) -> None:
        super().__init__(cluster, first_job, data_dir, interval_seconds, say, stop)
        self._migrating = cluster
        self._exporter = exporter
        self._exporter_config = exporter_config
        self._after_migration = after_migration

    def _roll(self) -> None:
        self._await_first_job()
        self._migrate()
        self._upgrade(list(self._migrating.nodes.values()), self._migrating.bootstrap())
        self._inventory_again()

    def _migrate(self) -> None:
        self._say(
            f"demo: the migration to KRaft starts now: controller {CONTROLLER_ID} in migration mode, then each broker "
            "rolled into migration mode, the metadata copied from ZooKeeper, each broker rolled to KRaft, the "
            "controller finalized. Watch the status page's Brokers table (mode and release of each node) and "
            "kafka_broker_mode_info; the clients stay connected throughout"
        )
        for step in self._migrating.migration.steps():
            self._say_step(step)
            self._hold(3 * self._interval)

    def _say_step(self, step: MigrationStep) -> None:
        took = f"{step.seconds:.1f} s"
        if step.name == "controllers_started":
            nodes = {node_id: node.jmx_url for node_id, node in self._migrating.nodes.items()}
            self._exporter.start(self._exporter_config(nodes))
            wait_exporter_ready(f"{self._exporter.url}/readyz", self._exporter)
            self._say(
                f"demo: migration: controller {CONTROLLER_ID} runs in migration mode ({took}); the exporter was "
                "restarted with it in its configuration, as an operator adds the nodes they start. Status page: node "
                f"{CONTROLLER_ID} in mode kraft, the brokers in mode zookeeper"
            )
        elif step.name == "broker_migrating":
            self._say(
                f"demo: migration: broker {step.node_id} restarted in migration mode ({took}): still in ZooKeeper "
                "mode, registered with the KRaft quorum too (mode migrating); its clients reconnected"
            )
        elif step.name == "metadata_migrated":
            self._say(
                f"demo: migration: controller {CONTROLLER_ID} copied the metadata from ZooKeeper once the last broker "
                "had registered, and is the cluster's controller now, writing to both. Its channels to the brokers "
                "still in ZooKeeper mode (UpdateMetadata, LeaderAndIsr) count in no MBean, so the status page holds "
                "those brokers' unnamed connections in doubt and names the controller as the reason, rather than "
                "calling them clients"
            )
        elif step.name == "broker_kraft":
            self._say(
                f"demo: migration: broker {step.node_id} restarted in KRaft mode ({took}): mode kraft, its channels "
                "to the quorum are the broker's own (CONTROLLER listener), never a client"
            )
        elif step.name == "finalized":
            self._after_migration()
            self._say(
                f"demo: migration: controller {CONTROLLER_ID} restarted without ZooKeeper ({took}): the cluster runs "
                "in KRaft mode, every node's mode kraft. The legacy producer's Produce v2, still served by 3.9, is "
                "listed under the status page's upgrade blockers: 4.0 no longer serves it. The client-metrics "
                "subscription (KIP-714, KRaft only) is made now"
            )
